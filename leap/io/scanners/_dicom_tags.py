"""DICOM-CT-PD's tags and how their values are decoded and encoded (numbers, raw
little-endian bytes of VR UN elements, text), for :mod:`leap.io.scanners.dicom_ct_pd`.
The tag numbers, names and units are those of the DICOM-CT-PD User Manual version 3
(Moen et al., Med. Phys. 48(2), 2021)."""
from __future__ import annotations

import math
import struct
from typing import NamedTuple

import numpy as np

from ._common import ScanFormatError


class Tag(NamedTuple):
    tag: int
    name: str
    kind: str          # 'f' float32, 'H' uint16, 's' text, 'n' a number as float32 or text
    count: int = 1

    def __str__(self):
        return f"({self.tag >> 16:04X},{self.tag & 0xFFFF:04X}) {self.name}"


ROWS_COUNT = Tag(0x70291010, "NumberofDetectorRows", "H")
COLS_COUNT = Tag(0x70291011, "NumberofDetectorColumns", "H")
DU = Tag(0x70291002, "DetectorElementTransverseSpacing", "f")
DV = Tag(0x70291006, "DetectorElementAxialSpacing", "f")
SHAPE = Tag(0x7029100B, "DetectorShape", "s")
PHI = Tag(0x70311001, "DetectorFocalCenterAngularPosition", "f")
Z0 = Tag(0x70311002, "DetectorFocalCenterAxialPosition", "f")
RHO = Tag(0x70311003, "DetectorFocalCenterRadialDistance", "f")
D0 = Tag(0x70311031, "ConstantRadialDistance", "f")
CENTRAL = Tag(0x70311033, "DetectorCentralElement", "f", 2)
DPHI = Tag(0x7033100B, "SourceAngularPositionShift", "f")
DZ = Tag(0x7033100C, "SourceAxialPositionShift", "f")
DRHO = Tag(0x7033100D, "SourceRadialDistanceShift", "f")
FFS_MODE = Tag(0x7033100E, "FlyingFocalSpotMode", "s")
STEPS = Tag(0x70331013, "NumberofSourceAngularSteps", "H")
WATER = Tag(0x70411001, "WaterAttenuationCoefficient", "n")

#: The private tags this module reads and writes.
PRIVATE_TAGS = (ROWS_COUNT, COLS_COUNT, DU, DV, SHAPE, PHI, Z0, RHO, D0, CENTRAL, DPHI, DZ,
                DRHO, FFS_MODE, STEPS, WATER)
#: Private creators written for each group (any LO string; the reader ignores them).
CREATORS = {0x7029: "DetectorSystemArrangementModule", 0x7031: "DetectorDynamicsModule",
            0x7033: "SourceDynamicsModule", 0x7041: "ReconstructionModule"}
FFS_MODES = ("FFSNONE", "FFSZ", "FFSXY", "FFSXYZ")
SHAPES = ("CYLINDRICAL", "FLAT")

INSTANCE, ROWS, COLUMNS = 0x00200013, 0x00280010, 0x00280011
SLOPE, INTERCEPT = 0x00281053, 0x00281052
BITS, SIGNED, PIXELS = 0x00280100, 0x00280103, 0x7FE00010
#: Tags that must agree between the files of a scan (compared with the first file).
CONSTANT_TAGS = (ROWS_COUNT, COLS_COUNT, DU, DV, SHAPE, D0, CENTRAL)
REQUIRED_TAGS = (ROWS_COUNT, COLS_COUNT, DU, DV, SHAPE, PHI, Z0, RHO, D0, CENTRAL)
SHIFT_TAGS = (DPHI, DZ, DRHO)
#: Largest deviation of z0 from a line in ψ accepted, mm.
Z_TOLERANCE = 0.01
#: Largest spread of ρ0 between views accepted, mm.
RHO_TOLERANCE = 1e-3


# ------------------------------------------------------------------- decoding values
def as_text(value) -> str:
    """A string value (or raw bytes) without NUL and space padding."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("ascii", errors="replace")
    elif isinstance(value, (list, tuple)) or type(value).__name__ == "MultiValue":
        value = "\\".join(str(v) for v in value)
    return str(value).strip("\x00 ").strip()


def as_numbers(value, tag: Tag) -> tuple:
    """``value`` (a number, a sequence of them, text, or raw little-endian bytes) as a
    tuple of ``tag.count`` floats; raises ValueError."""
    if isinstance(value, (bytes, bytearray)):
        raw = bytes(value)
        size = {"f": 4, "H": 2}.get(tag.kind)
        if size is not None and len(raw) == size * tag.count:
            return tuple(float(x) for x in struct.unpack(f"<{tag.count}{tag.kind}", raw))
        try:                                          # text (DS/IS written as bytes)
            text = raw.decode("ascii").strip("\x00 ")
            parts = [float(p) for p in text.split("\\")]
        except (UnicodeDecodeError, ValueError):
            if tag.kind == "n" and len(raw) == 4 * tag.count:
                return tuple(float(x) for x in struct.unpack(f"<{tag.count}f", raw))
            raise ValueError(f"{len(raw)} bytes that are neither {tag.count} little-endian "
                             f"{'uint16' if tag.kind == 'H' else 'float32'} nor text") from None
    elif isinstance(value, str):
        parts = [float(p) for p in value.strip("\x00 ").split("\\")]
    elif isinstance(value, (list, tuple)) or type(value).__name__ == "MultiValue":
        parts = [float(v) for v in value]
    else:
        parts = [float(value)]
    if len(parts) != tag.count:
        raise ValueError(f"{len(parts)} values, not {tag.count}")
    return tuple(parts)


def is_missing(ds, tag) -> bool:
    return tag not in ds or ds[tag].value is None or ds[tag].value in (b"", "")


def tag_value(path, ds, tag: Tag, default=None):
    """The value of ``tag`` in the dataset ``ds`` of file ``path``: a str ('s'), a float
    or a tuple of floats (count > 1); ``default`` when missing, if given. Errors name the
    file and the tag."""
    if is_missing(ds, tag.tag):
        if default is not None:
            return default
        raise ScanFormatError(path, f"the tag {tag} is missing")
    raw = ds[tag.tag].value
    if tag.kind == "s":
        return as_text(raw)
    try:
        x = as_numbers(raw, tag)
    except (TypeError, ValueError) as e:
        raise ScanFormatError(path, f"the tag {tag} = {raw!r} is not a number ({e})") from None
    if not all(math.isfinite(v) for v in x):
        raise ScanFormatError(path, f"the tag {tag} = {x} is not finite")
    if tag.kind == "H" and any(v != int(v) or v < 0 for v in x):
        raise ScanFormatError(path, f"the tag {tag} = {x} is not a whole number")
    return x if tag.count > 1 else x[0]


def plain(value):
    """A pydicom value as plain Python: lists for multi-values and sequences, dicts for
    datasets, str for names and UIDs, float/int for DS/IS, bytes as they are."""
    name = type(value).__name__
    if name == "Sequence":
        return [header_dict(item) for item in value]
    if name == "MultiValue" or isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    return str(value)


def header_dict(ds) -> dict:
    """``{keyword or "(gggg,eeee)": value}`` of a dataset's elements (plain values)."""
    out = {}
    for elem in ds:
        if elem.tag == PIXELS:
            continue
        key = elem.keyword or f"({elem.tag.group:04X},{elem.tag.element:04X})"
        out[key] = plain(elem.value)
    return out


def metadata_of(path, ds) -> dict:
    """The first file's header, its DICOM-CT-PD private tags decoded under their names."""
    meta = header_dict(ds)
    for tag in PRIVATE_TAGS:
        if is_missing(ds, tag.tag):
            continue
        key = f"({tag.tag >> 16:04X},{tag.tag & 0xFFFF:04X})"
        meta.pop(key, None)
        try:
            v = tag_value(path, ds, tag)
        except ScanFormatError:
            v = plain(ds[tag.tag].value)
        if tag.kind == "H" and isinstance(v, float):
            v = int(v)
        meta[tag.name] = list(v) if isinstance(v, tuple) else v
    return meta


def private_bytes(tag: Tag, value) -> bytes:
    """``value`` as the raw little-endian bytes of a VR UN element."""
    if tag.kind == "s":
        raw = str(value).encode("ascii")
        return raw + b" " * (len(raw) % 2)
    if tag.kind == "n":                              # as text, like a DS
        raw = f"{float(value):.8g}".encode("ascii")
        return raw + b" " * (len(raw) % 2)
    values = np.atleast_1d(value)
    return struct.pack(f"<{values.size}{tag.kind}", *(int(v) if tag.kind == "H" else float(v)
                                                       for v in values))
