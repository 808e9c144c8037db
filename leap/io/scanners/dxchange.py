"""DXchange (Data Exchange HDF5, APS/tomopy): synchrotron parallel-beam scans.

Sources of the conventions
--------------------------
* The Data Exchange layout as ``dxchange.read_aps_32id`` / ``read_aps_tomoscan_hdf5``
  read it: ``/exchange/data`` (projections, views × rows × columns), ``data_white``
  (flats), ``data_dark`` (darks), ``theta`` in degrees (converted with ``np.deg2rad``);
  without ``theta``, ``/process/acquisition/rotation/rotation_start``, ``rotation_step``
  and ``num_angles`` (degrees).
* The pixel size where ``dxchange.create_standard_meta`` and tomopy-cli look for it:
  ``/measurement/instrument/detection_system/objective/resolution`` (the effective pixel
  at the sample, micrometres), then ``/measurement/instrument/detector/actual_pixel_size_x``
  and ``_y``; a ``units`` attribute is honoured, without one the value is micrometres (as
  tomopy-cli logs it).
* TIGRE's ``DXChangeDataLoader`` and ``dxchange.read_aps_32id`` hand ``theta`` (in radians)
  and the frames as stored to their reconstructors; leap does the same.

Mapping to leap
---------------
===================================  ==============================================
DXchange                             leap
===================================  ==============================================
``/exchange/data`` [view, row, col]  projections as stored (lazy)
``data_white``, ``data_dark``        flats, darks (averaged); without
                                     ``data_white``, option ``white_level``
                                     (one constant flat) or a warning
``theta`` θ (``units`` deg/rad;      ψ = θ in radians (parallel beam:
none: degrees)                       s = x cos ψ + y sin ψ, rows along z)
``objective/resolution``, else       pixel width (height), mm
``actual_pixel_size_x`` (``_y``)
option ``center_col``                detector column of the rotation axis (tomopy's
                                     ``center``); default the detector centre
===================================  ==============================================

The layout has no field for the rotation axis, the rotation direction or the detector's
orientation: leap takes theta and the frames as the reconstructors above receive them, so
a scanner that turned the other way gives a mirrored reconstruction. Without a pixel size in the file and no ``pixel_size=`` option the pixel is
1 mm: ``metadata['pixel_size_source']`` says so and a warning is issued.

Options of :func:`open_scan`: ``pixel_size`` (mm; overrides the file), ``center_col``
(the rotation axis' column, fractional pixels), ``exchange`` (the group, default
'exchange'; 'exchange1'… hold processed data) and ``white_level`` (the open beam's
counts, one constant flat, for files without ``data_white``).
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ...geometry import Detector, ParallelBeam
from ..lazy import HDF5Source
from ._common import (ScanFormatError, check_monotonic, default_system,
                      warn_no_white_level, white_level as white_level_flat)
from ._hdf5 import angle_unit, length_mm, probe, small_datasets
from .scan import Scan

FORMAT = "dxchange"

RESOLUTION = "/measurement/instrument/detection_system/objective/resolution"
PIXEL_X = "/measurement/instrument/detector/actual_pixel_size_x"
PIXEL_Y = "/measurement/instrument/detector/actual_pixel_size_y"
ROTATION = "/process/acquisition/rotation"


def detect(path) -> bool:
    """An HDF5 file with a dataset /exchange/data."""
    import h5py
    return probe(path, lambda f: isinstance(f.get("exchange/data"), h5py.Dataset))


def _theta(path, f, base, nviews):
    """(angles as stored, unit) from ``theta`` or the rotation start/step/count."""
    import h5py
    ds = f.get(f"{base}/theta")
    if isinstance(ds, h5py.Dataset):
        theta = np.asarray(ds[()], dtype=np.float64).ravel()
        if theta.size != nviews:
            raise ScanFormatError(path, f"the dataset /{base}/theta holds {theta.size} angles "
                                  f"but /{base}/data holds {nviews} projections")
        return theta, angle_unit(path, ds)
    names = ("rotation_start", "rotation_step", "num_angles")
    if all(isinstance(f.get(f"{ROTATION}/{n}"), h5py.Dataset) for n in names):
        start, step, count = (float(np.asarray(f[f"{ROTATION}/{n}"][()]).ravel()[0])
                              for n in names)
        if int(count) != nviews:
            raise ScanFormatError(path, f"{ROTATION}/num_angles is {int(count)} but /{base}/data "
                                  f"holds {nviews} projections")
        return start + step * np.arange(nviews), "degree"
    raise ScanFormatError(path, f"the dataset /{base}/theta is missing (and no "
                          f"{ROTATION}/rotation_start, rotation_step, num_angles)")


def _pixel(path, f, option):
    """(width, height, where from) in mm."""
    import h5py
    if option is not None:
        p = float(option)
        if not (math.isfinite(p) and p > 0):
            raise ValueError(f"pixel_size must be a positive number of mm, got {option!r}")
        return p, p, "option pixel_size"
    res = f.get(RESOLUTION)
    if isinstance(res, h5py.Dataset):
        p = length_mm(path, res, default_unit="um")
        return p, p, RESOLUTION
    px = f.get(PIXEL_X)
    if isinstance(px, h5py.Dataset):
        w = length_mm(path, px, default_unit="um")
        py = f.get(PIXEL_Y)
        h = length_mm(path, py, default_unit="um") if isinstance(py, h5py.Dataset) else w
        return w, h, PIXEL_X
    return 1.0, 1.0, ("default: 1 mm, the file gives no pixel size (pass pixel_size= in mm "
                      f"or add {RESOLUTION})")


def open_scan(path, *, pixel_size: float | None = None, center_col: float | None = None,
              exchange: str = "exchange", white_level: float | None = None) -> Scan:
    """Read a DXchange file (see the module docstring for the mapping).

    Parameters
    ----------
    pixel_size : float, optional
        Pixel size at the sample, mm (overrides the file's).
    center_col : float, optional
        Detector column (fractional index) of the rotation axis; default the centre.
    exchange : str
        The exchange group ('exchange', or 'exchange1'… for processed data).
    white_level : float, optional
        The counts of the open beam: one constant flat frame instead of ``data_white``
        (for files without flats).
    """
    import h5py
    path = os.fspath(path)
    base = exchange.strip("/")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read as an HDF5 file ({e})") from None
    with f:
        data = f.get(f"{base}/data")
        if not isinstance(data, h5py.Dataset):
            raise ScanFormatError(path, f"the dataset /{base}/data is missing")
        if data.ndim != 3:
            raise ScanFormatError(path, f"the dataset /{base}/data must be 3-D (views, rows, "
                                  f"columns), it is {data.shape}")
        nviews, nrows, ncols = (int(n) for n in data.shape)
        extra = {}
        for key in ("data_white", "data_dark"):
            ds = f.get(f"{base}/{key}")
            if ds is None:
                extra[key] = None
                continue
            if not isinstance(ds, h5py.Dataset) or ds.ndim != 3:
                raise ScanFormatError(path, f"/{base}/{key} must be a 3-D dataset (frames, "
                                      f"rows, columns), it is {getattr(ds, 'shape', 'a group')}")
            if tuple(ds.shape[1:]) != (nrows, ncols):
                raise ScanFormatError(path, f"the dataset /{base}/{key} holds images of "
                                      f"{tuple(ds.shape[1:])} pixels but /{base}/data of "
                                      f"{(nrows, ncols)}")
            extra[key] = HDF5Source(path, ds.name) if ds.shape[0] else None
        theta, unit = _theta(path, f, base, nviews)
        theta = check_monotonic(path, theta, f"angles of /{base}/theta")
        pw, ph, source = _pixel(path, f, pixel_size)
        meta = {}
        for group in ("measurement", "process"):
            if isinstance(f.get(group), h5py.Group):
                meta.update(small_datasets(f[group], prefix=f"/{group}/"))
        meta["pixel_size_source"] = source
    if source.startswith("default"):
        warnings.warn(f"{path}: no pixel size in the file; leap uses 1 mm (pass pixel_size= "
                      "in mm)", stacklevel=3)
    if center_col is not None:
        center_col = float(center_col)
        if not math.isfinite(center_col):
            raise ValueError(f"center_col must be a finite column index, got {center_col!r}")
    if white_level is not None:
        extra["data_white"] = white_level_flat(path, (nrows, ncols), white_level,
                                               "white_level=")
    elif extra["data_white"] is None:
        warn_no_white_level(path, f"no /{base}/data_white")
    psi = np.deg2rad(theta) if unit == "degree" else theta
    det = Detector(num_rows=nrows, num_cols=ncols, pixel_height=ph, pixel_width=pw,
                   center_col=center_col)
    geo = ParallelBeam(detector=det, angles=psi)
    return Scan(system=default_system(geo), projections=HDF5Source(path, f"/{base}/data"),
                flats=extra["data_white"], darks=extra["data_dark"], angles=theta,
                metadata=meta, format=FORMAT, path=path, angle_unit=unit)
