"""CPU projector and matched back-projector for rotationally symmetric objects.

The object (LEAP's ``set_axisOfSymmetry``) is a function f(r, z′) of the signed radius r
and the coordinate z′ along the symmetry axis, stored as a (num_z, num_y) image: column
iy holds the ring r ∈ [|y_iy| − T/2, |y_iy| + T/2] (T = voxel width; num_y even, so
the rings of the two halves line up), the half y < 0 is the object seen left of the
axis (detector column u < 0), y > 0 the right half — as upstream, the two halves may
differ. The axis is tilted by β from +z towards the beam.

One view. In the frame of the axis, a ray with parameter t has squared distance to the
axis ``r²(t) = A t² − 2 B t + C``, axial coordinate ``z′(t) = z_s + z_k t`` and length
``L`` per unit t:

* parallel (column u, row v, mm): A = cos²β, B = v sinβ cosβ, C = u² + v² sin²β,
  z′ = v cosβ + t sinβ, L = 1;
* cone (u, v = column/row coordinate / sdd; source at (−τ, −sod, 0), t = distance
  along y from the source): X = cosβ − v sinβ, A = u² + X², B = X sod cosβ + u τ,
  C = sod² cos²β + τ², z′ = t(sinβ + v cosβ) − sod sinβ, L = √(1 + u² + v²).

Ring ir (radii [ir T, (ir+1) T]) meets the ray on two segments
``t ∈ [(B − d_out)/A, (B − d_in)/A]`` and ``[(B + d_in)/A, (B + d_out)/A]`` with
``d(r) = √max(0, B² − A(C − r²))``, each of length ``(d_out − d_in)/A``; each segment
contributes its length times f linearly interpolated in z at the segment midpoint
(nothing when the midpoint lies outside the slices). This is LEAP's Abel-type model;
the back-projector is its exact transpose: both call :func:`_ring` and
:func:`_z_taps` on identical inputs.

Parallelisation: the projector runs one detector row per thread; the back-projector
one radial column iy per thread (it alone writes f[:, iy]).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ._jit import JIT, PARALLEL_JIT

PARALLEL, CONE = 0, 1


@numba.njit(inline="always", **JIT)
def _ray(kind, u, v, cb, sb, sod, tau):
    """(A, B, C, L, z_s, z_k) of the ray through detector coordinates (u, v)."""
    if kind == PARALLEL:
        return cb * cb, v * sb * cb, u * u + v * v * sb * sb, 1.0, v * cb, sb
    X = cb - v * sb
    return (u * u + X * X, X * sod * cb + u * tau, sod * sod * cb * cb + tau * tau,
            math.sqrt(1.0 + u * u + v * v), -sod * sb, sb + v * cb)


@numba.njit(inline="always", **JIT)
def _first_ring(A, B, C, T):
    """Index of the innermost ring the ray can meet (floor of its closest approach / T)."""
    return int(math.sqrt(max(0.0, C - B * B / A)) / T)


@numba.njit(inline="always", **JIT)
def _ring(A, B, C, ir, T):
    """(segment length in t, midpoint t of the near and far segment) for ring ir."""
    r_in = ir * T
    r_out = r_in + T
    d_in = math.sqrt(max(0.0, B * B - A * (C - r_in * r_in)))
    d_out = math.sqrt(max(0.0, B * B - A * (C - r_out * r_out)))
    h = 0.5 * (d_in + d_out)
    return (d_out - d_in) / A, (B - h) / A, (B + h) / A


@numba.njit(inline="always", **JIT)
def _z_taps(zp, z0, Tz, nz):
    """Linear interpolation taps (i0, i1, w0, w1) in z; zero weights off the slices."""
    a = (zp - z0) / Tz
    if a < 0.0 or a > nz - 1:
        return 0, 0, 0.0, 0.0
    i0 = int(a)
    dz = a - i0
    return i0, min(i0 + 1, nz - 1), 1.0 - dz, dz


@numba.njit(**PARALLEL_JIT)
def project(f, g, kind, u0, Tu, v0, Tv, cb, sb, sod, tau, T, z0, Tz):
    """g (num_rows, num_cols) ← the symmetric-object projection of f (num_z, num_y)."""
    nz, ny = f.shape
    nr, nc = g.shape
    nh = ny // 2
    for j in prange(nr):
        v = v0 + j * Tv
        for k in range(nc):
            u = u0 + k * Tu
            A, B, C, L, zs, zk = _ray(kind, abs(u), v, cb, sb, sod, tau)
            acc = 0.0
            if A > 1e-12:
                for ir in range(_first_ring(A, B, C, T), nh):
                    w, ta, tb = _ring(A, B, C, ir, T)
                    if w <= 0.0:
                        continue
                    iy = nh - 1 - ir if u < 0.0 else nh + ir
                    i0, i1, w0, w1 = _z_taps(zs + zk * ta, z0, Tz, nz)
                    acc += w * (w0 * f[i0, iy] + w1 * f[i1, iy])
                    i0, i1, w0, w1 = _z_taps(zs + zk * tb, z0, Tz, nz)
                    acc += w * (w0 * f[i0, iy] + w1 * f[i1, iy])
            g[j, k] = acc * L


@numba.njit(**PARALLEL_JIT)
def backproject(g, f, kind, u0, Tu, v0, Tv, cb, sb, sod, tau, T, z0, Tz):
    """f (num_z, num_y) ← the exact transpose of :func:`project` applied to g."""
    nz, ny = f.shape
    nr, nc = g.shape
    nh = ny // 2
    for iy in prange(ny):
        left = iy < nh
        ir = nh - 1 - iy if left else iy - nh
        col = np.zeros(nz)
        for j in range(nr):
            v = v0 + j * Tv
            for k in range(nc):
                u = u0 + k * Tu
                if (u < 0.0) != left:
                    continue
                A, B, C, L, zs, zk = _ray(kind, abs(u), v, cb, sb, sod, tau)
                if A <= 1e-12 or ir < _first_ring(A, B, C, T):
                    continue
                w, ta, tb = _ring(A, B, C, ir, T)
                if w <= 0.0:
                    continue
                val = g[j, k] * w * L
                i0, i1, w0, w1 = _z_taps(zs + zk * ta, z0, Tz, nz)
                col[i0] += val * w0
                col[i1] += val * w1
                i0, i1, w0, w1 = _z_taps(zs + zk * tb, z0, Tz, nz)
                col[i0] += val * w0
                col[i1] += val * w1
        for iz in range(nz):
            f[iz, iy] = col[iz]


@numba.njit(**PARALLEL_JIT)
def inverse(q, f, kind, u0, Tu, v0, Tv, cb, sb, sod, tau, y0, T, z0, Tz, n_phi, scale):
    """FBP back-projection of symmetric objects: f (num_z, num_y) ← the filtered
    projection q (num_rows, num_cols) back-projected as if measured from ``n_phi``
    equispaced directions around the axis (every one sees the same projection).

    A point at signed radius r and angle φ about the axis maps to the column of the
    half with r's sign (upstream's mirror rule); q is linearly interpolated in the
    column (zero off the detector) and the row (clamped), and weighted by (sod/U)² for
    cone beams (U the distance from the source along the central ray), times ``scale``.
    """
    nz, ny = f.shape
    nr, nc = q.shape
    Tphi = 2.0 * math.pi / n_phi
    for iy in prange(ny):
        r = y0 + iy * T
        for iz in range(nz):
            z = z0 + iz * Tz
            acc = 0.0
            for ip in range(n_phi):
                phi = ip * Tphi - 0.5 * math.pi
                cp, sp = math.cos(phi), math.sin(phi)
                w = scale
                # the same tilt as the projector: axis a = cosβ ẑ + sinβ (beam direction)
                zw = z * cb - r * sp * sb
                if kind == PARALLEL:
                    s = r * cp
                    row = (zw - v0) / Tv
                else:
                    U = sod + r * sp * cb + z * sb
                    s = (tau - r * cp) / U
                    row = (zw / U - v0) / Tv
                    w *= (sod / U) ** 2
                if r * s < 0.0:
                    s = -s
                a = (s - u0) / Tu
                if a < 0.0 or a > nc - 1:
                    continue
                k0 = int(a)
                k1 = min(k0 + 1, nc - 1)
                ds = a - k0
                row = max(0.0, min(row, nr - 1.0))
                j0 = int(row)
                j1 = min(j0 + 1, nr - 1)
                dv = row - j0
                acc += w * ((1.0 - dv) * ((1.0 - ds) * q[j0, k0] + ds * q[j0, k1])
                            + dv * ((1.0 - ds) * q[j1, k0] + ds * q[j1, k1]))
            f[iz, iy] = acc
