"""CUDA vector–Jacobian product of the modular projector with respect to its geometry.

The same gradients as :func:`leap.kernels.cpu.modular_geometry_vjp.geometry_vjp` (see
that module for the model, the derivative and its values at kinks), with the same
per-(view, voxel) and per-view arithmetic: both targets compile the functions of
``leap.kernels.cpu.modular_geometry_vjp.make_vjp_kernels``. Two stages:

1. one thread per (voxel column, view) walks the column's voxels, accumulating the
   view's ``NACC`` float64 sums in local
   memory, then adds them into a (na, NACC) float64 buffer with ``cuda.atomic.add``
   (float64 atomics: sm_60+);
2. one thread per view turns its sums into the four (na, 3) float64 gradients.

Only the order of the float64 additions differs from the CPU (so results agree to
rounding, not bit for bit).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64

from ..cpu import modular_geometry_vjp as _cpu
from ._jit import BLOCK_3D, KERNEL, THREADS_1D, blocks, device, modular_box, \
    modular_view_frame, overlap

NACC = _cpu.NACC

_footprint_terms = device(_cpu.footprint_terms)
_end_pixel = device(_cpu.end_pixel)
_end_terms = device(_cpu.end_terms)
_voxel_vjp, _view_vjp = _cpu.make_vjp_kernels(device, _footprint_terms, _end_pixel,
                                              _end_terms, overlap, modular_box)


@cuda.jit(**KERNEL)
def _accumulate(f, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                voxel_height, pixel_width, pixel_height, acc_out):
    """Stage 1: f (nb, nz, ny, nx), gbar (nb, na, nrows, ncols) float32; adds into
    acc_out (na, NACC) float64."""
    ix, iy, a = cuda.grid(3)
    nz, ny, nx = f.shape[1], f.shape[2], f.shape[3]
    na = gbar.shape[1]
    if ix >= nx or iy >= ny or a >= na:
        return
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    frame = modular_view_frame(sources, centers, rows, cols, a)
    dn = frame[8]
    inv_dn = 1.0 / dn if dn != 0.0 else 0.0   # dn = 0: every voxel is skipped
    acc = cuda.local.array(NACC, float64)
    for k in range(NACC):
        acc[k] = 0.0
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    for kz in range(nz):
        z = z0 + kz * voxel_height
        _voxel_vjp(f, gbar, a, kz, iy, ix, x, y, z, frame, inv_dn, half_w, half_h,
                   voxel_width, pixel_width, pixel_height, acc)
    for k in range(NACC):
        if acc[k] != 0.0:
            cuda.atomic.add(acc_out, (a, k), acc[k])


@cuda.jit(**KERNEL)
def _combine(acc_in, sources, centers, rows, cols, d_sources, d_centers, d_rows, d_cols):
    """Stage 2: one thread per view; adds into the (na, 3) float64 gradients."""
    a = cuda.grid(1)
    if a >= acc_in.shape[0]:
        return
    frame = modular_view_frame(sources, centers, rows, cols, a)
    _view_vjp(acc_in[a], centers, a, frame, d_sources, d_centers, d_rows, d_cols)


def geometry_vjp(f, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                 voxel_height, pixel_width, pixel_height, stream=0):
    """``∂L/∂(s, c, r, e)`` of ``L = Σ ḡ · P(θ) f`` on the GPU.

    ``f`` (nb, nz, ny, nx) and ``gbar`` (nb, na, nrows, ncols): float32 C-contiguous
    Numba device arrays (or host arrays, copied); the geometry (na, 3) host arrays, used
    as given. Returns the four (na, 3) float64 gradients as host arrays (the stream is
    synchronised), like the CPU :func:`leap.kernels.cpu.modular_geometry_vjp.geometry_vjp`.
    """
    if isinstance(f, np.ndarray):
        f = cuda.to_device(np.ascontiguousarray(f, dtype=np.float32), stream=stream)
    if isinstance(gbar, np.ndarray):
        gbar = cuda.to_device(np.ascontiguousarray(gbar, dtype=np.float32), stream=stream)
    geo = [cuda.to_device(v, stream=stream)
           for v in _cpu.checked_inputs(f.shape, gbar.shape, sources, centers, rows, cols)]
    if f.dtype != np.float32 or gbar.dtype != np.float32:
        raise TypeError(f"f and gbar must be float32, got {f.dtype} and {gbar.dtype}")
    nb, nz, ny, nx = f.shape
    na = gbar.shape[1]
    acc = cuda.to_device(np.zeros((na, NACC)), stream=stream)
    out = [cuda.to_device(np.zeros((na, 3)), stream=stream) for _ in range(4)]
    if na and nb and nz and ny and nx:
        grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(na, BLOCK_3D[2]))
        _accumulate[grid, BLOCK_3D, stream](f, gbar, *geo, float(x0), float(y0), float(z0),
                                            float(voxel_width), float(voxel_height),
                                            float(pixel_width), float(pixel_height), acc)
        _combine[blocks(na, THREADS_1D), THREADS_1D, stream](acc, *geo, *out)
    res = tuple(o.copy_to_host(stream=stream) for o in out)
    if stream:
        stream.synchronize()
    else:
        cuda.synchronize()
    return res
