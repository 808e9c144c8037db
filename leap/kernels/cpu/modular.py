"""CPU projector and matched back-projector for modular beams (any flat modules).

Voxel-driven: every (view, voxel) pair gets a rectangular footprint on the module
(:func:`leap.kernels.footprints.modular_footprint`), and both directions compute the
same weights, so the back-projector is the exact transpose of the projector. The
projector runs one view per thread at a time (each thread owns its view's pixels), the
back-projector one row of voxels (:mod:`leap.kernels.cpu.threads`).
"""
from __future__ import annotations

import numba
import numpy as np

from . import threads
from ._jit import (JIT, modular_box, modular_footprint, modular_gather,
                   modular_view_frame, overlap)


def project(f, g, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
            pixel_width, pixel_height):
    """Forward projection of f (nz, ny, nx) into g (na, nrows, ncols), both float32; views
    on all threads (:mod:`leap.kernels.cpu.threads`)."""
    threads.run(_project_views, f, g, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                voxel_height, pixel_width, pixel_height, items=g.shape[0])


@numba.njit(**JIT)
def _project_views(f, g, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
                   pixel_width, pixel_height, start, step):
    """Views ``a = start, start + step, …`` of :func:`project`."""
    nz, ny, nx = f.shape
    na, nrows, ncols = g.shape
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    for a in range(start, na, step):
        acc = np.zeros((nrows, ncols), dtype=np.float64)
        sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = modular_view_frame(
            sources, centers, rows, cols, a)
        for k in range(nz):
            z = z0 + k * voxel_height
            for iy in range(ny):
                y = y0 + iy * voxel_width
                for ix in range(nx):
                    val = f[k, iy, ix]
                    if val == 0.0:
                        continue
                    x = x0 + ix * voxel_width
                    ua, ub, va, vb, l = modular_footprint(
                        x, y, z, sx, sy, sz, su, sv, n0, n1, n2, dn,
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
                            acc[j, i] += wr * overlap(c_lo, c_hi, i - 0.5, i + 0.5)
        for j in range(nrows):
            for i in range(ncols):
                g[a, j, i] = acc[j, i]


def backproject(g, f, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
                pixel_width, pixel_height):
    """Matched back-projection of g (na, nrows, ncols) into f (nz, ny, nx), both float32;
    rows of voxels on all threads."""
    threads.run(_backproject_rows, g, f, sources, centers, rows, cols, x0, y0, z0,
                voxel_width, voxel_height, pixel_width, pixel_height,
                items=f.shape[0] * f.shape[1])


@numba.njit(**JIT)
def _backproject_rows(g, f, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                      voxel_height, pixel_width, pixel_height, start, step):
    """Rows of voxels ``kk = start, start + step, …`` (slice kk // ny, row kk % ny) of
    :func:`backproject`."""
    nz, ny, nx = f.shape
    na = g.shape[0]
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    for kk in range(start, nz * ny, step):
        k = kk // ny
        iy = kk - k * ny
        z = z0 + k * voxel_height
        y = y0 + iy * voxel_width
        for ix in range(nx):
            x = x0 + ix * voxel_width
            total = 0.0
            for a in range(na):
                sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = modular_view_frame(
                    sources, centers, rows, cols, a)
                ua, ub, va, vb, l = modular_footprint(
                    x, y, z, sx, sy, sz, su, sv, n0, n1, n2, dn,
                    e0, e1, e2, r0, r1, r2, half_w, half_h)
                if l == 0.0:
                    continue
                s = modular_gather(g, a, ua, ub, va, vb, pixel_width, pixel_height)
                total += s * voxel_width * l
            f[k, iy, ix] = total
