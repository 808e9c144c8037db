"""MLEM and OSEM (expectation maximisation for Poisson data)."""
from __future__ import annotations

import math

from ._array import array_namespace, clip_negative, is_all_zeros
from ._common import check_count, check_inputs, is_active
from ._subsets import OrderedSubsets, num_subsets_for


def poisson_misfit(Pf, g, mask=None) -> float:
    """Kullback–Leibler divergence ``Σ m [P f − g + g log(g / P f)]`` (≥ 0; the negative
    Poisson log-likelihood up to a constant; +∞ where P f = 0 < g)."""
    xp = array_namespace(Pf, g, mask)
    seen = Pf > 0
    pos = g > 0
    both = xp.logical_and(pos, seen)
    # log(g) − log(Pf) rather than log(g/Pf): no overflow for tiny P f.
    glog = xp.where(both, g * (xp.log(xp.where(both, g, 1.0)) - xp.log(xp.where(both, Pf, 1.0))),
                    0.0)
    t = Pf - g + glog
    bad = xp.logical_and(pos, xp.logical_not(seen))
    if mask is not None:
        t = t * mask
        bad = xp.logical_and(bad, mask != 0)
    if bool(xp.any(bad)):
        return math.inf
    return float(xp.sum(t, dtype=xp.float64))


def _em_ratio(xp, g, Pf, mask):
    """``m · g / P f`` with 0 where P f = 0 (LEAP's convention)."""
    nz = Pf != 0
    r = xp.where(nz, g / xp.where(nz, Pf, 1.0), 0.0).astype(xp.float32, copy=False)
    if mask is not None:
        r *= mask
    return r


def osem(op, g, f, num_iter, num_subsets=1, *, regularizer=None, mask=None, blend=1.0,
         progress=False, callback=None, name="OSEM"):
    """Ordered-subset expectation maximisation, updating ``f`` in place.

    For each subset S (one subset: MLEM)

    .. math::  f \\leftarrow \\frac{f}{P_S^T m_S + R'(f)/M}\\,
               P_S^T\\Big[ m_S \\frac{g_S}{P_S f} \\Big]

    (Green's one-step-late form for a differentiable regulariser R, the denominator
    kept ≥ 0.1 P_Sᵀm_S). A non-differentiable ``regularizer`` (one with
    ``differentiable = False``, e.g. a median filter) is instead applied after each
    MLEM update and mixed in with weight ``blend`` ∈ (0, 1]. An all-zero ``f`` starts
    from ones; negative starting values are set to 0.

    Without regulariser, MLEM (one subset) never decreases the Poisson likelihood:
    the data fit ``Σ m [P f − g + g log(g/P f)]`` (Kullback–Leibler) never increases.
    It is passed to ``callback`` (with subsets: one extra projection, only then).

    Returns ``f``.
    """
    f_in = f
    xp, op, g, f, mask = check_inputs(op, g, f, mask)
    num_iter = check_count("num_iter", num_iter)
    M = num_subsets_for(op, num_subsets)
    if is_all_zeros(f):
        f[...] = 1.0
    else:
        clip_negative(f)
    smooth = is_active(regularizer)
    post_filter = regularizer is not None and not smooth and float(blend) > 0
    sub = OrderedSubsets(op, M, xp, g=g, mask=mask)

    def update(f, m, Pf_m):
        mask_m = sub["mask"][m]
        inv_sens = sub.inverse_sensitivity(m, mask_m)
        d = sub.ops[m].adjoint(_em_ratio(xp, sub["g"][m], Pf_m, mask_m))
        if smooth:
            sens = 1.0 / inv_sens
            denom = xp.maximum(0.1 * sens, sens + regularizer.gradient(f) / M)
            f *= d / denom
        else:
            f *= d * inv_sens
            if post_filter:
                b = min(float(blend), 1.0)
                if b < 1.0:
                    f_em = f.copy()
                    regularizer.apply(f)
                    f *= b
                    f += (1.0 - b) * f_em
                else:
                    regularizer.apply(f)
                clip_negative(f)

    sub.run(f, num_iter, update, lambda Pf: poisson_misfit(Pf, g, mask), name=name,
            progress=progress, callback=callback)
    return f_in


def mlem(op, g, f, num_iter, *, regularizer=None, mask=None, blend=1.0, progress=False,
         callback=None):
    """MLEM: :func:`osem` with one subset; see there."""
    return osem(op, g, f, num_iter, 1, regularizer=regularizer, mask=mask, blend=blend,
                progress=progress, callback=callback, name="MLEM")
