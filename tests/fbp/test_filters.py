"""The FBP low-pass filter: LEAP's power formula, finite for any width, and a
well-defined FBP for huge widths. Regressions of issue 11, item 10."""
import math

import numpy as np
import pytest

from leap import filters
from leap.reconstruction.filters import ramp_response
from leapctype import tomographicModels


# ----------------------------------------------------------- item 10: low-pass width

def test_lowpass_power_is_leaps_formula_and_stays_finite():
    for width in (2.0, 3.7, 10.0, 250.0):
        textbook = 1.0 / (1.0 - math.log2(1.0 + math.cos(math.pi / width)))
        assert filters.lowpass_power(width) == pytest.approx(textbook, rel=1e-9)
    powers = [filters.lowpass_power(w) for w in (1e4, 1e8, 1e9, 1e12)]
    assert all(math.isfinite(p) for p in powers) and powers == sorted(powers)
    # gain cos(ω/2)^(2p) = ½ at ω = π/W, however wide (ln cos x = ½·log1p(−sin² x))
    for width in (1e4, 1e9):
        half = math.log1p(-math.sin(0.5 * math.pi / width) ** 2)
        assert math.exp(filters.lowpass_power(width) * half) == pytest.approx(0.5, rel=1e-9)
    assert filters.lowpass_power(1e300) == math.inf


def test_huge_lowpass_gives_a_well_defined_fbp():
    ct = tomographicModels()
    ct.set_parallelbeam(8, 4, 16, 1, 1, 1.5, 7.5, ct.setAngleArray(8, 180.0))
    ct.set_default_volume()
    g = np.ones(ct.get_projection_dim(), dtype=np.float32)
    ct.set_FBPlowpass(1e9)
    f = ct.FBP(g)
    assert np.all(np.isfinite(f))
    # Only the DC term passes: the FBP of ones is a multiple of the back-projection of
    # ones (inside the field of view, where FBP keeps values).
    B = ct.backproject(g.copy(), ct.allocate_volume())
    inside = f != 0
    assert inside.sum() > 0.5 * f.size
    k = np.vdot(f[inside], B[inside]) / np.vdot(B[inside], B[inside])
    assert k > 0
    np.testing.assert_allclose(f[inside], k * B[inside], rtol=1e-5)
    H = ramp_response(16, 1.0, lowpass=1e9)
    assert np.all(np.isfinite(H)) and np.all(np.abs(H[1:]) <= 1e-12 * abs(H[0]))
    for bad in (float("nan"), -1.0, float("inf")):
        with pytest.raises(ValueError, match="lowpass"):
            ramp_response(16, 1.0, lowpass=bad)


def _direct_linear_convolution(x, H):
    """Rows of x convolved with the response's spatial kernel, zero padded to N: the
    definition filter_rows implements, in float64 without FFTs."""
    n = 2 * (H.size - 1)
    h = np.fft.irfft(H, n=n)
    nc = x.shape[-1]
    # y[i] = Σ_m x[m] h[(i − m) mod N]; padded samples are zero.
    idx = (np.arange(nc)[:, None] - np.arange(nc)[None, :]) % n
    return x.astype(np.float64) @ h[idx].T


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-6), (np.float64, 1e-12)])
def test_filter_rows_is_the_linear_convolution_in_the_arrays_precision(dtype, rtol):
    """float32 rows are filtered with single-precision FFTs (LEAP's GPU filter does the
    same), float64 rows in double; both, in blocks over threads, give the convolution."""
    rng = np.random.default_rng(3)
    H = ramp_response(37, 0.7, 2, lowpass=3.0)
    x = rng.standard_normal((5, 700, 37)).astype(dtype)   # several blocks of rows
    expected = _direct_linear_convolution(x.reshape(-1, 37), H).reshape(x.shape)
    y = x.copy()
    filters.filter_rows(y, H)
    assert y.dtype == dtype
    np.testing.assert_allclose(y, expected, rtol=0, atol=rtol * np.abs(expected).max())


def test_filter_rows_rejects_arrays_it_cannot_filter_in_place():
    x = np.zeros((4, 6, 10), dtype=np.float32)[:, :, ::2]
    with pytest.raises(ValueError, match="C-contiguous"):
        filters.filter_rows(x, ramp_response(5, 1.0))
    for dtype in (np.int32, np.float16, np.complex64):
        with pytest.raises(ValueError, match="float32 or float64"):
            filters.filter_rows(np.zeros((3, 5), dtype=dtype), ramp_response(5, 1.0))
    # Read-only rows (the LEAP facade's rampFilterProjections filters the caller's array
    # in place): a clear error, not Numba's typing error.
    ro = np.zeros((3, 5), dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        filters.filter_rows(ro, ramp_response(5, 1.0))


def _filtered_in_child(x, H, conn):
    y = x.copy()
    filters.filter_rows(y, H)
    conn.send(y)
    conn.close()


def test_filter_rows_is_thread_and_fork_safe():
    """filter_rows runs its blocks of rows on Numba's threads: calls from several threads
    at once, and a call in a forked child, give the single call's result."""
    import multiprocessing
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(5)
    H = ramp_response(64, 1.0)
    # 4800 rows of 128 padded samples: many blocks of rows, on all threads.
    xs = [rng.standard_normal((8, 600, 64)).astype(np.float32) for _ in range(4)]
    expected = []
    for x in xs:
        y = x.copy()
        filters.filter_rows(y, H)   # the parent has run Numba's threads
        expected.append(y)

    def run(x):
        y = x.copy()
        filters.filter_rows(y, H)
        return y

    with ThreadPoolExecutor(4) as callers:
        for y, e in zip(callers.map(run, xs), expected):
            np.testing.assert_array_equal(y, e)
    ctx = multiprocessing.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_filtered_in_child, args=(xs[0], H, send))
    child.start()
    try:
        assert recv.poll(60), "filter_rows in a forked child did not finish"
        np.testing.assert_array_equal(recv.recv(), expected[0])
        child.join(10)
        assert child.exitcode == 0
    finally:
        if child.is_alive():
            child.kill()


# ---------------------------------------------- filter_views: FBP's filtering in one pass

def _separate_steps(g, H, nc, first, scale, pre, post, extrapolate):
    """What filter_views fuses, as separate NumPy and filter_rows passes (the former FBP
    code): place and scale, multiply by the pre-weights' float32 product, filter, post."""
    nv, nr, nci = g.shape
    q = np.zeros((nv, nr, nc), dtype=np.float32)
    q[:, :, first:first + nci] = scale * g
    w = pre[0]
    for f in pre[1:]:
        w = w * f
    q *= w.astype(np.float32)
    filters.filter_rows(q, H, extrapolate=extrapolate)
    q *= post
    return q


@pytest.mark.parametrize("extrapolate", [False, True])
def test_filter_views_is_the_separate_steps_in_every_layout(extrapolate):
    from leap.kernels.cpu import columns
    rng = np.random.default_rng(11)
    nv, nr, nci, first, nc = 7, 150, 29, 3, 37     # 150 rows a view: blocks cross views
    g = rng.standard_normal((nv, nr, nci)).astype(np.float32)
    H = ramp_response(nc, 0.8, 2).astype(np.float32)
    scale = rng.random((1, 1, nci)) + 0.5
    pre = [rng.random((nv, 1, 1)) + 0.5, rng.random((nv, 1, nc)) + 0.5,
           rng.random((1, nr, nc)) + 0.5]
    post = (rng.random((1, nr, nc)) + 0.5).astype(np.float32)
    expected = _separate_steps(g, H, nc, first, scale, pre, post, extrapolate)
    opts = dict(first=first, scale=scale, pre=pre, post=post, extrapolate=extrapolate)

    q = filters.filter_views(g, H, np.empty((nv, nr, nc), np.float32), **opts)
    np.testing.assert_array_equal(q, expected)

    row_factor = rng.random(nr) + 0.5
    cols = columns.GUARD_LO + nc + columns.GUARD_HI
    G = np.full((nv, cols, columns.column_length(nr, 4)), np.nan, np.float32)
    filters.filter_views(g, H, G, layout=filters.VALUES, row_factor=row_factor, **opts)
    np.testing.assert_array_equal(
        G, columns.projection_row_values(expected, row_factor, np.empty_like(G)))
    C = np.full((nv, cols, nr + 1), np.nan, np.float32)
    filters.filter_views(g, H, C, layout=filters.CUMSUM, row_factor=row_factor, **opts)
    np.testing.assert_array_equal(
        C, columns.projection_row_cumsum(expected, row_factor, np.empty_like(C)))


def test_filter_views_refuses_what_it_cannot_lay_out():
    g = np.zeros((2, 3, 5), np.float32)
    H = ramp_response(5, 1.0).astype(np.float32)
    out = np.empty((2, 3, 5), np.float32)
    with pytest.raises(ValueError, match="layout"):
        filters.filter_views(g, H, out, layout=7)
    with pytest.raises(ValueError, match=r"out must be .* shape \(2, 3, 5\)"):
        filters.filter_views(g, H, np.empty((2, 4, 5), np.float32))
    with pytest.raises(ValueError, match=r"out must be .*float32"):
        filters.filter_views(g, H, np.empty((2, 3, 5)))
    with pytest.raises(ValueError, match=r"shape \(2, 7, 4\)"):   # nr + 1 sums a column
        filters.filter_views(g, H, np.empty((2, 7, 3), np.float32), layout=filters.CUMSUM)
    with pytest.raises(ValueError, match="do not fit"):
        filters.filter_views(g, H, out, first=1)
    with pytest.raises(ValueError, match="fewer than"):
        filters.filter_views(g, ramp_response(2, 1.0).astype(np.float32), out)
    with pytest.raises(ValueError, match="at most three"):
        filters.filter_views(g, H, out, pre=[np.ones(5)] * 4)
    with pytest.raises(ValueError, match=r"pre must broadcast against \(2, 3, 5\)"):
        filters.filter_views(g, H, out, pre=[np.ones((3, 1, 5))])
    with pytest.raises(ValueError, match="row_factor"):
        filters.filter_views(g, H, np.empty((2, 9, 4), np.float32), layout=filters.CUMSUM,
                             row_factor=np.ones(4))
    with pytest.raises(ValueError, match="float32 or float64"):
        filters.filter_views(g.astype(np.int32), H, out)
