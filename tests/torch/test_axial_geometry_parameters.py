"""Gradients with respect to parallel- and fan-beam parameters (issue 35):
``leap.torch._axial_params`` and :meth:`leap.torch.Projector.geometry_parameters` for
``set_parallelbeam`` / ``set_fanbeam``.

As in ``test_geometry_parameters.py``: the float32 forward is differenced at steps that
move the geometry by about 2e-4 mm (parameters in pixels and degrees scaled
accordingly), the upstream gradient ḡ is a smooth positive ramp, and the object lies
well inside the field of view (the mask is a jump of the model, which no gradient sees).
The directional derivative of ``⟨P(θ(p)) f, ḡ⟩`` (or of ``⟨Pᵀ(θ(p)) g, ȳ⟩``) along each
parameter must match the central difference to 1e-3 (relative). The kernel itself is
compared with float64 differences of the model to 1e-6 in
``tests/kernels/test_axial_view_vjp.py``.
"""
import math
import time

import numpy as np
import pytest
from conftest import analytic_and_central_difference, axial_model_loss, fit_geometry

torch = pytest.importorskip("torch")

import geometry_test_fields as _fields  # noqa: E402

from leap.geometry import FanBeam  # noqa: E402
from leap.kernels.plan import make_plan  # noqa: E402
from leap.torch import Projector  # noqa: E402
from leap.torch import _axial_params as ap  # noqa: E402

#: mm of displacement: large enough that the float32 forward's rounding stays below the
#: tolerance, small enough that few footprint ends cross a pixel edge (a kink).
STEP = 5e-4
#: Degrees, at least 8° from the diagonals (where the parallel footprint's width has a kink).
PHIS = np.array([8.0, 27.0, 71.0, 100.0, 112.0, 160.0, 197.0, 245.0, 289.0, 302.0, 333.0,
                 350.0])
OBJECT_RADIUS = 4.5                            # mm
#: The object's centre (x, y), mm: off the axis, so that rotating the scan moves the
#: projections (a centred, smooth object's projections hardly change).
OBJECT_CENTRE = (2.4, -1.8)


pytestmark = pytest.mark.usefixtures("one_numba_thread")


#: name → (fan?, numRows, numZ, centerRow offset from the middle (rows off the slices))
CASES = {
    "parallel3d": (False, 4, 4, 0.0),
    "parallel2d": (False, 1, 1, 0.0),
    "parallel_rows": (False, 3, 4, 0.3),        # general row overlaps
    "fan3d": (True, 4, 4, 0.0),
    "fan2d": (True, 1, 1, 0.0),
    "fan_curved": (True, 3, 3, 0.0),
}


def projector(case, center_col=11.8, forward=True, sod=40.0, sdd=65.0, tau=0.6):
    fan, nrows, nz, drow = CASES[case]
    proj = Projector(forward_project=forward)
    if fan:
        # Wider pixels: the fan's field of view (about 9.5 mm) holds the object.
        proj.set_fanbeam(PHIS.size, nrows, 24, 0.9, 1.5, 0.5 * (nrows - 1) + drow, center_col,
                         PHIS, sod, sdd, tau)
        if case == "fan_curved":
            lc = proj.leapct
            lc._set_geometry(dict(lc._need_geometry(), detectorType="curved"))
    else:
        proj.set_parallelbeam(PHIS.size, nrows, 24, 0.9, 0.9, 0.5 * (nrows - 1) + drow,
                              center_col, PHIS)
    proj.set_volume(18, 17, nz, 0.8, 0.9, 0.3, -0.2, 0.0)
    return proj


def smooth_volume(proj):
    return _fields.smooth_volume(proj, OBJECT_CENTRE, OBJECT_RADIUS, taper_z=False)


def ramp(shape, **kw):
    return _fields.ramp(shape, PHIS, OBJECT_CENTRE, **kw)


# -------------------------------------------------------------- the conversion
@pytest.mark.parametrize("case", ["parallel3d", "fan3d", "fan_curved"])
def test_conversion_reproduces_axial_views(case):
    proj = projector(case)
    geo = proj.leapct.core_geometry()
    views = geo.axial_views()
    params = ap.axial_facade_parameters(proj.leapct)
    col, src, cc, sdd = ap.axial_views(params, fan=CASES[case][0],
                                       pixel_width=geo.detector.pixel_width)
    for t in (col, src, cc, sdd):
        assert t.dtype == torch.float64 and t.shape[0] == PHIS.size
    np.testing.assert_allclose(col.numpy(), views.col_dir, rtol=0, atol=1e-12)
    np.testing.assert_allclose(src.numpy(), views.source_xy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cc.numpy(), geo.detector.center_col, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sdd.numpy(), views.sdd, rtol=0, atol=1e-12)
    assert views.column_model == (2 if case == "fan_curved" else (1 if CASES[case][0] else 0))


def test_conversion_shifts():
    shifts = torch.randn(PHIS.size, 2, dtype=torch.float64)
    par = dict(phis=torch.tensor(PHIS), centerCol=torch.tensor(11.0), shifts=shifts)
    col, _, cc, _ = ap.axial_views(par, fan=False, pixel_width=0.9)
    torch.testing.assert_close(cc, 11.0 + (shifts * col).sum(1) / 0.9)
    fan = dict(par, sod=40.0, sdd=60.0, tau=0.5)
    plain = ap.axial_views(dict(fan, shifts=None), fan=True, pixel_width=0.9)
    moved = ap.axial_views(fan, fan=True, pixel_width=0.9)
    torch.testing.assert_close(moved[1], plain[1] - shifts)
    with pytest.raises(ValueError, match="shifts"):
        ap.axial_views(dict(par, shifts=torch.zeros(2, 2)), fan=False, pixel_width=0.9)


# ------------------------------------------------------------- the Projector
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("forward", [True, False])
def test_forward_equals_the_facade(case, forward):
    """Parameters at the facade's values give the facade's numbers, by the facade's
    operator (shifts 0) and by the per-view kernel path (shifts forced on)."""
    proj = projector(case, forward=forward)
    lc = proj.leapct
    x = smooth_volume(proj) if forward else ramp(proj.get_projection_dim()).float()
    want = _fields.facade_output(proj, x)
    params = proj.geometry_parameters()
    got = proj(x)[0].detach().numpy()
    scale = float(np.abs(want).max())
    assert np.abs(got - want).max() <= 1e-6 * scale
    # The kernel path that nonzero shifts take, at zero shifts.
    system = lc.system
    col, src, cc, _ = ap.axial_views(params, fan=CASES[case][0],
                                     pixel_width=system.geometry.detector.pixel_width)
    op = ap._Axial(system, col, src, cc, shifted=True)
    other = op.apply("project" if forward else "backproject", x)[0].numpy()
    assert np.abs(other - want).max() <= 1e-6 * scale


@pytest.mark.parametrize("case", ["parallel3d", "fan3d", "fan2d"])
def test_shift_moves_the_object(case):
    """A shift of one voxel along x in one view projects, there, the volume moved by one
    voxel (the sign convention: shifts translate the object)."""
    proj = projector(case)
    f = smooth_volume(proj)
    params = proj.geometry_parameters()
    w = proj.leapct.core_volume().voxel_width
    with torch.no_grad():
        params["shifts"][2] = torch.tensor([w, 0.0], dtype=torch.float64)
        got = proj(f)[0, 2].numpy()
        moved = torch.roll(f, 1, dims=3)
        proj.clear_geometry_parameters()
        want = proj(moved)[0, 2].numpy()
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_parameters_write_back_and_errors():
    proj = projector("fan_curved")
    params = proj.geometry_parameters()
    assert set(params) == {"phis", "centerCol", "tau", "sod", "sdd", "shifts"}
    assert params["shifts"].shape == (PHIS.size, 2)
    assert {id(p) for p in proj.parameters()} == {id(p) for p in params.values()}
    with torch.no_grad():
        params["shifts"][0, 0] = 0.1
    with pytest.raises(ValueError, match="cannot be written back"):
        proj.clear_geometry_parameters(write_back=True)
    with torch.no_grad():
        params["shifts"].zero_()
        params["centerCol"] += 0.25
        params["sod"] += 1.0
    proj.clear_geometry_parameters(write_back=True)
    lc = proj.leapct
    assert list(proj.parameters()) == []
    assert lc.get_centerCol() == pytest.approx(12.05) and lc.get_sod() == pytest.approx(41.0)
    assert lc.get_detectorType() == "curved" and lc.get_geometry() == "FAN"
    par = projector("parallel2d")
    p = par.geometry_parameters()
    assert set(p) == {"phis", "centerCol", "shifts"}
    with torch.no_grad():
        p["phis"] += 1.0
    par.clear_geometry_parameters(write_back=True)
    np.testing.assert_allclose(par.leapct.get_angles(), PHIS + 1.0, rtol=1e-6)


def test_other_geometries_are_refused():
    proj = Projector()
    proj.set_coneparallel(4, 5, 6, 1.0, 1.0, 2.0, 2.5, np.arange(4.0), 50.0, 80.0)
    with pytest.raises(ValueError, match="parallel-beam and fan-beam"):
        proj.geometry_parameters()
    with pytest.raises(ValueError, match="parallel and fan"):
        ap.parameter_names(proj.leapct)


def _loss(proj, x, weight):
    return float((proj(x).double() * weight).sum())


FD_STEPS = {
    "centerCol": STEP / 0.9,     # (fan beams: a step of 1.3e-4 mm at the detector)
    "phis": math.degrees(STEP / math.hypot(*OBJECT_CENTRE)),
    "shifts": STEP,
    "tau": STEP,
    "sod": STEP,
    "sdd": STEP,
}


def _directional(case, name, rng, forward=True):
    proj = projector(case, center_col=11.8 + rng.uniform(-0.4, 0.4), forward=forward)
    gbar = ramp(proj.get_projection_dim(), rotation=name == "phis")
    if forward:
        x, weight = smooth_volume(proj), gbar
    else:
        x, weight = gbar.float(), smooth_volume(proj).double()
    p = proj.geometry_parameters()[name]
    d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
    if name == "phis":             # mostly a rotation of the whole scan
        d = 1 + 0.5 * d / d.abs().max()
    elif name == "shifts":         # each view's object moved mostly across its rays
        psi = np.deg2rad(PHIS)
        d = torch.tensor(np.stack([np.cos(psi), np.sin(psi)], 1)) + 0.3 * d / d.abs().max()
    else:
        d = torch.ones((), dtype=torch.float64)
    (proj(x).double() * weight).sum().backward()
    return analytic_and_central_difference(p, d, FD_STEPS[name],
                                           lambda: _loss(proj, x, weight))


def _fd_cases():
    for case in sorted(CASES):
        names = ["centerCol", "phis", "shifts"] + (["tau", "sod", "sdd"] if CASES[case][0]
                                                   else [])
        for name in names:
            yield case, name


@pytest.mark.parametrize("case,name", list(_fd_cases()))
def test_directional_derivatives_match_finite_differences(case, name):
    """‖analytic − FD‖ / ‖FD‖ over three random base geometries and directions ≤ 1e-3."""
    rng = np.random.default_rng(sorted(CASES).index(case) * 10 + sorted(FD_STEPS).index(name))
    pairs = np.array([_directional(case, name, rng) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    print(f"{case} {name}: {pairs.tolist()} relative error {err:.2e}")
    assert np.abs(pairs[:, 1]).min() > 0
    assert err <= 1e-3, (case, name, pairs)


@pytest.mark.parametrize("case,name", [("parallel3d", "centerCol"), ("parallel2d", "phis"),
                                       ("fan3d", "sdd"), ("fan2d", "shifts"),
                                       ("fan_curved", "tau")])
def test_backprojector_geometry_gradient(case, name):
    rng = np.random.default_rng(7)
    pairs = np.array([_directional(case, name, rng, forward=False) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    assert err <= 1e-3, (case, name, pairs)


# ------------------------------------------- against a float64 evaluation of the model
def model_loss(proj, params, f, gbar, pixel_width=None):
    """float64 ``⟨P(θ(params)) f, ḡ⟩`` of the footprint model (``conftest.axial_model_loss``,
    as ``tests/kernels/test_axial_view_vjp.py``), the field of view held at the facade's."""
    lc = proj.leapct
    geo, vol = lc.core_geometry(), lc.core_volume()
    det = geo.detector
    plan = make_plan(geo, vol)
    col, src, cc, sdd = (t.detach().numpy() for t in ap.axial_views(
        params, fan=isinstance(geo, FanBeam), pixel_width=pixel_width or det.pixel_width))
    return axial_model_loss(f.double().numpy(), gbar.double().numpy(), col, src, cc, sdd,
                            plan.views.column_model, plan.fov_r2, vol, det)


def _float64_check(case, pixel_width=None):
    """{name: (analytic, float64 central difference, Σ|terms|)} along random directions,
    step 1e-6 (far below any footprint end's distance to a pixel edge at these random
    geometries); Σ|terms| is the sum of the analytic derivative's per-element terms
    (per-view parameters' terms partly cancel: the scale the error is measured on)."""
    rng = np.random.default_rng(sorted(CASES).index(case))
    proj = projector(case, center_col=11.8 + rng.uniform(-0.4, 0.4))
    f, gbar = smooth_volume(proj), ramp(proj.get_projection_dim(), rotation=True).float()
    params = proj.geometry_parameters()
    (proj(f).double() * gbar.double()).sum().backward()
    base = {k: p.detach().clone() for k, p in params.items()}
    out = {}
    for name, p in params.items():
        d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
        h = 1e-6
        up = model_loss(proj, {**base, name: base[name] + h * d}, f, gbar, pixel_width)
        down = model_loss(proj, {**base, name: base[name] - h * d}, f, gbar, pixel_width)
        out[name] = (float((p.grad * d).sum()), (up - down) / (2 * h),
                     float((p.grad * d).abs().sum()))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_gradients_match_float64_differences_of_the_model(case):
    for name, (a, num, scale) in _float64_check(case).items():
        assert abs(num) > 1e-2, (name, num)
        assert abs(a - num) <= 1e-6 * scale, (case, name, a, num, scale)


def test_the_float64_comparison_can_fail():
    """A shift mapped with a pixel width 0.1 % off is seen (parallel beams)."""
    a, num, scale = _float64_check("parallel2d", pixel_width=0.9 * 1.001)["shifts"]
    assert abs(a - num) > 1e-5 * scale          # ten times the tolerance


# ------------------------------------------------------------------ calibration
def blobs(shape, voxel):
    nz, ny, nx = shape
    y = (np.arange(ny) - (ny - 1) / 2) * voxel
    x = (np.arange(nx) - (nx - 1) / 2) * voxel
    z = np.arange(nz) - (nz - 1) / 2
    Z, Y, X = np.meshgrid(z, y, x, indexing="ij")
    f = np.zeros(shape)
    for (bx, by, s) in ((6.0, 3.0, 3.0), (-7.0, 1.5, 2.5), (1.5, -8.0, 3.5), (-2.5, 6.5, 2.0)):
        f += np.exp(-((X - bx) ** 2 + (Y - by) ** 2) / (2 * s * s)) * (1 + 0.1 * Z)
    return torch.tensor(f[None], dtype=torch.float32)


@pytest.mark.parametrize("fan", [False, True])
def test_calibration_recovers_center_col(fan):
    start = time.perf_counter()

    def make(center_col):
        p = Projector()
        phis = np.arange(60) * (360.0 if fan else 180.0) / 60 + 3.0
        if fan:
            p.set_fanbeam(60, 2, 64, 1.0, 1.0, 0.5, center_col, phis, 100.0, 150.0)
        else:
            p.set_parallelbeam(60, 1, 64, 1.0, 1.0, 0.0, center_col, phis)
        p.set_volume(40, 40, 2 if fan else 1, 0.8, 1.0)
        return p

    f = blobs((2 if fan else 1, 40, 40), 0.8)
    with torch.no_grad():
        data = make(31.5 + 0.7)(f)
    params = fit_geometry(make(31.5), f, data, ["centerCol"])
    col = params["centerCol"].item()
    print(f"calibration ({'fan' if fan else 'parallel'}): centerCol {col:.4f} (true 32.2), "
          f"{time.perf_counter() - start:.1f} s")
    assert abs(col - 32.2) <= 0.05
