"""Projection and back-projection on arrays, dispatched by array kind.

The core API: functions of (geometry, volume, array) that return an array. ``out``
is optional; when given it is written into and returned.

Dispatch by array kind (:mod:`leap.devices.arrays`):

* NumPy in → NumPy out. The Numba CPU kernels run, unless GPUs are selected
  (``devices=`` here, or :func:`leap.devices.gpu.set_devices`, which the facade's
  ``set_gpu``/``set_gpus`` call): then the CUDA kernels run from host memory, split
  over the devices and chunked to fit (``max_slices``; :mod:`leap.devices.gpu`).
* CUDA arrays (CuPy, torch CUDA tensors, Numba device arrays, anything with
  ``__cuda_array_interface__``) → the CUDA kernels on the array's device and the
  caller's current stream, zero-copy; the result has the input's kind (or is ``out``).
  ``f`` and ``out`` must both be CUDA arrays, on one device, float32 C-contiguous.

Forward projection computes, for every detector pixel, the pixel-averaged line
integral ``g = ∫ f(source + t·direction) dt`` (mm × attenuation/mm) of the voxel
function under LEAP's separable-footprint model; back-projection is its exact
transpose (``<P f, g> = <f, Pᵀ g>`` to float rounding).
"""
from __future__ import annotations

import numpy as np

from . import _validate
from .devices import arrays as _arrays
from .geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from .kernels.cpu import launch as _cpu
from .kernels.plan import make_plan

Geometry = ParallelBeam | FanBeam | ConeBeam | ConeParallelBeam | ModularBeam


def project(geometry: Geometry, volume: Volume, f: np.ndarray, out: np.ndarray | None = None,
            *, fov_radius: float | None = None, fan_distance_weight: bool = False,
            slice_weights: np.ndarray | None = None, devices=None,
            max_slices: int | None = None):
    """Forward projection ``P f``.

    Parameters
    ----------
    geometry : ParallelBeam, FanBeam, ConeBeam or ModularBeam
    volume : Volume
    f : (num_z, num_y, num_x) float32, C-contiguous
        Attenuation per mm.
    out : (num_angles, num_rows, num_cols) float32, optional
        Written into and returned.
    fov_radius : float, optional
        Radius (mm) of the circular field of view; voxels farther from the z axis are
        ignored. Default: the geometry's own (``geometry.fov_radius()``). Modular
        beams have none.
    fan_distance_weight, slice_weights : as for :func:`backproject`, whose weighted
        form this transposes (the adjoint of FBP's back-projection step).
    devices : int or list of int, optional
        NumPy inputs only: GPU(s) to run on (``-1``/``[]`` for the CPU). Default: the
        selection of :func:`leap.devices.gpu.set_devices` (initially the CPU). CUDA arrays
        always run on their own device.
    max_slices : int, optional
        NumPy inputs on GPUs: largest slab (slices) / view chunk; default
        :func:`leap.devices.gpu.get_max_slices` or what fits in free GPU memory.

    Returns
    -------
    (num_angles, num_rows, num_cols) float32 line integrals.
    """
    _validate.check_geometry(geometry, volume)
    if _arrays.is_cuda_array(f) or _arrays.is_cuda_array(out):
        return _cuda_call("project", geometry, volume, f, out, fov_radius,
                          fan_distance_weight, slice_weights)
    _validate.check_array("f", f, volume.shape)
    _validate.check_finite("f", f)
    g = _validate.check_out("out", out, geometry.projection_shape, f)
    devs, cap = _gpu_selection(devices, max_slices)
    plan = make_plan(geometry, volume, fov_radius=fov_radius,
                     fan_distance_weight=fan_distance_weight, slice_weights=slice_weights)
    if devs:
        from .devices import gpu
        return gpu.project_host(plan, f, g, devs, cap)
    return _cpu.project(plan, f, g)


def backproject(geometry: Geometry, volume: Volume, g: np.ndarray, out: np.ndarray | None = None,
                *, fov_radius: float | None = None, fan_distance_weight: bool = False,
                slice_weights: np.ndarray | None = None, devices=None,
                max_slices: int | None = None):
    """Back-projection ``Pᵀ g``, the exact transpose of :func:`project`.

    Parameters
    ----------
    geometry, volume, fov_radius : as for :func:`project`.
    g : (num_angles, num_rows, num_cols) float32, C-contiguous
    out : (num_z, num_y, num_x) float32, optional
        Written into and returned.
    fan_distance_weight : bool
        Fan beams: weight each view by sod/(sod − x·θ), the distance weight of fan-beam
        FBP; cone-parallel beams: by D/sod, D = √(sod² − s²) − x·θ the row-magnifying
        distance (FBP's weighting; then no longer the transpose of :func:`project`).
    slice_weights : (num_angles, num_z) array, optional
        Cone beams only: weight voxel slice k's contribution from view a (helical FBP).
    devices, max_slices : as for :func:`project`.
    """
    _validate.check_geometry(geometry, volume)
    if _arrays.is_cuda_array(g) or _arrays.is_cuda_array(out):
        return _cuda_call("backproject", geometry, volume, g, out, fov_radius,
                          fan_distance_weight, slice_weights)
    _validate.check_array("g", g, geometry.projection_shape)
    _validate.check_finite("g", g)
    f = _validate.check_out("out", out, volume.shape, g)
    devs, cap = _gpu_selection(devices, max_slices)
    plan = make_plan(geometry, volume, fov_radius=fov_radius,
                     fan_distance_weight=fan_distance_weight, slice_weights=slice_weights)
    if devs:
        from .devices import gpu
        return gpu.backproject_host(plan, g, f, devs, cap)
    return _cpu.backproject(plan, g, f)


# ---------------------------------------------------------------------- GPU dispatch

def _gpu_selection(devices, max_slices):
    """Devices for a NumPy call: explicit ``devices``, else leap.devices.gpu's selection."""
    from .devices import gpu
    return gpu.resolve(devices, max_slices)


def _cuda_call(op, geometry, volume, x, out, fov_radius, fan_distance_weight,
               slice_weights):
    """project / backproject on CUDA arrays: the array's device, the caller's stream."""
    from .devices import gpu
    if op == "project":
        in_name, in_shape, out_shape = "f", volume.shape, geometry.projection_shape
    else:
        in_name, in_shape, out_shape = "g", geometry.projection_shape, volume.shape
    dev = _validate.check_cuda_pair(in_name, x, out, in_shape, out_shape)
    plan = make_plan(geometry, volume, fov_radius=fov_radius,
                     fan_distance_weight=fan_distance_weight, slice_weights=slice_weights)
    with _arrays.device_context(dev):
        y = out if out is not None else _arrays.empty_like_kind(x, out_shape)
        stream = _arrays.caller_stream(x)

        def alloc(shape):
            return _arrays.as_numba(_arrays.empty_like_kind(x, shape))

        fn = gpu.project_device if op == "project" else gpu.backproject_device
        fn(plan, _arrays.as_numba(x), _arrays.as_numba(y), stream, alloc)
    return y
