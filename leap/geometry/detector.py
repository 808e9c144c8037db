"""The detector: a regular grid of pixels, flat or curved (equi-angular columns).

Projection arrays have shape ``(num_angles, num_rows, num_cols)``, float32,
C-contiguous, index ``[view, row, col]``. Pixel coordinates, in mm on the detector::

    s_i = (i - center_col) * pixel_width      (column, along the column axis)
    t_j = (j - center_row) * pixel_height     (row, along z)

For a curved (cylindrical, source-centred) detector the column coordinate is an
angle instead: ``alpha_i = (i - center_col) * atan(pixel_width / sdd)`` radians.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ._checks import coordinate, positive_float, positive_int


@dataclass(frozen=True, kw_only=True)
class Detector:
    """Detector sampling.

    Parameters
    ----------
    num_rows, num_cols : int
        Number of detector rows and columns.
    pixel_height, pixel_width : float
        Pixel pitch along rows (z) and columns, mm.
    center_row, center_col : float
        Fractional pixel index of the ray through the origin (of the central ray for
        cone and fan beams). Defaults to the detector centre.
    curved : bool
        Cylindrical detector centred on the source (fan and cone beams only).
    """

    num_rows: int
    num_cols: int
    pixel_height: float
    pixel_width: float
    center_row: float | None = None
    center_col: float | None = None
    curved: bool = False

    def __post_init__(self):
        for name in ("num_rows", "num_cols"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        for name in ("pixel_height", "pixel_width"):
            object.__setattr__(self, name, positive_float(name, getattr(self, name)))
        if self.center_row is None:
            object.__setattr__(self, "center_row", 0.5 * (self.num_rows - 1))
        if self.center_col is None:
            object.__setattr__(self, "center_col", 0.5 * (self.num_cols - 1))
        for name in ("center_row", "center_col"):
            object.__setattr__(self, name, coordinate(name, getattr(self, name)))
        object.__setattr__(self, "curved", bool(self.curved))

    @property
    def is_centered(self) -> bool:
        """True when the central ray hits the middle of the detector."""
        return (abs(self.center_row - 0.5 * (self.num_rows - 1)) < 1e-9
                and abs(self.center_col - 0.5 * (self.num_cols - 1)) < 1e-9)

    def with_changes(self, **changes) -> "Detector":
        """A copy with some fields replaced (validated again)."""
        return replace(self, **changes)
