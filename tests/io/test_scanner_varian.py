"""Varian reader and writer (leap.io.scanners.varian, ._xim, ._hnd).

The lookup-table difference coding is checked against a plain per-pixel decoder written
from the description (RTK's and pylinac's), on images whose differences need 1, 2 and
4 bytes and on odd sizes. Scans set up by hand (full fan, half fan, TrueBeam and OBI)
are simulated by exact ray tracing, written in Varian's layout, read back and
reconstructed: the reader's geometry must reconstruct the object as well as the hand-made
one, and a half-fan scan without the ring ("seam") an unweighted offset detector leaves.
"""
from __future__ import annotations

import os
import pickle
import struct

import numpy as np
import pytest

import leap
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.io import open_scan
from leap.io.scanners import FORMATS, READERS, varian
from leap.io.scanners._common import ScanFormatError, default_system
from leap.io.scanners._hnd import HEADER_SIZE, read_hnd, write_hnd
from leap.io.scanners._xim import decode_differences, encode_differences, read_xim, write_xim
from leap.io.scanners.varian import write_scan
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from leap.system import FBPOptions

# Off the axis and off the mid-plane: a mirrored column axis, a wrong angle offset or
# direction, or a wrong row direction moves them.
PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.0), radii=(9, 6, 4),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-5.0, 6.0, -1.5), radii=(3, 4, 2),
                                 value=0.04)])
I0 = 50000.0


# ------------------------------------------------------------------------ the codec
def _reference_decode(raw, table, buffer, w, h):
    """Pixel by pixel from the description: raw first w + 1, then each difference in 1,
    2 or 4 bytes as its 2-bit code says, added to left + above − above-left (mod 2³²)."""
    p = [int(x) for x in raw[:w + 1]] + [0] * (w * h - w - 1)
    pos = 0
    for i in range(w + 1, w * h):
        k = i - w - 1
        code = (table[k // 4] >> (2 * (k % 4))) & 3
        size = {0: 1, 1: 2, 2: 4}[code]
        d = int.from_bytes(buffer[pos:pos + size], "little", signed=True)
        pos += size
        v = (d + p[i - 1] + p[i - w] - p[i - w - 1]) % 2 ** 32
        p[i] = v - 2 ** 32 if v >= 2 ** 31 else v
    return np.array(p, dtype=np.int64).reshape(h, w)


def _codes(table, m):
    lut = np.frombuffer(table, np.uint8)
    return ((lut[:, None] >> np.array([0, 2, 4, 6], np.uint8)) & 3).ravel()[:m]


@pytest.mark.parametrize("h, w", [(1, 1), (1, 4), (2, 1), (2, 2), (3, 5), (7, 3), (9, 11),
                                  (6, 8)])
def test_difference_coding_round_trips_and_matches_the_description(h, w):
    rng = np.random.default_rng(h * 100 + w)
    img = rng.normal(3000, 20, (h, w)).astype(np.int32)
    flat = img.ravel()                 # differences of every size, and the int32 extremes
    if flat.size > w + 4:
        flat[w + 1] += 100             # (then 1-byte neighbours)
        flat[w + 2] += 5000            # 2 bytes
        flat[w + 3] = 2 ** 31 - 1      # 4 bytes, with wrap-around in the predictor
        flat[-1] = -2 ** 31
    table, buffer = encode_differences(img)
    nraw = min(w * h, w + 1)
    raw = np.frombuffer(buffer, "<i4", count=nraw)
    back = decode_differences("mem", raw, table, buffer[4 * nraw:], w, h)
    np.testing.assert_array_equal(back, img)
    if w * h > w + 1:
        assert len(table) == (w * h - w - 1 + 3) // 4
        ref = _reference_decode(raw, table, buffer[4 * nraw:], w, h)
        np.testing.assert_array_equal(ref, img)
    if flat.size > w + 4:
        assert set(_codes(table, w * h - w - 1)) == {0, 1, 2}


def test_difference_coding_of_hand_made_bytes():
    # 3 x 2 image: raw p0..p3 = 10, 20, 30, 40; then p4 with difference -1 (1 byte) and
    # p5 with difference 1000 (2 bytes): p4 = -1 + 40 + 20 - 10, p5 = 1000 + p4 + 30 - 20
    raw = np.array([10, 20, 30, 40], np.int32)
    table = bytes([0b0100])
    buffer = struct.pack("<bh", -1, 1000)
    img = decode_differences("mem", raw, table, buffer, 3, 2)
    np.testing.assert_array_equal(img, [[10, 20, 30], [40, 49, 1059]])
    with pytest.raises(ScanFormatError, match="truncated"):
        decode_differences("mem", raw, table, buffer[:2], 3, 2)
    with pytest.raises(ScanFormatError, match="invalid code 3"):
        decode_differences("mem", raw, bytes([0b0011]), buffer, 3, 2)
    with pytest.raises(ScanFormatError, match="lookup table has 0 bytes"):
        decode_differences("mem", raw, b"", buffer, 3, 2)


@pytest.mark.parametrize("compressed, bpp", [(True, 4), (False, 4), (False, 2), (False, 1)])
def test_xim_file_round_trip(tmp_path, compressed, bpp):
    rng = np.random.default_rng(bpp)
    img = rng.integers(-100, 100, (5, 7)) if bpp == 1 else rng.integers(0, 30000, (5, 7))
    props = {"KVSourceRtn": 91.5, "GantryRtn": 1, "Note": "half fan",
             "Doubles": np.array([1.5, -2.0]), "Ints": np.array([3, 4])}
    write_xim(tmp_path / "a.xim", img, props, compressed=compressed, bytes_per_pixel=bpp)
    head, back, p = read_xim(tmp_path / "a.xim")
    np.testing.assert_array_equal(back, img)
    assert back.dtype == np.int32 and head["compressed"] == compressed
    assert (head["width"], head["height"], head["format_id"]) == (7, 5, "VMS.XI")
    assert p["KVSourceRtn"] == 91.5 and p["GantryRtn"] == 1 and p["Note"] == "half fan"
    np.testing.assert_array_equal(p["Doubles"], [1.5, -2.0])
    np.testing.assert_array_equal(p["Ints"], [3, 4])
    assert read_xim(tmp_path / "a.xim", pixels=False)[1] is None


def test_hnd_file_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    img = rng.integers(0, 2 ** 32, (6, 9), dtype=np.uint64)
    write_hnd(tmp_path / "a.hnd", img, {"CTProjectionAngle": 12.25, "IDUResolutionX": 0.784,
                                        "PatientID": "anon"})
    head, back = read_hnd(tmp_path / "a.hnd")
    np.testing.assert_array_equal(back, img)
    assert back.dtype == np.uint32
    assert head["CTProjectionAngle"] == 12.25 and head["IDUResolutionX"] == 0.784
    assert head["PatientID"] == "anon" and (head["SizeX"], head["SizeY"]) == (9, 6)
    # the header's fields sit where RTK reads them: SizeX at byte 120, the angle at 432
    data = (tmp_path / "a.hnd").read_bytes()
    assert struct.unpack_from("<II", data, 120) == (9, 6)
    assert struct.unpack_from("<d", data, 432)[0] == 12.25
    assert len(data) > HEADER_SIZE


def test_truncated_and_damaged_files_name_the_file_and_field(tmp_path):
    img = np.arange(48).reshape(6, 8) * 1000
    write_xim(tmp_path / "a.xim", img, {"KVSourceRtn": 1.0})
    data = (tmp_path / "a.xim").read_bytes()
    for cut, what in ((5, "format id"), (18, "image height"), (40, "lookup table"),
                      (len(data) - 30, "property"), (len(data) - 3, "property")):
        (tmp_path / "t.xim").write_bytes(data[:cut])
        with pytest.raises(ScanFormatError, match=f"t.xim.*truncated.*{what}"):
            read_xim(tmp_path / "t.xim")
    (tmp_path / "n.xim").write_bytes(b"NOTXIM__" + data[8:])
    with pytest.raises(ScanFormatError, match="n.xim: is not an XIM file"):
        read_xim(tmp_path / "n.xim")
    write_hnd(tmp_path / "a.hnd", img)
    data = (tmp_path / "a.hnd").read_bytes()
    (tmp_path / "t.hnd").write_bytes(data[:300])
    with pytest.raises(ScanFormatError, match="t.hnd.*truncated.*HND header"):
        read_hnd(tmp_path / "t.hnd")
    (tmp_path / "t.hnd").write_bytes(data[:HEADER_SIZE + 5])
    with pytest.raises(ScanFormatError, match="t.hnd.*truncated.*lookup table"):
        read_hnd(tmp_path / "t.hnd")
    (tmp_path / "t.hnd").write_bytes(data[:-10])
    with pytest.raises(ScanFormatError, match="t.hnd.*pixel buffer is truncated"):
        read_hnd(tmp_path / "t.hnd")


# ---------------------------------------------------------------------- the scans
def _hand(*, half=False, views=180, step=2.0, start=30.0):
    nc, cc = (28, 4.6) if half else (40, 19.3)
    det = leap.Detector(num_rows=10, num_cols=nc, pixel_height=1.0, pixel_width=1.0,
                        center_row=4.7, center_col=cc)
    psi = np.radians(start + np.arange(views) * step)
    return leap.ConeBeam(detector=det, angles=psi, sod=100.0, sdd=150.0)


def _line_integrals(geometry, phantom=PHANTOM):
    org, dirs = pixel_rays(geometry)
    g = phantom.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3))
    return g.reshape(geometry.projection_shape)


def _truth(volume, phantom=PHANTOM):
    v = volume
    return phantom.voxelize(v.x_samples(), v.y_samples(), v.z_samples(), v.voxel_width,
                            v.voxel_height, oversampling=3)


def _err(rec, truth):
    return float(np.linalg.norm(rec - truth) / np.linalg.norm(truth))


def _write(tmp_path, hand, *, layout="truebeam", **kw):
    g = _line_integrals(hand)
    dose = 1000.0 * (1.0 + 0.2 * np.random.default_rng(0).random(hand.num_angles))
    counts = I0 * (dose / 1000.0)[:, None, None] * np.exp(-g)
    air = np.full(hand.projection_shape[1:], I0)
    write_scan(tmp_path, hand, counts, layout=layout, dose=dose, air=air, air_dose=1000.0,
               **kw)
    return g


@pytest.mark.parametrize("layout, compressed", [("truebeam", True), ("truebeam", False),
                                                ("obi", True)])
def test_scan_reconstructs_the_object(tmp_path, layout, compressed):
    hand = _hand()
    g = _write(tmp_path, hand, layout=layout, compressed=compressed)
    scan = open_scan(tmp_path)
    assert scan.format == "varian" and not scan.system.fbp_options.offset_scan
    geo = scan.system.geometry
    assert isinstance(geo, leap.ConeBeam) and geo.detector == hand.detector
    assert (geo.sod, geo.sdd) == (100.0, 150.0)
    np.testing.assert_allclose(np.exp(1j * geo.angles), np.exp(1j * hand.angles), atol=1e-9)
    dose = 1000.0 * (1.0 + 0.2 * np.random.default_rng(0).random(hand.num_angles))
    np.testing.assert_allclose(scan.metadata["dose"], dose)
    att = np.asarray(scan.attenuation())      # dose-normalised against the air scan
    np.testing.assert_allclose(att, g, atol=1e-3)
    system = default_system(hand)
    truth = _truth(system.volume)
    err_hand = _err(system.fbp(g.astype(np.float32)), truth)
    err = _err(scan.system.with_changes(volume=system.volume).fbp(att), truth)
    assert err <= err_hand + 1e-3 and err_hand < 0.15, (err, err_hand)
    assert "varian scan" in scan.summary() and "1 flats" in scan.summary()


def _seam(rec, volume, radius, value):
    """The ring a half-fan scan leaves where the short side of the detector ends (radius
    mm in the volume): the largest jump of the angular mean between neighbouring 1-voxel
    rings near that radius, relative to the object's value."""
    x, y = np.meshgrid(volume.x_samples(), volume.y_samples())
    idx = (np.hypot(x, y) / volume.voxel_width).astype(int).ravel()   # 1-voxel rings
    mid = rec[rec.shape[0] // 2].ravel()
    n = int(7.0 / volume.voxel_width)                                  # inside the object
    prof = np.bincount(idx, mid, minlength=n)[:n] / np.bincount(idx, minlength=n)[:n]
    jumps = np.abs(np.diff(prof))
    near = np.abs((np.arange(n - 1) + 1.0) * volume.voxel_width - radius) < 1.0
    return float(jumps[near].max() / value)


def test_half_fan_scan_reconstructs_without_the_seam(tmp_path):
    # A uniform cylinder across the axis: the doubly measured band ends at the short
    # side's radius; without the half-fan weights the reconstruction jumps there.
    cyl = Phantom([PhantomObject(kind=ELLIPSOID, centre=(0.0, 0.0, 0.0), radii=(9, 9, 40),
                                 value=0.02)])
    hand = _hand(half=True)
    g = _line_integrals(hand, cyl)
    write_scan(tmp_path, hand, I0 * np.exp(-g), air=np.full((10, 28), I0))
    scan = open_scan(tmp_path)
    assert scan.system.fbp_options.offset_scan and scan.metadata["Fan"] == "Half"
    v = scan.system.volume
    truth = _truth(v, cyl)
    att = np.asarray(scan.attenuation())
    rec = scan.system.fbp(att)
    hand_system = default_system(hand).with_changes(volume=v,
                                                    fbp_options=FBPOptions(offset_scan=True))
    err_hand = _err(hand_system.fbp(g.astype(np.float32)), truth)
    assert _err(rec, truth) <= err_hand + 1e-3 and err_hand < 0.2
    # the short side ends 4.6 pixels from the axis column: at 4.6·sod/sdd mm in the volume
    radius = 4.6 * hand.sod / hand.sdd
    unweighted = scan.system.with_changes(fbp_options=FBPOptions()).fbp(att)
    assert _seam(unweighted, v, radius, 0.02) > 0.5     # the check sees a seam ...
    assert _seam(rec, v, radius, 0.02) < 0.03           # ... and there is none
    # and the objects off the axis come out as by hand too
    hand2 = _hand(half=True, views=120, step=3.0)
    g2 = _write(tmp_path / "b", hand2)
    s2 = open_scan(tmp_path / "b")
    assert s2.system.fbp_options.offset_scan
    v2 = s2.system.volume
    t2 = _truth(v2)
    e_hand = _err(default_system(hand2).with_changes(
        volume=v2, fbp_options=FBPOptions(offset_scan=True)).fbp(g2.astype(np.float32)), t2)
    e = _err(s2.system.fbp(np.asarray(s2.attenuation())), t2)
    assert e <= e_hand + 1e-3 and e_hand < 0.2, (e, e_hand)


def test_tigre_and_rtk_readings_differ_by_a_rotation(tmp_path):
    hand = _hand(views=12, step=30.0)
    _write(tmp_path, hand)
    rtk = open_scan(tmp_path)
    tigre = open_scan(tmp_path, convention="tigre")
    np.testing.assert_allclose(pixel_positions(rtk.system.geometry),
                               pixel_positions(hand), atol=1e-9)
    # the same stored pixel (view k, XIM row j, col i) read both ways: TIGRE's leap
    # indices are [k, M-1-j, N-1-i], and its position RTK's turned by (x,y,z)->(y,x,-z)
    p_rtk = pixel_positions(rtk.system.geometry)
    p_tigre = pixel_positions(tigre.system.geometry)[:, ::-1, ::-1]
    turned = np.stack([p_rtk[..., 1], p_rtk[..., 0], -p_rtk[..., 2]], axis=-1)
    np.testing.assert_allclose(p_tigre, turned, atol=1e-9)
    np.testing.assert_array_equal(np.asarray(tigre.projections),
                                  np.asarray(rtk.projections)[:, ::-1, ::-1])
    src = rtk.metadata["KVSourceRtn"]
    np.testing.assert_allclose(np.mod(tigre.angles - src + 90.0, 360.0), 0.0, atol=1e-9)
    with pytest.raises(ValueError, match="convention must be"):
        open_scan(tmp_path, convention="astra")


def test_per_view_detector_offsets_give_a_modular_beam(tmp_path):
    hand = _hand(views=24, step=15.0)
    rng = np.random.default_rng(5)
    lat = (0.5 * 39 - 19.3) + 0.3 * rng.standard_normal(24)
    lng = (0.5 * 9 - 4.7) + 0.2 * rng.standard_normal(24)
    counts = np.full(hand.projection_shape, 1000.0)
    write_scan(tmp_path, hand, counts, detector_offsets=(lat, lng))
    scan = open_scan(tmp_path)
    geo = scan.system.geometry
    assert isinstance(geo, leap.ModularBeam)
    np.testing.assert_allclose(scan.metadata["detector_lat_mm"], lat, atol=1e-9)
    for k in (0, 7, 23):               # each view: the hand-made detector shifted
        d = hand.detector.with_changes(center_col=19.5 - lat[k], center_row=4.5 - lng[k])
        one = hand.with_changes(detector=d, angles=hand.angles[k:k + 1])
        np.testing.assert_allclose(pixel_positions(geo)[k], pixel_positions(one)[0], atol=1e-9)
    mean = open_scan(tmp_path, detector_offsets="mean").system.geometry
    assert isinstance(mean, leap.ConeBeam)
    assert mean.detector.center_col == pytest.approx(19.5 - lat.mean())


def test_obi_half_fan_reads_detector_pos_lat(tmp_path):
    hand = _hand(half=True, views=20, step=18.0)
    write_scan(tmp_path, hand, np.full(hand.projection_shape, 500.0), layout="obi")
    scan = open_scan(tmp_path / "ProjectionInfo.xml")
    assert scan.metadata["FanType"] == "HalfFan" and scan.system.fbp_options.offset_scan
    d = scan.system.geometry.detector
    assert d.center_col == pytest.approx(4.6) and d.center_row == pytest.approx(4.7)
    assert scan.flats is None
    with pytest.raises(ValueError, match="TIGRE has no HND reader"):
        open_scan(tmp_path, convention="tigre")


def test_projections_are_lazy_and_a_damaged_frame_is_named(tmp_path):
    hand = _hand(views=6, step=60.0)
    g = _write(tmp_path, hand, compressed=[True, False] * 3)        # both pixel kinds
    scan = open_scan(tmp_path, format="truebeam")
    np.testing.assert_allclose(np.asarray(scan.attenuation()), g, atol=1e-3)
    p = scan.projections
    whole = np.asarray(p)
    np.testing.assert_array_equal(p[2, 3:5, ::4], whole[2, 3:5, ::4])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(p))[[4, 1]], whole[[4, 1]])
    frame = tmp_path / "Acquisitions" / "1" / "Proj_00003.xim"
    data = frame.read_bytes()
    frame.write_bytes(data[:200])                      # damaged after opening
    np.testing.assert_array_equal(p[2], whole[2])      # other views still read
    with pytest.raises(ScanFormatError, match="Proj_00003.xim.*truncated"):
        p[3]
    with pytest.raises(ScanFormatError, match="Proj_00003.xim.*truncated"):
        open_scan(tmp_path)                            # its properties are unreadable


def test_missing_keys_and_inconsistent_files_are_refused(tmp_path):
    hand = _hand(views=4, step=90.0)
    _write(tmp_path, hand)
    xml = (tmp_path / "Scan.xml").read_text()
    (tmp_path / "Scan.xml").write_text(xml.replace("<SAD>100.0</SAD>", ""))
    with pytest.raises(ScanFormatError, match="Scan.xml: the key 'SAD' is missing"):
        open_scan(tmp_path)
    (tmp_path / "Scan.xml").write_text(xml.replace("<ImagerSizeX>40<", "<ImagerSizeX>41<"))
    with pytest.raises(ScanFormatError, match="ImagerSizeX = 41 but the XIM frames have 40"):
        open_scan(tmp_path)
    (tmp_path / "Scan.xml").write_text(xml[:50])
    with pytest.raises(ScanFormatError, match="Scan.xml: cannot be read as XML"):
        open_scan(tmp_path)
    (tmp_path / "Scan.xml").write_text(xml)
    write_xim(tmp_path / "Acquisitions" / "1" / "Proj_00001.xim", np.zeros((10, 40), int),
              {"GantryRtn": 0.0})
    with pytest.raises(ScanFormatError, match="Proj_00001.xim: the key 'KVSourceRtn'"):
        open_scan(tmp_path)
    assert open_scan(tmp_path, convention="tigre", dose_normalise=False,
                     min_angle_step=0.0).projections.shape == (4, 10, 40)
    write_xim(tmp_path / "Acquisitions" / "1" / "Proj_00001.xim", np.zeros((10, 40), int),
              {"KVSourceRtn": 60.0})
    with pytest.raises(ScanFormatError, match="Proj_00001.xim: the property 'KVNormChamber'"):
        open_scan(tmp_path)
    assert open_scan(tmp_path, dose_normalise=False).projections.shape == (4, 10, 40)
    write_xim(tmp_path / "Acquisitions" / "1" / "Proj_00001.xim", np.zeros((10, 40), int),
              {"KVSourceRtn": 200.0, "KVNormChamber": 1.0})
    for step in (None, False):         # a frame far off is refused, not dropped
        with pytest.raises(ScanFormatError, match="angles .* are not monotonic"):
            open_scan(tmp_path, min_angle_step=step)
    write_xim(tmp_path / "Acquisitions" / "1" / "Proj_00001.xim", np.zeros((9, 40), int),
              {"KVSourceRtn": 10.0})
    with pytest.raises(ScanFormatError, match="Proj_00001.xim: the image is 40 x 9"):
        open_scan(tmp_path)


def test_detect_and_format_names(tmp_path):
    assert "varian" in READERS and FORMATS["truebeam"] == FORMATS["obi"] == "varian"
    hand = _hand(views=4, step=90.0)
    counts = np.full(hand.projection_shape, 100.0)
    write_scan(tmp_path / "tb", hand, counts)
    write_scan(tmp_path / "obi", hand, counts, layout="obi")
    assert varian.detect(tmp_path / "tb") and varian.detect(tmp_path / "tb" / "Scan.xml")
    assert varian.detect(tmp_path / "obi")
    assert not varian.detect(tmp_path) and not varian.detect(tmp_path / "tb" / "Acquisitions")
    assert open_scan(tmp_path / "obi").format == "varian"
    # no air scans: the attenuation would be -log(counts), so opening says so
    for layout in ("tb", "obi"):
        with pytest.warns(leap.io.scanners.MissingWhiteLevelWarning, match="air="):
            scan = open_scan(tmp_path / layout)
        assert scan.flats is None
    os.remove(tmp_path / "tb" / "Acquisitions" / "1" / "Proj_00000.xim")
    assert open_scan(tmp_path / "tb").projections.shape[0] == 3
    with pytest.raises(ValueError, match="write_scan writes circular"):
        write_scan(tmp_path / "x", hand.with_changes(tau=1.0), counts)
    with pytest.raises(ValueError, match="counts must be"):
        write_scan(tmp_path / "x", hand, counts[:, :, 1:])


@pytest.mark.parametrize("layout", ["truebeam", "obi"])
def test_frames_of_acceleration_and_deceleration_are_dropped(tmp_path, layout):
    # the gantry starting and stopping: frames repeating an angle, or barely moving
    hand = _hand(views=10, step=36.0)
    write_scan(tmp_path, hand, np.full(hand.projection_shape, 100.0), layout=layout)
    ext = "xim" if layout == "truebeam" else "hnd"
    where = tmp_path / "Acquisitions" / "1" if layout == "truebeam" else tmp_path
    files = sorted(where.glob(f"Proj_*.{ext}"))
    for k, f in enumerate(reversed(files)):               # room for two frames at the start
        f.rename(where / f"Proj_{len(files) + 1 - k:05d}.{ext}")
    first = where / f"Proj_00002.{ext}"
    for name in ("Proj_00000", "Proj_00001"):
        (where / f"{name}.{ext}").write_bytes(first.read_bytes())
    scan = open_scan(tmp_path)
    assert scan.projections.shape[0] == 10
    assert [os.path.basename(f) for f in scan.metadata["dropped_frames"]] == \
        [f"Proj_00001.{ext}", f"Proj_00002.{ext}"]
    np.testing.assert_allclose(np.exp(1j * scan.system.geometry.angles),
                               np.exp(1j * hand.angles), atol=1e-9)
    with pytest.raises(ScanFormatError, match="not monotonic"):
        open_scan(tmp_path, min_angle_step=False)
    if layout == "truebeam":          # TIGRE's threshold 0.9·Velocity/FrameRate = 32.4°
        assert scan.metadata["min_angle_step"] == pytest.approx(32.4)
        assert open_scan(tmp_path, min_angle_step=40.0).projections.shape[0] == 5


def test_half_fan_scan_with_per_view_offsets_reconstructs(tmp_path):
    # Detector offsets jittering from frame to frame (a ModularBeam), simulated view by
    # view with the hand-made detector shifted; more than a full turn (see the report:
    # leap's full-scan test has no tolerance for the modular view angles' rounding).
    hand = _hand(half=True, views=125, step=3.0)
    rng = np.random.default_rng(7)
    lat = (0.5 * 27 - 4.6) + 0.05 * rng.standard_normal(125)
    lng = (0.5 * 9 - 4.7) + 0.05 * rng.standard_normal(125)
    views = [hand.with_changes(angles=hand.angles[k:k + 1], detector=hand.detector.with_changes(
        center_col=13.5 - lat[k], center_row=4.5 - lng[k])) for k in range(125)]
    g = np.concatenate([_line_integrals(v) for v in views])
    write_scan(tmp_path, hand, I0 * np.exp(-g), air=np.full((10, 28), I0),
               detector_offsets=(lat, lng))
    scan = open_scan(tmp_path)
    assert isinstance(scan.system.geometry, leap.ModularBeam)
    assert scan.system.fbp_options.offset_scan
    v = scan.system.volume
    assert (v.num_x, v.num_y) == (46, 46)     # the farther side's radius, as a ConeBeam's
    truth = _truth(v)
    err = _err(scan.system.fbp(np.asarray(scan.attenuation())), truth)
    # by hand: the views' own modular descriptions (ConeBeam.to_modular) stacked
    mods = [w.to_modular() for w in views]
    by_hand = leap.ModularBeam(detector=mods[0].detector, **{
        name: np.concatenate([getattr(m, name) for m in mods]) for name in
        ("source_positions", "module_centers", "row_vectors", "col_vectors")})
    np.testing.assert_allclose(pixel_positions(scan.system.geometry), pixel_positions(by_hand),
                               atol=1e-6)
    err_hand = _err(scan.system.with_changes(geometry=by_hand).fbp(g.astype(np.float32)), truth)
    assert err <= err_hand + 1e-3 and err_hand < 0.2, (err, err_hand)


def test_a_half_fan_scan_short_of_a_turn_warns(tmp_path):
    hand = _hand(half=True, views=100, step=3.0)                 # 300°
    write_scan(tmp_path, hand, np.full(hand.projection_shape, 100.0))
    with pytest.warns(UserWarning, match="half-fan .* covering 300.0°.* not applied"):
        scan = open_scan(tmp_path)
    assert scan.system.fbp_options.offset_scan
