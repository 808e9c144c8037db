"""Out-of-core FBP on one machine in two streaming passes: each raw frame read once.

:func:`leap.distributed.fbp` with ``client=False`` and an ``out`` file runs here.
Slab by slab FBP straight from the files (:class:`~leap.distributed.slabs.SlabPlan`) reads
and filters every detector row once per slab that needs it: cone-beam slabs need
overlapping row ranges, and a TIFF frame is decoded again by each slab. Instead:

1. **Filter pass**, over blocks of views: a reader thread reads the next block (the
   source's own read: TIFF decoding, flat field, −log) while this thread weights and
   ramp-filters the current one with FBP's own filtering stage
   (:class:`leap.reconstruction.fbp.FilterStage`, the code the in-memory
   :func:`leap.reconstruction.fbp.fbp` runs) and
   writes the filtered rows to a scratch file on local disk.
2. **Back-projection pass**. Circular scans (parallel, fan, cone; :func:`by_row_blocks`)
   go by blocks of volume rows y, every slice at once: each block sums chunks of views
   (all rows, filtered into the back-projector's layout,
   :func:`leap.reconstruction.fbp.backprojection_plan`), read one chunk ahead from the
   scratch file, the back-projector adding each chunk in place; finished blocks go to a raw scratch volume, which is then copied to
   the output slab by slab. z-slabs would pay the back-projector's per-column cost once
   per slab (:func:`by_row_blocks` gives the figures). Other scans (helical, tilted,
   flying focal spot, offset-scan weighting) and runs given ``slabs`` go over z-slabs: a
   reader thread reads the next slab's rows (and, for helical scans, views) of filtered
   projections while this thread back-projects the current slab and a writer thread
   stores the finished slabs.

So ``fbp = filter pass + back-projection pass`` equals ``system.fbp`` of the whole
array to float rounding (the cone family's back-projector sums the rows of its crop).
Both passes run on the CPU (Numba, all cores), whatever ``system.devices`` says; systems
with a special model (symmetric object, attenuated transform) take the Dask slab path.

The scratch file is raw float32 grouped in blocks of detector rows: block k holds rows
``rk0:rk1`` of every view as one (views, rows, columns) array, so a slab reads a few
contiguous runs (one per row block it touches, its views only) and the filter pass
writes one contiguous run per row block. It is read and written with ``pread`` /
``pwrite`` rather than memory-mapped, so the page cache does not count in the process's
resident memory. It is removed when the run ends, whatever happens.

Memory: a few view blocks of projections (:data:`VIEW_BLOCK_BYTES` each) in the filter
pass; by row blocks, one block of the volume (:data:`BLOCK_VOLUME_BYTES`), two chunks of
views (:data:`CHUNK_VIEW_BYTES`) and the back-projector's copy of one; by z-slabs, two
slabs' rows of filtered projections, the back-projector's copy of one and two volume
slabs (slabs are sized so a slab's rows stay under :data:`SLAB_ROWS_BYTES`). Disk: the
filtered projections, and by row blocks the volume too, float32. Outputs (:func:`open_output`): a Zarr store (all or nothing),
an HDF5 dataset (all or nothing) or a TIFF stack (one slice per file, written as slabs
finish; removed again if the run fails). A slab or block whose read or back-projection
fails is redone (``retries`` times) before the run gives up; an unreadable frame stops the run
at once with the file named.
"""
from __future__ import annotations

import os
import queue
import threading
import uuid

import numpy as np

from ..kernels.cpu import launch as _cpu
from ..reconstruction.fbp import FilterStage, backproject_filtered, backprojection_plan
from ..system import CTSystem
from .outputs import open_output
from .slabs import check_slabs, default_slabs, slab_bounds

#: Bytes of float32 projections per block of views in the filter pass.
VIEW_BLOCK_BYTES = 48 << 20
#: Bytes of one scratch row block (all views of its rows).
ROW_BLOCK_BYTES = 32 << 20
#: Upper bound on one slab's rows of filtered projections (the slab count grows until
#: every slab's rows fit).
SLAB_ROWS_BYTES = 192 << 20
#: Bytes of float32 volume per block of rows (every slice) in the back-projection pass
#: by row blocks (:func:`by_row_blocks`): the back-projector adds each chunk of views
#: to it in place.
BLOCK_VOLUME_BYTES = 512 << 20
#: Bytes of filtered projections (every row) per chunk of views in that pass: each chunk
#: is read ahead and copied once by the back-projector; the block's volume is read and
#: written once per chunk.
CHUNK_VIEW_BYTES = 240 << 20
#: Slices per slab when the finished volume is copied to the output.
COPY_SLICES = 64
#: Show a progress bar by default when the projections are larger than this.
PROGRESS_BYTES = 256 << 20


class ScratchRows:
    """Filtered projections (views, rows, cols) float32 in a raw file of row blocks.

    Block k (rows ``starts[k]:starts[k+1]``) is stored as one C-ordered (views, rows of
    the block, cols) array at ``offsets[k]``. :meth:`write` takes a block of views (all
    rows, or the rows of whole row blocks), :meth:`read` any views and rows."""

    def __init__(self, path, shape, rows_per_block: int):
        self.path, self.shape = os.fspath(path), tuple(int(n) for n in shape)
        na, nr, nc = self.shape
        self.starts = list(range(0, nr, rows_per_block)) + [nr]
        self.offsets = [4 * na * nc * r for r in self.starts]
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.ftruncate(self.fd, self.offsets[-1])
        except OSError:
            self.close()
            raise

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass

    def _pwrite(self, data, offset):
        view = memoryview(np.ascontiguousarray(data)).cast("B")
        while view:
            n = os.pwrite(self.fd, view, offset)
            view, offset = view[n:], offset + n

    def _pread(self, out, offset):
        view = memoryview(out).cast("B")
        while view:
            n = os.preadv(self.fd, [view], offset)
            if n == 0:
                raise OSError(f"the scratch file {self.path!r} ended early (removed or "
                              "truncated while in use?)")
            view, offset = view[n:], offset + n

    def write(self, block, v0: int, r0: int = 0):
        """Store ``block`` (nv, nr, cols): views v0:v0+nv, rows r0:r0+nr (whole row
        blocks)."""
        na, _, nc = self.shape
        nv, nr = block.shape[:2]
        for k in range(len(self.starts) - 1):
            a, b = self.starts[k], self.starts[k + 1]
            if b <= r0 or a >= r0 + nr:
                continue
            if a < r0 or b > r0 + nr:
                raise ValueError(f"rows {r0}:{r0 + nr} do not cover whole row blocks")
            self._pwrite(block[:, a - r0:b - r0], self.offsets[k] + 4 * v0 * (b - a) * nc)

    def zero(self):
        """Set every value to 0 (the file is cut to nothing and grown again: sparse)."""
        os.ftruncate(self.fd, 0)
        os.ftruncate(self.fd, self.offsets[-1])

    def add(self, block, views: slice, rows: slice):
        """Add ``block`` (nv, nr, cols) into views and rows (slices, step 1): the row
        blocks it touches are read, summed into and written back whole."""
        na, nr_all, nc = self.shape
        v0, v1, _ = views.indices(na)
        r0, r1, _ = rows.indices(nr_all)
        for k in range(len(self.starts) - 1):
            a, b = self.starts[k], self.starts[k + 1]
            lo, hi = max(a, r0), min(b, r1)
            if lo >= hi:
                continue
            buf = np.empty((v1 - v0, b - a, nc), np.float32)
            offset = self.offsets[k] + 4 * v0 * (b - a) * nc
            self._pread(buf, offset)
            buf[:, lo - a:hi - a] += block[:, lo - r0:hi - r0]
            self._pwrite(buf, offset)

    def read(self, views: slice, rows: slice) -> np.ndarray:
        """Views and rows (slices, step 1) as a new (nv, nr, cols) float32 array."""
        na, nr_all, nc = self.shape
        v0, v1, _ = views.indices(na)
        r0, r1, _ = rows.indices(nr_all)
        out = np.empty((v1 - v0, r1 - r0, nc), np.float32)
        if len(self.starts) == 2 and (r0, r1) == (0, nr_all):
            self._pread(out, 4 * v0 * nr_all * nc)      # one block of every row: one run
            return out
        for k in range(len(self.starts) - 1):
            a, b = self.starts[k], self.starts[k + 1]
            lo, hi = max(a, r0), min(b, r1)
            if lo >= hi:
                continue
            buf = np.empty((v1 - v0, b - a, nc), np.float32)
            self._pread(buf, self.offsets[k] + 4 * v0 * (b - a) * nc)
            out[:, lo - r0:hi - r0] = buf[:, lo - a:hi - a]
        return out


class ScratchVolume:
    """A (num_z, num_y, num_x) float32 raw file read and written by slabs of slices (and
    written by blocks of rows, :meth:`write_rows`)."""

    def __init__(self, path, shape):
        self.path, self.shape = os.fspath(path), tuple(int(n) for n in shape)
        self.plane = self.shape[1] * self.shape[2]
        self.rows = ScratchRows(self.path, (1, self.shape[0], self.plane), 1)

    def read(self, z0, z1):
        return self.rows.read(slice(0, 1), slice(z0, z1))[0].reshape((z1 - z0,) + self.shape[1:])

    def write(self, z0, f):
        self.rows._pwrite(np.ascontiguousarray(f, np.float32), 4 * z0 * self.plane)

    def write_rows(self, y0, f):
        """Store ``f`` (num_z, rows, num_x): rows y0:y0+rows of every slice."""
        nx = self.shape[2]
        for z in range(self.shape[0]):
            self.rows._pwrite(np.ascontiguousarray(f[z], np.float32),
                              4 * (z * self.plane + y0 * nx))

    def close(self):
        self.rows.close()


def _ahead(jobs, depth: int = 1):
    """Run the callables ``jobs`` in order in a background thread, at most ``depth``
    results ready ahead of the one the consumer holds (a job starts only once a result
    has been taken, so memory holds ``depth + 1`` results at most); yields
    ``(result, None)`` or ``(None, exception)`` for each. The thread stops early when
    the consumer does."""
    q: queue.Queue = queue.Queue()
    slots = threading.Semaphore(depth)
    stop = threading.Event()

    def work():
        for job in jobs:
            while not slots.acquire(timeout=0.1):
                if stop.is_set():
                    return
            if stop.is_set():
                return
            try:
                item = (job(), None)
            except BaseException as e:              # handed to the consumer
                item = (None, e)
            q.put(item)

    t = threading.Thread(target=work, name="leap-read-ahead", daemon=True)
    t.start()
    try:
        for _ in range(len(jobs)):
            item = q.get()
            slots.release()          # the next job may start while this one is used
            yield item
            del item
    finally:
        stop.set()
        t.join()


def _progress(enabled, total, desc, unit):
    if not enabled:
        return None
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit=unit, leave=False)


def _reader(g, name="g"):
    """``read(vs, ve, rs, re)`` → float32 C-contiguous block of g (a Source, a dask or a
    NumPy array), checked finite (an error names the array ``name``)."""
    from .sources import Source

    def read(vs, ve, rs, re):
        key = (slice(vs, ve), slice(rs, re), slice(None))
        if isinstance(g, Source):
            x = g.read(key)
        elif isinstance(g, np.ndarray):
            x = g[key]
        else:
            x = g[key].compute(scheduler="threads")
        x = np.ascontiguousarray(x, dtype=np.float32)
        if not np.isfinite(x).all():
            bad = np.argwhere(~np.isfinite(x))[0]
            raise ValueError(f"{name} holds NaN or infinite values (first in view {vs + bad[0]}, "
                             f"row {rs + bad[1]}, column {bad[2]}); clean the data first "
                             "(e.g. a bad-pixel correction)")
        return x
    return read


def _needs_all_views(g) -> bool:
    """Whether a region read of g computes from every view (stripe removal): the filter
    pass then goes by blocks of rows, so each read covers all views once."""
    return bool(getattr(g, "rings", 0))


def _slab_bounds(system: CTSystem, slabs, ncf: int, first=None):
    """Slab bounds: ``slabs`` if given, else ``first`` (default :func:`default_slabs`),
    doubled while the largest slab's rows of filtered projections exceed
    :data:`SLAB_ROWS_BYTES` and doubling still shrinks them by a fifth (cone beams: a
    slab's rows are its own plus the spread of the cone, which thinner slabs do not
    shrink; they would only read the shared rows more often)."""
    nz = system.volume_shape[0]
    if slabs is not None:
        return slab_bounds(nz, check_slabs(system, slabs))

    def worst(bounds):
        most = 0
        for z0, z1 in bounds:
            _, v, r = system.part(z0, z1, for_fbp=True)
            most = max(most, 4 * (v.stop - v.start) * (r.stop - r.start) * ncf)
        return most

    n = default_slabs(system) if first is None else first
    bounds = slab_bounds(nz, n)
    size = worst(bounds)
    while size > SLAB_ROWS_BYTES and n < nz:
        finer = slab_bounds(nz, min(nz, 2 * n))
        smaller = worst(finer)
        if smaller > 0.8 * size:
            break
        n, bounds, size = min(nz, 2 * n), finer, smaller
    return bounds


def stream_fbp(system: CTSystem, g, out, *, slabs=None, overwrite=False, out_format=None,
               progress=None, scratch_dir=None, retries: int = 2):
    """FBP of ``g`` into the file ``out`` in two streaming passes (module docstring).

    ``g``: a checked (views, rows, cols) float32 :class:`~leap.io.lazy.Source`, dask or
    NumPy array. ``out``, ``out_format``, ``overwrite``: :func:`open_output`.
    ``scratch_dir``: where the scratch file of filtered projections (the size of the
    float32 projections, wider for offset scans) goes; default the output's directory.
    ``progress``: tqdm bars (``tqdm.auto``, so notebooks show widgets); None: when the
    projections exceed :data:`PROGRESS_BYTES`. ``retries``: how many times a failed slab
    is redone. Returns the volume read back lazily from ``out`` (a dask array).
    """
    if system.model is not None:
        raise NotImplementedError(f"out-of-core FBP of the {type(system.model).__name__} "
                                  "model is not streamed; use client=None (Dask) or memory")
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
        raise ValueError(f"retries must be a whole number >= 0, got {retries!r}")
    o = system.fbp_options
    na, nr, nc = system.projection_shape
    stage = FilterStage(system.geometry, system.volume, ramp_filter=o.ramp_filter,
                        lowpass=o.lowpass, window=o.window, truncated_scan=o.truncated_scan,
                        offset_scan=o.offset_scan)
    ncf = stage.geometry.projection_shape[2]
    plan = None
    if slabs is None and by_row_blocks(system) and not _needs_all_views(g):
        plan = backprojection_plan(system.geometry, system.volume, offset_scan=o.offset_scan,
                                   fov_radius=system.fov_radius,
                                   helical_window=o.helical_window)
    by_blocks = plan is not None
    if by_blocks:       # the finished volume is copied out in slabs of COPY_SLICES
        nz = system.volume_shape[0]
        bounds = [(z, min(z + COPY_SLICES, nz)) for z in range(0, nz, COPY_SLICES)]
    else:
        bounds = _slab_bounds(system, slabs, ncf)
    if progress is None:
        progress = 4 * na * nr * nc > PROGRESS_BYTES
    writer = open_output(out, system.volume_shape, [b - a for a, b in bounds],
                         out_format=out_format, overwrite=overwrite)
    scratch_dir = os.path.dirname(writer.path) if scratch_dir is None else os.fspath(scratch_dir)
    if not os.path.isdir(scratch_dir):
        writer.abort()
        raise FileNotFoundError(f"the scratch directory {scratch_dir!r} does not exist")
    if by_blocks:
        # Views filtered straight into the back-projector's layout (as the in-memory FBP
        # does), every view one contiguous run: (views, columns + guards, rows [+ 1]).
        shape = _cpu.prepared_shape(plan)
        rows_per_block = shape[1]
    else:
        shape = (na, nr, ncf)
        rows_per_block = max(1, min(nr, ROW_BLOCK_BYTES // max(1, 4 * na * ncf)))
    scratch = volume = None
    tag = uuid.uuid4().hex
    try:
        scratch = ScratchRows(os.path.join(scratch_dir, f".leap-fbp-scratch-{tag}.f32"),
                              shape, rows_per_block)
        _filter_pass(stage, _reader(g), scratch, (na, nr, nc), progress, _needs_all_views(g),
                     plan)
        if by_blocks:
            volume = ScratchVolume(os.path.join(scratch_dir, f".leap-fbp-volume-{tag}.f32"),
                                   system.volume_shape)
            _row_block_pass(system, scratch, volume, progress, retries)
            scratch.close()
            _copy_out(volume, bounds, writer)
        else:
            _backprojection_pass(system, scratch, bounds, writer, progress, retries)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        for x in (scratch, volume):
            if x is not None:
                x.close()
    return writer.result()


def _filter_pass(stage, read, scratch, shape, progress, by_rows, plan=None):
    """Filter every view once into ``scratch`` (blocks of views, or of whole scratch row
    blocks when a read computes from all views), reading one block ahead; with a kernel
    ``plan``, in its prepared layout (blocks of views)."""
    na, nr, nc = shape
    if by_rows:
        blocks = [(0, na, a, b) for a, b in zip(scratch.starts[:-1], scratch.starts[1:])]
    else:
        view_bytes = 4 * max(nr * nc, scratch.shape[1] * scratch.shape[2])
        step = max(1, VIEW_BLOCK_BYTES // view_bytes)
        blocks = [(v, min(v + step, na), 0, nr) for v in range(0, na, step)]
    bar = (_progress(progress, nr, "filtering projections", "row") if by_rows else
           _progress(progress, na, "filtering projections", "view"))
    reads = _ahead([lambda b=b: read(*b) for b in blocks], depth=2)
    try:
        for (vs, ve, rs, re), (x, err) in zip(blocks, reads):
            if err is not None:
                raise err
            # Never in place: a read may return a view of the caller's array.
            if plan is None:
                q = np.empty((ve - vs, re - rs, scratch.shape[2]), np.float32)
                stage(x, q, views=(vs, ve), rows=(rs, re))
            else:
                q = np.empty((ve - vs,) + scratch.shape[1:], np.float32)
                stage(x, q, views=(vs, ve), rows=(rs, re), layout=_cpu.prepared_layout(plan),
                      row_factor=plan.row_factor)
            scratch.write(q, vs, rs)
            del x, q
            if bar is not None:
                bar.update(re - rs if by_rows else ve - vs)
    finally:
        reads.close()          # the read-ahead thread ends before the scratch file closes
        if bar is not None:
            bar.close()


def _backprojection_pass(system, scratch, bounds, writer, progress, retries):
    """Back-project slab by slab from the scratch rows, one slab's rows read ahead and
    finished slabs stored by a writer thread; a failed slab is redone ``retries``
    times."""
    o = system.fbp_options
    parts = [system.part(z0, z1, for_fbp=True) for z0, z1 in bounds]
    bar = _progress(progress, system.volume_shape[0], "back-projecting slices", "slice")
    store = _Store(writer)
    reads = _ahead([lambda p=p: scratch.read(p[1], p[2]) for p in parts], depth=1)
    try:
        for (z0, z1), (part, v, r), (q, err) in zip(bounds, parts, reads):
            for attempt in range(retries + 1):
                try:
                    if err is not None:
                        raise err
                    if q is None:
                        q = scratch.read(v, r)
                    f = backproject_slab(part, q, o)
                    break
                except Exception as e:       # redone: a slab is a pure function of its rows
                    q, err = None, None
                    if attempt == retries:
                        raise RuntimeError(f"out-of-core FBP: slab of slices {z0}:{z1} failed "
                                           f"{retries + 1} times; last error: "
                                           f"{type(e).__name__}: {e}") from e
            del q
            store.put(z0, f)
            if bar is not None:
                bar.update(z1 - z0)
        store.close()
    except BaseException:
        store.close(cancel=True)
        raise
    finally:
        reads.close()
        if bar is not None:
            bar.close()


def by_row_blocks(system: CTSystem) -> bool:
    """Whether the back-projection pass goes by blocks of volume rows (every slice at
    once, ``_row_block_pass``) rather than z-slabs: circular scans of the parallel,
    fan and flat or curved cone beams, untilted, with one focal spot and no offset-scan
    weighting (whose layout is derived from all the views, so a chunk of them cannot be
    back-projected alone).

    The cone family's back-projector costs, per call, a part per voxel and view and a
    part per voxel column (x, y) and view (its footprint and row mapping, about 40
    voxels' worth at 384³), so z-slabs of s slices pay the second part once per slab:
    the 27 slabs of 29 slices that keep a 768³ volume from 800 views of 768² under the
    rows bound made the back-projection 2.5 times the in-memory one (16 slabs of 384³:
    2.5 times; 4 slabs: 1.0-1.25). A block of rows with all its slices pays it once, as
    in memory, and reads every view (in chunks), which a circular scan's slabs nearly
    do anyway; helical slabs read only their own views, so they keep the z-slabs."""
    from ..geometry import ConeBeam, FanBeam, ParallelBeam
    geo = system.geometry
    if type(geo) not in (ParallelBeam, FanBeam, ConeBeam) or system.model is not None \
            or system.fbp_options.offset_scan:
        return False
    if isinstance(geo, ConeBeam) and (geo.is_helical or geo.tilt != 0.0
                                      or geo.source_shifts is not None):
        return False
    return True


def _row_blocks(system: CTSystem, view_bytes: int):
    """``(row bounds, view bounds)``: blocks of volume rows of about
    :data:`BLOCK_VOLUME_BYTES` (every slice) and chunks of views of about
    :data:`CHUNK_VIEW_BYTES` of filtered projections (``view_bytes`` a view)."""
    na = system.projection_shape[0]
    nz, ny, nx = system.volume_shape
    rows = max(1, min(ny, BLOCK_VOLUME_BYTES // (4 * nz * nx)))
    views = max(1, min(na, CHUNK_VIEW_BYTES // view_bytes))
    return ([(y, min(y + rows, ny)) for y in range(0, ny, rows)],
            [(v, min(v + views, na)) for v in range(0, na, views)])


def _row_block_pass(system, scratch, volume, progress, retries):
    """Back-project block of volume rows by block (every slice), each block summed over
    chunks of views read one chunk ahead from ``scratch``, into the raw ``volume``."""
    o = system.fbp_options
    ys, vs = _row_blocks(system, 4 * scratch.shape[1] * scratch.shape[2])
    v = system.volume
    nz, _, nx = system.volume_shape
    geos = [system.geometry[a:b] for a, b in vs]
    bar = _progress(progress, len(ys) * len(vs), "back-projecting", "block")
    try:
        for y0, y1 in ys:
            sub = v.with_changes(num_y=y1 - y0, offset_y=v.y0 + 0.5 * (y0 + y1 - 1) *
                                 v.voxel_width)
            for attempt in range(retries + 1):
                try:
                    f = np.zeros((nz, y1 - y0, nx), np.float32)
                    reads = _ahead([lambda a=a, b=b: scratch.read(slice(a, b), slice(None))
                                    for a, b in vs], depth=1)
                    try:
                        for geo, (q, err) in zip(geos, reads):
                            if err is not None:
                                raise err
                            plan = backprojection_plan(geo, sub, offset_scan=o.offset_scan,
                                                       fov_radius=system.fov_radius,
                                                       helical_window=o.helical_window)
                            _backproject_chunk(plan, q, f)
                            del q
                            if bar is not None:
                                bar.update(1)
                    finally:
                        reads.close()
                    break
                except Exception as e:    # redone: a block is a pure function of the scratch
                    if attempt == retries:
                        raise RuntimeError(f"out-of-core FBP: the block of volume rows {y0}:{y1} "
                                           f"failed {retries + 1} times; last error: "
                                           f"{type(e).__name__}: {e}") from e
            volume.write_rows(y0, f)
            del f
    finally:
        if bar is not None:
            bar.close()


def _backproject_chunk(plan, G, f):
    """f += the chunk's back-projection, from its views in the prepared layout."""
    _cpu.backproject_prepared(plan, G, f, accumulate=True)


def _copy_out(volume, bounds, writer):
    """The finished volume to the output, slab by slab (a writer thread stores one while
    the next is read)."""
    store = _Store(writer)
    try:
        for z0, z1 in bounds:
            store.put(z0, volume.read(z0, z1))
        store.close()
    except BaseException:
        store.close(cancel=True)
        raise


def backproject_slab(part: CTSystem, q, options):
    """FBP's back-projection of one slab (:meth:`~leap.system.CTSystem.part`) from its
    rows (and views) of filtered projections."""
    return backproject_filtered(part.geometry, part.volume, q, offset_scan=options.offset_scan,
                                fov_radius=part.fov_radius,
                                helical_window=options.helical_window)


class _Store:
    """A writer thread storing finished slabs (at most one waiting); the first error is
    raised by the next :meth:`put` or :meth:`close`."""

    def __init__(self, writer):
        self.writer, self.q, self.error = writer, queue.Queue(maxsize=1), None
        self.t = threading.Thread(target=self._run, name="leap-write-slabs", daemon=True)
        self.t.start()

    def _run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            if self.error is None:
                try:
                    self.writer.write(*item)
                except BaseException as e:
                    self.error = e

    def put(self, z0, f):
        if self.error is not None:
            raise self.error
        self.q.put((z0, f))

    def close(self, cancel=False):
        if cancel:
            self.error = self.error or RuntimeError("cancelled")
        self.q.put(None)
        self.t.join()
        if not cancel and self.error is not None:
            raise self.error
