"""Behaviour shared by every scan geometry: equality, view slicing, shapes."""
from __future__ import annotations

import dataclasses

import numpy as np

from .angles import respaced_angles
from .detector import Detector


class ScanGeometry:
    """Mix-in for the frozen geometry dataclasses.

    Subclasses are ``@dataclass(frozen=True, kw_only=True, eq=False)`` with a
    ``detector`` field and per-view array fields listed in ``_view_fields``.
    """

    _view_fields: tuple[str, ...] = ()

    detector: Detector

    @property
    def num_angles(self) -> int:
        return int(getattr(self, self._view_fields[0]).shape[0])

    def view_angles(self) -> np.ndarray:
        """View angles ψ (num_angles,), radians (LEAP's φ + π/2)."""
        return self.angles

    @property
    def projection_shape(self) -> tuple[int, int, int]:
        """Shape of a projection array, ``(num_angles, num_rows, num_cols)``."""
        return (self.num_angles, self.detector.num_rows, self.detector.num_cols)

    def __getitem__(self, views):
        """The same geometry restricted to some views (an int, slice or index array)."""
        if isinstance(views, (int, np.integer)):
            views = slice(int(views), int(views) + 1 if views != -1 else None)
        changes = {name: np.asarray(getattr(self, name))[views] for name in self._view_fields
                   if getattr(self, name) is not None}
        return dataclasses.replace(self, **changes)

    def cropped(self, row_start: int, row_stop: int, col_start: int, col_stop: int):
        """The geometry of detector rows ``row_start:row_stop`` and columns
        ``col_start:col_stop`` (the same rays; the detector centre shifts with the crop)."""
        d = self.detector
        det = d.with_changes(num_rows=row_stop - row_start, num_cols=col_stop - col_start,
                             center_row=d.center_row - row_start,
                             center_col=d.center_col - col_start)
        return self.with_changes(detector=det)

    def with_changes(self, **changes):
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)

    # ------------------------------------------------- edits of the scan (new values)
    # Geometries with view angles (parallel, fan, cone, cone-parallel) use these;
    # ModularBeam overrides what its per-view vectors do differently.
    def with_num_angles(self, num_angles: int):
        """The same scan with ``num_angles`` views spread evenly over its angular range
        (:func:`leap.geometry.angles.respaced_angles`: LEAP's range, from the first angle,
        in the same direction; one view stands for a full turn)."""
        if getattr(self, "source_shifts", None) is not None:
            raise ValueError("the views of a scan with flying-focal-spot source_shifts cannot "
                             "be respaced: each measured view has its own source position")
        return self.with_changes(angles=respaced_angles(self.angles, num_angles))

    def resized(self, num_rows: int | None = None, num_cols: int | None = None):
        """The detector with other pixel counts (None: unchanged); the central ray keeps
        its pixel index (center_row, center_col)."""
        d = self.detector
        return self.with_changes(detector=d.with_changes(
            num_rows=d.num_rows if num_rows is None else num_rows,
            num_cols=d.num_cols if num_cols is None else num_cols))

    def shifted(self, row_mm: float, col_mm: float):
        """The detector moved ``row_mm`` along its rows and ``col_mm`` along its columns:
        the central ray then meets it at ``center_row − row_mm/pixel_height``,
        ``center_col − col_mm/pixel_width``."""
        d = self.detector
        return self.with_changes(detector=d.with_changes(
            center_row=d.center_row - row_mm / d.pixel_height,
            center_col=d.center_col - col_mm / d.pixel_width))

    def spun(self, angle: float):
        """The detector turned by ``angle`` radians about its normal. Only cone-beam
        (its tilt) and modular-beam detectors turn; this raises ValueError."""
        raise ValueError(f"only cone- and modular-beam detectors can be rotated, not a "
                         f"{type(self).__name__}; convert it to a modular beam first "
                         "(LEAP: convert_to_modularbeam())")

    def reoriented(self, A):
        """Every detector frame turned by a 3×3 matrix: modular beams only; this raises
        ValueError."""
        raise ValueError(f"arbitrary detector rotations need a modular-beam geometry, not a "
                         f"{type(self).__name__}; convert it first "
                         "(LEAP: convert_to_modularbeam())")

    def rotated(self, R):
        """The whole system rotated by a 3×3 matrix: modular beams only; this raises
        ValueError."""
        raise ValueError(f"only a modular-beam system can be rotated as a whole, not a "
                         f"{type(self).__name__}; convert it first "
                         "(LEAP: convert_to_modularbeam())")

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if a is None or b is None:
                if a is not b:
                    return False
            elif isinstance(a, np.ndarray):
                if a.shape != np.shape(b) or not np.allclose(a, b, rtol=1e-9, atol=1e-9):
                    return False
            elif isinstance(a, float):
                if not np.isclose(a, b, rtol=1e-9, atol=1e-12):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None
