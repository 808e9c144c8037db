"""Varian's image files for kV cone-beam CT: the lookup-table difference coding shared by
XIM (TrueBeam, Halcyon) and HND (OBI) pixels, and the XIM file (header, pixels,
histogram, per-frame properties). HND files are in :mod:`._hnd`.

The lookup-table difference coding
----------------------------------
An image of ``w`` columns and ``h`` rows, its pixels p[i] numbered row by row (i = r·w + c),
is stored as

* the first ``w + 1`` pixels (the first row and one more) as raw little-endian int32;
* a lookup table of 2 bits per remaining pixel, four pixels a byte, lowest bits first:
  0, 1 or 2 says that pixel's difference is stored in 1, 2 or 4 bytes (signed,
  little-endian); 3 does not occur;
* the differences d[i] = p[i] − (p[i−1] + p[i−w] − p[i−w−1]) for i ≥ w + 1, the
  predictor being left + above − above-left taken along the flat index (the "left" of a
  row's first pixel is the previous row's last), arithmetic modulo 2³².

(RTK ``src/rtkXimImageIO.cxx`` and ``src/rtkHndImageIO.cxx``; pylinac's ``XIM`` class as
trimmed into TIGRE ``Python/tigre/utilities/io/varian/xim.py``.) The last byte of the
table may hold up to three unused codes; this module writes them as 0 with a zero byte
each (RTK reads those bytes, pylinac does not) and never needs them when reading.

Decoding here is vectorised NumPy rather than a loop: with q[i] = p[i] − p[i−w], the
coding says q[i] − q[i−1] = d[i], so q is a cumulative sum of the differences and p the
cumulative sum of q down each column.

XIM file layout (little-endian; RTK ``rtkXimImageIO.cxx``, pylinac/TIGRE ``xim.py``)
-----------------------------------------------------------------------------------
``char[8]`` format id ("VMS.XI"), int32 version, width, height, bits per pixel, bytes per
pixel, compression flag; if compressed: int32 lookup-table size, the table, int32
compressed-buffer size, the buffer (raw first row + 1, then the differences), int32
uncompressed size; else int32 buffer size and the pixels (signed, bytes per pixel each).
Then int32 histogram bins and that many int32; int32 property count and each property:
int32 name length, the name, int32 type (0 int32, 1 float64, 2 string: int32 length +
chars, 4 float64 array: int32 byte count + values, 5 int32 array: likewise).
"""
from __future__ import annotations

import os
import struct

import numpy as np

from ._common import ScanFormatError

XIM_ID = b"VMS.XI\x00\x00"
_SIZES = np.array([1, 2, 4, 0], dtype=np.int64)       # bytes per lookup-table code


class _Bytes:
    """Little-endian fields read from an open binary file (or bytes), with errors that
    name the file, the field and where it ran out; ``skip`` seeks over what is not
    needed (a header read without its pixels)."""

    def __init__(self, path, f, size: int, pos: int = 0):
        self.path, self.f, self.size, self.pos = path, f, size, pos
        f.seek(pos)

    def _check(self, n: int, what: str):
        if n < 0:
            raise ScanFormatError(self.path, f"{what}: a negative length ({n}) is stored")
        if self.pos + n > self.size:
            raise ScanFormatError(self.path, f"the file is truncated: {what} needs {n} bytes "
                                  f"at offset {self.pos}, the file has {self.size}")

    def take(self, n: int, what: str) -> bytes:
        self._check(n, what)
        out = self.f.read(n)
        self.pos += n
        return out

    def skip(self, n: int, what: str) -> None:
        self._check(n, what)
        self.pos += n
        self.f.seek(self.pos)

    def rest(self) -> bytes:
        out = self.f.read()
        self.pos = self.size
        return out

    def int32(self, what: str) -> int:
        return struct.unpack("<i", self.take(4, what))[0]

    def float64(self, what: str) -> float:
        return struct.unpack("<d", self.take(8, what))[0]


def open_binary(path):
    """``(file, size)`` of ``path`` opened for reading; ScanFormatError if it cannot be."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read: {e}") from None
    return f, os.fstat(f.fileno()).st_size


# ------------------------------------------------------------- difference coding
def _wrap32(x: np.ndarray) -> np.ndarray:
    """int64 values reduced modulo 2³² to int32 (the coding's arithmetic)."""
    return (x & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def decode_differences(path, raw: np.ndarray, table: bytes, buffer: bytes, width: int,
                       height: int) -> np.ndarray:
    """The (height, width) int32 image from its raw first ``width + 1`` pixels ``raw``, the
    lookup ``table`` and the difference ``buffer`` (bytes after the raw pixels). Raises
    ScanFormatError naming ``path`` for a table too short, a code 3 or a buffer that ends
    before the differences the table announces."""
    n = width * height
    m = n - width - 1                                  # pixels stored as differences
    p = np.empty(n, dtype=np.int32)
    p[:min(n, width + 1)] = raw[:min(n, width + 1)]
    if m <= 0:
        return p.reshape(height, width)
    lut = np.frombuffer(table, dtype=np.uint8)
    if 4 * lut.size < m:
        raise ScanFormatError(path, f"the lookup table has {lut.size} bytes, {(m + 3) // 4} "
                              f"are needed for the {m} differences of a {width} x {height} image")
    codes = ((lut[:, None] >> np.array([0, 2, 4, 6], dtype=np.uint8)) & 3).ravel()[:m]
    if np.any(codes == 3):
        k = int(np.argmax(codes == 3))
        raise ScanFormatError(path, f"the lookup table holds the invalid code 3 (pixel "
                              f"{k + width + 1}): it is damaged")
    sizes = _SIZES[codes]
    offsets = np.cumsum(sizes) - sizes
    need = int(offsets[-1] + sizes[-1])
    buf = np.frombuffer(buffer, dtype=np.uint8)
    if buf.size < need:
        raise ScanFormatError(path, f"the pixel buffer is truncated: the lookup table needs "
                              f"{need} bytes of differences, {buf.size} are stored")
    d = np.empty(m, dtype=np.int64)
    for code, dt in ((0, "<i1"), (1, "<i2"), (2, "<i4")):
        sel = codes == code
        if not sel.any():
            continue
        k = 1 << code
        idx = offsets[sel][:, None] + np.arange(k)[None, :]
        d[sel] = buf[idx].copy().view(dt).ravel()
    # q[i] = p[i] - p[i-w] for i >= w: q[w] from the raw pixels, then a running sum.
    q = np.empty(n - width, dtype=np.int64)
    q[0] = int(p[width]) - int(p[0])
    q[1:] = q[0] + np.cumsum(d)
    rows = np.empty((height, width), dtype=np.int64)
    rows[0] = p[:width]
    rows[1:] = _wrap32(q).reshape(height - 1, width)
    return _wrap32(np.cumsum(rows, axis=0))


def encode_differences(image: np.ndarray) -> tuple[bytes, bytes]:
    """``(table, buffer)`` of the (height, width) int32 ``image``: the lookup table and
    the buffer (raw first row + 1 as int32, then each difference in the fewest of 1, 2
    or 4 bytes; the table's unused trailing codes are 0 with a zero byte each)."""
    img = np.ascontiguousarray(image, dtype=np.int32)
    h, w = img.shape
    p = img.ravel().astype(np.int64)
    n = p.size
    raw = img.ravel()[:min(n, w + 1)].astype("<i4").tobytes()
    m = n - w - 1
    if m <= 0:
        return b"", raw
    i = np.arange(w + 1, n)
    d = _wrap32(p[i] - p[i - 1] - p[i - w] + p[i - w - 1]).astype(np.int64)
    codes = np.where((d >= -128) & (d <= 127), 0,
                     np.where((d >= -32768) & (d <= 32767), 1, 2)).astype(np.uint8)
    pad = (-m) % 4
    codes = np.concatenate([codes, np.zeros(pad, np.uint8)])
    d = np.concatenate([d, np.zeros(pad, np.int64)])
    table = (codes.reshape(-1, 4) << np.array([0, 2, 4, 6], dtype=np.uint8)).sum(
        axis=1, dtype=np.uint8)
    sizes = _SIZES[codes]
    offsets = np.cumsum(sizes) - sizes
    out = np.zeros(int(sizes.sum()), dtype=np.uint8)
    for code, dt in ((0, "<i1"), (1, "<i2"), (2, "<i4")):
        sel = codes == code
        if sel.any():
            k = 1 << code
            out[offsets[sel][:, None] + np.arange(k)[None, :]] = \
                d[sel].astype(dt).view(np.uint8).reshape(-1, k)
    return table.tobytes(), raw + out.tobytes()


# ------------------------------------------------------------------------ XIM files
_PROPERTY_TYPES = {0: "int32", 1: "float64", 2: "string", 4: "float64 array", 5: "int32 array"}


def read_xim(path, pixels: bool = True) -> tuple[dict, np.ndarray | None, dict]:
    """``(header, image, properties)`` of the XIM file ``path``.

    header: 'format_id', 'version', 'width', 'height', 'bits_per_pixel',
    'bytes_per_pixel', 'compressed' (bool), 'histogram_bins'. image: (height, width)
    int32 (None when ``pixels`` is False, or for an image of no pixels). properties: name
    → int, float, str or a 1-D array. Raises ScanFormatError naming the file and the field
    for a file that is not XIM, is truncated or holds a property type outside 0, 1, 2,
    4, 5.
    """
    path = os.fspath(path)
    f, size = open_binary(path)
    with f:
        return _read_xim(path, _Bytes(path, f, size), pixels)


def _read_xim(path, r: _Bytes, pixels: bool):
    fid = r.take(8, "the format id")
    if not fid.startswith(b"VMS.XI"):
        raise ScanFormatError(path, f"is not an XIM file: the format id is {fid!r}, "
                              "expected 'VMS.XI'")
    head = {"format_id": fid.rstrip(b"\x00").decode("latin-1"),
            "version": r.int32("the file version")}
    w, h = r.int32("the image width"), r.int32("the image height")
    if w < 0 or h < 0:
        raise ScanFormatError(path, f"the image size {w} x {h} is negative")
    head.update(width=w, height=h, bits_per_pixel=r.int32("the bits per pixel"),
                bytes_per_pixel=r.int32("the bytes per pixel"))
    compressed = r.int32("the compression flag")
    if compressed not in (0, 1):
        raise ScanFormatError(path, f"the compression flag is {compressed}, expected 0 or 1")
    head["compressed"] = bool(compressed)
    image = None
    if compressed:
        want = pixels and w * h > 0
        n = r.int32("the lookup-table size")
        table = r.take(n, "the lookup table") if want else r.skip(n, "the lookup table")
        n = r.int32("the compressed pixel-buffer size")
        buffer = (r.take(n, "the compressed pixel buffer") if want
                  else r.skip(n, "the compressed pixel buffer"))
        r.int32("the uncompressed pixel-buffer size")
        if want:
            nraw = min(w * h, w + 1)
            if len(buffer) < 4 * nraw:
                raise ScanFormatError(path, f"the compressed pixel buffer ({len(buffer)} bytes) "
                                      f"is shorter than its raw first row + 1 ({4 * nraw} bytes)")
            raw = np.frombuffer(buffer, dtype="<i4", count=nraw)
            image = decode_differences(path, raw, table, buffer[4 * nraw:], w, h)
    else:
        want = pixels and w * h > 0
        n = r.int32("the pixel-buffer size")
        buffer = r.take(n, "the pixel buffer") if want else r.skip(n, "the pixel buffer")
        if want:
            bpp = head["bytes_per_pixel"]
            if bpp not in (1, 2, 4):
                raise ScanFormatError(path, f"the bytes per pixel is {bpp}: uncompressed "
                                      "pixels of 1, 2 or 4 bytes are read")
            if len(buffer) < w * h * bpp:
                raise ScanFormatError(path, f"the pixel buffer holds {len(buffer)} bytes, "
                                      f"{w} x {h} pixels of {bpp} bytes need {w * h * bpp}")
            image = np.frombuffer(buffer, dtype=f"<i{bpp}", count=w * h).astype(
                np.int32).reshape(h, w)
    bins = r.int32("the histogram size")
    r.skip(4 * bins, "the histogram")
    head["histogram_bins"] = bins
    props = {}
    for k in range(r.int32("the property count")):
        name = r.take(r.int32(f"property {k}'s name length"), f"property {k}'s name")
        name = name.rstrip(b"\x00").decode("latin-1")
        kind = r.int32(f"the type of property {name!r}")
        what = f"the value of property {name!r}"
        if kind == 0:
            value = r.int32(what)
        elif kind == 1:
            value = r.float64(what)
        elif kind == 2:
            value = r.take(r.int32(what + " (length)"), what).rstrip(b"\x00").decode("latin-1")
        elif kind in (4, 5):
            nbytes = r.int32(what + " (length)")
            dt = "<f8" if kind == 4 else "<i4"
            value = np.frombuffer(r.take(nbytes, what), dtype=dt).copy()
        else:
            raise ScanFormatError(path, f"property {name!r} has type {kind}; known types are "
                                  f"{', '.join(f'{t} ({n})' for t, n in _PROPERTY_TYPES.items())}")
        props[name] = value
    return head, image, props


def write_xim(path, image: np.ndarray, properties: dict | None = None, *,
              compressed: bool = True, bytes_per_pixel: int = 4) -> None:
    """Write the (height, width) integer ``image`` as an XIM file: lookup-table coded
    (``compressed``) or as a plain buffer of ``bytes_per_pixel`` (1, 2 or 4) signed
    pixels; ``properties`` name → int (type 0), float (1), str (2), float array (4) or
    int array (5). No histogram is written (0 bins)."""
    img = np.asarray(image)
    if img.ndim != 2 or img.dtype.kind not in "iu":
        raise ValueError(f"image must be a 2-D integer array, got {img.dtype} {img.shape}")
    h, w = img.shape
    if bytes_per_pixel not in (1, 2, 4):
        raise ValueError(f"bytes_per_pixel must be 1, 2 or 4, got {bytes_per_pixel}")
    lo, hi = np.iinfo(f"i{bytes_per_pixel if not compressed else 4}").min, \
        np.iinfo(f"i{bytes_per_pixel if not compressed else 4}").max
    if img.size and (img.min() < lo or img.max() > hi):
        raise ValueError(f"pixel values {img.min()}..{img.max()} do not fit "
                         f"{bytes_per_pixel if not compressed else 4}-byte signed pixels")
    bpp = 4 if compressed else bytes_per_pixel
    out = [XIM_ID, struct.pack("<6i", 1, w, h, 8 * bpp, bpp, int(bool(compressed)))]
    if compressed:
        table, buffer = encode_differences(img.astype(np.int32))
        out += [struct.pack("<i", len(table)), table, struct.pack("<i", len(buffer)), buffer,
                struct.pack("<i", w * h * 4)]
    else:
        data = np.ascontiguousarray(img, dtype=f"<i{bpp}").tobytes()
        out += [struct.pack("<i", len(data)), data]
    out.append(struct.pack("<i", 0))                       # histogram: no bins
    props = properties or {}
    out.append(struct.pack("<i", len(props)))
    for name, value in props.items():
        key = str(name).encode("latin-1")
        out.append(struct.pack("<i", len(key)) + key)
        if isinstance(value, (bool, int, np.integer)):
            out.append(struct.pack("<ii", 0, int(value)))
        elif isinstance(value, (float, np.floating)):
            out.append(struct.pack("<id", 1, float(value)))
        elif isinstance(value, str):
            s = value.encode("latin-1")
            out.append(struct.pack("<ii", 2, len(s)) + s)
        else:
            a = np.asarray(value)
            if a.dtype.kind == "f":
                b = a.astype("<f8").tobytes()
                out.append(struct.pack("<ii", 4, len(b)) + b)
            elif a.dtype.kind in "iu":
                b = a.astype("<i4").tobytes()
                out.append(struct.pack("<ii", 5, len(b)) + b)
            else:
                raise ValueError(f"property {name!r}: cannot store a {type(value).__name__}")
    with open(os.fspath(path), "wb") as f:
        f.write(b"".join(out))
