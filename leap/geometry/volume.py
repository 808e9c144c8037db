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

    def x_samples(self, centered: bool = False) -> np.ndarray:
        """Voxel-centre x coordinates, shape ``(num_x,)``, mm (``centered``: relative to
        the grid centre)."""
        x = self.x0 + self.voxel_width * np.arange(self.num_x, dtype=np.float64)
        return x - self.offset_x if centered else x

    def y_samples(self, centered: bool = False) -> np.ndarray:
        """Voxel-centre y coordinates, shape ``(num_y,)``, mm (``centered``: relative to
        the grid centre)."""
        y = self.y0 + self.voxel_width * np.arange(self.num_y, dtype=np.float64)
        return y - self.offset_y if centered else y

    def z_samples(self, centered: bool = False) -> np.ndarray:
        """Voxel-centre z coordinates, shape ``(num_z,)``, mm (``centered``: relative to
        the grid centre)."""
        z = self.z0 + self.voxel_height * np.arange(self.num_z, dtype=np.float64)
        return z - self.offset_z if centered else z

    def voxel_grid(self, centered: bool = False):
        """Voxel-centre coordinates ``(x, y, z)``, each a (num_z, num_y, num_x) float32
        array, mm (``centered``: relative to the grid centre)."""
        z, y, x = np.meshgrid(self.z_samples(centered).astype(np.float32),
                              self.y_samples(centered).astype(np.float32),
                              self.x_samples(centered).astype(np.float32), indexing="ij")
        return x, y, z

    def max_radius(self) -> float:
        """Largest in-plane distance from the z axis of any voxel corner, mm."""
        hx = 0.5 * self.num_x * self.voxel_width
        hy = 0.5 * self.num_y * self.voxel_width
        return float(np.hypot(abs(self.offset_x) + hx, abs(self.offset_y) + hy))

    def single_slice(self, axis: str, index: int) -> "Volume":
        """The volume one voxel thick along ``axis`` ('x', 'y' or 'z') at voxel ``index``
        (its centre rounded to float32, as LEAP computes positions)."""
        if axis not in ("x", "y", "z"):
            raise ValueError(f"axis must be 'x', 'y' or 'z', got {axis!r}")
        n = {"x": self.num_x, "y": self.num_y, "z": self.num_z}[axis]
        if not 0 <= index < n:
            raise ValueError(f"index must be in [0, {n - 1}] along {axis}, got {index}")
        centre = float(getattr(self, f"{axis}_samples")().astype(np.float32)[index])
        return self.with_changes(**{f"num_{axis}": 1, f"offset_{axis}": centre})

    def with_changes(self, **changes) -> "Volume":
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)
