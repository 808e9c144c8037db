"""Phantoms drawn into the volume of a rotationally symmetric object (the facade's
addObject and set_FORBILD after set_axisOfSymmetry) and Phantom.permute_axes, which
draws them. Regressions of issue 11 found by using the facade as a new user would."""
import math

import numpy as np
import pytest

from leap.compat.model import tomographicModels
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject, rotation_matrix


def _symmetric_model():
    ct = tomographicModels()
    ct.set_parallelbeam(1, 40, 40, 3.0, 3.0, 19.5, 19.5, ct.setAngleArray(1, 180.0))
    ct.set_axisOfSymmetry(0.0)
    ct.set_default_volume()
    return ct


# ------------------------------------------------------------- symmetric phantoms

def test_add_object_into_symmetric_volume_draws_x_along_y_and_y_along_z():
    ct = _symmetric_model()
    assert ct.get_volume_dim() == (40, 40, 1)
    f = ct.allocate_volume()
    ct.addObject(f, 0, [30.0, 0.0, 0.0], [10.0, 10.0, 10.0], 1.0)
    z, y, _ = np.nonzero(f)
    assert z.size == 32            # upstream LEAP sets 32 voxels of this disk
    assert ct.y_samples()[y].mean() == pytest.approx(30.0, abs=0.5)
    assert ct.z_samples()[z].mean() == pytest.approx(0.0, abs=0.5)
    f[:] = 0
    ct.addObject(f, 0, [0.0, -20.0, 0.0], [10.0, 5.0, 10.0], 1.0)
    z, y, _ = np.nonzero(f)
    assert ct.y_samples()[y].mean() == pytest.approx(0.0, abs=0.5)
    assert ct.z_samples()[z].mean() == pytest.approx(-20.0, abs=0.5)
    # the object's y semi-axis (5 mm) runs along z: the disk is twice as wide in y
    assert np.ptp(ct.y_samples()[y]) > 1.6 * np.ptp(ct.z_samples()[z])


def test_forbild_into_symmetric_volume_is_its_axial_slice():
    ct = _symmetric_model()
    f = ct.allocate_volume()
    ct.set_FORBILD(f)
    assert np.count_nonzero(f) > 0.5 * f.size * math.pi / 4 * 0.6
    # the head's axial cross-section (x, y at z = 0), voxelised directly; one view and
    # one column: without the ear's bone, as LEAP draws it there
    v = ct.core_volume()
    from leap.phantoms import forbild_head
    ref = forbild_head(include_ear_bone=False).voxelize(v.y_samples(), v.z_samples(), [0.0], v.voxel_width,
                                  v.voxel_height)
    np.testing.assert_array_equal(f[:, :, 0], ref[0])


def test_permute_axes_moves_points_with_the_objects():
    obj = PhantomObject(kind=ELLIPSOID, centre=[5.0, -3.0, 2.0], radii=[4.0, 2.0, 1.0],
                        value=1.0, rotation=rotation_matrix("z", 30.0), clip=[0.0, 0.0, 2.5])
    ph = Phantom([obj])
    moved = ph.permute_axes((2, 0, 1))
    rng = np.random.default_rng(0)
    p = rng.uniform(-6, 6, size=(300, 3)) + obj.centre
    # single-point grids: the inside test agrees at p and at P p = (p_z, p_x, p_y)
    inside = []
    for q in p:
        a = ph.voxelize([q[0]], [q[1]], [q[2]], 0.01, 0.01)[0, 0, 0]
        b = moved.voxelize([q[2]], [q[0]], [q[1]], 0.01, 0.01)[0, 0, 0]
        assert a == b
        inside.append(a)
    assert 0 < sum(inside) < len(inside)       # both inside and outside points were probed
    with pytest.raises(ValueError, match="order"):
        ph.permute_axes((0, 0, 1))
