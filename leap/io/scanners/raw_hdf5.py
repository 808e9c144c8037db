"""Raw NeXus / HDF5 scans by path: frames, image keys and angles wherever a file keeps
them (``format='hdf5'``), and Diamond's layout found without paths.

A synchrotron's raw NeXus file is often not an NXtomo entry: Diamond's DIAD (k11) files,
as httomo's ``standard_tomo`` loader reads them, keep the frames in an NXdata group whose
``data`` links to the detector's own HDF5 file (``/entry/imaging/data``), the image keys
in the NXdetector (``/entry/instrument/imaging/image_key``: 0 projection, 1 flat, 2 dark,
as NXtomo's ``image_key``) and the angles in another NXdata group
(``/entry/imaging_sum/gts_theta_value``). This reader takes those paths as options, or
finds them when the file has no NXtomo entry (:mod:`leap.io.scanners.nxtomo` reads those).

Options of :func:`open_scan` (paths inside the file, absolute or relative to the root)
------------------------------------------------------------------------------------------
=====================  ==================================================================
option                 meaning
=====================  ==================================================================
``data``               the frames, a 3-D dataset (frames, rows, columns); soft and
                       external links are followed when read (HDF5 opens the linked file
                       then, looking for it beside this file first), never at open time
``image_key``          one key per frame: 0 projection, 1 flat, 2 dark (3 and −1 are
                       skipped, as NXtomo's and ESRF's ``image_key_control``); ``False``:
                       every frame is a projection
``angles``             a 1-D dataset (or an array) of one angle per frame or per
                       projection
``flats``, ``darks``   separate 3-D datasets of flat and dark frames (instead of the
                       frames ``image_key`` marks 1 and 2)
``pixel_size``         mm at the sample (a number), or a dataset with a ``units``
                       attribute
``angle_unit``         'degree' or 'radian' for angles with no ``units`` attribute
                       (default: the attribute, else degrees, as ``dxchange.read_nexus``)
``center_col``         the detector column of the rotation axis (leap's column order);
                       default the centre
``convention``         'tomopy' (default) or 'nexus', see below
``white_level``        the open beam's counts: one constant flat, for scans without flats
=====================  ==================================================================

A path that is not in the file is refused naming it and listing the datasets the file
has. Without ``data``, the frames are found as follows (and any of ``image_key``,
``angles`` not given are found the same way beside the frames given):

* an NXdata group (any depth) whose signal (its ``signal`` attribute, else ``data``) is a
  3-D dataset, with an image key: ``image_key`` in that group, else the one dataset named
  ``image_key`` in the file with one value per frame (several distinct ones: refused,
  name one with ``image_key=``). Several such groups holding different frames are
  refused (name one with ``data=``);
* the angles: the NXdata group's first axis (its ``axes`` attribute), else its
  ``rotation_angle``, else the one 1-D dataset of the file with one value per frame whose
  name holds ``theta``, ``angle`` or ``rotation`` (several: refused, name one with
  ``angles=``; none: refused);
* the pixel size: the entry's NXsample ``x_pixel_size`` (the effective pixel, as NXtomo
  writers put it), else ``x_magnified_pixel_size`` or ``x_pixel_size`` of the entry's one
  NXdetector that has one, with their ``units`` (``y_…`` for the height, else the
  same); none: refused, pass ``pixel_size=`` (mm at the sample). An NXdetector's
  ``x_pixel_size`` is taken as the pixel at the sample, as for a parallel beam without
  optics; where a microscope objective magnifies, pass ``pixel_size=``.

Flats and darks marked by the image key are interpolated per view between the
positions they were taken at (as :mod:`~leap.io.scanners.nxtomo` does: frame k at
"projections before it − ½"); separate ``flats=``/``darks=`` datasets are averaged.

Geometry
--------
A raw file is read as a **parallel-beam** scan (synchrotron tomography): leap's
:class:`~leap.geometry.ParallelBeam` with the frames' rows and columns, the pixel size
above and the rotation axis at ``center_col``. Source and detector distances are not
needed and not read (a ``distance`` in the file is the propagation distance of phase
contrast, kept in ``metadata``); for a cone-beam scan in such a file, open it and replace
the geometry (``scan.with_geometry(leap.ConeBeam(...))``). The file has no field for the
rotation direction or the detector's orientation, and public readers differ:

=====================  ==============================================  ===============
``convention``         frames and angle θ                              as read by
=====================  ==============================================  ===============
'tomopy' (default)     as stored, ψ = θ in radians                     httomo, tomopy,
                                                                       leap's DXchange
'nexus'                columns reversed, ψ = −θ (the McStas frame of   leap's NXtomo
                       :mod:`~leap.io.scanners.nxtomo`)                reader
=====================  ==============================================  ===============

The two differ by a mirror image of the reconstruction.
"""
from __future__ import annotations

import math
import os

import numpy as np

from ...geometry import Detector, ParallelBeam
from ..lazy import HDF5Source, Oriented, Selected
from ._common import (ScanFormatError, check_monotonic, default_system,
                      warn_no_white_level, white_level as white_level_flat)
from ._hdf5 import ANGLE_UNITS, angle_unit as units_of_angle, length_mm, probe, text
from .scan import Scan

FORMAT = "hdf5"
CONVENTIONS = ("tomopy", "nexus")
_ANGLE_WORDS = ("theta", "angle", "rotation")
_MAX_DEPTH = 8


# ------------------------------------------------------------------ walking the file
def _walk(f):
    """(path, object or None, link kind) for every name in the file, links included but
    not descended into (so no cycles): kind 'hard', 'soft' or 'external'; the object is
    None where a link cannot be followed. (A loop, not a recursive closure: a closure
    that refers to itself is a reference cycle, which would keep the objects it met, and
    so the files that external links opened, open until the garbage collector runs.)"""
    import h5py
    out, todo = [], [(f, "", 0)]
    while todo:
        group, prefix, depth = todo.pop()
        for name in group:
            p = f"{prefix}/{name}"
            link = group.get(name, getlink=True)
            kind = ("external" if isinstance(link, h5py.ExternalLink) else
                    "soft" if isinstance(link, h5py.SoftLink) else "hard")
            try:
                obj = group.get(name)
            except (KeyError, OSError, ValueError):
                obj = None
            out.append((p, obj, kind))
            if kind == "hard" and isinstance(obj, h5py.Group) and depth < _MAX_DEPTH:
                todo.append((obj, p, depth + 1))
    return sorted(out, key=lambda item: item[0])


def _datasets(f) -> list:
    import h5py
    return [p for p, obj, _ in _walk(f) if isinstance(obj, h5py.Dataset)]


def _nx_class(obj) -> str:
    return text(obj.attrs.get("NX_class", ""))


def _dataset(path, f, name, option):
    """(path in the file, dataset) at ``name`` (given as ``option=``); ScanFormatError
    naming the path and listing the file's datasets when it is missing, a group or a
    broken link. (The path is kept because a dataset reached through an external link
    is named, by h5py, by its path in the other file.)"""
    import h5py
    p = "/" + str(name).strip("/")
    try:
        link = f.get(p, getlink=True)
    except (KeyError, ValueError):
        link = None
    if link is None:
        names = _datasets(f)
        shown = ", ".join(names[:40]) + (f" ... ({len(names)} in all)" if len(names) > 40
                                          else "")
        raise ScanFormatError(path, f"{option}={name!r}: the file has no dataset {p}; its "
                              f"datasets: {shown or 'none'}")
    try:
        obj = f.get(p)
    except (KeyError, OSError, ValueError) as e:
        obj, why = None, str(e)
    else:
        why = ""
    if obj is None:
        target = (f"{link.filename}:{link.path}" if isinstance(link, h5py.ExternalLink)
                  else getattr(link, "path", p))
        raise ScanFormatError(path, f"{option}={name!r}: {p} links to {target}, which cannot "
                              f"be opened{f' ({why})' if why else ''}")
    if not isinstance(obj, h5py.Dataset):
        raise ScanFormatError(path, f"{option}={name!r}: {p} is a group, not a dataset")
    return p, obj


def _unique(found):
    """The (path, dataset) pairs of distinct datasets (links to one count once, under the
    first path met)."""
    out = []
    for p, d in found:
        if not any(d == o for _, o in out):
            out.append((p, d))
    return out


def _named(f, words, n, exact=False):
    """(path, dataset) of the distinct numeric 1-D datasets of length ``n`` whose last
    path component holds (``exact``: is) one of ``words`` (lower case)."""
    import h5py
    hits = []
    for p, obj, _ in _walk(f):
        leaf = p.rsplit("/", 1)[-1].lower()
        if isinstance(obj, h5py.Dataset) and obj.ndim == 1 and obj.shape[0] == n \
                and obj.dtype.kind in "iuf" \
                and (leaf in words if exact else any(w in leaf for w in words)):
            hits.append((p, obj))
    return _unique(hits)


def _member(group, name):
    """(path, dataset) of ``group[name]`` when it is a dataset, else None."""
    import h5py
    try:
        ds = group.get(name)
    except (KeyError, OSError, ValueError):
        return None
    if not isinstance(ds, h5py.Dataset):
        return None
    return f"{group.name.rstrip('/')}/{name}", ds


# --------------------------------------------------------------- automatic layout
def _frames_groups(f):
    """(NXdata group, (path, its 3-D signal)) of the file, distinct signals only."""
    import h5py
    out = []
    for p, obj, kind in _walk(f):
        if kind == "hard" and isinstance(obj, h5py.Group) and _nx_class(obj) == "NXdata":
            sig = _member(obj, text(obj.attrs.get("signal", "data")).strip() or "data")
            if sig is not None and sig[1].ndim == 3 \
                    and not any(sig[1] == d for _, (_, d) in out):
                out.append((obj, sig))
    return out


def _find_keys(f, group, n):
    """The image key of ``n`` frames: ``image_key`` in ``group`` (None: not looked for),
    else the one dataset of the file named ``image_key`` with ``n`` values; None when
    there is none, a list when there are several."""
    if group is not None:
        hit = _member(group, "image_key")
        if hit is not None and hit[1].size == n:
            return hit
    hits = _named(f, ("image_key",), n, exact=True)
    if len(hits) == 1:
        return hits[0]
    return hits or None


def _find_angles(f, group, n):
    """The angles of ``n`` frames: the first axis of the NXdata ``group``, its
    ``rotation_angle``, else the one 1-D dataset with ``n`` values named like an angle;
    None when there is none, a list when there are several."""
    if group is not None:
        names = [text(a) for a in np.atleast_1d(group.attrs.get("axes", []))]
        if len(names) == 1 and ":" in names[0]:            # NeXus' old "a:b:c" form
            names = names[0].split(":")
        first = names[0].strip() if names else "."
        for name in ((first,) if first not in ("", ".") else ()) + ("rotation_angle",):
            hit = _member(group, name)
            if hit is not None and hit[1].ndim == 1 and hit[1].shape[0] == n:
                return hit
    hits = _named(f, _ANGLE_WORDS, n)
    if len(hits) == 1:
        return hits[0]
    return hits or None


def _auto(f):
    """([(NXdata group, (path, frames), (path, image key))] for each NXdata group of 3-D
    frames with one image key found as :func:`_find_keys` finds it, [(frames path,
    [(path, key)...])] for those with several)."""
    found, ambiguous = [], []
    for group, sig in _frames_groups(f):
        keys = _find_keys(f, group, sig[1].shape[0])
        if isinstance(keys, list):
            ambiguous.append((sig[0], keys))
        elif keys is not None:
            found.append((group, sig, keys))
    return found, ambiguous


def _has_layout(f) -> bool:
    found, ambiguous = _auto(f)
    return len(found) == 1 and not ambiguous


def detect(path) -> bool:
    """An HDF5 file with no NXtomo entry and exactly one NXdata group of 3-D frames with an
    image key (Diamond's layout)."""
    from . import nxtomo
    return not nxtomo.detect(path) and probe(path, _has_layout)


# -------------------------------------------------------------------- the reader
def _pixel(path, f, frames_path, pixel_size):
    """(width, height, where from) in mm: the option, else the NXsample or NXdetector
    groups of the entry holding ``frames_path``."""
    import h5py
    if pixel_size is not None and not isinstance(pixel_size, str):
        w = float(pixel_size)
        if not (math.isfinite(w) and w > 0):
            raise ValueError(f"pixel_size must be a positive length in mm, got {pixel_size!r}")
        return w, w, "pixel_size="
    if isinstance(pixel_size, str):
        p, ds = _dataset(path, f, pixel_size, "pixel_size")
        w = length_mm(path, ds)
        return w, w, p
    top = frames_path.strip("/").split("/")[0]
    entry = f[top] if frames_path.count("/") > 1 else f
    groups = [obj for _, obj, kind in _walk(entry) if kind == "hard"
              and isinstance(obj, h5py.Group)]
    for cls, names in (("NXsample", ("x_pixel_size",)),
                       ("NXdetector", ("x_magnified_pixel_size", "x_pixel_size"))):
        hits = []
        for g in groups:
            if _nx_class(g) != cls:
                continue
            for nm in names:
                if isinstance(g.get(nm), h5py.Dataset):
                    hits.append((g, nm))
                    break
        if len(hits) == 1:
            g, nm = hits[0]
            w = length_mm(path, g[nm])
            y = g.get(nm.replace("x_", "y_", 1))
            h = length_mm(path, y) if isinstance(y, h5py.Dataset) else w
            return w, h, f"{g.name}/{nm}"
        if len(hits) > 1:
            raise ScanFormatError(path, "several groups give a pixel size ("
                                  f"{', '.join(g.name + '/' + nm for g, nm in hits)}); pass "
                                  "pixel_size= (mm at the sample, or the dataset's path)")
    raise ScanFormatError(path, "the file gives no pixel size (looked for the x_pixel_size "
                          "of an NXsample, x_magnified_pixel_size or x_pixel_size of an "
                          "NXdetector); pass pixel_size= (mm at the sample)")


def _keys(path, key_path, key_ds, n):
    keys = np.asarray(key_ds[()]).astype(np.int64).ravel()
    if keys.size != n:
        raise ScanFormatError(path, f"the image key {key_path} holds {keys.size} values "
                              f"but the frames are {n}")
    unknown = sorted(set(keys.tolist()) - {-1, 0, 1, 2, 3})
    if unknown:
        raise ScanFormatError(path, f"the image key {key_path} holds unknown values "
                              f"{unknown} (0 projection, 1 flat, 2 dark, 3 and -1 skipped)")
    return keys


def _several(path, what, hits, option):
    raise ScanFormatError(path, f"several datasets could be the {what} "
                          f"({', '.join(p for p, _ in hits)}); name one with {option}=")


def open_scan(path, *, data: str | None = None, image_key=None, angles=None,
              flats: str | None = None, darks: str | None = None, pixel_size=None,
              angle_unit: str | None = None, center_col: float | None = None,
              convention: str = "tomopy", white_level: float | None = None) -> Scan:
    """Read a raw NeXus / HDF5 scan (see the module docstring for the options, how what
    is not given is found, and the geometry).

    Returns a Scan: projections (views, rows, cols) lazy (nothing of the frames is read
    here; links are followed when they are), flats and darks likewise, ``angles`` as
    stored for the projections (``angle_unit``), ``metadata`` with ``paths`` (the
    datasets used) and the file's scalars.
    """
    import h5py
    path = os.fspath(path)
    for name, value in (("data", data), ("flats", flats), ("darks", darks)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name}= must be a path inside the file (str), got {value!r}")
    if not (image_key is None or image_key is False or isinstance(image_key, str)):
        raise TypeError("image_key= must be a path inside the file (str), or False for "
                        f"none, got {image_key!r}")
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if angle_unit is not None and str(angle_unit).lower() not in ANGLE_UNITS:
        raise ValueError(f"angle_unit must be 'degree' or 'radian', got {angle_unit!r}")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read as an HDF5 file ({e})") from None
    with f:
        group = None
        if data is not None:
            frames_path, frames = _dataset(path, f, data, "data")
            if frames.ndim != 3:
                raise ScanFormatError(path, f"data={data!r}: {frames_path} must be 3-D "
                                      f"(frames, rows, columns), it is {frames.shape}")
            parent = f[frames_path.rsplit("/", 1)[0] or "/"]
            group = parent if _nx_class(parent) == "NXdata" else None
            found_keys = None if image_key is not None else \
                _find_keys(f, parent, frames.shape[0])
        else:
            found, ambiguous = _auto(f)
            if not found and ambiguous:
                _several(path, f"image key of {ambiguous[0][0]}", ambiguous[0][1],
                         "image_key")
            if not found:
                groups = [g.name for g, _ in _frames_groups(f)]
                raise ScanFormatError(path, "has no NXdata group of 3-D frames with an image "
                                      f"key (NXdata groups with frames: {groups or 'none'}); "
                                      "name the datasets with data=, image_key=, angles=")
            if len(found) > 1:
                raise ScanFormatError(path, "holds several NXdata groups of frames with an "
                                      f"image key ({', '.join(g.name for g, _, _ in found)}); "
                                      "name one with data=")
            group, (frames_path, frames), found_keys = found[0]
        n = int(frames.shape[0])

        # image keys: given, found beside the frames, or none (all projections)
        if image_key is False:
            keys, key_name = np.zeros(n, np.int64), None
        else:
            if image_key is not None:
                found_keys = _dataset(path, f, image_key, "image_key")
            elif isinstance(found_keys, list):
                _several(path, "image key", found_keys, "image_key")
            key_name = None if found_keys is None else found_keys[0]
            keys = (np.zeros(n, np.int64) if found_keys is None
                    else _keys(path, key_name, found_keys[1], n))
        proj_idx = np.flatnonzero(keys == 0)
        if proj_idx.size == 0:
            raise ScanFormatError(path, f"the image key {key_name} marks no frame as a "
                                  "projection (0)")

        # angles: given (a path or an array), else found
        unit = None if angle_unit is None else ANGLE_UNITS[str(angle_unit).lower()]
        if isinstance(angles, str):
            ang = _dataset(path, f, angles, "angles")
        elif angles is not None:
            ang = None
            values = np.asarray(angles, dtype=np.float64).ravel()
        else:
            ang = _find_angles(f, group if group is not None else
                               f[frames_path.rsplit("/", 1)[0] or "/"], n)
            if isinstance(ang, list):
                _several(path, "angles", ang, "angles")
            if ang is None:
                raise ScanFormatError(path, f"no dataset of the file gives the angles of the "
                                      f"{n} frames of {frames_path} (looked for the NXdata "
                                      "group's first axis, rotation_angle, and names holding "
                                      f"{', '.join(_ANGLE_WORDS)}); pass angles=")
        if ang is not None:
            try:
                values = np.asarray(ang[1][()], dtype=np.float64).ravel()
            except (TypeError, ValueError):
                raise ScanFormatError(path, f"the angles {ang[0]} are not numbers") from None
            if unit is None:
                unit = units_of_angle(path, ang[1])
        unit = unit or "degree"
        where = ang[0] if ang is not None else "angles="
        if values.size == n:
            theta = values[proj_idx]
        elif values.size == proj_idx.size:
            theta = values
        else:
            raise ScanFormatError(path, f"the angles ({where}) hold {values.size} values but "
                                  f"there are {n} frames and {proj_idx.size} projections")
        theta = check_monotonic(path, theta, f"projection angles ({where})")

        # separate flats and darks, else the frames the keys mark (with the view
        # positions they were taken at: the projections before each, less one half)
        extra, positions = {}, {"flats": None, "darks": None}
        kept = keys[np.isin(keys, (0, 1, 2))]
        before = np.cumsum(kept == 0) - (kept == 0)
        for name, spec, k in (("flats", flats, 1), ("darks", darks, 2)):
            if spec is None:
                idx = np.flatnonzero(keys == k)
                extra[name] = (frames_path, idx) if idx.size else None
                if idx.size:
                    positions[name] = before[kept == k].astype(np.float64) - 0.5
                continue
            p, ds = _dataset(path, f, spec, name)
            if ds.ndim != 3 or tuple(ds.shape[1:]) != tuple(frames.shape[1:]):
                raise ScanFormatError(path, f"{name}={spec!r}: {p} is {ds.shape}; it "
                                      f"must be (frames, {frames.shape[1]}, "
                                      f"{frames.shape[2]}) as {frames_path}")
            extra[name] = (p, None) if ds.shape[0] else None

        pw, ph, pixel_from = _pixel(path, f, frames_path, pixel_size)
        meta = {"paths": {"data": frames_path, "image_key": key_name,
                          "angles": ang[0] if ang is not None else None,
                          "flats": extra["flats"] and extra["flats"][0],
                          "darks": extra["darks"] and extra["darks"][0],
                          "pixel_size": pixel_from}}
        for p, obj, kind in _walk(f):
            if kind == "hard" and isinstance(obj, h5py.Dataset) and obj.size == 1 \
                    and obj.dtype.kind in "iufSOU":
                try:
                    v = obj[()]
                except (TypeError, ValueError, OSError):
                    continue
                v = np.asarray(v).reshape(()).item()
                meta[p] = text(v) if isinstance(v, bytes) else v
        nrows, ncols = int(frames.shape[1]), int(frames.shape[2])

    reverse = convention == "nexus"

    def source(spec):
        if spec is None:
            return None
        name, idx = spec
        s = HDF5Source(path, name)
        s = s if idx is None else Selected(s, idx)
        return Oriented(s, flip_rows=False, flip_cols=True) if reverse else s

    projections, flat_src, dark_src = (source((frames_path, proj_idx)),
                                       source(extra["flats"]), source(extra["darks"]))
    if white_level is not None:
        flat_src = white_level_flat(path, (nrows, ncols), white_level, "white_level=")
        positions["flats"] = None
    elif flat_src is None:
        warn_no_white_level(path, f"no flats= and no frame of {frames_path} marked 1 by an "
                            "image key", "white_level=, flats= or image_key=")
    if center_col is not None:
        center_col = float(center_col)
        if not math.isfinite(center_col):
            raise ValueError(f"center_col must be a finite column index, got {center_col!r}")
    psi = np.deg2rad(theta) if unit == "degree" else theta.copy()
    if reverse:
        psi = -psi
    detector = Detector(num_rows=nrows, num_cols=ncols, pixel_height=ph, pixel_width=pw,
                        center_col=center_col)
    geometry = ParallelBeam(detector=detector, angles=psi)
    return Scan(system=default_system(geometry), projections=projections, flats=flat_src,
                darks=dark_src, angles=theta, metadata=meta, format=FORMAT, path=path,
                flat_positions=positions["flats"], dark_positions=positions["darks"],
                angle_unit=unit)
