"""CTSystem: the one value under every front end; its operator, subsets and settings."""
import numpy as np
import pytest
import scipy.sparse.linalg as spla
from hypothesis import given, settings

from conftest import dot_test, rel_l2
from leap import ConeBeam, Detector, ParallelBeam, Volume
from leap.reconstruction.fbp import fbp
from leap.operators import backproject, project
from leap.reconstruction.special_models import AttenuationMap
from leap.system import Attenuated, CTSystem, FBPOptions, Symmetric
from strategies import any_case


def _cone(num_angles=24, rows=6, cols=20, pitch=0.0, span=2 * np.pi):
    det = Detector(num_rows=rows, num_cols=cols, pixel_height=1.0, pixel_width=1.0)
    return ConeBeam(detector=det, angles=np.linspace(0, span, num_angles, endpoint=False),
                    sod=100.0, sdd=200.0, helical_pitch=pitch)


def _system(**kw):
    geo = kw.pop("geometry", None) or _cone()
    vol = kw.pop("volume", None) or Volume(num_x=12, num_y=12, num_z=5, voxel_width=0.6,
                                          voxel_height=0.6)
    return CTSystem(geometry=geo, volume=vol, **kw)


# ------------------------------------------------------------------- the maps
def test_plain_system_matches_the_core_functions(rng):
    s = _system()
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    assert np.array_equal(s.project(f), project(s.geometry, s.volume, f))
    assert np.array_equal(s.backproject(g), backproject(s.geometry, s.volume, g))
    assert np.array_equal(s.fbp(g), fbp(s.geometry, s.volume, g))


def test_field_of_view_and_mask_reach_every_map(rng):
    f = rng.random((5, 12, 12), dtype=np.float32)
    g = rng.random((24, 6, 20), dtype=np.float32)
    base = _system()
    fov = base.with_changes(fov_radius=2.0)
    assert rel_l2(fov.project(f), base.project(f)) > 0.1
    assert np.array_equal(fov.project(f), project(base.geometry, base.volume, f, fov_radius=2.0))
    mask = np.zeros((5, 12, 12), np.float32)
    mask[:, 3:9, 3:9] = 1
    m = base.with_changes(mask=mask)
    assert np.array_equal(m.project(f), base.project(f * mask))
    b = m.backproject(g)
    assert np.all(b[mask == 0] == 0) and np.array_equal(b, base.backproject(g) * mask)


@settings(deadline=None, max_examples=25)
@given(case=any_case)
def test_operator_is_matched_with_fov_and_mask(case):
    geo, vol = case
    rng = np.random.default_rng(0)
    mask = (rng.random(vol.shape) > 0.3).astype(np.float32)
    s = CTSystem(geometry=geo, volume=vol, mask=mask)
    op = s.operator()
    err, _ = dot_test(op.forward, op.adjoint, op.domain_shape, op.range_shape, rng)
    assert err < 1e-5
    err, _ = dot_test(op.T.forward, op.T.adjoint, op.T.domain_shape, op.T.range_shape, rng)
    assert err < 1e-5


def test_operator_shapes_transpose_and_scipy_lsqr(rng):
    geo = ParallelBeam(detector=Detector(num_rows=2, num_cols=16, pixel_height=1.0, pixel_width=1.0),
                       angles=np.linspace(0, np.pi, 30, endpoint=False))
    vol = Volume(num_x=12, num_y=12, num_z=2, voxel_width=1.0, voxel_height=1.0)
    op = CTSystem(geometry=geo, volume=vol).operator()
    assert op.shape == (30 * 2 * 16, 2 * 12 * 12)
    assert op.T.shape == op.shape[::-1] and op.T.T.domain_shape == op.domain_shape
    assert op.num_views == 30
    truth = np.zeros(vol.shape, np.float32)
    truth[:, 3:8, 4:9] = 1.0
    b = op.forward(truth).ravel()
    x = spla.lsqr(op, b, atol=1e-8, btol=1e-8, iter_lim=300)[0]
    assert rel_l2(op.matvec(x), b) < 1e-3
    assert rel_l2(x.reshape(vol.shape), truth) < 0.05
    A = spla.aslinearoperator(op)
    y = rng.random(op.shape[0])
    assert np.allclose(A.rmatvec(y), op.adjoint(y.reshape(op.range_shape).astype(np.float32)).ravel(),
                       rtol=1e-6, atol=1e-6)


def test_operator_matrix_protocol(rng):
    """``op @ x`` and ``op(x)`` on flat, column-stacked and shaped arrays, ``x @ op``,
    ``dtype``, ``aslinearoperator`` and CG on the normal equations, on the facade's
    system (issue 31, item 5: ``op @ x`` raised)."""
    from leap.compat.model import tomographicModels
    ct = tomographicModels()
    ct.set_conebeam(20, 6, 16, 1.0, 1.0, 2.5, 7.5, ct.setAngleArray(20, 360.0), 100.0, 200.0)
    ct.set_default_volume()
    op = ct.system.operator()
    assert op.dtype == np.float32 and op.ndim == 2
    f = rng.random(op.domain_shape, dtype=np.float32)
    Pf = ct.allocate_projections()
    ct.project(Pf, f)
    assert np.array_equal(op @ f, Pf) and np.array_equal(op(f), Pf)
    assert np.array_equal(op @ f.ravel(), Pf.ravel()) and np.array_equal(op(f.ravel()), Pf.ravel())
    assert (op @ f.ravel().astype(np.float64)).dtype == np.float64
    X = np.stack([f.ravel(), 2 * f.ravel()], axis=1)
    np.testing.assert_allclose(op @ X, np.stack([Pf.ravel(), 2 * Pf.ravel()], axis=1), rtol=1e-6)
    assert (op @ np.zeros((op.shape[1], 0))).shape == (op.shape[0], 0)
    y = rng.random(op.shape[0]).astype(np.float32)
    Pty = op.adjoint(y.reshape(op.range_shape))
    assert np.array_equal(op.T @ y, Pty.ravel()) and np.array_equal(y @ op, Pty.ravel())
    assert np.array_equal(op.H @ y.reshape(op.range_shape), Pty)
    with pytest.raises(ValueError, match="shape"):
        op @ np.ones(op.shape[1] + 1, np.float32)
    with pytest.raises(ValueError, match="flat x"):
        np.ones(op.shape[1], np.float32) @ op
    with pytest.raises(TypeError, match="real"):
        op @ np.ones(op.shape[1], np.complex64)

    A = spla.aslinearoperator(op)
    assert A.shape == op.shape and A.dtype == np.float32
    np.testing.assert_allclose(A @ f.ravel(), Pf.ravel(), rtol=1e-6)
    np.testing.assert_allclose(A.H @ y, Pty.ravel(), rtol=1e-6)
    # CG on the normal equations PᵀP x = Pᵀ b recovers a consistent solution's data.
    truth = np.zeros(op.domain_shape, np.float32)
    truth[:, 4:10, 5:11] = 0.02
    b = op @ truth.ravel()
    N = spla.LinearOperator((op.shape[1],) * 2, matvec=lambda v: op.T @ (op @ v),
                            dtype=np.float64)
    x, info = spla.cg(N, (op.T @ b).astype(np.float64), maxiter=200)
    assert rel_l2(op @ x, b) < 1e-2
    assert rel_l2(x.reshape(op.domain_shape), truth) < 0.2


def test_operator_views_and_fbp():
    s = _system()
    op = s.operator()
    sub = op.subset(slice(2, 10))
    assert sub.range_shape == (8, 6, 20)
    g = np.ones(s.projection_shape, np.float32)
    assert np.array_equal(op.fbp(g), s.fbp(g))


# ----------------------------------------------------------------- models
def test_symmetric_and_attenuated_models_route_to_their_projectors(rng):
    from leap import special_models as sm
    det = Detector(num_rows=8, num_cols=16, pixel_height=1.0, pixel_width=1.0)
    one = ParallelBeam(detector=det, angles=np.zeros(1))
    vol = Volume(num_x=1, num_y=16, num_z=8, voxel_width=1.0, voxel_height=1.0)
    s = CTSystem(geometry=one, volume=vol, model=Symmetric(5.0))
    f = rng.random(vol.shape, dtype=np.float32)
    assert np.array_equal(s.project(f), sm.symmetric_project(one, vol, f, 5.0))
    par = ParallelBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 16, endpoint=False))
    vol3 = Volume(num_x=16, num_y=16, num_z=8, voxel_width=1.0, voxel_height=1.0)
    att = AttenuationMap(coeff=0.02, radius=7.0)
    a = CTSystem(geometry=par, volume=vol3, model=Attenuated(att))
    f3 = rng.random(vol3.shape, dtype=np.float32)
    assert np.array_equal(a.project(f3), sm.attenuated_project(par, vol3, f3, att))
    err, _ = dot_test(a.project, a.backproject, vol3.shape, par.projection_shape, rng)
    assert err < 1e-5
    with pytest.raises(NotImplementedError, match="Attenuated"):
        a.fbp_adjoint(f3)


def test_fbp_options_are_used(rng):
    g = rng.random((24, 6, 20), dtype=np.float32)
    s = _system(fbp_options=FBPOptions(ramp_filter=12, lowpass=3.0, window="hann"))
    ref = fbp(s.geometry, s.volume, g, ramp_filter=12, lowpass=3.0, window="hann")
    assert np.array_equal(s.fbp(g), ref)
    assert rel_l2(_system().fbp(g), ref) > 0.01


# ----------------------------------------------------------------- subsets
def test_views_and_slabs_add_up_to_the_whole(rng):
    s = _system()
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    whole = s.project(f)
    parts = sum(s.slab(z0, z1).project(np.ascontiguousarray(f[z0:z1]))
                for z0, z1 in ((0, 2), (2, 3), (3, 5)))
    assert rel_l2(parts, whole) < 1e-6
    back = np.concatenate([s.slab(z0, z1).backproject(g) for z0, z1 in ((0, 3), (3, 5))])
    assert rel_l2(back, s.backproject(g)) < 1e-6
    views = np.concatenate([s.views(slice(a, a + 8)).project(f) for a in (0, 8, 16)])
    assert np.array_equal(views, whole)


@settings(deadline=None, max_examples=30)
@given(case=any_case)
def test_rows_and_views_needed_cover_what_a_slab_touches(case):
    geo, vol = case
    s = CTSystem(geometry=geo, volume=vol)
    rng = np.random.default_rng(1)
    for z0 in range(vol.num_z):
        slab = s.slab(z0, z0 + 1)
        g = slab.project(rng.random(slab.volume_shape, dtype=np.float32) + 0.5)
        r0, r1 = slab.rows_needed()
        v0, v1 = slab.views_needed()
        outside = g.copy()
        outside[v0:v1, r0:r1] = 0
        assert not np.any(outside), (z0, (r0, r1), (v0, v1))


def test_slab_cuts_mask_and_attenuation_map():
    det = Detector(num_rows=4, num_cols=8, pixel_height=1.0, pixel_width=1.0)
    par = ParallelBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 8, endpoint=False))
    vol = Volume(num_x=8, num_y=8, num_z=4, voxel_width=1.0, voxel_height=1.0)
    mu = np.full(vol.shape, 0.01, np.float32)
    mask = np.ones(vol.shape, np.float32)
    s = CTSystem(geometry=par, volume=vol, mask=mask, model=Attenuated(AttenuationMap(mu=mu)))
    part = s.slab(1, 3)
    assert part.volume_shape == (2, 8, 8) and part.mask.shape == (2, 8, 8)
    assert part.model.map.mu.shape == (2, 8, 8)
    assert np.allclose(part.volume.z_samples(), vol.z_samples()[1:3])


# ------------------------------------------------------------ validation
@pytest.mark.parametrize("changes, err, match", [
    (dict(geometry="cone"), TypeError, "geometry"),
    (dict(volume=(4, 4, 4)), TypeError, "volume"),
    (dict(model="symmetric"), TypeError, "model"),
    (dict(fov_radius=-1.0), ValueError, "fov_radius"),
    (dict(mask=np.ones((1, 2, 3), np.float32)), ValueError, "mask"),
    (dict(fbp_options={"ramp_filter": 2}), TypeError, "fbp_options"),
])
def test_bad_systems_are_refused(changes, err, match):
    with pytest.raises(err, match=match):
        _system(**changes)


def test_slab_bounds_are_checked():
    s = _system()
    for z0, z1 in ((-1, 2), (2, 2), (0, 6)):
        with pytest.raises(ValueError, match="slab"):
            s.slab(z0, z1)
