"""Elekta XVI cone-beam CT (Synergy, Versa HD, Infinity; XVI 5 and later): a projection
folder's ``_Frames.xml`` and its ``.his`` images (one per frame) read into a :class:`Scan`.

Where the conventions come from
-------------------------------
RTK (RTKConsortium/RTK) is the public reader: ``rtkHisImageIO.cxx`` (the HIS file),
``rtkElektaXVI5GeometryXMLFileReader`` (``_Frames.xml``), ``rtkProjectionsReader.hxx`` with
``rtkElektaSynergyRawLookupTableImageFilter`` / ``rtkElektaSynergyLookupTableImageFilter``
(the pixel values) and RTK's geometry document (``documentation/docs/Geometry.md``, the
``ThreeDCircularProjectionGeometry`` of IEC 61217).

* A ``.his`` file (Heimann) starts with a 68-byte header whose first four bytes are
  ``00 70 44 00``; bytes 10–11 hold the size of an extra image header (32 in XVI's
  files, so pixels start at byte 100), bytes 12–19 the corners ``ulx, uly, brx, bry``,
  20–21 the number of frames, 32 (and 34) the pixel type (4: uint16), all little-endian
  uint16. RTK takes ``bry − uly + 1`` as the number of columns (the index that runs
  fastest) and ``brx − ulx + 1`` as rows, and a 409.6 mm panel: pixel pitch 409.6/N mm.
* A pixel holds ``65536 − counts``: RTK reads the line integral as
  ``log(65536) − log(65536 − v)`` (values 0 and 65535 read as 1). Here ``projections``
  are the counts ``65536 − v`` (0 and 65535 as 65535) and the flat is a constant
  65536 (``white_level``), so ``Scan.attenuation()`` gives RTK's values.
* ``_Frames.xml`` has one ``Frame`` element per image, in the images' order, each with
  ``GantryAngle`` (degrees, IEC 61217: clockwise seen from the isocentre looking towards
  the gantry), ``UCentre`` and ``VCentre`` (mm at the detector: where the panel's centre
  is; RTK's ``ProjectionOffsetX/Y`` are their negatives). RTK also accepts the tag names
  of anonymised files (``Angle``, ``antryAngle``, ``Gantryngle``, ``Uentre``,
  ``Ventre``); so does this reader.
* The file has no distances: RTK hard-codes source–isocentre 1000 mm and
  source–detector 1536 mm (options ``sod=``, ``sdd=``).

RTK's fixed frame is IEC 61217's (x lateral, y towards the gantry, z up). At gantry angle
g the source is ``Ry(g)·(0, 0, 1000)`` and the detector's pixel (column u, row v) is
``Ry(g)·(u + ProjectionOffsetX, v + ProjectionOffsetY, sid − sdd)``, u and v measured from
the image centre. leap's frame is ``(X, Y, Z) = (x, −z, y)`` (right-handed: Z along the
rotation axis, towards the gantry; Y down), in which the source turns counter-clockwise
about Z by g from ``(0, −sod, 0)``, exactly LEAP's ψ; the HIS columns run along θ⊥ and its
rows along +Z, so images are used as stored (no flips)::

    ===================================  ================================================
    XVI / HIS (unit)                     leap
    ===================================  ================================================
    ``GantryAngle`` g (deg, per frame)   ψ = radians(g), unwrapped (XVI writes −180…180)
    HIS ``bry − uly + 1``,               num_cols, num_rows (stored order kept)
    ``brx − ulx + 1``
    409.6 mm / N                         pixel_width, pixel_height (``pixel_size=``)
    ``UCentre`` (mm, per frame)          center_col = (cols − 1)/2 + UCentre/pixel_width
    ``VCentre`` (mm, per frame)          center_row = (rows − 1)/2 + VCentre/pixel_height
    (1000 mm, 1536 mm: RTK)              sod, sdd (``sod=``, ``sdd=``)
    pixel v (uint16)                     projections: counts 65536 − v; flats: 65536
    ===================================  ================================================

Offsets that change from frame to frame (XVI's flexmap: the panel sags as the gantry
turns) give a :class:`~leap.geometry.ModularBeam` (one module per frame); constant ones a
:class:`~leap.geometry.ConeBeam`. Half-fan scans (XVI's M and L fields of view: the panel
shifted sideways so that one side reaches past the axis by less than 3/4 of the other)
over a full turn get offset-scan FBP weights and a volume as wide as the farther side
(``offset_scan=``). Not done here: RTK's default crop of 4 pixels at each panel edge
(``Scan.attenuation(bad_pixels=...)`` handles bad edge pixels), XVI's older ``FRAME.DBF``
/ ``IMAGE.DBF`` databases (XVI < 5), the scatter, beam-hardening and lag corrections.
"""
from __future__ import annotations

import glob
import math
import os
import re
import struct
import xml.etree.ElementTree as ET

import numpy as np

from ...geometry import ConeBeam, Detector, ModularBeam
from ...geometry.conventions import default_volume, volume_from_leap
from ...system import CTSystem, FBPOptions
from ...reconstruction.weights import angular_range_degrees, angular_step
from ..lazy import Constant, Mapped
from ._common import ScanFormatError, check_monotonic, default_system
from ._raw import RawFrames
from .scan import Scan

FRAMES_FILE = "_Frames.xml"
HIS_MAGIC = bytes((0x00, 0x70, 0x44, 0x00))
HIS_HEADER = 68               # bytes before the extra image header (RTK: HEADER_INFO_SIZE)
PANEL_MM = 409.6              # RTK's panel width: pixel pitch 409.6/N mm
SOD, SDD = 1000.0, 1536.0     # RTK's source-isocentre and source-detector distances, mm
WHITE = 65536.0               # RTK's I0 for HIS files
# Tag names RTK accepts (anonymised files drop a letter), compared ignoring case.
_ANGLE_TAGS = ("gantryangle", "angle", "antryangle", "gantryngle")
_U_TAGS = ("ucentre", "uentre")
_V_TAGS = ("vcentre", "ventre")
# A half-fan scan: the detector's short side reaches at most this fraction of its long side.
OFFSET_SCAN_RATIO = 0.75


# ----------------------------------------------------------------------- HIS files
def read_his_header(path) -> dict:
    """The layout of a HIS file as RTK reads it: ``rows``, ``cols``, ``frames``,
    ``type``, ``offset`` (the byte where pixels start). Raises ScanFormatError for a file
    too short or without the HIS signature, FileNotFoundError for a missing file."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HIS_HEADER)
    except OSError as e:
        raise FileNotFoundError(f"{path}: cannot be read ({e})") from None
    if len(head) < HIS_HEADER:
        raise ScanFormatError(path, f"holds {len(head)} bytes, less than the {HIS_HEADER}-byte "
                              "HIS header (truncated)")
    if head[:4] != HIS_MAGIC:
        raise ScanFormatError(path, f"is not a Heimann HIS file (first bytes {head[:4].hex()}, "
                              f"expected {HIS_MAGIC.hex()})")
    extra, ulx, uly, brx, bry, frames = struct.unpack_from("<6H", head, 10)
    ptype = head[32] + (head[34] << 8)
    rows, cols = brx - ulx + 1, bry - uly + 1
    if rows < 1 or cols < 1:
        raise ScanFormatError(path, f"has image corners ulx={ulx}, uly={uly}, brx={brx}, "
                              f"bry={bry}: no pixels")
    if ptype != 4:
        raise ScanFormatError(path, f"has pixel type {ptype}; leap reads type 4 (uint16), "
                              "as XVI writes")
    if frames != 1:
        raise ScanFormatError(path, f"holds {frames} frames; XVI writes one per file")
    return dict(rows=rows, cols=cols, frames=frames, type=ptype, offset=HIS_HEADER + extra)


def counts_from_his(v, key=None):
    """RTK's reading of HIS pixels: counts ``65536 − v`` (float32), with 0 and 65535 (no
    signal, saturated) read as 65535 (RTK's lookup table gives them the value of 1).
    A module-level function: sources must pickle."""
    v = np.asarray(v)
    c = 65536.0 - v.astype(np.float32)
    c[(v == 0) | (v == 65535)] = 65535.0
    return c


# --------------------------------------------------------------------- _Frames.xml
def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1].lower()


def _child_number(path, frame, index: int, names) -> float | None:
    for child in frame:
        if _local(child.tag) in names:
            text = (child.text or "").strip()
            try:
                x = float(text)
            except ValueError:
                raise ScanFormatError(path, f"Frame {index + 1}: {child.tag.rsplit('}', 1)[-1]} = "
                                      f"{text!r} is not a number") from None
            if not math.isfinite(x):
                raise ScanFormatError(path, f"Frame {index + 1}: {child.tag.rsplit('}', 1)[-1]} = "
                                      f"{text!r} is not finite")
            return x
    return None


def read_frames(path) -> tuple:
    """``(gantry, u_centre, v_centre, image)`` of a ``_Frames.xml``: per-frame arrays
    (degrees, mm, mm) in file order and the ``Image`` block's keys (text). A frame without
    a gantry angle is refused; ``UCentre``/``VCentre`` missing from every frame read as 0
    (RTK's default), missing from some only is refused."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        raise ScanFormatError(path, f"is not well-formed XML ({e})") from None
    except OSError as e:
        raise FileNotFoundError(f"{path}: cannot be read ({e})") from None
    frames = [el for el in root.iter() if _local(el.tag) == "frame"]
    if not frames:
        raise ScanFormatError(path, "has no Frame elements (the per-image gantry angles)")
    gantry, u, v = [], [], []
    for i, fr in enumerate(frames):
        g = _child_number(path, fr, i, _ANGLE_TAGS)
        if g is None:
            raise ScanFormatError(path, f"Frame {i + 1} has no GantryAngle")
        gantry.append(g)
        u.append(_child_number(path, fr, i, _U_TAGS))
        v.append(_child_number(path, fr, i, _V_TAGS))
    out = [np.asarray(gantry, dtype=np.float64)]
    for name, vals in (("UCentre", u), ("VCentre", v)):
        missing = [i for i, x in enumerate(vals) if x is None]
        if missing and len(missing) < len(vals):
            raise ScanFormatError(path, f"Frame {missing[0] + 1} has no {name} but other "
                                  "frames have one")
        out.append(np.zeros(len(vals)) if missing else np.asarray(vals, dtype=np.float64))
    image = {}
    for el in root.iter():
        if _local(el.tag) == "image":
            image = {_local(c.tag): (c.text or "").strip() for c in el if len(c) == 0}
            break
    return (*out, image)


def _his_files(folder) -> list:
    """The ``.his`` files of ``folder`` in frame order: by their leading sequence number
    (XVI names them ``00001.<uid>.his``), then by name."""
    files = glob.glob(os.path.join(glob.escape(folder), "*.his"))

    def order(p):
        m = re.match(r"(\d+)", os.path.basename(p))
        return (int(m.group(1)) if m else math.inf, os.path.basename(p))
    return sorted(files, key=order)


# --------------------------------------------------------------------------- reader
def _positive(name, x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number, got {x!r}") from None
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive number, got {x!r}")
    return v


def _frames_path(path) -> str | None:
    p = os.fspath(path)
    if os.path.isdir(p):
        q = os.path.join(p, FRAMES_FILE)
        return q if os.path.isfile(q) else None
    return p if os.path.basename(p).lower() == FRAMES_FILE.lower() else None


def detect(path) -> bool:
    """A ``_Frames.xml`` file, or a directory holding one."""
    return _frames_path(path) is not None


def half_fan(geometry) -> bool:
    """Whether a scan is half-fan: a full turn whose detector reaches past the axis on
    its short side by at most :data:`OFFSET_SCAN_RATIO` of its long side."""
    if angular_range_degrees(geometry.view_angles()) < 360.0 - math.degrees(
            abs(angular_step(geometry))) - 1e-6:
        return False
    if isinstance(geometry, ModularBeam):
        d = geometry.detector
        shift = np.einsum("vi,vi->v", geometry.module_centers, geometry.col_vectors)
        left = 0.5 * d.num_cols * d.pixel_width - float(np.mean(shift))
        right = 0.5 * d.num_cols * d.pixel_width + float(np.mean(shift))
    else:
        d = geometry.detector
        left = (d.center_col + 0.5) * d.pixel_width
        right = (d.num_cols - 0.5 - d.center_col) * d.pixel_width
    if min(left, right) <= 0:
        return False
    return min(left, right) / max(left, right) <= OFFSET_SCAN_RATIO


def offset_scan_system(geometry, cone: ConeBeam) -> CTSystem:
    """A half-fan scan's system: LEAP's default volume of ``cone`` (the scan with its
    panel at the mean position) widened to the farther detector side, with offset-scan
    FBP weights. (LEAP's default for modular beams would take half the detector's width
    as the field of view, cutting off what the long side sees.)"""
    v = default_volume(cone, 1.0, offset_scan=True)
    return CTSystem(geometry=geometry, volume=volume_from_leap(cone, **v),
                    fbp_options=FBPOptions(offset_scan=True))


def open_scan(path, *, sod: float = SOD, sdd: float = SDD, pixel_size=None,
              white_level: float = WHITE, offset_scan=None, per_view_offsets: bool = True
              ) -> Scan:
    """Read an Elekta XVI projection folder.

    Parameters
    ----------
    path : the folder holding ``_Frames.xml`` and the ``.his`` files, or that XML file.
    sod, sdd : source–isocentre and source–detector distances, mm (XVI's files hold
        none; RTK's 1000 and 1536 by default).
    pixel_size : mm, a number or (height, width); None: RTK's 409.6 mm panel over the
        image's pixels.
    white_level : the counts of an unattenuated ray (the flat; RTK's 65536).
    offset_scan : None (decide: a half-fan full turn, see ``half_fan``), True or
        False: the system's offset-scan FBP weights and widened volume.
    per_view_offsets : True: frames whose ``UCentre``/``VCentre`` differ give a modular
        beam with each frame's panel position; False: their mean (a cone beam).

    Returns a Scan: projections (views, rows, cols) float32 counts ``65536 − v`` in the
    stored image order (lazy), flats one constant frame at ``white_level``, ``angles``
    the gantry angles unwrapped (degrees; as written in ``metadata['GantryAngle']``),
    ``metadata`` the ``Image`` block's keys plus ``GantryAngle``, ``UCentre``,
    ``VCentre`` per frame and the HIS layout.
    """
    sod, sdd, white_level = (_positive(name, x) for name, x in
                             (("sod", sod), ("sdd", sdd), ("white_level", white_level)))
    if not sdd > sod:
        raise ValueError(f"sdd ({sdd:g}) must exceed sod ({sod:g})")
    if pixel_size is not None:
        sizes = np.atleast_1d(np.asarray(pixel_size, dtype=np.float64))
        if sizes.shape not in ((1,), (2,)) or not np.all(np.isfinite(sizes) & (sizes > 0)):
            raise ValueError(f"pixel_size must be positive, one number or (height, width), "
                             f"got {pixel_size!r}")
    xml = _frames_path(path)
    if xml is None:
        raise FileNotFoundError(f"no {FRAMES_FILE} at {os.fspath(path)!r}")
    folder = os.path.dirname(os.path.abspath(xml))
    gantry, uc, vc, image = read_frames(xml)
    files = _his_files(folder)
    if len(files) != gantry.size:
        raise ScanFormatError(xml, f"lists {gantry.size} Frame elements but {folder!r} holds "
                              f"{len(files)} .his files")
    head = read_his_header(files[0])
    raw = RawFrames(files, head["rows"], head["cols"], np.uint16, offset=head["offset"],
                    what=f"the HIS header of {files[0]}", magic=HIS_MAGIC)
    rows, cols = head["rows"], head["cols"]
    if pixel_size is None:
        ph, pw = PANEL_MM / rows, PANEL_MM / cols
    else:
        ph, pw = (float(sizes[0]),) * 2 if sizes.size == 1 else map(float, sizes)

    # XVI writes angles in (-180, 180]; a turn through 180 jumps by 360 (RTK wraps to
    # [0, 360) instead, which jumps at 0): unwrapped, they are continuous.
    measured = np.degrees(np.unwrap(np.radians(gantry)))
    measured = check_monotonic(xml, measured, "gantry angles (GantryAngle, unwrapped)")
    psi = np.radians(measured)
    cc = 0.5 * (cols - 1) + uc / pw
    cr = 0.5 * (rows - 1) + vc / ph
    varies = np.ptp(cc) > 1e-6 or np.ptp(cr) > 1e-6
    det = Detector(num_rows=rows, num_cols=cols, pixel_height=ph, pixel_width=pw,
                   center_row=float(np.mean(cr)), center_col=float(np.mean(cc)))
    geometry = cone = ConeBeam(detector=det, angles=psi, sod=sod, sdd=sdd)
    if varies and per_view_offsets:
        m = cone.to_modular()
        # each frame's panel moved from the mean position to its own
        shift = ((det.center_col - cc)[:, None] * pw * m.col_vectors
                 + (det.center_row - cr)[:, None] * ph * m.row_vectors)
        geometry = m.with_changes(module_centers=m.module_centers + shift)
    if offset_scan is None:
        offset_scan = half_fan(geometry)
    system = offset_scan_system(geometry, cone) if offset_scan else default_system(geometry)

    projections = Mapped(counts_from_his, raw)
    flats = Constant((1, rows, cols), float(white_level))
    meta = dict(image)
    meta.update(GantryAngle=gantry, UCentre=uc, VCentre=vc, his_rows=rows, his_cols=cols,
                his_offset=head["offset"], sod_assumed=float(sod), sdd_assumed=float(sdd))
    return Scan(system=system, projections=projections, flats=flats, angles=measured,
                metadata=meta, format="elekta", path=xml, angle_unit="degree")


# --------------------------------------------------------------------------- writer
def write_scan(folder, geometry, counts, *, uid: str = "1.3.46.423632.0",
               u_centre=None, v_centre=None) -> str:
    """Write a scan as an XVI projection folder: ``_Frames.xml`` and one HIS file per view
    (``00001.<uid>.his`` …), the inverse of :func:`open_scan` with its defaults, e.g. to
    hand simulated data to RTK or to test a pipeline on files.

    ``geometry``: a circular flat-detector :class:`~leap.geometry.ConeBeam` with RTK's
    distances (sod 1000, sdd 1536 mm), tau 0, no tilt, and pixels of 409.6 mm/N (what
    the format implies: it holds none of them). ``counts``: (views, rows, cols) in leap's
    detector order (an array or anything indexable by view; one view is held at a time),
    stored as ``65536 − counts`` rounded to uint16 (counts clipped to [2, 65535]).
    ``u_centre``, ``v_centre``: per-view panel positions (mm) instead of the geometry's
    (a flexmap). Gantry angles are written in (−180, 180] as XVI does. Returns the
    ``_Frames.xml`` path.
    """
    g = geometry
    if not isinstance(g, ConeBeam) or g.detector.curved or g.tilt != 0.0 or g.is_helical \
            or g.tau != 0.0 or g.source_shifts is not None:
        raise ValueError("write_scan writes circular flat-detector ConeBeam scans without "
                         f"tilt, tau or focal-spot shifts, got {type(g).__name__}")
    d = g.detector
    expected = (PANEL_MM / d.num_rows, PANEL_MM / d.num_cols)
    if not np.allclose((d.pixel_height, d.pixel_width), expected, rtol=1e-9) or \
            not np.isclose(g.sod, SOD) or not np.isclose(g.sdd, SDD):
        raise ValueError("an XVI file set holds no distances or pixel sizes: the geometry "
                         f"must have sod {SOD:g}, sdd {SDD:g} mm and pixels of 409.6 mm / N "
                         f"({expected[0]:g} x {expected[1]:g} mm), got sod {g.sod:g}, sdd "
                         f"{g.sdd:g}, pixels {d.pixel_height:g} x {d.pixel_width:g}")
    shape = g.projection_shape
    if tuple(counts.shape) != tuple(shape):
        raise ValueError(f"counts must be (views, rows, cols) = {tuple(shape)}, got "
                         f"{tuple(counts.shape)}")
    n = shape[0]
    uc = np.broadcast_to(np.asarray((d.center_col - 0.5 * (d.num_cols - 1)) * d.pixel_width
                                    if u_centre is None else u_centre, dtype=float), (n,))
    vc = np.broadcast_to(np.asarray((d.center_row - 0.5 * (d.num_rows - 1)) * d.pixel_height
                                    if v_centre is None else v_centre, dtype=float), (n,))
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    deg = np.degrees(np.asarray(g.angles, dtype=np.float64))
    wrapped = -((-deg + 180.0) % 360.0 - 180.0)          # in (-180, 180]
    frames = "".join(
        f"    <Frame>\n      <Seq>{i + 1}</Seq>\n      <DeltaMs>{i * 180}</DeltaMs>\n"
        f"      <GantryAngle>{float(wrapped[i])!r}</GantryAngle>\n      <Exposed>True</Exposed>\n"
        f"      <UCentre>{float(uc[i])!r}</UCentre>\n      <VCentre>{float(vc[i])!r}</VCentre>\n"
        "      <Inactive>False</Inactive>\n    </Frame>\n" for i in range(n))
    xml = os.path.join(folder, FRAMES_FILE)
    with open(xml, "w", encoding="utf-8") as fh:
        fh.write('<?xml version="1.0" encoding="utf-8"?>\n<ProjectionSet>\n  <Image>\n'
                 f"    <Width>{d.num_cols}</Width>\n    <Height>{d.num_rows}</Height>\n"
                 f"    <DicomUID>{uid}</DicomUID>\n  </Image>\n  <Frames>\n{frames}"
                 "  </Frames>\n</ProjectionSet>\n")
    header = bytearray(HIS_HEADER + 32)
    header[:4] = HIS_MAGIC
    struct.pack_into("<6H", header, 10, 32, 1, 1, d.num_rows, d.num_cols, 1)
    header[32] = 4
    for i in range(n):
        view = np.clip(np.asarray(counts[i], dtype=np.float64), 2.0, 65535.0)
        pixels = np.rint(65536.0 - view).astype("<u2")
        with open(os.path.join(folder, f"{i + 1:05d}.{uid}.his"), "wb") as fh:
            fh.write(bytes(header))
            fh.write(pixels.tobytes())
    return xml
