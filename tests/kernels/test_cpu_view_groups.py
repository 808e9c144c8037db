"""The CPU back-projector adds direct-row views (parallel and fan beams) four at a time,
one pass over each voxel column for the four (leap.kernels.cpu.axial_direct._gather_direct_views,
PASS_VIEWS; two or three views in the same pass with the empty places weighted 0, one alone).

Back-projection is linear in the views, so the result must be the sum of one-view
back-projections, which never group: a view dropped, counted twice or grouped with the
wrong view's values or weights would show. Cases: 13 views (three groups and one left
over), footprints that meet a third pixel inside a group (added after the group's pass),
columns behind the source (zero weight), and views whose detector rows are shifted by
different whole rows (runs of 2, 3, 1, 4, 2 and 1 equal shifts: a shift change ends a
group).
"""
import numpy as np
import pytest

import leap
from leap.kernels.cpu import axial_direct, launch
from leap.kernels.plan import make_plan

VOLUME = leap.Volume(num_x=23, num_y=19, num_z=6, voxel_width=0.5, voxel_height=0.5)


def _geometries():
    angles = np.linspace(0.2, 2 * np.pi, 13, endpoint=False)
    det = leap.Detector(num_rows=6, num_cols=41, pixel_height=0.5, pixel_width=0.8,
                        center_col=19.6)
    return {
        "parallel": leap.ParallelBeam(detector=det.with_changes(pixel_width=0.5),
                                      angles=angles / 2),
        # Magnification ≈ 1.8: 0.5 mm voxels on 0.8 mm pixels, some wider than a pixel.
        "fan": leap.FanBeam(detector=det, angles=angles, sod=60.0, sdd=110.0),
        # The source passes through the volume: columns behind it get no weight.
        "fan_close": leap.FanBeam(detector=det, angles=angles, sod=4.0, sdd=9.0),
    }


def _kernel_backproject(plan, g, views, row_shift):
    """axial_direct.backproject of the views ``views`` of g, detector rows of view a moved by
    ``row_shift[a]`` whole rows (as a per-view detector centre would)."""
    s = plan.scalars()
    v, sdd, center_col, center_row, fov_r2, stretch = launch._axial_form(plan)
    assert launch.direct_rows(plan)
    G = launch.prepare_projections(plan, g)[views]
    f = np.empty(plan.volume.shape, dtype=np.float32)
    axial_direct.backproject(np.ascontiguousarray(G), f, v.col_dir[views], v.source_xy[views],
                             v.source_z[views], sdd[views], v.sod, v.helical_pitch,
                             v.column_model, fov_r2, s.x0, s.y0, s.z0, s.voxel_width,
                             s.voxel_height, s.pixel_width, s.pixel_height, center_col[views],
                             (center_row + row_shift)[views], s.dist_sod)
    return f


@pytest.mark.parametrize("name", ["parallel", "fan", "fan_close"])
@pytest.mark.parametrize("shifted", [False, True])
def test_grouped_views_sum_to_the_single_views(name, shifted, rng):
    geo = _geometries()[name]
    plan = make_plan(geo, VOLUME)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    na = geo.num_angles
    # Whole-row shifts keep the rows direct; runs of equal shifts group, changes do not.
    shift = np.array([0, 0, 1, 1, 1, -2, 0, 0, 0, 0, 2, 2, 0])[:na] if shifted else np.zeros(na)
    full = _kernel_backproject(plan, g, np.arange(na), shift)
    parts = sum(_kernel_backproject(plan, g, np.array([a]), shift).astype(np.float64)
                for a in range(na))
    assert np.abs(parts).max() > 0
    np.testing.assert_allclose(full, parts, rtol=1e-5, atol=1e-5 * np.abs(parts).max())


def test_the_public_backprojection_takes_the_groups(rng):
    """leap.backproject of a fan beam goes through the same kernel (not the single-slice
    or modular paths), so the grouping above is what users get."""
    geo = _geometries()["fan"]
    plan = make_plan(geo, VOLUME)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    na = geo.num_angles
    np.testing.assert_array_equal(leap.backproject(geo, VOLUME, g),
                                  _kernel_backproject(plan, g, np.arange(na), np.zeros(na)))
