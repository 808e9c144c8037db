"""FBP of modular beams (view weights, offset scans) and clear errors for unusable
offset-scan geometries. Regressions of issue 11, items 1, 8, 9 and 13 (its item 5, the
field of view, is in ``tests/geometry/test_field_of_view.py``; item 10, the low-pass
width, in ``test_filters.py``; the GPU path in ``tests/kernels/test_cuda_sim_fbp.py``).

A modular beam converted from a cone beam describes the same scan, so its FBP must
weight the views as the cone's does (Parker for short scans, ½ only for full turns) and
agree with the cone's FBP wherever the cone reconstructs (inside its field of view).
"""
from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

import leap
from leap import operators
from leap.reconstruction.fbp import fbp, fbp_adjoint
from conftest import CONE_DET, CONE_VOL
from conftest import cone_scan as _cone
from leapctype import tomographicModels

DET, VOL = CONE_DET, CONE_VOL


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
    from leap.reconstruction.weights import parker_weights
    cone = _cone(220.0, center_col=14.0, tau=3.0)
    m = cone.to_modular()
    wc, wm = parker_weights(cone), parker_weights(m)
    assert wm is not None and wm.shape == (cone.num_angles, 1, DET.num_cols)
    np.testing.assert_allclose(wm, wc, atol=1e-9)


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
