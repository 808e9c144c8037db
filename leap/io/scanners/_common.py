"""What every reader needs: the system of a geometry with LEAP's default volume, clear
errors that name the file and the key, and the white level of scans without flat frames
(a constant flat, or a warning naming the option that supplies one)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ...geometry.conventions import default_volume, volume_from_leap
from ..lazy import Constant
from ...system import CTSystem
from ...reconstruction.weights import angular_range_degrees


class ScanFormatError(ValueError):
    """A scanner file that cannot be read as its format says: names the file and the key
    or tag (a ValueError)."""

    def __init__(self, path, what: str):
        super().__init__(f"{path}: {what}")
        self.path = path


def default_system(geometry, *, scale: float = 1.0) -> CTSystem:
    """``CTSystem(geometry, volume)`` with LEAP's default volume for ``geometry``
    (:func:`leap.geometry.conventions.default_volume`: the field of view in nominal
    voxels; helical scans cover the source's travel)."""
    angles = getattr(geometry, "angles", None)
    span = angular_range_degrees(angles) if angles is not None and np.size(angles) > 1 \
        else 360.0
    v = default_volume(geometry, scale, angular_range=span)
    return CTSystem(geometry=geometry, volume=volume_from_leap(geometry, **v))


def text_lines(path) -> list:
    """The lines of a vendor's text file (UTF-8, undecodable bytes replaced); raises
    ScanFormatError naming the file if it cannot be read."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read: {e}") from None


def number(path, metadata: dict, key: str, *, default=None, positive=False) -> float:
    """``metadata[key]`` as a finite float (``default`` when missing, if given); raises
    ScanFormatError naming the file and key otherwise."""
    if key not in metadata or metadata[key] in ("", None):
        if default is not None:
            return float(default)
        raise ScanFormatError(path, f"the key {key!r} is missing")
    return parse_number(path, key, metadata[key], positive=positive)


def parse_number(path, key: str, value, *, positive=False, integer=False):
    """``value`` (the text of ``key`` in the file ``path``) as a finite float, or an int
    with ``integer``; raises ScanFormatError naming the file, key and value otherwise."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ScanFormatError(path, f"{key} = {value!r} is not a number") from None
    if not math.isfinite(x) or (positive and not x > 0) or (integer and x != int(x)):
        raise ScanFormatError(path, f"{key} = {value!r} must be a finite"
                              f"{' positive' if positive else ''}"
                              f"{' whole' if integer else ''} number")
    return int(x) if integer else x


def check_monotonic(path, angles, what: str = "angles") -> np.ndarray:
    """``angles`` as float64, raising ScanFormatError unless strictly increasing or
    strictly decreasing."""
    a = np.asarray(angles, dtype=np.float64).ravel()
    if not np.all(np.isfinite(a)):
        raise ScanFormatError(path, f"the {what} hold a value that is not finite (view "
                              f"{int(np.argmax(~np.isfinite(a)))})")
    if a.size > 1:
        d = np.diff(a)
        if not (np.all(d > 0) or np.all(d < 0)):
            bad = int(np.argmax(d <= 0) if d[0] > 0 else np.argmax(d >= 0))
            raise ScanFormatError(path, f"the {what} are not monotonic (view {bad + 1}: "
                                  f"{a[bad]:g} then {a[bad + 1]:g})")
    return a


class MissingWhiteLevelWarning(UserWarning):
    """A scan with neither flat frames nor a white level: its
    :meth:`~leap.io.scanners.scan.Scan.attenuation` is ``−log(counts − dark)``, not line
    integrals (off by the log of the open-beam counts, about −11 for 16-bit data).
    Readers warn once, when the scan is opened, naming their ``white_level=`` option."""


def white_level(path, shape, value, what: str) -> Constant:
    """One constant flat frame, (1, rows, cols) = ``(1,) + shape``, at ``value`` counts
    (the grey value of air); ``what`` names where it came from (a key, or
    ``white_level=``) in the error for a value that is not a finite positive number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ScanFormatError(path, f"the white level ({what}) = {value!r} is not a "
                              "number") from None
    if not (math.isfinite(v) and v > 0):
        raise ScanFormatError(path, f"the white level ({what}) = {value!r} must be a "
                              "finite positive number of counts")
    return Constant((1,) + tuple(int(n) for n in shape), v)


def warn_no_white_level(path, looked_for: str, option: str = "white_level=", stacklevel=3):
    """Warn (once per opened scan: readers call this in ``open_scan``) that a scan has no
    flat frames and no white level, naming what was looked for and the ``option`` of the
    reader that supplies one."""
    warnings.warn(f"{path}: no flat frames and no white level ({looked_for}): the scan's "
                  "attenuation() would be -log of the raw counts, not line integrals; "
                  f"pass {option} (the counts of the open beam)",
                  MissingWhiteLevelWarning, stacklevel=stacklevel)
