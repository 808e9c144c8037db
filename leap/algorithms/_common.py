"""Shared plumbing: input checks, view subsets, regulariser access."""
from __future__ import annotations

import numbers

from ._array import check_shape, check_writable, prepare


def check_inputs(op, g, f, mask=None, *extra):
    """Validate ``g``/``f``/``mask`` against the operator.

    Returns ``(xp, op, g, f, mask, *extra)``: the array module and the arrays as the
    algorithm computes on them (views of the inputs, see
    :func:`leap.algorithms._array.prepare`), with the operator to use on them.
    """
    xp, op, g, f, mask, *extra = prepare(op, g, f, mask, *extra)
    check_shape("g", g, op.range_shape)
    check_shape("f", f, op.domain_shape)
    check_writable("f", f)
    if mask is not None:
        if tuple(mask.shape) != tuple(op.range_shape):
            raise ValueError(f"mask must have the projections' shape "
                             f"{tuple(op.range_shape)}, got {tuple(mask.shape)}")
    return (xp, op, g, f, mask, *extra)


def check_count(name, n, minimum=0):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    if n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    return int(n)


def num_subsets_for(op, num_subsets):
    """LEAP's rule: at most one subset per view, at least one subset."""
    m = check_count("num_subsets", num_subsets, 0)
    return max(1, min(m, op.num_views))


def subset_views(m, num_subsets):
    """Views of subset m: m, m + M, m + 2M, … (LEAP's interleaved subsets)."""
    return slice(m, None, num_subsets)


def take_views(xp, x, views):
    """A C-contiguous float32 copy of some views of a projection array (or None)."""
    if x is None:
        return None
    return xp.ascontiguousarray(x[views], dtype=xp.float32)


def is_active(reg) -> bool:
    """Whether a regulariser contributes a cost/gradient (LEAP: a filter sequence with
    β > 0 and at least one differentiable filter)."""
    if reg is None:
        return False
    return bool(getattr(reg, "differentiable", True))


def reg_quad_form(reg, f, d) -> float:
    qf = getattr(reg, "quad_form", None) or getattr(reg, "quadForm")
    return float(qf(f, d))
