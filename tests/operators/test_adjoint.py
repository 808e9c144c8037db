"""Back-projection is the exact transpose of projection, for every geometry."""
import numpy as np
from hypothesis import HealthCheck, assume, given, settings

import leap
from conftest import dot_test
from strategies import cone_cases, cone_parallel_cases, fan_cases, modular_cases, parallel_cases

TOL = 1e-5
SETTINGS = settings(deadline=None, max_examples=40,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _check(case, seed=0):
    geo, vol = case
    mismatch, norm = dot_test(lambda f: leap.project(geo, vol, f),
                              lambda g: leap.backproject(geo, vol, g),
                              vol.shape, geo.projection_shape, np.random.default_rng(seed))
    assume(norm > 0)  # the volume must be seen by at least one ray
    assert mismatch <= TOL, f"adjoint mismatch {mismatch:.3g} for {geo!r} {vol!r}"


@SETTINGS
@given(parallel_cases())
def test_parallel_adjoint(case):
    _check(case)


@SETTINGS
@given(fan_cases())
def test_fan_adjoint(case):
    _check(case)


@SETTINGS
@given(cone_cases())
def test_cone_adjoint(case):
    _check(case)


@SETTINGS
@given(cone_parallel_cases())
def test_cone_parallel_adjoint(case):
    _check(case)


@SETTINGS
@given(modular_cases())
def test_modular_adjoint(case):
    _check(case)


def test_adjoint_reference_sized_cone(rng):
    """A realistic cone geometry (the reference case sizes) is matched to float rounding."""
    geo = leap.ConeBeam(detector=leap.Detector(num_rows=40, num_cols=80, pixel_height=1.0,
                                               pixel_width=1.0, center_row=19.5, center_col=39.5),
                        angles=np.deg2rad(np.arange(72) * 5.0), sod=300.0, sdd=600.0)
    vol = leap.Volume(num_x=80, num_y=80, num_z=40, voxel_width=0.5, voxel_height=0.5)
    mismatch, _ = dot_test(lambda f: leap.project(geo, vol, f),
                           lambda g: leap.backproject(geo, vol, g),
                           vol.shape, geo.projection_shape, rng)
    assert mismatch <= 1e-6


def test_cone_parallel_tiny_rank_one_case_is_an_exact_transpose():
    """The hypothesis example that exposed the dot test's ill-conditioning: P and Pᵀ,
    built column by column, are exact transposes."""
    det = leap.Detector(num_rows=3, num_cols=2, pixel_height=1.3984375, pixel_width=1.0,
                        center_row=1.26171875, center_col=0.5)
    geo = leap.ConeParallelBeam(detector=det, angles=np.array([0.0]), sod=193.0, sdd=203.0,
                                helical_mid_angle=0.0)
    vol = leap.Volume(num_x=1, num_y=2, num_z=2, voxel_width=0.5, voxel_height=1.0,
                      offset_y=0.25, offset_z=1.640625)
    n, m = int(np.prod(vol.shape)), int(np.prod(geo.projection_shape))
    P = np.stack([leap.project(geo, vol, e.reshape(vol.shape)).ravel()
                  for e in np.eye(n, dtype=np.float32)], axis=1)
    PT = np.stack([leap.backproject(geo, vol, e.reshape(geo.projection_shape)).ravel()
                   for e in np.eye(m, dtype=np.float32)], axis=1)
    assert np.abs(P).max() > 0
    np.testing.assert_array_equal(P, PT.T)
