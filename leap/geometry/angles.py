"""View angles: LEAP's angular range and equal spacing.

The range and spacing helpers take angles in any unit and answer in the same unit, so
they serve both the core (radians) and LEAP's parameters (degrees).
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import positive_int

#: Largest deviation of a step from the first one that still counts as equal spacing,
#: radians (LEAP's tolerance).
EQUISPACED_TOLERANCE = 2.0e-5


def angular_span(angles) -> float:
    """LEAP's angular range: ``|last − first|`` plus half of the first and of the last
    step, in the units of ``angles`` (0 for a single view)."""
    a = np.asarray(angles, dtype=np.float64)
    if a.size < 2:
        return 0.0
    return float(abs(a[-1] - a[0]) + 0.5 * abs(a[-1] - a[-2]) + 0.5 * abs(a[1] - a[0]))


def respaced_angles(angles, num_angles: int, full_turn: float = 2.0 * math.pi) -> np.ndarray:
    """``num_angles`` equally spaced angles over the angular range of ``angles``.

    They start at ``angles[0]`` and run the same way (decreasing if ``angles`` do) in
    steps of ``angular_span(angles) / num_angles``; a single view stands for a full turn
    (``full_turn``, the units of ``angles``: 2π for radians, 360 for degrees).
    Returns a (num_angles,) float64 array.
    """
    a = np.asarray(angles, dtype=np.float64).ravel()
    n = positive_int("num_angles", num_angles)
    if a.size == 0:
        raise ValueError("angles must hold at least one view")
    span = angular_span(a) if a.size > 1 else float(full_turn)
    sign = -1.0 if a.size > 1 and a[-1] < a[0] else 1.0
    return a[0] + sign * np.arange(n) * span / n


def are_equispaced(angles, tolerance: float = EQUISPACED_TOLERANCE) -> bool:
    """Whether every step between consecutive ``angles`` equals the first step to within
    ``tolerance`` (same units; fewer than three angles are equispaced)."""
    a = np.asarray(angles, dtype=np.float64).ravel()
    if a.size < 3:
        return True
    steps = np.diff(a)
    return bool(np.all(np.abs(steps - steps[0]) <= tolerance))

