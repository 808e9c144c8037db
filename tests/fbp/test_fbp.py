"""Filtered back-projection: agreement with LEAP, amplitude, weights, filters."""
import math
import warnings

import numpy as np
import pytest

import leap
from conftest import REFERENCE_CASES, REFERENCE_DIR, rel_l2
from leap.reconstruction.fbp import fbp, helical_slice_weights
from leap.reconstruction.filters import fft_length, filter_rows, ramp_response
from leap.reconstruction.weights import parker_weights, redundancy
from leapctype import tomographicModels

MU = 0.02


def _load(case):
    leapct = tomographicModels()
    leapct.load_param(str(REFERENCE_DIR / f"{case}.param"))
    return leapct, dict(np.load(REFERENCE_DIR / f"{case}.npz"))


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_fbp_matches_upstream(case):
    leapct, d = _load(case)
    g = d["Pf"].copy()
    f = leapct.FBP(g)
    np.testing.assert_array_equal(g, d["Pf"])           # g untouched
    inside = d["FBP_Pf"] != 0                            # LEAP's field of view
    assert rel_l2(f[inside], d["FBP_Pf"][inside]) <= 1e-3
    assert np.all(f[~inside] == 0)


@pytest.mark.parametrize("case", ["cone", "cone_curved"])
def test_fbp_quality_no_worse_than_upstream(case):
    leapct, d = _load(case)
    ours = rel_l2(leapct.FBP(d["Pf"].copy()), d["f"])
    theirs = rel_l2(d["FBP_Pf"], d["f"])
    assert ours <= theirs * 1.001


def _scan(kind, scale, *, short=False, offset=False, pitch=0.0, curved=False):
    leapct = tomographicModels()
    nv, nc, nr = 120, 64, 16
    rng = 360.0
    if short:
        rng = 180.0 + 2 * math.degrees(math.atan(0.5 * nc / 1000.0)) + 10.0
    cc = 0.5 * (nc - 1) - (16 if offset else 0)
    if kind == "parallel":
        leapct.set_parallelbeam(nv, 4, nc, 1.0, 1.0, 1.5, cc, leapct.setAngleArray(nv, rng))
    elif kind == "fan":
        leapct.set_fanbeam(nv, 4, nc, 1.0, 1.0, 1.5, cc, leapct.setAngleArray(nv, rng), 500.0, 1000.0)
    else:
        if pitch:
            nv, rng = 3 * nv, 3 * 360.0
        leapct.set_conebeam(nv, nr, nc, 1.0, 1.0, 0.5 * (nr - 1), cc, leapct.setAngleArray(nv, rng),
                            500.0, 1000.0)
        if curved:
            leapct.set_curvedDetector()
        if pitch:
            leapct.set_normalizedHelicalPitch(pitch)
    leapct.set_offsetScan(offset)
    leapct.set_default_volume(scale)
    return leapct


AMPLITUDE_CASES = {
    "parallel": dict(kind="parallel"),
    "fan": dict(kind="fan"),
    "cone": dict(kind="cone"),
    "cone_curved": dict(kind="cone", curved=True),
    "fan_short": dict(kind="fan", short=True),
    "cone_short": dict(kind="cone", short=True),
    "fan_offset": dict(kind="fan", offset=True),
    "cone_offset": dict(kind="cone", offset=True),
    "helical_0.5": dict(kind="cone", pitch=0.5),
    "helical_1.0": dict(kind="cone", pitch=1.0),
}


# the fine grids (8× the voxels) run in the full suite only
@pytest.mark.parametrize("scale", [pytest.param(0.5, marks=pytest.mark.slow), 1.0, 2.0])
@pytest.mark.parametrize("name", AMPLITUDE_CASES)
def test_uniform_cylinder_reconstructs_to_mu(name, scale):
    leapct = _scan(scale=scale, **AMPLITUDE_CASES[name])
    # A uniform cylinder (radius 12 mm, longer than the scanned region), exact projections.
    leapct.addObject(None, 4, [0.0, 0.0, 0.0], [12.0, 12.0, 500.0], MU)
    g = leapct.rayTrace()
    with warnings.catch_warnings():
        warnings.simplefilter("error")           # no "not a short scan" fallback
        f = leapct.FBP(g)
    x, z = leapct.x_samples(), leapct.z_samples()
    X, Y = np.meshgrid(x, x)
    region = (X**2 + Y**2) < 6.0**2
    slices = np.abs(z) <= 3.0
    if not slices.any():
        slices[len(z) // 2] = True
    mean = f[slices][:, region].mean()
    assert mean == pytest.approx(MU, rel=5e-3)


def test_offset_scan_needs_its_weighting():
    """Without set_offsetScan an offset detector truncates the object: the weights matter."""
    leapct = _scan("fan", 1.0, offset=True)
    leapct.addObject(None, 4, [0.0, 0.0, 0.0], [12.0, 12.0, 500.0], MU)
    g = leapct.rayTrace()
    good = leapct.FBP(g)
    leapct.set_offsetScan(False)
    bad = leapct.FBP(g)
    c = good.shape[1] // 2
    assert good[0, c, c] == pytest.approx(MU, rel=5e-3)
    assert abs(bad[0, c, c] / MU - 1) > 0.05


def test_short_scan_warns_when_too_short():
    leapct = tomographicModels()
    leapct.set_fanbeam(60, 1, 64, 1.0, 1.0, 0.0, 31.5, leapct.setAngleArray(60, 150.0), 500.0, 1000.0)
    leapct.set_default_volume()
    with pytest.warns(RuntimeWarning, match="short scan"):
        leapct.FBP(leapct.allocate_projections())


def test_parker_weights_sum_to_one_on_conjugate_rays():
    det = leap.Detector(num_rows=1, num_cols=41, pixel_height=1.0, pixel_width=1.0, center_row=0.0)
    fan_half = math.atan(20.0 / 1000.0)
    n = 400
    rng = math.pi + 2 * fan_half + 0.2
    angles = np.arange(n) * rng / n
    geo = leap.FanBeam(detector=det, angles=angles, sod=500.0, sdd=1000.0)
    w = parker_weights(geo)[:, 0, :]
    gam = np.arctan((np.arange(41) - 20.0) / 1000.0)
    # Ray (β, γ) and its conjugate (β + π − 2γ, −γ) measure the same line (γ = atan u).
    for i in range(0, n, 17):
        for j in range(41):
            beta2 = angles[i] - angles[0] + math.pi - 2 * gam[j]
            if beta2 > angles[-1] - angles[0] - 1e-9:
                continue
            k = beta2 / (rng / n)
            k0 = int(k)
            w2 = (1 - (k - k0)) * w[k0, 40 - j] + (k - k0) * w[k0 + 1, 40 - j]
            assert w[i, j] + w2 == pytest.approx(1.0, abs=0.02)


def _redundancy_all_pairs(n, step):
    k = np.arange(n)
    d = (k[None, :] - k[:, None]) * step
    off = np.abs(np.arctan2(np.sin(d), np.cos(d)))
    return np.sum(np.where(off < abs(step), 1.0 - off / abs(step), 0.0), axis=1)


@pytest.mark.parametrize("n, turns", [(180, 1.0), (181, 1.0), (720, -1.0), (100, 1.005),
                                      (999, 2.37), (2000, -5.5), (3, 1.2), (2, 1.3),
                                      (50, 17.3)])
def test_redundancy_matches_all_pairs(n, turns):
    """The sorted-neighbour redundancy count is the all-pairs one (1 per view for whole
    turns, more where a partial turn overlaps), for any step sign, steps of half a turn
    or more, and windows that wrap past 0 and 2π."""
    step = 2 * math.pi * turns / n
    r = redundancy(n, step)
    np.testing.assert_allclose(r, _redundancy_all_pairs(n, step), rtol=0, atol=1e-12)
    if n == 180:
        np.testing.assert_allclose(r, 1.0, atol=1e-12)


@pytest.mark.parametrize("step", [0.0, float("nan"), float("inf")])
def test_redundancy_rejects_steps_without_a_scan(step):
    with pytest.raises(ValueError, match="angular step"):
        redundancy(10, step)
    for n in (0, -3, 2.5):
        with pytest.raises(ValueError, match="number of views"):
            redundancy(n, 0.1)


def test_helical_slice_weights_partition_of_unity():
    det = leap.Detector(num_rows=16, num_cols=32, pixel_height=1.0, pixel_width=1.0)
    n = 1080
    angles = np.arange(n) * 6 * np.pi / n
    geo = leap.ConeBeam(detector=det, angles=angles, sod=500.0, sdd=1000.0, helical_pitch=0.6)
    vol = leap.Volume(num_x=4, num_y=4, num_z=9, voxel_width=0.5, voxel_height=0.5)
    w = helical_slice_weights(geo, vol)
    step = angles[1] - angles[0]
    k = vol.num_z // 2
    # Views π apart (180 steps) share lines: their weights add to 1 (middle slice; the
    # discrete renormalisation to Σ w·Δψ = π moves them by < 1e-3).
    centre = int(np.argmax(w[:, k]))
    for a in range(centre - 180, centre, 7):
        assert w[a, k] + w[a + 180, k] == pytest.approx(1.0, abs=1e-3)
    assert np.sum(w[:, k]) * step == pytest.approx(math.pi, rel=1e-6)


def test_ramlak_response_is_the_ramp():
    H = ramp_response(100, 1.0, 12)
    assert fft_length(100) == 256
    omega = np.linspace(0, np.pi, H.size)
    # The truncated kernel's response is |ω| up to O(1/N) at DC.
    assert np.max(np.abs(H[1:] - omega[1:])) < 0.02
    assert H[-1] == pytest.approx(np.pi, rel=2e-3)


def test_lowpass_halves_the_response_at_pi_over_W():
    W = 4.0
    H0 = ramp_response(64, 1.0, 12)
    H = ramp_response(64, 1.0, 12, lowpass=W)
    n = fft_length(64)
    i = int(round(n / (2 * W)))                    # ω = π/W
    assert H[i] / H0[i] == pytest.approx(0.5, rel=1e-3)
    assert H[-1] == pytest.approx(0.0, abs=1e-6)


def test_filtering_is_linear_convolution():
    """No wrap-around: a row's filtered value depends only on that row's samples."""
    H = ramp_response(32, 1.0, 2)
    x = np.zeros((1, 32), np.float32)
    x[0, 0] = 1.0
    filter_rows(x, H)
    k = np.arange(32)
    expected = (1.0 / (np.pi * (0.25 - k**2)))
    np.testing.assert_allclose(x[0], expected, rtol=1e-5, atol=1e-6)


def test_fbp_inplace_and_output_array():
    leapct, d = _load("fan2d")
    g = d["Pf"].copy()
    f = leapct.allocate_volume()
    out = leapct.FBP(g, f)
    assert out is f
    np.testing.assert_array_equal(g, d["Pf"])
    q = leapct.filterProjections(g.copy())
    f2 = leapct.weightedBackproject(q, leapct.allocate_volume())
    np.testing.assert_allclose(f2, f, rtol=1e-4, atol=1e-6)


def test_fbp_scalar_matches_formula():
    leapct, _ = _load("cone")
    T = 2 * np.pi / 72
    M = 0.5
    expected = T * 1.0 * M * 1.0 * M / (2 * np.pi * 0.5**2 * 0.5)
    assert leapct.get_FBPscalar() == pytest.approx(expected, rel=1e-6)


def test_fbp_bad_input():
    leapct, d = _load("cone")
    with pytest.raises(TypeError, match="float32"):
        leapct.FBP(d["Pf"].astype(np.float64))
    with pytest.raises(ValueError, match="shape"):
        leapct.FBP(d["Pf"][:-1].copy())
    with pytest.raises(ValueError, match="order"):
        leapct.set_rampFilter(13)
    with pytest.raises(ValueError):
        leapct.set_diameterFOV(-1.0)
    with pytest.raises(ValueError, match="two views"):
        fbp(leap.ParallelBeam(detector=leap.Detector(num_rows=1, num_cols=8, pixel_height=1.0,
                                                     pixel_width=1.0), angles=[0.0]),
            leap.Volume(num_x=4, num_y=4, num_z=1, voxel_width=1.0, voxel_height=1.0),
            np.zeros((1, 1, 8), np.float32))


def test_diameter_fov_masks_the_reconstruction():
    leapct, d = _load("cone")
    leapct.set_diameterFOV(20.0)
    f = leapct.FBP(d["Pf"].copy())
    x = leapct.x_samples()
    X, Y = np.meshgrid(x, x)
    assert np.all(f[:, X**2 + Y**2 > 10.0**2] == 0)
    assert np.any(f[:, X**2 + Y**2 < 9.0**2] != 0)


@pytest.mark.parametrize("pitch", [0.5, 1.0])
def test_helical_fbp_of_a_short_cylinder(pitch):
    """A z-limited object: the helix must place each view's source at its own height."""
    leapct = tomographicModels()
    nv = 360
    leapct.set_conebeam(nv, 16, 64, 1.0, 1.0, 7.5, 31.5, leapct.setAngleArray(nv, 3 * 360.0),
                        500.0, 1000.0)
    leapct.set_normalizedHelicalPitch(pitch)
    leapct.set_default_volume()
    leapct.addObject(None, 4, [0.0, 0.0, 0.0], [10.0, 10.0, 3.0], MU)
    f = leapct.FBP(leapct.rayTrace())
    z, x = leapct.z_samples(), leapct.x_samples()
    X, Y = np.meshgrid(x, x)
    core = X**2 + Y**2 < 5.0**2
    inside = f[np.abs(z) < 1.5][:, core].mean()
    outside = f[np.abs(z) > 6.0][:, core]
    assert inside == pytest.approx(MU, rel=5e-3)
    assert np.abs(outside).max() < 0.05 * MU


def test_sliced_helical_geometry_stays_on_the_helix():
    det = leap.Detector(num_rows=4, num_cols=8, pixel_height=1.0, pixel_width=1.0)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 4 * np.pi, 50), sod=100.0, sdd=200.0,
                        helical_pitch=2.0)
    np.testing.assert_allclose(geo[7].source_z(), geo.source_z()[7:8])
    np.testing.assert_allclose(geo[10:20].source_z(), geo.source_z()[10:20])


from leap.reconstruction.fbp import fbp_adjoint  # noqa: E402

_DET = leap.Detector(num_rows=8, num_cols=24, pixel_height=1.0, pixel_width=1.0)
_VOL = leap.Volume(num_x=12, num_y=12, num_z=6, voxel_width=0.6, voxel_height=0.6)
ADJOINT_CASES = {
    "parallel": (leap.ParallelBeam(detector=_DET, angles=np.linspace(0, np.pi, 20, endpoint=False)), {}),
    "fan_tau": (leap.FanBeam(detector=_DET, angles=np.linspace(0, 2 * np.pi, 30, endpoint=False),
                             sod=100.0, sdd=200.0, tau=1.0), {}),
    "fan_offset": (leap.FanBeam(detector=_DET.with_changes(center_col=7.0),
                                angles=np.linspace(0, 2 * np.pi, 30, endpoint=False), sod=100.0,
                                sdd=200.0), dict(offset_scan=True)),
    "cone_short_truncated": (leap.ConeBeam(detector=_DET, angles=np.linspace(0, 1.3 * np.pi, 30),
                                           sod=100.0, sdd=200.0), dict(truncated_scan=True)),
    "cone_curved_lowpass": (leap.ConeBeam(detector=_DET.with_changes(curved=True),
                                          angles=np.linspace(0, 2 * np.pi, 30, endpoint=False),
                                          sod=100.0, sdd=200.0), dict(lowpass=3.0, ramp_filter=12)),
    "helical": (leap.ConeBeam(detector=_DET, angles=np.linspace(0, 6 * np.pi, 90), sod=100.0,
                              sdd=200.0, helical_pitch=0.3), {}),
    "modular": (leap.ConeBeam(detector=_DET, angles=np.linspace(0, 2 * np.pi, 30, endpoint=False),
                              sod=100.0, sdd=200.0).to_modular(), {}),
}


@pytest.mark.parametrize("name", ADJOINT_CASES)
def test_fbp_adjoint_is_exact(name, rng):
    geo, kw = ADJOINT_CASES[name]
    f = rng.standard_normal(_VOL.shape).astype(np.float32)
    g = rng.standard_normal(geo.projection_shape).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        A = fbp(geo, _VOL, g, **kw).astype(np.float64)
        At = fbp_adjoint(geo, _VOL, f, **kw).astype(np.float64)
    mismatch = abs(np.vdot(A, f) - np.vdot(g, At)) / (np.linalg.norm(A) * np.linalg.norm(f))
    assert mismatch < 1e-6


def test_weighted_projector_pairs_are_adjoint(rng):
    geo_h, _ = ADJOINT_CASES["helical"]
    geo_f, _ = ADJOINT_CASES["fan_tau"]
    sw = rng.random((geo_h.num_angles, _VOL.num_z))
    for geo, kw in ((geo_h, dict(slice_weights=sw)), (geo_f, dict(fan_distance_weight=True))):
        f = rng.standard_normal(_VOL.shape).astype(np.float32)
        g = rng.standard_normal(geo.projection_shape).astype(np.float32)
        Pf = leap.project(geo, _VOL, f, **kw).astype(np.float64)
        Bg = leap.backproject(geo, _VOL, g, **kw).astype(np.float64)
        assert abs(np.vdot(Pf, g) - np.vdot(f, Bg)) / (np.linalg.norm(Pf) * np.linalg.norm(g)) < 1e-6
    with pytest.raises(ValueError, match="fan beams only"):
        leap.project(geo_h, _VOL, f, fan_distance_weight=True)
    with pytest.raises(ValueError, match="shape"):
        leap.backproject(geo_h, _VOL, np.zeros(geo_h.projection_shape, np.float32),
                         slice_weights=sw[:, :2])


def test_facade_fbp_adjoint():
    leapct, d = _load("fan2d")
    out = leapct.allocate_projections()
    g = leapct.FBP_adjoint(out, d["f"])
    assert g is out and g.shape == d["Pf"].shape
    # The transpose of the facade's FBP: <FBP(h), f> = <h, FBPᵀ(f)> for any h.
    h = np.random.default_rng(3).standard_normal(g.shape).astype(np.float32)
    lhs = np.vdot(leapct.FBP(h.copy()).astype(np.float64), d["f"].astype(np.float64))
    rhs = np.vdot(h.astype(np.float64), g.astype(np.float64))
    assert abs(lhs - rhs) <= 1e-5 * np.linalg.norm(h) * np.linalg.norm(g)
    assert abs(rhs) > 1e-3 * np.linalg.norm(h) * np.linalg.norm(g)     # not a trivial 0 = 0
