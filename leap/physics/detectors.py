"""Detector spectral responses: energy-integrating and photon-counting.

Energies in keV, thicknesses in mm, densities in g/cm³; NumPy arrays in and out.
A response R(E) weights a spectrum: the detected signal of a spectrum N(E) (per keV,
see :mod:`leap.physics.spectra`) is Σ N_i R(E_i) w_i (:func:`detected_signal`).

Model (as XrayPhysics' ``detectorResponse``): a photon entering a sensor of
thickness L at normal incidence interacts with probability

    η(E) = 1 − exp(−μ(E) L)

(μ the total linear attenuation coefficient; η is the *interaction* fraction, taken
as the absorbed fraction: K-fluorescence escape, Compton escape and optical/charge
transport are not modelled). An energy-integrating detector (scintillator + photo-
diode, e.g. CsI:Tl 0.6 mm, GOS 0.2 mm) gives a signal ∝ energy deposited, R = E·η;
a photon-counting detector (CdTe, CZT, Si) counts each interacting photon,
R = η, split into energy bins by thresholds.

Attenuation data: ``leap.physics._spectra_xs.mass_attenuation`` (xraylib now,
:mod:`leap.physics.cross_sections` later).
"""
from __future__ import annotations

import numpy as np
from scipy.special import erf

from . import _spectra_xs as xs
from .spectra import _real, _spectrum_pair, bin_widths

__all__ = ["absorbed_fraction", "energy_integrating_response", "photon_counting_response",
           "detected_signal"]


def absorbed_fraction(material, thickness_mm, energies, density=None):
    """Interaction probability η(E) = 1 − exp(−μ(E)·L) of a sensor layer.

    Parameters
    ----------
    material : str or int
        Sensor material: element, formula or alias (``"CsI"``, ``"GOS"``,
        ``"CdTe"``, ``"CZT"``, ``"Si"``, ``"a-Se"`` …).
    thickness_mm : float
        Sensor thickness L in mm (≥ 0).
    energies : array_like
        Photon energies in keV.
    density : float, optional
        g/cm³; default tabulated (CsI 4.51, GOS 7.32, CdTe 5.85, CZT 5.78).

    Returns
    -------
    ndarray
        η in [0, 1] at each energy.
    """
    t = _real(thickness_mm, "thickness_mm", 0.0)
    e = xs.as_energies(energies)
    return -np.expm1(-xs.linear_attenuation(material, e, density) * t)


def energy_integrating_response(material, thickness_mm, energies, density=None):
    """Energy-integrating detector response R(E) = E·η(E) (keV per incident photon).

    E.g. ``energy_integrating_response("CsI", 0.6, E)``. Same parameters as
    :func:`absorbed_fraction`.
    """
    e = xs.as_energies(energies)
    return e * absorbed_fraction(material, thickness_mm, e, density)


def photon_counting_response(material, thickness_mm, energies, density=None, *,
                             thresholds=None, energy_resolution_fwhm=None):
    """Photon-counting detector response (counts per incident photon).

    Parameters
    ----------
    material, thickness_mm, energies, density
        As in :func:`absorbed_fraction` (e.g. ``"CdTe"``, 2.0 mm).
    thresholds : array_like, optional
        Energy thresholds t_0 < t_1 < … < t_{K−1} in keV (> 0). Bin k counts photons
        with measured energy in [t_k, t_{k+1}); the last bin is [t_{K−1}, ∞).
        Without thresholds, every interacting photon is counted: R = η.
    energy_resolution_fwhm : float, optional
        Gaussian energy resolution (FWHM, keV) of the measured energy; default ideal
        (the measured energy is the photon energy).

    Returns
    -------
    ndarray
        ``η`` (shape ``(n_energies,)``) without thresholds, else the bin responses
        ``R[k] = η · P(measured energy in bin k)``, shape ``(K, n_energies)``.
    """
    e = xs.as_energies(energies)
    eta = absorbed_fraction(material, thickness_mm, e, density)
    if thresholds is None:
        if energy_resolution_fwhm is not None:
            raise ValueError("energy_resolution_fwhm: needs thresholds")
        return eta
    t = np.atleast_1d(np.asarray(thresholds, dtype=np.float64))
    if t.ndim != 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("thresholds: expected a 1-D array of finite energies > 0 keV")
    if np.any(np.diff(t) <= 0):
        raise ValueError("thresholds: must be strictly increasing")
    upper = np.append(t[1:], np.inf)
    if energy_resolution_fwhm is None:
        inside = (e[None, :] >= t[:, None]) & (e[None, :] < upper[:, None])
        prob = inside.astype(np.float64)
    else:
        fwhm = _real(energy_resolution_fwhm, "energy_resolution_fwhm", 0.0, strict=True)
        sigma = fwhm / (2.0 * np.sqrt(2.0 * np.log(2.0)))

        def cdf(x):
            return 0.5 * (1.0 + erf((x - e[None, :]) / (np.sqrt(2.0) * sigma)))
        prob = cdf(upper[:, None]) - cdf(t[:, None])
    return prob * eta[None, :]


def detected_signal(spectrum, energies, response):
    """Signal of a spectrum through a response: Σ_i N_i R_i w_i.

    Parameters
    ----------
    spectrum, energies : array_like
        Spectrum (per keV) and bin centres (keV), see :mod:`leap.physics.spectra`.
    response : array_like
        Response on the same energies, shape ``(n,)`` or ``(K, n)`` (energy bins).

    Returns
    -------
    float or ndarray
        Scalar for a 1-D response, shape ``(K,)`` for binned responses.
    """
    s, e = _spectrum_pair(spectrum, energies)
    r = np.asarray(response, dtype=np.float64)
    if r.shape[-1:] != e.shape or r.ndim > 2:
        raise ValueError(f"response: expected shape ({e.size},) or (K, {e.size}), got {r.shape}")
    out = r @ (s * bin_widths(e))
    return float(out) if r.ndim == 1 else out
