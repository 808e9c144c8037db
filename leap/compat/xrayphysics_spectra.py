"""XrayPhysics' spectrum, polychromatic, beam-hardening and dual-energy methods.

The half of :class:`leap.compat.xrayphysics.xrayPhysics` that works on spectra (tube
spectra, detector and filter responses, effective energies and attenuation, the
beam-hardening and dual-energy lookup tables LEAP's transfer functions take, the
dual-energy bases), as a mixin: it relies on the class's unit switches
(``cross_section_scalar``, ``density_scalar``), ``mu``, ``_density_gcm3``, ``fixArray``
and ``detectorBits``. Units, materials and differences from XrayPhysics: see
:mod:`leap.compat.xrayphysics`.
"""
from __future__ import annotations

import math
import numbers
import os

import numpy as np

from ..physics import beam_hardening as _bh
from ..physics import dual_energy as _de
from ..physics import spectra as _sp
from ._xrayphysics_inputs import (_N_A, _curve, _default_gammas, _elementwise, _energy, _grid,
                                  _load_two_columns, _lut_grid, _mass_attenuation, _names,
                                  _number, _out, _resolve, _weights)


class SpectraMixin:
    """Spectra, polychromatic quantities, lookup tables and bases of ``xrayPhysics``."""

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
