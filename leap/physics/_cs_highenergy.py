"""Photon cross sections above the xraylib tables (800 keV to 20 MeV) and pair production.

Private helper of :mod:`leap.physics.cross_sections`; every function works per element,
in cm^2/g (mass attenuation) unless it says otherwise, with photon energies in keV.
xraylib tabulates photoelectric absorption, incoherent and coherent scattering up to
``E0 = 800 keV`` only and has no pair production; this module continues each component
above ``E0`` from its tabulated value at ``E0`` (so every component is continuous there)
and adds pair production from its threshold.

Models and their sources
------------------------
Incoherent (Compton) scattering
    Klein-Nishina cross section per electron (O. Klein and Y. Nishina, Z. Phys. 52, 853
    (1929)) times Z. Electron binding lowers the tabulated value at ``E0`` by a fraction
    ``1 - r0`` (0.1 % for H to 1 % for heavy elements); that deficit is carried on as
    ``r0 - 1`` times ``E0/E`` so the blend is continuous at ``E0`` and tends to the
    free-electron value (the binding effect falls roughly as 1/E, J. H. Hubbell et al.,
    J. Phys. Chem. Ref. Data 4, 471 (1975)). Radiative and double-Compton corrections
    (+0.2 % to +0.5 % at 2-20 MeV in XCOM) are not included: the result is 0.05-0.5 %
    below XCOM's incoherent cross section between 0.8 and 20 MeV.
Coherent (Rayleigh) scattering
    High-energy asymptote of the form-factor approximation, sigma proportional to E^-2
    (the integral of F(q)^2 over momentum transfer becomes energy independent), scaled
    to the tabulated value at ``E0``. Within 6 % of XCOM up to 20 MeV (Z <= 92); it is
    below 0.3 % of the total there.
Photoelectric absorption
    Sauter's relativistic K-shell cross section (F. Sauter, Ann. Phys. 403, 454 (1931);
    W. Heitler, The Quantum Theory of Radiation, 3rd ed., 1954, eq. 21.29) gives the
    energy shape, normalised to the tabulated value at ``E0``. Sauter's Born
    approximation misses the Coulomb distortion that shrinks with energy for heavy
    atoms (R. H. Pratt, Phys. Rev. 117, 1017 (1960)); this is taken into account by the
    factor ``1 - A(xi) * (1 - exp(-(ln(E/E0)/1.817)^2))`` with ``xi = alpha Z`` and
    ``A = 1.056 xi - 0.867 xi^2``. The three numbers were fitted *for this module* to
    the XCOM photoeffect cross sections (Scofield 1973 up to 1.5 MeV and Hubbell's
    semi-empirical connection to Pratt's high-energy limit above; M. J. Berger and
    J. H. Hubbell, NBSIR 87-3597, 1987) for Z = 6-92 between 0.8 and 20 MeV: residual
    within 4 % there (10 % for hydrogen, whose photoeffect is negligible); the
    photoeffect is below 3 % of the total above 5 MeV.
Pair production (nuclear + electron field)
    The parametrised total cross section per atom of L. Urban,
    ``sigma = (Z + 1) (F1(X) Z + F2(X) Z^2 + F3(X))`` microbarn with
    ``X = ln(E / m c^2)`` and fifth-order polynomials F1-F3, fitted to the tables of
    J. H. Hubbell, H. A. Gimm and I. Overbo, J. Phys. Chem. Ref. Data 9, 1023 (1980) and
    published in the Geant4 Physics Reference Manual (section "Gamma conversion",
    G4BetheHeitlerModel; S. Agostinelli et al., NIM A 506, 250 (2003)). Below 1.5 MeV it
    is scaled by ``((E - 2mc^2) / (1.5 MeV - 2mc^2))^2`` (zero at the 1.022 MeV
    threshold), as in that manual. Stated accuracy: about 5 % from 1.5 MeV to 100 GeV;
    measured here against XCOM between 1.5 and 20 MeV: within +7.9/-7.3 % for Z = 1-92
    (largest for H near 3 MeV and C, N, O at 1.5 MeV, where pair production is a small
    part of the total), +2.6/-3.8 % for lead, +4.4/-6.9 % for uranium.
Split between the nuclear and the electron field (triplet production)
    The total above is divided as ``Z : eta`` with the triplet-to-pair ratio per
    electron ``eta(k, Z) = (1 - exp(-0.7175 x^2 / (1 + 0.8574 x))) (1 + 0.175 Z / 100)``,
    ``x = ln(k / 4)``, ``k = E / m c^2`` (zero below the 2.044 MeV triplet threshold).
    This interpolation was fitted *for this module* to the ratio of the electron- to the
    nuclear-field cross sections of Hubbell, Gimm and Overbo (1980) as tabulated in
    XCOM; absolute error of eta within 0.03 between 2.1 and 20 MeV. It only moves cross
    section between the two pair components; their sum is Urban's.

Constants: CODATA 2018 (m c^2 = 510.99895 keV, r_e = 2.8179403262e-13 cm,
N_A = 6.02214076e23 /mol, alpha = 1/137.035999084).
"""

from __future__ import annotations

import numpy as np

ELECTRON_REST_ENERGY_KEV = 510.99895
CLASSICAL_ELECTRON_RADIUS_CM = 2.8179403262e-13
AVOGADRO = 6.02214076e23
FINE_STRUCTURE = 1.0 / 137.035999084
BARN_CM2 = 1.0e-24

E_TABLE_MAX_KEV = 800.0  # last energy tabulated by xraylib
PAIR_THRESHOLD_KEV = 2.0 * ELECTRON_REST_ENERGY_KEV
TRIPLET_THRESHOLD_KEV = 4.0 * ELECTRON_REST_ENERGY_KEV

# Urban's pair-production parametrisation (Geant4 Physics Reference Manual), microbarn.
_URBAN_A = (8.7842e2, -1.9625e3, 1.2949e3, -2.0028e2, 1.2575e1, -2.8333e-1)
_URBAN_B = (-1.0342e1, 1.7692e1, -8.2381, 1.3063, -9.0815e-2, 2.3586e-3)
_URBAN_C = (-4.5263e2, 1.1161e3, -8.6749e2, 2.1773e2, -2.0467e1, 6.5372e-1)
_URBAN_LOW_KEV = 1500.0

# High-Z correction of the Sauter shape and the triplet ratio (fitted, see docstring).
_PE_A1, _PE_A2, _PE_WIDTH = 1.056, 0.867, 1.817
_ETA_P, _ETA_Q, _ETA_Z = 0.7175, 0.8574, 0.175


def klein_nishina(energy):
    """Klein-Nishina total cross section per free electron.

    Parameters
    ----------
    energy : array_like
        Photon energy in keV (> 0).

    Returns
    -------
    numpy.ndarray
        Cross section in cm^2 per electron.
    """
    k = np.asarray(energy, dtype=float) / ELECTRON_REST_ENERGY_KEV
    ks = np.maximum(k, 0.02)
    t = 1.0 + 2.0 * ks
    log_t = np.log(t)
    bracket = ((1.0 + ks) / ks**2 * (2.0 * (1.0 + ks) / t - log_t / ks)
               + log_t / (2.0 * ks) - (1.0 + 3.0 * ks) / t**2)
    # below k = 0.02 the closed form loses digits; use its Taylor series there
    series = (4.0 / 3.0) * (1.0 - 2.0 * k + 5.2 * k**2 - 13.3 * k**3 + 1144.0 / 35.0 * k**4)
    bracket = np.where(k < 0.02, series, bracket)
    return 2.0 * np.pi * CLASSICAL_ELECTRON_RADIUS_CM**2 * bracket


def _sauter_shape(energy):
    """Energy dependence of Sauter's K-shell photoeffect cross section (arbitrary scale)."""
    k = np.asarray(energy, dtype=float) / ELECTRON_REST_ENERGY_KEV
    g = 1.0 + k                     # photoelectron total energy / mc^2 (binding neglected)
    b = np.sqrt(g * g - 1.0)
    log_term = np.log((g + b) / (g - b))
    return b**3 / k**5 * (4.0 / 3.0 + g * (g - 2.0) / (g + 1.0)
                          * (1.0 - log_term / (2.0 * g * b)))


def photoelectric_high(z, energy, sigma0):
    """Photoelectric mass attenuation above ``E0 = 800 keV``.

    Parameters
    ----------
    z : int
        Atomic number.
    energy : array_like
        Photon energies in keV (>= 800).
    sigma0 : float
        Tabulated photoelectric mass attenuation at 800 keV, cm^2/g.

    Returns
    -------
    numpy.ndarray
        Photoelectric mass attenuation in cm^2/g.
    """
    energy = np.asarray(energy, dtype=float)
    xi = FINE_STRUCTURE * z
    amp = _PE_A1 * xi - _PE_A2 * xi * xi
    u = np.log(energy / E_TABLE_MAX_KEV)
    corr = 1.0 - amp * (1.0 - np.exp(-(u / _PE_WIDTH) ** 2))
    return sigma0 * _sauter_shape(energy) / _sauter_shape(E_TABLE_MAX_KEV) * corr


def coherent_high(energy, sigma0):
    """Coherent (Rayleigh) mass attenuation above 800 keV, ``sigma0 (800 keV / E)^2``.

    Parameters
    ----------
    energy : array_like
        Photon energies in keV (>= 800).
    sigma0 : float
        Tabulated coherent mass attenuation at 800 keV, cm^2/g.

    Returns
    -------
    numpy.ndarray
        Coherent mass attenuation in cm^2/g.
    """
    return sigma0 * (E_TABLE_MAX_KEV / np.asarray(energy, dtype=float)) ** 2


def incoherent_high(z, energy, sigma0, atomic_mass):
    """Incoherent (Compton) mass attenuation above 800 keV: Klein-Nishina with a fading
    binding correction.

    Parameters
    ----------
    z : int
        Atomic number.
    energy : array_like
        Photon energies in keV (>= 800).
    sigma0 : float
        Tabulated incoherent mass attenuation at 800 keV, cm^2/g.
    atomic_mass : float
        Standard atomic weight, g/mol.

    Returns
    -------
    numpy.ndarray
        Incoherent mass attenuation in cm^2/g.
    """
    energy = np.asarray(energy, dtype=float)
    per_gram = z * AVOGADRO / atomic_mass
    free0 = per_gram * klein_nishina(E_TABLE_MAX_KEV)
    r0 = sigma0 / free0
    return per_gram * klein_nishina(energy) * (1.0 + (r0 - 1.0) * E_TABLE_MAX_KEV / energy)


def pair_total_barn(z, energy):
    """Pair production (nuclear plus electron field) per atom, Urban's parametrisation.

    Parameters
    ----------
    z : int
        Atomic number.
    energy : array_like
        Photon energies in keV.

    Returns
    -------
    numpy.ndarray
        Cross section in barn per atom; zero at and below 1022 keV.
    """
    energy = np.asarray(energy, dtype=float)
    e_fit = np.maximum(energy, _URBAN_LOW_KEV)
    x = np.log(e_fit / ELECTRON_REST_ENERGY_KEV)
    f1 = np.polynomial.polynomial.polyval(x, _URBAN_A)
    f2 = np.polynomial.polynomial.polyval(x, _URBAN_B)
    f3 = np.polynomial.polynomial.polyval(x, _URBAN_C)
    sigma = (z + 1.0) * (f1 * z + f2 * z * z + f3) * 1.0e-6
    ramp = (energy - PAIR_THRESHOLD_KEV) / (_URBAN_LOW_KEV - PAIR_THRESHOLD_KEV)
    sigma = np.where(energy < _URBAN_LOW_KEV, sigma * ramp * ramp, sigma)
    return np.where(energy > PAIR_THRESHOLD_KEV, np.maximum(sigma, 0.0), 0.0)


def triplet_ratio(z, energy):
    """Triplet-to-pair cross-section ratio per atomic electron, ``eta`` (dimensionless).

    Parameters
    ----------
    z : int
        Atomic number.
    energy : array_like
        Photon energies in keV.

    Returns
    -------
    numpy.ndarray
        ``eta = Z sigma_electron_field / sigma_nuclear_field``; zero below 2044 keV.
    """
    k = np.asarray(energy, dtype=float) / ELECTRON_REST_ENERGY_KEV
    x = np.log(np.maximum(k, 4.0) / 4.0)
    eta = (1.0 - np.exp(-_ETA_P * x * x / (1.0 + _ETA_Q * x))) * (1.0 + _ETA_Z * z / 100.0)
    return np.where(k > 4.0, eta, 0.0)


def pair_components(z, energy, atomic_mass):
    """Pair production in the nuclear and in the electron field, mass attenuation.

    Parameters
    ----------
    z : int
        Atomic number.
    energy : array_like
        Photon energies in keV.
    atomic_mass : float
        Standard atomic weight, g/mol.

    Returns
    -------
    tuple of numpy.ndarray
        ``(nuclear, electron)`` in cm^2/g.
    """
    total = pair_total_barn(z, energy) * BARN_CM2 * AVOGADRO / atomic_mass
    eta = triplet_ratio(z, energy)
    electron = total * eta / (z + eta)
    return total - electron, electron
