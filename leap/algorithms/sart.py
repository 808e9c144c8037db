"""SIRT and SART (ordered-subset SIRT)."""
from __future__ import annotations

from ._array import clip_negative, safe_reciprocal, vdot
from ._common import check_count, check_inputs
from ._subsets import OrderedSubsets, num_subsets_for


def sart_weights(op, mask, xp):
    """``m / P1``: the projection mask (1 when None) over the ray lengths through the
    volume (entries P1 ≤ 0 count as 1)."""
    inv_P1 = safe_reciprocal(op.forward(xp.ones(op.domain_shape, dtype=xp.float32)), xp)
    return inv_P1 if mask is None else inv_P1 * mask


def check_relaxation(relaxation):
    lam = float(relaxation)
    if not 0 < lam < 2:
        raise ValueError(f"relaxation must be in (0, 2), got {relaxation}")
    return lam


def sart_update(sub, lam, nonnegative):
    """SART's update of ``f`` (in place) from subset m's residual ``r = g_m − P_m f``
    (overwritten): ``f += λ (P_mᵀ1)⁻¹ P_mᵀ[w_m r]``, negatives then set to 0 when
    ``nonnegative``; ``sub`` holds the weights ``w`` (:func:`sart_weights`)."""
    def update(f, m, r):
        r *= sub["w"][m]
        d = sub.ops[m].adjoint(r)
        d *= sub.inverse_sensitivity(m)
        f += lam * d
        if nonnegative:
            clip_negative(f)
    return update


def sart(op, g, f, num_iter, num_subsets=1, *, mask=None, nonnegative=True, relaxation=0.9,
         progress=False, callback=None, name="SART"):
    """Simultaneous algebraic reconstruction with ordered subsets, updating ``f`` in place.

    For each subset S of views (interleaved: m, m+M, …; one subset is SIRT)

    .. math::  f \\leftarrow f + \\lambda \\frac{1}{P_S^T 1}
               P_S^T\\Big[ m_S \\frac{g_S - P_S f}{P 1} \\Big]

    with λ = ``relaxation`` (LEAP: 0.9), ``m`` the optional projection mask (0 = do not
    use that pixel) and negatives set to zero after each update when ``nonnegative``.

    With one subset this is a diagonally preconditioned gradient descent on
    ``½ Σ m (P f − g)² / P1`` with a step below 2/L, so that data fit never increases
    (nonnegativity included: a projected step in the same diagonal metric).

    Data fit passed to ``callback``: ``½ Σ m (P f − g)² / P1`` at the new ``f`` (with
    subsets it costs one extra projection per iteration, done only with a callback).

    Returns ``f``.
    """
    f_in = f
    xp, op, g, f, mask = check_inputs(op, g, f, mask)
    num_iter = check_count("num_iter", num_iter)
    M = num_subsets_for(op, num_subsets)
    lam = check_relaxation(relaxation)
    w = sart_weights(op, mask, xp)
    sub = OrderedSubsets(op, M, xp, g=g, w=w)
    step = sart_update(sub, lam, nonnegative)

    def data_fit(Pf):
        r = Pf - g
        return 0.5 * vdot(r, r, w)

    sub.run(f, num_iter, lambda f, m, Pf_m: step(f, m, sub["g"][m] - Pf_m), data_fit,
            name=name, progress=progress, callback=callback)
    return f_in


def sirt(op, g, f, num_iter, *, mask=None, nonnegative=True, relaxation=0.9, progress=False,
         callback=None):
    """SIRT: :func:`sart` with one subset (all views at once); see there."""
    return sart(op, g, f, num_iter, 1, mask=mask, nonnegative=nonnegative,
                relaxation=relaxation, progress=progress, callback=callback, name="SIRT")
