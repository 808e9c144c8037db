"""Tests of leap.physics.materials."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("xraylib")

from leap.physics import cross_sections as cs  # noqa: E402
from leap.physics import materials as m  # noqa: E402


def test_water_object():
    w = m.material("water")
    assert isinstance(w, m.Material)
    assert w.name == "water" and w.density == 1.0 and w.formula == "H2O"
    assert w.mass_fractions == pytest.approx({"H": 0.111898, "O": 0.888102}, rel=1e-4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        w.density = 2.0
    hash(w)
    # mu(E) in 1/mm from the density in g/cm^3; NIST: 0.2059 cm^2/g at 60 keV
    assert w.mu(60.0) == pytest.approx(0.02059, rel=0.01)
    assert w.mu(60.0, units="cm") == pytest.approx(0.2059, rel=0.01)
    np.testing.assert_allclose(w.mu([60.0, 100.0]),
                               w.mass_attenuation([60.0, 100.0], units="cm") / 10)
    assert w.mu(60.0, density=2.0) == pytest.approx(2 * w.mu(60.0))
    assert w.mass_attenuation(60.0, "PE") < w.mass_attenuation(60.0, "compton")
    assert w.electron_density() == pytest.approx(3.343e20, rel=5e-4)
    assert w.electron_density(units="cm") == pytest.approx(3.343e23, rel=5e-4)
    assert 7.4 <= w.z_eff() <= 7.5
    assert 7.4 <= w.z_eff("sigma_e") <= 7.5
    assert w.electron_cross_section(60.0) > 0


@pytest.mark.parametrize("alias,name", [
    ("WATER", "water"), ("H2O", "water"), ("Cortical Bone", "cortical_bone"),
    ("bone", "cortical_bone"), ("bone_cortical", "cortical_bone"), ("PMMA", "pmma"),
    ("lucite", "pmma"), ("Pb", "lead"), ("aluminum", "aluminium"), ("Gd2O2S", "gos"),
    ("soft-tissue", "soft_tissue"), ("fat", "adipose"), ("PE", "polyethylene"),
    ("PVC", "pvc"),
])
def test_names_are_case_insensitive_with_aliases(alias, name):
    assert m.material(alias) is m.material(name)


def test_library_contents():
    names = m.list_materials()
    for required in ("water", "air", "soft_tissue", "adipose", "cortical_bone", "pmma",
                     "polyethylene", "aluminium", "titanium", "iron", "copper",
                     "tungsten", "lead", "gos", "csi", "lyso", "cdte",
                     "iodine_contrast"):
        assert required in names
    e = np.array([20.0, 60.0, 1000.0, 10000.0])
    for name in names:
        mat = m.material(name)
        assert mat.density > 0 and mat.source
        assert sum(mat.mass_fractions.values()) == pytest.approx(1.0, abs=1e-9)
        mu = mat.mu(e)
        assert np.all(np.isfinite(mu)) and np.all(mu > 0)


def test_library_against_nist():
    # NISTIR 5632 Table 4 (ComTab/air.html, tissue.html): mu/rho in cm^2/g
    assert m.material("air").mass_attenuation(100.0, units="cm") == pytest.approx(
        0.1541, rel=0.005)
    assert m.material("air").density == pytest.approx(1.205e-3, rel=1e-3)
    lyso = {cs.element_symbol(z): w for z, w in cs.mass_fractions("Lu1.8Y0.2SiO5").items()}
    assert m.material("lyso").mass_fractions == pytest.approx(lyso)
    assert m.material("lyso").formula == "Lu1.8Y0.2SiO5"
    # the GOS K edge (Gd, 50.24 keV) and the CsI K edges (I 33.17, Cs 35.98 keV)
    gos = m.material("gos")
    assert gos.mu(50.4) / gos.mu(50.1) > 3.0
    csi = m.material("csi")
    assert csi.mu(33.3) / csi.mu(33.1) > 2.0


def test_library_names_take_precedence_over_formulas():
    # "PVC" would parse as P-V-C; as in XrayPhysics, library names are looked up first
    assert cs.mass_fractions("PVC") == cs.mass_fractions("C2H3Cl")
    assert cs.mass_fractions("PVC") != cs.mass_fractions("P1V1C1")
    masses = {"P": 30.973762, "V": 50.9415, "C": 12.0107}
    total = sum(masses.values())
    assert m.Material.from_formula("pvc_formula", "PVC", 1.0).mass_fractions == \
        pytest.approx({k: v / total for k, v in masses.items()}, rel=1e-9)


def test_user_materials():
    glass = m.Material.from_formula("quartz", "SiO2", 2.65, source="test")
    assert glass.formula == "SiO2"
    assert glass.mass_fractions["O"] == pytest.approx(0.5326, rel=1e-3)
    mix = m.Material.from_mixture("brine", {"H2O": 0.965, "NaCl": 0.035}, 1.025)
    np.testing.assert_allclose(
        mix.mass_attenuation([30.0, 80.0]),
        cs.mass_attenuation({"H2O": 0.965, "NaCl": 0.035}, [30.0, 80.0]))
    direct = m.Material("alloy", 8.0, {"Fe": 0.7, "Cr": 0.2, "Ni": 0.1})
    assert [k for k, _ in direct.composition] == ["Cr", "Fe", "Ni"]
    assert direct.mass_fractions == pytest.approx({"Cr": 0.2, "Fe": 0.7, "Ni": 0.1})
    m.register_material(direct, aliases=("test_alloy_alias",))
    assert m.material("TEST_ALLOY_ALIAS") is direct
    with pytest.raises(ValueError, match="already"):
        m.register_material(direct)
    # materials work wherever cross_sections takes a material
    assert cs.mass_attenuation(direct, 60.0) == direct.mass_attenuation(60.0)
    assert cs.mass_attenuation("alloy", 60.0) == direct.mass_attenuation(60.0)


def test_iodine_contrast():
    full = m.material("iodine_contrast")
    assert full.density == pytest.approx(1.406)
    # 350 mg iodine per mL
    assert full.density * full.mass_fractions["I"] == pytest.approx(0.350, rel=1e-6)
    dilute = m.iodine_contrast(10.0)
    assert dilute.density * dilute.mass_fractions["I"] == pytest.approx(0.010, rel=1e-6)
    # iodine K edge at 33.17 keV
    assert dilute.mu(33.3) > dilute.mu(33.1)
    with pytest.raises(ValueError, match="mg_iodine_per_ml"):
        m.iodine_contrast(0.0)


def test_bad_materials_raise():
    with pytest.raises(ValueError, match="name"):
        m.material("kryptonite")
    with pytest.raises(ValueError, match="density"):
        m.Material("x", -1.0, {"H": 1.0})
    with pytest.raises(ValueError, match="density"):
        m.Material("x", float("nan"), {"H": 1.0})
    with pytest.raises(ValueError, match="composition"):
        m.Material("x", 1.0, {"H": 0.5, "O": 0.4})
    with pytest.raises(ValueError, match="composition"):
        m.Material("x", 1.0, {"H": 1.5, "O": -0.5})
    with pytest.raises(ValueError, match="formula"):
        m.Material.from_formula("x", "H2Qz", 1.0)
