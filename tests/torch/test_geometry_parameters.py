"""Gradients with respect to the standard cone-beam parameters through their modular form
(issue 35, second part): :func:`leap.torch.geometry.cone_beam_modular` and
:meth:`leap.torch.Projector.geometry_parameters`.

The finite differences follow ``test_geometry_gradients.py``: the float32 forward is
differenced at steps that move the geometry by about 2e-4 mm (parameters in pixels and
degrees are scaled accordingly), the upstream gradient ḡ is a smooth ramp, the views look
along directions at least 20° from the diagonals, and the volume projects well inside the
detector. The directional derivative of ``⟨P(θ(p)) f, ḡ⟩`` along each parameter must
match the central difference to 1e-3 (relative).
"""
import math
import time

import numpy as np
import pytest
from conftest import analytic_and_central_difference, fit_geometry

torch = pytest.importorskip("torch")

from geometry_test_fields import facade_output  # noqa: E402

from leap.reconstruction.fbp import fbp as leap_fbp  # noqa: E402
from leap.geometry import ConeBeam, Detector  # noqa: E402
from leap.torch import Projector  # noqa: E402
from leap.torch.geometry import cone_beam_modular  # noqa: E402

NUM_ROWS, NUM_COLS, PIXEL_HEIGHT, PIXEL_WIDTH = 5, 6, 2.0, 1.7
ANGLES = np.array([0.15, 1.45, 1.75, 3.0])         # radians, ≥ 20° from the diagonals
STEP = 2e-4                                         # mm of displacement
LEVER = 5.0                                         # mm: a tilt step over the detector
#: Volume offset (x, y), mm: off the axis, so that rotating the scan moves the projections
#: (a centred, smooth object's projections hardly change).
OFF_CENTRE = (0.6, -0.5, 0.8)
#: mm: a rotation of every view by δ moves the object's points by at most this × δ.
OBJECT_RADIUS = 2.3


pytestmark = pytest.mark.usefixtures("one_numba_thread")


# -------------------------------------------------------------- the conversion
@pytest.mark.parametrize("helical", [False, True])
def test_conversion_reproduces_to_modular(helical):
    angles = np.linspace(0.1, 6.0, 7)
    det = Detector(num_rows=NUM_ROWS, num_cols=NUM_COLS, pixel_height=PIXEL_HEIGHT,
                   pixel_width=PIXEL_WIDTH, center_row=1.3, center_col=3.1)
    pitch = 0.4 if helical else 0.0
    cone = ConeBeam(detector=det, angles=angles, sod=30.0, sdd=50.0, tau=0.7,
                    tilt=math.radians(1.5), helical_pitch=pitch)
    m = cone.to_modular()
    got = cone_beam_modular(torch.tensor(angles), num_rows=NUM_ROWS, num_cols=NUM_COLS,
                            pixel_height=PIXEL_HEIGHT, pixel_width=PIXEL_WIDTH,
                            center_row=1.3, center_col=3.1, sod=30.0, sdd=50.0, tau=0.7,
                            tilt=math.radians(1.5), helical_pitch=pitch)
    for t, ref in zip(got, (m.source_positions, m.module_centers, m.row_vectors,
                            m.col_vectors)):
        assert t.dtype == torch.float64 and t.shape == (angles.size, 3)
        np.testing.assert_allclose(t.numpy(), ref, rtol=0, atol=1e-12)


def test_conversion_shifts_translate_source_and_module():
    angles = torch.tensor(ANGLES)
    kw = dict(num_rows=NUM_ROWS, num_cols=NUM_COLS, pixel_height=PIXEL_HEIGHT,
              pixel_width=PIXEL_WIDTH, center_row=2.0, center_col=2.5, sod=30.0, sdd=50.0)
    shifts = torch.randn(ANGLES.size, 3, dtype=torch.float64)
    plain = cone_beam_modular(angles, **kw)
    moved = cone_beam_modular(angles, shifts=shifts, **kw)
    torch.testing.assert_close(moved[0], plain[0] - shifts)
    torch.testing.assert_close(moved[1], plain[1] - shifts)
    torch.testing.assert_close(moved[2], plain[2])
    torch.testing.assert_close(moved[3], plain[3])
    with pytest.raises(ValueError, match="shifts"):
        cone_beam_modular(angles, shifts=torch.zeros(2, 3), **kw)


# ------------------------------------------------------------- the Projector
def small_projector(center_col=2.4, tilt=1.0, offset=(0.0, 0.0)):
    proj = Projector(forward_project=True)
    proj.set_conebeam(ANGLES.size, NUM_ROWS, NUM_COLS, PIXEL_HEIGHT, PIXEL_WIDTH, 2.1,
                      center_col, np.rad2deg(ANGLES), 30.0, 50.0, 0.2, 0.0, tilt)
    proj.set_volume(5, 7, 6, 0.5, 0.5, *offset)
    return proj


def smooth_volume(shape=(6, 7, 5)):
    z, y, x = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    f = 1 + 0.5 * np.sin(0.7 * x + 0.3) * np.cos(0.5 * y) + 0.3 * np.sin(0.4 * z)
    return torch.tensor(f[None], dtype=torch.float32)


def ramp(row_slope_per_view=0.0):
    """ḡ, a smooth ramp (1, views, rows, cols); ``row_slope_per_view`` adds a row slope
    that changes sign across the views."""
    a, j, i = np.meshgrid(np.arange(ANGLES.size), np.arange(NUM_ROWS), np.arange(NUM_COLS),
                          indexing="ij")
    slope = 0.2 + row_slope_per_view * (a - 0.5 * (ANGLES.size - 1))
    return torch.tensor((1 + 0.3 * i + slope * j + 0.1 * a)[None], dtype=torch.float64)


def test_parameters_reproduce_the_facade_and_keep_volume_gradients():
    proj = small_projector()
    f = smooth_volume().requires_grad_(True)
    nominal = proj(f)
    # The facade's FBP of a tilted cone beam resamples its views upright
    # (leap.reconstruction.tilt_resampling); FBP through the parameters filters along the tilted rows,
    # as fbp(..., tilt_resampling=False) does.
    s = proj.leapct.system
    fbp_nominal = torch.from_numpy(leap_fbp(s.geometry, s.volume, nominal.detach()[0].numpy(),
                                            **s.fbp_options.as_kwargs(),
                                            tilt_resampling=False))[None]
    params = proj.geometry_parameters()
    assert set(params) == {"phis", "centerRow", "centerCol", "tau", "tiltAngle", "sod",
                           "sdd", "helicalPitch", "shifts"}
    assert all(isinstance(p, torch.nn.Parameter) and p.requires_grad for p in params.values())
    assert params["shifts"].shape == (ANGLES.size, 3) and not params["shifts"].any()
    assert params["tiltAngle"].item() == 1.0 and params["centerCol"].item() == 2.4
    assert proj.geometry_parameters()["sod"] is params["sod"]          # the same ones
    assert {id(p) for p in proj.parameters()} == {id(p) for p in params.values()}
    g = proj(f)
    torch.testing.assert_close(g, nominal, rtol=1e-5, atol=1e-5)
    (g.double() * ramp()).sum().backward()
    assert f.grad is not None and float(f.grad.abs().sum()) > 0
    assert all(p.grad is not None for p in params.values())
    # FBP through the parameters (the modular kernels: their rounding, 1e-5 here)
    torch.testing.assert_close(proj.fbp(g.detach()), fbp_nominal, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        params["centerCol"] += 0.25
        params["helicalPitch"] += 0.05
    proj.clear_geometry_parameters(write_back=True)
    assert list(proj.parameters()) == []
    assert proj.leapct.get_centerCol() == pytest.approx(2.65)
    assert proj.leapct.get_helicalPitch() == pytest.approx(0.05)


def untilted_cone(forward, rows, cols, center_row, center_col):
    proj = Projector(forward_project=forward)
    proj.set_conebeam(ANGLES.size, rows, cols, 1.0, 1.0, center_row, center_col,
                      np.rad2deg(ANGLES), 30.0, 50.0)
    proj.set_default_volume()
    return proj


def error_through_parameters(proj, seed):
    """Relative L2 difference of the module's output through its geometry parameters
    from the facade's, for a random input (the parameters are cleared afterwards)."""
    shape = proj.get_volume_dim() if proj.forward_project else proj.get_projection_dim()
    x = torch.tensor(np.random.default_rng(seed).random((1, *shape)), dtype=torch.float32)
    with torch.no_grad():
        nominal = proj(x)
        proj.geometry_parameters()
        err = float((proj(x) - nominal).norm() / nominal.norm())
    proj.clear_geometry_parameters()
    return err


@pytest.mark.parametrize("forward", [True, False])
def test_untilted_cone_parameters_keep_the_facades_field_of_view(forward):
    """An untilted cone beam runs on the facade's cone kernels, which skip the voxels
    outside the field of view; through the parameters (the modular kernels, which mask
    nothing) the same voxels are masked, so a default volume, whose corners lie outside,
    gives the facade's numbers (to the kernels' rounding)."""
    proj = untilted_cone(forward, 10, 12, 4.5, 5.2)
    assert error_through_parameters(proj, 4) < 1e-4
    proj.leapct.set_diameterFOV(4.0)    # a set field of view as well
    assert error_through_parameters(proj, 4) < 1e-4


@pytest.mark.parametrize("forward", [True, False])
def test_untilted_cone_parameters_keep_an_offset_scans_field_of_view(forward):
    """An offset-detector scan's projectors mask with the farther detector side's radius
    (wider than the nearer side's, the geometry's own): so do the parameters'."""
    proj = untilted_cone(forward, 4, 16, 1.5, 3.0)
    proj.leapct.set_offsetScan(True)
    assert error_through_parameters(proj, 5) < 1e-4


def test_geometry_parameters_need_a_supported_geometry():
    """Cone-parallel geometries have no geometry parameters; parallel and fan beams
    (tests/torch/test_axial_geometry_parameters.py), curved cone beams
    (tests/torch/test_curved_cone_parameters.py) and modular beams (below) do."""
    proj = Projector()
    proj.set_coneparallel(4, 5, 6, 1.0, 1.0, 2.0, 2.5, np.arange(4.0), 100.0, 150.0)
    with pytest.raises(ValueError, match="cone-beam.*parallel-beam and fan-beam"):
        proj.geometry_parameters()
    with pytest.raises(ValueError, match="no geometry"):
        Projector().geometry_parameters()


def _loss(proj, f, gbar):
    return float((proj(f).double() * gbar).sum())


# parameter → (step in its units, direction generator)
FD_CASES = {
    "centerCol": STEP / PIXEL_WIDTH,
    "centerRow": STEP / PIXEL_HEIGHT,
    "tiltAngle": math.degrees(STEP / LEVER),
    "sod": STEP,
    "sdd": STEP,
    "tau": STEP,
    "phis": math.degrees(STEP / OBJECT_RADIUS),
    "shifts": STEP,
    # mm/rad: the source height moves pitch·(ψ − ψ_mid), at most 1.425 rad from the
    # middle (ḡ's row slope changes sign across the views for this one: with the same
    # slope in every view, the views below and above the middle angle cancel, leaving a
    # derivative 20× smaller than the others, under the float32 differences' noise).
    "helicalPitch": STEP / 1.425,
}


#: Base geometries (centerCol px, tiltAngle °) at which each derivative is checked.
BASES = ((2.4, 1.0), (2.6, 0.7), (2.45, -0.5))


def _directional(name, center_col, tilt, rng):
    """(analytic, central difference) of ⟨P(θ(p)) f, ḡ⟩ along one direction of ``name``."""
    proj = small_projector(center_col, tilt, OFF_CENTRE)
    f, gbar = smooth_volume(), ramp(0.4 if name == "helicalPitch" else 0.0)
    p = proj.geometry_parameters()[name]
    d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
    # Mostly a rotation / translation of the whole scan, plus per-view parts (random
    # per-view directions cancel, leaving slopes below the float32 differences' noise).
    if name == "phis":
        d = 1 + 0.5 * d / d.abs().max()
    elif name == "shifts":      # each view's object moved mostly across its rays
        lateral = np.stack([np.cos(ANGLES), np.sin(ANGLES), 0.5 + 0 * ANGLES], axis=1)
        d = torch.tensor(lateral) + 0.3 * d / d.abs().max()
    else:
        d = torch.ones((), dtype=torch.float64)
    (proj(f).double() * gbar).sum().backward()
    return analytic_and_central_difference(p, d, FD_CASES[name], lambda: _loss(proj, f, gbar))


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_directional_derivatives_match_finite_differences(name):
    """‖analytic − FD‖ / ‖FD‖ over the three base geometries ≤ 1e-3."""
    rng = np.random.default_rng(sorted(FD_CASES).index(name))
    pairs = np.array([_directional(name, c, t, rng) for c, t in BASES])
    analytic, fd = pairs[:, 0], pairs[:, 1]
    err = np.linalg.norm(analytic - fd) / np.linalg.norm(fd)
    print(f"{name}: analytic {analytic}, FD {fd}, relative error {err:.2e}")
    assert err <= 1e-3, (name, analytic, fd)


# ------------------------------------------------------------------ calibration
def blobs(n=24, voxel=0.5):
    """A few Gaussian blobs, off the axis and at several heights, (1, n, n, n)."""
    c = (np.arange(n) - (n - 1) / 2) * voxel
    z, y, x = np.meshgrid(c, c, c, indexing="ij")
    f = np.zeros((n, n, n))
    for (bx, by, bz, s) in ((2.0, 1.0, 3.0, 1.2), (-2.5, 0.5, -2.5, 1.0),
                            (0.5, -3.0, 0.5, 1.5), (-1.0, 2.5, -4.0, 0.9)):
        f += np.exp(-((x - bx) ** 2 + (y - by) ** 2 + (z - bz) ** 2) / (2 * s * s))
    return torch.tensor(f[None], dtype=torch.float32)


def calibration_projector(center_col, tilt):
    proj = Projector()
    proj.set_conebeam(12, 32, 40, 1.0, 1.0, 15.5, center_col, np.arange(12) * 30.0 + 7.0,
                      100.0, 150.0, 0.0, 0.0, tilt)
    proj.set_volume(24, 24, 24, 0.5, 0.5)
    return proj


def test_calibration_recovers_center_col_and_tilt():
    start = time.perf_counter()
    f = blobs()
    with torch.no_grad():
        data = calibration_projector(19.5 + 0.7, 0.5)(f)
    params = fit_geometry(calibration_projector(19.5, 0.0), f, data,
                          ["centerCol", "tiltAngle"], max_iter=40)
    col, tilt = params["centerCol"].item(), params["tiltAngle"].item()
    print(f"calibration: centerCol {col:.4f} (true 20.2), tilt {tilt:.4f}° (true 0.5), "
          f"{time.perf_counter() - start:.1f} s")
    assert abs(col - 20.2) < 0.05 and abs(tilt - 0.5) < 0.05


# ------------------------------------------------------------------ modular beams
MODULAR_NAMES = ("sourcePositions", "moduleCenters", "rowVectors", "colVectors")


def modular_projector(center_col=2.4, tilt=1.0, forward=True):
    """``small_projector``'s cone beam as a modular beam (``convert_to_modularbeam``);
    tilt 0 gives vertical modules (the column-wise VJP), else the general one."""
    proj = small_projector(center_col, tilt, OFF_CENTRE)
    proj.forward_project = forward
    proj.leapct.convert_to_modularbeam()
    return proj


@pytest.mark.parametrize("forward", [True, False])
def test_modular_parameters_reproduce_the_facade(forward):
    proj = modular_projector(forward=forward)
    lc = proj.leapct
    x = smooth_volume() if forward else ramp().float()
    want = facade_output(proj, x)
    params = proj.geometry_parameters()
    assert set(params) == set(MODULAR_NAMES)
    for name in MODULAR_NAMES:
        p = params[name]
        assert p.dtype == torch.float64 and p.shape == (ANGLES.size, 3) and p.requires_grad
        np.testing.assert_array_equal(p.detach().numpy(),
                                      lc._need_geometry()[name].astype(np.float64))
    np.testing.assert_array_equal(proj(x)[0].detach().numpy(), want)
    (proj(x).double() * (smooth_volume().double() if not forward else ramp())).sum().backward()
    assert all(p.grad is not None and float(p.grad.abs().sum()) > 0 for p in params.values())


def test_modular_parameters_write_back():
    proj = modular_projector()
    params = proj.geometry_parameters()
    with torch.no_grad():
        params["sourcePositions"][:, 2] += 0.5
        params["moduleCenters"][1] += torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)
    want = {k: p.detach().numpy().copy() for k, p in params.items()}
    proj.clear_geometry_parameters(write_back=True)
    assert list(proj.parameters()) == []
    lc = proj.leapct
    assert lc.get_geometry() == "MODULAR"
    np.testing.assert_allclose(lc.get_sourcePositions(), want["sourcePositions"], rtol=1e-6)
    np.testing.assert_allclose(lc.get_moduleCenters(), want["moduleCenters"], rtol=1e-6)


def _modular_directional(name, tilt, rng):
    proj = modular_projector(2.4 + rng.uniform(-0.2, 0.2), tilt)
    f, gbar = smooth_volume(), ramp()
    p = proj.geometry_parameters()[name]
    d = torch.tensor(rng.standard_normal(p.shape), dtype=torch.float64)
    (proj(f).double() * gbar).sum().backward()
    return analytic_and_central_difference(p, d, STEP, lambda: _loss(proj, f, gbar))


@pytest.mark.parametrize("tilt", [0.0, 1.0])
@pytest.mark.parametrize("name", MODULAR_NAMES[:2])
def test_modular_directional_derivatives(name, tilt):
    """Sources and module centres along random per-view directions, three base
    geometries, against the float32 forward's central differences: ≤ 1e-3, for vertical
    modules (tilt 0: the column-wise VJP) and tilted ones (the general VJP). (The unit
    vectors' differences drown in float32 rounding at steps small enough to miss the
    kinks: they are checked in float64 below.)"""
    rng = np.random.default_rng(MODULAR_NAMES.index(name) + 10 * int(tilt))
    pairs = np.array([_modular_directional(name, tilt, rng) for _ in range(3)])
    err = np.linalg.norm(pairs[:, 0] - pairs[:, 1]) / np.linalg.norm(pairs[:, 1])
    print(f"modular {name} tilt {tilt}: {pairs.tolist()} relative error {err:.2e}")
    assert err <= 1e-3, (name, tilt, pairs)


@pytest.mark.parametrize("tilt", [0.0, 1.0])
def test_modular_gradients_match_float64_differences(tilt):
    """Every parameter along a random direction against central differences (step 1e-5)
    of the float64 model of the normalised geometry
    (``test_geometry_gradients.reference_projection``): ≤ 1e-6."""
    from test_geometry_gradients import _normalised, reference_projection
    rng = np.random.default_rng(int(tilt))
    proj = modular_projector(2.4, tilt)
    vol = proj.leapct.core_volume()
    f, gbar = smooth_volume(), ramp()
    params = proj.geometry_parameters()
    (proj(f).double() * gbar).sum().backward()
    base = [params[k].detach().numpy().copy() for k in MODULAR_NAMES]
    f64, g64 = f[0].double().numpy(), gbar[0].numpy()
    h = 1e-5
    for i, name in enumerate(MODULAR_NAMES):
        d = rng.standard_normal(base[i].shape) / (20.0 if i >= 2 else 1.0)
        plus = _normalised([b + h * d if j == i else b for j, b in enumerate(base)])
        minus = _normalised([b - h * d if j == i else b for j, b in enumerate(base)])
        fd = np.sum(g64 * (reference_projection(f64, *plus, v=vol)
                           - reference_projection(f64, *minus, v=vol))) / (2 * h)
        terms = params[name].grad.numpy() * d
        assert abs(fd) > 1e-2, name
        assert abs(terms.sum() - fd) <= 1e-6 * np.abs(terms).sum(), (name, terms.sum(), fd)
