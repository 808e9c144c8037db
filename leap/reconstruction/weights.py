"""Projection-domain weights of filtered back-projection (LEAP's conventions).

All functions take a core geometry and return float64 arrays that broadcast against
projections ``(num_angles, num_rows, num_cols)``. Detector coordinates are normalised:
``u = s/sdd`` and ``v = t/sdd`` on a flat detector, ``u`` the fan angle on a curved one.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam

#: Geometries whose columns are parallel-beam lateral coordinates (mm at the axis).
_PARALLEL_COLUMNS = (ParallelBeam, ConeParallelBeam)

#: A scan covering at least this many degrees is treated as a full scan (LEAP's rule).
FULL_SCAN_DEGREES = 359.9999


def angular_step(geometry) -> float:
    """Mean signed angular step T_φ in radians, ``(ψ_last − ψ_first)/(N − 1)``."""
    a = geometry.view_angles()
    if a.size < 2:
        raise ValueError("filtered back-projection needs at least two views")
    return float((a[-1] - a[0]) / (a.size - 1))


def angular_range(degrees: np.ndarray) -> float:
    """LEAP's angular range of view angles given in degrees: the span plus half of the
    first and last steps, degrees (0 for one view;
    :func:`leap.geometry.angles.angular_span`)."""
    from ..geometry.angles import angular_span
    return angular_span(degrees)


def angular_range_degrees(angles: np.ndarray) -> float:
    """:func:`angular_range` of view angles given in radians, degrees."""
    return angular_range(np.rad2deg(np.asarray(angles, dtype=np.float64)))


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


def cosine_weights(geometry):
    """Pre- and post-filter weights ``(pre, post)``; None for parallel beams::

        fan (flat):     pre = (1 + τu/sod)/√(1+u²),              post = 1/√(1+u²)
        fan (curved):   pre = cos u + (τ/sod) sin u,             post = 1
        cone (flat):    pre = (1 + τu/sod)/√(1+u²+v²),           post = 1/√(1+u²+v²)
        cone (curved):  pre = (cos u + (τ/sod) sin u)/√(1+v²),   post = 1/√(1+v²)
        cone-parallel:  pre = post = 1/√(1+v²)  (columns are already parallel; no τ term)

    Modular beams are weighted as flat cone beams, view by view
    (:meth:`ModularBeam.axial_terms`).
    """
    if isinstance(geometry, ParallelBeam):
        return None, None
    if isinstance(geometry, ConeParallelBeam):
        d = geometry.detector
        v = (np.arange(d.num_rows) - d.center_row) * d.pixel_height / geometry.sdd
        w = (1.0 / np.sqrt(1.0 + v * v))[None, :, None]
        return w, w
    if isinstance(geometry, ModularBeam):
        t = geometry.axial_terms()
        u, v = t.u[:, None, :], t.v[:, :, None]
        w = 1.0 / np.sqrt(1.0 + u * u + v * v)
        return w * (1.0 + (t.tau / t.sod)[:, None, None] * u), w
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
    """In-plane fan angles of the columns and the fan angle of the ray through the axis:
    ``(fan, gamma)``, fan (k, nc) and gamma (k, 1) with k = 1, or k = num_angles for
    modular beams (one cone-beam view each, :meth:`ModularBeam.axial_terms`)."""
    if isinstance(geometry, ModularBeam):
        t = geometry.axial_terms()
        return np.arctan(t.u), np.arctan2(t.tau, t.sod)[:, None]
    u, _ = _uv(geometry)
    u = u.reshape(1, -1)
    gamma = math.asin(geometry.tau / math.hypot(geometry.sod, geometry.tau))
    return (u if geometry.detector.curved else np.arctan(u)), np.full((1, 1), gamma)


def parker_weights(geometry) -> np.ndarray | None:
    """Short-scan weights, (na, 1, nc) for divergent beams, (na, 1, 1) for parallel; None
    for full scans.

    Divergent beams (Parker): with β the angle turned since the first view and α the
    angle between a ray and the line from the source through the axis, the weight is a
    sin² ramp for β < 2(δ + α), 1 up to β = π + 2α, a cos² ramp to β = π + 2δ and 0
    after (δ = (range − π)/2). Modular beams use each view's own α.
    """
    angles = geometry.view_angles()
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
    # The narrowest side of the fan sets the short-scan range (the widest view for
    # modular beams, as LEAP).
    alpha_max = float(np.max(np.minimum(np.abs(fan[:, 0] - gamma[:, 0]),
                                        np.abs(fan[:, -1] - gamma[:, 0]))))
    if rng < math.pi + 2.0 * alpha_max:
        warnings.warn(f"the scan covers {math.degrees(rng):.2f} degrees, less than a short scan "
                      f"(180 + fan angle = {math.degrees(math.pi + 2 * alpha_max):.2f} degrees): "
                      "no short-scan weighting is applied", RuntimeWarning, stacklevel=3)
        return None
    thres = max(0.0, 0.5 * (rng - math.pi))
    alpha = math.copysign(1.0, T) * fan - gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        rise = np.sin(0.25 * np.pi * beta / (thres + alpha)) ** 2
        fall = np.cos(0.25 * np.pi * (beta - 2.0 * alpha - math.pi) / (thres - alpha)) ** 2
    w = np.where(beta < 2.0 * (thres + alpha), rise,
                 np.where(beta < math.pi + 2.0 * alpha, 1.0,
                          np.where(beta < math.pi + 2.0 * thres, fall, 0.0)))
    return np.maximum(w, 1e-8)[:, None, :]


def redundancy(n: int, step: float) -> np.ndarray:
    """How often each of ``n`` views at angles ``k·step`` (radians) is measured: for view
    k, the sum over the views k' within one step of it modulo 2π of
    ``1 − |ψ_k' − ψ_k|/|step|`` (the angular distance wrapped to [0, π]). (n,) float64.

    Only neighbours can be within one step, so the views are sorted by angle modulo 2π
    and each is compared with the few around it: O(n log n) instead of all n² pairs
    (a 3600-view scan is 13 million pairs). The weights themselves are computed from
    the unwrapped difference ``(k' − k)·step``, as for all pairs.
    """
    a_step = abs(step)
    if not (math.isfinite(a_step) and a_step > 0.0):
        raise ValueError(f"redundancy needs a finite, non-zero angular step; got {step!r}")
    if int(n) != n or n < 1:
        raise ValueError(f"redundancy needs a positive whole number of views; got {n!r}")
    k = np.arange(int(n))
    two_pi = 2.0 * math.pi
    if a_step < math.pi:
        p = np.mod(k * step, two_pi)
        order = np.argsort(p, kind="stable")
        ring = p[order]
        # Three copies of the sorted ring, so windows that wrap past 0 or 2π stay
        # contiguous; a window is narrower than 2π, so it meets each view at most once.
        ext_p = np.concatenate([ring - two_pi, ring, ring + two_pi])
        ext_k = np.concatenate([order, order, order])
        # A margin beyond one step: rounding of the wrapped angles must not drop a view
        # that the exact distance below keeps.
        reach = a_step * (1.0 + 1e-9) + 1e-12
        lo = np.searchsorted(ext_p, p - reach, side="left")
        hi = np.searchsorted(ext_p, p + reach, side="right")
        width = int((hi - lo).max())

        def candidates(a, b):
            idx = lo[a:b, None] + np.arange(width)
            return ext_k[np.minimum(idx, ext_k.size - 1)], idx < hi[a:b, None]
    else:
        # Steps of half a turn or more: any view may be within one step of any other.
        width = k.size

        def candidates(a, b):
            return np.broadcast_to(k, (b - a, k.size)), True

    total = np.empty(k.size)
    rows = max(1, (1 << 18) // width)  # (rows × width) temporaries of a few MB
    for a in range(0, k.size, rows):
        b = min(k.size, a + rows)
        cand, valid = candidates(a, b)
        d = (cand - k[a:b, None]) * step
        off = np.abs(np.arctan2(np.sin(d), np.cos(d)))
        total[a:b] = np.sum(np.where(valid & (off < a_step), 1.0 - off / a_step, 0.0), axis=1)
    return total


def view_weights(geometry, *, helical: bool = False) -> np.ndarray:
    """Per-view weights (na, 1, 1): non-equispaced step correction and, for scans of
    360° or more (not helical), the redundancy weight (½ for exactly 360°)."""
    angles = geometry.view_angles()
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
            w *= 0.5 / redundancy(n, T)
    return w[:, None, None]


def fbp_scale(geometry, volume) -> float:
    """LEAP's FBP scale factor (``get_FBPscalar``)::

        parallel:       |T_φ|·pw·ph / (2π·vw²·vh)
        fan:            |T_φ|·pw·M·ph / (2π·vw²·vh)
        cone, modular:  |T_φ|·pw·M·ph·M / (2π·vw²·vh), M = sod/sdd
        cone-parallel:  |T_φ|·pw·ph·M / (2π·vw²·vh)  (columns measured at the axis)

    T_φ is the mean angular step (:func:`angular_step`), pw/ph the pixel width and
    height, vw/vh the voxel width and height.
    """
    d = geometry.detector
    T = abs(angular_step(geometry))
    vw, vh = volume.voxel_width, volume.voxel_height
    base = T * d.pixel_width * d.pixel_height / (2.0 * math.pi * vw * vw * vh)
    if isinstance(geometry, ParallelBeam):
        return base
    if isinstance(geometry, ModularBeam):
        sod, sdd = geometry.mean_distances()
        return base * (sod / sdd) ** 2
    m = geometry.sod / geometry.sdd
    if isinstance(geometry, ConeParallelBeam):
        return base * m
    return base * m * (m if isinstance(geometry, ConeBeam) else 1.0)


#: Most columns an offset-scan detector may be padded with, in multiples of its width. A
#: detector that reaches across the axis needs about its own width at most (mirroring
#: the long side); far more means a mis-set centerCol or tau, and memory without bound.
MAX_OFFSET_PADDING = 4


def _divergent_columns(geometry):
    """Fan angles a (k, nc) of the columns, increasing with the column index, sod (k,),
    tau (k,) in the same orientation, and ``to_index(angles (k,))``: the fractional
    column at those fan angles. k = 1, or num_angles for modular beams."""
    d = geometry.detector
    if isinstance(geometry, ModularBeam):
        if not geometry.axially_aligned:
            raise ValueError("offset-scan FBP of a modular beam needs an axially aligned scan "
                             "(row vectors within 5 degrees of +z, sources in one plane)")
        t = geometry.axial_terms()
        c = t.orientation[0]
        if np.any(t.orientation != c):
            raise ValueError("offset-scan FBP of a modular beam needs every module oriented "
                             "alike (column vectors all along, or all against, the rotation)")
        u = c * t.u                                   # index direction again
        return (np.arctan(u), t.sod, c * t.tau,
                lambda x: (np.tan(x) - u[:, 0]) * t.sdd / d.pixel_width)
    u, _ = _uv(geometry)
    u = u.reshape(1, -1)
    sod, tau = np.array([geometry.sod]), np.array([geometry.tau])
    if d.curved:
        return u, sod, tau, lambda x: x / math.atan(d.pixel_width / geometry.sdd) + d.center_col
    return (np.arctan(u), sod, tau,
            lambda x: geometry.sdd * np.tan(x) / d.pixel_width + d.center_col)


def _offset_geometry_terms(geometry):
    """LEAP's offset-scan rules: the signed distance s (nc,) of each column's ray from the
    axis (increasing with the column index; modular beams: the mean over the views),
    the overlap half-width delta, whether the short side is the left one (before
    column 0), and the columns to add there."""
    d = geometry.detector
    if isinstance(geometry, _PARALLEL_COLUMNS):
        s = (np.arange(d.num_cols, dtype=np.float64) - d.center_col) * d.pixel_width
        _check_reaches_across(s)
        left = abs(s[0]) < abs(s[-1])
        r = max(abs(s[0]), abs(s[-1]))
        reach = np.array([(-r if left else r) / d.pixel_width + d.center_col])
    elif isinstance(geometry, (FanBeam, ConeBeam, ModularBeam)):
        a, sod, tau, to_index = _divergent_columns(geometry)
        if np.any(np.abs(tau) >= sod):
            k = int(np.argmax(np.abs(tau) / sod))
            raise ValueError(f"offset-scan FBP needs |tau| < sod (the rotation axis between "
                             f"source and detector); got tau = {tau[k]:.6g} mm, sod = "
                             f"{sod[k]:.6g} mm")
        s = np.mean(sod[:, None] * np.sin(a) - tau[:, None] * np.cos(a), axis=0)
        _check_reaches_across(s)
        left = abs(s[0]) < abs(s[-1])
        r = geometry.fov_radius(offset_scan=True)
        # Fan angle of the ray at distance r on the short side (LEAP's approximation).
        target = np.arcsin((-r if left else r) / sod) + np.arcsin(tau / sod)
        if not getattr(d, "curved", False) and np.any(np.abs(target) >= 0.5 * math.pi):
            _too_much_padding(d.num_cols, None)     # that ray is parallel to a flat panel
        reach = to_index(target)
    else:
        raise ValueError("offset-scan FBP is defined for parallel, fan, cone, cone-parallel "
                         "and axially aligned modular beams")
    # Round up, but not for a thousandth of a column: a reach that lands on a column
    # (e.g. a centred mirror image) must not gain one from rounding noise (modular
    # beams' float32 vectors give ±1e-5).
    if left:
        n_add = math.ceil(abs(float(np.min(reach))) - 1e-3)
    else:
        n_add = math.ceil(float(np.max(reach)) - 1e-3) - d.num_cols
    n_add = max(0, int(n_add))
    if n_add > MAX_OFFSET_PADDING * d.num_cols:
        _too_much_padding(d.num_cols, n_add)
    return s, min(abs(s[0]), abs(s[-1])), left, n_add


def _check_reaches_across(s):
    """Half-fan reconstruction needs rays on both sides of the axis (s: column distances)."""
    if not s[0] < 0.0 < s[-1]:
        raise ValueError("offset-scan FBP (set_offsetScan) needs a detector that reaches across "
                         f"the rotation axis, but the rays of its first and last columns pass "
                         f"{s[0]:+.6g} mm and {s[-1]:+.6g} mm from it; check centerCol and tau")


def _too_much_padding(num_cols, n_add):
    """Raise for padding beyond the bound (n_add None: a flat detector cannot reach)."""
    need = ("an unbounded number of" if n_add is None else f"{n_add}")
    raise ValueError(f"offset-scan FBP would need {need} extra columns (more than "
                     f"{MAX_OFFSET_PADDING}× the {num_cols}-column detector) to make the "
                     "detector symmetric about the rotation axis; check centerCol and tau")


def offset_scan_weights(geometry) -> np.ndarray:
    """Half-fan weights (1, 1, num_cols) for an offset detector (LEAP's formula).

    With s the signed distance of a column's ray from the rotation axis and delta the
    half-width of the doubly measured band: w = cos²(π/4·(s − delta)/delta) for
    ``|s| ≤ delta``, 0 beyond on the short side, 1 on the long side. Modular beams: one
    set of column weights from the views' mean distances (the GPU path takes one too).
    """
    s, delta, left, _ = _offset_geometry_terms(geometry)
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
    Raises ValueError for detectors that do not reach across the axis, ``|tau| ≥ sod``, and
    padding beyond :data:`MAX_OFFSET_PADDING` times the detector width.
    """
    full = 360.0 - math.degrees(abs(angular_step(geometry)))
    if angular_range_degrees(geometry.view_angles()) < full:
        return geometry, 0, 0
    _, _, left, n_add = _offset_geometry_terms(geometry)
    if n_add <= 0:
        return geometry, 0, 0
    d = geometry.detector
    if isinstance(geometry, ModularBeam):
        # Modules stay centred on their pixel grid: each centre moves half the added
        # width towards the padded side, so the measured pixels keep their places.
        shift = (-0.5 if left else 0.5) * n_add * d.pixel_width
        wider = geometry.with_changes(
            detector=d.with_changes(num_cols=d.num_cols + n_add, center_col=None),
            module_centers=geometry.module_centers + shift * geometry.col_vectors)
    else:
        wider = geometry.with_changes(detector=d.with_changes(
            num_cols=d.num_cols + n_add, center_col=d.center_col + (n_add if left else 0)))
    return wider, (n_add if left else 0), n_add


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


def offset_scan_extra_columns(geometry) -> int:
    """Columns an offset-detector scan is zero-padded with for FBP (the ``n_add`` of
    :func:`offset_scan_layout`); 0 for the scans FBP does not pad: helical cone beams and
    modular beams that are not axially aligned."""
    if ((isinstance(geometry, ModularBeam) and not geometry.axially_aligned)
            or (isinstance(geometry, ConeBeam) and geometry.is_helical)):
        return 0
    return int(offset_scan_layout(geometry)[2])
