"""Attenuated Radon transform and rotationally symmetric objects (leap.reconstruction.special_models)."""
import numpy as np
import pytest

from leap.compat.model import tomographicModels


def _adjoint_error(ct, seed=0):
    rng = np.random.default_rng(seed)
    f = rng.random(ct.get_volume_dim()).astype(np.float32)
    g = rng.random(ct.get_projection_dim()).astype(np.float32)
    Pf = ct.project(ct.allocate_projections(), f)
    Ptg = ct.backproject(g, ct.allocate_volume())
    a, b = np.vdot(Pf.astype(np.float64), g), np.vdot(f.astype(np.float64), Ptg)
    return abs(a - b) / abs(a)


# ------------------------------------------------------------------ symmetric objects
def _symmetric(kind, beta=0.0, nc=48, nr=48):
    ct = tomographicModels()
    if kind == "parallel":
        ct.set_parallelbeam(1, nr, nc, 1.0, 1.0, 0.5 * (nr - 1), 0.5 * (nc - 1), np.array([90.0]))
    else:
        ct.set_conebeam(1, nr, nc, 1.0, 1.0, 0.5 * (nr - 1), 0.5 * (nc - 1), np.array([90.0]), 60, 120)
    ct.set_axisOfSymmetry(beta)
    ct.set_default_volume()
    return ct


def _ordinary_twin(ct):
    """The same scan with an ordinary (numY, numY) volume matching synthesize_symmetry."""
    ct2 = tomographicModels()
    ct2.copy_parameters(ct)
    ct2.clear_axisOfSymmetry()
    v = ct.core_volume()
    ct2.set_volume(v.num_y, v.num_y, v.num_z, v.voxel_width, v.voxel_height, 0, 0, ct.get_offsetZ())
    return ct2


def _ball(ct, radius, zc=0.0, rc=0.0):
    y, z = ct.y_samples(), ct.z_samples()
    f = (((np.abs(y[None, :]) - rc) ** 2 + (z[:, None] - zc) ** 2) < radius ** 2)
    return np.ascontiguousarray(f.astype(np.float32)[:, :, None])


@pytest.mark.parametrize("kind", ["parallel", "cone"])
@pytest.mark.parametrize("beta", [0.0, 12.0])
def test_symmetric_adjoint(kind, beta):
    ct = _symmetric(kind, beta, nc=32, nr=24)
    assert ct.get_volume_dim() == (ct.get_numZ(), 32, 1)
    assert _adjoint_error(ct) < 1e-5


@pytest.mark.parametrize("kind,beta,tol", [("parallel", 0.0, 0.02), ("cone", 0.0, 0.02),
                                           ("parallel", 10.0, 0.03), ("cone", 10.0, 0.05)])
def test_symmetric_matches_synthesized_volume(kind, beta, tol):
    ct = _symmetric(kind, beta)
    fr = _ball(ct, 2.5, zc=5.0, rc=4.0)        # a torus, inside the volume
    g1 = ct.project(ct.allocate_projections(), fr)
    ct2 = _ordinary_twin(ct)
    f3 = ct.synthesize_symmetry(fr)
    assert f3.shape == (ct.get_numZ(), ct.get_numY(), ct.get_numY())
    g2 = ct2.project(ct2.allocate_projections(), f3)
    assert np.linalg.norm(g1 - g2) / np.linalg.norm(g2) < tol


@pytest.mark.parametrize("kind", ["parallel", "cone"])
def test_symmetric_fbp_recovers_ball(kind):
    ct = _symmetric(kind)
    fr = _ball(ct, 8.0)
    rec = ct.FBP(ct.project(ct.allocate_projections(), fr))
    inner = _ball(ct, 6.0) > 0
    assert abs(rec[inner].mean() - 1.0) < 0.03


def test_symmetric_state_and_errors():
    ct = tomographicModels()
    assert ct.get_axisOfSymmetry() == 90.0
    ct.set_parallelbeam(1, 8, 16, 1.0, 1.0, 3.5, 7.5, np.array([0.0]))
    with pytest.raises(ValueError, match="30 degrees"):
        ct.set_axisOfSymmetry(45.0)
    ct.set_axisOfSymmetry(5.0)
    assert ct.get_axisOfSymmetry() == 5.0
    with pytest.raises(ValueError, match="numX = 1"):   # volume set before the axis
        ct.set_volume(16, 16, 8, 1.0, 1.0)
        ct.project(ct.allocate_projections(), ct.allocate_volume())
    ct.set_default_volume()
    assert ct.get_volume_dim() == (8, 16, 1)
    with pytest.raises(ValueError, match=r"shape \(8, 16, 1\)"):
        ct.synthesize_symmetry(np.zeros((8, 15, 1), np.float32))
    ct.set_parallelbeam(3, 8, 16, 1.0, 1.0, 3.5, 7.5, 180.0)
    with pytest.raises(ValueError, match="exactly one projection angle"):
        ct.project(ct.allocate_projections(), ct.allocate_volume())
    ct.clear_axisOfSymmetry()
    assert ct.get_axisOfSymmetry() == 90.0
    with pytest.raises(RuntimeError, match="set_axisOfSymmetry"):
        ct.synthesize_symmetry(np.zeros((8, 16, 1), np.float32))


# ------------------------------------------------------- attenuated Radon transform
def _parallel(na=90, nc=64, rng=360.0):
    ct = tomographicModels()
    ct.set_parallelbeam(na, 1, nc, 1.0, 1.0, 0.0, 0.5 * (nc - 1), ct.setAngleArray(na, rng))
    ct.set_default_volume()
    return ct


def _disk(ct, r):
    x, y, _ = ct.voxelSamples()
    return ((x * x + y * y) < r * r).astype(np.float32)


@pytest.mark.parametrize("mode", ["cylinder", "voxelized"])
def test_attenuated_adjoint(mode):
    ct = _parallel(na=40, nc=32)
    if mode == "cylinder":
        ct.set_cylindircalAttenuationMap(0.03, 14.0)
    else:
        rng = np.random.default_rng(3)
        ct.set_attenuationMap(0.03 * rng.random(ct.get_volume_dim()).astype(np.float32))
    assert ct.muSpecified()
    assert _adjoint_error(ct) < 1e-5


@pytest.mark.parametrize("mode", ["cylinder", "voxelized"])
def test_attenuated_projection_vs_line_integral(mode):
    """A smooth blob in uniform μ = c inside radius R: compare with a fine quadrature of
    ∫ f(sθ⊥ + tθ) exp(−c(√(R²−s²) − t)) dt (θ = (cos φ, sin φ), φ = ψ − 90°)."""
    ct = _parallel()
    c, R = 0.02, 30.0
    if mode == "cylinder":
        ct.set_cylindircalAttenuationMap(c, R)
    else:
        ct.set_attenuationMap(c * _disk(ct, R))
    x, y, _ = ct.voxelSamples()
    blob = lambda x, y: np.exp(-((x - 5.0) ** 2 + (y + 3.0) ** 2) / (2 * 6.0 ** 2))  # noqa: E731
    g = ct.project(ct.allocate_projections(), blob(x, y).astype(np.float32))
    s = np.arange(64) - 31.5
    for view in (0, 17, 45, 70):
        phi = np.deg2rad(ct.get_angles()[view]) - 0.5 * np.pi
        ref = np.zeros(64)
        for i, si in enumerate(s):
            if abs(si) >= R:
                continue
            h = np.sqrt(R * R - si * si)
            t = np.linspace(-h, h, 4001)
            px, py = -si * np.sin(phi) + t * np.cos(phi), si * np.cos(phi) + t * np.sin(phi)
            ref[i] = np.trapezoid(blob(px, py) * np.exp(-c * (h - t)), t)
        err = np.abs(g[view, 0] - ref).max() / ref.max()
        assert err < 0.01, (view, err)


def test_zero_mu_is_ordinary_projector():
    ct = _parallel(na=30, nc=32)
    f = np.random.default_rng(0).random(ct.get_volume_dim()).astype(np.float32)
    g0 = ct.project(ct.allocate_projections(), f)
    ct.set_attenuationMap(np.zeros(ct.get_volume_dim(), np.float32))
    g1 = ct.project(ct.allocate_projections(), f)
    np.testing.assert_allclose(g1, g0, rtol=1e-6, atol=1e-6)
    b0 = ct.backproject(g0, ct.allocate_volume())
    ct.clear_attenuationMap()
    assert not ct.muSpecified()
    np.testing.assert_allclose(b0, ct.backproject(g0, ct.allocate_volume()), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,tol", [("cylinder", 0.02), ("voxelized", 0.05)])
def test_attenuated_fbp_recovers_disk(mode, tol):
    ct = _parallel()
    if mode == "cylinder":
        ct.set_cylindircalAttenuationMap(0.02, 30.0)
    else:
        ct.set_attenuationMap(0.02 * _disk(ct, 28.0))
    rec = ct.FBP(ct.project(ct.allocate_projections(), _disk(ct, 20.0)))
    inner = _disk(ct, 15.0) > 0
    assert abs(rec[inner].mean() - 1.0) < tol


def test_attenuated_state_and_errors():
    ct = _parallel(na=20, nc=16)
    assert not ct.muSpecified()
    assert ct.set_cylindircalAttenuationMap(0.0, 10.0) is False and not ct.muSpecified()
    ct.set_cylindircalAttenuationMap(0.01, 10.0)
    ct.flipAttenuationMapSign()
    assert ct._mu_coeff == -0.01
    mu = np.full(ct.get_volume_dim(), 0.01, np.float32)
    ct.set_attenuationMap(mu)
    ct.flipAttenuationMapSign()
    assert mu[0, 0, 0] == np.float32(-0.01)       # in place, as LEAP
    with pytest.raises(ValueError, match="volume's shape"):
        ct.set_attenuationMap(np.zeros((1, 3, 3), np.float32))
    ct2 = _parallel(na=20, nc=16, rng=180.0)
    ct2.set_cylindircalAttenuationMap(0.01, 10.0)
    with pytest.raises(ValueError, match="360 degrees"):
        ct2.FBP(ct2.allocate_projections())
    ct3 = tomographicModels()
    ct3.set_fanbeam(20, 1, 16, 1.0, 1.0, 0.0, 7.5, ct3.setAngleArray(20, 360.0), 100, 200)
    ct3.set_default_volume()
    ct3.set_cylindircalAttenuationMap(0.01, 10.0)
    with pytest.raises(ValueError, match="parallel-beam"):
        ct3.project(ct3.allocate_projections(), ct3.allocate_volume())
    ct4 = _symmetric("parallel", nc=16, nr=8)
    ct4.set_cylindircalAttenuationMap(0.01, 5.0)
    with pytest.raises(ValueError, match="both set"):
        ct4.project(ct4.allocate_projections(), ct4.allocate_volume())


@pytest.mark.parametrize("model", ["attenuated", "symmetric"])
def test_iterative_methods_use_the_special_model(model, tmp_path):
    if model == "attenuated":
        ct = _parallel(na=30, nc=32)
        ct.set_cylindircalAttenuationMap(0.02, 15.0)
        f = _disk(ct, 10.0)
    else:
        ct = _symmetric("cone", nc=32, nr=32)
        f = _ball(ct, 6.0)
    g = ct.project(ct.allocate_projections(), f)
    ones = np.ones_like(g)
    np.testing.assert_allclose(ct.sensitivity(), ct.backproject(ones, ct.allocate_volume()),
                               rtol=1e-5, atol=1e-6)
    rec = ct.allocate_volume()
    ct.SART(g, rec, 10, progress=False)
    res = ct.project(ct.allocate_projections(), rec) - g
    assert np.linalg.norm(res) < 0.3 * np.linalg.norm(g)
    ct.save_param(str(tmp_path / "p.txt"))
    other = tomographicModels()
    other.load_param(str(tmp_path / "p.txt"))
    assert other.get_volume_dim() == ct.get_volume_dim()
    # The special model travels with the file (LEAP writes axisOfSymmetry / muCoeff, muRadius).
    assert other.get_axisOfSymmetry() == ct.get_axisOfSymmetry()
    assert other.muSpecified() == ct.muSpecified()
    np.testing.assert_allclose(other.project(other.allocate_projections(), f), g, rtol=1e-6)


def test_cuda_input_is_refused():
    from leap import special_models as sm

    class FakeCuda:
        __cuda_array_interface__ = {}
    ct = _parallel(na=10, nc=16)
    with pytest.raises(NotImplementedError, match="CPU only"):
        sm.attenuated_project(ct.core_geometry(), ct.core_volume(), FakeCuda(),
                              sm.AttenuationMap(coeff=0.01, radius=5.0))
