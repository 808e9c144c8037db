"""Materials and arguments as LLNL XrayPhysics takes them, for :mod:`leap.compat.xrayphysics`.

What the ``xrayPhysics`` methods share: a material argument (atomic number, possibly
non-integer or beyond the tables, symbol, formula, mixture, library name) resolved to
what :mod:`leap.physics` accepts (``_resolve``; ``_Terms`` for the atomic numbers the
tables lack), per-mass and per-electron quantities of either, the checks of energies,
spectra, numbers and angles (each ValueError names XrayPhysics' argument), the
two-column spectrum files and the material library. Units here are XrayPhysics' cm
units; the class scales to mm.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os

import numpy as np

from ..physics import cross_sections as _cs
from ..physics import materials as _mat
from ..physics import spectra as _sp

_N_A = float(getattr(_cs, "AVOGADRO", 6.02214076e23))     # 1/mol
_E_MIN, _E_MAX = 1.0, 20000.0                             # keV, the tables' range
_MAX_Z_TABLES = 98                                        # xraylib stops at Cf


# ------------------------------------------------------------------ names
# Material names are those of leap.physics.materials (case-insensitive, with its aliases).
def _find_name(name: str):
    """A library Material or None."""
    return _mat.find_material(name)

# ------------------------------------------------------------------ materials
#: One barn in cm^2.
_BARN_CM2 = 1.0e-24


class _Terms:
    """An atomic number leap has no table for (non-integer, or 99/100): a linear
    combination of elements Z <= 98 for per-atom and per-mass quantities."""

    def __init__(self, z: float):
        self.z = z
        lo = math.floor(z)
        d = z - lo
        base = [(lo, 1.0 - d)] + ([(lo + 1, d)] if d > 1e-8 else [])
        terms: dict[int, float] = {}
        for zi, w in base:
            # beyond the tables: linear extrapolation from Z = 97, 98
            ext = [(zi, 1.0)] if zi <= _MAX_Z_TABLES else [
                (_MAX_Z_TABLES, 1.0 + (zi - _MAX_Z_TABLES)), (_MAX_Z_TABLES - 1, -(zi - _MAX_Z_TABLES))]
            for zj, wj in ext:
                terms[zj] = terms.get(zj, 0.0) + w * wj
        self.terms = tuple((zj, w) for zj, w in terms.items() if w != 0.0)

    def __repr__(self):
        return f"Z={self.z:g}"


def _resolve(Z, arg="Z"):
    """A material the core accepts (int Z, str, Material, mixture) or a _Terms."""
    if isinstance(Z, (_mat.Material, _Terms)):
        return Z
    if isinstance(Z, (bool, np.bool_)):
        raise ValueError(f"{arg}: expected an atomic number, formula or material name, "
                         f"got {Z!r}")
    if isinstance(Z, numbers.Real) or (isinstance(Z, np.ndarray) and Z.ndim == 0
                                      and Z.dtype.kind in "iuf"):
        z = float(Z)
        if not (math.isfinite(z) and 1.0 <= z <= 100.0):
            raise ValueError(f"{arg}: atomic number must be in 1..100, got {Z!r}")
        zi = round(z)
        if abs(z - zi) < 1e-8 and zi <= _MAX_Z_TABLES:
            return int(zi)
        return _Terms(z)
    if isinstance(Z, bytes):
        Z = Z.decode("ascii", errors="replace")
    if isinstance(Z, str):
        if not Z.strip():
            raise ValueError(f"{arg}: empty material name")
        found = _find_name(Z)
        if found is not None:
            return found
        try:
            fr = _cs.mass_fractions(Z.strip())
        except ValueError as exc:
            raise ValueError(f"{arg}: {exc}") from None
        if len(fr) == 1 and next(iter(fr)) > _MAX_Z_TABLES:
            return _Terms(float(next(iter(fr))))
        return Z.strip()
    if isinstance(Z, (dict, list, tuple)):
        try:
            _cs.mass_fractions(Z)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{arg}: {exc}") from None
        return Z
    raise ValueError(f"{arg}: expected an atomic number, element symbol, chemical formula, "
                     f"mixture or material name, got {type(Z).__name__} {Z!r}")


def _mass_attenuation(mat, e, kind="total"):
    """cm^2/g, float64 array shaped like ``e``."""
    if isinstance(mat, _Terms):
        return sum(w * np.asarray(_cs.mass_attenuation(z, e, kind, units="cm"))
                   for z, w in mat.terms)
    return np.asarray(_cs.mass_attenuation(mat, e, kind, units="cm"))


def _sigma_e_cm2mol(mat, e):
    """Per-electron cross section, cm^2 per mole of electrons."""
    if isinstance(mat, _Terms):
        return _N_A * sum(w * np.asarray(_cs.electron_cross_section(z, e, units="cm"))
                          for z, w in mat.terms)
    return _N_A * np.asarray(_cs.electron_cross_section(mat, e, units="cm"))


def _mol_e_per_gram(mat) -> float:
    """Moles of electrons per gram."""
    if isinstance(mat, _Terms):
        lo = math.floor(mat.z)
        d = mat.z - lo
        out = (1.0 - d) * lo / _cs.atomic_mass(lo)
        return out + (d * (lo + 1) / _cs.atomic_mass(lo + 1) if d > 1e-8 else 0.0)
    return _cs.electron_density(mat, 1.0, units="mol")      # at 1 g/cm^3: per gram


def _atom_terms(mat):
    """(atomic numbers <= 98, weights) giving per-atom quantities: atom fractions for
    compounds and mixtures (mean per atom), interpolation weights for a _Terms."""
    if isinstance(mat, _Terms):
        zs, ws = zip(*mat.terms)
        return np.array(zs, dtype=np.int64), np.array(ws, dtype=np.float64)
    fr = _cs.mass_fractions(mat)
    zs = sorted(fr)
    if zs[-1] > _MAX_Z_TABLES:
        raise ValueError(f"Z: no scattering data for Z={zs[-1]} in a compound")
    n = np.array([fr[z] / _cs.atomic_mass(z) for z in zs])
    return np.array(zs, dtype=np.int64), n / n.sum()


# ------------------------------------------------------------------ checks
@contextlib.contextmanager
def _names(mapping=None, **rename):
    """Re-raise the core's ValueErrors under this module's argument names: a message
    starting with a key (a core argument name) starts with its value instead."""
    rename = {**(mapping or {}), **rename}
    try:
        yield
    except ValueError as exc:
        msg = str(exc)
        for core, ours in rename.items():
            if msg.startswith(core):
                msg = ours + msg[len(core):]
                break
        raise ValueError(msg) from None


def _energy(gamma, arg="gamma"):
    """(float64 array, is-scalar) of energies in keV within the tables' range."""
    try:
        e = np.asarray(gamma, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{arg}: expected energies in keV, got {gamma!r}") from None
    if not np.all(np.isfinite(e)):
        raise ValueError(f"{arg}: energies must be finite")
    if e.size and (e.min() < _E_MIN or e.max() > _E_MAX):
        raise ValueError(f"{arg}: energies must lie within {_E_MIN:g}-{_E_MAX:g} keV, got "
                         f"{e.min():g}-{e.max():g} keV")
    return e, e.ndim == 0


def _grid(gammas, arg="gammas", min_size=1):
    """A 1-D, strictly increasing energy grid (keV), float64."""
    e, _ = _energy(gammas, arg)
    if e.ndim != 1 or e.size < min_size:
        raise ValueError(f"{arg}: expected a 1-D array of at least {min_size} energies (keV), "
                         f"got shape {e.shape}")
    if np.any(np.diff(e) <= 0):
        raise ValueError(f"{arg}: energies must increase strictly")
    return e


def _curve(x, n, arg):
    """A 1-D float64 array of ``n`` finite values."""
    try:
        c = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{arg}: expected an array of numbers, got {type(x).__name__}") from None
    if c.ndim != 1 or c.size != n:
        raise ValueError(f"{arg}: expected one value per energy ({n}), got shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{arg}: values must be finite")
    return c


def _weights(s, e, arg):
    """Photons per energy bin, s(E) x bin width, checked (>= 0, positive total)."""
    c = _curve(s, e.size, arg)
    if np.any(c < 0) or not np.any(c > 0):
        raise ValueError(f"{arg}: must be >= 0 with a positive total")
    return c * _sp.bin_widths(e)


def _number(x, arg, minimum=None, strict=False):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{arg}: expected a number, got {x!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{arg}: must be finite, got {x!r}")
    if minimum is not None and (v < minimum or (strict and v == minimum)):
        raise ValueError(f"{arg}: must be {'>' if strict else '>='} {minimum:g}, got {x!r}")
    return v


def _out(x, scalar):
    return float(np.asarray(x)) if scalar else np.asarray(x, dtype=np.float32)


def _elementwise(fn, e):
    """Evaluate a core basis function (which wants a 1-D increasing grid of >= 2
    energies) at energies of any shape."""
    grid, inv = np.unique(e.ravel(), return_inverse=True)
    pad = grid.size < 2
    if pad:
        grid = np.append(grid, grid[-1] + 1.0)
    return np.asarray(fn(grid))[inv].reshape(e.shape)


# ------------------------------------------------------------------ files
def _load_two_columns(fileName):
    if not isinstance(fileName, (str, os.PathLike)):
        raise ValueError(f"fileName: expected a path, got {fileName!r}")
    name = os.fspath(fileName)
    if name.endswith(".npy"):
        data = np.load(name)
        if data.ndim != 2 or data.shape[1] != 2:
            raise ValueError(f"fileName: {name!r} must hold an (N, 2) array, got shape "
                             f"{data.shape}")
        return data
    rows = []
    with open(name) as fh:
        for k, line in enumerate(fh, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                vals = [float(v) for v in text.split()]
            except ValueError:
                vals = []
            if len(vals) != 2:
                raise ValueError(f"fileName: line {k} of {name!r} must hold two numbers "
                                 f"(energy and value), got {text!r}")
            rows.append(vals)
    if not rows:
        raise ValueError(f"fileName: {name!r} holds no data")
    return np.array(rows)


def _library():
    """({name: formula or mixture string}, {name: density g/cm^3}) of the library."""
    mats = [_mat.material(n) for n in _mat.list_materials()]
    formulas, densities = {}, {}
    for m in sorted(mats, key=lambda m: m.name.lower()):
        formulas[m.name] = m.formula or " + ".join(f"{w:.6g}*{s}" for s, w in m.composition)
        densities[m.name] = m.density
    return formulas, densities




# ------------------------------------------------------------------ helpers
def _integral_z(Z):
    z = _number(Z, "Z", 1.0)
    if abs(z - round(z)) > 1e-8 or z > 100:
        raise ValueError(f"Z: expected an integer atomic number 1..100, got {Z!r}")
    return int(round(z))


def _angles(theta):
    try:
        th = np.asarray(theta, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"theta: expected angles in degrees, got {theta!r}") from None
    if not np.all(np.isfinite(th)):
        raise ValueError("theta: angles must be finite")
    return th, th.ndim == 0


def _default_gammas(kv):
    """XrayPhysics' default energies for a kV: 1-keV steps from max(1, int(0.1 ceil(kV)))
    to ceil(kV); above 199 kV steps of floor(ceil(kV)/100) keV ending at ceil(kV)."""
    hi = max(1, int(math.ceil(kv)))
    lo = max(1, int(0.1 * math.ceil(kv)))
    step = max(1, hi // 100)
    if step > 1:
        lo = hi - int(math.ceil((hi - lo) / step)) * step
    return np.arange(lo, hi + 1, step, dtype=np.float64)


def _lut_grid(T_atten, N_atten, default_T, default_max):
    """(T, N) of a table: XrayPhysics resets both when either is not positive."""
    T = _number(T_atten, "T_atten")
    N = _number(N_atten, "N_atten")
    if N <= 0 or T <= 0.0:
        T = default_T
        return T, int(math.ceil(default_max / T)) + 1
    if N != int(N) or N < 2:
        raise ValueError(f"N_atten: must be an integer >= 2, got {N_atten!r}")
    return T, int(N)
