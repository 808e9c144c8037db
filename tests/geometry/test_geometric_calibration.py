"""leap.preprocessing.geometric_calibration, called directly: the conjugate-ray costs behind
find_centerCol / find_tau, the tilt search behind estimate_tilt, the consistency cost and
the small numerical helpers, on data with a known geometry.

Data are exact line integrals of an analytic phantom along each geometry's rays
(:func:`leap.geometry.rays.pixel_rays`), so any offset in an estimate is the method's,
not the projector's. The facade's calibration methods (which pick rows and search ranges
and set the result) are tested in ``tests/compat/test_geometry_methods.py``.
"""
import math
from types import SimpleNamespace

import numpy as np
import pytest

import leap
from conftest import rel_l2
from leap import geometric_calibration as cal
from leap.geometry.rays import pixel_rays
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from leap.reconstruction.weights import angular_range

FULL = np.linspace(0.0, 2.0 * np.pi, 120, endpoint=False)
PHANTOM = Phantom([
    PhantomObject(kind=ELLIPSOID, centre=[3.0, -2.0, 0.5], radii=[10.0, 7.0, 6.0], value=0.02),
    PhantomObject(kind=ELLIPSOID, centre=[-5.0, 4.0, -1.5], radii=[3.0, 4.0, 3.0], value=0.03),
    PhantomObject(kind=ELLIPSOID, centre=[6.0, 5.0, 2.0], radii=[2.0, 2.0, 2.0], value=0.05),
])


def doubled():
    """PHANTOM twice as large (a new phantom: Phantom.scale works in place)."""
    return Phantom(list(PHANTOM)).scale(2.0)


def exact(geo, phantom=PHANTOM):
    origins, directions = pixel_rays(geo)
    vals = phantom.line_integrals(origins.reshape(-1, 3), directions.reshape(-1, 3))
    return vals.reshape(origins.shape[:3]).astype(np.float32)


def params(geo):
    """The calibration parameters of a core geometry, as the facade builds them
    (LEAP's internal angles φ = ψ − π/2, degrees for tilt and range)."""
    d = geo.detector
    kind = {leap.ParallelBeam: "parallel", leap.FanBeam: "fan", leap.ConeBeam: "cone"}[type(geo)]
    return SimpleNamespace(
        kind=kind, phis=np.asarray(geo.angles, dtype=np.float64) - 0.5 * np.pi,
        numAngles=geo.num_angles, numRows=d.num_rows, numCols=d.num_cols,
        pixelHeight=d.pixel_height, pixelWidth=d.pixel_width, centerRow=d.center_row,
        centerCol=d.center_col, sod=getattr(geo, "sod", 0.0), sdd=getattr(geo, "sdd", 0.0),
        tau=getattr(geo, "tau", 0.0), curved=d.curved,
        tiltAngle=math.degrees(getattr(geo, "tilt", 0.0)),
        angularRange=angular_range(np.degrees(geo.angles)))


def one_row(center_col, pixel_width=1.0, num_cols=64):
    return leap.Detector(num_rows=1, num_cols=num_cols, pixel_height=1.0,
                         pixel_width=pixel_width, center_row=0.0, center_col=center_col)


# ------------------------------------------------------------------ small helpers

def test_find_minimum_refines_with_a_parabola():
    k = np.arange(31, dtype=np.float64)
    pos, value = cal.find_minimum(3.0 * (k - 13.3) ** 2 + 2.0, 0, 30)
    assert pos == pytest.approx(13.3, abs=1e-12)            # exact for a parabola
    assert value == pytest.approx(2.0, abs=1e-12)
    # restricted range: the minimum of the part searched
    pos, _ = cal.find_minimum(3.0 * (k - 13.3) ** 2 + 2.0, 15, 25)
    assert pos == 15.0


def test_find_minimum_prefers_an_interior_local_minimum_to_an_edge():
    c = np.array([0.5, 2.0, 3.0, 1.0, 3.0, 4.0])           # global minimum at the end
    pos, value = cal.find_minimum(c, 0, 5)
    assert pos == pytest.approx(3.0) and value == pytest.approx(1.0)
    # no refinement next to a candidate without conjugate pairs
    c = np.array([cal.NO_PAIRS, 1.0, 2.0, 5.0])
    assert cal.find_minimum(c, 0, 3) == (1.0, 1.0)


def test_default_center_range_is_leaps_middle_of_the_detector():
    assert cal.default_center_range(100, False) == (23, 77)
    assert cal.default_center_range(100, True) == (10, 90)
    assert cal.default_center_range(64, False) == (14, 50)


def test_phi_index_and_angular_step():
    phis = np.deg2rad([10.0, 12.0, 14.0, 16.0])
    np.testing.assert_allclose(cal.phi_index(phis, np.deg2rad([11.0, 15.5])), [0.5, 2.75])
    np.testing.assert_allclose(cal.phi_index(phis, np.deg2rad([0.0, 90.0])), [0.0, 3.0])
    np.testing.assert_allclose(cal.phi_index(phis[::-1], np.deg2rad(11.0)), 2.5)
    assert cal.angular_step(phis) == pytest.approx(np.deg2rad(2.0))
    assert cal.angular_step(phis[::-1]) == pytest.approx(-np.deg2rad(2.0))
    assert cal.angular_step(phis[:1]) == pytest.approx(2.0 * np.pi)


def test_interp2_clamped_is_exact_for_bilinear_functions_and_clamps():
    r, c = np.meshgrid(np.arange(5.0), np.arange(7.0), indexing="ij")
    img = 1.0 + 0.5 * r - 0.25 * c + 0.1 * r * c
    rr = np.array([0.0, 1.3, 3.9, 4.0, 2.5])
    cc = np.array([0.0, 5.7, 0.2, 6.0, 3.25])
    np.testing.assert_allclose(cal.interp2_clamped(img, rr, cc),
                               1.0 + 0.5 * rr - 0.25 * cc + 0.1 * rr * cc, rtol=1e-12)
    np.testing.assert_allclose(cal.interp2_clamped(img, [-3.0, 9.0], [-1.0, 20.0]),
                               [img[0, 0], img[4, 6]])


def test_ray_derivative_is_the_central_difference_in_place():
    k = np.arange(9, dtype=np.float64)
    q = np.tile(2.0 + 0.5 * k - 0.1 * k ** 2, (2, 3, 1))
    out = cal.ray_derivative(q, 0.25)
    assert out is q
    # central differences are exact for a quadratic: d/dx at column k, x = 0.25·k
    np.testing.assert_allclose(q[..., 1:-1], np.broadcast_to((0.5 - 0.2 * k[1:-1]) / 0.25,
                                                             q[..., 1:-1].shape), rtol=1e-12)
    # LEAP's ends: the one-sided difference, still halved
    assert q[0, 0, 0] == pytest.approx((0.5 - 0.1) * 0.5 / 0.25)
    assert q[0, 0, -1] == pytest.approx((0.5 * 8 - 0.1 * 64 - (0.5 * 7 - 0.1 * 49)) * 0.5 / 0.25)


# -------------------------------------------------------------- centre column / tau

def test_parallel_center_cost_vanishes_at_a_whole_pixel_centre():
    """Views 180° apart are exact mirror images about the true centre column."""
    geo = leap.ParallelBeam(detector=one_row(34.0, pixel_width=0.5), angles=FULL)
    g, p = exact(geo), params(geo)
    lo, hi = cal.default_center_range(64, False)
    costs = cal.parallel_center_costs(g, p, 0, lo, hi)
    assert costs[34] < 1e-10 * costs[lo:hi + 1].max()
    assert min(costs[33], costs[35]) > 1e-4
    assert np.all(costs[:lo] == cal.NO_PAIRS) and np.all(costs[hi + 1:] == cal.NO_PAIRS)
    # the cost grows away from the truth on both sides
    assert np.all(np.diff(costs[34:41]) > 0) and np.all(np.diff(costs[28:35]) < 0)
    pos, _ = cal.find_minimum(costs, lo, hi)
    assert pos == pytest.approx(34.0, abs=0.05)


def test_parallel_center_cost_finds_a_fractional_centre():
    geo = leap.ParallelBeam(detector=one_row(30.6, pixel_width=0.5), angles=FULL)
    lo, hi = cal.default_center_range(64, False)
    costs = cal.parallel_center_costs(exact(geo), params(geo), 0, lo, hi)
    pos, _ = cal.find_minimum(costs, lo, hi)
    assert pos == pytest.approx(30.6, abs=0.1)


@pytest.mark.parametrize("center_col,tau", [(34.0, 0.0), (30.6, 0.0), (31.5, 2.0)])
def test_fan_center_cost_finds_the_centre_column(center_col, tau):
    geo = leap.FanBeam(detector=one_row(center_col), angles=FULL, sod=200.0, sdd=400.0, tau=tau)
    p = params(geo)
    sino = cal.rotated_sinogram(exact(geo), p, 0)
    lo, hi = cal.default_center_range(64, False)
    costs = cal.divergent_center_costs(sino, p, lo, hi, find_tau=False)
    pos, _ = cal.find_minimum(costs, lo, hi)
    assert pos == pytest.approx(center_col, abs=0.1)
    n = round(center_col)
    assert costs[n] < 0.3 * min(costs[n - 2], costs[n + 2])


@pytest.mark.parametrize("tau", [2.0, -1.3])
def test_fan_tau_cost_finds_tau(tau):
    geo = leap.FanBeam(detector=one_row(31.5), angles=FULL, sod=200.0, sdd=400.0, tau=tau)
    p = params(geo)
    p.tau = 0.0                                     # what is searched for
    lo, hi = cal.default_center_range(64, False)
    costs = cal.divergent_center_costs(cal.rotated_sinogram(exact(geo), p, 0), p, lo, hi,
                                       find_tau=True)
    pos, _ = cal.find_minimum(costs, lo, hi)
    step = p.pixelWidth * p.sod / p.sdd            # τ per candidate
    assert step * (pos - 0.5 * (p.numCols - 1)) == pytest.approx(tau, abs=0.05)


def test_rotated_sinogram_reads_the_untilted_row_of_a_tilted_detector():
    det = leap.Detector(num_rows=16, num_cols=64, pixel_height=1.0, pixel_width=1.0,
                        center_row=7.0, center_col=33.0)
    straight = leap.ConeBeam(detector=det, angles=FULL[:30], sod=400.0, sdd=800.0)
    tilted = straight.with_changes(tilt=math.radians(3.0))
    big = doubled()                        # features several pixels wide: bilinear is fine
    g_straight, g_tilted = exact(straight, big), exact(tilted, big)
    np.testing.assert_array_equal(cal.rotated_sinogram(g_straight, params(straight), 4),
                                  g_straight[:, 4].astype(np.float64))
    p = params(tilted)
    for row in (4, 7, 10):
        resampled = cal.rotated_sinogram(g_tilted, p, row)
        err = rel_l2(resampled, g_straight[:, row])
        assert err < 0.025 and err < 0.4 * rel_l2(g_tilted[:, row], g_straight[:, row])


# -------------------------------------------------------------------- tilt

def test_rebin_parallel_projection_is_the_parallel_projection():
    geo = leap.FanBeam(detector=one_row(30.6), angles=FULL, sod=200.0, sdd=400.0, tau=2.0)
    p = params(geo)
    phi = p.phis[37] + 0.01                          # between two views
    proj = cal.rebin_parallel_projection(exact(geo), p, phi)
    par = leap.ParallelBeam(detector=one_row(30.6, pixel_width=math.hypot(200.0, 2.0) / 400.0),
                            angles=np.array([phi + 0.5 * np.pi]))
    assert proj.shape == (1, 64)
    assert rel_l2(proj, exact(par)[0]) < 0.01


def test_conjugate_projections_of_parallel_data_are_mirror_images():
    geo = leap.ParallelBeam(detector=leap.Detector(num_rows=4, num_cols=48, pixel_height=1.0,
                                                   pixel_width=1.0), angles=FULL)
    a, b = cal.conjugate_projections(exact(geo), params(geo))
    assert rel_l2(b[:, ::-1], a) < 1e-6
    short = geo[:40]                                   # 120°
    with pytest.raises(ValueError, match="at least 180 degrees"):
        cal.conjugate_projections(exact(short), params(short))


@pytest.mark.parametrize("tilt", [2.0, -1.3])
def test_tilt_costs_find_the_detector_rotation(tilt):
    """A nearly parallel cone beam (no cone-angle bias) whose detector is rotated by
    ``tilt`` degrees about its centre; the phantom is scaled up so that bilinear
    interpolation of the rotated images does not dominate the cost."""
    det = leap.Detector(num_rows=32, num_cols=64, pixel_height=1.0, pixel_width=1.0)
    geo = leap.ConeBeam(detector=det, angles=FULL, sod=20000.0, sdd=20300.0,
                        tilt=math.radians(tilt))
    p = params(geo.with_changes(tilt=0.0))             # the nominal, untilted geometry
    a, b = cal.conjugate_projections(exact(geo, doubled()), p)
    angles, costs = cal.tilt_costs(a, b, p)
    np.testing.assert_allclose(angles, np.round(np.arange(-49, 50) * 0.1, 10), atol=1e-12)
    pos, _ = cal.find_minimum(costs, 0, costs.size - 1)
    estimate = angles[0] + cal.TILT_STEP * pos
    assert estimate == pytest.approx(tilt, abs=0.1)
    d0 = cal.conjugate_difference(a, b, p, 0.0, p.centerCol)
    d1 = cal.conjugate_difference(a, b, p, estimate, p.centerCol)
    assert np.sum(d1 ** 2) < 0.25 * np.sum(d0 ** 2)          # bilinear resampling leaves ~10 %


# ------------------------------------------------------------- consistency cost

@pytest.fixture(scope="module")
def consistent_cone_scan():
    """An axial flat-panel cone scan of a phantom well inside the field of view
    (untruncated: the consistency conditions hold exactly for the continuous data)."""
    small = Phantom([
        PhantomObject(kind=ELLIPSOID, centre=[2.0, -1.0, 0.5], radii=[5.0, 4.0, 4.0], value=0.02),
        PhantomObject(kind=ELLIPSOID, centre=[-3.0, 2.5, -1.5], radii=[2.0, 2.5, 2.0], value=0.03),
        PhantomObject(kind=ELLIPSOID, centre=[3.0, 3.0, 2.0], radii=[1.5, 1.5, 1.5], value=0.05),
    ])
    det = leap.Detector(num_rows=24, num_cols=48, pixel_height=1.0, pixel_width=1.0)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0.0, 2.0 * np.pi, 72, endpoint=False),
                        sod=200.0, sdd=400.0)
    g = exact(geo, small)
    assert g[:, :, [0, -1]].max() == 0.0 and g[:, [0, -1], :].max() == 0.0
    return g, params(geo)


@pytest.mark.parametrize("which,delta", [("col", 1.0), ("col", -1.0), ("tau", 0.5), ("tau", -0.5),
                                         ("tilt", 1.0), ("tilt", -1.0)])
def test_consistency_cost_is_lowest_at_the_true_geometry(consistent_cone_scan, which, delta):
    g, p = consistent_cone_scan
    c0 = cal.consistency_cost(g, p, 0.0, 0.0, 0.0, 0.0)
    shift = dict(col=(0.0, delta, 0.0, 0.0), tau=(0.0, 0.0, delta, 0.0),
                 tilt=(0.0, 0.0, 0.0, delta))[which]
    assert cal.consistency_cost(g, p, *shift) > 1.5 * c0 > 0.0


def test_consistency_cost_needs_views_40_degrees_apart(consistent_cone_scan):
    g, p = consistent_cone_scan
    close = SimpleNamespace(**dict(vars(p), phis=p.phis[:5], numAngles=5))
    with pytest.raises(ValueError, match="40 degrees"):
        cal.consistency_cost(g[:5], close, 0.0, 0.0, 0.0, 0.0)
