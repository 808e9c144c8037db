"""Bruker SkyScan scans: a ``.log`` file (INI-style: ``[System]``, ``[Acquisition]``,
``[Reconstruction]``) and its TIFF or BMP projection series read into a :class:`Scan`.

Where the conventions come from
-------------------------------
Keys, units and file names follow TIGRE's Bruker loaders (CERN/TIGRE,
``MATLAB/Utilities/IO/Bruker/readBrukerGeometry.m``, ``loadBrukerProjections.m``,
``Python/tigre/utilities/io/BrukerDataLoader.py``) and SkyScan logs published with
xray-imaging/meta-cli (SkyScan 1173, 1272): key names vary in case between models
("Number of Files", "Number Of Files"), so they are matched ignoring case. Projection
``i`` (from 0) is ``<Filename Prefix><i, Filename Index Length digits (default 4)>`` with
the extension of ``Image Format``; its angle is ``i·Rotation Step (deg)``. Every one of the
"Number of Files" files is taken as a projection (a published SkyScan log writer, XRDUA's
IDL ``SkyScanLogFile``, notes "360°, 0.4°/step => nfiles = 900"); TIGRE reads one fewer.

=====================================  ==============================================
SkyScan key (unit)                      leap
=====================================  ==============================================
``Object to Source (mm)``               sod
``Camera to Source (mm)``               sdd
``Image Pixel Size (um)`` (at the       pixel_width = pixel_height = size·sdd/sod/1000
object)                                 (``pixel_size='camera'``: ``Camera Pixel Size
                                        (um)`` × ``Camera binning``)
``Number of Rows/Columns``              num_rows, num_cols (images flipped: rows run
                                        up, columns along θ⊥)
``Optical Axis (line)`` (image row,     center_row = rows − 1 − line
from the top, of the central ray)
``Postalignment`` ([Reconstruction],    tau = −Postalignment·pixel_width·sod/sdd
NRecon's axis shift, pixels)            (center_col = (cols − 1)/2)
``Rotation Step (deg)``, i              angle a = i·step; ψ = −radians(a) for
``Rotation Direction`` CC / CW          ``CC`` (object counter-clockwise seen from
                                        above), +radians(a) for ``CW``
``Use 360 Rotation`` YES / NO           checked against the angles' span
flat/dark reference images              flats, darks; ``FF updating interval`` gives
                                        the flats' view positions
``Reference Intensity``                 without reference images: one constant flat
``Depth (bits)`` b ([Acquisition])      without reference images or ``Reference
                                        Intensity``: one constant flat at 2**b (TIGRE's
                                        ``BrukerDataLoader.py`` white level)
=====================================  ==============================================

What is not determined by a public source, and this reader's reading of it:

* the image orientation: like Nikon's (CIL's 'top-right' panel origin), images are taken
  as seen from behind the detector with row 0 at the top, so both axes are flipped
  (lazily, :class:`~leap.io.lazy.Oriented`);
* "Rotation Direction" is taken as seen from above (from +z); ``rotation_direction=``
  overrides it. A wrong direction (or a wrong column flip) mirrors the reconstruction;
* the horizontal position of the rotation axis: SkyScan aligns it to the detector's
  centre column (TIGRE has no horizontal offset); NRecon's ``Postalignment`` shift is
  taken as the axis's offset towards increasing image columns, in pixels of the stored
  images (``postalignment=`` overrides it). "Optical Axis (line)" is a row index whose
  pixel centre the central ray hits (TIGRE's ``rows/2 − line`` differs by half a pixel);
* the flat/dark references: the log names none (with "Flat Field Correction=ON" the
  acquisition has, as read here, already divided by the flat field, to "Reference
  Intensity"). Reference images are taken from ``flats=``/``darks=`` or, by default, the
  image files of the log's directory whose names start with ``flat``/``dark`` (after the
  prefix or without it), in name order; "FF updating interval" m is read as a flat taken
  every m views (flat k at view k·m);
* the white level without reference images: ``white_level=`` (counts), else "Reference
  Intensity", else 2**"Depth (bits)" (the usual SkyScan case: flat-corrected 16-bit
  images with neither, air at about 65535; TIGRE's Python loader divides every image by
  2**Depth, its MATLAB loader reads no white level). A log with none of them opens with
  a :class:`~leap.io.scanners.MissingWhiteLevelWarning` naming ``white_level=``
  (its attenuation would be −log of the counts); so does 2**Depth with "Flat Field
  Correction=OFF" (raw images: the full scale is not the open beam);
* "Camera X/Y Ratio", "Image Rotation", "Image crop origin X/Y" and the thermal-shift
  ``.csv`` (per-view detector shifts, which TIGRE's MATLAB loader adds): in ``metadata``
  or on disk only, not applied (TIGRE's Python loader also leaves the ratio at 1).
"""
from __future__ import annotations

import os
import struct
import warnings

import numpy as np

from ...geometry import ConeBeam, Detector
from ..lazy import Source, normalize_key
from ._common import (MissingWhiteLevelWarning, ScanFormatError, check_monotonic,
                      default_system, number, warn_no_white_level,
                      white_level as constant_flat)
from .nikon import binned_center, oriented, read_ini, reference_files, references, stack
from .scan import Scan

_EXTENSIONS = {"tiff": (".tif", ".tiff", ".TIF", ".TIFF"), "tif": (".tif", ".tiff", ".TIF"),
               "bmp": (".bmp", ".BMP")}
_IMAGE_SUFFIXES = (".tif", ".tiff", ".bmp")


# ------------------------------------------------------------------------ BMP files
def _bmp_header(path):
    """(rows, cols, bits, top_down, pixel offset, row stride, grey lookup or None) of an
    uncompressed 8/16/24-bit BMP (the BITMAPINFOHEADER layout: 14-byte file header, then
    width, height (negative: rows stored top-down), planes, bits, compression, ...)."""
    with open(path, "rb") as f:
        head = f.read(54)
        if len(head) < 26 or head[:2] != b"BM":
            raise ValueError(f"{path!r} is not a BMP file (no 'BM' signature)")
        offset, dib = struct.unpack_from("<II", head, 10)
        if dib == 12:
            cols, rows, _, bits = struct.unpack_from("<HHHH", head, 18)
            compression, colours, entry = 0, 0, 3
        elif dib >= 40 and len(head) >= 54:
            cols, rows, _, bits, compression = struct.unpack_from("<iiHHI", head, 18)
            colours, entry = struct.unpack_from("<I", head, 46)[0], 4
        else:
            raise ValueError(f"BMP file {path!r} has an unknown header of {dib} bytes")
        if compression != 0 or bits not in (8, 16, 24):
            raise ValueError(f"BMP file {path!r} is {bits}-bit with compression {compression}; "
                             "only uncompressed 8-, 16- and 24-bit BMPs are read")
        lut = None
        if bits == 8:
            f.seek(14 + dib)
            pal = np.frombuffer(f.read(entry * (colours or 256)), np.uint8)
            lut = pal.reshape(-1, entry)[:, 1].copy()          # grey: the green entry
            lut = np.pad(lut, (0, 256 - lut.size))
        stride = (abs(cols) * bits + 31) // 32 * 4
        if os.path.getsize(path) < offset + stride * abs(rows):
            raise ValueError(f"BMP file {path!r} is truncated")
    return abs(rows), abs(cols), bits, rows < 0, offset, stride, lut


class BmpStack(Source):
    """Uncompressed BMP files, one image each, as (files, rows, cols) with row 0 at the
    top: 8-bit through their (grey) palette, 16-bit as one uint16 grey value per pixel
    (as scientific writers store it, not the RGB555 of the BMP specification), 24-bit by
    one colour channel (grey images have equal ones). Headers are read up front (a
    missing, unreadable or differently shaped file is named); pixels are memory-mapped."""

    def __init__(self, files):
        self.files = [os.fspath(p) for p in files]
        if not self.files:
            raise FileNotFoundError("no BMP files given")
        self.headers = []
        for p in self.files:
            if not os.path.isfile(p):
                raise FileNotFoundError(f"BMP file {p!r} does not exist")
            try:
                self.headers.append(_bmp_header(p))
            except (OSError, struct.error) as e:
                raise ValueError(f"cannot read BMP file {p!r}: {e}") from e
        first = self.headers[0]
        for p, h in zip(self.files, self.headers):
            if h[:3] != first[:3]:
                raise ValueError(f"BMP file {p!r} holds {h[:2]} {h[2]}-bit pixels, unlike "
                                 f"{self.files[0]!r} ({first[:2]} {first[2]}-bit); a stack "
                                 "needs images of one shape and depth")
        self.dtype = np.dtype(np.uint16 if first[2] == 16 else np.uint8)
        self.shape = (len(self.files),) + first[:2]
        self.chunks = (1,) + first[:2]

    def _image(self, k):
        rows, cols, bits, top_down, offset, stride, lut = self.headers[k]
        raw = np.memmap(self.files[k], np.uint8, "r", offset, (rows, stride))
        if bits == 16:
            img = raw.view("<u2")[:, :cols]
        elif bits == 24:
            img = raw[:, :3 * cols].reshape(rows, cols, 3)[..., 1]
        else:
            img = raw[:, :cols]
        img = img if top_down else img[::-1]
        return img, lut

    def read(self, key):
        key = normalize_key(key, self.shape)
        views = np.arange(self.shape[0])[key[0]]
        out = []
        for k in np.atleast_1d(views):
            img, lut = self._image(int(k))
            part = np.array(img[key[1:]], copy=True)
            out.append(lut[part] if lut is not None else part)
        if np.ndim(views) == 0:
            return out[0]
        if not out:
            return np.empty((0,) + np.empty(self.shape[1:], self.dtype)[key[1:]].shape, self.dtype)
        return np.stack(out)


def images(path, files, key: str) -> Source:
    """TIFF or BMP files (one kind) as a stack whose errors name ``path`` and ``key``."""
    kinds = {os.path.splitext(f)[1].lower() == ".bmp" for f in files}
    if len(kinds) > 1:
        raise ScanFormatError(path, f"{key}: a mix of BMP and TIFF files")
    if kinds != {True}:
        return stack(path, files, key)
    try:
        return BmpStack(files)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{path}: {e} (file named from {key})") from None
    except ValueError as e:
        raise ScanFormatError(path, f"{e} (files named from {key})") from None


# --------------------------------------------------------------------------- reader
def _is_log(p) -> bool:
    try:
        with open(p, "r", encoding="utf-8", errors="replace") as f:
            head = f.read(4096).lower()
    except OSError:
        return False
    return head.lstrip().startswith("[system]") and "[acquisition]" in head


def _logs(folder):
    return sorted(os.path.join(folder, n) for n in os.listdir(folder)
                  if n.lower().endswith(".log") and _is_log(os.path.join(folder, n)))


def detect(path) -> bool:
    """A SkyScan ``.log`` file (it starts with ``[System]`` and has ``[Acquisition]``), or a
    directory holding one."""
    p = os.fspath(path)
    if os.path.isdir(p):
        return bool(_logs(p))
    return p.lower().endswith(".log") and _is_log(p)


class _Keys:
    """The log's keys looked up ignoring case; errors name the file and the key."""

    def __init__(self, path, meta):
        self.path, self.meta = path, meta
        self.lower = {}
        for k in meta:
            self.lower.setdefault(k.lower().replace(" ", ""), k)

    def get(self, *names, default=None):
        for n in names:
            k = self.lower.get(n.lower().replace(" ", ""))
            if k is not None and self.meta[k] != "":
                return self.meta[k]
        return default

    def number(self, name, *alias, default=None, positive=False) -> float:
        v = self.get(name, *alias)
        return number(self.path, {} if v is None else {name: v}, name, default=default,
                      positive=positive)

    def integer(self, name, *alias, default=None) -> int:
        x = self.number(name, *alias, default=default, positive=True)
        if x != int(x):
            raise ScanFormatError(self.path, f"{name} = {x:g} must be a whole number")
        return int(x)

    def choice(self, name, allowed, default=None) -> str:
        v = str(self.get(name, default=default) or "").strip().upper()
        if v not in allowed:
            raise ScanFormatError(self.path, f"{name} = {v!r} is not one of {', '.join(allowed)}")
        return v


def _projection_files(log, keys, text, n):
    folder = os.path.dirname(os.path.abspath(log))
    prefix = text.get("filename prefix")
    if prefix is None:
        raise ScanFormatError(log, "the key 'Filename Prefix' is missing: it names the "
                              "projection files")
    digits = keys.integer("Filename Index Length", default=4)
    fmt = str(keys.get("Image Format", default="TIFF")).strip().lower()
    if fmt not in _EXTENSIONS:
        raise ScanFormatError(log, f"Image Format = {fmt.upper()!r} is not TIFF or BMP")
    exts = _EXTENSIONS[fmt]
    first = os.path.join(folder, f"{prefix}{0:0{digits}d}")
    ext = next((e for e in exts if os.path.isfile(first + e)), exts[0])
    files = [os.path.join(folder, f"{prefix}{i:0{digits}d}{ext}") for i in range(n)]
    names = "Filename Prefix, Filename Index Length, Image Format"
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"{log}: projection file {missing[0]!r} does not exist "
                                f"({len(missing)} of Number of Files = {n} missing; names from "
                                f"{names})")
    extra = os.path.join(folder, f"{prefix}{n:0{digits}d}{ext}")
    if os.path.isfile(extra):
        raise ScanFormatError(log, f"Number of Files = {n} but there are more projection "
                              f"files ({extra!r} exists)")
    return files, names, prefix


def _auto_references(folder, prefix, word, exclude):
    out = []
    for name in sorted(os.listdir(folder)):
        stem, ext = os.path.splitext(name)
        low = stem.lower()
        rest = low[len(prefix):] if prefix and low.startswith(prefix.lower()) else low
        if ext.lower() in _IMAGE_SUFFIXES and rest.startswith(word) and \
                os.path.join(folder, name) not in exclude:
            out.append(os.path.join(folder, name))
    return out or None


def _depth(path, keys) -> int:
    """"Depth (bits)": the bits per pixel of the acquisition, a whole number 1..32."""
    b = keys.integer("Depth (bits)")
    if b > 32:
        raise ScanFormatError(path, f"Depth (bits) = {b} is not a pixel depth (1 to 32)")
    return b


def open_scan(path, *, binning=1, flats=None, darks=None, pixel_size="image",
              rotation_direction=None, postalignment=None, white_level=None) -> Scan:
    """Read a Bruker SkyScan scan.

    Parameters
    ----------
    path : the ``.log`` file, or a directory holding exactly one acquisition log.
    binning : int or (rows, cols): average that many pixels (lazily; pixel sizes grow).
    flats, darks : reference images (a path, glob or list, relative to the log's
        directory) or False for none; default: ``flat*``/``dark*`` images found there (see
        the module docstring), flats else one constant frame at the white level.
    pixel_size : 'image' (from "Image Pixel Size (um)") or 'camera' ("Camera Pixel Size
        (um)" × "Camera binning").
    rotation_direction : 'CC' or 'CW' instead of the log's "Rotation Direction".
    postalignment : the rotation axis's shift (stored-image pixels) instead of the log's.
    white_level : the counts of the open beam, one constant flat frame instead of the
        reference images and the log's white level ("Reference Intensity", else
        2**"Depth (bits)"); not with ``flats=`` images.

    Returns a Scan: projections (views, rows, cols) in leap's detector order (the images
    flipped), ``angles`` ``i·Rotation Step`` (degrees, SkyScan's direction), ``metadata``
    every key of the log (numbers as floats).
    """
    p = os.fspath(path)
    if os.path.isdir(p):
        found = [f for f in _logs(p) if "numberoffiles" in
                 {k.lower().replace(" ", "") for k in read_ini(f)}]
        if len(found) != 1:
            raise ScanFormatError(p, f"holds {len(found)} acquisition logs ({found}); name one")
        p = found[0]
    if not os.path.isfile(p):
        raise FileNotFoundError(f"no SkyScan log at {p!r}")
    meta = read_ini(p)
    text = {k.lower(): v for k, v in read_ini(p, as_text=True).items()}
    keys = _Keys(p, meta)
    n = keys.integer("Number of Files")
    rows, cols = keys.integer("Number of Rows"), keys.integer("Number of Columns")
    sod = keys.number("Object to Source (mm)", positive=True)
    sdd = keys.number("Camera to Source (mm)", positive=True)
    if not sdd > sod:
        raise ScanFormatError(p, f"Camera to Source (mm) ({sdd:g}) must exceed Object to "
                              f"Source (mm) ({sod:g})")
    if pixel_size == "image":
        pw = keys.number("Image Pixel Size (um)", positive=True) * 1e-3 * sdd / sod
    elif pixel_size == "camera":
        cam = str(keys.get("Camera binning", default="1x1")).lower().split("x")
        try:
            cam_bin = float(cam[0])
        except ValueError:
            raise ScanFormatError(p, f"Camera binning = {keys.get('Camera binning')!r} is not "
                                  "'<n>x<n>'") from None
        pw = keys.number("Camera Pixel Size (um)", positive=True) * 1e-3 * cam_bin
    else:
        raise ValueError(f"pixel_size must be 'image' or 'camera', got {pixel_size!r}")
    line = keys.number("Optical Axis (line)", default=0.5 * (rows - 1))
    post = (keys.number("Postalignment", default=0.0) if postalignment is None
            else float(postalignment))
    step = keys.number("Rotation Step (deg)", positive=True)
    direction = (keys.choice("Rotation Direction", ("CC", "CW"), default="CC")
                 if rotation_direction is None else str(rotation_direction).upper())
    if direction not in ("CC", "CW"):
        raise ValueError(f"rotation_direction must be 'CC' or 'CW', got {rotation_direction!r}")
    if keys.get("Scanning Trajectory") is not None:
        keys.choice("Scanning Trajectory", ("ROUND",))
    full = keys.choice("Use 360 Rotation", ("YES", "NO"), default="NO")
    measured = check_monotonic(p, np.arange(n) * step)
    if full == "YES" and n * step < 360.0 - 0.5 * step:
        raise ScanFormatError(p, f"Use 360 Rotation = YES but Number of Files × Rotation "
                              f"Step = {n} × {step:g} = {n * step:g}° is less than 360°")
    if full == "NO" and (n - 1) * step >= 360.0:
        raise ScanFormatError(p, f"Use 360 Rotation = NO but Number of Files × Rotation "
                              f"Step = {n} × {step:g}° is a full turn or more")
    psi = np.radians(measured) * (-1.0 if direction == "CC" else 1.0)

    files, names, prefix = _projection_files(p, keys, text, n)
    raw = images(p, files, names)
    projections, (br, bc) = oriented(p, raw, (n, rows, cols),
                                     "Number of Rows, Number of Columns", binning)
    folder = os.path.dirname(os.path.abspath(p))
    refs = {}
    for name, spec in (("flats", flats), ("darks", darks)):
        found = (reference_files(spec, folder) if spec is not None
                 else _auto_references(folder, prefix, name[:4], set(files)))
        key = f"{name}=" if spec is not None else f"{name[:4]}* files"
        refs[name] = references(p, found, key, raw, (br, bc), read=images)
    positions = None
    if white_level is not None:
        if flats not in (None, False):
            raise ValueError("give flats= images or white_level=, not both")
        refs["flats"] = constant_flat(p, projections.shape[1:], white_level, "white_level=")
    elif refs["flats"] is None and flats is None:
        if keys.get("Reference Intensity") is not None:
            refs["flats"] = constant_flat(p, projections.shape[1:], keys.number(
                "Reference Intensity", positive=True), "Reference Intensity")
        elif keys.get("Depth (bits)") is not None:
            refs["flats"] = constant_flat(p, projections.shape[1:], 2.0 ** _depth(p, keys),
                                          "2**Depth (bits)")
            if str(keys.get("Flat Field Correction", default="")).strip().upper() == "OFF":
                # Raw images: full scale is not the open beam (air lies below it, so the
                # line integrals carry an offset); the flat images are likely missing.
                warnings.warn(f"{p}: Flat Field Correction=OFF and no flat* images: the "
                              "white level is taken as 2**Depth (bits), the full scale, "
                              "not the open beam's counts; pass flats= or white_level=",
                              MissingWhiteLevelWarning, stacklevel=2)
        else:
            warn_no_white_level(p, "no flat* images, no 'Reference Intensity' or 'Depth "
                                "(bits)' in the log", "white_level= or flats=")
    elif refs["flats"] is not None and refs["flats"].shape[0] > 1:
        every = keys.number("FF updating interval", default=0.0)     # flats every m views
        positions = np.arange(refs["flats"].shape[0]) * every if every > 0 else None

    nr, nc = projections.shape[1:]
    det = Detector(num_rows=nr, num_cols=nc, pixel_height=pw * br, pixel_width=pw * bc,
                   center_row=binned_center(rows - 1 - line, br),
                   center_col=binned_center(0.5 * (cols - 1), bc))
    geometry = ConeBeam(detector=det, angles=psi, sod=sod, sdd=sdd,
                        tau=-post * pw * sod / sdd)
    return Scan(system=default_system(geometry), projections=projections, flats=refs["flats"],
                darks=refs["darks"], angles=measured, metadata=meta, format="skyscan", path=p,
                flat_positions=positions, angle_unit="degree")
