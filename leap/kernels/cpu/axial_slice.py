"""Single-slice parallel beams on the CPU (the 2-D case): footprint and scatter are the
whole cost, so they get their own projector and back-projector.

Single-slice parallel beams (the 2-D case, one slice on the detector, footprints at
most one pixel wide) have no row work at all, so the footprint and the scatter are the
whole cost: per voxel row the two-tap footprints are computed in a branch-free loop
that vectorises (:func:`slice_row_taps`), then scattered; the projector alternates
between four copies of its one-row accumulator so that consecutive voxels, which hit
the same pixels, do not serialise on store-to-load forwarding.

The back-projector runs blocks of ROW_BLOCK voxel rows per thread.
"""
from __future__ import annotations

import numba
import numpy as np

from ..footprints import PARALLEL
from . import threads
from ._jit import (FAST_JIT, parallel_column_footprint,
                   parallel_view_constants)
from .axial_direct import direct_row_shifts
from .columns import GUARD_HI, GUARD_LO, INLINE, direct_slices, fov_ix_range, two_tap

# Voxel rows per thread in the single-slice back-projector: the per-view copy of the
# projection row (ncols values) is shared by this many rows of nx voxels.
ROW_BLOCK = 8


# --------------------------------------------------------------------------------------
# Single-slice parallel beams (the 2-D case): footprint and scatter are the whole cost.

def slice_mode(col_dir, source_z, model, magnify_z, nz, nrows, z0, voxel_height,
               pixel_height, center_row, voxel_width, pixel_width):
    """Whether a single-slice path applies, and its slice and row: this module's for
    parallel beams, :mod:`leap.kernels.cpu.fan_slice` for the other models without
    magnification (fan beams).

    It does when every view has direct rows with the same shift
    (:func:`~leap.kernels.cpu.axial_direct.direct_row_shifts`) and exactly one slice
    ``ks`` lands on the detector (row ``js``); for parallel beams every footprint must
    also be at most one pixel wide (``2·half_p <= 1``,
    :func:`~leap.kernels.footprints.parallel_view_constants`' half_p). Returns (ok, ks,
    js). NumPy over the views (see direct_row_shifts).
    """
    if magnify_z:
        return False, 0, 0
    na = source_z.shape[0]
    shifts = direct_row_shifts(source_z, np.ones(na), center_row, False, z0, voxel_height,
                               pixel_height)
    if shifts is None or np.any(shifts != shifts[0]):
        return False, 0, 0
    m = np.maximum(np.abs(col_dir[:, 0]), np.abs(col_dir[:, 1]))
    half_p = 0.5 * voxel_width * m * (1.0 / pixel_width)
    if model == PARALLEL and not np.all(2.0 * half_p <= 1.0):
        return False, 0, 0
    shift = int(shifts[0])
    k0, k1 = direct_slices.py_func(shift, nz, nrows)
    if k1 - k0 != 1:
        return False, 0, 0
    return True, k0, k0 + shift


@numba.njit(**INLINE)
def slice_row_ranges(fs, x0, y0, voxel_width, fov_r2):
    """Each voxel row's voxels ``los[iy] <= ix < his[iy]`` that a single-slice projector
    visits: those inside the field of view (:func:`fov_ix_range`), without the zeros at
    either end (they add nothing: a phantom in air costs in proportion to what is not
    air). fs : (ny, nx) the slice; returns two (ny,) int64 arrays."""
    ny, nx = fs.shape
    los = np.empty(ny, dtype=np.int64)
    his = np.empty(ny, dtype=np.int64)
    for iy in range(ny):
        lo, hi = fov_ix_range(y0 + iy * voxel_width, x0, voxel_width, nx, fov_r2)
        while lo < hi and fs[iy, lo] == 0.0:
            lo += 1
        while hi > lo and fs[iy, hi - 1] == 0.0:
            hi -= 1
        los[iy] = lo
        his[iy] = hi
    return los, his


@numba.njit(**INLINE)
def start_slice_block(slab, los, his, r0, nr, x0, y0, voxel_width, fov_r2):
    """Start a single-slice back-projector's block of voxel rows ``r0 .. r0 + nr``: zero
    its accumulators ``slab[:nr]`` (ROW_BLOCK, nx) and set each row's voxels inside the
    field of view, ``los[r] <= ix < his[r]`` (:func:`fov_ix_range`)."""
    nx = slab.shape[1]
    for r in range(nr):
        for ix in range(nx):
            slab[r, ix] = 0.0
        los[r], his[r] = fov_ix_range(y0 + (r0 + r) * voxel_width, x0, voxel_width, nx,
                                      fov_r2)


@numba.njit(**INLINE)
def store_slice_rows(f, slab, ks, r0, nr):
    """Write a single-slice back-projector's block of voxel rows, ``slab[:nr]`` (rows
    ``r0 .. r0 + nr``, float64), into slice ``ks`` of f (nz, ny, nx) float32, and zeros
    into those rows of the other slices (the back-projector owns them)."""
    nz, _, nx = f.shape
    for k in range(nz):
        for r in range(nr):
            for ix in range(nx):
                f[k, r0 + r, ix] = slab[r, ix] if k == ks else 0.0


@numba.njit(**INLINE)
def slice_row_taps(X, y, lo, hi, cxp, cyp, half_p, weight, center_col, ncols, F, W0, W1):
    """Two-tap footprints of voxels ``lo <= ix < hi`` of the voxel row at height y.

    X : (nx,) voxel x centres, mm. Fills, for ``t = ix - lo``: ``F[t]`` (int32) the
    guard-padded index of the first pixel and ``W0[t]``, ``W1[t]`` the weights (mm) of
    that pixel and the next. No branches, unsigned indices and the x centres read from
    X (AVX2 has no 64-bit integer to float conversion), so the loop vectorises.
    """
    base = np.uintp(lo)
    for t in range(np.uintp(hi - lo)):
        c_lo, c_hi = parallel_column_footprint(X[base + t], y, cxp, cyp, half_p, center_col)
        fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
        F[t] = np.int32(fl) + np.int32(GUARD_LO)
        W0[t] = o0 * weight
        W1[t] = o1 * weight


@numba.njit(**FAST_JIT)
def project_view_slice(fs, ga, cx, cy, js, X, y0, voxel_width, pixel_width, center_col,
                       los, his, rf):
    """One view of the single-slice parallel projector of the slice ``fs`` (ny, nx)
    into ``ga`` (nrows, ncols); X : (nx,) voxel x centres, mm; los, his : each row's
    voxels (:func:`slice_row_ranges`).

    Per voxel row the taps and their weighted values are computed in vectorised loops;
    the scatter then alternates between four copies of the view's row (a few KiB), so
    that consecutive voxels, which hit the same pixels, do not wait on each other's
    stores.
    """
    ny, nx = fs.shape
    nrows, ncols = ga.shape
    L = GUARD_LO + ncols + GUARD_HI
    acc = np.zeros(4 * L, dtype=np.float64)
    F = np.empty(nx, dtype=np.int32)
    W0 = np.empty(nx, dtype=np.float64)
    W1 = np.empty(nx, dtype=np.float64)
    cxp, cyp, half_p, weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    one = np.uintp(1)
    for iy in range(ny):
        lo = los[iy]
        hi = his[iy]
        if lo >= hi:
            continue
        y = y0 + iy * voxel_width
        slice_row_taps(X, y, lo, hi, cxp, cyp, half_p, weight, center_col, ncols, F, W0, W1)
        row = fs[iy]
        base = np.uintp(lo)
        m = np.uintp(hi - lo)
        for t in range(m):
            v = np.float64(row[base + t])
            W0[t] *= v
            W1[t] *= v
        m4 = m - m % np.uintp(4)
        for t in range(np.uintp(0), m4, np.uintp(4)):
            for u in range(np.uintp(4)):
                i = np.uintp(F[t + u]) + u * np.uintp(L)
                acc[i] += W0[t + u]
                acc[i + one] += W1[t + u]
        for t in range(m4, m):
            i = np.uintp(F[t])
            acc[i] += W0[t]
            acc[i + one] += W1[t]
    for j in range(nrows):
        for i in range(ncols):
            ga[j, i] = 0.0
    for i in range(ncols):
        c = GUARD_LO + i
        ga[js, i] = ((acc[c] + acc[L + c]) + (acc[2 * L + c] + acc[3 * L + c])) * rf


def project(f, g, col_dir, ks, js, x0, y0, voxel_width, pixel_width, center_col, fov_r2, rf):
    """Single-slice parallel projection of slice ``ks`` of f (nz, ny, nx) into row ``js``
    of g (na, nrows, ncols), the other rows zero; views on all threads
    (:mod:`leap.kernels.cpu.threads`). center_col (na,)."""
    threads.run(_project_views, f, g, col_dir, ks, js, x0, y0, voxel_width, pixel_width,
                center_col, fov_r2, rf, items=g.shape[0])


@numba.njit(**FAST_JIT)
def _project_views(f, g, col_dir, ks, js, x0, y0, voxel_width, pixel_width, center_col,
                   fov_r2, rf, start, step):
    """Views ``a = start, start + step, …`` of :func:`project`."""
    X = x0 + np.arange(f.shape[2]) * voxel_width
    fs = f[ks]
    los, his = slice_row_ranges(fs, x0, y0, voxel_width, fov_r2)
    for a in range(start, g.shape[0], step):
        project_view_slice(fs, g[a], col_dir[a, 0], col_dir[a, 1], js, X, y0, voxel_width,
                           pixel_width, center_col[a], los, his, rf)


def backproject_slice(G, f, col_dir, ks, js, x0, y0, voxel_width, pixel_width,
                      center_col, fov_r2):
    """Single-slice parallel back-projector (transpose of :func:`project_view_slice`).

    Blocks of ``ROW_BLOCK`` voxel rows on all threads; per view the slice's pixel values
    are read out of G (:func:`leap.kernels.cpu.columns.projection_row_values`: single
    slices have direct rows) once per block, then every voxel gathers its two taps.
    """
    threads.run(_backproject_blocks, G, f, col_dir, ks, js, x0, y0, voxel_width,
                pixel_width, center_col, fov_r2,
                items=(f.shape[1] + ROW_BLOCK - 1) // ROW_BLOCK)


@numba.njit(**FAST_JIT)
def _backproject_blocks(G, f, col_dir, ks, js, x0, y0, voxel_width, pixel_width,
                        center_col, fov_r2, start, step):
    """Blocks ``b = start, start + step, …`` of :func:`backproject_slice`."""
    nz, ny, nx = f.shape
    na, L, nrows = G.shape
    ncols = L - GUARD_LO - GUARD_HI
    nblocks = (ny + ROW_BLOCK - 1) // ROW_BLOCK
    X = x0 + np.arange(nx) * voxel_width
    slab = np.empty((ROW_BLOCK, nx), dtype=np.float64)
    gv = np.empty(L, dtype=np.float64)
    F = np.empty(nx, dtype=np.int32)
    W0 = np.empty(nx, dtype=np.float64)
    W1 = np.empty(nx, dtype=np.float64)
    los = np.empty(ROW_BLOCK, dtype=np.int64)
    his = np.empty(ROW_BLOCK, dtype=np.int64)
    for b in range(start, nblocks, step):
        r0 = b * ROW_BLOCK
        nr = min(ROW_BLOCK, ny - r0)
        start_slice_block(slab, los, his, r0, nr, x0, y0, voxel_width, fov_r2)
        for a in range(na):
            cxp, cyp, half_p, weight = parallel_view_constants(col_dir[a, 0], col_dir[a, 1],
                                                               voxel_width, pixel_width)
            for c in range(L):
                gv[c] = np.float64(G[a, c, js])
            for r in range(nr):
                lo = los[r]
                hi = his[r]
                if lo >= hi:
                    continue
                y = y0 + (r0 + r) * voxel_width
                slice_row_taps(X, y, lo, hi, cxp, cyp, half_p, weight, center_col[a], ncols,
                               F, W0, W1)
                for t in range(hi - lo):
                    i = np.uintp(F[t])
                    slab[r, lo + t] += W0[t] * gv[i] + W1[t] * gv[i + np.uintp(1)]
        store_slice_rows(f, slab, ks, r0, nr)
