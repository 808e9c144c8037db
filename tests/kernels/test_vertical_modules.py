"""Modular beams with vertical modules run on the CPU's axial kernels; the general
modular kernels compute the same footprint model voxel by voxel, so both must agree
to the rounding of the float32 cumulative sums (1e-5 of the maximum, the tolerance
between back-ends; typically 3e-7), and the fast pair must stay an exact transpose."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import leap
from conftest import dot_test
from leap.kernels.cpu import modular as general
from leap.kernels.plan import make_plan
from strategies import modular_cases, vertical_modular_cases

SETTINGS = settings(deadline=None, max_examples=40,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _general(geo, vol, op, x):
    d = geo.detector
    args = (geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors,
            vol.x0, vol.y0, vol.z0, vol.voxel_width, vol.voxel_height, d.pixel_width,
            d.pixel_height)
    if op == "project":
        out = np.zeros(geo.projection_shape, np.float32)
        general.project(x, out, *args)
    else:
        out = np.zeros(vol.shape, np.float32)
        general.backproject(x, out, *args)
    return out


def _close(a, b, tol=1e-5):
    scale = max(np.abs(b).max(), 1e-30)
    assert np.abs(a - b).max() <= tol * scale, np.abs(a - b).max() / scale


def _agree(geo, vol, seed=0):
    assert make_plan(geo, vol).vertical is not None
    rng = np.random.default_rng(seed)
    f = rng.random(vol.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    _close(leap.project(geo, vol, f), _general(geo, vol, "project", f))
    _close(leap.backproject(geo, vol, g), _general(geo, vol, "backproject", g))


@SETTINGS
@given(vertical_modular_cases())
def test_vertical_modules_match_the_general_kernels(case):
    _agree(*case)


@SETTINGS
@given(vertical_modular_cases())
def test_vertical_modules_adjoint(case):
    geo, vol = case
    mismatch, _ = dot_test(lambda f: leap.project(geo, vol, f),
                           lambda g: leap.backproject(geo, vol, g),
                           vol.shape, geo.projection_shape, np.random.default_rng(1))
    assert mismatch <= 1e-5


DET = leap.Detector(num_rows=12, num_cols=20, pixel_height=1.1, pixel_width=0.9)
VOL = leap.Volume(num_x=14, num_y=12, num_z=9, voxel_width=0.7, voxel_height=0.6,
                  offset_z=0.4)
ANGLES = np.linspace(0.0, 2 * np.pi, 16, endpoint=False)


@pytest.mark.parametrize("kw", [dict(), dict(tau=2.5), dict(helical_pitch=0.6),
                                dict(detector=DET.with_changes(center_col=7.3, center_row=4.0))])
def test_converted_cone_beams_take_the_fast_path(kw):
    kw.setdefault("detector", DET)
    cone = leap.ConeBeam(angles=ANGLES, sod=120.0, sdd=240.0, **kw)
    _agree(cone.to_modular(), VOL)


def test_wide_voxels_take_the_fast_path():
    """Voxels wider than a pixel's footprint use the kernels' general column loop."""
    vol = leap.Volume(num_x=6, num_y=6, num_z=5, voxel_width=2.5, voxel_height=2.0)
    cone = leap.ConeBeam(detector=DET.with_changes(pixel_width=0.4, pixel_height=0.5),
                         angles=ANGLES, sod=60.0, sdd=150.0)
    _agree(cone.to_modular(), vol)


def _flipped(geo, name, sign):
    """geo with every row or column vector multiplied by ``sign`` (a mirrored module)."""
    kw = dict(detector=geo.detector, source_positions=geo.source_positions,
              module_centers=geo.module_centers, row_vectors=geo.row_vectors,
              col_vectors=geo.col_vectors)
    kw[name] = sign * kw[name]
    return leap.ModularBeam(**kw)


def test_other_modules_keep_the_general_kernels():
    cone = leap.ConeBeam(detector=DET, angles=ANGLES, sod=120.0, sdd=240.0)
    m = cone.to_modular()
    assert m.vertical_modules() is not None
    assert leap.ConeBeam(detector=DET, angles=ANGLES, sod=120.0, sdd=240.0,
                         tilt=0.05).to_modular().vertical_modules() is None
    assert _flipped(m, "col_vectors", -1.0).vertical_modules() is None
    assert _flipped(m, "row_vectors", -1.0).vertical_modules() is None


@SETTINGS
@given(modular_cases())
def test_tilted_random_modules_keep_the_general_kernels(case):
    geo, vol = case
    assert make_plan(geo, vol).vertical is None
