"""LEAP's projection pre-processing: leap.compat.preprocessing (``leap_preprocessing_algorithms``)
and the facade's MeanFilter, badPixelCorrection, transmission_filter, ... methods."""
import numpy as np
import pytest
from scipy.interpolate import RegularGridInterpolator
from scipy.special import erfc

import leap_preprocessing_algorithms as lpa
from leap.compat import preprocessing as pp
from leap.compat.model import tomographicModels


# ------------------------------------------------------------------ helpers
def parallel_model(numAngles=90, numRows=4, numCols=64, centerColShift=0.0):
    ct = tomographicModels()
    ct.set_parallelbeam(numAngles, numRows, numCols, 1.0, 1.0, 0.5 * (numRows - 1),
                        0.5 * (numCols - 1) + centerColShift, ct.setAngleArray(numAngles, 360.0))
    ct.set_default_volume()
    return ct


def phantom_data(ct):
    """Projections of two off-centre disks (a small sinogram with structure)."""
    f = ct.allocate_volume()
    x, y, _ = ct.voxelSamples()
    f[(x - 5) ** 2 + (y + 3) ** 2 < 15 ** 2] = 0.02
    f[(x + 8) ** 2 + y ** 2 < 5 ** 2] = 0.05
    g = ct.allocate_projections()
    ct.project(g, f)
    return g, f


def smooth_projections(rng, shape=(6, 16, 20)):
    """Smooth positive attenuation data."""
    a, r, c = np.meshgrid(*[np.arange(n) for n in shape], indexing="ij")
    g = 0.5 + 0.3 * np.sin(0.3 * r + 0.1 * a) * np.cos(0.2 * c)
    return g.astype(np.float32)


@pytest.fixture
def ct():
    return tomographicModels()


# ------------------------------------------------------------ module surface
def test_shim_exports_all_public_names():
    expected = {"gain_correction", "makeAttenuationRadiographs", "badPixelCorrection",
                "outlierCorrection", "outlierCorrection_highEnergy", "LowSignalCorrection",
                "detectorDeblur_FourierDeconv", "detectorDeblur_RichardsonLucy",
                "ringRemoval_fast", "ringRemoval_median", "ringRemoval", "transmission_shift",
                "find_centerCol_and_tiltAngle", "find_tau_and_tiltAngle", "geometric_calibration",
                "find_centerCol_or_tau_bowtie", "bowtie_alignment_metric", "parameter_sweep",
                "entropy", "MTF", "quadratic_extrema"}
    assert expected <= set(lpa.__all__)
    for name in lpa.__all__:
        assert getattr(lpa, name) is getattr(pp, name)


# ------------------------------------------------------- flat fielding / gain
@pytest.mark.parametrize("scalar_dark", [False, True])
def test_makeAttenuationRadiographs_is_neglog_of_flat_field(ct, rng, scalar_dark):
    raw = rng.uniform(200, 1000, (5, 8, 12)).astype(np.float32)
    air = rng.uniform(1500, 2000, (8, 12)).astype(np.float32)
    dark = 100.0 if scalar_dark else rng.uniform(50, 150, (8, 12)).astype(np.float32)
    air_before = air.copy()
    expected = -np.log((raw.astype(np.float64) - dark) / (air - dark))
    g = raw.copy()
    out = lpa.makeAttenuationRadiographs(ct, g, air, dark)
    assert out is g
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(air, air_before)          # caller's scan untouched


def test_makeAttenuationRadiographs_roi_and_floor(ct):
    g = np.full((3, 6, 8), 500.0, dtype=np.float32)
    g[1] *= 0.5                                       # a view with half the flux
    g[2, 0, 0] = -5.0                                 # non-positive after flat fielding
    lpa.makeAttenuationRadiographs(ct, g, air_scan=1000.0, ROI=[0, 5, 4, 7])
    # every view's ROI is normalised to transmission 1
    np.testing.assert_allclose(g[:, :, 4:], 0.0, atol=1e-6)
    assert g[2, 0, 0] == pytest.approx(16 * np.log(2.0), rel=1e-6)      # floored at 2^-16


def test_makeAttenuationRadiographs_attenuation_input_without_roi_is_noop(ct, rng):
    g = rng.uniform(0, 2, (2, 4, 5)).astype(np.float32)
    g0 = g.copy()
    lpa.makeAttenuationRadiographs(ct, g, air_scan=3.0, isAttenuationData=True)
    np.testing.assert_array_equal(g, g0)


def test_gain_correction_subtracts_dark_without_flat_fielding(ct, rng):
    raw = (smooth_projections(rng) * 1000 + 200).astype(np.float32)
    dark = np.full(raw.shape[1:], 100.0, np.float32)
    g = raw.copy()
    assert lpa.gain_correction(ct, g, 2000.0, dark) is g
    np.testing.assert_allclose(g, raw - 100.0, rtol=1e-6)


def test_gain_correction_two_point_calibration_removes_pixel_gains(ct, rng):
    shape = (4, 10, 12)
    # per-pixel linear gains, within the 10 % that the scans' outlier filter leaves alone
    k = rng.uniform(0.95, 1.05, shape[1:]).astype(np.float32)
    dark = 50.0
    levels = (0.0, 300.0, 900.0)
    cal = np.stack([k * lv + dark for lv in levels]).astype(np.float32)
    true = rng.uniform(100, 800, shape).astype(np.float32)
    raw = (k * true + dark).astype(np.float32)
    g = raw.copy()
    lpa.gain_correction(ct, g, 1000.0, dark, calibration_scans=cal, badPixelMap=np.zeros(shape[1:], np.float32))
    # Every pixel now has the median gain: g = median(k)·true.
    np.testing.assert_allclose(g / true, np.median(k), rtol=2e-3)


def test_gain_correction_bad_input(ct):
    g = np.ones((2, 4, 5), np.float32)
    with pytest.raises(ValueError, match="air_scan and dark_scan"):
        lpa.gain_correction(ct, g, None, 0.0)
    with pytest.raises(ValueError, match="dark_scan must be"):
        lpa.gain_correction(ct, g, 10.0, np.zeros((3, 3), np.float32))
    with pytest.raises(ValueError, match="calibration_scans"):
        lpa.gain_correction(ct, g, 10.0, 0.0, calibration_scans=np.ones((4, 5), np.float32))
    with pytest.raises(ValueError, match="ROI"):
        lpa.gain_correction(ct, g, 10.0, 0.0, ROI=[0, 9, 0, 1])


# ------------------------------------------------------ outliers / bad pixels
def test_outlierCorrection_removes_hot_pixel_and_keeps_smooth_data(ct, rng):
    g = smooth_projections(rng)
    clean = g.copy()
    lpa.outlierCorrection(ct, g)
    np.testing.assert_allclose(g, clean, atol=2e-6)           # smooth data untouched
    g[2, 7, 9] = 4.0                                           # zinger (dark spot in transmission)
    g[3, 0, 0] = 0.0                                           # and one at a corner
    out = lpa.outlierCorrection(ct, g)
    assert out is g
    assert abs(g[2, 7, 9] - clean[2, 7, 9]) < 0.05
    assert abs(g[3, 0, 0] - clean[3, 0, 0]) < 0.05
    np.testing.assert_allclose(np.delete(g.ravel(), [np.ravel_multi_index(i, g.shape) for i in ((2, 7, 9), (3, 0, 0))]),
                               np.delete(clean.ravel(), [np.ravel_multi_index(i, g.shape) for i in ((2, 7, 9), (3, 0, 0))]),
                               atol=2e-6)


def test_outlierCorrection_highEnergy_removes_cluster(ct, rng):
    g = smooth_projections(rng)
    clean = g.copy()
    g[1, 5:7, 8:10] = 3.0                       # a 2×2 zinger: a 3×3 median alone keeps it
    lpa.outlierCorrection_highEnergy(ct, g)
    assert np.max(np.abs(g[1, 5:7, 8:10] - clean[1, 5:7, 8:10])) < 0.05


def test_LowSignalCorrection_only_touches_starved_pixels(ct, rng):
    g = smooth_projections(rng)
    clean = g.copy()
    g[0, 5, 5] = 9.0        # transmission 1e-4 < 0.001: photon starved
    g[0, 8, 8] = 0.01       # a bright outlier: not low signal, must stay
    lpa.LowSignalCorrection(ct, g)
    assert abs(g[0, 5, 5] - clean[0, 5, 5]) < 0.05
    assert g[0, 8, 8] == pytest.approx(0.01, abs=1e-6)


def test_facade_LowSignalCorrection_3d(ct):
    f = np.ones((5, 6, 7), np.float32)
    f[2, 3, 3] = 1e-4
    f[2, 1, 1] = 5.0
    ct.LowSignalCorrection(f, 0.0, 3, 0.001)
    assert f[2, 3, 3] == 1.0 and f[2, 1, 1] == 5.0


def _bad_pixel_reference(img, bad, w):
    """Median of the good pixels in the clamped w×w window (edge samples repeat)."""
    out = img.copy()
    nr, nc = img.shape
    h = w // 2
    for r, c in zip(*np.nonzero(bad)):
        vals = [img[min(max(r + dr, 0), nr - 1), min(max(c + dc, 0), nc - 1)]
                for dr in range(-h, h + 1) for dc in range(-h, h + 1)
                if not bad[min(max(r + dr, 0), nr - 1), min(max(c + dc, 0), nc - 1)]]
        if vals:
            out[r, c] = np.median(np.array(vals, np.float32))
    return out


@pytest.mark.parametrize("w", [3, 5, 7])
def test_facade_badPixelCorrection_matches_median_of_good_neighbours(ct, rng, w):
    g = rng.uniform(1, 2, (3, 9, 11)).astype(np.float32)
    bad = np.zeros((9, 11), np.float32)
    for r, c in ((0, 0), (4, 5), (4, 6), (8, 10), (2, 0), (2, 1), (2, 2)):
        bad[r, c] = 1.0
    expected = np.stack([_bad_pixel_reference(v, bad == 1, w) for v in g])
    assert ct.badPixelCorrection(g, bad, w) is g
    np.testing.assert_allclose(g, expected, rtol=1e-6)


def test_badPixelCorrection_with_map_and_estimated_map(ct, rng):
    g = smooth_projections(rng)
    clean = g.copy()
    g[:, 4, 6] = 7.0                                   # a dead pixel in every view
    bad = np.zeros(g.shape[1:], np.float32)
    bad[4, 6] = 1.0
    g1 = g.copy()
    lpa.badPixelCorrection(ct, g1, badPixelMap=bad)
    assert np.max(np.abs(g1[:, 4, 6] - clean[:, 4, 6])) < 0.05
    g2 = g.copy()
    lpa.badPixelCorrection(ct, g2)                     # map estimated from the mean view
    assert np.max(np.abs(g2[:, 4, 6] - clean[:, 4, 6])) < 0.05
    np.testing.assert_allclose(g2[:, :4], clean[:, :4], atol=2e-6)


def test_badPixelCorrection_bad_input(ct):
    g = np.ones((2, 5, 6), np.float32)
    with pytest.raises(ValueError, match="badPixelMap must have shape"):
        ct.badPixelCorrection(g, np.zeros((6, 5), np.float32))
    with pytest.raises(ValueError, match="windowSize"):
        ct.badPixelCorrection(g, np.zeros((5, 6), np.float32), 0)
    with pytest.raises(TypeError, match="float32"):
        lpa.badPixelCorrection(ct, g.astype(np.float64))


def test_median_filters_bad_input(ct, rng):
    g = smooth_projections(rng)
    with pytest.raises(ValueError, match="threshold must be finite"):
        lpa.outlierCorrection(ct, g, threshold=float("nan"))
    with pytest.raises(ValueError, match="windowSize"):
        lpa.outlierCorrection(ct, g, windowSize=0)
    with pytest.raises(ValueError, match="3-D"):
        lpa.outlierCorrection(ct, g[0])
    with pytest.raises(ValueError, match="no data"):
        lpa.outlierCorrection(ct, None)


# ------------------------------------------------------------ local filters
def _clipped_window_stats(x, r):
    m = np.empty(x.shape)
    v = np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        sl = tuple(slice(max(i - r, 0), i + r + 1) for i in idx)
        w = x[sl].astype(np.float64)
        m[idx], v[idx] = w.mean(), w.var()
    return m, v


@pytest.mark.parametrize("r", [1, 2])
def test_MeanFilter_and_VarianceFilter_clip_the_window(ct, rng, r):
    x = rng.standard_normal((4, 6, 7)).astype(np.float32)
    m, v = _clipped_window_stats(x, r)
    a, b = x.copy(), x.copy()
    assert ct.MeanFilter(a, r) is a
    ct.VarianceFilter(b, r)
    np.testing.assert_allclose(a, m, atol=1e-5)
    np.testing.assert_allclose(b, v, atol=1e-5)
    x2 = x[0].copy()                                   # 2-D: one slice
    ct.MeanFilter(x2, r)
    np.testing.assert_allclose(x2, _clipped_window_stats(x[0], r)[0], atol=1e-5)
    with pytest.raises(ValueError, match="windowRadius"):
        ct.MeanFilter(x, 0)


@pytest.mark.parametrize("smooth", [False, True])
@pytest.mark.parametrize("numDims", [1, 2])
def test_Laplacian_stencil(ct, rng, numDims, smooth):
    g = rng.standard_normal((2, 6, 9)).astype(np.float32)
    s, a, b = (2, 0.25, 0.5) if smooth else (1, 1.0, 2.0)
    p = np.pad(g.astype(np.float64), ((0, 0), (s, s), (s, s)), mode="edge")
    core = p[:, s:-s, s:-s]
    expected = a * (p[:, s:-s, 2 * s:] + p[:, s:-s, :-2 * s]) - b * core
    if numDims == 2:
        expected += a * (p[:, 2 * s:, s:-s] + p[:, :-2 * s, s:-s]) - b * core
    ct.Laplacian(g, numDims, smooth)
    np.testing.assert_allclose(g, expected, atol=1e-5)


def test_AzimuthalBlur_averages_along_circles():
    ct = parallel_model(numAngles=8, numRows=2, numCols=48)
    x, y, _ = ct.voxelSamples()
    r, th = np.hypot(x, y), np.arctan2(y, x)
    radial = np.exp(-(r / 12.0) ** 2).astype(np.float32)
    f = (radial * (1 + 0.5 * np.cos(6 * th))).astype(np.float32)
    ct.AzimuthalBlur(f, 360.0)
    inside = (r < 18) & (r > 3)
    # The angular modulation is averaged away; the radial profile stays.
    assert np.max(np.abs(f - radial)[inside]) < 0.08
    assert np.all(f[r > ct.get_diameterFOV() / 2 + 1] == 0)
    g = radial.copy()
    ct.AzimuthalBlur(g, 10.0)                          # a radial function is kept by any arc
    assert np.max(np.abs(g - radial)[inside]) < 0.05


# -------------------------------------------------------- transfer functions
def test_applyTransferFunction_is_piecewise_linear_lookup(ct, rng):
    lut = np.array([0.0, 0.5, 1.5, 2.0, 4.0], np.float32)
    T = 0.25
    x = rng.uniform(-0.5, 1.6, (3, 4, 5)).astype(np.float32)
    xs = x.astype(np.float64)
    expected = np.interp(xs, T * np.arange(5), lut)
    above = xs >= 1.0
    expected[above] = 4.0 + (4.0 - 2.0) / T * (xs[above] - 1.0)
    assert ct.applyTransferFunction(x, lut, T) is x
    np.testing.assert_allclose(x, expected, rtol=1e-6, atol=1e-6)
    y = np.array([0.3, 0.6], np.float32)
    ct.applyTransferFunction(y, lut, T, firstSample=0.2)   # grid 0.2, 0.45, ...
    np.testing.assert_allclose(y, np.interp([0.3, 0.6], 0.2 + T * np.arange(5), lut), rtol=1e-6)
    with pytest.raises(ValueError, match="sampleRate"):
        ct.applyTransferFunction(x, lut, 0.0)
    with pytest.raises(ValueError, match="finite"):
        ct.applyTransferFunction(x, np.array([0.0, np.nan]), 1.0)


def test_applyDualTransferFunction_is_bilinear(ct, rng):
    n, T = 6, 0.5
    grid = T * np.arange(n)
    lut = rng.standard_normal((2, n, n)).astype(np.float32)
    x = rng.uniform(0, grid[-1], (2, 3, 4)).astype(np.float32)
    y = rng.uniform(0, grid[-1], (2, 3, 4)).astype(np.float32)
    pts = np.stack([x.ravel(), y.ravel()], axis=1)
    e0 = RegularGridInterpolator((grid, grid), lut[0])(pts).reshape(x.shape)
    e1 = RegularGridInterpolator((grid, grid), lut[1])(pts).reshape(x.shape)
    ct.applyDualTransferFunction(x, y, lut, T)
    np.testing.assert_allclose(x, e0, atol=1e-5)
    np.testing.assert_allclose(y, e1, atol=1e-5)
    # clamped outside the grid
    a, b = np.array([-1.0, 99.0], np.float32), np.array([-1.0, 99.0], np.float32)
    ct.applyDualTransferFunction(a, b, lut[0], T)
    np.testing.assert_allclose(a, [lut[0, 0, 0], lut[0, -1, -1]], rtol=1e-6)


# ------------------------------------------------------------- detector blur
def blur_response(nr, nc, ct):
    n1, n2 = ct.optimalFFTsize(2 * nr), ct.optimalFFTsize(2 * nc)
    y = np.fft.fftfreq(n1)[:, None] * 2
    x = np.fft.fftfreq(n2)[None, :] * 2
    c = 9.0
    b = (c + 1.0 - 0.5 * (1.0 + c)) / c
    return ((1.0 - b) + b / (1.0 + c * np.sqrt(x ** 2 + y ** 2))).astype(np.float32)


def test_transmission_filter_identity_and_size_check(ct, rng):
    g = smooth_projections(rng)
    g0 = g.copy()
    H = np.ones((ct.optimalFFTsize(32), ct.optimalFFTsize(40)), np.float32)
    assert ct.transmission_filter(g, H, True) is g
    np.testing.assert_allclose(g, g0, atol=1e-5)
    with pytest.raises(ValueError, match="at least the projection size"):
        ct.transmission_filter(g, np.ones((8, 8), np.float32))


def test_transmission_filter_is_a_convolution_of_transmissions(ct, rng):
    t = rng.uniform(0.2, 1.0, (2, 8, 10)).astype(np.float32)
    H = blur_response(8, 10, ct)
    out = ct.transmission_filter(t.copy(), H, False)
    # the same filter written out: pad as LEAP (nearer edge), multiply, crop
    n1, n2 = H.shape
    rows = [j if j < 8 else (7 if j - 8 < n1 - j else 0) for j in range(n1)]
    cols = [i if i < 10 else (9 if i - 10 < n2 - i else 0) for i in range(n2)]
    tp = t[:, rows][:, :, cols].astype(np.float64)
    ref = np.real(np.fft.ifft2(np.fft.fft2(tp) * H))[:, :8, :10]
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-6)


def test_detectorDeblur_FourierDeconv_inverts_known_blur(ct):
    pct = parallel_model(numAngles=6, numRows=16, numCols=64)
    g, _ = phantom_data(pct)
    g *= 3                                               # attenuation up to ~3: visible blur
    H = blur_response(16, 64, ct)
    blurred = ct.transmission_filter(g.copy(), H, True)
    err0 = np.max(np.abs(blurred - g))
    assert err0 > 0.05
    out = lpa.detectorDeblur_FourierDeconv(ct, blurred, H)
    assert out is blurred
    # exact but for the edge padding, which blur and deblur apply to different data
    np.testing.assert_allclose(np.exp(-blurred), np.exp(-g), atol=2.5e-3)
    assert np.max(np.abs(blurred - g)) < 0.05 * err0


def test_detectorDeblur_RichardsonLucy_reduces_blur(ct):
    pct = parallel_model(numAngles=4, numRows=16, numCols=64)
    g, _ = phantom_data(pct)
    g *= 3
    H = blur_response(16, 64, ct)
    blurred = ct.transmission_filter(g.copy(), H, True)
    err0 = np.linalg.norm(blurred - g)
    lpa.detectorDeblur_RichardsonLucy(ct, blurred, H, numIter=10)
    assert np.linalg.norm(blurred - g) < 0.5 * err0


def test_detectorDeblur_requires_model_and_valid_H(rng):
    g = smooth_projections(rng)
    with pytest.raises(ValueError, match="tomographicModels"):
        lpa.detectorDeblur_FourierDeconv(None, g, np.ones((32, 40)))
    with pytest.raises(ValueError, match="finite"):
        lpa.detectorDeblur_FourierDeconv(tomographicModels(), g, np.full((32, 40), np.nan))


# ------------------------------------------------------------- ring removal
@pytest.fixture(scope="module")
def ring_case():
    """A smooth object (rings are what a reconstruction error then shows) and three
    detector columns with gain errors."""
    ct = parallel_model(numAngles=90, numRows=4, numCols=64)
    f = ct.allocate_volume()
    x, y, _ = ct.voxelSamples()
    f[:] = 0.01 * np.exp(-((x - 4) ** 2 + (y + 2) ** 2) / (2 * 10.0 ** 2))
    g = ct.allocate_projections()
    ct.project(g, f)
    gains = np.zeros(g.shape[1:], np.float32)
    gains[:, [20, 33, 41]] = [0.03, -0.025, 0.02]
    return ct, g, gains, ct.FBP(g.copy())


def ring_error(ct, g, f_clean):
    return float(np.linalg.norm(ct.FBP(g.copy()) - f_clean))


RING_METHODS = {
    "median": lambda ct, g: lpa.ringRemoval_median(ct, g),
    "fast": lambda ct, g: lpa.ringRemoval_fast(ct, g, delta=0.01, beta=1.0, numIter=30),
    "tv": lambda ct, g: lpa.ringRemoval(ct, g, 0.01, 1.0, 30),
}


@pytest.mark.parametrize("method", sorted(RING_METHODS))
def test_ring_removal_reduces_injected_stripes(ring_case, method):
    ct, g_clean, gains, f_clean = ring_case
    g = g_clean + gains[None]
    before = ring_error(ct, g, f_clean)
    assert RING_METHODS[method](ct, g) is g
    assert ring_error(ct, g, f_clean) < 0.7 * before
    clean = g_clean.copy()                                    # stripe-free data barely change
    RING_METHODS[method](ct, clean)
    assert ring_error(ct, clean, f_clean) < 0.15 * before
    assert ct.get_numTVneighbors() == 26                      # restored


def test_ringRemoval_fast_respects_maxChange(ring_case):
    ct, g_clean, gains, _ = ring_case
    g = g_clean + gains[None]
    g0 = g.copy()
    lpa.ringRemoval_fast(ct, g, maxChange=0.004)
    d = g - g0
    assert np.max(np.abs(d)) <= 0.004 + 1e-6
    np.testing.assert_allclose(d, np.broadcast_to(d[0], d.shape), atol=1e-7)  # one map for all views


def test_transmission_shift(ct, rng):
    g = smooth_projections(rng)
    t = np.exp(-g.astype(np.float64))
    expected = -np.log(np.maximum((t - 0.1) / 0.9, 2.0 ** -16))
    lpa.transmission_shift(ct, g, 0.1)
    np.testing.assert_allclose(g, expected, atol=1e-4)
    with pytest.raises(ValueError, match="shift must be < 1"):
        lpa.transmission_shift(ct, g, 1.0)
    with pytest.raises(TypeError, match="real number"):
        lpa.transmission_shift(ct, g, "0.1")


# --------------------------------------------------------------- metrics
def test_quadratic_extrema_finds_vertex():
    x, y = lpa.quadratic_extrema(0.0, 1.0, 3.0, 4.0, 1.0, 1.0)   # y = (x − 2)² ... through the points
    a, b, c = np.polyfit([0, 1, 3], [4, 1, 1], 2)
    assert x == pytest.approx(-b / (2 * a))
    assert y == pytest.approx(c - b * b / (4 * a))
    assert lpa.quadratic_extrema(0.0, 1.0, 2.0, 0.0, 1.0, 2.0) == (1.0, 1.0)   # a line


def test_entropy_of_uniform_histogram():
    assert lpa.entropy(np.arange(100, dtype=np.float32)) == pytest.approx(np.log2(10))
    assert lpa.entropy(np.ones(16, np.float32)) == pytest.approx(0.0)


def test_MTF_of_gaussian_blurred_disk():
    ct = tomographicModels()
    ct.set_parallelbeam(8, 1, 64, 1.0, 1.0, 0.0, 31.5, ct.setAngleArray(8, 180.0))
    ct.set_default_volume()
    x, y, _ = ct.voxelSamples()
    R, sigma = 20.0, 1.2
    f = (0.5 * erfc((np.hypot(x, y) - R) / (np.sqrt(2) * sigma))).astype(np.float32)
    mtf = lpa.MTF(ct, f, R)
    N = 2 * 4 * int(R / 2.0)
    nu = np.arange(mtf.size) / (N * 0.25)                    # cycles/mm
    np.testing.assert_allclose(mtf, np.exp(-2 * (np.pi * sigma * nu) ** 2), atol=0.04)
    esf = lpa.MTF(ct, f, R, getEdgeResponse=True)
    assert esf.shape == (N,) and esf[0] > 0.9 and esf[-1] < 0.1
    with pytest.raises(ValueError, match="volume shape"):
        lpa.MTF(ct, f[:, :10], R)


def test_parameter_sweep_reconstructs_one_slice_per_value():
    ct = parallel_model(numAngles=60, numRows=3, numCols=48)
    g, _ = phantom_data(ct)
    values = [ct.get_centerCol() + d for d in (2.0, -2.0, 0.0)]
    stack = lpa.parameter_sweep(ct, g, values, "centerCol", iz=1)
    assert stack.shape == (3, ct.get_numY(), ct.get_numX())
    f = ct.FBP(g.copy())
    np.testing.assert_allclose(stack[1], f[1], atol=1e-5)   # values sorted: middle one is true
    with pytest.raises(ValueError, match="param must be"):
        lpa.parameter_sweep(ct, g, values, "bogus")
    with pytest.raises(ValueError, match="tau does not apply"):
        lpa.parameter_sweep(ct, g, values, "tau")
    with pytest.raises(ValueError, match="iz must be"):
        lpa.parameter_sweep(ct, g, values, iz=99)


def _needs(*methods):
    missing = [m for m in methods if not hasattr(tomographicModels, m)]
    if missing:
        pytest.skip(f"tomographicModels lacks {missing}")


@pytest.mark.parametrize("algorithm", ["inconsistency", "FBP"])
def test_parameter_sweep_set_optimal_finds_centerCol(algorithm):
    _needs("get_diameterFOV_min", "inconsistencyReconstruction")
    ct = parallel_model(numAngles=90, numRows=3, numCols=64, centerColShift=2.3)
    g, _ = phantom_data(ct)
    true = ct.get_centerCol()
    ct.set_centerCol(31.5)
    stack, metric = lpa.parameter_sweep(ct, g, np.arange(29.5, 37.6, 1.0), "centerCol",
                                        algorithmName=algorithm, set_optimal=True)
    assert ct.get_centerCol() == pytest.approx(true, abs=0.2)
    assert stack.shape[0] == 9 and stack.shape[1] < 64 and np.isfinite(metric)


def test_find_centerCol_and_tiltAngle_cone():
    _needs("get_diameterFOV_min", "inconsistencyReconstruction")
    ct = tomographicModels()
    ct.set_conebeam(90, 16, 64, 1.0, 1.0, 7.5, 33.0, ct.setAngleArray(90, 360.0), 300, 450)
    ct.set_default_volume()
    f = ct.allocate_volume()
    x, y, z = ct.voxelSamples()
    f[(x - 3) ** 2 + (y + 2) ** 2 + z ** 2 < 12 ** 2] = 0.02
    f[(x + 6) ** 2 + (y - 4) ** 2 + (z - 2) ** 2 < 4 ** 2] = 0.05
    g = ct.allocate_projections()
    ct.project(g, f)
    ct.set_centerCol(31.5)
    metric = lpa.find_centerCol_and_tiltAngle(ct, g, np.arange(29.5, 36.6, 1.0), [-1.0, 0.0, 1.0],
                                              method="inconsistency")
    assert np.isfinite(metric)
    assert ct.get_centerCol() == pytest.approx(33.0, abs=0.2)
    assert -1.0 <= ct.get_tiltAngle() <= 1.0      # (tilt resolution: see the report)


def test_bowtie_metric_prefers_a_centred_sinogram():
    ct = parallel_model(numAngles=90, numRows=1, numCols=64)
    g, _ = phantom_data(ct)
    shifted = np.roll(g, 3, axis=2)
    assert lpa.bowtie_alignment_metric(ct, g) < lpa.bowtie_alignment_metric(ct, shifted)


def test_geometric_calibration_bad_input(ct):
    g = np.zeros((2, 2, 2), np.float32)
    with pytest.raises(ValueError, match="centerCol' or 'tau"):
        lpa.geometric_calibration(ct, g, [0.0], [0.0], param="sod")
    with pytest.raises(ValueError, match="centerCol' or 'tau"):
        lpa.find_centerCol_or_tau_bowtie(ct, g, [0.0], param="sdd")


# ---------------------------------------------------------------- array kinds
def test_torch_cpu_tensor_is_processed_in_place(ct, rng):
    torch = pytest.importorskip("torch")
    g = smooth_projections(rng)
    g[1, 3, 3] = 5.0
    t = torch.from_numpy(g.copy())
    out = lpa.outlierCorrection(ct, t)
    assert out is t
    ref = lpa.outlierCorrection(ct, g)
    np.testing.assert_allclose(t.numpy(), ref)


# ------------------------------------------------------------------ ball phantom
def test_ball_phantom_calibration_recovers_geometry():
    """d36's recipe: a stack of balls ray-traced with a perturbed scanner; fitting LEAP's
    ball-phantom model from the nominal geometry recovers the true one."""
    from leap_preprocessing_algorithms import ball_phantom_calibration
    ct = tomographicModels()
    ct.set_conebeam(36, 120, 200, 0.3, 0.3, 59.5, 105.5, ct.setAngleArray(36, 360.0),
                    255.8, 345.1)
    true = tomographicModels()
    true.copy_parameters(ct)
    true.set_sod(265.8)
    true.set_sdd(365.1)
    true.set_centerRow(54.5)
    true.set_centerCol(101.5)
    radius, spacing, n, r, alpha = 0.8, 3.2, 7, 15.0, np.deg2rad(5.0)
    for k in range(n):
        true.addObject(None, 0, np.array([r * np.cos(alpha), r * np.sin(alpha),
                                          spacing * (k - 0.5 * (n - 1))]), radius, 2.25)
    g = true.rayTrace(true.allocate_projections(), 1)
    cal = ball_phantom_calibration(ct, spacing, g, segmentation_threshold=np.max(g) / 3.0)
    assert cal.ball_projection_locations.shape == (36, n, 2)
    x0 = cal.initial_guess(g)
    res = cal.optimize(x0, True)
    assert cal.cost(res.x) < 1e-3 * cal.cost(x0)
    assert abs(ct.get_centerRow() - 54.5) < 0.1 and abs(ct.get_centerCol() - 101.5) < 0.1
    assert abs(ct.get_sod() / 265.8 - 1) < 0.02 and abs(ct.get_sdd() / 365.1 - 1) < 0.02
    assert abs(res.x[7] - r) < 0.1 and abs(res.x[9] - 5.0) < 0.2      # radius, phase
    with pytest.raises(ValueError, match="balls"):
        ball_phantom_calibration(ct, spacing, np.zeros_like(g))
    with pytest.raises(ValueError, match="ballSpacing"):
        ball_phantom_calibration(ct, -1.0, g)
    with pytest.raises(ValueError, match="10 parameters"):
        cal.cost(res.x[:5])
