"""Cone-beam geometry: circular or helical source orbit, flat or curved detector."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import finite_float
from .axial import AxialViews, column_axes
from .detector import Detector
from .divergent import DivergentBeam, helical_pitch_for, normalized_helical_pitch
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
        if abs(self.tilt) > self.MAX_TILT + 1e-12:
            raise ValueError(f"tilt must be at most 5 degrees in magnitude, got {np.rad2deg(self.tilt):.4g}")
        if self.tilt != 0.0 and self.detector.curved:
            raise ValueError("a tilted detector must be flat (tilt is defined for flat detectors only)")

    @property
    def is_helical(self) -> bool:
        return self.helical_pitch != 0.0

    def source_z(self) -> np.ndarray:
        """Source heights per view, shape (num_angles,), mm."""
        if not self.is_helical:
            return np.zeros(self.num_angles)
        return self.helical_pitch * (self.angles - self.helical_mid_angle)

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
        ``((N_rows−1)/2 − center_row)·pixel_height`` along the row vector.
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
        sources = self.sod * theta - self.tau * perp + zs
        h_shift = (0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width
        v_shift = (0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height
        centers = ((self.sod - self.sdd) * theta - self.tau * perp + zs
                   + h_shift * cols + v_shift * rows)
        det = d.with_changes(center_row=None, center_col=None)
        return ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                           row_vectors=rows, col_vectors=cols)

    def axial_views(self) -> AxialViews:
        return AxialViews(column_axes(self.angles), self.source_xy(), self.source_z(),
                          self.sdd, self.column_model, True, self.fov_radius())


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
