"""FBP = filtering stage + back-projection of filtered projections (issue 51): the
filtering stage of a block of views and rows equals that block of the whole, and
backproject_filtered of the filtered projections equals fbp."""
import numpy as np
import pytest

import leap
from leap.reconstruction.fbp import FilterStage, backproject_filtered, fbp, filter_projections


def _cone(offset=False):
    det = leap.Detector(num_rows=12, num_cols=20, pixel_height=1.0, pixel_width=1.0,
                        center_row=5.5, center_col=6.5 if offset else 9.5)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 24, endpoint=False),
                        sod=100.0, sdd=160.0)
    vol = leap.Volume(num_x=12, num_y=12, num_z=8, voxel_width=0.6, voxel_height=0.6)
    return geo, vol


@pytest.mark.parametrize("offset", [False, True])
def test_block_filters_as_in_the_whole(offset):
    geo, vol = _cone(offset)
    g = np.random.default_rng(0).random(geo.projection_shape, dtype=np.float32)
    whole, fgeo = filter_projections(geo, vol, g, offset_scan=offset)
    stage = FilterStage(geo, vol, offset_scan=offset)
    assert stage.geometry.projection_shape == fgeo.projection_shape
    block = np.empty((7, 5, fgeo.projection_shape[2]), np.float32)
    stage(np.ascontiguousarray(g[9:16, 4:9]), block, views=(9, 16), rows=(4, 9))
    np.testing.assert_array_equal(block, whole[9:16, 4:9])


@pytest.mark.parametrize("offset", [False, True])
def test_fbp_is_filter_then_backproject_filtered(offset):
    geo, vol = _cone(offset)
    g = np.random.default_rng(1).random(geo.projection_shape, dtype=np.float32)
    q, _ = filter_projections(geo, vol, g, offset_scan=offset)
    f = backproject_filtered(geo, vol, q, offset_scan=offset)
    ref = fbp(geo, vol, g, offset_scan=offset)
    assert np.linalg.norm(f - ref) <= 1e-6 * np.linalg.norm(ref)
    with pytest.raises(ValueError, match="q must have shape"):
        backproject_filtered(geo, vol, q[:, 1:], offset_scan=offset)
