"""YXLON (Comet) cone-beam CT scans: ``ScanParameter.xml`` or a tab-separated ``.txt``
parameter file, and the projections (``Projections/`` or ``Projektionen/``: uint16
``.raw`` files, or TIFFs) read into a :class:`Scan`.

Where the conventions come from
-------------------------------
TIGRE's loaders are the public readers (CERN/TIGRE ``Python/tigre/utilities/io/
YXLONDataLoader.py``; ``MATLAB/Utilities/IO/YXLON/readYXLONGeometry.m``,
``loadYXLONProjections.m``), with TIGRE's frame as :mod:`leap.io.scanners._tigre`
states it.

``ScanParameter.xml`` (TIGRE's Python loader only): under ``ConeBeamScanParameter``,
``ProjectionSize`` and ``PixelSize`` (``Height``, ``Width``), ``ProjectionBitdepth``, a
``ScanTrajectory`` of ``xsi:type`` ``CircleTrajectory`` whose lengths are in detector
pixels of ``PixelPitch`` mm, and an optional ``DejustmentParameter``::

    ===================================  ================================================
    ScanParameter.xml key (unit)         leap (TIGRE in between)
    ===================================  ================================================
    ``Fod``, ``Fdd`` (pixels)            sod, sdd = PixelPitch × value
    ``YoCenter`` (pixels)                tau = PixelPitch × YoCenter (TIGRE COR = −that)
    ``StartAngle``, ``Rotation`` (deg),  α_i = radians(StartAngle − i·Rotation/N);
    ``NumberOfProjections`` N            ψ = α + π/2
    ``ProjectionSize`` Height, Width     num_rows, num_cols
    ``PixelSize`` Height, Width (mm)     pixel_height, pixel_width
    ``HorizontalDetectorOffset``,        center_col = (cols − 1)/2 + PixelPitch·H/width,
    ``VerticalDetectorOffset`` (pixels)  center_row = (rows − 1)/2 + PixelPitch·V/height
    ``ProjectionBitdepth`` b             flats: one frame at 2^b − 1 (b = 16 if absent)
    ===================================  ================================================

The ``.txt`` file: lines ``value<TAB>label``; the labels read are ``Number of Detector
Elements`` (a square detector), ``2D-Pixel Size [mm]`` × ``Pixelbinning``, ``FOD [mm]``,
``FDD [mm]``, ``Center Offset [mm]`` (TIGRE's COR: tau = −value) and ``CT: Number of
Projections``; α_i = −i·360°/N; the white level 2^16 − 1.

Images: a ``.raw`` file is rows × cols uint16 (row-major, no header) that TIGRE turns
upside down (``flipud``; the MATLAB loader's ``rot90`` of the column-major read is the
same image), so with TIGRE's rows from the top the stored rows run up: leap uses them as
stored. TIFF projections TIGRE's Python loader takes as they are (row 0 at the top):
leap flips their rows. Files are taken in name order (TIGRE's Python; MATLAB numbers
them ``<prefix>0000.raw`` …, the same order).

Where TIGRE's loaders disagree
------------------------------
* The angle step of the ``.txt`` variant: TIGRE's Python loader takes
  ``−linspace(0, 2π, N)``, a step of 360°/(N − 1) with the last view at 360°, the first
  view again; its MATLAB loader ``linspace(0, 2π, N + 1)`` without the last, a step of
  360°/N. This reader follows MATLAB (``endpoint=False``): N views over a turn without a
  repeated one is what CT acquisitions take, and TIGRE's own reading of the XML variant
  (``Rotation/N``) agrees with it. ``endpoint=True`` gives the Python loader's step
  (360°/(N − 1), or Rotation/(N − 1) for the XML).
* The detector pixel of the ``.txt`` variant: Python ``2D-Pixel Size [mm]``, MATLAB
  ``3D-XY-Pixel Size [mm]`` (the reconstruction's voxel, smaller by the magnification);
  this reader follows Python (the detector's pixel), and ``pixel_size=`` overrides it.
  MATLAB sets COR to 0; Python reads ``Center Offset [mm]``, as here.

Refused rather than ignored (TIGRE prints and goes on): a ``DetectorOrientation`` other
than ``Original``, ``DetectorFlipDirections`` other than ``None``, non-zero
``DetectorTiltA/B/C``, trajectories other than ``CircleTrajectory``.
"""
from __future__ import annotations

import glob
import math
import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from ..lazy import Constant, Oriented, binning_pair
from ._common import (ScanFormatError, check_monotonic, default_system, parse_number,
                      text_lines)
from ._raw import RawFrames
from ._tigre import check_writable, tigre_cone, tigre_terms
from .nikon import stack
from .scan import Scan

XML_FILE = "ScanParameter.xml"
PROJECTION_FOLDERS = ("Projections", "Projektionen")
_TXT_KEYS = {"elements": "Number of Detector Elements", "pixel": "2D-Pixel Size [mm]",
             "binning": "Pixelbinning", "fod": "FOD [mm]", "fdd": "FDD [mm]",
             "cor": "Center Offset [mm]", "views": "CT: Number of Projections"}


# ------------------------------------------------------------------ parameter files
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def _find(path, parent, *names, required=True):
    """The element ``parent/names[0]/names[1]/…`` (local names), or None."""
    el = parent
    for name in names:
        el = next((c for c in el if _local(c.tag) == name), None) if el is not None else None
    if el is None and required:
        raise ScanFormatError(path, f"the key {'/'.join(names)} is missing")
    return el


def _xml_number(path, parent, *names, default=None, positive=False, integer=False):
    el = _find(path, parent, *names, required=default is None)
    if el is None:
        return default
    return parse_number(path, "/".join(names), (el.text or "").strip(), positive=positive,
                        integer=integer)


def read_scan_parameter(path) -> dict:
    """The ``ScanParameter.xml`` keys this reader uses, as numbers (see the module
    docstring), and ``metadata``: every leaf element's text by its path."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ScanFormatError(path, f"is not well-formed XML ({e})") from None
    p = root if _local(root.tag) == "ConeBeamScanParameter" else \
        _find(path, root, "ConeBeamScanParameter")
    for key, fine in (("DetectorOrientation", "original"), ("DetectorFlipDirections", "none")):
        el = _find(path, p, key, required=False)
        if el is not None and (el.text or "").strip().lower() != fine:
            raise ScanFormatError(path, f"{key} = {(el.text or '').strip()!r}: only "
                                  f"{fine!r} is read (TIGRE ignores it; the image "
                                  "orientation it stands for is not public)")
    traj = _find(path, p, "ScanTrajectory")
    kind = next((v for k, v in traj.attrib.items() if _local(k) == "type"), None)
    if kind is not None and kind.split(":")[-1] != "CircleTrajectory":
        raise ScanFormatError(path, f"ScanTrajectory is a {kind!r}; only CircleTrajectory "
                              "is read")
    out = dict(
        rows=_xml_number(path, p, "ProjectionSize", "Height", positive=True, integer=True),
        cols=_xml_number(path, p, "ProjectionSize", "Width", positive=True, integer=True),
        pixel_height=_xml_number(path, p, "PixelSize", "Height", positive=True),
        pixel_width=_xml_number(path, p, "PixelSize", "Width", positive=True),
        bits=_xml_number(path, p, "ProjectionBitdepth", default=16.0, positive=True,
                         integer=True),
        pitch=_xml_number(path, traj, "PixelPitch", positive=True),
        fdd=_xml_number(path, traj, "Fdd", positive=True),
        fod=_xml_number(path, traj, "Fod", positive=True),
        yo=_xml_number(path, traj, "YoCenter", default=0.0),
        views=_xml_number(path, traj, "NumberOfProjections", positive=True, integer=True),
        start=_xml_number(path, traj, "StartAngle", default=0.0),
        rotation=_xml_number(path, traj, "Rotation", default=360.0))
    dej = _find(path, p, "DejustmentParameter", required=False)
    out["h_offset"] = out["v_offset"] = 0.0
    if dej is not None:
        out["h_offset"] = _xml_number(path, dej, "HorizontalDetectorOffset", default=0.0)
        out["v_offset"] = _xml_number(path, dej, "VerticalDetectorOffset", default=0.0)
        for t in ("DetectorTiltA", "DetectorTiltB", "DetectorTiltC"):
            if _xml_number(path, dej, t, default=0.0) != 0.0:
                raise ScanFormatError(path, f"DejustmentParameter/{t} is not 0: detector "
                                      "tilts are not read (their axes are not public)")
    meta = {}

    def walk(el, prefix):
        for c in el:
            key = f"{prefix}{_local(c.tag)}"
            if len(c):
                walk(c, key + "/")
            else:
                meta.setdefault(key, (c.text or "").strip())
    walk(root, "")
    out["metadata"] = meta
    return out


def read_txt(path) -> dict:
    """A ``.txt`` parameter file's ``value<TAB>label`` lines as ``{label: value}``
    (labels and values stripped; the first occurrence wins)."""
    lines = text_lines(path)
    out = {}
    for line in lines:
        parts = [s.strip().strip('"') for s in line.split("\t") if s.strip()]
        if len(parts) >= 2:
            out.setdefault(parts[-1], parts[0])
    return out


def _txt_number(path, meta, key, *, positive=False, integer=False, default=None):
    label = _TXT_KEYS[key]
    if label not in meta:
        if default is not None:
            return default
        raise ScanFormatError(path, f"the line labelled {label!r} is missing")
    # a decimal comma is read as a point
    return parse_number(path, label, meta[label].replace(",", "."), positive=positive,
                        integer=integer)


def _has_fod(path) -> bool:
    """Whether ``path`` is a text file with a ``FOD [mm]`` line (YXLON's parameters)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return any(ln.rstrip().endswith(_TXT_KEYS["fod"]) for ln in f)
    except OSError:
        return False


def _txt_files(folder) -> list:
    """The ``.txt`` files of ``folder`` that hold a ``FOD [mm]`` line."""
    return [p for p in sorted(glob.glob(os.path.join(glob.escape(folder), "*.txt")))
            if _has_fod(p)]


def _parameter_file(path):
    """``(file, 'xml' | 'txt')`` of a scan path (the folder, or the file itself)."""
    p = os.fspath(path)
    if os.path.isdir(p):
        x = os.path.join(p, XML_FILE)
        if os.path.isfile(x):
            return x, "xml"
        txt = _txt_files(p)
        if len(txt) == 1:
            return txt[0], "txt"
        if len(txt) > 1:
            raise ScanFormatError(p, f"holds {len(txt)} YXLON parameter .txt files ({txt}); "
                                  "name one")
        return None, None
    name = os.path.basename(p)
    if name.lower() == XML_FILE.lower():
        return p, "xml"
    if name.lower().endswith(".txt") and _has_fod(p):
        return p, "txt"
    return None, None


def detect(path) -> bool:
    """A ``ScanParameter.xml``, a ``.txt`` with YXLON's ``FOD [mm]`` line, or a folder
    holding one."""
    try:
        return _parameter_file(path)[0] is not None
    except ScanFormatError:
        return True


# ------------------------------------------------------------------ projections
def _numbered(p):
    m = re.search(r"(\d+)\D*$", os.path.basename(p))
    return (int(m.group(1)) if m else -1, os.path.basename(p))


def projection_files(folder, param) -> tuple:
    """``(files, 'raw' | 'tif')``: the projections under ``Projections/`` or
    ``Projektionen/`` of ``folder`` in their numbers' order; ``.raw`` preferred."""
    sub = next((os.path.join(folder, s) for s in PROJECTION_FOLDERS
                if os.path.isdir(os.path.join(folder, s))), None)
    if sub is None:
        raise FileNotFoundError(f"{param}: no projection folder ({' or '.join(PROJECTION_FOLDERS)}"
                                f") in {folder!r}")
    for kind, exts in (("raw", (".raw",)), ("tif", (".tif", ".tiff"))):
        files = [os.path.join(sub, f) for f in os.listdir(sub) if f.lower().endswith(exts)]
        if files:
            return sorted(files, key=_numbered), kind
    raise FileNotFoundError(f"{param}: {sub!r} holds no .raw or .tif projections")


# --------------------------------------------------------------------------- reader
def open_scan(path, *, endpoint: bool = False, pixel_size=None, binning=1,
              white_level=None) -> Scan:
    """Read a YXLON scan.

    Parameters
    ----------
    path : the scan folder (holding ``ScanParameter.xml`` or the ``.txt``), or the file.
    endpoint : False: a step of Rotation/N (360°/N for ``.txt``; TIGRE's MATLAB loader);
        True: Rotation/(N − 1) (TIGRE's Python loader: the last view at the full turn).
    pixel_size : mm, a number or (height, width), instead of the file's.
    binning : int or (rows, cols): average that many pixels (lazily).
    white_level : the grey value of air (default 2^ProjectionBitdepth − 1, or 2^16 − 1).

    Returns a Scan: projections (views, rows, cols) in leap's detector order (lazy; raw
    files as stored, TIFFs with rows flipped), flats one constant frame at the white
    level, ``angles`` TIGRE's α in degrees, ``metadata`` the file's keys.
    """
    param, kind = _parameter_file(path)
    if param is None:
        raise FileNotFoundError(f"no {XML_FILE} or YXLON .txt parameter file at "
                                f"{os.fspath(path)!r}")
    folder = os.path.dirname(os.path.abspath(param))
    if kind == "xml":
        p = read_scan_parameter(param)
        meta = p.pop("metadata")
        rows, cols, n, pitch = p["rows"], p["cols"], p["views"], p["pitch"]
        ph, pw = p["pixel_height"], p["pixel_width"]
        dso, dsd, cor = pitch * p["fod"], pitch * p["fdd"], -pitch * p["yo"]
        off_u, off_v = -pitch * p["h_offset"], -pitch * p["v_offset"]
        start, rotation, white = p["start"], p["rotation"], 2.0 ** p["bits"] - 1.0
        keys = "ScanTrajectory/NumberOfProjections, ProjectionSize"
    else:
        meta = read_txt(param)
        rows = cols = _txt_number(param, meta, "elements", positive=True, integer=True)
        n = _txt_number(param, meta, "views", positive=True, integer=True)
        ph = pw = _txt_number(param, meta, "pixel", positive=True) * \
            _txt_number(param, meta, "binning", positive=True, default=1.0)
        dso = _txt_number(param, meta, "fod", positive=True)
        dsd = _txt_number(param, meta, "fdd", positive=True)
        cor = _txt_number(param, meta, "cor", default=0.0)
        off_u = off_v = 0.0
        start, rotation, white = 0.0, 360.0, 65535.0
        keys = f"{_TXT_KEYS['views']!r}, {_TXT_KEYS['elements']!r}"
    if not dsd > dso:
        raise ScanFormatError(param, f"the source-detector distance ({dsd:g} mm) must exceed "
                              f"the source-object distance ({dso:g} mm)")
    if pixel_size is not None:
        ph, pw = (float(pixel_size),) * 2 if np.ndim(pixel_size) == 0 else \
            tuple(float(x) for x in pixel_size)
        if not (ph > 0 and pw > 0):
            raise ValueError(f"pixel_size must be positive, got {pixel_size!r}")
    if n < 2 and endpoint:
        raise ScanFormatError(param, "endpoint=True needs at least two projections")
    step = rotation / (n - 1 if endpoint else n)
    measured = check_monotonic(param, start - step * np.arange(n), "angles")

    files, ftype = projection_files(folder, param)
    if len(files) != n:
        raise ScanFormatError(param, f"{keys} give {n} projections but the projection folder "
                              f"holds {len(files)} {ftype} files ({files[0]!r} …)")
    if ftype == "raw":
        raw = RawFrames(files, rows, cols, "<u2", what=f"{param}: {keys}")
    else:
        raw = stack(param, files, "the TIFF projections")
        if raw.shape != (n, rows, cols):
            raise ScanFormatError(param, f"the TIFF projections are {raw.shape[1:]} (rows, "
                                  f"cols) but the parameters say {(rows, cols)}")
    b = binning_pair(binning)
    projections = Oriented(raw, b, flip_rows=(ftype == "tif"), flip_cols=False)
    geometry = tigre_cone(n_u=cols, n_v=rows, d_u=pw, d_v=ph, dso=dso, dsd=dsd,
                          alpha=np.radians(measured), cor=cor, off_u=off_u, off_v=off_v,
                          binning=b)
    white = white if white_level is None else float(white_level)
    if not (math.isfinite(white) and white > 0):
        raise ValueError(f"white_level must be a positive number, got {white_level!r}")
    flats = Constant((1,) + projections.shape[1:], white)
    meta = dict(meta, parameter_file=kind, projection_files=ftype, white_level=white)
    return Scan(system=default_system(geometry), projections=projections, flats=flats,
                angles=measured, metadata=meta, format="yxlon", path=param,
                angle_unit="degree")


# --------------------------------------------------------------------------- writer
def write_scan(folder, geometry, counts, *, variant: str = "xml", name: str = "scan",
               bits: int = 16, endpoint: bool = False) -> str:
    """Write a scan in YXLON's layout: ``ScanParameter.xml`` (``variant='xml'``) or
    ``<name>.txt`` (``'txt'``), and ``Projections/<name>_0000.raw`` … (uint16, rows as
    TIGRE reads them), the inverse of :func:`open_scan` (with the same ``endpoint``).

    ``geometry``: a circular flat-detector ConeBeam at equally spaced angles; the
    ``.txt`` variant also needs a square detector of square pixels centred on the
    central ray, and the angles TIGRE gives it (ψ_i = π/2 − i·360°/N, or /(N − 1) with
    ``endpoint``). ``counts``: (views, rows, cols) in leap's order (one view held at a
    time), rounded and clipped to [0, 2^bits − 1]; the white level is 2^bits − 1 (2^16 − 1
    for ``.txt``). Returns the parameter file's path.
    """
    check_writable(geometry, "yxlon.write_scan")
    if variant not in ("xml", "txt"):
        raise ValueError(f"variant must be 'xml' or 'txt', got {variant!r}")
    g, d = geometry, geometry.detector
    shape = g.projection_shape
    if tuple(counts.shape) != tuple(shape):
        raise ValueError(f"counts must be (views, rows, cols) = {tuple(shape)}, got "
                         f"{tuple(counts.shape)}")
    n = shape[0]
    t = tigre_terms(g)
    alpha = np.degrees(t["alpha"])
    step = float(alpha[0] - alpha[1]) if n > 1 else 360.0
    rotation = step * (n - 1 if endpoint else n)
    folder = os.fspath(folder)
    os.makedirs(os.path.join(folder, "Projections"), exist_ok=True)
    if variant == "xml":
        pitch = d.pixel_width
        param = os.path.join(folder, XML_FILE)
        with open(param, "w", encoding="utf-8") as fh:
            fh.write(
                '<?xml version="1.0" encoding="utf-8"?>\n<ScanParameter xmlns:xsi='
                '"http://www.w3.org/2001/XMLSchema-instance">\n  <ConeBeamScanParameter>\n'
                "    <DetectorOrientation>Original</DetectorOrientation>\n"
                "    <DetectorFlipDirections>None</DetectorFlipDirections>\n"
                f"    <PixelSize><Height>{d.pixel_height!r}</Height><Width>{d.pixel_width!r}"
                "</Width></PixelSize>\n"
                f"    <ProjectionSize><Height>{d.num_rows}</Height><Width>{d.num_cols}"
                "</Width></ProjectionSize>\n"
                f"    <ProjectionBitdepth>{int(bits)}</ProjectionBitdepth>\n"
                '    <ScanTrajectory xsi:type="CircleTrajectory">\n'
                f"      <PixelPitch>{pitch!r}</PixelPitch>\n"
                f"      <Fdd>{g.sdd / pitch!r}</Fdd>\n      <Fod>{g.sod / pitch!r}</Fod>\n"
                f"      <YoCenter>{-t['cor'] / pitch!r}</YoCenter>\n"
                f"      <NumberOfProjections>{n}</NumberOfProjections>\n"
                f"      <StartAngle>{float(alpha[0])!r}</StartAngle>\n"
                f"      <Rotation>{rotation!r}</Rotation>\n    </ScanTrajectory>\n"
                "    <DejustmentParameter>\n"
                f"      <HorizontalDetectorOffset>{-t['off_u'] / pitch!r}"
                "</HorizontalDetectorOffset>\n"
                f"      <VerticalDetectorOffset>{-t['off_v'] / pitch!r}</VerticalDetectorOffset>\n"
                "      <DetectorTiltA>0</DetectorTiltA><DetectorTiltB>0</DetectorTiltB>"
                "<DetectorTiltC>0</DetectorTiltC>\n    </DejustmentParameter>\n"
                "  </ConeBeamScanParameter>\n</ScanParameter>\n")
        white = 2.0 ** int(bits) - 1.0
    else:
        expect = np.pi / 2 - np.radians(np.arange(n) * 360.0 / (n - 1 if endpoint else n))
        if d.num_rows != d.num_cols or d.pixel_height != d.pixel_width or \
                t["off_u"] != 0.0 or t["off_v"] != 0.0 or \
                not np.allclose(g.angles, expect, atol=1e-9):
            raise ValueError("the .txt variant holds a square, centred detector of square "
                             "pixels and TIGRE's angles (pi/2 - i*360deg/N); write "
                             "variant='xml' for this geometry")
        param = os.path.join(folder, f"{name}.txt")
        # TIGRE's Python loader matches this label with its trailing space
        lines = [(d.num_cols, _TXT_KEYS["elements"] + " "), (d.pixel_width, _TXT_KEYS["pixel"]),
                 (1, _TXT_KEYS["binning"]), (g.sod, _TXT_KEYS["fod"]),
                 (g.sdd, _TXT_KEYS["fdd"]), (t["cor"], _TXT_KEYS["cor"]),
                 (n, _TXT_KEYS["views"])]
        with open(param, "w", encoding="utf-8") as fh:
            fh.write("".join(f"{v!r}\t{k}\n" if isinstance(v, float) else f"{v}\t{k}\n"
                             for v, k in lines))
        white = 65535.0
    for i in range(n):
        view = np.clip(np.rint(np.asarray(counts[i], dtype=np.float64)), 0, white)
        view.astype("<u2").tofile(os.path.join(folder, "Projections", f"{name}_{i:04d}.raw"))
    return param
