"""diondo cone-beam CT scans: the scan's ``.xml`` file and its uint16 ``.raw`` projections
(``Projection/``) read into a :class:`Scan`.

Where the conventions come from
-------------------------------
TIGRE's loaders are the public readers (CERN/TIGRE ``Python/tigre/utilities/io/
DiondoDataLoader.py``; ``MATLAB/Utilities/IO/Diondo/readDiondoGeometry.m``,
``loadDiondoProjections.m``), with TIGRE's frame as :mod:`leap.io.scanners._tigre`
states it. The XML (the root's name is not read) has the blocks ``ScanParameter``
(``HelixMode``, ``Laminography``), ``Recon`` and ``Geometrie``; projection i is
``Projection/_<height>_<i, 4 digits>.raw`` with ``<height>`` the first entry of
``Geometrie/Slices/string`` ("12.50 mm, …") written ``%07.2f`` with a decimal comma
(``_0012,50_0000.raw``), rows × cols uint16, row-major, no header::

    ===================================  ================================================
    diondo key (unit)                    leap (TIGRE in between)
    ===================================  ================================================
    ``Geometrie/SourceObjectDist``,      sod, sdd (mm)
    ``Geometrie/SourceDetectorDist``
    ``Recon/ProjectionDimX``, ``DimY``   num_cols, num_rows (centred: no offsets)
    ``Recon/ProjectionPixelSizeX``,      pixel_width, pixel_height (mm)
    ``ProjectionPixelSizeY``
    ``Recon/ProjectionCenterOffsetX`` c  TIGRE COR = −c (mm; ``cor_unit='pixel'``:
                                         −c·PixelSizeX); tau = −COR
    ``Recon/ProjectionCount`` N,         α_i = −i·360°/M, i = 0 … N − 1 (files
    ``ProjectionCountPer360deg`` M       ``_0000`` …); ψ = α + π/2
    (absent: M = N)
    (TIGRE: 2^16 − 1)                    flats: one constant frame (``white_level=``)
    ===================================  ================================================

Where TIGRE's loaders disagree
------------------------------
The Python and MATLAB loaders read the same files four ways apart; this reader follows
the Python loader on all four (``loader='python'``, the default) and
``loader='matlab'`` switches all four, each also an option of its own:

* first file: Python reads ``_0000`` … ``_{N−1}`` (N views); MATLAB starts at ``_0001``
  (N − 1 views). Option ``first_file`` (0 or 1).
* angle step: Python 360°/N; MATLAB ``linspace(0, 2π, N)`` without its last value,
  360°/(N − 1). Option ``endpoint`` (False: 360°/M, True: 360°/(M − 1)).
* rows: Python uses the stored image as TIGRE's projection (row 0 at the top, so leap
  flips the rows); MATLAB turns it upside down first (leap keeps the stored rows).
  Option ``row_order`` ('top': stored row 0 is the detector's top row; 'bottom').
* the unit of ``ProjectionCenterOffsetX``: Python mm, MATLAB detector pixels
  (× ``ProjectionPixelSizeX``). Option ``cor_unit`` ('mm' or 'pixel').

Why Python's: its file numbering and angle step agree with each other for N files over
a full turn (every file read, none repeated: MATLAB's reading drops ``_0000`` and, with
all N files at 360°/N, would assign each remaining file the angle of the one before,
which only a scan with a repeated end view makes right); the row order and the offset's
unit are not settled by any public document (TIGRE's Python loader itself prints that
the sign of COR is unknown), so they follow the same loader for one consistent reading.
A wrong row order mirrors the reconstruction in z; a wrong offset unit blurs it.

One reading is leap's own: both TIGRE loaders take the angle step from
``ProjectionCount`` (MATLAB warns when it differs from ``ProjectionCountPer360deg``);
leap takes it from ``ProjectionCountPer360deg`` where the file has it, the same for a
full turn and the step the name states for a part of one.

Refused: ``HelixMode`` or ``Laminography`` true (neither loader reads them). Not
applied: MATLAB's ``+1`` on every count and its division by 2^16 (``white_level=``
sets the air level).
"""
from __future__ import annotations

import glob
import math
import os
import re
import xml.etree.ElementTree as ET

import numpy as np

from ..lazy import Constant, Oriented, binning_pair
from ._common import ScanFormatError, check_monotonic, default_system, parse_number
from ._raw import RawFrames
from ._tigre import check_writable, tigre_cone, tigre_terms
from .scan import Scan

PROJECTION_FOLDER = "Projection"
LOADERS = {"python": dict(first_file=0, endpoint=False, row_order="top", cor_unit="mm"),
           "matlab": dict(first_file=1, endpoint=True, row_order="bottom", cor_unit="pixel")}
_BLOCKS = ("ScanParameter", "Recon", "Geometrie")


# ------------------------------------------------------------------------- the XML
def _child(el, name):
    return next((c for c in el if c.tag.rsplit("}", 1)[-1] == name), None) \
        if el is not None else None


def _text(path, root, block, *names, required=True):
    el = _child(root, block)
    for n in names:
        el = _child(el, n)
    if el is None:
        if required:
            raise ScanFormatError(path, f"the key {'/'.join((block,) + names)} is missing")
        return None
    return (el.text or "").strip()


def _number(path, root, block, name, *, positive=False, integer=False, default=None):
    text = _text(path, root, block, name, required=default is None)
    if text is None:
        return default
    return parse_number(path, f"{block}/{name}", text, positive=positive, integer=integer)


def _is_diondo(path) -> bool:
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        return False
    return all(_child(root, b) is not None for b in _BLOCKS)


def _xml_file(path):
    p = os.fspath(path)
    if os.path.isdir(p):
        found = [f for f in sorted(glob.glob(os.path.join(glob.escape(p), "*.xml")))
                 if _is_diondo(f)]
        if len(found) > 1:
            raise ScanFormatError(p, f"holds {len(found)} diondo scan .xml files ({found}); "
                                  "name one")
        return found[0] if found else None
    # a file named by the caller is read as diondo's (read_xml names what is wrong)
    return p if p.lower().endswith(".xml") and os.path.isfile(p) else None


def detect(path) -> bool:
    """An ``.xml`` with diondo's ``ScanParameter``, ``Recon`` and ``Geometrie`` blocks, or a
    folder holding one."""
    p = os.fspath(path)
    if not os.path.isdir(p):
        return p.lower().endswith(".xml") and _is_diondo(p)
    try:
        return _xml_file(p) is not None
    except ScanFormatError:
        return True


def read_xml(path) -> tuple:
    """``(root, metadata)``: the parsed XML and every leaf's text by its path."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ScanFormatError(path, f"is not well-formed XML ({e})") from None
    meta = {}

    def walk(el, prefix):
        for c in el:
            key = prefix + c.tag.rsplit("}", 1)[-1]
            if len(c):
                walk(c, key + "/")
            else:
                meta.setdefault(key, (c.text or "").strip())
    walk(root, "")
    return root, meta


def slice_height(path, root) -> float:
    """The first ``Geometrie/Slices/string`` entry ("12.50 mm, …") in mm."""
    text = _text(path, root, "Geometrie", "Slices", "string")
    first = text.split(",")[0].strip()
    try:
        return float(first[:-2] if first.lower().endswith("mm") else first)
    except ValueError:
        raise ScanFormatError(path, f"Geometrie/Slices/string = {text!r} does not start with "
                              "a height in mm") from None


def file_prefix(height: float) -> str:
    """TIGRE's projection-file prefix for a slice height: ``_%07.2f`` with a comma."""
    return f"_{height:07.2f}".replace(".", ",")


def _projection_files(xml, root, n, first) -> list:
    folder = os.path.join(os.path.dirname(os.path.abspath(xml)), PROJECTION_FOLDER)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{xml}: no {PROJECTION_FOLDER!r} folder beside it")
    prefix = file_prefix(slice_height(xml, root))
    if not os.path.isfile(os.path.join(folder, f"{prefix}_{first:04d}.raw")):
        # the folder's one numbered series, if the slice height names no file
        found = {m.group(1) for m in (re.match(r"(.*)_\d{4}\.raw$", f)
                                      for f in os.listdir(folder)) if m}
        if len(found) != 1:
            raise FileNotFoundError(
                f"{xml}: {os.path.join(folder, f'{prefix}_{first:04d}.raw')!r} (named from "
                f"Geometrie/Slices/string) does not exist, and {folder!r} holds "
                f"{len(found)} numbered .raw series")
        prefix = found.pop()
    files = [os.path.join(folder, f"{prefix}_{i:04d}.raw") for i in range(first, n)]
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"{xml}: projection file {missing[0]!r} does not exist "
                                f"({len(missing)} of Recon/ProjectionCount = {n} missing)")
    return files


# --------------------------------------------------------------------------- reader
def open_scan(path, *, loader: str = "python", first_file=None, endpoint=None,
              row_order=None, cor_unit=None, binning=1, white_level: float = 65535.0
              ) -> Scan:
    """Read a diondo scan.

    Parameters
    ----------
    path : the scan folder (holding the ``.xml`` and ``Projection/``), or the ``.xml``.
    loader : 'python' or 'matlab': whose reading of the four points where TIGRE's
        loaders disagree (module docstring) to follow.
    first_file, endpoint, row_order, cor_unit : each of those points on its own (None:
        the ``loader``'s): 0 or 1; False (360°/M) or True (360°/(M − 1)); 'top' or
        'bottom'; 'mm' or 'pixel'.
    binning : int or (rows, cols): average that many pixels (lazily).
    white_level : the grey value of air (TIGRE: 2^16 − 1).

    Returns a Scan: projections (views, rows, cols) uint16 in leap's detector order
    (lazy), flats one constant frame at ``white_level``, ``angles`` TIGRE's α in
    degrees, ``metadata`` every key of the XML and the choices made.
    """
    if loader not in LOADERS:
        raise ValueError(f"loader must be 'python' or 'matlab', got {loader!r}")
    opts = dict(LOADERS[loader])
    for k, v in (("first_file", first_file), ("endpoint", endpoint),
                 ("row_order", row_order), ("cor_unit", cor_unit)):
        if v is not None:
            opts[k] = v
    if opts["first_file"] not in (0, 1) or isinstance(opts["first_file"], bool):
        raise ValueError(f"first_file must be 0 or 1, got {opts['first_file']!r}")
    if opts["row_order"] not in ("top", "bottom"):
        raise ValueError(f"row_order must be 'top' or 'bottom', got {opts['row_order']!r}")
    if opts["cor_unit"] not in ("mm", "pixel"):
        raise ValueError(f"cor_unit must be 'mm' or 'pixel', got {opts['cor_unit']!r}")
    if not (math.isfinite(white_level) and white_level > 0):
        raise ValueError(f"white_level must be a positive number, got {white_level!r}")

    xml = _xml_file(path)
    if xml is None:
        raise FileNotFoundError(f"no diondo scan .xml at {os.fspath(path)!r}")
    root, meta = read_xml(xml)
    for key in ("HelixMode", "Laminography"):
        if (_text(xml, root, "ScanParameter", key, required=False) or "").lower() == "true":
            raise ScanFormatError(xml, f"ScanParameter/{key} is true: only circular scans are "
                                  "read (as by TIGRE's loaders)")
    cols = _number(xml, root, "Recon", "ProjectionDimX", positive=True, integer=True)
    rows = _number(xml, root, "Recon", "ProjectionDimY", positive=True, integer=True)
    pw = _number(xml, root, "Recon", "ProjectionPixelSizeX", positive=True)
    ph = _number(xml, root, "Recon", "ProjectionPixelSizeY", positive=True)
    n = _number(xml, root, "Recon", "ProjectionCount", positive=True, integer=True)
    per_turn = _number(xml, root, "Recon", "ProjectionCountPer360deg", positive=True,
                       integer=True, default=n)
    offset = _number(xml, root, "Recon", "ProjectionCenterOffsetX", default=0.0)
    dso = _number(xml, root, "Geometrie", "SourceObjectDist", positive=True)
    dsd = _number(xml, root, "Geometrie", "SourceDetectorDist", positive=True)
    if not dsd > dso:
        raise ScanFormatError(xml, f"Geometrie/SourceDetectorDist ({dsd:g}) must exceed "
                              f"SourceObjectDist ({dso:g})")
    first = int(opts["first_file"])
    if n - first < 1 or (opts["endpoint"] and per_turn < 2):
        raise ScanFormatError(xml, f"Recon/ProjectionCount = {n} leaves no views to read "
                              f"with first_file={first}, endpoint={opts['endpoint']}")
    step = 360.0 / (per_turn - 1 if opts["endpoint"] else per_turn)
    measured = check_monotonic(xml, -step * np.arange(n - first), "angles")
    cor = -offset * (pw if opts["cor_unit"] == "pixel" else 1.0)

    files = _projection_files(xml, root, n, first)
    raw = RawFrames(files, rows, cols, "<u2",
                    what=f"{xml}: Recon/ProjectionDimX, ProjectionDimY")
    b = binning_pair(binning)
    projections = Oriented(raw, b, flip_rows=(opts["row_order"] == "top"), flip_cols=False)
    geometry = tigre_cone(n_u=cols, n_v=rows, d_u=pw, d_v=ph, dso=dso, dsd=dsd,
                          alpha=np.radians(measured), cor=cor, binning=b)
    flats = Constant((1,) + projections.shape[1:], float(white_level))
    meta = dict(meta, loader=loader, white_level=float(white_level), **opts)
    return Scan(system=default_system(geometry), projections=projections, flats=flats,
                angles=measured, metadata=meta, format="diondo", path=xml,
                angle_unit="degree")


# --------------------------------------------------------------------------- writer
def write_scan(folder, geometry, counts, *, loader: str = "python", height: float = 12.5,
               name: str = "scan.xml") -> str:
    """Write a scan in diondo's layout (``<name>`` and ``Projection/_<height>_0000.raw``
    …), the inverse of :func:`open_scan` with the same ``loader``.

    ``geometry``: a circular flat-detector ConeBeam centred on the central ray (diondo's
    files hold no detector offsets) at the angles the loader reads: ψ_i = π/2 − i·s
    with s = 360°/M ('python') or 360°/(M − 1) ('matlab') for a whole M. ``counts``:
    (views, rows, cols) in leap's order, rounded and clipped to uint16. With 'matlab'
    the file ``_0000`` (which that loader skips) holds a copy of the first view.
    Returns the XML path.
    """
    check_writable(geometry, "diondo.write_scan")
    if loader not in LOADERS:
        raise ValueError(f"loader must be 'python' or 'matlab', got {loader!r}")
    opts = LOADERS[loader]
    g, d = geometry, geometry.detector
    shape = g.projection_shape
    if tuple(counts.shape) != tuple(shape):
        raise ValueError(f"counts must be (views, rows, cols) = {tuple(shape)}, got "
                         f"{tuple(counts.shape)}")
    t = tigre_terms(g)
    views = shape[0]
    step = -float(np.degrees(t["alpha"][1] - t["alpha"][0])) if views > 1 else 360.0
    per_turn = 360.0 / step + (1 if opts["endpoint"] else 0) if step > 0 else 0.0
    if t["off_u"] != 0.0 or t["off_v"] != 0.0 or abs(t["alpha"][0]) > 1e-9 or \
            not per_turn >= 2 or abs(per_turn - round(per_turn)) > 1e-6:
        raise ValueError("a diondo file set holds a centred detector and the angles "
                         "psi_i = pi/2 - i*360deg/M (M whole): got "
                         f"offsets ({t['off_u']:g}, {t['off_v']:g}) mm, first angle "
                         f"{np.degrees(g.angles[0]):g} deg, step {step:g} deg")
    first = opts["first_file"]
    offset = -t["cor"] / (d.pixel_width if opts["cor_unit"] == "pixel" else 1.0)
    folder = os.fspath(folder)
    os.makedirs(os.path.join(folder, PROJECTION_FOLDER), exist_ok=True)
    xml = os.path.join(folder, name)
    with open(xml, "w", encoding="utf-8") as fh:
        fh.write(
            '<?xml version="1.0" encoding="utf-8"?>\n<CTScan>\n  <ScanParameter>\n'
            "    <HelixMode>false</HelixMode>\n    <Laminography>false</Laminography>\n"
            "  </ScanParameter>\n  <Recon>\n"
            f"    <ProjectionDimX>{d.num_cols}</ProjectionDimX>\n"
            f"    <ProjectionDimY>{d.num_rows}</ProjectionDimY>\n"
            f"    <ProjectionPixelSizeX>{d.pixel_width!r}</ProjectionPixelSizeX>\n"
            f"    <ProjectionPixelSizeY>{d.pixel_height!r}</ProjectionPixelSizeY>\n"
            f"    <ProjectionCount>{views + first}</ProjectionCount>\n"
            f"    <ProjectionCountPer360deg>{int(round(per_turn))}</ProjectionCountPer360deg>\n"
            f"    <ProjectionCenterOffsetX>{offset!r}</ProjectionCenterOffsetX>\n"
            "  </Recon>\n  <Geometrie>\n"
            f"    <SourceObjectDist>{g.sod!r}</SourceObjectDist>\n"
            f"    <SourceDetectorDist>{g.sdd!r}</SourceDetectorDist>\n"
            f"    <Slices><string>{height:.2f} mm</string></Slices>\n"
            "  </Geometrie>\n</CTScan>\n")
    prefix = file_prefix(float(f"{height:.2f}"))
    for i in range(-first, views):
        view = np.asarray(counts[max(i, 0)], dtype=np.float64)
        if opts["row_order"] == "top":
            view = view[::-1]
        img = np.clip(np.rint(view), 0, 65535).astype("<u2")
        img.tofile(os.path.join(folder, PROJECTION_FOLDER, f"{prefix}_{i + first:04d}.raw"))
    return xml
