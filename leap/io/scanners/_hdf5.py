"""HDF5 helpers of the NeXus and DXchange readers: unit tables, text attributes, lengths
and angle units of datasets with clear errors, a cheap format probe, the small datasets of
a group as metadata."""
from __future__ import annotations

import os

import numpy as np

from ._common import ScanFormatError

#: Length units (lower case) in mm.
LENGTH_UNITS = {"m": 1e3, "meter": 1e3, "meters": 1e3, "metre": 1e3, "metres": 1e3,
                "cm": 10.0, "mm": 1.0, "millimeter": 1.0, "millimeters": 1.0,
                "millimetre": 1.0, "millimetres": 1.0, "um": 1e-3, "µm": 1e-3, "μm": 1e-3,
                "micron": 1e-3, "microns": 1e-3, "micrometer": 1e-3, "micrometers": 1e-3,
                "micrometre": 1e-3, "micrometres": 1e-3, "nm": 1e-6}
#: Angle units (lower case): 'degree' or 'radian'.
ANGLE_UNITS = {"deg": "degree", "degree": "degree", "degrees": "degree", "°": "degree",
               "rad": "radian", "radian": "radian", "radians": "radian"}


def text(value) -> str:
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def is_hdf5(path) -> bool:
    if not os.path.isfile(path):
        return False
    try:
        import h5py
    except ImportError:
        return False
    try:
        return bool(h5py.is_hdf5(path))
    except OSError:
        return False


def length_mm(path, ds, *, default_unit=None) -> float:
    """The scalar length dataset ``ds`` (or the first value of an array) in mm, from its
    ``units`` attribute; ScanFormatError naming the file and dataset otherwise."""
    unit = ds.attrs.get("units", ds.attrs.get("unit"))
    if unit is None:
        if default_unit is None:
            raise ScanFormatError(path, f"the dataset {ds.name} has no 'units' attribute "
                                  "(m, mm, um...): its length cannot be read")
        unit = default_unit
    key = text(unit).strip().lower()
    if key not in LENGTH_UNITS:
        raise ScanFormatError(path, f"the dataset {ds.name} has units {text(unit)!r}, not a "
                              f"length unit leap knows ({', '.join(sorted(LENGTH_UNITS))})")
    try:
        v = np.asarray(ds[()], dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ScanFormatError(path, f"the dataset {ds.name} is not a number") from None
    if v.size == 0:
        raise ScanFormatError(path, f"the dataset {ds.name} is empty")
    return float(v[0]) * LENGTH_UNITS[key]


def angle_unit(path, ds, default="degree") -> str:
    """'degree' or 'radian' from the ``units`` attribute of ``ds`` (``default`` when it has
    none)."""
    unit = ds.attrs.get("units", ds.attrs.get("unit"))
    if unit is None:
        return default
    key = text(unit).strip().lower()
    if key not in ANGLE_UNITS:
        raise ScanFormatError(path, f"the dataset {ds.name} has units {text(unit)!r}, not an "
                              "angle unit (degree or radian)")
    return ANGLE_UNITS[key]


def small_datasets(group, prefix="", limit=64) -> dict:
    """The scalars and short arrays under ``group`` as {relative path: value}."""
    import h5py
    out = {}

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and obj.size <= limit:
            try:
                v = obj[()]
            except (TypeError, ValueError, OSError):
                return
            if isinstance(v, np.ndarray):
                v = [text(x) if isinstance(x, bytes) else x.item() if hasattr(x, "item")
                     else x for x in v.ravel()]
            elif isinstance(v, bytes):
                v = text(v)
            elif hasattr(v, "item"):
                v = v.item()
            out[prefix + name] = v
    group.visititems(visit)
    return out


def probe(path, test) -> bool:
    """Whether ``path`` is an HDF5 file for which ``test(file)`` is true (False for any
    other file, or when h5py is not installed or cannot read it)."""
    path = os.fspath(path)
    if not is_hdf5(path):
        return False
    import h5py
    try:
        with h5py.File(path, "r") as f:
            return bool(test(f))
    except (OSError, KeyError, ValueError):
        return False
