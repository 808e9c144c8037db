"""NeXus NXtomo (HDF5): raw tomography frames keyed by ``image_key``.

Sources of the conventions
--------------------------
* The NeXus application definition **NXtomo** (``/entry/instrument/detector/data``,
  ``image_key`` 0 projection, 1 flat, 2 dark, 3 invalid; ``/entry/sample/rotation_angle``;
  ``x_pixel_size``, ``y_pixel_size``, ``distance`` in the NXdetector) and the NeXus
  coordinate system it declares (the ``NeXus_Coordinate_System = 'McStas'`` attribute the
  ``nxtomo`` writer puts on the entry): z along the beam, y up, x = y × z (to the left
  looking downstream); NXdetector pixel offsets grow along the detector's x (columns, the
  last axis of ``data``) and y (rows); rotations are right-handed about their axis.
* The ESRF ``nxtomo`` package (the writer the tests use) for the extensions it writes:
  ``image_key_control`` (−1 alignment frames), ``x_rotation_axis_pixel_position`` (the
  rotation axis in pixels from the detector centre along x, formerly
  ``estimated_cor_from_motor``), ``sample/x_pixel_size`` (effective pixel at the sample),
  ``source/distance`` (signed along the beam: negative upstream of the sample, so
  ``nxtomomill`` computes the propagation distance as ``−z1·z2/(−z1 + z2)``), and the
  detector ``transformations`` ``ry`` = 180° (its ``lr_flipped``) and ``rx`` = 180°
  (``ud_flipped``).

Mapping to leap
---------------
=======================================  ===================================================
NXtomo                                   leap
=======================================  ===================================================
frames with ``image_key`` 0              projections; 1 flats, 2 darks; 3 and −1 skipped
(``image_key_control`` 0 where present;  (a file with neither, in the detector or an NXdata
the detector's, else an NXdata group's)  group, is refused: NXtomo requires ``image_key``)
flat/dark frame k                        ``flat_positions`` = (projections before it) − ½:
                                         flats before and after the scan are interpolated
                                         per view
``rotation_angle`` ω                     ψ = −ω (radians): the sample turns by +ω about +y
(``units`` degree/radian)                (up), leap's source and detector turn by ψ
                                         counter-clockwise about +z
detector column i (along +x, to the      leap column N−1−i (leap's column axis at ψ = 0 is
left looking downstream)                 x_leap = −x, to the right): the frames are read
                                         column-reversed (a lazy view; not if ``ry`` = 180°)
detector row j (along +y, up)            leap row j (+z); reversed if ``rx`` = 180°
McStas (x, y, z) of the sample at ω = 0  leap (−x, z, y): a proper rotation
``x_rotation_axis_pixel_position`` p     the axis at stored column (N−1)/2 + p, so
                                         ``center_col`` = (N−1)/2 − p
``source/distance`` s,                   cone beam, sod = abs(s), sdd = sod + d; absent,
``detector/distance`` d                  zero or infinite s: parallel beam
``detector/x_pixel_size``,               pixel width, height (cone beam); parallel beams
``y_pixel_size``                         prefer ``sample/x_pixel_size`` (then
                                         ``x_magnified_pixel_size``)
``units`` m, cm, mm, um/µm/micron, nm    converted to mm
=======================================  ===================================================

``x_rotation_axis_pixel_position`` counts in the frames as stored, from their centre:
``nxtomomill`` writes it as the sample stage's lateral offset over the sample pixel size
(the ``nxtomo`` docstring calls it the "absolute position of the center of rotation in
the detector space"). A missing ``units`` attribute on an angle means degrees (as
``dxchange.read_nexus`` reads NeXus tomography files); on a length it is an error. Sample
``x/y/z_translation`` (motor positions with no agreed zero), ``half_acquisition``, the
energy and every other small dataset are kept in ``metadata`` (keys are paths in the
entry) but do not move the geometry: pass ``axis_position`` for an axis the file does
not record.

Options of :func:`open_scan`: ``entry`` (the NXentry to read when the file holds several,
e.g. ``'entry0001'``), ``axis_position`` (the rotation axis in pixels from the detector
centre along the detector's x, overriding ``x_rotation_axis_pixel_position``),
``pixel_size`` (mm, for files without one) and ``white_level`` (the open beam's counts,
one constant flat frame, for files without flats: image_key 1; without either, opening
warns with a :class:`~leap.io.scanners.MissingWhiteLevelWarning`).
"""
from __future__ import annotations

import math
import os

import numpy as np

from ...geometry import ConeBeam, Detector, ParallelBeam
from ..lazy import HDF5Source, Oriented, Selected
from ._common import (ScanFormatError, check_monotonic, default_system,
                      warn_no_white_level, white_level as white_level_flat)
from ._hdf5 import angle_unit, length_mm, probe, small_datasets, text
from .scan import Scan

FORMAT = "nxtomo"

def _nx_class(obj) -> str:
    return text(obj.attrs.get("NX_class", ""))


def _definition(group) -> str:
    d = group.get("definition")
    if d is not None and hasattr(d, "shape"):
        try:
            return text(d[()]).strip()
        except (TypeError, ValueError):
            return ""
    return text(group.attrs.get("definition", "")).strip()


def _tomo_entries(f) -> list:
    """Paths of the NXentry/NXsubentry groups whose definition is NXtomo (the top level
    and one level down)."""
    import h5py
    found = []
    for name, obj in f.items():
        if not isinstance(obj, h5py.Group):
            continue
        if _nx_class(obj) in ("NXentry", "NXsubentry") and _definition(obj) == "NXtomo":
            found.append("/" + name)
            continue
        for sub, o2 in obj.items():
            if isinstance(o2, h5py.Group) and _nx_class(o2) in ("NXentry", "NXsubentry") \
                    and _definition(o2) == "NXtomo":
                found.append(f"/{name}/{sub}")
    return found


# ------------------------------------------------------------------ the reader
def detect(path) -> bool:
    """An HDF5 file with an NXentry (or NXsubentry) whose definition is NXtomo."""
    return probe(path, _tomo_entries)


def _child(group, name, nx_class):
    """``group[name]``, else the single child of class ``nx_class``, else None."""
    import h5py
    if name in group and isinstance(group[name], h5py.Group):
        return group[name]
    hits = [o for o in group.values() if isinstance(o, h5py.Group) and _nx_class(o) == nx_class]
    return hits[0] if hits else None


def _dataset(path, group, name, what=None):
    import h5py
    where = f"{group.name}/{name}"
    if group is None or name not in group or not isinstance(group[name], h5py.Dataset):
        raise ScanFormatError(path, f"the dataset {where} is missing"
                              + (f" ({what})" if what else ""))
    return group[name]


def _frame_keys(path, ent, det):
    """The dataset saying what each frame is: ``image_key_control`` (ESRF's extension,
    with −1 alignment frames) or ``image_key`` of the detector, else of an NXdata group of
    the entry (where NXtomo links them, and where some writers keep the only copy).

    NXtomo requires ``image_key``: without it the flats and darks among the frames cannot
    be told from the projections, so a file with none (a dangling link counts as none) is
    refused rather than read as all projections."""
    import h5py
    groups = [det] + [g for g in ent.values()
                      if isinstance(g, h5py.Group) and _nx_class(g) == "NXdata"]
    for group in groups:
        for name in ("image_key_control", "image_key"):
            obj = group.get(name)            # None for a missing name or a dangling link
            if isinstance(obj, h5py.Dataset):
                return obj
    where = ", ".join(g.name for g in groups)
    raise ScanFormatError(path, f"the dataset {det.name}/image_key is missing (0 projection, "
                          "1 flat, 2 dark for each frame of "
                          f"{det.name}/data): NXtomo requires it, and without it the flats "
                          "and darks cannot be told from the projections (looked for "
                          f"image_key and image_key_control in {where})")


def _positions(is_proj, which):
    """View positions of the frames ``which`` (a mask over the kept frames): the number of
    projections before each, less one half."""
    before = np.cumsum(is_proj) - is_proj
    return before[which].astype(np.float64) - 0.5


def open_scan(path, *, entry: str | None = None, axis_position: float | None = None,
              pixel_size: float | None = None, white_level: float | None = None) -> Scan:
    """Read an NXtomo file (see the module docstring for the mapping).

    Parameters
    ----------
    entry : str, optional
        The NXtomo entry to read ('entry0000', '/entry1/tomo_entry'); required when the
        file holds more than one.
    axis_position : float, optional
        The rotation axis in pixels from the detector centre along the detector's x (the
        meaning of ``x_rotation_axis_pixel_position``), overriding the file's.
    pixel_size : float, optional
        Pixel size in mm for files that give none.
    white_level : float, optional
        The counts of the open beam: one constant flat frame instead of the file's flats
        (for files without image_key 1 frames).
    """
    import h5py
    path = os.fspath(path)
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read as an HDF5 file ({e})") from None
    with f:
        entries = _tomo_entries(f)
        if entry is not None:
            name = entry if entry.startswith("/") else "/" + entry
            if name not in f or not isinstance(f[name], h5py.Group):
                raise ScanFormatError(path, f"has no entry {entry!r}; NXtomo entries: {entries}")
        elif len(entries) == 1:
            name = entries[0]
        elif not entries:
            raise ScanFormatError(path, "has no NXentry whose definition is NXtomo")
        else:
            raise ScanFormatError(path, f"holds several NXtomo entries {entries}: name one "
                                  "with entry=")
        ent = f[name]
        instrument = _child(ent, "instrument", "NXinstrument")
        if instrument is None:
            raise ScanFormatError(path, f"the group {name}/instrument (NXinstrument) is missing")
        det = _child(instrument, "detector", "NXdetector")
        if det is None:
            raise ScanFormatError(path, f"the group {instrument.name}/detector (NXdetector) "
                                  "is missing")
        data = _dataset(path, det, "data", "the frames")
        if data.ndim != 3:
            raise ScanFormatError(path, f"the dataset {data.name} must be 3-D (frames, rows, "
                                  f"columns), it is {data.shape}")
        nframes = data.shape[0]
        key_ds = _frame_keys(path, ent, det)
        keys = np.asarray(key_ds[()]).astype(np.int64).ravel()
        key_name = key_ds.name
        if keys.size != nframes:
            raise ScanFormatError(path, f"the dataset {key_ds.name} holds {keys.size} keys but "
                                  f"{data.name} holds {nframes} frames")
        unknown = sorted(set(keys.tolist()) - {-1, 0, 1, 2, 3})
        if unknown:
            raise ScanFormatError(path, f"the dataset {key_ds.name} holds unknown image keys "
                                  f"{unknown} (0 projection, 1 flat, 2 dark, 3 invalid, "
                                  "-1 alignment)")
        sample = _child(ent, "sample", "NXsample")
        if sample is None:
            raise ScanFormatError(path, f"the group {name}/sample (NXsample) is missing")
        ang_ds = _dataset(path, sample, "rotation_angle", "one angle per frame")
        omega_all = np.asarray(ang_ds[()], dtype=np.float64).ravel()
        if omega_all.size != nframes:
            raise ScanFormatError(path, f"the dataset {ang_ds.name} holds {omega_all.size} "
                                  f"angles but {data.name} holds {nframes} frames")
        unit = angle_unit(path, ang_ds)

        proj_idx = np.flatnonzero(keys == 0)
        if proj_idx.size == 0:
            raise ScanFormatError(path, f"the dataset {key_ds.name} marks no frame as a "
                                  "projection (image_key 0)")
        kept = np.flatnonzero(np.isin(keys, (0, 1, 2)))
        kk = keys[kept]
        is_proj = (kk == 0).astype(np.int64)
        flat_idx, dark_idx = kept[kk == 1], kept[kk == 2]
        flat_pos = _positions(is_proj, kk == 1) if flat_idx.size else None
        dark_pos = _positions(is_proj, kk == 2) if dark_idx.size else None
        omega = check_monotonic(path, omega_all[proj_idx], f"projection angles of {ang_ds.name}")
        psi = -np.deg2rad(omega) if unit == "degree" else -omega

        nrows, ncols = int(data.shape[1]), int(data.shape[2])
        source = _child(instrument, "source", "NXsource")
        sdist = None
        if source is not None and "distance" in source:
            sdist = length_mm(path, source["distance"])
        cone = sdist is not None and math.isfinite(sdist) and sdist != 0.0
        ddist = None
        if "distance" in det:
            ddist = length_mm(path, det["distance"])
        if cone and (ddist is None or not math.isfinite(ddist) or ddist < 0):
            raise ScanFormatError(path, f"the source distance is {sdist:g} mm (cone beam) but "
                                  f"{det.name}/distance (sample to detector) is missing or "
                                  "not a finite positive length")

        def first(group, names):
            for n in names:
                if group is not None and n in group and isinstance(group[n], h5py.Dataset):
                    return group[n]
            return None

        if cone:
            px = first(det, ("x_pixel_size",))
            py = first(det, ("y_pixel_size",))
        else:
            px = first(sample, ("x_pixel_size",))
            if px is None:
                px = first(det, ("x_magnified_pixel_size", "x_pixel_size"))
            py = first(sample, ("y_pixel_size",))
            if py is None:
                py = first(det, ("y_magnified_pixel_size", "y_pixel_size"))
        if px is None and pixel_size is None:
            raise ScanFormatError(path, f"the dataset {det.name}/x_pixel_size is missing; "
                                  "pass pixel_size= (mm)")
        pw = float(pixel_size) if px is None else length_mm(path, px)
        ph = pw if py is None else length_mm(path, py)
        for nm, v in (("pixel width", pw), ("pixel height", ph)):
            if not (math.isfinite(v) and v > 0):
                raise ScanFormatError(path, f"the {nm} is {v:g} mm: it must be positive")

        lr = ud = False
        tr = _child(det, "transformations", "NXtransformations")
        if tr is not None:
            for tname, ds in tr.items():
                if not isinstance(ds, h5py.Dataset) or \
                        text(ds.attrs.get("transformation_type", "")) != "rotation":
                    continue
                vec = tuple(np.asarray(ds.attrs.get("vector", (0, 0, 0))).astype(int).tolist())
                turn = float(np.asarray(ds[()]).ravel()[0]) % 360.0
                if angle_unit(path, ds) == "radian":
                    turn = math.degrees(turn) % 360.0
                if abs(turn) < 1e-6:
                    continue
                if abs(turn - 180.0) > 1e-6 or vec not in ((0, 1, 0), (1, 0, 0), (0, 0, 1)):
                    raise ScanFormatError(path, f"the detector transformation {ds.name} "
                                          f"({turn:g}° about {vec}) is not a flip leap reads")
                if vec == (0, 1, 0):
                    lr = not lr
                elif vec == (1, 0, 0):
                    ud = not ud
                else:
                    lr, ud = not lr, not ud

        if axis_position is None:
            ap = first(det, ("x_rotation_axis_pixel_position", "estimated_cor_from_motor"))
            axis_position = 0.0 if ap is None else float(np.asarray(ap[()]).ravel()[0])
        axis_position = float(axis_position)
        if not math.isfinite(axis_position):
            raise ScanFormatError(path, "the rotation axis position is not finite")
        stored_axis = 0.5 * (ncols - 1) + axis_position
        reverse_cols = not lr
        center_col = (ncols - 1) - stored_axis if reverse_cols else stored_axis
        detector = Detector(num_rows=nrows, num_cols=ncols, pixel_height=ph, pixel_width=pw,
                            center_col=center_col)
        if cone:
            sod = abs(sdist)
            geo = ConeBeam(detector=detector, angles=psi, sod=sod, sdd=sod + ddist)
        else:
            geo = ParallelBeam(detector=detector, angles=psi)
        meta = small_datasets(ent)
        meta["entry"] = name

        frames = HDF5Source(path, data.name)
        def view(idx):
            if idx.size == 0:
                return None
            sel = Selected(frames, idx)
            if not (reverse_cols or ud):
                return sel
            return Oriented(sel, flip_rows=bool(ud), flip_cols=bool(reverse_cols))

    flats = view(flat_idx)
    if white_level is not None:
        flats, flat_pos = white_level_flat(path, (nrows, ncols), white_level,
                                           "white_level="), None
    elif flats is None:
        warn_no_white_level(path, f"no frame of {key_name} is a flat (image_key 1)")
    return Scan(system=default_system(geo), projections=view(proj_idx), flats=flats,
                darks=view(dark_idx), angles=omega, metadata=meta, format=FORMAT, path=path,
                flat_positions=flat_pos, dark_positions=dark_pos, angle_unit=unit)
