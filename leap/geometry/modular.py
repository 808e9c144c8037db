"""Modular-beam geometry: the canonical per-view vector form.

Every divergent-beam geometry with flat detectors can be written this way (LEAP's
``set_modularbeam``): per view a source position, the centre of a flat detector
module and its unit row and column vectors.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import readonly_array
from .base import ScanGeometry
from .detector import Detector

#: Largest |row·col| accepted for the module axes (LEAP's tolerance).
ORTHOGONALITY_TOLERANCE = 0.01


@dataclass(frozen=True, kw_only=True, eq=False)
class ModularBeam(ScanGeometry):
    """Per-view source and flat detector module, in mm.

    Parameters
    ----------
    detector : Detector
        Pixel counts and sizes; must be flat and centred (the module centre is the
        middle of the pixel grid).
    source_positions, module_centers : (num_angles, 3) arrays
        Source and module-centre positions (x, y, z), mm.
    row_vectors, col_vectors : (num_angles, 3) arrays
        Directions of increasing row and column index. They are normalised here and
        must be orthogonal to within 0.01.

    Pixel ``[j, i]`` of view ``a`` is centred at
    ``module_centers[a] + (i - (num_cols-1)/2)·pixel_width·col + (j - (num_rows-1)/2)·pixel_height·row``.
    """

    detector: Detector
    source_positions: np.ndarray
    module_centers: np.ndarray
    row_vectors: np.ndarray
    col_vectors: np.ndarray

    _view_fields = ("source_positions", "module_centers", "row_vectors", "col_vectors")

    def __post_init__(self):
        if not isinstance(self.detector, Detector):
            raise TypeError(f"detector must be a Detector, got {type(self.detector).__name__}")
        if self.detector.curved:
            raise ValueError("modular-beam modules are flat: the detector cannot be curved")
        if not self.detector.is_centered:
            raise ValueError("modular-beam detectors are centred on module_centers: "
                             "center_row/center_col must be (num-1)/2")
        arrays = {}
        for name in self._view_fields:
            arrays[name] = readonly_array(name, getattr(self, name), (None, 3))
        n = arrays["source_positions"].shape[0]
        if n == 0:
            raise ValueError("modular beam needs at least one view")
        for name, a in arrays.items():
            if a.shape[0] != n:
                raise ValueError(f"{name} has {a.shape[0]} views but source_positions has {n}")
        for name in ("row_vectors", "col_vectors"):
            norms = np.linalg.norm(arrays[name], axis=1)
            if np.any(norms < 1e-12):
                raise ValueError(f"{name} must be non-zero vectors (view {int(np.argmin(norms))} is zero)")
            arrays[name] = readonly_array(name, arrays[name] / norms[:, None], (n, 3))
        dots = np.abs(np.sum(arrays["row_vectors"] * arrays["col_vectors"], axis=1))
        if np.any(dots > ORTHOGONALITY_TOLERANCE):
            a = int(np.argmax(dots))
            raise ValueError(f"row and column vectors must be orthogonal to within "
                             f"{ORTHOGONALITY_TOLERANCE}; view {a} has |row·col| = {dots[a]:.3g}")
        normal = np.cross(arrays["col_vectors"], arrays["row_vectors"])
        dist = np.sum((arrays["module_centers"] - arrays["source_positions"]) * normal, axis=1)
        if np.any(np.abs(dist) < 1e-9):
            a = int(np.argmin(np.abs(dist)))
            raise ValueError(f"view {a}: the source lies in the plane of its detector module")
        for name, a in arrays.items():
            object.__setattr__(self, name, a)

    def fov_radius(self, offset_scan: bool = False) -> float:
        """Modular beams have no circular field of view: nothing is masked."""
        return float("inf")

    def to_modular(self) -> "ModularBeam":
        return self
