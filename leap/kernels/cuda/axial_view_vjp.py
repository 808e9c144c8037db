"""CUDA geometry vector–Jacobian product of the axial projector without z magnification:
parallel and fan beams (flat or curved detector).

The same gradients as :func:`leap.kernels.cpu.axial_view_vjp.geometry_vjp` (see that
module for the model, the derivative, its values at kinks and FBP's distance weight
``dist_sod``), with the same per-(view, column) arithmetic: the footprints are the shared
footprint functions (``leap.kernels.footprints``, compiled for CUDA in
``leap.kernels.cuda._jit``), and both targets compile the chain rule's scalar functions
of the CPU module (``fan_terms``, ``parallel_view_grads``, ``curved_scales``). Three
stages:

0. one thread per voxel column resamples it onto the detector rows, ``F_j = Σ_k
   W[j, k]·f_k`` (``leap.kernels.cpu.axial_view_vjp.row_weights``: the values moved for
   direct rows, the row overlaps otherwise; float32, as the CPU's ``row_columns``), into
   (nb, nrows, ny, nx) float32, and records the column's first and last nonzero row in any sample;
1. one thread per (voxel column, view) forms the ``H_i = Σ_b Σ_j F_j·ḡ[b, a, j, i]`` of
   the footprint's pixels (float64), takes the CPU's one-sided kink conventions (an end
   counts in pixel ``floor(end + ½)``; ends off the detector read H = 0) and adds the
   column's ``NACC`` float64 terms into a (na, NACC) buffer with ``cuda.atomic.add``
   (float64 atomics: sm_60+): the seven fan terms, or the parallel beam's five sums;
2. per view, on the host (a (na, NACC) array): the parallel beam's sums become its
   gradients (``parallel_view_grads``), the fan terms are the gradients.

Columns outside the field of view, behind the source or zero in every sample are
skipped, as on the CPU. Only the order of the float64 additions differs from the CPU
(and, on a GPU, contractions into fused multiply-adds), so results agree to rounding,
not bit for bit.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, float64

from ..cpu import axial_view_vjp as _cpu
from ..cpu._jit import parallel_view_constants as _host_view_constants
from ..footprints import CURVED, PARALLEL
from ._jit import BLOCK_2D, BLOCK_3D, KERNEL, axial_footprint, blocks, device, \
    fbp_distance_weight, overlap, parallel_view_constants

#: Terms per view that stage 1 accumulates (the fan beam's seven; a parallel beam uses
#: the first five).
NACC = 7

_fan_terms = device(_cpu.fan_terms)
_curved_scales = device(_cpu.curved_scales)
#: Stage 2 runs on the host, with the CPU compilation of the same function.
_parallel_view_grads = _cpu._parallel_view_grads


@cuda.jit(**KERNEL)
def _resample(f, W, klo, khi, Fc, ext):
    """Stage 0: f (nb, nz, ny, nx) float32, W (nrows, nz) float32 the row weights and
    klo, khi (nrows,) int64 each row's nonzero k range; writes Fc (nb, nrows, ny, nx)
    float32 and ext (ny, nx, 2) int64 (first, last nonzero row; last < first: none)."""
    ix, iy = cuda.grid(2)
    nb, ny, nx = f.shape[0], f.shape[2], f.shape[3]
    nrows = W.shape[0]
    if ix >= nx or iy >= ny:
        return
    first = nrows
    last = -1
    for b in range(nb):
        for j in range(nrows):
            # float32, slices in order: the CPU's row_columns arithmetic.
            v = float32(0.0)
            for k in range(klo[j], khi[j] + 1):
                v += W[j, k] * f[b, k, iy, ix]
            Fc[b, j, iy, ix] = v
            if v != 0.0:
                first = min(first, j)
                last = max(last, j)
    ext[iy, ix, 0] = first
    ext[iy, ix, 1] = last


@device
def _pixel_h(Fc, gbar, a, iy, ix, i, jlo, jhi):
    """H_i of one detector column i (0 off the detector): Σ_b Σ_j F_j·ḡ[b, a, j, i]
    over the voxel column's nonzero rows, float64."""
    h = 0.0
    if i < 0 or i >= gbar.shape[3]:
        return h
    for b in range(gbar.shape[0]):
        for j in range(jlo, jhi + 1):
            h += float64(Fc[b, j, iy, ix]) * float64(gbar[b, a, j, i])
    return h


@device
def _column_sums(Fc, gbar, a, iy, ix, jlo, jhi, c_lo, c_hi):
    """(H at the pixel of c_lo, H at the pixel of c_hi, Σ_i O_i·H_i) of one voxel column
    and view: the pixels ``floor(c_lo + ½) .. floor(c_hi + ½)`` (clamped to one beyond
    the detector, where H = 0), as the CPU kernel's ``_sums``."""
    ncols = gbar.shape[3]
    lo = min(max(c_lo + 0.5, -1.0), ncols + 0.0)
    hi = min(max(c_hi + 0.5, -1.0), ncols + 0.0)
    i0 = int(math.floor(lo))
    i1 = int(math.floor(hi))
    hl = 0.0
    hh = 0.0
    s = 0.0
    for i in range(i0, i1 + 1):
        h = _pixel_h(Fc, gbar, a, iy, ix, i, jlo, jhi)
        s += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * h
        if i == i0:
            hl = h
        hh = h
    return hl, hh, s


@device
def _add(acc, a, k, v):
    if v != 0.0:
        cuda.atomic.add(acc, (a, k), v)


@cuda.jit(**KERNEL)
def _accumulate(Fc, ext, gbar, col_dir, source_xy, center_col, sdd, model, fov_r2, x0, y0,
                voxel_width, pixel_width, dist_sod, acc):
    """Stage 1: Fc (nb, nrows, ny, nx) float32 and ext (ny, nx, 2) int64 from stage 0,
    gbar (nb, na, nrows, ncols) float32; adds into acc (na, NACC) float64."""
    ix, iy, a = cuda.grid(3)
    ny, nx = Fc.shape[2], Fc.shape[3]
    if ix >= nx or iy >= ny or a >= gbar.shape[1]:
        return
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    jlo = ext[iy, ix, 0]
    jhi = ext[iy, ix, 1]
    if not x * x + y * y <= fov_r2 or jhi < jlo:
        return
    cx = col_dir[a, 0]
    cy = col_dir[a, 1]
    sx = source_xy[a, 0]
    sy = source_xy[a, 1]
    sd = sdd[a]
    cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    c_lo, c_hi, weight, dist, dz = axial_footprint(
        model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sd, 0.0, 0.0,
        voxel_width, pixel_width, center_col[a], 0.0, 0.0)
    if not dist > 0.0:
        return                                  # behind the source
    if dist_sod > 0.0:
        weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
    if weight == 0.0:
        return
    hl, hh, s = _column_sums(Fc, gbar, a, iy, ix, jlo, jhi, c_lo, c_hi)
    if model == PARALLEL:
        dd = hh - hl
        _add(acc, a, 0, dd)
        _add(acc, a, 1, dd * x)
        _add(acc, a, 2, dd * y)
        _add(acc, a, 3, hh + hl)
        _add(acc, a, 4, s)
        return
    scale, dscale = _curved_scales(model, sd, pixel_width)
    dy = y - sy
    t0, t1, t2, t3, t4, t5, t6 = _fan_terms(
        weight, hl, hh, s, x, y, dy, abs(dy), cx, cy, sx, sd, model == CURVED, scale, dscale,
        0.5 * voxel_width, voxel_width, pixel_width, dist_sod)
    _add(acc, a, 0, t0)
    _add(acc, a, 1, t1)
    _add(acc, a, 2, t2)
    _add(acc, a, 3, t3)
    _add(acc, a, 4, t4)
    _add(acc, a, 5, t5)
    _add(acc, a, 6, t6)


def _row_bands(nz, nrows, z0, voxel_height, pixel_height, center_row):
    """(W, klo, khi): the row weights (nrows, nz) float32 and each row's nonzero k
    range."""
    W, _ = _cpu.row_weights(nz, nrows, z0, voxel_height, pixel_height, center_row)
    nonzero = W != 0.0
    some = nonzero.any(axis=1)
    klo = np.where(some, np.argmax(nonzero, axis=1), 1).astype(np.int64)
    khi = np.where(some, nz - 1 - np.argmax(nonzero[:, ::-1], axis=1), 0).astype(np.int64)
    return np.ascontiguousarray(W, dtype=np.float32), klo, khi


def geometry_vjp(f, gbar, col_dir, source_xy, center_col, sdd, column_model, fov_r2, x0, y0,
                 z0, voxel_width, voxel_height, pixel_width, pixel_height, center_row,
                 dist_sod=0.0, stream=0):
    """:func:`leap.kernels.cpu.axial_view_vjp.geometry_vjp` on the GPU: the same arguments
    and results (host arrays; the stream is synchronised).

    ``f`` (nz, ny, nx) or (nb, nz, ny, nx) and ``gbar`` (na, nrows, ncols) or (nb, na,
    nrows, ncols): float32 C-contiguous Numba device arrays (or host arrays, copied); the
    per-view geometry as host arrays.
    """
    if isinstance(f, np.ndarray):
        f = cuda.to_device(np.ascontiguousarray(f, dtype=np.float32), stream=stream)
    if isinstance(gbar, np.ndarray):
        gbar = cuda.to_device(np.ascontiguousarray(gbar, dtype=np.float32), stream=stream)
    if f.dtype != np.float32 or gbar.dtype != np.float32:
        raise TypeError(f"f and gbar must be float32, got {f.dtype} and {gbar.dtype}")
    if len(f.shape) == 3:
        f = f.reshape((1,) + tuple(f.shape))
    if len(gbar.shape) == 3:
        gbar = gbar.reshape((1,) + tuple(gbar.shape))
    col_dir, source_xy, center_col, sdd, model, dist_sod = _cpu.checked_views(
        f.shape, gbar.shape, col_dir, source_xy, center_col, sdd, column_model, dist_sod)
    nb, nz, ny, nx = f.shape
    na, nrows = gbar.shape[1], gbar.shape[2]
    acc = cuda.to_device(np.zeros((na, NACC)), stream=stream)
    if na and nb and nz and ny and nx and nrows:
        W, klo, khi = (cuda.to_device(v, stream=stream)
                       for v in _row_bands(nz, nrows, z0, voxel_height, pixel_height,
                                           center_row))
        Fc = cuda.device_array((nb, nrows, ny, nx), dtype=np.float32, stream=stream)
        ext = cuda.device_array((ny, nx, 2), dtype=np.int64, stream=stream)
        _resample[(blocks(nx, BLOCK_2D[0]), blocks(ny, BLOCK_2D[1])), BLOCK_2D, stream](
            f, W, klo, khi, Fc, ext)
        geo = [cuda.to_device(v, stream=stream) for v in (col_dir, source_xy, center_col, sdd)]
        grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(na, BLOCK_3D[2]))
        _accumulate[grid, BLOCK_3D, stream](
            Fc, ext, gbar, *geo, model, float(fov_r2), float(x0), float(y0),
            float(voxel_width), float(pixel_width), dist_sod, acc)
    sums = acc.copy_to_host(stream=stream)
    if stream:
        stream.synchronize()
    else:
        cuda.synchronize()
    return _per_view(sums, col_dir, model, voxel_width, pixel_width, dist_sod)


def _per_view(sums, col_dir, model, voxel_width, pixel_width, dist_sod):
    """Stage 2: the gradients from the (na, NACC) sums, as the CPU function returns them."""
    na = sums.shape[0]
    d_col = np.zeros((na, 2))
    d_src = np.zeros((na, 2))
    d_cc = np.zeros(na)
    d_sdd = np.zeros(na)
    if model == PARALLEL:
        for a in range(na):
            cx, cy = col_dir[a]
            par_weight = _host_view_constants(cx, cy, float(voxel_width),
                                              float(pixel_width))[3]
            d_col[a, 0], d_col[a, 1], d_cc[a] = _parallel_view_grads(
                cx, cy, par_weight, *sums[a, :5], float(voxel_width), float(pixel_width))
    else:
        d_col[:] = sums[:, 0:2]
        d_src[:] = sums[:, 2:4]
        d_sdd[:] = sums[:, 4]
        d_cc[:] = sums[:, 5]
    if dist_sod > 0.0:
        return d_col, d_src, d_cc, d_sdd, float(sums[:, 6].sum())
    return d_col, d_src, d_cc, d_sdd
