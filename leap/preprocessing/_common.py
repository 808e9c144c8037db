"""Helpers shared by the pre-processing modules: the array module of the inputs (NumPy or
CuPy), argument checks with clear errors, and writing a result into ``out``."""
from __future__ import annotations

import math
import numbers

import numpy as np


def array_module(*arrays):
    """``numpy`` or ``cupy``: the module of the given arrays (``None`` entries and numbers
    are skipped; lists count as NumPy). Raises a TypeError for a mix of NumPy and CuPy,
    for other CUDA arrays (wrap them with ``cupy.asarray``, which does not copy) and for
    dask arrays (map the function over their blocks instead of computing them whole)."""
    found = None
    for a in arrays:
        if a is None or isinstance(a, (numbers.Number, np.generic)):
            continue
        top = type(a).__module__.split(".")[0]
        if isinstance(a, np.ndarray):
            xp = np
        elif top in ("cupy", "cupyx"):
            import cupy
            xp = cupy
        elif top == "dask":
            raise TypeError("got a dask array: these functions work on one block of views in "
                            "memory; apply them per block (dask.array.map_blocks, or "
                            "map_overlap where neighbouring views are needed)")
        elif hasattr(a, "__cuda_array_interface__"):
            raise TypeError(f"got a CUDA array of type {type(a).__name__}: pass a CuPy array "
                            "(cupy.asarray(x) makes no copy)")
        else:
            xp = np
        if found is None:
            found = xp
        elif found is not xp:
            raise TypeError("the arrays must all be NumPy or all CuPy: move them to one "
                            "device first")
    return np if found is None else found


def ndimage(xp):
    """``scipy.ndimage`` or ``cupyx.scipy.ndimage`` (imported on first use)."""
    if xp is np:
        import scipy.ndimage as nd
    else:
        import cupyx.scipy.ndimage as nd
    return nd


def fft_module(xp):
    """``scipy.fft`` or ``cupyx.scipy.fft``."""
    if xp is np:
        import scipy.fft as f
    else:
        import cupyx.scipy.fft as f
    return f


def numpy_only(name, x):
    """Raise a TypeError unless ``x`` is on the host (for functions with CPU kernels)."""
    if array_module(x) is not np:
        raise TypeError(f"{name} must be a NumPy array (this function runs on the CPU): "
                        "copy it to the host first (cupy.asnumpy)")


def as_float32(name, x, xp, ndims=(2, 3)):
    """``x`` as a float32 array of module ``xp`` (no copy when it is one already), with
    ``ndim`` in ``ndims``; a TypeError for non-real data, a ValueError for the shape."""
    if x is None:
        raise ValueError(f"no data given: {name} is None")
    if not hasattr(x, "dtype"):
        x = np.asarray(x)
    kind = np.dtype(x.dtype).kind
    if kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {x.dtype}")
    if x.ndim not in ndims:
        want = " or ".join(f"{n}-D" for n in ndims)
        raise ValueError(f"{name} must be a {want} array, got shape {tuple(x.shape)}")
    return xp.asarray(x, dtype=xp.float32)


def real(name, value):
    """``value`` as a finite float (a 0-d array counts as a number)."""
    if hasattr(value, "ndim") and value.ndim == 0 and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def integer(name, value, minimum=None):
    """``value`` as an int (a float with an integer value is accepted), ≥ ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(float(value)) or float(value) != int(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {v}")
    return v


def window(name, value, allowed):
    """``value`` as an int from ``allowed`` (e.g. median window sizes 3, 5, 7)."""
    v = integer(name, value)
    if v not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {v}")
    return v


def check_out(out, shape, name="out"):
    """Raise unless ``out`` is None or a float32 array of ``shape``."""
    if out is not None and (tuple(getattr(out, "shape", ())) != tuple(shape)
                            or getattr(out, "dtype", None) != np.float32):
        raise ValueError(f"{name} must be a float32 array of shape {tuple(shape)}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} "
                         f"{tuple(getattr(out, 'shape', ()))}")
    return out


def finish(res, out):
    """``res``, or ``res`` copied into ``out`` (checked: float32, same shape)."""
    if out is None:
        return res
    check_out(out, res.shape)
    out[...] = res
    return out


def as3d(x):
    """A 2-D array as one slice ``(1, n1, n2)``; 3-D arrays unchanged."""
    return x if x.ndim == 3 else x[None]
