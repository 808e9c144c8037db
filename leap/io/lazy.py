"""Lazy arrays on disk: read a region when asked, nothing before.

A :class:`Source` has ``shape``, ``dtype``, ``chunks`` (its natural read blocks) and
``read(key)`` of any region; indexing (``src[10:20, :, 5]``) reads that region into a NumPy
array and ``np.asarray(src)`` reads it all. Sources are picklable (each read opens its
file), so Dask workers read their own regions (:meth:`Source.to_dask`,
:mod:`leap.distributed`), and the scanner readers (:mod:`leap.io.scanners`) hand out raw
projections, flats and darks as sources.

* :class:`TiffStack`: TIFF files, one projection (or a stack of them) each, in order;
* :class:`HDF5Source`: an HDF5 dataset (NeXus ``/entry/data/data``, DXchange
  ``/exchange/data``);
* :class:`ZarrSource`: a Zarr array;
* :class:`Selected`: some planes of another source along its first axis (e.g. a NeXus
  file's projections among its flats and darks);
* :class:`Mapped`: a function of other sources' same regions, applied block by block
  (e.g. flat-field normalisation), itself a source;
* :class:`Oriented`: images turned into leap's detector order (rows and/or columns
  reversed) and binned, lazily; :class:`Constant`: a constant frame stack;
* :class:`PerView`: the base of sources stored a whole frame per file or record.
"""
from __future__ import annotations

import glob
import os
import uuid
from pathlib import Path

import numpy as np

_TIFF_SUFFIXES = (".tif", ".tiff")


def _da():
    import dask.array as da
    return da


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

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):          # also what dask.array.from_array reads through
        return self.read(normalize_key(key, self.shape))

    def __array__(self, dtype=None, copy=None):
        a = self.read((slice(None),) * self.ndim)
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        return f"{type(self).__name__}(shape={self.shape}, dtype={self.dtype})"

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


def normalize_key(key, shape) -> tuple:
    """``key`` (an int, slice, index array, Ellipsis or a tuple of them) as a tuple of one
    entry per axis; raises IndexError for too many indices or an int out of range."""
    if not isinstance(key, tuple):
        key = (key,)
    if any(k is Ellipsis for k in key):
        i = next(j for j, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (len(shape) - len(key) + 1) + key[i + 1:]
    if len(key) > len(shape):
        raise IndexError(f"too many indices ({len(key)}) for an array of shape {shape}")
    out = []
    for k, n in zip(key, shape):
        if isinstance(k, (int, np.integer)):
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of range for an axis of length {n}")
            k = int(k) % n
        out.append(k)
    return tuple(out) + (slice(None),) * (len(shape) - len(key))


def keep_axes(key) -> tuple:
    """A normalised ``key`` with each int ``k`` as the slice ``k:k+1``, so that a read
    keeps every axis (:func:`drop_int_axes` takes them out again)."""
    return tuple(slice(k, k + 1) if isinstance(k, int) else k for k in key)


def drop_int_axes(block, key):
    """``block`` read with :func:`keep_axes` of ``key``, without the axes that ``key``
    indexes by an int (as NumPy indexing would drop them)."""
    return block[tuple(0 if isinstance(k, int) else slice(None) for k in key)]


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


def _check_tiff_length(path, tif, series):
    """Raise naming ``path`` if the file ends before the image data its pages point to
    (a truncated or partly copied file), checked from the headers alone: the first and
    last page of the series."""
    size = os.path.getsize(path)
    pages = series.pages
    for page in {0: pages[0], 1: pages[-1]}.values():
        if page is None:
            continue
        offsets = getattr(page, "dataoffsets", ()) or ()
        counts = getattr(page, "databytecounts", ()) or ()
        if offsets and counts:
            end = max(int(o) + int(c) for o, c in zip(offsets, counts))
            if end > size:
                raise ValueError(f"TIFF file {path!r} is truncated: its image data end at "
                                 f"byte {end} but the file holds {size} bytes")


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
                    _check_tiff_length(p, t, s)
            except FileNotFoundError:
                raise FileNotFoundError(f"TIFF file {p!r} does not exist") from None
            except ValueError as e:
                if str(e).startswith("TIFF file"):
                    raise
                raise ValueError(f"cannot read TIFF file {p!r}: {e}") from e
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

    def _planes(self, k):
        """File ``k`` as (per_file, rows, cols): memory-mapped where the file allows it
        (uncompressed, contiguous: only the rows asked for are read), else read whole."""
        import tifffile
        p = self.files[k]
        try:
            img = tifffile.memmap(p, mode="r")
        except (ValueError, TypeError, OSError):
            try:
                img = tifffile.imread(p)
            except FileNotFoundError:
                raise FileNotFoundError(f"TIFF file {p!r} (frame {k}) no longer exists") \
                    from None
            except Exception as e:
                raise ValueError(f"cannot read TIFF file {p!r} (frame {k} of the stack): "
                                 f"{type(e).__name__}: {e}") from e
        if img.size != self.per_file * self.shape[1] * self.shape[2]:
            raise ValueError(f"TIFF file {p!r} (frame {k}) now holds {img.shape}, not "
                             f"{(self.per_file,) + self.shape[1:]} as when the stack was opened")
        return img.reshape((self.per_file,) + self.shape[1:])

    def read(self, key):
        key = normalize_key(key, self.shape)
        rest = key[1:]
        planes = np.arange(self.shape[0])[key[0]]
        region = np.empty(self.shape[1:], dtype=np.bool_)[rest].shape
        out = np.empty((np.size(planes),) + region, self.dtype)   # filled a plane at a time
        current, img = None, None
        for n, i in enumerate(np.atleast_1d(planes)):
            k, j = divmod(int(i), self.per_file)
            if k != current:             # one file open at a time
                img, current = self._planes(k), k
            out[n] = img[j][rest]
        del img
        return out[0] if np.ndim(planes) == 0 else out


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


# ------------------------------------------------------------- derived sources
class Selected(Source):
    """The planes ``index`` (an int array, in the order given) of ``source`` along its
    first axis: e.g. the projections of a NeXus file among its flats and darks."""

    def __init__(self, source: Source, index):
        index = np.asarray(index, dtype=np.int64).ravel()
        n = source.shape[0]
        if index.size and (index.min() < -n or index.max() >= n):
            raise IndexError(f"plane indices must lie in [0, {n}), got {index.min()} to "
                             f"{index.max()}")
        self.source, self.index = source, index % max(n, 1)
        self.shape = (int(index.size),) + tuple(source.shape[1:])
        self.dtype = source.dtype
        self.chunks = (1,) + tuple(source.shape[1:])

    def read(self, key):
        key = normalize_key(key, self.shape)
        idx = self.index[key[0]]
        if np.ndim(idx) == 0:
            return self.source.read((int(idx),) + key[1:])
        if idx.size == 0:
            return self.source.read((slice(0, 0),) + key[1:])
        # Read in increasing order (HDF5 needs it), then put back in the order asked.
        order = np.argsort(idx, kind="stable")
        sorted_idx = idx[order]
        uniq, inverse = np.unique(sorted_idx, return_inverse=True)
        if uniq.size == uniq[-1] - uniq[0] + 1:
            block = self.source.read((slice(int(uniq[0]), int(uniq[-1]) + 1),) + key[1:])
        else:
            block = self.source.read((uniq,) + key[1:])
        out = np.empty_like(block, shape=(idx.size,) + block.shape[1:])
        out[order] = block[inverse]
        return out


class Mapped(Source):
    """``fn`` applied to the same region of each of ``sources`` (all of one shape), block
    by block: ``Mapped(fn, a, b).read(key) == fn(a.read(key), b.read(key), key=key)``.
    ``fn`` must act on each element (or each plane along the first axis) alone, so that
    a region's result does not depend on the rest, and return ``dtype``."""

    def __init__(self, fn, *sources: Source, dtype=np.float32):
        if not sources:
            raise ValueError("Mapped needs at least one source")
        shape = tuple(sources[0].shape)
        for s in sources[1:]:
            if tuple(s.shape) != shape:
                raise ValueError(f"Mapped sources must share one shape, got {shape} and "
                                 f"{tuple(s.shape)}")
        self.fn, self.sources = fn, sources
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.chunks = tuple(sources[0].chunks)

    def read(self, key):
        key = normalize_key(key, self.shape)
        return np.asarray(self.fn(*(s.read(key) for s in self.sources), key=key),
                          dtype=self.dtype)


class InMemory(Source):
    """A NumPy array as a source (for readers whose format is read whole, and tests)."""

    def __init__(self, array):
        self.array = np.asarray(array)
        self.shape, self.dtype = self.array.shape, self.array.dtype
        self.chunks = (1,) + self.shape[1:] if self.array.ndim else ()

    def read(self, key):
        return np.array(self.array[normalize_key(key, self.shape)], copy=True)


# -------------------------------------------------------- orientation, binning
class PerView(Source):
    """A stack of frames stored one whole frame at a time (a file or a record per view):
    subclasses give ``_view(k)``, frame ``k`` as a ``shape[1:]`` array, and get ``read``
    of any region, which reads each view it touches once."""

    def _view(self, k):
        raise NotImplementedError

    def read(self, key):
        key = normalize_key(key, self.shape)
        rest = key[1:]
        views = np.arange(self.shape[0])[key[0]]
        region = np.empty(self.shape[1:], dtype=np.bool_)[rest].shape
        out = np.empty((np.size(views),) + region, self.dtype)
        for n, k in enumerate(np.atleast_1d(views)):
            out[n] = self._view(int(k))[rest]
        return out[0] if np.ndim(views) == 0 else out


def binning_pair(binning) -> tuple:
    """``binning`` (an int or (rows, cols)) as two positive ints."""
    b = (binning, binning) if np.ndim(binning) == 0 else tuple(binning)
    if len(b) != 2 or any(int(k) != k or k < 1 for k in b):
        raise ValueError(f"binning must be a positive integer or two of them, got {binning!r}")
    return int(b[0]), int(b[1])


class Constant(Source):
    """A constant frame stack (e.g. a white level as the flat), float32, nothing stored."""

    def __init__(self, shape, value):
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(np.float32)
        self.chunks, self.value = self.shape, float(value)

    def read(self, key):
        full = np.broadcast_to(np.float32(self.value), self.shape)
        return np.array(full[normalize_key(key, self.shape)], copy=True)


class Oriented(Source):
    """Images as stored (row 0 at the top, seen from behind the detector) turned into
    leap's detector order: rows flipped (row index up along z) and columns flipped (along
    θ⊥), then ``binning`` (rows, cols) pixels averaged (trailing ones of the flipped image
    dropped). Lazy: each read takes only the stored rows and columns it needs."""

    def __init__(self, source: Source, binning=(1, 1), flip_rows=True, flip_cols=True):
        self.source, self.binning = source, binning_pair(binning)
        self.flips = (bool(flip_rows), bool(flip_cols))
        n, r, c = source.shape
        br, bc = self.binning
        if r < br or c < bc:
            raise ValueError(f"binning {self.binning} is larger than the images ({r}, {c})")
        self.shape = (n, r // br, c // bc)
        binned = br * bc > 1
        self.dtype = np.dtype(np.float32) if binned else np.dtype(source.dtype)
        self.chunks = (1,) + self.shape[1:]

    def _index(self, k, axis):
        """Stored indices (m, b) of the leap indices ``k`` along ``axis`` (1 or 2)."""
        b, n = self.binning[axis - 1], self.source.shape[axis]
        j = np.atleast_1d(np.arange(self.shape[axis])[k])
        flat = j[:, None] * b + np.arange(b)[None, :]
        return (n - 1 - flat) if self.flips[axis - 1] else flat

    def _stored_range(self, k, axis):
        """``(lo, hi, step)``: the stored rows or columns ``lo:hi`` of leap's indices
        ``k`` (a step-1 slice or an int) along ``axis`` without binning, and the step
        (−1 where the axis is flipped) that puts them in leap's order; None if ``k`` is
        not such."""
        n = self.shape[axis]
        if isinstance(k, int):
            k = slice(k, k + 1)
        if not isinstance(k, slice):
            return None
        start, stop, step = k.indices(n)
        if step != 1:
            return None
        stop = max(stop, start)
        if self.flips[axis - 1]:
            return n - stop, n - start, -1
        return start, stop, 1

    def read(self, key):
        v, r, c = normalize_key(key, self.shape)
        vv = keep_axes((v,))[0]                  # the views, as a slice or index array
        if self.binning == (1, 1):
            rr, cc = self._stored_range(r, 1), self._stored_range(c, 2)
            if rr is not None and cc is not None:
                # One stored block read, reordered by strides: a single copy.
                block = self.source.read((vv, slice(rr[0], rr[1]), slice(cc[0], cc[1])))
                out = np.ascontiguousarray(block[:, ::rr[2], ::cc[2]])
                return drop_int_axes(out, (v, r, c))
        ri, ci = self._index(r, 1), self._index(c, 2)
        nv = np.arange(self.shape[0])[v]
        if ri.size == 0 or ci.size == 0 or np.size(nv) == 0:
            out = np.zeros((np.size(nv), len(ri), len(ci)), self.dtype)
        else:
            r0, c0 = int(ri.min()), int(ci.min())
            block = self.source.read((vv, slice(r0, int(ri.max()) + 1),
                                      slice(c0, int(ci.max()) + 1)))
            block = block[:, ri - r0][:, :, :, ci - c0]        # (views, m, br, n, bc)
            out = (block.mean(axis=(2, 4), dtype=np.float64).astype(np.float32)
                   if self.dtype == np.float32 and block.shape[2] * block.shape[4] > 1
                   else np.ascontiguousarray(block[:, :, 0, :, 0]))
        return drop_int_axes(out, (v, r, c))

