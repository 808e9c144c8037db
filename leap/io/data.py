"""Reading and writing CT data arrays: ``.npy``, ``.nrrd`` and tif/tiff sequences.

This module is framework-neutral (NumPy in, NumPy out; torch tensors and CuPy arrays are
accepted as input to :func:`save_data` and copied to host memory). It follows the file
conventions of LEAP's ``save_data`` / ``load_data`` so that files can be exchanged with
LEAP:

* ``.npy`` files hold the array as given (``numpy.save`` / ``numpy.load``).
* ``.nrrd`` files are written with pynrrd's default (Fortran) index order, as LEAP does,
  so numpy axis *i* is NRRD axis *i*; the header gets ``units`` (``mm``), ``spacings``,
  ``thicknesses`` and ``axismins`` (the coordinate of the first sample of each axis).
* tif/tiff: a 2-D array is one file; a 3-D array is a sequence of 2-D files
  ``<base>_<i + sequence_offset><ext>`` cut along axis 0 (or along axis 1 with
  ``axis_split=1``). Files hold float32, or uint8/uint16 after windowing with
  ``[wmin, wmax]``; as in LEAP, the ImageDescription tag stores
  ``slope = … offset = …`` so that a reader recovers ``value = slope * stored + offset``.
  The pixel size (mm) is stored in the X/Y resolution tags (unit: centimetre). LEAP's own
  tif reader also reads these files, except images of fewer than 232 bytes of pixel data
  (LEAP then assumes the data start at byte 8; tifffile puts them at byte 240).

Ranges (``file_range``, ``row_range``, ``col_range``) are inclusive ``[first, last]``
pairs, as in LEAP. Errors raise ``FileNotFoundError`` or ``ValueError`` naming what was
expected (LEAP prints a message and returns ``None``/``False``).
"""
from __future__ import annotations

import math
import numbers
import os
import re

import numpy as np

__all__ = [
    "FILE_DTYPES",
    "SUPPORTED_EXTENSIONS",
    "file_kind",
    "check_file_dtype",
    "save_data",
    "load_data",
    "get_file_list",
    "read_tif",
    "write_tif",
]

SUPPORTED_EXTENSIONS = (".npy", ".nrrd", ".tif", ".tiff")
FILE_DTYPES = (np.dtype(np.float32), np.dtype(np.uint8), np.dtype(np.uint16))

# LEAP ignores a stored slope/offset outside these bounds.
_SLOPE_MAX = 1.0e16
_DESCRIPTION_RE = re.compile(r"^\s*slope\s*=\s*(\S+)\s+offset\s*=\s*(\S+)")


# --------------------------------------------------------------------------- helpers
def _require(module, package):
    """Import an optional dependency, naming the package to install when it is missing."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this file type needs the {package!r} package: "
                          f"pip install {package}") from exc


def file_kind(path):
    """``"npy"``, ``"nrrd"`` or ``"tif"`` from the file name's extension (any case)."""
    name = os.fspath(path)
    if not isinstance(name, str):
        raise TypeError(f"file name must be a str or path, got {type(path).__name__}")
    lower = name.lower()
    if lower.endswith(".npy"):
        return "npy"
    if lower.endswith(".nrrd"):
        return "nrrd"
    if lower.endswith(".tif") or lower.endswith(".tiff"):
        return "tif"
    raise ValueError(f"unsupported file type {name!r}: the name must end in .npy, .nrrd, "
                     ".tif or .tiff")


def check_file_dtype(dtype):
    """The NumPy dtype for a tif file type; only float32, uint8 and uint16 are valid."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        dt = None
    if dt not in FILE_DTYPES:
        raise ValueError(f"invalid file dtype {dtype!r}: must be np.float32, np.uint8 or "
                         "np.uint16")
    return dt


def _to_numpy(x):
    """A NumPy view/copy of ``x`` (numpy array, torch tensor, CuPy array or array-like)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "cpu"):          # torch.Tensor
        return x.detach().cpu().numpy()
    if hasattr(x, "__cuda_array_interface__") and hasattr(x, "get"):   # cupy.ndarray
        return x.get()
    return np.asarray(x)


def _real_float_array(x, what="data"):
    if x.dtype.kind not in "biuf":
        raise ValueError(f"{what} must be a real numeric array, got dtype {x.dtype}")
    return x


def _per_axis(name, value, ndim, positive=False):
    """A scalar or per-axis sequence → list of ``ndim`` floats (extra leading entries of a
    longer sequence are dropped, so a 3-D origin also serves a 2-D slice)."""
    if np.ndim(value) == 0:
        vals = [value] * ndim
    else:
        vals = list(np.asarray(value).ravel())
        if len(vals) < ndim:
            raise ValueError(f"{name} must be a number or a sequence of {ndim} numbers, "
                             f"got {len(vals)} values")
        vals = vals[len(vals) - ndim:]
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number)):
            raise ValueError(f"{name} must contain real numbers, got {v!r}")
        f = float(v)
        if not math.isfinite(f) or (positive and f <= 0.0):
            kind = "positive finite" if positive else "finite"
            raise ValueError(f"{name} must contain {kind} numbers, got {f}")
        out.append(f)
    return out


def _check_range(name, rng):
    """Validate an inclusive ``[first, last]`` range; ``None`` passes through."""
    if rng is None:
        return None
    try:
        vals = list(rng)
    except TypeError:
        vals = None
    ok = vals is not None and len(vals) == 2
    if ok:
        for v in vals:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.number)) \
                    or not float(v).is_integer():
                ok = False
    if not ok or not (0 <= int(vals[0]) <= int(vals[1])):
        raise ValueError(f"{name} must be a pair of integers [first, last] with "
                         f"0 <= first <= last, got {rng!r}")
    return int(vals[0]), int(vals[1])


def _range_slice(name, rng, n, what):
    if rng is None:
        return slice(None)
    if rng[1] > n - 1:
        raise ValueError(f"{name} [{rng[0]}, {rng[1]}] is outside the {n} {what} "
                         f"(valid indices 0..{n - 1})")
    return slice(rng[0], rng[1] + 1)


def _check_axis_split(axis_split):
    if isinstance(axis_split, (bool, np.bool_)) or axis_split not in (0, 1):
        raise ValueError(f"axis_split must be 0 or 1, got {axis_split!r}")
    return int(axis_split)


def _check_out(out, shape, source):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {tuple(out.shape)} but the data in {source} has "
                         f"shape {tuple(shape)}")
    if not out.flags.writeable:
        raise ValueError("out is read-only")
    return out


def _check_dir_for_writing(path):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"folder {directory!r} to save {os.path.basename(path)!r} "
                                "does not exist")
    if not os.access(directory, os.W_OK):
        raise PermissionError(f"folder {directory!r} is not writable")


# ------------------------------------------------------------------- windowing
def _window(x, window):
    """``(wmin, wmax)`` for converting ``x`` to an integer file type.

    ``window`` is ``None`` or ``(wmin, wmax)``; a ``None`` entry means the minimum/maximum of
    the (finite) data. As LEAP, ``wmax <= wmin`` is replaced by ``wmin + 1``.
    """
    if window is None:
        window = (None, None)
    try:
        wmin, wmax = window
    except (TypeError, ValueError):
        raise ValueError(f"window must be None or a pair (wmin, wmax), got {window!r}") from None
    if wmin is None or wmax is None:
        finite = x if np.all(np.isfinite(x)) else x[np.isfinite(x)]
        lo = float(finite.min()) if finite.size else 0.0
        hi = float(finite.max()) if finite.size else 1.0
        wmin = lo if wmin is None else wmin
        wmax = hi if wmax is None else wmax
    wmin, wmax = float(wmin), float(wmax)
    if not (math.isfinite(wmin) and math.isfinite(wmax)):
        raise ValueError(f"window must be finite, got ({wmin}, {wmax})")
    if wmax <= wmin:
        wmax = wmin + 1.0
    return wmin, wmax


def _quantize(image, dtype, wmin, wmax):
    """Map ``[wmin, wmax]`` linearly onto ``[0, max(dtype)]`` (rounded, clipped; NaN → 0).

    Returns the integer image and the ``(slope, offset)`` that invert the mapping.
    """
    top = float(np.iinfo(dtype).max)
    slope = (wmax - wmin) / top
    q = (np.asarray(image, dtype=np.float64) - wmin) / slope
    np.rint(q, out=q)
    np.clip(q, 0.0, top, out=q)
    q[np.isnan(q)] = 0.0
    return q.astype(dtype), slope, wmin


# ------------------------------------------------------------------------- tif
def write_tif(path, image, *, spacing=(1.0, 1.0), dtype=np.float32, window=None):
    """Write one 2-D image as a tif file (LEAP-compatible tags).

    Parameters
    ----------
    path : file name ending in .tif or .tiff.
    image : 2-D array.
    spacing : pixel size (mm) as ``(row, col)`` or one number; stored in the resolution tags.
    dtype : ``np.float32`` (values stored as they are) or ``np.uint8`` / ``np.uint16``
        (values windowed to ``window`` and scaled to the integer range).
    window : ``(wmin, wmax)`` for integer dtypes; ``None`` entries mean the image min/max.

    Returns the file name.
    """
    tifffile = _require("tifffile", "tifffile")

    if file_kind(path) != "tif":
        raise ValueError(f"write_tif needs a .tif or .tiff file name, got {os.fspath(path)!r}")
    img = _real_float_array(_to_numpy(image), "image")
    if img.ndim != 2:
        raise ValueError(f"a tif file holds a 2-D image, got an array of shape {img.shape}")
    dt = check_file_dtype(dtype)
    _check_dir_for_writing(path)
    row_sp, col_sp = _per_axis("spacing", spacing, 2, positive=True)
    if dt == np.float32:
        data, slope, offset = np.ascontiguousarray(img, dtype=np.float32), 1.0, 0.0
    else:
        wmin, wmax = _window(img, window)
        data, slope, offset = _quantize(img, dt, wmin, wmax)
    _write_tif_page(tifffile, os.fspath(path), data, slope, offset, row_sp, col_sp)
    return os.fspath(path)


def _write_tif_page(tifffile, path, data, slope, offset, row_sp, col_sp):
    # LEAP's reader parses "slope = <f> offset = <f>" from the ImageDescription (LEAP puts a
    # vertical tab between the two) and expects uncompressed data within the first 512 bytes.
    description = f"slope = {slope:.9E}\x0boffset = {offset:.9E}"
    tifffile.imwrite(path, data, photometric="minisblack", description=description,
                     metadata=None, software=False, rowsperstrip=data.shape[0],
                     resolution=(10.0 / col_sp, 10.0 / row_sp), resolutionunit="CENTIMETER")


def _read_page(path, row_range, col_range):
    """The (ranged) first page of a tif file, rescaled with its stored slope/offset."""
    tifffile = _require("tifffile", "tifffile")

    if not os.path.isfile(path):
        raise FileNotFoundError(f"tif file {path!r} does not exist")
    with tifffile.TiffFile(path) as tf:
        page = tf.pages[0]
        shape = tuple(page.shape)
        if len(shape) != 2:
            raise ValueError(f"{path!r} is not a single-channel 2-D image (page shape {shape})")
        rows = _range_slice("row_range", row_range, shape[0], f"rows of {path!r}")
        cols = _range_slice("col_range", col_range, shape[1], f"columns of {path!r}")
        raw = page.asarray()[rows, cols]
        description = page.description or ""
    slope, offset = 1.0, 0.0
    if raw.dtype.kind in "iu":
        m = _DESCRIPTION_RE.match(description)
        if m:
            try:
                s, o = float(m.group(1)), float(m.group(2))
            except ValueError:
                s, o = 1.0, 0.0
            if 0.0 < s < _SLOPE_MAX and -_SLOPE_MAX < o < _SLOPE_MAX:
                slope, offset = s, o
    if slope != 1.0 or offset != 0.0:
        return raw.astype(np.float64) * slope + offset
    return raw


def read_tif(path, out=None, *, row_range=None, col_range=None):
    """Read (part of) a 2-D tif image as float32.

    Integer images are rescaled with the ``slope``/``offset`` stored by LEAP (and by
    :func:`write_tif`) in the ImageDescription tag. Only the first page of a multi-page
    file is read, as LEAP does.

    Parameters
    ----------
    path : file name.
    out : optional 2-D numpy array to fill; its shape must equal the (ranged) image shape.
    row_range, col_range : inclusive ``[first, last]`` rows / columns to read.

    Returns ``out`` if given, else a new float32 array.
    """
    path = os.fspath(path)
    values = _read_page(path, _check_range("row_range", row_range),
                        _check_range("col_range", col_range))
    if out is None:
        return np.array(values, dtype=np.float32, order="C")
    _check_out(out, values.shape, path)
    out[...] = values
    return out


_DIGITS_AT_END = re.compile(r"(.*?)(\d+)")


def _scan(directory, prefix, suffix):
    """``[(number, path)]`` for files ``<prefix><digits><suffix>`` in ``directory``."""
    pattern = re.compile(re.escape(prefix) + r"(\d+)" + re.escape(suffix))
    found = []
    for name in os.listdir(directory):
        m = pattern.fullmatch(name)
        if m and os.path.isfile(os.path.join(directory, name)):
            found.append((int(m.group(1)), os.path.join(directory, name)))
    return found


def _resolve_tif(path, file_range=None):
    """``(files, single)``: the sorted tif sequence named by ``path``, or ``([path], True)``
    when ``path`` names a lone 2-D image."""
    path = os.fspath(path)
    file_range = _check_range("file_range", file_range)
    directory, name = os.path.split(path)
    directory_or_cwd = directory or os.curdir
    if not os.path.isdir(directory_or_cwd):
        raise FileNotFoundError(f"folder {directory_or_cwd!r} of {path!r} does not exist")

    def in_dir(p):
        return p if directory else os.path.basename(p)

    base, ext = os.path.splitext(name)
    if "*" in name:
        if name.count("*") != 1:
            raise ValueError(f"a file pattern may hold one '*' (the sequence number), got {path!r}")
        prefix, suffix = name.split("*")
        found = _scan(directory_or_cwd, prefix, suffix)
        tried = f"{prefix}<n>{suffix}"
    else:
        tried = f"{base}_<n>{ext}"
        found = _scan(directory_or_cwd, base + "_", ext)
        if not found:
            m = _DIGITS_AT_END.fullmatch(base)
            if m:  # the name of one member, e.g. base_0007.tif
                tried += f", {m.group(1)}<n>{ext}"
                found = _scan(directory_or_cwd, m.group(1), ext)
        if not found and os.path.isfile(path):
            if file_range is not None:
                raise ValueError(f"file_range applies to a tif sequence but {path!r} is a "
                                 "single image")
            return [path], True
        if not found:
            tried += f", {base}<n>{ext}"
            found = _scan(directory_or_cwd, base, ext)
    if not found:
        raise FileNotFoundError(f"no tif file or sequence found for {path!r} (looked for "
                                f"{tried} in {directory_or_cwd!r})")
    found.sort(key=lambda t: t[0])
    for (n0, p0), (n1, p1) in zip(found, found[1:]):
        if n0 == n1:
            raise ValueError(f"tif sequence has two files numbered {n0}: {p0!r} and {p1!r}")
    if file_range is not None:
        selected = [t for t in found if file_range[0] <= t[0] <= file_range[1]]
        if not selected:
            raise ValueError(f"file_range [{file_range[0]}, {file_range[1]}] selects none of the "
                             f"{len(found)} files numbered {found[0][0]}..{found[-1][0]}")
        found = selected
    files = [in_dir(p) for _, p in found]
    single = file_range is None and len(files) == 1 and os.path.abspath(files[0]) == \
        os.path.abspath(path)
    return files, single


def get_file_list(path, file_range=None):
    """The files of the tif sequence named by ``path``, sorted by sequence number.

    ``path`` may be

    * the base name used when saving (``dir/base.tif`` → ``dir/base_<n>.tif``),
    * the name of any member (``dir/base_0007.tif`` → ``dir/base_<n>.tif``),
    * a base name followed directly by numbers (``dir/img.tif`` → ``dir/img<n>.tif``),
    * a pattern with one ``*`` standing for the number (``dir/img_*_proj.tif``).

    Numbers may be zero-padded; files are ordered by their numeric value. ``file_range``
    ``[first, last]`` keeps the files numbered first..last (inclusive). A name that is a
    lone image (no sequence) gives ``[path]``. Raises ``FileNotFoundError`` when nothing
    matches.
    """
    if file_kind(path) != "tif":
        raise ValueError(f"get_file_list needs a .tif or .tiff name, got {os.fspath(path)!r}")
    return _resolve_tif(path, file_range)[0]


# ------------------------------------------------------------------- save/load
def save_data(path, x, *, spacing=1.0, origin=(0.0, 0.0, 0.0), sequence_offset=0,
              axis_split=0, dtype=np.float32, window=None):
    """Save an array to ``.npy``, ``.nrrd`` or a tif/tiff file or sequence.

    Parameters
    ----------
    path : file name; the extension chooses the format.
    x : array (numpy, torch or CuPy). Tif needs a 2-D or 3-D real array.
    spacing : sample spacing (mm), one number or one per axis (nrrd header; tif
        resolution tags). A longer sequence than ``x.ndim`` uses its last entries.
    origin : coordinate of the first sample of each axis (nrrd ``axismins``), one per axis
        (last entries used, as for ``spacing``).
    sequence_offset : number of the first file of a tif sequence.
    axis_split : 0 or 1, the axis along which a 3-D array is cut into tif files.
    dtype : tif sample type: ``np.float32`` (default, no clipping), ``np.uint8`` or
        ``np.uint16``. npy and nrrd store ``x`` as it is.
    window : ``(wmin, wmax)`` mapped onto the integer range for uint8/uint16 tifs; a
        ``None`` entry (or ``window=None``) means the min/max of the whole array.

    Returns the list of files written.
    """
    kind = file_kind(path)
    path = os.fspath(path)
    axis_split = _check_axis_split(axis_split)
    if isinstance(sequence_offset, (bool, np.bool_)) or not isinstance(
            sequence_offset, (numbers.Integral, np.integer)) or sequence_offset < 0:
        raise ValueError(f"sequence_offset must be a non-negative integer, got {sequence_offset!r}")
    dt = check_file_dtype(dtype)
    arr = _to_numpy(x)
    _check_dir_for_writing(path)

    if kind == "npy":
        np.save(path, arr)
        return [path]

    if kind == "nrrd":
        nrrd = _require("nrrd", "pynrrd")

        if arr.ndim < 1:
            raise ValueError("cannot save a 0-D array as nrrd")
        sp = _per_axis("spacing", spacing, arr.ndim, positive=True)
        org = _per_axis("origin", origin, arr.ndim)
        header = {"units": ["mm"] * arr.ndim, "spacings": sp, "axismins": org,
                  "thicknesses": sp}
        nrrd.write(path, arr, header)
        return [path]

    # tif / tiff
    arr = _real_float_array(arr, "x")
    if arr.ndim not in (2, 3):
        raise ValueError(f"a tif file or sequence holds a 2-D or 3-D array, got shape {arr.shape}")
    sp = _per_axis("spacing", spacing, arr.ndim, positive=True)
    if dt != np.float32:
        wmin, wmax = _window(arr, window)
    if arr.ndim == 2:
        slices = [(path, arr)]
        row_sp, col_sp = sp
    else:
        base, ext = os.path.splitext(path)
        n = arr.shape[axis_split]
        slices = [(f"{base}_{i + sequence_offset}{ext}",
                   arr[i] if axis_split == 0 else arr[:, i, :]) for i in range(n)]
        row_sp, col_sp = (sp[1], sp[2]) if axis_split == 0 else (sp[0], sp[2])

    tifffile = _require("tifffile", "tifffile")

    written = []
    for name, image in slices:
        if dt == np.float32:
            data, slope, offset = np.ascontiguousarray(image, dtype=np.float32), 1.0, 0.0
        else:
            data, slope, offset = _quantize(image, dt, wmin, wmax)
        _write_tif_page(tifffile, name, data, slope, offset, row_sp, col_sp)
        written.append(name)
    return written


def _select(arr, source, file_range, row_range, col_range, axis_split):
    """Apply the ranges to an array read from a single (npy/nrrd) file."""
    if arr.ndim == 3:
        row_axis = 1 if axis_split == 0 else 0
        index = [slice(None)] * 3
        index[axis_split] = _range_slice("file_range", file_range, arr.shape[axis_split],
                                         f"entries along axis {axis_split} of {source!r}")
        index[row_axis] = _range_slice("row_range", row_range, arr.shape[row_axis],
                                       f"rows (axis {row_axis}) of {source!r}")
        index[2] = _range_slice("col_range", col_range, arr.shape[2],
                                f"columns (axis 2) of {source!r}")
        return arr[tuple(index)]
    if arr.ndim == 2:
        if file_range is not None:
            raise ValueError(f"file_range needs 3-D data but {source!r} holds a 2-D array")
        return arr[_range_slice("row_range", row_range, arr.shape[0], f"rows of {source!r}"),
                   _range_slice("col_range", col_range, arr.shape[1], f"columns of {source!r}")]
    if file_range is not None or row_range is not None or col_range is not None:
        raise ValueError(f"ranges need 2-D or 3-D data but {source!r} holds an array of shape "
                         f"{arr.shape}")
    return arr


def load_data(path, out=None, *, file_range=None, row_range=None, col_range=None,
              axis_split=0):
    """Load an array from ``.npy``, ``.nrrd`` or a tif/tiff file or sequence.

    Parameters
    ----------
    path : ``.npy`` / ``.nrrd`` file, or a tif name or pattern (see :func:`get_file_list`).
    out : optional numpy array to fill and return; its shape must equal that of the data
        read (after ranges), else ``ValueError``.
    file_range : inclusive ``[first, last]`` sequence numbers of the tif files to read
        (npy/nrrd: indices along the split axis).
    row_range, col_range : inclusive ``[first, last]`` rows / columns of each image (npy/nrrd
        3-D: axis 1 — or 0 with ``axis_split=1`` — and axis 2).
    axis_split : 0 stacks tif files along axis 0, giving ``(files, rows, cols)``; 1 stacks
        them along axis 1, giving ``(rows, files, cols)``.

    Returns ``out`` if given, else a new array: float32 for tif (uint8/uint16 files are
    rescaled with their stored slope/offset), the stored dtype for npy/nrrd. A tif
    sequence gives a 3-D array; a name that is a lone image (no sequence) a 2-D array.
    """
    kind = file_kind(path)
    path = os.fspath(path)
    file_range = _check_range("file_range", file_range)
    row_range = _check_range("row_range", row_range)
    col_range = _check_range("col_range", col_range)
    axis_split = _check_axis_split(axis_split)

    if kind in ("npy", "nrrd"):
        if not os.path.isfile(path):
            raise FileNotFoundError(f"file {path!r} does not exist")
        if kind == "npy":
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        else:
            nrrd = _require("nrrd", "pynrrd")

            arr, _ = nrrd.read(path)
        sel = _select(arr, path, file_range, row_range, col_range, axis_split)
        if out is None:
            return np.array(sel)
        _check_out(out, sel.shape, path)
        out[...] = sel
        return out

    files, single = _resolve_tif(path, file_range)
    if single:
        return read_tif(files[0], out, row_range=row_range, col_range=col_range)
    first = _read_page(files[0], row_range, col_range)
    n_rows, n_cols = first.shape
    shape = (len(files), n_rows, n_cols) if axis_split == 0 else (n_rows, len(files), n_cols)
    if out is None:
        out = np.empty(shape, dtype=np.float32)
    else:
        _check_out(out, shape, f"the {len(files)} files of {path!r}")
    for i, name in enumerate(files):
        values = _read_page(name, row_range, col_range) if i else first
        if values.shape != (n_rows, n_cols):
            raise ValueError(f"{name!r} gives an image of shape {values.shape} but the first "
                             f"file of the sequence gives {(n_rows, n_cols)}")
        if axis_split == 0:
            out[i] = values
        else:
            out[:, i, :] = values
    return out
