"""Projection-domain weights of filtered back-projection (LEAP's conventions).

All functions take a core geometry and return float64 arrays that broadcast against
projections ``(num_angles, num_rows, num_cols)``. Detector coordinates are normalised:
``u = s/sdd`` and ``v = t/sdd`` on a flat detector, ``u`` the fan angle on a curved one.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam

#: Geometries whose columns are parallel-beam lateral coordinates (mm at the axis).
_PARALLEL_COLUMNS = (ParallelBeam, ConeParallelBeam)

#: A scan covering at least this many degrees is treated as a full scan (LEAP's rule).
FULL_SCAN_DEGREES = 359.9999


def angular_step(geometry) -> float:
    """Mean signed angular step T_φ in radians, ``(ψ_last − ψ_first)/(N − 1)``."""
    a = modular_angles(geometry) if isinstance(geometry, ModularBeam) else geometry.angles
    if a.size < 2:
        raise ValueError("filtered back-projection needs at least two views")
    return float((a[-1] - a[0]) / (a.size - 1))


def modular_angles(geometry: ModularBeam) -> np.ndarray:
    """View angles ψ (radians, unwrapped) of a modular geometry, from source − detector."""
    d = geometry.source_positions - geometry.module_centers
    return np.unwrap(np.arctan2(d[:, 1], d[:, 0])) + 0.5 * np.pi


def angular_range_degrees(angles: np.ndarray) -> float:
    """LEAP's angular range: span plus half of the first and last steps, degrees."""
    a = np.rad2deg(np.asarray(angles, dtype=np.float64))
    if a.size < 2:
        return 0.0
    return float(abs(a[-1] - a[0]) + 0.5 * abs(a[-1] - a[-2]) + 0.5 * abs(a[1] - a[0]))


def _uv(geometry):
    """Normalised column (1, 1, nc) and row (1, nr, 1) coordinates of the detector."""
    d = geometry.detector
    i = np.arange(d.num_cols, dtype=np.float64)
    j = np.arange(d.num_rows, dtype=np.float64)
    if isinstance(geometry, ModularBeam):
        raise TypeError("modular geometries use modular_uv")
    sdd = geometry.sdd
    if d.curved:
        u = (i - d.center_col) * math.atan(d.pixel_width / sdd)
    else:
        u = (i - d.center_col) * d.pixel_width / sdd
    v = (j - d.center_row) * d.pixel_height / sdd
    return u[None, None, :], v[None, :, None]


def modular_uv(geometry: ModularBeam):
    """Per-view normalised coordinates (na, 1, nc) and (na, nr, 1) of every pixel,
    measured from the foot of the source's perpendicular on the module."""
    d = geometry.detector
    normal = np.cross(geometry.col_vectors, geometry.row_vectors)
    sdd = np.sum((geometry.module_centers - geometry.source_positions) * normal, axis=1)
    foot = geometry.source_positions + sdd[:, None] * normal
    off = geometry.module_centers - foot
    u0 = np.sum(off * geometry.col_vectors, axis=1)
    v0 = np.sum(off * geometry.row_vectors, axis=1)
    i = (np.arange(d.num_cols) - 0.5 * (d.num_cols - 1)) * d.pixel_width
    j = (np.arange(d.num_rows) - 0.5 * (d.num_rows - 1)) * d.pixel_height
    sdd = np.abs(sdd)
    u = (u0[:, None] + i[None, :]) / sdd[:, None]
    v = (v0[:, None] + j[None, :]) / sdd[:, None]
    return u[:, None, :], v[:, :, None]


def mean_distances(geometry: ModularBeam) -> tuple[float, float]:
    """Mean source-to-axis and source-to-detector distances of a modular geometry, mm."""
    normal = np.cross(geometry.col_vectors, geometry.row_vectors)
    sod = np.abs(np.sum(geometry.source_positions * normal, axis=1))
    sdd = np.abs(np.sum((geometry.source_positions - geometry.module_centers) * normal, axis=1))
    return float(np.mean(sod)), float(np.mean(sdd))


def cosine_weights(geometry):
    """Pre- and post-filter weights ``(pre, post)``; None for parallel beams.

    fan (flat):   pre = (1 + τu/sod)/√(1+u²),        post = 1/√(1+u²)
    fan (curved): pre = cos u + (τ/sod) sin u,       post = 1
    cone (flat):  pre = (1 + τu/sod)/√(1+u²+v²),     post = 1/√(1+u²+v²)
    cone (curved): pre = (cos u + (τ/sod) sin u)/√(1+v²), post = 1/√(1+v²)
    modular: as flat cone, with τ = 0, per view.
    cone-parallel: pre = post = 1/√(1+v²) (columns are already parallel; no τ term).
    """
    if isinstance(geometry, ParallelBeam):
        return None, None
    if isinstance(geometry, ConeParallelBeam):
        d = geometry.detector
        v = (np.arange(d.num_rows) - d.center_row) * d.pixel_height / geometry.sdd
        w = (1.0 / np.sqrt(1.0 + v * v))[None, :, None]
        return w, w
    if isinstance(geometry, ModularBeam):
        u, v = modular_uv(geometry)
        w = 1.0 / np.sqrt(1.0 + u * u + v * v)
        return w, w
    u, v = _uv(geometry)
    k = geometry.tau / geometry.sod
    curved = geometry.detector.curved
    if isinstance(geometry, FanBeam):
        if curved:
            return np.cos(u) + k * np.sin(u), None
        w = 1.0 / np.sqrt(1.0 + u * u)
        return w * (1.0 + k * u), w
    if curved:
        w = 1.0 / np.sqrt(1.0 + v * v)
        return w * (np.cos(u) + k * np.sin(u)), w
    w = 1.0 / np.sqrt(1.0 + u * u + v * v)
    return w * (1.0 + k * u), w


def _fan_angles(geometry):
    """In-plane fan angle of every column relative to the ray through the axis, (nc,)."""
    u, _ = _uv(geometry)
    u = u.ravel()
    gamma = math.asin(geometry.tau / math.hypot(geometry.sod, geometry.tau))
    return (u if geometry.detector.curved else np.arctan(u)), gamma


def parker_weights(geometry) -> np.ndarray | None:
    """Short-scan weights, (na, 1, nc) for divergent beams, (na, 1, 1) for parallel; None
    for full scans."""
    angles = geometry.angles
    rng = math.radians(angular_range_degrees(angles))
    if angles.size < 2 or math.degrees(rng) >= FULL_SCAN_DEGREES:
        return None
    T = angular_step(geometry)
    beta = np.abs(angles - angles[0])[:, None]
    if isinstance(geometry, _PARALLEL_COLUMNS):
        if rng <= math.pi + 1e-9:
            return None
        # Each view's weight is 1/(number of views that measure the same lines),
        # counted with linear interpolation between neighbouring views.
        aT = abs(T)
        v1 = aT * np.arange(angles.size)
        v1 = np.where(v1 > math.pi, v1 - math.pi, v1)[:, None]
        v2 = (aT * np.arange(angles.size))[None, :]
        off = np.minimum(np.minimum(np.abs(v1 - v2), np.abs(v1 - (v2 - math.pi))),
                         np.abs((v1 - math.pi) - v2))
        total = np.sum(np.where(off < aT, 1.0 - off / aT, 0.0), axis=1)
        return (1.0 / total)[:, None, None]
    fan, gamma = _fan_angles(geometry)
    alpha_max = min(abs(fan[0] - gamma), abs(fan[-1] - gamma))
    if rng < math.pi + 2.0 * alpha_max:
        warnings.warn(f"the scan covers {math.degrees(rng):.2f} degrees, less than a short scan "
                      f"(180 + fan angle = {math.degrees(math.pi + 2 * alpha_max):.2f} degrees): "
                      "no short-scan weighting is applied", RuntimeWarning, stacklevel=3)
        return None
    thres = max(0.0, 0.5 * (rng - math.pi))
    alpha = (math.copysign(1.0, T) * fan - gamma)[None, :]
    w = np.zeros((angles.size, fan.size))
    with np.errstate(divide="ignore", invalid="ignore"):
        rise = np.sin(0.25 * np.pi * beta / (thres + alpha)) ** 2
        fall = np.cos(0.25 * np.pi * (beta - 2.0 * alpha - math.pi) / (thres - alpha)) ** 2
    w = np.where(beta < 2.0 * (thres + alpha), rise,
                 np.where(beta < math.pi + 2.0 * alpha, 1.0,
                          np.where(beta < math.pi + 2.0 * thres, fall, 0.0)))
    return np.maximum(w, 1e-8)[:, None, :]


def view_weights(geometry, *, helical: bool = False) -> np.ndarray:
    """Per-view weights (na, 1, 1): non-equispaced step correction and, for scans of
    360° or more (not helical), the redundancy weight (½ for exactly 360°)."""
    angles = modular_angles(geometry) if isinstance(geometry, ModularBeam) else geometry.angles
    n = angles.size
    T = angular_step(geometry)
    aT = abs(T)
    w = np.ones(n)
    if n >= 2 and aT > 0:
        steps = np.abs(np.diff(angles))
        local = np.empty(n)
        local[0], local[-1] = steps[0], steps[-1]
        local[1:-1] = 0.5 * (steps[:-1] + steps[1:])
        w *= local / aT
        if not helical and angular_range_degrees(angles) >= FULL_SCAN_DEGREES:
            k = np.arange(n)
            d = (k[None, :] - k[:, None]) * T
            off = np.abs(np.arctan2(np.sin(d), np.cos(d)))
            total = np.sum(np.where(off < aT, 1.0 - off / aT, 0.0), axis=1)
            w *= 0.5 / total
    return w[:, None, None]


def fbp_scale(geometry, volume) -> float:
    """LEAP's FBP scale factor (``get_FBPscalar``).

    parallel: |T_φ|·pw·ph / (2π·vw²·vh)
    fan:      |T_φ|·pw·M·ph / (2π·vw²·vh)
    cone, modular: |T_φ|·pw·M·ph·M / (2π·vw²·vh), M = sod/sdd.
    cone-parallel: |T_φ|·pw·ph·M / (2π·vw²·vh) (columns measured at the axis).
    """
    d = geometry.detector
    T = abs(angular_step(geometry))
    vw, vh = volume.voxel_width, volume.voxel_height
    base = T * d.pixel_width * d.pixel_height / (2.0 * math.pi * vw * vw * vh)
    if isinstance(geometry, ParallelBeam):
        return base
    if isinstance(geometry, ModularBeam):
        sod, sdd = mean_distances(geometry)
        return base * (sod / sdd) ** 2
    m = geometry.sod / geometry.sdd
    if isinstance(geometry, ConeParallelBeam):
        return base * m
    return base * m * (m if isinstance(geometry, ConeBeam) else 1.0)


def _offset_geometry_terms(geometry):
    """Signed ray distance from the axis per column, the overlap half-width delta, the
    side to pad, and the columns to add (LEAP's offset-scan rules)."""
    d = geometry.detector
    i = np.arange(d.num_cols, dtype=np.float64)
    if isinstance(geometry, _PARALLEL_COLUMNS):
        s = (i - d.center_col) * d.pixel_width
        dmin, dmax = abs(s[0]), abs(s[-1])
        r = max(dmin, dmax)
        to_index = lambda x: x / d.pixel_width + d.center_col       # noqa: E731
        left = dmin < dmax
        n_add = math.ceil(abs(to_index(-r))) if left else math.ceil(to_index(r)) - d.num_cols
        return s, min(dmin, dmax), left, max(0, int(n_add))
    if not isinstance(geometry, (FanBeam, ConeBeam)):
        raise ValueError("offset-scan FBP is defined for parallel, fan, cone and cone-parallel beams")
    sod, sdd, tau = geometry.sod, geometry.sdd, geometry.tau
    u, _ = _uv(geometry)
    u = u.ravel()
    if d.curved:
        a = u
        s = sod * np.sin(u) - tau * np.cos(u)
        to_index = lambda x: x / math.atan(d.pixel_width / sdd) + d.center_col   # noqa: E731
    else:
        a = np.arctan(u)
        s = (sod * u - tau) / np.sqrt(1.0 + u * u)
        to_index = lambda x: sdd * math.tan(x) / d.pixel_width + d.center_col     # noqa: E731
    dmin = abs(sod * math.sin(a[0]) - tau * math.cos(a[0]))
    dmax = abs(sod * math.sin(a[-1]) - tau * math.cos(a[-1]))
    r = geometry.fov_radius(offset_scan=True)
    left = dmin < dmax
    if left:
        n_add = math.ceil(abs(to_index(math.asin(-r / sod) + math.asin(tau / sod))))
    else:
        n_add = math.ceil(to_index(math.asin(r / sod) + math.asin(tau / sod))) - d.num_cols
    return s, min(dmin, dmax), left, max(0, int(n_add))


def offset_scan_weights(geometry) -> np.ndarray:
    """Half-fan weights (1, 1, num_cols) for an offset detector (LEAP's formula).

    With s the signed distance of a column's ray from the rotation axis and delta the
    half-width of the doubly measured band: w = cos²(π/4·(s − delta)/delta) for
    |s| ≤ delta, 0 beyond on the short side, 1 on the long side.
    """
    s, delta, left, _ = _offset_geometry_terms(geometry)
    if delta <= 0:
        raise ValueError("offset-scan weighting needs a detector that covers the rotation axis")
    w = np.where(s < -delta, 0.0, np.where(s > delta, 1.0,
                                            np.cos(0.25 * np.pi * (s - delta) / delta) ** 2))
    if not left:
        w = 1.0 - w
    return np.maximum(w, 1e-12)[None, None, :]


def offset_scan_layout(geometry):
    """The detector an offset-detector scan is reconstructed on.

    Returns ``(wider, first, n_add)``: the geometry with ``n_add`` zero columns added on
    the short side so the detector is symmetric about the axis, and the index of the
    measured columns' first column in it. Scans shorter than a full turn (less than
    360° − one step) and detectors needing no padding give ``(geometry, 0, 0)``.
    """
    if angular_range_degrees(geometry.angles) < 360.0 - math.degrees(abs(angular_step(geometry))):
        return geometry, 0, 0
    _, _, left, n_add = _offset_geometry_terms(geometry)
    if n_add <= 0:
        return geometry, 0, 0
    d = geometry.detector
    det = d.with_changes(num_cols=d.num_cols + n_add,
                         center_col=d.center_col + (n_add if left else 0))
    return geometry.with_changes(detector=det), (n_add if left else 0), n_add


def offset_scan_padding(geometry, g: np.ndarray):
    """Weight an offset-detector scan and zero-pad it to the detector of
    :func:`offset_scan_layout`.

    Returns ``(q, wider)``: q (num_angles, num_rows, num_cols + n_add) float32 holding
    ``2·w·g`` (the later ½ full-scan weight leaves w), and the widened geometry.
    """
    wider, first, n_add = offset_scan_layout(geometry)
    if n_add == 0:
        return g, geometry
    na, nr, nc = g.shape
    q = np.zeros((na, nr, nc + n_add), dtype=np.float32)
    q[:, :, first:first + nc] = (2.0 * offset_scan_weights(geometry) * g).astype(np.float32)
    return q, wider
