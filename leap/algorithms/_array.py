"""Array-module dispatch: the algorithms run on NumPy and CuPy arrays alike.

Only ``xp`` operations that NumPy and CuPy share are used (elementwise arithmetic,
``where``, ``maximum``, ``sum``, ``exp``, ``log``, slicing), so one code path serves
both. CuPy is imported only when a CuPy array is given; importing leap never does.
"""
from __future__ import annotations

import math

import numpy as np

# numpy >= 1.25 moved the exception to numpy.exceptions.
_TooHardError = getattr(getattr(np, "exceptions", np), "TooHardError")


def array_namespace(*arrays):
    """The array module (``numpy`` or ``cupy``) of the given arrays; ``None`` entries
    and Python scalars are skipped, all arrays must be of one kind."""
    found = None
    for a in arrays:
        if a is None or isinstance(a, (bool, int, float, np.generic)):
            continue
        if isinstance(a, np.ndarray):
            xp = np
        elif type(a).__module__.split(".")[0] in ("cupy", "cupyx"):
            import cupy
            xp = cupy
        elif hasattr(a, "__cuda_array_interface__"):
            raise TypeError(
                f"got a CUDA array of type {type(a).__name__}; the iterative algorithms "
                "compute on CuPy arrays: wrap it with cupy.asarray(x) (no copy is made)")
        else:
            raise TypeError(f"expected a NumPy or CuPy array, got {type(a).__name__}")
        if found is None:
            found = xp
        elif found is not xp:
            raise TypeError("all arrays must be of one kind (all NumPy or all CuPy); "
                            "move them to one device first")
    return np if found is None else found


def vdot(x, y, w=None) -> float:
    """``<x, y>`` (or ``<x, w y>``) summed in float64, as a Python float."""
    xp = array_namespace(x, y, w)
    prod = x * y if w is None else x * y * w
    return float(xp.sum(prod, dtype=xp.float64))


def norm2(x, w=None) -> float:
    """``<x, x>`` (or ``<x, w x>``) in float64."""
    return vdot(x, x, w)


def is_all_zeros(x) -> bool:
    xp = array_namespace(x)
    return not bool(xp.any(x))


def clip_negative(x):
    """Set negative entries of ``x`` to zero, in place; returns ``x``."""
    xp = array_namespace(x)
    xp.maximum(x, 0.0, out=x)
    return x


def safe_reciprocal(x, xp=None):
    """``1/x`` with entries ``x <= 0`` treated as 1 (LEAP's convention for the
    sensitivity and ray-length normalisations, where 0 means 'not seen')."""
    xp = xp or array_namespace(x)
    return (1.0 / xp.where(x > 0, x, 1.0)).astype(xp.float32, copy=False)


def check_shape(name, x, shape):
    """Raise unless ``x`` is a float32 array of the given shape."""
    if x is None:
        return
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(x.shape)}")
    if x.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {x.dtype}; "
                        f"convert with {name}.astype(np.float32)")


def check_writable(name, x):
    flags = getattr(x, "flags", None)
    if flags is not None and hasattr(flags, "writeable") and not flags.writeable:
        raise ValueError(f"{name} is read-only; the algorithms update it in place")


def is_array(x) -> bool:
    """Whether ``x`` is an array the algorithms take: a NumPy array or a CUDA array
    (CuPy, torch CUDA tensor, Numba device array, ``__cuda_array_interface__``)."""
    if x is None or not hasattr(x, "shape"):
        return False
    try:
        _kind(x)
    except TypeError:
        return False
    return True


def check_array_argument(name, x, expected):
    """Raise a TypeError naming ``name`` unless ``x`` is an array the algorithms take.

    ``expected`` describes what was wanted, e.g. ``"the volume (a float32 array of
    shape (nz, ny, nx))"``. Catches lists, scalars and None at the entry point,
    before they fail deep inside the numerics.
    """
    if not is_array(x):
        got = "None" if x is None else type(x).__name__
        raise TypeError(f"{name} must be {expected}: a NumPy array or a CUDA array (CuPy, "
                        f"torch CUDA tensor, Numba device array), got {got}")


def _byte_bounds(x):
    """``[lo, hi)`` device/host byte addresses an array's elements span (CuPy)."""
    ptr = int(x.data.ptr)
    lo = hi = ptr
    for n, s in zip(x.shape, x.strides):
        if n > 1:
            if s < 0:
                lo += (n - 1) * s
            else:
                hi += (n - 1) * s
    return lo, hi + x.itemsize


def shares_memory(a, b) -> bool:
    """Whether arrays ``a`` and ``b`` (as the algorithms compute on them: NumPy or CuPy)
    have elements in common. NumPy: exact (bounds only when the exact problem is too
    hard); CuPy: by address bounds, which is exact for the contiguous arrays the
    algorithms take and errs on the safe side otherwise."""
    if not (hasattr(a, "shape") and hasattr(b, "shape")) or a.size == 0 or b.size == 0:
        return False            # None, Python or NumPy scalars, empty arrays
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        try:
            return bool(np.shares_memory(a, b, max_work=1 << 20))
        except _TooHardError:
            return bool(np.may_share_memory(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return False            # host and device memory never overlap
    if not all(hasattr(getattr(x, "data", None), "ptr") for x in (a, b)):
        return False            # not CuPy arrays: no address to compare
    a0, a1 = _byte_bounds(a)
    b0, b1 = _byte_bounds(b)
    return a0 < b1 and b0 < a1


def check_no_overlap(out_name, out, **inputs):
    """Raise a ValueError when the array updated in place (``out``) shares memory with
    any of the named input arrays: the methods read those inputs on every iteration,
    so writing ``out`` would silently change them and corrupt the result."""
    for name, x in inputs.items():
        if shares_memory(out, x):
            raise ValueError(
                f"{out_name} and {name} share memory (one is a view of the other): "
                f"{out_name} is updated in place while {name} is read, which would corrupt "
                f"the result; pass separate arrays (e.g. {name}.copy())")


def check_finite(name, x):
    """Raise a ValueError naming ``name`` if the array holds NaN or inf values.

    One float64 sum, no temporary array: a sum of finite float32 values is finite (it
    cannot overflow float64), and a NaN or ±inf entry makes it NaN or infinite.
    """
    if x is None or x.size == 0:
        return
    xp = array_namespace(x)
    if not math.isfinite(float(xp.sum(x, dtype=xp.float64))):
        raise ValueError(f"{name} contains NaN or infinite values; clean the data first "
                         f"(e.g. nan_to_num({name}) or a bad-pixel correction)")


def as_float32_weights(name, x, xp):
    """A projection-sized weight or mask array as float32 (a copy when converted; the
    caller's array is never modified). Bool and integer masks are accepted, since a
    mask of 0/1 is commonly built that way; non-numeric arrays are refused."""
    if x is None or x.dtype == xp.float32:
        return x
    kind = np.dtype(x.dtype).kind
    if kind not in "biuf":
        raise TypeError(f"{name} must be a numeric (float32, or bool/integer/float to be "
                        f"converted) array, got dtype {x.dtype}")
    return xp.ascontiguousarray(x, dtype=xp.float32)


# --------------------------------------------------------------- CUDA arrays
def _is_simulator_array(x) -> bool:
    t = type(x)
    return t.__name__ == "FakeCUDAArray" and t.__module__.startswith("numba.cuda.simulator")


def _kind(x) -> str:
    if isinstance(x, np.ndarray):
        return "numpy"
    if type(x).__module__.split(".")[0] in ("cupy", "cupyx"):
        return "cupy"
    if _is_simulator_array(x):
        return "simulator"
    if hasattr(x, "__cuda_array_interface__") or (
            type(x).__module__.startswith("torch") and getattr(x, "is_cuda", False)):
        return "cuda"
    raise TypeError(f"expected a NumPy array or a CUDA array (CuPy, torch CUDA tensor, "
                    f"Numba device array), got {type(x).__name__}")


def _as_cupy(x):
    try:
        import cupy
    except ImportError:
        raise TypeError(
            f"the iterative algorithms compute on CUDA arrays through CuPy, which is not "
            f"installed; install CuPy (pip install cupy-cuda12x) or pass NumPy arrays "
            f"(got a {type(x).__name__})") from None
    if type(x).__module__.startswith("torch"):
        x = x.detach()
    return cupy.asarray(x)          # zero copy through __cuda_array_interface__


class _SimulatorOperator:
    """Numba's CUDA simulator: device memory is host memory. The algorithms compute on
    NumPy views of it, and the operator hands the core projectors simulator device
    arrays (so the CUDA kernels run), returning NumPy views of their results."""

    def __init__(self, op, fake):
        self._op = op
        self._fake = fake

    def __getattr__(self, name):
        return getattr(self._op, name)

    def _dev(self, x):
        return None if x is None else self._fake(np.ascontiguousarray(x))

    @staticmethod
    def _host(y):
        return y._ary if _is_simulator_array(y) else y

    def forward(self, f, out=None):
        res = self._op.forward(self._dev(f), out=self._dev(out))
        if out is not None:
            return out
        return self._host(res)

    def adjoint(self, g, out=None):
        res = self._op.adjoint(self._dev(g), out=self._dev(out))
        if out is not None:
            return out
        return self._host(res)

    def subset(self, views):
        return _SimulatorOperator(self._op.subset(views), self._fake)


def prepare(op, *arrays):
    """The arrays as the algorithms compute on them, sharing memory with the inputs.

    NumPy and CuPy arrays are used as they are. Other CUDA arrays (torch CUDA tensors,
    Numba device arrays, ``__cuda_array_interface__`` objects) are viewed as CuPy
    arrays without a copy; under Numba's CUDA simulator its device arrays are viewed
    as NumPy arrays and the operator is wrapped so the projections still run through
    the (simulated) CUDA kernels. Returns ``(xp, op, *views)``; ``None`` stays ``None``.
    """
    kinds = {_kind(a) for a in arrays if a is not None and hasattr(a, "shape")}
    if "simulator" in kinds and kinds <= {"simulator", "numpy"}:
        fake = type(next(a for a in arrays if _is_simulator_array(a)))
        views = [a._ary if _is_simulator_array(a) else a for a in arrays]
        return (np, _SimulatorOperator(op, fake), *views)
    if "cuda" in kinds:
        views = [_as_cupy(a) if (a is not None and hasattr(a, "shape")
                                 and _kind(a) == "cuda") else a for a in arrays]
    else:
        views = list(arrays)
    xp = array_namespace(*[a for a in views if a is not None and hasattr(a, "shape")])
    return (xp, op, *views)


def computable(x):
    """``x`` as an array the algorithms can compute on (see :func:`prepare`)."""
    return prepare(None, x)[2]
