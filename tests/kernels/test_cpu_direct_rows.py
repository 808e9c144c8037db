"""Direct rows on the CPU: where every view's slices lie on detector rows (parallel and
fan beams, voxels as high as pixels, slices centred on rows) the axial kernels read
the voxel and pixel values (leap.kernels.cpu.launch.direct_rows) instead of
interpolating cumulative sums.

The two forms are the same linear operator; the values keep float32 data's accuracy
where differences of float32 cumulative sums lose it on data with a large mean.
"""
import numba
import numpy as np
import pytest

import leap
from leap.kernels.cpu import axial_direct, columns, launch
from leap.kernels.plan import make_plan

VOLUME = leap.Volume(num_x=21, num_y=18, num_z=7, voxel_width=0.5, voxel_height=0.5)
ANGLES = np.linspace(0.3, 2 * np.pi, 11, endpoint=False)
DET = leap.Detector(num_rows=9, num_cols=37, pixel_height=0.5, pixel_width=0.8,
                    center_col=17.4)


def _direct_geometries():
    return {
        "parallel": leap.ParallelBeam(detector=DET.with_changes(pixel_width=0.5),
                                      angles=ANGLES / 2),
        # Footprints up to two pixels wide next to two-tap ones.
        "fan": leap.FanBeam(detector=DET, angles=ANGLES, sod=60.0, sdd=110.0),
        # The source passes through the volume: columns behind it get no weight.
        "fan_close": leap.FanBeam(detector=DET, angles=ANGLES, sod=4.0, sdd=9.0),
        # Slices shifted by whole rows against the detector.
        "fan_rows_shifted": leap.FanBeam(detector=DET.with_changes(center_row=2.0),
                                         angles=ANGLES, sod=60.0, sdd=110.0),
        # 16 rows and more: G's columns padded to an odd number of cache lines
        # (columns.column_length), slices shifted both ways past the detector.
        "fan_tall_shifted": leap.FanBeam(detector=DET.with_changes(num_rows=19,
                                                                   center_row=7.0),
                                         angles=ANGLES, sod=60.0, sdd=110.0),
        "parallel_tall_shifted": leap.ParallelBeam(
            detector=DET.with_changes(num_rows=16, pixel_width=0.5, center_row=11.0),
            angles=ANGLES / 2),
    }


@pytest.mark.parametrize("name", sorted(_direct_geometries()))
def test_direct_geometries_run_on_values(name):
    assert launch.direct_rows(make_plan(_direct_geometries()[name], VOLUME))


@pytest.mark.parametrize("geometry, volume", [
    (leap.ConeBeam(detector=DET, angles=ANGLES, sod=60.0, sdd=110.0), VOLUME),
    (leap.ConeBeam(detector=DET, angles=ANGLES, sod=60.0, sdd=110.0, helical_pitch=1.0),
     VOLUME),
    # Voxels half a pixel high, and slices between rows: interpolated.
    (leap.FanBeam(detector=DET, angles=ANGLES, sod=60.0, sdd=110.0),
     VOLUME.with_changes(voxel_height=0.25)),
    (leap.ParallelBeam(detector=DET.with_changes(center_row=3.7), angles=ANGLES), VOLUME),
])
def test_other_geometries_run_on_cumulative_sums(geometry, volume):
    assert not launch.direct_rows(make_plan(geometry, volume))


@pytest.mark.parametrize("name", sorted(_direct_geometries()))
def test_values_and_cumulative_sums_give_the_same_operator(name, rng, monkeypatch):
    geo = _direct_geometries()[name]
    f = rng.random(VOLUME.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    direct = leap.project(geo, VOLUME, f), leap.backproject(geo, VOLUME, g)
    monkeypatch.setattr(launch, "direct_rows", lambda plan: False)
    sums = leap.project(geo, VOLUME, f), leap.backproject(geo, VOLUME, g)
    for a, b in zip(direct, sums):
        assert np.abs(b).max() > 0
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6 * np.abs(b).max())


@pytest.mark.parametrize("name", ["parallel", "fan"])
def test_data_with_a_large_mean_keep_float32_accuracy(name, rng):
    """100 + r (r in [0, 1)) against 100·op(1) + op(r) in float64: op(1) and op(r) are
    exact up to their output's rounding (r holds 17 significant bits, so even float32
    cumulative sums of it are exact), so only the kernel's own rounding shows. Running
    sums of 100 + r over 64 rows lose ~1e-6 of the result; the values lose only the
    output's rounding (~6e-8)."""
    n = 64
    det = leap.Detector(num_rows=n, num_cols=n, pixel_height=1.0, pixel_width=1.0)
    angles = np.linspace(0, np.pi if name == "parallel" else 2 * np.pi, 45, endpoint=False)
    geo = (leap.ParallelBeam(detector=det, angles=angles) if name == "parallel"
           else leap.FanBeam(detector=det, angles=angles, sod=200.0, sdd=400.0))
    vol = leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=1.0 if name == "parallel" else 0.5,
                      voxel_height=1.0)
    for op, shape in ((leap.project, vol.shape), (leap.backproject, geo.projection_shape)):
        x = (100.0 + rng.random(shape)).astype(np.float32)
        r = (x.astype(np.float64) - 100.0).astype(np.float32)    # exact
        ref = 100.0 * op(geo, vol, np.ones_like(x)).astype(np.float64) + op(geo, vol, r)
        err = np.abs(op(geo, vol, x) - ref).max() / np.abs(ref).max()
        assert err < 2.5e-7, (op.__name__, err)


def test_projector_blocks_of_volume_rows_cover_the_volume(rng, monkeypatch):
    """The direct-row projector adds blocks of volume rows
    (axial_direct.DIRECT_BLOCK_BYTES) to a group of views (axial_direct.direct_group) in
    turn: with 1 MiB volume rows every row is a block of its own, and a view count one
    past a multiple of the group leaves a last group of one view."""
    vol = leap.Volume(num_x=256, num_y=3, num_z=1024, voxel_width=1.0, voxel_height=1.0)
    assert 4 * vol.num_x * vol.num_z >= axial_direct.DIRECT_BLOCK_BYTES
    det = leap.Detector(num_rows=1024, num_cols=262, pixel_height=1.0, pixel_width=1.0)
    threads = numba.get_num_threads()
    views = 4 * threads + 1
    size = axial_direct.direct_group(views, threads, 4 * vol.num_x * vol.num_y * vol.num_z)
    assert size == axial_direct.DIRECT_GROUP > 1 and views % size == 1
    geo = leap.ParallelBeam(detector=det, angles=np.linspace(0.1, np.pi, views, endpoint=False))
    # Multiples of 1/64: the cumulative sums' path is exact on them however tall the
    # columns, so the two paths must agree to their output's rounding.
    f = (rng.integers(0, 64, vol.shape) / 64).astype(np.float32)
    direct = leap.project(geo, vol, f)
    monkeypatch.setattr(launch, "direct_rows", lambda plan: False)
    sums = leap.project(geo, vol, f)
    assert np.abs(sums).max() > 0
    np.testing.assert_allclose(direct, sums, rtol=0, atol=2e-6 * np.abs(sums).max())


def test_projector_view_groups():
    """Groups of DIRECT_GROUP views, DIRECT_GROUP_LARGE for volumes past the cache, fewer
    where there would be under two groups per thread."""
    small, large = 4 * 128 ** 3, 4 * 256 ** 3
    assert small <= axial_direct.LARGE_VOLUME_BYTES < large
    assert axial_direct.direct_group(180, 2, small) == axial_direct.DIRECT_GROUP == 2
    assert axial_direct.direct_group(180, 2, large) == axial_direct.DIRECT_GROUP_LARGE == 4
    assert axial_direct.direct_group(10, 2, large) == 2
    assert axial_direct.direct_group(5, 2, large) == 1
    assert axial_direct.direct_group(1, 8, small) == 1
    assert axial_direct.direct_group(0, 0, small) == 1


@pytest.mark.parametrize("name", ["fan", "fan_tall_shifted"])
def test_backprojector_reads_prepared_views_and_refuses_other_shapes(name, rng):
    geo = _direct_geometries()[name]
    plan = make_plan(geo, VOLUME)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    G = launch.prepare_projections(plan, g)
    nr = geo.detector.num_rows
    assert G.shape[2] == columns.column_length(nr, 4) > nr
    assert not G[:, :, nr:].any()
    f = np.empty(VOLUME.shape, dtype=np.float32)
    np.testing.assert_array_equal(launch.backproject_prepared(plan, G, f),
                                  leap.backproject(geo, VOLUME, g))
    for rows in (nr, G.shape[2] + 1):
        with pytest.raises(ValueError, match="prepare_projections"):
            launch.backproject_prepared(plan, np.zeros(G.shape[:2] + (rows,), np.float32), f)


@pytest.mark.parametrize("shape", [(1, 3, 5), (7, 4, 6), (8, 2, 3), (19, 5, 9)])
def test_volume_z_columns_is_the_transposed_volume(shape, rng):
    """Slices are copied columns.Z_BLOCK at a time: counts below, at and past a block."""
    f = rng.random(shape, dtype=np.float32)
    np.testing.assert_array_equal(columns.volume_z_columns(f)[0], np.moveaxis(f, 0, -1))


@pytest.mark.parametrize("itemsize", [4, 8])
def test_columns_are_an_odd_number_of_cache_lines_from_one_line_on(itemsize):
    per_line = 64 // itemsize
    for n in range(1, 1100):
        m = columns.column_length(n, itemsize)
        assert m > n
        if n < per_line:
            assert m == n + 1
        else:
            assert m % per_line == 0 and (m // per_line) % 2 == 1 and m - n <= 2 * per_line


def test_two_taps_weigh_every_interval_on_two_pixels_exactly(rng):
    """columns.two_pixels admits exactly the intervals that meet at most two pixels, and
    on them two_tap's weights are the pixel overlaps (so the kernels may take them on two
    taps); every interval at most one pixel wide is among them."""
    from leap.kernels.cpu.columns import two_pixels, two_tap
    from leap.kernels.footprints import overlap
    ncols = 9
    for _ in range(4000):
        c_lo = rng.uniform(-0.5, ncols - 0.5)
        c_hi = c_lo + rng.choice([rng.uniform(0.0, 1.0), rng.uniform(1.0, 2.5)])
        met = [i for i in range(-1, ncols + 3) if overlap(c_lo, c_hi, i - 0.5, i + 0.5) > 0]
        assert two_pixels(c_lo, c_hi) == (len(met) <= 2), (c_lo, c_hi, met)
        if c_hi - c_lo <= 1.0:
            assert two_pixels(c_lo, c_hi)
        if two_pixels(c_lo, c_hi):
            fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
            i0 = int(fl)
            assert o0 == overlap(c_lo, c_hi, i0 - 0.5, i0 + 0.5)
            assert o1 == overlap(c_lo, c_hi, i0 + 0.5, i0 + 1.5)
    assert not two_pixels(float("nan"), 1.0) and not two_pixels(0.0, float("nan"))
