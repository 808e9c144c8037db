"""Parallel-beam geometry."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import readonly_array
from .axial import PARALLEL, AxialViews, column_axes
from .base import ScanGeometry
from .detector import Detector


@dataclass(frozen=True, kw_only=True, eq=False)
class ParallelBeam(ScanGeometry):
    """Parallel rays, one set per view, rotating about z.

    Parameters
    ----------
    detector : Detector
        Flat detector; ``center_col`` is the column hit by the ray through the z axis.
    angles : (num_angles,) array
        View angles ψ in radians. At ψ = 0 rays travel along +y and the column
        coordinate is x: ``s = x cos ψ + y sin ψ``, row coordinate ``t = z``.
    """

    detector: Detector
    angles: np.ndarray

    _view_fields = ("angles",)

    def __post_init__(self):
        if not isinstance(self.detector, Detector):
            raise TypeError(f"detector must be a Detector, got {type(self.detector).__name__}")
        if self.detector.curved:
            raise ValueError("a parallel-beam detector cannot be curved")
        object.__setattr__(self, "angles", readonly_array("angles", self.angles, (None,)))
        if self.angles.size == 0:
            raise ValueError("angles must hold at least one view")

    def fov_radius(self) -> float:
        """Radius of the field of view, mm: the nearer of the outermost column centres."""
        d = self.detector
        return float(min(abs(-d.center_col), abs(d.num_cols - 1 - d.center_col)) * d.pixel_width)

    def axial_views(self) -> AxialViews:
        n = self.num_angles
        return AxialViews(column_axes(self.angles), np.zeros((n, 2)), np.zeros(n),
                          0.0, PARALLEL, False, self.fov_radius())
