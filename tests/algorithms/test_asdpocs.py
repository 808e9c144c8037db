"""ASD-POCS (leap.algorithms.asd_pocs and the facade's ASDPOCS): better than SART on
sparse-view data with LEAP-style default calls, SART without a TV budget and line search,
a TV phase that keeps the data fit. Regressions of issue 11, item 4 and issue 31, item 4."""
import numpy as np
import pytest

import leap.algorithms as alg
from leap.compat.filter_sequence import TV, filterSequence
from leap.compat.model import tomographicModels
from leap.algorithms.regularization import TotalVariation


def rel(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


# ------------------------------------------------------ item 4: ASD-POCS's TV phase
PC_N, PC_VIEWS, PC_MU = 32, 20, 0.02


@pytest.fixture(scope="module")
def sparse_pc():
    """20 parallel views (about a third of what 32 columns need) of a piecewise-constant
    object: four uniform ellipses, 0.5–2 × 0.02/mm, consistent data. SART's error here is
    streaks plus slow convergence; TV's prior removes the first."""
    ct = tomographicModels()
    ct.set_parallelbeam(PC_VIEWS, 2, PC_N, 1.0, 1.0, 0.5, 0.5 * (PC_N - 1),
                        ct.setAngleArray(PC_VIEWS, 180.0))
    ct.set_default_volume()
    X, Y = np.meshgrid(ct.x_samples(), ct.y_samples())
    R = 0.45 * PC_N
    img = np.zeros((PC_N, PC_N), np.float32)
    img[(X / R) ** 2 + (Y / (0.85 * R)) ** 2 < 1] = 1.0
    img[((X - 0.3 * R) / (0.25 * R)) ** 2 + ((Y + 0.2 * R) / (0.35 * R)) ** 2 < 1] = 2.0
    img[((X + 0.35 * R) / (0.2 * R)) ** 2 + ((Y - 0.1 * R) / (0.2 * R)) ** 2 < 1] = 0.5
    img[(X / (0.15 * R)) ** 2 + ((Y - 0.5 * R) / (0.1 * R)) ** 2 < 1] = 1.5
    truth = ct.allocate_volume()
    truth[:] = PC_MU * img[None]
    g = ct.allocate_projections()
    ct.project(g, truth)
    return ct, g, truth


def _pc_tv(ct, delta=PC_MU / 20, p=1.0):
    """TV for a piecewise-constant object: delta a twentieth of the contrast (LEAP's
    advice), p = 1 (Huber)."""
    seq = filterSequence()
    seq.append(TV(ct, delta=delta, p=p))
    return seq


def _asd_vs_sart(ct, g, truth, num_iter, num_subsets, num_tv, filters):
    f_sart = ct.SART(g, ct.allocate_volume(), num_iter, num_subsets, progress=False)
    f_asd = ct.ASDPOCS(g, ct.allocate_volume(), num_iter, num_subsets, num_tv, filters,
                       progress=False)
    return rel(f_asd, truth) / rel(f_sart, truth)


@pytest.mark.parametrize("num_subsets, num_iter, num_tv", [
    # one subset (SIRT): LEAP's scheme gave 1.43× SART's error
    pytest.param(1, 100, 5, marks=pytest.mark.slow),
    # many TV steps: 3.4× before (TV overran the slow SIRT steps)
    pytest.param(1, 100, 20, marks=pytest.mark.slow),
    (5, 30, 5),      # subsets: 0.88 before
])
def test_asdpocs_beats_sart_on_sparse_piecewise_constant_data(sparse_pc, num_subsets,
                                                              num_iter, num_tv):
    """ASD-POCS at most 0.8× SART's error at equal iterations, with one subset as with
    several: the TV phase's size follows the SART step (Sidky & Pan) instead of the
    filter's own diffusion step, which either overran SART or did nothing."""
    ct, g, truth = sparse_pc
    ratio = _asd_vs_sart(ct, g, truth, num_iter, num_subsets, num_tv, _pc_tv(ct))
    assert ratio <= 0.8, f"ASD-POCS/SART error ratio {ratio:.3f}"


@pytest.mark.slow
def test_asdpocs_leap_default_tv_is_not_worse_than_sart(sparse_pc):
    """LEAP's default filter (TV, delta = 0, p = 1.2), passed explicitly, with many
    steps and one subset: the TV phase used to make the result worse than SART's
    (1.07×) and now helps."""
    ct, g, truth = sparse_pc
    seq = filterSequence()
    seq.append(TV(ct, delta=0.0))
    ratio = _asd_vs_sart(ct, g, truth, 100, 1, 20, seq)
    assert ratio <= 0.9, f"ASD-POCS/SART error ratio {ratio:.3f}"


def test_asdpocs_without_tv_budget_is_sart(sparse_pc):
    """With a zero TV budget and SART's own step (no line search) the data step, the
    blend and the data fit reduce to SART's exactly: the TV phase and the line search
    are the only differences between the two."""
    ct, g, _ = sparse_pc
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    for M in (1, 4):
        a = alg.sart(op, g, ct.allocate_volume(), 5, M)
        b = alg.asd_pocs(op, g, ct.allocate_volume(), 5, M, 5, TotalVariation(1e-3),
                         tv_step=0.0, line_search=False)
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)
        c = ct.ASDPOCS(g, ct.allocate_volume(), 5, M, 5, tv_step=0.0, line_search=False,
                       progress=False)
        np.testing.assert_allclose(c, a, rtol=1e-5, atol=1e-7)


def _misfit(op, g, x):
    r = op.forward(x) - g
    return float(np.sum(r.astype(np.float64) ** 2))


def test_asdpocs_line_search_fits_the_data_at_least_as_well_as_sart(sparse_pc):
    """The data step continued to the misfit's minimum along the SART pass (the block
    form of Sidky & Pan's β = 1 projection) never fits the data worse than the pass
    itself, and with one subset better (SART's λ = 0.9 stops short)."""
    ct, g, _ = sparse_pc
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    start = ct.SART(g, ct.allocate_volume(), 10, 1, progress=False)
    for M in (1, 4):
        f_sart = start.copy()
        alg.sart(op, g, f_sart, 1, M)
        f_ls = start.copy()
        alg.asd_pocs(op, g, f_ls, 1, M, 5, TotalVariation(1e-3), tv_step=0.0)
        e_sart, e_ls = _misfit(op, g, f_sart), _misfit(op, g, f_ls)
        assert e_ls <= e_sart * (1 + 1e-6)
        if M == 1:
            assert e_ls < 0.9 * e_sart
        assert f_ls.min() >= 0.0


@pytest.mark.parametrize("line_search", [False, True])
def test_asdpocs_tv_phase_keeps_data_fit_and_moves_less_than_sart(sparse_pc, line_search):
    """Each iteration's TV change is at most the data step (Sidky & Pan's balance), and
    the data fit after the blend keeps at least 20 % of the data step's gain (iTV)."""
    ct, g, _ = sparse_pc
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    reg = TotalVariation(1e-3, p=1.0)
    f = ct.allocate_volume()
    fits = []
    alg.asd_pocs(op, g, f, 15, 1, 5, reg, line_search=line_search,
                 callback=lambda n, x, d: fits.append(d))
    assert fits[-1] < 0.1 * fits[0]
    # One iteration by hand: the data step alone (tv_step = 0) vs the TV-phase change.
    start = ct.SART(g, ct.allocate_volume(), 10, 1, progress=False)
    f_data = start.copy()
    alg.asd_pocs(op, g, f_data, 1, 1, 5, reg, tv_step=0.0, line_search=line_search)
    if not line_search:
        f_sart = start.copy()
        alg.sart(op, g, f_sart, 1, 1)
        np.testing.assert_allclose(f_data, f_sart, rtol=1e-5, atol=1e-7)
    f_asd = start.copy()
    alg.asd_pocs(op, g, f_asd, 1, 1, 5, reg, line_search=line_search)
    dp = np.linalg.norm(f_data - start)
    assert 0 < np.linalg.norm(f_asd - f_data) <= dp * (1 + 1e-4)
    # and the data-fit rule (omega = 0.8)
    e0, es, ea = _misfit(op, g, start), _misfit(op, g, f_data), _misfit(op, g, f_asd)
    assert ea <= es + 0.8 * (e0 - es) + 1e-6 * e0


def test_asdpocs_with_a_filter_without_gradient(sparse_pc):
    """A median filter (no gradient) steps towards its output, never beyond it, and
    still improves on SART's error on this object."""
    from leap.compat.filter_sequence import MedianFilter
    ct, g, truth = sparse_pc
    seq = filterSequence()
    seq.append(MedianFilter(ct, 0.0, 3))
    ratio = _asd_vs_sart(ct, g, truth, 30, 5, 3, seq)
    assert ratio < 1.0


# ------------------------------------------- issue 31, item 4: LEAP's default call
@pytest.fixture(scope="module")
def sparse_cone():
    """The issue's 20-view cone scan, 18° steps over 360°, default volume (32×32×24
    voxels of 0.5 mm), consistent data of two voxelised ellipsoids (addObject, values in
    1/mm): a 5 mm sphere of 0.02 at the centre holding a 2 mm sphere of 0.04 at x = 2 mm.
    LEAP's scheme (and this project's before) gave 1.00–1.02× SART's error here at 30
    iterations with one subset, 0.85 with five."""
    ct = tomographicModels()
    ct.set_conebeam(20, 24, 32, 1, 1, 11.5, 15.5, ct.setAngleArray(20, 360.0), 300, 600)
    ct.set_default_volume()
    truth = ct.allocate_volume()
    ct.addObject(truth, 0, [0, 0, 0], [5, 5, 5], 0.02)
    ct.addObject(truth, 0, [2, 0, 0], [2, 2, 2], 0.04)
    g = ct.allocate_projections()
    ct.project(g, truth)
    return ct, g, truth


@pytest.mark.parametrize("num_subsets", [1, 5])
def test_asdpocs_default_call_beats_sart_on_sparse_view_cone_data(sparse_cone, num_subsets):
    """``ASDPOCS(g, f, 30, numSubsets, 20)`` with the default filter: at most 0.8× SART's
    error at 30 iterations, with one subset as with five (measured 0.49 and 0.60; LEAP's
    scheme 1.02 and 0.85)."""
    ct, g, truth = sparse_cone
    ratio = _asd_vs_sart(ct, g, truth, 30, num_subsets, 20, None)
    assert ratio <= 0.8, f"ASD-POCS/SART error ratio {ratio:.3f}"


@pytest.mark.parametrize("num_subsets, bound", [
    (1, 0.8),     # LEAP's scheme: 1.12
    (5, 0.6),     # 0.75 before: the 0.8 held already, so the test asks for more
])
def test_asdpocs_default_call_beats_sart_on_sparse_piecewise_constant_data(
        sparse_pc, num_subsets, bound):
    """The default call on the 20-view piecewise-constant case, 30 iterations,
    ``numTV`` 20 (measured 0.31 and 0.36)."""
    ct, g, truth = sparse_pc
    ratio = _asd_vs_sart(ct, g, truth, 30, num_subsets, 20, None)
    assert ratio <= bound, f"ASD-POCS/SART error ratio {ratio:.3f}"


def test_asdpocs_default_is_scale_invariant(sparse_pc):
    """The default TV (delta = 0, p = 1) has no value scale and the TV budget follows
    the data step, so attenuation ×10 or ×0.1 gives the same reconstruction, scaled (to
    float32 rounding, which the sign-like TV gradient amplifies a little), and the same
    gain over SART."""
    ct, g, truth = sparse_pc
    f1 = ct.ASDPOCS(g, ct.allocate_volume(), 30, 1, 20, progress=False)
    for s in (10.0, 0.1):
        gs = (g * s).astype(np.float32)
        fs = ct.ASDPOCS(gs, ct.allocate_volume(), 30, 1, 20, progress=False)
        assert rel(fs / s, f1) < 0.03
        ratio = _asd_vs_sart(ct, gs, truth * s, 30, 1, 20, None)
        assert ratio <= 0.8, f"scale {s}: ASD-POCS/SART error ratio {ratio:.3f}"
