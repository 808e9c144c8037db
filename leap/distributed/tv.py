"""Total variation (:class:`leap.algorithms.regularization.TotalVariation`) of a volume chunked in
z-slabs: the gradient with one ghost slice on each side, the sums (cost, quadratic form)
as per-slab sums over the neighbour pairs whose first voxel lies in the slab.

Every TV pair joins voxels at most one slice apart (offsets with z ∈ {0, 1}), so one
ghost slice is all a slab needs; the in-memory functions of :mod:`leap.algorithms.regularization`
do the arithmetic.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ..algorithms import regularization as _reg


def check_regularizer(reg):
    """``reg`` as a TotalVariation (or None); other regularisers are refused."""
    if reg is None:
        return None
    if not isinstance(reg, _reg.TotalVariation):
        raise TypeError("the distributed methods take regularizer=None or a "
                        "leap.algorithms.regularization.TotalVariation, got " + type(reg).__name__)
    return reg if reg.beta != 0.0 else None


def _shift(reg, f):
    """f − f0 for a TV with a prior volume f0 (PICCS-like)."""
    if reg.f0 is None:
        return f
    import dask.array as da
    f0 = reg.f0 if isinstance(reg.f0, da.Array) else da.from_array(np.asarray(reg.f0))
    return f - f0.rechunk(f.chunks)


def _grad_block(reg, x):
    return _reg.tv_gradient(np.ascontiguousarray(x), reg.delta, reg.beta, reg.p,
                            neighbors=reg.neighbors)


def gradient(reg, f):
    """∇R(f) as a dask array chunked like ``f`` (chunks along z only)."""
    import dask.array as da
    x = _shift(reg, f)
    return da.map_overlap(partial(_grad_block, reg), x, depth={0: 1, 1: 0, 2: 0},
                          boundary="none", trim=True, dtype=np.float32)


def _with_next(x):
    """Per z-chunk: the chunk with the next chunk's first slice appended (delayed)."""
    import dask.array as da
    out, z = [], 0
    nz = x.shape[0]
    for c in x.chunks[0]:
        stop = min(z + c + 1, nz)
        out.append(x[z:stop].rechunk(-1).to_delayed().ravel()[0])
        z += c
    ends = [z0 + c < nz for z0, c in zip(np.cumsum((0,) + x.chunks[0][:-1]), x.chunks[0])]
    return out, ends


def _quad_part(reg, ghost, xb, db):
    total = _reg.tv_quad_form(np.ascontiguousarray(xb), np.ascontiguousarray(db), reg.delta,
                              reg.beta, reg.p, neighbors=reg.neighbors)
    if ghost:          # the ghost slice's own pairs belong to the next slab
        total -= _reg.tv_quad_form(np.ascontiguousarray(xb[-1:]), np.ascontiguousarray(db[-1:]),
                                   reg.delta, reg.beta, reg.p, neighbors=reg.neighbors)
    return total


def _cost_part(reg, ghost, xb):
    total = _reg.tv_cost(np.ascontiguousarray(xb), reg.delta, reg.beta, reg.p,
                         neighbors=reg.neighbors)
    if ghost:
        total -= _reg.tv_cost(np.ascontiguousarray(xb[-1:]), reg.delta, reg.beta, reg.p,
                              neighbors=reg.neighbors)
    return total


def quad_form(reg, f, d):
    """``dᵀ H(f) d`` (:func:`leap.algorithms.regularization.tv_quad_form`) as a delayed float."""
    import dask
    xs, ends = _with_next(_shift(reg, f))
    ds, _ = _with_next(d.rechunk(f.chunks))
    parts = [dask.delayed(_quad_part)(reg, e, xb, db) for xb, db, e in zip(xs, ds, ends)]
    return dask.delayed(sum)(parts)


def cost(reg, f):
    """R(f) (:func:`leap.algorithms.regularization.tv_cost`) as a delayed float."""
    import dask
    xs, ends = _with_next(_shift(reg, f))
    return dask.delayed(sum)([dask.delayed(_cost_part)(reg, e, xb) for xb, e in zip(xs, ends)])
