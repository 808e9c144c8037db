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
*ScatterDistribution*               this class (xraylib S(q, Z), F(q, Z))
load_spectra, save_spectra,         this class
print/get_material_library
==================================  ==================================================

Spectra are spectral densities per keV on their energy grid (bin-width weighted sums,
as XrayPhysics integrates them); on a uniform grid this equals per-bin weights.

The class is split in two: units, elements, cross sections and scatter here; spectra,
polychromatic quantities, lookup tables and bases in
:mod:`leap.compat.xrayphysics_spectra`; the argument checks and material resolution they
share in ``leap/compat/_xrayphysics_inputs.py``. The top-level module ``xrayphysics``
re-exports this one under XrayPhysics' name.
"""
from __future__ import annotations

import math
import os
import sys

import numpy as np

from ..physics import cross_sections as _cs
from ..physics import scatter as _sc
from ._xrayphysics_inputs import (_BARN_CM2, _E_MAX, _E_MIN, _Terms, _angles, _energy,
                                  _integral_z, _library, _mass_attenuation,
                                  _mol_e_per_gram, _names, _number, _out, _resolve,
                                  _sigma_e_cm2mol)
from .xrayphysics_spectra import SpectraMixin

__all__ = ["xrayPhysics", "materialFormulas", "materialDensities", "np", "os", "sys"]

#: The material library that XrayPhysics keeps at module level, as two dicts (name to
#: formula or mass-fraction mixture, and name to density in g/cm^3).
materialFormulas, materialDensities = _library()


# ------------------------------------------------------------------ the class
class xrayPhysics(SpectraMixin):
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
