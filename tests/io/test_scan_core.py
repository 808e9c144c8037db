"""The scanner formats' common parts: lazy sources (leap.io.lazy), flat-field
normalisation (leap.preprocessing.flat_field) and the Scan value (leap.io.scanners)."""
import numpy as np
import pytest

import leap
from leap.io import Scan, open_scan
from leap.io.lazy import InMemory, Mapped, Selected, TiffStack
from leap.preprocessing import MIN_TRANSMISSION, attenuation, flat_at_views, flat_field, neg_log
from leap.system import CTSystem


# --------------------------------------------------------------------- sources
def test_tiff_stack_reads_regions_lazily(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    rng = np.random.default_rng(0)
    data = rng.integers(0, 60000, (7, 5, 6)).astype(np.uint16)
    for i, img in enumerate(data):
        tifffile.imwrite(tmp_path / f"p_{i:03d}.tif", img)
    tifffile.imwrite(tmp_path / "z_stack.tif", data[:2], compression="zlib")
    src = TiffStack(sorted(tmp_path.glob("p_*.tif")))
    assert src.shape == (7, 5, 6) and src.dtype == np.uint16 and len(src) == 7
    assert np.array_equal(np.asarray(src), data)
    for key in (3, (slice(1, 6, 2), 2), (np.array([6, 0, 3]), slice(1, 4), 5), (-1, -1, -1),
                (Ellipsis, 2), slice(4, 4)):
        assert np.array_equal(src[key], data[key]), key
    with pytest.raises(IndexError):
        src[7]
    with pytest.raises(IndexError):
        src[0, 0, 0, 0]
    packed = TiffStack([tmp_path / "z_stack.tif"])      # compressed: read whole, still right
    assert np.array_equal(packed[1, 2:4], data[1, 2:4])
    tifffile.imwrite(tmp_path / "p_999.tif", data[0, :4])
    with pytest.raises(ValueError, match="p_999.tif"):
        TiffStack(sorted(tmp_path.glob("p_*.tif")))


def test_selected_and_mapped_sources():
    data = np.arange(5 * 2 * 3, dtype=np.float32).reshape(5, 2, 3)
    base = InMemory(data)
    sel = Selected(base, [4, 1, 2, 1])
    assert sel.shape == (4, 2, 3)
    assert np.array_equal(np.asarray(sel), data[[4, 1, 2, 1]])
    assert np.array_equal(sel[1:3, 1], data[[1, 2], 1])
    assert np.array_equal(sel[0], data[4])
    with pytest.raises(IndexError):
        Selected(base, [5])
    doubled = Mapped(lambda a, b, key: a + b, base, base)
    assert np.array_equal(doubled[2:4, :, 1], 2 * data[2:4, :, 1])
    with pytest.raises(ValueError, match="one shape"):
        Mapped(lambda a, b, key: a, base, sel)


# ----------------------------------------------------------------- flat field
def _counts(rng, g, flat_level=1000.0, dark_level=40.0):
    flats = flat_level * (1 + 0.05 * rng.random((3,) + g.shape[1:]))
    darks = dark_level + rng.random((2,) + g.shape[1:])
    raw = (flats.mean(0) - darks.mean(0)) * np.exp(-g) + darks.mean(0)
    return raw.astype(np.float32), flats, darks


def test_flat_field_and_neg_log_recover_line_integrals():
    rng = np.random.default_rng(1)
    g = 3 * rng.random((4, 5, 6)).astype(np.float32)
    raw, flats, darks = _counts(rng, g)
    np.testing.assert_allclose(attenuation(raw, flats, darks), g, atol=2e-5)
    np.testing.assert_allclose(neg_log(flat_field(raw, flats.mean(0), darks.mean(0))), g,
                               atol=2e-5)
    # the floor: zero and negative transmissions give -log(floor), NaN stays NaN
    t = np.array([0.5, 0.0, -1.0, np.nan], np.float32)
    out = neg_log(t)
    assert out[0] == pytest.approx(np.log(2))
    assert out[1] == out[2] == pytest.approx(-np.log(MIN_TRANSMISSION))
    assert np.isnan(out[3])
    # a dead flat pixel (not above the dark level) gives 0 transmission, not inf
    flats_dead = flats.copy()
    flats_dead[:, 2, 3] = darks.mean(0)[2, 3]
    assert np.all(flat_field(raw, flats_dead, darks)[:, 2, 3] == 0)


def test_interpolated_flats_and_dose_normalisation():
    rng = np.random.default_rng(2)
    g = rng.random((6, 4, 5)).astype(np.float32)
    g[:, :, 0] = 0                                  # an air column
    f0, f1 = np.full((4, 5), 1000.0), np.full((4, 5), 1200.0)   # the source drifts
    w = np.arange(6) / 5.0
    flat_v = (1 - w)[:, None, None] * f0 + w[:, None, None] * f1
    dose = 1 + 0.1 * rng.random(6)                 # the tube output varies per view
    raw = (flat_v * np.exp(-g) * dose[:, None, None]).astype(np.float32)
    flats = np.stack([f0, f0, f1])
    np.testing.assert_allclose(flat_at_views(flats, [0, 0, 5], [0, 5, 10])[[0, 1, 1]],
                               np.stack([f0, f1, f1]))
    out = attenuation(raw, flats, None, flat_positions=[0, 0, 5], views=np.arange(6),
                      air_region=(slice(None), slice(0, 1)))
    np.testing.assert_allclose(out, g, atol=1e-5)
    # the same a block of views at a time
    block = attenuation(raw[2:4], flats, None, flat_positions=[0, 0, 5], views=[2, 3],
                        air_region=[0, 3, 0, 0])
    np.testing.assert_allclose(block, g[2:4], atol=1e-5)
    with pytest.raises(ValueError, match="views"):
        flat_field(raw, flats, flat_positions=[0, 0, 5])
    with pytest.raises(ValueError, match="air_region"):
        flat_field(raw, flats, air_region=(slice(0, 0), slice(None)))
    with pytest.raises(ValueError, match="flats must be"):
        flat_field(raw, np.ones((3, 3)))
    with pytest.raises(ValueError, match="min_transmission"):
        neg_log(raw, min_transmission=0)


# ------------------------------------------------------------------------ Scan
def _system(n_views=8):
    det = leap.Detector(num_rows=4, num_cols=10, pixel_height=1.0, pixel_width=1.0)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, n_views, endpoint=False),
                        sod=100.0, sdd=200.0)
    vol = leap.Volume(num_x=10, num_y=10, num_z=4, voxel_width=0.5, voxel_height=0.5)
    return CTSystem(geometry=geo, volume=vol)


def test_scan_attenuation_is_lazy_and_reads_slabs_alike():
    rng = np.random.default_rng(3)
    s = _system()
    g = rng.random(s.projection_shape).astype(np.float32)
    g[:, :, :2] = 0
    raw, flats, darks = _counts(rng, g)
    scan = Scan(system=s, projections=raw, flats=flats, darks=darks,
                angles=np.arange(8) * 45.0, format="test", path="memory")
    att = scan.attenuation()
    np.testing.assert_allclose(np.asarray(att), g, atol=3e-5)
    np.testing.assert_allclose(att[2:5, 1:3, 4:9], g[2:5, 1:3, 4:9], atol=3e-5)
    np.testing.assert_allclose(att[6, 3], g[6, 3], atol=3e-5)
    dosed = scan.attenuation(air_region=(slice(None), slice(0, 2)))
    whole = np.asarray(dosed)
    assert np.array_equal(dosed[:, 1:3], whole[:, 1:3])    # a slab of rows: the same values
    assert "2 darks" in scan.summary() and "3 flats" in scan.summary()
    with pytest.raises(ValueError, match="geometry says"):
        Scan(system=s, projections=raw[:, :3])
    with pytest.raises(ValueError, match="flats"):
        Scan(system=s, projections=raw, flats=flats[:, :3])


def test_scan_of_line_integrals_and_new_centre():
    s = _system()
    g = np.ones(s.projection_shape, np.float32)
    scan = Scan(system=s, projections=g, is_attenuation=True, format="test")
    assert np.array_equal(np.asarray(scan.attenuation()), g)
    moved = scan.with_center_col(6.0)
    assert moved.system.geometry.detector.center_col == 6.0
    assert scan.system.geometry.detector.center_col == 4.5


def test_open_scan_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        open_scan(tmp_path / "nothing")
    (tmp_path / "notes.txt").write_text("not a scan")
    with pytest.raises(ValueError, match="not a scan leap can read"):
        open_scan(tmp_path / "notes.txt")
    for name in ("polaroid", "dicom ct"):
        with pytest.raises(ValueError, match="unknown scan format"):
            open_scan(tmp_path / "notes.txt", format=name)


def test_scan_attenuation_bad_pixels_and_rings_read_alike_by_region():
    """Bad-pixel replacement and stripe removal need neighbours (and, for stripes, all
    views): any region read gives the values of the whole array."""
    rng = np.random.default_rng(4)
    det = leap.Detector(num_rows=6, num_cols=40, pixel_height=1.0, pixel_width=1.0)
    geo = leap.ParallelBeam(detector=det, angles=np.linspace(0, np.pi, 24, endpoint=False))
    s = CTSystem(geometry=geo, volume=leap.Volume(num_x=40, num_y=40, num_z=6, voxel_width=1.0,
                                                  voxel_height=1.0))
    x = np.linspace(-1, 1, 40)
    g = np.broadcast_to(1 - 0.2 * x ** 2, (24, 6, 40)).astype(np.float32) * 2
    flats = np.full((4, 6, 40), 1000.0) * (1 + 0.02 * rng.standard_normal((4, 6, 40)))
    gain = np.ones((6, 40))
    gain[:, 17] = 1.05                               # a column that reads 5 % high: a ring
    flats[:, 3, 9] = 0.0                             # a dead pixel
    raw = (flats.mean(0) * gain * np.exp(-g)).astype(np.float32)
    scan = Scan(system=s, projections=raw, flats=flats)
    plain = np.asarray(scan.attenuation())
    assert plain[0, 3, 9] == pytest.approx(-np.log(MIN_TRANSMISSION))
    att = scan.attenuation(bad_pixels="auto", rings=9)
    whole = np.asarray(att)
    assert abs(whole[0, 3, 9] - g[0, 3, 9]) < 0.05                       # dead pixel filled
    assert np.abs(whole[:, :, 17] - g[:, :, 17]).max() < 0.3 * np.abs(
        plain[:, :, 17] - g[:, :, 17]).max()                              # the stripe shrinks
    for key in ((slice(3, 9), slice(2, 5), slice(5, 30)), (7, 3, slice(None)),
                (slice(None), slice(0, 2), slice(15, 20)), (np.array([1, 20]), 3, 9)):
        np.testing.assert_array_equal(att[key], whole[key])
    with pytest.raises(ValueError, match="rings"):
        scan.attenuation(rings=2)
    with pytest.raises(ValueError, match="bad_pixels"):
        scan.attenuation(bad_pixels=np.zeros((6, 39), bool))


def test_oriented_flips_and_bins_lazily():
    from leap.io.lazy import Oriented
    rng = np.random.default_rng(5)
    data = rng.random((4, 6, 8)).astype(np.float32)
    for flips in ((True, True), (True, False), (False, True), (False, False)):
        o = Oriented(InMemory(data), flip_rows=flips[0], flip_cols=flips[1])
        ref = data[:, ::-1 if flips[0] else 1, ::-1 if flips[1] else 1]
        for key in (slice(None), (1, slice(2, 5)), (slice(0, 3), 5, slice(1, 7)),
                    (np.array([3, 0]), slice(0, 6), slice(1, 7)), (slice(1, 2), slice(None), np.array([7, 1])),
                    (2, -1, 0),
                    (slice(None), slice(4, 2))):
            np.testing.assert_array_equal(o[key], ref[key], err_msg=f"{flips} {key}")
    binned = Oriented(InMemory(data), (2, 4))
    np.testing.assert_allclose(np.asarray(binned),
                               data[:, ::-1, ::-1].reshape(4, 3, 2, 2, 4).mean(axis=(2, 4)),
                               rtol=1e-6)
