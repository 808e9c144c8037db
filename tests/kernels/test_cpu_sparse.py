"""The CPU projectors skip what is zero: voxel columns without a nonzero voxel, and in
the others the voxels (direct rows) or detector rows (cumulative sums) beyond the
column's first and last nonzero voxel (leap.kernels.cpu.columns.volume_z_cumsum /
volume_z_columns give each column's extent). Skipping adds nothing that was not zero, so
the projections must equal, bit for bit, those of the same kernels told that every
column is full; and a NaN, or values that cancel, must not make a column look empty.
"""
import numpy as np
import pytest

import leap
from leap.kernels.cpu import columns

VOLUME = leap.Volume(num_x=21, num_y=18, num_z=11, voxel_width=0.5, voxel_height=0.5)


def _geometries():
    angles = np.linspace(0.1, 2 * np.pi, 17, endpoint=False)
    det = leap.Detector(num_rows=13, num_cols=37, pixel_height=0.7, pixel_width=0.6,
                        center_row=6.3, center_col=17.6)
    cone = leap.ConeBeam(detector=det, angles=angles, sod=40.0, sdd=70.0)
    flat = leap.Detector(num_rows=11, num_cols=37, pixel_height=0.5, pixel_width=0.6)
    return {
        "cone": cone,
        "curved": leap.ConeBeam(detector=det.with_changes(curved=True), angles=angles,
                                sod=40.0, sdd=70.0),
        "helical": leap.ConeBeam(detector=det, angles=2 * angles, sod=40.0, sdd=70.0,
                                 helical_pitch=0.4),
        "modular": cone.to_modular(),
        "parallel": leap.ParallelBeam(detector=flat, angles=angles / 2),
        "fan": leap.FanBeam(detector=flat, angles=angles, sod=40.0, sdd=70.0),
    }


def _sparse_volume(rng):
    """Empty columns, columns with one voxel at the top or bottom slice, a column
    whose values cancel, and columns with gaps."""
    f = np.zeros(VOLUME.shape, np.float32)
    f[3:8, 5:12, 6:15] = rng.random((5, 7, 9), dtype=np.float32)
    f[4:6, 7:9, 8:11] = 0.0                      # a hole
    f[0, 2, 3] = 1.5                             # bottom slice only
    f[-1, 15, 17] = 2.0                          # top slice only
    f[2, 9, 2], f[7, 9, 2] = 1.0, -1.0           # sums to zero, not empty
    return f


def _full_extents(monkeypatch):
    """Make the projectors see every column as full (the reference: no skipping)."""
    for name in ("volume_z_cumsum", "volume_z_columns"):
        orig = getattr(columns, name)

        def full(f, *rows, orig=orig):
            S, extent = orig(f, *rows)
            extent[..., 0] = 0
            extent[..., 1] = f.shape[0] - 1
            return S, extent
        monkeypatch.setattr(columns, name, full)


@pytest.mark.parametrize("name", ["cone", "curved", "helical", "modular", "parallel", "fan"])
def test_skipping_zeros_changes_no_bit(name, rng, monkeypatch):
    geo = _geometries()[name]
    vol = VOLUME if name in ("cone", "curved", "helical", "modular") else \
        VOLUME.with_changes(voxel_height=0.5)
    f = _sparse_volume(rng)
    g = leap.project(geo, vol, f)
    assert np.count_nonzero(g) > 0
    _full_extents(monkeypatch)
    np.testing.assert_array_equal(g, leap.project(geo, vol, f))


@pytest.mark.parametrize("name", ["cone", "parallel"])
def test_a_nan_is_not_skipped(name, rng):
    geo = _geometries()[name]
    f = _sparse_volume(rng)
    f[9, 1, 1] = np.nan                          # alone in an otherwise empty column
    with pytest.raises(ValueError, match="finite|NaN|nan"):
        leap.project(geo, VOLUME, f)
    S, extent = columns.volume_z_cumsum(f)
    assert tuple(extent[1, 1]) == (9, 9)


@pytest.mark.parametrize("which", ["volume_z_cumsum", "volume_z_columns"])
def test_extents_are_the_first_and_last_nonzero_voxels(which, rng):
    f = _sparse_volume(rng)
    f[5, 0, 0] = np.nan
    _, extent = getattr(columns, which)(f)
    nz = f.shape[0]
    nonzero = f != 0                             # NaN != 0
    first = np.where(nonzero.any(0), nonzero.argmax(0), nz)
    last = np.where(nonzero.any(0), nz - 1 - nonzero[::-1].argmax(0), -1)
    np.testing.assert_array_equal(extent[..., 0], first)
    np.testing.assert_array_equal(extent[..., 1], last)


@pytest.mark.parametrize("name", ["cone", "helical", "modular", "parallel", "fan"])
@pytest.mark.parametrize("sparse", [False, True])
def test_projection_in_slabs_of_rows(name, sparse, rng, monkeypatch):
    """Volumes over launch.WHOLE_VOLUME_BYTES are projected a slab of rows at a time
    (launch.projection_slabs), each slab's sums added to the projections: the same
    projections to float32 rounding. Forced here on a small volume."""
    from leap.kernels.cpu import launch
    geo = _geometries()[name]
    f = _sparse_volume(rng) if sparse else rng.random(VOLUME.shape, dtype=np.float32)
    whole = leap.project(geo, VOLUME, f)
    monkeypatch.setattr(launch, "WHOLE_VOLUME_BYTES", 0)
    slabs = launch.projection_slabs(VOLUME.shape)
    assert 1 < len(slabs) <= launch.PROJECTION_SLABS
    assert max(b - a for a, b in slabs) == -(-VOLUME.num_y // launch.PROJECTION_SLABS)
    assert slabs[0][0] == 0 and slabs[-1][1] == VOLUME.num_y
    assert all(a[1] == b[0] for a, b in zip(slabs, slabs[1:]))
    g = leap.project(geo, VOLUME, f)
    assert not np.array_equal(g, 0 * g)
    np.testing.assert_allclose(g, whole, rtol=1e-6, atol=1e-6 * np.abs(whole).max())
