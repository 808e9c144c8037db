"""Varian kV cone-beam CT of radiotherapy machines read into a :class:`Scan`: TrueBeam and
Halcyon (``Scan.xml`` + ``Acquisitions/*/Proj_*.xim``, air scans under
``Calibrations/AIR-*``) and OBI (``ProjectionInfo.xml`` + ``*.hnd``).

Where the conventions come from
-------------------------------
File layouts: ``leap.io.scanners._xim`` and ``._hnd`` (RTK ``rtkXimImageIO.cxx``,
``rtkHndImageIO.cxx``; pylinac's XIM reader as in TIGRE
``Python/tigre/utilities/io/varian/xim.py``). Geometry: RTK
``rtkVarianProBeamGeometryReader.cxx`` (XIM) and ``rtkVarianObiGeometryReader.cxx``
(HND), with RTK's frame (IEC 61217 fixed frame; ``documentation/docs/Geometry.md``):
at gantry angle g the source is at SAD·(sin g, 0, cos g), the detector's columns run
along (cos g, 0, −sin g) and its rows along +y, the rotation axis; the pixel (i, j) of an
image of N × M pixels sits at ((i − (N−1)/2)·pw + offsetX, (j − (M−1)/2)·ph + offsetY) on
the detector. leap's frame is RTK's turned (x, y, z)_leap = (x, −z, y)_RTK (a rotation,
no reflection), which makes g leap's ψ, RTK's image columns leap's columns and RTK's
image rows leap's rows, without a flip::

    ===================================  ===============================================
    Varian key (unit)                    leap (``convention='rtk'``, the default)
    ===================================  ===============================================
    ``SAD``, ``SID`` (Scan.xml, mm);     sod, sdd
    ``CalibratedSAD``, ``CalibratedSID``
    (ProjectionInfo.xml, mm)
    ``ImagerSizeX/Y``, ``ImagerResX/Y``  num_cols, num_rows, pixel_width/height (checked
    (Scan.xml; mm); XIM width, height    against each image's size; HND:
                                         ``IDUResolutionX/Y``, mm)
    XIM ``KVSourceRtn`` K (deg)          ψ = radians(180 − K)          (RTK ProBeam)
    HND ``CTProjectionAngle`` a (deg)    ψ = radians(a)                (RTK OBI)
    XIM ``KVDetectorLat`` (cm),          center_col = (N−1)/2 − 10·Lat/pw,
    ``KVDetectorLng`` (cm), per frame    center_row = (M−1)/2 − 10·Lng/ph (per view:
                                         a ModularBeam when they vary)
    ``ImagerLat`` (Scan.xml, mm)         the lateral offset of frames without
                                         ``KVDetectorLat``
    ``CalibratedDetectorOffsetX/Y``,     center_col = (N−1)/2 − offsetX/pw with offsetX =
    ``DetectorPosLat`` (mm), ``FanType``  OffsetX (+ DetectorPosLat when HalfFan),
    (ProjectionInfo.xml)                 center_row = (M−1)/2 − OffsetY/ph
    ``Fan`` / ``FanType`` Half…          an offset-detector scan: FBP's half-fan weights
                                         (``FBPOptions(offset_scan=True)``)
    ``KVNormChamber`` (XIM),             each frame (projection or air) divided by its
    ``CTNormChamber`` (HND)              dose reading (TIGRE ``air_normalize``)
    air scans ``Calibrations/AIR-*/**/`` flats (averaged): ``FilterBowtie*.xim`` when
    ``Filter*.xim``                      Scan.xml names a ``Bowtie``, else ``Filter*``
    ===================================  ===============================================

Where the public readers disagree
---------------------------------
TIGRE (``Python/tigre/utilities/io/varian/varian_io.py``) and RTK read the same XIM
files differently: TIGRE flips the image columns (``np.fliplr``) and takes the angle
``GantryRtn + 90`` (the kV source sits 90° from the gantry), in its own frame (source at
DSO·(cos α, sin α, 0), image row 0 at the top); RTK flips nothing and takes
``180 − KVSourceRtn``. They are commonly described as mirror images of each other. Put
into leap's frame (this module's test ``test_tigre_and_rtk_readings_differ_by_a_rotation``
checks it on the pixel positions), TIGRE's reading is ψ = radians(GantryRtn + 180) with
both the columns and the rows reversed, and with GantryRtn = KVSourceRtn − 90 it differs
from RTK's by the proper rotation (x, y, z) → (y, x, −z): the two reconstructions are
the same object turned upside down about a horizontal axis, not mirror images —
unless one of them is displayed with its slice order reversed. This reader follows RTK
(it takes the kV source's own angle and each frame's detector offsets, where TIGRE
takes GantryRtn + 90 and Scan.xml's one ``ImagerLat``);
``convention='tigre'`` gives TIGRE's angle and image orientation (the offsets applied to
the same physical pixels). TIGRE's MATLAB loader (``MATLAB/Utilities/IO/VarianCBCT``:
``ProjLoader.m`` takes ``KVSourceRtn`` and turns the images with ``rot90(·, −1)``,
``GeometryFromXML.m`` offsets the detector by +ImagerLat) differs from its Python one
again; ``'tigre'`` is the Python loader's reading. TIGRE has no HND reader; OBI scans
are read as RTK reads them.
TIGRE interpolates the air scans of several gantry angles to each view's angle; this
reader averages them.

Not determined by a public source, and this reader's reading of it: the air-scan
folders (``Air-*`` in TIGRE, ``AIR-*`` on disk as usually described) are matched
ignoring case; OBI air scans have no
documented place: they are taken from ``Calibrations/AIR-*`` as TrueBeam's, or
``air=``; a ``Bowtie`` element that is empty or says ``None`` counts as no bowtie; the
frames of the gantry's acceleration and deceleration are dropped as TIGRE drops them
(``min_angle_step``); HND's own detector positions (``IDUPosLat``, ``IDUPosLng``) are
kept in ``metadata`` but not applied, as RTK takes the offsets from the XML.
"""
from __future__ import annotations

import glob
import math
import os
import warnings
import xml.etree.ElementTree as ET

import numpy as np

from ...geometry import ConeBeam, Detector, ModularBeam
from ...geometry.conventions import default_volume, volume_from_leap
from ...system import CTSystem, FBPOptions
from ...reconstruction.weights import angular_range_degrees
from ..lazy import PerView
from ._common import ScanFormatError, check_monotonic, number, warn_no_white_level
from ._hnd import read_hnd, write_hnd
from ._xim import read_xim, write_xim
from .scan import Scan

SCAN_XML = "Scan.xml"
OBI_XML = "ProjectionInfo.xml"
CONVENTIONS = ("rtk", "tigre")


# ------------------------------------------------------------------ XML and files
def read_xml_values(path, section: str | None = None) -> dict:
    """Every element's text by its local name (namespaces dropped; the first occurrence
    wins, those under the element ``section`` first). Raises ScanFormatError naming the
    file when it is not XML."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise ScanFormatError(path, f"cannot be read as XML ({e})") from None
    out = {"root": root.tag.split("}")[-1], **{k: v for k, v in root.attrib.items()}}
    scopes = [e for e in root.iter() if e.tag.split("}")[-1] == section] if section else []
    for scope in scopes + [root]:
        for e in scope.iter():
            name = e.tag.split("}")[-1]
            if name not in out and e.text is not None and e.text.strip():
                out[name] = e.text.strip()
    return out


def _folder(path) -> str:
    p = os.path.abspath(os.fspath(path))
    return p if os.path.isdir(p) else os.path.dirname(p)


def _projection_files(folder) -> list:
    acq = os.path.join(folder, "Acquisitions")
    files = sorted(glob.glob(os.path.join(glob.escape(acq), "*", "Proj_*.xim")))
    if not files:
        raise FileNotFoundError(f"{folder}: no projections: {acq}/*/Proj_*.xim matches nothing")
    return files


def _air_files(folder, bowtie: bool, ext: str = ".xim") -> list:
    """The air scans under ``Calibrations/AIR-*`` (any case): XIM: ``FilterBowtie*.xim``
    for a bowtie scan, else ``Filter*.xim`` without 'Bowtie' in the name; HND: every
    ``.hnd`` file there."""
    cal = os.path.join(folder, "Calibrations")
    if not os.path.isdir(cal):
        return []
    out = []
    for d in sorted(os.listdir(cal)):
        if d.lower().startswith("air-") and os.path.isdir(os.path.join(cal, d)):
            for f in sorted(glob.glob(os.path.join(glob.escape(os.path.join(cal, d)), "**",
                                                   "*" + ext), recursive=True)):
                name = os.path.basename(f).lower()
                if ext == ".hnd" or (name.startswith("filterbowtie") if bowtie else
                                     (name.startswith("filter") and "bowtie" not in name)):
                    out.append(f)
    return out


def _given_files(spec, folder) -> list | None:
    """``air=``: None (the default place), False (none), a path, a glob or a list."""
    if spec is None:
        return None
    if spec is False:
        return []
    if isinstance(spec, (list, tuple)):
        return [os.path.join(folder, os.fspath(p)) for p in spec]
    s = os.path.join(folder, os.fspath(spec))
    files = sorted(glob.glob(s)) if any(c in s for c in "*?[") else [s]
    missing = [f for f in files if not os.path.isfile(f)]
    if not files or missing:
        raise FileNotFoundError(f"no air scan at {s!r} (air=)")
    return files


def detect(path) -> bool:
    """A folder (or its ``Scan.xml``) with ``Acquisitions/*/Proj_*.xim``, or a folder (or
    its ``ProjectionInfo.xml``) with ``.hnd`` files."""
    p = os.fspath(path)
    if os.path.isfile(p):
        name = os.path.basename(p)
        if name not in (SCAN_XML, OBI_XML):
            return False
    folder = _folder(p)
    if os.path.isfile(os.path.join(folder, SCAN_XML)):
        return bool(glob.glob(os.path.join(glob.escape(folder), "Acquisitions", "*",
                                           "Proj_*.xim")))
    if os.path.isfile(os.path.join(folder, OBI_XML)):
        return bool(_hnd_files(folder))
    return False


def _hnd_files(folder) -> list:
    """The ``.hnd`` files in ``folder`` and below, except under ``Calibrations``."""
    files = glob.glob(os.path.join(glob.escape(folder), "**", "*.hnd"), recursive=True)
    return sorted(f for f in files
                  if "Calibrations" not in os.path.relpath(f, folder).split(os.sep))


# ------------------------------------------------------------------- projections
class VarianFrames(PerView):
    """XIM or HND frames as float32 (views, rows, cols), one file per view, decoded only
    when indexed: each image (as stored, row 0 first) reversed along the rows and/or
    columns the convention asks and multiplied by its view's ``scale`` (1/dose reading,
    or 1). A file that cannot be decoded, or whose size is not the scan's, raises
    ScanFormatError naming it."""

    def __init__(self, files, kind: str, num_rows: int, num_cols: int, scale,
                 flip_rows: bool = False, flip_cols: bool = False):
        self.files, self.kind = [os.fspath(f) for f in files], kind
        self.scale = np.asarray(scale, dtype=np.float64)
        self.flips = (bool(flip_rows), bool(flip_cols))
        self.shape = (len(self.files), int(num_rows), int(num_cols))
        self.dtype = np.dtype(np.float32)
        self.chunks = (1,) + self.shape[1:]

    def _view(self, k):
        path = self.files[k]
        image = read_xim(path)[1] if self.kind == "xim" else read_hnd(path)[1]
        if image is None or image.shape != self.shape[1:]:
            got = None if image is None else image.shape
            raise ScanFormatError(path, f"the image is {got} (rows, cols), the scan's "
                                  f"{self.shape[1:]}")
        image = image[::-1 if self.flips[0] else 1, ::-1 if self.flips[1] else 1]
        return (image * self.scale[k]).astype(np.float32)


def _dose(path, value, key, normalise: bool) -> float:
    """1/dose reading of a frame (1 when not normalising)."""
    if not normalise:
        return 1.0
    if value is None:
        raise ScanFormatError(path, f"the property {key!r} (the dose reading each frame is "
                              "divided by) is missing; open with dose_normalise=False to "
                              "skip the normalisation")
    v = float(np.ravel(value)[0])
    if not (math.isfinite(v) and v > 0):
        raise ScanFormatError(path, f"{key} = {v!r} must be a positive number")
    return 1.0 / v


# ----------------------------------------------------------------------- geometry
def _geometry(path, psi, sod, sdd, nr, nc, ph, pw, lat, lng, detector_offsets):
    """``(geometry, mean)``: a ConeBeam when the per-view offsets (mm, leap's column and
    row directions) agree, else (``detector_offsets='per-view'``) a ModularBeam; 'mean'
    takes their mean. ``mean`` is the ConeBeam of the mean offsets (the volume's model:
    LEAP's default volume for a modular half-fan scan would span only the detector's
    width, not the farther side's radius)."""
    if detector_offsets not in ("per-view", "mean"):
        raise ValueError(f"detector_offsets must be 'per-view' or 'mean', got "
                         f"{detector_offsets!r}")
    if not sdd > sod > 0:
        raise ScanFormatError(path, f"the source-detector distance ({sdd:g} mm) must exceed "
                              f"the source-isocentre distance ({sod:g} mm) > 0")
    det = Detector(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw,
                   center_row=0.5 * (nr - 1) - float(np.mean(lng)) / ph,
                   center_col=0.5 * (nc - 1) - float(np.mean(lat)) / pw)
    mean = ConeBeam(detector=det, angles=psi, sod=sod, sdd=sdd)
    if (np.ptp(lat) <= 1e-6 and np.ptp(lng) <= 1e-6) or detector_offsets == "mean":
        return mean, mean
    theta = np.stack([np.sin(psi), -np.cos(psi), np.zeros_like(psi)], axis=1)
    perp = np.stack([np.cos(psi), np.sin(psi), np.zeros_like(psi)], axis=1)
    z = np.broadcast_to([0.0, 0.0, 1.0], theta.shape)
    centres = -(sdd - sod) * theta + np.asarray(lat)[:, None] * perp + \
        np.asarray(lng)[:, None] * z
    det = Detector(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw)
    return ModularBeam(detector=det, source_positions=sod * theta, module_centers=centres,
                       row_vectors=z, col_vectors=perp), mean


def _system(geometry, mean, offset_scan: bool, path="") -> CTSystem:
    """The system with LEAP's default volume of the mean-offset ConeBeam ``mean``; warns
    when a half-fan scan covers less than the turn its weights need."""
    span = angular_range_degrees(mean.angles) if mean.angles.size > 1 else 360.0
    if offset_scan and mean.angles.size > 1:
        step = abs(math.degrees(float(mean.angles[-1] - mean.angles[0]))) / (mean.angles.size - 1)
        if span < 360.0 - step:
            warnings.warn(f"{path}: a half-fan (offset-detector) scan covering {span:.1f}°: "
                          "FBP's half-fan weights need a full turn and are not applied "
                          "(leap.reconstruction.weights.offset_scan_layout); the "
                          "reconstruction will show the offset detector's seam", stacklevel=3)
    v = default_volume(mean, 1.0, angular_range=span, offset_scan=offset_scan)
    return CTSystem(geometry=geometry, volume=volume_from_leap(mean, **v),
                    fbp_options=FBPOptions(offset_scan=offset_scan))


def _half_fan(option, fan_text, nc, lat, pw) -> bool:
    """The offset-scan flag: the option, else the XML's fan type ('Half…'/'Full…'), else
    whether the axis's column lies outside the middle half of the detector."""
    if option is not None:
        return bool(option)
    if fan_text:
        t = str(fan_text).lower()
        if "half" in t:
            return True
        if "full" in t:
            return False
    return abs(float(np.mean(lat)) / pw) > 0.25 * nc


# ------------------------------------------------------------------------- readers
def open_scan(path, *, convention: str = "rtk", air=None, dose_normalise: bool = True,
              offset_scan=None, detector_offsets: str = "per-view", min_angle_step=None) -> Scan:
    """Read a Varian TrueBeam/Halcyon (XIM) or OBI (HND) cone-beam scan.

    Parameters
    ----------
    path : the scan's folder (holding ``Scan.xml`` or ``ProjectionInfo.xml``) or that file.
    convention : 'rtk' (default) or 'tigre': whose reading of XIM files to follow (see
        the module docstring; they differ by a turn of the object). OBI scans: 'rtk'.
    air : None (the air scans under ``Calibrations/AIR-*``, TrueBeam's names or, OBI,
        any ``.hnd`` there), False
        (none), or a path, glob or list of files (relative to the folder), XIM or HND
        like the projections.
    dose_normalise : divide each frame by its dose reading (``KVNormChamber`` /
        ``CTNormChamber``), projections and air scans alike.
    offset_scan : None (from the XML's fan type, else the detector's offset), True or
        False: FBP's half-fan weighting (``system.fbp_options.offset_scan``). A half-fan
        scan covering less than a turn warns: leap's FBP weights only full turns.
    detector_offsets : 'per-view' (a ModularBeam when the frames' detector offsets
        differ) or 'mean' (one ConeBeam with their mean).
    min_angle_step : frames that advance by no more than this many degrees beyond the
        last kept frame are dropped (the gantry's acceleration and deceleration); None:
        TIGRE's ``0.9·Velocity/FrameRate`` of Scan.xml (0 without them, and for OBI:
        repeated angles dropped); False: every frame kept (the angles must then be
        strictly monotonic).

    Returns a Scan: projections float32 (views, rows, cols) in leap's detector order
    (dose-normalised counts), flats the air scans (None without them), ``angles`` the
    frames' ``KVSourceRtn`` (rtk) or ``GantryRtn`` (tigre) or ``CTProjectionAngle`` (OBI)
    in degrees, ``metadata`` the XML's values plus per-view arrays ``'KVSourceRtn'``,
    ``'GantryRtn'``, ``'detector_lat_mm'``, ``'detector_lng_mm'`` (leap's column and row
    directions), ``'dose'`` (the frames' dose readings) and the list
    ``'dropped_frames'``.
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"no Varian scan at {p!r}")
    folder = _folder(p)
    if os.path.isfile(os.path.join(folder, SCAN_XML)):
        return _open_truebeam(folder, convention, air, dose_normalise, offset_scan,
                              detector_offsets, min_angle_step)
    if os.path.isfile(os.path.join(folder, OBI_XML)):
        if convention != "rtk":
            raise ValueError("OBI (.hnd) scans are read as RTK reads them (TIGRE has no HND "
                             f"reader); convention={convention!r} is not available")
        return _open_obi(folder, air, dose_normalise, offset_scan, detector_offsets,
                         min_angle_step)
    raise ScanFormatError(folder, f"holds neither {SCAN_XML} nor {OBI_XML}")


def _advancing(angles, min_step) -> np.ndarray:
    """Which frames to keep: those more than ``min_step`` degrees from the last kept one
    (TIGRE's test; all kept when ``min_step`` is False). A frame far behind is kept, so
    that the monotonic check names it rather than it being dropped unseen."""
    keep = np.ones(angles.size, dtype=bool)
    if min_step is False or angles.size < 2:
        return keep
    step = float(min_step)
    if not (math.isfinite(step) and step >= 0):
        raise ValueError(f"min_angle_step must be a number of degrees >= 0, None or False, "
                         f"got {min_step!r}")
    last = angles[0]
    for k in range(1, angles.size):
        if abs(angles[k] - last) > step:
            last = angles[k]
        else:
            keep[k] = False
    return keep


def _open_truebeam(folder, convention, air, normalise, offset_scan, detector_offsets,
                   min_angle_step):
    xml = os.path.join(folder, SCAN_XML)
    meta = read_xml_values(xml, "Acquisitions")
    files = _projection_files(folder)
    frames, kept = [], []
    for f in files:
        head, _, props = read_xim(f, pixels=False)
        if head["width"] * head["height"] == 0:       # RTK skips empty frames too
            continue
        frames.append((head, props))
        kept.append(f)
    if not kept:
        raise ScanFormatError(xml, "every Acquisitions/*/Proj_*.xim frame is empty (0 pixels)")
    nc, nr = frames[0][0]["width"], frames[0][0]["height"]
    for f, (head, _) in zip(kept, frames):
        if (head["width"], head["height"]) != (nc, nr):
            raise ScanFormatError(f, f"the image is {head['width']} x {head['height']} pixels, "
                                  f"the first frame {nc} x {nr}")
    for key, n in (("ImagerSizeX", nc), ("ImagerSizeY", nr)):
        if key in meta and number(xml, meta, key) != n:
            raise ScanFormatError(xml, f"{key} = {meta[key]} but the XIM frames have {n}")
    p0 = frames[0][1]
    pw = (number(xml, meta, "ImagerResX", positive=True) if "ImagerResX" in meta
          else 10.0 * number(kept[0], p0, "PixelWidth", positive=True))
    ph = (number(xml, meta, "ImagerResY", positive=True) if "ImagerResY" in meta
          else 10.0 * number(kept[0], p0, "PixelHeight", positive=True))
    sod = number(xml, meta, "SAD", positive=True)
    sdd = number(xml, meta, "SID", positive=True)
    lat_default = number(xml, meta, "ImagerLat", default=0.0)

    def prop(f, props, key, required):
        return number(f, props, key) if required else number(f, props, key, default=np.nan)

    pairs = list(zip(kept, [pr for _, pr in frames]))
    source = np.array([prop(f, pr, "KVSourceRtn", convention == "rtk") for f, pr in pairs])
    gantry = np.array([prop(f, pr, "GantryRtn", convention == "tigre") for f, pr in pairs])
    key = "KVSourceRtn" if convention == "rtk" else "GantryRtn"
    unwrapped = np.degrees(np.unwrap(np.radians(source if convention == "rtk" else gantry)))
    if min_angle_step is None:           # TIGRE's acceleration/deceleration threshold
        min_angle_step = (0.9 * number(xml, meta, "Velocity") / number(xml, meta, "FrameRate",
                                                                      positive=True)
                          if "Velocity" in meta and "FrameRate" in meta else 0.0)
    take = _advancing(unwrapped, min_angle_step)
    dropped = [kept[k] for k in np.flatnonzero(~take)]
    pairs = [pairs[k] for k in np.flatnonzero(take)]
    kept = [f for f, _ in pairs]
    source, gantry = source[take], gantry[take]
    measured = check_monotonic(xml, unwrapped[take], f"{key} angles of the frames")
    lat = np.array([10.0 * number(f, pr, "KVDetectorLat", default=lat_default / 10.0)
                    for f, pr in pairs])
    lng = np.array([10.0 * number(f, pr, "KVDetectorLng", default=0.0) for f, pr in pairs])
    scale = [_dose(f, pr.get("KVNormChamber"), "KVNormChamber", normalise) for f, pr in pairs]
    if convention == "rtk":
        psi = np.radians(180.0 - measured)
        flips = (False, False)
    else:
        psi = np.radians(measured + 180.0)
        flips, lat, lng = (True, True), -lat, -lng
    geometry, mean = _geometry(xml, psi, sod, sdd, nr, nc, ph, pw, lat, lng,
                               detector_offsets)
    half = _half_fan(offset_scan, meta.get("Fan"), nc, lat, pw)
    projections = VarianFrames(kept, "xim", nr, nc, scale, *flips)

    bowtie = str(meta.get("Bowtie", "")).strip().lower() not in ("", "none")
    given = _given_files(air, folder)
    air_files = _air_files(folder, bowtie) if given is None else given
    flats = None
    if air_files:
        air_scale = []
        for f in air_files:
            head, _, props = read_xim(f, pixels=False) if f.lower().endswith(".xim") else \
                (None, None, None)
            if head is None:
                raise ScanFormatError(f, "air scans of a TrueBeam scan must be XIM files")
            if (head["width"], head["height"]) != (nc, nr):
                raise ScanFormatError(f, f"the air scan is {head['width']} x {head['height']} "
                                      f"pixels, the projections {nc} x {nr}")
            air_scale.append(_dose(f, props.get("KVNormChamber"), "KVNormChamber", normalise))
        flats = VarianFrames(air_files, "xim", nr, nc, air_scale, *flips)
    else:
        warn_no_white_level(xml, "no air scans under Calibrations/AIR-* and no air=",
                            "air= (the air-scan files)", stacklevel=4)
    dose = np.array([float(np.ravel(pr.get("KVNormChamber", np.nan))[0]) for _, pr in pairs])
    metadata = dict(meta, KVSourceRtn=source, GantryRtn=gantry, detector_lat_mm=lat,
                    detector_lng_mm=lng, dose=dose, air_files=air_files,
                    convention=convention, offset_scan=half, dropped_frames=dropped,
                    min_angle_step=float(min_angle_step) if min_angle_step is not False
                    else None)
    return Scan(system=_system(geometry, mean, half, xml), projections=projections, flats=flats,
                angles=measured, metadata=metadata, format="varian", path=xml,
                angle_unit="degree")


def _open_obi(folder, air, normalise, offset_scan, detector_offsets, min_angle_step):
    xml = os.path.join(folder, OBI_XML)
    meta = read_xml_values(xml)
    files = _hnd_files(folder)
    if not files:
        raise FileNotFoundError(f"{xml}: no .hnd projections in {folder} or below")
    heads = [read_hnd(f, pixels=False)[0] for f in files]
    nc, nr = heads[0]["SizeX"], heads[0]["SizeY"]
    for f, h in zip(files, heads):
        if (h["SizeX"], h["SizeY"]) != (nc, nr) or nc * nr == 0:
            raise ScanFormatError(f, f"the image is {h['SizeX']} x {h['SizeY']} pixels, the "
                                  f"first frame {nc} x {nr}")
    pw = number(files[0], heads[0], "IDUResolutionX", positive=True)
    ph = number(files[0], heads[0], "IDUResolutionY", positive=True)
    sod = number(xml, meta, "CalibratedSAD", positive=True)
    sdd = number(xml, meta, "CalibratedSID", positive=True)
    fan = str(meta.get("FanType", ""))
    off_x = number(xml, meta, "CalibratedDetectorOffsetX")
    if fan.lower() == "halffan":
        off_x += number(xml, meta, "DetectorPosLat")
    off_y = number(xml, meta, "CalibratedDetectorOffsetY")
    unwrapped = np.degrees(np.unwrap(np.radians([h["CTProjectionAngle"] for h in heads])))
    take = _advancing(unwrapped, 0.0 if min_angle_step is None else min_angle_step)
    dropped = [files[k] for k in np.flatnonzero(~take)]
    files = [files[k] for k in np.flatnonzero(take)]
    heads = [heads[k] for k in np.flatnonzero(take)]
    measured = check_monotonic(xml, unwrapped[take],
                               "CTProjectionAngle angles of the .hnd frames")
    n = len(files)
    lat, lng = np.full(n, off_x), np.full(n, off_y)
    geometry, mean = _geometry(xml, np.radians(measured), sod, sdd, nr, nc, ph, pw, lat,
                               lng, detector_offsets)
    half = _half_fan(offset_scan, fan, nc, lat, pw)
    scale = [_dose(f, h["CTNormChamber"], "CTNormChamber", normalise)
             for f, h in zip(files, heads)]
    projections = VarianFrames(files, "hnd", nr, nc, scale)
    given = _given_files(air, folder)
    given = _air_files(folder, False, ".hnd") if given is None else given
    flats = None
    if given:
        air_scale = []
        for f in given:
            h = read_hnd(f, pixels=False)[0]
            if (h["SizeX"], h["SizeY"]) != (nc, nr):
                raise ScanFormatError(f, f"the air scan is {h['SizeX']} x {h['SizeY']} pixels, "
                                      f"the projections {nc} x {nr}")
            air_scale.append(_dose(f, h["CTNormChamber"], "CTNormChamber", normalise))
        flats = VarianFrames(given, "hnd", nr, nc, air_scale)
    else:
        warn_no_white_level(xml, "no air scans under Calibrations/AIR-* and no air=",
                            "air= (the air-scan files)", stacklevel=4)
    per_view = {k: np.array([h[k] for h in heads]) for k in
                ("GantryRtn", "IDUPosLat", "IDUPosLng", "IDUPosVrt", "CTProjectionAngle",
                 "CTNormChamber")}
    metadata = dict(meta, **per_view, detector_lat_mm=lat, detector_lng_mm=lng,
                    dose=per_view["CTNormChamber"], air_files=given, convention="rtk",
                    offset_scan=half, dropped_frames=dropped)
    return Scan(system=_system(geometry, mean, half, xml), projections=projections, flats=flats,
                angles=measured, metadata=metadata, format="varian", path=xml,
                angle_unit="degree")


# -------------------------------------------------------------------------- writer
def write_scan(folder, geometry, counts, *, layout: str = "truebeam", compressed=True,
               dose=None, air=None, air_dose: float = 1.0, detector_offsets=None,
               half_fan=None, bowtie: bool = False) -> str:
    """Write a simulated scan in Varian's layout, as :func:`open_scan` (convention 'rtk')
    reads it back: e.g. to test a pipeline on vendor files.

    ``geometry``: a circular flat-detector :class:`~leap.geometry.ConeBeam` (no tilt, tau
    or helix). ``counts``: (views, rows, cols) counts in leap's detector order (an array
    or anything indexable by view; one view held at a time), rounded to integers.
    ``layout``: 'truebeam' (``Scan.xml``, ``Acquisitions/1/Proj_00000.xim`` …; air scans
    ``Calibrations/AIR-Full-Fan/Current/Filter.xim``, or ``FilterBowtie.xim`` with
    ``bowtie``) or 'obi' (``ProjectionInfo.xml``, ``Proj_00000.hnd`` …, the air scan
    ``Calibrations/AIR-Full-Fan/Air.hnd``). ``compressed``: XIM pixels lookup-table
    coded (True), plain (False) or a per-view sequence of either. ``dose``: per-view dose
    readings (``KVNormChamber``/``CTNormChamber``, default 1); ``air``: a (rows, cols) or
    (k, rows, cols) air scan in counts with reading ``air_dose``. ``detector_offsets``:
    per-view (lat, lng) arrays in mm (leap's column and row directions, TrueBeam only)
    instead of the geometry's centre column and row. ``half_fan``: the fan type written
    (default: the axis outside the detector's middle half). Returns the XML's path.
    """
    g = geometry
    if not isinstance(g, ConeBeam) or g.detector.curved or g.tilt != 0.0 or g.is_helical \
            or g.tau != 0.0 or g.source_shifts is not None:
        raise ValueError("write_scan writes circular flat-detector ConeBeam scans without "
                         f"tilt, tau or helix, got {type(g).__name__}")
    if layout not in ("truebeam", "obi"):
        raise ValueError(f"layout must be 'truebeam' or 'obi', got {layout!r}")
    d = g.detector
    na, nr, nc = g.num_angles, d.num_rows, d.num_cols
    if tuple(counts.shape) != (na, nr, nc):
        raise ValueError(f"counts must be (views, rows, cols) = {(na, nr, nc)}, got "
                         f"{tuple(counts.shape)}")
    dose = np.broadcast_to(np.asarray(1.0 if dose is None else dose, float), (na,))
    modes = np.broadcast_to(np.asarray(compressed, bool), (na,))
    if detector_offsets is None:
        lat = np.full(na, (0.5 * (nc - 1) - d.center_col) * d.pixel_width)
        lng = np.full(na, (0.5 * (nr - 1) - d.center_row) * d.pixel_height)
    else:
        if layout != "truebeam":
            raise ValueError("per-view detector_offsets are written in XIM frames only")
        lat, lng = (np.broadcast_to(np.asarray(x, float), (na,)) for x in detector_offsets)
    if half_fan is None:
        half_fan = abs(float(np.mean(lat))) / d.pixel_width > 0.25 * nc
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    psi_deg = np.degrees(np.asarray(g.angles, dtype=np.float64))
    airs = None if air is None else np.asarray(air, dtype=np.float64).reshape(-1, nr, nc)

    def image(a):
        return np.clip(np.rint(np.asarray(a, dtype=np.float64)), 0, 2 ** 31 - 1).astype(np.int64)

    if layout == "truebeam":
        source = np.mod(180.0 - psi_deg, 360.0)            # RTK: psi = 180 - KVSourceRtn
        gantry = np.mod(source - 90.0, 360.0)               # TIGRE: kV source = gantry + 90
        values = {"SID": g.sdd, "SAD": g.sod, "ImagerSizeX": nc, "ImagerSizeY": nr,
                  "ImagerResX": d.pixel_width, "ImagerResY": d.pixel_height,
                  "ImagerLat": float(np.mean(lat)), "StartAngle": float(gantry[0]),
                  "StopAngle": float(gantry[-1]), "Fan": "Half" if half_fan else "Full",
                  "Velocity": 15.0 * float(np.mean(np.abs(np.diff(psi_deg)))) if na > 1
                  else 6.0, "FrameRate": 15.0}
        if bowtie:
            values["Bowtie"] = "Full"
        acq = "".join(f"    <{k}>{v!r}</{k}>\n" if isinstance(v, float) else
                      f"    <{k}>{v}</{k}>\n" for k, v in values.items())
        xml = os.path.join(folder, SCAN_XML)
        with open(xml, "w") as fh:
            fh.write('<?xml version="1.0" encoding="utf-8"?>\n<Scan xmlns='
                     '"http://baden.varian.com/cr.xsd" Version="2.7.0.0">\n  <Acquisitions>\n'
                     f'{acq}  </Acquisitions>\n</Scan>\n')
        where = os.path.join(folder, "Acquisitions", "1")
        os.makedirs(where, exist_ok=True)
        common = {"PixelWidth": d.pixel_width / 10.0, "PixelHeight": d.pixel_height / 10.0}
        for k in range(na):
            props = dict(common, KVSourceRtn=float(source[k]), GantryRtn=float(gantry[k]),
                         KVDetectorLat=float(lat[k]) / 10.0, KVDetectorLng=float(lng[k]) / 10.0,
                         KVNormChamber=float(dose[k]))
            write_xim(os.path.join(where, f"Proj_{k:05d}.xim"), image(counts[k]), props,
                      compressed=bool(modes[k]))
        if airs is not None:
            cal = os.path.join(folder, "Calibrations", "AIR-Full-Fan", "Current")
            os.makedirs(cal, exist_ok=True)
            name = "FilterBowtie" if bowtie else "Filter"
            for k, a in enumerate(airs):
                write_xim(os.path.join(cal, f"{name}{'' if k == 0 else f'_{k}'}.xim"), image(a),
                          dict(common, KVNormChamber=float(air_dose), GantryRtn=0.0))
        return xml
    values = {"CalibratedSAD": g.sod, "CalibratedSID": g.sdd,
              "CalibratedDetectorOffsetX": 0.0 if half_fan else float(lat[0]),
              "CalibratedDetectorOffsetY": float(lng[0]),
              "DetectorPosLat": float(lat[0]) if half_fan else 0.0,
              "FanType": "HalfFan" if half_fan else "FullFan",
              "DetectorSizeX": nc * d.pixel_width, "DetectorSizeY": nr * d.pixel_height}
    body = "".join(f"  <{k}>{v}</{k}>\n" for k, v in values.items())
    xml = os.path.join(folder, OBI_XML)
    with open(xml, "w") as fh:
        fh.write(f'<?xml version="1.0" encoding="utf-8"?>\n<ProjectionInfo>\n{body}'
                 '</ProjectionInfo>\n')
    head = {"IDUResolutionX": d.pixel_width, "IDUResolutionY": d.pixel_height,
            "SAD": g.sod, "SFD": g.sdd}
    for k in range(na):
        write_hnd(os.path.join(folder, f"Proj_{k:05d}.hnd"), image(counts[k]),
                  dict(head, CTProjectionAngle=float(np.mod(psi_deg[k], 360.0)),
                       GantryRtn=float(np.mod(psi_deg[k] - 90.0, 360.0)),
                       CTNormChamber=float(dose[k])))
    if airs is not None:
        cal = os.path.join(folder, "Calibrations", "AIR-Full-Fan")
        os.makedirs(cal, exist_ok=True)
        for k, a in enumerate(airs):
            write_hnd(os.path.join(cal, "Air.hnd" if k == 0 else f"Air_{k}.hnd"), image(a),
                      dict(head, CTNormChamber=float(air_dose)))
    return xml
