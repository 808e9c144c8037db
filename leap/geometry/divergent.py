"""What fan and cone beams share: a point source on a circle about the z axis."""
from __future__ import annotations

import math

import numpy as np

from ._checks import MAX_COORDINATE, coordinate, positive_float, readonly_array
from .axial import CURVED, FLAT, column_axes
from .base import ScanGeometry
from .detector import Detector


def normalized_helical_pitch(geom) -> float:
    """Table advance per turn over the detector height at the isocentre,
    ``2π·pitch / (num_rows·pixel_height·sod/sdd)`` (cone and cone-parallel beams)."""
    d = geom.detector
    return 2.0 * np.pi * geom.helical_pitch / (d.num_rows * d.pixel_height * geom.sod / geom.sdd)


def helical_pitch_for(geom, normalized: float) -> float:
    """The pitch (mm/radian) whose :func:`normalized_helical_pitch` is ``normalized``."""
    d = geom.detector
    return normalized * d.num_rows * d.pixel_height * (geom.sod / geom.sdd) / (2.0 * np.pi)


def check_orbit(geom) -> None:
    """Validate (and freeze) the fields every source-on-a-circle geometry shares:
    detector, angles, sod, sdd (beyond the axis) and tau."""
    if not isinstance(geom.detector, Detector):
        raise TypeError(f"detector must be a Detector, got {type(geom.detector).__name__}")
    object.__setattr__(geom, "angles", readonly_array("angles", geom.angles, (None,)))
    if geom.angles.size == 0:
        raise ValueError("angles must hold at least one view")
    object.__setattr__(geom, "sod", positive_float("sod", geom.sod))
    object.__setattr__(geom, "sdd", positive_float("sdd", geom.sdd))
    object.__setattr__(geom, "tau", coordinate("tau", geom.tau))
    if geom.sdd <= geom.sod:
        raise ValueError(f"sdd ({geom.sdd} mm) must be larger than sod ({geom.sod} mm): "
                         "the detector must lie beyond the rotation axis")


def check_source_heights(geom) -> None:
    """A helical scan's source heights (``geom.source_z()``) must be coordinates: at most
    MAX_COORDINATE mm from the mid-plane (a huge pitch over the scan's angles would put
    the source at ±inf and every projection at NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        height = np.abs(geom.source_z())
    if not np.all(height <= MAX_COORDINATE):
        raise ValueError(f"helical_pitch = {geom.helical_pitch:g} mm/radian puts the source "
                         f"{float(np.max(height)):g} mm from the mid-plane over these angles; "
                         f"the source heights must stay within ±{MAX_COORDINATE:g} mm")


class DivergentBeam(ScanGeometry):
    """Mix-in: source at ``sod·θ − tau·θ⊥ (+ z_s ẑ)``, detector at distance ``sdd``.

    With θ = (sin ψ, −cos ψ, 0) and θ⊥ = (cos ψ, sin ψ, 0) for the view angle ψ, the
    source is at (0, −sod, 0) for ψ = 0, tau = 0, and rays travel towards +y.
    """

    _view_fields = ("angles",)

    def _check_common(self):
        check_orbit(self)

    @property
    def column_model(self) -> int:
        return CURVED if self.detector.curved else FLAT

    def source_xy(self) -> np.ndarray:
        """In-plane source positions, shape (num_angles, 2), mm."""
        c = column_axes(self.angles)          # θ⊥
        theta = np.stack([c[:, 1], -c[:, 0]], axis=1)
        return np.ascontiguousarray(self.sod * theta - self.tau * c)

    def edge_fan_angles(self) -> tuple[float, float]:
        """Fan angles (radians) of the centres of the first and last columns."""
        d = self.detector
        lo, hi = -d.center_col, d.num_cols - 1 - d.center_col
        if d.curved:
            da = math.atan(d.pixel_width / self.sdd)
            return lo * da, hi * da
        return math.atan(lo * d.pixel_width / self.sdd), math.atan(hi * d.pixel_width / self.sdd)

    def fov_radius(self, offset_scan: bool = False) -> float:
        """Radius of the circle seen in every view, mm (LEAP's rFOV).

        ``sod·sin(min |α − atan(tau/sod)|)`` over the fan angles α of the centres of
        the outermost columns (LEAP measures to column centres, not edges). For an
        offset-detector scan the larger side counts (``max`` instead of ``min``).
        """
        a0, a1 = self.edge_fan_angles()
        shift = math.atan(self.tau / self.sod)
        pick = max if offset_scan else min
        half = pick(abs(a0 - shift), abs(a1 - shift))
        return float(self.sod * math.sin(min(half, 0.5 * math.pi)))
