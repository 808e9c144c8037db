"""Curved-detector column footprints a row of voxel columns at a time (the cone kernels of
:mod:`leap.kernels.cpu.axial`, through :func:`leap.kernels.cpu.axial.row_footprints`).

A curved detector's column coordinate is the ray's fan angle, ``atan(u)`` of the lateral
slope u that a flat detector at unit distance would read
(:func:`leap.kernels.footprints.axial_column_footprint`). libm's ``atan`` is a scalar call:
in a loop over voxel columns it keeps the loop from being vectorised, and the two calls
per column were 0.025 s of a 128³ curved-detector back-projection's 0.32 s (one thread;
the same kernel with the arctangents left out, timing only). So the row is computed as
for a flat detector (one vectorised loop, :func:`~leap.kernels.cpu.axial.row_footprints`)
and :func:`curve_row` then turns its slopes into angles with :func:`atan_small`, a
polynomial LLVM vectorises, wherever the row's slopes all lie within
``|u| <= ATAN_MAX`` (fan angles up to 31°: clinical scanners' fans reach 25 to 27°),
and with libm otherwise.

:func:`atan_small` is within 2 units in the last place of libm's ``atan`` (equal to it
for 81 % of 4e5 slopes spread over the range; ``tests/kernels/test_curved_rows.py``). The
projector and the back-projector both take their footprints from here, so they stay
transposes; the CUDA kernels keep libdevice's ``atan``, which differs from libm's by as
little. FBP's distance weight is applied here too, so that the kernels run one copy of
the flat footprint loop.

:func:`curve_row` is compiled once, as a function the kernels call once per row of voxel
columns, rather than inlined into each of them: inlined, it added 0.8 to 1.3 s to the first
cone projection, FBP and modular projection of a fresh environment
(``benchmarks/bench_cold_start.py``); called, 0.2 to 0.4 s once. It also keeps its call
sites and loops few: it compiles in 0.22 s (0.45 s as first written, with four call
sites of :func:`atan_small`). One thread, 128³: curved-detector back-projection 0.31 →
0.28 s, projection 0.32 → 0.30 s (alternated, outputs unchanged bit for bit).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numpy.polynomial import Chebyshev, Polynomial

from ..footprints import CURVED
from ._jit import FAST_JIT, INLINE, fbp_distance_weight

#: The largest |u| whose arctangent :func:`atan_small` takes (tan 31°).
ATAN_MAX = 0.6


def _series(t):
    """``(atan(√t) − √t)/√t³ = −1/3 + t/5 − t²/7 + …`` (|t| < 1), summed from the smallest
    term up: accurate where ``atan(u) − u`` itself would cancel."""
    t = np.asarray(t, dtype=np.float64)
    total = np.zeros_like(t)
    for n in range(80, 0, -1):
        total = total + (-1.0) ** n * t ** (n - 1) / (2 * n + 1)
    return total


def _atan_coefficients(degree=12):
    """Monomial coefficients (c0, c1, …) in t = u² of :func:`_series`, interpolated at the
    Chebyshev points of ``[0, ATAN_MAX²]``: ``atan(u) = u + u·t·Σ c_i t^i`` there."""
    fit = Chebyshev.interpolate(_series, degree, domain=[0.0, ATAN_MAX * ATAN_MAX])
    return tuple(float(c) for c in fit.convert(kind=Polynomial, domain=[-1, 1],
                                              window=[-1, 1]).coef)


#: See :func:`_atan_coefficients`.
ATAN_POLY = _atan_coefficients()
_HORNER = ATAN_POLY[::-1]


@numba.njit(**INLINE)
def atan_small(u):
    """atan(u) for ``|u| <= ATAN_MAX`` (module notes); branch-free, so loops over it
    vectorise (LLVM unrolls the loop over the coefficients first)."""
    t = u * u
    p = 0.0
    for c in _HORNER:
        p = p * t + c
    return u + u * (t * p)


@numba.njit(**FAST_JIT)
def curve_row(fp, lo, hi, x0, y, cx, cy, voxel_width, sx, sy, scale, center_col, dist_sod):
    """Turn a row's flat footprints into curved-detector ones, in place.

    fp : (5, >= hi) float64 from :func:`leap.kernels.cpu.axial.row_footprints` for the flat
    model at unit distance and centre 0, without FBP's distance weight (its c_lo, c_hi
    the slopes u, its dist the depth); columns ``lo <= ix < hi`` of the row at y, view
    (cx, cy), source (sx, sy). ``scale`` = 1/atan(pixel_width/sdd) and ``center_col``,
    the curved detector's. Afterwards ``c = atan(u)·scale + center_col``, dist is the
    column's in-plane distance from the source and, where ``dist_sod > 0``, the weight
    is times FBP's distance weight, as :func:`leap.kernels.footprints.axial_column_footprint`
    and ``fbp_distance_weight`` give them for the curved model (the weights are the same
    for both models; columns behind the source keep their dist ``<= 0``).
    """
    weight, dist = fp[2], fp[3]
    wide = 0
    for ix in range(np.uintp(lo), np.uintp(hi)):
        wide += (abs(fp[0, ix]) > ATAN_MAX) + (abs(fp[1, ix]) > ATAN_MAX)
    # Few call sites and loops: each is compiled (module notes).
    for end in range(2):
        c = fp[end]
        if wide == 0:
            for ix in range(np.uintp(lo), np.uintp(hi)):
                c[ix] = atan_small(c[ix]) * scale + center_col
        else:
            for ix in range(np.uintp(lo), np.uintp(hi)):
                c[ix] = math.atan(c[ix]) * scale + center_col
    dy = y - sy
    fbp = dist_sod > 0.0
    for ix in range(np.uintp(lo), np.uintp(hi)):
        x = x0 + float(ix) * voxel_width
        dx = x - sx
        rho = math.sqrt(dx * dx + dy * dy)
        dist[ix] = rho if dist[ix] > 0.0 else dist[ix]
        # Times 1, exactly, without FBP.
        weight[ix] *= (fbp_distance_weight(np.int64(CURVED), dist_sod, x, y, cx, cy, rho)
                       if fbp else 1.0)
