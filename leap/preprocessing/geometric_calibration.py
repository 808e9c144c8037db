"""Geometric calibration from projection data: conjugate rays and consistency conditions.

These are the numerics behind the LEAP facade's ``find_centerCol``, ``find_tau``,
``estimate_tilt``, ``conjugate_difference`` and ``consistency_cost``
(:mod:`leap.compat.geometry_methods`). They follow LEAP's formulas:

* **Conjugate rays.** In parallel beam the ray (s, φ) is measured again as (−s, φ ± π).
  In fan beam (normalised flat coordinate u = tan α, rotation-axis offset τ,
  A = 2τR/(R² − τ²), R = sod) the conjugate of (u, φ) is
  ``u' = (−u + A)/(1 + uA)``, ``φ' = φ − 2·atan(u) + atan(A) + π``. Near the mid-plane the
  same holds for cone beams. The centre column (or τ) is the one that makes conjugate
  measurements agree best: mean squared difference over a grid of whole-pixel
  candidates, refined by a parabola through the best three (LEAP's ``findMinimum``).
* **Detector tilt.** Two projections 180° apart (rebinned to parallel rays for fan and
  cone beams) are mirror images of each other about the rotation axis; a detector
  rotated by α about the optical axis is found by rotating the detector coordinates of
  both and minimising their difference over α ∈ [−4.9°, 4.9°] in 0.1° steps.
* **Consistency cost** (Lesaint, Rit, Clackdoyle, Desbat, IEEE TRPMS 1(6) 2017): for
  pairs of views, weighted line integrals of each projection along the intersection of
  its detector with a plane containing both sources must agree.

Angles here are LEAP's internal ones: φ = ψ − π/2 (radians), ψ the user's angle.
Where LEAP samples the conjugate ray at the nearest pixel and view, this module
interpolates (bi)linearly, which makes the cost smooth in the candidate position.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..reconstruction.rebin import gather_view_column, source_views

#: Tilt search grid of ``estimate_tilt`` (degrees): LEAP's ±4.9° in 0.1° steps.
TILT_MAX, TILT_STEP = 4.9, 0.1
#: Sentinel cost of candidates with no conjugate pair (LEAP's 1e12).
NO_PAIRS = 1.0e12


# ----------------------------------------------------------------- small helpers
def phi_index(phis: np.ndarray, angle) -> np.ndarray:
    """Fractional view index of ``angle`` (radians) in the monotone ``phis``, clamped to
    [0, N−1] (LEAP's ``phi_inv``)."""
    phis = np.asarray(phis, dtype=np.float64)
    n = phis.size
    if n == 1:
        return np.zeros_like(np.asarray(angle, dtype=np.float64))
    idx = np.arange(n, dtype=np.float64)
    if phis[-1] < phis[0]:
        phis, idx = phis[::-1], idx[::-1]
    return np.interp(angle, phis, idx)


def angular_step(phis: np.ndarray) -> float:
    """LEAP's T_phi: (φ_last − φ_first)/(N − 1), radians (2π for a single view)."""
    if phis.size < 2:
        return 2.0 * math.pi
    return float((phis[-1] - phis[0]) / (phis.size - 1))


def find_minimum(costs: np.ndarray, lo: int, hi: int) -> tuple[float, float]:
    """Minimiser and minimum of ``costs[lo:hi+1]`` with parabolic refinement.

    As LEAP's ``findMinimum``: if the global minimum sits on an end of the range while an
    interior local minimum exists, the local one is taken (the end is likely an edge
    effect); a parabola through the minimum and its neighbours refines the position and
    the value. Returns ``(position, value)``, the position in index units.
    """
    c = np.asarray(costs, dtype=np.float64)
    best = lo + int(np.argmin(c[lo:hi + 1]))
    value = float(c[best])
    inner = np.arange(lo + 1, hi)
    if inner.size:
        is_local = (c[inner] < c[inner - 1]) & (c[inner] < c[inner + 1])
        if (best == lo or best == hi) and np.any(is_local):
            cand = inner[is_local]
            best = int(cand[np.argmin(c[cand])])
            value = float(c[best])
    pos = float(best)
    if lo < best < hi:
        a, b, m = c[best - 1], c[best + 1], c[best]
        if a != NO_PAIRS and b != NO_PAIRS and a > 0 and b > 0:
            curv = a + b - 2.0 * m
            if curv != 0.0:
                pos += 0.5 * (a - b) / curv
            qa, qb = 0.5 * (a + b) - m, 0.5 * (b - a)
            if qa > 0:
                value = float(m - qb * qb / (4.0 * qa))
    return pos, value


def default_center_range(num_cols: int, offset_scan: bool) -> tuple[int, int]:
    """LEAP's default candidate centre columns: the middle 54% of the detector (80% for
    offset scans)."""
    c = 0.1 if offset_scan else 0.23
    lo = max(0, min(num_cols - 1, int(math.floor(c * num_cols))))
    hi = max(0, min(num_cols - 1, int(math.ceil(num_cols - c * num_cols))))
    if lo > hi:
        lo, hi = 5, num_cols - 6
    return lo, hi


def interp2_clamped(img: np.ndarray, r, c) -> np.ndarray:
    """Bilinear samples of a 2-D array at fractional (row, col), indices clamped to the
    array (LEAP's ``interpolate2D``)."""
    n1, n2 = img.shape
    r = np.clip(np.asarray(r, dtype=np.float64), 0.0, n1 - 1)
    c = np.clip(np.asarray(c, dtype=np.float64), 0.0, n2 - 1)
    r0 = np.minimum(np.floor(r).astype(np.intp), max(n1 - 2, 0))
    c0 = np.minimum(np.floor(c).astype(np.intp), max(n2 - 2, 0))
    dr, dc = r - r0, c - c0
    r1, c1 = np.minimum(r0 + 1, n1 - 1), np.minimum(c0 + 1, n2 - 1)
    return ((1 - dr) * ((1 - dc) * img[r0, c0] + dc * img[r0, c1])
            + dr * ((1 - dc) * img[r1, c0] + dc * img[r1, c1]))


def _interp3_zero(g: np.ndarray, view, row, col) -> np.ndarray:
    """Bilinear samples of projection ``view`` (integer array) at fractional (row, col),
    zero outside the detector (a border-addressed texture)."""
    _, nr, nc = g.shape
    r0 = np.floor(row).astype(np.intp)
    c0 = np.floor(col).astype(np.intp)
    dr, dc = row - r0, col - c0
    out = np.zeros(np.broadcast(view, row, col).shape)
    for rr, wr in ((r0, 1 - dr), (r0 + 1, dr)):
        for cc, wc in ((c0, 1 - dc), (c0 + 1, dc)):
            ok = (rr >= 0) & (rr < nr) & (cc >= 0) & (cc < nc)
            vals = g[view, np.clip(rr, 0, nr - 1), np.clip(cc, 0, nc - 1)]
            out += np.where(ok, wr * wc * vals, 0.0)
    return out


def rotated_coordinates(p: SimpleNamespace, alpha_deg: float, center_col: float,
                        about_middle: bool = True):
    """Fractional (row, col) indices where two conjugate projections are sampled when the
    detector is rotated by ``alpha_deg`` about the optical axis.

    A detector rotated by α (column vector cos α·θ⊥ + sin α·ẑ, as ``rotate_detector`` and
    ``tiltAngle``) records the untilted image P at ``P(x, z) = M(cα·x + sα·z, −sα·x + cα·z)``,
    (x, z) measured from the centre of rotation: the detector middle (``about_middle``,
    how ``rotate_detector`` turns a module) or the principal point (centerCol, centerRow),
    as a cone beam's ``tiltAngle``. Projection A is sampled at the untilted pixel grid,
    projection B at its mirror image about the axis column ``center_col``.
    Returns ``(row_A, col_A, row_B, col_B, inside)``, arrays (numRows, numCols).

    LEAP rotates about the middle but adds the axis offset after rotating, which is exact
    only for a centred detector; here the mirror is taken before rotating.
    """
    nr, nc, ph, pw = p.numRows, p.numCols, p.pixelHeight, p.pixelWidth
    oc, orow = (0.5 * (nc - 1), 0.5 * (nr - 1)) if about_middle else (center_col, p.centerRow)
    ca, sa = math.cos(math.radians(alpha_deg)), math.sin(math.radians(alpha_deg))
    z = ((np.arange(nr) - orow) * ph)[:, None]
    x = ((np.arange(nc) - oc) * pw)[None, :]
    xb = 2.0 * (center_col - oc) * pw - x
    ra, cai = (-sa * x + ca * z) / ph + orow, (ca * x + sa * z) / pw + oc
    rb, cb = (-sa * xb + ca * z) / ph + orow, (ca * xb + sa * z) / pw + oc
    inside = ((ra >= 0) & (ra <= nr - 1) & (rb >= 0) & (rb <= nr - 1)
              & (cai >= 0) & (cai <= nc - 1) & (cb >= 0) & (cb <= nc - 1))
    return ra, cai, rb, cb, inside


# -------------------------------------------------------------- centre column / tau
def parallel_center_costs(g: np.ndarray, p: SimpleNamespace, i_row: int, lo: int, hi: int):
    """Conjugate-ray cost per candidate centre column n ∈ [lo, hi] (parallel beam).

    Views i and i + K (K the number of views in 180°) are compared at columns k and
    2n − k (the mirror image about column n). Scans longer than 225° use row ``i_row``
    only, shorter ones all rows (as LEAP). Returns a (numCols,) cost array.
    """
    phis, na, nc = p.phis, p.numAngles, p.numCols
    T = angular_step(phis)
    conj = int(math.floor(0.5 + phi_index(phis, phis[0] + math.copysign(math.pi, T))))
    rows = slice(i_row, i_row + 1) if p.angularRange > 225.0 else slice(0, p.numRows)
    i = np.arange(conj)
    keep = (i + conj < na) | (i == 0)
    i = i[keep]
    a = g[i][:, rows, :].astype(np.float64)
    b = g[np.minimum(i + conj, na - 1)][:, rows, :].astype(np.float64)
    costs = np.full(nc, NO_PAIRS)
    k = np.arange(nc)
    for n in range(lo, hi + 1):
        kc = 2 * n - k
        ok = (kc >= 0) & (kc <= nc - 1)
        if i.size == 0 or not np.any(ok):
            continue
        d = a[:, :, ok] - b[:, :, kc[ok]]
        costs[n] = float(np.mean(d * d))
    return costs


def rotated_sinogram(g: np.ndarray, p: SimpleNamespace, i_row: int) -> np.ndarray:
    """Sinogram (numAngles, numCols) of detector row ``i_row``, resampled along the row
    of a detector tilted by ``p.tiltAngle`` degrees (LEAP's ``get_rotated_sinogram``)."""
    if p.tiltAngle == 0.0:
        return np.asarray(g[:, i_row, :], dtype=np.float64)
    ra, ca, _, _, _ = rotated_coordinates(p, p.tiltAngle, p.centerCol, about_middle=False)
    out = np.empty((p.numAngles, p.numCols))
    for v in range(p.numAngles):
        out[v] = interp2_clamped(np.asarray(g[v], dtype=np.float64), ra[i_row], ca[i_row])
    return out


def divergent_center_costs(sino: np.ndarray, p: SimpleNamespace, lo: int, hi: int,
                           find_tau: bool):
    """Conjugate-ray cost per candidate n ∈ [lo, hi] for fan and cone beams.

    ``find_tau=False``: candidate centre column n (τ fixed). ``find_tau=True``: candidate
    τ = pixelWidth·sod/sdd·(n − (numCols−1)/2) (centre column fixed). Returns a
    (numCols,) cost array.
    """
    phis, nc = p.phis, p.numCols
    T = angular_step(phis)
    conj = int(math.floor(0.5 + phi_index(phis, phis[0] + math.copysign(math.pi, T))))
    phi_min, phi_max = float(min(phis[0], phis[-1])), float(max(phis[0], phis[-1]))
    R, sdd = p.sod, p.sdd
    curved = p.curved
    atan_tu = math.atan(p.pixelWidth / sdd)
    T_u = atan_tu if curved else p.pixelWidth / sdd
    tau_step = p.pixelWidth * R / sdd
    phi = phis[:conj, None]
    k = np.arange(nc, dtype=np.float64)[None, :]
    costs = np.full(nc, NO_PAIRS)
    for n in range(lo, hi + 1):
        if find_tau:
            tau = tau_step * (n - 0.5 * (nc - 1))
            u0 = -p.centerCol * T_u
        else:
            tau = p.tau
            u0 = -n * T_u
        A = 2.0 * tau * R / (R * R - tau * tau)
        u_end = T_u * (nc - 1) + u0
        u = np.tan(k * T_u + u0) if curved else k * T_u + u0
        u_conj = (-u + A) / (1.0 + u * A)
        phi_conj = phi - 2.0 * np.arctan(u) + math.atan(A) + math.pi
        phi_conj = np.where(phi_conj > phi_max, phi_conj - 2.0 * math.pi, phi_conj)
        lat = np.broadcast_to(np.arctan(u_conj) if curved else u_conj, phi_conj.shape)
        ok = ((phi_conj >= phi_min) & (phi_conj <= phi_max)
              & (lat >= u0) & (lat <= u_end) & (1.0 + u * A > 0))
        if not np.any(ok):
            continue
        vi = phi_index(phis, phi_conj[ok])
        ci = (lat[ok] - u0) / T_u
        val = np.broadcast_to(sino[:conj], ok.shape)[ok]
        d = val - interp2_clamped(sino, vi, ci)
        costs[n] = float(np.mean(d * d))
    return costs


# -------------------------------------------------------------------- tilt
def rebin_parallel_projection(g: np.ndarray, p: SimpleNamespace, angle: float) -> np.ndarray:
    """One parallel-ray projection (numRows, numCols) at internal angle ``angle`` rebinned
    from fan/cone data (cone: cone-parallel, rows unchanged).

    Column k is the parallel ray at lateral distance s_k = (k − centerCol)·T_s,
    T_s = pixelWidth·√(sod²+τ²)/sdd, taken from the view β = φ + α at fan angle
    α = asin(s/√(sod²+τ²)) + asin(τ/√(sod²+τ²)); full scans wrap β by 2π, shorter ones
    use the conjugate ray. Interpolation: LEAP's order-6 Lagrange stencils in view and
    column.
    """
    phis, nc = p.phis, p.numCols
    R, tau, sdd = p.sod, p.tau, p.sdd
    R_tau = math.hypot(R, tau)
    atan_A = math.atan(2.0 * tau * R / (R * R - tau * tau))
    T = angular_step(phis)
    wrap = p.angularRange >= min(359.0, 360.0 - abs(math.degrees(T)))
    s = (np.arange(nc) - p.centerCol) * p.pixelWidth * R_tau / sdd
    alpha = np.arcsin(np.clip(s / R_tau, -1.0, 1.0)) + math.asin(tau / R_tau)
    b_min, b_max = float(min(phis[0], phis[-1])), float(max(phis[0], phis[-1]))
    alpha, beta = source_views(alpha, angle + alpha, wrap, atan_A, b_min, b_max)
    if p.curved:
        T_u, lateral = math.atan(p.pixelWidth / sdd), alpha
    else:
        T_u, lateral = p.pixelWidth / sdd, np.tan(alpha)
    ci = lateral / T_u + p.centerCol
    # LEAP interpolates with order-6 Lagrange stencils in both view and column (as its
    # rebin_parallel); the view index is a float32 in LEAP.
    vi = phi_index(phis, beta).astype(np.float32).astype(np.float64)
    # Only the views the stencils reach are read (g may be a lazy source): with 6 views
    # of margin each side, the stencils on the crop equal those on the whole (their
    # lengths shrink only within 3 samples of an end, which is then the true end).
    na = g.shape[0]
    lo = max(0, int(np.floor(np.min(vi))) - 6)
    hi = min(na, int(np.ceil(np.max(vi))) + 7)
    data = np.ascontiguousarray(np.asarray(g[lo:hi], dtype=np.float64).transpose(0, 2, 1))
    return gather_view_column(data, vi - lo, ci, 6).T      # (numRows, numCols)


def conjugate_projections(g: np.ndarray, p: SimpleNamespace):
    """Two projections (numRows, numCols) 180° apart, centred on the scan's middle angle
    (shifted to fit inside the scan), as parallel rays. Needs ≥ 180° of data."""
    phis = p.phis
    T = angular_step(phis)
    if p.angularRange < min(179.0, 180.0 - abs(math.degrees(T))):
        raise ValueError(f"conjugate projections need an angular range of at least 180 degrees, "
                         f"got {p.angularRange:.4g}")
    least, most = float(min(phis[0], phis[-1])), float(max(phis[0], phis[-1]))
    mid = 0.5 * (phis[0] + phis[-1])
    a, b = mid - 0.5 * math.pi, mid + 0.5 * math.pi
    if a < least:
        a, b = least, least + math.pi
    elif b > most:
        b, a = most, most - math.pi
    if p.kind in ("fan", "cone"):
        return rebin_parallel_projection(g, p, a), rebin_parallel_projection(g, p, b)
    out = []
    for angle in (a, b):
        x = float(phi_index(phis, angle))
        lo, hi = int(math.floor(x)), int(math.ceil(x))
        d = x - lo
        out.append((1 - d) * np.asarray(g[lo], dtype=np.float64)
                   + d * np.asarray(g[hi], dtype=np.float64))
    return out[0], out[1]


def conjugate_difference(proj_a, proj_b, p: SimpleNamespace, alpha: float, center_col: float):
    """Difference (numRows, numCols) of two conjugate projections for a detector rotated
    by ``alpha`` degrees about the optical axis, axis at ``center_col``; 0 where either
    sample falls off the detector."""
    ra, ca, rb, cb, inside = rotated_coordinates(p, alpha, center_col)
    d = interp2_clamped(proj_a, ra, ca) - interp2_clamped(proj_b, rb, cb)
    return np.where(inside, d, 0.0)


def tilt_costs(proj_a, proj_b, p: SimpleNamespace) -> tuple[np.ndarray, np.ndarray]:
    """Mean squared conjugate difference over LEAP's tilt grid. Returns (angles, costs)."""
    n = 2 * int(math.floor(0.5 + TILT_MAX / TILT_STEP)) + 1
    angles = -TILT_MAX + TILT_STEP * np.arange(n)
    costs = np.full(n, 1.0e30)
    for i, alpha in enumerate(angles):
        ra, ca, rb, cb, inside = rotated_coordinates(p, alpha, p.centerCol)
        if np.any(inside):
            d = (interp2_clamped(proj_a, ra[inside], ca[inside])
                 - interp2_clamped(proj_b, rb[inside], cb[inside]))
            costs[i] = float(np.mean(d * d))
    return angles, costs


# ------------------------------------------------------------- consistency cost
def consistency_cost(g: np.ndarray, p: SimpleNamespace, d_row: float, d_col: float,
                     d_tau: float, d_tilt: float) -> float:
    """Lesaint et al.'s consistency cost of an axial flat-panel cone-beam scan.

    Views about 40° apart are kept. For each kept pair (i, j) with angular separation in
    [35°, 150°] and each detector row index iv, a virtual flat detector through the axis,
    parallel to the line joining the two sources and at distance D_i from source i, is
    sampled along the row at height v_iv; both projections are integrated along that line
    with weight 1/√(D² + u² + v²). The cost is Σ (I_i − I_j)². The geometry is perturbed
    by centre row/column shifts (pixels), τ shift (mm) and detector tilt (degrees).
    """
    phis = p.phis
    sep = math.radians(40.0)
    keep, cur = [0], phis[0]
    for i in range(1, p.numAngles):
        if math.fmod(abs(cur - phis[i]), 2 * math.pi) >= sep:
            keep.append(i)
            cur = phis[i]
    if len(keep) < 2:
        raise ValueError("consistency_cost needs views at least 40 degrees apart")
    keep = np.asarray(keep)
    ph_k = phis[keep]
    R, sdd, tau = p.sod, p.sdd, p.tau + d_tau
    nr, nc, ph, pw = p.numRows, p.numCols, p.pixelHeight, p.pixelWidth
    c_row, c_col = p.centerRow + d_row, p.centerCol + d_col
    tilt = math.radians(p.tiltAngle + d_tilt)
    ct, st = math.cos(tilt), math.sin(tilt)
    u0s, v0s = -c_col * pw, -c_row * ph            # first pixel centre, mm on the detector
    u_lo, u_hi = (u0s - 0.5 * pw) / sdd, (u0s + (nc - 0.5) * pw) / sdd
    iv = np.arange(nr, dtype=np.float64)
    total = 0.0
    for a in range(keep.size):
        pa = ph_k[a]
        sa = np.array([R * math.cos(pa) + tau * math.sin(pa), R * math.sin(pa) - tau * math.cos(pa)])
        for b in range(keep.size):
            d = math.fmod(abs(pa - ph_k[b]), 2 * math.pi)
            if a == b or d > math.radians(150.0) or d < math.radians(35.0):
                continue
            pb = ph_k[b]
            sb = np.array([R * math.cos(pb) + tau * math.sin(pb), R * math.sin(pb) - tau * math.cos(pb)])
            e = (sb - sa) / np.linalg.norm(sb - sa)          # virtual column direction
            nrm = np.array([e[1], -e[0]])
            D = {a: abs(float(sa @ nrm)), b: abs(float(sb @ nrm))}
            Tu = pw * D[a] / sdd                           # virtual pixel pitch (both views)
            Tv = ph * D[a] / sdd
            u0v, v0v = Tu / pw * u0s, Tv / ph * v0s
            v_virt = iv * Tv + v0v                         # (nr,)
            acc = {}
            for view, ang, src in ((a, pa, sa), (b, pb, sb)):
                # Range of virtual columns covered by this view's detector edges.
                ends = []
                for ue in (u_lo, u_hi):
                    ray = np.array([-math.cos(ang) - math.sin(ang) * ue, -math.sin(ang) + math.cos(ang) * ue])
                    t = -float(src @ nrm) / float(ray @ nrm)
                    ends.append(((src + t * ray) @ e - u0v) / Tu)
                k = np.arange(int(math.floor(min(ends))) - 2, int(math.ceil(max(ends))) + 3)
                u_virt = k * Tu + u0v                      # (nk,)
                x, y = e[0] * u_virt, e[1] * u_virt
                c, s = math.cos(ang), math.sin(ang)
                denom = R - c * x - s * y
                u_n = (-s * x + c * y + tau) / denom       # flat, untilted, normalised
                v_n = v_virt[:, None] / denom[None, :]
                uu = ct * u_n[None, :] + st * v_n          # tilted detector coordinates
                vv = -st * u_n[None, :] + ct * v_n
                w = 1.0 / np.sqrt(D[view] ** 2 + v_virt[:, None] ** 2 + u_virt[None, :] ** 2)
                vals = _interp3_zero(g, keep[view], (vv * sdd - v0s) / ph, (uu * sdd - u0s) / pw)
                acc[view] = np.sum(w * vals, axis=1)
            total += float(np.sum((acc[a] - acc[b]) ** 2))
    return total


# --------------------------------------------------------------- derivative
def ray_derivative(q: np.ndarray, pixel_width: float) -> np.ndarray:
    """Central difference along detector rows, in place: (q[k+1] − q[k−1])/(2·pixelWidth),
    one-sided (still halved, as LEAP) at the two ends. Returns q."""
    c = 0.5 / pixel_width
    t = q.copy()
    q[..., 1:-1] = (t[..., 2:] - t[..., :-2]) * c
    q[..., 0] = (t[..., 1] - t[..., 0]) * c
    q[..., -1] = (t[..., -1] - t[..., -2]) * c
    return q


# ------------------------------------------------------- searches on a core geometry
# What the LEAP facade's find_centerCol, find_tau, estimate_tilt, conjugate_difference,
# consistency_cost and inconsistencyReconstruction compute, from a core geometry.
def calibration_params(geometry) -> SimpleNamespace:
    """The parameters the functions above take, from a parallel-, fan-, cone- or
    cone-parallel-beam geometry: LEAP's names, internal angles ``phis`` = ψ − π/2
    (radians), ``tiltAngle`` and ``angularRange`` in degrees, ``kind`` one of 'parallel',
    'fan', 'cone', 'cone_parallel'. Raises ValueError for modular beams."""
    from ..geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam
    from ..reconstruction.weights import angular_range_degrees
    kinds = ((ParallelBeam, "parallel"), (FanBeam, "fan"), (ConeBeam, "cone"),
             (ConeParallelBeam, "cone_parallel"))
    kind = next((name for cls, name in kinds if isinstance(geometry, cls)), None)
    if kind is None:
        what = "modular beams" if isinstance(geometry, ModularBeam) else type(geometry).__name__
        raise ValueError("geometric calibration works for parallel-, fan- and cone-beam "
                         f"geometries, not {what}")
    d = geometry.detector
    return SimpleNamespace(
        kind=kind, phis=geometry.angles - 0.5 * np.pi, numAngles=geometry.num_angles,
        numRows=d.num_rows, numCols=d.num_cols, pixelHeight=d.pixel_height,
        pixelWidth=d.pixel_width, centerRow=d.center_row, centerCol=d.center_col,
        sod=getattr(geometry, "sod", 0.0), sdd=getattr(geometry, "sdd", 0.0),
        tau=getattr(geometry, "tau", 0.0), curved=d.curved,
        tiltAngle=math.degrees(geometry.tilt) if kind == "cone" else 0.0,
        helical=kind in ("cone", "cone_parallel") and geometry.is_helical,
        angularRange=angular_range_degrees(geometry.angles))


def search_row(p: SimpleNamespace, i_row=None) -> int:
    """The detector row a conjugate-ray search uses: ``i_row``, or, when that is None or
    off the detector, the row nearest the central ray (centerRow)."""
    if i_row is None or i_row < 0 or i_row > p.numRows - 1:
        return max(0, min(p.numRows - 1, math.floor(0.5 + p.centerRow)))
    return int(i_row)


def search_columns(num_cols: int, bounds=None, offset_scan: bool = False, scale: float = 1.0,
                   offset: float = 0.0) -> tuple[int, int]:
    """Candidate columns ``(lo, hi)`` of a conjugate-ray search.

    ``bounds``: ``[low, high]`` in units that map to columns as ``b/scale + offset``
    (centre columns: scale 1, offset 0; tau in mm: scale = pixelWidth·sod/sdd, offset =
    (numCols−1)/2), rounded to the nearest columns; ``None`` or ``[-1, -1]`` (LEAP's
    "unset"): :func:`default_center_range`. Raises ValueError for bounds that are not two
    finite numbers, are not ordered or fall off the detector.
    """
    if bounds is not None:
        b = np.asarray(bounds, dtype=np.float64).ravel()
        if b.size != 2 or not np.all(np.isfinite(b)):
            raise ValueError(f"search bounds (searchBounds) must be 2 numbers [low, high], "
                             f"got {bounds!r}")
        lo, hi = b / scale + offset
        if 0.0 <= lo <= hi <= num_cols - 1:
            return int(0.5 + lo), int(0.5 + hi)
        if not np.all(b == -1.0):
            raise ValueError(f"search bounds (searchBounds) {b.tolist()} fall outside the "
                             f"detector (column indices 0..{num_cols - 1}) or are not ordered")
    return default_center_range(num_cols, offset_scan)


def _check_data(geometry, g) -> None:
    """Projections must be finite float32 NumPy arrays of the geometry's shape."""
    from .. import _validate
    _validate.check_array("g", g, geometry.projection_shape)
    _validate.check_finite("g", g)


def _check_half_turn(p: SimpleNamespace, what: str) -> None:
    if p.angularRange + 2.0 * abs(math.degrees(angular_step(p.phis))) < 180.0:
        raise ValueError(f"{what} needs at least 180 degrees of data, got {p.angularRange:.4g}")


def _warn_search(p: SimpleNamespace, what: str, offset_scan: bool) -> None:
    import warnings
    if offset_scan:
        warnings.warn(f"{what} may not work for offset scans", RuntimeWarning, stacklevel=4)
    if p.helical:
        warnings.warn(f"{what} will likely not work for helical data", RuntimeWarning,
                      stacklevel=4)


def find_center_col(geometry, g: np.ndarray, i_row=None, bounds=None, *,
                    offset_scan: bool = False) -> tuple[float, float]:
    """The centre column that makes conjugate rays of ``g`` (num_angles, num_rows,
    num_cols) agree best, and the cost there (mean squared difference of conjugate
    rays): ``(center_col, cost)``.

    ``i_row``: the row to use (:func:`search_row`); ``bounds``: candidate centre columns
    (:func:`search_columns`, default the middle 54 %, 80 % for an ``offset_scan``).
    Parallel, fan and cone beams; needs at least 180° of untruncated data.
    """
    p = calibration_params(geometry)
    _check_data(geometry, g)
    _check_half_turn(p, "the centre-column search")
    _warn_search(p, "the centre-column search", offset_scan)
    row = search_row(p, i_row)
    lo, hi = search_columns(p.numCols, bounds, offset_scan)
    if p.kind == "parallel":
        costs = parallel_center_costs(g, p, row, lo, hi)
    else:
        costs = divergent_center_costs(rotated_sinogram(g, p, row), p, lo, hi, False)
    return find_minimum(costs, lo, hi)


def find_tau(geometry, g: np.ndarray, i_row=None, bounds=None, *,
             offset_scan: bool = False) -> tuple[float, float]:
    """The rotation-axis offset tau (mm) that makes conjugate rays of fan- or cone-beam
    data ``g`` agree best, and the cost there: ``(tau, cost)``. Candidates are whole
    columns at the axis, tau = pixelWidth·sod/sdd·(n − (numCols−1)/2); ``bounds``:
    ``[low, high]`` in mm (:func:`search_columns`)."""
    p = calibration_params(geometry)
    if p.kind not in ("fan", "cone"):
        raise ValueError(f"the tau search works for fan- and cone-beam data, not {p.kind}")
    _check_data(geometry, g)
    _check_half_turn(p, "the tau search")
    _warn_search(p, "the tau search", offset_scan)
    row = search_row(p, i_row)
    step = p.pixelWidth * p.sod / p.sdd
    lo, hi = search_columns(p.numCols, bounds, offset_scan, step, 0.5 * (p.numCols - 1))
    costs = divergent_center_costs(rotated_sinogram(g, p, row), p, lo, hi, True)
    pos, value = find_minimum(costs, lo, hi)
    return step * (pos - 0.5 * (p.numCols - 1)), value


def find_tilt(geometry, g: np.ndarray) -> float:
    """The detector tilt (rotation about the optical axis), degrees on LEAP's grid of
    ±4.9° in 0.1° steps refined by a parabola, from two projections of ``g`` 180° apart
    (fan and cone data rebinned to parallel rays). Works best once centerCol is right."""
    _check_data(geometry, g)
    return tilt_from_views(geometry, g)


def tilt_from_views(geometry, g) -> float:
    """:func:`find_tilt` reading only the views it needs from ``g`` (any array or a
    :class:`~leap.io.lazy.Source` indexable by view ranges): two for parallel beams, the
    views the fan-to-parallel rebinning of two projections reaches otherwise."""
    p = calibration_params(geometry)
    a, b = conjugate_projections(g, p)
    angles, costs = tilt_costs(a, b, p)
    pos, _ = find_minimum(costs, 0, costs.size - 1)
    return float(angles[0] + TILT_STEP * pos)


def conjugate_view_difference(geometry, g: np.ndarray, alpha: float = 0.0,
                              center_col: float | None = None) -> np.ndarray:
    """Difference (num_rows, num_cols) float32 of two projections of ``g`` 180° apart,
    modelling a detector rotated by ``alpha`` degrees about the optical axis and the
    centre column ``center_col`` (default: the geometry's). Mostly noise when both are
    right."""
    p = calibration_params(geometry)
    _check_data(geometry, g)
    cc = p.centerCol if center_col is None else float(center_col)
    a, b = conjugate_projections(g, SimpleNamespace(**dict(vars(p), centerCol=cc)))
    return conjugate_difference(a, b, p, float(alpha), cc).astype(np.float32)


def scan_consistency_cost(geometry, g: np.ndarray, d_row: float = 0.0, d_col: float = 0.0,
                          d_tau: float = 0.0, d_tilt: float = 0.0) -> float:
    """:func:`consistency_cost` of an axial flat-panel cone-beam scan ``g`` for
    perturbations of the centre row and column (pixels), tau (mm) and the tilt
    (degrees). Lower is more consistent."""
    p = calibration_params(geometry)
    if p.kind != "cone" or p.curved or p.helical:
        raise ValueError("the consistency cost works for axial flat-panel cone-beam "
                         "geometries only")
    _check_data(geometry, g)
    return consistency_cost(g, p, d_row, d_col, d_tau, d_tilt)


def is_full_scan(geometry) -> bool:
    """Whether the views cover a full turn by LEAP's rule for conjugate rays: more than
    one view and an angular range of at least min(359°, 360° − one step)."""
    from ..reconstruction.weights import angular_range_degrees
    from ..reconstruction.weights import angular_step as mean_step
    angles = geometry.view_angles()
    return bool(angles.size > 1 and angular_range_degrees(angles)
                >= min(359.0, 360.0 - math.degrees(abs(mean_step(geometry)))))


def derivative_filter(q: np.ndarray, geometry) -> np.ndarray:
    """The row filter of LEAP's inconsistency reconstruction: :func:`ray_derivative`
    along the detector rows of ``geometry``, in place."""
    return ray_derivative(q, geometry.detector.pixel_width)
