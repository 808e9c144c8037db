"""Lazy array sources: Zarr, HDF5 and TIFF stacks, and atomic Zarr output.

Every opener reads only metadata (shapes, dtypes, each TIFF's header) and raises a clear
error naming the file or dataset before any work starts. A :class:`Source` then reads
any region on whichever worker needs it: a slab task reads just its detector rows (and
views) straight from the file, so no task holds whole chunks that every slab shares, and
memory stays bounded by the slab.

* :func:`open_zarr`: a Zarr array (path, store or ``zarr.Array``; ``component`` for an
  array inside a group).
* :func:`open_hdf5`: an HDF5 dataset, e.g. NeXus ``/entry/data/data``; ``'file.h5:/path'``
  is accepted wherever a source is.
* :func:`open_tiff_stack`: a directory, glob pattern or list of TIFF files, one
  projection (or a stack of them) each, in sorted order.
* :func:`as_dask`: any of these, a NumPy array or a ``dask.array``, as a dask array.
* :func:`write_zarr`: compute an array into a Zarr store all or nothing: chunks go to a
  temporary store beside the target, renamed into place only once all are written.
"""
from __future__ import annotations

import glob
import os
import shutil
import uuid
from pathlib import Path

import numpy as np

_TIFF_SUFFIXES = (".tif", ".tiff")
_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".nxs")


def _da():
    import dask.array as da
    return da


def is_source(x) -> bool:
    """Whether ``x`` is read lazily (a dask array, Zarr/HDF5 object, :class:`Source`, a
    path or a list of paths) rather than being an in-memory array."""
    if isinstance(x, (str, os.PathLike, Source)):
        return True
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return True
    return type(x).__module__.split(".")[0] in ("dask", "zarr", "h5py")


class Source:
    """An array on disk: ``shape``, ``dtype``, ``chunks`` (the natural read blocks) and
    ``read(key)`` of any region (a tuple of slices). Picklable: workers open the file
    themselves."""

    shape: tuple
    dtype: np.dtype
    chunks: tuple

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, key):          # for dask.array.from_array
        return self.read(key)

    def to_dask(self, chunks=None):
        """The whole array as a dask array, read in ``chunks`` (default: the source's own
        grown to about 64 MB)."""
        chunks = chunks if chunks is not None else _grow(self.chunks, self.shape,
                                                         self.dtype.itemsize)
        return _da().from_array(self, chunks=chunks, lock=False, asarray=True,
                                name=f"{type(self).__name__.lower()}-{uuid.uuid4().hex}")

    def region(self, key):
        """The region ``key`` (a tuple of slices) as a one-chunk dask array read by a
        single task."""
        import dask
        shape = tuple(len(range(*k.indices(n))) for k, n in zip(key, self.shape)) + \
            self.shape[len(key):]
        return _da().from_delayed(dask.delayed(self.read, pure=True)(key), shape, self.dtype)


def _grow(chunks, shape, itemsize, target=64 << 20):
    """Chunks along the first axis grown to about ``target`` bytes."""
    per = int(np.prod(chunks[1:], dtype=np.int64)) * itemsize if len(chunks) > 1 else itemsize
    first = max(chunks[0], min(shape[0], target // max(per, 1)))
    return (int(first),) + tuple(int(c) for c in chunks[1:])


# ------------------------------------------------------------------------- Zarr
class ZarrSource(Source):
    """A Zarr array (opened read-only on each read)."""

    def __init__(self, store, component: str | None = None):
        import zarr
        if isinstance(store, zarr.Array):
            arr = store
        else:
            path = os.fspath(store) if isinstance(store, (str, os.PathLike)) else store
            if isinstance(path, str) and "://" not in path and not os.path.exists(path):
                raise FileNotFoundError(f"no Zarr store at {path!r}")
            try:
                node = zarr.open(path, mode="r")
            except Exception as e:
                raise ValueError(f"cannot open {path!r} as a Zarr store: {e}") from e
            if component:
                try:
                    node = node[component]
                except KeyError:
                    raise KeyError(f"the Zarr store {path!r} has no array {component!r}") from None
            if not isinstance(node, zarr.Array):
                names = list(getattr(node, "array_keys", lambda: [])())
                raise ValueError(f"{path!r} is a Zarr group, not an array; pass component= "
                                 f"one of {names}")
            arr = node
        self.array = arr
        self.shape, self.dtype, self.chunks = tuple(arr.shape), np.dtype(arr.dtype), arr.chunks

    def read(self, key):
        key = tuple(key)
        first = key[0] if key else slice(None)
        if not isinstance(first, slice):
            return np.asarray(self.array[key])
        # Read a block of the store's chunks along the first axis at a time: Zarr decodes
        # the chunks of one request concurrently, and a few rows of many chunks would
        # otherwise hold every chunk decoded at once.
        start, stop, step = first.indices(self.shape[0])
        if step != 1:
            return np.asarray(self.array[key])
        c = self.chunks[0]
        parts = []
        a = start
        while a < stop:
            b = min(stop, (a // c + 1) * c)
            parts.append(np.asarray(self.array[(slice(a, b),) + key[1:]]))
            a = b
        if not parts:
            return np.asarray(self.array[key])
        return np.concatenate(parts)

    def to_dask(self, chunks=None):
        return _da().from_zarr(self.array, chunks=chunks if chunks is not None else self.chunks)


def open_zarr(store, component: str | None = None, *, chunks=None):
    """A Zarr array as a dask array (its own chunks unless ``chunks`` is given)."""
    return ZarrSource(store, component).to_dask(chunks)


# ------------------------------------------------------------------------- HDF5
class HDF5Source(Source):
    """An HDF5 dataset; each read opens the file read-only, so tasks on any worker can
    read their region."""

    def __init__(self, path, dataset: str):
        import h5py
        path = os.fspath(path)
        self.path, self.dataset = path, dataset
        if not os.path.exists(path):
            raise FileNotFoundError(f"no HDF5 file at {path!r}")
        try:
            with h5py.File(path, "r") as f:
                if dataset not in f:
                    names = []
                    f.visititems(lambda n, o: names.append("/" + n)
                                 if isinstance(o, h5py.Dataset) else None)
                    raise KeyError(f"the HDF5 file {path!r} has no dataset {dataset!r}; its "
                                   f"datasets: {names[:20]}")
                d = f[dataset]
                if not isinstance(d, h5py.Dataset):
                    raise ValueError(f"{dataset!r} in {path!r} is a group, not a dataset")
                self.shape, self.dtype = tuple(d.shape), np.dtype(d.dtype)
                self.chunks = d.chunks if d.chunks is not None else (1,) + self.shape[1:]
        except OSError as e:
            raise OSError(f"cannot read {path!r} as an HDF5 file: {e}") from e

    def read(self, key):
        import h5py
        with h5py.File(self.path, "r") as f:
            return f[self.dataset][key]


def open_hdf5(path, dataset: str | None = None, *, chunks=None):
    """An HDF5 dataset as a dask array. ``path`` may carry the dataset as
    ``'file.h5:/entry/data/data'``. Chunks default to the dataset's own (grown to about
    64 MB), else whole projections."""
    path = os.fspath(path)
    if dataset is None:
        head, _, tail = path.rpartition(":")
        if not head or not tail.startswith("/"):
            raise ValueError(f"give the HDF5 dataset: open_hdf5({path!r}, '/entry/data/data') "
                             f"or '{path}:/entry/data/data'")
        path, dataset = head, tail
    return HDF5Source(path, dataset).to_dask(chunks)


# ------------------------------------------------------------------------- TIFF
def _tiff_files(source) -> list[str]:
    if isinstance(source, (list, tuple)):
        files = [os.fspath(p) for p in source]
    else:
        s = os.fspath(source)
        if os.path.isdir(s):
            files = sorted(str(p) for p in Path(s).iterdir()
                           if p.suffix.lower() in _TIFF_SUFFIXES)
        elif any(c in s for c in "*?["):
            files = sorted(glob.glob(s))
        else:
            files = [s]
    if not files:
        raise FileNotFoundError(f"no TIFF files found for {source!r}")
    return files


class TiffStack(Source):
    """TIFF files stacked along the first axis: 2-D files one plane each, 3-D files their
    planes in turn. Every file's header is read up front: a missing, unreadable or
    differently shaped file is named in the error."""

    def __init__(self, source):
        import tifffile
        files = _tiff_files(source)
        shapes = []
        for p in files:
            try:
                with tifffile.TiffFile(p) as t:
                    s = t.series[0]
                    shapes.append((tuple(s.shape), np.dtype(s.dtype)))
            except FileNotFoundError:
                raise FileNotFoundError(f"TIFF file {p!r} does not exist") from None
            except Exception as e:
                raise ValueError(f"cannot read TIFF file {p!r}: {e}") from e
        shape0, dtype0 = shapes[0]
        for p, (s, dt) in zip(files, shapes):
            if s != shape0 or dt != dtype0:
                raise ValueError(f"TIFF file {p!r} holds {s} {dt}, unlike {files[0]!r} "
                                 f"({shape0} {dtype0}); a stack needs files of one shape and "
                                 "dtype")
        if len(shape0) not in (2, 3):
            raise ValueError(f"TIFF files must hold 2-D images or 3-D stacks, {files[0]!r} "
                             f"holds shape {shape0}")
        self.files = files
        self.per_file = 1 if len(shape0) == 2 else shape0[0]
        plane = shape0[-2:]
        self.shape = (self.per_file * len(files),) + plane
        self.dtype = dtype0
        self.chunks = (self.per_file,) + plane

    def read(self, key):
        import tifffile
        key = tuple(key) + (slice(None),) * (3 - len(key))
        idx = range(*key[0].indices(self.shape[0])) if isinstance(key[0], slice) else [key[0]]
        out, cache = [], {}
        for i in idx:
            k, j = divmod(i, self.per_file)
            if k not in cache:
                cache.clear()            # one file in memory at a time
                img = tifffile.imread(self.files[k])
                cache[k] = img.reshape((self.per_file,) + self.shape[1:])
            out.append(cache[k][j][key[1:]])
        arr = np.stack(out) if out else np.empty((0,) + self.shape[1:], self.dtype)[(slice(None),) + key[1:]]
        return arr if isinstance(key[0], slice) else arr[0]


def open_tiff_stack(source):
    """A stack of TIFF files (directory, glob pattern or list; sorted by name) as a dask
    array: 2-D files stack along a new first axis (one projection each), 3-D files
    concatenate along their first axis; one file per chunk."""
    return TiffStack(source).to_dask(chunks=None)


# --------------------------------------------------------------------- dispatch
def open_source(x, name: str = "array"):
    """``x`` as a :class:`Source` (Zarr, HDF5, TIFF), or as a dask array (dask and NumPy
    arrays); see :func:`as_dask` for what ``x`` may be."""
    da = _da()
    if isinstance(x, (Source, da.Array)):
        return x
    if isinstance(x, np.ndarray):
        return da.from_array(x, chunks=x.shape)
    mod = type(x).__module__.split(".")[0]
    if mod == "zarr":
        return ZarrSource(x)
    if mod == "h5py":
        return HDF5Source(x.file.filename, x.name)
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return TiffStack(x)
    if isinstance(x, (str, os.PathLike)):
        s = os.fspath(x)
        low = s.lower()
        if low.endswith(_TIFF_SUFFIXES) or any(c in s for c in "*?["):
            return TiffStack(s)
        head, _, tail = s.rpartition(":")
        if head and tail.startswith("/") and head.lower().endswith(_HDF5_SUFFIXES):
            return HDF5Source(head, tail)
        if low.endswith(_HDF5_SUFFIXES):
            raise ValueError(f"{name}: give the dataset inside the HDF5 file as "
                             f"'{s}:/entry/data/data'")
        if os.path.isdir(s) and not low.endswith(".zarr") and \
                any(p.suffix.lower() in _TIFF_SUFFIXES for p in Path(s).iterdir()):
            return TiffStack(s)
        return ZarrSource(s)
    raise TypeError(f"{name} must be a dask array, a NumPy array, a Zarr array or path, an "
                    f"HDF5 dataset ('file.h5:/dataset') or TIFF files, got {type(x).__name__}")


def as_dask(x, name: str = "array", *, chunks=None):
    """``x`` as a dask array: a dask array as it is, a NumPy array wrapped (``chunks``,
    default one chunk), a Zarr array or store path (``*.zarr``, or any directory Zarr can
    open), an HDF5 dataset (``h5py.Dataset`` or ``'file.h5:/dataset'``), TIFF files (a
    directory, glob pattern, list, or one ``.tif``) or a :class:`Source`."""
    if isinstance(x, np.ndarray) and chunks is not None:
        return _da().from_array(x, chunks=chunks)
    src = open_source(x, name)
    return src.to_dask() if isinstance(src, Source) else src


# ------------------------------------------------------------------------ output
def write_zarr(x, path, *, client=None, overwrite: bool = False):
    """Compute the dask array ``x`` into a new Zarr store at ``path`` (a local directory),
    all or nothing: the chunks are written to a temporary store beside it, renamed to
    ``path`` once every chunk is written; on any error the tasks still running are let
    finish and the temporary store is removed (an existing ``path`` is kept). ``client``
    as for :func:`leap.distributed.fbp`. Returns the result read back lazily from the
    store."""
    from ._cluster import resolve_client
    return store_zarr(as_dask(x, "x"), path, resolve_client(client), overwrite)


def store_zarr(x, path, client, overwrite: bool = False):
    """:func:`write_zarr` on a resolved client (a Client, or None for this process)."""
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path!r} exists; pass overwrite=True to replace it")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"the directory {parent!r} for the Zarr output does not exist")
    tmp = f"{path}.partial-{uuid.uuid4().hex[:12]}"
    try:
        _store_all(_da().to_zarr(x, tmp, compute=False), client)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return open_zarr(path)


def _store_all(store, client):
    """Run the store graph; on error return only once no task of it is still writing."""
    if client is None:
        from concurrent.futures import ThreadPoolExecutor
        import dask
        pool = ThreadPoolExecutor(os.cpu_count() or 1)
        try:
            dask.compute(store, scheduler="threads", pool=pool)
        finally:
            pool.shutdown(wait=True)       # running chunk writes end before cleanup
        return
    import time
    future = client.compute(store)
    try:
        future.result()
    except BaseException:
        # A cancelled task that a worker is already running cannot be stopped: wait
        # until no worker still executes a task of this graph, so nothing writes later.
        # Optimisation renames the tasks, but their names keep the store layer's.
        tags = [name for name in store.__dask_graph__().layers if "store-map" in name] or \
            [str(k) for k in store.__dask_graph__().keys()]
        future.cancel()
        deadline = time.monotonic() + 120.0
        while time.monotonic() < deadline:
            running = client.run(_executing_keys)
            if not any(t in k for ks in running.values() for k in ks for t in tags):
                break
            time.sleep(0.05)
        raise


def _executing_keys(dask_worker):
    """Keys of the tasks a worker is running now (run on the worker by ``client.run``)."""
    return [str(ts.key) for ts in dask_worker.state.executing]
