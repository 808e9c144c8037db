"""CUDA projector and matched back-projector for the axial family (parallel, fan, cone).

The same model and the same cumulative-sum formulation as :mod:`leap.kernels.cpu.axial`
(read its docstring first): the projector interpolates z-cumulative sums of the volume
per voxel column, the back-projector row-cumulative sums of the projections per
detector column, at the row / voxel boundaries of the column footprint. Only the data
layouts and the parallelisation differ, chosen for coalesced GPU access:

* ``S`` (nz + 1, ny, nx): z-cumulative sums, so neighbouring threads (ix) read
  neighbouring addresses; ``G`` (na, nrows + 1, ncols): row-cumulative sums of the
  row-factor-weighted projections, no guard columns (taps off the detector are
  skipped instead).
* Projector: scatter, one thread per (view, voxel column), adding into the
  projections with ``cuda.atomic.add`` (float32). The row factor is folded into each
  add instead of applied at the end; the sums run in another order than on the CPU,
  so results agree to float32 rounding (≈1e-6 relative), not bit for bit.
* Back-projector: gather, one thread per (voxel column, block of ``KBLOCK`` slices),
  looping over views; consecutive voxels share their boundary values, float64
  accumulators, no atomics.

Both kernels evaluate the footprint (``axial_column_footprint`` /
``parallel_column_footprint`` from :mod:`leap.kernels.footprints`, compiled for the
GPU) on identical inputs, so they weight every (voxel, pixel) pair identically and
remain exact transposes of each other.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64

from ..footprints import PARALLEL
from ._jit import (BLOCK_2D, BLOCK_3D, KERNEL, THREADS_1D, axial_column_footprint, blocks,
                   column_range, device, direct_shift, interp_cumulative, overlap,
                   parallel_column_footprint, parallel_view_constants, row_mapping)

#: Slices per back-projector thread (boundary values shared between neighbours).
KBLOCK = 8


# ------------------------------------------------------------------ device helpers







@device
def _footprint(model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd,
               voxel_width, pixel_width, center_col):
    if model == PARALLEL:
        c_lo, c_hi = parallel_column_footprint(x, y, cxp, cyp, half_p, center_col)
        return c_lo, c_hi, par_weight, 1.0
    return axial_column_footprint(x, y, cx, cy, sx, sy, sdd, model, voxel_width,
                                  pixel_width, center_col)


# ------------------------------------------------------------------ cumulative sums

@cuda.jit(**KERNEL)
def volume_z_cumsum(f, S):
    """S[k, iy, ix] = Σ_{k' < k} f[k', iy, ix]; f (nz, ny, nx), S (nz + 1, ny, nx)."""
    ix, iy = cuda.grid(2)
    nz, ny, nx = f.shape
    if ix >= nx or iy >= ny:
        return
    run = 0.0
    S[0, iy, ix] = 0.0
    for k in range(nz):
        run += f[k, iy, ix]
        S[k + 1, iy, ix] = run


@cuda.jit(**KERNEL)
def projection_row_cumsum(g, row_factor, G):
    """G[a, j, i] = Σ_{j' < j} g[a, j', i]·w[j']; g (na, nrows, ncols), G (na, nrows + 1, ncols)."""
    i, a = cuda.grid(2)
    na, nrows, ncols = g.shape
    if i >= ncols or a >= na:
        return
    run = 0.0
    G[a, 0, i] = 0.0
    for j in range(nrows):
        run += g[a, j, i] * row_factor[j]
        G[a, j + 1, i] = run


@cuda.jit(**KERNEL)
def fill(x, value):
    """x[...] = value for a C-contiguous 3-D array."""
    i = cuda.grid(1)
    n0, n1, n2 = x.shape
    if i >= n0 * n1 * n2:
        return
    c = i % n2
    r = i // n2
    x[r // n1, r % n1, c] = value


# ------------------------------------------------------------------ projector

@cuda.jit(**KERNEL)
def _project(S, g, col_dir, source_xy, source_z, row_factor, slice_w, weighted, sdd, model,
             magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
             pixel_height, center_col, center_row, dist_sod):
    """Add the projection of S's volume into g (na, nrows, ncols): thread (ix, iy, view)."""
    ix, iy, a = cuda.grid(3)
    nz1, ny, nx = S.shape
    na, nrows, ncols = g.shape
    if ix >= nx or iy >= ny or a >= na:
        return
    nz = nz1 - 1
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    if not x * x + y * y <= fov_r2:
        return
    cx = col_dir[a, 0]
    cy = col_dir[a, 1]
    zs = source_z[a]
    cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    c_lo, c_hi, weight, dist = _footprint(model, x, y, cx, cy, source_xy[a, 0],
                                          source_xy[a, 1], cxp, cyp, half_p, par_weight,
                                          sdd, voxel_width, pixel_width, center_col)
    if dist <= 0.0:
        return
    if dist_sod > 0.0:
        weight *= dist_sod / (dist_sod - (x * cy - y * cx))
    i0, i1 = column_range(c_lo, c_hi, ncols)
    if i0 > i1:
        return
    A, B = row_mapping(z0, voxel_height, zs, 1.0, sdd, magnify_z, pixel_height, center_row)
    direct, shift = direct_shift(magnify_z, A, B)
    if direct:
        k0 = max(0, -shift)
        k1 = min(nz, nrows - shift)
        for i in range(i0, i1 + 1):
            w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
            if w == 0.0:
                continue
            for k in range(k0, k1):
                v = float64(S[k + 1, iy, ix]) - float64(S[k, iy, ix])
                j = k + shift
                cuda.atomic.add(g, (a, j, i), float32(w * v * row_factor[j]))
        return
    if magnify_z:
        A, B = row_mapping(z0, voxel_height, zs, dist, sdd, magnify_z, pixel_height,
                            center_row)
    fj0 = max(0.0, math.floor(A + 0.5))
    fj1 = min(nrows - 1.0, math.floor(A + nz * B + 0.5))
    if fj0 > fj1:
        return
    j0 = int(fj0)
    j1 = int(fj1)
    inv_b = 1.0 / B
    o = -(A + 0.5) * inv_b
    cum = S[:, iy, ix]
    wB = weight * B
    # E(t) = cumulative integral of the column at row edge t - 1/2; row j gets
    # B·(E(j + 1) − E(j)) in every column tap. Helical slice weights: the cumulative
    # sum of the weighted column, built as the positions advance (q grows with t).
    kc = 0
    run = 0.0
    e_prev = 0.0
    for t in range(j0, j1 + 2):
        q = o + t * inv_b
        if weighted:
            if q <= 0.0:
                e = 0.0
            else:
                kq = nz if q >= nz else int(q)
                while kc < kq:
                    run += slice_w[a, kc] * (float64(cum[kc + 1]) - float64(cum[kc]))
                    kc += 1
                if q >= nz:
                    e = run
                else:
                    d = slice_w[a, kc] * (float64(cum[kc + 1]) - float64(cum[kc]))
                    e = run + (q - kc) * d
        else:
            e = interp_cumulative(cum, nz, q)
        if t > j0:
            j = t - 1
            r = (e - e_prev) * row_factor[j]
            if r != 0.0:
                for i in range(i0, i1 + 1):
                    w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * wB
                    if w != 0.0:
                        cuda.atomic.add(g, (a, j, i), float32(w * r))
        e_prev = e


# ------------------------------------------------------------------ back-projector

@cuda.jit(**KERNEL)
def _backproject(G, f, col_dir, source_xy, source_z, slice_w, weighted, sdd, model,
                 magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                 pixel_height, center_col, center_row, dist_sod, accumulate):
    """Back-project G's views into f (nz, ny, nx): thread (ix, iy, block of KBLOCK slices)."""
    ix, iy, kb = cuda.grid(3)
    nz, ny, nx = f.shape
    na, nrows1, ncols = G.shape
    nrows = nrows1 - 1
    ks = kb * KBLOCK
    if ix >= nx or iy >= ny or ks >= nz:
        return
    ke = min(ks + KBLOCK, nz)
    acc = cuda.local.array(KBLOCK, float64)
    for m in range(KBLOCK):
        acc[m] = 0.0
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    inside = x * x + y * y <= fov_r2
    for a in range(na if inside else 0):
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        zs = source_z[a]
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                               pixel_width)
        c_lo, c_hi, weight, dist = _footprint(model, x, y, cx, cy, source_xy[a, 0],
                                              source_xy[a, 1], cxp, cyp, half_p,
                                              par_weight, sdd, voxel_width, pixel_width,
                                              center_col)
        if dist <= 0.0:
            continue
        if dist_sod > 0.0:
            weight *= dist_sod / (dist_sod - (x * cy - y * cx))
        i0, i1 = column_range(c_lo, c_hi, ncols)
        if i0 > i1:
            continue
        A, B = row_mapping(z0, voxel_height, zs, 1.0, sdd, magnify_z, pixel_height,
                            center_row)
        direct, shift = direct_shift(magnify_z, A, B)
        if direct:
            k0 = max(ks, -shift)
            k1 = min(ke, nrows - shift)
            for i in range(i0, i1 + 1):
                w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                if w == 0.0:
                    continue
                for k in range(k0, k1):
                    j = k + shift
                    acc[k - ks] += w * (float64(G[a, j + 1, i]) - float64(G[a, j, i]))
            continue
        if magnify_z:
            A, B = row_mapping(z0, voxel_height, zs, dist, sdd, magnify_z, pixel_height,
                                center_row)
        inv_b = 1.0 / B
        kb0 = int(max(math.floor(max((-0.5 - A) * inv_b, -1.0)), float(ks)))
        kb1 = int(min(math.ceil(min((nrows - 0.5 - A) * inv_b, nz + 1.0)), float(ke)))
        if kb0 >= kb1:
            continue
        for i in range(i0, i1 + 1):
            w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
            if w == 0.0:
                continue
            cum = G[a, :, i]
            e_prev = w * interp_cumulative(cum, nrows, A + 0.5 + kb0 * B)
            for k in range(kb0, kb1):
                e = w * interp_cumulative(cum, nrows, A + 0.5 + (k + 1) * B)
                if weighted:
                    acc[k - ks] += slice_w[a, k] * (e - e_prev)
                else:
                    acc[k - ks] += e - e_prev
                e_prev = e
    for k in range(ks, ke):
        if accumulate:
            f[k, iy, ix] += acc[k - ks]
        else:
            f[k, iy, ix] = acc[k - ks]


# ------------------------------------------------------------------ launchers

def _slice_weights(sw, stream):
    """Device (na, nz) float64 slice weights, or a (1, 1) dummy when there are none."""
    if sw is None or sw.size == 0:
        return cuda.to_device(np.zeros((1, 1)), stream=stream), False
    return cuda.to_device(np.ascontiguousarray(sw, dtype=np.float64), stream=stream), True


def _views(v, stream):
    return (cuda.to_device(np.ascontiguousarray(v.col_dir, dtype=np.float64), stream=stream),
            cuda.to_device(np.ascontiguousarray(v.source_xy, dtype=np.float64), stream=stream),
            cuda.to_device(np.ascontiguousarray(v.source_z, dtype=np.float64), stream=stream))


def zero(x, stream):
    n = int(np.prod(x.shape))
    if n:
        fill[blocks(n, THREADS_1D), THREADS_1D, stream](x, np.float32(0.0))


def cumsum_volume(f, S, stream):
    """S ← volume_z_cumsum(f) on the GPU; f (nz, ny, nx), S (nz + 1, ny, nx)."""
    nz, ny, nx = f.shape
    volume_z_cumsum[(blocks(nx, BLOCK_2D[0]), blocks(ny, BLOCK_2D[1])), BLOCK_2D, stream](f, S)


def cumsum_projections(g, row_factor, G, stream):
    """G ← row-cumulative sums of g·row_factor; G (na, nrows + 1, ncols)."""
    na, nrows, ncols = g.shape
    rf = cuda.to_device(np.ascontiguousarray(row_factor, dtype=np.float64), stream=stream)
    projection_row_cumsum[(blocks(ncols, BLOCK_2D[0]), blocks(na, BLOCK_2D[1])), BLOCK_2D,
                          stream](g, rf, G)


def project(S, g, views, p, row_factor, slice_weights, stream, *, accumulate=False):
    """Projection of the volume whose cumulative sums are S into g (both device arrays).

    ``views`` is the geometry's ``AxialViews`` (for g's views), ``p`` a
    :class:`leap.operators.AxialParams`-like object with the scalars (lengths in mm,
    centres in fractional pixels, ``z0`` of S's first slice). ``accumulate`` adds to g
    instead of overwriting it.
    """
    nz1, ny, nx = S.shape
    na = g.shape[0]
    if not accumulate:
        zero(g, stream)
    if na == 0 or nz1 <= 1:
        return
    col_dir, source_xy, source_z = _views(views, stream)
    rf = cuda.to_device(np.ascontiguousarray(row_factor, dtype=np.float64), stream=stream)
    sw, weighted = _slice_weights(slice_weights, stream)
    grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(na, BLOCK_3D[2]))
    _project[grid, BLOCK_3D, stream](
        S, g, col_dir, source_xy, source_z, rf, sw, weighted, float(views.sdd),
        int(views.column_model), bool(views.magnify_z), float(p.fov_r2), float(p.x0),
        float(p.y0), float(p.z0), float(p.voxel_width), float(p.voxel_height),
        float(p.pixel_width), float(p.pixel_height), float(p.center_col),
        float(p.center_row), float(p.dist_sod))


def backproject(G, f, views, p, slice_weights, stream, *, accumulate=False):
    """Matched back-projection of the projections whose cumulative sums are G into f."""
    nz, ny, nx = f.shape
    if G.shape[0] == 0:
        if not accumulate:
            zero(f, stream)
        return
    col_dir, source_xy, source_z = _views(views, stream)
    sw, weighted = _slice_weights(slice_weights, stream)
    grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]),
            blocks(blocks(nz, KBLOCK), BLOCK_3D[2]))
    _backproject[grid, BLOCK_3D, stream](
        G, f, col_dir, source_xy, source_z, sw, weighted, float(views.sdd),
        int(views.column_model), bool(views.magnify_z), float(p.fov_r2), float(p.x0),
        float(p.y0), float(p.z0), float(p.voxel_width), float(p.voxel_height),
        float(p.pixel_width), float(p.pixel_height), float(p.center_col),
        float(p.center_row), float(p.dist_sod), bool(accumulate))
