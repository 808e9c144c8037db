"""X-ray scatter: differential cross sections, angular distributions and LEAP's
first-order (single-scatter) simulation.

Cross sections
--------------
Per electron, with r_e the classical electron radius and θ the scattering angle:

* Thomson: ``dσ_T/dΩ = r_e² (1 + cos²θ) / 2``;
* Klein–Nishina (O. Klein and Y. Nishina, Z. Phys. 52, 853 (1929)):
  ``dσ_KN/dΩ = (r_e²/2) P² (P + 1/P − sin²θ)``, ``P = E'/E``, with the Compton energy
  ``E' = E / (1 + (E / m_e c²)(1 − cos θ))`` (:func:`compton_energy`).

Per atom of atomic number Z, independent-atom approximation, momentum transfer
``x = sin(θ/2)/λ`` in 1/Å (:func:`momentum_transfer`):

* incoherent: ``dσ_KN/dΩ · S(x, Z)``, the incoherent scattering function;
* coherent: ``dσ_T/dΩ · F(x, Z)²``, the atomic form factor (anomalous scattering
  factors are ignored).

S and F are the tabulations of J. H. Hubbell, W. J. Veigele, E. A. Briggs, R. T. Brown,
D. T. Cromer and R. J. Howerton, "Atomic form factors, incoherent scattering
functions, and photon scattering cross sections", J. Phys. Chem. Ref. Data 4, 471
(1975), as interpolated by xraylib 4.3 (T. Schoonjans et al., Spectrochim. Acta B 66,
776 (2011); BSD 3-clause): ``SF_Compt``, ``FF_Rayl``, ``DCS_KN``, ``DCS_Thoms``; the
results equal xraylib's ``DCS_Compt``/``DCS_Rayl`` (and ``_CP`` for compounds).
xraylib's S is defined for x ≥ 0.001/Å; below, S is continued as ``S(0.001)·(x/0.001)²``
(S(0) = 0; this affects only θ below a few hundredths of a degree), and S is capped at
Z (xraylib's spline overshoots Z by up to 4e-6 relative at large x). Compounds and
mixtures add elements by mass fraction (:func:`leap.physics.cross_sections.mass_fractions`):
``dσ/dΩ [mm²/g] = Σ_i w_i (N_A/A_i) dσ_i/dΩ`` with xraylib's atomic weights.

Units: energies in keV; θ in **radians** for the cross sections (as xraylib) and in
**degrees** for the ``*_distribution`` functions (as LLNL XrayPhysics, whose
``KleinNishinaScatterDistribution``, ``incoherentScatterDistribution`` and
``coherentScatterDistribution`` they mirror). ``units`` selects mm²/g/sr (``"mm"``,
default), cm²/g/sr (``"cm"``) or barn/sr per atom (``"barn"``; for compounds the mean
per atom); the Klein–Nishina and Thomson functions are per electron (barn/sr default).

A distribution with ``normalize=True`` is divided by its normalisation factor
``∫ (dσ/dΩ) dΩ = 2π ∫_0^π (dσ/dΩ) sin θ dθ`` (composite Simpson rule on 0.05° steps)
and integrates to 1 over the sphere (unit 1/sr). XrayPhysics differs in three details:
its compound distributions weight *per-atom* values by mass fraction (here per-gram
values, as xraylib's ``_CP`` functions and the physics do), its coherent term includes
anomalous scattering factors, and its normalisation is a 0.1° rectangle rule.

First-order scatter (LEAP's ``scatter_model``)
----------------------------------------------
:func:`first_order_scatter` is upstream LEAP's ``src/scatter_models.cu``
(``simulateScatter_firstOrder_singleMaterial``) on leap objects; see that function.
The model follows A. Maslowski et al., "Acuros CTS ... Part I", Med. Phys. 45, 1899
(2018) and A. Wang et al., "... Part II", Med. Phys. 45, 1914 (2018) for the use of
the result (``corrected = measured · P/(P + S)``), and LEAP's demo
``d31_scatter_correction.py`` (geometry of Y. Kyriakou, M. Meyer and W. A. Kalender,
Phys. Med. Biol. 53, N175 (2008)). The tables it needs come from :func:`scatter_tables`.
The Numba kernels are in ``leap.physics._scatter_kernels``.
"""
from __future__ import annotations

import math

import numpy as np

try:
    import xraylib as _xl
    import xraylib_np as _xlnp
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("leap.physics.scatter needs xraylib; install it with "
                      "`pip install leap-ct[physics]` or `pip install xraylib`") from _exc

from . import _scatter_kernels as _k
from . import cross_sections as _cs

__all__ = [
    "ELECTRON_REST_ENERGY_KEV", "LEAP_ELECTRON_REST_ENERGY_KEV", "MAX_VOXELS", "MAX_PIXELS",
    "MAX_ENERGIES", "JOBS", "SAMPLINGS", "compton_energy", "momentum_transfer", "thomson",
    "klein_nishina", "incoherent_scattering_function", "atomic_form_factor",
    "incoherent_dcs", "coherent_dcs", "klein_nishina_distribution",
    "klein_nishina_normalization_factor", "incoherent_distribution",
    "incoherent_normalization_factor", "coherent_distribution",
    "coherent_normalization_factor", "scatter_tables", "scatter_components",
    "first_order_scatter",
]

#: m_e c², keV (CODATA 2018).
ELECTRON_REST_ENERGY_KEV = 510.99895
#: The value upstream LEAP's scatter kernels use (``sampling="leap"``).
LEAP_ELECTRON_REST_ENERGY_KEV = 510.975
#: Upstream LEAP's limits on the scatter model's inputs.
MAX_VOXELS = 200 ** 3
MAX_PIXELS = 256 ** 2
MAX_ENERGIES = 20
#: Job names and upstream's ``jobType`` numbers.
JOBS = {"gain": -1, "scatter": 0, "simulate": 1}
SAMPLINGS = ("full", "grouped", "leap")

_SF_XMIN = 1.0e-3            # smallest x (1/Å) where xraylib tabulates S for every Z
_MU_UNITS = {"mm": 100.0, "cm": 1.0}             # cm^2/g -> unit
_N_QUAD = 3601                                   # Simpson nodes on [0, pi] (0.05 deg)


# ------------------------------------------------------------------------- helpers
def _real_array(x, name, positive=False):
    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numeric, got {x!r}") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    if positive and np.any(a <= 0.0):
        raise ValueError(f"{name} must be > 0 keV")
    return a


def _micro(units):
    scales = {"barn": 1.0, "b": 1.0, "cm": 1.0e-24, "mm": 1.0e-22}
    if units not in scales:
        raise ValueError(f"units must be 'barn', 'cm' or 'mm', got {units!r}")
    return scales[units]


def _elements(material):
    fr = _cs.mass_fractions(material)
    bad = [z for z in fr if z > 98]
    if bad:
        raise ValueError(f"material: xraylib has no scattering factors for Z={bad[0]}")
    return [(z, w) for z, w in fr.items() if w > 0.0]


def _material_scale(material, units):
    """(elements, per-element factor from barn/atom to ``units``)."""
    els = _elements(material)
    if units in ("barn", "b"):
        atoms = sum(w / _xl.AtomicWeight(z) for z, w in els)
        return els, [w / _xl.AtomicWeight(z) / atoms for z, w in els]
    if units not in _MU_UNITS:
        raise ValueError(f"units must be 'mm', 'cm' or 'barn', got {units!r}")
    k = _xl.AVOGNUM * _MU_UNITS[units]            # barn/atom -> cm^2/g is AVOGNUM / A
    return els, [w * k / _xl.AtomicWeight(z) for z, w in els]


# ------------------------------------------------------------ elementary functions
def compton_energy(energy, theta, *, rest_energy=ELECTRON_REST_ENERGY_KEV):
    """Energy (keV) of a photon of ``energy`` keV Compton-scattered by ``theta`` radians:
    ``E / (1 + (E / m_e c²)(1 − cos θ))``. Broadcasts."""
    e = _real_array(energy, "energy", positive=True)
    t = _real_array(theta, "theta")
    return (e / (1.0 + (e / rest_energy) * (1.0 - np.cos(t))))[()]


def momentum_transfer(energy, theta):
    """``x = sin(θ/2)/λ`` in 1/Å for ``energy`` keV and ``theta`` radians (xraylib's
    ``MomentTransf``). Broadcasts."""
    e = _real_array(energy, "energy", positive=True)
    t = _real_array(theta, "theta")
    return (e / _xl.KEV2ANGST * np.sin(0.5 * t))[()]


def thomson(theta, *, units="barn"):
    """Thomson cross section per electron, ``r_e²(1 + cos²θ)/2``, barn/sr (or cm²/sr,
    mm²/sr), ``theta`` in radians; r_e² at θ = 0."""
    c = np.cos(_real_array(theta, "theta"))
    return (0.5 * _xl.RE2 * (1.0 + c * c) * _micro(units))[()]


def klein_nishina(energy, theta, *, units="barn"):
    """Klein–Nishina cross section per electron (xraylib's ``DCS_KN``), barn/sr (or
    cm²/sr, mm²/sr); ``energy`` keV, ``theta`` radians, broadcast. Equals r_e² at θ = 0
    and tends to :func:`thomson` as E → 0."""
    e = _real_array(energy, "energy", positive=True)
    c = np.cos(_real_array(theta, "theta"))
    t1 = (1.0 - c) * e / _xl.MEC2
    t2 = 1.0 + t1
    return (0.5 * _xl.RE2 * (1.0 + c * c + t1 * t1 / t2) / (t2 * t2) * _micro(units))[()]


def _sf(z, x):
    """S(x, Z) for flat x >= 0 (xraylib ``SF_Compt``, x² below 0.001/Å, at most Z)."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    zs = np.array([z], dtype=np.int64)
    out = np.zeros_like(x)
    hi = x >= _SF_XMIN
    if hi.any():
        out[hi] = _xlnp.SF_Compt(zs, np.ascontiguousarray(x[hi]))[0]
    lo = ~hi & (x > 0.0)
    if lo.any():
        out[lo] = _xl.SF_Compt(int(z), _SF_XMIN) * (x[lo] / _SF_XMIN) ** 2
    return np.minimum(out, float(z))


def _ff(z, x):
    x = np.ascontiguousarray(x, dtype=np.float64)
    return _xlnp.FF_Rayl(np.array([z], dtype=np.int64), x)[0]


def _element_z(element):
    z = _cs.atomic_number(element)
    if not 1 <= z <= 98:
        raise ValueError(f"element: xraylib has scattering factors for Z = 1..98, got {z}")
    return z


def incoherent_scattering_function(element, x):
    """Hubbell's incoherent scattering function S(x, Z) (xraylib ``SF_Compt``) at
    momentum transfer ``x`` (1/Å, ≥ 0); S(0) = 0, S → Z for large x."""
    a = _real_array(x, "x")
    if np.any(a < 0.0):
        raise ValueError("x must be >= 0")
    return _sf(_element_z(element), a.ravel()).reshape(a.shape)[()]


def atomic_form_factor(element, x):
    """Hubbell's atomic form factor F(x, Z) (xraylib ``FF_Rayl``) at momentum transfer
    ``x`` (1/Å, ≥ 0); F(0) = Z."""
    a = _real_array(x, "x")
    if np.any(a < 0.0):
        raise ValueError("x must be >= 0")
    return _ff(_element_z(element), a.ravel()).reshape(a.shape)[()]


def _dcs(kind, material, e, t, units):
    """Flat-array core of :func:`incoherent_dcs` / :func:`coherent_dcs`."""
    els, scales = _material_scale(material, units)
    x = e / _xl.KEV2ANGST * np.sin(0.5 * t)
    if kind == "incoherent":
        base = klein_nishina(e, t)
        fac = [_sf(z, x) for z, _ in els]
    else:
        base = thomson(t)
        fac = [_ff(z, x) ** 2 for z, _ in els]
    return base * sum(s * f for s, f in zip(scales, fac))


def _dcs_public(kind, material, energy, theta, units):
    e, t = np.broadcast_arrays(_real_array(energy, "energy", positive=True),
                               _real_array(theta, "theta"))
    return _dcs(kind, material, e.ravel(), t.ravel(), units).reshape(e.shape)[()]


def incoherent_dcs(material, energy, theta, *, units="mm"):
    """Incoherent (Compton) differential cross section ``dσ_KN/dΩ · S(x, Z)`` of a
    material: mm²/g/sr (``units="cm"``: cm²/g/sr; ``"barn"``: barn/sr per atom).
    ``theta`` in radians; energy and theta broadcast. Material: anything
    :mod:`leap.physics.cross_sections` accepts."""
    return _dcs_public("incoherent", material, energy, theta, units)


def coherent_dcs(material, energy, theta, *, units="mm"):
    """Coherent (Rayleigh) differential cross section ``dσ_T/dΩ · F(x, Z)²`` of a
    material; units and arguments as :func:`incoherent_dcs`. For an element at θ = 0
    (``units="barn"``) it is Z² r_e²."""
    return _dcs_public("coherent", material, energy, theta, units)


# -------------------------------------------------------------------- distributions
def _simpson_nodes():
    t = np.linspace(0.0, math.pi, _N_QUAD)
    w = np.full(_N_QUAD, 2.0)
    w[1::2] = 4.0
    w[0] = w[-1] = 1.0
    return t, w * (t[1] - t[0]) / 3.0 * 2.0 * math.pi * np.sin(t)


def _normalization(fn, energy):
    """∫ fn(E, θ) dΩ for every energy of ``energy`` (any shape)."""
    e = _real_array(energy, "energy", positive=True)
    u, inv = np.unique(e.ravel(), return_inverse=True)
    t, w = _simpson_nodes()
    vals = fn(np.repeat(u, t.size), np.tile(t, u.size)).reshape(u.size, t.size)
    return (vals @ w)[inv].reshape(e.shape)


def _distribution(fn, energy, theta_deg, normalize):
    e, t = np.broadcast_arrays(_real_array(energy, "energy", positive=True),
                               _real_array(theta_deg, "theta"))
    out = fn(e.ravel(), np.deg2rad(t.ravel())).reshape(e.shape)
    if normalize:
        out = out / _normalization(fn, e)
    return out[()]


def klein_nishina_normalization_factor(energy, *, units="barn"):
    """Total Klein–Nishina cross section per electron ``∫ dσ_KN/dΩ dΩ`` (barn, cm² or
    mm²), by quadrature (XrayPhysics' ``KleinNishinaScatterDistribution_normalizationFactor``)."""
    return _normalization(lambda e, t: klein_nishina(e, t, units=units), energy)[()]


def klein_nishina_distribution(energy, theta, normalize=False, *, units="barn"):
    """Klein–Nishina angular distribution at ``theta`` **degrees**: the cross section per
    electron (barn/sr), or with ``normalize`` the probability density per steradian
    (XrayPhysics' ``KleinNishinaScatterDistribution``)."""
    return _distribution(lambda e, t: klein_nishina(e, t, units=units), energy, theta,
                         normalize)


def incoherent_normalization_factor(material, energy, *, units="mm"):
    """``∫ dσ_inc/dΩ dΩ`` (mm²/g, cm²/g or barn/atom) at each energy (XrayPhysics'
    ``incoherentScatterDistribution_normalizationFactor``)."""
    return _normalization(lambda e, t: _dcs("incoherent", material, e, t, units), energy)[()]


def coherent_normalization_factor(material, energy, *, units="mm"):
    """``∫ dσ_coh/dΩ dΩ`` (mm²/g, cm²/g or barn/atom) at each energy (XrayPhysics'
    ``coherentScatterDistribution_normalizationFactor``)."""
    return _normalization(lambda e, t: _dcs("coherent", material, e, t, units), energy)[()]


def incoherent_distribution(material, energy, theta, normalize=False, *, units="mm"):
    """Incoherent angular distribution at ``theta`` **degrees**: :func:`incoherent_dcs`,
    or with ``normalize`` the probability density per steradian (XrayPhysics'
    ``incoherentScatterDistribution``). Energy and theta broadcast."""
    return _distribution(lambda e, t: _dcs("incoherent", material, e, t, units), energy,
                         theta, normalize)


def coherent_distribution(material, energy, theta, normalize=False, *, units="mm"):
    """Coherent angular distribution at ``theta`` **degrees**: :func:`coherent_dcs`, or
    with ``normalize`` the probability density per steradian (XrayPhysics'
    ``coherentScatterDistribution``). Energy and theta broadcast."""
    return _distribution(lambda e, t: _dcs("coherent", material, e, t, units), energy,
                         theta, normalize)


def scatter_tables(material, max_energy, *, units="mm"):
    """The cross-section and distribution tables of :func:`first_order_scatter`.

    Parameters
    ----------
    material : see :mod:`leap.physics.cross_sections`
    max_energy : float
        Highest source energy, keV; the tables cover 1, 2, …, ``ceil(max_energy)`` keV.
    units : {"mm", "cm"}
        Cross sections in mm²/g (default) or cm²/g.

    Returns
    -------
    sigma : (3, n) float32
        Photoelectric, incoherent and coherent mass attenuation
        (:func:`leap.physics.cross_sections.mass_attenuation`).
    distributions : (2, n, 181) float32
        Normalised incoherent and coherent distributions (1/sr) at 0, 1, …, 180°.
    """
    if units not in _MU_UNITS:
        raise ValueError(f"units must be 'mm' or 'cm', got {units!r}")
    top = float(_real_array(max_energy, "max_energy", positive=True))
    n = int(math.ceil(top))
    e = np.arange(1.0, n + 1.0)
    sigma = np.stack([_cs.mass_attenuation(material, e, kind, units=units)
                      for kind in ("photoelectric", "incoherent", "coherent")])
    th = np.arange(181.0)[None, :]
    dist = np.stack([incoherent_distribution(material, e[:, None], th, normalize=True),
                     coherent_distribution(material, e[:, None], th, normalize=True)])
    return sigma.astype(np.float32), dist.astype(np.float32)

# ------------------------------------------------------------------ the scatter model
_DENSITY_UNITS = {"g/cm^3": 1.0e-3, "g/cm3": 1.0e-3, "g/mm^3": 1.0, "g/mm3": 1.0}
_SAMPLING = {"full": (1, 0, 0, False), "grouped": (3, 0, 1, False), "leap": (3, -1, 1, True)}
_NAMES = {k: k for k in ("geometry", "volume", "density", "spectrum", "energies",
                         "detector_response", "sigma", "distributions", "job")}


def _job(job, name):
    if isinstance(job, str) and job in JOBS:
        return JOBS[job]
    if isinstance(job, (int, np.integer)) and not isinstance(job, bool):
        return int(np.sign(job))
    raise ValueError(f"{name} must be one of {tuple(JOBS)} or LEAP's jobType -1, 0, 1; "
                     f"got {job!r}")


def _modular(geometry, volume, name):
    from ..geometry import ModularBeam
    if isinstance(geometry, ModularBeam):
        return geometry
    to_modular = getattr(geometry, "to_modular", None)
    if to_modular is None:
        raise TypeError(f"{name}: LEAP's scatter model needs a modular-beam geometry; a "
                        f"{type(geometry).__name__} has no to_modular()")
    try:
        try:
            mb = to_modular()
        except TypeError:
            mb = to_modular(volume)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: cannot be converted to a modular beam: {exc}") from None
    if not isinstance(mb, ModularBeam):
        raise TypeError(f"{name}.to_modular() did not return a ModularBeam")
    return mb


def _table(x, name, shape, what):
    a = _real_array(x, name)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape} ({what}), got {a.shape}")
    return a


def _lerp_rows(tab, c):
    """``tab`` (n, ...) linearly at fractional row indices ``c``, zero outside (upstream's
    border-mode texture read ``tex(c + 0.5)``)."""
    n = tab.shape[0]
    pad = np.concatenate([np.zeros((1,) + tab.shape[1:]), tab, np.zeros((1,) + tab.shape[1:])])
    ok = (c > -1.0) & (c < n)
    cc = np.where(ok, c, 0.0)
    f = np.floor(cc)
    w = (cc - f).reshape((-1,) + (1,) * (tab.ndim - 1))
    i = f.astype(np.int64) + 1
    out = (1.0 - w) * pad[i] + w * pad[np.minimum(i + 1, n + 1)]
    out[~ok] = 0.0
    return out


def _prepare(geometry, volume, density, spectrum, energies, detector_response, sigma,
             distributions, density_units, units, sampling, names):
    from ..geometry import Volume
    nm = dict(_NAMES, **(names or {}))
    if not isinstance(volume, Volume):
        raise TypeError(f"{nm['volume']} must be a leap.geometry.Volume, got "
                        f"{type(volume).__name__}")
    mb = _modular(geometry, volume, nm["geometry"])
    if density_units not in _DENSITY_UNITS:
        raise ValueError(f"density_units must be 'g/cm^3' or 'g/mm^3', got {density_units!r}")
    if units not in _MU_UNITS:
        raise ValueError(f"units must be 'mm' or 'cm', got {units!r}")
    if sampling not in _SAMPLING:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    rho = _real_array(density, nm["density"])
    if rho.ndim != 3:
        raise ValueError(f"{nm['density']} must be a 3-D (nz, ny, nx) mass-density array, got "
                         f"{rho.ndim} dimension(s)")
    if rho.size > MAX_VOXELS:
        raise ValueError(f"{nm['density']}: {rho.size} voxels exceed LEAP's scatter-model limit "
                         f"of 200^3; down-sample the volume")
    if rho.shape != volume.shape:
        raise ValueError(f"{nm['density']} has shape {rho.shape} but the volume is "
                         f"{volume.shape} (nz, ny, nx)")
    det = mb.detector
    if det.num_rows * det.num_cols > MAX_PIXELS:
        raise ValueError(f"{nm['geometry']}: {det.num_rows} x {det.num_cols} detector pixels "
                         f"exceed LEAP's scatter-model limit of 256 x 256; down-sample the "
                         f"projections")
    spec = _real_array(spectrum, nm["spectrum"])
    if spec.ndim != 1 or spec.size == 0 or spec.size > MAX_ENERGIES:
        raise ValueError(f"{nm['spectrum']} must be 1-D with 1 to {MAX_ENERGIES} samples "
                         f"(LEAP's limit; down-sample the spectrum), got shape {spec.shape}")
    if not np.any(spec > 0.0):
        raise ValueError(f"{nm['spectrum']} must have at least one positive sample")
    e = _real_array(energies, nm["energies"], positive=True)
    if e.shape != spec.shape:
        raise ValueError(f"{nm['spectrum']} and {nm['energies']} must be the same size, got "
                         f"{spec.size} and {e.size}")
    if np.any(np.diff(e) <= 0.0):
        raise ValueError(f"{nm['energies']} must be increasing")
    n = int(math.ceil(e[-1]))
    one_kev = f"1 to {n} keV in 1-keV steps"
    det_r = _table(detector_response, nm["detector_response"], (n,), one_kev)
    sig = _table(sigma, nm["sigma"], (3, n), "PE, CS, RS cross sections, " + one_kev)
    dist = _table(distributions, nm["distributions"], (2, n, 181),
                  "incoherent and coherent, " + one_kev + ", 0..180 degrees")
    c = e - 1.0
    mu_tab = sig.sum(axis=0)
    tables = (spec, e, _lerp_rows(mu_tab, c), _lerp_rows(sig[1], c), _lerp_rows(sig[2], c),
              _lerp_rows(det_r, c), np.ascontiguousarray(_lerp_rows(dist[0], c)),
              np.ascontiguousarray(_lerp_rows(dist[1], c)), det_r, mu_tab)
    scale = _DENSITY_UNITS[density_units] * (100.0 if units == "cm" else 1.0)
    return mb, np.ascontiguousarray(rho * scale), tables


def _views_to_compute(mb, interpolate_views):
    """Upstream's view skipping: for an axially aligned scan, a view closer than
    360°/num_cols to the last computed one is skipped (the first and last never are)."""
    na = mb.num_angles
    phi = mb.view_angles()
    computed = np.ones(na, dtype=bool)
    if interpolate_views and mb.axially_aligned and na > 2:
        step = 2.0 * math.pi / mb.detector.num_cols
        last = -1.0e16
        for i in range(na):
            computed[i] = abs(phi[i] - last) >= step or i in (0, na - 1)
            if computed[i]:
                last = phi[i]
    return computed, phi


def _interpolate_views(g, computed, phi):
    """Linear interpolation in angle of the skipped views from the computed neighbours."""
    idx = np.flatnonzero(computed)
    for v in np.flatnonzero(~computed):
        p = np.searchsorted(idx, v)
        lo, hi = idx[p - 1], idx[p]
        d = phi[hi] - phi[lo]
        w = 0.5 if d == 0.0 else (phi[v] - phi[lo]) / d
        g[v] = (1.0 - w) * g[lo] + w * g[hi]
    return g


def _simulate(geometry, volume, density, spectrum, energies, detector_response, sigma,
              distributions, density_units, units, sampling, interpolate_views, backend,
              names):
    if backend not in ("cpu", "cuda"):
        raise ValueError(f"backend must be 'cpu' or 'cuda', got {backend!r}")
    mb, rho, tables = _prepare(geometry, volume, density, spectrum, energies,
                               detector_response, sigma, distributions, density_units,
                               units, sampling, names)
    computed, phi = _views_to_compute(mb, interpolate_views)
    src = np.ascontiguousarray(mb.source_positions, dtype=np.float64)
    ctr = np.ascontiguousarray(mb.module_centers, dtype=np.float64)
    rows = np.ascontiguousarray(mb.row_vectors, dtype=np.float64)
    cols = np.ascontiguousarray(mb.col_vectors, dtype=np.float64)
    nrm = np.cross(rows, cols)                      # upstream's n_d = row x col ...
    flip = np.sum((ctr - src) * nrm, axis=1) < 0.0  # ... pointing source -> module
    nrm[flip] *= -1.0
    step, lo_off, ctr_off, anchor = _SAMPLING[sampling]
    mec2 = LEAP_ELECTRON_REST_ENERGY_KEV if sampling == "leap" else ELECTRON_REST_ENERGY_KEV
    vol = (volume.x0, volume.y0, volume.z0, volume.voxel_width, volume.voxel_width,
           volume.voxel_height)
    d = mb.detector
    S, P, A = _k.simulate(backend, rho, vol, (src, ctr, rows, cols, nrm), computed,
                          d.num_rows, d.num_cols, d.pixel_height, d.pixel_width, tables,
                          mec2, step, lo_off, ctr_off, anchor)
    return S, P, A, computed, phi


def scatter_components(geometry, volume, density, spectrum, energies, detector_response,
                       sigma, distributions, *, density_units="g/cm^3", units="mm",
                       sampling="full", interpolate_views=True, backend="cpu"):
    """Primary, first-order scatter and air (unattenuated) signals of
    :func:`first_order_scatter`, before they are combined; arguments as there.

    Returns a dict of (num_angles, num_rows, num_cols) float64 arrays ``"primary"``,
    ``"scatter"`` and ``"air"``, per unit pixel area (times the pixel area they are
    signals per steradian of source emission, in spectrum × detector-response units);
    skipped views are interpolated component by component.
    """
    S, P, A, computed, phi = _simulate(geometry, volume, density, spectrum, energies,
                                       detector_response, sigma, distributions,
                                       density_units, units, sampling, interpolate_views,
                                       backend, None)
    return {k: _interpolate_views(v, computed, phi)
            for k, v in (("primary", P), ("scatter", S), ("air", A))}


def first_order_scatter(geometry, volume, density, spectrum, energies, detector_response,
                        sigma, distributions, job="gain", *, density_units="g/cm^3",
                        units="mm", sampling="full", interpolate_views=True, backend="cpu"):
    """LEAP's ``scatter_model``: single-scatter simulation through one material of
    variable density; returns scatter gain factors or scatter transmission.

    Model (upstream ``src/scatter_models.cu``), per view and pixel centre f with the
    detector normal n (pointing from the source towards the module), source s, voxel
    centres x of volume ΔV and density ρ, with ``D(a, b) = ∫ρ dl`` along the segment
    (a march through the volume, one sample per voxel plane of the dominant axis,
    bilinear in the other two with a zero border: the GPU's trilinear texture reads)::

        μ(E)  = σ_PE(E) + σ_CS(E) + σ_RS(E)                (mass, times ρ: 1/mm)
        Ω_0   = (f − s)·n / |f − s|³
        P     = Ω_0 Σ_e s_e R(E_e) exp(−μ(E_e) D(f, s))
        A     = Ω_0 Σ_e s_e R(E_e)
        S     = ΔV Σ_x ρ(x) Ω(x) Σ_e s_e [ R(E'_e) σ_CS(E_e) p_CS(θ, E_e)
                                            · exp(−μ(E_e) D(x, s) − μ(E'_e) D(x, f))
                                          + R(E_e) σ_RS(E_e) p_RS(θ, E_e)
                                            · exp(−μ(E_e) (D(x, s) + D(x, f))) ]
        Ω(x)  = ((x − s)·n) ((f − x)·n) / (|x − s|³ |f − x|³)
        cos θ = (x − s)·(f − x) / (|x − s| |f − x|),   E' = compton_energy(E, θ)

    with R the detector response, p the normalised distributions (read at θ in degrees,
    linearly in angle and energy), and the 1-keV tables read linearly at E − 1. Ω(x) is
    upstream's: the incident inverse square, the pixel's solid angle per unit area seen
    from x, and the obliquity ``(x − s)·n / |x − s|`` of the incident ray. Sums run over
    spectrum samples > 0 and voxels with ρ > 0. ``job``:

    * ``"gain"`` (LEAP ``jobType=-1``): ``P / (P + S)``, the scatter-correction factor
      (multiply measured transmission by it);
    * ``"simulate"`` (``1``): ``(P + S) / P``, the factor that adds scatter;
    * ``"scatter"`` (``0``): ``S / A``, scatter transmission.

    Zero denominators give inf or NaN, as upstream.

    Parameters
    ----------
    geometry : leap.geometry.ModularBeam or a geometry with ``to_modular()``
        Cone and parallel beams are converted (fan and cone-parallel beams have no
        modular form). At most 256 × 256 detector pixels.
    volume : leap.geometry.Volume
        The voxel grid of ``density``.
    density : (nz, ny, nx) array_like
        Mass density of the one material, in ``density_units``; at most 200³ voxels.
        Voxels with density ≤ 0 scatter nothing but still attenuate.
    spectrum, energies : (N,) array_like
        Coarse source spectrum (filters included) and its energies (keV, increasing,
        N ≤ 20); only the spectrum's shape matters.
    detector_response : (n,) array_like
        Detector response at 1, 2, …, n keV, ``n = ceil(energies[-1])``
        (e.g. :func:`leap.physics.detectors.energy_integrating_response`).
    sigma : (3, n) array_like
        Photoelectric, incoherent and coherent mass cross sections at 1, …, n keV, in
        mm²/g (``units="mm"``) or cm²/g (``units="cm"``).
    distributions : (2, n, 181) array_like
        Normalised incoherent and coherent angular distributions (1/sr) at 1, …, n keV
        and 0, 1, …, 180°. :func:`scatter_tables` makes ``sigma`` and ``distributions``.
    job : {"gain", "simulate", "scatter"} or int
        See above; LEAP's ``jobType`` numbers (-1, 1, 0) are accepted too.
    density_units : {"g/cm^3", "g/mm^3"}
        Unit of ``density`` (LEAP and XrayPhysics' ``use_mm()`` use g/mm³).
    units : {"mm", "cm"}
        Unit of ``sigma``.
    sampling : {"full", "grouped", "leap"}
        ``"full"`` (default): every voxel with its own density and both path
        integrals (upstream's reference kernel ``firstOrderScatterModel``).
        ``"grouped"``: 3×3×3 voxel groups share one voxel→pixel integral, taken from
        the group's middle voxel (about 5× faster; each voxel keeps its density and
        source path). ``"leap"``: what upstream runs (``firstOrderScatterModel_fast``):
        groups ``{a−1, a, a+1}`` around anchors a = 0, 3, 6, … per axis, every voxel of
        a group with the *anchor's* density and source path, the voxel→pixel integral
        from voxel a+1, and m_e c² = 510.975 keV.
    interpolate_views : bool
        Upstream's view skipping (default True): for an axially aligned scan, views
        closer than 360°/num_cols to the last computed view are interpolated linearly
        in angle (upstream's ``interpolateViews`` swaps the two weights; here they are
        the ordinary ones).
    backend : {"cpu", "cuda"}
        Numba CPU kernels (parallel over pixels) or Numba CUDA kernels.

    Returns
    -------
    numpy.ndarray
        (num_angles, num_rows, num_cols) float32.
    """
    return _first_order_scatter(geometry, volume, density, spectrum, energies,
                                detector_response, sigma, distributions, job, density_units,
                                units, sampling, interpolate_views, backend, None)


def _first_order_scatter(geometry, volume, density, spectrum, energies, detector_response,
                         sigma, distributions, job, density_units, units, sampling,
                         interpolate_views, backend, names):
    """:func:`first_order_scatter` with ``names`` mapping its argument names to the
    caller's for error messages (the facade's LEAP names)."""
    jt = _job(job, dict(_NAMES, **(names or {}))["job"])
    S, P, A, computed, phi = _simulate(geometry, volume, density, spectrum, energies,
                                       detector_response, sigma, distributions,
                                       density_units, units, sampling, interpolate_views,
                                       backend, names)
    with np.errstate(divide="ignore", invalid="ignore"):
        if jt < 0:
            g = P / (P + S)
        elif jt == 0:
            g = S / A
        else:
            g = (P + S) / P
    return _interpolate_views(g, computed, phi).astype(np.float32)
