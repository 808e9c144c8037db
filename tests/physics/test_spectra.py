"""Tests of leap.physics.spectra and leap.physics.detectors: tube-spectrum physics
(K lines, beam quality against published figures), filters, detector responses,
normalisation, resampling and input checks."""
import numpy as np
import pytest

pytest.importorskip("xraylib")

from leap.physics import _spectra_tbc, _spectra_xs, detectors  # noqa: E402
from leap.physics import spectra as sp  # noqa: E402

# W K lines (keV) as tabulated (xraylib / Bearden): Kα2, Kα1, Kβ1; K edge 69.5 keV.
W_KA2, W_KA1, W_KB1, W_K_EDGE = 57.98, 59.32, 67.24, 69.5

# PTB reference tube (Ankerhold 2000): W anode 20°, 1 mm Be window, 2.5 mm Al,
# 950 mm air, and the 0.25 mm polyimide (Kapton) film that Poludniowski et al. include.
PTB_TUBE = [("Be", 1.0), ("Al", 2.5), ("air", 950.0), ("kapton", 0.25)]


def rel(a, b):
    return abs(a / b - 1.0)


# ------------------------------------------------------------------ characteristic lines
def test_tungsten_k_lines_absent_below_k_edge():
    e, n = sp.characteristic_lines(65.0, 12.0, "W")
    assert e.size == 0 and n.size == 0
    _, with_lines = sp.tube_spectrum(65.0, 12.0, "W")
    _, without = sp.tube_spectrum(65.0, 12.0, "W", characteristic=False)
    np.testing.assert_array_equal(with_lines, without)
    # just below / just above the edge
    assert sp.characteristic_lines(69.0, 12.0, "W")[0].size == 0
    assert sp.characteristic_lines(70.0, 12.0, "W")[0].size > 0


def test_tungsten_k_lines_at_tabulated_energies_above_k_edge():
    assert _spectra_xs.k_edge(74) == pytest.approx(W_K_EDGE, abs=0.05)
    e, n = sp.characteristic_lines(80.0, 12.0, "W")
    for line in (W_KA2, W_KA1, W_KB1):
        assert np.min(np.abs(e - line)) < 0.01
    # Kα1 is the strongest line, Kα1/Kα2 ≈ 1.7 (transition rates)
    assert e[np.argmax(n)] == pytest.approx(W_KA1, abs=0.01)
    assert 1.5 < n[np.argmin(np.abs(e - W_KA1))] / n[np.argmin(np.abs(e - W_KA2))] < 2.0
    energies, with_lines = sp.tube_spectrum(80.0, 12.0, "W")
    _, without = sp.tube_spectrum(80.0, 12.0, "W", characteristic=False)
    extra = with_lines - without
    # the lines land in the 1-keV bins centred on 58, 59, 67 (and 69) keV only
    assert set(energies[extra > 0]) <= {58.0, 59.0, 67.0, 69.0}
    assert {58.0, 59.0, 67.0} <= set(energies[extra > 0])
    i59 = np.searchsorted(energies, 59.0)
    assert with_lines[i59] > 1.3 * without[i59]       # a clear peak over the continuum
    # characteristic share grows with kV above the edge
    share = [sp.characteristic_lines(kv, 12.0, "W")[1].sum()
             / (sp.tube_spectrum(kv, 12.0, "W", characteristic=False)[1].sum())
             for kv in (80.0, 120.0)]
    assert 0 < share[0] < share[1] < 0.2


def test_other_anodes_lines():
    e, _ = sp.characteristic_lines(40.0, 20.0, "Mo")
    assert np.min(np.abs(e - 17.48)) < 0.01 and np.min(np.abs(e - 19.61)) < 0.02
    e, _ = sp.characteristic_lines(30.0, 20.0, "Cu")
    assert np.min(np.abs(e - 8.048)) < 0.01
    assert sp.characteristic_lines(70.0, 20.0, "Au")[0].size == 0      # Au K edge 80.7
    assert np.min(np.abs(sp.characteristic_lines(100.0, 20.0, 79)[0] - 68.80)) < 0.02
    # two independent published models agree on the Mo K-line yield at 30 kV
    tbc = sp.characteristic_lines(30.0, 12.0, "Mo", model="tbc")[1].sum()
    ebel = sp.characteristic_lines(30.0, 12.0, "Mo", model="ebel")[1].sum()
    assert rel(tbc, ebel) < 0.1


# ------------------------------------------------------- beam quality vs published data
@pytest.mark.parametrize("name,kv,added_al,hvl1_ref,hvl2_ref", [
    ("RQA6", 80.0, 26.0, 7.96, 8.50),
    ("RQA9", 120.0, 40.0, 11.37, 11.97),
])
def test_aluminium_hvl_of_filtered_80_and_120_kv_against_ptb(name, kv, added_al,
                                                             hvl1_ref, hvl2_ref):
    """IEC 61267 RQA qualities on the PTB tube: first and second HVL (mm Al, air kerma)
    from U. Ankerhold, "Catalogue of X-ray spectra and their characteristic data",
    PTB-Dos-34 (2000), as tabulated with the filtration (W 20°, 1 mm Be, 2.5 mm Al +
    added Al, 950 mm air, 0.25 mm Kapton) in the companion code of Poludniowski, Omar &
    Andreo, "Calculating X-ray Tube Spectra" (CRC 2022), ch. 8, beams_ptb_iec.py
    (github.com/y-hiroki-radiotech/spekpy @83842e85)."""
    e, s = sp.tube_spectrum(kv, 20.0, "W", filtration=PTB_TUBE + [("Al", added_al)])
    assert rel(sp.half_value_layer(s, e, "Al"), hvl1_ref) < 0.05
    assert rel(sp.half_value_layer(s, e, "Al", order=2), hvl2_ref) < 0.05


@pytest.mark.parametrize("name,kv,extra,mean_ref,hvl1_cu_ref", [
    ("N-80", 80.0, [("Al", 1.5), ("Cu", 2.0)], 65.0, 0.578),
    ("N-120", 120.0, [("Al", 1.5), ("Cu", 5.0), ("Sn", 1.0)], 100.0, 1.67),
])
def test_mean_energy_of_filtered_80_and_120_kv_against_iso_4037(name, kv, extra, mean_ref,
                                                                hvl1_cu_ref):
    """ISO 4037-1 narrow-spectrum qualities (4 mm Al total + Cu/Sn): mean photon energy
    65 keV (N-80) and 100 keV (N-120) from ISO 4037-1:1996 Table 2; first HVL in mm Cu
    measured by PTB (Ankerhold 2000, PTB-Dos-34) for its tube (conditions as above,
    beams_ptb_iso.py of the same companion code)."""
    e, s = sp.tube_spectrum(kv, 20.0, "W", filtration=PTB_TUBE + extra)
    assert rel(sp.mean_energy(s, e), mean_ref) < 0.05
    assert rel(sp.half_value_layer(s, e, "Cu"), hvl1_cu_ref) < 0.05


def test_100_kv_against_spekpy_demo():
    """SpekPy demo of Poludniowski et al. (book companion 1_Introduction/demo.py, output
    in demo.html of github.com/y-hiroki-radiotech/spekpy @83842e85): W, 100 kV, 10°,
    6 mm Al, 1 m, no air: HVL1 5.50 mm Al, HVL2 7.19 mm Al, air kerma 57.48 µGy/mAs."""
    e, s = sp.tube_spectrum(100.0, 10.0, "W", filtration=[("Al", 6.0)])
    assert rel(sp.half_value_layer(s, e), 5.50) < 0.05
    assert rel(sp.half_value_layer(s, e, order=2), 7.19) < 0.05
    assert rel(sp.air_kerma(s, e, 1000.0), 57.48) < 0.25      # absolute output


def test_thomson_whiddington_constant_reproduces_birch_marshall_table():
    table = {50: 5.4e5, 75: 6.25e5, 100: 7.0e5, 150: 8.4e5, 200: 1.0e6}   # keV² cm²/g
    for kv, c in table.items():
        assert rel(_spectra_tbc.thomson_whiddington_constant(kv), c) < 0.01


# --------------------------------------------------------------- spectrum properties
def test_spectrum_shape_units_and_grid():
    e, s = sp.tube_spectrum(80.0, 12.0, 74)
    np.testing.assert_array_equal(e, np.arange(1.0, 81.0))
    assert np.all(s >= 0) and s[-1] < s[40] and s.dtype == np.float64
    # the 80-keV bin is half above the end point: no photons beyond kV
    e2, s2 = sp.tube_spectrum(80.0, 12.0, "W", energies=np.arange(1.0, 101.0))
    assert np.all(s2[e2 >= 81] == 0)
    # bin averages: a 0.5-keV grid rebinned to 1 keV matches the 1-keV grid
    fine_e, fine = sp.tube_spectrum(80.0, 12.0, "W", energies=np.arange(0.75, 80.3, 0.5),
                                    characteristic=False)
    coarse = sp.resample(fine, fine_e, e)
    ref = sp.tube_spectrum(80.0, 12.0, "W", characteristic=False)[1]
    sel = (e >= 15) & (e <= 75)
    np.testing.assert_allclose(coarse[sel], ref[sel], rtol=2e-3)
    # a smaller take-off angle hardens the beam (longer path out of the anode)
    hard = sp.tube_spectrum(80.0, 6.0, "W", filtration=[("Al", 2.5)])
    soft = sp.tube_spectrum(80.0, 20.0, "W", filtration=[("Al", 2.5)])
    assert sp.mean_energy(hard[1], hard[0]) > sp.mean_energy(soft[1], soft[0])
    # more output at higher kV
    assert sp.tube_spectrum(120.0, 12.0, "W")[1].sum() > sp.tube_spectrum(80.0, 12.0, "W")[1].sum()


def test_ebel_and_tbc_tungsten_shapes_agree():
    e, tbc = sp.tube_spectrum(50.0, 12.0, "W", filtration=[("Al", 2.5)], model="tbc")
    _, ebel = sp.tube_spectrum(50.0, 12.0, "W", filtration=[("Al", 2.5)], model="ebel")
    assert rel(sp.half_value_layer(tbc, e), sp.half_value_layer(ebel, e)) < 0.1
    assert rel(sp.mean_energy(tbc, e), sp.mean_energy(ebel, e)) < 0.05


# -------------------------------------------------------------------------- filters
def test_filters_remove_low_energies():
    e = np.arange(10.0, 121.0)
    t = sp.filter_response("Al", 2.5, e)
    assert np.all(np.diff(t) > 0) and t[0] < 1e-3 and t[-1] > 0.9
    np.testing.assert_array_equal(sp.filter_response("Al", 0.0, e), np.ones_like(e))
    # Beer–Lambert: thicknesses multiply, density scales
    np.testing.assert_allclose(sp.filter_response("Cu", 0.3, e),
                               sp.filter_response("Cu", 0.1, e) ** 3, rtol=1e-12)
    np.testing.assert_allclose(sp.filter_response("Al", 1.0, e, density=2 * 2.699),
                               sp.filter_response("Al", 2.0, e), rtol=1e-3)
    # Cu at 50 keV: μ/ρ = 2.61 cm²/g (NIST XCOM), ρ = 8.96 → T(1 mm) = exp(−2.34)
    assert sp.filter_response("Cu", 1.0, 50.0)[0] == pytest.approx(np.exp(-2.61 * 0.896), rel=0.02)
    # beam hardening: mean energy and HVL rise with filtration
    e, s = sp.tube_spectrum(100.0, 12.0, "W")
    means = [sp.mean_energy(sp.apply_filters(s, e, [("Al", t)]), e) for t in (0.5, 2.5, 10.0)]
    hvls = [sp.half_value_layer(sp.apply_filters(s, e, [("Al", t)]), e) for t in (0.5, 2.5, 10.0)]
    assert means[0] < means[1] < means[2] and hvls[0] < hvls[1] < hvls[2]
    # tube_spectrum filters inside each bin; apply_filters at the bin centres: the two
    # agree except in the bins holding the filters' K edges (I 33.2, Cs 36.0 keV)
    inside = sp.tube_spectrum(100.0, 12.0, "W", filtration=[("Al", 2.5), ("CsI", 0.1, 4.51)])[1]
    centre = sp.apply_filters(s, e, [("Al", 2.5), ("CsI", 0.1)])
    sel = (e >= 25) & (e < 100) & (e != 33) & (e != 36)
    np.testing.assert_allclose(inside[sel], centre[sel], rtol=1e-2)
    assert inside[e == 33][0] < centre[e == 33][0] and inside[e == 36][0] > centre[e == 36][0]


# -------------------------------------------------------------- metrics on simple beams
def test_monoenergetic_beam_metrics():
    e = np.arange(40.0, 81.0)
    s = np.where(e == 60.0, 5.0, 0.0)
    mu = _spectra_xs.linear_attenuation("Al", 60.0)[0]
    assert sp.mean_energy(s, e) == 60.0
    for w in ("air_kerma", "fluence", "energy_fluence"):
        assert sp.half_value_layer(s, e, weighting=w) == pytest.approx(np.log(2) / mu, rel=1e-9)
    assert sp.half_value_layer(s, e, order=2) == pytest.approx(np.log(2) / mu, rel=1e-9)
    assert sp.effective_energy(s, e) == pytest.approx(60.0, abs=0.05)
    assert sp.effective_energy(s, e, thickness_mm=3.0) == pytest.approx(60.0, abs=0.05)
    assert sp.effective_energy(s, e, thickness_mm=0.0) == pytest.approx(60.0, abs=0.05)


def test_effective_energy_of_polychromatic_beam():
    e, s = sp.tube_spectrum(80.0, 12.0, "W", filtration=[("Al", 2.5)])
    e_hvl = sp.effective_energy(s, e)
    mean = sp.mean_energy(s, e)
    assert 25.0 < e_hvl < mean < 80.0
    # the effective energy rises with the thickness traversed (beam hardening)
    thin, thick = (sp.effective_energy(s, e, thickness_mm=t) for t in (1.0, 20.0))
    assert thin < thick


def test_normalize_and_mean_energy():
    e = np.array([10.0, 20.0, 40.0, 80.0])          # bins 5–15–30–60–100 keV
    s = np.array([1.0, 2.0, 3.0, 0.5])
    n = sp.normalize(s, e)
    np.testing.assert_allclose(np.sum(n * sp.bin_widths(e)), 1.0)
    np.testing.assert_allclose(sp.normalize(7.0 * s, e), n)
    w = sp.bin_widths(e)
    np.testing.assert_allclose(w, [10.0, 15.0, 30.0, 40.0])
    assert sp.mean_energy(s, e) == pytest.approx(np.sum(s * w * e) / np.sum(s * w))
    assert sp.mean_energy(3.0 * s, e) == pytest.approx(sp.mean_energy(s, e))


def test_resample_conserves_counts():
    e, s = sp.tube_spectrum(120.0, 12.0, "W", filtration=[("Al", 2.5)])
    total = np.sum(s * sp.bin_widths(e))
    for new in (np.arange(0.25, 130.0, 0.5), np.arange(2.0, 130.0, 4.0),
                np.geomspace(0.5, 140.0, 57)):
        r = sp.resample(s, e, new)
        assert np.sum(r * sp.bin_widths(new)) == pytest.approx(total, rel=1e-12)
        assert sp.mean_energy(r, new) == pytest.approx(sp.mean_energy(s, e), rel=0.02)
    # identity on the same grid; partial overlap keeps only the covered counts
    np.testing.assert_allclose(sp.resample(s, e, e), s, rtol=1e-9, atol=1e-12 * s.max())
    half = sp.resample(s, e, np.arange(1.0, 61.0))
    assert np.sum(half) == pytest.approx(np.sum(s[:60]), rel=1e-12)


# ------------------------------------------------------------------------ detectors
def test_detector_responses():
    e = np.arange(10.0, 151.0)
    eta = detectors.absorbed_fraction("CsI", 0.6, e)
    assert np.all((eta > 0) & (eta <= 1))
    assert np.all(detectors.absorbed_fraction("CsI", 1.2, e) >= eta)
    # iodine (33.2 keV) and caesium (36.0 keV) K edges raise the absorption
    below, above = detectors.absorbed_fraction("CsI", 0.6, [32.9, 36.2])
    assert above > below
    np.testing.assert_allclose(detectors.energy_integrating_response("CsI", 0.6, e), e * eta)
    assert np.all(detectors.energy_integrating_response("GOS", 0.2, e) > 0)
    # photon counting: ideal bins partition the counted photons
    pc = detectors.photon_counting_response("CdTe", 2.0, e)
    bins = detectors.photon_counting_response("CdTe", 2.0, e, thresholds=[20.0, 50.0, 80.0])
    assert bins.shape == (3, e.size)
    np.testing.assert_allclose(bins.sum(axis=0), np.where(e >= 20.0, pc, 0.0))
    assert np.all(bins[1, (e >= 50) & (e < 80)] == pc[(e >= 50) & (e < 80)])
    blurred = detectors.photon_counting_response("CdTe", 2.0, e, thresholds=[20.0, 50.0],
                                                 energy_resolution_fwhm=5.0)
    assert np.all(blurred.sum(axis=0) <= pc + 1e-15)
    np.testing.assert_allclose(blurred.sum(axis=0)[e >= 40], pc[e >= 40], rtol=1e-9)
    es, s = sp.tube_spectrum(120.0, 12.0, "W", filtration=[("Al", 2.5)])
    counts = detectors.detected_signal(
        s, es, detectors.photon_counting_response("CdTe", 2.0, es, thresholds=[20.0, 60.0]))
    assert counts.shape == (2,) and np.all(counts > 0)
    energy = detectors.detected_signal(s, es, detectors.energy_integrating_response("CsI", 0.6, es))
    assert energy > 0


# ---------------------------------------------------------------------------- errors
@pytest.mark.parametrize("call,name", [
    (lambda: sp.tube_spectrum(-80.0), "kv"),
    (lambda: sp.tube_spectrum(0.0), "kv"),
    (lambda: sp.tube_spectrum(500.0), "kv"),
    (lambda: sp.tube_spectrum(120.0, anode="Mo"), "kv"),
    (lambda: sp.tube_spectrum(80.0, anode="Rh"), "anode"),
    (lambda: sp.tube_spectrum(80.0, anode=13), "anode"),
    (lambda: sp.tube_spectrum(80.0, take_off_angle=0.0), "take_off_angle"),
    (lambda: sp.tube_spectrum(80.0, take_off_angle=95.0), "take_off_angle"),
    (lambda: sp.tube_spectrum(80.0, model="spekcalc"), "model"),
    (lambda: sp.tube_spectrum(80.0, anode="Cu", model="tbc"), "model"),
    (lambda: sp.tube_spectrum(80.0, energies=[3.0, 2.0, 4.0]), "energies"),
    (lambda: sp.tube_spectrum(80.0, energies=[-1.0, 2.0]), "energies"),
    (lambda: sp.tube_spectrum(80.0, filtration=[("Al", -1.0)]), "thickness_mm"),
    (lambda: sp.tube_spectrum(80.0, filtration="Al"), "filters"),
    (lambda: sp.filter_response("Al", -0.1, [20.0]), "thickness_mm"),
    (lambda: sp.filter_response("Unobtainium", 1.0, [20.0]), "material"),
    (lambda: sp.filter_response("Al", 1.0, [20.0], density=-2.7), "density"),
    (lambda: sp.filter_response("Al", 1.0, [30000.0]), "energy"),
    (lambda: sp.mean_energy([1.0, 2.0], [10.0, 20.0, 30.0]), "spectrum"),
    (lambda: sp.normalize([0.0, 0.0], [10.0, 20.0]), "spectrum"),
    (lambda: sp.resample([1.0, 2.0], [10.0, 20.0], [5.0, 4.0]), "new_energies"),
    (lambda: sp.resample([1.0, 2.0], [20.0, 10.0], [5.0, 6.0]), "energies"),
    (lambda: sp.half_value_layer([1.0, 2.0], [10.0, 20.0], weighting="dose"), "weighting"),
    (lambda: sp.half_value_layer([1.0, 2.0], [10.0, 20.0], order=3), "order"),
    (lambda: detectors.absorbed_fraction("CsI", -0.6, [20.0]), "thickness_mm"),
    (lambda: detectors.photon_counting_response("CdTe", 2.0, [20.0],
                                                thresholds=[50.0, 20.0]), "thresholds"),
    (lambda: detectors.detected_signal([1.0, 2.0], [10.0, 20.0], [1.0]), "response"),
])
def test_bad_input_raises_value_error_naming_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()
