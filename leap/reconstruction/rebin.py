"""Rebinning of projection data (LEAP's ``rebin_curved`` and ``rebin_parallel``).

* :func:`rebin_curved` resamples the columns of a curved detector made of flat modules
  (measured fan angles per column) onto the ideal equi-angular columns.
* :func:`rebin_parallel` turns fan-beam data into parallel-beam data and cone-beam data
  into cone-parallel data: the parallel ray of view φ and lateral position s is the
  fan ray of view β = φ + α(s), α(s) = asin(s/R) + asin(τ/R), R = √(sod² + τ²) the
  radius of the source orbit. Flat cone-beam rows are first resampled so that the row
  coordinate is the ray's slope per unit in-plane length (v·√(1 + u²)), which is what
  cone-parallel rows mean.

Interpolation is Lagrange polynomial interpolation of even order 2..6 (angles ×
columns, separable), with upstream LEAP's stencil rules at the borders, so the numbers
match upstream's (``src/rebin.cpp``). Arrays are float32 (num_angles, num_rows,
num_cols); angles in radians internally.
"""
from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np

from ..geometry import ConeBeam, ConeParallelBeam, FanBeam, ParallelBeam
from ..geometry.cone import check_no_source_shifts
from .weights import angular_range_degrees


def _stencils(positions, n, order, n_bound=None, closest_fallback=False):
    """Upstream's Lagrange stencils at fractional indices ``positions`` of n samples.

    The value at position q is Σ_l W[l]·x[first + l]. Exact hits and positions off the
    ends take the nearest sample; within ¼ of a sample an odd number of points centred
    on it, otherwise an even number straddling q (at most ``order``, fewer near the
    ends); ``n_bound`` limits the length (upstream uses the column count also when
    resampling rows). A 1-point stencil takes the nearest sample when
    ``closest_fallback``, else the stencil's first one (upstream's 2-D interpolation).

    Returns ``first`` (int array, the positions' shape), ``M`` (stencil lengths) and
    ``W`` (shape + (6,)): the weights, zero for l ≥ M.
    """
    n_bound = n if n_bound is None else n_bound
    q = np.asarray(positions, dtype=np.float64)
    ic = np.floor(0.5 + q)
    frac = np.abs(q - ic)
    single = (frac < 1e-8) | (ic < 0) | (ic > n - 1)
    near = frac < 0.25
    # Odd stencil centred on the nearest sample (C's % and / truncate toward zero).
    m_odd = np.minimum(order - math.fmod(order + 1, 2), 1 + np.minimum(n_bound - 1 - ic, ic))
    m_odd = np.where(np.fmod(m_odd, 2) == 0, m_odd - 1, m_odd)
    first_odd = ic - np.trunc((m_odd - 1) / 2)
    # Even stencil straddling the position.
    tq = np.trunc(q)
    m_even = np.minimum(order - math.fmod(order, 2), np.minimum(n_bound - np.ceil(q), 1 + tq))
    m_even = np.where(np.fmod(m_even, 2) == 1, m_even - 1, m_even)
    first_even = tq - np.trunc(m_even / 2) + 1
    M = np.where(near, m_odd, m_even)
    first = np.where(near, first_odd, first_even)
    one = single | (M <= 1)
    fallback = ic if closest_fallback else first
    first = np.where(single, np.clip(ic, 0, n - 1),
                     np.where(one, np.clip(fallback, 0, n - 1), first)).astype(np.int64)
    M = np.where(one, 1, M).astype(np.int64)
    W = np.zeros(q.shape + (6,))
    x = q - first
    for l in range(6):
        h = np.ones_like(q)
        for m in range(6):
            if m != l:
                h = np.where(m < M, h * (x - m) / (l - m), h)
        W[..., l] = np.where(l < M, h, 0.0)
    W[one] = 0.0
    W[one, 0] = 1.0
    return first, M, W


def source_views(alpha, beta, wrap, atan_A, beta_min, beta_max):
    """The measured ray behind each wanted (fan angle ``alpha``, view ``beta``) pair, rad.

    Views off the scan wrap by 2π for full scans; for shorter scans the conjugate ray
    (opposite direction, fan angle ``atan_A − alpha``, view shifted by ±π) is used, as
    LEAP's rebinning does. Returns the (alpha, beta) to interpolate at.
    """
    if wrap:
        beta = np.where(beta < beta_min, beta + 2 * math.pi,
                        np.where(beta > beta_max, beta - 2 * math.pi, beta))
        return alpha, beta
    alpha_c = -alpha + atan_A
    lo, hi = beta < beta_min, beta > beta_max
    beta = np.where(lo, beta - (alpha - alpha_c) + math.pi,
                    np.where(hi, beta - (alpha - alpha_c) - math.pi, beta))
    return np.where(lo | hi, alpha_c, alpha), beta


def gather_view_column(data, view_pos, col_pos, order=6):
    """Lagrange interpolation of ``data`` (num_views, num_cols, …) at fractional (view,
    column) positions of equal shape S, with LEAP's stencils (``_stencils``) in both;
    returns shape S + data.shape[2:], float64."""
    na, nc = data.shape[:2]
    fv, _, wv = _stencils(view_pos, na, order)
    fc, _, wc = _stencils(col_pos, nc, order)
    out = np.zeros(np.shape(view_pos) + data.shape[2:])
    extra = (None,) * (data.ndim - 2)
    for l1 in range(6):
        i = fv + l1
        ok1 = (wv[..., l1] != 0.0) & (i >= 0) & (i < na)
        if not ok1.any():
            continue
        for l3 in range(6):
            k = fc + l3
            ok = ok1 & (wc[..., l3] != 0.0) & (k >= 0) & (k < nc)
            if not ok.any():
                continue
            w = np.where(ok, wv[..., l1] * wc[..., l3], 0.0)
            out += w[(Ellipsis,) + extra] * data[np.clip(i, 0, na - 1), np.clip(k, 0, nc - 1)]
    return out


def _stencil_matrix(positions, n, order, n_bound=None, closest_fallback=False, clamp=False):
    """Dense (len(positions), n) interpolation matrix of :func:`_stencils` rows.

    Stencil points off [0, n) are dropped (``clamp=False``, upstream's 2-D
    interpolation) or moved to the nearest end (``clamp=True``, its row resampling).
    """
    first, _, W = _stencils(positions, n, order, n_bound, closest_fallback)
    A = np.zeros((first.size, n))
    rows = np.arange(first.size)
    for l in range(6):
        k = first + l
        ok = (W[:, l] != 0.0)
        if clamp:
            np.add.at(A, (rows[ok], np.clip(k[ok], 0, n - 1)), W[ok, l])
        else:
            ok &= (k >= 0) & (k < n)
            np.add.at(A, (rows[ok], k[ok]), W[ok, l])
    return A


def _check_projections(geometry, g):
    check_no_source_shifts(geometry, "rebinning")
    if not isinstance(g, np.ndarray) or g.dtype != np.float32 or not g.flags.c_contiguous:
        raise TypeError("g must be a C-contiguous float32 numpy.ndarray of shape "
                        f"{geometry.projection_shape}")
    if g.shape != geometry.projection_shape:
        raise ValueError(f"g must have shape {geometry.projection_shape}, got {g.shape}")
    if not g.flags.writeable:
        raise ValueError("g is read-only; rebinning works in place")


def _order(order) -> int:
    o = int(order)
    if o != order:
        raise TypeError(f"order must be an integer, got {order!r}")
    o += o % 2
    return max(2, min(o, 6))


def rebin_curved(geometry: ConeBeam, g: np.ndarray, fan_angles, order: int = 6) -> np.ndarray:
    """Resample, in place, the columns of curved cone-beam data measured at the fan angles
    ``fan_angles`` (degrees, one per column, increasing) onto the geometry's equi-angular
    columns ``(i − center_col)·atan(pixel_width/sdd)``.

    g : (num_angles, num_rows, num_cols) float32, overwritten and returned.
    order : number of points of the Lagrange interpolation (upstream's rules).
    """
    if not isinstance(geometry, ConeBeam) or not geometry.detector.curved:
        raise ValueError("rebin_curved needs curved cone-beam data: set_conebeam(...) then "
                         "set_curvedDetector()")
    _check_projections(geometry, g)
    d = geometry.detector
    fa = np.asarray(fan_angles, dtype=np.float32).astype(np.float64).ravel()
    if fa.size != d.num_cols:
        raise ValueError(f"fanAngles must hold one angle per column ({d.num_cols}), got {fa.size}")
    if d.num_cols <= 2:
        raise ValueError("rebin_curved needs at least three detector columns")
    if not np.all(np.diff(fa) > 0):
        raise ValueError("fanAngles must be strictly increasing (degrees)")
    if int(order) != order or not 1 <= int(order) <= 6:
        raise ValueError(f"order must be an integer from 1 to 6, got {order!r}")
    order = int(order)
    n = d.num_cols
    target = np.degrees((np.arange(n) - d.center_col) * math.atan(d.pixel_width / geometry.sdd))
    pos = np.array([_fan_angles_inv(fa, float(t)) for t in target])
    first, M, _ = _stencils(pos, n, order, n, closest_fallback=True)
    # Lagrange weights on the measured (non-uniform) angles.
    A = np.zeros((n, n))
    for k in range(n):
        nodes = fa[first[k]:first[k] + M[k]]
        for l in range(M[k]):
            others = np.delete(nodes, l)
            A[k, first[k] + l] = np.prod((target[k] - others) / (nodes[l] - others))
    g[...] = np.einsum("arj,kj->ark", g.astype(np.float64), A).astype(np.float32)
    return g


def _fan_angles_inv(fa, val):
    """Fractional column index of the angle ``val`` among the increasing ``fa``
    (piecewise linear, clamped to [0, n − 1])."""
    n = fa.size
    if val <= fa[0]:
        return 0.0
    if val >= fa[-1]:
        return float(n - 1)
    return float(np.interp(val, fa, np.arange(n, dtype=np.float64)))


def _angles_index(angles, beta):
    """Fractional view index of angle(s) beta (upstream's ``phi_inv``: linear between
    views, clamped to the first / last view)."""
    a = np.asarray(angles, dtype=np.float64)
    idx = np.arange(a.size, dtype=np.float64)
    if a[-1] < a[0]:
        a, idx = a[::-1], idx[::-1]
    return np.interp(beta, a, idx)


def _fan_to_parallel_plan(geometry, na, nc, order, name, stacklevel):
    """What fan→parallel rebinning of ``na`` views × ``nc`` columns needs (upstream's
    ``src/rebin.cpp``): interpolation order, angular step and start (radians), whether
    views wrap around (full scans) or are cut to the fully measured ones (``n_new``
    views from ``phi0_new``), the orbit radius R = √(sod² + τ²), the fan-angle column
    coordinates ``u`` and the parallel column spacing ``T_s`` and start ``s0``."""
    check_no_source_shifts(geometry, "rebinning")
    d = geometry.detector
    order = _order(order)
    phis = geometry.angles
    if na >= 2:
        steps = np.diff(phis)
        equi = np.allclose(steps, steps[0], rtol=1e-3, atol=1e-7)
    else:
        equi = True
    if not equi and order > 2:
        warnings.warn("non-equispaced angles can only be rebinned with linear interpolation; "
                      "using order 2", RuntimeWarning, stacklevel=stacklevel)
        order = 2
    T_phi = float((phis[-1] - phis[0]) / (na - 1)) if na >= 2 else 0.0
    if T_phi == 0.0:
        raise ValueError(f"{name} needs at least two distinct view angles")
    phi0 = float(phis[0])
    helical = isinstance(geometry, ConeBeam) and geometry.is_helical
    rng = angular_range_degrees(phis)
    wrap = not helical and not rng < min(359.0, 360.0 - abs(math.degrees(T_phi)))

    tau, R0 = geometry.tau, geometry.sod
    R = orbit_radius(geometry)
    atan_A = math.atan(2.0 * tau * R0 / (R0 * R0 - tau * tau))
    asin_tau = math.asin(tau / R)
    sdd = geometry.sdd
    cols = np.arange(nc, dtype=np.float64)
    if d.curved:
        du = math.atan(d.pixel_width / sdd)
        u = (cols - d.center_col) * du
    else:
        u = (cols - d.center_col) * d.pixel_width / sdd
    T_u, u0 = u[1] - u[0], u[0]
    T_s = d.pixel_width * R / sdd
    s0 = -d.center_col * T_s

    n_new, phi0_new = na, phi0
    if not wrap:
        fan_lo, fan_hi = (u[0], u[-1]) if d.curved else (math.atan(u[0]), math.atan(u[-1]))
        if T_phi >= 0:
            start, end = phis[0] - fan_lo, phis[-1] - fan_hi
        else:
            start, end = phis[0] - fan_hi, phis[-1] - fan_lo
        # upstream keeps these two in float32
        start, end = float(np.float32(start)), float(np.float32(end))
        i0 = math.ceil((start - phi0) / T_phi)
        i1 = math.floor((end - phi0) / T_phi)
        phi0_new = i0 * T_phi + phi0
        n_new = i1 - i0 + 1
        if n_new <= 0:
            raise ValueError("the scan is too short to rebin: no parallel view has all its "
                             "rays measured")
    beta_min = min(phi0, T_phi * (na - 1) + phi0)
    beta_max = max(phi0, T_phi * (na - 1) + phi0)
    return SimpleNamespace(order=order, phis=phis, T_phi=T_phi, phi0=phi0, wrap=wrap, R=R,
                           atan_A=atan_A, asin_tau=asin_tau, sdd=sdd, cols=cols, u=u, T_u=T_u,
                           u0=u0, T_s=T_s, s0=s0, n_new=n_new, phi0_new=phi0_new,
                           beta_min=beta_min, beta_max=beta_max)


def orbit_radius(geometry) -> float:
    """R = √(sod² + τ²), mm: the radius of the circle the rebinned rays' sources lie on
    (LEAP keeps it as the sod of rebinned data)."""
    return math.hypot(geometry.sod, geometry.tau)


def rebin_parallel(geometry, g: np.ndarray, order: int = 6):
    """Rebin fan-beam data to parallel-beam or cone-beam data to cone-parallel, in place.

    Parameters
    ----------
    geometry : FanBeam or ConeBeam (flat or curved, circular or helical, untilted)
    g : (num_angles, num_rows, num_cols) float32
        Overwritten with the rebinned data. Scans shorter than a full turn (and helical
        scans) lose the views whose rays were not all measured: the first
        ``new.num_angles`` views hold the result, the rest are zeroed.
    order : int
        Lagrange interpolation order (even, 2..6; odd values are rounded up).

    Returns
    -------
    new_geometry : ParallelBeam (from fan) or ConeParallelBeam (from cone), with
        ``sod`` → √(sod² + τ²), τ → 0, ``pixel_width`` → pixel_width·√(sod² + τ²)/sdd (the
        column spacing at the axis), a flat detector and the same ``center_col``.
    g : the rebinned array (the same object).
    """
    if not isinstance(geometry, (FanBeam, ConeBeam)):
        raise ValueError("rebin_parallel needs fan-beam or cone-beam data, got "
                         f"{type(geometry).__name__}")
    if isinstance(geometry, ConeBeam) and geometry.tilt != 0.0:
        raise ValueError("rebin_parallel does not handle a tilted detector (tiltAngle != 0)")
    _check_projections(geometry, g)
    d = geometry.detector
    if d.num_cols <= 2:
        raise ValueError("rebin_parallel needs at least three detector columns")
    na, nr, nc = g.shape
    p = _fan_to_parallel_plan(geometry, na, nc, order, "rebin_parallel", 4)
    order, phis, T_phi, phi0, wrap = p.order, p.phis, p.T_phi, p.phi0, p.wrap
    R, atan_A, asin_tau, sdd, cols = p.R, p.atan_A, p.asin_tau, p.sdd, p.cols
    u, T_u, u0, T_s, s0 = p.u, p.T_u, p.u0, p.T_s, p.s0
    n_new, phi0_new, beta_min, beta_max = p.n_new, p.phi0_new, p.beta_min, p.beta_max

    work = g.astype(np.float64)
    if isinstance(geometry, ConeBeam) and not d.curved and nr > 1:
        # Rows: slope per unit in-plane length, v·√(1 + u²) on the flat detector.
        v = (np.arange(nr) - d.center_row) * d.pixel_height / sdd
        T_v, v0 = v[1] - v[0], v[0]
        for k in range(nc):
            pos = (v * math.sqrt(1.0 + u[k] * u[k]) - v0) / T_v
            A = _stencil_matrix(pos, nr, order, n_bound=nc, closest_fallback=True, clamp=True)
            work[:, :, k] = work[:, :, k] @ A.T

    # Fan angle and view of every (new view, column): the same for every row.
    phi = phi0_new + T_phi * np.arange(n_new, dtype=np.float64)[:, None]
    s = s0 + T_s * cols[None, :]
    alpha = np.broadcast_to(np.arcsin(s / R) + asin_tau, (n_new, nc)).copy()
    alpha, beta = source_views(alpha, phi + alpha, wrap, atan_A, beta_min, beta_max)
    lateral = alpha if d.curved else np.tan(alpha)
    view_pos = _angles_index(phis, beta.astype(np.float32).astype(np.float64))
    col_pos = (lateral - u0) / T_u
    work_t = np.ascontiguousarray(work.transpose(0, 2, 1))          # (na, nc, nr)
    out = gather_view_column(work_t, view_pos, col_pos, order)
    out = out.transpose(0, 2, 1)
    g[:n_new] = out.astype(np.float32)
    if n_new < na:
        g[n_new:] = 0.0
        warnings.warn(f"rebin_parallel: the number of views drops from {na} to {n_new}",
                      RuntimeWarning, stacklevel=3)

    det = d.with_changes(pixel_width=T_s, curved=False)
    new_angles = (phi0_new + T_phi * np.arange(n_new)) if n_new != na or phi0_new != phi0 \
        else geometry.angles
    if isinstance(geometry, FanBeam):
        return ParallelBeam(detector=det, angles=new_angles), g
    return ConeParallelBeam(detector=det, angles=new_angles, sod=R, sdd=sdd, tau=0.0,
                            helical_pitch=geometry.helical_pitch,
                            helical_mid_angle=geometry.helical_mid_angle), g


def rebin_parallel_sinogram(geometry, g: np.ndarray, order: int = 6, row: int = -1,
                            offset_scan: bool = False):
    """One detector row of fan- or cone-beam data rebinned to a parallel-beam sinogram
    (upstream's ``rebin_parallel_sinogram``, used for geometric calibration); ``g`` and
    the geometry are not changed.

    Parameters
    ----------
    geometry : FanBeam or ConeBeam (flat or curved, circular or helical, tilted or not)
    g : (num_angles, num_rows, num_cols) float32
    order : int
        Lagrange interpolation order (even, 2..6; odd values are rounded up).
    row : int
        The detector row; out of [0, num_rows) (e.g. −1): the row nearest ``center_row``.
        Flat cone-beam data are first resampled along the columns of the detector to the
        cone-parallel row coordinate v·√(1 + u²) (and, for a tilted detector, to the
        untilted row), as :func:`rebin_parallel` does, at this row.
    offset_scan : bool
        Offset-detector full scan (``set_offsetScan(True)``): the missing half of each
        parallel view is taken from the conjugate view 180° later, giving views over
        180° of a detector twice as wide, centred on the axis.

    Returns
    -------
    sinogram : float32, (num_angles, num_cols) — parallel view φ_i = φ_0 + i·T_φ at
        lateral positions s_k = (k − center_col)·pixel_width·R/sdd, R = √(sod² + τ²);
        short and helical scans keep only the views whose rays were all measured (the
        first rows, the others zero, as upstream) — or, for an offset scan, float32
        (num_angles // 2, 2·num_cols) at s_k = (k − (2·num_cols − 1)/2)·pixel_width·R/sdd.
    """
    if not isinstance(geometry, (FanBeam, ConeBeam)):
        raise ValueError("rebin_parallel_sinogram needs fan-beam or cone-beam data, got "
                         f"{type(geometry).__name__}")
    if not isinstance(g, np.ndarray) or g.dtype != np.float32:
        raise TypeError("g must be a float32 numpy.ndarray of shape "
                        f"{geometry.projection_shape}")
    if g.shape != geometry.projection_shape:
        raise ValueError(f"g must have shape {geometry.projection_shape}, got {g.shape}")
    if isinstance(row, bool) or int(row) != row:
        raise TypeError(f"iRow must be an integer, got {row!r}")
    d = geometry.detector
    if d.num_cols <= 2:
        raise ValueError("rebin_parallel_sinogram needs at least three detector columns")
    na, nr, nc = g.shape
    row = int(row)
    if not 0 <= row < nr:
        row = max(0, min(nr - 1, math.floor(0.5 + d.center_row)))
    p = _fan_to_parallel_plan(geometry, na, nc, order, "rebin_parallel_sinogram", 4)
    n_add, pad_left = 0, False
    if offset_scan and not (isinstance(geometry, ConeBeam) and geometry.is_helical):
        from .weights import offset_scan_layout
        _, first, n_add = offset_scan_layout(geometry)
        pad_left = first > 0

    if isinstance(geometry, ConeBeam) and not d.curved and nr > 1:
        # Cone-parallel rows: at column k the wanted row coordinate is the (untilted)
        # row's v times √(1 + u_k²); interpolate it along each detector column.
        T_v = d.pixel_height / p.sdd
        v_row = (row - d.center_row) * T_v
        v0 = -d.center_row * T_v
        u_c = p.T_u * (p.cols - 0.5 * (nc - 1))
        v_c = T_v * (row - 0.5 * (nr - 1))
        ct, st = math.cos(geometry.tilt), math.sin(geometry.tilt)
        v_new = (-st * u_c + ct * v_c + v_row - v_c) * np.sqrt(1.0 + p.u * p.u)
        first, _, W = _stencils((v_new - v0) / T_v, nr, p.order, n_bound=nc,
                                closest_fallback=True)
        sino = np.zeros((na, nc))
        for l in range(6):
            rows = np.clip(first + l, 0, nr - 1)    # upstream clamps stencil rows
            sino += W[:, l] * g[:, rows, np.arange(nc)].astype(np.float64)
    else:
        sino = g[:, row, :].astype(np.float64)

    n_views, n_s, s0 = p.n_new, nc, p.s0
    if n_add > 0:
        n_views, n_s = na // 2, 2 * nc
        s0 = -0.5 * (n_s - 1) * p.T_s
    phi = p.phi0_new + p.T_phi * np.arange(n_views, dtype=np.float64)[:, None]
    s = np.broadcast_to(s0 + p.T_s * np.arange(n_s, dtype=np.float64)[None, :], (n_views, n_s))
    alpha = np.arcsin(s / p.R) + p.asin_tau
    beta = phi + alpha
    if n_add > 0:
        # Rays off the measured side: the same line seen from the view 180° later.
        lateral = alpha if d.curved else np.tan(alpha)
        missing = (lateral < p.u0) if pad_left else (lateral > p.u[-1])
        alpha_c = np.arcsin(-s / p.R) + p.asin_tau
        alpha = np.where(missing, alpha_c, alpha)
        beta = np.where(missing, phi + alpha_c + math.pi, beta)
    alpha, beta = source_views(alpha, beta, p.wrap, p.atan_A, p.beta_min, p.beta_max)
    lateral = alpha if d.curved else np.tan(alpha)
    view_pos = _angles_index(p.phis, beta.astype(np.float32).astype(np.float64))
    col_pos = (lateral - p.u0) / p.T_u
    vals = gather_view_column(sino, view_pos, col_pos, p.order)
    if n_add > 0:
        return vals.astype(np.float32)
    out = np.zeros((na, nc), dtype=np.float32)
    out[:n_views] = vals
    if n_views < na:
        warnings.warn(f"rebin_parallel_sinogram: only the first {n_views} of {na} views are "
                      "fully measured; the other rows of the sinogram are zero",
                      RuntimeWarning, stacklevel=3)
    return out
