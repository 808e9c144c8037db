"""The reconstruction volume: a regular grid of voxels.

Arrays holding a volume have shape ``(num_z, num_y, num_x)`` (LEAP's default "ZYX"
order), float32, C-contiguous. Voxel centres, in mm::

    x_i = offset_x + (i - (num_x - 1) / 2) * voxel_width
    y_j = offset_y + (j - (num_y - 1) / 2) * voxel_width
    z_k = offset_z + (k - (num_z - 1) / 2) * voxel_height

In this core model ``offset_z`` is always the centre of the voxel grid. LEAP's own
``offsetZ`` means something else for parallel and fan beams (slices are tied to
detector rows); the facade (:mod:`leap.compat.model`) translates between the two.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ._checks import coordinate, positive_float, positive_int


@dataclass(frozen=True, kw_only=True)
class Volume:
    """A voxel grid.

    Parameters
    ----------
    num_x, num_y, num_z : int
        Number of voxels along x, y and z.
    voxel_width : float
        Voxel size in x and y, mm.
    voxel_height : float
        Voxel size in z, mm.
    offset_x, offset_y, offset_z : float
        Position of the grid centre, mm.
    """

    num_x: int
    num_y: int
    num_z: int
    voxel_width: float
    voxel_height: float
    offset_x: float = 0.0
    offset_y: float = 0.0
    offset_z: float = 0.0

    def __post_init__(self):
        for name in ("num_x", "num_y", "num_z"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        for name in ("voxel_width", "voxel_height"):
            object.__setattr__(self, name, positive_float(name, getattr(self, name)))
        for name in ("offset_x", "offset_y", "offset_z"):
            object.__setattr__(self, name, coordinate(name, getattr(self, name)))

    @property
    def shape(self) -> tuple[int, int, int]:
        """Array shape ``(num_z, num_y, num_x)``."""
        return (self.num_z, self.num_y, self.num_x)

    @property
    def x0(self) -> float:
        """x of the first voxel centre, mm."""
        return self.offset_x - 0.5 * (self.num_x - 1) * self.voxel_width

    @property
    def y0(self) -> float:
        """y of the first voxel centre, mm."""
        return self.offset_y - 0.5 * (self.num_y - 1) * self.voxel_width

    @property
    def z0(self) -> float:
        """z of the first voxel centre, mm."""
        return self.offset_z - 0.5 * (self.num_z - 1) * self.voxel_height

    def x_samples(self) -> np.ndarray:
        """Voxel-centre x coordinates, shape ``(num_x,)``, mm."""
        return self.x0 + self.voxel_width * np.arange(self.num_x, dtype=np.float64)

    def y_samples(self) -> np.ndarray:
        """Voxel-centre y coordinates, shape ``(num_y,)``, mm."""
        return self.y0 + self.voxel_width * np.arange(self.num_y, dtype=np.float64)

    def z_samples(self) -> np.ndarray:
        """Voxel-centre z coordinates, shape ``(num_z,)``, mm."""
        return self.z0 + self.voxel_height * np.arange(self.num_z, dtype=np.float64)

    def max_radius(self) -> float:
        """Largest in-plane distance from the z axis of any voxel corner, mm."""
        hx = 0.5 * self.num_x * self.voxel_width
        hy = 0.5 * self.num_y * self.voxel_width
        return float(np.hypot(abs(self.offset_x) + hx, abs(self.offset_y) + hy))

    def with_changes(self, **changes) -> "Volume":
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)
