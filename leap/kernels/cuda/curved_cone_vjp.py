"""CUDA geometry vector–Jacobian product of the axial projector for curved-detector cone
beams (circular or helical).

The same gradients as :func:`leap.kernels.cpu.curved_cone_vjp.geometry_vjp` (see that
module for the model, the derivative and its values at kinks): the footprints are the
shared footprint functions (``leap.kernels.footprints``, compiled for CUDA in
``leap.kernels.cuda._jit``), and both targets compile the chain rule's scalar functions
of the CPU modules (``axial_view_vjp.fan_terms`` and ``curved_scales`` for the column
ends and weight, ``curved_cone_vjp.row_terms`` for the row ends, ``end_pixel`` for the
kink side). The rows are magnified per voxel column and view (``M = sdd/(ρ·pixel_height)``),
so a column's resampling onto the detector rows depends on the view and is not shared
between views as in ``leap.kernels.cuda.axial_view_vjp``. Three stages:

0. one thread per voxel column records its first and last voxel nonzero in any sample
   (ny, nx, 2) int64, as the CPU's ``_columns``;
1. one thread per (voxel column, view) walks the column's voxels k (and edges q = k) in
   row order and sums, over the samples, in float64: the voxels' row overlaps with the
   ray-stretched ḡ' = rf·ḡ of the footprint's first and last detector columns and of its
   interior ones combined (``H_lo``, ``H_hi``, ``S``; the direct form of the CPU's
   summation by parts, whose cumulative sums would cost (na, nb, ncols, nrows + 1)
   float64 here), and over the edges, ``ΣV = Σ_q t_q·D_q`` and ``ΣVζ`` (``D_q = f_{q−1}
   − f_q``, ``t_q`` the footprint-weighted ḡ' of the row holding edge q: an end on a
   pixel edge counts in row ``floor(end + ½)``, ends off the detector read 0). A row's
   values are loaded once for the voxels and edge that share it. Without a projection
   from the caller it also sums the row factor's derivative terms directly,
   ``w·Σ_k f_k Σ_j O_kj·T_j·∂rf_j`` (``T_j`` the footprint-weighted ḡ of row j; the CPU
   takes them from a forward projection P₀ instead: ``Σ_j ∂rf_j·Σ_i ḡ·P₀`` is the same
   sum). The column's ``NACC`` terms go into a (na, NACC) float64 buffer with
   ``cuda.atomic.add`` (float64 atomics: sm_60+);
2. with a projection from the caller, one thread per (view, row) forms
   ``R_j = Σ_b Σ_i ḡ·projection`` (float64, as the CPU's ``_add_row_dots``); then, on the
   host, the per-view gradients (``R/rf`` times the row factor's derivatives, as the CPU).

Agreement with the CPU: the same arithmetic per (view, column) but other summation orders
(and, on a GPU, fused multiply-adds), so the gradients agree to float64 rounding, not bit
for bit, given the same projection (or, for sdd and center_row, a projection of zeros).
Without one, the CPU's row factor terms come from its float32 projection P₀, these from
float64 sums: ∂sdd and ∂center_row then differ by P₀'s float32 rounding of those terms
(about 1e-7 of them; these are the more accurate).

Cost: a thread walks its column's nz voxels and the rows they reach (about
``nz·(1 + voxel_height·M)``, M in detector rows per mm) reading the footprint's 2–3 ḡ per
row, per sample; no scratch memory beyond (ny, nx, 2) int64, the per-view row factors
(na, nrows) float64 ×3 and the (na, NACC) sums. All threads of a view add into the same
NACC addresses (ny·nx atomic adds each, zero terms skipped).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from ..cpu import curved_cone_vjp as _cpu
from ..cpu.modular_geometry_vjp import end_pixel
from ..footprints import CURVED
from ._jit import BLOCK_2D, BLOCK_3D, KERNEL, axial_column_footprint, blocks, column_range, \
    device, overlap, row_mapping
from .axial_view_vjp import _add, _curved_scales, _fan_terms

#: Terms per view that stage 1 accumulates: ∂cx, ∂cy, ∂sx, ∂sy, ∂sdd, ∂center_col,
#: ∂s_z, ∂center_row and the row factor's direct terms of ∂center_row and ∂sdd.
NACC = 10

_row_terms = device(_cpu.row_terms)
_end_pixel = device(end_pixel)


@cuda.jit(**KERNEL)
def _extent(f, ext):
    """Stage 0: f (nb, nz, ny, nx) float32 → ext (ny, nx, 2) int64, each voxel column's
    first and last k with ``f[b, k] != 0`` in any sample b (last < first: none)."""
    ix, iy = cuda.grid(2)
    nb, nz, ny, nx = f.shape
    if ix >= nx or iy >= ny:
        return
    first = nz
    last = -1
    for b in range(nb):
        for k in range(nz):
            if f[b, k, iy, ix] != 0.0:
                first = min(first, k)
                last = max(last, k)
    ext[iy, ix, 0] = first
    ext[iy, ix, 1] = last


@device
def _row_values(gbar, b, a, j, i0, i1):
    """(ḡ[b, a, j, i0], ḡ[b, a, j, i1], Σ_{i0 < i < i1} ḡ[b, a, j, i]) in float64: row j
    at the footprint's first, last and interior detector columns."""
    g0 = float64(gbar[b, a, j, i0])
    g1 = float64(gbar[b, a, j, i1])
    gm = 0.0
    for i in range(i0 + 1, i1):
        gm += float64(gbar[b, a, j, i])
    return g0, g1, gm


@cuda.jit(**KERNEL)
def _accumulate(f, ext, gbar, rf, drf_row, drf_sdd, direct, col_dir, source_xy, source_z, sdd,
                center_col, center_row, fov_r2, x0, y0, z0, voxel_width, voxel_height,
                pixel_width, pixel_height, acc):
    """Stage 1: f (nb, nz, ny, nx) float32, ext (ny, nx, 2) int64 from stage 0, gbar (nb,
    na, nrows, ncols) float32, rf and its derivatives drf_row, drf_sdd (na, nrows)
    float64; ``direct``: also the row factor's derivative terms (acc[:, 8:10]). Adds
    into acc (na, NACC) float64."""
    ix, iy, a = cuda.grid(3)
    nb, nz, ny, nx = f.shape
    na, nrows, ncols = gbar.shape[1], gbar.shape[2], gbar.shape[3]
    if ix >= nx or iy >= ny or a >= na:
        return
    kf = ext[iy, ix, 0]
    kl = ext[iy, ix, 1]
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    if kl < kf or not x * x + y * y <= fov_r2:
        return
    cx = col_dir[a, 0]
    cy = col_dir[a, 1]
    sx = source_xy[a, 0]
    sy = source_xy[a, 1]
    sz = source_z[a]
    sd = sdd[a]
    # The forward's own footprint and row mapping (bit for bit its ends), as the CPU.
    c_lo, c_hi, weight, dist = axial_column_footprint(
        x, y, cx, cy, sx, sy, sd, CURVED, voxel_width, pixel_width, center_col[a], 0.0, 0.0)
    if dist <= 0.0 or not c_hi > c_lo:
        return
    i0, i1 = column_range(c_lo, c_hi, ncols)
    if i0 > i1:
        return
    A, B, _ = row_mapping(z0, voxel_height, sz, dist, sd, True, pixel_height, center_row[a])
    o0 = overlap(c_lo, c_hi, i0 - 0.5, i0 + 0.5)
    o1 = 0.0 if i1 == i0 else overlap(c_lo, c_hi, i1 - 0.5, i1 + 0.5)
    P0 = A + 0.5              # row positions + ½: row j is [j, j + 1], floor = the row
    zb = (z0 - 0.5 * voxel_height) - sz    # edge 0's height above the source
    n = float(nrows)
    h_lo = 0.0
    h_hi = 0.0
    h_m = 0.0
    s0 = 0.0
    s1 = 0.0
    r_row = 0.0
    r_sdd = 0.0
    for b in range(nb):
        jc = -1               # the row whose values g0, g1, gm hold (rows only increase)
        g0 = 0.0
        g1 = 0.0
        gm = 0.0
        prev = 0.0
        for q in range(kf, kl + 2):
            fq = float64(f[b, q, iy, ix]) if q <= kl else 0.0
            d = prev - fq     # D_q = f_{q−1} − f_q (0 beyond the extent)
            prev = fq
            qf = float64(q)
            p = P0 + qf * B
            if d != 0.0 and p >= 0.0 and p < n:
                # Edge q's row end: ḡ' of the row holding it (p == 0: row 0).
                j = int(math.floor(p))
                if j != jc:
                    g0, g1, gm = _row_values(gbar, b, a, j, i0, i1)
                    jc = j
                e = (o0 * g0 + o1 * g1 + gm) * rf[a, j] * d
                s0 += e
                s1 += e * (zb + qf * voxel_height)
            if fq == 0.0:
                continue
            # Voxel q covers [p, pn]: its overlaps with the detector rows.
            pn = P0 + (qf + 1.0) * B
            # (Clamped before floor: far-off ends stay finite ints.)
            ja = max(int(math.floor(min(max(p, -1.0), n + 1.0))), 0)
            jb = min(int(math.floor(min(max(pn, -1.0), n + 1.0))), nrows - 1)
            for j in range(ja, jb + 1):
                o = min(pn, j + 1.0) - max(p, float64(j))
                if not o > 0.0:
                    continue
                if j != jc:
                    g0, g1, gm = _row_values(gbar, b, a, j, i0, i1)
                    jc = j
                w = o * fq
                wr = w * rf[a, j]
                h_lo += wr * g0
                h_hi += wr * g1
                h_m += wr * gm
                if direct:
                    t = w * (o0 * g0 + o1 * g1 + gm)
                    r_row += t * drf_row[a, j]
                    r_sdd += t * drf_sdd[a, j]
    # Column ends and weight: the curved fan-beam column's terms (ends off the detector
    # read H = 0).
    hl = h_lo if _end_pixel(c_lo, ncols) >= 0 else 0.0
    hh = h_hi if _end_pixel(c_hi, ncols) >= 0 else 0.0
    scale, dscale = _curved_scales(CURVED, sd, pixel_width)
    dy = y - sy
    t0, t1, t2, t3, t4, t5, _ = _fan_terms(
        weight, hl, hh, o0 * h_lo + o1 * h_hi + h_m, x, y, dy, abs(dy), cx, cy, sx, sd, True,
        scale, dscale, 0.5 * voxel_width, voxel_width, pixel_width, 0.0)
    # Rows: ends center_row + M·ζ.
    u_sx, u_sy, u_sdd, u_sz, u_cr = _row_terms(weight, s0, s1, sd / pixel_height, dist, sd,
                                               x - sx, dy)
    _add(acc, a, 0, t0)
    _add(acc, a, 1, t1)
    _add(acc, a, 2, t2 + u_sx)
    _add(acc, a, 3, t3 + u_sy)
    _add(acc, a, 4, t4 + u_sdd)
    _add(acc, a, 5, t5)
    _add(acc, a, 6, u_sz)
    _add(acc, a, 7, u_cr)
    _add(acc, a, 8, weight * r_row)
    _add(acc, a, 9, weight * r_sdd)


@cuda.jit(**KERNEL)
def _row_dots(gbar, proj, R):
    """Stage 2: ``R[a, j] = Σ_b Σ_i ḡ[b, a, j, i]·proj[b, a, j, i]`` (float64; gbar and
    proj (nb, na, nrows, ncols) float32, R (na, nrows) float64)."""
    j, a = cuda.grid(2)
    nb, na, nrows, ncols = gbar.shape
    if j >= nrows or a >= na:
        return
    r = 0.0
    for b in range(nb):
        s = 0.0
        for i in range(ncols):
            s += float64(gbar[b, a, j, i]) * float64(proj[b, a, j, i])
        r += s
    R[a, j] = r


def _device_batch(x, name, stream):
    """x (3-D or 4-D float32; a host array is copied) as a 4-D Numba device array."""
    if isinstance(x, np.ndarray):
        x = cuda.to_device(np.ascontiguousarray(x, dtype=np.float32), stream=stream)
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {x.dtype}")
    return x.reshape((1,) + tuple(x.shape)) if len(x.shape) == 3 else x


def geometry_vjp(f, gbar, col_dir, source_xy, source_z, sdd, center_col, center_row, fov_r2,
                 x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                 projection=None, stream=0):
    """:func:`leap.kernels.cpu.curved_cone_vjp.geometry_vjp` on the GPU: the same
    arguments and results (host float64 arrays: d_col_dir, d_source_xy (na, 2),
    d_source_z, d_sdd, d_center_col, d_center_row (na,); the stream is synchronised).

    ``f`` (nz, ny, nx) or (nb, nz, ny, nx), ``gbar`` and ``projection`` (optional: ``P(θ)
    f``, row factor included, whose row products then replace the direct row factor
    terms) (na, nrows, ncols) or (nb, na, nrows, ncols): float32 C-contiguous Numba
    device arrays (or host arrays, copied); the per-view geometry as host arrays.
    """
    f = _device_batch(f, "f", stream)
    gbar = _device_batch(gbar, "gbar", stream)
    col_dir, source_xy, source_z, sdd, center_col, center_row = _cpu.checked_views(
        f.shape, gbar.shape, col_dir, source_xy, source_z, sdd, center_col, center_row)
    if projection is not None:
        projection = _device_batch(projection, "projection", stream)
        if tuple(projection.shape) != tuple(gbar.shape):
            raise ValueError(f"projection must have gbar's shape {tuple(gbar.shape)}, got "
                             f"{tuple(projection.shape)}")
    nb, nz, ny, nx = f.shape
    na, nrows, ncols = gbar.shape[1], gbar.shape[2], gbar.shape[3]
    rf, drf_row, drf_sdd = _cpu.row_factors(nrows, sdd, center_row, pixel_height)
    acc = cuda.to_device(np.zeros((na, NACC)), stream=stream)
    R = None
    if na and nb and nz and ny and nx and nrows and ncols:
        ext = cuda.device_array((ny, nx, 2), dtype=np.int64, stream=stream)
        _extent[(blocks(nx, BLOCK_2D[0]), blocks(ny, BLOCK_2D[1])), BLOCK_2D, stream](f, ext)
        rows = [cuda.to_device(np.ascontiguousarray(v), stream=stream)
                for v in (rf, drf_row, drf_sdd)]
        geo = [cuda.to_device(v, stream=stream)
               for v in (col_dir, source_xy, source_z, sdd, center_col, center_row)]
        grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(na, BLOCK_3D[2]))
        _accumulate[grid, BLOCK_3D, stream](
            f, ext, gbar, *rows, projection is None, *geo,
            *(float(v) for v in (fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                                 pixel_height)), acc)
        if projection is not None:
            R = cuda.device_array((na, nrows), dtype=np.float64, stream=stream)
            _row_dots[(blocks(nrows, BLOCK_2D[0]), blocks(na, BLOCK_2D[1])), BLOCK_2D,
                      stream](gbar, projection, R)
    sums = acc.copy_to_host(stream=stream)
    if R is not None:
        R = R.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    else:
        cuda.synchronize()
    if projection is None:
        d_sdd = sums[:, 4] + sums[:, 9]
        d_row = sums[:, 7] + sums[:, 8]
    else:
        R = np.zeros((na, nrows)) if R is None else R
        R /= rf
        d_sdd = sums[:, 4] + np.sum(drf_sdd * R, axis=1)
        d_row = sums[:, 7] + np.sum(drf_row * R, axis=1)
    return (np.ascontiguousarray(sums[:, 0:2]), np.ascontiguousarray(sums[:, 2:4]),
            sums[:, 6].copy(), d_sdd, sums[:, 5].copy(), d_row)


def plan_geometry_vjp(plan, f, gbar, projection=None, stream=0):
    """:func:`geometry_vjp` for a plan of a curved cone beam
    (:func:`leap.kernels.cpu.curved_cone_vjp.plan_geometry_vjp`'s arguments, checks and
    results; ``f``, ``gbar``, ``projection`` as for :func:`geometry_vjp`)."""
    return geometry_vjp(f, gbar, *_cpu.plan_arguments(plan), projection=projection,
                        stream=stream)
