"""Private: the Tucker–Barnes–Chakraborty (TBC) semi-empirical tube-spectrum model.

References
----------
* D. M. Tucker, G. T. Barnes, D. P. Chakraborty, "Semiempirical model for generating
  tungsten target x-ray spectra", Med. Phys. 18(2), 211–218 (1991) — the model and
  the tungsten parameters.
* D. M. Tucker, G. T. Barnes, X. Wu, "Molybdenum target x-ray spectra: A
  semiempirical model", Med. Phys. 18(3), 402–407 (1991) — molybdenum parameters.
* R. Birch, M. Marshall, "Computation of bremsstrahlung X-ray spectra and comparison
  with spectra measured with a Ge(Li) detector", Phys. Med. Biol. 24, 505–517 (1979)
  — the Thomson–Whiddington constants (their table, used through a rational fit).

The model (TBC eqs. for bremsstrahlung and characteristic emission):

* Electrons of initial energy T0 = e·kV enter the anode and slow down; their energy
  at mass depth ρx follows the Thomson–Whiddington law T² = T0² − C(T0)·ρx.
* Bremsstrahlung photons of energy E created by an electron of energy T travel to
  the surface and leave along the central ray at the take-off (target) angle θ,
  attenuated by F = exp(−(μ/ρ)(E)·(T0² − T²)/(C sin θ)).
* The number of photons per electron per keV (into 4π, isotropic) is ::

      N_b(E) = (α r_e² N_A Z²/A) · 10³ / E · ∫_E^T0 B(E,T) (T + m_e c²)/T · F / S(T) dT

  with the empirical shape B(E,T) = (A0 + A1 T0)(1 + B1 y + B2 y² + B3 y³ + B4 y⁴),
  y = E/T, and the fitted mass stopping power S(T) = a + b·exp(−c T)
  (keV cm²/g). The factor 10³ goes with the published A0, A1 (it is in the public
  ports of the authors' code, e.g. CONRAD's ``XRaySpectrum``); without it the
  output would be 10³ below real tubes, with it the air kerma of a filtered beam is
  within ~20 % of SpekCalc's (80 and 110 kV, see the tests).
* K lines (only for T0 > E_K): per electron (4π) ::

      N_i = A_K (T0/E_K − 1)^n_K · f_i · ∫_0^R P(x) exp(−(μ/ρ)(E_i) x / sin θ) dx,
      P(x) = (3 / 2R)(1 − (x/R)²),  R = (T0² − E_K²)/C(T0)  (mass depth, g/cm²),

  f_i the fraction of K-shell radiative decays giving line i.

Line energies, edges and line fractions come from xraylib, the anode attenuation
from ``leap.physics._spectra_xs.mass_attenuation``. The paper's tungsten target
is pure W here (the authors' own code mixed in 10 % rhenium).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _spectra_xs as xs

__all__ = ["PARAMETERS", "ELECTRONS_PER_MAS", "thomson_whiddington_constant",
           "continuum", "lines"]

#: Electrons per mAs (1 mC / e).
ELECTRONS_PER_MAS = 1e-3 / 1.602176634e-19
_ALPHA = 7.2973525693e-3          # fine-structure constant
_RE_CM = 2.8179403262e-13         # classical electron radius (cm)
_NA = 6.02214076e23               # Avogadro (1/mol)
_MC2 = 510.99895                  # electron rest energy (keV)
_PER_SR = ELECTRONS_PER_MAS / (4.0 * np.pi)   # per electron (4π) → per mAs per sr

_GL_T = np.polynomial.legendre.leggauss(64)
_GL_X = np.polynomial.legendre.leggauss(24)


@dataclass(frozen=True)
class TBCParameters:
    """Published TBC / TBW parameters of one anode."""
    z: int
    atomic_weight: float           # g/mol
    a0: float                      # photons/electron
    a1: float                      # photons/(electron keV)
    b: tuple                       # B1..B4
    a_k: float                     # photons/electron
    n_k: float
    stopping: tuple                # (a keV cm²/g, b keV cm²/g, c 1/keV)
    kv_range: tuple                # accepted tube voltages (kV)


#: Parameters: TBC (1991) Table for W; Tucker, Barnes & Wu (1991) for Mo.
PARAMETERS = {
    74: TBCParameters(74, 183.84, 3.685e-2, 2.900e-5, (-5.049, 10.847, -10.516, 3.842),
                      1.349e-3, 1.648, (2024.1, 10361.0, 0.04695), (15.0, 300.0)),
    42: TBCParameters(42, 95.95, 3.033e-2, -7.494e-5, (-4.238, 7.799, -6.739, 2.313),
                      7.773e-4, 1.613, (2458.08, 14155.1, 0.04983), (15.0, 100.0)),
}


def thomson_whiddington_constant(kv):
    """Thomson–Whiddington constant C(T0) in keV²·cm²/g.

    Rational fit (±0.4 %) to Birch & Marshall's (1979) tabulated values, used by TBC:
    C = 5.4e5, 6.25e5, 7.0e5, 8.4e5, 1.0e6 keV² cm²/g at T0 = 50, 75, 100, 150,
    200 keV. Used for both anodes, as in the TBC/TBW papers.
    """
    x = 0.01 * np.asarray(kv, dtype=np.float64)
    return (0.20 + x * (0.47 + x * (0.21 + 1.08 * x))) / (1.0 + x * (-1.19 + 3.00 * x)) * 1e6


def _params(z):
    try:
        return PARAMETERS[int(z)]
    except KeyError:
        raise ValueError(f"anode: the TBC model has parameters for W (74) and Mo (42) "
                         f"only, not Z={z}") from None


def continuum(energies, kv, take_off_angle, z):
    """TBC bremsstrahlung in photons/(keV·mAs·sr) at ``energies`` (keV).

    Zero at and above ``kv``. ``take_off_angle`` in degrees.
    """
    p = _params(z)
    e = np.asarray(energies, dtype=np.float64)
    out = np.zeros_like(e)
    inside = e < kv
    if not np.any(inside):
        return out
    em = e[inside]
    c_tw = thomson_whiddington_constant(kv)
    sin_t = np.sin(np.radians(take_off_angle))
    # attenuation per unit u = T0² − T² (keV²): a = (μ/ρ)/(C sin θ); μ/ρ in cm²/g
    a = xs.mass_attenuation(p.z, em) * 1e-2 / (c_tw * sin_t)
    u_max = kv * kv - em * em
    # substitution t = 1 − exp(−a u) makes the exponential weight exact:
    # ∫_0^Umax g(u) e^{−a u} du = (1/a) ∫_0^{tmax} g(u(t)) dt
    t_max = -np.expm1(-a * u_max)
    nodes, weights = _GL_T
    t = 0.5 * (nodes[None, :] + 1.0) * t_max[:, None]
    u = -np.log1p(-t) / a[:, None]
    T = np.sqrt(np.maximum(kv * kv - u, (em * em)[:, None]))
    y = em[:, None] / T
    b1, b2, b3, b4 = p.b
    shape = (p.a0 + p.a1 * kv) * (1.0 + y * (b1 + y * (b2 + y * (b3 + y * b4))))
    sa, sb, sc = p.stopping
    stopping = sa + sb * np.exp(-sc * T)                     # keV cm²/g
    g = shape * (T + _MC2) / T / stopping / (2.0 * T)          # dT = du / (2T)
    integral = 0.5 * (g * weights[None, :]).sum(axis=1) * t_max / a
    k = _ALPHA * _RE_CM ** 2 * _NA * p.z ** 2 / p.atomic_weight * 1e3   # cm²/g
    out[inside] = k * integral / em * _PER_SR
    return out


def lines(kv, take_off_angle, z):
    """TBC K lines: (energies keV, photons/(mAs·sr)); empty below the K edge."""
    p = _params(z)
    e_k = xs.k_edge(p.z)
    if kv <= e_k:
        return np.zeros(0), np.zeros(0)
    energies, fractions = xs.k_shell_lines(p.z)
    r = (kv * kv - e_k * e_k) / thomson_whiddington_constant(kv)      # g/cm²
    a = xs.mass_attenuation(p.z, energies) * 1e-2 / np.sin(np.radians(take_off_angle))
    nodes, weights = _GL_X
    s = 0.5 * (nodes + 1.0)
    depth = 1.5 * (1.0 - s * s)                                      # ∫_0^1 = 1
    escape = 0.5 * (depth[None, :] * np.exp(-np.outer(a * r, s)) * weights).sum(axis=1)
    n = p.a_k * (kv / e_k - 1.0) ** p.n_k * fractions * escape * _PER_SR
    return energies, n
