"""Write LEAP's plain-text CT parameter files (``*.param``): the format and the key
rules are described in :mod:`leap.io.params`, whose validation the writer shares."""
from __future__ import annotations

import os
import warnings
from typing import Any, Mapping

import numpy as np

from ..geometry.modular import mean_distances
from .params import (_DIVERGENT, _LEGACY_NAMES, _VECTOR_KEYS, LeapParamWarning, _canonical_key,
                     _convert_object, _derived_angular_range, _is_range_form, _validate)



def _fmt_float(x: Any) -> str:
    """C's ``%e`` (6 decimals), with more digits only when needed to round-trip."""
    if isinstance(x, np.float32):
        target = x
        back = np.float32
        max_prec = 8
    else:
        target = float(x)
        back = float
        max_prec = 16
    v = float(x)
    for prec in range(6, max_prec + 1):
        s = f"{v:.{prec}e}"
        if back(float(s)) == target:
            return s
    return f"{v:.{max_prec}e}"


def _fmt_values(arr: np.ndarray) -> list[str]:
    if arr.dtype == np.float32:
        return [_fmt_float(a) for a in arr.ravel()]
    return [_fmt_float(float(a)) for a in arr.ravel()]


def _modular_distances(d: dict) -> tuple[float, float]:
    """Mean source-to-object and source-to-detector distances (as LEAP computes them)."""
    return mean_distances(d["sourcePositions"], d["moduleCenters"], d["rowVectors"],
                          d["colVectors"])


def _normalize_input(params: Mapping, path: str) -> dict:
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping, got {type(params).__name__}")
    d: dict[str, Any] = {}
    for key, value in params.items():
        canon = _canonical_key(str(key))
        if canon is None:
            warnings.warn(f"{path}: unknown key {key!r} is not written", LeapParamWarning, stacklevel=3)
            continue
        if canon in d:
            raise ValueError(f"{path}: {canon!r} given twice (as {key!r} and another spelling)")
        if value is None:
            continue
        if canon == "phis" and isinstance(value, str) and not value.strip():
            continue
        d[canon] = _convert_object(canon, value, f"{path}: params[{key!r}]")
    return d


def _format(d: dict, legacy: bool) -> str:
    def name(key: str) -> str:
        return _LEGACY_NAMES.get(key, key) if legacy else key

    geom = d["geometry"]
    det = d.get("detectorType", "flat")
    n = d["numAngles"]
    lines = ["# CT volume parameters"]
    for key in ("numX", "numY", "numZ"):
        lines.append(f"{name(key)} = {d[key]:d}")
    for key in ("voxelWidth", "voxelHeight", "offsetX", "offsetY", "offsetZ"):
        lines.append(f"{name(key)} = {_fmt_float(d.get(key, 0.0))}")
    lines.append("")
    lines.append("# CT geometry parameters")
    lines.append(f"{name('geometry')} = {geom}")
    if geom == "cone" and det == "curved":
        lines.append("detectorType = curved")  # LEAP uses this name in both styles
    for key in ("numAngles", "numRows", "numCols"):
        lines.append(f"{name(key)} = {d[key]:d}")
    lines.append(f"{name('pixelHeight')} = {_fmt_float(d['pixelHeight'])}")
    lines.append(f"{name('pixelWidth')} = {_fmt_float(d['pixelWidth'])}")
    center_row = d.get("centerRow", 0.5 * (d["numRows"] - 1))
    center_col = d.get("centerCol", 0.5 * (d["numCols"] - 1))
    lines.append(f"{name('centerRow')} = {_fmt_float(center_row)}")
    lines.append(f"{name('centerCol')} = {_fmt_float(center_col)}")

    phis = d.get("phis")
    arange_ = d.get("angularRange")
    if phis is None:
        lines.append(f"{name('angularRange')} = {_fmt_float(0.0 if arange_ is None else arange_)}")
    else:
        if arange_ is None and geom != "modular":
            arange_ = _derived_angular_range(phis)
        # (modular: the reader derives no angles, so keep explicit ones explicit)
        if arange_ is not None and _is_range_form(phis, float(arange_)):
            lines.append(f"{name('angularRange')} = {_fmt_float(arange_)}")
        else:
            lines.append(f"{name('phis')} = " + ",".join(" " + s for s in _fmt_values(phis)))

    if geom == "modular" and ("sod" not in d or "sdd" not in d):
        sod, sdd = _modular_distances(d)
        sod, sdd = d.get("sod", sod), d.get("sdd", sdd)
    else:
        sod, sdd = d.get("sod", 0.0), d.get("sdd", 0.0)
    lines.append(f"{name('sod')} = {_fmt_float(sod)}")
    lines.append(f"{name('sdd')} = {_fmt_float(sdd)}")
    if geom in _DIVERGENT:
        lines.append(f"{name('tau')} = {_fmt_float(d.get('tau', 0.0))}")
    tilt = d.get("tiltAngle", 0.0) if (geom == "cone" and det == "flat") else 0.0
    lines.append(f"{name('tiltAngle')} = {_fmt_float(tilt)}")
    if geom in ("cone", "cone_parallel"):
        pitch = d.get("helicalPitch", 0.0)
        if abs(float(pitch)) < 1.0e-16:
            pitch = 0.0
        lines.append(f"{name('helicalPitch')} = {_fmt_float(pitch)}")
    aos = d.get("axisOfSymmetry")
    if aos is not None:
        if n == 1 and abs(float(aos)) <= 30.0 and geom in ("cone", "parallel"):
            lines.append(f"{name('axisOfSymmetry')} = {_fmt_float(aos)}")
        elif abs(float(aos)) <= 30.0:
            warnings.warn("axisOfSymmetry only applies to single-view cone or parallel data; not written",
                          LeapParamWarning, stacklevel=3)
    if geom == "modular":
        for key in _VECTOR_KEYS:
            vals = _fmt_values(d[key])
            triples = [", ".join(vals[3 * i:3 * i + 3]) for i in range(n)]
            lines.append(f"{name(key)} = " + ", ".join(triples))
    if geom == "parallel" and "muCoeff" in d and "muRadius" in d:
        if d["muCoeff"] != 0.0 and d["muRadius"] > 0.0:
            lines.append(f"{name('muCoeff')} = {_fmt_float(d['muCoeff'])}")
            lines.append(f"{name('muRadius')} = {_fmt_float(d['muRadius'])}")
    if d.get("offsetScan", False):
        lines.append("offsetScan = 1")
    return "\n".join(lines) + "\n"


def format_params(params: Mapping, *, legacy: bool = False, _where: str = "<params>") -> str:
    """The text :func:`write_param_file` would write for ``params``."""
    d = _normalize_input(params, _where)

    def loc(key: str | None) -> str:
        return _where if key is None else f"{_where}: params[{key!r}]"

    _validate(d, loc, "not written, as in LEAP")
    return _format(d, legacy)


def write_param_file(path: str | os.PathLike, params: Mapping, *, legacy: bool = False) -> None:
    """Write ``params`` as a LEAP parameter file (see the module docstring).

    ``params`` uses the keys :func:`read_param_file` returns (LEAP's legacy
    names are accepted too).  The file has LEAP's own layout: the same key
    order, section comments and ``%e`` number format, so that
    ``read_param_file(path)`` gives ``params`` back and LEAP's
    ``load_param`` can read it.  ``legacy=True`` writes LEAP's old key names
    (``img_dimx``, ``proj_geometry``, ...).  Raises :class:`ValueError` when
    ``params`` is incomplete or inconsistent, before touching ``path``.
    """
    target = os.fspath(path)
    text = format_params(params, legacy=legacy, _where=target)
    with open(target, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
