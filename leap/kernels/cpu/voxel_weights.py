"""Weights per voxel of the cone kernels' columns (:mod:`leap.kernels.cpu.axial`): FBP's
slice weights (helical scans) and the vertical modular modules' ray stretch.

The modular model weights voxel k of a column by its own out-of-plane ray stretch
``√(1 + (z_k − z_s)²/ρ²)`` (:func:`ray_stretch`; ρ the column's in-plane distance from
the source, whose in-plane part is in the column weight), where the cone models weight
detector rows. That is a float64 square root per voxel, column and view, and the
square-root unit's throughput bounds it (0.8 ns a root on one core of an AVX-512 Xeon,
three cycles, the same with 512-bit vectors): as a pass of their own the roots were a
third of the vertical-module kernels' time. The kernels take them instead inside a loop
over rows, which waits on its loads and shuffles while that unit is idle: the
back-projector its own weights' roots
(:func:`leap.kernels.cpu.simd.add_interp_differences`), the projector the next voxel
column's (:func:`leap.kernels.cpu.simd.add_row_integrals`: a column's values are
weighted before the rows integrate them, :func:`weighted_increments`, so its own are
needed first). The roots no loop took (a row's first column, columns with fewer rows
than voxels) are taken in :func:`weighted_increments`' pass.
256³ cone scan as vertical modules, one thread: back-projection 4.9 → 3.4 s, projection
6.0 → 5.5 s when first moved into the loops. Both kernels take the correctly rounded
root of the same operands, bit for bit the separate pass's, so they stay exact
transposes and their outputs are unchanged. The projector's row loop now waits on that
unit (128³ bench problem, one thread: 0.62 s, 0.49 s without the roots); handing a
share of the roots to the weighting pass instead (a quarter to five eighths) did not
beat the noise.

Tried: a float32 root (a quarter of the cost as a pass of its own; its rounding steps
as the geometry moves made the geometry gradients' finite-difference checks twice as
noisy); a float32 root refined by one Newton step with a float32 reciprocal (accurate to
4e-15, 0.46 ns as a pass, but slower than the float64 root inside the loop, whose
shuffles its conversions compete with); a root from an integer first guess and four
Newton steps (as slow as the float64 root).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ._jit import INLINE


@numba.njit(**INLINE)
def squared_heights(z0, voxel_height, zs, D2):
    """``D2[k] = (z_k − zs)²``: the squared heights above the source (one view) of the
    slices k (D2 may be longer than the volume: the interpolation loop reads ahead)."""
    for k in range(D2.shape[0]):
        dz = z0 + k * voxel_height - zs
        D2[k] = dz * dz


@numba.njit(**INLINE)
def inverse_rho2(x, y, sx, sy):
    """1/ρ², ρ the in-plane distance of the column at (x, y) from the source."""
    dx = x - sx
    dy = y - sy
    return 1.0 / (dx * dx + dy * dy)


@numba.njit(**INLINE)
def ray_stretch(d2, inv_rho2):
    """√(1 + d2/ρ²): the ray stretch at a voxel centre d2 (squared height above the source,
    mm²) of a column at in-plane distance ρ from the source
    (:func:`leap.kernels.cpu.simd.add_interp_differences` takes it operation for
    operation)."""
    return math.sqrt(1.0 + d2 * inv_rho2)


@numba.njit(**INLINE)
def weighted_increments(cum, c, n, v, Q, P, p0, m, D2, inv_rho2):
    """``P[p0 + k] = (cum[c + k + 1] − cum[c + k])·v[k]·Q[k]``, ``0 <= k < n``: a column's
    voxel values (differences of its cumulative sums) times the slice weights v and the
    ray stretch Q (ones where a weight does not apply: exact). For ``k >= m`` the
    stretch is taken here instead, ``ray_stretch(D2[k], inv_rho2)``: this pass waits on
    its loads, and the square-root unit is free. Vectorised loops."""
    one = np.uintp(1)
    b = np.uintp(c)
    out = np.uintp(p0)
    top = np.uintp(min(m, n))
    for k in range(np.uintp(0), top):
        P[out + k] = (np.float64(cum[b + k + one]) - np.float64(cum[b + k])) * v[k] * Q[k]
    for k in range(top, np.uintp(n)):
        P[out + k] = ((np.float64(cum[b + k + one]) - np.float64(cum[b + k])) * v[k] *
                      ray_stretch(D2[k], inv_rho2))


@numba.njit(**INLINE)
def prefix_sum(p, p0, n, out):
    """``out[k] = Σ_{k' < k} p[p0 + k']`` for ``0 <= k <= n`` (float64).

    A running sum is one long chain of dependent additions; four chains over the
    quarters of ``p`` run side by side, and the quarters' offsets are added afterwards
    (vectorised), so the additions' latency is paid once per four entries.
    """
    m = n // 4
    q = np.uintp(p0)
    one = np.uintp(1)
    b1 = np.uintp(m)
    b2 = np.uintp(2 * m)
    b3 = np.uintp(3 * m)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    out[0] = 0.0
    for k in range(np.uintp(0), b1):
        s0 += p[q + k]
        out[k + one] = s0
        s1 += p[q + b1 + k]
        out[b1 + k + one] = s1
        s2 += p[q + b2 + k]
        out[b2 + k + one] = s2
        s3 += p[q + b3 + k]
        out[b3 + k + one] = s3
    for k in range(b3 + b1, np.uintp(n)):
        s3 += p[q + k]
        out[k + one] = s3
    for k in range(b1 + one, b2 + one):
        out[k] += s0
    s01 = s0 + s1
    for k in range(b2 + one, b3 + one):
        out[k] += s01
    s012 = s01 + s2
    for k in range(b3 + one, np.uintp(n + 1)):
        out[k] += s012
