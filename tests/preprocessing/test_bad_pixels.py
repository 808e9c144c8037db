"""leap.preprocessing.bad_pixels: bad-pixel maps from flats and darks or from the data,
replacement by the median of good neighbours, zinger removal."""
import numpy as np
import pytest

from leap.preprocessing import (bad_pixel_map, outlier_pixel_map, remove_zingers,
                                replace_bad_pixels)


def detector_frames(rng, rows=40, cols=50):
    """Flats and darks of a detector with a smooth field, 2 % pixel gain spread, Poisson-like
    noise and six known bad pixels: dead, NaN, low and high gain, hot offset, noisy."""
    yy, xx = np.mgrid[0:rows, 0:cols]
    gain = 2000 * (1 + 0.3 * xx / cols) * (1 - 0.2 * ((yy - rows / 2) / rows) ** 2)
    gain *= rng.uniform(0.98, 1.02, (rows, cols))
    offset = 100 + rng.normal(0, 2, (rows, cols))
    truth = np.zeros((rows, cols), bool)
    gain[5, 7] = 0.0                          # dead
    gain[0, 0] = np.nan                       # broken read-out
    gain[12, 30] *= 0.6                       # low response
    gain[30, 3] *= 1.3                        # over-responding
    offset[20, 20] += 400                     # hot (dark current)
    noisy = (33, 44)
    for p in ((5, 7), (0, 0), (12, 30), (30, 3), (20, 20), noisy):
        truth[p] = True
    sd = np.sqrt(np.nan_to_num(gain))
    flats = []
    for _ in range(5):
        n = rng.normal(0, 1, (rows, cols)) * sd
        n[noisy] *= 15
        flats.append(gain + offset + n)
    darks = offset + rng.normal(0, 2, (4, rows, cols))
    return np.array(flats, np.float32), darks.astype(np.float32), truth


def test_bad_pixel_map_recovers_the_known_map(rng):
    flats, darks, truth = detector_frames(rng)
    found = bad_pixel_map(flats, darks)
    assert found.dtype == bool
    np.testing.assert_array_equal(found, truth)
    # one flat and no darks: the dead, NaN and gain outliers are still found
    one = bad_pixel_map(flats[0] - darks[0])
    for p in ((5, 7), (0, 0), (12, 30), (30, 3)):
        assert one[p]
    assert one.sum() <= truth.sum() + 1


def test_bad_pixel_map_bad_input(rng):
    flats, darks, _ = detector_frames(rng)
    with pytest.raises(ValueError, match="threshold must be > 0"):
        bad_pixel_map(flats, threshold=0)
    with pytest.raises(ValueError, match="window_size must be odd"):
        bad_pixel_map(flats, window_size=4)
    with pytest.raises(ValueError, match="darks must be"):
        bad_pixel_map(flats, darks[:, :5])
    with pytest.raises(ValueError, match="no frames"):
        bad_pixel_map(flats[:0])
    with pytest.raises(TypeError, match="real numbers"):
        bad_pixel_map(flats.astype(complex))


def smooth_views(shape=(6, 16, 20)):
    a, r, c = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    return (0.6 + 0.1 * np.sin(0.15 * r + 0.1 * a) * np.cos(0.1 * c)).astype(np.float32)


def test_outlier_pixel_map_finds_a_stuck_pixel():
    t = smooth_views()
    t[:, 4, 6] = 0.05                         # stuck low in every view
    m = outlier_pixel_map(t)
    assert m[4, 6] and m.sum() == 1
    np.testing.assert_array_equal(outlier_pixel_map(t.mean(axis=0, dtype=np.float32)), m)


def test_replace_bad_pixels_restores_smooth_data():
    clean = smooth_views()
    bad = np.zeros(clean.shape[1:], bool)
    bad[[4, 4, 0, 15], [6, 7, 0, 19]] = True          # a pair, two corners
    g = clean.copy()
    g[:, bad] = [7.0, np.nan, -1.0, 100.0]
    out = replace_bad_pixels(g, bad, 3)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[:, bad], clean[:, bad], atol=0.02)
    np.testing.assert_array_equal(out[:, ~bad], clean[:, ~bad])
    leap_map = bad.astype(np.float32)                  # LEAP's convention: 1.0 = bad
    np.testing.assert_array_equal(replace_bad_pixels(g, leap_map, 3), out)
    blocks = np.concatenate([replace_bad_pixels(g[:2], bad), replace_bad_pixels(g[2:], bad)])
    np.testing.assert_array_equal(blocks, out)        # each view alone
    a = g.copy()
    assert replace_bad_pixels(a, bad, out=a) is a
    np.testing.assert_array_equal(a, out)


def test_replace_bad_pixels_bad_input():
    g = np.ones((2, 5, 6), np.float32)
    with pytest.raises(ValueError, match="bad_map must have shape"):
        replace_bad_pixels(g, np.zeros((6, 5)))
    with pytest.raises(ValueError, match="NaN"):
        replace_bad_pixels(g, np.full((5, 6), np.nan))
    with pytest.raises(ValueError, match="window_size must be one of"):
        replace_bad_pixels(g, np.zeros((5, 6)), 4)
    with pytest.raises(ValueError, match="2-D or 3-D"):
        replace_bad_pixels(g[0, 0], np.zeros((5, 6)))


def disk_transmissions(views=180, rows=3, cols=96):
    """exp(−sinogram) of two sharp-edged disks: edges that move from view to view."""
    th = np.linspace(0, np.pi, views, endpoint=False)[:, None]
    s = np.arange(cols) - cols / 2 + 0.5
    g = np.zeros((views, cols))
    for x0, y0, r, mu in ((8, -4, 26, 0.02), (-12, 6, 8, 0.05)):
        d = r ** 2 - (s - x0 * np.cos(th) - y0 * np.sin(th)) ** 2
        g += 2 * mu * np.sqrt(np.maximum(d, 0))
    return np.repeat(np.exp(-g)[:, None], rows, axis=1).astype(np.float32)


@pytest.fixture
def zinger_case():
    rng = np.random.default_rng(7)
    t = disk_transmissions()
    idx = (rng.integers(1, t.shape[0] - 1, 50), rng.integers(0, t.shape[1], 50),
           rng.integers(0, t.shape[2], 50))
    z = t.copy()
    z[idx] *= 1.5
    hit = np.zeros(t.shape, bool)
    hit[idx] = True
    return t, z, hit


def test_remove_zingers_across_views_keeps_the_moving_edges(zinger_case):
    t, z, hit = zinger_case
    out = remove_zingers(z, 0.1, 3)
    np.testing.assert_allclose(out[hit], t[hit], atol=0.02)          # neighbours' median
    np.testing.assert_array_equal(out[~hit], t[~hit])                 # the rest untouched
    assert np.abs(np.diff(t, axis=2)).max() > 0.3                     # (there are sharp edges)
    bright = remove_zingers(z, 0.1, 3, polarity="bright")
    np.testing.assert_array_equal(bright, out)
    np.testing.assert_array_equal(remove_zingers(z, 0.1, 3, polarity="dark"), z)


def test_remove_zingers_in_blocks_with_overlap_equals_whole(zinger_case):
    _, z, _ = zinger_case
    whole = remove_zingers(z, 0.1, 5)
    h, cut = 2, 70                                    # overlap window_size // 2 views
    first = remove_zingers(z[:cut + h], 0.1, 5)[:cut]
    second = remove_zingers(z[cut - h:], 0.1, 5)[h:]
    np.testing.assert_array_equal(np.concatenate([first, second]), whole)


def test_remove_zingers_within_views():
    t = np.broadcast_to(smooth_views()[:1], (3, 16, 20)).copy()   # no change across views
    z = t.copy()
    z[1, 7, 9] = 0.99
    out = remove_zingers(z, 0.1, 3, axis="pixels")
    assert abs(out[1, 7, 9] - t[1, 7, 9]) < 0.05
    np.testing.assert_array_equal(np.delete(out.ravel(), 1 * 320 + 7 * 20 + 9),
                                  np.delete(t.ravel(), 1 * 320 + 7 * 20 + 9))


def test_remove_zingers_bad_input():
    g = np.ones((4, 5, 6), np.float32)
    with pytest.raises(ValueError, match="NaN"):
        remove_zingers(np.where(g > 0, np.nan, g))
    with pytest.raises(ValueError, match="window_size must be odd"):
        remove_zingers(g, window_size=4)
    with pytest.raises(ValueError, match="axis must be"):
        remove_zingers(g, axis="rows")
    with pytest.raises(ValueError, match="polarity must be"):
        remove_zingers(g, polarity="up")
    with pytest.raises(ValueError, match="threshold must be >= 0"):
        remove_zingers(g, -0.1)
    with pytest.raises(ValueError, match="3-D"):
        remove_zingers(g[0])
