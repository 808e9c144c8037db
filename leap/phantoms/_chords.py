"""Numba kernels: exact chords of lines through the solids and the phantom's line
integrals ("last object wins" along each line)."""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ._inside import _axis_first, _inside_world


@njit(cache=True)
def _add_root(buf, n, t):
    if math.isfinite(t):
        buf[n] = t
        return n + 1
    return n


@njit(cache=True)
def _add_quadratic_roots(buf, n, a, b, c):
    """Append the real roots of a*t^2 + 2*b*t + c = 0 to ``buf``."""
    disc = b * b - a * c
    if disc < 0.0:
        return n
    sq = math.sqrt(disc)
    qq = -(b + sq) if b >= 0.0 else -(b - sq)
    if qq != 0.0:
        if a != 0.0:
            n = _add_root(buf, n, qq / a)
        n = _add_root(buf, n, c / qq)
    elif a != 0.0:
        n = _add_root(buf, n, 0.0)
    return n


@njit(cache=True)
def _add_slab_roots(buf, n, q, w, h):
    if w != 0.0:
        n = _add_root(buf, n, (h - q) / w)
        n = _add_root(buf, n, (-h - q) / w)
    return n


@njit(cache=True)
def _sort_inplace(a, n):
    """Insertion sort of a[:n] (n is small)."""
    for i in range(1, n):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


@njit(cache=True)
def _chord(kind, cen, A, rad, clip, p, d, buf):
    """Parameter interval [t0, t1] of the line p + t d inside one object.

    Returns (t0, t1, hit).  Every object is convex, so the intersection is a
    single (possibly empty) interval.  The interval end points are roots of
    one of the bounding constraints; all such roots are collected, sorted and
    the pieces between consecutive roots are classified by a point test at
    their midpoints.
    """
    q0 = p[0] - cen[0]
    q1 = p[1] - cen[1]
    q2 = p[2] - cen[2]
    u0 = A[0, 0] * q0 + A[0, 1] * q1 + A[0, 2] * q2
    u1 = A[1, 0] * q0 + A[1, 1] * q1 + A[1, 2] * q2
    u2 = A[2, 0] * q0 + A[2, 1] * q1 + A[2, 2] * q2
    w0 = A[0, 0] * d[0] + A[0, 1] * d[1] + A[0, 2] * d[2]
    w1 = A[1, 0] * d[0] + A[1, 1] * d[1] + A[1, 2] * d[2]
    w2 = A[2, 0] * d[0] + A[2, 1] * d[1] + A[2, 2] * d[2]
    r0 = rad[0]
    r1 = rad[1]
    r2 = rad[2]

    n = 0
    if kind == 0:
        a0 = w0 / r0
        a1 = w1 / r1
        a2 = w2 / r2
        b0 = u0 / r0
        b1 = u1 / r1
        b2 = u2 / r2
        n = _add_quadratic_roots(
            buf, n, a0 * a0 + a1 * a1 + a2 * a2, a0 * b0 + a1 * b1 + a2 * b2, b0 * b0 + b1 * b1 + b2 * b2 - 1.0
        )
    elif kind == 1:
        n = _add_slab_roots(buf, n, u0, w0, r0)
        n = _add_slab_roots(buf, n, u1, w1, r1)
        n = _add_slab_roots(buf, n, u2, w2, r2)
    elif kind <= 4:
        s, pa, pb = _axis_first(kind - 2, u0, u1, u2)
        ws, wa, wb = _axis_first(kind - 2, w0, w1, w2)
        hs, ra, rb = _axis_first(kind - 2, r0, r1, r2)
        n = _add_slab_roots(buf, n, s, ws, hs)
        ga = wa / ra
        gb = wb / rb
        ha = pa / ra
        hb = pb / rb
        n = _add_quadratic_roots(buf, n, ga * ga + gb * gb, ga * ha + gb * hb, ha * ha + hb * hb - 1.0)
    else:
        s, pa, pb = _axis_first(kind - 5, u0, u1, u2)
        ws, wa, wb = _axis_first(kind - 5, w0, w1, w2)
        l, ea, eb = _axis_first(kind - 5, r0, r1, r2)
        n = _add_slab_roots(buf, n, s, ws, l)
        alpha = 0.5 * (ea + eb)
        beta = 0.5 * (eb - ea) / l
        rho0 = alpha + beta * s
        rho1 = beta * ws
        n = _add_quadratic_roots(
            buf,
            n,
            wa * wa + wb * wb - rho1 * rho1,
            pa * wa + pb * wb - rho0 * rho1,
            pa * pa + pb * pb - rho0 * rho0,
        )
    # clipping planes (world coordinates)
    for i in range(3):
        if clip[i] != 0.0 and d[i] != 0.0:
            n = _add_root(buf, n, (clip[i] - p[i]) / d[i])

    if n < 2:
        return 0.0, 0.0, False
    _sort_inplace(buf, n)

    t0 = 0.0
    t1 = 0.0
    hit = False
    for i in range(n - 1):
        lo = buf[i]
        hi = buf[i + 1]
        if hi <= lo:
            continue
        tm = 0.5 * (lo + hi)
        if _inside_world(kind, p[0] + tm * d[0], p[1] + tm * d[1], p[2] + tm * d[2], cen, A, rad, clip):
            if not hit:
                t0 = lo
                hit = True
            t1 = hi
    return t0, t1, hit


@njit(cache=True)
def _ray_integral(s, dr, kinds, cens, As, rads, clips, vals, brad2, buf, idx, t0s, t1s, ends, p, d):
    """Exact integral along one full line with "last object wins" overlaps."""
    nrm = math.sqrt(dr[0] * dr[0] + dr[1] * dr[1] + dr[2] * dr[2])
    d[0] = dr[0] / nrm
    d[1] = dr[1] / nrm
    d[2] = dr[2] / nrm
    # re-anchor the line at its point closest to the origin (keeps t small)
    sd = s[0] * d[0] + s[1] * d[1] + s[2] * d[2]
    p[0] = s[0] - sd * d[0]
    p[1] = s[1] - sd * d[1]
    p[2] = s[2] - sd * d[2]

    m = 0
    for o in range(kinds.size):
        # bounding-sphere rejection
        v0 = cens[o, 0] - p[0]
        v1 = cens[o, 1] - p[1]
        v2 = cens[o, 2] - p[2]
        vd = v0 * d[0] + v1 * d[1] + v2 * d[2]
        if v0 * v0 + v1 * v1 + v2 * v2 - vd * vd > brad2[o]:
            continue
        ta, tb, hit = _chord(kinds[o], cens[o], As[o], rads[o], clips[o], p, d, buf)
        if hit and tb > ta:
            idx[m] = o
            t0s[m] = ta
            t1s[m] = tb
            m += 1
    if m == 0:
        return 0.0
    for e in range(m):
        ends[2 * e] = t0s[e]
        ends[2 * e + 1] = t1s[e]
    ne = 2 * m
    _sort_inplace(ends, ne)
    acc = 0.0
    for e in range(ne - 1):
        lo = ends[e]
        hi = ends[e + 1]
        if hi <= lo:
            continue
        tm = 0.5 * (lo + hi)
        # the last object containing this piece wins
        for g in range(m - 1, -1, -1):
            if t0s[g] <= tm and tm <= t1s[g]:
                acc += vals[idx[g]] * (hi - lo)
                break
    return acc


@njit(cache=True, parallel=True)
def _line_integrals(src, dirs, kinds, cens, As, rads, clips, vals, brad2, out):
    """Exact line integrals for all rays (parallel over chunks of rays)."""
    nrays = src.shape[0]
    nobj = kinds.size
    chunk = 64
    nchunks = (nrays + chunk - 1) // chunk
    for ch in prange(nchunks):
        buf = np.empty(16)
        idx = np.empty(nobj, np.int64)
        t0s = np.empty(nobj)
        t1s = np.empty(nobj)
        ends = np.empty(2 * nobj)
        p = np.empty(3)
        d = np.empty(3)
        stop = min(nrays, (ch + 1) * chunk)
        for r in range(ch * chunk, stop):
            out[r] = _ray_integral(
                src[r], dirs[r], kinds, cens, As, rads, clips, vals, brad2, buf, idx, t0s, t1s, ends, p, d
            )


# ---------------------------------------------------------------------------
# Phantom
# ---------------------------------------------------------------------------
