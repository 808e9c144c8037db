"""The field of view of modular beams converted from cone beams: the cone's circle when
the modules are axially aligned, LEAP's volume rule otherwise, and never a mask for the
projector. Regressions of issue 11, item 5."""
import math

import numpy as np
import pytest

from leap import operators
from leapctype import tomographicModels

from conftest import CONE_VOL as VOL
from conftest import cone_scan as _cone


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
