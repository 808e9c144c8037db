"""GPU selection, chunking and multi-GPU splitting (the CUDA back-end's driver layer).

Two ways onto the GPU:

* **CUDA arrays** (CuPy, torch CUDA, Numba device arrays, ``__cuda_array_interface__``)
  run on the device that holds them, on the caller's current stream, zero-copy; the
  result is a new array of the input's kind (or ``out``). No chunking: the data
  already fit.
* **NumPy arrays with GPUs selected** (``set_devices``, or ``devices=`` on the
  operators; the facade's ``set_gpu``/``set_gpus``) are processed on the GPU(s) from
  host memory and returned as NumPy, like upstream LEAP. Work is split across the
  devices (views for projection; volume slabs for back-projection and FBP) and, on
  each device, into chunks that fit its free memory (or ``max_slices``, LEAP's
  ``set_maxSlicesForChunking``): the volume in z-slabs, the projections in view
  chunks. Partial sums over chunks are exact splits of the same linear map, so the
  result equals the unchunked one to float32 rounding.

A device list may repeat an index (``[0, 0]``): the work is then split in two parts
that run one after the other on device 0, the same code path as two devices (this is
how the tests exercise multi-GPU splitting on one GPU or the simulator).
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import arrays

_state = {"devices": [], "max_slices": None}

#: Fraction of a device's free memory that chunk planning may use.
MEMORY_FRACTION = 0.5


# ----------------------------------------------------------------------- selection

def device_count() -> int:
    """Number of CUDA devices (1 under the simulator, 0 without CUDA)."""
    try:
        from numba import cuda
        return len(cuda.gpus) if cuda.is_available() else 0
    except Exception:  # noqa: BLE001 - no driver / no numba-cuda means "no GPU"
        return 0


def normalize_devices(devices) -> list[int]:
    """``None``/``-1``/``[-1]``/``[]`` → ``[]`` (CPU); an int or list of ints → that list.

    Raises ValueError for negative indices mixed with GPUs, or indices that do not exist.
    """
    if devices is None:
        return []
    ids = [int(i) for i in np.atleast_1d(devices)]
    if ids in ([], [-1]):
        return []
    if any(i < 0 for i in ids):
        raise ValueError(f"GPU indices must be >= 0 (or [-1] alone for the CPU), got {ids}")
    n = device_count()
    if n == 0:
        raise RuntimeError("no CUDA GPU is available (install numba-cuda and a CUDA driver, "
                           "or select the CPU with -1)")
    if max(ids) >= n:
        raise ValueError(f"GPU index {max(ids)} does not exist: {n} GPU(s) found")
    return ids


def set_devices(devices) -> None:
    """Default devices for NumPy inputs: ``-1``/``None`` for the CPU, or GPU indices."""
    _state["devices"] = normalize_devices(devices)


def get_devices() -> list[int]:
    return list(_state["devices"])


def set_max_slices(n: int | None) -> None:
    """Largest chunk (volume slices per slab, views per view chunk) for host data on the
    GPU; ``None`` or ``0`` lets free GPU memory decide."""
    if n is None or int(n) <= 0:
        _state["max_slices"] = None
    else:
        _state["max_slices"] = int(n)


def get_max_slices() -> int | None:
    """The chunk cap of :func:`set_max_slices` (None: free GPU memory decides)."""
    return _state["max_slices"]


def resolve(devices, max_slices):
    """Devices and chunk cap for one call: explicit arguments, else the module defaults."""
    devs = get_devices() if devices is None else normalize_devices(devices)
    cap = get_max_slices() if max_slices is None else (int(max_slices) or None)
    return devs, cap


# ------------------------------------------------------------- device-array level
# Every function takes a :class:`leap.kernels.plan.Plan` (geometry in kernel form,
# volume, field of view, FBP weights), built once per call by leap.operators /
# leap.reconstruction.fbp.

def _numba_alloc(shape):
    from numba import cuda
    return cuda.device_array(shape, dtype=np.float32)


def prepare_volume(plan, f, stream, alloc=_numba_alloc):
    """What the projector reads: S = z-cumulative sums (axial) or f itself (modular)."""
    if plan.modular:
        return f
    from ..kernels.cuda import axial
    nz, ny, nx = f.shape
    S = alloc((ny, nx, nz + 1))
    axial.cumsum_volume(f, S, stream)
    return S


def project_prepared(plan, P, g, stream, *, a0=0, z_first=0, accumulate=False):
    """Project a prepared slab (slices z_first.. of the plan's volume) into views a0.. (g)."""
    from ..kernels.cuda import axial, modular
    volume = plan.volume
    z0 = volume.z0 + z_first * volume.voxel_height if z_first else volume.z0
    nz = P.shape[0] if plan.modular else P.shape[2] - 1
    part = plan.view_slice(a0, a0 + g.shape[0])
    if plan.modular:
        modular.project(P, g, part.geometry, z0, volume, stream, accumulate=accumulate)
        return
    sw = None if part.slice_weights is None else part.slice_weights[:, z_first:z_first + nz]
    axial.project(P, g, part.views, part.scalars(z0), plan.row_factor, sw, stream,
                  accumulate=accumulate)


def prepare_projections(plan, g, stream, alloc=_numba_alloc):
    """What the back-projector reads: G = row-cumulative sums (axial) or g (modular)."""
    if plan.modular:
        return g
    from ..kernels.cuda import axial
    na, nr, nc = g.shape
    G = alloc((na, nr + 1, nc))
    axial.cumsum_projections(g, plan.row_factor, G, stream)
    return G


def backproject_prepared(plan, G, f, stream, *, a0=0, z_first=0, accumulate=False):
    """Back-project prepared views a0.. (G) into the slab f (slices z_first..)."""
    from ..kernels.cuda import axial, modular
    volume = plan.volume
    z0 = volume.z0 + z_first * volume.voxel_height if z_first else volume.z0
    part = plan.view_slice(a0, a0 + G.shape[0])
    if plan.modular:
        modular.backproject(G, f, part.geometry, z0, volume, stream, accumulate=accumulate)
        return
    sw = None if part.slice_weights is None else part.slice_weights[:, z_first:z_first + f.shape[0]]
    axial.backproject(G, f, part.views, part.scalars(z0), sw, stream, accumulate=accumulate)


def project_device(plan, f, g, stream, alloc=_numba_alloc):
    project_prepared(plan, prepare_volume(plan, f, stream, alloc), g, stream)


def backproject_device(plan, g, f, stream, alloc=_numba_alloc):
    backproject_prepared(plan, prepare_projections(plan, g, stream, alloc), f, stream)


# ------------------------------------------------------------- host data, chunked

def split(n: int, parts: int) -> list[tuple[int, int]]:
    """``[0, n)`` in ``parts`` contiguous near-equal ranges (empty ones dropped)."""
    edges = [round(n * p / parts) for p in range(parts + 1)]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def chunks(a: int, b: int, size: int) -> list[tuple[int, int]]:
    size = max(1, int(size))
    return [(s, min(b, s + size)) for s in range(a, b, size)]


def _free_bytes() -> float:
    from numba import cuda
    try:
        return float(cuda.current_context().get_memory_info()[0])
    except Exception:  # noqa: BLE001 - unknown: plan as if memory were plentiful
        return math.inf


def _plan(slice_bytes, view_bytes, nz, na, cap):
    """Slices per slab and views per chunk: half the budget each, capped by ``cap``."""
    budget = MEMORY_FRACTION * _free_bytes()
    nzc = nz if math.isinf(budget) else int(min(nz, max(1, 0.5 * budget // slice_bytes)))
    nvc = na if math.isinf(budget) else int(min(na, max(1, 0.5 * budget // view_bytes)))
    if cap:
        nzc, nvc = min(nzc, cap), min(nvc, cap)
    return max(1, nzc), max(1, nvc)


def _run(devices, parts, work):
    """work(device, part) for each (device, part) pair; threads when devices differ."""
    jobs = list(zip(devices, parts))
    if len(set(devices)) > 1 and not arrays.simulator_enabled():
        with ThreadPoolExecutor(len(jobs)) as pool:
            for fut in [pool.submit(work, d, p) for d, p in jobs]:
                fut.result()
    else:
        for d, p in jobs:
            work(d, p)


def project_host(plan, f: np.ndarray, g: np.ndarray, devices, cap):
    """g = P f on the GPU(s) from host arrays; views split across devices."""
    from numba import cuda
    na, nr, nc = g.shape
    nz, ny, nx = f.shape

    def work(dev, part):
        p0, p1 = part
        with arrays.device_context(dev):
            stream = cuda.default_stream()
            nzc, nvc = _plan(ny * nx * 4 * 2, nr * nc * 4, nz, p1 - p0, cap)
            for zs, ze in chunks(0, nz, nzc):
                P = prepare_volume(plan, cuda.to_device(f[zs:ze], stream=stream), stream)
                for vs, ve in chunks(p0, p1, nvc):
                    gd = cuda.device_array((ve - vs, nr, nc), dtype=np.float32)
                    project_prepared(plan, P, gd, stream, a0=vs, z_first=zs)
                    part_g = gd.copy_to_host(stream=stream)
                    stream.synchronize()
                    if zs == 0:
                        g[vs:ve] = part_g
                    else:
                        g[vs:ve] += part_g

    _run(devices, split(na, len(devices)), work)
    return g


def _slab_driver(plan, f, na, nr, nc, devices, cap, load_views):
    """Shared loop of back-projection and FBP: slabs split across devices; per slab the
    views in chunks, each loaded by ``load_views(vs, ve, stream)`` → prepared G."""
    from numba import cuda
    nz, ny, nx = f.shape

    def work(dev, part):
        z_lo, z_hi = part
        with arrays.device_context(dev):
            stream = cuda.default_stream()
            nzc, nvc = _plan(ny * nx * 4, (nr + 1) * nc * 4 * 3, z_hi - z_lo, na, cap)
            view_chunks = chunks(0, na, nvc)
            cached = load_views(0, na, stream) if len(view_chunks) == 1 else None
            for zs, ze in chunks(z_lo, z_hi, nzc):
                fd = cuda.device_array((ze - zs, ny, nx), dtype=np.float32)
                for n, (vs, ve) in enumerate(view_chunks):
                    G = cached if cached is not None else load_views(vs, ve, stream)
                    backproject_prepared(plan, G, fd, stream, a0=vs, z_first=zs,
                                         accumulate=n > 0)
                fd.copy_to_host(f[zs:ze], stream=stream)
                stream.synchronize()

    _run(devices, split(nz, len(devices)), work)
    return f


def backproject_host(plan, g: np.ndarray, f: np.ndarray, devices, cap):
    """f = Pᵀ g on the GPU(s) from host arrays; volume slabs split across devices."""
    from numba import cuda
    na, nr, nc = g.shape

    def load(vs, ve, stream):
        return prepare_projections(plan, cuda.to_device(g[vs:ve], stream=stream), stream)

    return _slab_driver(plan, f, na, nr, nc, devices, cap, load)


def slab_driver(plan, f, shape, devices, cap, load_views):
    """Public form of the slab loop for FBP (leap.reconstruction.fbp): ``shape`` =
    (na, nr, nc) of the
    prepared views that ``load_views(vs, ve, stream)`` returns (G for axial geometries)."""
    na, nr, nc = shape
    return _slab_driver(plan, f, na, nr, nc, devices, cap, load_views)
