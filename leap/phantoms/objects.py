"""The solids of a phantom: object codes, validation and :class:`PhantomObject`."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np


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
