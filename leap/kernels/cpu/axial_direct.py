"""Direct-row passes of the CPU axial kernels: parallel and fan beams whose slices lie on
detector rows.

Parallel and fan beams do not magnify z, so A and B are the same for every voxel column.
When B == 1 and A + 0.5 is an integer (voxel height = pixel height, slices centred on
rows, as LEAP requires for these geometries) voxel k covers exactly row k + A + 0.5 and
no interpolation is needed: when every view has direct rows (``direct``,
:func:`all_direct`) the kernels of :mod:`leap.kernels.cpu.axial` read the voxel and
pixel values themselves in the same (column, z) layout
(:func:`~leap.kernels.cpu.columns.volume_z_columns`,
:func:`~leap.kernels.cpu.columns.projection_row_values`) instead of cumulative sums: half
the loads per tap (13 to 20 % less time for projection, 19 to 24 % for
back-projection at 128³ and 256³ than differencing the sums) and none of the float32
sums' rounding (~1e-6 of the result on data with a large mean).

What is here: the test (:func:`all_direct`); a row's footprints in a loop of their own
(:func:`direct_footprints`); the projector's passes, a group of views per thread
(:func:`direct_group`), a block of volume rows (:data:`DIRECT_BLOCK_BYTES`) into each
view in turn (:func:`_project_direct_views`); and the back-projector's, PASS_VIEWS views
at a time over each voxel column of a tile (:func:`_gather_direct_views`, its two-tap
weights from :func:`_direct_taps`, one view alone :func:`_gather_direct_row`).

Why a module of its own: these functions share the direct footprints and taps and
nothing of the cone family's per-voxel-column interpolation. The entry points
(:func:`project`, :func:`backproject`) are here, beside those of
:mod:`leap.kernels.cpu.axial` rather than behind a flag of them: a geometry compiles
only the kernels it runs (a first cone projection compiled the direct-row passes too,
12 of its 23 s). This module imports the tiling from :mod:`leap.kernels.cpu.axial`,
which imports nothing from here. The per-column building blocks both use are in
:mod:`leap.kernels.cpu.columns`.

Both kernels call the same footprint functions on the same inputs (x, y, view
constants), so they weight every (voxel, pixel) pair identically: exact transposes.
"""
from __future__ import annotations

import numba
import numpy as np

from .. import footprints as _fp
from ..footprints import FLAT, PARALLEL
from . import threads
from ._jit import (FAST_JIT, axial_footprint, column_range, direct_shift,
                   fbp_distance_weight, overlap, parallel_view_constants, row_mapping)
from .axial import tile_edge
from .columns import (GUARD_HI, GUARD_LO, INLINE, add_direct2, column_length, direct_slices,
                      fov_ix_range, gather_direct2, store_tile, tile_fov_ranges, two_pixels,
                      two_tap)


# --------------------------------------------------------------------------------------
# Which views have direct rows, and a row's footprints.

def direct_row_shifts(source_z, sdd, center_row, magnify_z, z0, voxel_height, pixel_height):
    """Each view's row shift (voxel k covers exactly detector row k + shift) when every
    view has direct rows, else None: :func:`~leap.kernels.footprints.direct_shift` of the
    views' :func:`~leap.kernels.footprints.row_mapping`, evaluated on all views at once
    in NumPy (the same double arithmetic as the kernels'). A compiled loop cost 0.3 to
    0.6 s of a fresh environment's first call for a decision over a few hundred views.

    source_z, sdd, center_row : (na,) float64, as for
    :func:`~leap.kernels.cpu.axial.project`. Returns (na,) int64 or None.
    """
    if magnify_z:
        return None
    A, B, _ = _fp.row_mapping(z0, voxel_height, np.asarray(source_z, dtype=np.float64), 1.0,
                              sdd, False, pixel_height, np.asarray(center_row, np.float64))
    s = np.asarray(A + 0.5)
    if B != 1.0 or not np.all((np.abs(s) <= 1e9) & (s == np.floor(s))):
        return None
    return s.astype(np.int64)


def all_direct(source_z, sdd, center_row, magnify_z, z0, voxel_height, pixel_height):
    """Whether every view has direct rows (:func:`direct_row_shifts`), so that the
    kernels can run on values (``direct``) rather than cumulative sums."""
    return direct_row_shifts(source_z, sdd, center_row, magnify_z, z0, voxel_height,
                             pixel_height) is not None


@numba.njit(**INLINE)
def direct_footprint(model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
                     pitch, voxel_width, pixel_width, center_col, dist_sod, distance_weight):
    """(c_lo, c_hi, weight) of the voxel column at (x, y) for one view, direct rows (no
    focus offsets): :func:`~leap.kernels.cpu._jit.axial_footprint`, times FBP's distance
    weight if ``distance_weight``, and weight 0 where the column is behind the source."""
    c_lo, c_hi, weight, dist, dz = axial_footprint(
        model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
        voxel_width, pixel_width, center_col, 0.0, 0.0)
    if distance_weight:
        weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
    return c_lo, c_hi, (weight if dist > 0.0 else 0.0)


@numba.njit(**INLINE)
def _footprint_row(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd,
                   sod, pitch, model, voxel_width, pixel_width, center_col, dist_sod,
                   distance_weight):
    """The loop of :func:`direct_footprints`, for one ``model`` and ``distance_weight``
    (whether to apply FBP's distance weight): called with constants for both, it has no
    branch left and LLVM vectorises it (unconditional stores into the three rows of
    fp)."""
    c_lo_row = fp[0]
    c_hi_row = fp[1]
    weight_row = fp[2]
    for ix in range(lo, hi):
        x = x0 + ix * voxel_width
        c_lo, c_hi, weight = direct_footprint(
            model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
            voxel_width, pixel_width, center_col, dist_sod, distance_weight)
        j = np.uintp(ix - ix0)
        c_lo_row[j] = c_lo
        c_hi_row[j] = c_hi
        weight_row[j] = weight


@numba.njit(**INLINE)
def direct_footprints(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                      sdd, sod, pitch, model, voxel_width, pixel_width, center_col, dist_sod):
    """``fp[:, ix − ix0] = (c_lo, c_hi, weight)`` for the voxel columns ``lo <= ix < hi`` of
    the row at y, one view; fp : (3, >= hi − ix0) float64; weight 0 where the column is
    behind the source.

    Direct rows (parallel, fan) need nothing else per column, so both kernels compute
    a row's footprints first, in a loop of its own: its iterations are independent, so
    the divisions and square roots of neighbouring columns overlap instead of each
    waiting on the previous column's memory traffic (back-projector and projector 25 to
    50 % faster). For the flat fan and parallel models the loop is specialised on the
    model and on the distance weight, so LLVM vectorises it: four columns per divide
    and square root (fan footprints 2.3 to 2.5× faster per column). ``dist_sod > 0``:
    FBP's distance weight (fan, cone-parallel).
    """
    # Constant model and flag per call of _footprint_row where the loop vectorises (flat
    # fan, parallel); the other models (arc tangents, square roots of their own) take
    # both at run time. The constants are int64 values rather than literals, so that
    # axial_footprint compiles once (literal arguments each compiled it again); inlined
    # here, LLVM still sees them as constants.
    flat = np.int64(FLAT)
    parallel = np.int64(PARALLEL)
    if model == FLAT and dist_sod > 0.0:
        _footprint_row(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                       sdd, sod, pitch, flat, voxel_width, pixel_width, center_col, dist_sod,
                       True)
    elif model == FLAT:
        _footprint_row(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                       sdd, sod, pitch, flat, voxel_width, pixel_width, center_col, dist_sod,
                       False)
    elif model == PARALLEL and not dist_sod > 0.0:
        _footprint_row(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                       sdd, sod, pitch, parallel, voxel_width, pixel_width, center_col,
                       dist_sod, False)
    else:
        _footprint_row(fp, lo, hi, ix0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                       sdd, sod, pitch, model, voxel_width, pixel_width, center_col, dist_sod,
                       dist_sod > 0.0)


# --------------------------------------------------------------------------------------
# The projector's direct-row passes: groups of views, blocks of volume rows.

#: Voxel bytes per block of volume rows that the direct-row projector adds to a group of
#: views before moving on: the block is read from memory once for the group and from
#: cache for the others. At 256³ the volume exceeds the L3 cache and the projector,
#: streaming it once per view, was bound by memory bandwidth (time ×10 from 128³).
DIRECT_BLOCK_BYTES = 1 << 20
#: Views per group in the direct-row projector (one accumulator each, GUARD_LO + ncols +
#: GUARD_HI by column_length(nrows, 8) float64): DIRECT_GROUP, or DIRECT_GROUP_LARGE for
#: volumes over LARGE_VOLUME_BYTES, which come from memory rather than the L3 cache. Four
#: views: 0.90 to 0.92× the time of two at 256³, but 0.95 to 1.12× at 128³, where four
#: 128² accumulators (540 KB, 574 KB padded) no longer fit a 512 KiB L2 cache and the
#: volume is cached anyway (2 threads, 180 views); eight gained nothing more at 256³.
DIRECT_GROUP = 2
DIRECT_GROUP_LARGE = 4
LARGE_VOLUME_BYTES = 1 << 24


@numba.njit(**FAST_JIT)
def direct_group(na, threads, volume_bytes):
    """Views per group of the direct-row projector for ``na`` views on ``threads``
    threads and a volume of ``volume_bytes``: :data:`DIRECT_GROUP` or
    :data:`DIRECT_GROUP_LARGE`, fewer where there would be under two groups per
    thread."""
    size = DIRECT_GROUP_LARGE if volume_bytes > LARGE_VOLUME_BYTES else DIRECT_GROUP
    return max(1, min(size, na // (2 * max(threads, 1))))


@numba.njit(**INLINE)
def _project_direct_rows(S, extent, acc, nrows, fp, iy_lo, iy_hi, cx, cy, sx, sy, zs, sdd,
                         sod, pitch, model, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                         pixel_height, center_col, center_row, dist_sod, iy0):
    """Rows ``iy_lo <= iy < iy_hi`` (volume row iy0 + iy) of S, extent =
    volume_z_columns(f, iy0, …) (ny, nx, nz), (ny, nx, 2) (voxels outside a column's
    extent are skipped) into one view's accumulator ``acc`` (GUARD_LO + ncols + GUARD_HI, column_length(nrows, 8))
    float64, direct rows; fp : (3, nx) float64 scratch."""
    ny, nx, nz = S.shape
    stride = acc.shape[1]
    ncols = acc.shape[0] - GUARD_LO - GUARD_HI
    cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    A, B, _ = row_mapping(z0, voxel_height, zs, 1.0, sdd, False, pixel_height, center_row)
    shift = direct_shift(False, A, B)[1]
    k0, k1 = direct_slices(shift, nz, nrows)
    if k0 >= k1:
        return
    # Flat arrays and offsets, not a view per column (columns module notes).
    Sf = S.reshape(-1)
    af = acc.reshape(-1)
    for iy in range(iy_lo, iy_hi):
        y = y0 + (iy0 + iy) * voxel_width
        lo, hi = fov_ix_range(y, x0, voxel_width, nx, fov_r2)
        direct_footprints(fp, lo, hi, 0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                          sdd, sod, pitch, model, voxel_width, pixel_width, center_col,
                          dist_sod)
        for ix in range(lo, hi):
            c_lo = fp[0, ix]
            c_hi = fp[1, ix]
            weight = fp[2, ix]
            ka = max(k0, extent[iy, ix, 0])
            kb = min(k1, extent[iy, ix, 1] + 1)
            if weight == 0.0 or ka >= kb:
                continue
            v0 = (iy * nx + ix) * nz + ka
            if two_pixels(c_lo, c_hi):
                fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
                r0 = (int(fl) + GUARD_LO) * stride + ka + shift
                add_direct2(Sf, v0, kb - ka, o0 * weight, o1 * weight, af, r0, r0 + stride)
            else:
                i0, i1 = column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                    if w == 0.0:
                        continue
                    r0 = (i + GUARD_LO) * stride + ka + shift
                    add_direct2(Sf, v0, kb - ka, w, 0.0, af, r0, r0)


@numba.njit(**FAST_JIT)
def _project_direct_views(S, extent, g, acc, fp, a0, a1, col_dir, source_xy, source_z, sdd, sod,
                          pitch, model, fov_r2, x0, y0, z0, voxel_width, voxel_height,
                          pixel_width, pixel_height, center_col, center_row, row_factor,
                          dist_sod, iy0, accumulate):
    """Views ``a0 <= a < a1`` of the projector into g (added to it if ``accumulate``),
    direct rows, S = volume_z_columns(f, iy0, iy0 + ny) (ny, nx, nz): a block of volume rows (:data:`DIRECT_BLOCK_BYTES`) into each view in
    turn, so the block comes from memory once for the group.
    acc : (>= a1 - a0, GUARD_LO + ncols + GUARD_HI, column_length(nrows, 8)), fp : (3, nx)
    float64 scratch.
    """
    ny, nx, nz = S.shape
    nrows, ncols = g.shape[1], g.shape[2]
    acc[:a1 - a0] = 0.0
    step = max(1, DIRECT_BLOCK_BYTES // max(1, 4 * nx * nz))
    for iy_lo in range(0, ny, step):
        iy_hi = min(ny, iy_lo + step)
        for a in range(a0, a1):
            _project_direct_rows(S, extent, acc[a - a0], nrows, fp, iy_lo, iy_hi,
                                 col_dir[a, 0],
                                 col_dir[a, 1], source_xy[a, 0], source_xy[a, 1],
                                 source_z[a], sdd[a], sod, pitch, model, fov_r2, x0, y0, z0,
                                 voxel_width, voxel_height, pixel_width, pixel_height,
                                 center_col[a], center_row[a], dist_sod, iy0)
    for a in range(a0, a1):
        for j in range(nrows):
            rf = row_factor[j]
            if accumulate:
                for i in range(ncols):
                    g[a, j, i] += acc[a - a0, i + GUARD_LO, j] * rf
            else:
                for i in range(ncols):
                    g[a, j, i] = acc[a - a0, i + GUARD_LO, j] * rf



# --------------------------------------------------------------------------------------
# The back-projector's direct-row passes over a tile, PASS_VIEWS views at a time.

@numba.njit(**INLINE)
def _gather_direct_column(Gf, ga, stride, ncols, c_lo, c_hi, weight, n, sf, c0):
    """One view's footprint ``[c_lo, c_hi]`` (weight ``weight``) into ``n`` voxels of a
    voxel column, direct rows. Flat arrays and offsets (:func:`gather_direct2`): ``Gf``
    the raveled row values, ``ga`` the offset of the voxels' first row in the view's
    first (guard) column, ``stride`` from one detector column to the next; the voxels
    at ``sf[c0:c0 + n]``."""
    if two_pixels(c_lo, c_hi):
        fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
        g0 = ga + (int(fl) + GUARD_LO) * stride
        gather_direct2(Gf, g0, g0 + stride, n, o0 * weight, o1 * weight, sf, c0)
    else:
        i0, i1 = column_range(c_lo, c_hi, ncols)
        for i in range(i0, i1 + 1):
            w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
            if w == 0.0:
                continue
            g0 = ga + (i + GUARD_LO) * stride
            gather_direct2(Gf, g0, g0, n, w, 0.0, sf, c0)


@numba.njit(**INLINE)
def _gather_direct_row(Gf, ga, stride, ncols, sf, s0, nz, fp, lo, hi, ix0, n):
    """One view into the voxel columns ``lo <= ix < hi`` of a tile row, direct rows
    (parallel, fan): the tile row's first voxel at ``sf[s0]``, columns ``nz`` apart, from
    ``ix0``; ``fp`` (3, tx) their footprints (:func:`direct_footprints`); ``Gf``, ``ga``
    as for :func:`_gather_direct_column`."""
    for ix in range(lo, hi):
        j = ix - ix0
        if fp[2, j] != 0.0:
            _gather_direct_column(Gf, ga, stride, ncols, fp[0, j], fp[1, j], fp[2, j], n, sf,
                                  s0 + j * nz)


#: Direct-row views the back-projector adds to a voxel column in one pass
#: (:func:`_gather_direct_views`, which is written for four).
PASS_VIEWS = 4


@numba.njit(**INLINE)
def _direct_taps(fp, off, w0, w1, wide, lo, hi, ix0, ga, stride, ncols):
    """One view's two-tap weights for the voxel columns ``lo <= ix < hi`` of a tile row,
    from its footprints ``fp`` (3, tx) (:func:`direct_footprints`): ``off[j]`` the flat
    offset in G of the first tap's rows (``ga`` that of the view's first guard column),
    ``w0[j]``, ``w1[j]`` the weights of that column and the next, j = ix − ix0. Columns
    whose footprint meets a third pixel (``wide[j]``, and NaN) or has no weight get
    weights 0 and a valid offset: the pass adds nothing for them, and the wide ones are
    added by :func:`_gather_direct_column` afterwards. Returns whether any is wide.
    Branch-free, so LLVM vectorises it."""
    any_wide = False
    for ix in range(lo, hi):
        j = np.uintp(ix - ix0)
        c_lo = fp[0, j]
        c_hi = fp[1, j]
        weight = fp[2, j]
        two = two_pixels(c_lo, c_hi)
        use = two & (weight != 0.0)
        fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
        fl = fl if use else 0.0
        off[j] = ga + (np.intp(fl) + GUARD_LO) * stride
        w0[j] = o0 * weight if use else 0.0
        w1[j] = o1 * weight if use else 0.0
        is_wide = (not two) & (weight != 0.0)
        wide[j] = is_wide
        any_wide |= is_wide
    return any_wide


@numba.njit(**FAST_JIT)
def _gather_direct_views(G, slab, fp, off, w, wide, views, count, lo, hi, iy0, ix0, shift,
                         col_dir, source_xy, sdd, sod, pitch, model, x0, y0, voxel_width,
                         pixel_width, center_col, dist_sod):
    """The ``count`` views ``views[:count]`` (all with direct rows and the same ``shift``)
    into a tile. Per tile row, each view's footprints (:func:`direct_footprints`, into
    ``fp[m]``; fp (PASS_VIEWS, 3, tx) float64 scratch) and two-tap offsets and weights
    (:func:`_direct_taps`, into ``off[m]``, ``w[m]``, ``wide[m]``; off (PASS_VIEWS, tx)
    intp, w (PASS_VIEWS, 2, tx) float64, wide (PASS_VIEWS, tx) bool); then one pass over
    each voxel column for the four views, ``col[k] += (a + b) + (c + d)`` with ``a =
    wa0·G[a0 + k] + wa1·G[a0 + stride + k]`` the first view's two taps, and so on: each
    voxel is read and written once for four views, and the set-up of a column's pass
    (offsets, weights, the loop's overlap checks; with two views a pass, a fifth of the
    time at 128³) is shared by four (parallel and fan back-projection 0.93 to 0.96× the
    time of two-view passes at 128³ and 256³). Two or three views (the end of a run of
    equal shifts) take the same pass with the empty places weighted 0; one view goes
    alone (:func:`_gather_direct_row`). G and the tile are read through flat arrays and
    offsets (:func:`~leap.kernels.cpu.columns.gather_direct2`)."""
    ty, tx, nz = slab.shape
    L, stride = G.shape[1], G.shape[2]
    ncols = L - GUARD_LO - GUARD_HI
    k0, k1 = direct_slices(shift, nz, stride - 1)
    n = k1 - k0
    Gf = G.reshape(-1)
    sf = slab.reshape(-1)
    # Per-view constants once per call, not per tile row; base[m]: the flat offset in G
    # of view m's first (guard) column, at the tile's first slice.
    consts = np.empty((count, 4), dtype=np.float64)
    base = np.empty(count, dtype=np.intp)
    for m in range(count):
        v = views[m]
        base[m] = v * L * stride + k0 + shift
        cxp, cyp, half_p, par_weight = parallel_view_constants(col_dir[v, 0], col_dir[v, 1],
                                                               voxel_width, pixel_width)
        consts[m, 0] = cxp
        consts[m, 1] = cyp
        consts[m, 2] = half_p
        consts[m, 3] = par_weight
    for r in range(ty):
        if lo[r] >= hi[r]:
            continue
        y = y0 + (iy0 + r) * voxel_width
        for m in range(count):
            v = views[m]
            direct_footprints(fp[m], lo[r], hi[r], ix0, x0, y, col_dir[v, 0], col_dir[v, 1],
                              source_xy[v, 0], source_xy[v, 1], consts[m, 0], consts[m, 1],
                              consts[m, 2], consts[m, 3], sdd[v], sod, pitch, model,
                              voxel_width, pixel_width, center_col[v], dist_sod)
        s0 = r * tx * nz + k0
        if count == 1:
            _gather_direct_row(Gf, base[0], stride, ncols, sf, s0, nz, fp[0], lo[r], hi[r],
                               ix0, n)
            continue
        any_wide = False
        for m in range(count):
            any_wide |= _direct_taps(fp[m], off[m], w[m, 0], w[m, 1], wide[m], lo[r], hi[r],
                                     ix0, base[m], stride, ncols)
        for m in range(count, PASS_VIEWS):
            # An empty place in the pass: weight 0 on the first view's (cached) rows.
            for ix in range(lo[r], hi[r]):
                j = ix - ix0
                off[m, j] = off[0, j]
                w[m, 0, j] = 0.0
                w[m, 1, j] = 0.0
        # The pass, written out here rather than in a helper: passing arrays to an inlined
        # helper per column brought back reference-count updates (columns module notes).
        for ix in range(lo[r], hi[r]):
            j = ix - ix0
            a0 = np.uintp(off[0, j])
            a1 = a0 + np.uintp(stride)
            b0 = np.uintp(off[1, j])
            b1 = b0 + np.uintp(stride)
            c0 = np.uintp(off[2, j])
            c1 = c0 + np.uintp(stride)
            d0 = np.uintp(off[3, j])
            d1 = d0 + np.uintp(stride)
            wa0 = w[0, 0, j]
            wa1 = w[0, 1, j]
            wb0 = w[1, 0, j]
            wb1 = w[1, 1, j]
            wc0 = w[2, 0, j]
            wc1 = w[2, 1, j]
            wd0 = w[3, 0, j]
            wd1 = w[3, 1, j]
            cc = np.uintp(s0 + j * nz)
            # Unsigned offsets, so the loop vectorises.
            for t in range(np.uintp(n)):
                a = wa0 * np.float64(Gf[a0 + t]) + wa1 * np.float64(Gf[a1 + t])
                b = wb0 * np.float64(Gf[b0 + t]) + wb1 * np.float64(Gf[b1 + t])
                c = wc0 * np.float64(Gf[c0 + t]) + wc1 * np.float64(Gf[c1 + t])
                d = wd0 * np.float64(Gf[d0 + t]) + wd1 * np.float64(Gf[d1 + t])
                sf[cc + t] += (a + b) + (c + d)
        if any_wide:
            for m in range(count):
                for ix in range(lo[r], hi[r]):
                    j = ix - ix0
                    if wide[m, j]:
                        _gather_direct_column(Gf, base[m], stride, ncols, fp[m, 0, j],
                                              fp[m, 1, j], fp[m, 2, j], n, sf, s0 + j * nz)


# --------------------------------------------------------------------------------------
# The entry points.

def project(S, extent, g, col_dir, source_xy, source_z, sdd, sod, pitch, model, fov_r2, x0, y0, z0,
            voxel_width, voxel_height, pixel_width, pixel_height, center_col, center_row,
            row_factor, dist_sod, iy0, accumulate):
    """Forward projection into g (na, nrows, ncols) float32 (added to it if
    ``accumulate``) from S, extent = volume_z_columns(f, iy0, iy0 + ny) ((ny, nx, nz)
    float32, the volume's rows from ``iy0``), every view with direct rows (:func:`all_direct`): groups of
    views (:func:`direct_group`, :func:`_project_direct_views`) on all threads
    (:func:`leap.kernels.cpu.threads.run`). Arguments as for
    :func:`leap.kernels.cpu.axial.project` (no focus offsets, slice weights or stretch:
    direct rows have none)."""
    na = g.shape[0]
    size = direct_group(na, numba.get_num_threads(), S.nbytes)
    threads.run(_project_groups, S, extent, g, col_dir, source_xy, source_z, sdd, sod, pitch, model,
                fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                center_col, center_row, row_factor, dist_sod, iy0, accumulate, size,
                items=(na + size - 1) // size)


@numba.njit(**FAST_JIT)
def _project_groups(S, extent, g, col_dir, source_xy, source_z, sdd, sod, pitch, model, fov_r2, x0,
                    y0, z0, voxel_width, voxel_height, pixel_width, pixel_height, center_col,
                    center_row, row_factor, dist_sod, iy0, accumulate, size, start, step):
    """The groups of ``size`` views ``start, start + step, …`` of :func:`project`."""
    na, nrows, ncols = g.shape
    acc = np.empty((size, GUARD_LO + ncols + GUARD_HI, column_length(nrows, 8)),
                   dtype=np.float64)
    fp = np.empty((3, S.shape[1]), dtype=np.float64)
    for grp in range(start, (na + size - 1) // size, step):
        a0 = grp * size
        _project_direct_views(S, extent, g, acc, fp, a0, min(na, a0 + size), col_dir, source_xy,
                              source_z, sdd, sod, pitch, model, fov_r2, x0, y0, z0,
                              voxel_width, voxel_height, pixel_width, pixel_height,
                              center_col, center_row, row_factor, dist_sod, iy0,
                              accumulate)


@numba.njit(**INLINE)
def _backproject_tile(G, slab, nx, iy0, ix0, col_dir, source_xy, source_z, sdd, sod, pitch,
                      model, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                      pixel_height, center_col, center_row, dist_sod):
    """All views into a tile of voxel columns (``slab`` as for
    :func:`leap.kernels.cpu.axial.backproject`), direct rows: runs of up to
    PASS_VIEWS views with the same row shift go through :func:`_gather_direct_views`
    together (a shift change ends a run)."""
    ty, tx, nz = slab.shape
    na, L, stride = G.shape
    # Rows past the detector's are zero in G (backproject).
    nrows = stride - 1
    slab[:, :, :] = 0.0
    lo, hi, inside = tile_fov_ranges(ty, tx, nx, iy0, ix0, x0, y0, voxel_width, fov_r2)
    if not inside:
        return
    fp = np.empty((PASS_VIEWS, 3, tx), dtype=np.float64)
    off = np.empty((PASS_VIEWS, tx), dtype=np.intp)
    tw = np.empty((PASS_VIEWS, 2, tx), dtype=np.float64)
    wide = np.empty((PASS_VIEWS, tx), dtype=np.bool_)
    views = np.empty(PASS_VIEWS, dtype=np.intp)
    # int64 from the start: a bare 0 is typed as a literal first, and each literal and
    # int64 mix of the arguments compiled _gather_direct_views once more.
    count = np.int64(0)
    group_shift = np.int64(0)
    for a in range(na):
        A, B, _ = row_mapping(z0, voxel_height, source_z[a], 1.0, sdd[a], False,
                              pixel_height, center_row[a])
        shift = direct_shift(False, A, B)[1]
        k0, k1 = direct_slices(shift, nz, nrows)
        if k0 >= k1:
            continue
        if count > 0 and shift != group_shift:
            _gather_direct_views(G, slab, fp, off, tw, wide, views, count, lo, hi, iy0, ix0,
                                 group_shift, col_dir, source_xy, sdd, sod, pitch, model, x0,
                                 y0, voxel_width, pixel_width, center_col, dist_sod)
            count = 0
        views[count] = a
        count += 1
        group_shift = shift
        if count == PASS_VIEWS:
            _gather_direct_views(G, slab, fp, off, tw, wide, views, count, lo, hi, iy0, ix0,
                                 group_shift, col_dir, source_xy, sdd, sod, pitch, model, x0,
                                 y0, voxel_width, pixel_width, center_col, dist_sod)
            count = 0
    if count > 0:
        _gather_direct_views(G, slab, fp, off, tw, wide, views, count, lo, hi, iy0, ix0,
                             group_shift, col_dir, source_xy, sdd, sod, pitch, model, x0, y0,
                             voxel_width, pixel_width, center_col, dist_sod)


def backproject(G, f, col_dir, source_xy, source_z, sdd, sod, pitch, model, fov_r2, x0, y0,
                z0, voxel_width, voxel_height, pixel_width, pixel_height, center_col,
                center_row, dist_sod):
    """Matched back-projection into f (nz, ny, nx) float32 (overwritten) from G =
    projection_row_values(g), (na, GUARD_LO + ncols + GUARD_HI, column_length(nrows, 4))
    float32, whose rows past the detector's are zero; every view with direct rows.
    Square tiles of voxel columns (:func:`~leap.kernels.cpu.axial.tile_edge`) on all
    threads (:func:`leap.kernels.cpu.threads.run`). Arguments as for :func:`project`."""
    nz, ny, nx = f.shape
    t = tile_edge(nz, ny, nx, numba.get_num_threads())
    threads.run(_backproject_tiles, G, f, col_dir, source_xy, source_z, sdd, sod, pitch,
                model, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                pixel_height, center_col, center_row, dist_sod, t,
                items=((ny + t - 1) // t) * ((nx + t - 1) // t))


@numba.njit(**FAST_JIT)
def _backproject_tiles(G, f, col_dir, source_xy, source_z, sdd, sod, pitch, model, fov_r2, x0,
                       y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                       center_col, center_row, dist_sod, t, start, step):
    """The tiles (edge ``t``) ``start, start + step, …`` of :func:`backproject`."""
    nz, ny, nx = f.shape
    nty = (ny + t - 1) // t
    ntx = (nx + t - 1) // t
    block = np.empty(t * t * nz, dtype=np.float64)
    for tile in range(start, nty * ntx, step):
        iy0 = (tile // ntx) * t
        ix0 = (tile % ntx) * t
        slab = block[:min(t, ny - iy0) * min(t, nx - ix0) * nz].reshape(
            (min(t, ny - iy0), min(t, nx - ix0), nz))
        _backproject_tile(G, slab, nx, iy0, ix0, col_dir, source_xy, source_z, sdd, sod,
                          pitch, model, fov_r2, x0, y0, z0, voxel_width, voxel_height,
                          pixel_width, pixel_height, center_col, center_row, dist_sod)
        store_tile(f, slab, iy0, ix0)
