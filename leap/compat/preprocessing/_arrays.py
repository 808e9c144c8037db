"""Argument handling of LEAP's pre-processing functions and methods: in-place work on
NumPy, torch and CuPy arrays through a host view, and LEAP's rules (float32 data, the
window sizes it allows) checked under LEAP's argument names. The numerics are in
:mod:`leap.preprocessing`."""
from __future__ import annotations

import contextlib
import math
import numbers

import numpy as np

from ...preprocessing._common import real

__all__ = ["host_view", "check_data", "real", "check_window", "check_radius", "count"]


@contextlib.contextmanager
def host_view(x, name="g"):
    """A NumPy array sharing or mirroring ``x`` for in-place work.

    NumPy arrays and torch CPU tensors are viewed (no copy); CuPy arrays and torch CUDA
    tensors are copied to the host and the result copied back on exit.
    """
    if x is None:
        raise ValueError(f"no data given: {name} is None")
    if isinstance(x, np.ndarray):
        yield x
        return
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        if x.is_cuda:
            import torch
            a = x.detach().cpu().numpy()
            yield a
            with torch.no_grad():
                x.copy_(torch.from_numpy(a))
        else:
            yield x.detach().numpy()
    elif mod in ("cupy", "cupyx"):
        a = x.get()
        yield a
        x.set(a)
    else:
        raise TypeError(f"{name} must be a numpy.ndarray (or a torch tensor / CuPy array), "
                        f"got {type(x).__name__}")


def check_data(name, x, ndims=(2, 3), shape=None):
    """Raise unless ``x`` is a float32 NumPy array with ``ndim`` in ``ndims`` (and, when
    given, trailing ``shape``); returns ``x``."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be float32 (LEAP's data type), got {x.dtype}; "
                        f"convert with {name}.astype(np.float32)")
    if x.ndim not in ndims:
        want = " or ".join(f"{n}-D" for n in ndims)
        raise ValueError(f"{name} must be a {want} array, got shape {x.shape}")
    if shape is not None and tuple(x.shape[-len(shape):]) != tuple(shape):
        raise ValueError(f"{name} must end in shape {tuple(shape)}, got {x.shape}")
    return x


def check_window(name, value, allowed):
    """``value`` as an int from ``allowed`` (e.g. median window sizes 3, 5, 7)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)) or float(value) != int(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if v not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {v}")
    return v


def check_radius(name, value):
    """A window radius: an integer ≥ 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)) or float(value) != int(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    r = int(value)
    if r < 1:
        raise ValueError(f"{name} must be >= 1, got {r}")
    return r


def count(name, v):
    """A non-negative integer (an iteration count)."""
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(float(v)) \
            or float(v) != int(v) or v < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
    return int(v)
