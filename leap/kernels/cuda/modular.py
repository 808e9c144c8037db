"""CUDA projector and matched back-projector for modular beams (any flat modules).

Voxel-driven like :mod:`leap.kernels.cpu.modular`: every (view, voxel) pair gets the
rectangular footprint of :func:`leap.kernels.footprints.modular_footprint` (compiled
for the GPU), and both directions use the same weights, so the pair stays an exact
transpose. The projector scatters, one thread per (voxel column, view) walking the
column's voxels, with float32 ``cuda.atomic.add`` into the projections; the
back-projector gathers, one thread per voxel, looping over views (no atomics).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32

from ._jit import (BLOCK_3D, KERNEL, blocks, modular_box, modular_footprint, modular_gather,
                   modular_view_frame, overlap)
from .axial import zero




@cuda.jit(**KERNEL)
def _project(f, g, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
             pixel_width, pixel_height):
    ix, iy, a = cuda.grid(3)
    nz, ny, nx = f.shape
    na, nrows, ncols = g.shape
    if ix >= nx or iy >= ny or a >= na:
        return
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = modular_view_frame(
        sources, centers, rows, cols, a)
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    for k in range(nz):
        val = f[k, iy, ix]
        if val == 0.0:
            continue
        z = z0 + k * voxel_height
        ua, ub, va, vb, l = modular_footprint(x, y, z, sx, sy, sz, su, sv, n0, n1, n2, dn,
                                              e0, e1, e2, r0, r1, r2, half_w, half_h)
        if l == 0.0:
            continue
        c_lo, c_hi, r_lo, r_hi, i0, i1, j0, j1 = modular_box(
            ua, ub, va, vb, pixel_width, pixel_height, ncols, nrows)
        scale = val * voxel_width * l
        for j in range(j0, j1 + 1):
            wr = overlap(r_lo, r_hi, j - 0.5, j + 0.5) * scale
            if wr == 0.0:
                continue
            for i in range(i0, i1 + 1):
                w = wr * overlap(c_lo, c_hi, i - 0.5, i + 0.5)
                if w != 0.0:
                    cuda.atomic.add(g, (a, j, i), float32(w))


@cuda.jit(**KERNEL)
def _backproject(g, f, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
                 pixel_width, pixel_height, accumulate):
    ix, iy, k = cuda.grid(3)
    nz, ny, nx = f.shape
    na = g.shape[0]
    if ix >= nx or iy >= ny or k >= nz:
        return
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    z = z0 + k * voxel_height
    total = 0.0
    for a in range(na):
        sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = modular_view_frame(
            sources, centers, rows, cols, a)
        ua, ub, va, vb, l = modular_footprint(x, y, z, sx, sy, sz, su, sv, n0, n1, n2, dn,
                                              e0, e1, e2, r0, r1, r2, half_w, half_h)
        if l == 0.0:
            continue
        s = modular_gather(g, a, ua, ub, va, vb, pixel_width, pixel_height)
        total += s * voxel_width * l
    if accumulate:
        f[k, iy, ix] += total
    else:
        f[k, iy, ix] = total


def _frames(geometry, stream):
    return tuple(cuda.to_device(np.ascontiguousarray(arr, dtype=np.float64), stream=stream)
                 for arr in (geometry.source_positions, geometry.module_centers,
                             geometry.row_vectors, geometry.col_vectors))


def project(f, g, geometry, volume_z0, volume, stream, *, accumulate=False):
    """Projection of f (nz, ny, nx) into g (na, nrows, ncols), device float32 arrays.

    ``geometry`` is a ModularBeam for g's views; ``volume_z0`` the z (mm) of f's first
    slice (f may be a slab of ``volume``).
    """
    nz, ny, nx = f.shape
    na = g.shape[0]
    if not accumulate:
        zero(g, stream)
    if na == 0 or nz == 0:
        return
    d = geometry.detector
    grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(na, BLOCK_3D[2]))
    _project[grid, BLOCK_3D, stream](f, g, *_frames(geometry, stream), float(volume.x0),
                                     float(volume.y0), float(volume_z0),
                                     float(volume.voxel_width), float(volume.voxel_height),
                                     float(d.pixel_width), float(d.pixel_height))


def backproject(g, f, geometry, volume_z0, volume, stream, *, accumulate=False):
    """Matched back-projection of g (na, nrows, ncols) into f (nz, ny, nx)."""
    nz, ny, nx = f.shape
    d = geometry.detector
    grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]), blocks(nz, BLOCK_3D[2]))
    _backproject[grid, BLOCK_3D, stream](g, f, *_frames(geometry, stream), float(volume.x0),
                                         float(volume.y0), float(volume_z0),
                                         float(volume.voxel_width),
                                         float(volume.voxel_height), float(d.pixel_width),
                                         float(d.pixel_height), bool(accumulate))
