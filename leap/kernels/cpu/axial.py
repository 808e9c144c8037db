"""CPU projector and matched back-projector for the axial family.

Parallel, fan and cone beams (flat/curved, tau, helical) share one pair of kernels.

Per-column pieces (cumulative sums, interpolation, two-tap footprints, the
difference loops) are in :mod:`leap.kernels.cpu.columns`; the single-slice parallel
case in :mod:`leap.kernels.cpu.axial_slice`; the direct-row passes (parallel and fan
beams whose slices lie on detector rows, which read values rather than cumulative sums)
in :mod:`leap.kernels.cpu.axial_direct`. This module holds the entry points
(:func:`project`, :func:`backproject`), the cone family's per-view and per-tile passes
(each a loop over views or tiles that :mod:`leap.kernels.cpu.threads` shares out) and the
tiling (:func:`tile_edge`).

Slices on rows ("direct" rows): when every view has direct rows
(:func:`~leap.kernels.cpu.axial_direct.all_direct`), parallel and fan beams run on the
voxel and pixel values themselves, through the entry points of
:mod:`leap.kernels.cpu.axial_direct` (which imports :func:`tile_edge` from here). They
are kernels of their own rather than a flag of these, so that each geometry family
compiles only its own code in a fresh environment.

Vertical modular modules: every view has its own source-to-detector distance and
detector centre (the per-view ``sdd``, ``center_col``, ``center_row`` arrays), and
``stretch`` replaces the per-row ray stretch by the modular model's per-voxel one,
√(1 + (z − z_s)²/ρ²) (:mod:`leap.kernels.cpu.voxel_weights`): the projector re-weights
the column's values per view, the back-projector weights the differences. The result
is the general modular kernel's, a voxel column at a time.

Weighted columns (the stretch, FBP's slice weights): the projector cannot read a
view-independent running sum, and a running sum per column and view (a chain of
dependent additions) was the modular projector's costliest pass. Rows at most two
voxels long (the usual magnification) with footprints up to two pixels wide integrate
the weighted values directly, each row over the two or three voxels it meets
(:func:`leap.kernels.cpu.columns.add_integrals`); longer rows and wider footprints
interpolate the running sum. 128³ bench problem (2 threads, alternated): modular
projection 0.458-0.465 → 0.322-0.333 s, 256³ 2.93-3.01 → 2.25-2.30 s; the rows' sums
change by their rounding only (the 24 outputs of a round trip, float32, bit for bit).

Parallelisation (:mod:`leap.kernels.cpu.threads`: each thread calls the kernel for its
share of the views or tiles) never lets two threads write one element: the projector
runs one view per thread at a time (accumulating into a private one-view buffer; direct-row views two per
thread, a block of volume rows into each in turn), the back-projector one
square tile of voxel columns per thread (accumulating into a private tile buffer that
stays in L2, looping over views outside the voxel loop so per-view constants are
computed once per tile, direct-row views four at a time; blocks of ROW_BLOCK rows in the
single-slice case).

Both kernels call the same footprint functions on the same inputs (x, y, view
constants), so they weight every (voxel, pixel) pair identically: exact transposes.

"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..footprints import CURVED, FLAT
from ._jit import (FAST_JIT, axial_footprint, column_range,
                   fbp_distance_weight, overlap, parallel_view_constants, row_mapping)
from .columns import (CELL_PAD, GUARD_HI, GUARD_LO, INLINE, add_cumulative_differences,
                      add_differences, add_integrals, column_length, combine_columns,
                      cumulative_at, fov_ix_range, load_tile, prefetch_column, scratch_vectors,
                      store_tile, three_tap, tile_fov_ranges, two_pixels, two_tap)
from .curved_rows import curve_row
from .voxel_weights import (inverse_rho2, prefix_sum, squared_heights,
                            weighted_increments)


# --------------------------------------------------------------------------------------
# Footprints a row of voxel columns at a time.

@numba.njit(**INLINE)
def _footprint_row(fp, lo, hi, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
                   pitch, model, voxel_width, pixel_width, center_col, ox, oy, dist_sod,
                   distance_weight):
    """The loop of :func:`row_footprints` for one ``model`` and ``distance_weight``."""
    c_lo_row, c_hi_row, weight_row, dist_row, dz_row = fp[0], fp[1], fp[2], fp[3], fp[4]
    for ix in range(lo, hi):
        x = x0 + ix * voxel_width
        c_lo, c_hi, weight, dist, dz = axial_footprint(
            model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
            voxel_width, pixel_width, center_col, ox, oy)
        if distance_weight:
            weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
        j = np.uintp(ix)
        c_lo_row[j] = c_lo
        c_hi_row[j] = c_hi
        weight_row[j] = weight
        dist_row[j] = dist
        dz_row[j] = dz


@numba.njit(**INLINE)
def row_footprints(fp, lo, hi, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
                   pitch, model, voxel_width, pixel_width, center_col, ox, oy, dist_sod):
    """``fp[:, ix] = (c_lo, c_hi, weight, dist, dz)`` of the voxel columns ``lo <= ix < hi``
    of the row at y, one view (:func:`~leap.kernels.cpu._jit.axial_footprint`, the weight
    times FBP's distance weight when ``dist_sod > 0``); fp : (5, >= hi) float64.

    As for the direct-row kernels (``axial_direct.direct_footprints``): in a loop of their
    own the footprints of neighbouring columns overlap (divisions, square roots) instead of
    each waiting behind the previous column's interpolations, and for the flat cone beam
    without FBP weight or focal offsets (the model a constant here) LLVM vectorises the
    loop. Cone projection 0.47 → 0.42 s at 128³ (one thread); bit for bit the same values.
    Curved detectors without focal offsets take the flat loop too, at unit distance, and
    turn its slopes into angles with a vectorised arctangent
    (:mod:`leap.kernels.cpu.curved_rows`): 128³ curved-detector back-projection 0.31 →
    0.28 s, projection 0.32 → 0.30 s (one thread, alternated).
    """
    curved = model == CURVED
    if ox == 0.0 and oy == 0.0 and (curved or (model == FLAT and not dist_sod > 0.0)):
        # Curved detectors: the flat footprints at unit distance (pixel width sdd, centre
        # 0: their columns are the slopes), then their angles (curved_rows). One call
        # site for both: each copy of this loop costs the kernels' first compilation.
        _footprint_row(fp, lo, hi, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd,
                       sod, pitch, np.int64(FLAT), voxel_width, sdd if curved else pixel_width,
                       0.0 if curved else center_col, 0.0, 0.0, dist_sod, False)
        if curved:
            curve_row(fp, lo, hi, x0, y, cx, cy, voxel_width, sx, sy,
                      1.0 / math.atan(pixel_width / sdd), center_col, dist_sod)
    else:
        _footprint_row(fp, lo, hi, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd,
                       sod, pitch, model, voxel_width, pixel_width, center_col, ox, oy,
                       dist_sod, dist_sod > 0.0)


# --------------------------------------------------------------------------------------
# General axial kernels.

@numba.njit(**FAST_JIT)
def project(S, extent, g, col_dir, source_xy, source_z, focus, sdd_views, sod, pitch, model,
            magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
            pixel_height, center_cols, center_rows, row_factor, dist_sod, slice_w, stretch,
            iy0, accumulate, start, step):
    """Forward projection into g from S, extent = volume_z_cumsum(f, iy0, iy0 + ny) ((ny,
    nx, nz + 1) float32, (ny, nx, 2) int32: the volume's rows from ``iy0``; ``accumulate``
    adds them to g instead of overwriting it, :func:`leap.kernels.cpu.launch.project`), the
    views ``start, start + step, …`` (:func:`leap.kernels.cpu.threads.run`: one view at a
    time per thread (parallel and fan beams whose slices lie on rows:
    :func:`leap.kernels.cpu.axial_direct.project`; single-slice parallel beams:
    :func:`leap.kernels.cpu.axial_slice.project`).

    g : (na, nrows, ncols) float32, overwritten.
    col_dir, source_xy : (na, 2) float64; source_z, sdd_views : (na,) float64, mm; focus :
    (na, 2) float64, the curved detector's focus offsets along the column axis and the
    rays, mm (zeros without a flying focal spot; :class:`~leap.geometry.axial.AxialViews`);
    center_cols, center_rows : (na,) float64, fractional pixels (per view: vertical
    modular modules have their own). row_factor : (nrows,) float64. ``stretch``: the
    modular model's per-voxel ray stretch instead of row_factor's per-row one.
    ``sod`` and ``pitch`` (mm, mm/rad) are read by the cone-parallel model only.
    ``dist_sod`` and ``slice_w`` (na, nz) (0 and None turn them off; ``slice_w`` an empty
    (0, 0) array with ``stretch`` alone) are the transposes of :func:`backproject`'s FBP
    weights. With ``slice_w`` None Numba compiles the kernel without the within-column
    weighting (:func:`leap.kernels.cpu.launch._column_weights`).

    Each view: empty voxel columns are skipped and only the rows that a column's nonzero
    voxels reach (and one row on either side: the rows beyond get exact zeros) are computed;
    each column asks for the cumulative sums of the column after next ahead of use
    (:func:`~leap.kernels.cpu.columns.prefetch_column`). The view's pixels are summed in
    ``acc`` (column, row), so a voxel column's rows are contiguous, E holds a column's
    cumulative sums at the row edges. The weights (module notes) take ``W`` for the column's
    weighted values (CELL_PAD zeros either side) and ``cumw`` for their running sum where a
    row is longer than two voxels or a footprint wider than two pixels; the stretch ``D2``
    and ``Q`` (this column's) and ``Qn`` (the next column's, its first ``taken`` roots taken
    in this column's row loop, ``ready`` the column they belong to:
    :mod:`leap.kernels.cpu.voxel_weights`); ``ones`` where a weight does not apply.
    One compiled function for the views' loop and body: a function per view was
    compiled and optimised once more inside the loop's (1.4 s of a fresh environment's
    first projection).
    """
    na, nrows, ncols = g.shape
    ny, nx, nz1 = S.shape
    nz = nz1 - 1
    acc = np.empty((GUARD_LO + ncols + GUARD_HI, column_length(nrows, 8)), dtype=np.float64)
    nq = max(nz, nrows + 1)
    E, cumw, W, D2, Q, Qn = scratch_vectors(nrows + 1, nz + 1, nz + 2 * CELL_PAD, nq, nq, nq)
    ones = np.ones(nz, dtype=np.float64)
    if not stretch:
        Q = ones                 # the slice weights alone
    stride = acc.shape[1]
    fp = np.empty((5, nx), dtype=np.float64)
    # Flat arrays and offsets, not a view per column (columns module notes).
    Sf = S.reshape(-1)
    accf = acc.reshape(-1)
    for a in range(start, na, step):
        ga = g[a]
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        sx = source_xy[a, 0]
        sy = source_xy[a, 1]
        zs = source_z[a]
        ox = focus[a, 0]
        oy = focus[a, 1]
        sdd = sdd_views[a]
        center_col = center_cols[a]
        center_row = center_rows[a]
        for i in range(accf.size):
            accf[i] = 0.0
        if slice_w is not None:
            sw = slice_w[a] if slice_w.shape[0] > 0 else ones
            if stretch:
                squared_heights(z0, voxel_height, zs, D2)
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
        A, B, inv_b = row_mapping(z0, voxel_height, zs, 1.0, sdd, magnify_z, pixel_height,
                                  center_row)
        for iy in range(ny):
            y = y0 + (iy0 + iy) * voxel_width
            lo, hi = fov_ix_range(y, x0, voxel_width, nx, fov_r2)
            row_footprints(fp, lo, hi, x0, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
                           sdd, sod, pitch, model, voxel_width, pixel_width, center_col, ox,
                           oy, dist_sod)
            ready = -1
            taken = 0
            ir_next = 0.0
            for ix in range(lo, hi):
                k_first = extent[iy, ix, 0]
                k_last = extent[iy, ix, 1]
                dist = fp[3, ix]
                if k_last < k_first or dist <= 0.0:
                    continue
                x = x0 + ix * voxel_width
                c_lo, c_hi, weight, dz = fp[0, ix], fp[1, ix], fp[2, ix], fp[4, ix]
                cum = (iy * nx + ix) * nz1
                prefetch_column(Sf, cum + 2 * nz1, nz1)      # the column after next
                if magnify_z:
                    A, B, inv_b = row_mapping(z0, voxel_height, zs + dz, dist, sdd, magnify_z,
                                              pixel_height, center_row)
                # Rows outside [A + k_first·B, A + (k_last + 1)·B] (plus a row's margin, so
                # that rounding cannot drop a nonzero difference) read constant cumulative
                # sums: their differences are exactly zero.
                fj0 = max(0.0, np.floor(A + 0.5), np.floor(A + k_first * B + 0.5) - 1.0)
                fj1 = min(nrows - 1.0, np.floor(A + nz * B + 0.5),
                          np.floor(A + (k_last + 1) * B + 0.5) + 1.0)
                if fj0 > fj1:
                    continue
                j0 = int(fj0)
                j1 = int(fj1)
                # E[j] = cumulative integral of the column at row edge j - 1/2, i.e. at
                # voxel coordinate (j - 1/2 - A) / B; row j gets B·(E[j + 1] - E[j]).
                # Two-pixel footprints add the differences as they interpolate, wider
                # ones interpolate into E once for all their pixels. (Each call is written
                # for both sources: Numba does not prune ``slice_w is None`` before it
                # types a variable that would hold either, float64 cumw or float32 Sf.)
                narrow = two_pixels(c_lo, c_hi)
                # With weights, rows at most two voxels long (inv_b <= 2) take their
                # integrals from the weighted values themselves (add_integrals): no
                # running sum of the column (the modular projector's costliest pass).
                direct = narrow and inv_b <= 2.0
                if slice_w is not None:
                    if ready != ix:
                        taken = 0        # none of this column's stretch taken yet
                        ir = inverse_rho2(x, y, sx, sy) if stretch else 0.0
                    else:
                        ir = ir_next     # the column before computed it
                    # The stretch's roots: the first ``taken`` from the loop of the
                    # column before, the rest in this pass (voxel_weights notes).
                    weighted_increments(Sf, cum, nz, sw, Q, W, CELL_PAD,
                                        taken if stretch else nz, D2, ir)
                    if not direct:
                        prefix_sum(W, CELL_PAD, nz, cumw)
                    # The next column's stretch, taken in this column's loop.
                    ahead = stretch and direct and ix + 1 < hi
                    ir_next = (inverse_rho2(x0 + (ix + 1) * voxel_width, y, sx, sy) if ahead
                               else 0.0)
                if narrow and (direct or slice_w is None):
                    fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
                    a0 = (int(fl) + GUARD_LO) * stride
                    if slice_w is not None:
                        done = add_integrals(
                            W, nz, -(A + 0.5) * inv_b, inv_b, j0, j1 + 1, accf, a0,
                            o0 * weight * B, a0 + stride, o1 * weight * B, (D2, ir_next, Qn),
                            nz if ahead else 0)
                        if ahead:
                            Q, Qn = Qn, Q
                            ready = ix + 1
                            taken = done
                    else:
                        add_cumulative_differences(Sf, cum, nz, -(A + 0.5) * inv_b, inv_b, j0,
                                                   j1 + 1, accf, a0, o0 * weight * B,
                                                   a0 + stride, o1 * weight * B)
                else:
                    if slice_w is not None:
                        cumulative_at(cumw, 0, nz, -(A + 0.5) * inv_b, inv_b, j0, j1 + 1, E)
                    else:
                        cumulative_at(Sf, cum, nz, -(A + 0.5) * inv_b, inv_b, j0, j1 + 1, E)
                    i0, i1 = column_range(c_lo, c_hi, ncols)
                    for i in range(i0, i1 + 1):
                        w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight * B
                        if w == 0.0:
                            continue
                        add_differences(E, j0, j1 + 1, w, accf, (i + GUARD_LO) * stride)
        for j in range(nrows):
            rf = row_factor[j]
            if accumulate:
                for i in range(ncols):
                    ga[j, i] += acc[i + GUARD_LO, j] * rf
            else:
                for i in range(ncols):
                    ga[j, i] = acc[i + GUARD_LO, j] * rf



#: Voxels (float64 accumulators) per back-projection tile: 512 KiB, so that a tile's
#: accumulators stay in a core's L2 cache while all views are added to them.
TILE_VOXELS = 1 << 16


@numba.njit(**FAST_JIT)
def tile_edge(nz, ny, nx, threads):
    """Edge (voxel columns) of the square tiles the back-projectors work on: the largest
    with ``edge² · nz <= TILE_VOXELS`` and at least four tiles per thread (so that
    threads finish together), between 2 and 64."""
    cache = math.sqrt(TILE_VOXELS / max(nz, 1))
    balance = math.sqrt(ny * nx / (4.0 * max(threads, 1)))
    return max(2, min(64, int(min(cache, balance))))


@numba.njit(**FAST_JIT)
def backproject(G, f, col_dir, source_xy, source_z, focus, sdd, sod, pitch, model, magnify_z,
                fov_r2, x0, y0, z0, voxel_width, voxel_height,
                pixel_width, pixel_height, center_col, center_row, dist_sod, slice_w,
                stretch, accumulate, threads, start, step):
    """Matched back-projection into f from G = projection_row_cumsum(g), (na, GUARD_LO +
    ncols + GUARD_HI, nrows + 1) float32. f : (nz, ny, nx) float32, overwritten, or
    added to with ``accumulate`` (a back-projection summed over chunks of views).
    Other arguments as for :func:`project`. Square tiles of voxel columns
    (:func:`tile_edge`), tiles ``start, start + step, …`` (:func:`leap.kernels.cpu.threads.run`)
    (parallel and fan beams whose slices lie on rows:
    :func:`leap.kernels.cpu.axial_direct.backproject`; single-slice parallel beams:
    :func:`leap.kernels.cpu.axial_slice.backproject_slice`).
    FBP weights (0 and None turn them off; ``slice_w`` an empty (0, 0) array with
    ``stretch`` alone, as for :func:`project`): ``dist_sod`` multiplies view weights by
    sod/(sod − x·θ); ``slice_w`` (na, nz) weights voxel k of view a (magnified rows only,
    i.e. cone beams). ``threads``: the number of threads of the
    call (sets the tile size, :func:`tile_edge`).

    Per tile (``slab`` (ty, tx, nz) float64 holds its rows ``iy0 .. iy0 + ty`` and
    columns ``ix0 .. ix0 + tx``), views are the outer loop, so per-view constants are
    computed once per tile, and each view's cumulative sums are read only in the few
    detector columns the tile covers (a whole row of voxel columns reads nearly all of
    them, for every row: at 256³ the whole of G streamed from memory 256 times).
    Gc : (nrows + 1,), D2 : (nz,) float64 scratch. ``stretch`` weights voxel k by its
    own out-of-plane ray stretch (:mod:`leap.kernels.cpu.voxel_weights`: its root taken
    in the interpolation loop; ``ones`` where there are no slice weights, and with the
    slice weights alone the stretch √(1 + D2·0) is exactly 1). One
    compiled function for the tiles' loop and body (a function per tile was compiled
    and optimised once more inside the loop's).
    """
    nz, ny, nx = f.shape
    na, L, stride = G.shape
    ncols = L - GUARD_LO - GUARD_HI
    nrows = stride - 1
    t = tile_edge(nz, ny, nx, threads)
    nty = (ny + t - 1) // t
    ntx = (nx + t - 1) // t
    # The tile's voxel columns, (y, x, z) so a column's voxels are contiguous.
    block = np.empty(t * t * nz, dtype=np.float64)
    _, Gc, D2, _, _, _ = scratch_vectors(0, nrows + 1, nz, 0, 0, 0)
    ones = np.ones(nz, dtype=np.float64)
    fp = np.empty((5, nx), dtype=np.float64)
    # Flat arrays and offsets, not a view per column (columns module notes).
    Gf = G.reshape(-1)
    for tile in range(start, nty * ntx, step):
        iy0 = (tile // ntx) * t
        ix0 = (tile % ntx) * t
        ty = min(t, ny - iy0)
        tx = min(t, nx - ix0)
        slab = block[:ty * tx * nz].reshape((ty, tx, nz))
        # The tile's columns inside the field of view, row by row: [lo[r], hi[r]).
        lo, hi, inside = tile_fov_ranges(ty, tx, nx, iy0, ix0, x0, y0, voxel_width, fov_r2)
        sf = slab.reshape(-1)
        if accumulate:
            load_tile(f, slab, iy0, ix0)
        else:
            for i in range(sf.size):
                sf[i] = 0.0
        if not inside:
            na_tile = 0
        else:
            na_tile = na
            for a in range(na_tile):
                zs = source_z[a]
                sdd_a = sdd[a]
                crow = center_row[a]
                A, B, inv_b = row_mapping(z0, voxel_height, zs, 1.0, sdd_a, magnify_z, pixel_height,
                                          crow)
                cx = col_dir[a, 0]
                cy = col_dir[a, 1]
                sx = source_xy[a, 0]
                sy = source_xy[a, 1]
                ox = focus[a, 0]
                oy = focus[a, 1]
                ccol = center_col[a]
                if slice_w is not None:
                    sw = slice_w[a] if slice_w.shape[0] > 0 else ones
                    if stretch:
                        squared_heights(z0, voxel_height, zs, D2)
                cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                                       pixel_width)
                ga = a * L * stride
                for r in range(ty):
                    y = y0 + (iy0 + r) * voxel_width
                    row_footprints(fp, lo[r], hi[r], x0, y, cx, cy, sx, sy, cxp, cyp, half_p,
                                   par_weight, sdd_a, sod, pitch, model, voxel_width,
                                   pixel_width, ccol, ox, oy, dist_sod)
                    for ix in range(lo[r], hi[r]):
                        dist = fp[3, ix]
                        if dist <= 0.0:
                            continue
                        c_lo, c_hi, weight, dz = fp[0, ix], fp[1, ix], fp[2, ix], fp[4, ix]
                        x = x0 + ix * voxel_width
                        col = (r * tx + ix - ix0) * nz
                        if magnify_z:
                            A, B, inv_b = row_mapping(z0, voxel_height, zs + dz, dist, sdd_a,
                                                      magnify_z, pixel_height, crow)
                        # Voxel boundaries k = 0..nz sit at row coordinate A + kB (cumulative-sum
                        # index A + kB + 1/2); below row -0.5 or above nrows - 0.5 the cumulative
                        # sums are constant, so only boundaries in between contribute differences.
                        fk0 = max(np.floor((-0.5 - A) * inv_b), 0.0)
                        fk1 = min(np.ceil((nrows - 0.5 - A) * inv_b), float(nz))
                        if fk0 >= fk1:
                            continue
                        kb0 = int(fk0)
                        kb1 = int(fk1)
                        ir = inverse_rho2(x, y, sx, sy) if stretch else 0.0
                        # Footprints up to two pixels wide: two or three taps, their
                        # columns combined and interpolated once (three_tap is two_tap up
                        # to one pixel; one path for one tap too: a branch reading a
                        # footprint inside one pixel from G directly made cone
                        # back-projection slower, 0.95-0.98x the time without it). Wider
                        # ones: one pass per pixel through the same code, each pass one
                        # column: one copy of the interpolation and difference loops in
                        # the kernel (a second one was 0.6 s of its first compilation).
                        narrow = c_hi - c_lo <= 2.0
                        i0, i1 = (0, 0) if narrow else column_range(c_lo, c_hi, ncols)
                        for i in range(i0, i1 + 1):
                            if narrow:
                                fl, o0, o1, o2 = three_tap(c_lo, c_hi, ncols)
                                c0 = ga + (int(fl) + GUARD_LO) * stride
                                w0 = o0 * weight
                                w1 = o1 * weight
                                w2 = o2 * weight
                            else:
                                w0 = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                                if w0 == 0.0:
                                    continue
                                c0 = ga + (i + GUARD_LO) * stride
                                w1 = 0.0
                                w2 = 0.0
                            combine_columns(Gf, c0, c0 + stride, c0 + 2 * stride, w0, w1, w2,
                                            nrows, A + 0.5, B, kb0, kb1, Gc)
                            if slice_w is not None and stretch:
                                add_cumulative_differences(Gc, 0, nrows, A + 0.5, B, kb0, kb1,
                                                           sf, col, (D2, ir, sw), None, 0.0)
                            elif slice_w is not None:
                                # Slice weights alone (helical FBP): no root of 1 a voxel.
                                add_cumulative_differences(Gc, 0, nrows, A + 0.5, B, kb0, kb1,
                                                           sf, col, sw, None, 0.0)
                            else:
                                add_cumulative_differences(Gc, 0, nrows, A + 0.5, B, kb0, kb1,
                                                           sf, col, 1.0, None, 0.0)
        store_tile(f, slab, iy0, ix0)
