"""Core helpers behind the LEAP facade's geometry and display methods: view-angle
helpers (leap.geometry.angles), the geometry edits (with_num_angles, resized, shifted,
spun, ...), pixel positions and the sketch, the field-of-view radius of
get_diameterFOV_min, volume masks (leap.algorithms.masks), the grids after resampling
(leap.preprocessing.resample) and the calibration searches on a core geometry
(leap.preprocessing.geometric_calibration). The facade methods themselves are tested in
tests/compat/test_geometry_methods.py."""
import math

import numpy as np
import pytest

from leap import geometric_calibration as cal
from leap.geometry import ConeBeam, ConeParallelBeam, Detector, FanBeam, ParallelBeam, Volume
from leap.geometry.angles import angular_span, are_equispaced, respaced_angles
from leap.geometry.cone import z_source_offset
from leap.geometry.ranges import (bounding_radius, fov_or_volume_radius, leap_row_range,
                                  rows_per_slab)
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.geometry.sketch import sketch, volume_edges
from leap.algorithms.masks import fov_mask, space_carving, window_fov
from leap.operators import project
from leap.preprocessing.resample import (detector_factors, down_sample, resample_geometry, resample_volume,
                           volume_factors)
from leap.system import CTSystem
from leap.reconstruction.weights import angular_range, offset_scan_extra_columns, offset_scan_layout

FULL = np.linspace(0.0, 2.0 * np.pi, 72, endpoint=False)


def _det(rows=4, cols=16, **kw):
    return Detector(num_rows=rows, num_cols=cols, pixel_height=1.1, pixel_width=0.9, **kw)


def _cone(**kw):
    kw.setdefault("angles", FULL)
    return ConeBeam(detector=kw.pop("detector", _det(center_row=1.9, center_col=8.2)),
                    sod=60.0, sdd=120.0, **kw)


def _vol(**kw):
    return Volume(**{"num_x": 10, "num_y": 12, "num_z": 3, "voxel_width": 0.8, "voxel_height": 1.0,
                     **kw})


# ------------------------------------------------------------------ view angles
def test_angular_span_is_leaps_range_in_any_unit():
    deg = np.array([10.0, 20.0, 30.0, 50.0])
    assert angular_span(deg) == 40.0 + 0.5 * 20.0 + 0.5 * 10.0
    assert angular_span(np.deg2rad(deg)) == pytest.approx(np.deg2rad(55.0), abs=1e-15)
    assert angular_span([3.0]) == 0.0
    assert angular_range(deg) == angular_span(deg)      # the weights' name for it


def test_respaced_angles_keep_start_direction_and_range():
    a = np.deg2rad(np.arange(36) * 10.0)                # range 360°
    new = respaced_angles(a, 8)
    np.testing.assert_allclose(np.rad2deg(new), np.arange(8) * 45.0, atol=1e-12)
    down = respaced_angles(a[::-1], 4)                  # decreasing: stays decreasing
    np.testing.assert_allclose(np.rad2deg(down), [350.0, 260.0, 170.0, 80.0], atol=1e-12)
    np.testing.assert_allclose(respaced_angles([30.0], 3, full_turn=360.0), [30.0, 150.0, 270.0])
    with pytest.raises(ValueError, match="positive"):
        respaced_angles(a, 0)


def test_are_equispaced_tolerance():
    a = np.linspace(0.0, 1.0, 11)
    assert are_equispaced(a) and are_equispaced(a[:2])
    b = a.copy()
    b[4] += 1.5e-5
    assert are_equispaced(b)
    b[4] += 3e-5
    assert not are_equispaced(b)
    assert not are_equispaced(b, tolerance=1e-6) and are_equispaced(b, tolerance=1e-3)


def test_z_source_offset_places_the_helix():
    geo = _cone(angles=np.linspace(-0.3, 4 * np.pi, 50), helical_pitch=1.7)
    # LEAP: z_s = h·φ + z_source_offset, φ = ψ − π/2.
    phis = geo.angles - 0.5 * np.pi
    off = z_source_offset(geo)
    np.testing.assert_allclose(geo.source_z(), 1.7 * phis + off, atol=1e-12)
    assert off == pytest.approx(-0.5 * (phis[0] + phis[-1]) * 1.7, rel=1e-14)
    # A slice of views stays on the same helix.
    part = geo[10:20]
    np.testing.assert_allclose(part.source_z(), 1.7 * phis[10:20] + z_source_offset(part))
    assert z_source_offset(_cone()) == 0.0
    cp = ConeParallelBeam(detector=_det(), angles=FULL, sod=60.0, sdd=120.0, helical_pitch=1.0)
    assert z_source_offset(cp) == 0.0


# ------------------------------------------------------------------ geometry edits
def test_with_num_angles_respaces_and_modular_refuses():
    geo = _cone(helical_pitch=1.0)
    new = geo.with_num_angles(9)
    assert new.num_angles == 9 and new.sod == geo.sod
    np.testing.assert_allclose(new.angles, np.arange(9) * 2 * np.pi / 9, atol=1e-12)
    assert new.helical_mid_angle == geo.helical_mid_angle      # the same helix
    with pytest.raises(ValueError, match="per-view vectors"):
        _cone().to_modular().with_num_angles(3)


def test_resized_keeps_central_ray_index_or_module_centre():
    geo = _cone()
    big = geo.resized(num_cols=30)
    assert big.detector.num_cols == 30 and big.detector.center_col == 8.2
    assert big.detector.num_rows == 4 and big.detector.center_row == 1.9
    mod = _cone(detector=_det()).to_modular().resized(num_rows=7)
    assert mod.detector.num_rows == 7 and mod.detector.center_row == 3.0
    same = _cone(detector=_det()).to_modular()
    np.testing.assert_array_equal(mod.module_centers, same.module_centers)


def test_shifted_moves_the_detector_like_its_modular_form():
    geo = _cone()
    moved = geo.shifted(0.7, -1.3)
    assert moved.detector.center_row == pytest.approx(1.9 - 0.7 / 1.1)
    assert moved.detector.center_col == pytest.approx(8.2 + 1.3 / 0.9)
    np.testing.assert_allclose(moved.to_modular().module_centers,
                               geo.to_modular().shifted(0.7, -1.3).module_centers, atol=1e-9)
    par = ParallelBeam(detector=_det(center_col=8.2), angles=FULL).shifted(0.0, 0.9)
    assert par.detector.center_col == pytest.approx(7.2)


def test_spun_turns_cone_tilt_and_modules_alike():
    geo = _cone(tilt=np.deg2rad(1.0))
    turned = geo.spun(np.deg2rad(1.5))
    assert turned.tilt == pytest.approx(np.deg2rad(2.5))
    via_modules = geo.to_modular().spun(np.deg2rad(1.5))
    np.testing.assert_allclose(turned.to_modular().col_vectors, via_modules.col_vectors, atol=1e-12)
    np.testing.assert_allclose(turned.to_modular().row_vectors, via_modules.row_vectors, atol=1e-12)
    with pytest.raises(ValueError, match="5 degrees"):
        geo.spun(np.deg2rad(4.5))
    par = ParallelBeam(detector=_det(), angles=FULL)
    fan = FanBeam(detector=_det(), angles=FULL, sod=60.0, sdd=120.0)
    for g in (par, fan):
        with pytest.raises(ValueError, match="cone- and modular-beam"):
            g.spun(0.1)
        with pytest.raises(ValueError, match="modular-beam"):
            g.reoriented(np.eye(3))
        with pytest.raises(ValueError, match="modular-beam"):
            g.rotated(np.eye(3))
    with pytest.raises(ValueError, match="modular-beam"):
        geo.reoriented(np.eye(3))


# ------------------------------------------------------------------ pixel positions
def test_pixel_positions_of_modular_and_flat_cone():
    geo = _cone(angles=FULL[:5], tau=0.4, helical_pitch=0.8)
    pos = pixel_positions(geo)
    assert pos.shape == (5, 4, 16, 3)
    mod = geo.to_modular()
    d = mod.detector
    u = (np.arange(d.num_cols) - 0.5 * (d.num_cols - 1)) * d.pixel_width
    v = (np.arange(d.num_rows) - 0.5 * (d.num_rows - 1)) * d.pixel_height
    expect = (mod.module_centers[:, None, None, :]
              + u[None, None, :, None] * mod.col_vectors[:, None, None, :]
              + v[None, :, None, None] * mod.row_vectors[:, None, None, :])
    np.testing.assert_allclose(pos, expect, atol=1e-9)
    np.testing.assert_allclose(pixel_positions(mod), expect, atol=1e-9)
    # On the ray of each pixel, sdd from the source along the central ray.
    org, dirs = pixel_rays(geo)
    off = pos - org[..., 0, :]
    np.testing.assert_allclose(np.cross(off, dirs[..., 0, :]), 0.0, atol=1e-9)


def test_pixel_positions_curved_fan_parallel_and_cone_parallel():
    curved = _cone(angles=FULL[:3], detector=_det(curved=True))
    pos = pixel_positions(curved)
    src = np.concatenate([curved.source_xy(), curved.source_z()[:, None]], axis=1)
    in_plane = np.linalg.norm((pos - src[:, None, None, :])[..., :2], axis=-1)
    np.testing.assert_allclose(in_plane, 120.0, rtol=1e-12)
    fan = FanBeam(detector=_det(center_row=1.0), angles=FULL[:2], sod=60.0, sdd=120.0)
    np.testing.assert_allclose(pixel_positions(fan)[0, :, 0, 2], (np.arange(4) - 1.0) * 1.1)
    par = ParallelBeam(detector=_det(), angles=np.array([0.0]))
    on_axis_plane = pixel_positions(par)
    np.testing.assert_allclose(on_axis_plane[0, :, :, 1], 0.0, atol=1e-12)   # rays along +y
    np.testing.assert_allclose(pixel_positions(par, parallel_distance=5.0) - on_axis_plane,
                               np.broadcast_to([0.0, 5.0, 0.0], on_axis_plane.shape), atol=1e-12)
    cp = ConeParallelBeam(detector=_det(), angles=np.array([0.0]), sod=60.0, sdd=120.0)
    org, _ = pixel_rays(cp)
    depth = pixel_positions(cp)[..., 1] - org[..., 0, 1]    # central ray along +y at ψ = 0
    np.testing.assert_allclose(depth, 120.0, rtol=1e-12)


def test_sketch_lines():
    geo, vol = _cone(angles=FULL[:6], helical_pitch=0.5), _vol()
    s = sketch(geo, vol, [0, 4])
    assert len(s.detectors) == 2 and s.detectors[0].shape == (5, 3)
    pos = pixel_positions(geo)
    np.testing.assert_allclose(s.detectors[1], pos[4][[0, 0, -1, -1, 0], [0, -1, -1, 0, 0]],
                               atol=1e-12)
    src = np.concatenate([geo.source_xy(), geo.source_z()[:, None]], axis=1)
    np.testing.assert_allclose(s.source_path, src, atol=1e-12)
    np.testing.assert_allclose(s.sources, src[[0, 4]], atol=1e-12)
    edges = np.array(s.volume_edges)
    assert edges.shape == (12, 2, 3)
    lengths = np.sort(np.linalg.norm(edges[:, 1] - edges[:, 0], axis=1))
    np.testing.assert_allclose(lengths, [3.0] * 4 + [8.0] * 4 + [9.6] * 4)
    np.testing.assert_allclose(volume_edges(vol)[0][0], [-4.0, -4.8, -1.5])
    par = ParallelBeam(detector=_det(), angles=FULL)
    ps = sketch(par, None, 3)
    assert ps.sources is None and ps.source_path is None and ps.volume_edges == ()
    far = max(16 * 0.9, 4 * 1.1)
    np.testing.assert_allclose(ps.detectors[0], pixel_positions(par[3], far)[0][[0, 0, -1, -1, 0],
                                                                              [0, -1, -1, 0, 0]])
    with pytest.raises(ValueError, match="view index"):
        sketch(geo, vol, [6])


# ------------------------------------------------------------------ field of view
def test_fov_or_volume_radius():
    geo = _cone()
    assert fov_or_volume_radius(geo) == geo.fov_radius()
    c, s = math.cos(0.5), math.sin(0.5)
    tilted = _cone(detector=_det()).to_modular().rotated(
        np.array([[1, 0, 0], [0, c, -s], [0, s, c]]))
    assert not tilted.axially_aligned
    vol = _vol()
    assert fov_or_volume_radius(tilted, vol) == pytest.approx(bounding_radius(vol, math.inf) + 0.4)
    assert fov_or_volume_radius(tilted, vol) == pytest.approx(math.hypot(3.6, 4.4) + 0.4)
    assert fov_or_volume_radius(tilted) == math.inf


def test_rows_per_slab():
    par = ParallelBeam(detector=_det(rows=8), angles=FULL)
    assert rows_per_slab(par, _vol(num_z=8), math.inf, 3) == 3      # one row per slice
    assert rows_per_slab(par, _vol(num_z=8), math.inf, 20) == 8
    cone, vol = _cone(detector=_det(rows=12, cols=16)), _vol(num_z=9, voxel_height=0.5)
    lo, hi = leap_row_range(cone, vol, cone.fov_radius(), 0, 8)
    assert rows_per_slab(cone, vol, cone.fov_radius(), 9) == hi - lo + 1
    per_slab = [leap_row_range(cone, vol, cone.fov_radius(), a, min(a + 4, 9) - 1)
                for a in (0, 4, 8)]
    assert rows_per_slab(cone, vol, cone.fov_radius(), 4) == max(b - a + 1 for a, b in per_slab)
    assert rows_per_slab(cone, vol, cone.fov_radius(), 4) < hi - lo + 1
    with pytest.raises(ValueError, match="positive"):
        rows_per_slab(cone, vol, 1.0, 0)


def test_fov_mask_and_window(rng):
    vol = _vol(num_z=2)
    inside = fov_mask(vol, 3.0)
    x, y = vol.x_samples(), vol.y_samples()
    np.testing.assert_array_equal(inside, x[None, :] ** 2 + y[:, None] ** 2 <= 9.0)
    assert 0 < inside.sum() < inside.size
    assert fov_mask(vol, math.inf).all()
    f = rng.random(vol.shape, dtype=np.float32) + 1.0
    out = window_fov(f, vol, 3.0)
    assert out is f
    assert np.all(f[:, ~inside] == 0.0) and np.all(f[:, inside] >= 1.0)
    g = np.ones(vol.shape, np.float32)
    assert np.all(window_fov(g, vol, math.inf) == 1.0)
    torch = pytest.importorskip("torch")
    t = torch.ones(vol.shape)
    window_fov(t, vol, 3.0)
    np.testing.assert_array_equal(t.numpy(), np.broadcast_to(inside, vol.shape).astype(np.float32))


def test_space_carving_keeps_what_every_ray_sees():
    det = Detector(num_rows=1, num_cols=24, pixel_height=1.0, pixel_width=1.0)
    geo = ParallelBeam(detector=det, angles=np.linspace(0, np.pi, 30, endpoint=False))
    vol = Volume(num_x=20, num_y=20, num_z=1, voxel_width=1.0, voxel_height=1.0)
    system = CTSystem(geometry=geo, volume=vol)
    obj = np.zeros(vol.shape, np.float32)
    obj[0, 8:12, 6:10] = 1.0
    pm = (system.project(obj) > 1e-6).astype(np.float32)
    before = pm.copy()
    carved = space_carving(system, pm, np.zeros(vol.shape, np.float32))
    np.testing.assert_array_equal(pm, before)                      # restored exactly
    assert set(np.unique(carved)) <= {0.0, 1.0}
    assert np.all(carved[obj > 0] == 1.0)                          # the object survives
    assert carved.sum() < 0.25 * carved.size                       # most of the rest goes
    far = np.zeros(vol.shape, bool)
    far[0, :3, :] = True                                           # seen by missing rays
    assert np.all(carved[far] == 0.0)


# ------------------------------------------------------------------ resampling
def test_resample_factors_validation():
    np.testing.assert_array_equal(detector_factors([1, 2, 3]), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="view"):
        detector_factors([2, 1, 1])
    with pytest.raises(ValueError, match=">= 1"):
        detector_factors([1, 0.5, 1])
    with pytest.raises(ValueError, match="x and y"):
        volume_factors([1, 2, 3])
    with pytest.raises(ValueError, match="3 finite"):
        volume_factors([2, 2])


def test_resample_geometry_keeps_the_central_ray_in_place(rng):
    geo = _cone(detector=_det(rows=6, cols=17, center_row=1.9, center_col=10.4))
    d = geo.detector
    down = resample_geometry(geo, [1, 2, 3])
    e = down.detector
    assert (e.num_rows, e.num_cols) == (3, 5)
    assert (e.pixel_height, e.pixel_width) == pytest.approx((2.2, 2.7))
    assert (e.center_col - 0.5 * (e.num_cols - 1)) * e.pixel_width == pytest.approx(
        (d.center_col - 0.5 * (d.num_cols - 1)) * d.pixel_width)
    assert (e.center_row - 0.5 * (e.num_rows - 1)) * e.pixel_height == pytest.approx(
        (d.center_row - 0.5 * (d.num_rows - 1)) * d.pixel_height)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    shaped = resample_geometry(geo, [1, 2, 3], shape=down_sample(g, [1, 2, 3]).shape)
    assert shaped.projection_shape == down_sample(g, [1, 2, 3]).shape
    up = resample_geometry(down, [1, 2, 3], up=True)
    assert (up.detector.num_rows, up.detector.num_cols) == (6, 15)
    assert up.detector.pixel_width == pytest.approx(0.9)
    mod = resample_geometry(_cone(detector=_det()).to_modular(), [1, 2, 2])
    assert mod.detector.is_centered and mod.detector.num_cols == 8


def test_resample_volume():
    vol = _vol(offset_x=1.0, offset_z=-2.0)
    down = resample_volume(vol, [1.5, 2, 2])
    assert (down.num_z, down.num_y, down.num_x) == (2, 6, 5)
    assert (down.voxel_height, down.voxel_width) == pytest.approx((1.5, 1.6))
    assert (down.offset_x, down.offset_z) == (1.0, -2.0)
    up = resample_volume(vol, [2, 2, 2], up=True, shape=(5, 23, 21))
    assert up.shape == (5, 23, 21) and up.voxel_width == pytest.approx(0.4)


def test_offset_scan_extra_columns():
    par = ParallelBeam(detector=_det(cols=20, center_col=4.0), angles=FULL)
    assert offset_scan_extra_columns(par) == offset_scan_layout(par)[2] > 0
    helical = _cone(detector=_det(cols=20, center_col=4.0), helical_pitch=1.0)
    assert offset_scan_extra_columns(helical) == 0


# ------------------------------------------------------------------ calibration
def _balls(vol):
    z, y, x = np.meshgrid(vol.z_samples(), vol.y_samples(), vol.x_samples(), indexing="ij")
    return (0.02 * ((x - 2.0) ** 2 + (y + 1.5) ** 2 + z ** 2 < 5.0 ** 2)
            + 0.04 * ((x + 4.0) ** 2 + (y - 3.0) ** 2 < 2.0 ** 2)).astype(np.float32)


def test_calibration_params_from_a_geometry():
    geo = _cone(tau=0.5, tilt=np.deg2rad(2.0))
    p = cal.calibration_params(geo)
    assert p.kind == "cone" and p.numAngles == 72 and (p.numRows, p.numCols) == (4, 16)
    np.testing.assert_array_equal(p.phis, geo.angles - 0.5 * np.pi)
    assert (p.centerRow, p.centerCol, p.sod, p.sdd, p.tau) == (1.9, 8.2, 60.0, 120.0, 0.5)
    assert p.tiltAngle == pytest.approx(2.0) and p.angularRange == pytest.approx(360.0)
    assert not p.curved and not p.helical
    par = cal.calibration_params(ParallelBeam(detector=_det(), angles=FULL[:36]))
    assert par.kind == "parallel" and par.sod == 0.0 and par.angularRange == pytest.approx(180.0)
    with pytest.raises(ValueError, match="modular"):
        cal.calibration_params(geo.to_modular())


def test_search_row_and_columns():
    p = cal.calibration_params(_cone())
    assert cal.search_row(p, None) == 2 and cal.search_row(p, -1) == 2 and cal.search_row(p, 9) == 2
    assert cal.search_row(p, 1) == 1
    assert cal.search_columns(40) == cal.default_center_range(40, False) == (9, 31)
    assert cal.search_columns(40, None, True) == (4, 36)
    assert cal.search_columns(40, [10.4, 20.6]) == (10, 21)
    assert cal.search_columns(40, [-1, -1]) == (9, 31)
    assert cal.search_columns(40, [-2.0, 3.0], scale=0.5, offset=19.5) == (16, 26)
    with pytest.raises(ValueError, match="searchBounds"):
        cal.search_columns(40, [30, 10])
    with pytest.raises(ValueError, match="2 numbers"):
        cal.search_columns(40, [1, 2, 3])


def test_find_center_col_and_tau_recover_the_truth():
    vol = Volume(num_x=24, num_y=24, num_z=1, voxel_width=1.0, voxel_height=1.0)
    f = _balls(vol)
    det = Detector(num_rows=1, num_cols=32, pixel_height=1.0, pixel_width=1.0, center_col=18.3)
    par = ParallelBeam(detector=det, angles=FULL)
    g = project(par, vol, f)
    wrong = par.with_changes(detector=det.with_changes(center_col=10.0))
    cc, cost = cal.find_center_col(wrong, g)
    assert abs(cc - 18.3) < 0.25
    costs = cal.parallel_center_costs(g, cal.calibration_params(wrong), 0, 15, 21)
    assert 0.0 <= cost < 0.2 * min(costs[15], costs[21])
    fan = FanBeam(detector=det.with_changes(center_col=None), angles=FULL, sod=60.0, sdd=120.0,
                  tau=1.2)
    gf = project(fan, vol, f)
    tau, _ = cal.find_tau(fan.with_changes(tau=0.0), gf)
    assert abs(tau - 1.2) < 0.25 * 60.0 / 120.0
    with pytest.raises(ValueError, match="fan- and cone-beam"):
        cal.find_tau(par, g)
    with pytest.raises(ValueError, match="shape"):
        cal.find_center_col(par, g[:, :, :10])
    short = ParallelBeam(detector=det, angles=FULL[:12])
    with pytest.raises(ValueError, match="180 degrees"):
        cal.find_center_col(short, g[:12])


def test_find_tilt_and_conjugate_view_difference():
    vol = Volume(num_x=24, num_y=24, num_z=16, voxel_width=1.0, voxel_height=1.0)
    f = _balls(vol)
    det = Detector(num_rows=16, num_cols=32, pixel_height=1.0, pixel_width=1.0)
    par = ParallelBeam(detector=det, angles=FULL)
    turned = par.to_modular(vol).spun(np.deg2rad(2.0))
    g = project(turned, vol, f)
    alpha = cal.find_tilt(par, g)
    assert abs(alpha - 2.0) < 0.15
    d0 = cal.conjugate_view_difference(par, g)
    da = cal.conjugate_view_difference(par, g, alpha)
    assert d0.shape == (16, 32) and d0.dtype == np.float32
    assert np.sum(da ** 2) < 0.3 * np.sum(d0 ** 2)


def test_scan_consistency_cost_checks_the_geometry():
    vol = Volume(num_x=16, num_y=16, num_z=8, voxel_width=0.5, voxel_height=0.5)
    geo = _cone(angles=FULL[::3], detector=Detector(num_rows=12, num_cols=20, pixel_height=1.0,
                                                     pixel_width=1.0))
    g = project(geo, vol, _balls(vol))
    c0 = cal.scan_consistency_cost(geo, g)
    assert cal.scan_consistency_cost(geo, g, d_col=1.0) > c0
    for bad in (geo.with_changes(helical_pitch=1.0),
                FanBeam(detector=geo.detector, angles=geo.angles, sod=60.0, sdd=120.0)):
        with pytest.raises(ValueError, match="cone-beam"):
            cal.scan_consistency_cost(bad, g)


def test_is_full_scan_and_derivative_filter():
    assert cal.is_full_scan(_cone())
    assert cal.is_full_scan(_cone(angles=FULL[:71]))               # 360° − one step
    assert not cal.is_full_scan(_cone(angles=FULL[:60]))
    assert not cal.is_full_scan(_cone(angles=FULL[:1]))
    q = np.arange(12, dtype=np.float64).reshape(1, 2, 6) ** 2
    expect = cal.ray_derivative(q.copy(), 0.9)
    np.testing.assert_array_equal(cal.derivative_filter(q, _cone()), expect)


@pytest.mark.parametrize("kind", [ConeBeam, ConeParallelBeam])
def test_helical_pitch_that_sends_the_source_to_infinity_is_refused(kind):
    """A finite pitch whose source heights pitch·(ψ − ψ_mid) overflow (or pass 1e9 mm) is
    refused with the reason: it put the source at ±inf and the back-projection at NaN
    (found by the facade fuzz test); pitches that keep the source within reach pass."""
    angles = np.linspace(0.0, np.deg2rad(158.0), 5)
    for pitch in (-1e308, 1e300, 2e9):
        with pytest.raises(ValueError, match="source heights"):
            kind(detector=_det(), angles=angles, sod=60.0, sdd=120.0, helical_pitch=pitch)
    geo = kind(detector=_det(), angles=angles, sod=60.0, sdd=120.0, helical_pitch=1e8)
    assert np.all(np.isfinite(geo.source_z()))
