"""Beam-hardening correction: forward model, single-material tables, polynomial and ECC
precorrection, two-material correction, LEAP look-up formats, bad input.

Physical inputs without leap.physics.cross_sections/spectra: μ(E) of water, aluminium
and titanium from xraylib (μ [1/mm] = CS [cm²/g] · ρ [g/cm³] / 10) and a Kramers
spectrum behind 2.5 mm Al, weighted by E for an energy-integrating detector.
"""
import numpy as np
import pytest

import leap
from leap.reconstruction.fbp import fbp
from leap.physics import beam_hardening as bh
from leap.preprocessing.filters import dual_transfer_function, transfer_function
from leap.system import CTSystem

xraylib = pytest.importorskip("xraylib")

E = np.arange(15.0, 121.0)                      # keV, 1 keV bins
E_REF = 70.0


def mu_of(formula, density):
    """Linear attenuation (E,) 1/mm of a compound of density g/cm³."""
    return np.array([xraylib.CS_Total_CP(formula, float(e)) for e in E]) * density / 10.0


MU_W = mu_of("H2O", 1.0)
MU_AL = mu_of("Al", 2.699)
MU_TI = mu_of("Ti", 4.506)
# Kramers: photons ∝ (kVp − E)/E per bin; × E (energy-integrating detector); × filter.
SPECTRUM = (120.0 - E) * np.exp(-MU_AL * 2.5)


def direct(lengths, mus, s=SPECTRUM):
    """−log Σ w exp(−Σ μ L), straight from the definition (float64)."""
    L = np.stack([np.asarray(x, float).ravel() for x in lengths])
    t = np.exp(-(L.T @ np.atleast_2d(mus))) @ (s / s.sum())
    return -np.log(t).reshape(np.shape(lengths[0]))


# ------------------------------------------------------------------ CT set-up

N, VOXEL, VIEWS, COLS, SUB = 128, 2.0, 180, 160, 4
GEO = leap.ParallelBeam(detector=leap.Detector(num_rows=1, num_cols=COLS, pixel_height=VOXEL,
                                               pixel_width=VOXEL),
                        angles=np.linspace(0, np.pi, VIEWS, endpoint=False))
VOL = leap.Volume(num_x=N, num_y=N, num_z=1, voxel_width=VOXEL, voxel_height=VOXEL)
_S = ((np.arange(COLS) - (COLS - 1) / 2)[:, None]
      + ((np.arange(SUB) + 0.5) / SUB - 0.5)[None, :]) * VOXEL       # sub-rays (col, SUB)
_X = (np.arange(N) - (N - 1) / 2) * VOXEL
XX, YY = np.meshgrid(_X, _X)
RR = np.hypot(XX, YY)


def chords(cx, cy, radius):
    """Pixel-averaged exact chord lengths (views, 1, cols) mm of a disc, parallel beam
    (s = x cos ψ + y sin ψ)."""
    ang = GEO.angles
    s = _S[None] - (cx * np.cos(ang) + cy * np.sin(ang))[:, None, None]
    return 2 * np.sqrt(np.clip(radius ** 2 - s ** 2, 0, None)).mean(-1)[:, None, :]


@pytest.fixture(scope="module")
def water_table():
    return bh.BeamHardeningTable(E, SPECTRUM, MU_W, reference_energy=E_REF)


@pytest.fixture(scope="module")
def cylinder():
    """Chord lengths and polychromatic projections of a 200 mm water cylinder."""
    L = chords(0.0, 0.0, 100.0)
    return L, bh.polychromatic_attenuation(L, MU_W, SPECTRUM).astype(np.float32)


def profile(f, mu):
    """(cupping = (edge − centre)/mu, centre/mu − 1, peak-to-peak/mu inside r < 88 mm)."""
    f = f[0]
    centre, edge, inside = f[RR < 20].mean(), f[(RR > 75) & (RR < 88)].mean(), f[RR < 88]
    return (edge - centre) / mu, centre / mu - 1, (inside.max() - inside.min()) / mu


# ------------------------------------------------------------------ forward model

def test_forward_model_matches_definition():
    L = np.array([0.0, 1.0, 10.0, 100.0, 300.0])
    assert np.allclose(bh.polychromatic_attenuation(L, MU_W, SPECTRUM), direct([L], MU_W),
                       rtol=1e-12, atol=1e-15)
    assert bh.polychromatic_attenuation(np.zeros(3), MU_W, SPECTRUM).tolist() == [0, 0, 0]
    La = np.array([[0.0], [2.0], [5.0]])                # broadcast against L
    two = bh.polychromatic_attenuation([L, La], np.stack([MU_W, MU_AL]), SPECTRUM)
    assert two.shape == (3, 5)
    Lb, Lab = np.broadcast_arrays(L, La)
    assert np.allclose(two, direct([Lb, Lab], np.stack([MU_W, MU_AL])), rtol=1e-12)
    # Beam hardening: the effective attenuation p/L falls with L, below the mean μ.
    p = bh.polychromatic_attenuation(L[1:], MU_W, SPECTRUM)
    assert np.all(np.diff(p / L[1:]) < 0)
    assert p[0] / L[1] < (SPECTRUM / SPECTRUM.sum()) @ MU_W


def test_mean_and_effective_energy():
    w = SPECTRUM / SPECTRUM.sum()
    e0 = bh.effective_energy(E, SPECTRUM, MU_W)
    assert np.exp(np.interp(np.log(e0), np.log(E), np.log(MU_W))) == pytest.approx(w @ MU_W,
                                                                                 rel=1e-3)
    e200 = bh.effective_energy(E, SPECTRUM, MU_W, 200.0)
    assert E[0] < e0 < e200 < E[-1]                       # the beam hardens


# ------------------------------------------------------------------ single material

def test_table_round_trip_and_edges(water_table):
    t = water_table
    mu_ref = np.exp(np.interp(np.log(E_REF), np.log(E), np.log(MU_W)))
    assert t.mu_ref == pytest.approx(mu_ref, rel=1e-3) and t.reference_energy == E_REF
    L = np.array([0.0, 0.5, 3.0, 40.0, 200.0, 450.0])
    p = direct([L], MU_W)
    assert np.allclose(t.poly(L, of="thickness"), p, atol=2e-6)
    assert np.allclose(t.poly(mu_ref * L), p, atol=2e-6)
    assert np.allclose(t.correct(p, to="thickness"), L, atol=1e-4)
    assert np.allclose(t.correct(p), t.mu_ref * L, atol=1e-6)
    # float32 in, float32 out; out=; NaN stays NaN; beyond the table: linear.
    p32 = p.astype(np.float32)
    out = np.empty_like(p32)
    assert t.correct(p32, out=out) is out and out.dtype == np.float32
    edge = t.correct(np.array([-0.05, np.nan, 13.0, 14.0]), to="thickness")
    assert np.isnan(edge[1])
    assert edge[0] == pytest.approx(-0.05 / t.mean_attenuation, rel=5e-3)
    assert 0 < edge[3] - edge[2] == pytest.approx(edge[2] - t.correct(12.0, to="thickness"),
                                                  rel=1e-2)


def test_default_reference_is_the_spectral_mean():
    t = bh.BeamHardeningTable(E, SPECTRUM, MU_W, num_samples=1025)
    w = SPECTRUM / SPECTRUM.sum()
    assert t.mu_ref == pytest.approx(w @ MU_W)
    assert t.reference_energy == pytest.approx(bh.effective_energy(E, SPECTRUM, MU_W))
    assert t.correct(1e-3) == pytest.approx(1e-3, rel=2e-3)     # thin: mono ≈ poly


def test_water_cylinder_cupping_removed(water_table, cylinder):
    """200 mm water, 128² × 2 mm FBP: > 2 % cupping, flat within 0.5 % and at
    μ_water(70 keV) within 1 % after BHC (table, polynomial and ECC)."""
    L, p = cylinder
    mu = water_table.mu_ref
    cup, _, _ = profile(fbp(GEO, VOL, p), mu)
    assert cup > 0.02
    for g in (water_table.correct(p),
              bh.apply_polynomial(p, bh.polynomial_bhc(E, SPECTRUM, MU_W, order=3,
                                                       reference_energy=E_REF,
                                                       max_thickness=220.0))):
        cup, level, spread = profile(fbp(GEO, VOL, np.ascontiguousarray(g)), mu)
        assert abs(cup) < 0.005 and spread < 0.005 and abs(level) < 0.01
    system = CTSystem(geometry=GEO, volume=VOL)
    c = bh.ecc_coefficients(p, system.fbp, order=3, template_value=mu)
    cup, level, spread = profile(system.fbp(bh.apply_polynomial(p, c)), mu)
    assert abs(cup) < 0.005 and spread < 0.005 and abs(level) < 0.01


def test_polynomial_fit_and_horner(water_table):
    c = bh.polynomial_bhc(E, SPECTRUM, MU_W, order=5, reference_energy=E_REF,
                          max_thickness=300.0)
    assert c.shape == (6,) and c[0] == 0
    L = np.linspace(5, 300, 60)
    mono = bh.apply_polynomial(direct([L], MU_W), c)
    assert np.allclose(mono, water_table.mu_ref * L, rtol=0, atol=1e-3)     # 0.05 mm water
    x = np.array([[0.5, np.nan]], dtype=np.float32)
    y = bh.apply_polynomial(x, [1.0, 2.0, 3.0])
    assert y.dtype == np.float32 and y[0, 0] == pytest.approx(1 + 1 + 0.75) and np.isnan(y[0, 1])


def test_dask_blocks_match_numpy(water_table, cylinder):
    da = pytest.importorskip("dask.array")
    _, p = cylinder
    lazy = water_table.correct(da.from_array(p, chunks=(45, 1, COLS)))
    assert isinstance(lazy, da.Array)
    assert np.array_equal(lazy.compute(), water_table.correct(p))
    y = bh.apply_polynomial(da.from_array(p, chunks=(60, 1, COLS)), [0, 1.0, 0.1]).compute()
    assert np.allclose(y, p + 0.1 * p * p, rtol=1e-6)


# ------------------------------------------------------------------ two materials

@pytest.fixture(scope="module")
def ti_table():
    return bh.TwoMaterialTable(E, SPECTRUM, MU_W, MU_TI, reference_energy=E_REF,
                               num_samples=513, num_second=65)


def test_two_material_table_inverts_forward_model(ti_table):
    a1 = np.array([0.0, 0.3, 1.0, 2.0, 4.0, 5.0])
    a2 = np.array([0.0, 0.1, 0.5, 1.0, 2.5, 6.0])
    mu1, mu2 = ti_table.mu_ref
    p = ti_table.poly(a1, a2)
    assert np.allclose(p, direct([a1 / mu1, a2 / mu2], np.stack([MU_W, MU_TI])), atol=1e-9)
    assert np.allclose(ti_table.correct(p, a2), a1 + a2, rtol=0, atol=2e-3)
    assert np.allclose(ti_table.correct(p, a2, refine=1), a1 + a2, rtol=0, atol=1e-6)
    # a2 = 0 is water BHC.
    single = bh.BeamHardeningTable(E, SPECTRUM, MU_W, reference_energy=E_REF)
    pw = np.linspace(0, 8, 9)
    assert np.allclose(ti_table.correct(pw), single.correct(pw), atol=1e-4)


def test_two_material_bhc_removes_streaks(ti_table):
    """Two 10 mm titanium rods 60 mm apart in 200 mm water: the dark streak between the
    rods drops >= 3x from water-only BHC to two-material BHC."""
    L_ti = chords(30.0, 0.0, 5.0) + chords(-30.0, 0.0, 5.0)
    L_w = chords(0.0, 0.0, 100.0) - L_ti
    mu1, mu2 = ti_table.mu_ref
    p = ti_table.poly(mu1 * L_w, mu2 * L_ti).astype(np.float32)
    system = CTSystem(geometry=GEO, volume=VOL)
    line = (np.abs(YY) <= 1.2) & (np.abs(XX) <= 18)
    water = (RR < 85) & (np.abs(YY) > 40)

    def streak(f):
        return (mu1 - f[0][line].mean()) / mu1

    f_water = system.fbp(ti_table.correct(p))
    g, f_two = bh.two_material_bhc(p, ti_table, system.project, system.fbp,
                                   num_iterations=3, return_volume=True)
    assert g.dtype == np.float32 and g.shape == p.shape
    before, after = streak(f_water), streak(f_two)
    assert before > 0.1
    assert abs(after) * 3 <= before
    assert abs(f_two[0][water].mean() / mu1 - 1) < 0.005           # water level kept


def test_segment_threshold():
    mu1, mu2 = 0.02, 0.24
    f = np.array([0.0, 0.02, 0.024, 0.03, 0.0419, 0.05, 0.2], dtype=np.float32)
    m = bh.segment_threshold(f, mu1, mu2)
    lo, thr = mu1 + 0.02 * (mu2 - mu1), mu1 + 0.1 * (mu2 - mu1)
    assert m[0] == m[1] == m[2] == 0 and m[5] == f[5] and m[6] == f[6]
    assert m[3] == pytest.approx(0.03 * (0.03 - lo) / (thr - lo), rel=1e-5)
    leap_style = bh.segment_threshold(f, mu1, mu2, low=mu1)
    assert leap_style[2] > 0


# ------------------------------------------------------------------ LEAP formats

def test_leap_luts(water_table, ti_table):
    lut, T = water_table.leap_lut()
    assert lut.dtype == np.float32 and lut.size == 12001 and T == 1e-3
    p = np.array([0.0, 0.37, 2.5, 11.9, 13.0, -0.2], dtype=np.float32)
    got = transfer_function(p, lut, T)
    want = water_table.correct(p)
    assert np.allclose(got[:5], want[:5], rtol=1e-4, atol=1e-6) and got[5] == 0.0
    bh_lut, T = water_table.leap_lut("bh", sample_rate=0.01)
    assert bh_lut.size == 4801
    assert np.allclose(transfer_function(p[:3], bh_lut, T), water_table.poly(p[:3]),
                       atol=1e-5)
    # Two-material table by fraction (LEAP demo d18's applyDualTransferFunction call).
    lut2, T = ti_table.leap_lut(sample_rate=0.05)
    n = lut2.shape[0]
    assert lut2.shape == (241, 241)
    a1, a2 = np.array([1.0, 2.0, 3.0]), np.array([0.5, 1.0, 0.2])
    p2 = ti_table.poly(a1, a2)
    x, y = dual_transfer_function(T * (n - 1) * a2 / (a1 + a2), p2, lut2, T)
    assert np.allclose(y, a1 + a2, rtol=2e-3) and np.array_equal(x, y)


# ------------------------------------------------------------------ bad input

def test_bad_input_names_the_argument(water_table):
    with pytest.raises(ValueError, match="spectrum"):
        bh.BeamHardeningTable(E, SPECTRUM[:-1], MU_W)
    with pytest.raises(ValueError, match="mu"):
        bh.BeamHardeningTable(E, SPECTRUM, MU_W[:-2])
    with pytest.raises(ValueError, match="spectrum"):
        bh.polychromatic_attenuation(np.ones(3), MU_W, np.r_[SPECTRUM[:-1], np.nan])
    with pytest.raises(ValueError, match="lengths"):
        bh.polychromatic_attenuation(np.array([1.0, -2.0]), MU_W, SPECTRUM)
    with pytest.raises(ValueError, match="lengths"):
        bh.polychromatic_attenuation(np.array([1.0, np.nan]), MU_W, SPECTRUM)
    with pytest.raises(ValueError, match="spectrum"):
        bh.polychromatic_attenuation(np.ones(3), MU_W, -SPECTRUM)
    with pytest.raises(ValueError, match="mu"):
        bh.BeamHardeningTable(E, SPECTRUM, np.r_[np.nan, MU_W[1:]])
    with pytest.raises(ValueError, match="reference_energy"):
        bh.BeamHardeningTable(E, SPECTRUM, MU_W, reference_energy=200.0)
    with pytest.raises(ValueError, match="energies"):
        bh.BeamHardeningTable(E[::-1], SPECTRUM, MU_W)
    with pytest.raises(ValueError, match="thickness"):
        bh.effective_energy(E, SPECTRUM, MU_W, -1.0)
    with pytest.raises(ValueError, match="max_thickness"):
        bh.polynomial_bhc(E, SPECTRUM, MU_W, max_thickness=-5.0)
    with pytest.raises(ValueError, match="mu_2"):
        bh.TwoMaterialTable(E, SPECTRUM, MU_W, MU_TI[:10])
    with pytest.raises(ValueError, match="poly"):
        table = bh.TwoMaterialTable(E, SPECTRUM, MU_W, MU_TI, num_samples=17, num_second=3)
        bh.two_material_bhc(np.full((2, 1, 3), np.nan, np.float32), table, lambda f: f,
                            lambda g: g)
    with pytest.raises(ValueError, match="project returned shape"):
        bh.two_material_bhc(np.ones((2, 1, 3), np.float32), table, lambda f: f[:1],
                            lambda g: g)
    with pytest.raises(TypeError, match="callables"):
        bh.two_material_bhc(np.ones((2, 1, 3), np.float32), table, None, lambda g: g)
    with pytest.raises(ValueError, match="to"):
        water_table.correct(np.ones(2), to="density")
