"""Attenuation data of :mod:`leap.physics.spectra` and :mod:`leap.physics.detectors`.

Attenuation of anodes, filters and detectors comes from
:mod:`leap.physics.cross_sections` (materials as it accepts them: elements, formulas,
mixtures, library names, :class:`leap.physics.materials.Material`), in mm²/g and 1/mm.
This module adds what only the spectra need: the mass energy-absorption coefficient of
dry air for air-kerma weighting — the NIST table of Hubbell & Seltzer (NIST Standard
Reference Database 126, "X-Ray Mass Attenuation Coefficients", Table 4, "Air, Dry (near
sea level)"), 1 keV to 1 MeV (xraylib's ``CS_Energy_CP`` is 10–35 % below it between 15
and 40 keV) — and the anodes' K-shell edges, lines and fluorescence yields (xraylib).
"""
from __future__ import annotations

import functools

import numpy as np
import xraylib

from . import cross_sections as _cs

#: Lowest energy (keV) of the attenuation data (that of leap.physics.cross_sections).
E_MIN = 1.0

__all__ = ["E_MIN", "mass_attenuation", "linear_attenuation", "air_mass_energy_absorption",
           "as_energies", "k_shell_lines", "k_edge", "k_fluorescence_yield"]

def _check_z(z, name="anode"):
    if not 1 <= z <= 98:
        raise ValueError(f"{name}: atomic number {z} out of range 1..98")
    return int(z)


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
    """Total mass attenuation coefficient μ/ρ of ``material`` in mm²/g
    (:func:`leap.physics.cross_sections.mass_attenuation`, coherent scattering
    included), same length as ``energies`` (keV)."""
    e = as_energies(energies)
    return np.atleast_1d(_cs.mass_attenuation(material, e))


def linear_attenuation(material, energies, density=None):
    """Linear attenuation coefficient μ in 1/mm; ``density`` g/cm³, default the
    material's (:func:`leap.physics.cross_sections.default_density`)."""
    e = as_energies(energies)
    _cs.mass_fractions(material)            # an unknown material is named as such first
    if density is not None:
        density = float(density)
        if not np.isfinite(density) or density <= 0:
            raise ValueError(f"density: must be finite and > 0 g/cm³, got {density}")
    return np.atleast_1d(_cs.linear_attenuation(material, e, density))


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
