"""XrayPhysics compatibility shim: ``from xrayphysics import *`` as in LEAP's scripts.

LLNL's XrayPhysics (https://github.com/kylechampley/XrayPhysics; C++ behind a ctypes
wrapper, not on PyPI) is LEAP's companion package for cross sections, spectra and
beam-hardening/dual-energy tables. This module gives scripts its class,
``physics = xrayPhysics()``, with its method names, arguments, defaults, units and return
conventions, computed by :mod:`leap.physics`.

Units
-----
``use_cm()`` (the default) or ``use_mm()`` switches every length: mass cross sections
cm^2/g or mm^2/g (x100), linear attenuation 1/cm or 1/mm (x0.1), densities g/cm^3 or
g/mm^3 (x1e-3: ``massDensity('Al')`` is 2.7e-3 after ``use_mm()``), thicknesses cm or
mm, areal densities g/cm^2 or g/mm^2. Energies are keV and angles degrees throughout.
Per-electron cross sections are per mole of electrons (cm^2/(mol e)), electron
densities mol e/cm^3, as in XrayPhysics. Arrays come back float32 (as from XrayPhysics),
scalars as Python floats.

Materials (``Z`` arguments): an atomic number (non-integer values interpolate linearly
between neighbouring elements, as XrayPhysics does; Z = 99, 100 extrapolate from
Z = 97, 98, where the tables stop), an element symbol, a chemical formula
(``'O2SGd2'``), a mixture by relative mass weights (``'0.9*H2O + 0.1*NaCl'``), a name
of :mod:`leap.physics.materials` (``'water'``, ``'bone'``, ``'teflon'``, ``'GOS'``, ...,
case-insensitive) or of the few extra names below (``'delrin'``, ...), or a
:class:`leap.physics.materials.Material`.

Differences from XrayPhysics
----------------------------
* Errors raise ValueError naming the argument where XrayPhysics prints and returns 0,
  None or False.
* ``simulateSpectra`` returns leap's tube model (Tucker-Barnes-Chakraborty for W/Mo,
  Ebel for Cu/Au) in absolute photons/(keV mAs sr), not XrayPhysics'
  Finkelshtein-Pavlova model in relative units: normalise (``normalizeSpectrum``)
  before comparing shapes; shapes agree to within the models' differences.
* ``normalizeSpectrum`` normalises in place for any float array (XrayPhysics does so
  only for float32) and returns the array (XrayPhysics returns True).
* ``ComptonBasis`` is the Klein-Nishina cross section times N_A (cm^2/mol); XrayPhysics'
  Python wrapper multiplies only the second of its two terms by 2 pi r_e^2 N_A.
* Scatter distributions are differential cross sections per electron (Klein-Nishina)
  or per atom (mean per atom for compounds), cm^2/sr (mm^2/sr); XrayPhysics'
  un-normalised scales differ between the three. With ``doNormalize=True`` both are
  probability densities per steradian (integral 1 over the sphere).
* The material library is leap's (NIST densities: ``'GOS'`` 7.44, ``'teflon'`` 2.25
  g/cm^3, ``'lung'`` as tissue, not inflated lung) plus a few extra names.

Map of the methods onto the core
--------------------------------
==================================  ==================================================
XrayPhysics                         leap
==================================  ==================================================
sigma, sigmaPE/CS/RS/PP/TP          cross_sections.mass_attenuation (kind=...)
mu, muPE/CS/RS/PP/TP                density x the above
sigma_e                             cross_sections.electron_cross_section x N_A
rhoe, rho                           cross_sections.electron_density (units="mol")
massDensity, density                cross_sections.default_density / materials
atomicMass, elementSymbolTo...      cross_sections.atomic_mass, atomic_number
effectiveZ                          cross_sections.effective_z(method="sigma_e")
simulateSpectra, changeTakeOff...   spectra.tube_spectrum
meanEnergy, normalizeSpectrum       spectra.mean_energy, spectra.normalize
resample                            spectra.resample (x output bin widths)
detectorResponse, filterResponse    E (1 - exp(-mu L)), exp(-mu L) (the model of
                                    detectors.energy_integrating_response and
                                    spectra.filter_response, mu from cross_sections)
transmission, effectiveLAC          beam_hardening.polychromatic_attenuation
effectiveEnergy                     beam_hardening.effective_energy
setBHlookupTable                    beam_hardening.polychromatic_attenuation
setBHClookupTable                   beam_hardening.BeamHardeningTable.leap_lut("bhc")
polynomialBHC                       beam_hardening.polynomial_bhc
setTwoMaterialBHClookupTable        beam_hardening.TwoMaterialTable.leap_lut
setDEDlookupTable                   dual_energy.DualEnergyTable.leap_lut
PhotoelectricBasis, ComptonBasis    dual_energy.photoelectric_basis, compton_basis
PCAbases                            dual_energy.pca_bases
*ScatterDistribution*               this module (xraylib S(q, Z), F(q, Z))
load_spectra, save_spectra,         this module
print/get_material_library
==================================  ==================================================

Spectra are spectral densities per keV on their energy grid (bin-width weighted sums,
as XrayPhysics integrates them); on a uniform grid this equals per-bin weights.
"""
from __future__ import annotations

import contextlib
import math
import numbers
import os
import sys

import numpy as np

from leap.physics import beam_hardening as _bh
from leap.physics import cross_sections as _cs
from leap.physics import dual_energy as _de
from leap.physics import materials as _mat
from leap.physics import scatter as _sc
from leap.physics import spectra as _sp

__all__ = ["xrayPhysics", "materialFormulas", "materialDensities", "np", "os", "sys"]

_N_A = float(getattr(_cs, "AVOGADRO", 6.02214076e23))     # 1/mol
_E_MIN, _E_MAX = 1.0, 20000.0                             # keV, the tables' range
_MAX_Z_TABLES = 98                                        # xraylib stops at Cf


# ------------------------------------------------------------------ extra names
# Materials named in XrayPhysics' library or LEAP's demos that leap's library lacks.
# name: (formula or {symbol: mass fraction}, density g/cm^3, source, aliases)
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


#: XrayPhysics' module-level library: name -> formula (or mass-fraction mixture) and
#: name -> density in g/cm^3.
materialFormulas, materialDensities = _library()


# ------------------------------------------------------------------ the class
class xrayPhysics:
    """LLNL XrayPhysics' Python API on :mod:`leap.physics` (see the module docstring).

    Usage::

        from xrayphysics import *
        physics = xrayPhysics()
        physics.use_mm()
    """

    def __init__(self, lib_dir=""):
        """``lib_dir`` (where XrayPhysics' shared library lives) is accepted and ignored."""
        self.detectorBits = 16
        self.length_units = "cm"

    def about(self):
        """Print what this package is."""
        import leap
        print(f"xrayphysics (leap {leap.__version__}): LLNL XrayPhysics' Python API over "
              "leap.physics")

    # -------------------------------------------------------------- units
    def use_cm(self):
        """All lengths in cm (the default): cm^2/g, 1/cm, g/cm^3, cm."""
        self.length_units = "cm"

    def use_mm(self):
        """All lengths in mm: mm^2/g, 1/mm, g/mm^3, mm (LEAP's units)."""
        self.length_units = "mm"

    def cross_section_scalar(self):
        """cm^2/g -> current units: 100 with mm, else 1."""
        return 1.0e2 if self.length_units == "mm" else 1.0

    def LAC_scalar(self):
        """1/cm -> current units: 0.1 with mm, else 1."""
        return 0.1 if self.length_units == "mm" else 1.0

    def density_scalar(self):
        """g/cm^3 -> current units: 1e-3 with mm, else 1."""
        return 1.0e-3 if self.length_units == "mm" else 1.0

    def areal_density_scalar(self):
        """g/cm^2 -> current units: 1e-2 with mm, else 1."""
        return 1.0e-2 if self.length_units == "mm" else 1.0

    def thickness_scalar(self):
        """cm -> current units: 10 with mm, else 1."""
        return 10.0 if self.length_units == "mm" else 1.0

    def fixArray(self, x):
        """A NumPy array as C-contiguous float32 (other values unchanged)."""
        if isinstance(x, np.ndarray):
            x = np.ascontiguousarray(x, dtype=np.float32)
        return x

    # -------------------------------------------------------------- elements
    def elementSymbolToAtomicNumber(self, elementStr):
        """Atomic number of a chemical symbol (``'Pb'`` -> 82)."""
        with _names(element="elementStr"):
            return _cs.atomic_number(str(elementStr))

    def atomicMass(self, Z):
        """Standard atomic weight (g/mol) of an element (number or symbol)."""
        with _names(element="Z"):
            return _cs.atomic_mass(Z if isinstance(Z, str) else _integral_z(Z))

    def density(self, Z):
        """Mass density (g/cm^3, or g/mm^3 with mm) of an element or library material."""
        return self.massDensity(Z)

    def massDensity(self, Z):
        """Mass density (g/cm^3, or g/mm^3 with mm) of an element or library material.

        Formulas and mixtures have no intrinsic density: ValueError (pass one)."""
        mat = _resolve(Z)
        if isinstance(mat, _Terms):
            mat = _integral_z(mat.z)
        try:
            rho = _cs.default_density(mat)
        except ValueError:
            raise ValueError(f"Z: no default density for {Z!r} (formulas and mixtures have "
                             "none); pass the density in g/cm^3 (g/mm^3 with use_mm)") from None
        return rho * self.density_scalar()

    def _density_gcm3(self, Z, massDensity, arg="massDensity"):
        """The density argument (current units) as g/cm^3, or the default."""
        if massDensity is None:
            return self.massDensity(Z) / self.density_scalar()
        return _number(massDensity, arg, 0.0) / self.density_scalar()

    # -------------------------------------------------------------- cross sections
    def _sigma(self, Z, gamma, kind):
        mat = _resolve(Z)
        e, scalar = _energy(gamma)
        return _out(_mass_attenuation(mat, e, kind) * self.cross_section_scalar(), scalar)

    def sigma(self, Z, gamma):
        """Mass cross section (cm^2/g, or mm^2/g with mm), coherent scattering included.

        Z: material (see the module docstring); gamma: energy or energies (keV)."""
        return self._sigma(Z, gamma, "total")

    def sigmaPE(self, Z, gamma):
        """Photoelectric part of the mass cross section (cm^2/g or mm^2/g)."""
        return self._sigma(Z, gamma, "photoelectric")

    def sigmaCS(self, Z, gamma):
        """Compton (incoherent) part of the mass cross section (cm^2/g or mm^2/g)."""
        return self._sigma(Z, gamma, "incoherent")

    def sigmaRS(self, Z, gamma):
        """Rayleigh (coherent) part of the mass cross section (cm^2/g or mm^2/g)."""
        return self._sigma(Z, gamma, "coherent")

    def sigmaPP(self, Z, gamma):
        """Pair production (nuclear field) part of the mass cross section (cm^2/g)."""
        return self._sigma(Z, gamma, "pair_nuclear")

    def sigmaTP(self, Z, gamma):
        """Triplet production (electron field) part of the mass cross section (cm^2/g)."""
        return self._sigma(Z, gamma, "pair_electron")

    def _mu(self, Z, gamma, massDensity, kind):
        rho = self._density_gcm3(Z, massDensity)
        return self._scale(self._sigma(Z, gamma, kind), rho * self.density_scalar())

    @staticmethod
    def _scale(x, factor):
        return float(x * factor) if isinstance(x, float) else (x * np.float32(factor))

    def mu(self, Z, gamma, massDensity=None):
        """Linear attenuation coefficient (1/cm, or 1/mm with mm) = massDensity x sigma.

        massDensity: g/cm^3 (g/mm^3 with mm); default the material's density."""
        return self._mu(Z, gamma, massDensity, "total")

    def muPE(self, Z, gamma, massDensity=None):
        """Photoelectric part of the linear attenuation coefficient (1/cm or 1/mm)."""
        return self._mu(Z, gamma, massDensity, "photoelectric")

    def muCS(self, Z, gamma, massDensity=None):
        """Compton part of the linear attenuation coefficient (1/cm or 1/mm)."""
        return self._mu(Z, gamma, massDensity, "incoherent")

    def muRS(self, Z, gamma, massDensity=None):
        """Rayleigh part of the linear attenuation coefficient (1/cm or 1/mm)."""
        return self._mu(Z, gamma, massDensity, "coherent")

    def muPP(self, Z, gamma, massDensity=None):
        """Pair production part of the linear attenuation coefficient (1/cm or 1/mm)."""
        return self._mu(Z, gamma, massDensity, "pair_nuclear")

    def muTP(self, Z, gamma, massDensity=None):
        """Triplet production part of the linear attenuation coefficient (1/cm or 1/mm)."""
        return self._mu(Z, gamma, massDensity, "pair_electron")

    def sigma_e(self, Z, gamma):
        """Electron cross section, cm^2 per mole of electrons (mm^2/(mol e) with mm):
        sigma / (mol e per gram)."""
        mat = _resolve(Z)
        e, scalar = _energy(gamma)
        return _out(_sigma_e_cm2mol(mat, e) * self.cross_section_scalar(), scalar)

    def rhoe(self, Z, massDensity):
        """Electron density (mol e/cm^3, or mol e/mm^3 with mm) of a material of mass
        density massDensity (g/cm^3 or g/mm^3)."""
        mat = _resolve(Z)
        return _number(massDensity, "massDensity", 0.0) * _mol_e_per_gram(mat)

    def rho(self, Z, electronDensity):
        """Mass density (g/cm^3, or g/mm^3 with mm) of a material of electron density
        electronDensity (mol e/cm^3 or mol e/mm^3)."""
        mat = _resolve(Z)
        return _number(electronDensity, "electronDensity", 0.0) / _mol_e_per_gram(mat)

    def effectiveZ(self, chemicalFormula, min_energy=10.0, max_energy=100.0, arealDensity=0.0):
        """Effective atomic number: the (fractional) Z whose electron cross section best
        matches the material's over min_energy..max_energy keV (1-keV steps), weighted by
        the transmission squared through arealDensity (g/cm^2 or g/mm^2; <= 0: 2.5 g/cm^2)."""
        mat = _resolve(chemicalFormula, "chemicalFormula")
        if isinstance(mat, _Terms):
            return float(mat.z)
        lo = _number(min_energy, "min_energy", _E_MIN)
        hi = _number(max_energy, "max_energy", _E_MIN)
        if not hi > lo:
            raise ValueError(f"max_energy: must exceed min_energy ({lo:g}), got {hi:g}")
        ad = _number(arealDensity, "arealDensity")
        ad = 2.5 if ad <= 0.0 else ad / self.areal_density_scalar()
        energies = np.arange(math.floor(lo), math.ceil(hi) + 1.0)
        with _names(energy="max_energy", material="chemicalFormula"):
            return _cs.effective_z(mat, "sigma_e", energies=energies, areal_density=ad)

    # -------------------------------------------------------------- scatter
    def _scatter(self, kind, Z, gamma, theta, doNormalize):
        """A leap.physics.scatter distribution at theta degrees: per atom (mean per atom
        for compounds) in cm^2/sr (mm^2/sr with mm), or normalised per steradian."""
        mat = self._scatter_material(Z)
        e = _number(gamma, "gamma", _E_MIN)
        if e > _E_MAX:
            raise ValueError(f"gamma: must be <= {_E_MAX:g} keV, got {gamma!r}")
        th, scalar = _angles(theta)
        fn = _sc.incoherent_distribution if kind == "incoherent" else _sc.coherent_distribution
        if doNormalize:
            val = fn(mat, e, th, normalize=True)
        else:
            val = fn(mat, e, th, units="barn") * _BARN_CM2 * self.cross_section_scalar()
        return _out(np.asarray(val, dtype=np.float64), scalar)

    def _scatter_norm(self, kind, Z, gamma):
        mat = self._scatter_material(Z)
        e = _number(gamma, "gamma", _E_MIN)
        fn = (_sc.incoherent_normalization_factor if kind == "incoherent"
              else _sc.coherent_normalization_factor)
        return float(fn(mat, e, units="barn")) * _BARN_CM2 * self.cross_section_scalar()

    @staticmethod
    def _scatter_material(Z):
        mat = _resolve(Z)
        if isinstance(mat, _Terms):
            raise ValueError(f"Z: scattering data cover Z = 1..98 (whole numbers), got {Z!r}")
        return mat

    def incoherentScatterDistribution(self, Z, gamma, theta, doNormalize=False):
        """Incoherent (Compton) differential cross section at angle(s) theta (degrees):
        Klein-Nishina x incoherent scattering function S(x, Z), per atom (mean per atom
        for compounds), cm^2/sr (mm^2/sr with mm). doNormalize: divide by its integral
        over the sphere (a probability density per steradian). gamma: keV."""
        return self._scatter("incoherent", Z, gamma, theta, doNormalize)

    def ComptonScatterDistribution(self, Z, gamma, theta, doNormalize=False):
        """Alias of :meth:`incoherentScatterDistribution`."""
        return self.incoherentScatterDistribution(Z, gamma, theta, doNormalize)

    def coherentScatterDistribution(self, Z, gamma, theta, doNormalize=False):
        """Coherent (Rayleigh) differential cross section at angle(s) theta (degrees):
        Thomson x atomic form factor F(x, Z)^2, per atom (mean per atom for compounds),
        cm^2/sr (mm^2/sr with mm); Z^2 r_e^2 forward for an element. doNormalize: divide
        by its integral over the sphere. gamma: keV."""
        return self._scatter("coherent", Z, gamma, theta, doNormalize)

    def RayleighScatterDistribution(self, Z, gamma, theta, doNormalize=False):
        """Alias of :meth:`coherentScatterDistribution`."""
        return self.coherentScatterDistribution(Z, gamma, theta, doNormalize)

    def incoherentScatterDistribution_normalizationFactor(self, Z, gamma):
        """Integral over the sphere of :meth:`incoherentScatterDistribution`: the
        incoherent cross section per atom, cm^2 (mm^2 with mm)."""
        return self._scatter_norm("incoherent", Z, gamma)

    def ComptonScatterDistribution_normalizationFactor(self, Z, gamma):
        """Alias of :meth:`incoherentScatterDistribution_normalizationFactor`."""
        return self.incoherentScatterDistribution_normalizationFactor(Z, gamma)

    def coherentScatterDistribution_normalizationFactor(self, Z, gamma):
        """Integral over the sphere of :meth:`coherentScatterDistribution`: the coherent
        cross section per atom, cm^2 (mm^2 with mm)."""
        return self._scatter_norm("coherent", Z, gamma)

    def RayleighScatterDistribution_normalizationFactor(self, Z, gamma):
        """Alias of :meth:`coherentScatterDistribution_normalizationFactor`."""
        return self.coherentScatterDistribution_normalizationFactor(Z, gamma)

    def KleinNishinaScatterDistribution(self, gamma, theta, doNormalize=False):
        """Klein-Nishina differential cross section per electron at angle(s) theta
        (degrees), cm^2/sr (mm^2/sr with mm): r_e^2 forward. doNormalize: divide by the
        Klein-Nishina cross section (a probability density per steradian). gamma: keV."""
        e = _number(gamma, "gamma", 0.0, strict=True)
        th, scalar = _angles(theta)
        if doNormalize:
            val = _sc.klein_nishina_distribution(e, th, normalize=True)
        else:
            val = (_sc.klein_nishina_distribution(e, th, units="barn") * _BARN_CM2
                   * self.cross_section_scalar())
        return _out(np.asarray(val, dtype=np.float64), scalar)

    def KleinNishinaScatterDistribution_normalizationFactor(self, gamma):
        """Klein-Nishina cross section per electron, cm^2 (mm^2 with mm)."""
        e = _number(gamma, "gamma", 0.0, strict=True)
        return (float(_sc.klein_nishina_normalization_factor(e, units="barn")) * _BARN_CM2
                * self.cross_section_scalar())

    # -------------------------------------------------------------- spectra
    def simulateSpectra(self, kV, takeOffAngle=11.0, Z=74, gammas=None):
        """X-ray tube spectrum: returns (gammas, spectrum), float32.

        Leap's model (Tucker-Barnes-Chakraborty for W and Mo anodes, Ebel for Cu and Au)
        in photons/(keV mAs sr) along the central ray, where XrayPhysics uses
        Finkelshtein-Pavlova in relative units. kV: tube voltage; takeOffAngle: degrees,
        or a list of angles (then spectrum is 2-D, one row per angle); Z: anode (29, 42,
        74 or 79, or its symbol; None: 74); gammas: energies (keV), default
        XrayPhysics' grid: 1-keV steps from max(1, int(0.1 ceil(kV))) to ceil(kV),
        coarser steps (floor(ceil(kV)/100) keV) above 199 kV."""
        kv = _number(kV, "kV", 0.0, strict=True)
        anode = 74 if Z is None else Z
        if gammas is None:
            e = _default_gammas(kv)
            gam = e.astype(np.float32)
        else:
            e = _grid(gammas)
            gam = self.fixArray(np.asarray(gammas))
        if isinstance(takeOffAngle, (list, tuple, np.ndarray)):
            angles = np.asarray(takeOffAngle, dtype=np.float64).ravel()
            if angles.size == 0:
                raise ValueError("takeOffAngle: empty list of angles")
            rows = [self.simulateSpectra(kv, float(a), anode, e)[1] for a in angles]
            return gam, np.stack(rows).astype(np.float32)
        with _names(kv="kV", take_off_angle="takeOffAngle", anode="Z", energies="gammas"):
            _, s = _sp.tube_spectrum(kv, takeOffAngle, anode, e)
        return gam, s.astype(np.float32)

    def changeTakeOffAngle(self, kV, takeOffAngle_cur, takeOffAngle_new, Z, gammas, spectrum_cur):
        """The spectrum ``spectrum_cur`` (any source) moved from take-off angle
        takeOffAngle_cur to takeOffAngle_new (degrees): multiplied by the ratio of
        leap's tube spectra at the two angles (anode self-absorption); float32."""
        e = _grid(gammas)
        s = _curve(spectrum_cur, e.size, "spectrum_cur")
        kv = _number(kV, "kV", 0.0, strict=True)
        with _names(kv="kV", take_off_angle="takeOffAngle", anode="Z", energies="gammas"):
            _, cur = _sp.tube_spectrum(kv, _number(takeOffAngle_cur, "takeOffAngle_cur"),
                                       74 if Z is None else Z, e)
            _, new = _sp.tube_spectrum(kv, _number(takeOffAngle_new, "takeOffAngle_new"),
                                       74 if Z is None else Z, e)
        ratio = np.divide(new, cur, out=np.zeros_like(new), where=cur > 0)
        return (s * ratio).astype(np.float32)

    def detectorResponse(self, chemicalFormula, density, thickness, gammas):
        """Energy-integrating detector response gamma (1 - exp(-mu(gamma) L)) (keV per
        incident photon) of a scintillator: density g/cm^3 (g/mm^3; None: the
        material's), thickness L cm (mm), gammas keV; float32."""
        e = _grid(gammas)
        L = _number(thickness, "thickness", 0.0)
        mu = self.mu(chemicalFormula, e, density)
        return (e * -np.expm1(-mu.astype(np.float64) * L)).astype(np.float32)

    def filterResponse(self, chemicalFormula, density, thickness, gammas):
        """Filter transmission exp(-mu(gamma) L): density g/cm^3 (g/mm^3; None: the
        material's), thickness L cm (mm), gammas keV; float32."""
        e = _grid(gammas)
        L = _number(thickness, "thickness", 0.0)
        mu = self.mu(chemicalFormula, e, density)
        return np.exp(-mu.astype(np.float64) * L).astype(np.float32)

    def meanEnergy(self, spectralResponse, gammas):
        """Mean energy (keV) of a spectrum (a density per keV on gammas)."""
        e = _grid(gammas)
        s = _curve(spectralResponse, e.size, "spectralResponse")
        with _names(spectrum="spectralResponse"):
            return _sp.mean_energy(s, e)

    def normalizeSpectrum(self, spectralResponse, gammas):
        """Scale the spectrum IN PLACE so that its integral over energy (sum of value x
        bin width) is 1; returns the same array."""
        s = spectralResponse
        if not isinstance(s, np.ndarray) or s.dtype.kind != "f":
            raise ValueError("spectralResponse: must be a floating-point NumPy array (it is "
                             "normalised in place)")
        if not s.flags.writeable:
            raise ValueError("spectralResponse: the array is read-only")
        e = _grid(gammas)
        c = _curve(s, e.size, "spectralResponse")
        with _names(spectrum="spectralResponse"):
            s[...] = _sp.normalize(c, e)
        return s

    def resample(self, gammas, s, gammas_out):
        """Re-bin a spectrum (a density per keV on gammas) onto the bins centred on
        gammas_out, conserving photons: each output value is the integral of s over its
        bin (photons per output bin), as XrayPhysics returns; float32."""
        e = _grid(gammas, "gammas", 2)
        new = _grid(gammas_out, "gammas_out", 2)
        c = _curve(s, e.size, "s")
        out = _sp.resample(c, e, new) * _sp.bin_widths(new)
        return out.astype(np.float32)

    def load_spectra(self, fileName):
        """(gammas, values) float32 from a two-column text file (lines starting with
        '#' skipped) or an (N, 2) .npy file."""
        data = _load_two_columns(fileName)
        return data[:, 0].astype(np.float32), data[:, 1].astype(np.float32)

    def save_spectra(self, fileName, spectralResponse, gammas):
        """Write gammas and values as two columns: an (N, 2) float32 .npy file, or text."""
        e = np.asarray(gammas, dtype=np.float64).ravel()
        s = _curve(np.asarray(spectralResponse, dtype=np.float64).ravel(), e.size,
                   "spectralResponse")
        if not isinstance(fileName, (str, os.PathLike)):
            raise ValueError(f"fileName: expected a path, got {fileName!r}")
        name = os.fspath(fileName)
        if name.endswith(".npy"):
            np.save(name, np.stack([e, s], axis=1).astype(np.float32))
            return
        with open(name, "w") as fh:
            for x, y in zip(e, s):
                fh.write(f"{x:g} {y:e}\n")

    # -------------------------------------------------------------- polychromatic
    def _poly_setup(self, Z, density, spectralResponse, gammas):
        e = _grid(gammas)
        w = _weights(spectralResponse, e, "spectralResponse")
        mat = _resolve(Z)
        rho = self._density_gcm3(Z, density, "density") * self.density_scalar()
        mu = rho * _mass_attenuation(mat, e) * self.cross_section_scalar()
        return e, w, mu

    def effectiveLAC(self, Z, density, thickness, spectralResponse, gammas):
        """Effective linear attenuation coefficient (1/cm or 1/mm) of the spectrum
        through thickness L (cm or mm): -log(transmission)/L, or the spectrum-weighted
        mean LAC for L = 0. density: g/cm^3 (g/mm^3; None: the material's)."""
        e, w, mu = self._poly_setup(Z, density, spectralResponse, gammas)
        L = _number(thickness, "thickness", 0.0)
        if e.size == 1:
            return float(mu[0])
        if L == 0.0:
            return float(w @ mu / w.sum())
        return float(_bh.polychromatic_attenuation(np.array(L), mu, w)) / L

    def effectiveAttenuation(self, Z, density, thickness, spectralResponse, gammas):
        """Alias of :meth:`effectiveLAC`."""
        return self.effectiveLAC(Z, density, thickness, spectralResponse, gammas)

    def effectiveEnergy(self, Z, density, thickness, spectralResponse, gammas):
        """Energy (keV) whose LAC equals :meth:`effectiveLAC` of the spectrum through
        thickness (cm or mm) of the material."""
        e, w, mu = self._poly_setup(Z, density, spectralResponse, gammas)
        L = _number(thickness, "thickness", 0.0)
        if e.size == 1:
            return float(e[0])
        with _names(mu="Z"):
            return _bh.effective_energy(e, w, mu, L)

    def transmission(self, Z, density, thickness, spectralResponse, gammas):
        """Fraction of the spectrum transmitted through thickness (cm or mm) of the
        material (density g/cm^3 or g/mm^3; None: the material's)."""
        e, w, mu = self._poly_setup(Z, density, spectralResponse, gammas)
        L = _number(thickness, "thickness", 0.0)
        return float(np.exp(-_bh.polychromatic_attenuation(np.array(L), mu, w)))

    def _reference_energy(self, mat, e, w, referenceEnergy):
        ref = _number(referenceEnergy, "referenceEnergy")
        if ref > 0.0:
            return float(_energy(ref, "referenceEnergy")[0])
        return _bh.effective_energy(e, w, _mass_attenuation(mat, e), 0.0)

    def _bh_luts(self, kind, spectralResponse, gammas, Z, referenceEnergy, T_atten, N_atten):
        e = _grid(gammas, "gammas", 2)
        S = np.asarray(spectralResponse, dtype=np.float64)
        if S.ndim == 2 and S.shape[0] == e.size:
            S = S.T
        if S.ndim not in (1, 2):
            raise ValueError(f"spectralResponse: expected a 1-D spectrum or a 2-D stack of "
                             f"spectra, got shape {S.shape}")
        T, N = _lut_grid(T_atten, N_atten, 1.0e-3, 48.0 if kind == "bh" else 12.0)
        mat = _resolve(Z)
        sig = _mass_attenuation(mat, e)
        spectra = [_weights(row, e, "spectralResponse") for row in np.atleast_2d(S)]
        ref = self._reference_energy(mat, e, spectra[0], referenceEnergy)
        sig_ref = float(_mass_attenuation(mat, np.array(ref)))
        x = np.arange(N) * T
        luts = []
        for w in spectra:
            if kind == "bh":
                lut = _bh.polychromatic_attenuation(x / sig_ref, sig, w)
            else:
                table = _bh.BeamHardeningTable(e, w, sig, mu_ref=sig_ref,
                                               max_attenuation=max(12.0, x[-1]))
                lut, _ = table.leap_lut("bhc", T, N)
            luts.append(np.asarray(lut, dtype=np.float32))
        return (luts[0] if S.ndim == 1 else np.stack(luts)), T

    def setBHlookupTable(self, spectralResponse, gammas, Z, referenceEnergy=0.0, T_atten=0.0,
                         N_atten=0):
        """Beam-hardening transfer function for LEAP's applyTransferFunction: returns
        (LUT, T_atten), LUT[i] = polychromatic attenuation of the monochromatic
        attenuation i T_atten at referenceEnergy keV (<= 0: the spectrum's effective
        energy in the material) through material Z. Defaults: T_atten = 1e-3 up to 48.
        A 2-D spectralResponse gives one table per spectrum (one reference energy)."""
        return self._bh_luts("bh", spectralResponse, gammas, Z, referenceEnergy, T_atten,
                             N_atten)

    def setBHClookupTable(self, spectralResponse, gammas, Z, referenceEnergy=0.0, T_atten=0.0,
                          N_atten=0):
        """Beam-hardening correction transfer function (the inverse of
        :meth:`setBHlookupTable`): (LUT, T_atten), LUT[i] = monochromatic attenuation at
        referenceEnergy of the polychromatic attenuation i T_atten. Defaults: T_atten =
        1e-3 up to 12."""
        return self._bh_luts("bhc", spectralResponse, gammas, Z, referenceEnergy, T_atten,
                             N_atten)

    def polynomialBHC(self, spectralResponse, gammas, Z, density, referenceEnergy=0.0,
                      maxThickness=10.0, order=2):
        """Coefficients c (order + 1, 1) of the polynomial correction a_mono = sum_n c_n
        a_poly^n (c_0 = 0), fitted over 100 thicknesses up to maxThickness (cm or mm) of
        the material (density g/cm^3 or g/mm^3; None: the material's)."""
        e, w, mu = self._poly_setup(Z, density, spectralResponse, gammas)
        if e.size < 2:
            raise ValueError("gammas: need at least 2 energies")
        Lmax = _number(maxThickness, "maxThickness", 0.0, strict=True)
        if isinstance(order, bool) or not isinstance(order, numbers.Integral) \
                or not 1 <= order <= 10:
            raise ValueError(f"order: must be an integer 1..10, got {order!r}")
        ref = _number(referenceEnergy, "referenceEnergy")
        ref = _bh.effective_energy(e, w, mu, 0.0) if ref <= 0.0 else float(
            _energy(ref, "referenceEnergy")[0])
        mu_ref = float(self.mu(Z, ref, density))
        c = _bh.polynomial_bhc(e, w, mu, order=int(order), mu_ref=mu_ref, max_thickness=Lmax,
                               num_samples=100)
        return np.asarray(c, dtype=np.float64).reshape(-1, 1)

    def setTwoMaterialBHClookupTable(self, spectralResponse, gammas, sigma_1, sigma_2,
                                     referenceEnergy=None, T_atten=0.0, N_atten=0):
        """Two-material beam-hardening correction table for LEAP's
        applyDualTransferFunction (as in LEAP's demo d18): (LUT (N, N) float32, T_atten),
        LUT[i, j] = monochromatic attenuation at referenceEnergy (default
        floor(meanEnergy)) of rays whose fraction of attenuation due to material 2 is
        i/(N-1) and whose polychromatic attenuation is j T_atten. sigma_1, sigma_2: mass
        cross sections of the low- and high-Z material on gammas. Defaults: T_atten =
        0.01 up to ceil(-log(2^-detectorBits))."""
        e = _grid(gammas, "gammas", 2)
        w = _weights(spectralResponse, e, "spectralResponse")
        s1 = _curve(sigma_1, e.size, "sigma_1")
        s2 = _curve(sigma_2, e.size, "sigma_2")
        for name, s in (("sigma_1", s1), ("sigma_2", s2)):
            if np.any(s <= 0):
                raise ValueError(f"{name}: must be > 0")
        T, N = _lut_grid(T_atten, N_atten, 0.01, self._max_attenuation())
        if referenceEnergy is None:
            ref = math.floor(_sp.mean_energy(w / _sp.bin_widths(e), e))
        else:
            ref = _number(referenceEnergy, "referenceEnergy", 0.0, strict=True)
        if not e[0] <= ref <= e[-1]:
            raise ValueError(f"referenceEnergy: {ref:g} keV lies outside gammas "
                             f"[{e[0]:g}, {e[-1]:g}] keV")
        mu_ref = (float(np.interp(ref, e, s1)), float(np.interp(ref, e, s2)))
        table = _bh.TwoMaterialTable(e, w, s1, s2, reference_energy=ref, mu_ref=mu_ref,
                                     max_attenuation=max(12.0, (N - 1) * T), num_samples=3,
                                     num_second=2)
        lut, T = table.leap_lut(T, N)
        return np.asarray(lut, dtype=np.float32), T

    def setDEDlookupTable(self, spectralResponse_L, spectralResponse_H, gammas, basisFunction_1,
                          basisFunction_2, referenceEnergies=None, T_atten=0.0, N_atten=0):
        """Dual-energy decomposition table for LEAP's applyDualTransferFunction: (LUT
        (3, N, N) float32, T_atten), LUT[0]/LUT[1][i, j] = virtual monochromatic
        attenuation at the low/high reference energy (default floor of the spectra's
        mean energies) of rays with low/high polychromatic attenuation (i T_atten,
        j T_atten), LUT[2] the residual norm (0 where there is no solution). Basis
        functions on gammas: mass cross sections, PCAbases, Photoelectric/ComptonBasis.
        Defaults: T_atten = 0.01 up to ceil(-log(2^-detectorBits))."""
        e = _grid(gammas, "gammas", 2)
        wl = _weights(spectralResponse_L, e, "spectralResponse_L")
        wh = _weights(spectralResponse_H, e, "spectralResponse_H")
        B = np.stack([_curve(basisFunction_1, e.size, "basisFunction_1"),
                      _curve(basisFunction_2, e.size, "basisFunction_2")])
        T, N = _lut_grid(T_atten, N_atten, 0.01, self._max_attenuation())
        widths = _sp.bin_widths(e)
        if referenceEnergies is None:
            refs = [math.floor(_sp.mean_energy(w / widths, e)) for w in (wl, wh)]
        else:
            refs = np.asarray(referenceEnergies, dtype=np.float64).ravel()
            if refs.size != 2 or not np.all(np.isfinite(refs)):
                raise ValueError(f"referenceEnergies: expected two energies (keV), got "
                                 f"{referenceEnergies!r}")
        for r in refs:
            if not e[0] <= r <= e[-1]:
                raise ValueError(f"referenceEnergies: {r:g} keV lies outside gammas "
                                 f"[{e[0]:g}, {e[-1]:g}] keV")
        with _names({"basis": "basisFunction_1/basisFunction_2",
                     "the two basis": "basisFunction_1/basisFunction_2: the two basis"}):
            table = _de.DualEnergyTable(wl, wh, B, num_samples=2)
        b_low, b_high = (_de.basis_values(e, B, r) for r in refs)
        lut, T = table.leap_lut(b_low, b_high, T, N)
        return np.asarray(lut, dtype=np.float32), T

    def _max_attenuation(self):
        bits = _number(self.detectorBits, "detectorBits", 1.0)
        return float(math.ceil(bits * math.log(2.0)))

    # -------------------------------------------------------------- bases
    def PhotoelectricBasis(self, gammas):
        """Photoelectric energy dependence gamma^-3 (x100 with mm), float32."""
        e, scalar = _energy(gammas, "gammas")
        b = _elementwise(_de.photoelectric_basis, e) * self.cross_section_scalar()
        return _out(b, scalar)

    def ComptonBasis(self, gammas):
        """Klein-Nishina cross section per mole of electrons, cm^2/mol (mm^2/mol with
        mm), float32."""
        e, scalar = _energy(gammas, "gammas")
        b = _elementwise(_de.compton_basis, e) * 1.0e-2 * _N_A * self.cross_section_scalar()
        return _out(b, scalar)

    def PCAbases(self, listOfMaterials, gammas):
        """The first two principal components (unit norm, positive at the first energy)
        of the mass cross sections of two or more materials on gammas: (b_1, b_2)."""
        if isinstance(listOfMaterials, (str, bytes)) or not hasattr(listOfMaterials, "__len__") \
                or len(listOfMaterials) < 2:
            raise ValueError("listOfMaterials: give a list of at least two materials")
        e = _grid(gammas, "gammas", 2)
        X = np.stack([_mass_attenuation(_resolve(m, "listOfMaterials"), e)
                      * self.cross_section_scalar() for m in listOfMaterials])
        b = _de.pca_bases(X, 2)
        return b[0], b[1]

    # -------------------------------------------------------------- library
    def print_material_library(self):
        """Print the material library: name, density (g/cm^3), composition."""
        formulas, densities = _library()
        width = max(len(k) for k in formulas) + 1
        for k in formulas:
            print(f"{k + ':':<{width}} {densities[k]:g} g/cm^3, {formulas[k]}")

    def get_material_library(self):
        """({name: formula or mass-fraction mixture}, {name: density in g/cm^3})."""
        return _library()


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
