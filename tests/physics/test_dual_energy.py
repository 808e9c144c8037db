"""Dual-energy decomposition, look-up tables, PCA and analytic bases, SIRZ (ρe, Ze), and
bad input.

Physical inputs from xraylib: μ(E) of water and aluminium (μ [1/mm] = CS [cm²/g] ·
ρ [g/cm³] / 10), per-electron cross sections σ_e(Z, E) = CS_Total(Z, E)·A(Z)/(Z·N_A)
(cm² → mm²), and 80/140 kV Kramers spectra (× E for an energy-integrating detector)
behind aluminium (and copper for the high-energy one).
"""
import numpy as np
import pytest

from leap.physics import beam_hardening as bh
from leap.physics import dual_energy as de

xraylib = pytest.importorskip("xraylib")

E = np.arange(15.0, 141.0)                       # keV
N_A = 6.02214076e23
RHO_W, RHO_AL = 1.0, 2.699                        # g/cm³


def mass_att(formula):
    """Mass attenuation (E,) mm²/g."""
    return np.array([xraylib.CS_Total_CP(formula, float(e)) for e in E]) * 100.0


MU_W = mass_att("H2O") * RHO_W / 1000.0          # mm²/g × g/mm³ = 1/mm
MU_AL = mass_att("Al") * RHO_AL / 1000.0
_FILTER = np.exp(-MU_AL * 2.0)
S_LOW = np.clip(80.0 - E, 0, None) * _FILTER
S_HIGH = (np.clip(140.0 - E, 0, None) * _FILTER
          * np.exp(-mass_att("Cu") * 8.96e-3 * 0.5))
BASIS = np.stack([MU_W, MU_AL])

Z_GRID = np.arange(1, 31)
SIGMA_E = np.array([[xraylib.CS_Total(int(z), float(e)) * xraylib.AtomicWeight(int(z))
                     / (z * N_A) * 100.0 for e in E] for z in Z_GRID])      # mm²/electron
RHOE_W = 10.0 / 18.015 * RHO_W * N_A / 1000.0                               # e/mm³
RHOE_AL = 13.0 / 26.9815 * RHO_AL * N_A / 1000.0


@pytest.fixture(scope="module")
def slabs():
    """Water 0–300 mm × aluminium 0–30 mm slabs and their low/high-kV projections."""
    Lw, La = np.meshgrid([0.0, 10.0, 50.0, 100.0, 200.0, 300.0],
                         [0.0, 1.0, 5.0, 10.0, 20.0, 30.0], indexing="ij")
    p_low = bh.polychromatic_attenuation([Lw, La], BASIS, S_LOW)
    p_high = bh.polychromatic_attenuation([Lw, La], BASIS, S_HIGH)
    return Lw, La, p_low, p_high


def rel_err(got, want):
    m = want > 0
    return np.abs(got[m] - want[m]) / want[m]


# ------------------------------------------------------------------ decomposition

def test_decompose_recovers_path_lengths(slabs):
    Lw, La, pl, ph = slabs
    assert np.all(pl[1:] > ph[1:])                # the low-kV beam is attenuated more
    w, a = de.decompose(pl, ph, S_LOW, S_HIGH, BASIS)
    assert w.shape == Lw.shape and w.dtype == np.float64
    assert rel_err(w, Lw).max() < 0.02 and rel_err(a, La).max() < 0.02
    assert np.abs(w - Lw).max() < 1e-4 and np.abs(a - La).max() < 1e-4   # Newton converges
    # float32 blocks of views → float32
    w32, _ = de.decompose(pl.astype(np.float32)[None], ph.astype(np.float32)[None],
                          S_LOW, S_HIGH, BASIS)
    assert w32.dtype == np.float32 and w32.shape == (1,) + Lw.shape


def test_decompose_area_densities(slabs):
    """Mass-attenuation bases (mm²/g) give area densities (g/mm²): density = ρL / L."""
    Lw, La, pl, ph = slabs
    mw, ma = de.decompose(pl, ph, S_LOW, S_HIGH, np.stack([mass_att("H2O"), mass_att("Al")]))
    m = (Lw > 0) & (La > 0)
    assert np.allclose(mw[m] / Lw[m], RHO_W / 1000.0, rtol=0.02)
    assert np.allclose(ma[m] / La[m], RHO_AL / 1000.0, rtol=0.02)


def test_lookup_table_matches_newton(slabs):
    Lw, La, pl, ph = slabs
    table = de.DualEnergyTable(S_LOW, S_HIGH, BASIS, max_attenuation=10.0, num_samples=129)
    w, a = table(pl, ph)
    assert rel_err(w, Lw).max() < 0.02 and rel_err(a, La).max() < 0.02
    w0, a0 = table(pl, ph, refine=0)               # table alone: coarse but close
    assert np.abs(w0 - Lw).max() < 0.5 and np.abs(a0 - La).max() < 0.2
    nan = table(np.array([np.nan, 1.0]), np.array([0.5, 0.7]))[0]
    assert np.isnan(nan[0]) and np.isfinite(nan[1])
    # LEAP/XrayPhysics format: virtual monochromatic attenuation at 50 and 100 keV.
    b50, b100 = de.basis_values(E, BASIS, 50.0), de.basis_values(E, BASIS, 100.0)
    lut, T = table.leap_lut(b50, b100, sample_rate=0.25)
    assert lut.shape == (3, 49, 49) and T == 0.25
    i, j = 8, 5                                   # p_low = 2.0, p_high = 1.25
    c = de.decompose(np.array(2.0), np.array(1.25), S_LOW, S_HIGH, BASIS)
    assert lut[0, i, j] == pytest.approx(b50 @ np.array(c), rel=1e-5)
    assert lut[1, i, j] == pytest.approx(b100 @ np.array(c), rel=1e-5)


def test_dask_blocks(slabs):
    da = pytest.importorskip("dask.array")
    Lw, La, pl, ph = slabs
    w, a = de.decompose(da.from_array(pl, chunks=3), da.from_array(ph, chunks=3),
                        S_LOW, S_HIGH, BASIS)
    assert np.allclose(w.compute(), Lw, atol=1e-4) and np.allclose(a.compute(), La, atol=1e-4)


def test_nonconverged_rays():
    # p_high far above p_low: no water/aluminium combination produces it.
    p_low, p_high = np.array([1.0, 0.1]), np.array([0.7, 5.0])
    w, a = de.decompose(p_low, p_high, S_LOW, S_HIGH, BASIS, max_iterations=5)
    assert np.isfinite(w[0]) and np.isnan(w[1]) and np.isnan(a[1])
    with pytest.raises(ValueError, match="did not converge"):
        de.decompose(p_low, p_high, S_LOW, S_HIGH, BASIS, max_iterations=5,
                     nonconverged="raise")


# ------------------------------------------------------------------ bases

def test_pca_bases_span_the_materials(slabs):
    curves = np.stack([mass_att(m) for m in ("C", "N", "O", "Al")])
    b = de.pca_bases(curves)
    assert b.shape == (2, E.size)
    assert np.allclose(b @ b.T, np.eye(2), atol=1e-12) and np.all(b[:, 0] > 0)
    fit = curves @ b.T @ b                         # projection onto the span
    assert np.all(np.linalg.norm(fit - curves, axis=1) < 0.02 * np.linalg.norm(curves, axis=1))
    # Virtual monochromatic attenuation through a PCA decomposition (SIRZ's basis).
    Lw, La, pl, ph = slabs
    c1, c2 = de.decompose(pl, ph, S_LOW, S_HIGH, b)
    v = de.virtual_monochromatic(c1, c2, de.basis_values(E, b, 60.0))
    want = Lw * np.interp(60.0, E, MU_W) + La * np.interp(60.0, E, MU_AL)
    assert rel_err(v, want).max() < 0.01


def test_analytic_bases():
    assert np.allclose(de.photoelectric_basis(E), E ** -3.0)
    kn = de.compton_basis(np.array([20.0, 100.0, 140.0]))
    ref = np.array([xraylib.CS_KN(e) for e in (20.0, 100.0, 140.0)]) * 1e-22   # barn → mm²
    assert np.allclose(kn, ref, rtol=1e-3)
    # Compton + photoelectric decomposition reproduces water at 60 keV within 1 %.
    b = np.stack([de.photoelectric_basis(E), de.compton_basis(E)])
    pl = bh.polychromatic_attenuation(np.array([100.0]), MU_W, S_LOW)
    ph = bh.polychromatic_attenuation(np.array([100.0]), MU_W, S_HIGH)
    c1, c2 = de.decompose(pl, ph, S_LOW, S_HIGH, b)
    v = de.virtual_monochromatic(c1, c2, de.basis_values(E, b, 60.0))
    assert v[0] == pytest.approx(100.0 * np.interp(60.0, E, MU_W), rel=0.01)


# ------------------------------------------------------------------ SIRZ

def test_sirz_water_and_aluminium(slabs):
    """Ze and ρe of water and aluminium from virtual monochromatic (50/100 keV)
    attenuation obtained by decomposing the 80/140 kV projections."""
    Lw, La, pl, ph = slabs
    w, a = de.decompose(pl, ph, S_LOW, S_HIGH, BASIS)
    lo, hi = 50.0, 100.0
    mono_lo = de.virtual_monochromatic(w, a, de.basis_values(E, BASIS, lo))
    mono_hi = de.virtual_monochromatic(w, a, de.basis_values(E, BASIS, hi))
    water = (slice(1, None), 0)                   # pure water rays: μ = mono / L
    ze, rho = de.sirz(mono_lo[water] / Lw[water], mono_hi[water] / Lw[water], SIGMA_E, Z_GRID,
                      E, energy_low=lo, energy_high=hi)
    assert np.all((7.4 <= ze) & (ze <= 7.5))
    assert np.allclose(rho, RHOE_W, rtol=0.01)
    alu = (0, slice(1, None))
    ze, rho = de.sirz(mono_lo[alu] / La[alu], mono_hi[alu] / La[alu], SIGMA_E, Z_GRID, E,
                      energy_low=lo, energy_high=hi)
    assert np.all(np.abs(ze - 13.0) <= 0.3)
    assert np.allclose(rho, RHOE_AL, rtol=0.01)


def test_rhoe_ze_images_and_spectral_sigma():
    """An image with air, water, aluminium and a NaN; LEAP's convertToRhoeZe call."""
    s_lo = de.sigma_e_at(SIGMA_E, E, 60.0)
    s_hi = de.sigma_e_at(SIGMA_E, E, 120.0)
    mu = lambda e, m: np.exp(np.interp(np.log(e), np.log(E), np.log(m)))   # noqa: E731
    f_lo = np.array([[0.0, mu(60, MU_W)], [mu(60, MU_AL), np.nan]], dtype=np.float32)
    f_hi = np.array([[0.0, mu(120, MU_W)], [mu(120, MU_AL), 0.02]], dtype=np.float32)
    ze, rho = de.rhoe_ze(f_lo, f_hi, s_lo, s_hi, Z_GRID, empty_ze=7.31)
    assert ze.dtype == np.float32 and ze[0, 0] == pytest.approx(7.31) and rho[0, 0] == 0
    assert 7.4 <= ze[0, 1] <= 7.5 and abs(ze[1, 0] - 13) < 0.3
    assert np.isnan(ze[1, 1]) and np.isnan(rho[1, 1])
    assert rho[0, 1] == pytest.approx(RHOE_W, rel=0.01)
    # Spectrum-averaged cross sections for (thin-object) polychromatic reconstructions.
    w_lo, w_hi = S_LOW / S_LOW.sum(), S_HIGH / S_HIGH.sum()
    ze, _ = de.sirz(np.array([w_lo @ MU_AL]), np.array([w_hi @ MU_AL]), SIGMA_E, Z_GRID, E,
                    spectrum_low=S_LOW, spectrum_high=S_HIGH)
    assert abs(ze[0] - 13) < 0.3


# ------------------------------------------------------------------ bad input

def test_bad_input_names_the_argument(slabs):
    _, _, pl, ph = slabs
    with pytest.raises(ValueError, match="spectrum_high"):
        de.decompose(pl, ph, S_LOW, S_HIGH[:-3], BASIS)
    with pytest.raises(ValueError, match="spectrum_low"):
        de.decompose(pl, ph, -S_LOW, S_HIGH, BASIS)
    with pytest.raises(ValueError, match="basis"):
        de.decompose(pl, ph, S_LOW, S_HIGH, BASIS[:, :-1])
    with pytest.raises(ValueError, match="singular"):
        de.decompose(pl, ph, S_LOW, S_HIGH, np.stack([MU_W, 2 * MU_W]))
    bad = pl.copy()
    bad[1, 1] = np.nan
    with pytest.raises(ValueError, match="p_low"):
        de.decompose(bad, ph, S_LOW, S_HIGH, BASIS)
    with pytest.raises(ValueError, match="p_high"):
        de.decompose(pl, np.full_like(ph, np.inf), S_LOW, S_HIGH, BASIS)
    with pytest.raises(ValueError, match="same shape"):
        de.decompose(pl, ph[:2], S_LOW, S_HIGH, BASIS)
    with pytest.raises(ValueError, match="sigma_e_table"):
        de.sirz(np.ones(2), np.ones(2), SIGMA_E[:, :-1], Z_GRID, E, energy_low=50,
                energy_high=100)
    with pytest.raises(ValueError, match="sigma_e_low"):
        de.rhoe_ze(np.ones(2), np.ones(2), de.sigma_e_at(SIGMA_E, E, 100),
                   de.sigma_e_at(SIGMA_E, E, 50))
    with pytest.raises(ValueError, match="energy_low"):
        de.sirz(np.ones(2), np.ones(2), SIGMA_E, Z_GRID, E, energy_high=100)
    with pytest.raises(ValueError, match="energy"):
        de.sigma_e_at(SIGMA_E, E, 500.0)
    with pytest.raises(ValueError, match="curves"):
        de.pca_bases(np.ones(5))
