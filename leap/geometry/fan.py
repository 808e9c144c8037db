"""Fan-beam geometry: one fan per detector row, rows parallel to z."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .axial import AxialViews, column_axes
from .detector import Detector
from .divergent import DivergentBeam


@dataclass(frozen=True, kw_only=True, eq=False)
class FanBeam(DivergentBeam):
    """A point source on a circle; each detector row sees the slice at its own height.

    Parameters
    ----------
    detector : Detector
        Flat or curved; row j sits at ``z = t_j`` (no magnification along z).
    angles : (num_angles,) array
        View angles ψ, radians.
    sod, sdd : float
        Source-to-object and source-to-detector distances, mm (sdd > sod).
    tau : float
        Shift of source and detector along −θ⊥ (rotation-axis offset), mm.
    """

    detector: Detector
    angles: np.ndarray
    sod: float
    sdd: float
    tau: float = 0.0

    def __post_init__(self):
        self._check_common()

    def axial_views(self) -> AxialViews:
        n = self.num_angles
        return AxialViews(column_axes(self.angles), self.source_xy(), np.zeros(n),
                          self.sdd, self.column_model, False, self.fov_radius())
