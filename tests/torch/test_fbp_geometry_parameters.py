"""FBP through trainable geometry parameters (issue 35): ``leap.torch._fbp_params``,
:class:`leap.torch.FBP` and :meth:`leap.torch.Projector.fbp` after ``geometry_parameters()``.

* The torch weights equal leap's NumPy ones (:mod:`leap.reconstruction.weights`) at the facade's values.
* The output equals leap's FBP and its adjoint: the facade's for parallel and fan (flat)
  beams, leap's FBP of the geometry's modular form for untilted cone beams (the facade's
  cone kernels differ from the modular model by their ray stretch, ~1e-5), and leap's FBP
  filtering along the tilted rows (``tilt_resampling=False``) for tilted cone beams (the
  facade's FBP resamples their views upright first, ``leap.reconstruction.tilt_resampling``).
* The data gradient is the exact adjoint (leap's ``fbp_adjoint`` / ``fbp``).
* Directional derivatives of ``⟨FBP(θ(p)) g, ȳ⟩`` along each parameter match central
  differences of the float32 forward to 1e-3, as in ``test_geometry_parameters.py``: steps
  that move the geometry by 1e-4 to 2e-3 mm (:func:`fd_step`), data of a smooth object
  measured with another geometry, filtered in float64, views clear of the diagonals.
  The weights and the filter alone are checked exactly (float64 ``gradcheck``).
"""
import math

import numpy as np
import pytest
from conftest import analytic_and_central_difference, rel_l2

torch = pytest.importorskip("torch")

from leap import weights  # noqa: E402
from leap.reconstruction.fbp import fbp, fbp_adjoint  # noqa: E402
from leap.geometry import ConeBeam  # noqa: E402
from leap.torch import FBP, Projector  # noqa: E402
from leap.torch import _fbp_params as fp  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_numba_thread")

#: name → (geometry, number of views, tilt in degrees). Views every 30° (short scans: 240°)
#: from FIRST: at least 15° from the diagonals, where the footprint model has kinks (a
#: ray's dominant in-plane axis, which the ±8.5° fan of the cone beams stays clear of).
CASES = {
    "parallel_full": ("parallel", 12, 0.0),
    "parallel_short": ("parallel", 8, 0.0),       # 28° steps (below)
    "cone_full": ("cone", 12, 0.0),
    "cone_short": ("cone", 8, 0.0),
    "cone_tilted": ("cone", 12, 1.5),
    "fan_full": ("fan", 12, 0.0),
    "fan_short": ("fan", 8, 0.0),
}
STEP_DEGREES = 30.0
FIRST = 0.0                                    # degrees: the first view


def is_full(case):
    return not case.endswith("short")


def module(case, cls=FBP, center_col=19.6, first=FIRST, sod=60.0, **kw):
    kind, num_angles, tilt = CASES[case]
    m = cls(**kw)
    # Parallel short scans: steps that miss 180° (where leap's Parker weights jump).
    step = 28.0 if case == "parallel_short" else STEP_DEGREES
    phis = first + np.arange(num_angles) * step
    if kind == "parallel":
        m.set_parallelbeam(num_angles, 3, 40, 0.9, 0.45, 1.2, center_col, phis)
        m.set_volume(16, 15, 3, 0.8, 0.9, 0.3, -0.2, 0.0)
    elif kind == "fan":
        m.set_fanbeam(num_angles, 3, 40, 0.9, 0.75, 1.0, center_col, phis, sod, 100.0, 0.4)
        m.set_volume(16, 15, 3, 0.7, 0.9, 0.3, -0.2, 0.0)
    else:
        m.set_conebeam(num_angles, 5, 40, 1.5, 0.75, 2.2, center_col, phis, sod, 100.0, 0.4,
                       0.0, tilt)
        m.set_volume(16, 15, 4, 0.7, 0.8, 0.3, -0.2, 0.1)
    return m


def smooth_volume(m, centre=(1.2, -0.9), radius=4.0, power=2, z_wave=0.3):
    nz, ny, nx = m.get_volume_dim()
    vol = m.leapct.core_volume()
    z, y, x = np.meshgrid(np.arange(nz), vol.y0 + np.arange(ny) * vol.voxel_width,
                          vol.x0 + np.arange(nx) * vol.voxel_width, indexing="ij")
    r2 = (x - centre[0]) ** 2 + (y - centre[1]) ** 2
    taper = np.clip(1.0 - r2 / radius ** 2, 0.0, None) ** power
    f = taper * (1 + 0.5 * np.sin(0.7 * x + 0.3) * np.cos(0.5 * y) + z_wave * np.sin(0.9 * z))
    return f.astype(np.float32)


def data(m, miscalibrated=None, **object_shape):
    """Projections of a smooth object (1, na, nr, nc) float32; ``miscalibrated`` (m's
    case): measured with the detector 0.6 pixels, the views 1.5° and the source 3 mm
    away from m's geometry (the FBP's response to a change of geometry is then first
    order: for consistent full-scan data opposite views cancel it)."""
    lc = m.leapct
    if miscalibrated:
        lc = module(miscalibrated, center_col=lc.get_centerCol() + 0.6, first=FIRST + 1.5,
                    sod=63.0).leapct
    g = lc.project(lc.allocate_projections(), smooth_volume(m, **object_shape))
    return torch.from_numpy(g)[None]


def leap_reference(m, x, adjoint=False):
    """leap's FBP (or adjoint) of x: the facade's, for cone beams of the modular form."""
    lc = m.leapct
    s = lc.system
    geo = s.geometry
    if isinstance(geo, ConeBeam) and geo.tilt == 0:
        geo = geo.to_modular()
    fn = fbp_adjoint if adjoint else fbp
    return fn(geo, s.volume, x, **s.fbp_options.as_kwargs(), tilt_resampling=False)


# -------------------------------------------------------------------- weights
@pytest.mark.parametrize("case", sorted(CASES))
def test_weights_are_leaps(case):
    m = module(case)
    params = m.geometry_parameters()
    geo = m.leapct.core_geometry()
    psi = params["phis"] * (np.pi / 180.0)
    full = weights.angular_range_degrees(geo.angles) >= weights.FULL_SCAN_DEGREES
    np.testing.assert_allclose(fp.view_weights(psi, full).detach().numpy(),
                               weights.view_weights(geo), rtol=1e-13)
    if CASES[case][0] == "parallel":
        got = fp.parker_weights(psi)
    else:
        pre, post, fan, gamma = fp.cone_weights(params, m.leapct._need_geometry())
        ref_pre, ref_post = weights.cosine_weights(geo)
        np.testing.assert_allclose(pre.detach(), np.broadcast_to(ref_pre, pre.shape),
                                   rtol=1e-14)
        np.testing.assert_allclose(post.detach(), np.broadcast_to(ref_post, post.shape),
                                   rtol=1e-14)
        got = fp.parker_weights(psi, fan, gamma)
    ref = weights.parker_weights(geo)
    assert (got is None) == (ref is None) == is_full(case)
    if ref is not None:
        np.testing.assert_allclose(got.detach().numpy(), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n,step", [(12, 2 * math.pi / 12), (25, 2 * math.pi / 12),
                                    (40, 0.1234), (7, 4.0), (9, -0.8)])
def test_redundancy_is_leaps(n, step):
    got = fp.redundancy(n, torch.tensor(step, dtype=torch.float64))
    np.testing.assert_allclose(got.numpy(), weights.redundancy(n, step), rtol=1e-13)


# ------------------------------------------------------------ forward numbers
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("adjoint", [False, True])
def test_output_is_leaps_fbp(case, adjoint):
    m = module(case, forward_FBP=not adjoint)
    x = data(m) if not adjoint else torch.from_numpy(smooth_volume(m))[None]
    facade = m(x)
    m.geometry_parameters()
    got = m(x)
    assert got.shape == facade.shape and got.dtype == torch.float32
    ref = leap_reference(m, x[0].numpy(), adjoint)
    err, err_facade = rel_l2(got[0].detach(), ref), rel_l2(got.detach(), facade)
    print(f"{case} adjoint={adjoint}: vs leap {err:.2e}, vs facade {err_facade:.2e}")
    assert err <= 1e-5
    if CASES[case][2]:
        return      # tilted: the facade resamples upright (another FBP; see the docstring)
    # The facade's cone kernels stretch rays per detector row, the modular ones per ray.
    assert err_facade <= (1e-4 if CASES[case][0] == "cone" else 1e-5)


@pytest.mark.parametrize("diameter", [None, 10.0])
@pytest.mark.parametrize("adjoint", [False, True])
def test_cone_field_of_view(diameter, adjoint):
    """A volume reaching past the field of view (set_default_volume's corners), and a
    set_diameterFOV: the cone kernels' mask, which the modular back-projection lacks."""
    m = module("cone_full", forward_FBP=not adjoint)
    m.set_default_volume()
    lc = m.leapct
    if diameter is not None:
        lc.set_diameterFOV(diameter)
    x = data(m) if not adjoint else torch.from_numpy(smooth_volume(m, radius=20.0))[None]
    facade = m(x)
    m.geometry_parameters()
    got = m(x)
    geo, vol = lc.core_geometry(), lc.core_volume()
    r = 0.5 * diameter if diameter is not None else geo.fov_radius()
    inside = (vol.x_samples()[None, :] ** 2 + vol.y_samples()[:, None] ** 2 <= r * r)
    inside = inside.astype(np.float32)
    s = lc.system
    if adjoint:
        ref = fbp_adjoint(geo.to_modular(), vol, x[0].numpy() * inside,
                          **s.fbp_options.as_kwargs())
    else:
        ref = fbp(geo.to_modular(), vol, x[0].numpy(), **s.fbp_options.as_kwargs()) * inside
    assert 0 < inside.sum() < inside.size
    assert rel_l2(got[0].detach(), ref) <= 1e-5
    assert rel_l2(got.detach(), facade) <= 1e-4


def test_filter_options_and_projector_fbp():
    """Filter order, low-pass, window and the truncated-scan edge extension; a batch of
    two through :meth:`Projector.fbp`; float64 input."""
    m = module("parallel_short", cls=Projector)
    lc = m.leapct
    lc.set_rampFilter(12)
    lc.set_FBPlowpass(3.0)
    lc.set_truncatedScan(True)
    g = torch.cat([data(m), 0.5 * data(m).flip(-1)])
    facade = m.fbp(g)
    m.geometry_parameters()
    got = m.fbp(g)
    assert got.shape == (2, *lc.get_volume_dim())
    assert rel_l2(got.detach(), facade) <= 1e-5
    got64 = m.fbp(g.double())
    assert got64.dtype == torch.float64 and rel_l2(got64.detach(), facade) <= 1e-5


# ------------------------------------------------------------- data gradients
@pytest.mark.parametrize("case", ["parallel_short", "cone_full", "cone_short", "fan_short"])
@pytest.mark.parametrize("adjoint", [False, True])
def test_data_gradient_is_the_adjoint(case, adjoint):
    m = module(case, forward_FBP=not adjoint)
    m.geometry_parameters()
    rng = np.random.default_rng(3)
    lc = m.leapct
    shape_in = lc.get_volume_dim() if adjoint else lc.get_projection_dim()
    shape_out = lc.get_projection_dim() if adjoint else lc.get_volume_dim()
    x = torch.tensor(rng.standard_normal(shape_in), dtype=torch.float32, requires_grad=True)
    y = rng.standard_normal(shape_out).astype(np.float32)
    (m(x) * torch.from_numpy(y)).sum().backward()
    ref = leap_reference(m, y, adjoint=not adjoint)
    assert rel_l2(x.grad, ref) <= 1e-5


# ---------------------------------------------------------- geometry gradients
STEP = 2e-4                                    # mm of displacement
OBJECT_RADIUS = 5.0                            # mm: how far the object reaches


def fd_step(m, name):
    pw = m.leapct.get_pixelWidth()
    # The ramp-filtered data make the model's kinks (footprint ends crossing pixel
    # edges) count more than in the projector's tests: the differences' error grows
    # with the step beyond about these. sod, sdd and the view angles move the
    # reconstruction least (derivatives a few hundredths of the others): longer steps
    # keep the float32 rounding of their differences below the tolerance.
    return {"centerCol": STEP / pw, "centerRow": STEP / m.leapct.get_pixelHeight(),
            "phis": math.degrees(2.5 * STEP / OBJECT_RADIUS),
            "tiltAngle": math.degrees(STEP / 5.0), "shifts": 0.5 * STEP, "tau": STEP,
            "sod": 10 * STEP, "sdd": 10 * STEP}[name]


def _loss(m, g, y):
    return float((m(g).double() * y).sum())


def _directional(case, name, rng):
    m = module(case, center_col=19.6 + rng.uniform(-0.3, 0.3))
    # float64 data: filtered in float64, so that only the back-projection rounds in
    # float32 (the loss is a sum of terms of both signs, its derivatives a small part).
    g = data(m, miscalibrated=case, radius=6.0, power=4, z_wave=0.05).double()
    # ȳ: ramps along x and z and a variation around the axis, so that moving or rotating
    # the reconstruction changes the loss.
    vol = m.leapct.core_volume()
    z, yy, x = np.meshgrid(np.linspace(-1, 1, vol.num_z), vol.y_samples(), vol.x_samples(),
                           indexing="ij")
    shape = 1 + 0.3 * x / np.abs(x).max() + 0.8 * z + 0.6 * np.sin(2 * np.arctan2(yy, x) + 0.4)
    y = torch.from_numpy(smooth_volume(m, centre=(-0.8, 1.1), radius=6.0) * shape)[None]
    p = m.geometry_parameters()[name]
    d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
    if name == "phis":
        # Mostly a rotation of the scan, plus per-view parts (non-equispaced steps).
        # Full scans keep their range (the two views at each end move alike): leap's
        # FBP switches to short-scan weights below 360° (a jump), and its redundancy
        # weight has a kink in the angular step there.
        d = 1 + 0.5 * d / d.abs().max()
        if is_full(case):               # two views at each end move alike
            d[1] = d[-1] = d[-2] = d[0]
    elif name == "shifts":
        psi = np.deg2rad(m.leapct.get_angles())
        lateral = np.stack([np.cos(psi), np.sin(psi)] + ([0 * psi] if d.shape[1] == 3
                                                          else []), axis=1)
        d = torch.tensor(lateral) + 0.3 * d / d.abs().max()
    else:
        d = torch.ones((), dtype=torch.float64)
    (m(g).double() * y).sum().backward()
    return analytic_and_central_difference(p, d, fd_step(m, name), lambda: _loss(m, g, y))


def _fd_cases():
    for case in sorted(CASES):
        if CASES[case][0] == "parallel":
            names = ["centerCol", "phis", "shifts"]
        elif case == "cone_full":
            names = ["centerCol", "centerRow", "phis", "shifts", "tau", "sod", "sdd",
                     "tiltAngle"]
        elif case == "cone_short":
            names = ["centerCol", "phis", "tau", "sod"]
        elif case == "fan_full":
            # (sod and sdd hardly move a full fan scan's reconstruction: derivatives
            # below the float32 differences' noise; the short scan has them.)
            names = ["centerCol", "phis", "shifts", "tau"]
        elif case == "fan_short":
            names = ["centerCol", "phis", "tau", "sod", "sdd"]
        else:   # tilted modules run on the general modular kernels, with more kinks
            names = ["centerCol", "phis", "sod", "tiltAngle"]
        for name in names:
            yield case, name


@pytest.mark.parametrize("case,name", list(_fd_cases()))
def test_directional_derivatives_match_finite_differences(case, name):
    """‖analytic − FD‖ / ‖FD‖ ≤ 1e-3 over three random bases and directions."""
    rng = np.random.default_rng(sorted(CASES).index(case) * 17 + len(name))
    pairs = np.array([_directional(case, name, rng) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    print(f"{case} {name}: {pairs.tolist()} relative error {err:.2e}")
    assert np.abs(pairs[:, 1]).min() > 0
    assert err <= 1e-3, (case, name, pairs)


@pytest.mark.parametrize("case", ["cone_short", "fan_short"])
def test_filtering_stage_gradients_are_exact(case):
    """The weights, scale and ramp filter as functions of the parameters (float64, no
    kernel): torch's gradcheck against its own finite differences (short scans: Parker
    weights, cosine weights, scale)."""
    m = module(case)
    m.leapct.set_truncatedScan(True)
    params = m.geometry_parameters()
    lc = m.leapct
    g = data(m).double()
    names = ("phis", "centerCol", "tau", "sod", "sdd") + (("centerRow",) if case[0] == "c"
                                                          else ())
    w = torch.tensor(np.random.default_rng(0).standard_normal(g.shape))

    def stage(*values):
        p = dict(params.items(), **dict(zip(names, values)))
        pre, post, c, H = fp._stages(lc, p, CASES[case][0], g.device)
        return (fp.ramp_filter(g * pre, H, 20) * c * post * w).sum()

    values = [params[k].detach().clone().requires_grad_(True) for k in names]
    assert torch.autograd.gradcheck(stage, values, eps=1e-6, atol=1e-8, rtol=1e-5)


@pytest.mark.parametrize("ne", [0, 5, 100])
def test_ramp_filter_transpose(ne):
    rng = np.random.default_rng(ne)
    x = torch.tensor(rng.standard_normal((2, 3, 11)))
    y = torch.tensor(rng.standard_normal((2, 3, 11)))
    H = torch.tensor(rng.standard_normal(17))           # rows padded to 32
    lhs = (fp.ramp_filter(x, H, min(ne, 32 - 11 - 1)) * y).sum()
    rhs = (x * fp.ramp_filter(y, H, min(ne, 32 - 11 - 1), transpose=True)).sum()
    assert abs(float(lhs - rhs)) <= 1e-12 * float(x.norm() * y.norm())


def test_helical_pitch_is_held():
    m = module("cone_full")
    params = m.geometry_parameters()
    m(data(m)).sum().backward()
    assert params["helicalPitch"].grad is None
    assert params["sod"].grad is not None and params["phis"].grad is not None


# ------------------------------------------------------------------ refusals
def test_what_is_not_covered_raises():
    fan = FBP()
    fan.set_fanbeam(8, 2, 16, 1.0, 1.0, 0.5, 7.5, np.arange(8) * 45.0, 50.0, 90.0)
    lc = fan.leapct
    lc._update(detectorType="curved")        # as test_axial_geometry_parameters does
    fan.set_default_volume()
    fan.geometry_parameters()
    g = torch.zeros(1, *fan.get_projection_dim())
    with pytest.raises(ValueError, match="fan beam with a curved detector"):
        fan(g)

    curved = FBP()
    curved.set_conebeam(8, 4, 16, 1.0, 1.0, 1.5, 7.5, np.arange(8) * 45.0, 50.0, 90.0)
    curved.leapct.set_curvedDetector()
    curved.set_default_volume()
    curved.geometry_parameters()
    with pytest.raises(ValueError, match="cone beam with a curved detector"):
        curved(torch.zeros(1, *curved.get_projection_dim()))
    modular = Projector()
    geo = module("cone_full").leapct.core_geometry().to_modular()
    d = geo.detector
    modular.set_modularbeam(geo.num_angles, d.num_rows, d.num_cols, d.pixel_height,
                            d.pixel_width, geo.source_positions, geo.module_centers,
                            geo.row_vectors, geo.col_vectors)
    modular.set_default_volume()
    modular.geometry_parameters()
    with pytest.raises(ValueError, match="covers parallel beams and flat-detector fan and "
                                         "circular cone beams; this module has a modular"):
        modular.fbp(torch.zeros(1, *modular.get_projection_dim()))

    m = module("cone_full")
    params = m.geometry_parameters()
    g = data(m)
    with torch.no_grad():
        params["helicalPitch"] += 0.5
    with pytest.raises(ValueError, match="helicalPitch"):
        m(g)
    with torch.no_grad():
        params["helicalPitch"].zero_()
    m.leapct.set_offsetScan(True)
    with pytest.raises(ValueError, match="offset-detector"):
        m(g)
    m.leapct.set_offsetScan(False)
    m.leapct.set_volume_mask(np.ones(m.get_volume_dim(), dtype=np.float32))
    with pytest.raises(ValueError, match="mask"):
        m(g)
