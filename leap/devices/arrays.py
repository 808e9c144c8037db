"""Array kinds: detection, zero-copy conversion to Numba device arrays, device checks.

The operators dispatch on the array they are given (STYLE "Kernels and dispatch"):

* ``numpy.ndarray`` → the Numba CPU kernels (or the GPU, from host memory, when a GPU
  is selected; see :mod:`leap.devices.gpu`);
* CuPy arrays, torch CUDA tensors, Numba device arrays and anything else exposing
  ``__cuda_array_interface__`` → the Numba CUDA kernels, on the array's own device,
  without copies.

Nothing here imports CuPy, torch or ``numba.cuda`` until a CUDA array is actually seen,
so ``import leap`` stays light on machines without a GPU.

Under Numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) "device memory" is host
memory: simulator device arrays are recognised as CUDA arrays, and a
``__cuda_array_interface__`` pointer is read as a host address (that is how the test
suite exercises the zero-copy paths without a GPU).
"""
from __future__ import annotations

import ctypes
import os
import sys

import numpy as np

NUMPY, CUPY, TORCH, NUMBA, CAI = "numpy", "cupy", "torch", "numba", "cuda_array_interface"


def simulator_enabled() -> bool:
    """Whether Numba's CUDA simulator is on (decided when numba is first imported)."""
    if "numba.cuda" in sys.modules or "numba" in sys.modules:
        try:
            from numba.cuda.core import config
            return bool(config.ENABLE_CUDASIM)
        except ImportError:          # pragma: no cover - older numba-cuda layouts
            pass
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def _is_sim_array(x) -> bool:
    t = type(x)
    return t.__name__ == "FakeCUDAArray" and t.__module__.startswith("numba.cuda.simulator")


def _is_torch_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "is_cuda")


def array_kind(x) -> str:
    """One of ``"numpy"``, ``"cupy"``, ``"torch"``, ``"numba"``, ``"cuda_array_interface"``.

    Raises TypeError for anything else (including torch CPU tensors: pass
    ``t.numpy()``, a zero-copy view, or use :mod:`leap.torch`).
    """
    if isinstance(x, np.ndarray):
        return NUMPY
    mod = type(x).__module__
    if mod.startswith("cupy"):
        return CUPY
    if _is_torch_tensor(x):
        if not x.is_cuda:
            raise TypeError("got a torch CPU tensor; pass t.numpy() (a zero-copy view) or a "
                            "CUDA tensor, or use leap.torch")
        return TORCH
    if _is_sim_array(x) or mod.startswith("numba.cuda"):
        return NUMBA
    if hasattr(x, "__cuda_array_interface__"):
        return CAI
    raise TypeError(f"expected a numpy.ndarray or a CUDA array (CuPy, torch CUDA tensor, "
                    f"Numba device array, __cuda_array_interface__), got {type(x).__name__}")


def is_cuda_array(x) -> bool:
    """Whether ``x`` lives in GPU memory (any kind but NumPy)."""
    if x is None or isinstance(x, np.ndarray):
        return False
    if _is_torch_tensor(x):
        return bool(x.is_cuda)
    return _is_sim_array(x) or hasattr(x, "__cuda_array_interface__")


def _interface(x) -> dict:
    if _is_torch_tensor(x):
        x = x.detach()
    return x.__cuda_array_interface__


def data_pointer(x) -> int:
    """Address of a CUDA array's first element (for zero-copy checks)."""
    if _is_sim_array(x):
        return int(x._ary.__array_interface__["data"][0])
    return int(_interface(x)["data"][0])


def _c_contiguous(shape, strides, itemsize) -> bool:
    if strides is None:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != expected:
            return False
        expected *= n
    return True


def describe(x):
    """(shape, dtype, C-contiguous) of a CUDA array."""
    if _is_sim_array(x):
        return tuple(x.shape), np.dtype(x.dtype), bool(x._ary.flags.c_contiguous)
    cai = _interface(x)
    dt = np.dtype(cai["typestr"])
    shape = tuple(int(n) for n in cai["shape"])
    return shape, dt, _c_contiguous(shape, cai.get("strides"), dt.itemsize)


def device_of(x) -> int | None:
    """CUDA device ordinal of an array, or None when it cannot be told (assume current)."""
    dev = getattr(x, "device", None)
    if dev is not None and not isinstance(dev, str):
        for attr in ("id", "index"):          # CuPy: device.id; torch: device.index
            val = getattr(dev, attr, None)
            if isinstance(val, (int, np.integer)):
                return int(val)
    if _is_sim_array(x) or simulator_enabled():
        return 0
    try:
        from cuda.bindings import driver as drv
        err, ordinal = drv.cuPointerGetAttribute(
            drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, data_pointer(x))
        if int(err) == 0:
            return int(ordinal)
    except Exception:  # noqa: BLE001 - optional driver query; fall back to "current"
        pass
    return None


def check_cuda_array(name: str, x, shape) -> None:
    """Validate a float32, C-contiguous CUDA array of the given shape."""
    got_shape, dt, contiguous = describe(x)
    if dt != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {dt} ({array_kind(x)} array); "
                        f"convert it on the GPU first, e.g. {name}.astype('float32')")
    if got_shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {got_shape}")
    if not contiguous:
        raise ValueError(f"{name} must be C-contiguous; make a contiguous copy on the GPU "
                         f"first (cupy.ascontiguousarray / tensor.contiguous())")


def check_same_device(**arrays) -> int | None:
    """The common device of some CUDA arrays; ValueError when they differ."""
    devs = {n: device_of(a) for n, a in arrays.items() if a is not None}
    known = {d for d in devs.values() if d is not None}
    if len(known) > 1:
        where = ", ".join(f"{n} on cuda:{d}" for n, d in devs.items())
        raise ValueError(f"arrays are on different GPUs ({where}); move them to one device")
    return known.pop() if known else None


def as_numba(x):
    """A Numba device array viewing the same memory as ``x`` (no copy)."""
    kind = array_kind(x)
    if kind == NUMBA:
        return x
    if simulator_enabled():
        # Simulated device memory is host memory: view the address as a NumPy array.
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        cai = _interface(x)
        dt = np.dtype(cai["typestr"])
        shape = tuple(cai["shape"])
        n = int(np.prod(shape)) if shape else 1
        buf = (ctypes.c_byte * (n * dt.itemsize)).from_address(int(cai["data"][0]))
        return FakeCUDAArray(np.ndarray(shape, dt, buffer=buf, strides=cai.get("strides")))
    from numba import cuda
    # sync=False: we launch on the producer's stream (caller_stream), so stream order
    # already serialises our kernels after its pending work.
    if kind == TORCH:
        return cuda.as_cuda_array(x.detach(), sync=False)
    return cuda.as_cuda_array(x, sync=False)


def caller_stream(x):
    """The Numba stream to launch on: the caller's current stream for ``x``'s library.

    CuPy: ``cupy.cuda.get_current_stream()``; torch: ``torch.cuda.current_stream``;
    other ``__cuda_array_interface__`` producers: the interface's ``stream`` entry;
    Numba device arrays and the simulator: the default stream.
    """
    from numba import cuda
    if simulator_enabled():
        return cuda.default_stream()
    kind = array_kind(x)
    ptr = None
    if kind == CUPY:
        import cupy
        ptr = cupy.cuda.get_current_stream().ptr
    elif kind == TORCH:
        import torch
        ptr = torch.cuda.current_stream(x.device).cuda_stream
    elif kind == CAI:
        ptr = _interface(x).get("stream")
    elif kind == NUMBA:
        s = getattr(x, "stream", 0)
        if s:
            return s
    if not ptr:
        return cuda.default_stream()
    return cuda.external_stream(int(ptr))


def empty_like_kind(template, shape):
    """A new float32 CUDA array of ``shape`` of the same kind and device as ``template``.

    CuPy in → CuPy out, torch in → torch out (on the current stream's allocator);
    anything else → a Numba device array.
    """
    kind = array_kind(template)
    if kind == CUPY:
        import cupy
        with cupy.cuda.Device(template.device.id):
            return cupy.empty(shape, dtype=cupy.float32)
    if kind == TORCH:
        import torch
        return torch.empty(shape, dtype=torch.float32, device=template.device)
    from numba import cuda
    return cuda.device_array(shape, dtype=np.float32)


def require_cuda() -> None:
    """Raise (NotImplementedError, a RuntimeError) unless Numba can run CUDA kernels here."""
    try:
        from numba import cuda
        ok = cuda.is_available()
    except Exception as exc:  # noqa: BLE001 - numba-cuda missing or broken
        raise NotImplementedError(
            "got a CUDA array, but Numba's CUDA back-end cannot be loaded "
            f"({exc}); install it with pip install 'leap-ct[gpu]'") from exc
    if not ok:
        raise NotImplementedError(
            "got a CUDA array, but no CUDA GPU/driver is usable by Numba on this machine; "
            "pass NumPy arrays (the CPU kernels) or run where a GPU is available")


def device_context(ordinal):
    """Context manager making CUDA device ``ordinal`` current (no-op for None)."""
    from contextlib import nullcontext
    if ordinal is None or simulator_enabled():
        return nullcontext()
    from numba import cuda
    return cuda.gpus[int(ordinal)]


# ------------------------------------------------------------ data conversions
def exp_neg(x):
    """``x ← exp(−x)`` in place: line integrals (attenuation) → transmission; returns x."""
    np.exp(np.negative(x, out=x), out=x)
    return x


def neg_log(x, gray_value: float = 1.0):
    """``x ← −log(x / gray_value)`` in place: transmission → line integrals; returns x.
    ``gray_value`` is the flat-field (unattenuated) value, > 0."""
    if not gray_value > 0:
        raise ValueError(f"gray_value must be positive, got {gray_value}")
    np.log(np.divide(x, gray_value, out=x), out=x)
    np.negative(x, out=x)
    return x
