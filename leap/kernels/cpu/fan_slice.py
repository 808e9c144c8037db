"""Single-slice fan beams on the CPU (the 2-D fan case): the footprints and the scatter
are the whole cost, so they get a projector and back-projector of their own, as
single-slice parallel beams do (:mod:`leap.kernels.cpu.axial_slice`).

When one slice lands on the detector with direct rows (the usual 2-D fan scan: one row,
one slice; :func:`leap.kernels.cpu.axial_slice.slice_mode`) a voxel column is one voxel
and the per-column machinery of the direct-row kernels (extents, a group of views per
block of rows, a call per column into a loop of one row) costs more than the voxel's
work. Here, per voxel row and view:

* one loop computes the footprints and their taps, and vectorises (:func:`row_taps`:
  divisions and square roots four voxels at a time; the projector's voxel values are
  multiplied in there too). Every footprint up to two pixels wide becomes three taps
  without branches (divergent beams magnify voxels past a pixel: on a 512² scan at
  magnification 1.5, 37 % of the voxel-views meet three pixels, where the direct-row
  kernels take their general loop over pixels); wider ones get zero taps and are added
  by that general loop afterwards (:func:`add_wide`, :func:`gather_wide`). Separate
  passes for the footprints, the taps and the values took 0.53 s instead of 0.45 s for
  the 512² scan's 720 views on one thread;
* the projector scatters into four copies of the view's row in turn, so that
  consecutive voxels, which hit the same pixels, do not wait on each other's stores;
  the back-projector gathers the three taps from a float64 copy of the view's row.

Both kernels compute the same footprints and taps from the same inputs, so they are
exact transposes. Against the direct-row kernels the weights are the same up to the
rounding of the third tap (three_tap's ``(c_hi − e) − 1`` against overlap's ``c_hi −
(e + 1)``) and the order of the sums.

The projector runs views, the back-projector blocks of :data:`ROW_BLOCK` voxel rows, on
all threads (:mod:`leap.kernels.cpu.threads`).
"""
from __future__ import annotations

import numba
import numpy as np

from ..footprints import FLAT
from . import threads
from ._jit import FAST_JIT, column_range, overlap, parallel_view_constants
from .axial_direct import direct_footprint
from .axial_slice import slice_row_ranges, start_slice_block, store_slice_rows
from .columns import GUARD_HI, GUARD_LO, INLINE, three_tap

#: Voxel rows per work item of the back-projector: each view's row of the projections is
#: copied out once for this many voxel rows.
ROW_BLOCK = 8


@numba.njit(**INLINE)
def three_pixels(c_lo, c_hi, ncols):
    """Whether ``[c_lo, c_hi]`` meets at most the three pixels from :func:`three_tap`'s
    first (False for NaN): the footprints :func:`row_taps` weighs."""
    return c_hi <= min(max(np.floor(c_lo + 0.5), -1.0), float(ncols)) + 2.5


@numba.njit(**INLINE)
def _taps_loop(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
               pitch, model, voxel_width, pixel_width, center_col, dist_sod, distance_weight,
               ncols, F, W0, W1, W2):
    """The loop of :func:`row_taps` for one ``model`` and ``distance_weight``: called with
    constants for both, it has no branch left and LLVM vectorises it."""
    any_wide = False
    base = np.uintp(lo)
    for t in range(np.uintp(hi - lo)):
        c_lo, c_hi, weight = direct_footprint(
            model, X[base + t], y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
            pitch, voxel_width, pixel_width, center_col, dist_sod, distance_weight)
        fl, o0, o1, o2 = three_tap(c_lo, c_hi, ncols)
        fits = three_pixels(c_lo, c_hi, ncols)
        use = fits & (weight != 0.0)
        w = weight if use else 0.0
        v = np.float64(values[base + t]) if values is not None else 1.0
        F[t] = np.int32(fl if use else 0.0) + np.int32(GUARD_LO)
        W0[t] = o0 * w * v
        W1[t] = o1 * w * v
        W2[t] = o2 * w * v
        any_wide |= (not fits) & (weight != 0.0)
    return any_wide


@numba.njit(**INLINE)
def row_taps(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
             pitch, model, voxel_width, pixel_width, center_col, dist_sod, ncols, F, W0, W1,
             W2):
    """Three-tap weights of the voxels ``lo <= ix < hi`` of the row at height y, one view,
    footprints and taps in one vectorised loop.

    For ``t = ix − lo``: ``F[t]`` (int32) the guard-padded index of the first pixel,
    ``W0[t]``, ``W1[t]``, ``W2[t]`` the weights (mm) of it and the next two
    (:func:`~leap.kernels.cpu.axial_direct.direct_footprint`'s footprint and weight,
    :func:`three_tap`), times ``values[ix]`` unless ``values`` is None (the projector
    passes the voxel row, the back-projector None). Footprints that meet a fourth pixel
    (and NaN ones) with a weight get zero taps here and the return value says whether
    there are any (:func:`add_wide`, :func:`gather_wide` add them). X : (nx,) the voxel
    x centres, mm (read, not computed from ix: AVX2 has no 64-bit integer to float
    conversion, and the loop would not vectorise).

    The flat fan model, with and without FBP's distance weight, gets a loop of its own
    with both as constants, as :func:`~leap.kernels.cpu.axial_direct.direct_footprints`
    does (the others take them at run time).
    """
    flat = np.int64(FLAT)
    if model == FLAT and dist_sod > 0.0:
        return _taps_loop(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                          sdd, sod, pitch, flat, voxel_width, pixel_width, center_col,
                          dist_sod, True, ncols, F, W0, W1, W2)
    if model == FLAT:
        return _taps_loop(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                          sdd, sod, pitch, flat, voxel_width, pixel_width, center_col,
                          dist_sod, False, ncols, F, W0, W1, W2)
    return _taps_loop(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd,
                      sod, pitch, model, voxel_width, pixel_width, center_col, dist_sod,
                      dist_sod > 0.0, ncols, F, W0, W1, W2)


@numba.njit(**INLINE)
def _wide_footprint(X, ix, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
                    model, voxel_width, pixel_width, center_col, dist_sod, ncols):
    """(c_lo, c_hi, weight, i0, i1) of voxel ix's footprint if :func:`row_taps` left it
    out (its pixels ``i0..i1``, computed again by the same function), else ``i0 > i1``."""
    c_lo, c_hi, weight = direct_footprint(
        model, X[ix], y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
        voxel_width, pixel_width, center_col, dist_sod, dist_sod > 0.0)
    if weight == 0.0 or three_pixels(c_lo, c_hi, ncols):
        return c_lo, c_hi, weight, 0, -1
    i0, i1 = column_range(c_lo, c_hi, ncols)
    return c_lo, c_hi, weight, i0, i1


@numba.njit(**INLINE)
def add_wide(values, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
             pitch, model, voxel_width, pixel_width, center_col, dist_sod, ncols, acc):
    """The projector's part of the footprints :func:`row_taps` left out: voxel values
    ``values[ix]`` times overlap × weight into the guard-padded pixels of ``acc``."""
    for ix in range(lo, hi):
        v = np.float64(values[ix])
        if v == 0.0:
            continue
        c_lo, c_hi, weight, i0, i1 = _wide_footprint(
            X, ix, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch, model,
            voxel_width, pixel_width, center_col, dist_sod, ncols)
        for i in range(i0, i1 + 1):
            acc[i + GUARD_LO] += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight * v


@numba.njit(**INLINE)
def gather_wide(X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
                model, voxel_width, pixel_width, center_col, dist_sod, gv, ncols, out):
    """Transpose of :func:`add_wide`: ``out[ix] += Σ_i overlap × weight × gv[i +
    GUARD_LO]`` for the footprints :func:`row_taps` left out."""
    for ix in range(lo, hi):
        c_lo, c_hi, weight, i0, i1 = _wide_footprint(
            X, ix, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch, model,
            voxel_width, pixel_width, center_col, dist_sod, ncols)
        if i0 > i1:
            continue
        total = 0.0
        for i in range(i0, i1 + 1):
            total += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight * gv[i + GUARD_LO]
        out[ix] += total


def project(f, g, col_dir, source_xy, sdd, sod, pitch, model, ks, js, x0, y0, voxel_width,
            pixel_width, center_col, fov_r2, row_factor, dist_sod):
    """Single-slice fan projection of slice ``ks`` of f (nz, ny, nx) float32 into row
    ``js`` of g (na, nrows, ncols) float32 (times ``row_factor``), the other rows zero.

    col_dir, source_xy : (na, 2) float64; sdd, center_col : (na,) float64 (mm, fractional
    pixels); ``model``, ``sod``, ``pitch`` as for
    :func:`leap.kernels.cpu.axial_direct.project`; ``dist_sod > 0``: FBP's distance
    weight (the transpose of the back-projector's). Views on all threads.
    """
    threads.run(_project_views, f, g, col_dir, source_xy, sdd, sod, pitch, model, ks, js, x0,
                y0, voxel_width, pixel_width, center_col, fov_r2, row_factor, dist_sod,
                items=g.shape[0])


@numba.njit(**FAST_JIT)
def _project_views(f, g, col_dir, source_xy, sdd, sod, pitch, model, ks, js, x0, y0,
                   voxel_width, pixel_width, center_col, fov_r2, row_factor, dist_sod, start,
                   step):
    """Views ``a = start, start + step, …`` of :func:`project`."""
    nz, ny, nx = f.shape
    na, nrows, ncols = g.shape
    L = GUARD_LO + ncols + GUARD_HI
    acc = np.empty(4 * L, dtype=np.float64)
    X = x0 + np.arange(nx) * voxel_width
    F = np.empty(nx, dtype=np.int32)
    W0 = np.empty(nx, dtype=np.float64)
    W1 = np.empty(nx, dtype=np.float64)
    W2 = np.empty(nx, dtype=np.float64)
    one = np.uintp(1)
    two = np.uintp(2)
    rf = row_factor[js]
    los, his = slice_row_ranges(f[ks], x0, y0, voxel_width, fov_r2)
    for a in range(start, na, step):
        for i in range(4 * L):
            acc[i] = 0.0
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                               pixel_width)
        for iy in range(ny):
            lo = los[iy]
            hi = his[iy]
            if lo >= hi:
                continue
            y = y0 + iy * voxel_width
            row = f[ks, iy]
            sx = source_xy[a, 0]
            sy = source_xy[a, 1]
            wide = row_taps(row, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                            sdd[a], sod, pitch, model, voxel_width, pixel_width,
                            center_col[a], dist_sod, ncols, F, W0, W1, W2)
            m = np.uintp(hi - lo)
            m4 = m - m % np.uintp(4)
            for t in range(np.uintp(0), m4, np.uintp(4)):
                for u in range(np.uintp(4)):
                    i = np.uintp(F[t + u]) + u * np.uintp(L)
                    acc[i] += W0[t + u]
                    acc[i + one] += W1[t + u]
                    acc[i + two] += W2[t + u]
            for t in range(m4, m):
                i = np.uintp(F[t])
                acc[i] += W0[t]
                acc[i + one] += W1[t]
                acc[i + two] += W2[t]
            if wide:
                add_wide(row, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                         sdd[a], sod, pitch, model, voxel_width, pixel_width, center_col[a],
                         dist_sod, ncols, acc)
        for j in range(nrows):
            for i in range(ncols):
                g[a, j, i] = 0.0
        for i in range(ncols):
            c = GUARD_LO + i
            g[a, js, i] = ((acc[c] + acc[L + c]) + (acc[2 * L + c] + acc[3 * L + c])) * rf


def backproject(G, f, col_dir, source_xy, sdd, sod, pitch, model, ks, js, x0, y0,
                voxel_width, pixel_width, center_col, fov_r2, dist_sod):
    """Single-slice fan back-projection (transpose of :func:`project`) of G into slice
    ``ks`` of f (nz, ny, nx) float32, the other slices zero.

    G : (na, GUARD_LO + ncols + GUARD_HI, m) float32, the projections' row values times
    the row factor (:func:`leap.kernels.cpu.columns.projection_row_values`; FBP's
    filter writes them so); row ``js`` is read. Other arguments as for :func:`project`.
    Blocks of :data:`ROW_BLOCK` voxel rows on all threads.
    """
    ny = f.shape[1]
    threads.run(_backproject_blocks, G, f, col_dir, source_xy, sdd, sod, pitch, model, ks, js,
                x0, y0, voxel_width, pixel_width, center_col, fov_r2, dist_sod,
                items=(ny + ROW_BLOCK - 1) // ROW_BLOCK)


@numba.njit(**FAST_JIT)
def _backproject_blocks(G, f, col_dir, source_xy, sdd, sod, pitch, model, ks, js, x0, y0,
                        voxel_width, pixel_width, center_col, fov_r2, dist_sod, start, step):
    """Blocks ``b = start, start + step, …`` of :data:`ROW_BLOCK` voxel rows of
    :func:`backproject`."""
    nz, ny, nx = f.shape
    na, L, _ = G.shape
    ncols = L - GUARD_LO - GUARD_HI
    slab = np.empty((ROW_BLOCK, nx), dtype=np.float64)
    gv = np.empty(L, dtype=np.float64)
    X = x0 + np.arange(nx) * voxel_width
    F = np.empty(nx, dtype=np.int32)
    W0 = np.empty(nx, dtype=np.float64)
    W1 = np.empty(nx, dtype=np.float64)
    W2 = np.empty(nx, dtype=np.float64)
    los = np.empty(ROW_BLOCK, dtype=np.int64)
    his = np.empty(ROW_BLOCK, dtype=np.int64)
    one = np.uintp(1)
    two = np.uintp(2)
    for b in range(start, (ny + ROW_BLOCK - 1) // ROW_BLOCK, step):
        r0 = b * ROW_BLOCK
        nr = min(ROW_BLOCK, ny - r0)
        start_slice_block(slab, los, his, r0, nr, x0, y0, voxel_width, fov_r2)
        for a in range(na):
            cx = col_dir[a, 0]
            cy = col_dir[a, 1]
            sx = source_xy[a, 0]
            sy = source_xy[a, 1]
            cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                                   pixel_width)
            for c in range(L):
                gv[c] = np.float64(G[a, c, js])
            for r in range(nr):
                lo = los[r]
                hi = his[r]
                if lo >= hi:
                    continue
                y = y0 + (r0 + r) * voxel_width
                wide = row_taps(None, X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p,
                                par_weight, sdd[a], sod, pitch, model, voxel_width,
                                pixel_width, center_col[a], dist_sod, ncols, F, W0, W1, W2)
                out = slab[r]
                base = np.uintp(lo)
                for t in range(np.uintp(hi - lo)):
                    i = np.uintp(F[t])
                    out[base + t] += (W0[t] * gv[i] + W1[t] * gv[i + one]) + W2[t] * gv[i + two]
                if wide:
                    gather_wide(X, lo, hi, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                                sdd[a], sod, pitch, model, voxel_width, pixel_width,
                                center_col[a], dist_sod, gv, ncols, out)
        store_slice_rows(f, slab, ks, r0, nr)
