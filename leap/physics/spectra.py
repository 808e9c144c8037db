"""X-ray tube spectra, filters and beam-quality metrics.

Energies are in keV, thicknesses in mm, densities in g/cm³, NumPy arrays in and out.

Spectra are *spectral densities on an energy grid*: ``energies`` are bin centres
(keV, strictly increasing), the bins reach half-way to the neighbouring centres (the
first and last extend symmetrically; a single energy has a 1 keV bin; see
:func:`bin_edges`), and ``spectrum[i]`` is the number of photons per keV averaged
over bin ``i`` — so ``spectrum * bin_widths(energies)`` are photons per bin, and on
the default 1-keV grid the two coincide.

Tube spectra (:func:`tube_spectrum`) come from published physical models:

* ``"tbc"`` — Tucker, Barnes & Chakraborty, Med. Phys. 18, 211 (1991), tungsten;
  Tucker, Barnes & Wu, Med. Phys. 18, 402 (1991), molybdenum. Bremsstrahlung with
  Thomson–Whiddington electron penetration (constants of Birch & Marshall, Phys.
  Med. Biol. 24, 505 (1979)), anode self-absorption along the take-off path and
  depth-distributed K lines. Default for W and Mo.
* ``"ebel"`` — H. Ebel, X-Ray Spectrom. 28, 255 (1999): analytical bremsstrahlung and
  K lines for any anode, Love–Scott mean penetration depth and anode
  self-absorption. Default for Cu and Au (fitted to 5–50 kV XRF tubes).

Details of the two models: ``leap.physics._spectra_tbc``,
``leap.physics._spectra_ebel``. Output unit: photons / (keV · mAs · sr) leaving
the anode along the central ray; divide by the squared distance in mm² for a fluence
(e.g. × 1e-6 for photons/(keV·mAs·mm²) at 1 m, before air attenuation).

The API follows XrayPhysics' ``simulateSpectra(kV, takeOffAngle, Z, gammas)``
(which returns ``(gammas, spectrum)``, relative units, anodes Cu/Mo/W/Au): a shim
maps ``takeOffAngle`` → ``take_off_angle``, ``Z`` → ``anode``, ``gammas`` →
``energies``.

Attenuation coefficients come from ``leap.physics._spectra_xs.mass_attenuation``
(xraylib for now; switching it to :mod:`leap.physics.cross_sections` is a one-line
change there).
"""
from __future__ import annotations

import numbers

import numpy as np

from . import _spectra_ebel as ebel
from . import _spectra_tbc as tbc
from . import _spectra_xs as xs

__all__ = ["ANODES", "MODELS", "default_energies", "bin_edges", "bin_widths",
           "tube_spectrum", "characteristic_lines", "filter_response", "apply_filters",
           "normalize", "mean_energy", "half_value_layer", "effective_energy",
           "air_kerma", "resample"]

#: The anodes supported, symbol → atomic number.
ANODES = {"W": 74, "Mo": 42, "Cu": 29, "Au": 79}
_ANODE_NAMES = {"tungsten": 74, "molybdenum": 42, "copper": 29, "gold": 79}
#: Spectrum models and the anodes each supports.
MODELS = {"tbc": (74, 42), "ebel": (29, 42, 74, 79)}
_DEFAULT_MODEL = {74: "tbc", 42: "tbc", 29: "ebel", 79: "ebel"}
_SUBSAMPLES = 8                # continuum samples per energy bin (bin average)


# ---------------------------------------------------------------- validation helpers
def _real(value, name, minimum=None, strict=False):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        try:
            value = float(np.asarray(value, dtype=np.float64).item())
        except (TypeError, ValueError):
            raise ValueError(f"{name}: expected a real number, got {value!r}") from None
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name}: must be finite, got {value}")
    if minimum is not None and (value < minimum or (strict and value == minimum)):
        op = ">" if strict else ">="
        raise ValueError(f"{name}: must be {op} {minimum}, got {value}")
    return value


def _anode_z(anode):
    if isinstance(anode, numbers.Integral) and not isinstance(anode, bool):
        z = int(anode)
    elif isinstance(anode, str):
        key = anode.strip()
        z = ANODES.get(key) or ANODES.get(key.capitalize()) or _ANODE_NAMES.get(key.lower())
    else:
        z = None
    if z not in _DEFAULT_MODEL:
        raise ValueError(f"anode: unsupported anode {anode!r}; use one of "
                         f"{sorted(ANODES)} or Z in {sorted(ANODES.values())}")
    return z


def _model_for(model, z):
    if model is None:
        return _DEFAULT_MODEL[z]
    key = str(model).lower()
    if key not in MODELS:
        raise ValueError(f"model: unknown spectrum model {model!r}; use one of {sorted(MODELS)}")
    if z not in MODELS[key]:
        raise ValueError(f"model: {key!r} has no parameters for anode Z={z}")
    return key


def _spectrum_pair(spectrum, energies):
    e = xs.as_energies(energies, increasing=True)
    s = np.asarray(spectrum, dtype=np.float64)
    if s.ndim != 1 or s.shape != e.shape:
        raise ValueError(f"spectrum: expected a 1-D array of length {e.size} matching "
                         f"energies, got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("spectrum: values must be finite")
    return s, e


# ------------------------------------------------------------------------ energy grid
def default_energies(kv):
    """Default grid: 1-keV bins centred on 1, 2, …, ⌊kv⌋ keV."""
    kv = _real(kv, "kv", 1.0)
    return np.arange(1.0, np.floor(kv) + 1.0)


def bin_edges(energies):
    """Bin edges (keV, length n + 1) of a grid of bin centres.

    Interior edges are the mid-points; the outer bins are symmetric about their
    centres (clipped at 0 keV); a single energy gets a 1-keV bin.
    """
    e = xs.as_energies(energies, increasing=True)
    if e.size == 1:
        return np.array([max(e[0] - 0.5, 0.0), e[0] + 0.5])
    mid = 0.5 * (e[1:] + e[:-1])
    first = max(e[0] - 0.5 * (e[1] - e[0]), 0.0)
    last = e[-1] + 0.5 * (e[-1] - e[-2])
    return np.concatenate(([first], mid, [last]))


def bin_widths(energies):
    """Bin widths in keV (see :func:`bin_edges`)."""
    return np.diff(bin_edges(energies))


# ----------------------------------------------------------------------- tube spectra
def tube_spectrum(kv, take_off_angle=11.0, anode="W", energies=None, *, filtration=None,
                  model=None, characteristic=True, electron_angle=None):
    """X-ray tube spectrum from a published physical model.

    Parameters
    ----------
    kv : float
        Tube voltage (kV; electrons reach the anode with ``kv`` keV). TBC: W 15–300 kV
        (parameters fitted to diagnostic spectra up to ~150 kV), Mo 15–100 kV; Ebel:
        4–150 kV (fitted 5–50 kV).
    take_off_angle : float, optional
        Anode (target) angle = take-off angle of the central ray from the anode
        surface, degrees, in (0, 90). Default 11° as in XrayPhysics.
    anode : str or int, optional
        ``"W"``, ``"Mo"``, ``"Cu"``, ``"Au"`` (or names, or Z = 74, 42, 29, 79).
    energies : array_like, optional
        Bin centres in keV, strictly increasing; default :func:`default_energies`.
    filtration : sequence of tuples, optional
        Inherent/added filtration ``[(material, thickness_mm), …]`` or
        ``(material, thickness_mm, density_g_cm3)``, applied with
        :func:`filter_response` (e.g. ``[("Be", 1.0), ("Al", 2.5), ("air", 1000)]``)
        to the continuum within each bin and to each line at its own energy.
    model : {"tbc", "ebel"}, optional
        Default ``"tbc"`` for W and Mo, ``"ebel"`` for Cu and Au.
    characteristic : bool, optional
        Include the K lines (emitted only for ``kv`` above the K edge).
    electron_angle : float, optional
        Ebel only: electron incidence angle to the anode surface (degrees), default
        90° − ``take_off_angle``.

    Returns
    -------
    energies : ndarray
        The bin centres (keV).
    spectrum : ndarray
        Photons / (keV · mAs · sr) along the central ray, averaged over each bin;
        K lines are added to the bin holding their energy (as photons per bin width).
    """
    z, name, kv, theta, electron_angle = _tube(kv, take_off_angle, anode, model,
                                               electron_angle)
    e = default_energies(kv) if energies is None else xs.as_energies(energies, increasing=True)
    edges = bin_edges(e)
    widths = np.diff(edges)

    # bin-averaged continuum: mid-point rule on _SUBSAMPLES sub-bins per bin
    frac = (np.arange(_SUBSAMPLES) + 0.5) / _SUBSAMPLES
    sub = edges[:-1, None] + widths[:, None] * frac[None, :]
    sub = np.maximum(sub, xs.E_MIN).ravel()  # below 1 keV: taken at 1 keV (absorbed anyway)
    if name == "tbc":
        cont = tbc.continuum(sub, kv, theta, z)
    else:
        cont = ebel.continuum(sub, kv, theta, z, electron_angle)
    if filtration:                      # filters act on the sub-samples (edges inside bins)
        cont = cont * _transmission(filtration, sub)
    spectrum = cont.reshape(e.size, _SUBSAMPLES).mean(axis=1)

    if characteristic:
        line_e, line_n = _lines(name, kv, theta, z, electron_angle)
        idx = np.searchsorted(edges, line_e, side="right") - 1
        ok = (idx >= 0) & (idx < e.size)
        line_e, line_n, idx = line_e[ok], line_n[ok], idx[ok]
        if filtration and line_e.size:
            line_n = line_n * _transmission(filtration, line_e)
        np.add.at(spectrum, idx, line_n / widths[idx])
    return e, spectrum


def _tube(kv, take_off_angle, anode, model, electron_angle):
    """Validated (Z, model name, kv, take-off angle, electron angle)."""
    z = _anode_z(anode)
    name = _model_for(model, z)
    lo, hi = tbc.PARAMETERS[z].kv_range if name == "tbc" else ebel.KV_RANGE
    kv = _real(kv, "kv", 0.0, strict=True)
    if not lo <= kv <= hi:
        raise ValueError(f"kv: {kv} kV is outside the {name!r} model's range "
                         f"{lo:g}–{hi:g} kV for this anode")
    theta = _real(take_off_angle, "take_off_angle", 0.0, strict=True)
    if theta >= 90.0:
        raise ValueError(f"take_off_angle: must be in (0, 90) degrees, got {theta}")
    if electron_angle is not None:
        electron_angle = _real(electron_angle, "electron_angle", 0.0, strict=True)
        if electron_angle > 90.0:
            raise ValueError(f"electron_angle: must be in (0, 90] degrees, got {electron_angle}")
        if name != "ebel":
            raise ValueError("electron_angle: only the 'ebel' model takes an electron angle")
    return z, name, kv, theta, electron_angle


def _lines(name, kv, theta, z, electron_angle):
    if name == "tbc":
        return tbc.lines(kv, theta, z)
    return ebel.lines(kv, theta, z, electron_angle)


def characteristic_lines(kv, take_off_angle=11.0, anode="W", *, model=None,
                         electron_angle=None):
    """K lines of a tube spectrum, unfiltered.

    Parameters are as in :func:`tube_spectrum`.

    Returns
    -------
    energies : ndarray
        Line energies in keV (xraylib), increasing; empty when ``kv`` does not exceed
        the anode's K edge (W 69.5 keV, Mo 20.0, Cu 8.98, Au 80.7).
    intensities : ndarray
        Photons / (mAs · sr) per line along the central ray.
    """
    z, name, kv, theta, electron_angle = _tube(kv, take_off_angle, anode, model,
                                               electron_angle)
    return _lines(name, kv, theta, z, electron_angle)


# -------------------------------------------------------------------------- filters
def filter_response(material, thickness_mm, energies, density=None):
    """Transmission exp(−μ(E)·t) of a filter.

    Parameters
    ----------
    material : str or int
        Element (symbol, name or Z), chemical formula, NIST compound name or alias
        (``"air"``, ``"water"``, ``"PMMA"`` …).
    thickness_mm : float
        Thickness in mm (≥ 0).
    energies : array_like
        Photon energies in keV (> 0).
    density : float, optional
        g/cm³; default the element's/compound's tabulated density.

    Returns
    -------
    ndarray
        Transmitted fraction at each energy (same length as ``energies``).
    """
    t = _real(thickness_mm, "thickness_mm", 0.0)
    e = xs.as_energies(energies)
    return np.exp(-xs.linear_attenuation(material, e, density) * t)


def apply_filters(spectrum, energies, filters):
    """Spectrum behind a stack of filters.

    ``filters`` is a sequence of ``(material, thickness_mm)`` or
    ``(material, thickness_mm, density)`` tuples; the transmissions (evaluated at
    the bin centres) multiply. (:func:`tube_spectrum`'s ``filtration`` is finer: it
    filters inside each bin.)
    """
    s, e = _spectrum_pair(spectrum, energies)
    return s * _transmission(filters, e)


def _transmission(filters, energies):
    if isinstance(filters, (str, bytes)) or not hasattr(filters, "__iter__"):
        raise ValueError("filters: expected a sequence of "
                         "(material, thickness_mm[, density]) tuples")
    out = np.ones_like(energies)
    for item in filters:
        if isinstance(item, (str, bytes)) or not hasattr(item, "__len__") \
                or len(item) not in (2, 3):
            raise ValueError(f"filters: bad filter entry {item!r}; expected "
                             "(material, thickness_mm[, density])")
        out *= filter_response(item[0], item[1], energies,
                               item[2] if len(item) == 3 else None)
    return out


# -------------------------------------------------------------------- beam metrics
def normalize(spectrum, energies):
    """Spectrum scaled to unit area: Σ spectrum·width = 1 (per keV → probability/keV)."""
    s, e = _spectrum_pair(spectrum, energies)
    total = float(np.sum(s * bin_widths(e)))
    if total <= 0:
        raise ValueError("spectrum: total photon count must be > 0 to normalise")
    return s / total


def mean_energy(spectrum, energies):
    """Fluence-weighted mean photon energy ⟨E⟩ = Σ N_i E_i / Σ N_i (keV).

    ``N_i = spectrum_i · width_i`` are the photons per bin.
    """
    s, e = _spectrum_pair(spectrum, energies)
    n = s * bin_widths(e)
    total = float(np.sum(n))
    if total <= 0:
        raise ValueError("spectrum: total photon count must be > 0")
    return float(np.sum(n * e) / total)


_WEIGHTINGS = ("air_kerma", "fluence", "energy_fluence")


def _weights(s, e, weighting):
    if weighting not in _WEIGHTINGS:
        raise ValueError(f"weighting: use one of {_WEIGHTINGS}, got {weighting!r}")
    n = s * bin_widths(e)
    if weighting == "fluence":
        w = n
    elif weighting == "energy_fluence":
        w = n * e
    else:
        w = n * e * xs.air_mass_energy_absorption(e)
    if np.any(w < 0) or not np.any(w > 0):
        raise ValueError("spectrum: must be non-negative with a positive total")
    return w


def _thickness_for(w, mu, fraction):
    """Thickness t (mm) with Σ w e^{−μ t} = fraction Σ w (bisection, monotone)."""
    keep = w > 0
    w, mu = w[keep] / w[keep].sum(), mu[keep]
    lo, hi = 0.0, np.log(1.0 / fraction) / max(float(mu.min()), 1e-300)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if np.sum(w * np.exp(-mu * mid)) > fraction:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


def half_value_layer(spectrum, energies, material="Al", density=None, *,
                     weighting="air_kerma", order=1):
    """First or second half-value layer in mm (narrow-beam geometry).

    Parameters
    ----------
    spectrum, energies : array_like
        Spectrum (per keV) and bin centres (keV).
    material : str or int, optional
        Absorber, default aluminium (``"Cu"`` for copper HVLs).
    density : float, optional
        Absorber density in g/cm³ (default tabulated: Al 2.699, Cu 8.96).
    weighting : {"air_kerma", "fluence", "energy_fluence"}, optional
        What the HVL halves. The standard (IEC 61267, ICRU 74) HVL is the air-kerma
        one: weights N(E)·E·(μen/ρ)_air(E), μen/ρ of dry air from NIST SRD 126.
    order : {1, 2}, optional
        1: first HVL (to 50 %); 2: second HVL = QVL − HVL1 (50 % → 25 %).

    Returns
    -------
    float
        Thickness in mm.
    """
    s, e = _spectrum_pair(spectrum, energies)
    if order not in (1, 2):
        raise ValueError(f"order: must be 1 or 2, got {order!r}")
    w = _weights(s, e, weighting)
    mu = xs.linear_attenuation(material, e, density)
    hvl1 = _thickness_for(w, mu, 0.5)
    if order == 1:
        return hvl1
    return _thickness_for(w, mu, 0.25) - hvl1


def _energy_with_mu(material, density, mu_target, e_lo, e_hi):
    """Highest energy in [e_lo, e_hi] (keV) where μ(E) = mu_target (log-log interp.)."""
    grid = np.geomspace(e_lo, e_hi, 4001)
    mu = xs.linear_attenuation(material, grid, density)
    d = np.log(mu) - np.log(mu_target)
    cross = np.nonzero(np.sign(d[:-1]) != np.sign(d[1:]))[0]
    exact = np.nonzero(d == 0)[0]
    if exact.size and (not cross.size or exact[-1] > cross[-1]):
        return float(grid[exact[-1]])
    if not cross.size:
        raise ValueError(f"effective_energy: no energy in {e_lo:g}–{e_hi:g} keV has "
                         f"μ = {mu_target:.4g} /mm in {material!r}")
    i = cross[-1]
    f = d[i] / (d[i] - d[i + 1])
    return float(np.exp(np.log(grid[i]) + f * (np.log(grid[i + 1]) - np.log(grid[i]))))


def effective_energy(spectrum, energies, material="Al", thickness_mm=None, density=None,
                     *, weighting=None):
    """Energy of the monoenergetic beam with the same attenuation as the spectrum.

    Two definitions:

    * ``thickness_mm=None`` (default): **HVL-matched** — the energy E_eff with
      μ(E_eff) = ln 2 / HVL1, HVL1 from :func:`half_value_layer` (air-kerma weighted
      unless ``weighting`` says otherwise). The usual "effective energy" of a beam
      quality (e.g. in mm Al); also SpekPy's ``get_eeff``.
    * ``thickness_mm=L`` given: XrayPhysics' ``effectiveEnergy`` — μ(E_eff) equals
      the effective attenuation μ_eff(L) = −ln(Σ ŵ_i e^{−μ_i L}) / L (ŵ the
      normalised weights; L = 0 gives the weighted mean Σ ŵ_i μ_i). Weighting
      defaults to ``"fluence"`` here: pass a detector-weighted spectrum (e.g.
      spectrum × :func:`leap.physics.detectors.energy_integrating_response`) to get
      the effective energy seen by that detector.

    Parameters
    ----------
    spectrum, energies : array_like
        Spectrum (per keV) and bin centres (keV).
    material : str or int, optional
        Reference material, default aluminium.
    thickness_mm : float, optional
        See above (mm, ≥ 0).
    density : float, optional
        g/cm³, default tabulated.
    weighting : {"air_kerma", "fluence", "energy_fluence"}, optional
        Default ``"air_kerma"`` (HVL-matched) or ``"fluence"`` (given thickness).

    Returns
    -------
    float
        E_eff in keV: the highest energy in 1 keV–max(energies) with that μ
        (unique for materials without an absorption edge in the range, e.g. Al,
        water, PMMA).
    """
    s, e = _spectrum_pair(spectrum, energies)
    if thickness_mm is None:
        hvl = half_value_layer(s, e, material, density, weighting=weighting or "air_kerma")
        mu_target = np.log(2.0) / hvl
    else:
        t = _real(thickness_mm, "thickness_mm", 0.0)
        w = _weights(s, e, weighting or "fluence")
        w = w / w.sum()
        mu = xs.linear_attenuation(material, e, density)
        if t == 0:
            mu_target = float(np.sum(w * mu))
        else:
            mu_target = -np.log(np.sum(w * np.exp(-mu * t))) / t
    return _energy_with_mu(material, density, mu_target, min(1.0, float(e[0])), float(e[-1]))


_KEV_TO_J = 1.602176634e-16


def air_kerma(spectrum, energies, distance_mm=1000.0):
    """Air kerma per mAs (µGy/mAs) of a tube spectrum at a distance, in vacuum.

    K = Σ_i N_i w_i E_i (μen/ρ)_air(E_i) / d², with N in photons/(keV·mAs·sr) as
    returned by :func:`tube_spectrum`, μen/ρ of dry air from NIST SRD 126 and d the
    focus distance. Air *attenuation* is not included: add ``("air", d_mm)`` to the
    filtration for that.
    """
    s, e = _spectrum_pair(spectrum, energies)
    d = _real(distance_mm, "distance_mm", 0.0, strict=True)
    fluence = s * bin_widths(e) / (d * d)                       # photons/(mAs·mm²)
    # keV·mm²/g / mm² → keV/g → J/kg (×1e3) → µGy (×1e6)
    return float(np.sum(fluence * e * xs.air_mass_energy_absorption(e))
                 * _KEV_TO_J * 1e3 * 1e6)


def resample(spectrum, energies, new_energies):
    """Re-bin a spectrum onto new bin centres, conserving photon counts.

    The photons are taken as spread uniformly within each old bin; each new bin gets
    the photons of the old bins it overlaps, pro rata. The result is again per keV.
    The total count Σ spectrum·width is conserved exactly when the new bins cover
    the old ones; photons outside the new grid are dropped.

    Parameters
    ----------
    spectrum, energies : array_like
        Spectrum (per keV) and bin centres (keV).
    new_energies : array_like
        New bin centres (keV, strictly increasing).

    Returns
    -------
    ndarray
        The spectrum per keV on ``new_energies``.
    """
    s, e = _spectrum_pair(spectrum, energies)
    new = xs.as_energies(new_energies, "new_energies", increasing=True)
    old_edges = bin_edges(e)
    cumulative = np.concatenate(([0.0], np.cumsum(s * np.diff(old_edges))))
    new_edges = bin_edges(new)
    counts = np.diff(np.interp(new_edges, old_edges, cumulative))
    return counts / np.diff(new_edges)
