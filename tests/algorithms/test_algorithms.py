"""Iterative reconstruction: monotone objectives where theory promises them,
convergence to the phantom on consistent data, callbacks and progress, masks and
nonnegativity, operator-agnostic algorithms, and the LEAP facade methods."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import leap.algorithms as alg
from conftest import REPO_ROOT
from leap.compat.filter_sequence import TV, MedianFilter, filterSequence
from leap.compat.model import tomographicModels
from leap.compat.iterative_methods import IterativeMethodsMixin
from leap.algorithms.regularization import TotalVariation

if issubclass(tomographicModels, IterativeMethodsMixin):
    Model = tomographicModels
else:  # until the facade inherits the mixin
    class Model(IterativeMethodsMixin, tomographicModels):
        pass

N = 24          # detector columns and volume size
VIEWS = 48      # well sampled for 24 columns
MU = 0.02
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"   # this file re-run under the simulator


def rel(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def scan():
    """A small cone-beam scan of the 3-D Shepp–Logan phantom with consistent data
    (projected by the same operator: the phantom solves every method's problem)."""
    ct = Model()
    ct.set_conebeam(VIEWS, N, N, 1.0, 1.0, 0.5 * (N - 1), 0.5 * (N - 1),
                    ct.setAngleArray(VIEWS, 360.0), 500.0, 1000.0)
    ct.set_default_volume()
    truth = ct.allocate_volume()
    ct.set_SheppLogan(truth)
    truth *= MU
    g = ct.allocate_projections()
    ct.project(g, truth)
    fbp_err = rel(ct.FBP(g), truth)
    return ct, g, truth, fbp_err


def _tv_filters(ct, beta=1e-4, delta=1e-3):
    seq = filterSequence(beta)
    seq.append(TV(ct, delta=delta))
    return seq


def _non_increasing(values, rtol=1e-6):
    v = np.asarray(values, dtype=np.float64)
    slack = rtol * np.abs(v[:-1]) + 1e-12
    return bool(np.all(np.diff(v) <= slack)), np.max(np.diff(v) / (np.abs(v[:-1]) + 1e-30))


# ------------------------------------------------------------------ monotone
MONOTONE = {
    # name: (runner(ct, g, f, callback, filters), objective includes the regulariser)
    "SIRT": (lambda ct, g, f, cb, seq: ct.SIRT(g, f, 15, callback=cb, progress=False), False),
    "SIRT-free": (lambda ct, g, f, cb, seq: ct.SART(g, f, 15, 1, None, False, callback=cb,
                                                    progress=False), False),
    "MLEM": (lambda ct, g, f, cb, seq: ct.MLEM(g, f, 15, callback=cb, progress=False), False),
    "LS": (lambda ct, g, f, cb, seq: ct.LS(g, f, 15, None, False, callback=cb,
                                           progress=False), False),
    "LS-SQS": (lambda ct, g, f, cb, seq: ct.LS(g, f, 15, "SQS", False, callback=cb,
                                               progress=False), False),
    "LS-RAMP": (lambda ct, g, f, cb, seq: ct.LS(g, f, 15, "RAMP", False, callback=cb,
                                                progress=False), False),
    "WLS": (lambda ct, g, f, cb, seq: ct.WLS(g, f, 15, None, None, False, callback=cb,
                                             progress=False), False),
    "RLS": (lambda ct, g, f, cb, seq: ct.RLS(g, f, 15, seq, "SQS", False, callback=cb,
                                             progress=False), True),
    "RWLS": (lambda ct, g, f, cb, seq: ct.RWLS(g, f, 15, seq, None, None, False, callback=cb,
                                               progress=False), True),
}


@pytest.mark.parametrize("name", list(MONOTONE))
def test_objective_never_increases(scan, name):
    """SIRT (projected, diagonally preconditioned gradient descent with a step below
    2/L), MLEM (EM never lowers the likelihood) and CG with exact / majorised line
    searches (LS … RWLS, without the nonnegativity clip) decrease their objectives
    monotonically."""
    ct, g, _, _ = scan
    run, with_reg = MONOTONE[name]
    seq = _tv_filters(ct, 1e-3) if with_reg else None
    costs = []

    def cb(iteration, x, fit):
        costs.append(fit + (seq.cost(x) if seq is not None else 0.0))

    run(ct, g, ct.allocate_volume(), cb, seq)
    assert len(costs) == 15
    ok, worst = _non_increasing(costs)
    assert ok, f"{name}: objective increased by {worst:.3g} (relative)"
    assert costs[-1] < 0.5 * costs[0]


def test_mlem_misfit_is_kullback_leibler(scan):
    ct, g, truth, _ = scan
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    Pf = op.forward(truth)
    assert alg.poisson_misfit(Pf, g) == pytest.approx(0.0, abs=1e-6 * float(g.sum()))
    assert alg.poisson_misfit(2 * Pf, g) > 0


# --------------------------------------------------------------- convergence
CONVERGENCE = {
    "SIRT": lambda ct, g, f: ct.SIRT(g, f, 40, progress=False),
    "SART": lambda ct, g, f: ct.SART(g, f, 10, 4, progress=False),
    "MLEM": lambda ct, g, f: ct.MLEM(g, f, 20, progress=False),
    "OSEM": lambda ct, g, f: ct.OSEM(g, f, 5, 4, progress=False),
    "LS": lambda ct, g, f: ct.LS(g, f, 20, progress=False),
    "LS-RAMP": lambda ct, g, f: ct.LS(g, f, 15, "RAMP", progress=False),
    "WLS": lambda ct, g, f: ct.WLS(g, f, 20, progress=False),
    "RLS": lambda ct, g, f: ct.RLS(g, f, 20, _tv_filters(ct), "SQS", progress=False),
    "RWLS": lambda ct, g, f: ct.RWLS(g, f, 20, _tv_filters(ct), None, "SQS", progress=False),
    "ASDPOCS": lambda ct, g, f: ct.ASDPOCS(g, f, 10, 4, 5, progress=False),
    "MLTR": lambda ct, g, f: ct.MLTR(g, f, 10, 4, progress=False),
    "MLTR-1": lambda ct, g, f: ct.MLTR(g, f, 40, 1, progress=False),
}


@pytest.mark.parametrize("name", list(CONVERGENCE))
def test_converges_below_fbp_error(scan, name):
    """On noiseless, well-sampled data every method gets closer to the phantom than
    FBP (relative error, whole volume)."""
    ct, g, truth, fbp_err = scan
    f = ct.allocate_volume()
    out = CONVERGENCE[name](ct, g, f)
    assert out is f
    err = rel(f, truth)
    assert err < 0.9 * fbp_err, f"{name}: {err:.3f} vs FBP {fbp_err:.3f}"
    assert np.all(np.isfinite(f))


def test_error_keeps_decreasing(scan):
    ct, g, truth, _ = scan
    errs = []
    ct.SART(g, ct.allocate_volume(), 12, 4, callback=lambda n, f, fit: errs.append(rel(f, truth)),
            progress=False)
    assert errs[-1] < errs[5] < errs[0]


# ------------------------------------------------ callback, progress, early stop
def test_callback_receives_iterate_and_can_stop(scan):
    ct, g, truth, _ = scan
    seen = []

    def cb(iteration, f, fit):
        seen.append((iteration, f.shape, fit))
        return iteration == 3

    f = ct.allocate_volume()
    ct.RWLS(g, f, 50, None, None, "SQS", callback=cb, progress=False)
    assert [s[0] for s in seen] == [1, 2, 3]
    assert all(s[1] == truth.shape and np.isfinite(s[2]) for s in seen)
    # the data fit reported is the one of the iterate passed
    r = ct.project(ct.allocate_projections(), f) - g
    W = ct._default_weights(g)
    assert seen[-1][2] == pytest.approx(0.5 * float(np.sum(W * r.astype(np.float64) ** 2)),
                                        rel=1e-4)


@pytest.mark.parametrize("method", ["SART", "OSEM", "MLTR"])
def test_subset_methods_report_data_fit_with_callback(scan, method):
    ct, g, truth, _ = scan
    fits = []
    getattr(ct, method)(g, ct.allocate_volume(), 3, 4,
                        callback=lambda n, f, fit: fits.append(fit), progress=False)
    assert len(fits) == 3 and all(np.isfinite(v) for v in fits)
    assert fits[-1] < fits[0]


def test_progress_bar_can_be_switched_off(scan, capsys, monkeypatch):
    from leap.algorithms import _monitor
    monkeypatch.setattr(_monitor, "PROGRESS_DELAY_S", 0.0)
    ct, g, _, _ = scan
    ct.SIRT(g, ct.allocate_volume(), 2, progress=True)
    assert "SIRT" in capsys.readouterr().err
    ct.SIRT(g, ct.allocate_volume(), 2, progress=False)
    assert capsys.readouterr().err == ""


def test_bad_callback_raises(scan):
    ct, g, _, _ = scan
    with pytest.raises(TypeError, match="callback"):
        ct.SIRT(g, ct.allocate_volume(), 2, callback="print")


# ------------------------------------------------------- masks, constraints
def test_mask_ignores_corrupted_pixels(scan):
    ct, g, truth, _ = scan
    bad = g.copy()
    rng = np.random.default_rng(0)
    hit = rng.random(g.shape) < 0.05
    bad[hit] += 5.0
    mask = (~hit).astype(np.float32)
    f_clean = ct.SART(g, ct.allocate_volume(), 6, 4, progress=False)
    f_masked = ct.SART(bad, ct.allocate_volume(), 6, 4, mask, progress=False)
    f_bad = ct.SART(bad, ct.allocate_volume(), 6, 4, progress=False)
    assert rel(f_masked, truth) < 1.2 * rel(f_clean, truth)
    assert rel(f_bad, truth) > 3 * rel(f_masked, truth)
    for method in (ct.MLEM, ct.SIRT):
        f = method(bad, ct.allocate_volume(), 8, mask=mask, progress=False)
        assert rel(f, truth) < 0.9


def test_nonnegativity_constraint(scan):
    ct, g, _, _ = scan
    noisy = g + np.random.default_rng(1).normal(0, 0.05, g.shape).astype(np.float32)
    for run in (lambda f: ct.SART(noisy, f, 3, 4, None, True, progress=False),
                lambda f: ct.RWLS(noisy, f, 5, None, None, "SQS", True, progress=False),
                lambda f: ct.ASDPOCS(noisy, f, 2, 4, 3, progress=False),
                lambda f: ct.MLTR(noisy, f, 2, 4, progress=False)):
        assert run(ct.allocate_volume()).min() >= 0.0
    f = ct.SART(noisy, ct.allocate_volume(), 3, 4, None, False, progress=False)
    assert f.min() < 0.0


def test_inputs_are_not_modified(scan):
    ct, g, _, _ = scan
    g0 = g.copy()
    ct.MLTR(g, ct.allocate_volume(), 2, 2, progress=False)     # LEAP converts g in place
    ct.WLS(g, ct.allocate_volume(), 2, progress=False)
    np.testing.assert_array_equal(g, g0)


def test_osem_with_one_subset_is_mlem(scan):
    ct, g, _, _ = scan
    a = ct.MLEM(g, ct.allocate_volume(), 4, progress=False)
    b = ct.OSEM(g, ct.allocate_volume(), 4, 1, progress=False)
    np.testing.assert_array_equal(a, b)


def test_sart_subsets_equal_views_per_subset(scan):
    """One view per subset (numSubsets ≥ numAngles) is clamped to numAngles, as LEAP."""
    ct, g, truth, _ = scan
    a = ct.SART(g, ct.allocate_volume(), 1, VIEWS, progress=False)
    b = ct.SART(g, ct.allocate_volume(), 1, 10 * VIEWS, progress=False)
    np.testing.assert_array_equal(a, b)
    assert rel(a, truth) < 0.8


def test_regularised_methods_accept_filters_and_regularizers(scan):
    ct, g, truth, _ = scan
    seq = _tv_filters(ct)
    for run in (lambda f: ct.MLEM(g, f, 3, seq, progress=False),
                lambda f: ct.OSEM(g, f, 2, 4, seq, progress=False),
                lambda f: ct.MLTR(g, f, 2, 4, seq, progress=False),
                lambda f: ct.RLS(g, f, 3, TV(ct, delta=1e-3, weight=1e-4), progress=False),
                lambda f: ct.ASDPOCS(g, f, 2, 4, 2, 0.001, progress=False)):
        f = run(ct.allocate_volume())
        assert np.all(np.isfinite(f)) and rel(f, truth) < 0.9
    # a non-differentiable filter: MLEM applies it after each update, blended by beta
    med = filterSequence(0.5)
    med.append(MedianFilter(ct, 0.0, 3))
    f = ct.MLEM(g, ct.allocate_volume(), 3, med, progress=False)
    assert np.all(np.isfinite(f)) and rel(f, truth) < 0.9
    f = ct.ASDPOCS(g, ct.allocate_volume(), 2, 4, 1, med, progress=False)
    assert rel(f, truth) < 0.9


def test_rwls_starting_point_and_preconditioners(scan):
    ct, g, truth, _ = scan
    f = ct.FBP(g)
    start = rel(f, truth)
    ct.RWLS(g, f, 5, _tv_filters(ct), None, "SQS", progress=False)
    assert rel(f, truth) < start
    for pre in (None, "SQS", "RAMP", "SARR", True):
        f = ct.LS(g, ct.allocate_volume(), 5, pre, progress=False)
        assert rel(f, truth) < 0.6, pre


def test_bad_inputs_raise(scan):
    ct, g, _, _ = scan
    f = ct.allocate_volume()
    with pytest.raises(ValueError, match="shape"):
        ct.SART(g[:-1], f, 1, progress=False)
    with pytest.raises(TypeError, match="float32"):
        ct.SIRT(g.astype(np.float64), f, 1, progress=False)
    with pytest.raises(ValueError, match="mask"):
        ct.SART(g, f, 1, 1, np.ones((2, 2), np.float32), progress=False)
    with pytest.raises(ValueError, match="preconditioner"):
        ct.LS(g, f, 1, "JACOBI", progress=False)
    with pytest.raises(TypeError, match="filterSequence"):
        ct.RWLS(g, f, 1, 0.5, progress=False)
    with pytest.raises(TypeError, match="num_iter"):
        ct.SIRT(g, f, 2.5, progress=False)
    with pytest.raises(ValueError, match="num_iter"):
        ct.SIRT(g, f, -1, progress=False)


def test_zero_iterations_leave_f(scan):
    ct, g, truth, _ = scan
    f = truth.copy()
    ct.SART(g, f, 0, 4, progress=False)
    np.testing.assert_array_equal(f, truth)


# ------------------------------------------------- facade helpers, subsets
def test_sensitivity_and_subsets(scan):
    ct, g, _, _ = scan
    s = ct.sensitivity()
    ones = np.ones_like(g)
    np.testing.assert_allclose(s, ct.backproject(ones, ct.allocate_volume()), rtol=1e-6)
    subsets = ct.breakIntoSubsets(g, 5)
    assert len(subsets) == 5 and all(x.flags.c_contiguous for x in subsets)
    np.testing.assert_array_equal(subsets[2], g[2::5])
    # a subset of views projects as the geometry sliced to those views
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    f = np.random.default_rng(0).random(op.domain_shape).astype(np.float32)
    np.testing.assert_allclose(op.subset(slice(2, None, 5)).forward(f), op.forward(f)[2::5],
                               rtol=1e-5, atol=1e-6)


# ------------------------------------------ operator-agnostic algorithms
class MatrixOperator:
    """A dense nonnegative matrix as an operator: 'views' are groups of rows."""

    def __init__(self, A, range_shape, domain_shape):
        self.A = A
        self.range_shape = tuple(range_shape)
        self.domain_shape = tuple(domain_shape)
        self.num_views = self.range_shape[0]

    def forward(self, f, out=None):
        y = (self.A @ f.ravel().astype(np.float64)).astype(np.float32).reshape(self.range_shape)
        if out is not None:
            out[...] = y
            return out
        return y

    def adjoint(self, g, out=None):
        x = (self.A.T @ g.ravel().astype(np.float64)).astype(np.float32).reshape(self.domain_shape)
        if out is not None:
            out[...] = x
            return out
        return x

    def subset(self, views):
        idx = np.arange(self.num_views)[views]
        per_view = int(np.prod(self.range_shape[1:]))
        rows = (idx[:, None] * per_view + np.arange(per_view)).ravel()
        return MatrixOperator(self.A[rows], (len(idx),) + self.range_shape[1:], self.domain_shape)


@pytest.fixture(scope="module")
def matrix_problem():
    rng = np.random.default_rng(7)
    A = rng.random((60, 27)) * (rng.random((60, 27)) < 0.4)
    op = MatrixOperator(A, (12, 1, 5), (3, 3, 3))
    x = rng.random((3, 3, 3)).astype(np.float32)
    g = op.forward(x)
    return op, x, g


def test_algorithms_run_on_any_operator(matrix_problem):
    op, x, g = matrix_problem
    f = alg.ls(op, g, np.zeros(op.domain_shape, np.float32), 60, nonnegative=False)
    assert rel(f, x) < 1e-3
    for run, bound in ((lambda f: alg.sirt(op, g, f, 300), 0.05),
                       (lambda f: alg.sart(op, g, f, 100, 3), 0.02),
                       (lambda f: alg.mlem(op, g, f, 300), 0.05),
                       (lambda f: alg.osem(op, g, f, 100, 4), 0.02),
                       (lambda f: alg.rwls(op, g, f, 40, preconditioner="SQS"), 1e-2),
                       (lambda f: alg.mltr(op, g, f, 300, 3), 0.05),
                       (lambda f: alg.asd_pocs(op, g, f, 100, 3, 1,
                                               TotalVariation(1e-3, neighbors=6)), 0.1)):
        f = run(np.zeros(op.domain_shape, np.float32))
        assert rel(f, x) < bound


def test_cg_matches_least_squares_solution(matrix_problem):
    """Without constraints, CG on the normal equations reaches numpy's lstsq solution
    in at most n = 27 iterations (exact arithmetic)."""
    op, _, g = matrix_problem
    rng = np.random.default_rng(3)
    noisy = (g + rng.normal(0, 0.1, g.shape)).astype(np.float32)
    x_ls = np.linalg.lstsq(op.A, noisy.ravel().astype(np.float64), rcond=None)[0]
    f = alg.ls(op, noisy, np.zeros(op.domain_shape, np.float32), 40, nonnegative=False)
    assert rel(f, x_ls.reshape(op.domain_shape)) < 1e-3


def test_array_namespace():
    assert alg.array_namespace(np.zeros(2), None, 1.0) is np
    with pytest.raises(TypeError, match="CuPy"):
        class Fake:
            __cuda_array_interface__ = {}
        alg.array_namespace(Fake())
    with pytest.raises(TypeError):
        alg.array_namespace([1.0, 2.0])


# --------------------------------------------------------------- CUDA arrays
def _cuda_projection_available():
    cp = pytest.importorskip("cupy", reason="CuPy is not installed: no CUDA arrays to compare")
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
    except Exception:
        return None
    return cp


@pytest.mark.gpu
def test_same_result_for_numpy_and_cuda_arrays(scan):
    """The algorithms are array-module agnostic: with a CUDA back-end, CuPy inputs give
    the NumPy results to float tolerance."""
    cp = _cuda_projection_available()
    if cp is None:
        pytest.skip("no CUDA device")
    ct, g, truth, _ = scan
    import leap
    geo, vol = ct.core_geometry(), ct.core_volume()
    try:
        leap.project(geo, vol, cp.asarray(truth))
    except NotImplementedError as exc:
        pytest.skip(f"leap.project does not take CUDA arrays in this build: {exc}")
    op = alg.CTOperator(geo, vol)
    g_d = cp.asarray(g)
    for run in (lambda gg, f: alg.sart(op, gg, f, 3, 4),
                lambda gg, f: alg.mlem(op, gg, f, 3),
                lambda gg, f: alg.rwls(op, gg, f, 3, regularizer=TotalVariation(1e-3, 1e-4),
                                       preconditioner="SQS"),
                lambda gg, f: alg.asd_pocs(op, gg, f, 2, 4, 3, TotalVariation(0.0))):
        a = run(g, np.zeros(op.domain_shape, np.float32))
        b = run(g_d, cp.zeros(op.domain_shape, cp.float32))
        np.testing.assert_allclose(cp.asnumpy(b), a, rtol=1e-3, atol=1e-5 * float(np.abs(a).max()))


def _sim_runs(ct, g, zeros):
    """The methods compared between NumPy and simulated CUDA arrays."""
    seq = filterSequence(1e-3)
    seq.append(TV(ct, delta=1e-3))
    return {
        "SART": lambda gg: ct.SART(gg, zeros(), 2, 2, progress=False),
        "MLEM": lambda gg: ct.MLEM(gg, zeros(), 2, progress=False),
        "RWLS": lambda gg: ct.RWLS(gg, zeros(), 2, seq, None, "SQS", progress=False),
        "ASDPOCS": lambda gg: ct.ASDPOCS(gg, zeros(), 1, 2, 2, progress=False),
        "MLTR": lambda gg: ct.MLTR(gg, zeros(), 2, 1, progress=False),
    }


@pytest.mark.slow
def test_simulated_cuda_arrays_match_numpy():
    """Results agree to float tolerance whether g and f are NumPy arrays or CUDA
    (Numba device) arrays, with projections on the CUDA kernels, under Numba's CUDA
    simulator (started in a subprocess: the simulator must be on before numba loads)."""
    if not SIM:
        env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
        here = Path(__file__).resolve()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
             f"{here}::test_simulated_cuda_arrays_match_numpy"],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        if proc.returncode == 0 and " skipped" in out and " passed" not in out:
            pytest.skip("under the simulator: " + out.strip().splitlines()[-2][-200:])
        assert proc.returncode == 0, out[-4000:]
        return
    from numba import cuda
    import leap
    ct = Model()
    ct.set_conebeam(6, 4, 6, 1.0, 1.0, 1.5, 2.5, ct.setAngleArray(6, 360.0), 20.0, 40.0)
    ct.set_volume(4, 5, 3, 1.0, 1.0)
    truth = np.random.default_rng(0).random(ct.get_volume_dim()).astype(np.float32) * 0.1
    g = ct.project(ct.allocate_projections(), truth)
    try:
        leap.project(ct.core_geometry(), ct.core_volume(), cuda.to_device(truth))
    except (NotImplementedError, TypeError) as exc:
        pytest.skip(f"leap.project does not take CUDA arrays in this build: {exc}")
    host = _sim_runs(ct, g, ct.allocate_volume)
    dev = _sim_runs(ct, g, lambda: cuda.to_device(ct.allocate_volume()))
    g_dev = cuda.to_device(g)
    for name in host:
        a = host[name](g)
        b = dev[name](g_dev)
        assert type(b).__name__ == "FakeCUDAArray", name      # the caller's array, updated
        np.testing.assert_allclose(b.copy_to_host(), a, rtol=1e-4,
                                   atol=1e-5 * float(np.abs(a).max()), err_msg=name)


def test_rdls_minimises_the_derivative_weighted_residual():
    """RDLS / DLS (LEAP): CG on ½(Pf−g)ᵀ(−Δ)(Pf−g) (+R). On consistent data the weighted
    data fit falls monotonically without a nonnegativity constraint and the result
    approaches the phantom; a TV filter sequence is accepted; bad dimDeriv raises."""
    from leapctype import tomographicModels, filterSequence, TV
    ct = tomographicModels()
    ct.set_parallelbeam(40, 1, 48, 1.0, 1.0, 0.0, 23.5, ct.setAngleArray(40, 180.0))
    ct.set_default_volume()
    f_true = ct.allocate_volume()
    ct.addObject(f_true, 0, np.array([2.0, -3.0, 0.0]), np.array([14.0, 10.0, 10.0]), 0.02)
    g = ct.project(ct.allocate_projections(), f_true)
    fits = []
    f = ct.RDLS(g, ct.allocate_volume(), 20, progress=False,
                callback=lambda n, x, fit: fits.append(fit))
    assert np.all(np.diff(fits) <= 1e-9 * fits[0]) and fits[-1] < 0.05 * fits[0]
    ones = ct.allocate_volume() + 1.0
    inside = ct.windowFOV(ones) > 0
    err = np.linalg.norm((f - f_true)[inside]) / np.linalg.norm(f_true[inside])
    assert err < 0.5
    h = ct.DLS(g, ct.allocate_volume(), 20, progress=False)
    assert np.linalg.norm((h - f_true)[inside]) < np.linalg.norm(f_true[inside])
    seq = filterSequence(1.0e-2)
    seq.append(TV(ct, delta=0.001))
    ct.RDLS(g, ct.allocate_volume(), 3, seq, progress=False)
    with pytest.raises(ValueError, match="dimDeriv"):
        ct.RDLS(g, ct.allocate_volume(), 2, None, 1.0, False, 3)
