"""leap.preprocessing.flat_field: LEAP's flat-field steps (plain ratio, flux normalisation,
floors, two-point gain, transmission shift), on data whose answer is known."""
import inspect

import numpy as np
import pytest

from leap.preprocessing import (MIN_TRANSMISSION, TwoPointGain, apply_two_point_gain, attenuation,
                                fill_nonpositive, flat_at_views, flat_dark_ratio, flat_field,
                                neg_log, normalize_dose, replace_nonpositive, shift_transmission,
                                two_point_gain)


def test_flat_field_signatures_are_kept():
    assert list(inspect.signature(flat_field).parameters) == [
        "raw", "flats", "darks", "flat_positions", "views", "air_region", "out"]
    assert list(inspect.signature(neg_log).parameters) == ["t", "min_transmission", "out"]
    assert list(inspect.signature(flat_at_views).parameters) == ["flats", "flat_positions", "views"]
    assert "min_transmission" in inspect.signature(attenuation).parameters


@pytest.mark.parametrize("kind", ["images", "numbers", "stacks"])
def test_flat_dark_ratio_is_the_flat_field_formula(rng, kind):
    raw = rng.uniform(200, 1000, (4, 5, 6)).astype(np.float32)
    flat = rng.uniform(1500, 2000, (5, 6)).astype(np.float32)
    dark = rng.uniform(50, 150, (5, 6)).astype(np.float32)
    if kind == "numbers":
        flat, dark = 1800.0, 100.0
    expected = (raw.astype(np.float64) - np.mean(dark)) / (np.mean(flat) - np.mean(dark)) \
        if kind == "numbers" else (raw - dark.astype(np.float64)) / (flat - dark.astype(np.float64))
    if kind == "stacks":
        flat, dark = np.stack([flat, flat]), np.stack([dark, dark, dark])
    t = flat_dark_ratio(raw, flat, dark)
    assert t.dtype == np.float32 and t.shape == raw.shape
    np.testing.assert_allclose(t, expected, rtol=1e-5)
    a = raw.copy()
    assert flat_dark_ratio(a, flat, dark, out=a) is a                    # in place
    np.testing.assert_array_equal(a, t)


def test_flat_dark_ratio_without_flat_or_dark(rng):
    raw = rng.uniform(1, 2, (2, 3, 4)).astype(np.float32)
    np.testing.assert_allclose(flat_dark_ratio(raw, dark=0.5), raw - 0.5, rtol=1e-6)
    np.testing.assert_allclose(flat_dark_ratio(raw, 2.0), raw / 2, rtol=1e-6)
    np.testing.assert_array_equal(flat_dark_ratio(raw.astype(np.float64)), raw)  # float32 out
    assert flat_dark_ratio(raw[0], 2.0).shape == (3, 4)                 # one frame
    with pytest.raises(ValueError, match="flat must be a number or a"):
        flat_dark_ratio(raw, np.ones((4, 3)))
    with pytest.raises(ValueError, match="dark must be finite"):
        flat_dark_ratio(raw, dark=float("nan"))
    with pytest.raises(ValueError, match="out must be a float32"):
        flat_dark_ratio(raw, 2.0, out=np.empty((2, 3, 4)))


def test_ratio_floor_and_log_give_the_line_integrals(rng):
    """LEAP's steps compose to the guarded flat_field + neg_log on clean data."""
    g = rng.uniform(0.1, 3.0, (3, 6, 7))
    flat, dark = rng.uniform(900, 1100, (6, 7)), rng.uniform(90, 110, (6, 7))
    raw = (np.exp(-g) * (flat - dark) + dark).astype(np.float32)
    t = replace_nonpositive(flat_dark_ratio(raw, flat, dark))
    np.testing.assert_allclose(-np.log(t), g, atol=2e-4)
    np.testing.assert_allclose(-np.log(t), attenuation(raw, flat, dark), atol=1e-5)


def test_fill_nonpositive_and_replace_nonpositive():
    x = np.array([[3.0, 0.0], [-1.0, 2.0]], np.float32)
    np.testing.assert_array_equal(fill_nonpositive(x), [[3, 2], [2, 2]])
    np.testing.assert_array_equal(x, [[3, 0], [-1, 2]])                 # input kept
    with pytest.raises(ValueError, match="air has no positive pixel"):
        fill_nonpositive(np.zeros((2, 2)), name="air")
    t = np.array([0.5, 1e-9, 0.0, -2.0, np.nan], np.float32)
    r = replace_nonpositive(t)
    floor = MIN_TRANSMISSION
    np.testing.assert_array_equal(r[:4], np.float32([0.5, 1e-9, floor, floor]))
    assert np.isnan(r[4])
    with pytest.raises(ValueError, match="value must be > 0"):
        replace_nonpositive(t, 0.0)


def test_normalize_dose_brings_each_view_to_the_reference(rng):
    t = rng.uniform(0.2, 1.0, (5, 8, 9)).astype(np.float32)
    t[:, :, 6:] = 1.0
    dose = np.float32([1.0, 0.8, 1.1, 0.95, 0.5])
    scaled = t * dose[:, None, None]
    out = normalize_dose(scaled, [0, 7, 6, 8])                    # LEAP's inclusive ROI
    np.testing.assert_allclose(out, t, rtol=1e-6)
    air = np.full((8, 9), 2.0, np.float32)
    out2 = normalize_dose(scaled, (slice(None), slice(6, None)), reference=air)
    np.testing.assert_allclose(out2, 2 * t, rtol=1e-6)
    blocks = np.concatenate([normalize_dose(scaled[:2], [0, 7, 6, 8]),
                             normalize_dose(scaled[2:], [0, 7, 6, 8])])
    np.testing.assert_array_equal(blocks, out)                    # each view alone
    with pytest.raises(ValueError, match="reference level must be finite and > 0"):
        normalize_dose(scaled, [0, 7, 6, 8], reference=0.0)
    with pytest.raises(ValueError, match="air_region"):
        normalize_dose(scaled, [0, 7, 6])
    with pytest.raises(ValueError, match="reference must be a number or a"):
        normalize_dose(scaled, [0, 7, 6, 8], reference=np.ones((3, 3)))


def test_two_point_gain_removes_pixel_gains_and_offsets(rng):
    shape = (10, 12)
    k = rng.uniform(0.95, 1.05, shape)                 # per-pixel gains
    c0 = np.full(shape, 50.0, np.float32)
    c1 = (k * 300 + 50).astype(np.float32)
    c2 = (k * 900 + 50).astype(np.float32)
    gain = two_point_gain(c0, c1, c2)
    assert isinstance(gain, TwoPointGain) and gain.knee.shape == shape
    true = rng.uniform(100, 800, (3,) + shape)
    counts = (k * true).astype(np.float32)             # dark-subtracted
    out = apply_two_point_gain(counts, gain)
    np.testing.assert_allclose(out / true, np.median(k), rtol=2e-3)
    a = counts.copy()
    assert apply_two_point_gain(a, gain, out=a) is a
    np.testing.assert_array_equal(a, out)
    # at the knee both branches give the median level (up to rounding)
    at_knee = np.broadcast_to(gain.knee, (1,) + shape).astype(np.float32)
    for low in (False, True):
        np.testing.assert_allclose(apply_two_point_gain(at_knee, gain, knee_is_low=low),
                                   gain.level, rtol=1e-5)


def test_two_point_gain_bad_input():
    z = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match="no pixel above the dark level"):
        two_point_gain(z, z, z + 1)
    with pytest.raises(ValueError, match="one \\(rows, cols\\) shape"):
        two_point_gain(z, z[:3], z)
    gain = two_point_gain(z, z + 1, z + 3)
    with pytest.raises(TypeError, match="TwoPointGain"):
        apply_two_point_gain(z, (1, 2, 3, 4))
    with pytest.raises(ValueError, match="gain maps are"):
        apply_two_point_gain(np.zeros((2, 3, 3)), gain)


def test_shift_transmission():
    t = np.array([[1.0, 0.5, 0.1, 0.05]], np.float32)
    out = shift_transmission(t, 0.1)
    np.testing.assert_allclose(out, np.maximum((t - 0.1) / 0.9, MIN_TRANSMISSION), rtol=1e-6)
    with pytest.raises(ValueError, match="shift must be < 1"):
        shift_transmission(t, 1.0)
    with pytest.raises(TypeError, match="real number"):
        shift_transmission(t, "0.1")
    with pytest.raises(TypeError, match="real numbers"):
        shift_transmission(t.astype(np.complex64), 0.1)
