"""The CPU back-projector works on square tiles of voxel columns whose edge depends on
the thread count (leap.kernels.cpu.axial.tile_edge): the result must not.

Each voxel column sums its views in the same order whatever the tiling, so results for
different tilings are bit-for-bit equal; a tile written to the wrong place, or a column
skipped or counted twice at a tile's edge, would show up as a difference.
"""
import numba
import numpy as np
import pytest
from conftest import with_numba_threads

import leap
from leap.reconstruction.fbp import fbp
from leap.kernels.cpu.axial import tile_edge

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="needs two Numba threads for two tilings")

# Odd, unequal sizes: neither edge is a multiple of the tile edge.
VOLUME = leap.Volume(num_x=37, num_y=53, num_z=7, voxel_width=0.5, voxel_height=0.5)


def _detector(rows=9, cols=61):
    return leap.Detector(num_rows=rows, num_cols=cols, pixel_height=0.9, pixel_width=0.8,
                         center_row=(rows - 1) / 2 + 0.3, center_col=(cols - 1) / 2 - 1.2)


def _geometries():
    angles = np.linspace(0.1, 2 * np.pi, 23, endpoint=False)
    cone = leap.ConeBeam(detector=_detector(), angles=angles, sod=60.0, sdd=110.0)
    parallel = leap.ParallelBeam(detector=leap.Detector(num_rows=7, num_cols=61, pixel_height=0.5,
                                                        pixel_width=0.5),
                                 angles=angles[:12])
    fan = leap.FanBeam(detector=leap.Detector(num_rows=7, num_cols=61, pixel_height=0.5,
                                              pixel_width=0.8),
                       angles=angles, sod=60.0, sdd=110.0)
    helical = leap.ConeBeam(detector=_detector(), angles=angles * 2, sod=60.0, sdd=110.0,
                            helical_pitch=0.3)
    return {"cone": cone, "parallel": parallel, "fan": fan, "helical": helical,
            "modular": cone.to_modular()}


def test_tilings_differ():
    """The two thread counts below do tile the test volume differently."""
    nz, ny, nx = VOLUME.shape
    assert tile_edge(nz, ny, nx, 1) != tile_edge(nz, ny, nx, 2)
    assert nx % tile_edge(nz, ny, nx, 2) and ny % tile_edge(nz, ny, nx, 2)


@pytest.mark.parametrize("name", ["cone", "parallel", "fan", "helical", "modular"])
def test_backprojection_and_fbp_do_not_depend_on_the_tiling(name, rng):
    geo = _geometries()[name]
    g = rng.standard_normal(geo.projection_shape).astype(np.float32)
    for op in (leap.backproject, fbp):
        one = with_numba_threads(1, lambda: op(geo, VOLUME, g))
        two = with_numba_threads(2, lambda: op(geo, VOLUME, g))
        assert np.abs(one).max() > 0
        np.testing.assert_array_equal(one, two, err_msg=f"{name} {op.__name__}")
