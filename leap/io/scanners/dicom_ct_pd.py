"""DICOM-CT-PD: clinical CT raw projections, one DICOM file per view (the AAPM/TCIA
"LDCT-and-Projection-data" of the Mayo Clinic), read into a :class:`Scan`.

Where the conventions come from
-------------------------------
The tags, their units and meaning follow the DICOM-CT-PD User Manual version 3 (Moen
et al., "Low-dose CT image and projection dataset", Med. Phys. 48(2), 2021, its table of
private tags; Chen et al., "Development and validation of an open data format for CT
projection data", Med. Phys. 42(12) 6964, 2015). The pixel layout, the channel flip and
the angle offset follow the public reader ``helix2fan`` (Wagner et al., its
``read_dicom``), which reconstructs the TCIA data: it reads the pixel array as
(channels, rows), transposes it, reverses the channels and uses ``φ0 + π/2`` as the view
angle. Private values are read by their tag number whatever their private creator, as
the public readers do, and as numbers or as the raw little-endian bytes that files read
with implicit VR give (VR UN: ``'<f'`` floats, ``'<H'`` integers, NUL/space-padded
text).

In the scanner's frame (x, y, z right-handed, z the table axis) the detector's focal
centre of a view is at ``(ρ0·cos φ0, ρ0·sin φ0, z0)``; the X-ray source sits at
``(ρ0 + Δρ)·(cos(φ0 + Δφ), sin(φ0 + Δφ))``, height ``z0 + Δz`` (the flying focal spot);
the detector is a cylinder of radius d0 about the focal centre (or a plane at distance
d0), its element of channel k and row j (1-based, as stored) at the fan angle
``(k − u0)·du/d0`` from the central ray ``−(cos φ0, sin φ0)``, counted
counter-clockwise seen from +z (the direction of increasing φ; flat: at ``(k − u0)·du``
along ``(sin φ0, −cos φ0)``), at height ``z0 + (j − v0)·dv`` (``rows='+z'``, the default)
or ``z0 − (j − v0)·dv`` (``rows='-z'``). leap's columns run the other way (clockwise),
its rows up; leap's frame is the scanner's with z shifted::

    ===========================================  =========================================
    DICOM-CT-PD tag (unit)                       leap
    ===========================================  =========================================
    DetectorFocalCenterAngularPosition           ψ = unwrap(φ0) + π/2 (radians; leap's
    φ0 (7031,1001) (rad, per view)               source at sod·(sin ψ, −cos ψ)); strictly
                                                 monotonic, either direction
    DetectorFocalCenterAxialPosition             helical_pitch = the slope of the least-
    z0 (7031,1002) (mm, per view)                squares line z0 = a + pitch·ψ (residuals
                                                 ≤ 0.01 mm; ``|pitch| < 1e-9``: axial);
                                                 leap z = DICOM z − z_origin_mm with
                                                 z_origin_mm = a + pitch·ψ_mid,
                                                 ψ_mid = (ψ_first + ψ_last)/2 (metadata
                                                 ``"z_origin_mm"``)
    DetectorFocalCenterRadialDistance            sod (the same in every view to 1e-3 mm)
    ρ0 (7031,1003) (mm)
    ConstantRadialDistance d0 (7031,1031) (mm)   sdd
    DetectorShape (7029,100B)                    CYLINDRICAL: a curved detector; FLAT: a
                                                 flat one (others are refused)
    NumberofDetectorColumns (7029,1011),         num_cols (the channels), equal to Rows
    Rows (0028,0010)
    NumberofDetectorRows (7029,1010),            num_rows, equal to Columns
    Columns (0028,0011)
    DetectorElementTransverseSpacing du          pixel_width = d0·tan(du/d0) (curved: du
    (7029,1002) (mm at the detector)             is arc length at radius d0, leap's
                                                 angular pitch is atan(pixel_width/sdd));
                                                 flat: du
    DetectorElementAxialSpacing dv (7029,1006)   pixel_height
    DetectorCentralElement (u0, v0)              center_col = num_cols − u0,
    (7031,1033) (channel, row; 1-based)          center_row = v0 − 1 (rows='-z':
                                                 num_rows − v0)
    SourceAngularPositionShift Δφ (7033,100B),   source_shifts (Δψ = Δφ, Δz, Δρ) per view
    SourceAxialPositionShift Δz (7033,100C),     (None when all are zero)
    SourceRadialDistanceShift Δρ (7033,100D)
    FlyingFocalSpotMode (7033,100E)              metadata ``"flying_focal_spot_mode"``
    WaterAttenuationCoefficient (7041,1001)      metadata ``"water_attenuation_mm"``
    (mm⁻¹)                                       (HU = 1000·(μ − μ_water)/μ_water)
    PixelData, RescaleSlope/Intercept            projections: ``(pixels·slope +
                                                 intercept).T[:, ::-1]`` (line integrals;
                                                 rows='-z': ``[::-1, ::-1]``)
    ===========================================  =========================================

The views are ordered by InstanceNumber (0020,0013) when every file has one, else by
file name; the files are the ``*.dcm`` files (any case) of one directory. The
projections are line integrals already (no flats or darks, ``is_attenuation``), read
lazily one file per view. ``tau`` is 0 (the format has no rotation-axis offset).
A file without RescaleSlope/RescaleIntercept has 1 and 0; the source shifts are 0 where
they are missing and FlyingFocalSpotMode is absent or FFSNONE (else they are required).
Ambiguities: the direction of the channels (reversed) and the angle offset are
helix2fan's, not checked here against a scan of a known object. A source shift Δφ is
taken about the rotation axis, not about the focal centre.

The direction of the detector rows is not settled either: no public reader that
reconstructs a known object from such files settles it. leap reads the
stored rows towards +z (row j + 1 above row j, the direction in which the table position
z0 grows); ``open_scan(path, rows='-z')`` reads them towards −z instead (the rows
reversed and ``center_row = num_rows − v0``), and :func:`write_scan` writes either. On a
helical scan the wrong choice does not give a mirror image: the rows then meet the helix
the wrong way round and the reconstruction loses its sharpness along z (measured in
``tests/io/test_scanner_dicom_ct_pd.py``).
"""
from __future__ import annotations

import math
import os
from typing import NamedTuple

import numpy as np

from ...geometry import ConeBeam, Detector
from ..lazy import PerView
from ._common import ScanFormatError, check_monotonic, default_system
from .scan import Scan
from ._dicom_tags import (BITS, CENTRAL, COLS_COUNT, COLUMNS, CONSTANT_TAGS, CREATORS, D0, DPHI,
                          DRHO, DU, DV, DZ, FFS_MODE, FFS_MODES, INSTANCE, INTERCEPT, PHI,
                          PIXELS, PRIVATE_TAGS, REQUIRED_TAGS, RHO, RHO_TOLERANCE, ROWS,
                          ROWS_COUNT, SHAPE, SHAPES, SHIFT_TAGS, SIGNED, SLOPE, STEPS, WATER,
                          Z0, Z_TOLERANCE, is_missing, metadata_of, private_bytes,
                          tag_value)

FORMAT = "dicom_ct_pd"


def _pydicom():
    try:
        import pydicom
    except ImportError:                              # pragma: no cover - the io extra
        raise ImportError("reading DICOM-CT-PD needs pydicom (pip install pydicom, or the "
                          "'io' extra)") from None
    return pydicom


# ---------------------------------------------------------------------- files
def _dcm_files(folder) -> list:
    """The ``*.dcm`` files (any case) of ``folder``, sorted by name."""
    with os.scandir(folder) as it:
        names = sorted(e.name for e in it if e.name.lower().endswith(".dcm") and e.is_file())
    return [os.path.join(folder, n) for n in names]


def _folder(path) -> str:
    p = os.fspath(path)
    return p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))


def detect(path) -> bool:
    """A directory (or one file of it) whose first ``.dcm`` file (by name) has the tag
    (7031,1001) DetectorFocalCenterAngularPosition (only that file's header is read)."""
    p = os.fspath(path)
    try:
        if os.path.isdir(p):
            files = _dcm_files(p)
            if not files:
                return False
            first = files[0]
        elif os.path.isfile(p) and p.lower().endswith(".dcm"):
            first = p
        else:
            return False
        pydicom = _pydicom()
        ds = pydicom.dcmread(first, stop_before_pixels=True, specific_tags=[PHI.tag])
        return PHI.tag in ds
    except Exception:
        return False


def _read_header(pydicom, path, tags):
    try:
        return pydicom.dcmread(path, stop_before_pixels=True, specific_tags=tags)
    except Exception as e:
        raise ScanFormatError(path, f"cannot be read as a DICOM file ({type(e).__name__}: "
                              f"{e}), so neither can its tags ({PHI} and the others)") from None


class _Views(NamedTuple):
    files: list
    instance: list
    rows: np.ndarray
    cols: np.ndarray
    slope: np.ndarray
    intercept: np.ndarray
    phi: np.ndarray
    z0: np.ndarray
    rho: np.ndarray
    shifts: np.ndarray


def _scan_headers(pydicom, files, first_values, ffs_mode) -> _Views:
    """Every file's per-view values (headers only); checks the constant tags against the
    first file's."""
    wanted = [INSTANCE, ROWS, COLUMNS, SLOPE, INTERCEPT, PHI.tag, Z0.tag, RHO.tag] + \
        [t.tag for t in SHIFT_TAGS] + [t.tag for t in CONSTANT_TAGS]
    n = len(files)
    instance, rows, cols = [], np.zeros(n, np.int64), np.zeros(n, np.int64)
    slope, intercept = np.ones(n), np.zeros(n)
    phi, z0, rho, shifts = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros((n, 3))
    shifts_needed = ffs_mode not in ("", "FFSNONE")
    for i, f in enumerate(files):
        ds = _read_header(pydicom, f, wanted)
        for tag in CONSTANT_TAGS:
            v = tag_value(f, ds, tag)
            ref = first_values[tag]
            same = v == ref if tag.kind == "s" else np.allclose(v, ref, rtol=1e-6, atol=0.0)
            if not same:
                raise ScanFormatError(f, f"the tag {tag} = {v!r} but {ref!r} in "
                                      f"{os.path.basename(files[0])}: leap's cone beam "
                                      "needs one value for the whole scan")
        for j, (elem, name) in enumerate(((ROWS, "Rows (0028,0010)"),
                                          (COLUMNS, "Columns (0028,0011)"))):
            if is_missing(ds, elem):
                raise ScanFormatError(f, f"the tag {name} is missing")
            (rows if j == 0 else cols)[i] = int(ds[elem].value)
        if rows[i] != rows[0] or cols[i] != cols[0]:
            raise ScanFormatError(f, f"Rows, Columns (0028,0010), (0028,0011) = "
                                  f"{rows[i]}, {cols[i]} but {rows[0]}, {cols[0]} in "
                                  f"{os.path.basename(files[0])}: all views must be alike")
        for arr, elem, name in ((slope, SLOPE, "RescaleSlope (0028,1053)"),
                                (intercept, INTERCEPT, "RescaleIntercept (0028,1052)")):
            if not is_missing(ds, elem):
                try:
                    arr[i] = float(ds[elem].value)
                except (TypeError, ValueError):
                    raise ScanFormatError(f, f"the tag {name} = {ds[elem].value!r} is not a "
                                          "number") from None
                if not math.isfinite(arr[i]):
                    raise ScanFormatError(f, f"the tag {name} = {arr[i]} is not finite")
        instance.append(None if is_missing(ds, INSTANCE) else ds[INSTANCE].value)
        phi[i], z0[i], rho[i] = (tag_value(f, ds, t) for t in (PHI, Z0, RHO))
        for k, tag in enumerate(SHIFT_TAGS):
            if shifts_needed and is_missing(ds, tag.tag):
                raise ScanFormatError(f, f"the tag {tag} is missing, but "
                                      f"{FFS_MODE} = {ffs_mode!r} in the first file")
            shifts[i, k] = tag_value(f, ds, tag, default=0.0)
    return _Views(files, instance, rows, cols, slope, intercept, phi, z0, rho, shifts)


def _order(files, instance):
    """The view order: by InstanceNumber where every file has one, else by name."""
    if any(x is None for x in instance):
        return np.arange(len(files))
    try:
        numbers = np.array([int(x) for x in instance])
    except (TypeError, ValueError):
        return np.arange(len(files))
    order = np.argsort(numbers, kind="stable")
    same = np.flatnonzero(np.diff(numbers[order]) == 0)
    if same.size:
        a, b = order[same[0]], order[same[0] + 1]
        raise ScanFormatError(files[b], f"the tag InstanceNumber (0020,0013) = {numbers[b]} "
                              f"is also that of {os.path.basename(files[a])}: the view order "
                              "is ambiguous")
    return order


def _angles(files, phi) -> np.ndarray:
    """ψ = unwrap(φ0) + π/2, strictly monotonic (errors name the offending file)."""
    what = f"angles ψ = unwrap(φ0) + π/2 of the tag {PHI}"
    bad_value = np.flatnonzero(~np.isfinite(phi))
    if bad_value.size:
        raise ScanFormatError(files[bad_value[0]], f"the {what} are not finite")
    psi = np.unwrap(phi) + 0.5 * np.pi
    path = files[0]
    if psi.size > 1:
        d = np.diff(psi)
        if not (np.all(d > 0) or np.all(d < 0)):
            path = files[int(np.argmax(d <= 0) if d[0] > 0 else np.argmax(d >= 0)) + 1]
    return check_monotonic(path, psi, f"{what} (φ0 must step by less than π per view, in "
                                      "one direction)")


def _helix(files, psi, z0):
    """(pitch mm/rad, z_origin mm) of the line z0 = a + pitch·ψ; raises ScanFormatError
    when the table motion is not that line to Z_TOLERANCE."""
    if psi.size < 2:
        return 0.0, float(z0[0])
    pitch, a = np.polyfit(psi, z0, 1)
    residual = z0 - (a + pitch * psi)
    worst = int(np.argmax(np.abs(residual)))
    if abs(residual[worst]) > Z_TOLERANCE:
        raise ScanFormatError(files[worst], f"the tag {Z0}: table motion is not linear in the "
                              f"view angle (z0 = {z0[worst]:.6g} mm is {residual[worst]:.3g} "
                              f"mm from the fitted line, more than {Z_TOLERANCE} mm); leap's "
                              "helical cone beam needs a constant pitch")
    if abs(pitch) < 1e-9:
        pitch = 0.0
    psi_mid = 0.5 * (psi[0] + psi[-1])
    return float(pitch), float(a + pitch * psi_mid)


# ------------------------------------------------------------------ projections
class DicomProjections(PerView):
    """DICOM-CT-PD views as line integrals, float32 (views, rows, cols) in leap's
    detector order, one file per view, read only when indexed: each view is
    ``(pixels·slope + intercept).T[:, ::-1]`` of its file (pixels (channels, rows) as
    stored), its rows reversed too with ``flip_rows`` (``rows='-z'``). A file that cannot
    be read, or whose pixels are not what its header and the scan say, raises
    ScanFormatError naming the file and the tag."""

    def __init__(self, files, num_rows: int, num_cols: int, slopes, intercepts,
                 flip_rows: bool = False):
        self.files = [os.fspath(f) for f in files]
        self.flip_rows = bool(flip_rows)
        self.slopes = np.asarray(slopes, dtype=np.float64)
        self.intercepts = np.asarray(intercepts, dtype=np.float64)
        self.shape = (len(self.files), int(num_rows), int(num_cols))
        self.dtype = np.dtype(np.float32)
        self.chunks = (1,) + self.shape[1:]

    def _pixels(self, k):
        """File ``k``'s pixel array (channels, rows) as stored."""
        pydicom = _pydicom()
        path = self.files[k]
        nv, nu = self.shape[1:]
        try:
            ds = pydicom.dcmread(path, specific_tags=[ROWS, COLUMNS, BITS, SIGNED, PIXELS])
        except Exception as e:
            raise ScanFormatError(path, f"cannot be read as a DICOM file ({type(e).__name__}: "
                                  f"{e}); the tag (7FE0,0010) PixelData is needed") from None
        shape = (ds.get("Rows"), ds.get("Columns"))
        if shape != (nu, nv):
            raise ScanFormatError(path, f"Rows, Columns (0028,0010), (0028,0011) = {shape}, "
                                  f"but the scan was opened with {(nu, nv)}")
        if is_missing(ds, PIXELS):
            raise ScanFormatError(path, "the tag (7FE0,0010) PixelData is missing")
        bits = ds.get("BitsAllocated", 16)
        if bits != 16:
            raise ScanFormatError(path, f"BitsAllocated (0028,0100) = {bits}: DICOM-CT-PD "
                                  "pixels are 16-bit")
        syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
        if syntax is not None and syntax.is_compressed:
            try:
                return np.asarray(ds.pixel_array).reshape(nu, nv)
            except Exception as e:
                raise ScanFormatError(path, f"the compressed tag (7FE0,0010) PixelData cannot "
                                      f"be decoded ({type(e).__name__}: {e})") from None
        data = ds.PixelData
        need = 2 * nu * nv
        if len(data) < need:
            raise ScanFormatError(path, f"the tag (7FE0,0010) PixelData holds {len(data)} bytes, "
                                  f"Rows × Columns × 2 = {need}")
        big = syntax is not None and not syntax.is_little_endian
        dt = np.dtype((">" if big else "<") + ("i2" if ds.get("PixelRepresentation", 0) else "u2"))
        return np.frombuffer(data, dtype=dt, count=nu * nv).reshape(nu, nv)

    def _view(self, k):
        pix = self._pixels(k)
        lines = (pix * self.slopes[k] + self.intercepts[k]).T[:, ::-1]
        if self.flip_rows:                          # rows='-z': stored rows run down
            lines = lines[::-1]
        return np.ascontiguousarray(lines, dtype=np.float32)


# ---------------------------------------------------------------------- reader
def open_scan(path, rows: str = "+z") -> Scan:
    """Read a DICOM-CT-PD scan.

    Parameters
    ----------
    path : the directory of the scan's ``*.dcm`` files (one per view), or one of them.
    rows : '+z' (default) or '-z', the direction in which the stored detector rows
        advance (see the module docstring: no public reader settles it).

    Returns a Scan: a :class:`~leap.geometry.ConeBeam` (curved or flat detector, helical
    or axial, ``source_shifts`` for a flying focal spot) with LEAP's default volume;
    ``projections`` the line integrals (views, rows, cols), lazy (only the headers are
    read here); ``angles`` ψ = unwrap(φ0) + π/2 in radians (from the first view's φ0 as
    stored: a scan is known modulo whole turns); ``metadata`` the first file's
    header (``{keyword or "(gggg,eeee)": value}``, the private tags under their
    DICOM-CT-PD names) with ``"z_origin_mm"`` (leap z = DICOM z − z_origin_mm),
    ``"flying_focal_spot_mode"``, ``"water_attenuation_mm"`` and ``"detector_rows"``
    (``rows``). Raises
    ScanFormatError naming the file and the tag for a file that does not fit.
    """
    flip, row_direction = _rows_flip(rows), rows    # (``rows`` names the pixel rows below)
    pydicom = _pydicom()
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"no DICOM-CT-PD scan at {p!r}")
    folder = _folder(p)
    files = _dcm_files(folder)
    if not files:
        raise ScanFormatError(folder, "holds no .dcm files")
    first = files[0]
    head = _read_header(pydicom, first, None)
    first_values = {tag: tag_value(first, head, tag) for tag in REQUIRED_TAGS}
    shape = first_values[SHAPE].upper()
    if shape not in SHAPES:
        raise ScanFormatError(first, f"the tag {SHAPE} = {first_values[SHAPE]!r}: leap reads "
                              f"{' and '.join(SHAPES)} detectors")
    ffs_mode = tag_value(first, head, FFS_MODE, default="").upper()
    views = _scan_headers(pydicom, files, first_values, ffs_mode)
    order = _order(files, views.instance)
    files = [files[i] for i in order]
    rows, cols = views.rows[order], views.cols[order]
    phi, z0, rho = views.phi[order], views.z0[order], views.rho[order]
    shifts = views.shifts[order]

    nu, nv = int(rows[0]), int(cols[0])          # channels, detector rows
    for tag, count, name in ((COLS_COUNT, nu, "Rows (0028,0010)"),
                             (ROWS_COUNT, nv, "Columns (0028,0011)")):
        if first_values[tag] != count:
            raise ScanFormatError(first, f"the tag {tag} = {int(first_values[tag])} but "
                                  f"{name} = {count}: the pixel array is (channels, rows)")
    spread = np.flatnonzero(np.abs(rho - rho[0]) > RHO_TOLERANCE)
    if spread.size:
        k = spread[0]
        raise ScanFormatError(files[k], f"the tag {RHO} = {rho[k]:.6g} mm but {rho[0]:.6g} mm "
                              f"in {os.path.basename(files[0])}: leap's cone beam needs one "
                              f"source distance (to {RHO_TOLERANCE} mm)")
    sod, sdd = float(np.mean(rho)), float(first_values[D0])
    if not 0 < sod < sdd:
        raise ScanFormatError(first, f"the tags {RHO} = {sod:g} mm and {D0} = {sdd:g} mm: the "
                              "detector must lie beyond the rotation axis (0 < ρ0 < d0)")
    du, dv = float(first_values[DU]), float(first_values[DV])
    for tag, x in ((DU, du), (DV, dv)):
        if not x > 0:
            raise ScanFormatError(first, f"the tag {tag} = {x:g} must be positive")
    curved = shape == "CYLINDRICAL"
    if curved and not du / sdd < 0.5 * math.pi:
        raise ScanFormatError(first, f"the tag {DU} = {du:g} mm is too large for {D0}")
    u0, v0 = first_values[CENTRAL]

    psi = _angles(files, phi)
    pitch, z_origin = _helix(files, psi, z0)
    det = Detector(num_rows=nv, num_cols=nu, pixel_height=dv,
                   pixel_width=sdd * math.tan(du / sdd) if curved else du,
                   center_row=(nv - v0) if flip else (v0 - 1.0), center_col=nu - u0,
                   curved=curved)
    extra = {}
    if np.any(shifts != 0.0):
        extra["source_shifts"] = shifts
    try:
        geometry = ConeBeam(detector=det, angles=psi, sod=sod, sdd=sdd, helical_pitch=pitch,
                            **extra)
    except ValueError as e:
        raise ScanFormatError(first, f"the tags {PHI}, {DPHI}, {DZ}, {DRHO} give no leap "
                              f"cone beam: {e}") from None
    water = tag_value(first, head, WATER, default=float("nan"))
    meta = metadata_of(first, head)
    meta.update(z_origin_mm=z_origin, flying_focal_spot_mode=ffs_mode or None,
                water_attenuation_mm=None if math.isnan(water) else water,
                detector_rows=row_direction)
    projections = DicomProjections(files, nv, nu, views.slope[order], views.intercept[order],
                                   flip_rows=flip)
    return Scan(system=default_system(geometry), projections=projections, angles=psi,
                metadata=meta, format=FORMAT, path=folder, is_attenuation=True,
                angle_unit="radian")


def _rows_flip(rows) -> bool:
    """Whether ``rows`` ('+z' or '-z') reverses the stored detector rows."""
    if rows not in ("+z", "-z"):
        raise ValueError(f"rows must be '+z' or '-z' (the direction the stored detector rows "
                         f"advance), got {rows!r}")
    return rows == "-z"


# ---------------------------------------------------------------------- writer
def write_scan(directory, attenuation, geometry, *, slope=None, intercept: float = 0.0,
               ffs_mode=None, water_mu: float = 0.0192, private_vr: str = "FL",
               z_origin: float = 0.0, first_instance: int = 1, rows: str = "+z") -> str:
    """Write a scan as DICOM-CT-PD files (``000001.dcm`` … in ``directory``, one per view),
    the inverse of :func:`open_scan`: e.g. to hand simulated clinical data to other
    software, or to test a pipeline on files.

    Parameters
    ----------
    attenuation : (views, rows, cols) line integrals in leap's detector order (an array,
        or anything indexable by view such as a :class:`~leap.io.lazy.Source`; one view
        is held at a time), quantised to uint16 with ``RescaleSlope`` ``slope`` (None:
        ``(max − intercept)/65000``, about 1e-4 relative precision of the largest
        value) and ``RescaleIntercept`` ``intercept``; values below ``intercept`` are
        clipped to it.
    geometry : a :class:`~leap.geometry.ConeBeam` (curved or flat detector, circular or
        helical, ``source_shifts`` written as the flying focal spot; no tilt, tau 0).
    ffs_mode : FlyingFocalSpotMode, 'FFSNONE', 'FFSZ', 'FFSXY' or 'FFSXYZ' (None: from
        which of the shifts are non-zero).
    water_mu : WaterAttenuationCoefficient, mm⁻¹.
    private_vr : 'FL': the private tags with their VRs (FL, US, CS), explicit VR
        little endian; 'UN': as raw little-endian bytes in implicit VR little endian (as
        the TCIA files are), the water coefficient as text.
    z_origin : the table position (mm) of leap's z = 0: DICOM z = leap z + z_origin.
    first_instance : the InstanceNumber of the first view.
    rows : '+z' (default) or '-z': the direction the stored rows advance (``open_scan``
        with the same ``rows`` reads the scan back).

    Returns the directory. The private values are float32 (φ0 wrapped to [0, 2π)), so
    angles read back to about 2e-7 rad.
    """
    flip = _rows_flip(rows)
    pydicom = _pydicom()
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import (PYDICOM_IMPLEMENTATION_UID, CTImageStorage,
                             ExplicitVRLittleEndian, ImplicitVRLittleEndian, generate_uid)
    g = geometry
    if not isinstance(g, ConeBeam) or g.tilt != 0.0 or g.tau != 0.0:
        raise ValueError("write_scan writes ConeBeam scans without tilt and with tau = 0 "
                         f"(DICOM-CT-PD has neither), got {type(g).__name__}")
    if private_vr not in ("FL", "UN"):
        raise ValueError(f"private_vr must be 'FL' or 'UN', got {private_vr!r}")
    d = g.detector
    n, nv, nu = g.projection_shape
    if tuple(attenuation.shape) != (n, nv, nu):
        raise ValueError(f"attenuation must be (views, rows, cols) = {(n, nv, nu)}, got "
                         f"{tuple(attenuation.shape)}")
    psi = np.asarray(g.angles, dtype=np.float64)
    if n > 1:
        step = np.diff(psi)
        if not (np.all(step > 0) or np.all(step < 0)) or np.any(np.abs(step) >= math.pi):
            raise ValueError("the angles must be strictly monotonic with steps below π (the "
                             "reader unwraps φ0)")
    shifts = getattr(g, "source_shifts", None)
    shifts = np.zeros((n, 3)) if shifts is None else np.asarray(shifts, dtype=np.float64)
    if ffs_mode is None:
        xy, z = np.any(shifts[:, [0, 2]] != 0), np.any(shifts[:, 1] != 0)
        ffs_mode = "FFS" + ("XY" if xy else "") + ("Z" if z else "") if xy or z else "FFSNONE"
    if ffs_mode not in FFS_MODES:
        raise ValueError(f"ffs_mode must be one of {FFS_MODES}, got {ffs_mode!r}")
    intercept = float(intercept)
    if slope is None:
        top = max(float(np.max(np.asarray(attenuation[i], dtype=np.float64))) for i in range(n))
        slope = (top - intercept) / 65000.0 if top > intercept else 1.0
    slope, intercept = float(f"{float(slope):.10g}"), float(f"{intercept:.10g}")  # as DS
    if not (math.isfinite(slope) and slope > 0):
        raise ValueError(f"slope must be a positive number, got {slope!r}")

    du = d.pixel_width if not d.curved else g.sdd * math.atan(d.pixel_width / g.sdd)
    phi = np.mod(psi - 0.5 * math.pi, 2.0 * math.pi)
    z0 = float(z_origin) + g.source_z()
    steps = int(round(2 * math.pi / np.median(np.abs(np.diff(psi))))) if n > 1 else 1
    constant = {ROWS_COUNT: nv, COLS_COUNT: nu, DU: du, DV: d.pixel_height,
                SHAPE: "CYLINDRICAL" if d.curved else "FLAT", RHO: g.sod, D0: g.sdd,
                CENTRAL: (nu - d.center_col,
                          (nv - d.center_row) if flip else d.center_row + 1.0),
                FFS_MODE: ffs_mode,
                STEPS: min(steps, 65535), WATER: water_mu}
    vr = {"f": "FL", "H": "US", "s": "CS", "n": "FL"}
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    study, series, frame = generate_uid(), generate_uid(), generate_uid()
    syntax = ImplicitVRLittleEndian if private_vr == "UN" else ExplicitVRLittleEndian
    for i in range(n):
        meta = FileMetaDataset()
        meta.MediaStorageSOPClassUID = CTImageStorage
        meta.MediaStorageSOPInstanceUID = generate_uid()
        meta.TransferSyntaxUID = syntax
        meta.ImplementationClassUID = PYDICOM_IMPLEMENTATION_UID
        path = os.path.join(directory, f"{i + 1:06d}.dcm")
        ds = FileDataset(path, {}, file_meta=meta, preamble=b"\0" * 128)
        ds.SOPClassUID = CTImageStorage
        ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
        ds.StudyInstanceUID, ds.SeriesInstanceUID = study, series
        ds.FrameOfReferenceUID = frame
        ds.Modality, ds.Manufacturer = "CT", "leap (simulated)"
        ds.ImageType = ["ORIGINAL", "PRIMARY", "AXIAL"]
        ds.InstanceNumber = int(first_instance) + i
        ds.SamplesPerPixel, ds.PhotometricInterpretation = 1, "MONOCHROME2"
        ds.Rows, ds.Columns = nu, nv
        ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 16, 16, 15, 0
        ds.RescaleSlope, ds.RescaleIntercept = f"{slope:.10g}", f"{intercept:.10g}"
        ds.RescaleType = "US"
        values = dict(constant)
        values.update({PHI: phi[i], Z0: z0[i], DPHI: shifts[i, 0], DZ: shifts[i, 1],
                       DRHO: shifts[i, 2]})
        blocks = {}
        for tag in PRIVATE_TAGS:
            group = tag.tag >> 16
            if group not in blocks:
                blocks[group] = ds.private_block(group, CREATORS[group], create=True)
            element = tag.tag & 0xFF
            v = values[tag]
            if private_vr == "UN":
                blocks[group].add_new(element, "UN", private_bytes(tag, v))
            elif tag.kind in "fn":
                v = [float(x) for x in np.atleast_1d(v)]
                blocks[group].add_new(element, vr[tag.kind], v if len(v) > 1 else v[0])
            else:
                blocks[group].add_new(element, vr[tag.kind], int(v) if tag.kind == "H" else v)
        view = np.asarray(attenuation[i], dtype=np.float64)
        view = view[::-1, ::-1] if flip else view[:, ::-1]
        stored = np.rint((view.T - intercept) / slope)             # (channels, rows)
        ds.PixelData = np.clip(stored, 0, 65535).astype("<u2").tobytes()
        ds["PixelData"].VR = "OW"
        pydicom.dcmwrite(path, ds, enforce_file_format=True)
    return directory
