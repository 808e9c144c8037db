"""Filtered back-projection through trainable geometry parameters (issue 35).

:func:`fbp_parametric` is what :class:`leap.torch.FBP` and :meth:`leap.torch.Projector.fbp`
compute once :meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters` have been
called: leap's FBP (:mod:`leap.reconstruction.fbp`) composed in torch, so that autograd
differentiates it
in the data and in the parameters θ::

    FBP(θ) g = Bᵀ(θ) [ post(θ) · c(θ) · R( pre(θ) · g ) ]

* ``pre``: the view weights (non-equispaced steps, ½ redundancy of full scans), Parker
  weights of short scans and the cone beam's cosine weight, with the formulas of
  :mod:`leap.reconstruction.weights` (``view_weights``, ``redundancy``, ``parker_weights``,
  ``cosine_weights``) evaluated in torch (float64) on the parameter tensors; ``post`` the
  cone beam's post-weight. Which formula applies (full or short scan) is decided at the
  parameters' current values, as leap decides it.
* ``R``: the ramp filter along detector rows (linear convolution, zero padding, the
  truncated-scan edge extension), a linear map in torch whose gradient is its transpose.
  Its response is leap's (:func:`leap.reconstruction.fbp.geometry_ramp_response`, filter
  order, low-pass
  and window) at the facade's geometry; the geometry enters it only through the sample
  spacing (the response is ∝ 1/spacing), carried with ``fbp_scale`` in the scalar ``c``.
* ``Bᵀ(θ)``: the matched back-projection through the parameters, differentiable in them:
  cone beams by their modular form (:func:`leap.torch.modular_backproject`) times the
  field-of-view mask of leap's cone kernels (at the parameters' values, held fixed for
  the gradient; ``leap.torch._trainable.cone_operators``, which the projector uses too),
  parallel beams by ``axial_apply`` (``leap.torch._axial_params``), fan
  beams by the axial kernels with FBP's distance weight sod/(sod − x·θ), whose geometry
  VJP (``leap.kernels.cpu.axial_view_vjp``, ``dist_sod``; on CUDA tensors
  ``leap.kernels.cuda.axial_view_vjp``) differentiates the weight too
  (θ from the column axis; with ``shifts`` the weight stays the unshifted scan's).

The adjoint ``FBP(θ)ᵀ f = pre · c · Rᵀ(post · P(θ) f)`` (``FBP(forward_FBP=False)``) is
composed the same way from the projection. With the parameters at the facade's values
both give ``leapct.FBP`` / ``leapct.FBP_adjoint`` (float32 rounding), except for tilted
cone beams: FBP(θ) filters along the tilted detector rows (``leap.reconstruction.fbp.fbp`` with
``tilt_resampling=False``, upstream LEAP's GPU model), where the facade's FBP resamples
the views upright first (:mod:`leap.reconstruction.tilt_resampling`; the resampling is not yet
differentiable in the tilt).

Covered: parallel beams, flat-detector fan beams and flat-detector cone beams (circular:
``helicalPitch`` 0; any ``tiltAngle``; full and short scans); per-view ``shifts`` move
the object, and FBP(θ) then reconstructs it where it was (the projection-domain weights
do not depend on them). Refused with a ValueError: curved detectors (a curved fan beam's
ramp filter depends on sdd beyond a scale), helical, cone-parallel and modular
geometries, offset-detector scans (``set_offsetScan``), and facades with an attenuation
map, an axis of symmetry or a volume mask. ``helicalPitch`` must be 0 and
gets no gradient from FBP (a helical scan's FBP is another algorithm, with other weights).
"""
from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import torch

from ..reconstruction.fbp import geometry_ramp_response
from ..kernels.plan import make_plan
from ..reconstruction.weights import FULL_SCAN_DEGREES, angular_range_degrees
from ._axial_params import axial_apply, axial_views, core_geometry, plan_vjp, run_plan
from ._operator import CTOperator, check_input
from ._trainable import cone_operators
from ._modular_vjp import _as_array
from .geometry import GeometryOperator

__all__ = ["fbp_parametric"]

_F64 = torch.float64


# --------------------------------------------------------------------- weights
def redundancy(n, step):
    """:func:`leap.reconstruction.weights.redundancy` as a torch function of the (0-d) angular step:
    how often each of ``n`` views at angles ``k·step`` is measured, (n,) float64.

    The term of views k and k' depends only on Δ = k' − k, so it is evaluated once per Δ
    (2n − 1 values) and summed over the Δ that keep k' among the views."""
    a_step = step.abs()
    delta = torch.arange(-(n - 1), n, dtype=_F64, device=step.device)
    d = delta * step
    off = torch.atan2(torch.sin(d), torch.cos(d)).abs()
    near = off.detach() < a_step.detach()
    terms = (1.0 - off / a_step)[near]
    k = torch.arange(n, device=step.device)[:, None]
    kp = k + delta[near].long()[None, :]
    inside = ((kp >= 0) & (kp < n)).to(_F64)
    return inside @ terms


def view_weights(psi, full):
    """:func:`leap.reconstruction.weights.view_weights` (not helical) of view angles ψ (radians, a
    tensor), (na, 1, 1); ``full``: the scan covers 360° (decided by the caller)."""
    n = psi.shape[0]
    T = (psi[-1] - psi[0]) / (n - 1)
    steps = torch.diff(psi).abs()
    mid = 0.5 * (steps[:-1] + steps[1:])
    w = torch.cat([steps[:1], mid, steps[-1:]]) / T.abs()
    if full:
        w = w * (0.5 / redundancy(n, T))
    return w[:, None, None]


def _safe(x):
    """x where it is nonzero, else 1: a denominator for a branch of torch.where that is
    not taken there (the branch's NaN would reach the gradient)."""
    return torch.where(x == 0, torch.ones_like(x), x)


def parker_weights(psi, fan=None, gamma=None):
    """:func:`leap.reconstruction.weights.parker_weights` of view angles ψ (radians, a
    tensor): parallel
    beams when ``fan`` is None, (na, 1, 1); else divergent beams with the columns' fan
    angles ``fan`` (nc,) and the central ray's ``gamma`` (0-d), (na, 1, nc). None for
    full scans and scans too short for the weights (as leap, which warns for those)."""
    angles = psi.detach().cpu().numpy()
    rng_deg = angular_range_degrees(angles)
    n = psi.shape[0]
    if n < 2 or rng_deg >= FULL_SCAN_DEGREES:
        return None
    rng = math.radians(rng_deg)
    # The range as a tensor, for the gradient (leap's angular_span, in radians).
    rng_t = ((psi[-1] - psi[0]).abs() + 0.5 * (psi[-1] - psi[-2]).abs()
             + 0.5 * (psi[1] - psi[0]).abs())
    T = (psi[-1] - psi[0]) / (n - 1)
    aT = T.abs()
    if fan is None:
        if rng <= math.pi + 1e-9:
            return None
        k = torch.arange(n, dtype=_F64, device=psi.device)
        v1 = aT * k
        v1 = torch.where(v1 > math.pi, v1 - math.pi, v1)[:, None]
        v2 = (aT * k)[None, :]
        off = torch.minimum(torch.minimum((v1 - v2).abs(), (v1 - (v2 - math.pi)).abs()),
                            ((v1 - math.pi) - v2).abs())
        total = torch.where(off < aT, 1.0 - off / aT, torch.zeros_like(off)).sum(dim=1)
        return (1.0 / total)[:, None, None]
    f, g = fan.detach(), float(gamma.detach())
    alpha_max = float(torch.minimum((f[0] - g).abs(), (f[-1] - g).abs()))
    if rng < math.pi + 2.0 * alpha_max:
        warnings.warn(f"the scan covers {rng_deg:.2f} degrees, less than a short scan "
                      f"(180 + fan angle = {math.degrees(math.pi + 2 * alpha_max):.2f} "
                      "degrees): no short-scan weighting is applied", RuntimeWarning,
                      stacklevel=4)
        return None
    thres = torch.clamp(0.5 * (rng_t - math.pi), min=0.0)
    beta = (psi - psi[0]).abs()[:, None]
    alpha = (1.0 if float(T.detach()) >= 0 else -1.0) * fan[None, :] - gamma
    rise = torch.sin(0.25 * math.pi * beta / _safe(thres + alpha)) ** 2
    fall = torch.cos(0.25 * math.pi * (beta - 2.0 * alpha - math.pi) / _safe(thres - alpha)) ** 2
    one, zero = torch.ones_like(rise), torch.zeros_like(rise)
    w = torch.where(beta < 2.0 * (thres + alpha), rise,
                    torch.where(beta < math.pi + 2.0 * alpha, one,
                                torch.where(beta < math.pi + 2.0 * thres, fall, zero)))
    return torch.clamp(w, min=1e-8)[:, None, :]


def cone_weights(params, g):
    """A flat cone (or, without ``centerRow``, fan) beam's cosine weights from the
    parameter tensors (:func:`leap.reconstruction.weights.cosine_weights`): ``(pre, post)``
    (1, nr | 1,
    nc), with ``u = (i − centerCol)·pw/sdd``, ``v = (j − centerRow)·ph/sdd`` (fan: 0); and
    the columns' fan angles (nc,) and the central ray's angle (0-d) of the Parker weights
    (``leap.reconstruction.weights._fan_angles``). ``g``: the facade's geometry dictionary (detector
    size and pitch)."""
    dev = params["sdd"].device
    sod, sdd, tau = (params[k].to(_F64) for k in ("sod", "sdd", "tau"))
    i = torch.arange(g["numCols"], dtype=_F64, device=dev)
    u = ((i - params["centerCol"]) * g["pixelWidth"] / sdd)[None, None, :]
    r2 = u * u
    if "centerRow" in params:
        j = torch.arange(g["numRows"], dtype=_F64, device=dev)
        v = ((j - params["centerRow"]) * g["pixelHeight"] / sdd)[None, :, None]
        r2 = r2 + v * v
    w = 1.0 / torch.sqrt(1.0 + r2)
    gamma = torch.asin(tau / torch.sqrt(sod * sod + tau * tau))
    return w * (1.0 + (tau / sod) * u), w, torch.atan(u.reshape(-1)), gamma


# ----------------------------------------------------------------- the filter
def _extension(nc, n, ne, device):
    """The padded row's source columns (n,) (−1: zero) of leap's filter: the row, then
    ``ne`` copies of its last value and, at the end, ``ne`` of its first."""
    idx = np.full(n, -1, dtype=np.int64)
    idx[:nc] = np.arange(nc)
    if ne:
        idx[nc:min(nc + ne, n)] = nc - 1
        idx[n - ne:] = 0
    keep = np.flatnonzero(idx >= 0)
    return (torch.as_tensor(keep, device=device), torch.as_tensor(idx[keep], device=device))


def ramp_filter(x, H, ne=0, transpose=False):
    """Rows of x (…, nc) convolved with the real response H (n // 2 + 1,) as
    :func:`leap.reconstruction.filters.filter_rows` does (zero padding to n, ``ne`` extrapolated
    samples at each end), or the transpose of that map (``transpose``)."""
    nc = x.shape[-1]
    n = 2 * (H.shape[0] - 1)
    keep, src = _extension(nc, n, ne, x.device)

    def convolve(row):
        return torch.fft.irfft(torch.fft.rfft(row, n=n) * H, n=n)

    if not transpose:
        padded = x.new_zeros(*x.shape[:-1], n)
        padded = padded.index_copy(-1, keep, x.index_select(-1, src))
        return convolve(padded)[..., :nc]
    y = convolve(torch.nn.functional.pad(x, (0, n - nc)))
    return x.new_zeros(x.shape).index_add(-1, src, y.index_select(-1, keep))


# ------------------------------------------------------------------ the stages
def _check(leapct, params):
    """'parallel', 'fan' or 'cone' for what this module covers; ValueError for the rest."""
    system = leapct.system
    if system.model is not None or system.mask is not None:
        raise ValueError("FBP through geometry_parameters() reconstructs the plain X-ray "
                         "transform: clear the attenuation map / axis of symmetry and the "
                         "volume mask")
    if system.fbp_options.offset_scan:
        raise ValueError("FBP through geometry_parameters() does not cover offset-detector "
                         "scans (set_offsetScan(False), or clear_geometry_parameters())")
    kind = leapct.get_geometry()
    if kind == "PARALLEL" and "sod" not in params:
        return "parallel"
    if kind == "FAN" and "sod" in params and leapct.get_detectorType() != "curved":
        return "fan"
    if kind == "CONE" and "tiltAngle" in params and leapct.get_detectorType() != "curved":
        if float(params["helicalPitch"].detach()) != 0.0:
            raise ValueError("FBP through geometry_parameters() covers circular cone-beam "
                             "scans; helicalPitch is "
                             f"{float(params['helicalPitch'].detach()):.6g}, not 0")
        return "cone"
    what = f"a {kind.lower()} beam"
    if kind in ("CONE", "FAN"):
        what += f" with a {leapct.get_detectorType()} detector"
    if kind == "FAN":
        what += " (its ramp filter's response depends on sdd beyond a scale)"
    raise ValueError("FBP through geometry_parameters() covers parallel beams and flat-"
                     f"detector fan and circular cone beams; this module has {what}. Use "
                     "clear_geometry_parameters() for the facade's FBP, or the Projector's "
                     "(back-)projection through the parameters")


def _stages(leapct, params, kind, device):
    """(pre, post, c, H): the weights (float64, broadcasting against (na, nr, nc); post
    None for parallel beams), the scalar scale and the unscaled ramp response (float64
    tensors on ``device``)."""
    system = leapct.system
    geometry, volume, o = system.geometry, system.volume, system.fbp_options
    g = leapct._need_geometry()
    psi = params["phis"].to(_F64) * (np.pi / 180.0)        # np.deg2rad's arithmetic
    n = psi.shape[0]
    if n < 2:
        raise ValueError("filtered back-projection needs at least two views")
    full = angular_range_degrees(psi.detach().cpu().numpy()) >= FULL_SCAN_DEGREES
    pre = view_weights(psi, full)
    T = ((psi[-1] - psi[0]) / (n - 1)).abs()
    pw, ph = g["pixelWidth"], g["pixelHeight"]
    base = T * pw * ph / (2.0 * math.pi * volume.voxel_width ** 2 * volume.voxel_height)
    post = None
    if kind == "parallel":
        parker = parker_weights(psi)
        c = base                              # spacing pw: the response's own
    else:
        cosine, post, fan, gamma = cone_weights(params, g)
        parker = parker_weights(psi, fan, gamma)
        pre = pre * cosine
        # fbp_scale is base·M² for cone beams, base·M for fan beams (M = sod/sdd); the
        # response is ∝ 1/spacing, spacing pw·M, and H below is the facade's, for its
        # own M0: c = fbp_scale·M0/M.
        m = params["sod"].to(_F64) / params["sdd"].to(_F64)
        c = base * (m if kind == "cone" else 1.0) * (geometry.sod / geometry.sdd)
    if parker is not None:
        pre = pre * parker
    H = geometry_ramp_response(geometry, o.ramp_filter, o.lowpass, o.window)
    to = dict(device=device)
    return (pre.to(**to), None if post is None else post.to(**to), c.to(**to),
            torch.as_tensor(H, dtype=_F64, **to))


class _DistanceWeighted:
    """A fan beam's FBP back-projection, weighted by sod/(sod − x·θ) (and its transpose,
    the weighted projection), for :class:`leap.torch.geometry.GeometryOperator`: the CPU
    axial kernels on a plan with the per-view values the tensors give (CUDA tensors are
    computed on the host) and the geometry VJP with the weight
    (``leap.torch._axial_params.plan_vjp``: on CUDA tensors the CUDA kernel,
    ``leap.kernels.cuda.axial_view_vjp``, else the CPU one,
    ``leap.kernels.cpu.axial_view_vjp``). The operator's fourth tensor is ``sdd`` per
    view followed by the weight's sod (its gradient comes back the same way)."""

    def __init__(self, system, col_dir, source_xy, center_col):
        self.system = system
        plan = make_plan(system.geometry, system.volume, fov_radius=system.fov_radius,
                         fan_distance_weight=True)
        views = plan.views._replace(col_dir=_as_array(col_dir),
                                    source_xy=_as_array(source_xy))
        self.plan = dataclasses.replace(plan, views=views, center_cols=_as_array(center_col))

    def apply(self, kind, x):
        return run_plan(self.plan, self.system, kind, x)

    def vjp(self, f, gbar, tensors, needs):
        d_col, d_src, d_cc, d_sdd, d_sod = plan_vjp(self.plan, self.system, f, gbar)
        grads = (d_col, d_src, d_cc, np.append(d_sdd, d_sod))
        return [torch.as_tensor(g, dtype=t.dtype, device=t.device) if need else None
                for g, t, need in zip(grads, tensors, needs)]


def _backend(leapct, params, kind, system):
    """(project, backproject): functions of a batch (b, …) through the parameters."""
    p = dict(params.items())
    if kind == "parallel":
        return (lambda f: axial_apply(f, p, system, "project"),
                lambda q: axial_apply(q, p, system, "backproject"))
    if kind == "fan":
        det = system.geometry.detector
        col_dir, source_xy, center_col, sdd = axial_views(p, fan=True,
                                                          pixel_width=det.pixel_width)
        sdd_sod = torch.cat([sdd, p["sod"].to(_F64).reshape(1)])
        op = _DistanceWeighted(system.with_changes(geometry=core_geometry(p, det, True)),
                               col_dir, source_xy, center_col)
        tensors = (col_dir, source_xy, center_col, sdd_sod)
        return (lambda f: GeometryOperator.apply(f, *tensors, op, "project"),
                lambda q: GeometryOperator.apply(q, *tensors, op, "backproject"))
    # FBP is defined for circular scans (helicalPitch 0, checked): the pitch is held
    # there and gets no gradient (a helical scan's FBP is another algorithm).
    p["helicalPitch"] = p["helicalPitch"].detach()
    return cone_operators(p, leapct, system)


def fbp_parametric(leapct, input, params, adjoint=False):
    """FBP (or, with ``adjoint``, its transpose) of ``input`` through the geometry
    ``params`` (:meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters` of
    the facade ``leapct``), differentiable in ``input`` and in the parameters.

    ``input``: projections (…, numAngles, numRows, numCols) (volumes (…, numZ, numY,
    numX) for the adjoint), any leading batch dimensions. The filtering runs in the
    input's dtype (float32: as leap; float64: in float64), the (back-)projection in
    float32 (the kernels' precision), the result in the input's dtype.
    """
    kind = _check(leapct, params)
    system = leapct.system
    op = CTOperator(kind="fbp_adjoint" if adjoint else "fbp", system=system)
    check_input(input, op)
    dt = input.dtype
    pre, post, c, H = _stages(leapct, params, kind, input.device)
    ne = 0
    if system.fbp_options.truncated_scan:
        n = 2 * (H.shape[0] - 1)
        ne = min(n - system.geometry.detector.num_cols - 1, 100)
    H, c = H.to(dt), c.to(dt)
    project, backproject = _backend(leapct, params, kind, system)
    x = input.reshape(-1, *op.in_shape)
    if not adjoint:
        q = ramp_filter(x * pre.to(dt), H, ne) * c
        if post is not None:
            q = q * post.to(dt)
        out = backproject(q)
    else:
        q = project(x)
        if post is not None:
            q = q * post.to(dt)
        out = ramp_filter(q, H, ne, transpose=True) * c * pre.to(dt)
    return out.reshape(*input.shape[:-3], *op.out_shape)
