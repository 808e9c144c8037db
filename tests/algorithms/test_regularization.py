"""Total variation, denoising filters and LEAP's filter-sequence API."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leap import regularization as R
from leap.compat.filter_sequence import (TV, BilateralFilter, BlurFilter, GuidedFilter, LpNorm,
                                  MedianFilter, denoisingFilter, filterSequence,
                                  histogramSparsity)
from leap.compat.model import tomographicModels
from leap.compat.iterative_methods import IterativeMethodsMixin

if issubclass(tomographicModels, IterativeMethodsMixin):
    Model = tomographicModels
else:  # until the facade inherits the mixin
    class Model(IterativeMethodsMixin, tomographicModels):
        pass


def _fd_directional(cost, f, d, h=1e-6):
    return (cost(f + h * d) - cost(f - h * d)) / (2 * h)


def _leap_tv_reference(f, delta, beta, p, neighbors):
    """LEAP's TV cost and gradient, literally: every voxel and every neighbour (indices
    clamped at the faces), summed in loops."""
    n0, n1, n2 = f.shape
    offs = [(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)
            if (a, b, c) != (0, 0, 0) and (neighbors == 26 or abs(a) + abs(b) + abs(c) == 1)]
    cost, grad = 0.0, np.zeros_like(f)
    for i in range(n0):
        for j in range(n1):
            for k in range(n2):
                for a, b, c in offs:
                    if n0 == 1 and a != 0:
                        continue
                    ii, jj, kk = (min(max(i + a, 0), n0 - 1), min(max(j + b, 0), n1 - 1),
                                  min(max(k + c, 0), n2 - 1))
                    w = beta / math.sqrt(abs(a) + abs(b) + abs(c))
                    t = np.array(f[i, j, k] - f[ii, jj, kk])
                    cost += w * float(R.huber(t, delta, p))
                    grad[i, j, k] += w * float(R.huber_derivative(t, delta, p))
    return cost, grad


# ------------------------------------------------------------------- potential
def test_huber_potential_pieces():
    t = np.linspace(-3, 3, 601)
    delta, p = 0.5, 1.2
    h = R.huber(t, delta, p)
    inside = np.abs(t) <= delta
    np.testing.assert_allclose(h[inside], 0.5 * t[inside] ** 2)
    # continuous value and slope at |t| = delta
    for s in (1, -1):
        lo, hi = R.huber(np.array(s * delta * (1 - 1e-9)), delta, p), R.huber(
            np.array(s * delta * (1 + 1e-9)), delta, p)
        assert lo == pytest.approx(hi, rel=1e-6)
    dh = np.gradient(h, t)
    np.testing.assert_allclose(R.huber_derivative(t, delta, p)[5:-5], dh[5:-5], atol=5e-3)
    # curvature h'(t)/t bounds h'' (majorisation) and is 1 inside
    c = R.huber_curvature(t, delta, p)
    assert np.all(c[inside] == 1.0) and np.all(c <= 1.0 + 1e-12)


# ---------------------------------------------------------------------- TV
@pytest.mark.parametrize("neighbors", [6, 26])
@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 5, 6), (4, 1, 3)])
def test_tv_gradient_matches_finite_differences(neighbors, shape):
    rng = np.random.default_rng(0)
    f = rng.standard_normal(shape)
    for delta, p, beta in ((0.3, 1.2, 1.7), (0.05, 1.0, 1.0), (10.0, 1.2, 0.5)):
        def cost(x):
            return R.tv_cost(x, delta, beta, p, neighbors=neighbors)
        grad = R.tv_gradient(f, delta, beta, p, neighbors=neighbors)
        for _ in range(3):
            d = rng.standard_normal(shape)
            assert _fd_directional(cost, f, d) == pytest.approx(float(np.sum(grad * d)),
                                                                rel=1e-6, abs=1e-8)


@settings(deadline=None, max_examples=25)
@given(shape=st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5)),
       delta=st.floats(1e-3, 2.0), p=st.floats(1.0, 2.0), neighbors=st.sampled_from([6, 26]),
       seed=st.integers(0, 2 ** 16))
def test_tv_gradient_finite_differences_random(shape, delta, p, neighbors, seed):
    rng = np.random.default_rng(seed)
    f = rng.standard_normal(shape)
    d = rng.standard_normal(shape)
    grad = R.tv_gradient(f, delta, 1.0, p, neighbors=neighbors)
    fd = _fd_directional(lambda x: R.tv_cost(x, delta, 1.0, p, neighbors=neighbors), f, d)
    assert fd == pytest.approx(float(np.sum(grad * d)), rel=1e-5, abs=1e-7)


@pytest.mark.parametrize("shape", [(3, 4, 5), (1, 5, 6)])
def test_tv_matches_leap_definitions(shape):
    """With 6 neighbours: LEAP's gradient exactly, and half its cost (LEAP counts each
    pair twice). With 26 the same holds away from the faces."""
    rng = np.random.default_rng(1)
    f = rng.standard_normal(shape)
    cost, grad = _leap_tv_reference(f, 0.3, 1.5, 1.2, 6)
    assert R.tv_cost(f, 0.3, 1.5, 1.2, neighbors=6) == pytest.approx(0.5 * cost, rel=1e-12)
    np.testing.assert_allclose(R.tv_gradient(f, 0.3, 1.5, 1.2, neighbors=6), grad, atol=1e-12)
    big = rng.standard_normal((5, 6, 7))
    _, grad26 = _leap_tv_reference(big, 0.3, 1.5, 1.2, 26)
    inner = (slice(1, -1),) * 3
    np.testing.assert_allclose(R.tv_gradient(big, 0.3, 1.5, 1.2)[inner], grad26[inner],
                               atol=1e-12)


def test_tv_quad_form_is_hessian_when_quadratic_and_majorises_otherwise():
    rng = np.random.default_rng(2)
    f = rng.standard_normal((3, 5, 6))
    d = rng.standard_normal(f.shape)
    # all differences below delta: R is quadratic, quad form = dᵀ∇²R d exactly
    big = 100.0
    s = 0.37
    lhs = R.tv_cost(f + s * d, big, 2.0)
    g = R.tv_gradient(f, big, 2.0)
    rhs = R.tv_cost(f, big, 2.0) + s * np.sum(g * d) + 0.5 * s * s * R.tv_quad_form(f, d, big, 2.0)
    assert lhs == pytest.approx(rhs, rel=1e-10)
    # Huber-like regime: the surrogate lies above R along the line
    delta = 0.1
    g = R.tv_gradient(f, delta)
    q = R.tv_quad_form(f, d, delta)
    assert q > 0
    r0 = R.tv_cost(f, delta)
    for s in np.linspace(-2, 2, 41):
        surrogate = r0 + s * np.sum(g * d) + 0.5 * s * s * q
        assert R.tv_cost(f + s * d, delta) <= surrogate + 1e-9 * abs(surrogate)


def test_tv_float32_and_2d_inputs():
    rng = np.random.default_rng(3)
    f = rng.random((6, 7)).astype(np.float32)
    g = R.tv_gradient(f, 0.01)
    assert g.shape == f.shape and g.dtype == np.float32
    np.testing.assert_allclose(g, R.tv_gradient(f.astype(np.float64)[None], 0.01)[0], rtol=1e-4,
                               atol=1e-6)
    with pytest.raises(ValueError, match="neighbours"):
        R.tv_cost(f, 0.1, neighbors=8)
    with pytest.raises(ValueError, match="delta"):
        R.tv_cost(f, -1.0)


def _noisy_phantom(seed=4):
    rng = np.random.default_rng(seed)
    f = np.zeros((6, 24, 24), np.float32)
    f[:, 6:18, 6:18] = 1.0
    f[:, 10:14, 10:14] = 2.0
    return f, (f + rng.normal(0, 0.2, f.shape)).astype(np.float32)


def test_tv_denoise_is_leaps_iteration_and_denoises():
    """LEAP's recurrence (total_variation.cu, TVdenoise): d = ∇R(x), s = |d|²/qLEAP(x, d)
    with LEAP's quadratic form twice ours, x ← (1 − s)·x − s·(d − f)."""
    clean, noisy = _noisy_phantom()
    delta, beta = 0.05, 0.3
    x = noisy.astype(np.float64)
    for _ in range(6):
        d = R.tv_gradient(x, delta, beta)
        s = np.vdot(d, d) / (2 * R.tv_quad_form(x, d, delta, beta))
        x = (1 - s) * x - s * (d - noisy)
    y = R.tv_denoise(noisy, delta, beta, 6)
    np.testing.assert_allclose(y, x, rtol=1e-4, atol=1e-5)
    out = noisy.copy()
    assert R.tv_denoise(out, delta, beta, 6, out=out) is out   # in place
    np.testing.assert_array_equal(out, y)
    assert R.tv_cost(y, delta, beta) < 0.5 * R.tv_cost(noisy, delta, beta)
    assert np.linalg.norm(y - clean) < 0.6 * np.linalg.norm(noisy - clean)
    flat = np.ones((3, 4, 5), np.float32)                       # nothing to smooth
    np.testing.assert_array_equal(R.tv_denoise(flat, delta, beta, 3), flat)


def test_tv_diffuse_reduces_tv_and_facade_matches_core():
    _, noisy = _noisy_phantom(5)
    ct = Model()
    ref = R.tv_diffuse(noisy, 0.01, 5)
    assert R.tv_cost(ref, 0.01) < R.tv_cost(noisy, 0.01)
    x = noisy.copy()
    assert ct.diffuse(x, 0.01, 5) is x
    np.testing.assert_array_equal(x, ref)
    # facade TV functions: beta <= 0 counts as 1 (LEAP), neighbours settable
    assert ct.TVcost(noisy, 0.01) == pytest.approx(R.tv_cost(noisy, 0.01, 1.0))
    assert ct.TVcost(noisy, 0.01, 2.0) == pytest.approx(2 * ct.TVcost(noisy, 0.01))
    np.testing.assert_allclose(ct.TVgradient(noisy, 0.01, 0.5), R.tv_gradient(noisy, 0.01, 0.5))
    d = np.ones_like(noisy)
    assert ct.TVquadForm(noisy, d, 0.01) == pytest.approx(0.0, abs=1e-9)   # constant shift
    assert ct.get_numTVneighbors() == 26
    ct.set_numTVneighbors(6)
    assert ct.TVcost(noisy, 0.01) == pytest.approx(R.tv_cost(noisy, 0.01, neighbors=6))
    with pytest.raises(ValueError):
        ct.set_numTVneighbors(8)
    y = noisy.copy()
    assert ct.TV_denoise(y, 0.05, 0.1, 5) is y
    np.testing.assert_allclose(y, R.tv_denoise(noisy, 0.05, 0.1, 5, neighbors=6), rtol=1e-6)


def test_tv_denoise_mean_over_first_dim():
    _, noisy = _noisy_phantom(6)
    y = R.tv_denoise(noisy, 0.05, 0.1, 3, mean_over_first_dim=True)
    # every slice received the same update
    diff = y - noisy
    np.testing.assert_allclose(diff, np.broadcast_to(diff[:1], diff.shape), atol=1e-5)


# ------------------------------------------------------------------ filters
def test_blur_kernel_and_adjoint():
    rng = np.random.default_rng(7)
    f = rng.random((5, 6, 7)).astype(np.float64)
    const = np.full((4, 5, 6), 3.0)
    np.testing.assert_allclose(R.blur(const, 2.5), const)
    # brute force: raised cosine over offsets with |o_k| <= floor(FWHM), edges replicated
    fwhm = 2.0
    out = np.zeros_like(f)
    wsum = 0.0
    for a in range(-2, 3):
        for b in range(-2, 3):
            for c in range(-2, 3):
                w = 0.5 + 0.5 * math.cos(math.pi * min(math.sqrt(a * a + b * b + c * c) / fwhm, 1))
                if w <= 1e-4:
                    continue
                idx = np.ix_(np.clip(np.arange(5) + a, 0, 4), np.clip(np.arange(6) + b, 0, 5),
                             np.clip(np.arange(7) + c, 0, 6))
                out += w * f[idx]
                wsum += w
    np.testing.assert_allclose(R.blur(f, fwhm), out / wsum, rtol=1e-12)
    # exact transpose
    for fw, nd in ((2.0, 3), (3.2, 2), (0.5, 3)):
        x, y = rng.random(f.shape), rng.random(f.shape)
        assert np.vdot(R.blur(x, fw, num_dims=nd), y) == pytest.approx(
            np.vdot(x, R.blur_adjoint(y, fw, num_dims=nd)), rel=1e-12)
    # 2-D blur leaves slices independent; high pass = f − blur
    g2 = R.blur(f, 2.0, num_dims=2)
    np.testing.assert_allclose(g2[1], R.blur(f[1:2], 2.0, num_dims=2)[0])
    np.testing.assert_allclose(R.high_pass(f, 2.0), f - R.blur(f, 2.0))


def test_blur_refuses_a_width_beyond_the_array():
    """The kernel has (2·floor(FWHM) + 1)^d taps: a FWHM of 2**40 voxels ran for ever (a
    fuzz run drew it), inf and 1e308 raised OverflowError. Up to the largest filtered
    dimension it runs, and its kernel still sums to one."""
    f = np.random.default_rng(3).random((3, 5, 7))
    ct = tomographicModels()
    for fwhm in (2.0 ** 40, 1e308, math.inf, 7.5):
        with pytest.raises(ValueError, match="largest filtered dimension, 7 voxels"):
            R.blur(f, fwhm)
        with pytest.raises(ValueError, match="largest filtered dimension"):
            R.blur_adjoint(f, fwhm)
        with pytest.raises(ValueError, match="largest filtered dimension"):
            ct.BlurFilter(f.astype(np.float32), fwhm)
    # num_dims=2 filters (y, x) only: its bound is max(ny, nx) as well
    with pytest.raises(ValueError, match="7 voxels"):
        R.blur(f, 8.0, num_dims=2)
    const = np.full(f.shape, 2.0)
    np.testing.assert_allclose(R.blur(const, 7.0), const)
    np.testing.assert_allclose(R.blur(const, 7.0, num_dims=2), const)


def test_median_filter():
    import scipy.ndimage as nd
    rng = np.random.default_rng(8)
    f = rng.random((4, 8, 9)).astype(np.float32)
    np.testing.assert_array_equal(R.median(f), nd.median_filter(f, size=3, mode="nearest"))
    np.testing.assert_array_equal(R.median(f, 0.0, 5),
                                  nd.median_filter(f, size=(3, 5, 5), mode="nearest"))
    np.testing.assert_array_equal(R.median(f, 0.0, 7, num_dims=2),
                                  nd.median_filter(f, size=(1, 7, 7), mode="nearest"))
    # thresholded: only outliers are replaced
    g = np.ones((3, 6, 6), np.float32)
    g[1, 3, 3] = 5.0
    g[1, 1, 1] = 1.05
    out = R.median(g, threshold=0.1)
    assert out[1, 3, 3] == 1.0 and out[1, 1, 1] == pytest.approx(1.05)
    with pytest.raises(ValueError):
        R.median(g, 0.0, 4)


def test_bilateral_and_guided_filters_smooth_noise_keep_constants():
    clean, noisy = _noisy_phantom(9)
    for flt in (lambda x: R.bilateral(x, 2.0, 0.8), lambda x: R.guided(x, 2, 0.05),
                lambda x: R.bilateral(x, 2.0, 0.8, scale=2.0), lambda x: R.guided(x, 1, 0.05, 2)):
        out = flt(noisy)
        assert out.shape == noisy.shape and out.dtype == np.float32
        assert np.linalg.norm(out - clean) < 0.7 * np.linalg.norm(noisy - clean)
        const = np.full((3, 7, 7), 0.5, np.float32)
        np.testing.assert_allclose(flt(const), const, rtol=1e-5)


def test_facade_filters_work_in_place():
    ct = Model()
    _, noisy = _noisy_phantom(10)
    for name, args, ref in (("BlurFilter", (2.0,), R.blur(noisy, 2.0)),
                            ("LowPassFilter", (2.0,), R.blur(noisy, 2.0)),
                            ("HighPassFilter", (2.0,), R.high_pass(noisy, 2.0)),
                            ("BlurFilter2D", (3.0,), R.blur(noisy, 3.0, num_dims=2)),
                            ("MedianFilter", (0.0, 5), R.median(noisy, 0.0, 5)),
                            ("MedianFilter2D", (0.0, 3), R.median(noisy, 0.0, 3, num_dims=2)),
                            ("BilateralFilter", (2.0, 0.5), R.bilateral(noisy, 2.0, 0.5)),
                            ("PriorBilateralFilter", (2.0, 0.5, noisy), R.bilateral(noisy, 2.0, 0.5)),
                            ("GuidedFilter", (2, 0.05), R.guided(noisy, 2, 0.05))):
        x = noisy.copy()
        assert getattr(ct, name)(x, *args) is x, name
        np.testing.assert_allclose(x, ref, rtol=1e-5, atol=1e-6, err_msg=name)


# ---------------------------------------------------------- filter sequence
def test_filter_sequence_sums_differentiable_terms():
    ct = Model()
    rng = np.random.default_rng(11)
    f = rng.random((3, 6, 6))
    d = rng.standard_normal(f.shape)
    tv = TV(ct, delta=0.05, weight=2.0)
    lp = LpNorm(ct, delta=0.1, p=1.5, weight=0.5)
    seq = filterSequence(3.0)
    seq.append(tv).append(lp).append(BlurFilter(ct, 2.0))
    assert seq.count() == 3 and seq.anyDifferentiable() and seq.differentiable
    assert seq.cost(f) == pytest.approx(3.0 * (tv.cost(f) + lp.cost(f)))
    np.testing.assert_allclose(seq.gradient(f), 3.0 * (tv.gradient(f) + lp.gradient(f)))
    assert seq.quadForm(f, d) == pytest.approx(3.0 * (tv.quadForm(f, d) + lp.quadForm(f, d)))
    assert tv.cost(f) == pytest.approx(R.tv_cost(f, 0.05, 2.0))
    seq.beta = 0.0
    assert seq.cost(f) == 0.0 and not seq.differentiable
    np.testing.assert_array_equal(seq.gradient(f), 0.0)
    empty = filterSequence()
    assert empty.cost(f) == 0.0 and not empty.differentiable
    with pytest.raises(TypeError):
        seq.append("TV")
    seq.clear()
    assert seq.count() == 0


@pytest.mark.parametrize("make", [
    lambda ct: TV(ct, delta=0.02, p=1.2, weight=1.3),
    lambda ct: TV(ct, delta=0.02, f_0=np.full((3, 6, 6), 0.2)),
    lambda ct: LpNorm(ct, delta=0.05, p=1.2),
    lambda ct: LpNorm(ct, delta=0.05, p=1.5, FWHM=2.5, f_0=np.full((3, 6, 6), 0.1)),
    lambda ct: LpNorm(ct, delta=0.05, p=1.5, FWHM=-2.0),
    lambda ct: histogramSparsity(ct, mus=[0.5, 1.0], weight=0.1),
], ids=["TV", "TV-prior", "Lp", "Lp-lowpass", "Lp-highpass", "histogram"])
def test_differentiable_filters_gradients(make):
    ct = Model()
    flt = make(ct)
    rng = np.random.default_rng(12)
    f = rng.random((3, 6, 6))
    grad = flt.gradient(f)
    for _ in range(3):
        d = rng.standard_normal(f.shape)
        assert _fd_directional(flt.cost, f, d) == pytest.approx(float(np.sum(grad * d)),
                                                                rel=1e-5, abs=1e-8)
        assert flt.quadForm(f, d) >= 0
    # apply() denoises: one descent step lowers the cost
    x = f.copy()
    out = flt.apply(x)
    assert out is x and flt.cost(x) < flt.cost(f)


def test_non_differentiable_filters():
    ct = Model()
    _, noisy = _noisy_phantom(13)
    for flt in (BlurFilter(ct, 2.0), MedianFilter(ct, 0.0, 3), BilateralFilter(ct, 2.0, 0.5),
                GuidedFilter(ct, 2, 0.05)):
        assert not flt.isDifferentiable
        x = noisy.copy()
        assert flt.apply(x) is x
        assert np.std(np.diff(x, axis=2)) < np.std(np.diff(noisy, axis=2))
        with pytest.raises(TypeError, match="not differentiable"):
            flt.gradient(x)
    seq = filterSequence(1.0)
    seq.append(MedianFilter(ct)).append(TV(ct, delta=0.01))
    x = noisy.copy()
    assert seq.apply(x) is x
    assert not filterSequence(1.0).append(MedianFilter(ct)).differentiable
    assert isinstance(TV(ct), denoisingFilter)
    assert "delta" in repr(TV(ct, delta=0.5))


def test_tv_filter_uses_the_models_neighbourhood():
    ct = Model()
    f = np.random.default_rng(14).random((3, 5, 5))
    ct.set_numTVneighbors(6)
    assert TV(ct, delta=0.1).cost(f) == pytest.approx(R.tv_cost(f, 0.1, neighbors=6))
    assert TV(None, delta=0.1).cost(f) == pytest.approx(R.tv_cost(f, 0.1, neighbors=26))


def test_leapctype_exports_filter_sequence():
    import leapctype
    names = ("filterSequence", "TV", "histogramSparsity", "BlurFilter", "MedianFilter",
             "LpNorm", "BilateralFilter", "GuidedFilter", "denoisingFilter")
    if not hasattr(leapctype, "filterSequence"):
        pytest.skip("leapctype does not re-export leap.compat.filter_sequence yet")
    ns = {}
    exec("from leapctype import *", ns)
    for n in names:
        assert n in ns, n
    assert hasattr(ns["tomographicModels"], "RWLS")


@pytest.mark.parametrize("call", [
    lambda f: R.tv_denoise(f, 0.05, 0.1, 2.0),
    lambda f: R.tv_diffuse(f, 0.05, 3.0),
    lambda f: tomographicModels().TV_denoise(f, 0.05, 0.1, 2.0),
], ids=["tv_denoise", "tv_diffuse", "facade TV_denoise"])
def test_iteration_counts_must_be_integers(call):
    """Iteration counts are checked as the iterative methods check theirs: a float, even an
    integral one, is a TypeError (TV_denoise took 1e308 as 10^308 steps and never
    returned)."""
    f = np.random.default_rng(0).random((3, 4, 5), dtype=np.float32)
    with pytest.raises(TypeError, match="num_iter must be an integer"):
        call(f)
