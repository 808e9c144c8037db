"""The XrayPhysics shim (``xrayphysics.py``): LLNL XrayPhysics' API over leap.physics."""
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("xraylib")

try:
    import xrayphysics
except ImportError:                     # an editable install made before the shim existed
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import xrayphysics

from leap.compat.model import tomographicModels
from leap.physics import beam_hardening, cross_sections, detectors, spectra

R_E = 2.8179403262e-13                  # classical electron radius, cm
N_A = 6.02214076e23


@pytest.fixture
def physics():
    return xrayphysics.xrayPhysics()


def sphere_integral(f, thetas_deg):
    """Trapezoid rule of f(theta) 2 pi sin(theta) over theta in radians."""
    th = np.deg2rad(thetas_deg)
    return float(np.trapezoid(np.asarray(f, dtype=np.float64) * 2 * np.pi * np.sin(th), th))


def system_spectrum(physics, kv=80.0):
    """XrayPhysics-style total response (mm units): source x GOS detector x Al filter."""
    Es, s = physics.simulateSpectra(kv, 11.0)
    det = physics.detectorResponse("O2SGd2", 7.32e-3, 0.1, Es)
    filt = physics.filterResponse("Al", 2.7e-3, 1.0, Es)
    return Es, s * det * filt


# ------------------------------------------------------------------ module, units
def test_star_import():
    ns = {}
    exec("from xrayphysics import *", ns)
    assert ns["xrayPhysics"] is xrayphysics.xrayPhysics
    assert ns["np"] is np
    assert ns["materialFormulas"]["water"] == "H2O"


def test_units_switch_scales_every_length(physics):
    E = np.array([30.0, 60.0, 100.0])
    cm = dict(sigma=physics.sigma("H2O", E), mu=physics.mu("Al", E), rho=physics.massDensity("Al"),
              sigma_e=physics.sigma_e("H2O", 60.0), rhoe=physics.rhoe("H2O", 1.0),
              compton=physics.ComptonBasis(E), photo=physics.PhotoelectricBasis(E))
    physics.use_mm()
    assert physics.length_units == "mm"
    np.testing.assert_allclose(physics.sigma("H2O", E), cm["sigma"] * 100, rtol=1e-6)
    np.testing.assert_allclose(physics.mu("Al", E), cm["mu"] * 0.1, rtol=1e-6)
    assert physics.massDensity("Al") == pytest.approx(cm["rho"] * 1e-3)
    assert physics.massDensity("Al") == pytest.approx(2.7e-3, rel=1e-3)
    assert physics.sigma_e("H2O", 60.0) == pytest.approx(cm["sigma_e"] * 100)
    assert physics.rhoe("H2O", 1.0e-3) == pytest.approx(cm["rhoe"] * 1e-3)
    np.testing.assert_allclose(physics.ComptonBasis(E), cm["compton"] * 100, rtol=1e-6)
    np.testing.assert_allclose(physics.PhotoelectricBasis(E), cm["photo"] * 100, rtol=1e-6)
    # 1 mm of Al at 2.7e-3 g/mm^3 is 0.1 cm at 2.7 g/cm^3
    t_mm = physics.filterResponse("Al", 2.7e-3, 1.0, E)
    Es, s = physics.simulateSpectra(100.0)
    lac_mm = physics.effectiveLAC("Al", 2.7e-3, 1.0, s, Es)
    physics.use_cm()
    np.testing.assert_allclose(physics.filterResponse("Al", 2.7, 0.1, E), t_mm, rtol=1e-6)
    assert physics.effectiveLAC("Al", 2.7, 0.1, s, Es) == pytest.approx(lac_mm * 10, rel=1e-6)
    assert physics.cross_section_scalar() == 1.0 and physics.LAC_scalar() == 1.0


def test_return_types_follow_xrayphysics(physics):
    assert isinstance(physics.sigma("H2O", 60.0), float)
    out = physics.sigma("H2O", np.arange(20.0, 30.0))
    assert out.dtype == np.float32 and out.shape == (10,)
    assert physics.sigma("H2O", [[20.0, 30.0]]).shape == (1, 2)


# ------------------------------------------------------------------ materials
def test_material_forms_agree(physics):
    E = np.array([20.0, 60.0, 150.0])
    water = physics.sigma("H2O", E)
    for form in ("water", "Water", {"H2O": 1.0}, "2*H2O"):
        np.testing.assert_allclose(physics.sigma(form, E), water, rtol=1e-6)
    np.testing.assert_allclose(physics.sigma("O2SGd2", E), physics.sigma("Gd2O2S", E), rtol=1e-6)
    np.testing.assert_allclose(physics.sigma("GOS", E), physics.sigma("Gd2O2S", E), rtol=1e-6)
    assert physics.sigma(8, 60.0) == physics.sigma("O", 60.0) == physics.sigma(8.0, 60.0)
    # non-integer Z interpolates linearly between the neighbours, as XrayPhysics does
    assert physics.sigma(7.25, 60.0) == pytest.approx(
        0.75 * physics.sigma(7, 60.0) + 0.25 * physics.sigma(8, 60.0))
    # mixtures by relative mass weights
    salt = cross_sections.mass_attenuation("NaCl", E, units="cm")
    h2o = cross_sections.mass_attenuation("H2O", E, units="cm")
    np.testing.assert_allclose(physics.sigma("96.5*H2O + 3.5*NaCl", E),
                               0.965 * h2o + 0.035 * salt, rtol=1e-6)


def test_library_names(physics):
    assert physics.massDensity("delrin") == pytest.approx(1.425)
    np.testing.assert_allclose(physics.sigma("delrin", [40.0, 80.0]),
                               physics.sigma("CH2O", [40.0, 80.0]), rtol=1e-6)
    assert physics.massDensity("teflon") == pytest.approx(2.25)
    assert physics.massDensity("bone") == pytest.approx(1.92)
    assert physics.massDensity("Mg") == pytest.approx(1.74, rel=1e-2)
    assert physics.massDensity(13) == pytest.approx(2.699, rel=1e-3)
    assert physics.density("water") == 1.0
    formulas, densities = physics.get_material_library()
    assert formulas["delrin"] == "CH2O" and densities["water"] == 1.0
    assert set(formulas) == set(densities) >= {"water", "cortical_bone", "teflon", "delrin"}
    # mixtures of the library are XrayPhysics mixture strings the shim reads back
    assert physics.sigma(formulas["cortical_bone"], 60.0) == pytest.approx(
        physics.sigma("bone", 60.0), rel=1e-5)


def test_print_material_library(physics, capsys):
    physics.print_material_library()
    out = capsys.readouterr().out
    assert "delrin:" in out and "g/cm^3" in out


def test_element_helpers(physics):
    assert physics.elementSymbolToAtomicNumber("Pb") == 82
    assert physics.atomicMass("O") == pytest.approx(15.999, rel=1e-4)
    assert physics.atomicMass(8) == physics.atomicMass("O")


@pytest.mark.parametrize("call, arg", [
    (lambda p: p.sigma("bogus", 60.0), "Z"),
    (lambda p: p.sigma(0, 60.0), "Z"),
    (lambda p: p.sigma(True, 60.0), "Z"),
    (lambda p: p.sigma("H2O", 0.5), "gamma"),
    (lambda p: p.sigma("H2O", np.nan), "gamma"),
    (lambda p: p.massDensity("CH2O"), "Z"),
    (lambda p: p.mu("H2O", 60.0, -1.0), "massDensity"),
    (lambda p: p.elementSymbolToAtomicNumber("Xx"), "elementStr"),
    (lambda p: p.simulateSpectra(5.0), "kV"),
    (lambda p: p.simulateSpectra(100.0, 95.0), "takeOffAngle"),
    (lambda p: p.simulateSpectra(100.0, 11.0, 26), "Z"),
    (lambda p: p.filterResponse("Al", None, -1.0, [20.0, 30.0]), "thickness"),
    (lambda p: p.meanEnergy(np.ones(3), np.arange(1.0, 5.0)), "spectralResponse"),
    (lambda p: p.meanEnergy(np.ones(3), [3.0, 2.0, 1.0]), "gammas"),
    (lambda p: p.normalizeSpectrum(np.ones(3, dtype=np.int64), np.arange(1.0, 4.0)),
     "spectralResponse"),
    (lambda p: p.normalizeSpectrum(np.zeros(3), np.arange(1.0, 4.0)), "spectralResponse"),
    (lambda p: p.setTwoMaterialBHClookupTable(np.ones(3), np.arange(10.0, 13.0), np.ones(3),
                                              np.ones(2)), "sigma_2"),
    (lambda p: p.polynomialBHC(np.ones(3), np.arange(10.0, 13.0), "H2O", 1.0, order=0), "order"),
    (lambda p: p.setDEDlookupTable(np.ones(3), np.ones(3), np.arange(10.0, 13.0), np.ones(3),
                                   np.ones(3), [5.0, 11.0]), "referenceEnergies"),
    (lambda p: p.PCAbases(["C"], np.arange(10.0, 13.0)), "listOfMaterials"),
    (lambda p: p.KleinNishinaScatterDistribution(-1.0, 0.0), "gamma"),
    (lambda p: p.coherentScatterDistribution(8, 60.0, "x"), "theta"),
])
def test_errors_name_the_argument(physics, call, arg):
    with pytest.raises(ValueError, match=arg):
        call(physics)


# ------------------------------------------------------------------ cross sections
def test_water_against_nist(physics):
    # NIST XCOM / NISTIR 5632: water, 60 keV, mu/rho with coherent = 0.2059 cm^2/g
    assert physics.sigma("H2O", 60.0) == pytest.approx(0.2059, rel=2e-3)
    assert physics.mu("water", 60.0) == pytest.approx(0.2059, rel=2e-3)
    parts = sum(getattr(physics, f"sigma{k}")("H2O", 60.0) for k in ("PE", "CS", "RS", "PP", "TP"))
    assert parts == pytest.approx(physics.sigma("H2O", 60.0), rel=1e-6)
    parts = sum(getattr(physics, f"mu{k}")("H2O", 60.0) for k in ("PE", "CS", "RS", "PP", "TP"))
    assert parts == pytest.approx(physics.mu("H2O", 60.0), rel=1e-6)
    assert physics.sigmaPP("H2O", 60.0) == 0.0
    assert physics.sigmaPP("Pb", 5000.0) > 0 and physics.sigmaTP("Pb", 5000.0) > 0


def test_electron_quantities_are_consistent(physics):
    for Z in ("H2O", "bone", 26, "0.9*H2O + 0.1*NaCl"):
        rho = 1.7
        rhoe = physics.rhoe(Z, rho)
        assert physics.rho(Z, rhoe) == pytest.approx(rho)
        for E in (30.0, 80.0):
            # mu = rho sigma = rhoe sigma_e
            assert rhoe * physics.sigma_e(Z, E) == pytest.approx(rho * physics.sigma(Z, E),
                                                                 rel=1e-6)
    # water: 0.5551 mol e/cm^3; sigma_e(Z) = sigma(Z) A / Z as in XrayPhysics
    assert physics.rhoe("H2O", 1.0) == pytest.approx(0.5551, rel=1e-3)
    assert physics.sigma_e(26, 60.0) == pytest.approx(
        physics.sigma(26, 60.0) * physics.atomicMass(26) / 26, rel=1e-6)
    assert physics.sigma_e("H2O", 60.0) == pytest.approx(
        cross_sections.electron_cross_section("H2O", 60.0, units="cm") * N_A, rel=1e-6)


def test_sigma_e_for_every_z_as_in_demo_d19(physics):
    sig = np.array([physics.sigma_e(Z, 60.0) for Z in range(1, 101)])
    assert np.all(np.isfinite(sig)) and np.all(sig > 0)
    # Z = 99, 100 (no tables) continue the trend of 97, 98
    assert sig[98] == pytest.approx(2 * sig[97] - sig[96], rel=1e-6)


def test_effective_z(physics):
    assert physics.effectiveZ("H2O") == pytest.approx(7.44, abs=0.05)
    assert physics.effectiveZ("Fe") == pytest.approx(26.0, abs=0.05)
    assert physics.effectiveZ("H2O") == pytest.approx(
        cross_sections.effective_z("H2O", "sigma_e"), abs=1e-6)
    physics.use_mm()               # areal density in g/mm^2: 0.025 g/mm^2 = 2.5 g/cm^2
    assert physics.effectiveZ("bone", arealDensity=0.025) == pytest.approx(
        cross_sections.effective_z("bone", "sigma_e", areal_density=2.5), abs=1e-6)


# ------------------------------------------------------------------ spectra
def test_simulate_spectra_default_grid(physics):
    Es, s = physics.simulateSpectra(100.0)
    np.testing.assert_array_equal(Es, np.arange(10.0, 101.0))
    assert Es.dtype == np.float32 and s.dtype == np.float32 and s.shape == Es.shape
    assert np.all(s >= 0) and s[-1] < 1e-2 * s.max()         # the continuum ends at kV
    Es, _ = physics.simulateSpectra(160.0)
    np.testing.assert_array_equal(Es, np.arange(16.0, 161.0))
    Es, _ = physics.simulateSpectra(250.0)                 # 2-keV steps ending at 250
    assert Es[-1] == 250.0 and np.all(np.diff(Es) == 2.0) and Es[0] == 24.0
    Es, s = physics.simulateSpectra(80.0, 11.0, None)      # Z None is tungsten
    np.testing.assert_array_equal(s, physics.simulateSpectra(80.0, 11.0, 74)[1])
    np.testing.assert_allclose(s, spectra.tube_spectrum(80.0, 11.0, "W", Es)[1], rtol=1e-6)


def test_simulate_spectra_given_grid_and_angles(physics):
    Es = np.arange(20.0, 121.0, 2.0, dtype=np.float32)
    out, s = physics.simulateSpectra(120.0, gammas=Es)
    np.testing.assert_array_equal(out, Es)
    angles = [6.0, 11.0, 20.0]
    out, S = physics.simulateSpectra(120.0, angles, 74, Es)
    assert S.shape == (3, Es.size) and S.dtype == np.float32
    for row, a in zip(S, angles):
        np.testing.assert_allclose(row, physics.simulateSpectra(120.0, a, 74, Es)[1], rtol=1e-6)
    # a steeper take-off angle means a longer path out of the anode: fewer soft photons
    assert S[0, 0] < S[1, 0] < S[2, 0]
    # changeTakeOffAngle moves a spectrum between angles
    moved = physics.changeTakeOffAngle(120.0, 11.0, 20.0, 74, Es, S[1])
    np.testing.assert_allclose(moved, S[2], rtol=1e-5)


def test_normalize_spectrum_in_place(physics):
    Es, s = physics.simulateSpectra(100.0)
    ref = s.copy()
    out = physics.normalizeSpectrum(s, Es)
    assert out is s
    assert float(np.sum(s * spectra.bin_widths(Es))) == pytest.approx(1.0, rel=1e-6)
    np.testing.assert_allclose(s / ref.max(), ref / ref.max() * (s.max() / ref.max()),
                               rtol=1e-5)
    s64 = ref.astype(np.float64)                  # float64 too (XrayPhysics copied it)
    physics.normalizeSpectrum(s64, Es)
    np.testing.assert_allclose(s64, s, rtol=1e-6)
    # non-uniform grid: the integral with bin widths is 1
    E = np.array([10.0, 12.0, 16.0, 24.0])
    v = np.ones(4)
    physics.normalizeSpectrum(v, E)
    assert np.sum(v * spectra.bin_widths(E)) == pytest.approx(1.0)


def test_mean_energy(physics):
    Es, s = physics.simulateSpectra(100.0)
    assert physics.meanEnergy(s, Es) == pytest.approx(float(np.sum(Es * s) / np.sum(s)),
                                                     rel=1e-6)


def test_resample_conserves_counts(physics):
    Es, s = physics.simulateSpectra(100.0)                 # 1-keV bins
    coarse = Es[::5].copy()
    out = physics.resample(Es, s, coarse)
    assert out.dtype == np.float32 and out.shape == coarse.shape
    # photons per output bin: the total is conserved
    assert float(out.sum()) == pytest.approx(float(s.sum()), rel=1e-5)
    # a flat density of 1/keV gives the output bins' widths
    flat = physics.resample(Es, np.ones(Es.size), coarse)
    np.testing.assert_allclose(flat[1:-1], 5.0, rtol=1e-6)
    np.testing.assert_allclose(flat, spectra.resample(np.ones(Es.size), Es, coarse)
                               * spectra.bin_widths(coarse), rtol=1e-6)


def test_load_and_save_spectra(physics, tmp_path):
    Es, s = physics.simulateSpectra(60.0)
    for name in ("spec.txt", "spec.npy"):
        physics.save_spectra(str(tmp_path / name), s, Es)
        E2, s2 = physics.load_spectra(str(tmp_path / name))
        np.testing.assert_allclose(E2, Es)
        np.testing.assert_allclose(s2, s, rtol=1e-6)
    (tmp_path / "c.txt").write_text("# energy  value\n10 1.5\n\n20 2.5\n")
    E3, s3 = physics.load_spectra(str(tmp_path / "c.txt"))
    np.testing.assert_array_equal(E3, [10, 20])
    np.testing.assert_array_equal(s3, [1.5, 2.5])
    (tmp_path / "bad.txt").write_text("10 1 2\n")
    with pytest.raises(ValueError, match="fileName"):
        physics.load_spectra(str(tmp_path / "bad.txt"))


def test_detector_and_filter_responses(physics):
    E = np.arange(15.0, 121.0)
    mu_gos = physics.mu("Gd2O2S", E, 7.32)
    det = physics.detectorResponse("O2SGd2", 7.32, 0.01, E)
    np.testing.assert_allclose(det, E * (1 - np.exp(-mu_gos * 0.01)), rtol=1e-5)
    # the model of leap.physics.detectors / spectra (lengths in mm there)
    np.testing.assert_allclose(det, detectors.energy_integrating_response("Gd2O2S", 0.1, E, 7.32),
                               rtol=1e-4)
    filt = physics.filterResponse("Al", 2.7, 0.1, E)
    np.testing.assert_allclose(filt, spectra.filter_response("Al", 1.0, E, 2.7), rtol=1e-4)
    assert np.all(physics.filterResponse("Al", None, 0.0, E) == 1.0)
    np.testing.assert_allclose(physics.detectorResponse("CsI", None, 100.0, E), E, rtol=1e-5)
    physics.use_mm()                   # LEAP's demos: density in g/mm^3, thickness in mm
    np.testing.assert_allclose(physics.detectorResponse("O2SGd2", 7.32e-3, 0.1, E), det,
                               rtol=1e-5)
    np.testing.assert_allclose(physics.detectorResponse("GOS", None, 0.1, E),
                               physics.detectorResponse("GOS", 7.44e-3, 0.1, E), rtol=1e-6)


def test_transmission_and_effective_quantities(physics):
    Es, s = physics.simulateSpectra(100.0)
    s = s * physics.filterResponse("Al", None, 0.2, Es)
    L = 2.0
    T = physics.transmission("H2O", 1.0, L, s, Es)
    w = s / s.sum()
    assert T == pytest.approx(float(np.sum(w * np.exp(-physics.mu("H2O", Es, 1.0) * L))),
                              rel=1e-5)
    lac = physics.effectiveLAC("H2O", 1.0, L, s, Es)
    assert lac == pytest.approx(-np.log(T) / L, rel=1e-6)
    assert physics.effectiveAttenuation("H2O", 1.0, L, s, Es) == lac
    E_eff = physics.effectiveEnergy("H2O", 1.0, L, s, Es)
    assert physics.mu("H2O", E_eff, 1.0) == pytest.approx(lac, rel=1e-3)
    # thickness 0: the spectrum-weighted mean LAC
    lac0 = physics.effectiveLAC("H2O", 1.0, 0.0, s, Es)
    assert lac0 == pytest.approx(float(np.sum(w * physics.mu("H2O", Es, 1.0))), rel=1e-5)
    assert physics.effectiveEnergy("H2O", 1.0, 0.0, s, Es) < E_eff      # beam hardening


# ------------------------------------------------------------------ tables and LEAP
def test_bh_lut_round_trip_through_the_facade(physics):
    physics.use_mm()
    Es, s = system_spectrum(physics)
    BH, T = physics.setBHlookupTable(s, Es, "H2O", 63.9544)
    assert BH.dtype == np.float32 and T == 1e-3 and BH.size == 48001
    assert physics.mu("H2O", 63.9544, 1.0e-3) == pytest.approx(0.02, rel=2e-3)
    # exact polychromatic attenuation of monochromatic attenuation x at 63.9544 keV
    x = np.linspace(0.0, 10.0, 101)
    sig = physics.sigma("H2O", Es).astype(np.float64)
    sig_hat = sig / physics.sigma("H2O", 63.9544)
    w = s / s.sum()
    exact = -np.log(np.exp(-np.outer(x, sig_hat)) @ w)
    leapct = tomographicModels()
    g = x.astype(np.float32).reshape(1, 1, -1).copy()
    leapct.applyTransferFunction(g, BH, T)
    np.testing.assert_allclose(g.ravel(), exact, atol=2e-5)
    assert np.all(np.diff(g.ravel()[1:] / x[1:]) < 0)     # the beam hardens
    BHC, T2 = physics.setBHClookupTable(s, Es, "H2O", 63.9544)
    assert BHC.size == 12001 and T2 == 1e-3
    leapct.applyTransferFunction(g, BHC, T2)
    np.testing.assert_allclose(g.ravel(), x, atol=2e-4)
    # the default reference energy: the thin-object effective energy of the spectrum
    BH0, _ = physics.setBHlookupTable(s, Es, "H2O")
    assert BH0[1] == pytest.approx(1e-3, rel=1e-3)           # slope 1 at 0
    # several spectra: one table each, rows or columns
    S = np.stack([s, s * physics.filterResponse("Cu", None, 0.5, Es)])
    luts, _ = physics.setBHClookupTable(S, Es, "H2O", 60.0, 0.01, 600)
    luts_t, _ = physics.setBHClookupTable(S.T, Es, "H2O", 60.0, 0.01, 600)
    assert luts.shape == (2, 600)
    np.testing.assert_array_equal(luts, luts_t)
    np.testing.assert_allclose(luts[1], physics.setBHClookupTable(S[1], Es, "H2O", 60.0, 0.01,
                                                                  600)[0])


def test_polynomial_bhc(physics):
    physics.use_mm()
    Es, s = system_spectrum(physics)
    c = physics.polynomialBHC(s, Es, "H2O", 1.0e-3, 60.0, maxThickness=200.0, order=3)
    assert c.shape == (4, 1) and c[0, 0] == 0.0
    L = np.linspace(10.0, 200.0, 20)
    sig = physics.mu("H2O", Es, 1.0e-3).astype(np.float64)
    p = -np.log(np.exp(-np.outer(L, sig)) @ (s / s.sum()))
    mono = physics.mu("H2O", 60.0, 1.0e-3) * L
    fit = sum(c[n, 0] * p ** n for n in range(4))
    np.testing.assert_allclose(fit, mono, atol=1e-2)
    np.testing.assert_allclose(
        c.ravel(), beam_hardening.polynomial_bhc(Es, s, sig, order=3, mu_ref=mono[0] / L[0],
                                                 max_thickness=200.0), rtol=1e-6)


def test_two_material_lut_through_the_facade(physics):
    physics.use_mm()
    Es, s = system_spectrum(physics, 100.0)
    sig_w = physics.sigma("H2O", Es)
    sig_ti = physics.sigma("Ti", Es)
    ref = np.round(physics.meanEnergy(s, Es))
    LUT, T = physics.setTwoMaterialBHClookupTable(s, Es, sig_w, sig_ti, ref, 0.02, 301)
    assert LUT.shape == (301, 301) and LUT.dtype == np.float32 and T == 0.02
    # row 0 (no titanium) is the single-material water correction
    single, _ = physics.setBHClookupTable(s, Es, "H2O", ref, 0.02, 301)
    np.testing.assert_allclose(LUT[0], single, atol=2e-4)
    # rays through water and titanium, corrected as in LEAP's demo d18
    Lw = np.array([10.0, 50.0, 100.0, 150.0])
    Lti = np.array([0.5, 2.0, 1.0, 5.0])
    mu_w = sig_w.astype(np.float64) * 1.0e-3
    mu_ti = sig_ti.astype(np.float64) * 4.5e-3
    p = -np.log(np.exp(-np.outer(Lw, mu_w) - np.outer(Lti, mu_ti)) @ (s / s.sum()))
    a1 = np.interp(ref, Es, mu_w) * Lw
    a2 = np.interp(ref, Es, mu_ti) * Lti
    frac = a2 / (a1 + a2)
    g_mono = p.astype(np.float32).reshape(1, 1, -1).copy()
    x = (T * (LUT.shape[0] - 1) * frac).astype(np.float32).reshape(1, 1, -1)
    tomographicModels().applyDualTransferFunction(x, g_mono, LUT, T)
    np.testing.assert_allclose(g_mono.ravel(), a1 + a2, rtol=5e-3)
    # default reference energy: floor of the mean energy
    _, T_default = physics.setTwoMaterialBHClookupTable(s, Es, sig_w, sig_ti, None, 0.1, 121)
    assert T_default == 0.1


def _dual_spectra(physics):
    Es, s_H = physics.simulateSpectra(160.0, 11.0)
    Es, s_L = physics.simulateSpectra(100.0, 11.0, None, Es)
    det = physics.detectorResponse("O2SGd2", 7.32e-3, 0.1, Es)
    f_L = physics.filterResponse("Al", 2.7e-3, 1.0, Es)
    f_H = physics.filterResponse("Cu", 8.96e-3, 1.0, Es) * f_L
    return Es, s_L * f_L * det, s_H * f_H * det


def test_ded_lut_through_the_facade(physics):
    physics.use_mm()
    Es, s_L, s_H = _dual_spectra(physics)
    sig_w, sig_al = physics.sigma("H2O", Es), physics.sigma("Al", Es)
    refs = [np.round(physics.meanEnergy(s_L, Es)), np.round(physics.meanEnergy(s_H, Es))]
    LUT, T = physics.setDEDlookupTable(s_L, s_H, Es, sig_w, sig_al, refs, 0.05, 121)
    assert LUT.shape == (3, 121, 121) and LUT.dtype == np.float32 and T == 0.05
    # water and aluminium path lengths (mm) -> polychromatic (p_L, p_H)
    Lw = np.array([20.0, 80.0, 120.0, 60.0])
    Lal = np.array([0.0, 5.0, 20.0, 40.0])
    mu_w, mu_al = sig_w * 1.0e-3, sig_al * 2.7e-3
    att = np.exp(-np.outer(Lw, mu_w) - np.outer(Lal, mu_al))
    p_L = -np.log(att @ (s_L / s_L.sum()))
    p_H = -np.log(att @ (s_H / s_H.sum()))
    x = p_L.astype(np.float32).reshape(1, 1, -1).copy()
    y = p_H.astype(np.float32).reshape(1, 1, -1).copy()
    # the facade takes the whole (3, N, N) table and uses its first two planes, as LEAP
    tomographicModels().applyDualTransferFunction(x, y, LUT, T)
    for out, E in ((x, refs[0]), (y, refs[1])):
        mono = (physics.mu("H2O", E, 1.0e-3) * Lw + physics.mu("Al", E, 2.7e-3) * Lal)
        np.testing.assert_allclose(out.ravel(), mono, rtol=1e-2)
    assert np.max(LUT[2][LUT[0] != 0]) < 1e-6         # residual norm where solved


def test_ded_default_reference_energies_and_bases(physics):
    physics.use_mm()
    Es, s_L, s_H = _dual_spectra(physics)
    b1, b2 = physics.PCAbases(["C", "N", "O", "Al"], Es)
    assert b1.shape == Es.shape and np.linalg.norm(b1) == pytest.approx(1.0)
    assert b1[0] > 0 and b2[0] > 0 and abs(np.dot(b1, b2)) < 1e-6
    # the two components span the four materials' cross sections closely
    B = np.stack([b1, b2], axis=1)
    for m in ("C", "N", "O", "Al"):
        sig = physics.sigma(m, Es).astype(np.float64)
        coef = np.linalg.lstsq(B, sig, rcond=None)[0]
        assert np.linalg.norm(B @ coef - sig) < 0.02 * np.linalg.norm(sig)
    LUT, T = physics.setDEDlookupTable(s_L, s_H, Es, physics.PhotoelectricBasis(Es),
                                       physics.ComptonBasis(Es), None, 0.1, 61)
    assert LUT.shape == (3, 61, 61) and T == 0.1
    assert np.isfinite(LUT).all()


def test_bases(physics):
    E = np.array([20.0, 60.0, 150.0])
    np.testing.assert_allclose(physics.PhotoelectricBasis(E), E ** -3.0, rtol=1e-6)
    # Klein-Nishina: Thomson (8 pi/3 r_e^2) at low energy, per mole of electrons
    thomson = 8 * np.pi / 3 * R_E ** 2 * N_A
    assert physics.ComptonBasis(1.0) == pytest.approx(thomson, rel=5e-3)
    assert physics.ComptonBasis(60.0) == pytest.approx(
        physics.KleinNishinaScatterDistribution_normalizationFactor(60.0) * N_A, rel=1e-6)
    assert np.all(np.diff(physics.ComptonBasis(E)) < 0)


# ------------------------------------------------------------------ scatter
def test_klein_nishina_distribution(physics):
    assert physics.KleinNishinaScatterDistribution(60.0, 0.0) == pytest.approx(R_E ** 2,
                                                                              rel=1e-6)
    th = np.linspace(0.0, 180.0, 18001)
    kn = physics.KleinNishinaScatterDistribution(60.0, th)
    assert kn.shape == th.shape and kn.dtype == np.float32
    assert sphere_integral(kn, th) == pytest.approx(
        physics.KleinNishinaScatterDistribution_normalizationFactor(60.0), rel=1e-5)
    assert sphere_integral(physics.KleinNishinaScatterDistribution(60.0, th, True), th) == \
        pytest.approx(1.0, rel=1e-5)
    physics.use_mm()
    assert physics.KleinNishinaScatterDistribution(60.0, 0.0) == pytest.approx(
        R_E ** 2 * 100, rel=1e-6)
    assert sphere_integral(physics.KleinNishinaScatterDistribution(60.0, th, True), th) == \
        pytest.approx(1.0, rel=1e-5)


@pytest.mark.parametrize("Z", [8, 82, "H2O", "bone"])
@pytest.mark.parametrize("E", [20.0, 60.0, 150.0])
def test_scatter_distributions_normalise(physics, Z, E):
    th = np.linspace(0.0, 180.0, 18001)
    for name in ("incoherentScatterDistribution", "coherentScatterDistribution"):
        f = getattr(physics, name)
        assert sphere_integral(f(Z, E, th, doNormalize=True), th) == pytest.approx(1.0, rel=1e-4)
        norm = getattr(physics, name + "_normalizationFactor")(Z, E)
        assert sphere_integral(f(Z, E, th), th) == pytest.approx(norm, rel=1e-4)


def test_scatter_distributions_forward_limits(physics):
    # incoherent vanishes forward (S(0, Z) = 0); coherent is Z^2 r_e^2 forward
    assert physics.incoherentScatterDistribution(8, 60.0, 0.0) == 0.0
    assert physics.incoherentScatterDistribution("H2O", 60.0, 0.0) == 0.0
    assert physics.incoherentScatterDistribution(8, 60.0, 90.0) > 0
    for Z in (1, 8, 82):
        assert physics.coherentScatterDistribution(Z, 60.0, 0.0) == pytest.approx(
            Z * Z * R_E ** 2, rel=1e-5)
    # far from forward, incoherent is Klein-Nishina x Z (S -> Z)
    assert physics.incoherentScatterDistribution(8, 1000.0, 180.0) == pytest.approx(
        8 * physics.KleinNishinaScatterDistribution(1000.0, 180.0), rel=1e-3)
    # compounds: the mean per atom (H2O: (2 H + O) / 3)
    for name in ("incoherentScatterDistribution", "coherentScatterDistribution"):
        f = getattr(physics, name)
        assert f("H2O", 60.0, 30.0) == pytest.approx(
            (2 * f(1, 60.0, 30.0) + f(8, 60.0, 30.0)) / 3, rel=1e-5)
    physics.use_mm()
    assert physics.coherentScatterDistribution(8, 60.0, 0.0) == pytest.approx(
        64 * R_E ** 2 * 100, rel=1e-5)


def test_scatter_totals_match_the_cross_sections(physics):
    for Z in (8, 26, 82):
        A = physics.atomicMass(Z)
        for E in (30.0, 100.0):
            assert physics.incoherentScatterDistribution_normalizationFactor(Z, E) == \
                pytest.approx(physics.sigmaCS(Z, E) * A / N_A, rel=2e-2)
            assert physics.coherentScatterDistribution_normalizationFactor(Z, E) == \
                pytest.approx(physics.sigmaRS(Z, E) * A / N_A, rel=2e-2)


def test_scatter_aliases(physics):
    th = np.array([0.0, 45.0, 120.0])
    np.testing.assert_array_equal(physics.ComptonScatterDistribution("H2O", 60.0, th, True),
                                  physics.incoherentScatterDistribution("H2O", 60.0, th, True))
    np.testing.assert_array_equal(physics.RayleighScatterDistribution("H2O", 60.0, th),
                                  physics.coherentScatterDistribution("H2O", 60.0, th))
    assert physics.ComptonScatterDistribution_normalizationFactor(8, 60.0) == \
        physics.incoherentScatterDistribution_normalizationFactor(8, 60.0)
    assert physics.RayleighScatterDistribution_normalizationFactor(8, 60.0) == \
        physics.coherentScatterDistribution_normalizationFactor(8, 60.0)
