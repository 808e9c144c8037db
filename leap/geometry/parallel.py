"""Parallel-beam geometry."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._checks import readonly_array
from .axial import PARALLEL, AxialViews, column_axes
from .base import ScanGeometry
from .detector import Detector
from .modular import ModularBeam
from .volume import Volume


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

    def fov_radius(self, offset_scan: bool = False) -> float:
        """Radius of the field of view, mm: the nearer of the outermost column centres
        (the farther one for an offset-detector scan)."""
        d = self.detector
        pick = max if offset_scan else min
        return float(pick(abs(-d.center_col), abs(d.num_cols - 1 - d.center_col)) * d.pixel_width)

    def to_modular(self, volume: Volume) -> ModularBeam:
        """A modular-beam approximation with the source pushed far away.

        Modular beams are divergent, so parallel rays are approximated as LEAP does:
        the source distance grows by factors of 10 until the fan angle across the
        volume is a small fraction of a voxel, ``tan(α)·2·r_max / voxel_width < 0.01``.
        (LEAP stops at 0.25, a quarter-voxel ray displacement that changes projections
        by about 2 %; 0.01 keeps them within 0.1 %.) ``volume`` sets ``r_max``, the
        largest distance of a voxel from the origin.
        """
        if not isinstance(volume, Volume):
            raise TypeError(f"volume must be a Volume, got {type(volume).__name__}")
        d = self.detector
        z = volume.z_samples()
        rmax = max(volume.max_radius(), abs(z[0]), abs(z[-1]))
        odd = 4.0 * rmax
        half = max(abs(-0.5 - d.center_col), abs(d.num_cols - 0.5 - d.center_col)) * d.pixel_width
        sdd = 10.0 * odd
        while (half / sdd) * 2.0 * rmax / volume.voxel_width >= 0.01 and sdd / odd < 1e20:
            sdd *= 10.0
        sod = sdd - odd
        perp = np.zeros((self.num_angles, 3))
        perp[:, :2] = column_axes(self.angles)
        theta = np.stack([perp[:, 1], -perp[:, 0], np.zeros(self.num_angles)], axis=1)
        zhat = np.broadcast_to([0.0, 0.0, 1.0], perp.shape)
        h_shift = (0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width
        v_shift = (0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height
        centers = (sod - sdd) * theta + h_shift * perp + v_shift * zhat
        det = d.with_changes(center_row=None, center_col=None)
        return ModularBeam(detector=det, source_positions=sod * theta, module_centers=centers,
                           row_vectors=zhat, col_vectors=perp)

    def axial_views(self) -> AxialViews:
        n = self.num_angles
        return AxialViews(column_axes(self.angles), np.zeros((n, 2)), np.zeros(n),
                          0.0, PARALLEL, False, self.fov_radius())
