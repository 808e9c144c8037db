"""Shared fixtures and helpers for the test suite."""
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

#: The tests' root (this file's folder; the test files sit in subfolders that mirror
#: leap/) and the repository root.
TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
REFERENCE_DIR = TESTS_DIR / "data" / "leap_reference"
UPSTREAM_DIR = TESTS_DIR / "data" / "leap_upstream"
REFERENCE_CASES = ("parallel2d", "fan2d", "cone", "cone_curved")
#: Whether this process runs under Numba's CUDA simulator (a test file re-run by
#: :func:`run_sim_tests`).
SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


def run_sim_tests(test_file, timeout=900):
    """Run the ``TestSim*`` tests of ``test_file`` in a subprocess under Numba's CUDA
    simulator (it must be on before numba loads) and assert that they passed."""
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    t = time.time()
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "-k", "TestSim", str(test_file)],
                       env=env, capture_output=True, text=True, timeout=timeout,
                       cwd=str(REPO_ROOT))
    out = r.stdout[-6000:] + r.stderr[-3000:]
    assert r.returncode == 0, f"simulator tests failed ({time.time() - t:.0f} s):\n{out}"
    assert " passed" in r.stdout, out


def compile_to_ptx(sigs):
    """The PTX of each Numba CUDA kernel in ``sigs`` ((kernel, argument types) pairs),
    compiled for sm_90, each checked to be an entry point; skips where the CUDA compiler
    libraries (NVVM/NVRTC, the ``gpu`` extra) are missing. The simulator runs kernels as
    Python, so it cannot catch Numba CUDA typing errors; this compile does, without a
    GPU."""
    cuda = pytest.importorskip("numba.cuda")
    from numba import float32
    try:
        cuda.compile_ptx(lambda a: None, (float32[::1],), cc=(9, 0))
    except Exception as exc:  # noqa: BLE001 - NVVM / NVRTC not installed
        pytest.skip(f"no CUDA compiler libraries: {type(exc).__name__}")
    out = []
    for kernel, sig in sigs:
        ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=(9, 0))
        assert ".entry" in ptx, kernel
        out.append(ptx)
    return out


@pytest.fixture(scope="module")
def one_numba_thread():
    """Numba on one thread for a module's tests (``pytestmark =
    pytest.mark.usefixtures("one_numba_thread")``): tiny geometries, where a parallel
    launch costs more than it saves, and on a loaded machine waiting for a second thread
    can cost milliseconds per call."""
    import numba
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(n)


def axial_model_loss(f, gbar, col_dir, source_xy, center_col, sdd, model, fov_r2, vol, det):
    """float64 ``Σ ḡ·P f`` of the axial footprint model without z magnification (parallel
    and fan beams), from the plain-Python footprint functions column by column: the
    oracle of the parallel/fan geometry gradients. f (nb, nz, ny, nx), gbar (nb, na,
    nrows, ncols); per-view col_dir, source_xy (na, 2), center_col, sdd (na,)."""
    from leap.kernels import footprints as fp
    from leap.kernels.cpu.axial_view_vjp import row_weights
    nrows, ncols = gbar.shape[2:]
    W, _ = row_weights(vol.num_z, nrows, vol.z0, vol.voxel_height, det.pixel_height,
                       det.center_row)
    F = np.einsum("jk,bkyx->byxj", W, np.asarray(f, dtype=np.float64))
    # H[a, y, x, i] = Σ_b Σ_j F ḡ
    Hs = np.einsum("byxj,baji->ayxi", F, np.asarray(gbar, dtype=np.float64))
    total = 0.0
    for a in range(gbar.shape[1]):
        for iy in range(vol.num_y):
            y = vol.y0 + iy * vol.voxel_width
            for ix in range(vol.num_x):
                x = vol.x0 + ix * vol.voxel_width
                if x * x + y * y > fov_r2:
                    continue
                c_lo, c_hi, w, dist = fp.axial_column_footprint(
                    x, y, col_dir[a, 0], col_dir[a, 1], source_xy[a, 0], source_xy[a, 1],
                    sdd[a], model, vol.voxel_width, det.pixel_width, center_col[a], 0.0, 0.0)
                if not dist > 0:
                    continue
                i0, i1 = fp.column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    total += w * fp.overlap(c_lo, c_hi, i - 0.5, i + 0.5) * Hs[a, iy, ix, i]
    return total


def analytic_and_central_difference(p, d, h, loss):
    """(⟨p.grad, d⟩, (loss() at p + h·d − loss() at p − h·d) / 2h) for a torch parameter p
    whose ``grad`` a backward pass of the same loss has set; p is restored."""
    import torch
    analytic = float((p.grad * d).sum())
    with torch.no_grad():
        base = p.detach().clone()
        p.copy_(base + h * d)
        up = loss()
        p.copy_(base - h * d)
        down = loss()
        p.copy_(base)
    return analytic, (up - down) / (2 * h)


def with_numba_threads(n, fn):
    """``fn()`` with Numba's thread count set to n (restored afterwards)."""
    import numba
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        return fn()
    finally:
        numba.set_num_threads(old)


def fit_geometry(proj, f, data, names, max_iter=30):
    """Least-squares fit of the geometry parameters ``names`` of the torch module ``proj``
    to ``data`` = proj(f) at the true geometry, by L-BFGS (strong Wolfe line search); the
    other parameters are frozen. Returns the parameters (the module's, fitted in place)."""
    import torch
    params = proj.geometry_parameters()
    for k, p in params.items():
        p.requires_grad_(k in names)
    opt = torch.optim.LBFGS([params[k] for k in names], lr=1.0, max_iter=max_iter,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        loss = ((proj(f) - data) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return params


def rel_l2(a, b):
    """Relative L2 difference ‖a − b‖ / ‖b‖ in float64 (0 when both are zero)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def dot_test(P, PT, f_shape, g_shape, rng):
    """Scale-free adjoint mismatch |<Pf,g> − <f,Pᵀg>| / max(‖Pf‖‖g‖, ‖f‖‖Pᵀg‖).

    Both products are normalised by their own scale: the float32 outputs round each
    side relative to it, and dividing by ‖Pf‖‖g‖ alone misreads the rounding of
    <f, Pᵀg> as a mismatch when a random f happens to lie almost in P's null space
    (‖Pf‖ ≪ ‖f‖‖P‖, seen for a rank-1 tiny cone-parallel case whose P and Pᵀ are
    element-for-element transposes)."""
    f = rng.standard_normal(f_shape).astype(np.float32)
    g = rng.standard_normal(g_shape).astype(np.float32)
    Pf = P(f).astype(np.float64)
    PTg = PT(g).astype(np.float64)
    lhs = np.vdot(Pf, g.astype(np.float64))
    rhs = np.vdot(f.astype(np.float64), PTg)
    denom = max(np.linalg.norm(Pf) * np.linalg.norm(g), np.linalg.norm(f) * np.linalg.norm(PTg))
    if np.linalg.norm(Pf) == 0:
        return 0.0, 0.0
    return abs(lhs - rhs) / denom, float(np.linalg.norm(Pf))


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def torch_or_skip():
    """The torch module, or skip the test where torch is not installed."""
    return pytest.importorskip("torch")


def disc_volume(ct, discs):
    """The facade's volume with uniform cylinders (x, y, radius, value) in mm, z-invariant."""
    f = ct.allocate_volume()
    x = ct.x_samples()[None, :]
    y = ct.y_samples()[:, None]
    for cx, cy, r, val in discs:
        f[:, (x - cx) ** 2 + (y - cy) ** 2 < r * r] = val
    return f


def parallel_model(num_angles, angular_range, num_cols=96, num_rows=2):
    """A facade with a centred parallel beam (1 mm pixels) and its default volume."""
    from leap.compat import tomographicModels
    ct = tomographicModels()
    ct.set_parallelbeam(num_angles, num_rows, num_cols, 1.0, 1.0, 0.5 * (num_rows - 1),
                        0.5 * (num_cols - 1), ct.setAngleArray(num_angles, angular_range))
    ct.set_default_volume()
    return ct


def _cone_defaults():
    import leap
    return (leap.Detector(num_rows=6, num_cols=32, pixel_height=2.0, pixel_width=2.0),
            leap.Volume(num_x=32, num_y=32, num_z=6, voxel_width=1.2, voxel_height=1.0))


#: A small cone-beam detector and volume shared by the FBP and field-of-view tests.
CONE_DET, CONE_VOL = _cone_defaults()


def cone_scan(range_deg, num_angles=90, *, center_col=None, tau=0.0, det=CONE_DET, vol=None):
    """A circular cone scan over ``range_deg`` degrees (negative: clockwise), sod 200 mm,
    sdd 400 mm, on ``det`` (default :data:`CONE_DET`)."""
    import leap
    if center_col is not None:
        det = det.with_changes(center_col=center_col)
    angles = 0.3 + np.deg2rad(range_deg) * np.arange(num_angles) / num_angles
    return leap.ConeBeam(detector=det, angles=angles, sod=200.0, sdd=400.0, tau=tau)


@pytest.fixture(scope="session")
def dask_client():
    """A LocalCluster of two worker processes, one thread each (as CI has two cores), for
    the tests of leap.distributed."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            distributed.Client(cluster) as c:
        yield c
