"""Row integrals from a column's weighted values (leap.kernels.cpu.columns.add_integrals,
its vector loop leap.kernels.cpu.simd.add_row_integrals): the weighted projector's rows
at most two voxels long, taken without the column's running sum. Against the exact
integral of the piecewise-constant column (an independent sum of overlaps), against the
differences of interpolated cumulative sums they replace, and in the kernels against the
general modular projector (rows up to two voxels long, longer ones, wide voxels)."""
import numba
import numpy as np
import pytest

import leap
from leap.kernels.cpu import modular as general
from leap.kernels.cpu.columns import (CELL_PAD, add_cumulative_differences, add_integrals,
                                      row_integral)
from leap.kernels.cpu.voxel_weights import ray_stretch


@numba.njit(cache=True)
def _integrals(u, n, o, s, t0, t1, a, a0, w0, a1, w1, D2, r, Q, most):
    return add_integrals(u, n, o, s, t0, t1, a, a0, w0, a1, w1, (D2, r, Q), most)


@numba.njit(cache=True)
def _cumulative(cum, n, o, s, t0, t1, a, a0, w0, a1, w1):
    add_cumulative_differences(cum, 0, n, o, s, t0, t1, a, a0, w0, a1, w1)


@numba.njit(cache=True)
def _one(u, p, s):
    return row_integral(u, p, s)


def _exact(values, p, s):
    """∫ over [p, p + s] of values[k] on [k, k + 1) (zero outside), as a sum of overlaps."""
    lo, hi = p, p + s
    total = 0.0
    for k, v in enumerate(values):
        total += float(v) * max(0.0, min(hi, k + 1.0) - max(lo, float(k)))
    return total


def _padded(values):
    u = np.zeros(len(values) + 2 * CELL_PAD)
    u[CELL_PAD:CELL_PAD + len(values)] = values
    return u


def _case(rng, n, on_edges=False):
    """A row range whose positions o + t·s lie in [−s, n] (the kernel's rows); with
    ``on_edges`` rows of 1/2, 1 or 2 cells starting on cell edges."""
    s = float(rng.choice([0.5, 1.0, 2.0])) if on_edges else float(rng.uniform(0.05, 2.0))
    t0 = int(rng.integers(0, 6))
    if on_edges:
        o = float(rng.integers(-1, 1)) * s - t0 * s
    else:
        o = float(rng.uniform(-s, 0.5)) - t0 * s
    t1 = t0 + int(rng.integers(1, 40))
    t1 = min(t1, t0 + int((n - o - t0 * s) / s))     # the last row's start at most n
    return o, s, t0, max(t1, t0 + 1)


def test_row_integrals_are_the_exact_integrals():
    """Vector lanes and the scalar tail, rows from one cell to three, against the sum of
    overlaps, on columns with zeros beyond both ends."""
    rng = np.random.default_rng(5)
    checked = 0
    for trial in range(300):
        n = int(rng.integers(1, 30))
        values = rng.uniform(-1.0, 2.0, n)
        o, s, t0, t1 = _case(rng, n, on_edges=trial % 3 == 0)
        ncols = t1 + 2
        a = np.full(3 * ncols, 7.0)
        w0, w1 = 0.75, -1.25
        D2 = rng.uniform(0, 50, t1 - t0 + 8)
        Q = np.full_like(D2, np.nan)
        _integrals(_padded(values), n, o, s, t0, t1, a, 0, w0, 2 * ncols, w1, D2, 0.01, Q,
                   len(D2))
        for t in range(t0, t1):
            want = _exact(values, o + t * s, s)
            tol = 1e-12 * (1.0 + np.abs(values).max())
            assert abs((a[t] - 7.0) / w0 - want) <= tol * 2, (o, s, t0, t1, t)
            assert abs((a[2 * ncols + t] - 7.0) / w1 - want) <= tol * 2, (o, s, t0, t1, t)
            checked += 1
        untouched = [i for i in range(3 * ncols)
                     if not (t0 <= i < t1 or t0 <= i - 2 * ncols < t1)]
        assert (a[untouched] == 7.0).all()
    assert checked > 3000


def test_vector_lanes_are_the_scalar_arithmetic_and_take_the_roots():
    """Each lane is row_integral at its position (advanced by addition, so equal to its
    rounding), and the loop's roots are ray_stretch's, bit for bit, for the count it
    returns (a multiple of 4, at most the rows and at most the count asked for) and no
    further."""
    rng = np.random.default_rng(8)
    for _ in range(100):
        n = int(rng.integers(4, 40))
        values = rng.uniform(0.0, 1.0, n)
        u = _padded(values)
        o, s, t0, t1 = _case(rng, n)
        a = np.zeros(2 * (t1 + 1))
        D2 = rng.uniform(0, 100, t1 - t0 + 8)
        Q = np.full_like(D2, np.nan)
        most = int(rng.choice([0, 5, 8, 1000]))
        done = _integrals(u, n, o, s, t0, t1, a, 0, 1.0, t1 + 1, 0.0, D2, 0.02, Q, most)
        assert done == 4 * min((t1 - t0) // 4, most // 4)
        assert np.array_equal(Q[:done], [ray_stretch(d, 0.02) for d in D2[:done]])
        assert np.isnan(Q[done:]).all()
        for t in range(t0, t1):
            one = _one(u, o + CELL_PAD + t * s, s)
            assert abs(a[t] - one) <= 1e-12, (o, s, t)


def test_row_integrals_match_the_cumulative_differences():
    """The sums they replace (differences of the interpolated running sum), to the
    running sum's rounding."""
    rng = np.random.default_rng(9)
    for _ in range(200):
        n = int(rng.integers(1, 60))
        values = rng.uniform(0.0, 3.0, n)
        cum = np.concatenate([[0.0], np.cumsum(values)])
        o, s, t0, t1 = _case(rng, n)
        a = np.zeros(2 * (t1 + 1))
        b = np.zeros_like(a)
        D2 = np.zeros(t1 - t0 + 8)
        _integrals(_padded(values), n, o, s, t0, t1, a, 0, 0.6, t1 + 1, 0.4, D2, 0.0,
                   np.zeros_like(D2), 0)
        _cumulative(cum, n, o, s, t0, t1, b, 0, 0.6, t1 + 1, 0.4)
        assert np.abs(a - b).max() <= 1e-12 * cum[-1], (o, s, t0, t1)


def test_one_row_reads_three_cells_at_most():
    """s = 2 from a cell edge: the whole of two cells; s = 2 from inside a cell: parts of
    three; cells past them (NaN) are not read."""
    u = np.array([np.nan, 1.0, 10.0, 100.0, np.nan, np.nan, np.nan])
    assert _one(u, 1.0, 2.0) == 11.0
    assert _one(u, 1.5, 2.0) == 0.5 * 1.0 + 10.0 + 0.5 * 100.0
    assert _one(u, 2.25, 0.5) == 5.0
    assert _one(u, 2.75, 0.5) == 0.25 * 10.0 + 0.25 * 100.0


def _projections(geo, vol, f):
    d = geo.detector
    out = np.zeros(geo.projection_shape, np.float32)
    general.project(f, out, geo.source_positions, geo.module_centers, geo.row_vectors,
                    geo.col_vectors, vol.x0, vol.y0, vol.z0, vol.voxel_width,
                    vol.voxel_height, d.pixel_width, d.pixel_height)
    return out


@pytest.mark.parametrize("voxel_height, pixel_height", [
    (0.6, 1.1),      # rows about one voxel long (the row integrals)
    (0.35, 1.1),     # rows 1.2-2 voxels long (the row integrals, three cells)
    (0.2, 1.1),      # rows longer than two voxels: the running sum
])
def test_vertical_modules_project_as_the_general_kernel(voxel_height, pixel_height):
    det = leap.Detector(num_rows=14, num_cols=20, pixel_height=pixel_height, pixel_width=0.9)
    vol = leap.Volume(num_x=14, num_y=12, num_z=int(6 / voxel_height), voxel_width=0.4,
                      voxel_height=voxel_height, offset_z=0.3)
    angles = np.linspace(0.0, 2 * np.pi, 12, endpoint=False)
    geo = leap.ConeBeam(detector=det, angles=angles, sod=100.0, sdd=180.0).to_modular()
    f = np.random.default_rng(2).random(vol.shape, dtype=np.float32)
    got = leap.project(geo, vol, f)
    want = _projections(geo, vol, f)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()
