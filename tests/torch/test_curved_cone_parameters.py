"""Gradients with respect to curved-detector cone-beam parameters (issue 35):
``leap.torch._curved_params`` and :meth:`leap.torch.Projector.geometry_parameters` after
``set_conebeam`` + ``set_curvedDetector`` (circular and helical).

As in ``test_axial_geometry_parameters.py``: the float32 forward is differenced at steps
that move the geometry by about 5e-4 mm (parameters in pixels and degrees scaled
accordingly), the upstream gradient ḡ is a smooth ramp, and the object lies well inside
the field of view and tapers to 0 at its ends in z (with the upper and lower voxels of the
columns at full value, the row ends crossing pixel edges within a step, kinks, made a
1e-2 error of the centerRow difference). The directional derivative of ``⟨P(θ(p)) f, ḡ⟩`` (or of
``⟨Pᵀ(θ(p)) g, ȳ⟩``) along each parameter must match the central difference to 1e-3
(relative). The kernel itself is compared with float64 differences of the model to 1e-6
in ``tests/kernels/test_curved_cone_vjp.py``.
"""
import math
import time

import numpy as np
import pytest
from conftest import analytic_and_central_difference, fit_geometry, with_numba_threads

torch = pytest.importorskip("torch")

import geometry_test_fields as _fields  # noqa: E402

from leap.torch import Projector  # noqa: E402
from leap.torch import _curved_params as cp  # noqa: E402

STEP = 5e-4                                   # mm of displacement
PHIS = np.array([8.0, 27.0, 71.0, 100.0, 160.0, 197.0, 245.0, 302.0])
OBJECT_RADIUS = 4.0                           # mm
OBJECT_CENTRE = (2.0, -1.5)                   # mm, off the axis
PIXEL_HEIGHT, PIXEL_WIDTH = 1.1, 1.3

pytestmark = pytest.mark.usefixtures("one_numba_thread")


def projector(helical=False, center_col=11.6, forward=True):
    proj = Projector(forward_project=forward)
    proj.set_conebeam(PHIS.size, 6, 24, PIXEL_HEIGHT, PIXEL_WIDTH, 2.7, center_col, PHIS,
                      40.0, 65.0, 0.6, 0.25 if helical else 0.0)
    proj.leapct.set_curvedDetector()
    proj.set_volume(18, 17, 5, 0.8, 0.9, 0.3, -0.2, 0.0)
    return proj


def smooth_volume(proj):
    return _fields.smooth_volume(proj, OBJECT_CENTRE, OBJECT_RADIUS, taper_z=True)


def ramp(shape, **kw):
    return _fields.ramp(shape, PHIS, OBJECT_CENTRE, **kw)


# -------------------------------------------------------------- the conversion
@pytest.mark.parametrize("helical", [False, True])
def test_conversion_reproduces_axial_views(helical):
    proj = projector(helical)
    geo = proj.leapct.core_geometry()
    views = geo.axial_views()
    params = cp.curved_facade_parameters(proj.leapct)
    assert tuple(params) == cp.CURVED_NAMES
    col, src, centers, sdd = cp.curved_views(params)
    np.testing.assert_allclose(col.numpy(), views.col_dir, rtol=0, atol=1e-12)
    np.testing.assert_allclose(src[:, :2].numpy(), views.source_xy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(src[:, 2].numpy(), views.source_z, rtol=0, atol=1e-12)
    np.testing.assert_allclose(centers.numpy(), np.tile([11.6, 2.7], (PHIS.size, 1)))
    np.testing.assert_allclose(sdd.numpy(), views.sdd)
    shifts = torch.randn(PHIS.size, 3, dtype=torch.float64)
    moved = cp.curved_views(dict(params, shifts=shifts))
    torch.testing.assert_close(moved[1], src - shifts)
    with pytest.raises(ValueError, match="shifts"):
        cp.curved_views(dict(params, shifts=torch.zeros(2, 3)))


# ------------------------------------------------------------- the Projector
@pytest.mark.parametrize("helical", [False, True])
@pytest.mark.parametrize("forward", [True, False])
def test_forward_equals_the_facade(helical, forward):
    """Parameters at the facade's values give the facade's numbers, by the facade's
    operator (shifts 0) and by the per-view kernel path (a shift of 1e-30 mm)."""
    proj = projector(helical, forward=forward)
    x = smooth_volume(proj) if forward else ramp(proj.get_projection_dim()).float()
    want = _fields.facade_output(proj, x)
    params = proj.geometry_parameters()
    assert set(params) == set(cp.CURVED_NAMES)
    np.testing.assert_array_equal(proj(x)[0].detach().numpy(), want)
    with torch.no_grad():
        params["shifts"][0, 0] = 1e-30
    np.testing.assert_array_equal(proj(x)[0].detach().numpy(), want)


def test_shift_moves_the_object():
    """A shift s of every view is the object moved by s (z included, helical)."""
    proj = projector(helical=True)
    f = smooth_volume(proj)
    params = proj.geometry_parameters()
    with torch.no_grad():
        params["shifts"][:] = torch.tensor([0.8, -0.9, 1.0], dtype=torch.float64)
        moved = proj(f)
    proj.clear_geometry_parameters()
    proj.set_volume(18, 17, 5, 0.8, 0.9, 0.3 + 0.8, -0.2 - 0.9, 1.0)
    np.testing.assert_allclose(moved[0].numpy(), proj(f)[0].numpy(), rtol=1e-5, atol=1e-5)


def test_write_back_and_errors():
    proj = projector(helical=True)
    params = proj.geometry_parameters()
    with torch.no_grad():
        params["centerCol"] += 0.25
        params["sdd"] += 1.0
        params["shifts"][1, 2] = 0.1
    with pytest.raises(ValueError, match="shifts of a curved cone"):
        proj.clear_geometry_parameters(write_back=True)
    with torch.no_grad():
        params["shifts"].zero_()
    proj.clear_geometry_parameters(write_back=True)
    lc = proj.leapct
    assert list(proj.parameters()) == []
    assert lc.get_detectorType() == "curved" and lc.get_centerCol() == pytest.approx(11.85)
    assert lc.get_sdd() == pytest.approx(66.0) and lc.get_helicalPitch() == pytest.approx(0.25)


def test_a_flying_focal_spot_is_refused():
    proj = projector()
    system = proj.leapct.system
    shifts = np.zeros((PHIS.size, 3))
    shifts[:, 1] = 0.4
    ffs = system.with_changes(geometry=system.geometry.with_changes(source_shifts=shifts))
    params = cp.curved_facade_parameters(proj.leapct)
    with pytest.raises(ValueError, match="focal spot"):
        cp.curved_apply(smooth_volume(proj), params, ffs, "project")


def test_gradients_do_not_depend_on_threads():
    proj = projector(helical=True)
    f, gbar = smooth_volume(proj), ramp(proj.get_projection_dim(), rotation=True)
    params = proj.geometry_parameters()

    def grads():
        for p in params.values():
            p.grad = None
        (proj(f).double() * gbar).sum().backward()
        return [p.grad.clone() for p in params.values()]

    one = grads()
    two = with_numba_threads(2, grads)
    for a, b in zip(one, two):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


FD_STEPS = {
    "centerCol": STEP / PIXEL_WIDTH,
    "centerRow": STEP / PIXEL_HEIGHT,
    "phis": math.degrees(STEP / math.hypot(*OBJECT_CENTRE)),
    "shifts": STEP,
    "tau": STEP,
    "sod": STEP,
    "sdd": STEP,
    "helicalPitch": STEP / 2.5,      # the source moves pitch·(ψ − ψ_mid), |ψ − ψ_mid| < 2.6
}


def _directional(helical, name, rng, forward=True):
    proj = projector(helical, center_col=11.6 + rng.uniform(-0.4, 0.4), forward=forward)
    gbar = ramp(proj.get_projection_dim(), rotation=name == "phis",
                row_slope_per_view=0.1 if name == "helicalPitch" else 0.0)
    if forward:
        x, weight = smooth_volume(proj), gbar
    else:
        x, weight = gbar.float(), smooth_volume(proj).double()
    p = proj.geometry_parameters()[name]
    d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
    if name == "phis":
        d = 1 + 0.5 * d / d.abs().max()
    elif name == "shifts":           # each view's object moved mostly across its rays
        psi = np.deg2rad(PHIS)
        lateral = np.stack([np.cos(psi), np.sin(psi), 0.5 + 0 * psi], 1)
        d = torch.tensor(lateral) + 0.3 * d / d.abs().max()
    else:
        d = torch.ones((), dtype=torch.float64)
    (proj(x).double() * weight).sum().backward()
    return analytic_and_central_difference(
        p, d, FD_STEPS[name], lambda: float((proj(x).double() * weight).sum()))


@pytest.mark.parametrize("helical", [False, True])
@pytest.mark.parametrize("name", sorted(FD_STEPS))
def test_directional_derivatives_match_finite_differences(helical, name):
    """‖analytic − FD‖ / ‖FD‖ over three random base geometries and directions ≤ 1e-3."""
    rng = np.random.default_rng(10 * int(helical) + sorted(FD_STEPS).index(name))
    pairs = np.array([_directional(helical, name, rng) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    print(f"{'helical' if helical else 'circular'} {name}: {pairs.tolist()} "
          f"relative error {err:.2e}")
    assert np.abs(pairs[:, 1]).min() > 0
    assert err <= 1e-3, (helical, name, pairs)


@pytest.mark.parametrize("name", ["centerRow", "sdd", "shifts"])
def test_backprojector_geometry_gradient(name):
    rng = np.random.default_rng(7)
    pairs = np.array([_directional(True, name, rng, forward=False) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    assert err <= 1e-3, (name, pairs)


# ------------------------------------------------------------------ calibration
def test_calibration_recovers_center_col():
    start = time.perf_counter()

    def make(center_col):
        p = Projector()
        phis = np.arange(36) * 10.0 + 3.0
        p.set_conebeam(36, 8, 48, 1.0, 1.0, 3.5, center_col, phis, 100.0, 150.0)
        p.leapct.set_curvedDetector()
        p.set_volume(28, 28, 4, 0.8, 0.8)
        return p

    n = 28
    c = (np.arange(n) - (n - 1) / 2) * 0.8
    Y, X = np.meshgrid(c, c, indexing="ij")
    blob = sum(np.exp(-((X - bx) ** 2 + (Y - by) ** 2) / (2 * s * s))
               for bx, by, s in ((4.0, 2.0, 2.5), (-5.0, 1.0, 2.0), (1.0, -6.0, 3.0)))
    f = torch.tensor(np.broadcast_to(blob, (4, n, n))[None].copy(), dtype=torch.float32)
    with torch.no_grad():
        data = make(23.5 + 0.6)(f)
    params = fit_geometry(make(23.5), f, data, ["centerCol"])
    col = params["centerCol"].item()
    print(f"calibration (curved cone): centerCol {col:.4f} (true 24.1), "
          f"{time.perf_counter() - start:.1f} s")
    assert abs(col - 24.1) <= 0.05


@pytest.mark.parametrize("forward", [True, False])
def test_the_remembered_projection_is_used_and_changes_nothing(forward, monkeypatch):
    """The VJP takes its row-factor terms from the projection the call computed anyway
    (the projector's output; the back-projector's data gradient): the gradients equal
    those with a projection of the VJP's own."""
    proj = projector(True, forward=forward)
    gbar = ramp(proj.get_projection_dim(), rotation=True)
    if forward:
        x, weight = smooth_volume(proj), gbar
    else:
        x, weight = gbar.float().requires_grad_(True), smooth_volume(proj).double()
    params = proj.geometry_parameters()
    used = []
    remembered = cp._Curved._projection

    def spy(self, f):
        out = remembered(self, f)
        used.append(out is not None)
        return out

    def grads():
        for p in params.values():
            p.grad = None
        (proj(x).double() * weight).sum().backward()
        return [p.grad.clone() for p in params.values()]

    monkeypatch.setattr(cp._Curved, "_projection", spy)
    cached = grads()
    assert used == [True]
    monkeypatch.setattr(cp._Curved, "_projection", lambda self, f: None)
    for a, b in zip(cached, grads()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6 * float(b.abs().max()))
