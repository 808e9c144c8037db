"""leap.preprocessing.rings: stripes (constant column offsets of a sinogram) removed with
the object's features kept; LEAP's methods and Vo et al.'s sorting-based removal."""
import numpy as np
import pytest

from leap.preprocessing import (mean_view, remove_stripes_sorting, ring_correction_tv,
                                ring_removal_median, ring_removal_tv)

STRIPES = {60: 1.0, 180: -0.8, 256: 0.6, 257: 0.6, 400: -1.0}     # column: relative offset


def blob_sinogram(views=180, rows=2, cols=512):
    """Parallel-beam sinogram of two Gaussian blobs (smooth object features)."""
    th = np.linspace(0, np.pi, views, endpoint=False)[:, None]
    s = np.arange(cols) - cols / 2 + 0.5
    g = np.zeros((views, cols))
    for x0, y0, sigma, a in ((20, -10, 150, 1.0), (-40, 30, 60, 0.2)):
        g += a * np.exp(-(s - x0 * np.cos(th) - y0 * np.sin(th)) ** 2 / (2 * sigma ** 2))
    return np.repeat(g[:, None], rows, axis=1).astype(np.float32)


def striped(g, amp):
    off = np.zeros(g.shape[2], np.float32)
    for c, v in STRIPES.items():
        off[c] = amp * v
    return g + off, off


def rms(x):
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def test_sorting_removes_stripes_and_keeps_the_object():
    clean = blob_sinogram()
    amp = 0.05
    g, _ = striped(clean, amp)
    out = remove_stripes_sorting(g, 5)
    assert out.dtype == np.float32 and out.shape == g.shape
    column_error = (out - clean).mean(axis=0)                 # what would make rings
    assert np.abs(column_error[:, list(STRIPES)]).max() < 0.15 * amp
    assert rms(out - clean) < 0.2 * rms(g - clean)
    assert rms(remove_stripes_sorting(clean, 5) - clean) < 0.05 * rms(g - clean)
    # each detector row alone: row blocks (all views) give the rows of the whole
    rows = np.concatenate([remove_stripes_sorting(g[:, :1], 5),
                           remove_stripes_sorting(g[:, 1:], 5)], axis=1)
    np.testing.assert_array_equal(rows, out)
    with pytest.raises(ValueError, match="window_size must be >= 3"):
        remove_stripes_sorting(g, 1)


def test_ring_removal_median_removes_stripes():
    clean = blob_sinogram(90, 2, 512)
    g, _ = striped(clean, 0.05)
    g, clean = g[:, :, 128:384], clean[:, :, 128:384]
    out = ring_removal_median(g, 0.0, 5, 2)
    assert rms((out - clean).mean(axis=0)) < 0.2 * rms((g - clean).mean(axis=0))
    a = g.copy()
    assert ring_removal_median(a, 0.0, 5, 2, out=a) is a
    np.testing.assert_array_equal(a, out)
    with pytest.raises(ValueError, match="window_size"):
        ring_removal_median(g, 0.0, 4)


def test_ring_correction_tv_is_one_clipped_map_from_the_mean_view():
    clean = blob_sinogram(90, 4, 512)
    g, _ = striped(clean, 0.05)
    m = mean_view(g)
    np.testing.assert_allclose(m, g.mean(axis=0), rtol=1e-5)
    c = ring_correction_tv(m, 0.01, 3.0, 30, max_change=0.04)
    assert c.shape == g.shape[1:] and c.dtype == np.float32
    assert np.abs(c).max() <= 0.04 + 1e-7
    column_error = (g + c[None] - clean).mean(axis=0)[:, list(STRIPES)]
    assert np.abs(column_error).max() < 0.4 * 0.05              # stripes of up to 0.05
    # out of core: the mean accumulated over blocks gives the same map (to rounding)
    m_blocks = (mean_view(g[:50]) * 50 + mean_view(g[50:]) * 40) / 90
    np.testing.assert_allclose(ring_correction_tv(m_blocks, 0.01, 3.0, 30, 0.04), c, atol=1e-5)
    t = np.exp(-g)
    np.testing.assert_allclose(mean_view(g, in_transmission=True), -np.log(t.mean(axis=0)),
                               rtol=1e-5)
    with pytest.raises(ValueError, match="2-D"):
        ring_correction_tv(g)


def test_ring_removal_tv_shares_one_map_over_views():
    clean = blob_sinogram(30, 2, 512)
    g, _ = striped(clean, 0.05)
    g, clean = g[:, :, 192:320], clean[:, :, 192:320]
    out = ring_removal_tv(g, 0.01, 3.0, 20)
    d = out - g
    np.testing.assert_allclose(d, np.broadcast_to(d[0], d.shape), atol=1e-6)
    stripe = [256 - 192, 257 - 192]                               # offset 0.6 · 0.05
    assert np.abs((out - clean).mean(axis=0)[:, stripe]).max() < 0.5 * 0.03
    a = g.copy()
    assert ring_removal_tv(a, 0.01, 3.0, 20, out=a) is a
    np.testing.assert_array_equal(a, out)
