"""Headerless or fixed-header binary frames, one file per view: the projections of Elekta
XVI (``.his``), YXLON and Diondo (``.raw``) scans as a lazy :class:`~leap.io.lazy.Source`.

Every file is ``offset`` bytes of header, then ``rows × cols`` pixels of ``dtype``,
row-major (the column index runs fastest). File sizes are checked when the source is
made (a stat per file, nothing read); a file that changes size afterwards, or whose
header does not start with ``magic``, is refused when read, naming the file.
"""
from __future__ import annotations

import os

import numpy as np

from ..lazy import Source, drop_int_axes, keep_axes, normalize_key
from ._common import ScanFormatError


class RawFrames(Source):
    """``files`` (one view each, in order) of ``rows × cols`` pixels of ``dtype`` after
    ``offset`` header bytes, as a (views, rows, cols) source in stored order.

    ``what`` names where the layout came from (keys, options) for error messages;
    ``magic``: bytes every file's header must start with (None: not checked).
    """

    def __init__(self, files, rows: int, cols: int, dtype, *, offset: int = 0,
                 what: str = "", magic: bytes | None = None):
        self.files = [os.fspath(f) for f in files]
        if not self.files:
            raise ScanFormatError(what or "raw frames", "there are no projection files")
        self.dtype = np.dtype(dtype)
        self.shape = (len(self.files), int(rows), int(cols))
        self.chunks = (1,) + self.shape[1:]
        self.offset, self.what, self.magic = int(offset), what, magic
        self.frame_bytes = self.shape[1] * self.shape[2] * self.dtype.itemsize
        for f in self.files:
            self._check_size(f)

    def _check_size(self, path):
        try:
            size = os.path.getsize(path)
        except OSError as e:
            raise FileNotFoundError(f"{path}: projection file cannot be read ({e})") from None
        if size != self.offset + self.frame_bytes:
            state = "truncated" if size < self.offset + self.frame_bytes else "too long"
            raise ScanFormatError(path, f"holds {size} bytes but {self.offset} header bytes + "
                                  f"{self.shape[1]} x {self.shape[2]} pixels of {self.dtype} "
                                  f"make {self.offset + self.frame_bytes} ({state}; layout "
                                  f"from {self.what})")

    def _frame_rows(self, path, r0: int, r1: int) -> np.ndarray:
        """Stored rows r0:r1 of one file, (r1 − r0, cols)."""
        self._check_size(path)
        cols = self.shape[2]
        with open(path, "rb") as fh:
            if self.magic is not None:
                head = fh.read(len(self.magic))
                if head != self.magic:
                    raise ScanFormatError(path, f"does not start with the header signature "
                                          f"{self.magic!r} (got {head!r}; {self.what})")
            fh.seek(self.offset + r0 * cols * self.dtype.itemsize)
            count = (r1 - r0) * cols
            data = np.fromfile(fh, dtype=self.dtype, count=count)
        if data.size != count:
            raise ScanFormatError(path, f"ends after {data.size} of the {count} pixels asked "
                                  "for (truncated while being read)")
        return data.reshape(r1 - r0, cols)

    def read(self, key):
        key = normalize_key(key, self.shape)
        v, r, c = keep_axes(key)
        views = np.atleast_1d(np.arange(self.shape[0])[v])
        rows = np.atleast_1d(np.arange(self.shape[1])[r])
        cols = np.arange(self.shape[2])[c]
        out = np.empty((views.size, rows.size, np.size(cols)), dtype=self.dtype)
        if rows.size and views.size:
            r0, r1 = int(rows.min()), int(rows.max()) + 1
            for k, i in enumerate(views):
                block = self._frame_rows(self.files[int(i)], r0, r1)
                out[k] = block[rows - r0][:, cols]
        return drop_int_axes(out, key)
