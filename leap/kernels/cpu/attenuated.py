"""CPU kernels of the attenuated Radon transform (parallel beam).

The attenuated projection weights every voxel, per view, by exp(−Dμ(x, θ)) with the
divergent beam transform ``Dμ(x, θ) = ∫_0^∞ μ(x + tθ) dt`` (LEAP integrates towards +θ,
θ = (cos φ, sin φ), φ = ψ − π/2). :func:`exponent_map` computes Dμ at every voxel centre
for one view by a recursion along the grid axis closest to θ: stepping one voxel back
along that axis moves the ray by a fractional voxel in the other, so

    D(i) = D(i + 1 at the shifted position) + Δ/2 · (μ(i) + μ(i + 1 at the shifted position))

(trapezoid rule, linear interpolation across the step, zero outside the grid, Δ the
path length per step). One pass costs as much as one projection of one view.

:func:`novikov_view` adds one view of Novikov's inversion formula to a volume.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ._jit import JIT, PARALLEL_JIT


@numba.njit(inline="always", **JIT)
def _lerp0(line, y):
    """line linearly interpolated at fractional index y, zero outside [−1, n]."""
    n = line.size
    i0 = int(math.floor(y))
    w = y - i0
    a = line[i0] if 0 <= i0 < n else 0.0
    b = line[i0 + 1] if 0 <= i0 + 1 < n else 0.0
    return (1.0 - w) * a + w * b


@numba.njit(**PARALLEL_JIT)
def _march_last_axis(mu, out, c, s):
    """out[z, j, i] = Dμ (in voxel units) marching along the last axis, direction sign(c),
    the middle index shifting by s/|c| per step."""
    nz, ny, nx = mu.shape
    step = 1.0 / abs(c)
    shift = s / abs(c)
    for iz in prange(nz):
        for m in range(nx):
            i = nx - 1 - m if c > 0 else m
            ip = i + 1 if c > 0 else i - 1
            for j in range(ny):
                prev_d = 0.0
                prev_mu = 0.0
                if m > 0:
                    prev_d = _lerp0(out[iz, :, ip], j + shift)
                    prev_mu = _lerp0(mu[iz, :, ip], j + shift)
                out[iz, j, i] = prev_d + 0.5 * step * (mu[iz, j, i] + prev_mu)


def exponent_map(mu: np.ndarray, cos_t: float, sin_t: float, voxel_width: float) -> np.ndarray:
    """Dμ(x, θ) at every voxel centre, (num_z, num_y, num_x) float64, for θ = (cos_t, sin_t).

    mu : (num_z, num_y, num_x) attenuation, 1/mm; voxel_width in mm. Result dimensionless.
    """
    out = np.empty(mu.shape, dtype=np.float64)
    if abs(cos_t) >= abs(sin_t):
        _march_last_axis(mu, out, cos_t, sin_t)
    else:  # march along y: swap the roles of x and y
        _march_last_axis(mu.transpose(0, 2, 1), out.transpose(0, 2, 1), sin_t, cos_t)
    out *= voxel_width
    return out


@numba.njit(inline="always", **JIT)
def _sample(q, row, s, u0, Tu):
    """q[row, ·] linearly interpolated at column coordinate s (zero off the detector)."""
    a = (s - u0) / Tu
    nc = q.shape[1]
    if a < 0.0 or a > nc - 1:
        return 0.0
    k0 = int(a)
    k1 = min(k0 + 1, nc - 1)
    w = a - k0
    return (1.0 - w) * q[row, k0] + w * q[row, k1]


@numba.njit(**PARALLEL_JIT)
def novikov_view(qa, E, f, x0, y0, T, rows, cp, sp, u0, Tu, rfov2, weight):
    """f += weight · θ⊥·∇[E(x) · qa(x·θ⊥)] for one view (central differences over ±T/2).

    qa : (num_rows, num_cols) filtered data of the view; E : (num_z, num_y, num_x)
    exp(Dμ) at voxel centres (half-voxel points use the mean of the two neighbours);
    rows : (num_z,) detector row of each slice (−1: none); θ⊥ = (−sp, cp).
    """
    nz, ny, nx = f.shape
    h = 0.5 * T
    for iz in prange(nz):
        row = rows[iz]
        if row < 0:
            continue
        for j in range(ny):
            y = y0 + j * T
            for i in range(nx):
                x = x0 + i * T
                if x * x + y * y > rfov2:
                    continue
                e = E[iz, j, i]
                exp_ = 0.5 * (e + E[iz, j, min(i + 1, nx - 1)])
                exm = 0.5 * (e + E[iz, j, max(i - 1, 0)])
                eyp = 0.5 * (e + E[iz, min(j + 1, ny - 1), i])
                eym = 0.5 * (e + E[iz, max(j - 1, 0), i])
                s = -sp * x + cp * y
                dx = (exp_ * _sample(qa, row, s - sp * h, u0, Tu)
                      - exm * _sample(qa, row, s + sp * h, u0, Tu)) / T
                dy = (eyp * _sample(qa, row, s + cp * h, u0, Tu)
                      - eym * _sample(qa, row, s - cp * h, u0, Tu)) / T
                f[iz, j, i] += weight * (-sp * dx + cp * dy)
