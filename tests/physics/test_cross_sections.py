"""Tests of leap.physics.cross_sections against NIST reference data."""

import math

import numpy as np
import pytest

pytest.importorskip("xraylib")

from leap.physics import _cs_highenergy as he  # noqa: E402
from leap.physics import cross_sections as cs  # noqa: E402
from leap.physics import materials  # noqa: E402

# mu/rho with coherent scattering, cm^2/g, at 20, 60, 100, 500, 5000 keV, from
# J. H. Hubbell and S. M. Seltzer, "Tables of X-Ray Mass Attenuation Coefficients and
# Mass Energy-Absorption Coefficients", NISTIR 5632 / NIST SRD 126,
# https://physics.nist.gov/PhysRefData/XrayMassCoef/ : ComTab/water.html ("Water,
# Liquid"), ComTab/bone.html ("Bone, Cortical (ICRU-44)": H 0.034, C 0.155, N 0.042,
# O 0.435, Na 0.001, Mg 0.002, P 0.103, S 0.003, Ca 0.225 by weight, 1.92 g/cm^3),
# ElemTab/z13.html (Al), ElemTab/z26.html (Fe), ElemTab/z82.html (Pb).
NIST_ENERGIES_KEV = (20.0, 60.0, 100.0, 500.0, 5000.0)
NIST_MU_RHO = {
    "water": (0.8096, 0.2059, 0.1707, 0.09687, 0.03031),
    "cortical_bone": (4.001, 0.3148, 0.1855, 0.09022, 0.02946),
    "Al": (3.441, 0.2778, 0.1704, 0.08445, 0.02836),
    "Fe": (25.68, 1.205, 0.3717, 0.08414, 0.03146),
    "Pb": (86.36, 5.021, 5.549, 0.1614, 0.04272),
}
# Same tables, 1.25-20 MeV (beyond xraylib's 800 keV): the high-energy models.
NIST_HIGH = {
    "water": ((1250.0, 2000.0, 10000.0, 20000.0), (0.06323, 0.04942, 0.02219, 0.01813)),
    "Fe": ((1250.0, 2000.0, 10000.0, 20000.0), (0.05350, 0.04265, 0.02994, 0.03224)),
    "Pb": ((1250.0, 2000.0, 10000.0, 20000.0), (0.05876, 0.04606, 0.04972, 0.06206)),
}


@pytest.mark.parametrize("name", sorted(NIST_MU_RHO))
def test_mass_attenuation_matches_nist_within_1_percent(name):
    got = cs.mass_attenuation(name, NIST_ENERGIES_KEV, units="cm")
    ref = np.array(NIST_MU_RHO[name])
    np.testing.assert_allclose(got, ref, rtol=0.01)
    # default units are mm^2/g
    np.testing.assert_allclose(cs.mass_attenuation(name, NIST_ENERGIES_KEV), 100 * got)


def test_below_800_kev_tables_agree_to_0p1_percent():
    got = cs.mass_attenuation("Pb", NIST_ENERGIES_KEV[:4], units="cm")
    np.testing.assert_allclose(got, NIST_MU_RHO["Pb"][:4], rtol=1e-3)


@pytest.mark.parametrize("name,rtol", [("water", 0.005), ("Fe", 0.01), ("Pb", 0.02)])
def test_high_energy_models_match_nist(name, rtol):
    energies, ref = NIST_HIGH[name]
    np.testing.assert_allclose(cs.mass_attenuation(name, energies, units="cm"), ref,
                               rtol=rtol)


def test_bone_library_material_is_the_nist_icru44_composition():
    bone = materials.material("cortical_bone")
    nist = {"H": 0.034, "C": 0.155, "N": 0.042, "O": 0.435, "Na": 0.001, "Mg": 0.002,
            "P": 0.103, "S": 0.003, "Ca": 0.225}
    assert bone.mass_fractions == pytest.approx(nist)
    assert bone.density == 1.92


def test_lead_k_edge():
    assert cs.k_edge("Pb") == pytest.approx(88.0, abs=0.01)
    assert cs.k_edge(82) == cs.edge_energy("Pb", "K")
    below, above = cs.mass_attenuation("Pb", [87.95, 88.05], units="cm")
    pe_below, pe_above = cs.mass_attenuation("Pb", [87.95, 88.05], "photoelectric")
    # NIST z82: 1.910 cm^2/g just below, 7.683 cm^2/g just above 88.0045 keV.
    assert below == pytest.approx(1.910, rel=0.01)
    assert above == pytest.approx(7.683, rel=0.01)
    assert pe_above / pe_below > 4.0
    # smooth elsewhere: no comparable jump between 80 and 87.9 keV
    e = np.linspace(80.0, 87.9, 50)
    mu = cs.mass_attenuation("Pb", e)
    assert np.all(mu[1:] / mu[:-1] < 1.0)


def test_effective_z_of_water():
    assert 7.4 <= cs.effective_z("H2O", "sigma_e") <= 7.5
    assert 7.4 <= cs.effective_z("water") <= 7.5          # power law, m = 2.94
    assert cs.effective_z("Al", "sigma_e") == pytest.approx(13.0, abs=0.05)
    assert cs.effective_z(26) == pytest.approx(26.0)
    zb = cs.effective_z("cortical_bone", "sigma_e")
    assert 11.0 < zb < 15.0


def test_electron_density_of_water():
    assert cs.electron_density("water", units="cm") == pytest.approx(3.343e23, rel=5e-4)
    assert cs.electron_density("H2O", 1.0) == pytest.approx(3.343e20, rel=5e-4)
    assert cs.electron_density("H2O", 1.0, units="mol") == pytest.approx(0.5551, rel=1e-3)
    assert cs.electron_density("water", relative_to_water=True) == pytest.approx(1.0)
    # ICRU-44 bone: Z/A = 0.51478 (NIST Table 2), 1.92 g/cm^3
    assert cs.electron_density("bone", relative_to_water=True) == pytest.approx(
        1.92 * 0.51478 / 0.55508, rel=1e-3)
    assert cs.electrons_per_gram("H2O") == pytest.approx(3.3428e23, rel=2e-4)


def test_formula_parsing():
    assert cs.parse_formula("H2O") == {1: 2.0, 8: 1.0}
    assert cs.parse_formula("Lu1.8Y0.2SiO5") == pytest.approx({8: 5, 14: 1, 39: 0.2, 71: 1.8})
    assert cs.parse_formula("Ca5(PO4)3OH") == {1: 1, 8: 13, 15: 3, 20: 5}
    assert cs.parse_formula("K4[Fe(CN)6]") == {6: 6, 7: 6, 19: 4, 26: 1}
    assert cs.parse_formula("((CH3)2)3") == {1: 18, 6: 6}
    import xraylib
    for formula in ("Ca5(PO4)3OH", "Lu1.8Y0.2SiO5", "Gd2O2S", "CsI"):
        ref = xraylib.CompoundParser(formula)
        mine = cs.parse_formula(formula)
        assert list(mine) == list(ref["Elements"])
        assert list(mine.values()) == pytest.approx(list(ref["nAtoms"]))
        fr = cs.mass_fractions(formula)
        assert list(fr.values()) == pytest.approx(list(ref["massFractions"]), rel=2e-3)
    assert sum(cs.mass_fractions("Ca5(PO4)3OH").values()) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", ["H2Q", "(H2O", "H2O)", "2H", "H0", "h2o", "", "()",
                                 "Ca5(PO4", "H2O]"])
def test_bad_formulas_raise(bad):
    with pytest.raises(ValueError, match="formula"):
        cs.parse_formula(bad)


def test_mixtures():
    e = np.array([30.0, 60.0, 3000.0])
    water, salt = cs.mass_attenuation("H2O", e), cs.mass_attenuation("NaCl", e)
    expected = 0.9 * water + 0.1 * salt
    for spec in ({"H2O": 0.9, "NaCl": 0.1}, [("H2O", 0.9), ("NaCl", 0.1)],
                 "0.9*H2O + 0.1*NaCl", "90*H2O + 10*NaCl"):
        np.testing.assert_allclose(cs.mass_attenuation(spec, e), expected, rtol=1e-12)
    # elements by symbol or Z, library names inside mixtures
    np.testing.assert_allclose(cs.mass_attenuation({"Pb": 0.5, 29: 0.5}, e),
                               0.5 * cs.mass_attenuation(82, e)
                               + 0.5 * cs.mass_attenuation("Cu", e))
    np.testing.assert_allclose(cs.mass_attenuation({"water": 0.5, "bone": 0.5}, e),
                               0.5 * cs.mass_attenuation("water", e)
                               + 0.5 * cs.mass_attenuation("cortical_bone", e))
    with pytest.raises(ValueError, match="sum to 1"):
        cs.mass_attenuation({"H2O": 0.9, "NaCl": 0.2}, 60.0)
    with pytest.raises(ValueError, match="mass fraction"):
        cs.mass_attenuation({"H2O": 1.1, "NaCl": -0.1}, 60.0)
    with pytest.raises(ValueError, match="mass fraction"):
        cs.mass_attenuation({"H2O": float("nan"), "NaCl": 1.0}, 60.0)


def test_shapes_and_scalars():
    v = cs.mass_attenuation("water", 60.0)
    assert np.ndim(v) == 0 and isinstance(v, float)
    grid = np.full((2, 3), 60.0)
    assert cs.mass_attenuation("water", grid).shape == (2, 3)
    np.testing.assert_allclose(cs.mass_attenuation("water", grid), v)
    comps = cs.attenuation_components("water", [60.0, 6000.0])
    total = sum(comps[k] for k in ("photoelectric", "incoherent", "coherent",
                                   "pair_nuclear", "pair_electron"))
    np.testing.assert_allclose(comps["total"], total)
    np.testing.assert_allclose(comps["total_without_coherent"],
                               total - comps["coherent"])
    np.testing.assert_allclose(cs.mass_attenuation("water", [60.0, 6000.0], coherent=False),
                               comps["total_without_coherent"])
    for kind, alias in (("photoelectric", "PE"), ("incoherent", "compton"),
                        ("coherent", "RS"), ("pair_nuclear", "PP"),
                        ("pair_electron", "TP")):
        np.testing.assert_allclose(cs.mass_attenuation("water", 6000.0, alias),
                                   comps[kind][1])


def test_linear_attenuation_units():
    mu_mm = cs.linear_attenuation("water", 60.0, 1.0)
    assert mu_mm == pytest.approx(0.02059, rel=0.01)               # 1/mm
    assert cs.linear_attenuation("water", 60.0, 1.0, units="cm") == pytest.approx(10 * mu_mm)
    # default densities: elements (xraylib) and library materials
    assert cs.linear_attenuation("Pb", 100.0) == pytest.approx(
        11.35 * cs.mass_attenuation("Pb", 100.0, units="cm") / 10, rel=1e-3)
    assert cs.default_density("bone") == 1.92
    with pytest.raises(ValueError, match="density"):
        cs.linear_attenuation("NaCl", 60.0)                     # formula: no density


def test_per_atom_and_per_electron_cross_sections():
    mu = cs.mass_attenuation("Pb", 100.0, units="cm")
    sa = cs.atomic_cross_section("Pb", 100.0)                   # barn/atom
    assert sa == pytest.approx(mu * 207.2 / 6.02214076e23 * 1e24, rel=1e-6)
    assert cs.atomic_cross_section("Pb", 100.0, units="mm") == pytest.approx(sa * 1e-22)
    assert cs.electron_cross_section("Pb", 100.0) == pytest.approx(sa / 82)
    # water: mean over the 3 atoms of H2O, and over its 10 electrons
    sw = cs.atomic_cross_section("H2O", 100.0)
    assert cs.electron_cross_section("H2O", 100.0) == pytest.approx(3 * sw / 10)
    # free-electron limit: hydrogen's incoherent cross section per electron is
    # Klein-Nishina (Thomson 0.6652 b at low energy, 0.2865 b at 511 keV)
    assert cs.electron_cross_section("H", 10000.0, "incoherent") == pytest.approx(
        he.klein_nishina(10000.0) * 1e24, rel=2e-3)
    assert he.klein_nishina(1e-3) * 1e24 == pytest.approx(0.6652, rel=1e-3)
    assert he.klein_nishina(1.0) * 1e24 == pytest.approx(0.6652 * (1 - 2 / 511), rel=1e-4)
    assert he.klein_nishina(510.99895) * 1e24 == pytest.approx(0.2865, rel=1e-3)


def test_pair_production():
    e_below = np.array([1.0, 100.0, 800.0, 1000.0, 1021.9])
    assert np.all(cs.mass_attenuation("Pb", e_below, "pair") == 0.0)
    assert np.all(cs.mass_attenuation("Pb", [1500.0, 2000.0], "pair_electron") == 0.0)
    assert cs.mass_attenuation("Pb", 1100.0, "pair_nuclear") > 0.0
    assert cs.mass_attenuation("Pb", 2100.0, "pair_electron") > 0.0
    # NIST XCOM (Berger et al., NIST SRD 8; Hubbell, Gimm & Overbo 1980), barn/atom:
    # Pb at 5 MeV: nuclear field 7.389, electron field 0.02673;
    # O at 10 MeV: nuclear field 0.1363, electron field 0.009357.
    assert cs.atomic_cross_section("Pb", 5000.0, "pair") == pytest.approx(7.416, rel=0.03)
    assert cs.atomic_cross_section("O", 10000.0, "pair_nuclear") == pytest.approx(
        0.1363, rel=0.03)
    assert cs.atomic_cross_section("O", 10000.0, "pair_electron") == pytest.approx(
        0.009357, rel=0.05)


@pytest.mark.parametrize("z", [1, 6, 8, 13, 20, 26, 50, 53, 64, 74, 82, 92, 98])
def test_continuity_at_800_kev_and_model_seams(z):
    eps = 1e-6
    for seam in (800.0, 1022.0, 1500.0, 2044.0):
        lo, hi = seam * (1 - eps), seam * (1 + eps)
        a = cs.attenuation_components(z, [lo, hi])
        assert a["total"][1] / a["total"][0] == pytest.approx(1.0, abs=1e-4)
        for k in ("photoelectric", "incoherent", "coherent", "pair_nuclear",
                  "pair_electron"):
            assert abs(a[k][1] - a[k][0]) <= 1e-4 * a["total"][0], (seam, k)
    # no step > 1 % on a 0.5 % grid across 700-900 keV and 1-2.2 MeV
    for e in (np.geomspace(700.0, 900.0, 60), np.geomspace(1000.0, 2200.0, 160)):
        mu = cs.mass_attenuation(z, e)
        assert np.all(np.abs(mu[1:] / mu[:-1] - 1) < 0.01)


def test_incoherent_blends_into_klein_nishina():
    per_gram = 82 * 6.02214076e23 / 207.2
    for e, tol in ((2000.0, 0.005), (20000.0, 0.0005)):
        kn = per_gram * he.klein_nishina(e)
        assert cs.mass_attenuation("Pb", e, "incoherent", units="cm") == pytest.approx(
            kn, rel=tol)


@pytest.mark.parametrize("energy", [0.5, 20000.1, float("nan"), [10.0, np.nan],
                                    [0.99, 50.0], "abc"])
def test_bad_energies_raise(energy):
    with pytest.raises(ValueError, match="energy"):
        cs.mass_attenuation("water", energy)


def test_bad_arguments_raise_naming_them():
    with pytest.raises(ValueError, match="density"):
        cs.linear_attenuation("water", 60.0, -1.0)
    with pytest.raises(ValueError, match="density"):
        cs.linear_attenuation("water", 60.0, float("nan"))
    with pytest.raises(ValueError, match="density"):
        cs.electron_density("water", -0.5)
    with pytest.raises(ValueError, match="material"):
        cs.mass_attenuation("unobtainium", 60.0)
    with pytest.raises(ValueError, match="material"):
        cs.mass_attenuation(3.5, 60.0)
    with pytest.raises(ValueError, match="element"):
        cs.mass_attenuation(101, 60.0)
    with pytest.raises(ValueError, match="element"):
        cs.atomic_number("Xx")
    with pytest.raises(ValueError, match="kind"):
        cs.mass_attenuation("water", 60.0, "magic")
    with pytest.raises(ValueError, match="units"):
        cs.mass_attenuation("water", 60.0, units="m")
    with pytest.raises(ValueError, match="units"):
        cs.electron_density("water", units="inch")
    with pytest.raises(ValueError, match="method"):
        cs.effective_z("water", "guess")
    with pytest.raises(ValueError, match="shell"):
        cs.edge_energy("Pb", "Q")
    # Es and Fm: atomic data but no tabulated cross sections
    assert cs.atomic_mass(100) == 257.0
    with pytest.raises(ValueError, match="Z=100"):
        cs.mass_attenuation("Fm", 60.0)


def test_elements_by_number_and_symbol():
    assert cs.atomic_number("Pb") == 82 and cs.atomic_number("pb") == 82
    assert cs.element_symbol(74) == "W"
    assert cs.mass_attenuation(74, 60.0) == cs.mass_attenuation("W", 60.0)
    e = np.geomspace(1.0, 20000.0, 40)
    for z in (1, 50, 98):
        mu = cs.mass_attenuation(z, e)
        assert np.all(np.isfinite(mu)) and np.all(mu > 0)
    assert math.isclose(cs.atomic_mass("H"), 1.00794)
