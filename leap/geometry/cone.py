"""Cone-beam geometry: circular or helical source orbit, flat or curved detector."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import finite_float, readonly_array
from .axial import AxialViews, column_axes
from .detector import Detector
from .divergent import (DivergentBeam, check_source_heights, helical_pitch_for,
                        normalized_helical_pitch)
from .modular import ModularBeam


@dataclass(frozen=True, kw_only=True, eq=False)
class ConeBeam(DivergentBeam):
    """A point source on a circle or helix, a 2-D detector facing it.

    Parameters
    ----------
    detector : Detector
        Flat, or curved (cylinder about the source, equi-angular columns).
    angles : (num_angles,) array
        View angles ψ, radians.
    sod, sdd : float
        Source-to-object and source-to-detector distances, mm (sdd > sod).
    tau : float
        Shift of source and detector along −θ⊥ (rotation-axis offset), mm.
    helical_pitch : float
        Source advance along z per radian of rotation, mm/rad. The source height is
        ``z_s = helical_pitch * (ψ - ψ_mid)``, ψ_mid the mean of the first and last
        angle, so the source is at z = 0 in the middle of the scan.
    tilt : float
        Rotation of a flat detector about the central ray, radians (``|tilt| ≤ 5°``).
        Tilted geometries are projected through their modular form.
    helical_mid_angle : float, optional
        ψ_mid, the angle at which a helical source is at z = 0. Defaults to the mean of
        the first and last angle; kept when views are sliced (``geom[10:20]``) so a
        subset of views stays on the same helix.
    source_shifts : (num_angles, 3) array, optional
        Flying focal spot: per view, the X-ray source's offset (Δψ radians, Δz mm, Δρ mm)
        from the detector's focal centre, in cylindrical coordinates about the rotation
        axis (DICOM-CT-PD's SourceAngular/Axial/RadialPositionShift). The focal centre
        follows the orbit above (``sod``, ψ, z_s, tau) and carries the detector; the
        source sits at radius ``sod + Δρ``, angle ``ψ + Δψ``, height ``z_s + Δz`` (shifted
        by ``−tau·θ⊥(ψ)`` like the focal centre). A curved detector stays a cylinder of
        radius ``sdd`` about the focal centre, so its columns are equi-angular seen from
        the focal centre, not from the source. None: the source is the focal centre.

    A point p projects to ``u = (p·θ⊥ + tau) / (sod − p·θ)`` and
    ``v = (z − z_s) / (sod − p·θ)`` (flat detector coordinates s = sdd·u, t = sdd·v).
    """

    detector: Detector
    angles: np.ndarray
    sod: float
    sdd: float
    tau: float = 0.0
    helical_pitch: float = 0.0
    tilt: float = 0.0
    helical_mid_angle: float | None = None
    source_shifts: np.ndarray | None = None

    _view_fields = ("angles", "source_shifts")

    #: Largest detector tilt accepted (LEAP's limit), radians.
    MAX_TILT = np.deg2rad(5.0)

    def __post_init__(self):
        self._check_common()
        object.__setattr__(self, "helical_pitch", finite_float("helical_pitch", self.helical_pitch))
        object.__setattr__(self, "tilt", finite_float("tilt", self.tilt))
        if self.helical_mid_angle is None:
            object.__setattr__(self, "helical_mid_angle",
                               float(0.5 * (self.angles[0] + self.angles[-1])))
        object.__setattr__(self, "helical_mid_angle",
                           finite_float("helical_mid_angle", self.helical_mid_angle))
        check_source_heights(self)
        if abs(self.tilt) > self.MAX_TILT + 1e-12:
            raise ValueError(f"tilt must be at most 5 degrees in magnitude, got {np.rad2deg(self.tilt):.4g}")
        if self.tilt != 0.0 and self.detector.curved:
            raise ValueError("a tilted detector must be flat (tilt is defined for flat detectors only)")
        if self.source_shifts is not None:
            shifts = readonly_array("source_shifts", self.source_shifts, (None, 3))
            if shifts.shape[0] != self.num_angles:
                raise ValueError(f"source_shifts must have one row (Δψ, Δz, Δρ) per view: shape "
                                 f"({self.num_angles}, 3), got {shifts.shape}")
            if np.any(np.abs(shifts[:, 0]) >= 0.5 * np.pi):
                raise ValueError("source_shifts: the angular shifts Δψ must be below π/2 in "
                                 "magnitude (radians)")
            if np.any(self.sod + shifts[:, 2] <= 0.0):
                raise ValueError("source_shifts: sod + Δρ must stay positive (mm)")
            object.__setattr__(self, "source_shifts", None if not shifts.any() else shifts)

    @property
    def is_helical(self) -> bool:
        return self.helical_pitch != 0.0

    def source_z(self) -> np.ndarray:
        """Source heights per view, shape (num_angles,), mm."""
        if not self.is_helical:
            return np.zeros(self.num_angles)
        return self.helical_pitch * (self.angles - self.helical_mid_angle)

    def xray_sources(self) -> np.ndarray:
        """The X-ray source of each view, shape (num_angles, 3), mm: the focal centre
        (``sod·θ − tau·θ⊥ + z_s ẑ``) moved by ``source_shifts``."""
        c = column_axes(self.angles)                      # θ⊥
        out = np.zeros((self.num_angles, 3))
        out[:, 2] = self.source_z()
        if self.source_shifts is None:
            out[:, :2] = self.source_xy()
            return out
        dpsi, dz, drho = self.source_shifts.T
        shifted = column_axes(self.angles + dpsi)
        r = (self.sod + drho)[:, None]
        out[:, :2] = r * np.stack([shifted[:, 1], -shifted[:, 0]], axis=1) - self.tau * c
        out[:, 2] += dz
        return out

    def focus_offsets(self) -> np.ndarray | None:
        """The source's offset from the focal centre in each view's frame, shape
        (num_angles, 3), mm: along θ⊥ (the column axis), along the ray direction
        (−θ, from source to detector) and along z; None without ``source_shifts``."""
        if self.source_shifts is None:
            return None
        c = column_axes(self.angles)
        d = self.xray_sources()
        d[:, :2] -= self.source_xy()
        d[:, 2] -= self.source_z()
        lateral = d[:, 0] * c[:, 0] + d[:, 1] * c[:, 1]
        depth = -d[:, 0] * c[:, 1] + d[:, 1] * c[:, 0]
        return np.ascontiguousarray(np.stack([lateral, depth, d[:, 2]], axis=1))

    def normalized_helical_pitch(self) -> float:
        """Table advance per turn over the detector height at the isocentre."""
        return normalized_helical_pitch(self)

    def with_normalized_helical_pitch(self, normalized: float):
        """A copy whose pitch has the normalised value ``normalized``."""
        return self.with_changes(helical_pitch=helical_pitch_for(self, normalized))

    def spun(self, angle: float) -> ConeBeam:
        """The detector turned by ``angle`` radians about the central ray (the column
        vector towards the row vector, as :meth:`ModularBeam.spun`): the tilt grows by
        ``angle`` (``|tilt| ≤ 5°``, flat detectors only)."""
        return self.with_changes(tilt=self.tilt + angle)

    def to_modular(self) -> ModularBeam:
        """The equivalent modular-beam geometry (flat detectors only).

        Per view: source ``sod·θ − tau·θ⊥ + z_s ẑ``; column vector ``cos(t)·θ⊥ + sin(t)·ẑ``;
        row vector ``−sin(t)·θ⊥ + cos(t)·ẑ`` (t the tilt); module centre
        ``(sod − sdd)·θ − tau·θ⊥ + z_s ẑ`` shifted by the detector offsets
        ``((N_cols−1)/2 − center_col)·pixel_width`` along the column vector and
        ``((N_rows−1)/2 − center_row)·pixel_height`` along the row vector. With
        ``source_shifts`` the sources are :meth:`xray_sources` and the modules
        stay with the focal centre.
        """
        d = self.detector
        if d.curved:
            raise ValueError("a curved detector has no flat-module (modular-beam) equivalent")
        perp = np.zeros((self.num_angles, 3))
        perp[:, :2] = column_axes(self.angles)
        theta = np.stack([perp[:, 1], -perp[:, 0], np.zeros(self.num_angles)], axis=1)
        zhat = np.array([0.0, 0.0, 1.0])
        c, s = np.cos(self.tilt), np.sin(self.tilt)
        cols = c * perp + s * zhat
        rows = -s * perp + c * zhat
        zs = self.source_z()[:, None] * zhat
        sources = self.xray_sources()
        h_shift = (0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width
        v_shift = (0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height
        centers = ((self.sod - self.sdd) * theta - self.tau * perp + zs
                   + h_shift * cols + v_shift * rows)
        det = d.with_changes(center_row=None, center_col=None)
        return ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                           row_vectors=rows, col_vectors=cols)

    def axial_views(self) -> AxialViews:
        """The axial kernels' form; with ``source_shifts`` (curved detectors; flat
        ones go through :meth:`to_modular`) the sources are the shifted ones and
        ``focus`` holds :meth:`focus_offsets`."""
        src = self.xray_sources()
        return AxialViews(column_axes(self.angles), np.ascontiguousarray(src[:, :2]),
                          np.ascontiguousarray(src[:, 2]), self.sdd, self.column_model, True,
                          self.fov_radius(), focus=self.focus_offsets())


def check_no_source_shifts(geometry, what: str) -> None:
    """Raise ValueError if ``geometry`` has flying-focal-spot source shifts, which
    ``what`` (an operation that assumes the source is the detector's focal centre) would
    silently ignore."""
    if getattr(geometry, "source_shifts", None) is not None:
        raise ValueError(f"{what} assumes the source is the detector's focal centre; this "
                         "geometry has flying-focal-spot source_shifts. Reconstruct it "
                         "directly (FBP or an iterative method), which model the shifts")


def z_source_offset(geometry) -> float:
    """LEAP's ``z_source_offset`` of a helical cone beam, mm.

    LEAP writes the source height as ``h·φ + z_source_offset`` with φ = ψ − π/2 (its
    internal angle); the core's ``h·(ψ − ψ_mid)`` (:meth:`ConeBeam.source_z`) makes it
    ``h·(π/2 − ψ_mid)``, which is ``−h·(φ_first + φ_last)/2`` unless the views were
    sliced. 0 for circular cone beams and every other geometry (cone-parallel beams
    included, as the LEAP facade has always reported).
    """
    if not isinstance(geometry, ConeBeam) or not geometry.is_helical:
        return 0.0
    return float(geometry.helical_pitch * (0.5 * math.pi - geometry.helical_mid_angle))
