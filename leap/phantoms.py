"""Analytic phantoms built from simple geometric solids.

This module is a framework-neutral (NumPy + Numba) implementation of the
phantom machinery of LEAP: a phantom is an *ordered* list of solids
(ellipsoids, parallelepipeds, elliptic cylinders and circular cone frusta),
each with a constant value.  The phantom can be

* voxelised onto a regular grid (:meth:`Phantom.voxelize`), optionally with
  sub-voxel oversampling to model the partial-volume effect, and
* integrated exactly along straight lines (:meth:`Phantom.line_integrals`),
  which is what an analytic ray-tracing simulation needs.

Conventions
-----------
* Lengths are in millimetres, values are linear attenuation coefficients in
  1/mm (so line integrals are dimensionless).
* World coordinates are ``(x, y, z)``; voxel volumes are stored as
  ``(numZ, numY, numX)`` float32 C-contiguous arrays.
* **Later objects override earlier ones.**  Where objects overlap, the value
  of the phantom is the value of the *last* object (in insertion order) that
  contains the point; values are never summed.  A value of ``0`` therefore
  carves a hole (e.g. an air cavity) into whatever was defined before it.
  Background objects must be added first.  Voxelisation and line integrals
  use the same rule, so the line integrals are the continuum limit of
  integrating the voxelised volume.
* An object occupies the closed set ``{x : inside(A @ (x - centre))}``, where
  ``A`` is the object's ``rotation`` matrix and ``inside`` tests the
  axis-aligned solid described by ``kind`` and ``radii``.  ``A`` maps a world
  offset to the object's own axes, i.e. the solid is rotated by ``A.T``.
* ``clip``: for every axis ``i`` with ``clip[i] != 0`` the object is cut by
  the world-coordinate plane ``x_i = clip[i]`` (mm) and only the part with
  ``x_i <= clip[i]`` is kept.  ``clip[i] == 0`` means "no clipping on that
  axis" (so a cut exactly at ``x_i = 0`` cannot be expressed; use a tiny
  non-zero value instead).

Relation to upstream LEAP
-------------------------
The object codes, parameter meanings, override rule, oversampling rule and
the FORBILD head definition follow LEAP (``phantom.cpp``,
``analytic_ray_tracing.cpp``, ``leapctype.py``).  Where upstream's code paths
disagree with each other, one consistent definition is used here:

* ``clip`` follows upstream's analytic ray tracer (absolute world plane,
  keep ``x_i <= clip[i]``).  Upstream's voxelisers instead cut through the
  object centre in object coordinates, removing the side given by the sign
  of ``clip[i]``; both agree for the only upstream use (the FORBILD ear,
  ``clip = centre_x = 91 mm``, unrotated).
* Cones are rotated about their centre (upstream effectively rotates them
  about their apex) and clip planes apply to cones too.
* Line integrals of cones are exact for every ray direction.

The module is self-contained; it does not depend on any other ``leap``
module.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
from numba import njit, prange

__all__ = [
    "ELLIPSOID",
    "PARALLELEPIPED",
    "CYLINDER_X",
    "CYLINDER_Y",
    "CYLINDER_Z",
    "CONE_X",
    "CONE_Y",
    "CONE_Z",
    "KIND_NAMES",
    "PhantomObject",
    "Phantom",
    "rotation_matrix",
    "forbild_head",
    "shepp_logan_3d",
]

# ---------------------------------------------------------------------------
# Object type codes (same integer codes as LEAP's ``addObject``)
# ---------------------------------------------------------------------------
ELLIPSOID = 0
PARALLELEPIPED = 1
CYLINDER_X = 2
CYLINDER_Y = 3
CYLINDER_Z = 4
CONE_X = 5
CONE_Y = 6
CONE_Z = 7

KIND_NAMES = {
    ELLIPSOID: "ELLIPSOID",
    PARALLELEPIPED: "PARALLELEPIPED",
    CYLINDER_X: "CYLINDER_X",
    CYLINDER_Y: "CYLINDER_Y",
    CYLINDER_Z: "CYLINDER_Z",
    CONE_X: "CONE_X",
    CONE_Y: "CONE_Y",
    CONE_Z: "CONE_Z",
}


# ---------------------------------------------------------------------------
# Input validation helpers
# ---------------------------------------------------------------------------
def _as_real_array(value, name: str) -> np.ndarray:
    """Convert ``value`` to a float64 array, rejecting non-real input."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{name}: expected a real numeric array, got {type(value).__name__}") from exc
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name}: expected a real numeric (integer or floating) array, got dtype {arr.dtype}")
    return arr.astype(np.float64, copy=True)


def _vector3(value, name: str) -> np.ndarray:
    arr = _as_real_array(value, name)
    if arr.ndim == 0:
        raise ValueError(f"{name}: expected 3 numbers (x, y, z), got a scalar {arr.item()!r}")
    if arr.shape != (3,):
        raise ValueError(f"{name}: expected shape (3,), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got {arr.tolist()}")
    return arr


def _readonly(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr, dtype=np.float64, copy=True)
    arr.setflags(write=False)
    return arr


# ---------------------------------------------------------------------------
# PhantomObject
# ---------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class PhantomObject:
    """One solid of a phantom.

    Parameters
    ----------
    kind : int
        Object type, one of :data:`ELLIPSOID` (0), :data:`PARALLELEPIPED` (1),
        :data:`CYLINDER_X` (2), :data:`CYLINDER_Y` (3), :data:`CYLINDER_Z` (4),
        :data:`CONE_X` (5), :data:`CONE_Y` (6), :data:`CONE_Z` (7).
    centre : array_like, shape (3,)
        ``(x, y, z)`` centre of the object in mm.
    radii : array_like, shape (3,)
        Size parameters in mm, expressed in the object's own (rotated) axes:

        * ``ELLIPSOID``: semi-axes ``(a, b, c)``;
        * ``PARALLELEPIPED``: half side lengths ``(a, b, c)``;
        * ``CYLINDER_X``: ``(half-length, radius_y, radius_z)`` (elliptic
          cross-section); ``CYLINDER_Y`` / ``CYLINDER_Z`` likewise with the
          half-length at index 1 / 2;
        * ``CONE_X``: ``(half-length l, r1, r2)`` -- a circular cone frustum
          along x with radius ``r1`` at ``x = -l`` and ``r2`` at ``x = +l``
          (object axes); ``CONE_Y``: ``(r1, l, r2)``; ``CONE_Z``:
          ``(r1, r2, l)``.  One (not both) of the end radii may be zero.

        All other size parameters must be > 0.
    value : float
        Value inside the object (attenuation per mm).
    rotation : array_like, shape (3, 3), optional
        Matrix ``A`` mapping world offsets to object axes:
        ``u = A @ (x - centre)``.  Normally a rotation matrix; any finite,
        non-singular matrix is accepted.  Default: identity.
    clip : array_like, shape (3,), optional
        Clipping planes in world coordinates (mm): for each axis ``i`` with
        ``clip[i] != 0`` only the part of the object with ``x_i <= clip[i]``
        is kept.  Default: no clipping (zeros).

    Notes
    -----
    Instances are immutable; the array attributes are read-only float64
    copies of the inputs.
    """

    kind: int
    centre: np.ndarray
    radii: np.ndarray
    value: float
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    clip: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def __post_init__(self):
        kind = self.kind
        if isinstance(kind, (bool, np.bool_)) or not isinstance(kind, numbers.Integral):
            raise ValueError(
                f"kind: expected an integer object code in 0..7 ({', '.join(f'{k}={v}' for k, v in KIND_NAMES.items())}), "
                f"got {kind!r} of type {type(kind).__name__}"
            )
        kind = int(kind)
        if kind not in KIND_NAMES:
            raise ValueError(f"kind: expected an integer object code in 0..7, got {kind}")

        centre = _vector3(self.centre, "centre")
        radii = _vector3(self.radii, "radii")
        if kind in (CONE_X, CONE_Y, CONE_Z):
            axis = kind - CONE_X
            ends = [radii[i] for i in range(3) if i != axis]
            if not radii[axis] > 0.0:
                raise ValueError(
                    f"radii: the cone half-length radii[{axis}] must be > 0 mm, got {radii[axis]!r} (radii={radii.tolist()})"
                )
            if min(ends) < 0.0 or max(ends) <= 0.0:
                raise ValueError(
                    f"radii: cone end radii must be >= 0 mm and not both zero, got {ends} (radii={radii.tolist()})"
                )
        elif not np.all(radii > 0.0):
            raise ValueError(f"radii: expected three positive values (mm), got {radii.tolist()}")

        value = self.value
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise ValueError(f"value: expected a real number, got {value!r} of type {type(value).__name__}")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"value: expected a finite number, got {value!r}")

        rotation = _as_real_array(self.rotation, "rotation")
        if rotation.shape != (3, 3):
            raise ValueError(f"rotation: expected a 3x3 matrix, got shape {rotation.shape}")
        if not np.all(np.isfinite(rotation)):
            raise ValueError("rotation: expected finite values, got non-finite entries")
        det = float(np.linalg.det(rotation))
        scale = float(np.max(np.abs(rotation))) ** 3
        if scale == 0.0 or abs(det) <= 1e-12 * scale:
            raise ValueError(f"rotation: expected a non-singular 3x3 matrix, got determinant {det!r}")

        clip = _vector3(self.clip, "clip")

        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "centre", _readonly(centre))
        object.__setattr__(self, "radii", _readonly(radii))
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "rotation", _readonly(rotation))
        object.__setattr__(self, "clip", _readonly(clip))

    # dataclass-generated __eq__ would compare arrays elementwise; do it properly.
    def __eq__(self, other):
        if not isinstance(other, PhantomObject):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.value == other.value
            and np.array_equal(self.centre, other.centre)
            and np.array_equal(self.radii, other.radii)
            and np.array_equal(self.rotation, other.rotation)
            and np.array_equal(self.clip, other.clip)
        )

    def __hash__(self):
        return hash(
            (
                self.kind,
                self.value,
                self.centre.tobytes(),
                self.radii.tobytes(),
                self.rotation.tobytes(),
                self.clip.tobytes(),
            )
        )

    def __repr__(self):
        parts = [
            f"kind={KIND_NAMES[self.kind]}",
            f"centre={self.centre.tolist()}",
            f"radii={self.radii.tolist()}",
            f"value={self.value!r}",
        ]
        if not np.array_equal(self.rotation, np.eye(3)):
            parts.append(f"rotation={self.rotation.tolist()}")
        if np.any(self.clip != 0.0):
            parts.append(f"clip={self.clip.tolist()}")
        return f"PhantomObject({', '.join(parts)})"

    @property
    def is_cone(self) -> bool:
        return self.kind in (CONE_X, CONE_Y, CONE_Z)

    def local_half_extents(self) -> np.ndarray:
        """Half extents (mm) of the object's bounding box in its own axes, shape (3,)."""
        if self.is_cone:
            axis = self.kind - CONE_X
            rmax = max(self.radii[i] for i in range(3) if i != axis)
            ext = np.full(3, rmax)
            ext[axis] = self.radii[axis]
            return ext
        return self.radii.copy()

    def world_half_extents(self) -> np.ndarray:
        """Half extents (mm) of an axis-aligned world box around ``centre`` containing the object, shape (3,)."""
        inv = np.linalg.inv(self.rotation)
        return np.abs(inv) @ self.local_half_extents()

    def volume(self) -> float:
        """Analytic volume in mm^3 of the *unclipped* object."""
        r = self.radii
        vol_scale = 1.0 / abs(float(np.linalg.det(self.rotation)))
        if self.kind == ELLIPSOID:
            v = 4.0 / 3.0 * math.pi * r[0] * r[1] * r[2]
        elif self.kind == PARALLELEPIPED:
            v = 8.0 * r[0] * r[1] * r[2]
        elif self.kind in (CYLINDER_X, CYLINDER_Y, CYLINDER_Z):
            axis = self.kind - CYLINDER_X
            a, b = (r[i] for i in range(3) if i != axis)
            v = 2.0 * r[axis] * math.pi * a * b
        else:
            axis = self.kind - CONE_X
            r1, r2 = (r[i] for i in range(3) if i != axis)
            v = math.pi * 2.0 * r[axis] / 3.0 * (r1 * r1 + r1 * r2 + r2 * r2)
        return float(v * vol_scale)


# ---------------------------------------------------------------------------
# Numba kernels
# ---------------------------------------------------------------------------
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
def _coords(value, name: str) -> np.ndarray:
    arr = _as_real_array(value, name)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of voxel-centre coordinates (mm), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite coordinates, got NaN or inf")
    return np.ascontiguousarray(arr)


def _positive_scalar(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: expected a positive real number (mm), got {value!r}")
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name}: expected a positive finite number (mm), got {v!r}")
    return v


def _rays(value, name: str) -> np.ndarray:
    arr = _as_real_array(value, name)
    if arr.ndim == 1 and arr.shape == (3,):
        arr = arr[None, :]
    if arr.ndim != 2 or arr.shape[1] != 3:
        raise ValueError(f"{name}: expected shape (N, 3) (or (3,) for a single vector), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: expected finite values, got NaN or inf")
    return arr


class Phantom:
    """An ordered collection of :class:`PhantomObject` solids.

    Later objects override earlier ones wherever they overlap (LEAP
    semantics); see the module docstring.

    Parameters
    ----------
    objects : iterable of PhantomObject, optional
        Initial objects, in order.
    """

    def __init__(self, objects: Sequence[PhantomObject] | None = None):
        self._objects: list[PhantomObject] = []
        self._packed = None
        if objects is not None:
            for obj in objects:
                self.add(obj)

    # -- container protocol -------------------------------------------------
    def add(self, obj: PhantomObject) -> "Phantom":
        """Append ``obj`` (it overrides all previously added objects where they overlap).

        Returns ``self`` so that calls can be chained.
        """
        if not isinstance(obj, PhantomObject):
            raise TypeError(f"Phantom.add: expected a PhantomObject, got {type(obj).__name__}")
        self._objects.append(obj)
        self._packed = None
        return self

    def clear(self) -> None:
        """Remove all objects."""
        self._objects.clear()
        self._packed = None

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[PhantomObject]:
        return iter(list(self._objects))

    def __getitem__(self, index):
        return self._objects[index]

    @property
    def objects(self) -> tuple[PhantomObject, ...]:
        """The objects, in order (a tuple snapshot)."""
        return tuple(self._objects)

    def __repr__(self) -> str:
        return f"Phantom({len(self)} objects)"

    def scale(self, factor) -> "Phantom":
        """Scale the phantom geometry in place about the origin.

        ``centre[i]``, ``radii[i]`` and ``clip[i]`` are multiplied by
        ``factor[i]`` (as LEAP's ``scalePhantom`` does); values and rotations
        are unchanged.

        Parameters
        ----------
        factor : float or array_like, shape (3,)
            Positive scale factor(s) ``(sx, sy, sz)``.  A uniform factor scales
            every object exactly.  Non-uniform factors are exact only for
            unrotated, non-cone objects (``radii`` are in object axes, and a
            cone's end radii are scaled by the factors of their slots).

        Returns
        -------
        Phantom
            ``self``.
        """
        f = _as_real_array(factor, "factor")
        if f.ndim == 0:
            f = np.full(3, float(f))
        if f.shape != (3,) or not np.all(np.isfinite(f)) or not np.all(f > 0.0):
            raise ValueError(f"factor: expected a positive number or three positive numbers, got {np.asarray(factor).tolist()}")
        new = []
        for o in self._objects:
            new.append(
                PhantomObject(
                    kind=o.kind,
                    centre=o.centre * f,
                    radii=o.radii * f,
                    value=o.value,
                    rotation=o.rotation,
                    clip=o.clip * f,
                )
            )
        self._objects = new
        self._packed = None
        return self

    # -- packed representation for the kernels -------------------------------
    def _pack(self):
        if self._packed is None:
            n = len(self._objects)
            kinds = np.empty(n, np.int64)
            cens = np.empty((n, 3))
            As = np.empty((n, 3, 3))
            rads = np.empty((n, 3))
            clips = np.empty((n, 3))
            vals = np.empty(n)
            ext = np.empty((n, 3))
            for i, o in enumerate(self._objects):
                kinds[i] = o.kind
                cens[i] = o.centre
                As[i] = o.rotation
                rads[i] = o.radii
                clips[i] = o.clip
                vals[i] = o.value
                ext[i] = o.world_half_extents()
            # bounding sphere (slightly inflated for rounding safety)
            brad2 = np.sum(ext * ext, axis=1) * (1.0 + 1e-9) + 1e-12
            norms2 = np.array([np.linalg.norm(A, 2) for A in As]) if n else np.zeros(0)
            self._packed = (kinds, cens, As, rads, clips, vals, ext, brad2, norms2)
        return self._packed

    # -- voxelisation --------------------------------------------------------
    def voxelize(self, x, y, z, voxel_width, voxel_height, oversampling=1, out=None):
        """Voxelise the phantom onto a regular grid.

        Objects are applied in order; each one *replaces* (does not add to)
        the current voxel values.  With ``oversampling = n > 1`` every voxel is
        probed at ``n**3`` sub-sample points and, if a fraction ``p`` of them
        lies inside the object, the voxel becomes
        ``(1 - p) * old + p * value`` (so a voxel fully inside is set to
        ``value`` and one fully outside is untouched).  As in LEAP, the
        sub-sample offsets along x are
        ``voxel_width / (n + 1) * (k - (n - 1) / 2)``, ``k = 0 .. n-1``
        (likewise y, and z with ``voxel_height``).  With ``n = 1`` each voxel
        centre is tested and the voxel is overwritten if it is inside.

        Parameters
        ----------
        x : array_like, shape (numX,)
            Voxel-centre x coordinates (mm).
        y : array_like, shape (numY,)
            Voxel-centre y coordinates (mm).
        z : array_like, shape (numZ,)
            Voxel-centre z coordinates (mm).
        voxel_width : float
            Voxel size along x and y (mm), > 0.
        voxel_height : float
            Voxel size along z (mm), > 0.
        oversampling : int, optional
            Sub-samples per voxel and axis, >= 1 (default 1).  (LEAP silently
            caps this at 5; no cap is applied here.)
        out : numpy.ndarray, shape (numZ, numY, numX), float32, optional
            C-contiguous, writeable array to draw into; its current contents
            are the background that the objects override.  If omitted a
            zero-filled array is allocated.

        Returns
        -------
        numpy.ndarray, shape (numZ, numY, numX), float32
            The voxelised phantom (``out`` itself when given).
        """
        xs = _coords(x, "x")
        ys = _coords(y, "y")
        zs = _coords(z, "z")
        vw = _positive_scalar(voxel_width, "voxel_width")
        vh = _positive_scalar(voxel_height, "voxel_height")
        if isinstance(oversampling, (bool, np.bool_)) or not isinstance(oversampling, numbers.Integral):
            raise ValueError(f"oversampling: expected a positive integer, got {oversampling!r}")
        os_ = int(oversampling)
        if os_ < 1:
            raise ValueError(f"oversampling: expected a positive integer (>= 1), got {os_}")
        shape = (zs.size, ys.size, xs.size)
        if out is None:
            out = np.zeros(shape, dtype=np.float32)
        else:
            if not isinstance(out, np.ndarray):
                raise ValueError(f"out: expected a numpy.ndarray, got {type(out).__name__}")
            if out.dtype != np.float32:
                raise ValueError(f"out: expected dtype float32, got {out.dtype}")
            if out.shape != shape:
                raise ValueError(f"out: expected shape (numZ, numY, numX) = {shape}, got {out.shape}")
            if not out.flags.c_contiguous:
                raise ValueError("out: expected a C-contiguous array, got a non-contiguous one")
            if not out.flags.writeable:
                raise ValueError("out: expected a writeable array, got a read-only one")
        if len(self._objects) == 0:
            return out

        k = np.arange(os_, dtype=np.float64) - 0.5 * (os_ - 1)
        offx = vw / (os_ + 1) * k
        offz = vh / (os_ + 1) * k
        kinds, cens, As, rads, clips, vals, ext, _, norms2 = self._pack()
        # every sub-sample lies within ``dworld`` of its voxel centre
        dworld = float(np.sqrt(2.0 * offx[-1] ** 2 + offz[-1] ** 2)) * (1.0 + 1e-9)
        dlocal = dworld * norms2 * (1.0 + 1e-9)
        # per-object voxel index ranges (bounding box grown by one voxel)
        sel = []
        for axis, (coords, size) in enumerate(((xs, vw), (ys, vw), (zs, vh))):
            mask = np.abs(coords[None, :] - cens[:, axis : axis + 1]) <= ext[:, axis : axis + 1] + size
            clipped = clips[:, axis] != 0.0
            mask[clipped] &= coords[None, :] <= clips[clipped, axis : axis + 1] + size
            sel.append(mask)
        xmask, ymask, zmask = sel
        empty = ~(xmask.any(axis=1) & ymask.any(axis=1))
        zmask[empty] = False
        xptr = np.concatenate(([0], np.cumsum(xmask.sum(axis=1)))).astype(np.int64)
        yptr = np.concatenate(([0], np.cumsum(ymask.sum(axis=1)))).astype(np.int64)
        xidx = np.nonzero(xmask)[1].astype(np.int64)
        yidx = np.nonzero(ymask)[1].astype(np.int64)
        _voxelize_all(
            out, xs, ys, zs, zmask, xptr, xidx, yptr, yidx, offx, offx, offz,
            kinds, cens, As, rads, clips, vals, dworld, dlocal,
        )
        return out

    # -- analytic line integrals ----------------------------------------------
    def line_integrals(self, sources, directions):
        """Exact line integrals of the phantom along full lines.

        For each ray the integral of the phantom function over the whole line
        ``{sources[i] + t * directions[i] : t in (-inf, inf)}`` is computed
        analytically, with the same "last object wins" overlap rule as
        :meth:`voxelize` (it is the continuum limit of integrating the
        voxelised phantom).  Any point on the line may be given as the
        source; the position along the line does not matter.

        Parameters
        ----------
        sources : array_like, shape (N, 3)
            A point on each line (mm).  A single (3,) vector is broadcast.
        directions : array_like, shape (N, 3)
            Direction of each line; normalised internally, must be non-zero.
            A single (3,) vector is broadcast.

        Returns
        -------
        numpy.ndarray, shape (N,), float64
            Line integrals (value x mm, i.e. dimensionless for 1/mm values).
        """
        src = _rays(sources, "sources")
        dirs = _rays(directions, "directions")
        if src.shape[0] != dirs.shape[0]:
            if src.shape[0] == 1:
                src = np.broadcast_to(src, dirs.shape)
            elif dirs.shape[0] == 1:
                dirs = np.broadcast_to(dirs, src.shape)
            else:
                raise ValueError(
                    f"sources and directions: expected the same number of rays, got {src.shape[0]} and {dirs.shape[0]}"
                )
        norms = np.sqrt(np.sum(dirs * dirs, axis=1))
        if np.any(norms == 0.0):
            bad = int(np.flatnonzero(norms == 0.0)[0])
            raise ValueError(f"directions: expected non-zero vectors, got a zero vector at row {bad}")
        # normalise here as well (guards against overflow for huge vectors)
        dirs = dirs / norms[:, None]
        src = np.ascontiguousarray(src, dtype=np.float64)
        dirs = np.ascontiguousarray(dirs, dtype=np.float64)
        n = src.shape[0]
        out = np.zeros(n, dtype=np.float64)
        if n == 0 or len(self._objects) == 0:
            return out
        kinds, cens, As, rads, clips, vals, _, brad2, _ = self._pack()
        _line_integrals(src, dirs, kinds, cens, As, rads, clips, vals, brad2, out)
        return out


# ---------------------------------------------------------------------------
# Standard phantoms
# ---------------------------------------------------------------------------
def rotation_matrix(axis: str, degrees: float) -> np.ndarray:
    """Matrix of a right-handed rotation by ``degrees`` about a coordinate axis.

    Parameters
    ----------
    axis : {'x', 'y', 'z'}
        Rotation axis.
    degrees : float
        Rotation angle in degrees (counter-clockwise looking down the axis).

    Returns
    -------
    numpy.ndarray, shape (3, 3), float64
        E.g. for ``'z'``: ``[[c, -s, 0], [s, c, 0], [0, 0, 1]]``.
    """
    th = math.radians(float(degrees))
    c, s = math.cos(th), math.sin(th)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == "y":
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    if axis == "z":
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"axis: expected 'x', 'y' or 'z', got {axis!r}")


# FORBILD head as defined by LEAP's ``set_FORBILD`` (lengths in cm, values as
# densities relative to water; converted below to mm and 1/mm).
# columns: kind, centre (cm), radii (cm), density, rotation (axis, degrees) or None, clip (cm) or None
_COS15 = math.cos(math.radians(15.0))
_FORBILD_CM = (
    (ELLIPSOID, (0.0, 0.0, 0.0), (9.6, 12.0, 12.5), 1.800, None, None),  # skull
    (ELLIPSOID, (0.0, 0.0, 0.0), (9.0, 11.4, 11.9), 1.050, None, None),  # brain
    (ELLIPSOID, (-4.7, 4.3, 0.872), (2.0, 2.0, 2.0), 1.060, None, None),  # eyes
    (ELLIPSOID, (4.7, 4.3, 0.872), (2.0, 2.0, 2.0), 1.060, None, None),
    (ELLIPSOID, (-1.08, -9.0, 0.0), (0.4, 0.4, 0.4), 1.0525, None, None),  # low-contrast spheres
    (ELLIPSOID, (1.08, -9.0, 0.0), (0.4, 0.4, 0.4), 1.0475, None, None),
    (ELLIPSOID, (0.0, 8.4, 0.0), (1.8, 3.0, 3.0), 0.0, None, None),  # frontal sinus (air)
    (ELLIPSOID, (-1.9, 5.4, 0.0), (1.206483 * _COS15, 0.420276 * _COS15, 3.0), 1.800, ("z", -120.0), None),
    (ELLIPSOID, (1.9, 5.4, 0.0), (1.2 * _COS15, 0.42 * _COS15, 3.0), 1.800, ("z", 120.0), None),
    (CYLINDER_Z, (-4.3, 6.8, -1.0), (1.8, 0.24, 2.0), 1.800, ("z", -150.0), None),
    (CYLINDER_Z, (4.3, 6.8, -1.0), (1.8, 0.24, 2.0), 1.800, ("z", -30.0), None),
    (ELLIPSOID, (0.0, -3.6, 0.0), (1.8, 3.6, 3.6), 1.045, None, None),  # ventricle
    (ELLIPSOID, (6.393945, -6.393945, 0.0), (1.2, 0.42, 1.2), 1.055, ("z", -58.1), None),  # blood clot
    (CYLINDER_Z, (0.0, 3.6, 0.0), (1.2, 4.0, 0.25 * _COS15), 1.800, ("x", 60.0), None),
    (CYLINDER_X, (0.0, 9.6, 0.0), (0.525561 / 2.0, 2.0, 0.4), 1.800, ("x", -60.0), None),
    (CONE_Y, (0.0, -11.15, -0.2), (0.5, 0.75, 0.2), 1.800, None, None),  # back of the skull
    (CONE_Y, (0.0, -11.15, 0.2), (0.5, 0.75, 0.2), 1.800, None, None),
    (ELLIPSOID, (9.1, 0.0, 0.0), (4.2, 1.8, 1.8), 1.800, None, (9.1, 0.0, 0.0)),  # ear (bone)
)

# Air cells of the ear: spheres of radius 0.15 cm on a staggered lattice.
# y = j * 0.3464 cm, z = k * 0.3464 cm for j, k in -3..3; along x the spheres
# start at 8.8 cm (j + k even) or 8.6 cm (j + k odd) and continue towards -x
# in steps of 0.4 cm; the number of spheres depends on (|j|, |k|):
_EAR_COUNTS = (  # rows |k| = 0..3 (z), columns |j| = 0..3 (y)
    (9, 8, 8, 6),
    (8, 8, 7, 6),
    (8, 7, 7, 5),
    (6, 6, 5, 4),
)
_EAR_STEP_CM = 0.3464


def _ear_cavities_cm():
    pts = []
    for k in (-3, 3, -2, 2, -1, 1, 0):
        for j in (-3, -2, -1, 3, 2, 1, 0):
            x0 = 8.8 if (j + k) % 2 == 0 else 8.6
            for m in range(_EAR_COUNTS[abs(k)][abs(j)]):
                pts.append((round(x0 - 0.4 * m, 6), j * _EAR_STEP_CM, k * _EAR_STEP_CM))
    return pts


_WATER_MU_PER_MM = 0.02


def forbild_head(include_ear: bool = True) -> Phantom:
    """The 3-D FORBILD head phantom as defined by LEAP's ``set_FORBILD``.

    Coordinates are in mm (the classical definition in cm multiplied by
    10) and values are linear attenuation coefficients in 1/mm: the FORBILD
    densities multiplied by 0.02 (about the attenuation of water at 60 keV),
    e.g. bone 1.8 * 0.02 = 0.036, brain 1.05 * 0.02 = 0.021.  The phantom
    fits in about [-96, 96] x [-120, 120] x [-125, 125] mm.

    Parameters
    ----------
    include_ear : bool, optional
        Add the 317 air cells (radius 1.5 mm, value 0) of the right ear
        (default True).

    Returns
    -------
    Phantom
        18 objects (335 with the ear cells), in LEAP's order.
    """
    ph = Phantom()
    for kind, c, r, dens, rot, clip in _FORBILD_CM:
        A = np.eye(3) if rot is None else rotation_matrix(*rot)
        ph.add(
            PhantomObject(
                kind=kind,
                centre=10.0 * np.asarray(c),
                radii=10.0 * np.asarray(r),
                value=dens * _WATER_MU_PER_MM,
                rotation=A,
                clip=np.zeros(3) if clip is None else 10.0 * np.asarray(clip),
            )
        )
    if include_ear:
        for c in _ear_cavities_cm():
            ph.add(PhantomObject(kind=ELLIPSOID, centre=10.0 * np.asarray(c), radii=(1.5, 1.5, 1.5), value=0.0))
    return ph


# Shepp-Logan 3-D ellipsoids (Kak & Slaney extension of the 2-D phantom; the
# widely used table with rotations about z only), in normalised coordinates
# [-1, 1]^3.  Columns: additive amplitude (original), additive amplitude
# (modified, higher contrast), semi-axes (a, b, c), centre (x, y, z),
# rotation about z (degrees, counter-clockwise).
_SHEPP_LOGAN_3D = (
    (2.00, 1.0, (0.6900, 0.920, 0.810), (0.00, 0.0000, 0.00), 0.0),
    (-0.98, -0.8, (0.6624, 0.874, 0.780), (0.00, -0.0184, 0.00), 0.0),
    (-0.02, -0.2, (0.1100, 0.310, 0.220), (0.22, 0.0000, 0.00), -18.0),
    (-0.02, -0.2, (0.1600, 0.410, 0.280), (-0.22, 0.0000, 0.00), 18.0),
    (0.01, 0.1, (0.2100, 0.250, 0.410), (0.00, 0.3500, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.046, 0.050), (0.00, 0.1000, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.046, 0.050), (0.00, -0.1000, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.023, 0.050), (-0.08, -0.6050, 0.00), 0.0),
    (0.01, 0.1, (0.0230, 0.023, 0.020), (0.00, -0.6060, 0.00), 0.0),
    (0.01, 0.1, (0.0230, 0.046, 0.020), (0.06, -0.6050, 0.00), 0.0),
)


def shepp_logan_3d(radius_mm: float = 100.0, modified: bool = True, value_scale: float = 1.0) -> Phantom:
    """The 3-D Shepp-Logan head phantom (10 ellipsoids, rotations about z).

    The standard definition lives in the normalised cube ``[-1, 1]^3``; here
    it is scaled so that one normalised unit is ``radius_mm`` millimetres.
    The outer ellipsoid (skull) thus has semi-axes
    ``(0.69, 0.92, 0.81) * radius_mm`` and the phantom fits in the cube
    ``[-radius_mm, radius_mm]^3``.

    The classical phantom is *additive* (overlapping ellipsoids sum), whereas
    :class:`Phantom` uses LEAP's override rule.  Each ellipsoid's value is
    therefore its own amplitude plus those of the ellipsoids that contain it
    (1 contains 2, 2 contains 3-10): the modified phantom has skull 1.0,
    brain 0.2, the two dark ellipsoids 0.0 and the small features 0.3 (the
    original: 2.0, 1.02, 1.00, 1.03).  This reproduces the additive phantom
    everywhere except in three small lens-shaped overlaps of the inner
    ellipsoids, where the later ellipsoid's value is used instead of the sum:
    dark ellipsoid 4 with ellipsoid 5 (about 1 % of 5) and with ellipsoid 7
    (about 7 % of 7) -- additive 0.1 (original 1.01), here 0.3 (1.03); and
    ellipsoid 5 with ellipsoid 6 (about half of 6) -- additive 0.4 (1.04),
    here 0.3 (1.03).

    Parameters
    ----------
    radius_mm : float, optional
        Half-width in mm of the normalised cube ``[-1, 1]^3`` (default 100).
    modified : bool, optional
        If True (default) use the higher-contrast "modified" amplitudes
        (Toft); otherwise the original Shepp-Logan amplitudes.
    value_scale : float, optional
        Multiplier applied to all values (default 1.0), e.g. 0.02 to express
        them relative to water in 1/mm.

    Returns
    -------
    Phantom
        10 ellipsoids, ordered from outside in.
    """
    R = _positive_scalar(radius_mm, "radius_mm")
    if isinstance(value_scale, (bool, np.bool_)) or not isinstance(value_scale, numbers.Real) or not math.isfinite(
        float(value_scale)
    ):
        raise ValueError(f"value_scale: expected a finite real number, got {value_scale!r}")
    scale = float(value_scale)
    col = 1 if modified else 0
    amp = [row[col] for row in _SHEPP_LOGAN_3D]
    # override values: cumulative amplitude of the containing ellipsoids
    # (1 contains 2, 2 contains 3..10)
    override = [amp[0], amp[0] + amp[1]] + [amp[0] + amp[1] + a for a in amp[2:]]
    ph = Phantom()
    for row, v in zip(_SHEPP_LOGAN_3D, override):
        _, _, axes, centre, phi = row
        # the ellipsoid is rotated counter-clockwise by phi: u = R_z(phi)^T (x - c)
        A = rotation_matrix("z", phi).T
        ph.add(
            PhantomObject(
                kind=ELLIPSOID,
                centre=R * np.asarray(centre),
                radii=R * np.asarray(axes),
                value=round(v, 12) * scale,
                rotation=A,
            )
        )
    return ph
