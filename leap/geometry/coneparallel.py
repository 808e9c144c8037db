"""Cone-parallel geometry: cone-beam data rebinned to parallel rays in-plane."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import finite_float
from .axial import CONE_PARALLEL, AxialViews, column_axes
from .base import ScanGeometry
from .detector import Detector
from .divergent import (check_orbit, check_source_heights, helical_pitch_for,
                        normalized_helical_pitch)


@dataclass(frozen=True, kw_only=True, eq=False)
class ConeParallelBeam(ScanGeometry):
    """Rays parallel in the xy plane, divergent along z (LEAP's ``set_coneparallel``).

    What ``rebin_parallel`` makes of a circular or helical cone-beam scan: view ψ holds,
    for every lateral position s, the ray of the cone-beam view ψ + α(s),
    α(s) = asin(s/sod) + asin(tau/sod), whose source lies on the orbit at in-plane
    distance √(sod² − s²) before the rotation axis.

    Parameters
    ----------
    detector : Detector
        Flat. Column i is the lateral coordinate ``s_i = (i − center_col)·pixel_width``
        measured at the rotation axis (mm); row j the cone-beam coordinate
        ``t_j = (j − center_row)·pixel_height`` on a detector at distance sdd (mm).
    angles : (num_angles,) array
        View angles ψ, radians (LEAP's convention: at ψ = 0 rays travel along +y).
    sod, sdd : float
        Source-to-axis and source-to-detector distances, mm (sdd > sod).
    tau : float
        Rotation-axis offset of the original cone-beam scan, mm; it only moves helical
        source heights (through α(s)), the columns are already centred by rebinning.
    helical_pitch : float
        Source advance along z per radian, mm/rad.
    helical_mid_angle : float, optional
        ψ_mid, where a helical source is at z = 0 (default: mean of first and last angle).

    A point p = (x, y, z) lies on the ray of column ``s = p·θ⊥`` and row
    ``t = sdd·(z − z_s(s)) / (√(sod² − s²) − p·θ)``, with θ⊥ = (cos ψ, sin ψ, 0),
    θ = (sin ψ, −cos ψ, 0) and ``z_s(s) = helical_pitch·(ψ − ψ_mid + α(s))``.
    """

    detector: Detector
    angles: np.ndarray
    sod: float
    sdd: float
    tau: float = 0.0
    helical_pitch: float = 0.0
    helical_mid_angle: float | None = None

    _view_fields = ("angles",)

    def __post_init__(self):
        check_orbit(self)
        if self.detector.curved:
            raise ValueError("a cone-parallel detector cannot be curved (rebin curved data with "
                             "rebin_parallel, which produces flat cone-parallel coordinates)")
        object.__setattr__(self, "helical_pitch", finite_float("helical_pitch", self.helical_pitch))
        if abs(self.tau) >= self.sod:
            raise ValueError(f"|tau| ({abs(self.tau)} mm) must be smaller than sod ({self.sod} mm)")
        d = self.detector
        smax = max(abs(-0.5 - d.center_col), abs(d.num_cols - 0.5 - d.center_col)) * d.pixel_width
        if smax >= self.sod:
            raise ValueError(f"the detector reaches lateral positions up to {smax:.4g} mm, beyond "
                             f"the source orbit radius sod = {self.sod} mm; no cone-beam ray "
                             "has such a lateral coordinate")
        if self.helical_mid_angle is None:
            object.__setattr__(self, "helical_mid_angle",
                               float(0.5 * (self.angles[0] + self.angles[-1])))
        object.__setattr__(self, "helical_mid_angle",
                           finite_float("helical_mid_angle", self.helical_mid_angle))
        check_source_heights(self)

    @property
    def is_helical(self) -> bool:
        return self.helical_pitch != 0.0

    @property
    def column_model(self) -> int:
        return CONE_PARALLEL

    def source_z(self) -> np.ndarray:
        """Source height of the central ray (s = 0) per view, shape (num_angles,), mm:
        ``helical_pitch·(ψ − ψ_mid + asin(tau/sod))``; a ray at lateral s adds
        ``helical_pitch·asin(s/sod)``."""
        if not self.is_helical:
            return np.zeros(self.num_angles)
        return self.helical_pitch * (self.angles - self.helical_mid_angle
                                     + math.asin(self.tau / self.sod))

    def normalized_helical_pitch(self) -> float:
        """Table advance per turn over the detector height at the isocentre."""
        return normalized_helical_pitch(self)

    def with_normalized_helical_pitch(self, normalized: float):
        """A copy whose pitch has the normalised value ``normalized``."""
        return self.with_changes(helical_pitch=helical_pitch_for(self, normalized))

    def fov_radius(self, offset_scan: bool = False) -> float:
        """Radius of the field of view, mm: as for parallel beams, the nearer of the
        outermost column centres (the farther one for an offset-detector scan)."""
        d = self.detector
        pick = max if offset_scan else min
        return float(pick(abs(-d.center_col), abs(d.num_cols - 1 - d.center_col)) * d.pixel_width)

    def to_modular(self, *args, **kwargs):
        raise ValueError("a cone-parallel geometry has no modular-beam equivalent (every column "
                         "has its own source); LEAP converts parallel and cone beams only")

    def axial_views(self) -> AxialViews:
        n = self.num_angles
        return AxialViews(column_axes(self.angles), np.zeros((n, 2)), self.source_z(),
                          self.sdd, CONE_PARALLEL, True, self.fov_radius(),
                          self.sod, self.helical_pitch)
