"""Read and write LEAP's plain-text CT parameter files (``*.param``).

LEAP (``tomographicModels.save_param`` / ``load_param``) stores the CT volume
and CT geometry of a scan in a small text file of ``key = value`` lines::

    # CT volume parameters
    numX = 80
    numY = 80
    numZ = 40
    voxelWidth = 5.000000e-01
    voxelHeight = 5.000000e-01
    offsetX = 0.000000e+00
    offsetY = 0.000000e+00
    offsetZ = 0.000000e+00

    # CT geometry parameters
    geometry = cone
    numAngles = 72
    numRows = 40
    numCols = 80
    pixelHeight = 1.000000e+00
    pixelWidth = 1.000000e+00
    centerRow = 1.950000e+01
    centerCol = 3.950000e+01
    angularRange = 3.600000e+02
    sod = 3.000000e+02
    sdd = 6.000000e+02
    tau = 0.000000e+00
    tiltAngle = 0.000000e+00
    helicalPitch = 0.000000e+00

:func:`read_param_file` turns such a file into a ``dict``;
:func:`~leap.io.write_param_file` writes a ``dict`` back in exactly the layout LEAP's
writer produces, so that LEAP itself can load the file.

Keys
----
All lengths are in mm and all angles in degrees.  "Required" means
:func:`read_param_file` and :func:`~leap.io.write_param_file` raise :class:`ValueError`
when the key is missing.

CT volume (section ``# CT volume parameters``)

================  =====  ========  ==============================================
key               type   unit      meaning
================  =====  ========  ==============================================
numX, numY, numZ  int    voxels    volume size (required, > 0)
voxelWidth        float  mm        voxel pitch in x and y (required, > 0)
voxelHeight       float  mm        voxel pitch in z (required, > 0)
offsetX/Y/Z       float  mm        shift of the volume centre from the origin
                                   (optional, default 0)
================  =====  ========  ==============================================

CT geometry (section ``# CT geometry parameters``)

===============  ============  ========  ===========================================
key              type          unit      meaning
===============  ============  ========  ===========================================
geometry         str           --        ``parallel``, ``fan``, ``cone``,
                                         ``modular`` or ``cone_parallel``
                                         (required; read case-insensitively and
                                         returned lower-case)
detectorType     str           --        ``flat`` or ``curved`` (optional, default
                                         ``flat``; ``curved`` only for ``cone``,
                                         written only when curved)
numAngles        int           --        number of projections (required, > 0)
numRows          int           --        detector rows (required, > 0)
numCols          int           --        detector columns (required, > 0)
pixelHeight      float         mm        detector row pitch (required, > 0)
pixelWidth       float         mm        detector column pitch (required, > 0)
centerRow        float         pixels    detector row index hit by the central ray
                                         (required, except for ``modular`` where
                                         it defaults to ``(numRows-1)/2``)
centerCol        float         pixels    as centerRow, for columns
angularRange     float         degrees   equispaced scan: the projection angles are
                                         ``arange(numAngles)*angularRange/numAngles``
                                         (negative for decreasing angles)
phis             float64[N]    degrees   explicit projection angles; written as a
                                         comma-separated list; either ``phis`` or
                                         ``angularRange`` is required except for
                                         ``modular``
sod              float         mm        source-to-object (rotation axis) distance
                                         (required for fan/cone/cone_parallel,
                                         where ``0 < sod < sdd``; written as 0 for
                                         parallel; for modular the mean over views,
                                         computed from the vectors if missing)
sdd              float         mm        source-to-detector distance (as sod)
tau              float         mm        centre-of-rotation (source) offset; fan,
                                         cone and cone_parallel only (optional,
                                         default 0)
tiltAngle        float         degrees   detector rotation about the optical axis;
                                         flat cone-beam only, ``|tiltAngle| <= 5``
                                         (optional, default 0; always written, as 0
                                         for the other geometries)
helicalPitch     float         mm/rad    source z-advance per radian of rotation;
                                         cone and cone_parallel only (optional,
                                         default 0)
axisOfSymmetry   float         degrees   rotation of the symmetry axis for
                                         single-view (numAngles == 1) cone/parallel
                                         data of a cylindrically symmetric object;
                                         active only when ``|value| <= 30``
                                         (optional, written only when active)
sourcePositions  float64[N,3]  mm        x-ray source position of each view
                                         (modular only, required)
moduleCenters    float64[N,3]  mm        centre of the detector face of each view
                                         (modular only, required)
rowVectors       float64[N,3]  --        unit vector along the detector rows
                                         (modular only, required)
colVectors       float64[N,3]  --        unit vector along the detector columns
                                         (modular only, required; orthogonal to
                                         rowVectors)
muCoeff          float         1/mm      attenuation coefficient of a cylindrical
                                         attenuation map (attenuated Radon
                                         transform); parallel only, optional,
                                         written when ``muCoeff != 0`` and
                                         ``muRadius > 0``
muRadius         float         mm        radius of that cylinder
offsetScan       bool          --        extension of this package (LEAP neither
                                         writes nor reads it): offset-detector
                                         (half-fan) FBP flag; optional, written as
                                         ``offsetScan = 1`` only when true
===============  ============  ========  ===========================================

What :func:`read_param_file` returns
------------------------------------
A ``dict`` keyed by the canonical names above (legacy names are translated),
holding every key found in the file, converted as listed: counts to ``int``,
other numbers to ``float``, ``geometry``/``detectorType`` to lower-case
``str``, ``offsetScan`` to ``bool``, ``phis`` to a 1-D ``float64`` array and
the four modular-beam vectors to ``(numAngles, 3)`` ``float64`` arrays.  For
the parallel, fan, cone and cone_parallel geometries the result always holds
both ``phis`` and ``angularRange``: ``phis`` is generated as
``arange(numAngles) * angularRange / numAngles`` when the file only gives the
range (what LEAP does), and ``angularRange`` is computed the way LEAP does
(``|last - first| + half of the first and last steps``, negative for
decreasing angles) when the file only lists ``phis``.  Unknown keys are kept as
stripped strings and reported with a :class:`LeapParamWarning`.

File format details (as LEAP writes and reads it)
-------------------------------------------------
* One ``key = value`` per line; ``#`` starts a comment; blank lines and extra
  whitespace are ignored.  Keys are matched case-insensitively here (LEAP is
  case-sensitive).  A key given twice: the last one wins (as in LEAP), with a
  warning.
* Counts are written as plain integers, every other number in C's ``%e``
  format (``5.000000e-01``).  Values that need more than 7 significant digits
  to survive the round trip are written with as many digits as needed
  (``%.Ne``, shortest exact form); LEAP itself stores float32, so 7 digits are
  enough for everything it writes.
* Angles: exactly one of ``angularRange`` and ``phis`` is written.  Angles
  that equal ``arange(numAngles) * angularRange / numAngles`` (bit for bit;
  within two ulps for float32 arrays) are written as ``angularRange`` only;
  anything else as ``phis =  a, b, c`` (``" %e"`` per angle joined by ``","``,
  hence two spaces after ``=``).  LEAP's own writer uses ``angularRange`` for
  *any* equispaced scan, which silently drops a non-zero first angle; this
  writer keeps such angles as a ``phis`` list instead.  LEAP stores angles as
  float32 radians minus 90 degrees, so its files show values such as
  ``9.999999e-01`` for 1 degree.  For ``modular`` the angles are
  informational only (LEAP derives them from the vectors of axial scans); a
  dict with neither key gets ``angularRange = 0`` and explicit ``phis`` are
  kept explicit.
* LEAP sets ``std::scientific`` once, so every float after ``voxelWidth`` is in
  ``%e`` form (``centerRow``, ``sod``, ``angularRange`` too); counts stay plain.
* Modular-beam vectors are written flattened, ``x0, y0, z0, x1, y1, z1, ...``
  (``"%e, %e, %e"`` per view joined by ``", "``).
* Legacy files (LEAP's old names, still produced when LEAP is built with
  ``USE_OLD_PARAM_NAMES``) use ``img_dimx/img_dimy/img_dimz``,
  ``img_pwidth/img_pheight``, ``img_offsetx/y/z``, ``proj_geometry``,
  ``proj_nangles``, ``proj_nrows``, ``proj_ncols``, ``proj_pheight``,
  ``proj_pwidth``, ``proj_crow``, ``proj_ccol``, ``proj_arange``,
  ``proj_phis``, ``proj_sod``, ``proj_sdd``, ``proj_tau``,
  ``proj_helicalpitch``, ``proj_tiltAngle``, ``proj_axisofsymmetry``,
  ``proj_srcpos``, ``proj_modcenter``, ``proj_rowvec``, ``proj_colvec``,
  ``mucoeff`` and ``muradius`` (``detectorType`` keeps its name).  They are
  read transparently and written with ``write_param_file(..., legacy=True)``.
* An empty ``phis =`` line means "no explicit angles" (LEAP then falls back to
  ``angularRange``).
* Values LEAP ignores for a geometry (a non-zero ``tau`` for parallel or
  modular, ``helicalPitch`` outside cone/cone_parallel, ``tiltAngle`` outside
  flat cone-beam, ``muCoeff``/``muRadius`` outside parallel) are kept when
  reading but reported with a warning; the writer writes them the way LEAP
  does (``tiltAngle = 0``, the others left out), also with a warning.
"""
from __future__ import annotations

import math
import os
import re
import warnings
from typing import Any, Callable, Mapping

import numpy as np

from ..reconstruction.weights import angular_range

__all__ = ["read_param_file", "read_param_dict", "read_param_entries", "LeapParamWarning",
           "GEOMETRIES"]


class LeapParamWarning(UserWarning):
    """Something in a parameter file (or dict) that is legal but suspicious."""


GEOMETRIES = ("parallel", "fan", "cone", "modular", "cone_parallel")
DETECTOR_TYPES = ("flat", "curved")

_INT_KEYS = ("numX", "numY", "numZ", "numAngles", "numRows", "numCols")
_FLOAT_KEYS = (
    "voxelWidth", "voxelHeight", "offsetX", "offsetY", "offsetZ",
    "pixelHeight", "pixelWidth", "centerRow", "centerCol", "angularRange",
    "sod", "sdd", "tau", "tiltAngle", "helicalPitch", "axisOfSymmetry",
    "muCoeff", "muRadius",
)
_STR_KEYS = ("geometry", "detectorType")
_VECTOR_KEYS = ("sourcePositions", "moduleCenters", "rowVectors", "colVectors")
_BOOL_KEYS = ("offsetScan",)
_ARRAY_KEYS = ("phis",)
_KNOWN_KEYS = _INT_KEYS + _FLOAT_KEYS + _STR_KEYS + _VECTOR_KEYS + _BOOL_KEYS + _ARRAY_KEYS

# LEAP's old key names (file_io.cpp, USE_OLD_PARAM_NAMES; leapctype.load_param_legacy).
_LEGACY_NAMES = {
    "numX": "img_dimx", "numY": "img_dimy", "numZ": "img_dimz",
    "voxelWidth": "img_pwidth", "voxelHeight": "img_pheight",
    "offsetX": "img_offsetx", "offsetY": "img_offsety", "offsetZ": "img_offsetz",
    "geometry": "proj_geometry", "numAngles": "proj_nangles",
    "numRows": "proj_nrows", "numCols": "proj_ncols",
    "pixelHeight": "proj_pheight", "pixelWidth": "proj_pwidth",
    "centerRow": "proj_crow", "centerCol": "proj_ccol",
    "angularRange": "proj_arange", "phis": "proj_phis",
    "sod": "proj_sod", "sdd": "proj_sdd", "tau": "proj_tau",
    "helicalPitch": "proj_helicalpitch", "tiltAngle": "proj_tiltAngle",
    "axisOfSymmetry": "proj_axisofsymmetry",
    "sourcePositions": "proj_srcpos", "moduleCenters": "proj_modcenter",
    "rowVectors": "proj_rowvec", "colVectors": "proj_colvec",
    "muCoeff": "mucoeff", "muRadius": "muradius",
}

_ALIASES: dict[str, str] = {}
for _k in _KNOWN_KEYS:
    _ALIASES[_k.lower()] = _k
for _k, _old in _LEGACY_NAMES.items():
    _ALIASES[_old.lower()] = _k
del _k, _old

_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_NONFINITE_RE = re.compile(r"[+-]?(?:nan|inf|infinity)(?:\(.*\))?", re.IGNORECASE)
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

_DIVERGENT = ("fan", "cone", "cone_parallel")


def _canonical_key(key: str) -> str | None:
    return _ALIASES.get(key.lower())


# ---------------------------------------------------------------------------
# value conversion
# ---------------------------------------------------------------------------

def _parse_number(text: str, where: str, key: str) -> float:
    s = text.strip()
    if not s:
        raise ValueError(f"{where}: empty value for {key!r}, expected a number")
    if _NONFINITE_RE.fullmatch(s):
        raise ValueError(f"{where}: {key!r} must be finite, got {s!r}")
    if not _NUMBER_RE.fullmatch(s):
        raise ValueError(f"{where}: cannot parse {s!r} as a number for {key!r}")
    value = float(s)
    if not math.isfinite(value):
        raise ValueError(f"{where}: {key!r} must be finite, got {s!r} (overflow)")
    return value


def _parse_list(text: str, where: str, key: str) -> np.ndarray:
    s = text.strip()
    if not s:
        raise ValueError(f"{where}: empty value for {key!r}, expected a comma-separated list")
    items = s.split(",")
    values = np.empty(len(items), dtype=np.float64)
    for i, item in enumerate(items):
        if not item.strip():
            raise ValueError(f"{where}: empty entry #{i + 1} in the list for {key!r}")
        values[i] = _parse_number(item, where, f"{key}[{i}]")
    return values


def _int_from_float(value: float, where: str, key: str) -> int:
    if value != int(value):
        raise ValueError(f"{where}: {key!r} must be an integer, got {value!r}")
    return int(value)


def _convert_text(key: str, text: str, where: str) -> Any:
    """Convert the text of one value (from a file) to its Python type."""
    if key in _INT_KEYS:
        return _int_from_float(_parse_number(text, where, key), where, key)
    if key in _FLOAT_KEYS:
        return _parse_number(text, where, key)
    if key in _STR_KEYS:
        s = text.strip().lower()
        if not s:
            raise ValueError(f"{where}: empty value for {key!r}")
        return s
    if key in _BOOL_KEYS:
        s = text.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        try:
            return _parse_number(s, where, key) != 0.0
        except ValueError:
            raise ValueError(f"{where}: {key!r} must be 0/1 or true/false, got {text.strip()!r}") from None
    if key == "phis":
        return _parse_list(text, where, key)
    if key in _VECTOR_KEYS:
        return _parse_list(text, where, key)  # reshaped during validation
    raise AssertionError(key)


def _convert_object(key: str, value: Any, where: str) -> Any:
    """Convert a value given in a dict (for the writer) to its canonical type.

    float32 scalars and arrays keep their dtype so that they can be written
    with float32 precision (as LEAP does)."""
    if isinstance(value, str):
        return _convert_text(key, value, where)
    if key in _STR_KEYS:
        raise ValueError(f"{where}: {key!r} must be a string, got {type(value).__name__}")
    if key in _BOOL_KEYS:
        return bool(value)
    if key in _INT_KEYS or key in _FLOAT_KEYS:
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "biuf":
            raise ValueError(f"{where}: {key!r} must be a real number, got {value!r}")
        v = float(arr)
        if not math.isfinite(v):
            raise ValueError(f"{where}: {key!r} must be finite, got {v!r}")
        if key in _INT_KEYS:
            return _int_from_float(v, where, key)
        return np.float32(arr) if arr.dtype == np.float32 else v
    # phis / modular vectors
    try:
        arr = np.asarray(value)
    except Exception as exc:  # pragma: no cover - exotic inputs
        raise ValueError(f"{where}: {key!r} is not array-like: {exc}") from None
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{where}: {key!r} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float32 if arr.dtype == np.float32 else np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: {key!r} contains non-finite values")
    return arr


# ---------------------------------------------------------------------------
# validation shared by reader and writer
# ---------------------------------------------------------------------------

def _derived_angular_range(phis: np.ndarray) -> float:
    """LEAP's angularRange for explicit angles (parameters::set_angles), signed."""
    p = np.asarray(phis, dtype=np.float64)
    rng = angular_range(p)
    return float(-rng if p.size > 1 and p[-1] < p[0] else rng)


def _equispaced_angles(num_angles: int, angular_range: float) -> np.ndarray:
    """LEAP's setAngleArray: ``arange(N) * angularRange / N`` (float64 here)."""
    return np.arange(num_angles, dtype=np.float64) * float(angular_range) / float(num_angles)


def _is_range_form(phis: np.ndarray, angular_range: float) -> bool:
    """Whether ``phis`` are exactly the angles generated from ``angularRange``.

    float64 angles must match bit for bit (so that writing ``angularRange``
    loses nothing); float32 angles (LEAP's own precision) may differ by two
    float32 ulps per angle.  A zero range only stands for a single view."""
    n = phis.size
    if angular_range == 0.0 and n > 1:
        return False
    regen = _equispaced_angles(n, angular_range)
    if phis.dtype == np.float32:
        regen32 = regen.astype(np.float32)
        tol = 2.0 * np.spacing(np.abs(regen32))
        return bool(np.all(np.abs(phis - regen32) <= tol))
    return bool(np.array_equal(phis.astype(np.float64), regen))


def _validate(d: dict, loc: Callable[[str | None], str], warn_ignored: str) -> None:
    """Check a dict of canonical, converted values; reshape the modular vectors.

    ``loc(key)`` gives the text that locates ``key`` in error messages;
    ``warn_ignored`` completes the warning for values LEAP would ignore.
    """
    def need(key: str, why: str) -> Any:
        if key not in d:
            raise ValueError(f"{loc(None)}: missing required key {key!r} ({why})")
        return d[key]

    geom = need("geometry", "every LEAP parameter file names its geometry")
    if geom not in GEOMETRIES:
        raise ValueError(
            f"{loc('geometry')}: unknown geometry {geom!r}; expected one of {', '.join(GEOMETRIES)}")

    for key in ("numX", "numY", "numZ", "voxelWidth", "voxelHeight"):
        if need(key, "CT volume") <= 0:
            raise ValueError(f"{loc(key)}: {key!r} must be positive, got {d[key]!r}")
    for key in ("numAngles", "numRows", "numCols", "pixelHeight", "pixelWidth"):
        if need(key, f"{geom} geometry") <= 0:
            raise ValueError(f"{loc(key)}: {key!r} must be positive, got {d[key]!r}")
    n = d["numAngles"]

    det = d.get("detectorType", "flat")
    if det not in DETECTOR_TYPES:
        raise ValueError(
            f"{loc('detectorType')}: unknown detectorType {det!r}; expected 'flat' or 'curved'")
    if det == "curved" and geom != "cone":
        raise ValueError(
            f"{loc('detectorType')}: a curved detector is only defined for cone-beam geometry, not {geom!r}")

    if "phis" in d:
        phis = d["phis"]
        if phis.ndim != 1 or phis.size != n:
            raise ValueError(
                f"{loc('phis')}: 'phis' has {phis.size} values but numAngles = {n}")
    if geom != "modular":
        need("centerRow", f"{geom} geometry")
        need("centerCol", f"{geom} geometry")
        if "phis" not in d and "angularRange" not in d:
            raise ValueError(
                f"{loc(None)}: missing projection angles: give 'phis' or 'angularRange' for {geom} geometry")
        if "phis" not in d and n > 1 and d["angularRange"] == 0.0:
            raise ValueError(
                f"{loc('angularRange')}: angularRange = 0 with numAngles = {n} gives identical angles")
    if geom in _DIVERGENT:
        sod = need("sod", f"{geom} geometry")
        sdd = need("sdd", f"{geom} geometry")
        if not (0.0 < sod < sdd):
            raise ValueError(
                f"{loc('sdd')}: {geom} geometry needs 0 < sod < sdd, got sod = {sod!r}, sdd = {sdd!r}")
    for key in ("sod", "sdd"):
        if key in d and d[key] < 0:
            raise ValueError(f"{loc(key)}: {key!r} must not be negative, got {d[key]!r}")

    tilt = d.get("tiltAngle", 0.0)
    if geom == "cone" and det == "flat":
        if abs(tilt) > 5.0:
            raise ValueError(f"{loc('tiltAngle')}: |tiltAngle| must not exceed 5 degrees, got {tilt!r}")
    elif tilt != 0.0:
        warnings.warn(f"{loc('tiltAngle')}: tiltAngle = {tilt!r} only applies to flat-panel cone-beam "
                      f"and is ignored for {det} {geom} geometry; {warn_ignored}",
                      LeapParamWarning, stacklevel=4)
    if d.get("helicalPitch", 0.0) != 0.0 and geom not in ("cone", "cone_parallel"):
        warnings.warn(f"{loc('helicalPitch')}: helicalPitch only applies to cone and cone_parallel "
                      f"geometry and is ignored for {geom!r}; {warn_ignored}",
                      LeapParamWarning, stacklevel=4)
    if d.get("tau", 0.0) != 0.0 and geom not in _DIVERGENT:
        warnings.warn(f"{loc('tau')}: tau only applies to fan, cone and cone_parallel geometry and is "
                      f"ignored for {geom!r}; {warn_ignored}", LeapParamWarning, stacklevel=4)
    for key in ("muCoeff", "muRadius"):
        if key in d and geom != "parallel":
            warnings.warn(f"{loc(key)}: {key} only applies to parallel-beam geometry and is ignored "
                          f"for {geom!r}; {warn_ignored}", LeapParamWarning, stacklevel=4)

    if geom == "modular":
        for key in _VECTOR_KEYS:
            v = need(key, "modular-beam geometry")
            if v.size != 3 * n or (v.ndim == 2 and v.shape[1] != 3) or v.ndim > 2:
                raise ValueError(
                    f"{loc(key)}: {key!r} needs 3 values per view (3 * numAngles = {3 * n}), "
                    f"got {v.size} values" + (f" shaped {v.shape}" if v.ndim > 1 else ""))
            d[key] = v.reshape(n, 3)
        for key in ("rowVectors", "colVectors"):
            norms = np.linalg.norm(d[key].astype(np.float64), axis=1)
            bad = np.flatnonzero(norms == 0.0)
            if bad.size:
                raise ValueError(f"{loc(key)}: {key!r} has a zero vector for view {int(bad[0])}")
        u = d["colVectors"].astype(np.float64)
        v = d["rowVectors"].astype(np.float64)
        cosang = np.abs(np.sum(u * v, axis=1)) / (np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1))
        bad = np.flatnonzero(cosang > 0.01)
        if bad.size:
            raise ValueError(
                f"{loc('rowVectors')}: rowVectors and colVectors must be orthogonal "
                f"(view {int(bad[0])}: |cos| = {cosang[bad[0]]:.3g})")
    else:
        for key in _VECTOR_KEYS:
            if key in d:
                warnings.warn(f"{loc(key)}: {key} only applies to modular-beam geometry and is ignored "
                              f"for {geom!r}; {warn_ignored}", LeapParamWarning, stacklevel=4)


# ---------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------

def _entries(text: str, source: str):
    """The ``key = value`` lines of a parameter file's text (comments after ``#`` and
    blank lines skipped): yields ``(key, value, lineno, body)``, both stripped."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        if "=" not in body:
            raise ValueError(f"{source}:{lineno}: expected 'key = value', got {body!r}")
        key, _, value = body.partition("=")
        yield key.strip(), value.strip(), lineno, body


def read_param_entries(path: str | os.PathLike) -> dict:
    """A parameter file's ``key = value`` lines as a dict, as written (numbers as
    floats, lists and names as strings): LEAP's ``parse_param_dic``."""
    with open(path, "r", encoding="utf-8") as fh:
        text = fh.read()
    out: dict[str, Any] = {}
    for key, value, _, _ in _entries(text, os.fspath(path)):
        try:
            out[key] = float(value)
        except ValueError:
            out[key] = value
    return out


def _parse_text(text: str, source: str) -> dict:
    raw: dict[str, tuple[str, int]] = {}
    unknown: dict[str, str] = {}
    for key, value, lineno, body in _entries(text, source):
        where = f"{source}:{lineno}"
        if not key:
            raise ValueError(f"{where}: missing key before '=' in {body!r}")
        if "=" in value:
            raise ValueError(f"{where}: more than one '=' in {body!r}")
        if not _KEY_RE.fullmatch(key):
            raise ValueError(f"{where}: invalid key name {key!r}")
        canon = _canonical_key(key)
        name = canon if canon is not None else key
        if name in raw or name in unknown:
            prev = raw[name][1] if name in raw else None
            warnings.warn(f"{where}: {name!r} given again" + (f" (first on line {prev})" if prev else "")
                          + "; the last value is used", LeapParamWarning, stacklevel=3)
        if canon is None:
            warnings.warn(f"{where}: unknown key {key!r} kept as a string", LeapParamWarning, stacklevel=3)
            unknown[key] = value
            continue
        raw[canon] = (value, lineno)

    lines = {k: ln for k, (_, ln) in raw.items()}

    def loc(key: str | None) -> str:
        if key is not None and key in lines:
            return f"{source}:{lines[key]}"
        return source

    out: dict[str, Any] = {}
    for key, (value, lineno) in raw.items():
        if key == "phis" and not value:
            continue  # LEAP: an empty phis list means "use angularRange"
        out[key] = _convert_text(key, value, f"{source}:{lineno}")
    _validate(out, loc, "kept as read")

    if out["geometry"] != "modular":
        n = out["numAngles"]
        if "phis" not in out:
            out["phis"] = _equispaced_angles(n, out["angularRange"])
        elif "angularRange" not in out:
            out["angularRange"] = _derived_angular_range(out["phis"])
    out.update(unknown)
    return out


def read_param_file(path: str | os.PathLike) -> dict:
    """Read a LEAP parameter file into a dict (see the module docstring).

    Raises :class:`ValueError` naming the file and line for malformed lines,
    non-numeric or non-finite numbers, lists of the wrong length, unknown
    geometry or detector types and missing required keys.  Unknown keys are
    kept as strings and reported with :class:`LeapParamWarning`.
    """
    source = os.fspath(path)
    with open(source, "r", encoding="utf-8-sig", errors="strict") as f:
        try:
            text = f.read()
        except UnicodeDecodeError as exc:
            raise ValueError(f"{source}: not a UTF-8 text file ({exc})") from None
    return _parse_text(text, source)


def read_param_dict(params: Mapping, source: str = "<dict>") -> dict:
    """The :func:`read_param_file` result for a mapping of a parameter file's keys
    (current or legacy names) to their values as written in the file — numbers, or
    strings for lists and names (LEAP's ``parse_param_dic`` output)."""
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of parameter names to values, got "
                        f"{type(params).__name__}")
    lines = []
    for key, value in params.items():
        if isinstance(value, (list, tuple, np.ndarray)):
            value = ", ".join(str(float(v)) for v in np.ravel(value))
        lines.append(f"{key} = {value}")
    return _parse_text("\n".join(lines), source)

