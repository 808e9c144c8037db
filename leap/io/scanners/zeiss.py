"""Zeiss Xradia ``.txrm`` / ``.txm`` (OLE compound files, read with ``olefile``).

Sources of the conventions
--------------------------
Zeiss publishes no description of these files; the stream names, types and units below
are those public readers use:

* ``dxchange.reader.read_txrm`` / ``read_ole_metadata``: ``ImageInfo/NoOfImages``,
  ``ImageWidth``, ``ImageHeight`` (uint32), ``DataType`` (5 uint16, 10 float32),
  ``ImageInfo/Angles`` (float32 per image, degrees), ``ImageInfo/PixelSize`` (float32,
  micrometres), image *k* (from 1) in the stream ``ImageData{ceil(k/100)}/Image{k}``
  (little-endian, ``ImageHeight`` rows of ``ImageWidth``), the reference (flat) image
  ``ReferenceData/Image`` with its own ``ReferenceData/DataType``;
* CIL's ``ZEISSDataReader``: ``ImageInfo/XrayGeometry`` 1 = cone beam,
  ``ImageInfo/AcquisitionMode`` 0 = projections (Bio-Formats' ``ZeissXRMReader``: 10 = a
  reconstruction); the source and detector distances are ``|StoRADistance[0]|`` and
  ``|DtoRADistance[0]|`` (mm, float32 per image; txmheader_read8 by R. Bradley gives the
  same units); ``PixelSize`` is the pixel at the rotation axis, the detector pixel being
  ``PixelSize·(S + D)/S``; CIL builds the cone geometry with the source at (0, −S, 0),
  the detector at (0, D, 0), columns along +x, rows along +z (origin bottom-left) and
  turns source and detector by −θ about z for the angle θ;
* ``ReconSettings/CenterShift`` (float32, pixels; Bio-Formats' and M. Thies' readers),
  ``ImageInfo/CameraBinning``, ``ImageInfo/CamPixelSize`` (µm) and
  ``ImageInfo/OpticalMagnification`` (mbirjax's and txrmtools-derived readers).

Mapping to leap
---------------
========================================  =================================================
Xradia stream                             leap
========================================  =================================================
``ImageData*/Image*`` (rows as stored)    projections (lazy); stored row 0 is the lowest
                                          (+z upwards, as CIL's bottom-left origin)
``ReferenceData/Image``                   flats (one frame); no darks. Without it, the
                                          ``white_level=`` option (counts of the open
                                          beam), else a MissingWhiteLevelWarning
``ImageInfo/Angles`` θ (degrees)          ψ = −θ (radians): CIL turns the system by −θ
``|StoRADistance[0]|`` S,                 sod = S, sdd = S + D (mm)
``|DtoRADistance[0]|`` D
``ImageInfo/PixelSize`` p (µm)            pixel width = height = p·(S + D)/S/1000 mm (cone)
                                          or p/1000 (parallel); without it
                                          ``CamPixelSize``·binning/``OpticalMagnification``
``ReconSettings/CenterShift`` c (pixels)  ``center_col`` = (W − 1)/2 + c
``XrayGeometry`` ≠ 1                      parallel beam
========================================  =================================================

No public document fixes the sign of ``CenterShift``; leap takes it as the column offset
of the rotation axis from the image centre towards higher column indices (the option
``center_shift`` overrides it). Per-view alignment shifts (``Alignment/X-Shifts``,
``Y-Shifts``) are kept in ``metadata`` but not applied (a warning says so when they are
not all zero); source and detector distances that change between views are reported
the same way (the first values are used, as CIL does).

Options of :func:`open_scan`: ``center_shift`` (pixels, overrides the file's) and
``white_level`` (the open beam's counts, one constant flat, instead of the reference).
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ...geometry import ConeBeam, Detector, ParallelBeam
from ..lazy import Source, normalize_key
from ._common import (ScanFormatError, check_monotonic, default_system,
                      warn_no_white_level, white_level as white_level_flat)
from .scan import Scan

FORMAT = "zeiss"
SUFFIXES = (".txrm", ".txm", ".xrm")
OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
#: ``DataType`` codes (dxchange ``_get_ole_data_type``).
DATA_TYPES = {5: np.dtype("<u2"), 10: np.dtype("<f4")}


def image_stream(k: int) -> str:
    """The stream of image ``k`` (0-based): ``ImageData{ceil((k+1)/100)}/Image{k+1}``."""
    return f"ImageData{k // 100 + 1}/Image{k + 1}"


def detect(path) -> bool:
    """A file named .txrm/.txm/.xrm that starts with the OLE compound-file signature."""
    path = os.fspath(path)
    if not os.path.isfile(path) or not path.lower().endswith(SUFFIXES):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(8) == OLE_SIGNATURE
    except OSError:
        return False


class OLEImages(Source):
    """Images kept one per stream of an OLE compound file, read on demand: ``streams``
    (one name per plane), each ``shape`` (rows, columns) pixels of ``dtype`` stored
    little-endian. Each read opens the file, so the source is picklable."""

    def __init__(self, path, streams, shape, dtype):
        self.path, self.streams = os.fspath(path), list(streams)
        self.shape = (len(self.streams),) + tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype).newbyteorder("=")
        self.chunks = (1,) + self.shape[1:]

    def _plane(self, ole, i):
        raw = ole.openstream(self.streams[i]).read()
        stored = self.dtype.newbyteorder("<")
        n = self.shape[1] * self.shape[2] * stored.itemsize
        if len(raw) != n:
            raise ScanFormatError(self.path, f"the stream {self.streams[i]} holds {len(raw)} "
                                  f"bytes, not {n}")
        return np.frombuffer(raw, stored).reshape(self.shape[1:]).astype(self.dtype)

    def read(self, key):
        import olefile
        key = normalize_key(key, self.shape)
        planes = np.arange(self.shape[0])[key[0]]
        rest = key[1:]
        with olefile.OleFileIO(self.path) as ole:
            if np.ndim(planes) == 0:
                return self._plane(ole, int(planes))[rest].copy()
            out = [self._plane(ole, int(i))[rest] for i in planes]
        if not out:
            return np.empty((0,) + np.empty(self.shape[1:], self.dtype)[rest].shape, self.dtype)
        return np.stack(out)


#: Stream types (beyond text) for ``metadata``.
KNOWN_TYPES = {"ImageInfo/NoOfImages": "<u4", "ImageInfo/ImageWidth": "<u4",
               "ImageInfo/ImageHeight": "<u4", "ImageInfo/DataType": "<u4",
               "ImageInfo/CameraBinning": "<u4", "ImageInfo/ImagesTaken": "<u4",
               "ImageInfo/AcquisitionMode": "<i4", "ImageInfo/XrayGeometry": "<i4",
               "ReferenceData/DataType": "<u4", "ImageInfo/PixelSize": "<f4",
               "ImageInfo/CamPixelSize": "<f4", "ImageInfo/OpticalMagnification": "<f4",
               "ImageInfo/Angles": "<f4", "ImageInfo/StoRADistance": "<f4",
               "ImageInfo/DtoRADistance": "<f4", "ImageInfo/XPosition": "<f4",
               "ImageInfo/YPosition": "<f4", "ImageInfo/ZPosition": "<f4",
               "ImageInfo/ExpTimes": "<f4", "ImageInfo/Voltage": "<f4",
               "ImageInfo/Current": "<f4", "ImageInfo/ConeAngle": "<f4",
               "ImageInfo/FanAngle": "<f4", "ReconSettings/CenterShift": "<f4",
               "Alignment/X-Shifts": "<f4", "Alignment/Y-Shifts": "<f4"}


def _metadata(ole) -> dict:
    """The small streams (not images): known numbers as numbers (a list when several),
    text as text, other binary streams by their size."""
    known = {k.lower(): v for k, v in KNOWN_TYPES.items()}
    meta = {}
    for entry in ole.listdir(streams=True, storages=False):
        name = "/".join(entry)
        low = name.lower()
        if low.startswith("imagedata") or low == "referencedata/image":
            continue
        size = ole.get_size(name)
        if size > 65536:
            meta[name] = f"<{size} bytes>"
            continue
        raw = ole.openstream(name).read()
        if low in known:
            v = np.frombuffer(raw[:len(raw) // 4 * 4], known[low])
            meta[name] = v[0].item() if v.size == 1 else v.tolist()
            continue
        text = raw.split(b"\x00", 1)[0]
        if text and all(32 <= c < 127 or c in (9, 10, 13) for c in text):
            meta[name] = text.decode("ascii")
        else:
            meta[name] = f"<{size} bytes>"
    return meta


def _stream(ole, path, name, fmt, count=None, required=True):
    """Values of stream ``name`` as ``fmt`` ('<u4', '<f4', '<i4'): ``count`` of them (all
    when None, at least one); None for an optional stream that is absent."""
    if not ole.exists(name):
        if required:
            raise ScanFormatError(path, f"the stream {name} is missing")
        return None
    raw = ole.openstream(name).read()
    dt = np.dtype(fmt)
    n = len(raw) // dt.itemsize
    want = 1 if count is None else count
    if n < want:
        raise ScanFormatError(path, f"the stream {name} holds {n} values of {dt}, "
                              f"{want} expected")
    v = np.frombuffer(raw[:n * dt.itemsize], dt)
    return v if count is None else v[:count]


def open_scan(path, *, center_shift: float | None = None,
              white_level: float | None = None) -> Scan:
    """Read a Zeiss Xradia ``.txrm`` (see the module docstring for the mapping).

    Parameters
    ----------
    center_shift : float, optional
        Offset of the rotation axis from the image centre, pixels (overrides
        ``ReconSettings/CenterShift``).
    white_level : float, optional
        The counts of the open beam: one constant flat frame instead of
        ``ReferenceData/Image`` (for files without one).
    """
    try:
        import olefile
    except ImportError:
        raise ImportError("reading Zeiss files needs olefile (pip install olefile)") from None
    path = os.fspath(path)
    if not olefile.isOleFile(path):
        raise ScanFormatError(path, "is not an OLE compound file (Zeiss .txrm/.txm)")
    with olefile.OleFileIO(path) as ole:
        mode = _stream(ole, path, "ImageInfo/AcquisitionMode", "<i4", required=False)
        if mode is not None and int(mode[0]) != 0:
            raise ScanFormatError(path, f"ImageInfo/AcquisitionMode is {int(mode[0])}: the file "
                                  "holds a reconstruction, not projections (mode 0)")
        n = int(_stream(ole, path, "ImageInfo/NoOfImages", "<u4")[0])
        width = int(_stream(ole, path, "ImageInfo/ImageWidth", "<u4")[0])
        height = int(_stream(ole, path, "ImageInfo/ImageHeight", "<u4")[0])
        if n < 1 or width < 1 or height < 1:
            raise ScanFormatError(path, f"ImageInfo says {n} images of {width} x {height} "
                                  "pixels")
        code = int(_stream(ole, path, "ImageInfo/DataType", "<u4")[0])
        if code not in DATA_TYPES:
            raise ScanFormatError(path, f"ImageInfo/DataType is {code}; leap reads 5 (uint16) "
                                  "and 10 (float32)")
        dtype = DATA_TYPES[code]
        nbytes = width * height * dtype.itemsize
        streams = [image_stream(k) for k in range(n)]
        for s in streams:
            if not ole.exists(s):
                raise ScanFormatError(path, f"the stream {s} is missing: ImageInfo/NoOfImages "
                                      f"says {n} images")
            size = ole.get_size(s)
            if size != nbytes:
                raise ScanFormatError(path, f"the stream {s} holds {size} bytes, but "
                                      f"ImageInfo says {height} x {width} pixels of {dtype} "
                                      f"({nbytes} bytes): images of mixed shapes")
        extra = image_stream(n)
        if ole.exists(extra):
            raise ScanFormatError(path, f"the stream {extra} exists but "
                                  f"ImageInfo/NoOfImages says {n} images")
        theta = check_monotonic(path, _stream(ole, path, "ImageInfo/Angles", "<f4", n)
                                .astype(np.float64), "angles of ImageInfo/Angles")

        meta = _metadata(ole)

        def floats(name, count=None, required=False):
            return _stream(ole, path, name, "<f4", count, required)

        cone = True
        geometry = _stream(ole, path, "ImageInfo/XrayGeometry", "<i4", required=False)
        if geometry is not None and int(geometry[0]) != 1:
            cone = False
        pixel = floats("ImageInfo/PixelSize")
        src = det = None
        if cone:
            s = floats("ImageInfo/StoRADistance", n, required=True).astype(np.float64)
            d = floats("ImageInfo/DtoRADistance", n, required=True).astype(np.float64)
            src, det = abs(s[0]), abs(d[0])
            if not (math.isfinite(src) and math.isfinite(det) and src > 0 and det >= 0):
                raise ScanFormatError(path, f"StoRADistance {s[0]:g} and DtoRADistance "
                                      f"{d[0]:g} mm do not make a cone beam")
            if np.ptp(np.abs(s)) > 1e-3 * src or np.ptp(np.abs(d)) > 1e-3 * max(det, 1.0):
                warnings.warn(f"{path}: the source or detector distance changes between "
                              "views; leap uses the first", stacklevel=2)
        mag = (src + det) / src if cone else 1.0
        if pixel is not None:
            p_axis = float(pixel[0]) * 1e-3
            p_det = p_axis * mag
        else:
            cam = floats("ImageInfo/CamPixelSize")
            if cam is None:
                raise ScanFormatError(path, "the streams ImageInfo/PixelSize and "
                                      "ImageInfo/CamPixelSize are both missing")
            binning = _stream(ole, path, "ImageInfo/CameraBinning", "<u4", required=False)
            optical = floats("ImageInfo/OpticalMagnification")
            p_det = float(cam[0]) * 1e-3 * (1 if binning is None else int(binning[0])) / \
                (1.0 if optical is None or not optical[0] > 0 else float(optical[0]))
        if not (math.isfinite(p_det) and p_det > 0):
            raise ScanFormatError(path, f"the pixel size {p_det:g} mm is not positive")

        if center_shift is None:
            cs = floats("ReconSettings/CenterShift")
            center_shift = 0.0 if cs is None else float(cs[0])
        center_shift = float(center_shift)
        if not math.isfinite(center_shift):
            raise ScanFormatError(path, "ReconSettings/CenterShift is not finite")
        shifts = [floats(nm, n) for nm in ("Alignment/X-Shifts", "Alignment/Y-Shifts")]
        if any(v is not None and np.any(v != 0) for v in shifts):
            warnings.warn(f"{path}: the per-view alignment shifts (Alignment/X-Shifts, "
                          "Y-Shifts) are not applied", stacklevel=2)

        ref = None
        if ole.exists("ReferenceData/Image"):
            rcode = _stream(ole, path, "ReferenceData/DataType", "<u4", required=False)
            rtype = dtype if rcode is None else DATA_TYPES.get(int(rcode[0]))
            if rtype is None:
                raise ScanFormatError(path, f"ReferenceData/DataType is {int(rcode[0])}; leap "
                                      "reads 5 (uint16) and 10 (float32)")
            size = ole.get_size("ReferenceData/Image")
            if size != width * height * rtype.itemsize:
                raise ScanFormatError(path, f"the stream ReferenceData/Image holds {size} bytes, "
                                      f"not {height} x {width} pixels of {rtype}: images of "
                                      "mixed shapes")
            ref = OLEImages(path, ["ReferenceData/Image"], (height, width), rtype)

    if white_level is not None:
        ref = white_level_flat(path, (height, width), white_level, "white_level=")
    elif ref is None:
        warn_no_white_level(path, "no ReferenceData/Image stream")
    psi = -np.deg2rad(theta)
    detector = Detector(num_rows=height, num_cols=width, pixel_height=p_det, pixel_width=p_det,
                        center_col=0.5 * (width - 1) + center_shift)
    if cone:
        geo = ConeBeam(detector=detector, angles=psi, sod=src, sdd=src + det)
    else:
        geo = ParallelBeam(detector=detector, angles=psi)
    return Scan(system=default_system(geo),
                projections=OLEImages(path, streams, (height, width), dtype), flats=ref,
                angles=theta, metadata=meta, format=FORMAT, path=path, angle_unit="degree")
