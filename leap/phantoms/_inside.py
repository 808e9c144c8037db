"""Numba kernels: point-in-solid tests and voxelisation with oversampling."""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _axis_first(axis, a0, a1, a2):
    """The component along an object's ``axis`` (0, 1, 2: x, y, z) first, then the
    other two in order — the coordinate layout cylinders and cones are written in."""
    if axis == 0:
        return a0, a1, a2
    if axis == 1:
        return a1, a0, a2
    return a2, a0, a1


@njit(cache=True)
def _inside_local(kind, u0, u1, u2, r0, r1, r2):
    """Closed point-in-solid test in object coordinates (not normalised)."""
    if kind == 0:  # ellipsoid
        a = u0 / r0
        b = u1 / r1
        c = u2 / r2
        return a * a + b * b + c * c <= 1.0
    if kind == 1:  # parallelepiped
        return abs(u0) <= r0 and abs(u1) <= r1 and abs(u2) <= r2
    if kind <= 4:  # cylinder along x, y or z
        s, pa, pb = _axis_first(kind - 2, u0, u1, u2)
        hs, ra, rb = _axis_first(kind - 2, r0, r1, r2)
        a = pa / ra
        b = pb / rb
        return abs(s) <= hs and a * a + b * b <= 1.0
    # cones: axis coordinate s, transverse coordinates p, q, end radii ra (at
    # s=-l) and rb (at s=+l)
    s, p, q = _axis_first(kind - 5, u0, u1, u2)
    l, ra, rb = _axis_first(kind - 5, r0, r1, r2)
    if abs(s) > l:
        return False
    rho = 0.5 * (ra + rb) + 0.5 * (rb - ra) / l * s
    return p * p + q * q <= rho * rho


@njit(cache=True)
def _inside_world(kind, x0, x1, x2, cen, A, rad, clip):
    """Closed point-in-object test in world coordinates (including clipping)."""
    if clip[0] != 0.0 and x0 > clip[0]:
        return False
    if clip[1] != 0.0 and x1 > clip[1]:
        return False
    if clip[2] != 0.0 and x2 > clip[2]:
        return False
    d0 = x0 - cen[0]
    d1 = x1 - cen[1]
    d2 = x2 - cen[2]
    u0 = A[0, 0] * d0 + A[0, 1] * d1 + A[0, 2] * d2
    u1 = A[1, 0] * d0 + A[1, 1] * d1 + A[1, 2] * d2
    u2 = A[2, 0] * d0 + A[2, 1] * d1 + A[2, 2] * d2
    return _inside_local(kind, u0, u1, u2, rad[0], rad[1], rad[2])


@njit(cache=True)
def _far_outside(kind, x0, x1, x2, cen, A, rad, clip, dworld, dlocal):
    """Conservative test: True only if every point within ``dworld`` of x is outside.

    ``dlocal`` bounds the same distance in object coordinates
    (``dworld * ||A||_2``).  Used to skip sub-sampling of voxels that are
    clearly outside the object.
    """
    if clip[0] != 0.0 and x0 > clip[0] + dworld:
        return True
    if clip[1] != 0.0 and x1 > clip[1] + dworld:
        return True
    if clip[2] != 0.0 and x2 > clip[2] + dworld:
        return True
    d0 = x0 - cen[0]
    d1 = x1 - cen[1]
    d2 = x2 - cen[2]
    u0 = A[0, 0] * d0 + A[0, 1] * d1 + A[0, 2] * d2
    u1 = A[1, 0] * d0 + A[1, 1] * d1 + A[1, 2] * d2
    u2 = A[2, 0] * d0 + A[2, 1] * d1 + A[2, 2] * d2
    r0 = rad[0]
    r1 = rad[1]
    r2 = rad[2]
    if kind == 0:
        # the ellipsoid scaled by (1 + d / r_min) contains its d-neighbourhood
        g = 1.0 + dlocal / min(r0, min(r1, r2))
        a = u0 / r0
        b = u1 / r1
        c = u2 / r2
        return a * a + b * b + c * c > g * g
    if kind == 1:
        return abs(u0) > r0 + dlocal or abs(u1) > r1 + dlocal or abs(u2) > r2 + dlocal
    if kind <= 4:
        s, pa, pb = _axis_first(kind - 2, u0, u1, u2)
        hs, ra, rb = _axis_first(kind - 2, r0, r1, r2)
        if abs(s) > hs + dlocal:
            return True
        g = 1.0 + dlocal / min(ra, rb)
        a = pa / ra
        b = pb / rb
        return a * a + b * b > g * g
    s, pa, pb = _axis_first(kind - 5, u0, u1, u2)
    l, ea, eb = _axis_first(kind - 5, r0, r1, r2)
    if abs(s) > l + dlocal:
        return True
    beta = 0.5 * (eb - ea) / l
    sc = min(max(s, -l), l)
    rho = 0.5 * (ea + eb) + beta * sc + dlocal * (1.0 + abs(beta))
    return pa * pa + pb * pb > rho * rho


@njit(cache=True, inline="always")
def _voxel_value(cur, xc, yc, zc, offx, offy, offz, kind, cen, A, rad, clip, val, dworld, dlocal):
    """New value of one voxel (current value ``cur``) after applying one object."""
    nsub = offx.size * offy.size * offz.size
    if nsub == 1:
        if _inside_world(kind, xc + offx[0], yc + offy[0], zc + offz[0], cen, A, rad, clip):
            return val
        return cur
    if _far_outside(kind, xc, yc, zc, cen, A, rad, clip, dworld, dlocal):
        return cur
    if nsub > 8:
        # every object is convex: if the 8 extreme sub-samples are inside,
        # all sub-samples are
        full = True
        for cz in (offz[0], offz[offz.size - 1]):
            for cy in (offy[0], offy[offy.size - 1]):
                for cx in (offx[0], offx[offx.size - 1]):
                    if full and not _inside_world(kind, xc + cx, yc + cy, zc + cz, cen, A, rad, clip):
                        full = False
        if full:
            return val
    count = 0
    for oz in range(offz.size):
        zz = zc + offz[oz]
        for oy in range(offy.size):
            yy = yc + offy[oy]
            for ox in range(offx.size):
                if _inside_world(kind, xc + offx[ox], yy, zz, cen, A, rad, clip):
                    count += 1
    if count == nsub:
        return val
    if count == 0:
        return cur
    # LEAP's partial-volume rule: (1 - p) * old + p * value
    return cur + (count / nsub) * (val - cur)


@njit(cache=True, parallel=True)
def _voxelize_all(out, xs, ys, zs, zsel, xptr, xidx, yptr, yidx, offx, offy, offz,
                  kinds, cens, As, rads, clips, vals, dworld, dlocal):
    """Apply all objects, in order, to ``out`` (numZ, numY, numX).

    Parallel over z slices; each voxel is owned by one thread, which applies
    the objects sequentially, so the override order is preserved.
    ``zsel[o, k]`` tells whether slice k intersects object o's bounding box;
    ``xidx[xptr[o]:xptr[o+1]]`` / ``yidx[...]`` list the x / y indices inside it.
    """
    nobj = kinds.size
    for k in prange(zs.size):
        zc = zs[k]
        for o in range(nobj):
            if not zsel[o, k]:
                continue
            kind = kinds[o]
            cen = cens[o]
            A = As[o]
            rad = rads[o]
            clip = clips[o]
            val = vals[o]
            dl = dlocal[o]
            for b in range(yptr[o], yptr[o + 1]):
                j = yidx[b]
                yc = ys[j]
                for c in range(xptr[o], xptr[o + 1]):
                    i = xidx[c]
                    cur = np.float64(out[k, j, i])
                    new = _voxel_value(cur, xs[i], yc, zc, offx, offy, offz, kind, cen, A, rad, clip, val, dworld, dl)
                    if new != cur:
                        out[k, j, i] = new
