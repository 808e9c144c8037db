"""One plan per (geometry, volume, weighting): everything the kernels of either
back-end need, computed once.

A :class:`Plan` is the kernels' whole view of a call. The CPU launchers
(:mod:`leap.kernels.cpu.launch`) and the CUDA driver (:mod:`leap.devices.gpu`) take a plan and
the arrays, and unpack it in one place each, so no caller builds long positional
argument lists.

Two kernel families:

* modular kernels (``plan.modular``): modular beams and tilted cone beams (through
  their modular form); the plan holds the per-view frames of a
  :class:`~leap.geometry.ModularBeam` and, when its modules are all vertical, their
  cone-beam form (``plan.vertical``), with which the CPU runs the axial kernels on
  the same footprint model;
* axial kernels: parallel, fan, cone (flat/curved, helical) and cone-parallel beams;
  the plan holds the geometry's :class:`~leap.geometry.axial.AxialViews`, the squared
  field-of-view radius, the per-row ray stretch and FBP's optional weights.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, Volume


@dataclass(frozen=True, eq=False)
class Plan:
    """The kernels' inputs for one geometry and volume.

    modular : bool, which kernel family runs.
    geometry : the kernel form (a ModularBeam for modular and tilted cone beams).
    volume : Volume.
    views : AxialViews (axial family) or None.
    fov_r2 : squared field-of-view radius, mm² (axial family; voxels beyond are skipped).
    dist_sod : FBP's distance weight: 0 for none, else the sod (fan beams) or orbit
        radius (cone-parallel) it is computed with, mm.
    slice_weights : (num_angles, num_z) float64 weights of helical FBP, or None.
    row_factor : (num_rows,) float64 out-of-plane ray stretch √(1 + v²) (cone beams;
        ones otherwise).
    vertical : VerticalModules of a modular beam with vertical modules, or None.
    center_cols : (num_angles,) float64 per-view detector column of the central ray,
        fractional pixels, or None (the detector's, every view). Set by callers whose
        views differ from any standard geometry's (per-view shifts of a parallel or fan
        scan, :mod:`leap.torch._axial_params`) together with ``views``.
    """

    modular: bool
    geometry: object
    volume: Volume
    views: object = None
    fov_r2: float = 0.0
    dist_sod: float = 0.0
    slice_weights: np.ndarray | None = None
    row_factor: np.ndarray | None = None
    vertical: object = None
    center_cols: np.ndarray | None = None

    def view_slice(self, a0: int, a1: int) -> "Plan":
        """The plan of views a0:a1 (slice weights cut alike)."""
        sw = None if self.slice_weights is None else self.slice_weights[a0:a1]
        if self.modular:
            geo = self.geometry[a0:a1]
            vm = None if self.vertical is None else geo.vertical_modules()
            return dataclasses.replace(self, geometry=geo, slice_weights=sw, vertical=vm)
        v = self.views
        views = v._replace(col_dir=v.col_dir[a0:a1], source_xy=v.source_xy[a0:a1],
                           source_z=v.source_z[a0:a1],
                           focus=None if v.focus is None else v.focus[a0:a1])
        cc = None if self.center_cols is None else self.center_cols[a0:a1]
        return dataclasses.replace(self, views=views, slice_weights=sw, center_cols=cc)

    def scalars(self, z0: float | None = None) -> SimpleNamespace:
        """The scalar kernel arguments (mm; detector centres in fractional pixels), with
        ``z0`` the z of the first slice the kernel sees (default: the volume's)."""
        v, d = self.volume, self.geometry.detector
        return SimpleNamespace(fov_r2=self.fov_r2, x0=v.x0, y0=v.y0,
                               z0=v.z0 if z0 is None else z0,
                               voxel_width=v.voxel_width, voxel_height=v.voxel_height,
                               pixel_width=d.pixel_width, pixel_height=d.pixel_height,
                               center_col=d.center_col, center_row=d.center_row,
                               dist_sod=self.dist_sod)


def kernel_form(geometry):
    """The geometry as the kernels take it: tilted cones, and flat cones with a flying
    focal spot, go through their modular form."""
    if isinstance(geometry, ConeBeam) and (
            geometry.tilt != 0.0
            or (geometry.source_shifts is not None and not geometry.detector.curved)):
        return geometry.to_modular()
    return geometry


def row_factor(geometry) -> np.ndarray:
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


def _fov_r2(views, fov_radius) -> float:
    # A geometry's own radius may be 0 (detector ending at the axis: nothing is seen).
    if fov_radius is None:
        return views.fov_radius ** 2
    r = float(fov_radius)
    if not r > 0:
        raise ValueError(f"fov_radius must be positive, got {fov_radius}")
    return r * r


def _slice_weights(geometry, volume, slice_weights):
    """Validated helical slice weights (num_angles, num_z) float64, or None."""
    if slice_weights is None:
        return None
    if not isinstance(geometry, ConeBeam):
        raise ValueError("slice_weights apply to (untilted) cone beams only")
    sw = np.ascontiguousarray(slice_weights, dtype=np.float64)
    if sw.shape != (geometry.num_angles, volume.num_z):
        raise ValueError(f"slice_weights must have shape {(geometry.num_angles, volume.num_z)}, "
                         f"got {sw.shape}")
    return sw


def make_plan(geometry, volume: Volume, *, fov_radius: float | None = None,
              fan_distance_weight: bool = False, slice_weights=None) -> Plan:
    """The plan of projecting/back-projecting ``volume`` through ``geometry``.

    fov_radius : field-of-view radius, mm (None: the geometry's own; modular kernels
        mask nothing).
    fan_distance_weight : FBP's back-projection weight (fan and cone-parallel beams).
    slice_weights : (num_angles, num_z) helical FBP weights (untilted cone beams).
    """
    if fan_distance_weight and not isinstance(geometry, (FanBeam, ConeParallelBeam)):
        raise ValueError("fan_distance_weight applies to fan beams only (or cone-parallel beams), "
                         f"not {type(geometry).__name__}")
    kf = kernel_form(geometry)
    if isinstance(kf, ModularBeam):
        # FBP's weights do not apply to the modular kernels (FBP weights modular beams
        # in the projection domain instead).
        return Plan(modular=True, geometry=kf, volume=volume,
                    row_factor=np.ones(kf.detector.num_rows),
                    vertical=kf.vertical_modules())
    views = kf.axial_views()
    return Plan(modular=False, geometry=kf, volume=volume, views=views,
                fov_r2=_fov_r2(views, fov_radius),
                dist_sod=kf.sod if fan_distance_weight else 0.0,
                slice_weights=_slice_weights(kf, volume, slice_weights),
                row_factor=row_factor(kf))
