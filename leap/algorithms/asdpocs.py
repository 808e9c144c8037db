"""ASD-POCS (in LEAP's iTV form): SART passes alternated with regulariser steps."""
from __future__ import annotations

import math

from ._array import clip_negative, vdot
from ._common import check_count, check_inputs, num_subsets_for
from ._monitor import IterationMonitor
from ._subsets import Subsets
from .sart import ray_normalisation, sart

# Fraction of each SART pass's data-fit reduction that the regulariser may give back.
OMEGA = 0.8


def asd_pocs(op, g, f, num_iter, num_subsets, num_tv, regularizer, *, mask=None,
             nonnegative=True, relaxation=0.9, progress=False, callback=None, name="ASDPOCS"):
    """Adaptive steepest descent – projection onto convex sets, updating ``f`` in place.

    Approximately solves ``min R(f)`` subject to a small ``‖P f − g‖²`` with the iTV
    scheme (Ritschl & Kachelrieß, SPIE 2011) that LEAP implements: each iteration

    1. one SART pass (``num_subsets`` subsets, relaxation λ) gives f_S, residual r_S;
    2. ``num_tv`` applications of ``regularizer.apply`` (e.g. TV diffusion steps, or
       any denoising filter) to a copy give f_R (negatives then set to 0 when
       ``nonnegative``), residual r_R;
    3. f ← (1 − α) f_S + α f_R with the largest α ∈ [0, 1] for which the data misfit
       ‖r‖² is at most ‖r_S‖² + ω (‖r_prev‖² − ‖r_S‖²), ω = 0.8: the regulariser may
       take back 80 % of what the SART pass gained.

    ``num_tv`` ≤ 0 runs plain SART. Data fit passed to ``callback``: ``½ Σ m (P f − g)²``
    at the new ``f`` (no extra cost).

    Returns ``f``.
    """
    f_in = f
    xp, op, g, f, mask = check_inputs(op, g, f, mask)
    num_iter = check_count("num_iter", num_iter)
    num_tv = int(num_tv)
    if num_tv <= 0:
        sart(op, g, f, num_iter, num_subsets, mask=mask, nonnegative=nonnegative,
             relaxation=relaxation, progress=progress, callback=callback, name=name)
        return f_in
    if regularizer is None or not hasattr(regularizer, "apply"):
        raise TypeError("ASD-POCS needs a regularizer with an apply(f) method "
                        "(e.g. leap.regularization.TotalVariation or a filterSequence)")
    M = num_subsets_for(op, num_subsets)
    lam = float(relaxation)
    inv_P1 = ray_normalisation(op, xp)
    w_sart = inv_P1 if mask is None else inv_P1 * mask
    sub = Subsets(op, M, xp, g=g, w=w_sart)

    def misfit(r):
        return vdot(r, r, mask) if mask is not None else vdot(r, r)

    r = op.forward(f)
    r -= g
    cur = misfit(r)
    with IterationMonitor(name, num_iter, progress, callback) as mon:
        for n in range(num_iter):
            # 1. SART pass.
            if M == 1:
                q = r * w_sart
                d = op.adjoint(q)
                d *= sub.inverse_sensitivity(0)
                f -= lam * d
                if nonnegative:
                    clip_negative(f)
            else:
                for m in range(M):
                    op_m = sub.ops[m]
                    q = sub["g"][m] - op_m.forward(f)
                    q *= sub["w"][m]
                    d = op_m.adjoint(q)
                    d *= sub.inverse_sensitivity(m)
                    f += lam * d
                    if nonnegative:
                        clip_negative(f)
            r_s = op.forward(f)
            r_s -= g
            eps_s = misfit(r_s)

            # 2. Regulariser steps on a copy.
            f_r = f.copy()
            for _ in range(num_tv):
                out = regularizer.apply(f_r)
                if out is not None and out is not f_r:
                    f_r[...] = out
            if nonnegative:
                # Keep the blend of f_S and f_R in the constraint set (LEAP does not).
                clip_negative(f_r)
            r_r = op.forward(f_r)
            r_r -= g
            eps_r = misfit(r_r)

            # 3. Largest α in [0, 1] with ‖r_s + α (r_r − r_s)‖² ≤ target.
            cross = vdot(r_s, r_r, mask) if mask is not None else vdot(r_s, r_r)
            a = eps_s - 2.0 * cross + eps_r          # ‖r_r − r_s‖²
            b = cross - eps_s                        # <r_s, r_r − r_s>
            c = OMEGA * (eps_s - cur)                # ‖r_s‖² − target
            alpha = _largest_step(a, b, c)
            if alpha > 0:
                f *= 1.0 - alpha
                f += alpha * f_r
                r = r_s
                r *= 1.0 - alpha
                r += alpha * r_r
            else:
                r = r_s
            cur = misfit(r)
            if mon.step(n + 1, f, 0.5 * cur):
                break
    return f_in


def _largest_step(a, b, c):
    """Largest α ∈ [0, 1] with a α² + 2 b α + c ≤ 0, or 0 when none (c > 0)."""
    if a <= 0:
        # Identical residuals (or rounding): the misfit does not depend on α.
        return 1.0 if c <= 0 else 0.0
    disc = b * b - a * c
    if disc < 0:
        return 0.0
    return max(0.0, min(1.0, (-b + math.sqrt(disc)) / a))
