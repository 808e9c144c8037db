"""Private attenuation adapter for :mod:`leap.physics.spectra` and :mod:`leap.physics.detectors`.

Every attenuation coefficient that the tube-spectrum models, the filters and the
detector responses use goes through :func:`mass_attenuation` (mass attenuation
coefficient in mm²/g, the unit of :mod:`leap.physics.cross_sections`). Today it
reads xraylib (``CS_Total``: photo-electric + coherent + incoherent, EPDL97-based
tables) directly; once :mod:`leap.physics.cross_sections` exists, the body of
:func:`mass_attenuation` is the one place to switch.

The mass energy-absorption coefficient of dry air (used for air-kerma weighting) is
the NIST table of Hubbell & Seltzer (NIST Standard Reference Database 126, "X-Ray
Mass Attenuation Coefficients", Table 4, "Air, Dry (near sea level)"), 1 keV to
1 MeV. xraylib's ``CS_Energy_CP`` was not used: for air it is 10–35 % below the
NIST values between 15 and 40 keV.

Materials are given as an atomic number, an element symbol or name, a chemical
formula (``"CsI"``, ``"Gd2O2S"``, ``"Cd0.9Zn0.1Te"``), a NIST compound name known
to xraylib (``"Air, Dry (near sea level)"``) or one of the aliases in
:data:`MATERIAL_ALIASES` (``"air"``, ``"water"``, ``"GOS"``, ``"CZT"`` …).
"""
from __future__ import annotations

import functools
import numbers

import numpy as np
import xraylib
import xraylib_np

#: Energy range (keV) accepted for attenuation data: xraylib's CS_Total tables span
#: 0.1–800 keV; the floor is 1 keV, that of leap.physics.cross_sections.
E_MIN, E_MAX = 1.0, 800.0

__all__ = ["E_MIN", "E_MAX", "MATERIAL_ALIASES", "composition", "default_density",
           "mass_attenuation", "linear_attenuation", "air_mass_energy_absorption",
           "as_energies", "k_shell_lines", "k_edge", "k_fluorescence_yield"]

#: Aliases (case-insensitive) → (chemical formula or NIST compound name, density g/cm³).
MATERIAL_ALIASES = {
    "air": ("Air, Dry (near sea level)", 0.001205),
    "water": ("H2O", 1.0),
    "pmma": ("C5H8O2", 1.19),
    "lucite": ("C5H8O2", 1.19),
    "acrylic": ("C5H8O2", 1.19),
    "kapton": ("C22H10N2O5", 1.42),
    "polyimide": ("C22H10N2O5", 1.42),
    "csi": ("CsI", 4.51),
    "nai": ("NaI", 3.67),
    "gos": ("Gd2O2S", 7.32),
    "gadox": ("Gd2O2S", 7.32),
    "gd2o2s": ("Gd2O2S", 7.32),
    "cdte": ("CdTe", 5.85),
    "czt": ("Cd0.9Zn0.1Te", 5.78),
    "cdznte": ("Cd0.9Zn0.1Te", 5.78),
    "lyso": ("Lu1.8Y0.2SiO5", 7.1),
    "bgo": ("Bi4Ge3O12", 7.13),
    "a-se": ("Se", 4.28),
    "gaas": ("GaAs", 5.32),
}

#: Element names (lower case) → atomic number, for the elements used as anodes,
#: filters and detectors.
_ELEMENT_NAMES = {
    "hydrogen": 1, "beryllium": 4, "carbon": 6, "nitrogen": 7, "oxygen": 8,
    "aluminium": 13, "aluminum": 13, "silicon": 14, "titanium": 22, "iron": 26,
    "copper": 29, "zinc": 30, "germanium": 32, "selenium": 34, "molybdenum": 42,
    "rhodium": 45, "silver": 47, "cadmium": 48, "tin": 50, "tellurium": 52,
    "iodine": 53, "caesium": 55, "cesium": 55, "gadolinium": 64, "hafnium": 72,
    "tantalum": 73, "tungsten": 74, "rhenium": 75, "gold": 79, "lead": 82,
    "bismuth": 83,
}


def _check_z(z, name="material"):
    if not 1 <= z <= 98:
        raise ValueError(f"{name}: atomic number {z} out of range 1..98")
    return int(z)


@functools.lru_cache(maxsize=256)
def _resolve(material):
    """(atomic numbers, mass fractions, default density or None) of a material key."""
    if isinstance(material, numbers.Integral) and not isinstance(material, bool):
        z = _check_z(int(material))
        return (z,), (1.0,), float(xraylib.ElementDensity(z))
    if not isinstance(material, str) or not material.strip():
        raise ValueError(f"material: expected an atomic number, element, formula or "
                         f"compound name, got {material!r}")
    key = material.strip()
    density = None
    alias = MATERIAL_ALIASES.get(key.lower())
    if alias is not None:
        key, density = alias
    z = _ELEMENT_NAMES.get(key.lower())
    if z is not None:
        return (z,), (1.0,), float(xraylib.ElementDensity(z))
    try:
        data = xraylib.CompoundParser(key)
    except ValueError:
        data = None
    if data is not None:
        zs = tuple(int(v) for v in data["Elements"])
        fr = tuple(float(v) for v in data["massFractions"])
        if density is None and len(zs) == 1:
            density = float(xraylib.ElementDensity(zs[0]))
        return zs, fr, density
    try:
        data = xraylib.GetCompoundDataNISTByName(key)
    except ValueError:
        raise ValueError(f"material: unknown material {material!r} (not an element, a "
                         f"chemical formula, a NIST compound name nor an alias)") from None
    zs = tuple(int(v) for v in data["Elements"])
    fr = tuple(float(v) for v in data["massFractions"])
    return zs, fr, (float(data["density"]) if density is None else density)


def _lookup(material):
    try:
        return _resolve(material)
    except TypeError:                       # unhashable (list, array, …)
        raise ValueError(f"material: expected an atomic number, element, formula or "
                         f"compound name, got {material!r}") from None


def composition(material):
    """Elemental make-up of ``material``.

    Returns
    -------
    zs : ndarray of int
        Atomic numbers.
    fractions : ndarray of float
        Mass fractions (sum 1).
    """
    zs, fr, _ = _lookup(material)
    return np.array(zs, dtype=np.int64), np.array(fr, dtype=np.float64)


def default_density(material):
    """Density of ``material`` in g/cm³ (element, alias or NIST compound).

    Raises
    ------
    ValueError
        If the material is a plain chemical formula without a known density.
    """
    density = _lookup(material)[2]
    if density is None:
        raise ValueError(f"density: no default density for material {material!r}; "
                         "pass density= (g/cm³)")
    return density


def as_energies(energies, name="energies", increasing=False):
    """Validate photon energies (keV): finite, > 0, 1-D (a scalar becomes length 1).

    With ``increasing=True`` they must also be strictly increasing (a bin grid).
    """
    e = np.atleast_1d(np.asarray(energies, dtype=np.float64))
    if e.ndim != 1 or e.size == 0:
        raise ValueError(f"{name}: expected a non-empty 1-D array of energies (keV)")
    if not np.all(np.isfinite(e)) or np.any(e <= 0):
        raise ValueError(f"{name}: energies must be finite and > 0 keV")
    if increasing and e.size > 1 and np.any(np.diff(e) <= 0):
        raise ValueError(f"{name}: energies must be strictly increasing")
    return e


def mass_attenuation(material, energies):
    """Total mass attenuation coefficient μ/ρ of ``material`` in mm²/g.

    The single data-source switch of the spectra/detector code (see the module
    docstring): xraylib ``CS_Total`` (cm²/g) weighted by mass fractions, × 100.

    Parameters
    ----------
    material : int or str
        Atomic number, element, chemical formula, NIST compound name or alias.
    energies : array_like
        Photon energies in keV, within :data:`E_MIN`–:data:`E_MAX` (1–800 keV).

    Returns
    -------
    ndarray
        μ/ρ in mm²/g, same length as ``energies``.
    """
    e = as_energies(energies)
    if e.min() < E_MIN or e.max() > E_MAX:
        raise ValueError(f"energies: attenuation data cover {E_MIN:g}–{E_MAX:g} keV, got "
                         f"{e.min():g}–{e.max():g} keV")
    zs, fr = composition(material)
    # ---- data source: the one line to switch to leap.physics.cross_sections ----
    #   return cross_sections.mass_attenuation(dict(zip(zs.tolist(), fr.tolist())), e)
    per_element = xraylib_np.CS_Total(zs, e)          # (n_elements, n_energies), cm²/g
    return 100.0 * (fr @ per_element)


def linear_attenuation(material, energies, density=None):
    """Linear attenuation coefficient μ in 1/mm.

    Parameters
    ----------
    material : int or str
        See :func:`mass_attenuation`.
    energies : array_like
        Photon energies in keV.
    density : float, optional
        Density in g/cm³; default :func:`default_density`.
    """
    if density is None:
        density = default_density(material)
    density = float(density)
    if not np.isfinite(density) or density <= 0:
        raise ValueError(f"density: must be finite and > 0 g/cm³, got {density}")
    # mm²/g × g/cm³ = mm²/g × 1e-3 g/mm³ = 1/mm × 1e-3
    return mass_attenuation(material, energies) * density * 1e-3


# NIST SRD 126 (Hubbell & Seltzer), dry air near sea level: energy (keV), μen/ρ (cm²/g).
# Two rows at the argon K edge (3.2029 keV): below, then above.
_AIR_MUEN = np.array([
    (1.0, 3.599e3), (1.5, 1.188e3), (2.0, 5.262e2), (3.0, 1.614e2),
    (3.2029, 1.330e2), (3.2029, 1.460e2), (4.0, 7.636e1), (5.0, 3.931e1),
    (6.0, 2.270e1), (8.0, 9.446e0), (10.0, 4.742e0), (15.0, 1.334e0),
    (20.0, 5.389e-1), (30.0, 1.537e-1), (40.0, 6.833e-2), (50.0, 4.098e-2),
    (60.0, 3.041e-2), (80.0, 2.407e-2), (100.0, 2.325e-2), (150.0, 2.496e-2),
    (200.0, 2.672e-2), (300.0, 2.872e-2), (400.0, 2.949e-2), (500.0, 2.966e-2),
    (600.0, 2.953e-2), (800.0, 2.882e-2), (1000.0, 2.789e-2)])
_AR_K_EDGE = 3.2029


def _loglog(x, table):
    lx, ly = np.log(table[:, 0]), np.log(table[:, 1])
    lxx = np.log(x)
    y = np.interp(lxx, lx, ly)
    # log-log linear extrapolation beyond the table ends
    lo, hi = lxx < lx[0], lxx > lx[-1]
    y[lo] = ly[0] + (lxx[lo] - lx[0]) * (ly[1] - ly[0]) / (lx[1] - lx[0])
    y[hi] = ly[-1] + (lxx[hi] - lx[-1]) * (ly[-1] - ly[-2]) / (lx[-1] - lx[-2])
    return np.exp(y)


def air_mass_energy_absorption(energies):
    """Mass energy-absorption coefficient μen/ρ of dry air in mm²/g (NIST SRD 126).

    Log-log interpolation of the NIST table (1 keV–1 MeV, argon K edge kept),
    log-log extrapolation outside it.
    """
    e = as_energies(energies)
    out = np.empty_like(e)
    below = e < _AR_K_EDGE
    out[below] = _loglog(e[below], _AIR_MUEN[:5])
    out[~below] = _loglog(e[~below], _AIR_MUEN[5:])
    return 100.0 * out


# Individual K-shell transitions (xraylib line macros; the aggregate KA/KB/KO/KP
# macros are left out so that no line is counted twice).
_K_LINE_NAMES = ([f"KL{i}" for i in range(1, 4)] + [f"KM{i}" for i in range(1, 6)]
                 + [f"KN{i}" for i in range(1, 8)] + [f"KO{i}" for i in range(1, 8)]
                 + [f"KP{i}" for i in range(1, 6)])


@functools.lru_cache(maxsize=32)
def _k_lines(z):
    energies, rates = [], []
    for name in _K_LINE_NAMES:
        macro = getattr(xraylib, name + "_LINE", None)
        if macro is None:
            continue
        try:
            rate = xraylib.RadRate(z, macro)
            energy = xraylib.LineEnergy(z, macro)
        except ValueError:
            continue
        if rate > 0 and energy > 0:
            energies.append(energy)
            rates.append(rate)
    order = np.argsort(energies)
    return tuple(np.array(energies)[order]), tuple(np.array(rates)[order])


def k_shell_lines(z):
    """K-shell emission lines of element ``z`` (xraylib).

    Returns
    -------
    energies : ndarray
        Line energies in keV, increasing (e.g. W: Kα2 57.98, Kα1 59.32, Kβ3 66.95,
        Kβ1 67.24, Kβ2 69.07 … keV).
    fractions : ndarray
        Radiative rates: the fraction of K-shell radiative decays emitting each line
        (they sum to ≈ 1).
    """
    e, r = _k_lines(_check_z(int(z), "anode"))
    return np.array(e), np.array(r)


def k_edge(z):
    """K-shell absorption-edge (binding) energy of element ``z`` in keV (xraylib)."""
    return float(xraylib.EdgeEnergy(_check_z(int(z), "anode"), xraylib.K_SHELL))


def k_fluorescence_yield(z):
    """K-shell fluorescence yield ω_K of element ``z`` (xraylib)."""
    return float(xraylib.FluorYield(_check_z(int(z), "anode"), xraylib.K_SHELL))
