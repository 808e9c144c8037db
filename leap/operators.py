"""Projection and back-projection on arrays, dispatched by array kind.

The core API: functions of (geometry, volume, array) that return an array. ``out``
is optional; when given it is written into and returned.

Dispatch by array kind (:mod:`leap.arrays`):

* NumPy in → NumPy out. The Numba CPU kernels run, unless GPUs are selected
  (``devices=`` here, or :func:`leap.gpu.set_devices`, which the facade's
  ``set_gpu``/``set_gpus`` call): then the CUDA kernels run from host memory, split
  over the devices and chunked to fit (``max_slices``; :mod:`leap.gpu`).
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

import math

import numba
import numpy as np

from .geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from . import arrays as _arrays
from .kernels.cpu import axial as _cpu_axial
from .kernels.cpu import modular as _cpu_modular

Geometry = ParallelBeam | FanBeam | ConeBeam | ConeParallelBeam | ModularBeam


def _check_geometry(geometry, volume):
    if not isinstance(geometry, (ParallelBeam, FanBeam, ConeBeam, ConeParallelBeam, ModularBeam)):
        raise TypeError("geometry must be a ParallelBeam, FanBeam, ConeBeam, ConeParallelBeam or "
                        f"ModularBeam, got {type(geometry).__name__}")
    if not isinstance(volume, Volume):
        raise TypeError(f"volume must be a Volume, got {type(volume).__name__}")


def _check_array(name, arr, shape):
    """Validate a NumPy float32 C-contiguous array of the given shape."""
    if _arrays.is_cuda_array(arr):
        raise TypeError(f"{name} is a CUDA array but the other array is a NumPy array; pass "
                        "both on the same GPU (CuPy / torch CUDA) or both as NumPy arrays")
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(arr).__name__}")
    if arr.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {arr.dtype}; "
                        f"convert with {name}.astype(np.float32)")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; pass np.ascontiguousarray({name})")


@numba.njit(cache=True, parallel=True, nogil=True)
def _all_finite(flat):  # pragma: no cover - compiled
    bad = 0
    for i in numba.prange(flat.size):
        if not math.isfinite(flat[i]):
            bad += 1
    return bad == 0


def _check_finite(name, arr):
    """Raise if the NumPy input ``arr`` holds NaN or inf (one parallel pass, no copy):
    they would spread through every ray or voxel they touch."""
    if arr.size and not _all_finite(arr.reshape(-1)):
        raise ValueError(f"{name} contains NaN or infinite values; clean the data first "
                         f"(e.g. np.nan_to_num({name}) or a bad-pixel correction)")


def _check_out(name, out, shape, other):
    if out is None:
        return np.empty(shape, dtype=np.float32)
    _check_array(name, out, shape)
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")
    if np.shares_memory(out, other):
        raise ValueError(f"{name} must not overlap the input array")
    return out


def _kernel_form(geometry):
    """The geometry as the kernels take it: tilted cones go through their modular form."""
    if isinstance(geometry, ConeBeam) and geometry.tilt != 0.0:
        return geometry.to_modular()
    return geometry


def _fbp_weights(geometry, volume, fan_distance_weight, slice_weights) -> np.ndarray:
    """Validate FBP's back-projection weights; slice weights as a (na, nz) array or (0, 0)."""
    if fan_distance_weight and not isinstance(geometry, (FanBeam, ConeParallelBeam)):
        raise ValueError("fan_distance_weight applies to fan beams only (or cone-parallel beams), "
                         f"not {type(geometry).__name__}")
    if slice_weights is None:
        return np.zeros((0, 0))
    if not isinstance(geometry, ConeBeam):
        raise ValueError("slice_weights apply to (untilted) cone beams only")
    sw = np.ascontiguousarray(slice_weights, dtype=np.float64)
    if sw.shape != (geometry.num_angles, volume.num_z):
        raise ValueError(f"slice_weights must have shape {(geometry.num_angles, volume.num_z)}, "
                         f"got {sw.shape}")
    return sw


def _fov_r2(views, fov_radius) -> float:
    # A geometry's own radius may be 0 (detector ending at the axis: nothing is seen).
    if fov_radius is None:
        return views.fov_radius ** 2
    r = float(fov_radius)
    if not r > 0:
        raise ValueError(f"fov_radius must be positive, got {fov_radius}")
    return r * r


def _row_factor(geometry) -> np.ndarray:
    """Cone beams: out-of-plane ray stretch √(1 + v²), v = t_j / sdd, per detector row.

    Cone-parallel beams get none: upstream LEAP's cone-parallel projectors (its GPU
    ``coneParallelProjectorKernel_SF``/``_eSF``; there is no CPU one) integrate along
    the in-plane footprint only, and leap gives the same numbers. Their line integrals
    are short by the factor 1/√(1 + v²) (1 − 1e-3 at v = 0.045)."""
    d = geometry.detector
    if isinstance(geometry, ConeBeam):
        v = (np.arange(d.num_rows) - d.center_row) * d.pixel_height / geometry.sdd
        return np.sqrt(1.0 + v * v)
    return np.ones(d.num_rows)


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
        selection of :func:`leap.gpu.set_devices` (initially the CPU). CUDA arrays
        always run on their own device.
    max_slices : int, optional
        NumPy inputs on GPUs: largest slab (slices) / view chunk; default
        :func:`leap.gpu.get_max_slices` or what fits in free GPU memory.

    Returns
    -------
    (num_angles, num_rows, num_cols) float32 line integrals.
    """
    _check_geometry(geometry, volume)
    if _arrays.is_cuda_array(f) or _arrays.is_cuda_array(out):
        return _cuda_call("project", geometry, volume, f, out, fov_radius,
                          fan_distance_weight, slice_weights)
    _check_array("f", f, volume.shape)
    _check_finite("f", f)
    g = _check_out("out", out, geometry.projection_shape, f)
    devs, cap = _gpu_selection(devices, max_slices)
    if devs:
        from . import gpu
        setup = _setup(geometry, volume, fov_radius, fan_distance_weight, slice_weights)
        return gpu.project_host(setup, volume, f, g, devs, cap)
    geometry = _kernel_form(geometry)
    if isinstance(geometry, ModularBeam):
        d = geometry.detector
        _cpu_modular.project(f, g, geometry.source_positions, geometry.module_centers,
                             geometry.row_vectors, geometry.col_vectors,
                             volume.x0, volume.y0, volume.z0, volume.voxel_width,
                             volume.voxel_height, d.pixel_width, d.pixel_height)
        return g
    sw = _fbp_weights(geometry, volume, fan_distance_weight, slice_weights)
    v = geometry.axial_views()
    d = geometry.detector
    S = _cpu_axial.volume_z_cumsum(f)
    _cpu_axial.project(S, g, v.col_dir, v.source_xy, v.source_z, v.sdd, v.sod,
                       v.helical_pitch, v.column_model, v.magnify_z, _fov_r2(v, fov_radius), volume.x0, volume.y0, volume.z0,
                       volume.voxel_width, volume.voxel_height, d.pixel_width,
                       d.pixel_height, d.center_col, d.center_row, _row_factor(geometry),
                       geometry.sod if fan_distance_weight else 0.0, sw)
    return g


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
    _check_geometry(geometry, volume)
    if _arrays.is_cuda_array(g) or _arrays.is_cuda_array(out):
        return _cuda_call("backproject", geometry, volume, g, out, fov_radius,
                          fan_distance_weight, slice_weights)
    _check_array("g", g, geometry.projection_shape)
    _check_finite("g", g)
    f = _check_out("out", out, volume.shape, g)
    devs, cap = _gpu_selection(devices, max_slices)
    if devs:
        from . import gpu
        setup = _setup(geometry, volume, fov_radius, fan_distance_weight, slice_weights)
        return gpu.backproject_host(setup, volume, g, f, devs, cap)
    geometry = _kernel_form(geometry)
    if isinstance(geometry, ModularBeam):
        d = geometry.detector
        _cpu_modular.backproject(g, f, geometry.source_positions, geometry.module_centers,
                                 geometry.row_vectors, geometry.col_vectors,
                                 volume.x0, volume.y0, volume.z0, volume.voxel_width,
                                 volume.voxel_height, d.pixel_width, d.pixel_height)
        return f
    sw = _fbp_weights(geometry, volume, fan_distance_weight, slice_weights)
    v = geometry.axial_views()
    d = geometry.detector
    G = _cpu_axial.projection_row_cumsum(g, _row_factor(geometry))
    _cpu_axial.backproject(G, f, v.col_dir, v.source_xy, v.source_z, v.sdd, v.sod,
                           v.helical_pitch, v.column_model, v.magnify_z, _fov_r2(v, fov_radius), volume.x0, volume.y0, volume.z0,
                           volume.voxel_width, volume.voxel_height, d.pixel_width,
                           d.pixel_height, d.center_col, d.center_row,
                           geometry.sod if fan_distance_weight else 0.0, sw)
    return f


# ---------------------------------------------------------------------- GPU dispatch

def _gpu_selection(devices, max_slices):
    """Devices for a NumPy call: explicit ``devices``, else leap.gpu's selection."""
    from . import gpu
    return gpu.resolve(devices, max_slices)


def _setup(geometry, volume, fov_radius, fan_distance_weight, slice_weights):
    """The kernel inputs of a call, shared by the GPU paths (leap.gpu.Setup)."""
    from .gpu import Setup
    kf = _kernel_form(geometry)
    if isinstance(kf, ModularBeam):
        # As on the CPU, FBP weights do not apply to the modular kernels.
        return Setup(True, kf, None, 0.0, 0.0, None, np.ones(kf.detector.num_rows))
    sw = _fbp_weights(kf, volume, fan_distance_weight, slice_weights)
    v = kf.axial_views()
    return Setup(False, kf, v, _fov_r2(v, fov_radius),
                 kf.sod if fan_distance_weight else 0.0, sw if sw.size else None,
                 _row_factor(kf))


def _check_cuda_pair(in_name, x, out, in_shape, out_shape):
    """Validate a CUDA call's input and ``out``; returns their common device."""
    _arrays.require_cuda()
    if not _arrays.is_cuda_array(x):
        raise TypeError(f"out is a CUDA array but {in_name} is a {type(x).__name__}; pass "
                        f"{in_name} on the same GPU (cupy.asarray / torch.as_tensor(..., "
                        "device='cuda')) or a NumPy out")
    _arrays.check_cuda_array(in_name, x, in_shape)
    if out is not None:
        if not _arrays.is_cuda_array(out):
            raise TypeError(f"{in_name} is a CUDA array but out is a {type(out).__name__}; "
                            "pass out on the same GPU, or omit it")
        _arrays.check_cuda_array("out", out, out_shape)
        p, q = _arrays.data_pointer(x), _arrays.data_pointer(out)
        nx_, nq = 4 * int(np.prod(in_shape)), 4 * int(np.prod(out_shape))
        if p < q + nq and q < p + nx_:
            raise ValueError("out must not overlap the input array")
    return _arrays.check_same_device(**{in_name: x, "out": out})


def _cuda_call(op, geometry, volume, x, out, fov_radius, fan_distance_weight,
               slice_weights):
    """project / backproject on CUDA arrays: the array's device, the caller's stream."""
    from . import gpu
    if op == "project":
        in_name, in_shape, out_shape = "f", volume.shape, geometry.projection_shape
    else:
        in_name, in_shape, out_shape = "g", geometry.projection_shape, volume.shape
    dev = _check_cuda_pair(in_name, x, out, in_shape, out_shape)
    setup = _setup(geometry, volume, fov_radius, fan_distance_weight, slice_weights)
    with _arrays.device_context(dev):
        y = out if out is not None else _arrays.empty_like_kind(x, out_shape)
        stream = _arrays.caller_stream(x)

        def alloc(shape):
            return _arrays.as_numba(_arrays.empty_like_kind(x, shape))

        fn = gpu.project_device if op == "project" else gpu.backproject_device
        fn(setup, volume, _arrays.as_numba(x), _arrays.as_numba(y), stream, alloc)
    return y
