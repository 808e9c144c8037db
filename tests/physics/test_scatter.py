"""Tests of leap.physics.scatter: differential cross sections and normalised angular
distributions against xraylib and closed forms, and the first-order scatter model
(LEAP's ``scatter_model``) against a literal Python port of upstream's CUDA kernels,
a hand-computed one-voxel case and physical properties. The CUDA kernels run under
Numba's simulator in a subprocess (``TestSim*``)."""
from __future__ import annotations

import math

import numpy as np
import pytest

xl = pytest.importorskip("xraylib")

import leap  # noqa: E402
from conftest import SIM, run_sim_tests  # noqa: E402
from leap.physics import cross_sections as cs  # noqa: E402
from leap.physics import scatter as sc  # noqa: E402

MEC2 = sc.ELECTRON_REST_ENERGY_KEV


def rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def sphere_integral(fn, n=40001):
    """∫ fn(θ) dΩ by the trapezoid rule on n nodes in θ (radians)."""
    t = np.linspace(0.0, math.pi, n)
    y = fn(t) * 2.0 * math.pi * np.sin(t)
    return float(np.sum(0.5 * (y[1:] + y[:-1])) * (t[1] - t[0]))


# ------------------------------------------------------------------ cross sections
class TestCrossSections:
    def test_klein_nishina_forward_is_re2(self):
        for e in (1.0, 30.0, 120.0, 1000.0):
            assert sc.klein_nishina(e, 0.0) == pytest.approx(xl.RE2, rel=1e-12)
            assert sc.klein_nishina(e, 0.0, units="cm") == pytest.approx(2.8179403e-13 ** 2,
                                                                          rel=1e-6)
            assert sc.klein_nishina(e, 0.0, units="mm") == pytest.approx(2.8179403e-12 ** 2,
                                                                          rel=1e-6)

    def test_klein_nishina_matches_xraylib_and_thomson_limit(self):
        for e in (5.0, 60.0, 511.0):
            for t in (0.1, 1.0, 2.5, math.pi):
                assert sc.klein_nishina(e, t) == pytest.approx(xl.DCS_KN(e, t), rel=1e-10)
        t = np.linspace(0, math.pi, 7)
        assert rel(sc.klein_nishina(1e-4, t), sc.thomson(t)) < 1e-6
        assert rel(sc.thomson(t), [xl.DCS_Thoms(x) for x in t]) < 1e-12
        assert sc.klein_nishina(120.0, 2.0) < sc.thomson(2.0)

    def test_compton_energy(self):
        e = np.array([20.0, 100.0, 1000.0])
        assert np.allclose(sc.compton_energy(e, math.pi / 2), e / (1 + e / MEC2), rtol=1e-14)
        assert np.allclose(sc.compton_energy(e, math.pi), e / (1 + 2 * e / MEC2), rtol=1e-14)
        assert np.allclose(sc.compton_energy(e, 0.0), e)
        assert sc.compton_energy(511.0, math.pi) == pytest.approx(511.0 / (1 + 2 * 511.0 / MEC2))

    def test_momentum_transfer(self):
        assert sc.momentum_transfer(60.0, 1.0) == pytest.approx(xl.MomentTransf(60.0, 1.0))
        assert sc.momentum_transfer(60.0, 0.0) == 0.0

    @pytest.mark.parametrize("z", [1, 6, 8, 29, 82])
    def test_incoherent_below_z_kn_and_vanishing_forward(self, z):
        e = np.array([20.0, 60.0, 150.0])[:, None]
        t = np.linspace(0.0, math.pi, 91)[None, :]
        inc = sc.incoherent_dcs(z, e, t, units="barn")
        assert np.all(inc <= z * sc.klein_nishina(e, t) * (1 + 1e-12))
        assert np.all(inc[:, 0] == 0.0)                               # S(0) = 0
        small = sc.incoherent_dcs(z, 60.0, [1e-2, 1e-3, 1e-4], units="barn")
        assert small[0] > small[1] > small[2] > 0 and small[2] < 1e-3 * z * xl.RE2
        assert sc.incoherent_scattering_function(z, 0.0) == 0.0
        assert sc.incoherent_scattering_function(z, 1e4) == pytest.approx(z, rel=1e-3)

    @pytest.mark.parametrize("z", [1, 8, 26, 82])
    def test_coherent_forward_is_z2_thomson(self, z):
        for e in (10.0, 60.0, 120.0):
            assert sc.coherent_dcs(z, e, 0.0, units="barn") == pytest.approx(z * z * xl.RE2,
                                                                            rel=1e-9)
        assert sc.atomic_form_factor(z, 0.0) == pytest.approx(z)

    def test_match_xraylib_dcs(self):
        for z in (1, 8, 29, 82):
            for e in (15.0, 60.0, 140.0):
                for t in (0.05, 0.7, 2.0, 3.1):
                    assert sc.incoherent_dcs(z, e, t, units="cm") == pytest.approx(
                        xl.DCS_Compt(z, e, t), rel=5e-6)
                    assert sc.coherent_dcs(z, e, t, units="cm") == pytest.approx(
                        xl.DCS_Rayl(z, e, t), rel=1e-6)
        # compounds: xraylib's parser takes mass fractions from its own atomic weights,
        # leap.physics from IUPAC 2009 ones (H2O: 2e-4 apart)
        for t in (0.3, 1.5):
            assert sc.incoherent_dcs("H2O", 60.0, t, units="cm") == pytest.approx(
                xl.DCS_Compt_CP("H2O", 60.0, t), rel=1e-3)
            assert sc.coherent_dcs("H2O", 60.0, t, units="cm") == pytest.approx(
                xl.DCS_Rayl_CP("H2O", 60.0, t), rel=1e-3)
        # mm^2/g = 100 cm^2/g
        assert sc.incoherent_dcs(8, 60.0, 1.0) == pytest.approx(
            100 * sc.incoherent_dcs(8, 60.0, 1.0, units="cm"))

    @pytest.mark.parametrize("material", ["H2O", {"H2O": 0.7, "Pb": 0.3}, "cortical_bone"])
    def test_compounds_are_mass_fraction_weighted_sums(self, material):
        fr = cs.mass_fractions(material)
        e, t = np.array([30.0, 90.0]), np.array([0.2, 1.9])
        for fn in (sc.incoherent_dcs, sc.coherent_dcs):
            want = sum(w * fn(z, e, t) for z, w in fr.items())
            assert rel(fn(material, e, t), want) < 1e-12
        for fn, nf in ((sc.incoherent_distribution, sc.incoherent_normalization_factor),
                       (sc.coherent_distribution, sc.coherent_normalization_factor)):
            num = sum(w * fn(z, 60.0, 35.0) for z, w in fr.items())
            den = sum(w * nf(z, 60.0) for z, w in fr.items())
            assert fn(material, 60.0, 35.0, normalize=True) == pytest.approx(num / den,
                                                                             rel=1e-10)


# ------------------------------------------------------------------- distributions
class TestDistributions:
    def test_degrees_convention(self):
        assert sc.klein_nishina_distribution(60.0, 90.0) == pytest.approx(
            sc.klein_nishina(60.0, math.pi / 2))
        assert sc.incoherent_distribution("H2O", 60.0, 45.0) == pytest.approx(
            sc.incoherent_dcs("H2O", 60.0, math.pi / 4))
        assert sc.coherent_distribution("H2O", 60.0, 45.0) == pytest.approx(
            sc.coherent_dcs("H2O", 60.0, math.pi / 4))

    @pytest.mark.parametrize("energy", [5.0, 60.0, 150.0])
    def test_klein_nishina_normalization_is_total_cross_section(self, energy):
        k = energy / xl.MEC2
        total = 2 * math.pi * xl.RE2 * ((1 + k) / k ** 2 * (2 * (1 + k) / (1 + 2 * k)
                                                          - math.log(1 + 2 * k) / k)
                                        + math.log(1 + 2 * k) / (2 * k)
                                        - (1 + 3 * k) / (1 + 2 * k) ** 2)
        assert sc.klein_nishina_normalization_factor(energy) == pytest.approx(total, rel=1e-8)

    @pytest.mark.parametrize("energy", [10.0, 60.0, 120.0])
    @pytest.mark.parametrize("material", ["H2O", 82])
    def test_normalised_distributions_integrate_to_one(self, material, energy):
        for fn in (sc.incoherent_distribution, sc.coherent_distribution):
            got = sphere_integral(lambda t: fn(material, energy, np.rad2deg(t), normalize=True))
            assert got == pytest.approx(1.0, abs=2e-5)
        got = sphere_integral(lambda t: sc.klein_nishina_distribution(energy, np.rad2deg(t),
                                                                      normalize=True))
        assert got == pytest.approx(1.0, abs=1e-6)

    def test_normalization_factors_close_to_xraylib_totals(self):
        # ∫ dσ/dΩ dΩ against xraylib's integrated cross sections (other data, same
        # physics; for heavy elements the form-factor approximation without anomalous
        # scattering undershoots the coherent total, Pb by 6-10 %)
        for z, e in ((8, 20.0), (8, 60.0), (29, 100.0), (82, 100.0)):
            assert sc.incoherent_normalization_factor(z, e, units="cm") == pytest.approx(
                xl.CS_Compt(z, e), rel=0.015)
        for z, e in ((8, 20.0), (8, 60.0), (29, 100.0)):
            assert sc.coherent_normalization_factor(z, e, units="cm") == pytest.approx(
                xl.CS_Rayl(z, e), rel=0.015)

    def test_broadcasting_and_shapes(self):
        e = np.array([20.0, 40.0, 80.0])[:, None]
        th = np.arange(0.0, 181.0, 30.0)[None, :]
        d = sc.incoherent_distribution("H2O", e, th, normalize=True)
        assert d.shape == (3, 7)
        assert sc.incoherent_distribution("H2O", 40.0, 30.0, normalize=True) == \
            pytest.approx(d[1, 1], rel=1e-12)
        assert np.ndim(sc.coherent_normalization_factor("H2O", 60.0)) == 0
        assert sc.coherent_normalization_factor("H2O", [60.0, 80.0]).shape == (2,)

    def test_normalised_distributions_match_the_xrayphysics_shim(self):
        # the repository's XrayPhysics shim (xrayphysics.py) averages per atom, this module
        # per gram: normalised, the two agree (compounds to the atomic-weight tables)
        xrayphysics = pytest.importorskip("xrayphysics")
        p = xrayphysics.xrayPhysics()
        th = np.arange(0.0, 181.0, 5.0)
        for mat, tol in (("H2O", 5e-4), ("Pb", 5e-6)):
            for e in (20.0, 100.0):
                for a, b in ((p.incoherentScatterDistribution(mat, e, th, True),
                              sc.incoherent_distribution(mat, e, th, normalize=True)),
                             (p.coherentScatterDistribution(mat, e, th, True),
                              sc.coherent_distribution(mat, e, th, normalize=True))):
                    assert np.max(np.abs(a - b)) < tol * np.max(b)

    def test_scatter_tables(self):
        sig, dist = sc.scatter_tables("water", 39.2)
        assert sig.shape == (3, 40) and dist.shape == (2, 40, 181)
        assert sig.dtype == dist.dtype == np.float32
        e = np.arange(1.0, 41.0)
        assert rel(sig[1], cs.mass_attenuation("water", e, "CS")) < 1e-6
        assert rel(dist[0, 29], sc.incoherent_distribution("water", 30.0, np.arange(181.0),
                                                           normalize=True)) < 1e-6
        t = np.deg2rad(np.arange(181.0))
        w = np.sin(t) * 2 * math.pi * (t[1] - t[0])
        assert np.sum(dist[0, 29] * w) == pytest.approx(1.0, rel=2e-3)

    def test_bad_arguments(self):
        with pytest.raises(ValueError, match="energy"):
            sc.klein_nishina(0.0, 1.0)
        with pytest.raises(ValueError, match="x must be >= 0"):
            sc.incoherent_scattering_function(8, -1.0)
        with pytest.raises(ValueError, match="units"):
            sc.incoherent_dcs(8, 60.0, 1.0, units="inch")
        with pytest.raises(ValueError, match="units"):
            sc.scatter_tables(8, 60.0, units="barn")
        with pytest.raises(ValueError, match="Z"):
            sc.coherent_dcs(100, 60.0, 1.0)


# ------------------------------------------- a literal port of upstream's CUDA kernels
def tex(a, *c):
    """A CUDA texture read, linear filter, border 0: ``a`` indexed [..., z][y][x], ``c``
    = (x, y, z) texel coordinates (the value of element i sits at i + 0.5)."""
    base = [x - 0.5 for x in c]
    lo = [math.floor(b) for b in base]
    fr = [b - f for b, f in zip(base, lo)]
    val = 0.0
    for corner in np.ndindex(*(2,) * len(c)):
        idx = [f + o for f, o in zip(lo, corner)]
        if all(0 <= i < n for i, n in zip(idx, a.shape[::-1])):
            w = np.prod([fi if o else 1 - fi for fi, o in zip(fr, corner)])
            val += w * a[tuple(idx[::-1])]
    return val


def ref_dbt(f, N, T, start, p, dst):
    """``divergentBeamTransform(f, N, T, startVal, p, dst)`` (cubic voxels)."""
    ip = [(p[d] - start[d]) / T for d in range(3)]
    r = [dst[d] - p[d] for d in range(3)]
    ar = [abs(v) for v in r]
    a = 0 if (ar[0] >= ar[1] and ar[0] >= ar[2]) else (1 if ar[1] >= ar[2] else 2)
    ir = [v / ar[a] for v in r]
    s = max(0, min(N[a] - 1, int(math.floor(0.5 + ip[a]))))
    t = (s - ip[a]) / ir[a]
    st = [ip[d] + t * ir[d] for d in range(3)]
    st[a] = s

    def sample(i):
        c = [st[d] + ir[d] * abs(i - s) + 0.5 for d in range(3)]
        c[a] = i + 0.5
        return tex(f, *c)

    if r[a] > 0:
        if ip[a] >= N[a] - 0.5:
            return 0.0
        val = sample(s) * ((s - 0.5) - max(-0.5, ip[a]))
        for i in range(s, min(N[a] - 1, int(math.ceil((dst[a] - start[a]) / T))) + 1):
            val += sample(i)
    else:
        if ip[a] <= -0.5:
            return 0.0
        val = sample(s) * (min(N[a] - 0.5, ip[a]) - (s + 0.5))
        for i in range(s, max(0, int(math.floor((dst[a] - start[a]) / T))) - 1, -1):
            val += sample(i)
    return val * math.sqrt(1.0 + sum(ir[d] ** 2 for d in range(3) if d != a)) * T


def ref_model(mb, vol, f, spec, energies, det, sigma, dist, fast, mec2):
    """S, P, A of ``firstOrderScatterModel`` (``fast``: ``..._fast``), ``PrimaryScan`` and
    ``airScan``, every view."""
    N = (vol.num_x, vol.num_y, vol.num_z)
    T = vol.voxel_width
    start = (vol.x0, vol.y0, vol.z0)
    nr, nc = mb.detector.num_rows, mb.detector.num_cols
    ph, pw = mb.detector.pixel_height, mb.detector.pixel_width
    out = np.zeros((3, mb.num_angles, nr, nc))

    def pos(i, j, k):
        return np.array([start[0] + i * T, start[1] + j * T, start[2] + k * T])

    def inner(x, xs, xf, nd, d1, d2):
        r0, rf = x - xs, xf - x
        a = 1 / (np.linalg.norm(r0) * np.linalg.norm(rf))
        solid = (r0 @ nd) * (rf @ nd) * a ** 3
        cos_t = (r0 @ rf) * a
        theta = math.degrees(math.acos(min(1.0, cos_t)))
        v = 0.0
        for e, sp in zip(energies, spec):
            if sp > 0:
                ef = mec2 * e / (mec2 + (1 - cos_t) * e)
                s_e = [tex(sigma[q], e - 0.5) for q in range(3)]
                s_f = [tex(sigma[q], ef - 0.5) for q in range(3)]
                cur_cs = tex(det, ef - 0.5) * s_e[1] * tex(dist, theta + 0.5, e - 0.5, 0.5)
                cur_rs = tex(det, e - 0.5) * s_e[2] * tex(dist, theta + 0.5, e - 0.5, 1.5)
                v += sp * cur_cs * math.exp(-sum(s_e) * d1 - sum(s_f) * d2) \
                    + sp * cur_rs * math.exp(-sum(s_e) * (d1 + d2))
        return v * solid

    for a in range(mb.num_angles):
        xs, ctr = mb.source_positions[a], mb.module_centers[a]
        row, col = mb.row_vectors[a], mb.col_vectors[a]
        nd = -np.cross(col, row)
        Df = np.zeros(f.shape)
        for k, j, i in np.ndindex(f.shape):
            Df[k, j, i] = ref_dbt(f, N, T, start, pos(i, j, k), xs)
        for m, n in np.ndindex(nr, nc):
            xf = ctr + (m - 0.5 * (nr - 1)) * ph * row + (n - 0.5 * (nc - 1)) * pw * col
            val = 0.0
            if not fast:
                for k, j, i in np.ndindex(f.shape):
                    if f[k, j, i] > 0:
                        d2 = ref_dbt(f, N, T, start, pos(i, j, k), xf)
                        val += inner(pos(i, j, k), xs, xf, nd, Df[k, j, i], d2) * f[k, j, i]
            else:
                for k, j, i in np.ndindex(f.shape):
                    if k % 3 or j % 3 or i % 3:
                        continue
                    c = pos(min(i + 1, N[0] - 1), min(j + 1, N[1] - 1), min(k + 1, N[2] - 1))
                    d2 = ref_dbt(f, N, T, start, c, xf)
                    for dk in range(max(-1, -k), min(1, N[2] - 1 - k) + 1):
                        for dj in range(max(-1, -j), min(1, N[1] - 1 - j) + 1):
                            for di in range(max(-1, -i), min(1, N[0] - 1 - i) + 1):
                                if f[k, j, i] > 0:
                                    val += inner(pos(i + di, j + dj, k + dk), xs, xf, nd,
                                                 Df[k, j, i], d2) * f[k, j, i]
            out[0, a, m, n] = val * T ** 3
            r = xf - xs
            solid = (r @ nd) / np.linalg.norm(r) ** 3
            prho = ref_dbt(f, N, T, start, xf, xs)
            for e, sp in zip(energies, spec):
                if sp > 0:
                    mu = sum(tex(sigma[q], e - 0.5) for q in range(3))
                    out[1, a, m, n] += tex(det, e - 0.5) * sp * math.exp(-mu * prho) * solid
                    out[2, a, m, n] += tex(det, e - 0.5) * sp * solid
    return out


def tiny_case(seed=0):
    """A tilted (not axially aligned) 2-view modular beam, a 5x4x3 volume off the
    origin with empty and negative voxels, random 1-keV tables up to 60 keV."""
    r = np.random.default_rng(seed)
    det = leap.Detector(num_rows=3, num_cols=4, pixel_height=6.0, pixel_width=5.0)
    cone = leap.ConeBeam(detector=det, angles=np.array([0.3, 1.9]), sod=40.0, sdd=80.0)
    c, s = math.cos(0.2), math.sin(0.2)
    mb = cone.to_modular().rotated(np.array([[1, 0, 0], [0, c, -s], [0, s, c]]))
    vol = leap.Volume(num_x=5, num_y=4, num_z=3, voxel_width=2.0, voxel_height=2.0,
                      offset_x=0.7, offset_y=-0.4, offset_z=0.3)
    f = r.uniform(0.5e-3, 2e-3, vol.shape)
    f[0, 1, 2] = f[2, 3, 4] = 0.0
    f[1, 2, 0] = -0.3e-3
    e = np.array([25.0, 41.5, 47.0, 60.0])
    spec = np.array([1.0, 0.0, 2.0, 0.7])
    n = 60
    k = np.arange(1.0, n + 1)
    detr = k * (0.8 + 0.2 * r.random(n))
    sigma = np.stack([4000 / k ** 2.5 + 2, 15 + 2 * r.random(n), 3 * np.exp(-k / 40)])
    dist = r.uniform(0.02, 0.2, (2, n, 181))
    return mb, vol, f, spec, e, detr, sigma, dist


class TestModelAgainstUpstreamPort:
    @pytest.mark.parametrize("sampling", ["full", "leap"])
    def test_matches_port(self, sampling):
        mb, vol, f, spec, e, detr, sigma, dist = tiny_case()
        assert not mb.axially_aligned
        mec2 = sc.LEAP_ELECTRON_REST_ENERGY_KEV if sampling == "leap" else MEC2
        want = ref_model(mb, vol, f, spec, e, detr, sigma, dist, sampling == "leap", mec2)
        got = sc.scatter_components(mb, vol, f, spec, e, detr, sigma, dist,
                                    density_units="g/mm^3", sampling=sampling)
        for i, key in enumerate(("scatter", "primary", "air")):
            assert rel(got[key], want[i]) < 1e-11, key
        assert np.all(got["scatter"] > 0) and np.all(got["primary"] < got["air"])
        g = sc.first_order_scatter(mb, vol, f, spec, e, detr, sigma, dist, -1,
                                   density_units="g/mm^3", sampling=sampling)
        assert rel(g, want[1] / (want[1] + want[0])) < 1e-6

    def test_units_scale_the_density(self):
        mb, vol, f, spec, e, detr, sigma, dist = tiny_case(1)
        ref = sc.scatter_components(mb, vol, f, spec, e, detr, sigma, dist,
                                    density_units="g/mm^3")
        cm = sc.scatter_components(mb, vol, f * 1e3, spec, e, detr, sigma / 100, dist,
                                   units="cm")
        for key in ref:
            assert rel(cm[key], ref[key]) < 1e-12

    def test_one_voxel_by_hand(self):
        # source on -x, voxel at the origin, one pixel at (100, 30, 0) facing -x; one
        # energy; tables linear in energy and angle so that interpolation is exact.
        det = leap.Detector(num_rows=1, num_cols=1, pixel_height=1.0, pixel_width=1.0)
        mb = leap.ModularBeam(detector=det, source_positions=[[-100.0, 0, 0]],
                              module_centers=[[100.0, 30.0, 0]], row_vectors=[[0, 0, 1.0]],
                              col_vectors=[[0, 1.0, 0]])
        T, rho, E = 2.0, 1.5e-3, 60.0
        vol = leap.Volume(num_x=1, num_y=1, num_z=1, voxel_width=T, voxel_height=T)
        k = np.arange(1.0, 61.0)
        detr, mu_pe, mu_cs, mu_rs = 2.0 * k, 30 - 0.2 * k, 20 - 0.1 * k, 5 - 0.05 * k
        th = np.arange(181.0)
        dist = np.stack([np.broadcast_to(0.1 + 0.001 * th, (60, 181)),
                         np.broadcast_to(0.3 - 0.001 * th, (60, 181))])
        out = sc.scatter_components(mb, vol, np.full((1, 1, 1), rho), [3.0], [E], detr,
                                    np.stack([mu_pe, mu_cs, mu_rs]), dist,
                                    density_units="g/mm^3")
        mu = lambda e: (30 - 0.2 * e) + (20 - 0.1 * e) + (5 - 0.05 * e)  # noqa: E731
        d1 = rho * T / 2                                  # centre to the voxel's face
        d2 = rho * T / 2 * math.sqrt(1 + 0.3 ** 2)
        theta = math.atan(0.3)
        ef = E / (1 + E / MEC2 * (1 - math.cos(theta)))
        rf = math.hypot(100.0, 30.0)
        omega = 100.0 * 100.0 / (100.0 ** 3 * rf ** 3)
        deg = math.degrees(theta)
        s = T ** 3 * rho * omega * 3.0 * (
            2 * ef * (20 - 0.1 * E) * (0.1 + 0.001 * deg) * math.exp(-mu(E) * d1 - mu(ef) * d2)
            + 2 * E * (5 - 0.05 * E) * (0.3 - 0.001 * deg) * math.exp(-mu(E) * (d1 + d2)))
        r = np.array([200.0, 30.0, 0.0])
        air = 2 * E * 3.0 * 200.0 / np.linalg.norm(r) ** 3  # the ray misses the voxel
        assert out["scatter"][0, 0, 0] == pytest.approx(s, rel=1e-12)
        assert out["air"][0, 0, 0] == pytest.approx(air, rel=1e-12)
        assert out["primary"][0, 0, 0] == pytest.approx(air, rel=1e-12)


# ------------------------------------------------------------------ model properties
def cylinder_case(radius, density=1.0, num_angles=2, angles=None):
    det = leap.Detector(num_rows=6, num_cols=10, pixel_height=8.0, pixel_width=8.0)
    if angles is None:
        angles = np.linspace(0, math.pi, num_angles, endpoint=False)
    geo = leap.ConeBeam(detector=det, angles=angles, sod=200.0, sdd=400.0)
    vol = leap.Volume(num_x=14, num_y=14, num_z=6, voxel_width=3.0, voxel_height=3.0)
    z, y, x = np.meshgrid(vol.z_samples(), vol.y_samples(), vol.x_samples(), indexing="ij")
    rho = np.where(x ** 2 + y ** 2 <= radius ** 2, density, 0.0)
    e = np.array([30.0, 50.0, 70.0])
    spec = np.array([1.0, 1.5, 0.6])
    return geo, vol, rho, spec, e


@pytest.fixture(scope="module")
def water_tables():
    sigma, dist = sc.scatter_tables("water", 70.0)
    return np.arange(1.0, 71.0), sigma, dist


class TestModelProperties:
    def test_empty_volume(self, water_tables):
        detr, sigma, dist = water_tables
        geo, vol, rho, spec, e = cylinder_case(0.0, 0.0)
        out = sc.scatter_components(geo, vol, rho, spec, e, detr, sigma, dist)
        assert np.all(out["scatter"] == 0.0)
        assert np.array_equal(out["primary"], out["air"])
        g = sc.first_order_scatter(geo, vol, rho, spec, e, detr, sigma, dist)
        assert np.all(g == 1.0) and g.dtype == np.float32 and g.shape == (2, 6, 10)

    def test_linear_in_density_for_thin_objects(self, water_tables):
        detr, sigma, dist = water_tables
        out = []
        for scale in (1e-4, 2e-4):
            geo, vol, rho, spec, e = cylinder_case(15.0, scale)
            out.append(sc.first_order_scatter(geo, vol, rho, spec, e, detr, sigma, dist,
                                              "scatter").astype(np.float64))
        assert np.all(out[0] > 0)
        assert rel(out[1], 2 * out[0]) < 1e-3

    def test_scatter_to_primary_grows_with_size(self, water_tables):
        detr, sigma, dist = water_tables
        spr = []
        for radius in (6.0, 12.0, 18.0):
            c = sc.scatter_components(*cylinder_case(radius)[:5], detr, sigma, dist)
            spr.append((c["scatter"] / c["primary"])[:, 2:4, 4:6].mean())
        assert 0 < spr[0] < spr[1] < spr[2]

    def test_left_right_symmetry(self, water_tables):
        detr, sigma, dist = water_tables
        geo, vol, rho, spec, e = cylinder_case(15.0, angles=np.array([0.0, math.pi / 2]))
        s = sc.scatter_components(geo, vol, rho, spec, e, detr, sigma, dist)["scatter"]
        assert rel(s, s[:, :, ::-1]) < 1e-12
        assert rel(s, s[:, ::-1, :]) < 1e-12                 # and top-bottom
        assert rel(s[0], s[1]) < 1e-12                       # and 90-degree rotation

    def test_jobs(self, water_tables):
        detr, sigma, dist = water_tables
        case = cylinder_case(18.0)
        c = sc.scatter_components(*case, detr, sigma, dist)
        P, S, A = c["primary"], c["scatter"], c["air"]
        for job, want in (("gain", P / (P + S)), (-1, P / (P + S)), ("simulate", (P + S) / P),
                          (1, (P + S) / P), ("scatter", S / A), (0, S / A)):
            g = sc.first_order_scatter(*case, detr, sigma, dist, job)
            assert rel(g, want) < 1e-6, job
        assert np.all(P / (P + S) < 1)

    def test_grouped_sampling_close_to_full(self, water_tables):
        detr, sigma, dist = water_tables
        case = cylinder_case(18.0)
        full = sc.first_order_scatter(*case, detr, sigma, dist, "scatter")
        got = sc.first_order_scatter(*case, detr, sigma, dist, "scatter", sampling="grouped")
        assert rel(got, full) < 0.05

    def test_leap_sampling_quirks(self, water_tables):
        # upstream's fast kernel visits voxels {a-1, a, a+1} around anchors a = 0, 3, ...
        # giving all of them the anchor's density: with num_z = 6, slice 5 is never
        # visited, slice 4 scatters with slice 3's density, slice 3 stands for 2, 3, 4
        detr, sigma, dist = water_tables
        geo, vol, rho, spec, e = cylinder_case(18.0)
        for k in (3, 4, 5):
            one = np.zeros_like(rho)
            one[k] = rho[k]
            leap_s = sc.first_order_scatter(geo, vol, one, spec, e, detr, sigma, dist,
                                            "scatter", sampling="leap")
            full = sc.first_order_scatter(geo, vol, one, spec, e, detr, sigma, dist, "scatter")
            assert np.all(full > 0)
            if k == 3:
                assert 2.0 < np.mean(leap_s / full) < 4.0
            else:
                assert np.all(leap_s == 0)

    def test_view_skipping_and_interpolation(self, water_tables):
        detr, sigma, dist = water_tables
        # 10 columns: views closer than 36 degrees to the last computed are skipped
        angles = np.deg2rad(np.arange(0.0, 100.0, 10.0))
        case = cylinder_case(18.0, angles=angles)
        geo = case[0].to_modular()
        assert geo.axially_aligned
        computed, phi = sc._views_to_compute(geo, True)
        assert np.flatnonzero(computed).tolist() == [0, 4, 8, 9]
        off = sc.first_order_scatter(*case, detr, sigma, dist, "scatter",
                                     interpolate_views=False).astype(np.float64)
        on = sc.first_order_scatter(*case, detr, sigma, dist, "scatter").astype(np.float64)
        assert np.array_equal(on[computed], off[computed])
        assert rel(on[1], 0.75 * off[0] + 0.25 * off[4]) < 1e-6   # ordinary linear weights
        assert rel(on, off) < 1e-2                                   # centred cylinder


# ------------------------------------------------------------------------ bad inputs
class TestBadInputs:
    def args(self):
        geo, vol, rho, spec, e = cylinder_case(10.0)
        sigma = np.ones((3, 70))
        dist = np.ones((2, 70, 181))
        return dict(geometry=geo, volume=vol, density=rho, spectrum=spec, energies=e,
                    detector_response=np.ones(70), sigma=sigma, distributions=dist)

    @pytest.mark.parametrize("change, match", [
        (dict(density=np.ones((6, 14))), "density must be a 3-D"),
        (dict(density=np.broadcast_to(1.0, (201, 200, 200))), "density: .* 200\\^3"),
        (dict(density=np.ones((6, 14, 13))), "density has shape"),
        (dict(density=np.full((6, 14, 14), np.nan)), "density must be finite"),
        (dict(spectrum=np.ones(21), energies=np.arange(50.0, 71.0)), "spectrum must be 1-D"),
        (dict(spectrum=np.ones(4)), "spectrum and energies must be the same size"),
        (dict(spectrum=np.zeros(3)), "spectrum must have at least one positive"),
        (dict(energies=np.array([30.0, 30.0, 70.0])), "energies must be increasing"),
        (dict(energies=np.array([0.0, 50.0, 70.0])), "energies must be > 0"),
        (dict(detector_response=np.ones(69)), "detector_response must have shape \\(70,\\)"),
        (dict(sigma=np.ones((2, 70))), "sigma must have shape \\(3, 70\\)"),
        (dict(distributions=np.ones((2, 70, 180))), "distributions must have shape"),
        (dict(volume=(6, 14, 14)), "volume must be a leap.geometry.Volume"),
    ])
    def test_errors_name_the_argument(self, change, match):
        kw = dict(self.args(), **change)
        with pytest.raises((ValueError, TypeError), match=match):
            sc.first_order_scatter(**kw)

    def test_geometry_errors(self):
        kw = self.args()
        det = leap.Detector(num_rows=257, num_cols=256, pixel_height=1.0, pixel_width=1.0)
        kw["geometry"] = leap.ConeBeam(detector=det, angles=[0.0], sod=200.0, sdd=400.0)
        with pytest.raises(ValueError, match="geometry: 257 x 256 detector pixels"):
            sc.first_order_scatter(**kw)
        det = leap.Detector(num_rows=6, num_cols=10, pixel_height=1.0, pixel_width=1.0)
        kw["geometry"] = leap.FanBeam(detector=det, angles=[0.0], sod=200.0, sdd=400.0)
        with pytest.raises((TypeError, ValueError), match="geometry"):
            sc.first_order_scatter(**kw)
        with pytest.raises(ValueError, match="job must be one of"):
            sc.first_order_scatter(**self.args(), job="correct")
        with pytest.raises(ValueError, match="sampling"):
            sc.first_order_scatter(**self.args(), sampling="fast")
        with pytest.raises(ValueError, match="density_units"):
            sc.first_order_scatter(**self.args(), density_units="kg/m^3")


# ---------------------------------------------------------------------- the facade
def facade(num_angles=4):
    from leap.compat.model import tomographicModels
    from leap.compat.physics_methods import PhysicsMixin

    if issubclass(tomographicModels, PhysicsMixin):
        m = tomographicModels()
    else:                               # until the facade class includes the mixin
        m = type("Model", (PhysicsMixin, tomographicModels), {})()
    m.set_conebeam(num_angles, 6, 10, 8.0, 8.0, 2.5, 4.5,
                   m.setAngleArray(num_angles, 360.0), 200.0, 400.0)
    m.set_volume(14, 14, 7, 3.0, 3.0)
    return m


class TestFacade:
    def test_scatter_model_is_the_leap_sampling(self, water_tables):
        detr, sigma, dist = water_tables
        m = facade()
        _, _, rho, spec, e = cylinder_case(18.0, 1e-3)
        f = np.concatenate([rho, rho[:1]]).astype(np.float32)       # 7 slices
        with pytest.raises(ValueError, match="modular"):
            m.scatter_model(f, spec, e, detr, sigma, dist, -1)
        m.convert_to_modularbeam()
        for job in (-1, 0, 1):
            g = m.scatter_model(f, spec, e, detr, sigma, dist, job)
            want = sc.first_order_scatter(m.core_geometry(), m.core_volume(), f, spec, e,
                                          detr, sigma, dist, job, density_units="g/mm^3",
                                          sampling="leap")
            assert g.dtype == np.float32 and g.shape == m.get_projection_dim()
            assert np.array_equal(g, want)
        assert np.all(g > 1.0)

    @pytest.mark.parametrize("index, value, match", [
        (0, np.ones((7, 14)), "f must be a 3-D"),
        (1, np.ones(21), "source must be 1-D"),
        (2, np.array([30.0, 50.0]), "source and energies must be the same size"),
        (3, np.ones(69), "detector must have shape"),
        (5, np.ones((2, 70, 90)), "scatterDist must have shape"),
        (6, "x", "jobType must be one of"),
    ])
    def test_errors_use_leap_names(self, water_tables, index, value, match):
        detr, sigma, dist = water_tables
        m = facade()
        m.convert_to_modularbeam()
        args = [np.full((7, 14, 14), 1e-3), np.ones(3), np.array([30.0, 50.0, 70.0]), detr,
                sigma, dist, -1]
        args[index] = value
        with pytest.raises(ValueError, match=match):
            m.scatter_model(*args)

    def test_torch_in_torch_out(self, water_tables):
        torch = pytest.importorskip("torch")
        detr, sigma, dist = water_tables
        m = facade(2)
        m.convert_to_modularbeam()
        f = np.full((7, 14, 14), 1e-3, dtype=np.float32)
        spec, e = np.ones(3), np.array([30.0, 50.0, 70.0])
        g = m.scatter_model(torch.from_numpy(f), torch.from_numpy(spec), e, detr, sigma, dist)
        assert isinstance(g, torch.Tensor) and g.dtype == torch.float32
        assert np.array_equal(g.numpy(), m.scatter_model(f, spec, e, detr, sigma, dist))


# ---------------------------------------------------------------- the CUDA kernels
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_cuda_kernels_under_simulator():
    run_sim_tests(__file__, timeout=600)


class TestSimScatter:
    __test__ = SIM      # collected only in the simulator subprocess

    @pytest.mark.parametrize("sampling", ["full", "grouped", "leap"])
    def test_cuda_equals_cpu(self, sampling):
        mb, vol, f, spec, e, detr, sigma, dist = tiny_case(2)
        kw = dict(density_units="g/mm^3", sampling=sampling)
        cpu = sc.scatter_components(mb, vol, f, spec, e, detr, sigma, dist, **kw)
        gpu = sc.scatter_components(mb, vol, f, spec, e, detr, sigma, dist, backend="cuda",
                                    **kw)
        for key in cpu:
            assert rel(gpu[key], cpu[key]) < 1e-12, key
