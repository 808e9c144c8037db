"""SIRT and OS-SART out of core on one machine: projections streamed, the iterate in
slabs on disk.

:func:`leap.distributed.sirt` and :func:`leap.distributed.sart` with ``client=False`` and
an ``out`` file run here. It is :func:`leap.algorithms.sart` step for step: for each
subset S of views in turn (M interleaved subsets, subset m holding views m, m+M, …; one
subset is SIRT)

    f ← max(0, f + λ (P_Sᵀ1)⁻¹ P_Sᵀ[m_S (g_S − P_S f) / (P1)_S]),

with every array on local disk (:mod:`leap.distributed.stream_scratch`) and only a slab
of it in memory:

* set-up, once: the measured projections (a file source is read, decoded and
  flat-fielded once here) copied to a scratch file of row blocks
  (:class:`~leap.distributed.stream.ScratchRows`), their views grouped by subset so
  that a subset's views of a row are contiguous; the weights ``m / P1`` (P1 summed slab
  by slab) to another; the sensitivities ``1 / P_Sᵀ1`` of every slab and subset (M
  volumes) and the iterate to raw volume files;
* each subset update, one pass over the z-slabs: each slab reads its rows of the
  subset's views of g, ``m / P1`` and ``P_S f``, back-projects its weighted residual,
  updates its slices of the iterate and, while they are in memory, adds their share of
  the next subset's projection ``P_S' f`` into a second projection file (two alternate;
  ``P_S' f`` is complete when the pass ends, as the next update needs).

Cost per iteration against :func:`leap.algorithms.sart` in memory: the same projection
and back-projection of each subset (slab by slab, :meth:`~leap.system.CTSystem.part`,
so a cone-beam slab also projects and back-projects the rows its neighbours share),
plus local-disk traffic: the iterate read and written once per subset (M times per
iteration), the projection ``P_S f`` written about twice per subset (the shares of
neighbouring slabs overlap in rows; read and written back per row block), and g,
``m / P1`` and ``P_S f`` read once per slab that needs their rows (once per iteration
in all for parallel beams, about twice for cone beams). Everything is read from the
scratch files (local disk / the page cache), never from the original files again.
Memory: one slab, its rows of three projection-sized arrays of one subset, its share
of the next projection and the row blocks being summed (by default slabs of about
64 MiB of volume, thinner where their rows would exceed 192 MiB:
:func:`~leap.distributed.stream_scratch.stream_bounds`). Disk, float32, removed at the
end: twice the projections (g, ``m / P1``), twice a subset's projections (``P_S f``),
one volume (the iterate) and M volumes (the sensitivities ``1 / P_Sᵀ1``, while they fit
:data:`SENSITIVITY_DISK_BYTES`; past it each subset's is made again in its pass, one
more back-projection of the subset, as the in-memory SART does past its cache).

Results equal the in-memory SART to float rounding (a projection summed from slabs adds
in another order). No callback or data fit is reported (the monitor's data fit would
need one more projection pass per iteration); ``progress`` shows a bar of iterations.
"""
from __future__ import annotations

import numpy as np

from ..algorithms._array import safe_reciprocal
from ..algorithms._common import check_count
from ..algorithms.sart import check_relaxation
from ..system import CTSystem
from .stream import _reader

#: Bytes of sensitivities (one volume per subset) kept on disk; past this each subset's
#: is made again in its pass (one more back-projection per subset and slab).
SENSITIVITY_DISK_BYTES = 16 << 30
from .stream_scratch import (Workspace, copy_rows, copy_volume, stream_bounds, subset_order,
                             subset_starts)


def stream_sirt(system: CTSystem, g, num_iter, out, **kwargs):
    """SIRT of ``g`` out of core into the file ``out``: :func:`stream_sart` with one
    subset (the same keyword arguments)."""
    return stream_sart(system, g, num_iter, 1, out, name="SIRT", **kwargs)


def stream_sart(system: CTSystem, g, num_iter, num_subsets, out, *, f=None, mask=None,
                nonnegative=True, relaxation=0.9, slabs=None, overwrite=False,
                out_format=None, progress=None, scratch_dir=None, name="SART"):
    """OS-SART of ``g`` with ``num_subsets`` subsets out of core into the file ``out``
    (module docstring).

    ``g``, ``mask`` (projections, or None) and ``f`` (the starting volume, or None for
    zeros): checked float32 sources, dask or NumPy arrays. ``num_subsets``: as
    :func:`leap.algorithms.sart` (at least 1, at most one per view). ``out``,
    ``out_format``, ``overwrite``: :func:`~leap.distributed.outputs.open_output`;
    ``scratch_dir``: where the scratch files go (default: the output's directory);
    ``progress``: a tqdm bar of iterations (None: on when the projections exceed
    256 MiB); ``slabs``: the number of z-slabs (default
    :func:`~leap.distributed.stream_scratch.stream_bounds`). Returns the volume read back
    lazily from ``out`` (a dask array).
    """
    num_iter = check_count("num_iter", num_iter)
    lam = np.float32(check_relaxation(relaxation))
    na, nr, nc = system.projection_shape
    M = max(1, min(check_count("num_subsets", num_subsets, 0), na))
    if system.model is not None:
        raise NotImplementedError(f"out-of-core {name} of the {type(system.model).__name__} "
                                  "model is not streamed; use client=None (Dask) or memory")
    nz = system.volume_shape[0]
    bounds = stream_bounds(system, slabs)
    subsets = [system] if M == 1 else [system.views(slice(m, None, M)) for m in range(M)]
    parts = [[s.part(z0, z1) for z0, z1 in bounds] for s in subsets]
    starts = subset_starts(na, M)

    def grouped(m, v):
        """Subset m's views ``v`` (a slice of its own views) in the grouped scratch."""
        return slice(starts[m] + v.start, starts[m] + v.stop)

    with Workspace(system, out, bounds, name, out_format=out_format,
                   overwrite=overwrite, scratch_dir=scratch_dir) as ws:
        G, W = ws.rows("g"), ws.rows("w")
        PF = [ws.rows("pf0", starts[1]), ws.rows("pf1", starts[1])]
        # The sensitivities are kept on disk while they fit SENSITIVITY_DISK_BYTES, else
        # made again in each subset's pass (one more back-projection, as in memory).
        keep = M == 1 or 4 * M * int(np.prod(system.volume_shape)) <= SENSITIVITY_DISK_BYTES
        F, S = ws.volume("f"), (ws.volume("sens", M) if keep else None)

        def sensitivity(part, v, r):
            ones = np.ones((v.stop - v.start, r.stop - r.start, nc), np.float32)
            return safe_reciprocal(part.backproject(ones), np)

        copy_rows(_reader(g), G, (na, nr, nc), M)
        # W = m / P1: P1 summed from the slabs' shares, then inverted block by block.
        for m in range(M):
            for part, v, r in parts[m]:
                W.add(part.project(np.ones(part.volume_shape, np.float32)), grouped(m, v), r)
        read_mask = None if mask is None else _reader(mask, "mask")
        order = None if M == 1 else subset_order(na, M)
        for a, b in zip(W.starts[:-1], W.starts[1:]):
            w = safe_reciprocal(W.read(slice(None), slice(a, b)), np)
            if read_mask is not None:
                mk = read_mask(0, na, a, b)
                w = w * (mk if order is None else mk[order])
            W.write(w, 0, a)
        for m in range(M if keep else 0):
            for (z0, z1), (part, v, r) in zip(bounds, parts[m]):
                S.write(m * nz + z0, sensitivity(part, v, r))
        copy_volume(f, F, bounds, system.volume_shape)
        if num_iter > 0:
            for (z0, z1), (part, v, r) in zip(bounds, parts[0]):
                PF[0].add(part.project(F.read(z0, z1)), v, r)
        step = 0
        for n in ws.iterations(num_iter, progress):
            for m in range(M):
                cur, nxt = PF[step % 2], PF[(step + 1) % 2]
                step += 1
                last = n == num_iter - 1 and m == M - 1
                if not last:
                    nxt.zero()
                for k, ((z0, z1), (part, v, r)) in enumerate(zip(bounds, parts[m])):
                    res = G.read(grouped(m, v), r) - cur.read(v, r)
                    res *= W.read(grouped(m, v), r)
                    d = part.backproject(res)
                    d *= (S.read(m * nz + z0, m * nz + z1) if keep
                          else sensitivity(part, v, r))
                    fz = F.read(z0, z1)
                    fz += lam * d
                    if nonnegative:
                        np.maximum(fz, 0.0, out=fz)
                    F.write(z0, fz)
                    if not last:       # the next subset's projection, share by share
                        part_next, v_next, r_next = parts[(m + 1) % M][k]
                        nxt.add(part_next.project(fz), v_next, r_next)
        return ws.commit(F)
