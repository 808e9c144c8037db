"""Projection and back-projection on arrays, dispatched by array kind.

The core API: functions of (geometry, volume, array) that return an array. ``out``
is optional; when given it is written into and returned. NumPy arrays run on the
Numba CPU kernels.

Forward projection computes, for every detector pixel, the pixel-averaged line
integral ``g = ∫ f(source + t·direction) dt`` (mm × attenuation/mm) of the voxel
function under LEAP's separable-footprint model; back-projection is its exact
transpose (``<P f, g> = <f, Pᵀ g>`` to float rounding).
"""
from __future__ import annotations

import numpy as np

from .geometry import ConeBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from .kernels.cpu import axial as _cpu_axial
from .kernels.cpu import modular as _cpu_modular

Geometry = ParallelBeam | FanBeam | ConeBeam | ModularBeam


def _check_geometry(geometry, volume):
    if not isinstance(geometry, (ParallelBeam, FanBeam, ConeBeam, ModularBeam)):
        raise TypeError("geometry must be a ParallelBeam, FanBeam, ConeBeam or ModularBeam, "
                        f"got {type(geometry).__name__}")
    if not isinstance(volume, Volume):
        raise TypeError(f"volume must be a Volume, got {type(volume).__name__}")


def _check_array(name, arr, shape):
    """Validate a NumPy float32 C-contiguous array of the given shape."""
    if hasattr(arr, "__cuda_array_interface__"):
        raise NotImplementedError(
            f"{name} is a CUDA array; this build of leap runs projections on NumPy arrays "
            "only (the CUDA back-end is not part of it yet). Pass a NumPy array.")
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(arr).__name__}")
    if arr.dtype != np.float32:
        raise TypeError(f"{name} must have dtype float32, got {arr.dtype}; "
                        f"convert with {name}.astype(np.float32)")
    if arr.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {arr.shape}")
    if not arr.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; pass np.ascontiguousarray({name})")


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
    if fan_distance_weight and not isinstance(geometry, FanBeam):
        raise ValueError("fan_distance_weight applies to fan beams only")
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
    """Cone beams: out-of-plane ray stretch √(1 + v²), v = t_j / sdd, per detector row."""
    d = geometry.detector
    if isinstance(geometry, ConeBeam):
        v = (np.arange(d.num_rows) - d.center_row) * d.pixel_height / geometry.sdd
        return np.sqrt(1.0 + v * v)
    return np.ones(d.num_rows)


def project(geometry: Geometry, volume: Volume, f: np.ndarray, out: np.ndarray | None = None,
            *, fov_radius: float | None = None, fan_distance_weight: bool = False,
            slice_weights: np.ndarray | None = None):
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

    Returns
    -------
    (num_angles, num_rows, num_cols) float32 line integrals.
    """
    _check_geometry(geometry, volume)
    _check_array("f", f, volume.shape)
    g = _check_out("out", out, geometry.projection_shape, f)
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
    _cpu_axial.project(S, g, v.col_dir, v.source_xy, v.source_z, v.sdd, v.column_model,
                       v.magnify_z, _fov_r2(v, fov_radius), volume.x0, volume.y0, volume.z0,
                       volume.voxel_width, volume.voxel_height, d.pixel_width,
                       d.pixel_height, d.center_col, d.center_row, _row_factor(geometry),
                       geometry.sod if fan_distance_weight else 0.0, sw)
    return g


def backproject(geometry: Geometry, volume: Volume, g: np.ndarray, out: np.ndarray | None = None,
                *, fov_radius: float | None = None, fan_distance_weight: bool = False,
                slice_weights: np.ndarray | None = None):
    """Back-projection ``Pᵀ g``, the exact transpose of :func:`project`.

    Parameters
    ----------
    geometry, volume, fov_radius : as for :func:`project`.
    g : (num_angles, num_rows, num_cols) float32, C-contiguous
    out : (num_z, num_y, num_x) float32, optional
        Written into and returned.
    fan_distance_weight : bool
        Fan beams only: weight each view by sod/(sod − x·θ), the distance weight of
        fan-beam FBP (then no longer the transpose of :func:`project`).
    slice_weights : (num_angles, num_z) array, optional
        Cone beams only: weight voxel slice k's contribution from view a (helical FBP).
    """
    _check_geometry(geometry, volume)
    _check_array("g", g, geometry.projection_shape)
    f = _check_out("out", out, volume.shape, g)
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
    _cpu_axial.backproject(G, f, v.col_dir, v.source_xy, v.source_z, v.sdd, v.column_model,
                           v.magnify_z, _fov_r2(v, fov_radius), volume.x0, volume.y0, volume.z0,
                           volume.voxel_width, volume.voxel_height, d.pixel_width,
                           d.pixel_height, d.center_col, d.center_row,
                           geometry.sod if fan_distance_weight else 0.0, sw)
    return f
