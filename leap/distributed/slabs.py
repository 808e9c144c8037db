"""Projection, back-projection and FBP of a :class:`~leap.system.CTSystem` cut into z-slabs.

A slab of volume slices ``z0:z1`` is an independent problem on the detector rows (and,
for helical scans, the views) that it touches: :meth:`leap.system.CTSystem.part`, the
geometry's own range queries. So

* back-projection and FBP are one task per slab, each reading only its rows and views of
  the projections (for FBP it filters them itself: filtering runs along detector rows,
  so a crop of rows filters as the whole does);
* projection is one task per slab, each making the slab's share of its rows and views;
  every block of the output is the sum of the shares that overlap it, added pairwise
  (a tree, so no task holds more than two shares).

The volume's chunks are the slabs (all of y and x); the projections' chunks are blocks
of rows (of views for helical scans), as many as there are slabs.
"""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from ..system import CTSystem, Symmetric
from .sources import Source, _da

#: Default slab size: about this many bytes of volume per slab (the task also holds the
#: rows of projections it reads), and at least two slabs per worker thread.
SLAB_BYTES = 64 << 20


def slab_bounds(num_z: int, slabs: int) -> list[tuple[int, int]]:
    """Contiguous ranges ``(z0, z1)`` covering ``0:num_z``: at most ``slabs`` of them, all
    ``ceil(num_z / slabs)`` slices thick but the last (regular chunks, as Zarr wants)."""
    size = -(-num_z // slabs)
    return [(z, min(z + size, num_z)) for z in range(0, num_z, size)]


def default_slabs(system: CTSystem, client=None) -> int:
    """Slab count: volume slabs of about :data:`SLAB_BYTES`, at least two per worker
    thread, at most one per slice."""
    nz, ny, nx = system.volume_shape
    by_size = math.ceil(4 * nz * ny * nx / SLAB_BYTES)
    threads = 1
    if client is not None:
        threads = max(1, sum(client.nthreads().values()))
    return max(1, min(nz, max(by_size, 2 * threads)))


def check_system(system):
    if not isinstance(system, CTSystem):
        raise TypeError(f"system must be a leap CTSystem (e.g. tomographicModels().system), "
                        f"got {type(system).__name__}")


def check_slabs(system: CTSystem, slabs) -> int:
    nz = system.volume_shape[0]
    if isinstance(slabs, bool) or not isinstance(slabs, (int, np.integer)):
        raise TypeError(f"slabs must be a whole number of slabs (1..{nz}), got {slabs!r}")
    if not 1 <= int(slabs) <= nz:
        raise ValueError(f"slabs must be between 1 and the number of slices {nz}, got {slabs}")
    return int(slabs)


# ---------------------------------------------------------------- slab tasks
def _as_f32(x):
    return np.ascontiguousarray(x, dtype=np.float32)


def _project_task(part: CTSystem, f):
    return part.project(_as_f32(f))


def _backproject_task(part: CTSystem, g):
    return part.backproject(_as_f32(g))


def _fbp_task(part: CTSystem, g):
    return part.fbp(_as_f32(g))


def _read_then(task, part: CTSystem, source, key):
    """``task(part, source.read(key))``: a slab task that reads its own data."""
    return task(part, source.read(key))


def _place(shape, offset, x):
    """``x`` inside a block of zeros of ``shape`` at ``offset`` (views, rows)."""
    out = np.zeros(shape, dtype=np.float32)
    v, r = offset
    out[v:v + x.shape[0], r:r + x.shape[1]] = x
    return out


def _tree_sum(arrays):
    """Sum of equally shaped dask arrays, added pairwise."""
    while len(arrays) > 1:
        pairs = [arrays[i] + arrays[i + 1] for i in range(0, len(arrays) - 1, 2)]
        if len(arrays) % 2:
            pairs.append(arrays[-1])
        arrays = pairs
    return arrays[0]


def _edges(n: int, k: int) -> list[tuple[int, int]]:
    return slab_bounds(n, max(1, min(n, k)))


class SlabPlan:
    """The slab decomposition of a system: ``bounds`` (z0, z1) per slab and each slab's
    :meth:`~leap.system.CTSystem.part` for projection/back-projection and for FBP."""

    def __init__(self, system: CTSystem, slabs: int | None = None, client=None):
        check_system(system)
        if isinstance(system.model, Symmetric) and system.model.axis_deg != 0.0:
            raise NotImplementedError(
                "a rotationally symmetric object with a tilted axis does not separate into "
                "z-slabs; run it in memory (CTSystem.project/fbp)")
        self.system = system
        if slabs is None:
            slabs = default_slabs(system, client)
        self.bounds = slab_bounds(system.volume_shape[0], check_slabs(system, slabs))
        self._parts = {}

    def parts(self, for_fbp: bool = False):
        if for_fbp not in self._parts:
            self._parts[for_fbp] = [self.system.part(z0, z1, for_fbp=for_fbp)
                                    for z0, z1 in self.bounds]
        return self._parts[for_fbp]

    @property
    def volume_chunks(self):
        _, ny, nx = self.system.volume_shape
        return (tuple(z1 - z0 for z0, z1 in self.bounds), (ny,), (nx,))

    def projection_chunks(self):
        """Output blocks of projections: rows split in as many blocks as there are slabs,
        or views for helical scans (whose slabs touch view ranges)."""
        na, nr, nc = self.system.projection_shape
        n = len(self.bounds)
        if getattr(self.system.geometry, "is_helical", False):
            return _edges(na, n), [(0, nr)], nc
        return [(0, na)], _edges(nr, n), nc

    # ------------------------------------------------------------------ maps
    def _per_slab(self, task, g, for_fbp):
        da = _da()
        _, ny, nx = self.system.volume_shape
        blocks = []
        for (z0, z1), (part, v, r) in zip(self.bounds, self.parts(for_fbp)):
            label = f"leap-{task.__name__.strip('_')}-{z0}-{z1}-"
            if isinstance(g, Source):
                # One task reads its rows and computes: nothing read waits in a worker's
                # memory for its slab task (a worker holds one slab's data at a time).
                import dask
                job = dask.delayed(_read_then, pure=True)(
                    task, part, g, (v, r), dask_key_name=label + _da_token(part, g, (v, r)))
                blocks.append(da.from_delayed(job, ((z1 - z0), ny, nx), dtype=np.float32))
                continue
            piece = _region(g, (v, r))
            blocks.append(da.map_blocks(partial(task, part), piece, dtype=np.float32,
                                        chunks=((z1 - z0,), (ny,), (nx,)),
                                        name=label + _da_token(part, piece)))
        return da.concatenate(blocks, axis=0)

    def backproject(self, g):
        """Back-projection of projections (a dask array or a
        :class:`~leap.distributed.sources.Source`) → dask volume chunked by slabs."""
        return self._per_slab(_backproject_task, g, False)

    def fbp(self, g):
        """FBP of projections (dask array or Source) → dask volume chunked by slabs."""
        return self._per_slab(_fbp_task, g, True)

    def project(self, f):
        """Projection of a volume (dask array or Source) → dask projections (blocks of
        :meth:`projection_chunks`), each block the pairwise sum of the overlapping slabs'
        shares."""
        da = _da()
        shares = []
        for (z0, z1), (part, v, r) in zip(self.bounds, self.parts(False)):
            nv, nr = v.stop - v.start, r.stop - r.start
            piece = _region(f, (slice(z0, z1),))
            shares.append((v, r, da.map_blocks(
                partial(_project_task, part), piece, dtype=np.float32,
                chunks=((nv,), (nr,), (self.system.projection_shape[2],)),
                name=f"leap-project-{z0}-{z1}-{_da_token(part, piece)}")))
        view_blocks, row_blocks, nc = self.projection_chunks()
        grid = []
        for va, vb in view_blocks:
            row = []
            for ra, rb in row_blocks:
                shape = (vb - va, rb - ra, nc)
                terms = []
                for v, r, share in shares:
                    lo_v, hi_v = max(va, v.start), min(vb, v.stop)
                    lo_r, hi_r = max(ra, r.start), min(rb, r.stop)
                    if lo_v >= hi_v or lo_r >= hi_r:
                        continue
                    cut = share[lo_v - v.start:hi_v - v.start, lo_r - r.start:hi_r - r.start]
                    terms.append(da.map_blocks(partial(_place, shape, (lo_v - va, lo_r - ra)),
                                               cut.rechunk(-1), dtype=np.float32,
                                               chunks=tuple((s,) for s in shape)))
                row.append([_tree_sum(terms) if terms else
                            da.zeros(shape, dtype=np.float32, chunks=shape)])
            grid.append(row)
        return da.block(grid)          # nested views › rows › columns


def _region(x, key):
    """A region of the input as one chunk: read by one task from a file
    (:class:`~leap.distributed.sources.Source`), or cut from a dask array."""
    if isinstance(x, Source):
        return x.region(key)
    return x[key].rechunk(-1)


def _da_token(*args):
    from dask.base import tokenize
    return tokenize(*args)
