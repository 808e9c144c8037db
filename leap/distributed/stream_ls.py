"""Least squares by conjugate gradients out of core on one machine: LS and WLS with the
projections streamed and every vector in slabs on disk.

:func:`leap.distributed.ls` and :func:`leap.distributed.rwls` (without a regulariser)
with ``client=False`` and an ``out`` file run here. It is :func:`leap.algorithms.rwls`
step for step: minimise ``½ (P f − g)ᵀ W (P f − g)`` by preconditioned Polak–Ribière
conjugate gradients, restarted every ``leap.algorithms.least_squares.CG_RESTART`` (50)
iterations or when the direction is not one of descent, the exact line step
``<d, ∇> / ‖P d‖²_W``, negatives set to 0 after each step (then ``P f`` is projected
again) and a start ``f ≠ 0`` first scaled by ``<g, P f>/<P f, P f>``; it stops early, as
the in-memory method, when no descent is left. Preconditioners: None, 'SQS'
(``1/PᵀWP1``) and 'RAMP' (a 2-D ramp filter of each slice: slice by slice, so slab by
slab); 'SARR' (an FBP of the residual) and regularisers run in memory or on Dask.

Volume-sized vectors (the iterate f, the gradient and the previous one, the direction
d, and ``PᵀWP1`` for a preconditioner) are :class:`~leap.distributed.stream_scratch.ScratchVolume`
files; projection-sized ones (g, ``P f``, ``P d`` and array weights W) are row-block
:class:`~leap.distributed.stream.ScratchRows` files. The preconditioned gradient
``u`` is not stored: it is made again from the gradient's slab where it is needed. Inner
products are float32 products summed in float64 slab by slab (or row block by row
block), as the in-memory method sums the whole arrays: equal to float64 rounding.

Each iteration, four passes:

1. over the slabs: each reads its rows of ``P f``, g (and W), back-projects its
   weighted residual into the gradient, and sums ``<u, ∇>`` and ``<u, ∇_old>``;
2. over the slabs: the direction ``d = u + γ d`` (or ``u`` on a restart) written over
   the old one, its share of ``P d`` added into its rows and ``<d, ∇>`` summed (a
   direction that is not one of descent is made again as ``u``: a second such pass);
3. over the row blocks of ``P d``: ``‖P d‖²_W``;
4. over the slabs: ``f ← max(0, f − step d)`` and its share of ``P f`` (without
   nonnegativity: ``P f ← P f − step P d`` over the row blocks instead).

Cost per iteration against :func:`leap.algorithms.rwls` in memory: the same projections
(``P d`` and, with nonnegativity, ``P f``) and back-projection (the gradient), slab by
slab (a cone-beam slab also projects and back-projects the rows its neighbours share),
and for 'RAMP' the slice filter twice; plus local-disk traffic: volume files read about
five times and written three times (f, the gradients, d), ``P d`` and ``P f`` written
about twice each (the slabs' shares overlap in rows; read and written back per row
block) and read once or twice, g (and W) read once per slab that needs their rows (once
per iteration for parallel beams, about twice for cone beams). Everything is read from
the scratch files (local disk / the page cache), never from the original files again.
Memory: one slab's vectors (a few slabs), its rows of three projection-sized arrays and
the row blocks being summed. Disk, float32, removed at the end: three or four times the
projections (g, ``P f``, ``P d``, W) and four or five volumes.

No callback or data fit is reported (the data fit ``½‖P f − g‖²_W`` would need one more
pass over the projections per iteration); ``progress`` shows a bar of iterations.
"""
from __future__ import annotations

import numbers

import numpy as np

from ..algorithms._array import safe_reciprocal, vdot
from ..algorithms._common import check_count
from ..algorithms import least_squares
from ..algorithms.least_squares import ramp_filter_slices
from ..system import CTSystem
from .stream import _reader
from .stream_scratch import Workspace, copy_rows, copy_volume, stream_bounds

#: The preconditioners the out-of-core CG takes.
PRECONDITIONERS = (None, "SQS", "RAMP")


def check_preconditioner(preconditioner, allowed, where):
    """``preconditioner`` as None or an upper-case name from ``allowed`` (True means
    'SQS'), else a ValueError naming ``where`` it is refused."""
    if isinstance(preconditioner, bool):
        preconditioner = "SQS" if preconditioner else None
    if isinstance(preconditioner, str):
        preconditioner = preconditioner.upper()
    if preconditioner not in allowed:
        raise ValueError(f"{where} takes preconditioner {' or '.join(map(repr, allowed))}, "
                         f"got {preconditioner!r} (the others run in memory: "
                         "leap.algorithms.rwls)")
    return preconditioner


def stream_rwls(system: CTSystem, g, num_iter, out, *, f=None, weights=None,
                preconditioner=None, nonnegative=True, slabs=None, overwrite=False,
                out_format=None, progress=None, scratch_dir=None, name="RWLS"):
    """Weighted least squares of ``g`` by conjugate gradients out of core into the file
    ``out`` (module docstring).

    ``g`` (projections) and ``f`` (the starting volume, or None for zeros): checked
    float32 sources, dask or NumPy arrays; ``weights``: None, a number or such an array
    of ``g``'s shape; ``preconditioner``: one of :data:`PRECONDITIONERS` (True: 'SQS').
    ``out``, ``out_format``, ``overwrite``: :func:`~leap.distributed.outputs.open_output`;
    ``scratch_dir``: where the scratch files go (default: the output's directory);
    ``progress``: a tqdm bar of iterations (None: on when the projections exceed
    256 MiB); ``slabs``: the number of z-slabs (default
    :func:`~leap.distributed.stream_scratch.stream_bounds`). Returns the volume read
    back lazily from ``out`` (a dask array).
    """
    num_iter = check_count("num_iter", num_iter)
    precond = check_preconditioner(preconditioner, PRECONDITIONERS,
                                   f"the out-of-core {name} (client=False, out=...)")
    if system.model is not None:
        raise NotImplementedError(f"out-of-core {name} of the {type(system.model).__name__} "
                                  "model is not streamed; use client=None (Dask) or memory")
    w_scalar = None
    if weights is not None and (isinstance(weights, numbers.Real)
                                or getattr(weights, "ndim", None) == 0):
        w_scalar = None if float(weights) == 1.0 else float(weights)
        weights = None
    na, nr, nc = system.projection_shape
    bounds = stream_bounds(system, slabs)
    parts = [system.part(z0, z1) for z0, z1 in bounds]
    slabs_parts = list(zip(bounds, parts))

    with Workspace(system, out, bounds, name, out_format=out_format,
                   overwrite=overwrite, scratch_dir=scratch_dir) as ws:
        G, PF, PD = ws.rows("g"), ws.rows("pf"), ws.rows("pd")
        Wf = None if weights is None else ws.rows("w")
        F, D = ws.volume("f"), ws.volume("d")
        GRAD = [ws.volume("grad0"), ws.volume("grad1")]
        H = None if precond is None else ws.volume("h1")
        blocks = [slice(a, b) for a, b in zip(G.starts[:-1], G.starts[1:])]
        every = slice(None)
        copy_rows(_reader(g), G, (na, nr, nc))
        if Wf is not None:
            copy_rows(_reader(weights, "weights (W)"), Wf, (na, nr, nc))

        def weighted(x, v, r):
            if Wf is not None:
                return x * Wf.read(v, r)
            return x if w_scalar is None else x * w_scalar

        def norm_w(p, r):
            """``<p, W p>`` of the rows ``r`` of all views, as vdot."""
            if Wf is not None:
                return vdot(p, p, Wf.read(every, r))
            return vdot(p, p, w_scalar) if w_scalar is not None else vdot(p, p)

        # Starting point and its projection (a non-zero start scaled as LEAP).
        if copy_volume(f, F, bounds, system.volume_shape):
            for (z0, z1), (part, v, r) in slabs_parts:
                fz = F.read(z0, z1)
                if nonnegative:
                    np.maximum(fz, 0.0, out=fz)
                    F.write(z0, fz)
                PF.add(part.project(fz), v, r)
            pp = gp = 0.0
            for r in blocks:
                p = PF.read(every, r)
                pp, gp = pp + vdot(p, p), gp + vdot(G.read(every, r), p)
            if pp > 0 and gp > 0:
                for z0, z1 in bounds:
                    fz = F.read(z0, z1)
                    fz *= gp / pp
                    F.write(z0, fz)
                for r in blocks:
                    p = PF.read(every, r)
                    p *= gp / pp
                    PF.write(p, 0, r.start)

        # PᵀWP1: the SQS weights 1/PᵀWP1, and the voxels that rays reach (RAMP).
        if H is not None:
            for part, v, r in parts:
                PD.add(part.project(np.ones(part.volume_shape, np.float32)), v, r)
            for (z0, z1), (part, v, r) in slabs_parts:
                wp = np.ascontiguousarray(weighted(PD.read(v, r), v, r), dtype=np.float32)
                H.write(z0, part.backproject(wp))

        def precondition(grad, z0, z1):
            """u, the preconditioned gradient, of slices z0:z1."""
            if precond == "SQS":
                return safe_reciprocal(H.read(z0, z1), np) * grad
            if precond == "RAMP":
                u = ramp_filter_slices(grad)
                return np.where(H.read(z0, z1) > 0, u, 0.0).astype(np.float32, copy=False)
            return grad

        def direction(grad, gamma):
            """d (u, or u + γ d) written over D, P d summed into PD; returns <d, ∇>."""
            PD.zero()
            dg = 0.0
            for (z0, z1), (part, v, r) in slabs_parts:
                gz = grad.read(z0, z1)
                dz = precondition(gz, z0, z1)
                if gamma is not None:
                    dz = dz + gamma * D.read(z0, z1)
                D.write(z0, dz)
                PD.add(part.project(np.ascontiguousarray(dz, dtype=np.float32)), v, r)
                dg += vdot(dz, gz)
            return dg

        uTg_old = 0.0
        for n in ws.iterations(num_iter, progress):
            grad, grad_old = GRAD[n % 2], GRAD[(n + 1) % 2]
            restart = n == 0 or n % least_squares.CG_RESTART == 0 or uTg_old <= 0
            uTg = uTg_prev = 0.0
            for (z0, z1), (part, v, r) in slabs_parts:
                res = PF.read(v, r) - G.read(v, r)
                wr = np.ascontiguousarray(weighted(res, v, r), dtype=np.float32)
                gz = part.backproject(wr)
                grad.write(z0, gz)
                u = precondition(gz, z0, z1)
                uTg += vdot(u, gz)
                if not restart:
                    uTg_prev += vdot(u, grad_old.read(z0, z1))
            if restart:
                num = direction(grad, None)
            else:
                num = direction(grad, (uTg - uTg_prev) / uTg_old)
                if num <= 0:
                    num = direction(grad, None)
            uTg_old = uTg
            denom = sum(norm_w(PD.read(every, r), r) for r in blocks)
            if not (num > 0 and denom > 0):
                break      # at a minimum (or no descent possible): nothing left to do
            step = num / denom
            if nonnegative:
                PF.zero()
            for (z0, z1), (part, v, r) in slabs_parts:
                fz = F.read(z0, z1)
                fz -= step * D.read(z0, z1)
                if nonnegative:
                    np.maximum(fz, 0.0, out=fz)
                    PF.add(part.project(fz), v, r)
                F.write(z0, fz)
            if not nonnegative:
                for r in blocks:
                    p = PF.read(every, r)
                    p -= step * PD.read(every, r)
                    PF.write(p, 0, r.start)
        return ws.commit(F)
