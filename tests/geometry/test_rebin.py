"""leap.reconstruction.rebin, called directly: fan → parallel and cone → cone-parallel rebinning,
curved-module column resampling, the interpolation and conjugate-ray helpers, and their
input checks.

Data are exact line integrals of an analytic phantom along the rays of each geometry
(:func:`leap.geometry.rays.pixel_rays`, :meth:`leap.phantoms.Phantom.line_integrals`), so
the rebinned data can be compared with the exact projection in the geometry that the
rebinning returns; the only error left is the interpolation's. The facade's
``rebin_parallel_sinogram`` is tested in ``test_rebin_parallel_sinogram.py``, and the
numbers are compared with upstream LEAP in ``tests/compat/test_upstream_cases.py``.
"""
import math

import numpy as np
import pytest

import leap
from conftest import rel_l2
from leap.geometry import ConeParallelBeam
from leap.geometry.rays import pixel_rays
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from leap.reconstruction.rebin import (gather_view_column, rebin_curved, rebin_parallel,
                        rebin_parallel_sinogram, source_views)

SOD, SDD = 200.0, 400.0
FULL = np.linspace(0.0, 2.0 * np.pi, 180, endpoint=False)

# Inside every detector's field of view below (the rebinned rays are all measured).
PHANTOM = Phantom([
    PhantomObject(kind=ELLIPSOID, centre=[3.0, -2.0, 0.5], radii=[8.0, 6.0, 5.0], value=0.02),
    PhantomObject(kind=ELLIPSOID, centre=[-4.0, 3.0, -1.0], radii=[3.0, 4.0, 3.0], value=0.03),
])
# The same cross-section for every row: fan-beam rows are independent 2-D fans.
PHANTOM_2D = Phantom([
    PhantomObject(kind=ELLIPSOID, centre=[3.0, -2.0, 0.0], radii=[8.0, 6.0, 1e4], value=0.02),
    PhantomObject(kind=ELLIPSOID, centre=[-4.0, 3.0, 0.0], radii=[3.0, 4.0, 1e4], value=0.03),
])


def exact(geo, phantom=PHANTOM):
    """Exact projections (float32) of ``phantom`` in ``geo``."""
    origins, directions = pixel_rays(geo)
    vals = phantom.line_integrals(origins.reshape(-1, 3), directions.reshape(-1, 3))
    return vals.reshape(origins.shape[:3]).astype(np.float32)


def fan(tau=0.0, curved=False, angles=FULL, num_cols=80, center_col=40.3):
    det = leap.Detector(num_rows=1, num_cols=num_cols, pixel_height=1.0, pixel_width=1.0,
                        center_row=0.0, center_col=center_col, curved=curved)
    return leap.FanBeam(detector=det, angles=angles, sod=SOD, sdd=SDD, tau=tau)


def cone(tau=0.0, curved=False, angles=FULL, **det_kw):
    det = leap.Detector(**dict(dict(num_rows=12, num_cols=80, pixel_height=1.0,
                                    pixel_width=1.0), **det_kw), curved=curved)
    return leap.ConeBeam(detector=det, angles=angles, sod=SOD, sdd=SDD, tau=tau)


# ------------------------------------------------------------------ rebin_parallel

@pytest.mark.parametrize("tau,curved", [(0.0, False), (3.0, False), (-3.0, True)])
def test_fan_rebinned_to_parallel_is_the_parallel_projection(tau, curved):
    geo = fan(tau, curved)
    g = exact(geo, PHANTOM_2D)
    fan_data = g.copy()
    new, out = rebin_parallel(geo, g)
    assert out is g                                     # in place
    # The parallel geometry: column spacing at the axis, same centre column and views.
    R = math.hypot(SOD, tau)
    assert type(new) is leap.ParallelBeam
    assert new.detector.pixel_width == pytest.approx(R / SDD, rel=1e-12)
    assert new.detector.center_col == geo.detector.center_col
    assert not new.detector.curved
    np.testing.assert_array_equal(new.angles, geo.angles)
    ref = exact(new, PHANTOM_2D)
    err = rel_l2(out, ref)
    assert err < 0.01, err
    # ... and the rebinning did the work: the fan data themselves are far from it.
    assert rel_l2(fan_data, ref) > 5 * err


@pytest.mark.parametrize("tau,curved", [(3.0, False), (0.0, True)])
def test_cone_rebinned_to_cone_parallel_is_the_cone_parallel_projection(tau, curved):
    geo = cone(tau, curved)
    g = exact(geo)
    cone_data = g.copy()
    new, out = rebin_parallel(geo, g)
    R = math.hypot(SOD, tau)
    assert isinstance(new, ConeParallelBeam)
    assert (new.sod, new.sdd, new.tau) == (pytest.approx(R, rel=1e-12), SDD, 0.0)
    assert new.detector.pixel_width == pytest.approx(R / SDD, rel=1e-12)
    ref = exact(new)
    err = rel_l2(out, ref)
    assert err < 0.01, err
    assert rel_l2(cone_data, ref) > 4 * err


def test_short_scan_keeps_only_the_fully_measured_parallel_views():
    step = 2.0
    geo = fan(center_col=39.5, angles=np.deg2rad(np.arange(120) * step))   # 0°..238°
    g = exact(geo, PHANTOM_2D)
    with pytest.warns(RuntimeWarning, match="number of views drops from 120 to"):
        new, out = rebin_parallel(geo, g)
    # A parallel view φ needs the fan views φ + α for every fan angle α of the detector.
    half_fan = math.degrees(math.atan(39.5 / SDD))
    expected = [a for a in np.arange(120) * step if a - half_fan >= 0.0 and a + half_fan <= 238.0]
    n = new.num_angles
    assert n == len(expected) < 120
    np.testing.assert_allclose(np.rad2deg(new.angles), expected, atol=1e-9)
    assert rel_l2(out[:n], exact(new, PHANTOM_2D)) < 0.01
    assert np.all(out[n:] == 0.0)


def test_non_equispaced_angles_fall_back_to_linear_interpolation():
    angles = FULL + 0.004 * np.sin(np.arange(FULL.size))        # jittered views
    geo = fan(angles=angles)
    g = exact(geo, PHANTOM_2D)
    with pytest.warns(RuntimeWarning, match="linear interpolation"):
        new, out = rebin_parallel(geo, g)
    # order 2 on jittered views: still close to the parallel projection of the views
    # the rebinning reports (its uniform grid from the first to the last angle)
    assert rel_l2(out, exact(new, PHANTOM_2D)) < 0.03


def test_rebin_parallel_sinogram_is_one_row_of_rebin_parallel():
    geo = cone(tau=2.0)
    g = exact(geo)
    before = g.copy()
    for row in (0, 5, 11):
        sino = rebin_parallel_sinogram(geo, g, 6, row)
        np.testing.assert_array_equal(g, before)           # g is not changed
        _, full = rebin_parallel(geo, g.copy())
        np.testing.assert_array_equal(sino, full[:, row, :])
    # a row outside the detector: the one nearest center_row (5.5 → 6)
    np.testing.assert_array_equal(rebin_parallel_sinogram(geo, g, 6, -1),
                                  rebin_parallel_sinogram(geo, g, 6, 6))


# -------------------------------------------------------------------- rebin_curved

def _curved_module_scan(num_cols=160, pixel_width=0.25, wobble=0.45):
    """A curved cone scan whose columns were measured at the fan angles ``fa`` (radians,
    nominal angles ± ``wobble`` columns, as flat modules give) and the exact data there."""
    geo = cone(curved=True, num_rows=4, num_cols=num_cols, pixel_width=pixel_width,
               angles=np.linspace(0.0, 2.0 * np.pi, 8, endpoint=False))
    d = geo.detector
    dth = math.atan(d.pixel_width / SDD)
    nominal = (np.arange(num_cols) - d.center_col) * dth
    fa = nominal + wobble * dth * np.sin(np.arange(num_cols) * 2.0 * np.pi / 7.0)
    # Column j alone is a one-column curved detector whose column sits at fan angle fa[j].
    cols = [exact(geo.with_changes(detector=d.with_changes(num_cols=1, center_col=-a / dth)))
            for a in fa]
    return geo, fa, np.ascontiguousarray(np.concatenate(cols, axis=2))


def test_rebin_curved_gives_the_equiangular_projection():
    geo, fa, measured = _curved_module_scan()
    ref = exact(geo)
    naive = rel_l2(measured, ref)                   # the data taken as equi-angular
    g = measured.copy()
    out = rebin_curved(geo, g, np.degrees(fa))
    assert out is g
    err = rel_l2(out, ref)
    assert err < 0.5 * naive and err < 0.008, (err, naive)


def test_rebin_curved_reproduces_cubics_of_the_fan_angle():
    """Lagrange interpolation on the measured (non-uniform) angles: a cubic in the fan
    angle comes back exactly wherever the stencil has four or more points."""
    n = 30
    geo = cone(curved=True, num_rows=2, num_cols=n, center_col=13.2,
               angles=np.array([0.0, 2.0, 4.0]))
    dth = math.degrees(math.atan(1.0 / SDD))
    nominal = (np.arange(n) - 13.2) * dth
    fa = nominal + 0.4 * dth * np.sin(1.3 * np.arange(n))

    def cubic(x):
        return 1.0 + 2.0 * x - 3.0 * x ** 2 + 0.5 * x ** 3
    g = np.ascontiguousarray(np.broadcast_to(cubic(fa), geo.projection_shape), dtype=np.float32)
    out = rebin_curved(geo, g, fa)
    want = cubic(nominal)
    np.testing.assert_allclose(out[..., 4:-4], np.broadcast_to(want[4:-4], out[..., 4:-4].shape),
                               rtol=0, atol=2e-5 * np.abs(want).max())


def test_rebin_curved_at_the_nominal_angles_changes_nothing():
    geo = cone(curved=True, num_rows=3, num_cols=24, angles=np.array([0.0, 1.0]))
    dth = math.degrees(math.atan(1.0 / SDD))
    nominal = (np.arange(24) - geo.detector.center_col) * dth
    g = np.random.default_rng(5).random(geo.projection_shape, dtype=np.float32)
    before = g.copy()
    rebin_curved(geo, g, nominal)
    np.testing.assert_allclose(g, before, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------ helpers

def test_gather_view_column_is_exact_for_cubics_inside():
    nv, nc = 14, 15
    v, c = np.meshgrid(np.arange(nv, dtype=np.float64), np.arange(nc, dtype=np.float64),
                       indexing="ij")

    def f(v, c):
        return 0.5 + 0.3 * v - 0.02 * v ** 2 + 0.001 * v ** 3 + 0.1 * c * v - 0.004 * c ** 3
    data = np.stack([f(v, c), 2.0 * f(v, c)], axis=-1)         # a trailing axis rides along
    rng = np.random.default_rng(2)
    # at least two samples on either side (upstream shortens the stencils near the ends)
    vp = rng.uniform(4.0, nv - 5.0, size=(7, 5))
    cp = rng.uniform(4.0, nc - 5.0, size=(7, 5))
    out = gather_view_column(data, vp, cp, order=6)
    assert out.shape == (7, 5, 2)
    np.testing.assert_allclose(out[..., 0], f(vp, cp), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out[..., 1], 2.0 * f(vp, cp), rtol=1e-10, atol=1e-10)
    # at whole indices it picks the samples themselves
    np.testing.assert_array_equal(gather_view_column(data, v, c, order=6), data)


def test_source_views_wraps_full_scans():
    alpha = np.array([0.1, -0.05, 0.02])
    beta = np.array([-0.3, 7.0, 3.0])
    a, b = source_views(alpha, beta, True, 0.0, 0.0, 2.0 * np.pi - 0.1)
    np.testing.assert_array_equal(a, alpha)
    np.testing.assert_allclose(b, [2.0 * np.pi - 0.3, 7.0 - 2.0 * np.pi, 3.0])


@pytest.mark.parametrize("tau", [0.0, 4.0])
def test_source_views_conjugate_is_the_same_line(tau):
    """Off a short scan the ray (fan angle α, view β) is taken from its conjugate; both
    must be the same line of the fan geometry."""
    R = SOD
    atan_A = math.atan(2.0 * tau * R / (R * R - tau * tau))
    alpha = np.array([0.08, -0.05, 0.02])
    beta = np.array([-0.4, 3.6, -0.1])               # outside the scan [0, π + 0.3]
    a2, b2 = source_views(alpha, beta, False, atan_A, 0.0, math.pi + 0.3)
    assert np.all((b2 >= 0.0) & (b2 <= math.pi + 0.3))

    def line(a, b):
        # The ray of view b at flat-detector coordinate u = tan a: one column at s = sdd·u.
        det = leap.Detector(num_rows=1, num_cols=1, pixel_height=1.0, pixel_width=1.0,
                            center_row=0.0, center_col=-SDD * math.tan(a))
        o, d = pixel_rays(leap.FanBeam(detector=det, angles=np.array([b]), sod=SOD, sdd=SDD,
                                       tau=tau))
        return o.reshape(3), d.reshape(3)
    for k in range(alpha.size):
        o1, d1 = line(alpha[k], beta[k])
        o2, d2 = line(a2[k], b2[k])
        assert abs(abs(d1 @ d2) - 1.0) < 1e-12                      # parallel
        gap = o2 - o1
        assert np.linalg.norm(gap - (gap @ d1) * d1) < 1e-9        # and the same line


# ------------------------------------------------------------------------ bad input

def _bad_rebin_parallel_calls():
    g = np.zeros(fan().projection_shape, np.float32)
    ro = g.copy()
    ro.flags.writeable = False
    par = leap.ParallelBeam(detector=fan().detector, angles=FULL)
    tilted = leap.ConeBeam(detector=cone().detector, angles=FULL, sod=SOD, sdd=SDD, tilt=0.02)
    narrow = fan(num_cols=2, center_col=0.5)
    one_view = fan(angles=np.array([0.3]))
    short = fan(angles=np.deg2rad(np.arange(5) * 1.0))
    return [
        (par, g, ValueError, "fan-beam or cone-beam"),
        (tilted, np.zeros(tilted.projection_shape, np.float32), ValueError, "tilted"),
        (fan(), g.astype(np.float64), TypeError, "float32"),
        (fan(), g.copy()[:, :, ::-1], TypeError, "C-contiguous"),
        (fan(), g[:, :, :40].copy(), ValueError, "shape"),
        (fan(), ro, ValueError, "read-only"),
        (narrow, np.zeros(narrow.projection_shape, np.float32), ValueError, "three detector columns"),
        (one_view, np.zeros(one_view.projection_shape, np.float32), ValueError, "two distinct"),
        (short, np.zeros(short.projection_shape, np.float32), ValueError, "too short"),
    ]


@pytest.mark.parametrize("case", range(9))
def test_rebin_parallel_rejects_bad_input_and_leaves_g_alone(case):
    geo, g, err, match = _bad_rebin_parallel_calls()[case]
    if g.flags.writeable:
        g[...] = np.arange(g.size, dtype=np.float32).reshape(g.shape) % 7
    before = g.copy()
    with pytest.raises(err, match=match):
        rebin_parallel(geo, g)
    np.testing.assert_array_equal(g, before)


def test_rebin_curved_rejects_bad_input():
    geo = cone(curved=True, num_rows=2, num_cols=10, angles=np.array([0.0, 1.0]))
    dth = math.degrees(math.atan(1.0 / SDD))
    fa = (np.arange(10) - 4.5) * dth
    g = np.ones(geo.projection_shape, np.float32)
    with pytest.raises(ValueError, match="curved cone-beam"):
        rebin_curved(cone(num_rows=2, num_cols=10, angles=np.array([0.0, 1.0])), g, fa)
    with pytest.raises(ValueError, match="one angle per column"):
        rebin_curved(geo, g, fa[:-1])
    with pytest.raises(ValueError, match="strictly increasing"):
        rebin_curved(geo, g, fa[::-1])
    for order in (0, 7, 2.5):
        with pytest.raises(ValueError, match="order"):
            rebin_curved(geo, g, fa, order=order)
    with pytest.raises(TypeError, match="float32"):
        rebin_curved(geo, g.astype(np.float64), fa)
    np.testing.assert_array_equal(g, 1.0)


def test_rebin_parallel_sinogram_rejects_bad_input():
    geo = fan()
    g = np.zeros(geo.projection_shape, np.float32)
    with pytest.raises(ValueError, match="fan-beam or cone-beam"):
        rebin_parallel_sinogram(leap.ParallelBeam(detector=geo.detector, angles=FULL), g)
    with pytest.raises(TypeError, match="float32"):
        rebin_parallel_sinogram(geo, g.astype(np.float64))
    with pytest.raises(ValueError, match="shape"):
        rebin_parallel_sinogram(geo, g[:-1].copy())
    for row in (True, 1.5):
        with pytest.raises(TypeError, match="iRow must be an integer"):
            rebin_parallel_sinogram(geo, g, 6, row)
