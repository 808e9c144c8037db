"""Nikon XT/XTH scans (Inspect-X, CT Pro 3D): an ``.xtekct`` file, its TIFF projections
and the angle file (``_ctdata.txt`` or ``<Name>.ang``) read into a :class:`Scan`.

Where the conventions come from
-------------------------------
Key names, units and signs follow CIL's ``NikonDataReader`` (TomographicImaging/CIL,
``Wrappers/Python/cil/io/NikonDataReader.py``, with CIL's frame as its ASTRA/TIGRE
converters use it). TIGRE's Python loader (no image flips, angles negated) agrees with it
up to a half turn of the object about y, i.e. in direction and handedness. TIGRE's
loaders (``readXtekctGeometry.m``, ``NikonDataLoader.py``) give the projection file names
(``<Name><InputSeparator><index>.tif`` from 1, ``InputDigits`` digits), the angle files
(``_ctdata.txt``: three header lines, then ``projection, angle (deg), time``; ``.ang``: a
header line, then ``index<TAB>angle`` or ``Proj n: angle``) and ``WhiteLevel`` (the grey
value of air: Inspect-X has shading-corrected the projections, so ``-log(I / WhiteLevel)``
are the line integrals, as CIL and TIGRE normalise them).

In CIL's frame (x, y, z right-handed, z up) the source is at ``(0, -SrcToObject, 0)``, the
detector centre at ``(-DetectorOffsetX, SrcToDetector - SrcToObject, DetectorOffsetY)``, the
rotation axis passes through ``(-ObjectOffsetX, 0, 0)``, the object turns by
``180 - InitialAngle - angle`` degrees (counter-clockwise seen from +z) and a projection
image's pixel (0, 0) is its top-right corner seen from the source (CIL's panel origin
'top-right'). leap turns source and detector by ψ counter-clockwise about the z axis
(LEAP_CONVENTIONS.md), so::

    =====================================  ==============================================
    Nikon key (unit)                        leap
    =====================================  ==============================================
    angle a (deg; angle file or            ψ = radians(a + InitialAngle − 180)
    ``i·AngularStep``), ``InitialAngle``
    ``SrcToObject``, ``SrcToDetector``      sod, sdd (``Units``, default mm)
    ``DetectorPixelsX/Y``                   num_cols, num_rows (the images, flipped: rows
                                            run up, columns along θ⊥)
    ``DetectorPixelSizeX/Y``                pixel_width, pixel_height
    ``DetectorOffsetX/Y``                   center_col = (cols−1)/2 + OffsetX/pixel_width,
                                            center_row = (rows−1)/2 − OffsetY/pixel_height
    ``ObjectOffsetX`` (or, older files,     tau = −ObjectOffsetX
    ``CentreOfRotationTop/Bottom``, mm at   (= −(Top+Bottom)/2 · sod/sdd)
    the detector)
    ``ObjectRoll`` (deg, about y; or        the axis direction Rx(−ObjectTilt)·Ry(roll)·z:
    −atan((Top − Bottom)/detector height)), ModularBeam (per-view source, module, vectors)
    ``ObjectTilt`` (deg, about x)           with the volume's z along the rotation axis
    ``WhiteLevel``                          flats: one constant frame (no darks);
                                            without it and without ``flats=`` images
                                            a MissingWhiteLevelWarning names
                                            ``white_level=``
    =====================================  ==============================================

The image flip (both axes) is lazy (:class:`~leap.io.lazy.Oriented`); ``projections`` index as leap's
detector does. Ambiguities: CIL ignores the angle files ("not correct") and uses
``i·AngularStep``; this reader uses the measured angles of the file when there is one
(``angles_file=False`` for the nominal ones, which is what CT Pro does when
``AngleFile_Use=False``). The tilt axis of a non-zero ``ObjectRoll`` sits at the source's
height (z = 0), as in CIL. The volume's z axis is the rotation axis; with a roll or tilt
its x and y are the lab's turned by the smallest rotation taking that axis to z.
"""
from __future__ import annotations

import glob
import math
import os

import numpy as np

from ...geometry import ConeBeam, Detector, ModularBeam
from ..lazy import Oriented, Source, TiffStack, binning_pair
from ._common import (ScanFormatError, check_monotonic, default_system, number, text_lines,
                      warn_no_white_level, white_level as constant_flat)
from .scan import Scan

_UNITS = {"mm": 1.0, "um": 1e-3, "µm": 1e-3, "cm": 10.0, "m": 1000.0}


# ------------------------------------------------------------------ shared helpers
def read_ini(path, as_text: bool = False) -> dict:
    """``key=value`` lines of an INI-style vendor file as a flat dict (first occurrence of
    a key wins; sections are not part of the key); values that read as finite numbers
    become floats unless ``as_text``. Raises ScanFormatError for an unreadable file."""
    lines = text_lines(path)
    out = {}
    for line in lines:
        s = line.strip()
        if not s or s.startswith((";", "#", "[")) or "=" not in s:
            continue
        key, value = (p.strip() for p in s.split("=", 1))
        if key and key not in out:
            out[key] = value if as_text else _number_or_text(value)
    return out


def _number_or_text(text: str):
    try:
        return float(text) if math.isfinite(float(text)) else text
    except ValueError:
        return text


def integer(path, meta, key, *, default=None) -> int:
    """``meta[key]`` as a positive integer (ScanFormatError naming file and key)."""
    x = number(path, meta, key, default=default, positive=True)
    if x != int(x):
        raise ScanFormatError(path, f"{key} = {meta.get(key)!r} must be a whole number")
    return int(x)


def stack(path, files, key: str) -> Source:
    """A TiffStack of ``files`` whose errors name the scan file and the key they came from."""
    try:
        return TiffStack(files)
    except FileNotFoundError as e:
        raise FileNotFoundError(f"{path}: {e} (file named from {key})") from None
    except ValueError as e:
        raise ScanFormatError(path, f"{e} (files named from {key})") from None


def reference_files(spec, where: str) -> list | None:
    """Flat/dark reference files from an option: None or False for none, a path, a glob
    (relative to ``where``) or a list of paths."""
    if spec is None or spec is False:
        return None
    if isinstance(spec, (list, tuple)):
        return [os.path.join(where, os.fspath(p)) for p in spec]
    s = os.path.join(where, os.fspath(spec))
    files = sorted(glob.glob(s)) if any(c in s for c in "*?[") else [s]
    if not files:
        raise FileNotFoundError(f"no reference images match {s!r}")
    return files


def references(path, files, key, raw, binning, read=None):
    """Reference images ``files`` (or None) as an Oriented stack like the projections
    ``raw``; errors name ``path``, the first file and ``key``."""
    if files is None:
        return None
    src = (read or stack)(path, files, key)
    if src.shape[1:] != raw.shape[1:]:
        raise ScanFormatError(path, f"the reference image {files[0]!r} ({key}) is "
                              f"{src.shape[1:]} (rows, cols), the projections {raw.shape[1:]}")
    return Oriented(src, binning)


def oriented(path, raw, shape, keys: str, binning):
    """The stored images ``raw`` checked against the (views, rows, cols) ``shape`` of the
    metadata (``keys`` names the rows and columns keys in the error), flipped into leap's
    detector order and binned: ``(projections, (br, bc))``."""
    if raw.shape != tuple(shape):
        raise ScanFormatError(path, f"the projection images are {raw.shape[1:]} (rows, cols) "
                              f"but {keys} = {tuple(shape[1:])}")
    b = binning_pair(binning)
    return Oriented(raw, b), b


def binned_center(center: float, b: int) -> float:
    """The fractional index ``center`` of an unbinned (flipped) axis in the grid of its
    pixels binned ``b`` at a time from index 0."""
    return (center - 0.5 * (b - 1)) / b


# --------------------------------------------------------------------------- reader
def detect(path) -> bool:
    """An ``.xtekct`` file, or a directory holding one."""
    p = os.fspath(path)
    if os.path.isdir(p):
        return bool(glob.glob(os.path.join(glob.escape(p), "*.xtekct")))
    return p.lower().endswith(".xtekct")


def _angle_file(xtekct, option):
    """The angle file to use: the option's path, else ``_ctdata.txt``, else one ``.ang``."""
    if option is False:
        return None
    folder = os.path.dirname(os.path.abspath(xtekct))
    if option is not None:
        p = os.path.join(folder, os.fspath(option))
        if not os.path.isfile(p):
            raise FileNotFoundError(f"{xtekct}: the angle file {p!r} (angles_file=) does not exist")
        return p
    ct = os.path.join(folder, "_ctdata.txt")
    if os.path.isfile(ct):
        return ct
    angs = sorted(glob.glob(os.path.join(glob.escape(folder), "*.ang")))
    return angs[0] if len(angs) == 1 else None


def read_angles(path) -> np.ndarray:
    """Angles (deg) of a ``_ctdata.txt`` (the 'Angle(deg)' column under its header line) or
    ``.ang`` file (one line of header, then ``index<TAB>angle`` or ``... : angle``)."""
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f.read().splitlines()]
    except OSError as e:
        raise ScanFormatError(path, f"cannot be read: {e}") from None
    head = next((i for i, ln in enumerate(lines) if ln.lower().startswith("projection\t")
                 and "angle" in ln.lower()), None)
    if head is not None:                           # _ctdata.txt
        column = [c.lower().startswith("angle") for c in lines[head].split("\t")].index(True)
        rows, first = lines[head + 1:], head + 2
    else:                                          # .ang
        column, rows, first = 1, lines[1:], 2
    out = []
    for k, ln in enumerate(rows):
        if not ln:
            continue
        parts = ln.split("\t") if "\t" in ln else ["", ln.rsplit(":", 1)[-1]]
        try:
            out.append(float(parts[column]))
        except (IndexError, ValueError):
            raise ScanFormatError(path, f"line {first + k} ({ln!r}) has no angle in column "
                                  f"{column + 1}") from None
    return np.asarray(out, dtype=np.float64)


def _projection_files(xtekct, meta, n) -> tuple:
    text = read_ini(xtekct, as_text=True)          # names as written (not as numbers)
    name = text.get("InputName") or text.get("Name")
    if not name:
        raise ScanFormatError(xtekct, "the key 'Name' (or 'InputName') is missing: it names "
                              "the projection files")
    sep = text.get("InputSeparator", "_")
    digits = integer(xtekct, meta, "InputDigits", default=4)
    sub = text.get("InputFolderName", "").replace("\\", os.sep)
    folder = os.path.join(os.path.dirname(os.path.abspath(xtekct)), sub)
    ext = ".tif"
    if not os.path.exists(os.path.join(folder, f"{name}{sep}{1:0{digits}d}.tif")) and \
            os.path.exists(os.path.join(folder, f"{name}{sep}{1:0{digits}d}.tiff")):
        ext = ".tiff"
    files = [os.path.join(folder, f"{name}{sep}{i:0{digits}d}{ext}") for i in range(1, n + 1)]
    keys = "Name/InputName, InputSeparator, InputDigits, InputFolderName"
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise FileNotFoundError(f"{xtekct}: projection file {missing[0]!r} does not exist "
                                f"({len(missing)} of Projections = {n} missing; names from {keys})")
    extra = os.path.join(folder, f"{name}{sep}{n + 1:0{digits}d}{ext}")
    if os.path.exists(extra):
        raise ScanFormatError(xtekct, f"Projections = {n} but there are more projection files "
                              f"({extra!r} exists)")
    return files, keys


def open_scan(path, *, angles_file=None, binning=1, flats=None, darks=None,
              white_level=None) -> Scan:
    """Read a Nikon XT/XTH scan.

    Parameters
    ----------
    path : the ``.xtekct`` file, or the directory holding it.
    angles_file : None (``_ctdata.txt``, else the one ``.ang`` file, else
        ``i·AngularStep``), a path (relative to the ``.xtekct``'s directory), or False
        (``i·AngularStep``, ignoring angle files).
    binning : int or (rows, cols): average that many pixels (lazily; pixel sizes grow).
    flats, darks : reference images (a path, glob or list of TIFFs) instead of the
        default: flats one constant frame at ``WhiteLevel`` (None without that key, with
        a warning), no darks.
    white_level : the counts of the open beam (one constant flat frame) instead of
        ``WhiteLevel``; not with ``flats=``.

    Returns a Scan: projections (views, rows, cols) in leap's detector order (the TIFFs
    flipped), ``angles`` as measured (degrees, Nikon's direction, without InitialAngle),
    ``metadata`` every key of the file (numbers as floats).
    """
    xtekct = os.fspath(path)
    if os.path.isdir(xtekct):
        found = sorted(glob.glob(os.path.join(glob.escape(xtekct), "*.xtekct")))
        if len(found) != 1:
            raise ScanFormatError(xtekct, f"holds {len(found)} .xtekct files ({found}); name one")
        xtekct = found[0]
    if not os.path.isfile(xtekct):
        raise FileNotFoundError(f"no .xtekct file at {xtekct!r}")
    meta = read_ini(xtekct)
    unit_name = str(meta.get("Units", "mm")).strip()
    if unit_name.lower() not in _UNITS:
        raise ScanFormatError(xtekct, f"Units = {unit_name!r} is not a known length unit "
                              f"({', '.join(_UNITS)})")
    u = _UNITS[unit_name.lower()]
    n = integer(xtekct, meta, "Projections")
    cols, rows = integer(xtekct, meta, "DetectorPixelsX"), integer(xtekct, meta, "DetectorPixelsY")
    pw = u * number(xtekct, meta, "DetectorPixelSizeX", positive=True)
    ph = u * number(xtekct, meta, "DetectorPixelSizeY", positive=True)
    sod = u * number(xtekct, meta, "SrcToObject", positive=True)
    sdd = u * number(xtekct, meta, "SrcToDetector", positive=True)
    if not sdd > sod:
        raise ScanFormatError(xtekct, f"SrcToDetector ({sdd:g}) must exceed SrcToObject ({sod:g})")
    dox = u * number(xtekct, meta, "DetectorOffsetX", default=0.0)
    doy = u * number(xtekct, meta, "DetectorOffsetY", default=0.0)
    top = u * number(xtekct, meta, "CentreOfRotationTop", default=0.0)
    bottom = u * number(xtekct, meta, "CentreOfRotationBottom", default=top / u)
    oox = (u * number(xtekct, meta, "ObjectOffsetX") if "ObjectOffsetX" in meta
           else 0.5 * (top + bottom) * sod / sdd)
    roll = (math.radians(number(xtekct, meta, "ObjectRoll")) if "ObjectRoll" in meta
            else -math.atan2(top - bottom, rows * ph))
    tilt = -math.radians(number(xtekct, meta, "ObjectTilt", default=0.0))
    initial = number(xtekct, meta, "InitialAngle", default=0.0)

    afile = _angle_file(xtekct, angles_file)
    if afile is not None:
        measured = read_angles(afile)
        if measured.size != n:
            raise ScanFormatError(afile, f"holds {measured.size} angles but Projections = {n} "
                                  f"in {xtekct}")
        measured = check_monotonic(afile, measured)
    else:
        measured = np.arange(n) * number(xtekct, meta, "AngularStep")
        measured = check_monotonic(xtekct, measured, "angles (AngularStep)")
    psi = np.radians(measured + initial - 180.0)

    files, keys = _projection_files(xtekct, meta, n)
    raw = stack(xtekct, files, keys)
    projections, (br, bc) = oriented(xtekct, raw, (n, rows, cols),
                                     "DetectorPixelsY, DetectorPixelsX", binning)
    folder = os.path.dirname(os.path.abspath(xtekct))
    flat_files, dark_files = reference_files(flats, folder), reference_files(darks, folder)
    flat_src, dark_src = (references(xtekct, f, k, raw, (br, bc))
                          for f, k in ((flat_files, "flats="), (dark_files, "darks=")))
    if white_level is not None:
        if flats not in (None, False):
            raise ValueError("give flats= images or white_level=, not both")
        flat_src = constant_flat(xtekct, projections.shape[1:], white_level, "white_level=")
    elif flat_src is None and flats is None:
        if "WhiteLevel" in meta:
            flat_src = constant_flat(xtekct, projections.shape[1:],
                                     number(xtekct, meta, "WhiteLevel", positive=True),
                                     "WhiteLevel")
        else:
            warn_no_white_level(xtekct, "no WhiteLevel key and no flats=",
                                "white_level= or flats=")

    nr, nc = projections.shape[1:]
    cc = binned_center(0.5 * (cols - 1) + dox / pw, bc)
    cr = binned_center(0.5 * (rows - 1) - doy / ph, br)
    if roll == 0.0 and tilt == 0.0:
        det = Detector(num_rows=nr, num_cols=nc, pixel_height=ph * br, pixel_width=pw * bc,
                       center_row=cr, center_col=cc)
        geometry = ConeBeam(detector=det, angles=psi, sod=sod, sdd=sdd, tau=-oox)
    else:
        geometry = _modular(psi, sod, sdd, oox, nr, nc, ph * br, pw * bc, cr, cc, roll, tilt)
    return Scan(system=default_system(geometry), projections=projections, flats=flat_src,
                darks=dark_src, angles=measured, metadata=meta, format="nikon", path=xtekct,
                angle_unit="degree")


def axis_rotation(axis) -> np.ndarray:
    """The smallest rotation taking the unit vector ``axis`` to +z (Rodrigues)."""
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    z = np.array([0.0, 0.0, 1.0])
    v, c = np.cross(a, z), float(a @ z)
    if np.linalg.norm(v) < 1e-15:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    k = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + k + k @ k / (1.0 + c)


def _modular(psi, sod, sdd, oox, nr, nc, ph, pw, cr, cc, roll, tilt) -> ModularBeam:
    """The scan with a rolled/tilted rotation axis as per-view vectors: the lab frame of
    the module docstring moved so the axis passes through the origin, turned so the axis
    is z, then turned by ψ about z."""
    cr_, sr_ = math.cos(roll), math.sin(roll)
    ct_, st_ = math.cos(tilt), math.sin(tilt)
    axis = np.array([[1, 0, 0], [0, ct_, -st_], [0, st_, ct_]]) @ \
        np.array([[cr_, 0, sr_], [0, 1, 0], [-sr_, 0, cr_]]) @ np.array([0.0, 0.0, 1.0])
    q = axis_rotation(axis)
    col, row = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
    source = np.array([oox, -sod, 0.0])
    # the grid centre: the central ray's foot plus the offset to the middle pixel
    centre = (np.array([oox, sdd - sod, 0.0]) + (0.5 * (nc - 1) - cc) * pw * col
              + (0.5 * (nr - 1) - cr) * ph * row)
    c, s = np.cos(psi), np.sin(psi)
    rz = np.zeros((psi.size, 3, 3))
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c, -s, s, c, 1.0
    m = rz @ q
    det = Detector(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw)
    return ModularBeam(detector=det, source_positions=m @ source, module_centers=m @ centre,
                       row_vectors=m @ row, col_vectors=m @ col)


# --------------------------------------------------------------------------- writer
def write_scan(folder, geometry, counts, *, name: str = "scan", white_level: float = 60000.0,
               angles_file: str = "ctdata") -> str:
    """Write a scan in the Nikon layout this module reads: ``<name>.xtekct``, the angle
    file and one uint16 TIFF per view (``<name>_0001.tif`` …), e.g. to hand simulated
    data to vendor software or to test a pipeline on files. The inverse of
    :func:`open_scan` for a circular flat-detector :class:`~leap.geometry.ConeBeam`
    (tau and detector offsets included; no tilt).

    ``counts``: (views, rows, cols) grey values in leap's detector order (an array, or
    anything indexable by view such as a :class:`~leap.io.lazy.Source`; one view is held
    at a time), rounded and clipped to uint16 and flipped to Nikon's image order;
    ``white_level``: the grey value of air (``WhiteLevel``); ``angles_file``: 'ctdata'
    (``_ctdata.txt``), 'ang' (``<name>.ang``) or None (nominal ``AngularStep`` only).
    Returns the ``.xtekct`` path.
    """
    g = geometry
    if not isinstance(g, ConeBeam) or g.detector.curved or g.tilt != 0.0 or g.is_helical:
        raise ValueError("write_scan writes circular flat-detector ConeBeam scans without "
                         f"tilt, got {type(g).__name__}")
    d = g.detector
    shape = (g.num_angles, d.num_rows, d.num_cols)
    if tuple(counts.shape) != shape:
        raise ValueError(f"counts must be (views, rows, cols) = {shape}, got "
                         f"{tuple(counts.shape)}")
    if angles_file not in ("ctdata", "ang", None):
        raise ValueError(f"angles_file must be 'ctdata', 'ang' or None, got {angles_file!r}")
    import tifffile
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    # Angles from the first one, which InitialAngle carries (so nominal steps read alike)
    psi = np.degrees(np.asarray(g.angles, dtype=np.float64)) + 180.0
    initial, a = float(psi[0]), psi - psi[0]
    step = float(np.mean(np.diff(a))) if a.size > 1 else 360.0
    keys = {"Name": name, "InputSeparator": "_", "InputDigits": 4, "InputFolderName": "",
            "Projections": shape[0], "InitialAngle": initial, "AngularStep": step,
            "DetectorPixelsX": d.num_cols, "DetectorPixelsY": d.num_rows,
            "DetectorPixelSizeX": d.pixel_width, "DetectorPixelSizeY": d.pixel_height,
            "DetectorOffsetX": (d.center_col - 0.5 * (d.num_cols - 1)) * d.pixel_width,
            "DetectorOffsetY": -(d.center_row - 0.5 * (d.num_rows - 1)) * d.pixel_height,
            "SrcToObject": g.sod, "SrcToDetector": g.sdd, "ObjectOffsetX": -g.tau,
            "ObjectRoll": 0.0, "ObjectTilt": 0.0, "WhiteLevel": white_level, "Units": "mm"}
    xtekct = os.path.join(folder, f"{name}.xtekct")
    with open(xtekct, "w") as fh:
        fh.write("[XTekCT]\n" + "".join(f"{k}={v!r}\n" if isinstance(v, float) else f"{k}={v}\n"
                                        for k, v in keys.items()))
        fh.write(f"[CTPro]\nAngleFile_Use={angles_file is not None}\n")
    if angles_file == "ctdata":
        with open(os.path.join(folder, "_ctdata.txt"), "w") as fh:
            fh.write(f"Projections\tFrames\tExposure(ms)\n{shape[0]}\t1\t0\n"
                     "Projection\tAngle(deg)\tTime(s)\n")
            fh.writelines(f"{i + 1}\t{x:.6f}\t0\n" for i, x in enumerate(a))
    elif angles_file == "ang":
        with open(os.path.join(folder, f"{name}.ang"), "w") as fh:
            fh.write("Projection\tAngle\n")
            fh.writelines(f"{i + 1}\t{x:.6f}\n" for i, x in enumerate(a))
    for i in range(shape[0]):
        view = np.asarray(counts[i], dtype=np.float64)[::-1, ::-1]     # Nikon's image order
        img = np.clip(np.rint(view), 0, 65535).astype(np.uint16)
        tifffile.imwrite(os.path.join(folder, f"{name}_{i + 1:04d}.tif"), img)
    return xtekct
