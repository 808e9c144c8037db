"""SIRT out of core on one machine: projections streamed, the iterate in slabs on disk.

:func:`leap.distributed.sirt` with ``client=False`` and an ``out`` file runs here. It is
:func:`leap.algorithms.sirt` (SART with one subset) step for step,

    f ← max(0, f + λ (Pᵀ1)⁻¹ Pᵀ[m (g − P f) / P1]),

with every array on local disk and only a slab of it in memory:

* set-up, once: the measured projections (a file source is read, decoded and
  flat-fielded once here) copied to a scratch file of row blocks
  (:class:`~leap.distributed.stream.ScratchRows`), the weights ``m / P1`` (P1 summed
  slab by slab) to another, the sensitivities ``1 / Pᵀ1`` of every slab and the iterate
  to raw volume files;
* each iteration, two passes over the z-slabs: the projection ``P f`` summed into a
  third projection-sized scratch file from the slabs' shares (each slab adds into the
  row blocks its rows touch), then each slab reads its rows of g, ``m / P1`` and ``P f``,
  back-projects its weighted residual and updates its slices of the iterate.

Cost per iteration against :func:`leap.algorithms.sirt` in memory: the same projection
and back-projection (slab by slab, :meth:`~leap.system.CTSystem.part`), plus reading
and writing the iterate once, writing ``P f`` about twice (shares of neighbouring slabs
overlap in rows) and reading the three projection files once per slab that needs their
rows (about twice each for cone beams): all from local disk / the page cache, not the
original files. Memory: one slab, its rows of four projection-sized arrays and the row
blocks being summed. Disk: three times the projections plus twice the volume, float32,
removed at the end.

Results equal the in-memory SIRT to float rounding (a projection summed from slabs adds
in another order). No callback or data fit is reported (the monitor's data fit would
need one more projection pass per iteration); ``progress`` shows a bar of iterations.
"""
from __future__ import annotations

import os
import uuid

import numpy as np

from ..algorithms._array import safe_reciprocal
from ..algorithms._common import check_count
from ..algorithms.sart import check_relaxation
from ..system import CTSystem
from .outputs import open_output
from .slabs import check_slabs, default_slabs, slab_bounds
from .stream import ROW_BLOCK_BYTES, ScratchRows, _progress, _reader


class ScratchVolume:
    """A (num_z, num_y, num_x) float32 raw file read and written by slabs of slices."""

    def __init__(self, path, shape):
        self.path, self.shape = os.fspath(path), tuple(int(n) for n in shape)
        self.plane = self.shape[1] * self.shape[2]
        self.rows = ScratchRows(self.path, (1, self.shape[0], self.plane), 1)

    def read(self, z0, z1):
        return self.rows.read(slice(0, 1), slice(z0, z1))[0].reshape((z1 - z0,) + self.shape[1:])

    def write(self, z0, f):
        self.rows._pwrite(np.ascontiguousarray(f, np.float32), 4 * z0 * self.plane)

    def close(self):
        self.rows.close()


def stream_sirt(system: CTSystem, g, num_iter, out, *, f=None, mask=None, nonnegative=True,
                relaxation=0.9, slabs=None, overwrite=False, out_format=None, progress=None,
                scratch_dir=None):
    """SIRT of ``g`` out of core into the file ``out`` (module docstring).

    ``g``, ``mask`` (projections, or None) and ``f`` (the starting volume, or None for
    zeros): checked float32 sources, dask or NumPy arrays. ``out``, ``out_format``,
    ``overwrite``: :func:`~leap.distributed.outputs.open_output`; ``scratch_dir``: where
    the scratch files go (default: the output's directory); ``progress``: a tqdm bar of
    iterations (None: on when the projections exceed 256 MiB); ``slabs``: the number of
    z-slabs (default :func:`~leap.distributed.slabs.default_slabs`). Returns the volume
    read back lazily from ``out`` (a dask array).
    """
    num_iter = check_count("num_iter", num_iter)
    lam = np.float32(check_relaxation(relaxation))
    if system.model is not None:
        raise NotImplementedError(f"out-of-core SIRT of the {type(system.model).__name__} "
                                  "model is not streamed; use client=None (Dask) or memory")
    na, nr, nc = system.projection_shape
    nz = system.volume_shape[0]
    bounds = slab_bounds(nz, default_slabs(system) if slabs is None
                         else check_slabs(system, slabs))
    parts = [system.part(z0, z1) for z0, z1 in bounds]
    if progress is None:
        progress = 4 * na * nr * nc > 256 << 20
    writer = open_output(out, system.volume_shape, [b - a for a, b in bounds],
                         out_format=out_format, overwrite=overwrite)
    where = os.path.dirname(writer.path) if scratch_dir is None else os.fspath(scratch_dir)
    files = []
    try:
        if not os.path.isdir(where):
            raise FileNotFoundError(f"the scratch directory {where!r} does not exist")
        tag = uuid.uuid4().hex
        rows_per_block = max(1, min(nr, ROW_BLOCK_BYTES // max(1, 4 * na * nc)))

        def rows_file(name):
            files.append(ScratchRows(os.path.join(where, f".leap-sirt-{name}-{tag}.f32"),
                                     (na, nr, nc), rows_per_block))
            return files[-1]

        def volume_file(name):
            files.append(ScratchVolume(os.path.join(where, f".leap-sirt-{name}-{tag}.f32"),
                                       system.volume_shape))
            return files[-1]

        G, W, PF = rows_file("g"), rows_file("w"), rows_file("pf")
        F, S = volume_file("f"), volume_file("sens")
        _copy_rows(_reader(g), G, (na, nr, nc))
        # W = m / P1: P1 summed from the slabs' shares, then inverted block by block.
        for (z0, z1), (part, v, r) in zip(bounds, parts):
            W.add(part.project(np.ones(part.volume_shape, np.float32)), v, r)
        read_mask = None if mask is None else _reader(mask)
        for a, b in zip(W.starts[:-1], W.starts[1:]):
            w = safe_reciprocal(W.read(slice(None), slice(a, b)), np)
            if read_mask is not None:
                w = w * read_mask(0, na, a, b)
            W.write(w, 0, a)
        read_f = None if f is None else _reader(f)
        for (z0, z1), (part, v, r) in zip(bounds, parts):
            ones = np.ones((v.stop - v.start, r.stop - r.start, nc), np.float32)
            S.write(z0, safe_reciprocal(part.backproject(ones), np))
            F.write(z0, np.zeros(part.volume_shape, np.float32) if read_f is None
                    else read_f(z0, z1, 0, system.volume_shape[1]))
        bar = _progress(progress, num_iter, "SIRT (out of core)", "iteration")
        try:
            for _ in range(num_iter):
                PF.zero()
                for (z0, z1), (part, v, r) in zip(bounds, parts):
                    PF.add(part.project(F.read(z0, z1)), v, r)
                for (z0, z1), (part, v, r) in zip(bounds, parts):
                    res = G.read(v, r) - PF.read(v, r)
                    res *= W.read(v, r)
                    d = part.backproject(res)
                    d *= S.read(z0, z1)
                    fz = F.read(z0, z1)
                    fz += lam * d
                    if nonnegative:
                        np.maximum(fz, 0.0, out=fz)
                    F.write(z0, fz)
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        for z0, z1 in bounds:
            writer.write(z0, F.read(z0, z1))
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        for x in files:
            x.close()
    return writer.result()


def _copy_rows(read, scratch, shape):
    """Copy the projections into ``scratch``, a block of views at a time (each frame
    read once)."""
    from . import stream
    na, nr, nc = shape
    step = max(1, stream.VIEW_BLOCK_BYTES // (4 * nr * nc))
    for v in range(0, na, step):
        scratch.write(read(v, min(v + step, na), 0, nr), v, 0)
