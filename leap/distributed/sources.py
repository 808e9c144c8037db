"""Lazy array sources: Zarr, HDF5 and TIFF stacks as ``dask.array``, and atomic Zarr output.

Every opener reads only metadata (shapes, dtypes, each TIFF's header) and raises a clear
error naming the file or dataset before any work starts; the data are read chunk by chunk
when the tasks that need them run, on whichever worker runs them.

* :func:`open_zarr`: a Zarr array (path, store or ``zarr.Array``; ``component`` for an
  array inside a group).
* :func:`open_hdf5`: an HDF5 dataset, e.g. NeXus ``/entry/data/data``; ``'file.h5:/path'``
  is accepted wherever a source is.
* :func:`open_tiff_stack`: a directory, glob pattern or list of TIFF files, one
  projection (or a stack of them) each, in sorted order.
* :func:`as_dask`: any of these, a NumPy array or a ``dask.array``.
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


def _da():
    import dask.array as da
    return da


def is_source(x) -> bool:
    """Whether ``x`` is something :func:`as_dask` opens lazily (not a NumPy array)."""
    if isinstance(x, (str, os.PathLike)):
        return True
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return True
    mod = type(x).__module__.split(".")[0]
    return mod in ("dask", "zarr", "h5py")


# ------------------------------------------------------------------------- Zarr
def open_zarr(store, component: str | None = None, *, chunks=None):
    """A Zarr array as a dask array (its own chunks unless ``chunks`` is given)."""
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
            raise ValueError(f"{path!r} is a Zarr group, not an array; pass component= one "
                             f"of {names}")
        arr = node
    return _da().from_zarr(arr, chunks=chunks if chunks is not None else arr.chunks)


# ------------------------------------------------------------------------- HDF5
class _HDF5Dataset:
    """A picklable, lazily opened HDF5 dataset: each read opens the file (read-only), so
    tasks on any worker can read their chunk."""

    def __init__(self, path: str, dataset: str):
        import h5py
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
                self.chunks = d.chunks
        except OSError as e:
            raise OSError(f"cannot read {path!r} as an HDF5 file: {e}") from e
        self.ndim = len(self.shape)

    def __getitem__(self, key):
        import h5py
        with h5py.File(self.path, "r") as f:
            return f[self.dataset][key]


def open_hdf5(path, dataset: str | None = None, *, chunks=None):
    """An HDF5 dataset as a dask array. ``path`` may carry the dataset as
    ``'file.h5:/entry/data/data'``. Chunks default to the dataset's own (grouped to
    about 64 MB), else whole projections."""
    path = os.fspath(path)
    if dataset is None:
        if ":" not in path:
            raise ValueError(f"give the HDF5 dataset: open_hdf5({path!r}, '/entry/data/data') "
                             f"or '{path}:/entry/data/data'")
        path, dataset = path.rsplit(":", 1)
    src = _HDF5Dataset(path, dataset)
    if chunks is None:
        chunks = src.chunks if src.chunks is not None else (1,) + src.shape[1:]
        chunks = _grow(chunks, src.shape, src.dtype.itemsize)
    return _da().from_array(src, chunks=chunks, lock=False, asarray=True,
                            name=f"hdf5-{uuid.uuid5(uuid.NAMESPACE_URL, path + dataset + str(os.path.getmtime(path)))}")


def _grow(chunks, shape, itemsize, target=64 << 20):
    """Chunks along the first axis grown to about ``target`` bytes."""
    per = int(np.prod(chunks[1:], dtype=np.int64)) * itemsize if len(chunks) > 1 else itemsize
    first = max(chunks[0], min(shape[0], target // max(per, 1)))
    return (int(first),) + tuple(int(c) for c in chunks[1:])


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


def _read_tiff(path):
    import tifffile
    return tifffile.imread(path)


def open_tiff_stack(source):
    """A stack of TIFF files (directory, glob pattern or list; sorted by name) as a dask
    array: 2-D files stack along a new first axis (one projection each), 3-D files
    concatenate along their first axis. Every file's header is read first: a missing,
    unreadable or differently shaped file is named in the error."""
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
                             f"({shape0} {dtype0}); a stack needs files of one shape and dtype")
    if len(shape0) not in (2, 3):
        raise ValueError(f"TIFF files must hold 2-D images or 3-D stacks, {files[0]!r} "
                         f"holds shape {shape0}")
    import dask
    da = _da()
    parts = [da.from_delayed(dask.delayed(_read_tiff)(p), shape0, dtype0) for p in files]
    return da.stack(parts) if len(shape0) == 2 else da.concatenate(parts)


# --------------------------------------------------------------------- dispatch
def as_dask(x, name: str = "array", *, chunks=None):
    """``x`` as a dask array: a dask array as it is, a NumPy array wrapped (``chunks``),
    a Zarr array or store path (``*.zarr``, or any directory Zarr can open), an HDF5
    dataset (``h5py.Dataset`` or ``'file.h5:/dataset'``), or TIFF files (a directory,
    glob pattern, list, or one ``.tif``)."""
    da = _da()
    if isinstance(x, da.Array):
        return x
    if isinstance(x, np.ndarray):
        return da.from_array(x, chunks=chunks if chunks is not None else x.shape)
    mod = type(x).__module__.split(".")[0]
    if mod == "zarr":
        return open_zarr(x)
    if mod == "h5py":
        return open_hdf5(x.file.filename, x.name)
    if isinstance(x, (list, tuple)) and x and all(isinstance(p, (str, os.PathLike)) for p in x):
        return open_tiff_stack(x)
    if isinstance(x, (str, os.PathLike)):
        s = os.fspath(x)
        low = s.lower()
        if low.endswith(_TIFF_SUFFIXES) or any(c in s for c in "*?["):
            return open_tiff_stack(s)
        head, _, tail = s.rpartition(":")
        if head and tail.startswith("/") and head.lower().endswith((".h5", ".hdf5", ".hdf", ".nxs")):
            return open_hdf5(head, tail)
        if low.endswith((".h5", ".hdf5", ".hdf", ".nxs")):
            raise ValueError(f"{name}: give the dataset inside the HDF5 file as "
                             f"'{s}:/entry/data/data'")
        if os.path.isdir(s) and not low.endswith(".zarr") and \
                any(p.suffix.lower() in _TIFF_SUFFIXES for p in Path(s).iterdir()):
            return open_tiff_stack(s)
        return open_zarr(s)
    raise TypeError(f"{name} must be a dask array, a NumPy array, a Zarr array or path, an "
                    f"HDF5 dataset ('file.h5:/dataset') or TIFF files, got {type(x).__name__}")


# ------------------------------------------------------------------------ output
def write_zarr(x, path, *, client=None, overwrite: bool = False):
    """Compute the dask array ``x`` into a new Zarr store at ``path`` (a local directory),
    all or nothing: the chunks are written to a temporary store beside it, renamed to
    ``path`` once every chunk is written, and removed on any error. Returns ``x`` read
    back lazily from the store."""
    from . import _cluster
    path = os.path.abspath(os.fspath(path))
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path!r} exists; pass overwrite=True to replace it")
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise FileNotFoundError(f"the directory {parent!r} for the Zarr output does not exist")
    tmp = f"{path}.partial-{uuid.uuid4().hex[:12]}"
    try:
        store = _da().to_zarr(x, tmp, compute=False)
        _cluster.compute(client, store)
        if os.path.exists(path):
            shutil.rmtree(path)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return open_zarr(path)
