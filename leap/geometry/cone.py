"""Cone-beam geometry: circular or helical source orbit, flat or curved detector."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import finite_float
from .axial import AxialViews, column_axes
from .detector import Detector
from .divergent import DivergentBeam


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

    A point p projects to ``u = (p·θ⊥ + tau) / (sod − p·θ)`` and
    ``v = (z − z_s) / (sod − p·θ)`` (flat detector coordinates s = sdd·u, t = sdd·v).
    """

    detector: Detector
    angles: np.ndarray
    sod: float
    sdd: float
    tau: float = 0.0
    helical_pitch: float = 0.0

    def __post_init__(self):
        self._check_common()
        object.__setattr__(self, "helical_pitch", finite_float("helical_pitch", self.helical_pitch))

    @property
    def is_helical(self) -> bool:
        return self.helical_pitch != 0.0

    def source_z(self) -> np.ndarray:
        """Source heights per view, shape (num_angles,), mm."""
        if not self.is_helical:
            return np.zeros(self.num_angles)
        mid = 0.5 * (self.angles[0] + self.angles[-1])
        return self.helical_pitch * (self.angles - mid)

    def normalized_helical_pitch(self) -> float:
        """Table advance per turn over the detector height at the isocentre."""
        d = self.detector
        return 2 * np.pi * self.helical_pitch / (d.num_rows * d.pixel_height * self.sod / self.sdd)

    def axial_views(self) -> AxialViews:
        return AxialViews(column_axes(self.angles), self.source_xy(), self.source_z(),
                          self.sdd, self.column_model, True, self.fov_radius())
