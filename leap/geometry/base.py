"""Behaviour shared by every scan geometry: equality, view slicing, shapes."""
from __future__ import annotations

import dataclasses

import numpy as np

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
        changes = {name: np.asarray(getattr(self, name))[views] for name in self._view_fields}
        return dataclasses.replace(self, **changes)

    def with_changes(self, **changes):
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)

    def __eq__(self, other) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if isinstance(a, np.ndarray):
                if a.shape != np.shape(b) or not np.allclose(a, b, rtol=1e-9, atol=1e-9):
                    return False
            elif isinstance(a, float):
                if not np.isclose(a, b, rtol=1e-9, atol=1e-12):
                    return False
            elif a != b:
                return False
        return True

    __hash__ = None
