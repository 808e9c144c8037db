"""CPU projector and matched back-projector for the axial family.

Parallel, fan and cone beams (flat/curved, tau, helical) share one pair of kernels.

Why cumulative sums: for one view and one voxel column (x, y) the column footprint is
the same for every z, and the row intervals of the voxels are contiguous and equally
long (``[A + kB, A + (k+1)B]``). The row-overlap-weighted sum of the column's values
over detector row j is therefore ∫ over row j of a piecewise-constant function, i.e.
the difference of its piecewise-linear cumulative integral at the row edges. The
projector interpolates a z-cumulative sum of the volume; the back-projector, its exact
transpose, interpolates a row-cumulative sum of the projections. This replaces a
per-voxel × per-row overlap loop by two interpolations per row (or per voxel).

Parallelisation never lets two threads write one element: the projector runs one
view per thread, the back-projector one row of voxel columns per thread.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ._jit import JIT, PARALLEL_JIT, axial_column_footprint, interp_cumulative, overlap


@numba.njit(**PARALLEL_JIT)
def volume_z_cumsum(f):
    """Cumulative sums along z: ``S[iy, ix, k] = Σ_{k' < k} f[k', iy, ix]``.

    f : (nz, ny, nx) float32. Returns S : (ny, nx, nz + 1) float32, summed in float64.
    """
    nz, ny, nx = f.shape
    S = np.empty((ny, nx, nz + 1), dtype=np.float32)
    for iy in prange(ny):
        run = np.zeros(nx, dtype=np.float64)
        for ix in range(nx):
            S[iy, ix, 0] = 0.0
        for k in range(nz):
            for ix in range(nx):
                run[ix] += f[k, iy, ix]
                S[iy, ix, k + 1] = run[ix]
    return S


@numba.njit(**PARALLEL_JIT)
def projection_row_cumsum(g, row_factor):
    """Row-cumulative sums of weighted projections: ``G[a, i, j] = Σ_{j' < j} g[a, j', i]·w[j']``.

    g : (na, nrows, ncols) float32; row_factor : (nrows,) float64.
    Returns G : (na, ncols, nrows + 1) float32, summed in float64.
    """
    na, nrows, ncols = g.shape
    G = np.empty((na, ncols, nrows + 1), dtype=np.float32)
    for a in prange(na):
        run = np.zeros(ncols, dtype=np.float64)
        for i in range(ncols):
            G[a, i, 0] = 0.0
        for j in range(nrows):
            w = row_factor[j]
            for i in range(ncols):
                run[i] += g[a, j, i] * w
                G[a, i, j + 1] = run[i]
    return G


@numba.njit(**JIT)
def _row_mapping(z0, voxel_height, source_z, dist, sdd, magnify_z, pixel_height, center_row):
    """Row coordinate A of the bottom of voxel 0 and row step B per voxel."""
    if magnify_z:
        mag = sdd / dist
    else:
        mag = 1.0
    A = (z0 - 0.5 * voxel_height - source_z) * mag / pixel_height + center_row
    B = voxel_height * mag / pixel_height
    return A, B


@numba.njit(**PARALLEL_JIT)
def project(S, g, col_dir, source_xy, source_z, sdd, model, magnify_z, fov_r2,
            x0, y0, z0, voxel_width, voxel_height,
            pixel_width, pixel_height, center_col, center_row, row_factor):
    """Forward projection into g (na, nrows, ncols) float32 from S = volume_z_cumsum(f)."""
    na, nrows, ncols = g.shape
    ny, nx, nz1 = S.shape
    nz = nz1 - 1
    for a in prange(na):
        acc = np.zeros((ncols, nrows), dtype=np.float64)
        rows = np.empty(nrows, dtype=np.float64)
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        sx = source_xy[a, 0]
        sy = source_xy[a, 1]
        zs = source_z[a]
        for iy in range(ny):
            y = y0 + iy * voxel_width
            for ix in range(nx):
                x = x0 + ix * voxel_width
                if x * x + y * y > fov_r2:
                    continue
                c_lo, c_hi, weight, dist = axial_column_footprint(
                    x, y, cx, cy, sx, sy, sdd, model, voxel_width, pixel_width, center_col)
                if dist <= 0.0:
                    continue
                i0 = max(0, int(math.floor(c_lo + 0.5)))
                i1 = min(ncols - 1, int(math.floor(c_hi + 0.5)))
                if i0 > i1:
                    continue
                A, B = _row_mapping(z0, voxel_height, zs, dist, sdd, magnify_z,
                                    pixel_height, center_row)
                j0 = max(0, int(math.floor(A + 0.5)))
                j1 = min(nrows - 1, int(math.floor(A + nz * B + 0.5)))
                if j0 > j1:
                    continue
                cum = S[iy, ix]
                inv_b = 1.0 / B
                lower = interp_cumulative(cum, nz, (j0 - 0.5 - A) * inv_b)
                for j in range(j0, j1 + 1):
                    upper = interp_cumulative(cum, nz, (j + 0.5 - A) * inv_b)
                    rows[j] = (upper - lower) * B
                    lower = upper
                for i in range(i0, i1 + 1):
                    w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                    if w == 0.0:
                        continue
                    for j in range(j0, j1 + 1):
                        acc[i, j] += w * rows[j]
        for j in range(nrows):
            rf = row_factor[j]
            for i in range(ncols):
                g[a, j, i] = acc[i, j] * rf


@numba.njit(**PARALLEL_JIT)
def backproject(G, f, col_dir, source_xy, source_z, sdd, model, magnify_z, fov_r2,
                x0, y0, z0, voxel_width, voxel_height,
                pixel_width, pixel_height, center_col, center_row):
    """Matched back-projection into f (nz, ny, nx) float32 from G = projection_row_cumsum(g)."""
    nz, ny, nx = f.shape
    na, ncols, nrows1 = G.shape
    nrows = nrows1 - 1
    for iy in prange(ny):
        col = np.empty(nz, dtype=np.float64)
        y = y0 + iy * voxel_width
        for ix in range(nx):
            x = x0 + ix * voxel_width
            col[:] = 0.0
            if x * x + y * y <= fov_r2:
                for a in range(na):
                    c_lo, c_hi, weight, dist = axial_column_footprint(
                        x, y, col_dir[a, 0], col_dir[a, 1], source_xy[a, 0], source_xy[a, 1],
                        sdd, model, voxel_width, pixel_width, center_col)
                    if dist <= 0.0:
                        continue
                    i0 = max(0, int(math.floor(c_lo + 0.5)))
                    i1 = min(ncols - 1, int(math.floor(c_hi + 0.5)))
                    if i0 > i1:
                        continue
                    A, B = _row_mapping(z0, voxel_height, source_z[a], dist, sdd, magnify_z,
                                        pixel_height, center_row)
                    # Voxel boundaries k = 0..nz sit at row coordinate A + kB; below
                    # row -0.5 or above nrows - 0.5 the cumulative sums are constant,
                    # so only boundaries in between contribute differences.
                    inv_b = 1.0 / B
                    k0 = int(math.floor((-0.5 - A) * inv_b))
                    k1 = int(math.ceil((nrows - 0.5 - A) * inv_b))
                    if k0 < 0:
                        k0 = 0
                    if k1 > nz:
                        k1 = nz
                    if k0 >= k1:
                        continue
                    for i in range(i0, i1 + 1):
                        w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                        if w == 0.0:
                            continue
                        cum = G[a, i]
                        lower = interp_cumulative(cum, nrows, A + k0 * B + 0.5)
                        for k in range(k0, k1):
                            upper = interp_cumulative(cum, nrows, A + (k + 1) * B + 0.5)
                            col[k] += w * (upper - lower)
                            lower = upper
            for k in range(nz):
                f[k, iy, ix] = col[k]
