"""Varian OBI ``.hnd`` projection files: a 1024-byte header and lookup-table difference
coded pixels (:mod:`._xim`).

Layout (little-endian; RTK ``src/rtkHndImageIO.cxx``): the header's fields in order are
``char[32]`` file type, uint32 file length, ``char[4]`` checksum spec, uint32 checksum,
``char[8]`` creation date, ``char[8]`` time, ``char[16]`` patient id, uint32 patient serial,
``char[16]`` series id, uint32 series serial, ``char[16]`` slice id, uint32 slice serial,
uint32 width (SizeX), uint32 height (SizeY), float64 slice z, ``char[16]`` modality,
uint32 window, level, pixel offset, ``char[4]`` image type, then 40 float64s from
``GantryRtn`` to ``Gating4DInfoTime`` (:data:`HEADER_DOUBLES`), 488 bytes in all, padded
to 1024. At byte 1024: the lookup table, ``ceil((w·h − w − 1)/4)`` bytes (RTK reads
``(h − 1)·w/4``, the same number whenever that decodes every pixel), the raw first
``w + 1`` pixels as uint32, then the differences. Pixels are uint32.
"""
from __future__ import annotations

import os
import struct

import numpy as np

from ._common import ScanFormatError
from ._xim import _Bytes, decode_differences, encode_differences, open_binary

HEADER_SIZE = 1024
#: The float64 fields after the image type, in order (RTK's ``Hnd_header`` names without
#: the ``d`` prefix). ``CTProjectionAngle`` is the gantry angle RTK reconstructs with,
#: ``CTNormChamber`` the dose monitor reading; resolutions are mm per pixel.
HEADER_DOUBLES = (
    "GantryRtn", "SAD", "SFD", "CollX1", "CollX2", "CollY1", "CollY2", "CollRtn", "FieldX",
    "FieldY", "BladeX1", "BladeX2", "BladeY1", "BladeY2", "IDUPosLng", "IDUPosLat",
    "IDUPosVrt", "IDUPosRtn", "PatientSupportAngle", "TableTopEccentricAngle", "CouchVrt",
    "CouchLng", "CouchLat", "IDUResolutionX", "IDUResolutionY", "ImageResolutionX",
    "ImageResolutionY", "Energy", "DoseRate", "XRayKV", "XRayMA", "MetersetExposure",
    "AcqAdjustment", "CTProjectionAngle", "CTNormChamber", "GatingTimeTag", "Gating4DInfoX",
    "Gating4DInfoY", "Gating4DInfoZ", "Gating4DInfoTime")
# (name, struct code) of the fields before the doubles; SliceZPos is the 41st double.
_HEAD = (("FileType", "32s"), ("FileLength", "I"), ("ChecksumSpec", "4s"), ("CheckSum", "I"),
         ("CreationDate", "8s"), ("CreationTime", "8s"), ("PatientID", "16s"),
         ("PatientSer", "I"), ("SeriesID", "16s"), ("SeriesSer", "I"), ("SliceID", "16s"),
         ("SliceSer", "I"), ("SizeX", "I"), ("SizeY", "I"), ("SliceZPos", "d"),
         ("Modality", "16s"), ("Window", "I"), ("Level", "I"), ("PixelOffset", "I"),
         ("ImageType", "4s"))
_FORMAT = "<" + "".join(c for _, c in _HEAD) + "d" * len(HEADER_DOUBLES)
_NAMES = tuple(n for n, _ in _HEAD) + HEADER_DOUBLES


def _table_size(w: int, h: int) -> int:
    return max(0, (w * h - w - 1 + 3) // 4)


def read_hnd(path, pixels: bool = True) -> tuple[dict, np.ndarray | None]:
    """``(header, image)`` of the HND file ``path``: header field name → value (strings
    stripped of NULs), image (SizeY, SizeX) uint32 (None when ``pixels`` is False).
    Raises ScanFormatError naming the file for a short header or truncated pixels."""
    path = os.fspath(path)
    f, size = open_binary(path)
    with f:
        data = f.read(HEADER_SIZE)
        if len(data) < struct.calcsize(_FORMAT):
            raise ScanFormatError(path, f"the file is truncated: the HND header needs "
                                  f"{struct.calcsize(_FORMAT)} bytes, the file has {len(data)}")
        values = struct.unpack_from(_FORMAT, data)
        head = {}
        for name, v in zip(_NAMES, values):
            head[name] = v.rstrip(b"\x00").decode("latin-1") if isinstance(v, bytes) else v
        w, h = head["SizeX"], head["SizeY"]
        if not pixels or w * h == 0:
            return head, None
        r = _Bytes(path, f, size, HEADER_SIZE)
        table = r.take(_table_size(w, h), f"the lookup table of a {w} x {h} image")
        nraw = min(w * h, w + 1)
        raw = np.frombuffer(r.take(4 * nraw, "the raw first row + 1"), dtype="<u4")
        rest = r.rest()
    image = decode_differences(path, raw.view(np.int32), table, rest, w, h)
    return head, image.view(np.uint32)


def write_hnd(path, image: np.ndarray, header: dict | None = None) -> None:
    """Write the (height, width) non-negative integer ``image`` (< 2³²) as an HND file;
    ``header`` sets fields of :data:`HEADER_DOUBLES` and the string/integer fields by
    name (SizeX, SizeY and FileLength are set from the image)."""
    img = np.asarray(image)
    if img.ndim != 2 or img.dtype.kind not in "iu":
        raise ValueError(f"image must be a 2-D integer array, got {img.dtype} {img.shape}")
    if img.size and (img.min() < 0 or img.max() > 0xFFFFFFFF):
        raise ValueError(f"HND pixels are uint32: values {img.min()}..{img.max()} do not fit")
    h, w = img.shape
    fields = {n: (b"" if c.endswith("s") else 0) for n, c in _HEAD}
    fields.update({n: 0.0 for n in HEADER_DOUBLES}, SliceZPos=0.0)
    fields["FileType"] = b"VARIAN_HND"
    for name, v in (header or {}).items():
        if name not in fields:
            raise ValueError(f"unknown HND header field {name!r}; known: {', '.join(_NAMES)}")
        fields[name] = v.encode("latin-1") if isinstance(v, str) else v
    table, buffer = encode_differences(img.astype(np.int64).astype(np.uint32).view(np.int32))
    fields.update(SizeX=w, SizeY=h, FileLength=HEADER_SIZE + len(table) + len(buffer))
    head = struct.pack(_FORMAT, *(fields[n] for n in _NAMES))
    with open(os.fspath(path), "wb") as f:
        f.write(head + b"\x00" * (HEADER_SIZE - len(head)) + table + buffer)
