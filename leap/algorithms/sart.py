"""SIRT and SART (ordered-subset SIRT)."""
from __future__ import annotations

from ._array import clip_negative, safe_reciprocal, vdot
from ._common import check_count, check_inputs, num_subsets_for
from ._monitor import IterationMonitor
from ._subsets import Subsets


def ray_normalisation(op, xp):
    """``1 / P1``: inverse ray lengths through the volume (entries ≤ 0 → 1)."""
    return safe_reciprocal(op.forward(xp.ones(op.domain_shape, dtype=xp.float32)), xp)


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
    lam = float(relaxation)
    if not 0 < lam < 2:
        raise ValueError(f"relaxation must be in (0, 2), got {relaxation}")
    inv_P1 = ray_normalisation(op, xp)
    w_fit = inv_P1 if mask is None else inv_P1 * mask

    def data_fit(Pf):
        r = Pf - g
        return 0.5 * vdot(r, r, w_fit)

    with IterationMonitor(name, num_iter, progress, callback) as mon:
        if M == 1:
            inv_sens = safe_reciprocal(op.adjoint(xp.ones(op.range_shape, dtype=xp.float32)), xp)
            Pf = op.forward(f)
            for n in range(num_iter):
                r = g - Pf
                r *= w_fit
                d = op.adjoint(r)
                d *= inv_sens
                f += lam * d
                if nonnegative:
                    clip_negative(f)
                op.forward(f, out=Pf)
                if mon.step(n + 1, f, data_fit(Pf)):
                    break
            return f_in

        sub = Subsets(op, M, xp, g=g, w=w_fit)
        for n in range(num_iter):
            for m in range(M):
                op_m = sub.ops[m]
                r = sub["g"][m] - op_m.forward(f)
                r *= sub["w"][m]
                d = op_m.adjoint(r)
                d *= sub.inverse_sensitivity(m)
                f += lam * d
                if nonnegative:
                    clip_negative(f)
            fit = data_fit(op.forward(f)) if mon.wants_data_fit else None
            if mon.step(n + 1, f, fit):
                break
    return f_in


def sirt(op, g, f, num_iter, *, mask=None, nonnegative=True, relaxation=0.9, progress=False,
         callback=None):
    """SIRT: :func:`sart` with one subset (all views at once); see there."""
    return sart(op, g, f, num_iter, 1, mask=mask, nonnegative=nonnegative,
                relaxation=relaxation, progress=progress, callback=callback, name="SIRT")
