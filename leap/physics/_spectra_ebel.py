"""Private: Ebel's analytical tube-spectrum model (any anode; used for Cu and Au).

Reference
---------
H. Ebel, "X-ray tube spectra", X-Ray Spectrometry 28, 255–266 (1999). The model was
fitted to tube spectra from 5 to 50 kV (side-window XRF tubes), electron incidence
50–90° and take-off 5–90°; above 50 kV it is an extrapolation.

Continuum, photons/(s·sr·mA·keV) = photons/(mAs·sr·keV) ::

    N(E) = 1.35e9 · Z · (E0/E − 1)^x · f(τ),   x = 1.109 − 0.00435 Z + 0.00175 E0

K lines (E0 > E_K), photons/(mAs·sr) ::

    N_i = 5.0e13 · (1/S) · R · ω_K · p_i · f(χ_i)
    1/S = (z_K b_K / Z)(U0 ln U0 + 1 − U0)
          · [1 + 16.05 √(J/E_K) (√U0 ln U0 + 2(1 − √U0)) / (U0 ln U0 + 1 − U0)]
    R   = 1 − 0.0081517 Z + 3.613e-5 Z² + 0.009583 Z e^{−U0} + 0.001141 E0
    z_K = 2, b_K = 0.35, J = 0.0135 Z keV, U0 = E0/E_K.

Anode self-absorption ("f" factor) along the take-off path, for photons made at a
mean mass depth ρz̄ (Love & Scott) and assumed uniformly made between 0 and 2ρz̄ ::

    f(τ) = (1 − exp(−2 τ ρz̄ sinφ/sinε)) / (2 τ ρz̄ sinφ/sinε)
    ρz̄  = ρz_m (0.49269 − 1.0987 η + 0.78557 η²) ln U0
          / (0.70256 − 1.09865 η + 1.0046 η² + ln U0)
    ρz_m = (A/Z)(0.787e-5 √J E0^1.5 + 0.735e-6 E0²)   (g/cm²)
    η    = E0^m (0.1904 − 0.2236 ln Z + 0.1292 ln²Z − 0.01491 ln³Z)
    m    = 0.1382 − 0.9211/√Z

with U0 = E0/E for the continuum and E0/E_K for the lines, φ the electron incidence
angle and ε the take-off angle (both to the anode surface), τ the anode's mass
attenuation coefficient (total, as in later implementations such as XMI-MSIM; Ebel
used photo-absorption). Fluorescence yields, line energies and line fractions p_i
from xraylib. L lines (Ebel's second set of constants) are not modelled.
"""
from __future__ import annotations

import numpy as np

from . import _spectra_xs as xs

__all__ = ["ATOMIC_WEIGHTS", "KV_RANGE", "continuum", "lines"]

#: Standard atomic weights (g/mol) of the supported anodes.
ATOMIC_WEIGHTS = {29: 63.546, 42: 95.95, 74: 183.84, 79: 196.966570}
#: Accepted tube voltages (kV); the published fit covers 5–50 kV.
KV_RANGE = (4.0, 150.0)


def _weight(z):
    try:
        return ATOMIC_WEIGHTS[int(z)]
    except KeyError:
        raise ValueError(f"anode: no Ebel anode data for Z={z}") from None


def _mean_depth(kv, z, u0):
    """Love–Scott mean mass depth of photon generation ρz̄ (g/cm²)."""
    j = 0.0135 * z
    ln_z = np.log(z)
    m = 0.1382 - 0.9211 / np.sqrt(z)
    eta = kv ** m * (0.1904 - 0.2236 * ln_z + 0.1292 * ln_z ** 2 - 0.01491 * ln_z ** 3)
    rho_zm = _weight(z) / z * (0.787e-5 * np.sqrt(j) * kv ** 1.5 + 0.735e-6 * kv ** 2)
    ln_u = np.log(u0)
    return (rho_zm * (0.49269 - 1.0987 * eta + 0.78557 * eta ** 2) * ln_u
            / (0.70256 - 1.09865 * eta + 1.0046 * eta ** 2 + ln_u))


def _absorption(tau, rho_z, sin_ratio):
    """(1 − e^{−χ})/χ with χ = 2 τ ρz̄ sinφ/sinε (→ 1 for χ → 0)."""
    chi = 2.0 * tau * rho_z * sin_ratio
    out = np.ones_like(chi)
    pos = chi > 1e-12
    out[pos] = -np.expm1(-chi[pos]) / chi[pos]
    return out


def _sin_ratio(take_off_angle, electron_angle):
    if electron_angle is None:
        electron_angle = 90.0 - take_off_angle
    return np.sin(np.radians(electron_angle)) / np.sin(np.radians(take_off_angle))


def continuum(energies, kv, take_off_angle, z, electron_angle=None):
    """Ebel bremsstrahlung in photons/(keV·mAs·sr) at ``energies`` (keV); 0 at E ≥ kV.

    ``electron_angle`` (degrees, to the anode surface) defaults to 90° − take-off,
    the usual reflection-tube geometry (electron beam ⟂ central ray).
    """
    _weight(z)
    e = np.asarray(energies, dtype=np.float64)
    out = np.zeros_like(e)
    inside = e < kv
    if not np.any(inside):
        return out
    em = e[inside]
    u0 = kv / em
    x = 1.109 - 0.00435 * z + 0.00175 * kv
    tau = xs.mass_attenuation(z, em) * 1e-2                     # cm²/g
    f = _absorption(tau, _mean_depth(kv, z, u0), _sin_ratio(take_off_angle, electron_angle))
    out[inside] = 1.35e9 * z * (u0 - 1.0) ** x * f
    return out


def lines(kv, take_off_angle, z, electron_angle=None):
    """Ebel K lines: (energies keV, photons/(mAs·sr)); empty below the K edge."""
    _weight(z)
    e_k = xs.k_edge(z)
    if kv <= e_k:
        return np.zeros(0), np.zeros(0)
    energies, fractions = xs.k_shell_lines(z)
    u0 = kv / e_k
    ln_u = np.log(u0)
    j = 0.0135 * z
    stop = u0 * ln_u + 1.0 - u0
    one_over_s = (2.0 * 0.35 / z) * stop * (
        1.0 + 16.05 * np.sqrt(j / e_k) * (np.sqrt(u0) * ln_u + 2.0 * (1.0 - np.sqrt(u0))) / stop)
    backscatter = (1.0 - 0.0081517 * z + 3.613e-5 * z * z + 0.009583 * z * np.exp(-u0)
                   + 0.001141 * kv)
    tau = xs.mass_attenuation(z, energies) * 1e-2
    f = _absorption(tau, np.full_like(tau, _mean_depth(kv, z, u0)),
                    _sin_ratio(take_off_angle, electron_angle))
    n = 5.0e13 * one_over_s * backscatter * xs.k_fluorescence_yield(z) * fractions * f
    return energies, n
