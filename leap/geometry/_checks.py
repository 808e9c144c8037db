"""Validation helpers shared by the geometry classes.

Every geometry is validated once, at construction, so kernels can trust it. The
messages name the parameter, what was expected and what came.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

#: Largest pixel/voxel/view count accepted: LEAP stores counts as C ``int``, and the
#: kernels index rows and columns with 32-bit integers.
MAX_COUNT = 2**31 - 1

#: Accepted range of lengths (pixel and voxel sizes, distances), mm. Far beyond any
#: scanner, and narrow enough that products such as voxel_width²·voxel_height in the
#: FBP scale neither underflow to 0 nor overflow.
LENGTH_RANGE = (1e-9, 1e9)

#: Largest magnitude of a position (detector centre in pixels, offsets and tau in mm).
MAX_COORDINATE = 1e9


def positive_int(name: str, value) -> int:
    """Return ``value`` as an int > 0, or raise ``ValueError``/``TypeError``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not math.isfinite(float(value)):
            raise ValueError(f"{name} must be a finite positive integer, got {value!r}")
        if isinstance(value, numbers.Real) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    if value > MAX_COUNT:
        raise ValueError(f"{name} must be at most {MAX_COUNT}, got {value}")
    return int(value)


def integer(name: str, value) -> int:
    """Return ``value`` as an int (any sign), or raise ``TypeError`` if it is not integral.

    NaN and ±inf are real numbers but not integers: they raise ``ValueError`` naming
    ``name`` (``int()`` of them would raise an anonymous OverflowError/ValueError)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite integer, got {value!r}")
    if float(value) != int(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def finite_float(name: str, value) -> float:
    """Return ``value`` as a finite float, or raise."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"{name} must be finite, got {out}")
    return out


def positive_float(name: str, value) -> float:
    """Return ``value`` as a length in :data:`LENGTH_RANGE`, or raise."""
    out = finite_float(name, value)
    if out <= 0:
        raise ValueError(f"{name} must be > 0, got {out}")
    lo, hi = LENGTH_RANGE
    if not lo <= out <= hi:
        raise ValueError(f"{name} must lie between {lo:g} and {hi:g} (mm), got {out:g}")
    return out


def coordinate(name: str, value) -> float:
    """Return ``value`` as a finite float of magnitude at most :data:`MAX_COORDINATE`."""
    out = finite_float(name, value)
    if abs(out) > MAX_COORDINATE:
        raise ValueError(f"{name} must have magnitude at most {MAX_COORDINATE:g}, got {out:g}")
    return out


def readonly_array(name: str, value, shape: tuple) -> np.ndarray:
    """Copy ``value`` into a read-only float64 array of the given shape.

    ``shape`` may hold ``None`` for a free dimension. Non-finite entries raise.
    """
    try:
        arr = np.array(value, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}") from None
    if arr.ndim != len(shape) or any(s is not None and s != n for s, n in zip(shape, arr.shape)):
        want = "(" + ", ".join("N" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values (found NaN or inf)")
    arr.setflags(write=False)
    return arr
