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

import os
import shutil
import uuid
from pathlib import Path

import numpy as np

from ..io.lazy import _TIFF_SUFFIXES, HDF5Source, Source, TiffStack, ZarrSource, _da, _grow

__all__ = ["Source", "TiffStack", "HDF5Source", "ZarrSource", "is_source", "open_zarr",
           "open_hdf5", "open_tiff_stack", "open_source", "as_dask", "write_zarr",
           "store_zarr", "_da", "_grow"]

_HDF5_SUFFIXES = (".h5", ".hdf5", ".hdf", ".nxs")


def is_source(x) -> bool:
    """Whether ``x`` is read lazily (a dask array, Zarr/HDF5 object, :class:`Source`, a
    path or a list of paths) rather than being an in-memory array."""
    if isinstance(x, (str, os.PathLike, Source)):
        return True
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return True
    return type(x).__module__.split(".")[0] in ("dask", "zarr", "h5py")


# ------------------------------------------------------------------------- Zarr
def open_zarr(store, component: str | None = None, *, chunks=None):
    """A Zarr array as a dask array (its own chunks unless ``chunks`` is given)."""
    return ZarrSource(store, component).to_dask(chunks)


# ------------------------------------------------------------------------- HDF5
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
