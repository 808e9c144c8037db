"""(Regularised, weighted) least squares by preconditioned conjugate gradients:
LS, WLS, RLS and RWLS."""
from __future__ import annotations

import math
import numbers

from ._array import (array_namespace, as_float32_weights, clip_negative, is_all_zeros,
                     safe_reciprocal, vdot)
from ._common import check_count, check_inputs, is_active, reg_quad_form
from ._monitor import IterationMonitor

PRECONDITIONERS = (None, "SQS", "RAMP", "SARR")

# Polak–Ribière CG restarts from the preconditioned gradient this often (as LEAP).
CG_RESTART = 50


def ramp_filter_slices(u, out=None, n=None):
    """A 2-D ramp filter ``|ω|`` applied to every slice u[k] (zero-padded FFT of size ``n``,
    default twice the larger side): an approximation of (PᵀP)⁻¹ up to scale, used as
    RWLS's 'RAMP' preconditioner and by ``rampFilterVolume``.

    With twice-size zero padding the filter is symmetric positive definite on the
    volume (a padded image with a zero border cannot be constant), though weak on the
    slowest variations.
    """
    xp = array_namespace(u, out)
    nz, ny, nx = u.shape
    n = 2 * max(ny, nx) if n is None else int(n)
    wy = 2.0 * math.pi * xp.fft.fftfreq(n)[:, None]
    wx = 2.0 * math.pi * xp.fft.fftfreq(n)[None, :]
    hy, hx = 2.0 * xp.abs(xp.sin(0.5 * wy)), 2.0 * xp.abs(xp.sin(0.5 * wx))
    H = xp.sqrt(hx * hx + hy * hy - (0.5 * hx * hy) ** 2)
    U = xp.fft.rfft2(u, s=(n, n), axes=(1, 2))
    res = xp.fft.irfft2(U * H[:, : n // 2 + 1], s=(n, n), axes=(1, 2))[:, :ny, :nx]
    res = res.astype(xp.float32)
    if out is None:
        return xp.ascontiguousarray(res)
    out[...] = res
    return out


def rwls(op, g, f, num_iter, *, regularizer=None, weights=None, preconditioner=None,
         nonnegative=True, progress=False, callback=None, name="RWLS"):
    """Minimise ``½ (P f − g)ᵀ W (P f − g) + R(f)`` by preconditioned conjugate gradients
    (Polak–Ribière, restarted every 50 iterations or when not a descent direction),
    updating ``f`` in place.

    Parameters
    ----------
    op : CTOperator (or any operator with ``forward``/``adjoint``)
    g : projections, float32, ``op.range_shape``
    f : volume, float32, ``op.domain_shape``; the starting point. A non-zero start is
        first scaled by ``<g, P f>/<P f, P f>`` (as LEAP).
    regularizer : object with ``cost``, ``gradient``, ``quad_form`` (or ``quadForm``),
        e.g. :class:`leap.algorithms.regularization.TotalVariation` or a ``filterSequence``.
    weights : array of ``g``'s shape, a scalar, None (W = 1), or a callable ``W(r)``: a
        symmetric positive semi-definite linear map of projections (e.g. RDLS's −Δ).
    preconditioner : None, 'SQS' (separable quadratic surrogate ``1/(PᵀWP1)``), 'RAMP'
        (2-D ramp filter of each slice) or 'SARR' (FBP of the weighted residual;
        needs ``op.fbp``).
    nonnegative : set negative voxels to 0 after each step (then P f is recomputed).

    Each step along the CG direction d is ``<d, ∇C> / (‖P d‖²_W + R''-surrogate(d))``:
    the exact line minimiser for the quadratic data term and the minimiser of a
    majorising surrogate for R, so without ``nonnegative`` the cost never increases.

    Data fit passed to ``callback``: ``½ (P f − g)ᵀ W (P f − g)`` at the new ``f`` (the
    regulariser's cost is ``regularizer.cost(f)``).

    Returns ``f``.
    """
    f_in = f
    W_map = weights if callable(weights) else None
    if W_map is not None:
        weights = None
        if preconditioner is not None:
            raise ValueError("preconditioners need diagonal weights; with a weighting "
                             "operator use preconditioner=None")
    has_array_weights = hasattr(weights, "shape") and getattr(weights, "ndim", 0) > 0
    if weights is not None and W_map is None and not has_array_weights \
            and not isinstance(weights, numbers.Real) and getattr(weights, "ndim", None) != 0:
        raise TypeError(f"weights (W) must be None, a number, an array of the projections' "
                        f"shape {tuple(op.range_shape)} or a callable W(r), "
                        f"got {type(weights).__name__}")
    xp, op, g, f, _, W_arr = check_inputs(op, g, f, None,
                                          weights if has_array_weights else None,
                                          extra_names=("weights (W)",))
    num_iter = check_count("num_iter", num_iter)
    if isinstance(preconditioner, bool):
        preconditioner = "SQS" if preconditioner else None
    if isinstance(preconditioner, str):
        preconditioner = preconditioner.upper()
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {preconditioner!r}")
    if preconditioner == "SARR" and not hasattr(op, "fbp"):
        raise ValueError("the 'SARR' preconditioner needs an operator with an fbp method")
    W = None
    if weights is not None:
        if has_array_weights:
            if tuple(W_arr.shape) != tuple(op.range_shape):
                raise ValueError(f"weights must have the projections' shape "
                                 f"{tuple(op.range_shape)}, got {tuple(W_arr.shape)}")
            W = as_float32_weights("weights (W)", W_arr, xp)
        else:
            w = float(weights)
            W = None if w == 1.0 else w
    reg = regularizer if is_active(regularizer) else None

    # Starting point, its projection and residual r = P f − g.
    if is_all_zeros(f):
        Pf = xp.zeros(op.range_shape, dtype=xp.float32)
    else:
        if nonnegative:
            clip_negative(f)
        Pf = op.forward(f)
        pp, gp = vdot(Pf, Pf), vdot(g, Pf)
        if pp > 0 and gp > 0:
            f *= gp / pp
            Pf *= gp / pp
    r = Pf - g

    def weighted(x):
        if W_map is not None:
            return W_map(x)
        return x if W is None else x * W

    # Voxels no ray reaches (outside the field of view) have no data gradient; the
    # preconditioned methods leave them alone (LEAP windows the regulariser's gradient).
    Q = None
    seen = None
    if preconditioner is not None:
        ones = xp.ones(op.domain_shape, dtype=xp.float32)
        H1 = op.adjoint(xp.ascontiguousarray(weighted(op.forward(ones)), dtype=xp.float32))
        seen = H1 > 0
        if preconditioner == "SQS":
            Q = safe_reciprocal(H1, xp)
    sarr_scale = None

    grad_old = None
    uTg_old = 0.0
    d = None
    with IterationMonitor(name, num_iter, progress, callback) as mon:
        for n in range(num_iter):
            Wr = xp.ascontiguousarray(weighted(r), dtype=xp.float32)
            if preconditioner == "SARR":
                grad_data = op.adjoint(Wr)
                u = op.fbp(Wr)
                if sarr_scale is None:
                    # The FBP acts like (PᵀP)⁻¹Pᵀ ≈ c·ramp∘Pᵀ: fit c once, so the
                    # regulariser's gradient is preconditioned on the same scale.
                    rp = ramp_filter_slices(grad_data)
                    den = vdot(rp, rp)
                    sarr_scale = vdot(u, rp) / den if den > 0 else 1.0
            else:
                grad_data = op.adjoint(Wr)
            grad = grad_data
            if reg is not None:
                Sf = regularizer.gradient(f)
                if seen is not None:
                    Sf = xp.where(seen, Sf, 0.0).astype(xp.float32, copy=False)
                grad = grad_data + Sf
                if preconditioner == "SARR":
                    u = u + sarr_scale * ramp_filter_slices(Sf)
            if preconditioner == "SQS":
                u = Q * grad
            elif preconditioner == "RAMP":
                u = ramp_filter_slices(grad)
            elif preconditioner is None:
                u = grad
            if seen is not None and preconditioner in ("RAMP", "SARR"):
                u = xp.where(seen, u, 0.0).astype(xp.float32, copy=False)

            uTg = vdot(u, grad)
            if d is None or n % CG_RESTART == 0 or uTg_old <= 0:
                d = u
            else:
                gamma = (uTg - vdot(u, grad_old)) / uTg_old
                d = u + gamma * d
                if vdot(d, grad) <= 0:
                    d = u
            grad_old, uTg_old = grad, uTg

            Pd = op.forward(xp.ascontiguousarray(d, dtype=xp.float32))
            num = vdot(d, grad)
            if W_map is not None:
                denom = vdot(Pd, W_map(Pd))
            else:
                denom = vdot(Pd, Pd, W) if W is not None else vdot(Pd, Pd)
            if reg is not None:
                denom += reg_quad_form(regularizer, f, d)
            if not (num > 0 and denom > 0):
                break      # at a minimum (or no descent possible): nothing left to do
            step = num / denom
            f -= step * d
            if nonnegative:
                clip_negative(f)
                op.forward(f, out=Pf)
            else:
                Pf -= step * Pd
            r = Pf - g
            if mon.step(n + 1, f, 0.5 * vdot(r, weighted(r))):
                break
    return f_in


def ls(op, g, f, num_iter, *, preconditioner=None, nonnegative=True, progress=False,
       callback=None):
    """Least squares ``½‖P f − g‖²``: :func:`rwls` without weights or regulariser."""
    return rwls(op, g, f, num_iter, preconditioner=preconditioner, nonnegative=nonnegative,
                progress=progress, callback=callback, name="LS")


def wls(op, g, f, num_iter, *, weights=None, preconditioner=None, nonnegative=True,
        progress=False, callback=None):
    """Weighted least squares: :func:`rwls` without regulariser."""
    return rwls(op, g, f, num_iter, weights=weights, preconditioner=preconditioner,
                nonnegative=nonnegative, progress=progress, callback=callback, name="WLS")


def rls(op, g, f, num_iter, *, regularizer=None, preconditioner=None, nonnegative=True,
        progress=False, callback=None):
    """Regularised least squares: :func:`rwls` with W = 1."""
    return rwls(op, g, f, num_iter, regularizer=regularizer, preconditioner=preconditioner,
                nonnegative=nonnegative, progress=progress, callback=callback, name="RLS")
