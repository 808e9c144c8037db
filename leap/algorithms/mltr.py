"""MLTR: maximum-likelihood reconstruction for transmission (Poisson) data."""
from __future__ import annotations

from ._array import array_namespace, clip_negative, safe_reciprocal, vdot
from ._common import check_count, check_inputs, is_active, reg_quad_form
from ._subsets import OrderedSubsets, num_subsets_for


def transmission_misfit(Pf, t, mask=None) -> float:
    """``Σ m [e^{−Pf} − t + t (P f + log t)]`` (≥ 0): the negative Poisson log-likelihood
    of transmission data ``t = e^{−g}``, shifted to vanish at ``P f = g``."""
    xp = array_namespace(Pf, t, mask)
    pos = t > 0
    tlog = xp.where(pos, t * xp.log(xp.where(pos, t, 1.0)), 0.0)
    term = xp.exp(-Pf) - t + t * Pf + tlog
    if mask is not None:
        term = term * mask
    return float(xp.sum(term, dtype=xp.float64))


def mltr(op, g, f, num_iter, num_subsets=1, *, regularizer=None, mask=None, progress=False,
         callback=None, name="MLTR"):
    """Maximum-likelihood transmission reconstruction (Nuyts et al.), updating ``f`` in
    place; ``g`` (attenuation line integrals, −log of the transmission t) is not
    modified.

    Minimises ``C(f) = Σ m [t·P f + e^{−P f}] + R(f)`` with separable-quadratic-
    surrogate steps per subset S (one subset: all views)

    .. math::  f \\leftarrow \\Big[f + s\\, \\frac{P_S^T m_S (e^{-P_S f} - t_S) - R'(f)/M}
               {P_S^T\\,[m_S\\, e^{-P_S f}\\, P1_S]}\\Big]_+

    with s = 1 without regulariser, else the step that minimises the surrogate along
    that direction. Voxels are kept ≥ 0.

    Data fit passed to ``callback``: ``Σ m [e^{−Pf} − t + t (P f + log t)]`` at the new
    ``f`` (with subsets one extra projection, only with a callback).

    Returns ``f``.
    """
    f_in = f
    xp, op, g, f, mask = check_inputs(op, g, f, mask)
    num_iter = check_count("num_iter", num_iter)
    M = num_subsets_for(op, num_subsets)
    clip_negative(f)
    t = xp.exp(-g).astype(xp.float32, copy=False)
    reg = regularizer if is_active(regularizer) else None
    P1 = op.forward(xp.ones(op.domain_shape, dtype=xp.float32))
    P1 = xp.where(P1 > 0, P1, 1.0).astype(xp.float32, copy=False)
    sub = OrderedSubsets(op, M, xp, t=t, P1=P1, mask=mask)

    def update(f, m, Pf_m):
        op_m, mask_m = sub.ops[m], sub["mask"][m]
        e = xp.exp(-Pf_m)
        curv = e * sub["P1"][m]
        resid = e - sub["t"][m]
        if mask_m is not None:
            curv *= mask_m
            resid *= mask_m
        inv_sqs = safe_reciprocal(op_m.adjoint(xp.ascontiguousarray(curv, dtype=xp.float32)), xp)
        d = op_m.adjoint(xp.ascontiguousarray(resid, dtype=xp.float32))   # −∇ (data term)
        step = 1.0
        if reg is not None:
            d -= reg.gradient(f) / M
            gd = vdot(d, d, inv_sqs)
            d *= inv_sqs
            q = gd + reg_quad_form(reg, f, d) / M
            step = gd / q if q > 0 else 0.0
        else:
            d *= inv_sqs
        f += step * d
        clip_negative(f)

    sub.run(f, num_iter, update, lambda Pf: transmission_misfit(Pf, t, mask), name=name,
            progress=progress, callback=callback)
    return f_in
