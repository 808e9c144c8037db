"""Shared plumbing: input checks, counts, regulariser access."""
from __future__ import annotations

import numbers

from ._array import (as_float32_weights, check_array_argument, check_finite,
                     check_no_overlap, check_shape, check_writable, prepare)


def check_inputs(op, g, f, mask=None, *extra, extra_names=()):
    """Validate the arguments of an iterative method against the operator.

    ``g``: projections, float32, ``op.range_shape``; ``f``: the volume updated in place,
    float32, ``op.domain_shape``, writable; ``mask``: None or an array of ``g``'s shape
    (0 = pixel not used; bool/integer/float masks are converted to a float32 copy and
    negative entries count as 0); ``extra``: further projection-sized inputs (None or
    arrays, named by ``extra_names`` in messages, e.g. RWLS's weights).

    Raises TypeError for a missing or non-array argument or a wrong dtype, ValueError
    for a wrong shape, NaN/inf values, a read-only ``f``, or ``f`` sharing memory with
    any input (the methods read the inputs on every iteration while writing ``f``).

    Returns ``(xp, op, g, f, mask, *extra)``: the array module and the arrays as the
    algorithm computes on them (views of the inputs, see
    :func:`leap.algorithms._array.prepare`), with the operator to use on them.
    """
    rng, dom = tuple(op.range_shape), tuple(op.domain_shape)
    names = tuple(extra_names) + tuple(f"extra[{k}]" for k in range(len(extra_names), len(extra)))
    check_array_argument("g", g, f"the projections (a float32 array of shape {rng})")
    check_array_argument("f", f, f"the volume to update in place (a float32 array of shape {dom})")
    if mask is not None:
        check_array_argument("mask", mask, f"None or an array of the projections' shape {rng}")
    for name, x in zip(names, extra):
        if x is not None:
            check_array_argument(name, x, f"None or an array of the projections' shape {rng}")
    xp, op, g, f, mask, *extra = prepare(op, g, f, mask, *extra)
    check_shape("g", g, rng)
    check_shape("f", f, dom)
    check_writable("f", f)
    if mask is not None and tuple(mask.shape) != rng:
        raise ValueError(f"mask must have the projections' shape {rng}, got {tuple(mask.shape)}")
    check_no_overlap("f", f, g=g, **({"mask": mask} if mask is not None else {}),
                     **{n: x for n, x in zip(names, extra) if x is not None})
    check_finite("g", g)
    check_finite("f", f)
    if mask is not None:
        mask = as_float32_weights("mask", mask, xp)
        check_finite("mask", mask)
        if bool((mask < 0).any()):
            mask = xp.maximum(mask, 0.0).astype(xp.float32, copy=False)   # a copy
    for name, x in zip(names, extra):
        if x is not None:
            check_finite(name, x)
    return (xp, op, g, f, mask, *extra)


def check_count(name, n, minimum=0):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


def is_active(reg) -> bool:
    """Whether a regulariser contributes a cost/gradient (LEAP: a filter sequence with
    β > 0 and at least one differentiable filter)."""
    if reg is None:
        return False
    return bool(getattr(reg, "differentiable", True))


def reg_quad_form(reg, f, d) -> float:
    qf = getattr(reg, "quad_form", None) or getattr(reg, "quadForm")
    return float(qf(f, d))
