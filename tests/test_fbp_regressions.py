"""Regressions of issue 11: FBP of modular beams (view weights, field of view, offset
scans) and clear errors for unusable offset-scan geometries and low-pass widths.

A modular beam converted from a cone beam describes the same scan, so its FBP must
weight the views as the cone's does (Parker for short scans, ½ only for full turns) and
agree with the cone's FBP wherever the cone reconstructs (inside its field of view).
"""
from __future__ import annotations

import math
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import leap
from leap import filters, operators
from leap.fbp import fbp, fbp_adjoint
from leap.filters import ramp_response
from leapctype import tomographicModels

SIM = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"

DET = leap.Detector(num_rows=6, num_cols=32, pixel_height=2.0, pixel_width=2.0)
VOL = leap.Volume(num_x=32, num_y=32, num_z=6, voxel_width=1.2, voxel_height=1.0)


def _cone(range_deg, num_angles=90, *, center_col=None, tau=0.0, det=DET, vol=None):
    """A circular cone scan over ``range_deg`` degrees (negative: clockwise), sod 200, sdd 400."""
    if center_col is not None:
        det = det.with_changes(center_col=center_col)
    angles = 0.3 + np.deg2rad(range_deg) * np.arange(num_angles) / num_angles
    return leap.ConeBeam(detector=det, angles=angles, sod=200.0, sdd=400.0, tau=tau)


def _phantom(vol=VOL):
    x, y = vol.x_samples()[None, :], vol.y_samples()[:, None]
    disk = (np.hypot(x - 2.0, y + 1.5) < 9.0) + 0.5 * (np.hypot(x + 4.0, y - 3.0) < 4.0)
    return np.ascontiguousarray(np.broadcast_to(disk, vol.shape), dtype=np.float32)


def _inside(vol, radius):
    """(num_y, num_x) mask of the voxels well inside a field of view of ``radius`` mm."""
    x, y = vol.x_samples()[None, :], vol.y_samples()[:, None]
    return np.hypot(x, y) <= radius - 2.0 * vol.voxel_width


def _modular(cone, g, mirrored):
    """cone's modular form and its data; ``mirrored`` flips every module's column vector
    (and the data's columns with it): the same scan, read right to left."""
    m = cone.to_modular()
    if not mirrored:
        return m, g
    m = m.with_changes(col_vectors=-m.col_vectors)
    return m, np.ascontiguousarray(g[:, :, ::-1])


# ------------------------------------------------------------- item 1: view weights

@pytest.mark.parametrize("range_deg", [360.0, 359.0, 200.0, -230.0])
@pytest.mark.parametrize("variant", ["centred", "shifted", "tau", "mirrored"])
def test_modular_fbp_weights_views_like_the_cone(range_deg, variant):
    """Full, nearly full (needs Parker weights, not ½) and short scans, either rotation
    direction, shifted detector, offset axis and mirrored modules."""
    kw = {"shifted": dict(center_col=12.3), "tau": dict(tau=3.0)}.get(variant, {})
    cone = _cone(range_deg, **kw)
    g = operators.project(cone, VOL, _phantom())
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # every scan here is long enough
        ref = fbp(cone, VOL, g)
        m, gm = _modular(cone, g, variant == "mirrored")
        out = fbp(m, VOL, gm)
    inside = _inside(VOL, cone.fov_radius())
    assert inside.sum() > 150
    err = np.abs(out - ref)[:, inside].max()
    assert err <= 1e-4 * np.abs(ref).max(), err


def test_issue_example_359_degrees_is_not_doubled():
    """The issue's scan: 88 views over 359°, FORBILD head; the modular FBP was 2× bright."""
    ct = tomographicModels()
    ct.set_conebeam(88, 8, 64, 5.2, 5.2, 3.5, 31.5, ct.setAngleArray(88, 359.0), 1100, 1400)
    ct.set_default_volume()
    f = ct.allocate_volume()
    ct.set_FORBILD(f, True)
    g = ct.allocate_projections()
    ct.project(g, f)
    cone = ct.FBP(g)
    inside = cone[0] != 0                               # the cone's field of view
    ct.convert_to_modularbeam()
    modular = ct.FBP(g)
    np.testing.assert_allclose(modular[:, inside], cone[:, inside], rtol=0,
                               atol=1e-5 * np.abs(cone).max())
    # Outside that circle the modular FBP keeps what its rays give (no masking): a few
    # percent of the total, never another copy of the object.
    assert abs(modular.sum() - cone.sum()) < 0.1 * abs(cone.sum())


def test_modular_short_scan_gets_parker_weights_per_view():
    from leap.weights import parker_weights
    cone = _cone(220.0, center_col=14.0, tau=3.0)
    m = cone.to_modular()
    wc, wm = parker_weights(cone), parker_weights(m)
    assert wm is not None and wm.shape == (cone.num_angles, 1, DET.num_cols)
    np.testing.assert_allclose(wm, wc, atol=1e-9)


# ---------------------------------------------------------- item 5: field of view

@pytest.mark.parametrize("kw", [dict(), dict(center_col=11.0), dict(tau=5.0)])
def test_axially_aligned_modular_fov_is_the_cones(kw):
    cone = _cone(360.0, **kw)
    m = cone.to_modular()
    for offset in (False, True):
        assert m.fov_radius(offset_scan=offset) == pytest.approx(
            cone.fov_radius(offset_scan=offset), rel=1e-9)


def test_get_diameterFOV_min_of_converted_cone_scan():
    ct = tomographicModels()
    ct.set_conebeam(88, 8, 64, 5.2, 5.2, 3.5, 31.5, ct.setAngleArray(88, 359.0), 1100, 1400)
    ct.set_default_volume()
    d_cone = ct.get_diameterFOV_min()
    ct.convert_to_modularbeam()
    assert ct.get_diameterFOV_min() == pytest.approx(d_cone, rel=1e-6)
    assert ct.get_diameterFOV() == pytest.approx(d_cone, rel=1e-6)


def test_modular_fov_without_axial_alignment_is_the_volume():
    """Modules tilted 10° off the z axis have no circular field of view: LEAP's rule
    (furthest voxel centre plus half a voxel) stays."""
    ct = tomographicModels()
    ct.set_conebeam(12, 8, 16, 1.0, 1.0, 3.5, 7.5, ct.setAngleArray(12, 360.0), 100, 200)
    ct.set_default_volume()
    ct.convert_to_modularbeam()
    geo = ct.core_geometry()
    t = math.radians(10.0)
    rows = math.cos(t) * geo.row_vectors + math.sin(t) * geo.col_vectors
    cols = -math.sin(t) * geo.row_vectors + math.cos(t) * geo.col_vectors
    tilted = geo.with_changes(row_vectors=rows, col_vectors=cols)
    assert not tilted.axially_aligned and tilted.fov_radius() == math.inf
    ct.set_modularbeam(12, 8, 16, 1.0, 1.0, geo.source_positions, geo.module_centers, rows, cols)
    v = ct.core_volume()
    furthest = math.hypot(v.x_samples()[0], v.y_samples()[0])
    assert ct.get_diameterFOV_min() == pytest.approx(2 * (furthest + 0.5 * v.voxel_width))


def test_modular_projection_still_masks_nothing():
    """The finite field of view is a property for FBP and LEAP's queries; the modular
    projector still sees voxels outside it (as the reference cases expect)."""
    cone = _cone(360.0, num_angles=8)
    m = cone.to_modular()
    f = np.zeros(VOL.shape, dtype=np.float32)
    f[:, 0, 0] = 1.0                                     # a corner column, outside the FOV
    assert math.hypot(VOL.x_samples()[0], VOL.y_samples()[0]) > m.fov_radius()
    assert operators.project(m, VOL, f).sum() > 0
    assert operators.project(cone, VOL, f).sum() == 0


# ------------------------------------------------------ item 8: modular offset scan

@pytest.mark.parametrize("kw, mirrored", [(dict(center_col=8.0), False),
                                          (dict(center_col=24.0, tau=-2.0), False),
                                          (dict(center_col=8.0), True)])
def test_modular_offset_scan_fbp_matches_the_cone(kw, mirrored):
    cone = _cone(360.0, 120, **kw)
    wide = cone.with_changes(detector=cone.detector.with_changes(
        num_cols=96, center_col=cone.detector.center_col + 32))
    g = np.ascontiguousarray(operators.project(wide, VOL, _phantom())[:, :, 32:64])
    ref = fbp(cone, VOL, g, offset_scan=True)
    m, gm = _modular(cone, g, mirrored)
    out = fbp(m, VOL, gm, offset_scan=True)
    inside = _inside(VOL, cone.fov_radius(offset_scan=True))
    assert inside.sum() > 400
    assert np.abs(out - ref)[:, inside].max() <= 1e-4 * np.abs(ref).max()
    # and the reconstruction is right (the half-fan weights are applied)
    truth = _phantom()
    assert np.abs(out - truth)[1:-1][:, inside].mean() < 0.05


def test_modular_offset_scan_fbp_adjoint_is_exact(rng):
    from conftest import dot_test
    m = _cone(360.0, 40, center_col=8.0).to_modular()
    mismatch, _ = dot_test(lambda g: fbp(m, VOL, g, offset_scan=True),
                           lambda f: fbp_adjoint(m, VOL, f, offset_scan=True),
                           m.projection_shape, VOL.shape, rng)
    assert mismatch < 1e-5


def test_facade_offset_scan_of_modular_beam():
    """FBP and FBP_slice with set_offsetScan(True) after convert_to_modularbeam."""
    ct = tomographicModels()
    ct.set_conebeam(120, 6, 32, 2.0, 2.0, 2.5, 8.0, ct.setAngleArray(120, 360.0), 200, 400)
    ct.set_offsetScan(True)
    ct.set_default_volume()
    f = ct.allocate_volume()
    ct.set_FORBILD(f, True)
    g = ct.allocate_projections()
    ct.project(g, f)
    cone, cone_slice, n_add = ct.FBP(g), ct.FBP_slice(g), ct.extraColumnsForOffsetScan()
    ct.convert_to_modularbeam()
    assert ct.extraColumnsForOffsetScan() == n_add > 0
    inside = cone[0] != 0
    tol = 1e-4 * np.abs(cone).max()
    assert np.abs(ct.FBP(g) - cone)[:, inside].max() <= tol
    assert np.abs(ct.FBP_slice(g) - cone_slice)[:, inside].max() <= tol


def test_offset_scan_of_modular_beam_needs_axial_alignment():
    """Sources spread over more than half the detector height in z: not axially aligned."""
    m = _cone(360.0, 40, center_col=8.0).to_modular()
    src = m.source_positions.copy()
    src[:, 2] = np.linspace(-10.0, 10.0, m.num_angles)
    ctr = m.module_centers.copy()
    ctr[:, 2] = src[:, 2]
    helix = m.with_changes(source_positions=src, module_centers=ctr)
    g = np.ones(helix.projection_shape, dtype=np.float32)
    with pytest.raises(ValueError, match="axially aligned"):
        fbp(helix, VOL, g, offset_scan=True)


def test_modular_fbp_needs_sources_off_the_axis():
    """A source on the axis (sod = 0) has no cone-beam weights: a clear error, not NaN."""
    m = _cone(360.0, 8).to_modular()
    src = m.source_positions.copy()
    src[3] = 0.0
    g = np.ones(m.projection_shape, dtype=np.float32)
    with pytest.raises(ValueError, match="view 3's source"):
        fbp(m.with_changes(source_positions=src), VOL, g)


# ------------------------------------------------- item 9: offset-scan geometry errors

def test_offset_scan_with_tau_beyond_sod_is_a_clear_error():
    ct = tomographicModels()
    ct.set_conebeam(8, 4, 16, 1, 1, 1.5, 7.5, ct.setAngleArray(8, 360.0), 100, 200, 150)
    ct.set_volume(8, 8, 4, 0.5, 0.5)
    g = np.ones(ct.get_projection_dim(), dtype=np.float32)
    assert np.all(np.isfinite(ct.FBP(g)))           # the geometry itself is accepted
    ct.set_offsetScan(True)
    with pytest.raises(ValueError, match=r"\|tau\| < sod.*tau = 150 mm, sod = 100 mm"):
        ct.FBP(g)


@pytest.mark.parametrize("kind", ["parallel", "fan", "cone"])
def test_offset_scan_of_one_column_at_the_axis_is_a_clear_error(kind):
    ct = tomographicModels()
    angles = ct.setAngleArray(8, 360.0)
    if kind == "parallel":
        ct.set_parallelbeam(8, 4, 1, 1.0, 1.0, 1.5, 0.0, angles)
    elif kind == "fan":
        ct.set_fanbeam(8, 4, 1, 1.0, 1.0, 1.5, 0.0, angles, 100, 200)
    else:
        ct.set_conebeam(8, 4, 1, 1.0, 1.0, 1.5, 0.0, angles, 100, 200)
    ct.set_volume(4, 4, 4, 1.0, 1.0)
    ct.set_offsetScan(True)
    g = np.ones(ct.get_projection_dim(), dtype=np.float32)
    f = np.ones(ct.get_volume_dim(), dtype=np.float32)
    calls = [lambda: ct.FBP(g), lambda: ct.project(g, f), lambda: ct.backproject(g, f),
             ct.set_default_volume]
    for call in calls:
        with pytest.raises(ValueError, match=r"(?i)offset.?scan.*rotation axis") as info:
            call()
        assert "fov_radius" not in str(info.value) and "numX" not in str(info.value)


# ----------------------------------------------------------- item 10: low-pass width

def test_lowpass_power_is_leaps_formula_and_stays_finite():
    for width in (2.0, 3.7, 10.0, 250.0):
        textbook = 1.0 / (1.0 - math.log2(1.0 + math.cos(math.pi / width)))
        assert filters.lowpass_power(width) == pytest.approx(textbook, rel=1e-9)
    powers = [filters.lowpass_power(w) for w in (1e4, 1e8, 1e9, 1e12)]
    assert all(math.isfinite(p) for p in powers) and powers == sorted(powers)
    # gain cos(ω/2)^(2p) = ½ at ω = π/W, however wide (ln cos x = ½·log1p(−sin² x))
    for width in (1e4, 1e9):
        half = math.log1p(-math.sin(0.5 * math.pi / width) ** 2)
        assert math.exp(filters.lowpass_power(width) * half) == pytest.approx(0.5, rel=1e-9)
    assert filters.lowpass_power(1e300) == math.inf


def test_huge_lowpass_gives_a_well_defined_fbp():
    ct = tomographicModels()
    ct.set_parallelbeam(8, 4, 16, 1, 1, 1.5, 7.5, ct.setAngleArray(8, 180.0))
    ct.set_default_volume()
    g = np.ones(ct.get_projection_dim(), dtype=np.float32)
    ct.set_FBPlowpass(1e9)
    f = ct.FBP(g)
    assert np.all(np.isfinite(f))
    H = ramp_response(16, 1.0, lowpass=1e9)
    assert np.all(np.isfinite(H)) and np.all(np.abs(H[1:]) <= 1e-12 * abs(H[0]))
    for bad in (float("nan"), -1.0, float("inf")):
        with pytest.raises(ValueError, match="lowpass"):
            ramp_response(16, 1.0, lowpass=bad)


# ------------------------------------------------- item 13: bounded offset padding

@pytest.mark.parametrize("center_col", [1e6, 1e8])
def test_far_off_center_col_is_rejected_before_padding(center_col):
    ct = tomographicModels()
    ct.set_parallelbeam(8, 4, 16, 1, 1, 1.5, center_col, ct.setAngleArray(8, 360.0))
    ct.set_volume(16, 16, 4, 1, 1)
    ct.set_offsetScan(True)
    g = np.ones(ct.get_projection_dim(), dtype=np.float32)
    t = time.perf_counter()
    with pytest.raises(ValueError, match="reaches across the rotation axis"):
        ct.FBP(g)
    with pytest.raises(ValueError, match="reaches across the rotation axis"):
        ct.extraColumnsForOffsetScan()
    assert time.perf_counter() - t < 5.0


def test_offset_padding_is_bounded():
    """A detector that does reach across the axis, but whose short side would need
    eleven detector widths of padding (wide fan, tau = sod/2)."""
    det = leap.Detector(num_rows=2, num_cols=100, pixel_height=1.0, pixel_width=4.0,
                        center_col=30.0)
    cone = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 10, endpoint=False),
                         sod=100.0, sdd=200.0, tau=50.0)
    g = np.ones(cone.projection_shape, dtype=np.float32)
    vol = leap.Volume(num_x=8, num_y=8, num_z=2, voxel_width=1.0, voxel_height=1.0)
    with pytest.raises(ValueError, match="extra columns.*centerCol and tau"):
        fbp(cone, vol, g, offset_scan=True)


# ------------------------------------------------------ GPU path (CUDA simulator)

@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_gpu_fbp_of_modular_beams_under_simulator():
    """The GPU FBP shares the CPU's weights: modular short and offset scans agree."""
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                        "-k", "TestSim", str(Path(__file__))],
                       env=env, capture_output=True, text=True, timeout=600,
                       cwd=str(Path(__file__).parent.parent))
    out = r.stdout[-6000:] + r.stderr[-3000:]
    assert r.returncode == 0 and " passed" in r.stdout, out


@pytest.mark.skipif(not SIM, reason="runs under NUMBA_ENABLE_CUDASIM=1 only")
class TestSimModularFBP:
    DET = leap.Detector(num_rows=4, num_cols=6, pixel_height=1.0, pixel_width=1.0)
    VOL = leap.Volume(num_x=4, num_y=5, num_z=3, voxel_width=1.0, voxel_height=1.0)

    def _check(self, geo, **kw):
        from numba import cuda
        r = np.random.default_rng(3)
        g = r.standard_normal(geo.projection_shape).astype(np.float32)
        f = r.standard_normal(self.VOL.shape).astype(np.float32)
        ref = fbp(geo, self.VOL, g, **kw)
        scale = np.abs(ref).max()
        assert np.abs(fbp(geo, self.VOL, cuda.to_device(g), **kw).copy_to_host() - ref).max() <= 1e-5 * scale
        assert np.abs(fbp(geo, self.VOL, g, devices=[0], **kw) - ref).max() <= 1e-5 * scale
        adj = fbp_adjoint(geo, self.VOL, f, **kw)
        dev = fbp_adjoint(geo, self.VOL, cuda.to_device(f), **kw).copy_to_host()
        assert np.abs(dev - adj).max() <= 1e-5 * np.abs(adj).max()

    def test_short_scan(self):
        geo = _cone(230.0, 6, det=self.DET).to_modular()
        self._check(geo)

    def test_offset_scan(self):
        geo = _cone(360.0, 4, center_col=1.0, det=self.DET).to_modular()
        self._check(geo, offset_scan=True)
