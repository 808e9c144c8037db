"""Vector-geometry scans: a folder of projection images with a per-view ASTRA
``cone_vec`` vectors file, and the CWI walnut / FIPS layout of that kind, read into a
modular-beam :class:`Scan`.

The vectors file
----------------
A text file (whitespace- or comma-separated; ``.npy`` also read) of one line per view
with 12 numbers, ASTRA's ``cone_vec`` vector (astra-toolbox ``python/astra/creators.py``
and its documentation of ``cone_vec``): source ``(srcX, srcY, srcZ)``, detector centre
``(dX, dY, dZ)``, the step ``u`` from detector pixel (0, 0) to (0, 1) and the step ``v``
from (0, 0) to (1, 0), in mm. Pixel (row r, col c) is centred at
``d + (c − ncols/2 + ½)u + (r − nrows/2 + ½)v``: exactly a leap
:class:`~leap.geometry.ModularBeam` (:func:`leap.interop.astra.from_astra` gives the chain).
A projection image, once put in ASTRA's orientation, is the detector's ``(rows, cols)``
with row r along v and column c along u, which is leap's detector order, so leap's
projections are those images (with ``transpose`` / ``flip_rows`` / ``flip_cols`` applied
lazily where a layout stores them otherwise).

The CWI walnut layout
---------------------
From the data's description and its reference scripts (cicwi/WalnutReconstructionCodes,
``FDKReconstruction.py``; Der Sarkissian et al., Sci. Data 6:215, 2019): a folder
(``Walnut<k>/Projections/tubeV<j>``) with projections ``scan_000000.tif`` …, one dark
``di000000.tif``, flats ``io000000.tif`` and ``io000001.tif`` (before and after the scan,
averaged), the vectors ``scan_geom_corrected.geom`` (calibrated; else
``scan_geom_original.geom``) and ``scan_settings.txt``. Its conventions, as that script
applies them:

* the vectors file has one line more than there are views: the last line repeats the
  first angle, and the script drops it (``vecs[range(0, 1200)]``) whatever its digits;
* the images are stored in portrait mode: ASTRA's detector image is
  ``transpose(flipud(stored))`` (``flip_rows=True, transpose=True``);
* the projection files are in the reverse order of the vectors: view k is the file
  numbered ``n − 1 − k`` (``reverse=True``).

``scan_settings.txt`` is kept as text in ``metadata['scan_settings']``, with its
``key: value`` / ``key = value`` lines parsed alongside (nothing of the geometry comes
from it).
"""
from __future__ import annotations

import glob
import os

import numpy as np

from ...interop._vectors import as_vectors, modular_from_vectors
from ..lazy import Source, TiffStack, drop_int_axes, keep_axes, normalize_key
from ._common import ScanFormatError, default_system
from .scan import Scan

#: The CWI walnut layout's file names (see the module docstring).
WALNUT_VECTORS = ("scan_geom_corrected.geom", "scan_geom_original.geom")
WALNUT_PROJECTIONS, WALNUT_FLATS, WALNUT_DARKS = "scan_*.tif", "io*.tif", "di*.tif"
WALNUT_SETTINGS = "scan_settings.txt"


class Turned(Source):
    """Stored images ``(views, H, W)`` flipped (rows and/or columns, as stored) and then,
    if ``transpose``, transposed: ``(views, W, H)``. Lazy: a read takes the bounding box
    of the stored pixels it needs."""

    def __init__(self, source: Source, *, flip_rows=False, flip_cols=False, transpose=False):
        self.source = source
        self.flips = (bool(flip_rows), bool(flip_cols))
        self.transpose = bool(transpose)
        n, h, w = source.shape
        self.shape = (n, w, h) if self.transpose else (n, h, w)
        self.dtype = source.dtype
        self.chunks = (1,) + self.shape[1:]

    def read(self, key):
        v, r, c = normalize_key(key, self.shape)
        ri = np.atleast_1d(np.arange(self.shape[1])[r])
        ci = np.atleast_1d(np.arange(self.shape[2])[c])
        nv = np.size(np.arange(self.shape[0])[v])
        if ri.size == 0 or ci.size == 0 or nv == 0:
            out = np.zeros((nv, ri.size, ci.size), self.dtype)
            return drop_int_axes(out, (v, r, c))
        # stored (row, col) indices of the output's rows and columns
        srow, scol = (ci, ri) if self.transpose else (ri, ci)
        n_h, n_w = self.source.shape[1:]
        if self.flips[0]:
            srow = n_h - 1 - srow
        if self.flips[1]:
            scol = n_w - 1 - scol
        r0, c0 = int(srow.min()), int(scol.min())
        block = self.source.read((keep_axes((v,))[0], slice(r0, int(srow.max()) + 1),
                                  slice(c0, int(scol.max()) + 1)))
        block = block[:, srow - r0][:, :, scol - c0]
        out = np.ascontiguousarray(block.transpose(0, 2, 1) if self.transpose else block)
        return drop_int_axes(out, (v, r, c))


# ------------------------------------------------------------------------- helpers
def _walnut_vectors(folder):
    for name in WALNUT_VECTORS:
        p = os.path.join(folder, name)
        if os.path.isfile(p):
            return p
    return None


def detect(path) -> bool:
    """A folder in the CWI walnut layout: a ``scan_geom_*.geom`` file and ``scan_*.tif``
    projections."""
    p = os.fspath(path)
    if not os.path.isdir(p):
        return False
    return _walnut_vectors(p) is not None and bool(
        glob.glob(os.path.join(glob.escape(p), WALNUT_PROJECTIONS)))


def read_vectors(path) -> np.ndarray:
    """The (views, 12) ``cone_vec`` vectors of a text (whitespace or commas) or ``.npy``
    file; ScanFormatError naming the file otherwise."""
    p = os.fspath(path)
    try:
        if p.lower().endswith(".npy"):
            a = np.load(p, allow_pickle=False)
        else:
            with open(p, "r", encoding="utf-8", errors="replace") as f:
                text = f.read().replace(",", " ")
            rows = [ln.split() for ln in text.splitlines()
                    if ln.strip() and not ln.lstrip().startswith("#")]
            a = np.array([[float(x) for x in row] for row in rows], dtype=np.float64)
    except FileNotFoundError:
        raise FileNotFoundError(f"the vectors file {p!r} does not exist") from None
    except (OSError, ValueError) as e:
        raise ScanFormatError(p, f"cannot be read as a table of numbers ({e})") from None
    try:
        return as_vectors("the cone_vec vectors", a, 12)
    except ValueError as e:
        raise ScanFormatError(p, f"{e} (12 numbers per view: source, detector centre, u, v)") \
            from None


def _files(folder, spec, what, required=True):
    """Files from a glob / path / list relative to ``folder`` (sorted by name)."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, (list, tuple)):
        files = [os.path.join(folder, os.fspath(p)) for p in spec]
    else:
        s = os.path.join(folder, os.fspath(spec))
        files = sorted(glob.glob(s)) if any(ch in s for ch in "*?[") else [s]
    missing = [f for f in files if not os.path.isfile(f)]
    if not files or missing:
        if not required:
            return None
        raise FileNotFoundError(f"{folder}: no {what} files match {spec!r}"
                                + (f" ({missing[0]!r} does not exist)" if missing else ""))
    return files


def _settings(folder) -> dict:
    p = os.path.join(folder, WALNUT_SETTINGS)
    if not os.path.isfile(p):
        return {}
    with open(p, "r", encoding="utf-8", errors="replace") as f:
        text = f.read()
    meta = {"scan_settings": text}
    for line in text.splitlines():
        for sep in ("=", ":"):
            if sep in line:
                k, v = (s.strip() for s in line.split(sep, 1))
                if k and k not in meta:
                    meta[k] = v
                break
    return meta


# --------------------------------------------------------------------------- reader
def open_scan(path, *, vectors=None, projections=None, flats=None, darks=None,
              transpose=None, flip_rows=None, flip_cols=False, reverse=None,
              drop_last_view=None) -> Scan:
    """Read a folder of projections with an ASTRA ``cone_vec`` vectors file.

    Parameters
    ----------
    path : the folder (or the vectors file, whose folder then holds the images).
    vectors : the vectors file (relative to the folder). Default: the walnut layout's
        ``scan_geom_corrected.geom``, else ``scan_geom_original.geom``.
    projections, flats, darks : a glob, a path or a list of paths (relative to the
        folder) of TIFF images; sorted by name. Defaults: the walnut layout's
        ``scan_*.tif``, ``io*.tif``, ``di*.tif`` (flats and darks: None if absent).
    transpose, flip_rows, flip_cols : how a stored image becomes ASTRA's detector image
        (``rows`` along v, ``cols`` along u): its rows and/or columns reversed, then
        transposed. Defaults: the walnut layout's ``transpose(flipud(image))`` for a
        walnut folder, as stored otherwise.
    reverse : the projection files are in the reverse order of the vectors (view k is
        file n − 1 − k). Default: True in the walnut layout, else False.
    drop_last_view : drop the vectors file's last line (the walnut layout's repeat of
        the first view). Default: True in the walnut layout, else False.

    Returns a Scan: a :class:`~leap.geometry.ModularBeam` with LEAP's default volume,
    lazy raw projections (views, rows, cols) in leap's detector order, flats and darks
    (averaged by :meth:`Scan.attenuation`), ``angles`` the view angles ψ (radians) that
    leap assigns the vectors, ``metadata`` the walnut ``scan_settings.txt`` where there
    is one. The number of views is the number of vectors (after the last one is
    dropped, for the walnut layout); there must be at least that many projection files
    (the first ones, in file-name order, are used).
    """
    p = os.fspath(path)
    if os.path.isfile(p) and vectors is None:
        p, vectors = os.path.split(os.path.abspath(p))
    if not os.path.isdir(p):
        raise FileNotFoundError(f"no scan folder at {p!r}")
    walnut = detect(p)
    if vectors is None:
        vfile = _walnut_vectors(p)
        if vfile is None:
            raise ScanFormatError(p, "no vectors file: name it with vectors= (the folder is "
                                  f"not in the CWI walnut layout, no {WALNUT_VECTORS[0]})")
    else:
        vfile = os.path.join(p, os.fspath(vectors))
    vec = read_vectors(vfile)
    if walnut if drop_last_view is None else drop_last_view:
        if vec.shape[0] < 2:
            raise ScanFormatError(vfile, "holds one view; drop_last_view would leave none")
        vec = vec[:-1]
    n = vec.shape[0]

    proj_files = _files(p, WALNUT_PROJECTIONS if projections is None else projections,
                        "projection")
    if len(proj_files) < n:
        raise ScanFormatError(p, f"{os.path.basename(vfile)} describes {n} views but only "
                              f"{len(proj_files)} projection files match "
                              f"{projections or WALNUT_PROJECTIONS!r}")
    proj_files = proj_files[:n]
    if walnut if reverse is None else reverse:
        proj_files = proj_files[::-1]
    orient = dict(transpose=walnut if transpose is None else transpose,
                  flip_rows=walnut if flip_rows is None else flip_rows, flip_cols=flip_cols)

    def stack(files, what):
        try:
            return Turned(TiffStack(files), **orient)
        except ValueError as e:
            raise ScanFormatError(p, f"the {what} images: {e}") from None

    raw = stack(proj_files, "projection")
    nr, nc = raw.shape[1:]
    try:
        geometry = modular_from_vectors(vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12],
                                        nr, nc)
    except ValueError as e:
        raise ScanFormatError(vfile, str(e)) from None
    refs = []
    for spec, default, what in ((flats, WALNUT_FLATS, "flat"), (darks, WALNUT_DARKS, "dark")):
        files = _files(p, default if spec is None else spec, what, required=spec is not None)
        src = None if files is None else stack(files, what)
        if src is not None and src.shape[1:] != raw.shape[1:]:
            raise ScanFormatError(p, f"the {what} image {files[0]!r} is {src.shape[1:]} "
                                  f"(rows, cols) once oriented, the projections {(nr, nc)}")
        refs.append(src)
    meta = _settings(p)
    meta["vectors_file"] = vfile
    return Scan(system=default_system(geometry), projections=raw, flats=refs[0], darks=refs[1],
                angles=geometry.view_angles(), metadata=meta,
                format="walnut" if walnut else "astra", path=p, angle_unit="radian")


def write_scan(folder, geometry, counts, *, flat: float = 60000.0, dark: float = 100.0,
               walnut: bool = True) -> str:
    """Write a scan as a vectors folder: the inverse of :func:`open_scan` (e.g. to hand
    simulated data to ASTRA-based scripts or test a pipeline on files).

    ``geometry``: a leap geometry with a modular form (``to_modular()``); ``counts``:
    (views, rows, cols) grey values in leap's detector order, written as uint16 TIFFs.
    ``walnut``: the CWI layout (repeated last vector, portrait images, reversed file
    order, ``scan_geom_corrected.geom``, two flats ``io00000{0,1}.tif`` and a dark
    ``di000000.tif`` of constant value); else ``vectors.txt`` and
    ``proj_000000.tif`` … as stored, with ``flat_000000.tif`` and ``dark_000000.tif``.
    Returns the folder.
    """
    import tifffile
    m = geometry.to_modular()
    d = m.detector
    shape = (m.num_angles, d.num_rows, d.num_cols)
    if tuple(counts.shape) != shape:
        raise ValueError(f"counts must be (views, rows, cols) = {shape}, got {tuple(counts.shape)}")
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    vec = np.hstack([m.source_positions, m.module_centers, m.col_vectors * d.pixel_width,
                     m.row_vectors * d.pixel_height])
    n = shape[0]

    def stored(img):
        img = np.clip(np.rint(np.asarray(img, dtype=np.float64)), 0, 65535).astype(np.uint16)
        return np.ascontiguousarray(img.T[::-1]) if walnut else img   # inverse of flipud+T

    if walnut:
        np.savetxt(os.path.join(folder, WALNUT_VECTORS[0]), np.vstack([vec, vec[:1]]))
        for k in range(n):
            tifffile.imwrite(os.path.join(folder, f"scan_{n - 1 - k:06d}.tif"), stored(counts[k]))
        # the repeated view (the script ignores it): a copy of view 0
        tifffile.imwrite(os.path.join(folder, f"scan_{n:06d}.tif"), stored(counts[0]))
        for i in range(2):
            tifffile.imwrite(os.path.join(folder, f"io{i:06d}.tif"),
                             stored(np.full(shape[1:], flat)))
        tifffile.imwrite(os.path.join(folder, "di000000.tif"), stored(np.full(shape[1:], dark)))
        with open(os.path.join(folder, WALNUT_SETTINGS), "w") as f:
            f.write(f"Number of projections: {n + 1}\nWritten by: leap\n")
    else:
        np.savetxt(os.path.join(folder, "vectors.txt"), vec)
        for k in range(n):
            tifffile.imwrite(os.path.join(folder, f"proj_{k:06d}.tif"), stored(counts[k]))
        tifffile.imwrite(os.path.join(folder, "flat_000000.tif"), stored(np.full(shape[1:], flat)))
        tifffile.imwrite(os.path.join(folder, "dark_000000.tif"), stored(np.full(shape[1:], dark)))
    return folder
