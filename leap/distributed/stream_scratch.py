"""The scratch space of the out-of-core iterative methods (:mod:`leap.distributed.stream_sirt`,
:mod:`leap.distributed.stream_ls`): the output writer and the raw float32 scratch files of
one run, on local disk, removed when the run ends whatever happens.

Projection-sized arrays are :class:`~leap.distributed.stream.ScratchRows` (row blocks,
so a slab reads a few contiguous runs of its rows); volume-sized arrays are
:class:`ScratchVolume` (slabs of slices, contiguous).
"""
from __future__ import annotations

import math
import os
import uuid

import numpy as np

from ..system import CTSystem
from . import slabs as slabs_module, stream
from .outputs import open_output
from .stream import ScratchRows, ScratchVolume, _progress, _reader  # noqa: F401


def stream_bounds(system: CTSystem, slabs):
    """The z-slabs ``[(z0, z1), ...]`` of an out-of-core run: ``slabs`` of them, or
    (None) slabs of about :data:`~leap.distributed.slabs.SLAB_BYTES` of volume each,
    thinned (as the out-of-core FBP's) while a slab's rows of one projection-sized array
    exceed :data:`~leap.distributed.stream.SLAB_ROWS_BYTES` and thinner slabs still help
    (a slab holds its rows of three or four such arrays).

    No two-slabs-per-thread minimum as on Dask: one process runs the slabs one after
    another, each kernel on all cores, and a cone-beam slab costs its projection and
    back-projection kernels about in proportion to its detector rows, not its slices
    (slabs of a small volume each reach most rows: two cost nearly twice one)."""
    nz, ny, nx = system.volume_shape
    first = max(1, min(nz, math.ceil(4 * nz * ny * nx / slabs_module.SLAB_BYTES)))
    return stream._slab_bounds(system, slabs, system.projection_shape[2], first)


def default_progress(system: CTSystem, progress):
    """``progress``, or (None) whether the projections exceed
    :data:`~leap.distributed.stream.PROGRESS_BYTES`."""
    if progress is None:
        na, nr, nc = system.projection_shape
        return 4 * na * nr * nc > stream.PROGRESS_BYTES
    return bool(progress)


class Workspace:
    """The output writer and the scratch files of one out-of-core run, as a context:
    on leaving it every scratch file is closed and removed, and on an exception the
    output is aborted (left absent, all or nothing as
    :func:`~leap.distributed.outputs.open_output` says).

    ``name`` (the method's) tags the scratch files (``.leap-<name>-<array>-<uuid>.f32``
    in ``scratch_dir``, default the output's directory) and the progress bar."""

    def __init__(self, system: CTSystem, out, bounds, name, *, out_format=None,
                 overwrite=False, scratch_dir=None):
        self.system, self.bounds, self.name = system, bounds, name
        self.writer = open_output(out, system.volume_shape, [b - a for a, b in bounds],
                                  out_format=out_format, overwrite=overwrite)
        self.where = (os.path.dirname(self.writer.path) if scratch_dir is None
                      else os.fspath(scratch_dir))
        if not os.path.isdir(self.where):
            self.writer.abort()
            raise FileNotFoundError(f"the scratch directory {self.where!r} does not exist")
        self.tag = uuid.uuid4().hex
        self.files, self.loops = [], []

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            for loop in self.loops:
                loop.close()
            if exc_type is not None:
                self.writer.abort()
        finally:
            for x in self.files:
                x.close()
        return False

    def _path(self, key):
        return os.path.join(self.where, f".leap-{self.name.lower()}-{key}-{self.tag}.f32")

    def iterations(self, num_iter, progress):
        """``range(num_iter)``, counted on a tqdm bar of iterations when ``progress``
        (:func:`default_progress`); the bar is closed however the loop ends."""
        def loop():
            bar = _progress(default_progress(self.system, progress), num_iter,
                            f"{self.name} (out of core)", "iteration")
            try:
                for n in range(num_iter):
                    yield n
                    if bar is not None:
                        bar.update(1)
            finally:
                if bar is not None:
                    bar.close()
        self.loops.append(loop())
        return self.loops[-1]

    def rows(self, key, num_views=None) -> ScratchRows:
        """A projection-sized scratch file (``num_views`` views, default all) in row
        blocks of about :data:`~leap.distributed.stream.ROW_BLOCK_BYTES` of all views."""
        na, nr, nc = self.system.projection_shape
        per_block = max(1, min(nr, stream.ROW_BLOCK_BYTES // max(1, 4 * na * nc)))
        self.files.append(ScratchRows(self._path(key), (num_views or na, nr, nc), per_block))
        return self.files[-1]

    def volume(self, key, copies=1) -> ScratchVolume:
        """A volume-sized scratch file (``copies`` volumes one after another in z)."""
        nz, ny, nx = self.system.volume_shape
        self.files.append(ScratchVolume(self._path(key), (copies * nz, ny, nx)))
        return self.files[-1]

    def commit(self, F: ScratchVolume):
        """Write the volume ``F`` to the output slab by slab and commit it; returns the
        output read back lazily."""
        for z0, z1 in self.bounds:
            self.writer.write(z0, F.read(z0, z1))
        self.writer.commit()
        return self.writer.result()


def copy_volume(f, F: ScratchVolume, bounds, shape) -> bool:
    """Copy the starting volume ``f`` (None: zeros) into ``F`` slab by slab; returns
    whether any value is non-zero."""
    read = None if f is None else _reader(f, "f")
    nonzero = False
    for z0, z1 in bounds:
        x = (np.zeros((z1 - z0,) + tuple(shape[1:]), np.float32) if read is None
             else read(z0, z1, 0, shape[1]))
        nonzero = nonzero or bool(np.any(x))
        F.write(z0, x)
    return nonzero


def copy_rows(read, scratch: ScratchRows, shape, num_subsets=1):
    """Copy the projections into ``scratch``, a block of views at a time (each frame
    read once), their views grouped by subset: subset m's views m, m+M, … are stored one
    after another from :func:`subset_starts` ``[m]`` on (M = 1: in their own order)."""
    na, nr, nc = shape
    M = num_subsets
    starts = subset_starts(na, M)
    step = max(1, stream.VIEW_BLOCK_BYTES // (4 * nr * nc))
    for v in range(0, na, step):
        ve = min(v + step, na)
        block = read(v, ve, 0, nr)
        if M == 1:
            scratch.write(block, v, 0)
            continue
        for m in range(M):
            j = v + (m - v) % M             # the block's first view of subset m
            if j < ve:
                scratch.write(block[j - v::M], starts[m] + (j - m) // M, 0)


def subset_starts(num_views, num_subsets):
    """Where each subset's views begin in the grouped order of :func:`copy_rows`
    (M + 1 offsets, the last one ``num_views``)."""
    sizes = [len(range(m, num_views, num_subsets)) for m in range(num_subsets)]
    return [int(s) for s in np.concatenate([[0], np.cumsum(sizes)])]


def subset_order(num_views, num_subsets):
    """The original view of each grouped position (:func:`copy_rows`)."""
    return np.concatenate([np.arange(m, num_views, num_subsets)
                           for m in range(num_subsets)])
