"""The torch modules and the LEAP facade compute the same numbers for every setting that
changes a result: both run the facade's CTSystem (issue: settings made through
``proj.leapct`` used to be ignored by the module)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from leap.torch import FBP, Projector  # noqa: E402


def _model(kind, cls=Projector, **kw):
    m = cls(use_static=True, use_gpu=False, **kw)
    if kind == "symmetric":
        m.set_parallelbeam(1, 8, 16, 1.0, 1.0, 3.5, 7.5, m.leapct.setAngleArray(1, 180.0))
        m.leapct.set_axisOfSymmetry(3.0)
    elif kind == "parallel":
        m.set_parallelbeam(16, 3, 20, 1.0, 1.0, 1.0, 9.5, m.leapct.setAngleArray(16, 360.0))
    else:
        m.set_conebeam(16, 4, 20, 1.0, 1.0, 1.5, 6.0, m.leapct.setAngleArray(16, 360.0),
                       100.0, 200.0)
    m.set_default_volume()
    return m


def _mask(ct):
    m = np.ones(ct.get_volume_dim(), np.float32)
    m[:, :3] = 0
    return m


#: setting name → (geometry kind, how to apply it to the facade)
SETTINGS = {
    "plain": ("cone", lambda ct: None),
    "fov": ("parallel", lambda ct: ct.set_diameterFOV(8.0)),
    "mask": ("cone", lambda ct: ct.set_volume_mask(_mask(ct))),
    "symmetric": ("symmetric", lambda ct: ct.set_default_volume()),
    "attenuated_cylinder": ("parallel", lambda ct: ct.set_cylindircalAttenuationMap(0.02, 9.0)),
    "attenuated_map": ("parallel", lambda ct: ct.set_attenuationMap(
        np.full(ct.get_volume_dim(), 0.01, np.float32))),
    "ramp_filter": ("cone", lambda ct: (ct.set_rampFilter(12), ct.set_FBPlowpass(3.0))),
    "offset_scan": ("cone", lambda ct: ct.set_offsetScan(True)),
    "truncated_scan": ("cone", lambda ct: ct.set_truncatedScan(True)),
}


def _rel(a, b):
    return float(np.linalg.norm(np.asarray(a, np.float64) - b) / max(np.linalg.norm(b), 1e-30))


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_projector_module_equals_the_facade(setting):
    kind, apply = SETTINGS[setting]
    m = _model(kind)
    ct = m.leapct
    apply(ct)
    rng = np.random.default_rng(3)
    x = torch.from_numpy(rng.random((2, *ct.get_volume_dim()), dtype=np.float32))
    x.requires_grad_(True)
    y = m(x)
    w = torch.from_numpy(rng.random(tuple(y.shape), dtype=np.float32))
    (y * w).sum().backward()
    for b in range(2):
        ref = ct.project(ct.allocate_projections(), x[b].detach().numpy().copy())
        assert _rel(y[b].detach().numpy(), ref) <= 1e-6
        grad = ct.backproject(w[b].numpy().copy(), ct.allocate_volume())
        assert _rel(x.grad[b].numpy(), grad) <= 1e-6
    # the module's FBP is the facade's FBP
    g = torch.from_numpy(rng.random((1, *ct.get_projection_dim()), dtype=np.float32))
    fb = m.fbp(g)
    assert _rel(fb[0].numpy(), ct.FBP(g[0].numpy().copy())) <= 1e-6


@pytest.mark.parametrize("setting", [s for s in SETTINGS if not s.startswith(("attenuated", "symm"))])
def test_fbp_module_and_its_gradient_equal_the_facade(setting):
    kind, apply = SETTINGS[setting]
    m = _model(kind, cls=FBP)
    ct = m.leapct
    apply(ct)
    rng = np.random.default_rng(4)
    g = torch.from_numpy(rng.random((1, *ct.get_projection_dim()), dtype=np.float32))
    g.requires_grad_(True)
    f = m(g)
    assert _rel(f[0].detach().numpy(), ct.FBP(g[0].detach().numpy().copy())) <= 1e-6
    w = torch.from_numpy(rng.random(tuple(f.shape), dtype=np.float32))
    (f * w).sum().backward()
    ref = ct.FBP_adjoint(ct.allocate_projections(), w[0].numpy().copy())
    assert _rel(g.grad[0].numpy(), ref) <= 1e-6


def test_settings_made_after_a_forward_pass_reach_the_next_one():
    m = _model("parallel")
    x = torch.rand(1, *m.leapct.get_volume_dim())
    before = m(x)
    m.leapct.set_diameterFOV(6.0)
    after = m(x)
    assert _rel(after.numpy(), before.numpy()) > 0.1
    # ... and the new result is the facade's, with the smaller field of view
    ref = m.leapct.project(m.leapct.allocate_projections(), x[0].numpy())
    np.testing.assert_allclose(after[0].numpy(), ref, rtol=1e-6, atol=1e-7)


def test_the_facade_system_is_what_other_front_ends_take_over():
    from leap.system import CTSystem
    m = _model("cone")
    m.leapct.set_diameterFOV(10.0)
    s = m.leapct.system
    assert isinstance(s, CTSystem) and s.fov_radius == 5.0
    f = np.random.default_rng(0).random(s.volume_shape, dtype=np.float32)
    assert np.array_equal(s.project(f), m.leapct.project(m.leapct.allocate_projections(), f))
