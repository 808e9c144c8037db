"""Elekta XVI reader and writer (leap.io.scanners.elekta).

Projections of an analytic object are simulated in RTK's frame (IEC 61217: source and
panel of each frame placed by RTK's geometry document from the ``_Frames.xml`` values,
independently of the reader), written as ``_Frames.xml`` + HIS files and read back: the
reader's geometry must put every HIS pixel where RTK puts it (in leap's frame
``(x, −z, y)``) and reconstruct the object as well as a geometry set up by hand.
"""
from __future__ import annotations

import os
import pickle
import struct
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import leap
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.io import open_scan
from leap.io.scanners import FORMATS, READERS, elekta
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from scan_checks import fbp_error  # noqa: E402

# Two ellipsoids off the axis and off the mid-plane (mm; XVI's scale): a mirrored axis,
# a wrong angle direction or a wrong panel offset sign moves them.
PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(30.0, -20.0, 15.0),
                                 radii=(60, 40, 50), value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-40.0, 50.0, -20.0),
                                 radii=(25, 30, 20), value=0.04)])
ROWS, COLS, SID, SDD = 32, 64, 1000.0, 1536.0
PW, PH = 409.6 / COLS, 409.6 / ROWS


def _ry(deg):
    """(n, 3, 3) rotations by ``deg`` about y, as RTK's Ry(g) (z towards x)."""
    t = np.radians(np.atleast_1d(deg))
    r = np.zeros((t.size, 3, 3))
    r[:, 0, 0], r[:, 0, 2], r[:, 1, 1], r[:, 2, 0], r[:, 2, 2] = (np.cos(t), np.sin(t), 1,
                                                                 -np.sin(t), np.cos(t))
    return r


def _rtk_frame(gantry, ucentre, vcentre, rows=ROWS, cols=COLS):
    """Sources (views, 3) and HIS pixel centres (views, rows, cols, 3) in leap's frame,
    placed as RTK's geometry document places them: rotated frame source (0, 0, SID),
    pixel (u − UCentre, v − VCentre, SID − SDD), u and v from the image centre along the
    stored columns and rows; fixed = Ry(g)·rotated; leap = (x, −z, y)."""
    u = (np.arange(cols) - 0.5 * (cols - 1)) * (409.6 / cols)
    v = (np.arange(rows) - 0.5 * (rows - 1)) * (409.6 / rows)
    rot = _ry(gantry)
    n = rot.shape[0]
    p = np.zeros((n, rows, cols, 3))
    p[..., 0] = u[None, None, :] - np.asarray(ucentre, float).reshape(-1, 1, 1)
    p[..., 1] = v[None, :, None] - np.asarray(vcentre, float).reshape(-1, 1, 1)
    p[..., 2] = SID - SDD
    fixed = np.einsum("vij,vrcj->vrci", rot, p)
    src = np.einsum("vij,j->vi", rot, np.array([0.0, 0.0, SID]))
    to_leap = np.array([[1.0, 0, 0], [0, 0, -1.0], [0, 1.0, 0]])
    return src @ to_leap.T, fixed @ to_leap.T


def _simulate(gantry, ucentre, vcentre):
    src, pix = _rtk_frame(gantry, ucentre, vcentre)
    d = pix - src[:, None, None, :]
    org = np.broadcast_to(src[:, None, None, :], d.shape)
    g = PHANTOM.line_integrals(org.reshape(-1, 3), d.reshape(-1, 3))
    return g.reshape(d.shape[:3])


def _hand(gantry, ucentre, vcentre):
    """The scan by hand: a ConeBeam at the mean panel position."""
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PH, pixel_width=PW,
                        center_row=0.5 * (ROWS - 1) + float(np.mean(vcentre)) / PH,
                        center_col=0.5 * (COLS - 1) + float(np.mean(ucentre)) / PW)
    psi = np.radians(np.degrees(np.unwrap(np.radians(gantry))))
    return leap.ConeBeam(detector=det, angles=psi, sod=SID, sdd=SDD)


def _err(system, g):
    return fbp_error(system, g, PHANTOM)


def _write(folder, gantry, ucentre, vcentre):
    """The simulated scan written with elekta.write_scan (angles and offsets as given)."""
    g = _simulate(gantry, ucentre, vcentre)
    hand = _hand(gantry, ucentre, vcentre)
    elekta.write_scan(folder, hand, 65536.0 * np.exp(-g), u_centre=ucentre, v_centre=vcentre)
    return hand, g


def _read_files(folder):
    """The written files read without the reader: (gantry, UCentre, VCentre, images
    (views, rows, cols) uint16 as stored)."""
    root = ET.parse(os.path.join(folder, "_Frames.xml")).getroot()
    frames = root.find("Frames").findall("Frame")
    vals = np.array([[float(f.find(k).text) for k in ("GantryAngle", "UCentre", "VCentre")]
                     for f in frames])
    images = []
    for f in sorted(p for p in os.listdir(folder) if p.endswith(".his")):
        b = open(os.path.join(folder, f), "rb").read()
        extra = struct.unpack_from("<H", b, 10)[0]
        images.append(np.frombuffer(b[68 + extra:], "<u2").reshape(ROWS, COLS))
    return vals[:, 0], vals[:, 1], vals[:, 2], np.array(images)


def _check_rtk_frame(scan, folder):
    gantry, uc, vc, images = _read_files(folder)
    src, pix = _rtk_frame(gantry, uc, vc)
    geo = scan.system.geometry
    np.testing.assert_allclose(pixel_positions(geo), pix, atol=1e-6)
    org, _ = pixel_rays(geo)
    np.testing.assert_allclose(org[:, 0, 0, 0], src, atol=1e-6)
    # the pixel values: counts 65536 - v, images as stored (no flips)
    np.testing.assert_array_equal(np.asarray(scan.projections[[0, 5]]),
                                  65536.0 - images[[0, 5]].astype(np.float32))


# --------------------------------------------------------------- reconstruction
@pytest.mark.parametrize("start, step, ucentre", [
    (150.0, 4.0, 0.0),        # S field of view, counter-clockwise, through 180 (wraps)
    (-178.0, -4.0, 0.0),      # clockwise
    (-180.0, 4.0, 115.0),     # M field of view: half fan
])
def test_xvi_scan_reconstructs_the_object(tmp_path, start, step, ucentre):
    views = int(round(360 / abs(step)))
    gantry = start + step * np.arange(views)
    gantry = -((-gantry + 180.0) % 360.0 - 180.0)
    uc, vc = np.full(views, ucentre), np.full(views, 3.1)
    hand, g = _write(tmp_path, gantry, uc, vc)
    scan = open_scan(tmp_path)
    assert scan.format == "elekta" and isinstance(scan.system.geometry, leap.ConeBeam)
    assert scan.system.fbp_options.offset_scan == (ucentre != 0.0)
    _check_rtk_frame(scan, tmp_path)
    system = scan.system if ucentre else default_system(hand)
    hand_system = system.with_changes(geometry=hand)
    err_hand = _err(hand_system, g)
    att = np.asarray(scan.attenuation())
    err_reader = _err(scan.system.with_changes(volume=system.volume), att)
    assert err_hand < 0.3
    assert err_reader <= err_hand + 1e-3, (err_reader, err_hand)
    # uint16 quantisation of the counts: 0.5 count at the darkest pixel
    np.testing.assert_allclose(att, g, atol=0.6 / (65536.0 * np.exp(-g.max())))


@pytest.mark.parametrize("ucentre, gain", [(1.5, 0.01), (115.0, 0.003)])
def test_flexmap_gives_a_modular_beam_that_reconstructs(tmp_path, ucentre, gain):
    views = 90
    gantry = -180.0 + 4.0 * np.arange(views)
    uc = ucentre + 2.0 * np.sin(np.radians(gantry))    # the panel sags with the gantry
    vc = -2.0 + 1.5 * np.cos(np.radians(gantry))
    hand, g = _write(tmp_path, gantry, uc, vc)
    scan = open_scan(tmp_path)
    assert isinstance(scan.system.geometry, leap.ModularBeam)
    _check_rtk_frame(scan, tmp_path)
    # the data reconstructed ignoring the flexmap (the panel at its mean position)
    system = open_scan(tmp_path, per_view_offsets=False).system
    assert system.fbp_options.offset_scan == (ucentre > 100)
    if ucentre > 100:                                  # half fan: widened for both
        assert scan.system.volume == system.volume
    err_mean = _err(system, g)
    err_reader = _err(scan.system.with_changes(volume=system.volume),
                      np.asarray(scan.attenuation()))
    assert err_reader < err_mean - gain, (err_reader, err_mean)
    assert isinstance(system.geometry, leap.ConeBeam)
    assert system.geometry.detector.center_col == pytest.approx(hand.detector.center_col)


# ----------------------------------------------------------------------- options
def test_options_distances_pixels_white_level_offset_scan(tmp_path):
    gantry = np.linspace(-180, 176, 90)
    _write(tmp_path, gantry, np.full(90, 115.0), np.zeros(90))
    scan = open_scan(tmp_path / "_Frames.xml", sod=900.0, sdd=1400.0, pixel_size=(12.0, 6.0),
                     white_level=60000.0, offset_scan=False)
    g = scan.system.geometry
    assert (g.sod, g.sdd) == (900.0, 1400.0)
    assert (g.detector.pixel_height, g.detector.pixel_width) == (12.0, 6.0)
    assert g.detector.center_col == pytest.approx(31.5 + 115.0 / 6.0)
    assert not scan.system.fbp_options.offset_scan
    # angles unwrapped, as written in the metadata
    np.testing.assert_allclose(np.diff(scan.angles), np.diff(gantry), atol=1e-9)
    assert (scan.angles[0] - gantry[0]) % 360.0 == pytest.approx(0.0)
    np.testing.assert_allclose(scan.metadata["GantryAngle"], -((-gantry + 180) % 360 - 180))
    assert float(np.asarray(scan.flats).max()) == 60000.0
    summary = scan.summary()
    assert "elekta" in summary and "source to axis 900 mm" in summary
    with pytest.raises(ValueError, match="sdd .* must exceed sod"):
        open_scan(tmp_path, sod=1600.0)
    with pytest.raises(ValueError, match="pixel_size must be positive"):
        open_scan(tmp_path, pixel_size=0.0)
    with pytest.raises(ValueError, match="sod must be a positive number"):
        open_scan(tmp_path, sod="far")
    # lazy and picklable
    p = pickle.loads(pickle.dumps(scan.projections))
    np.testing.assert_array_equal(p[3, 4:6], np.asarray(scan.projections)[3, 4:6])


def test_detect_and_format_names(tmp_path):
    gantry = np.linspace(0, 356, 90)
    _write(tmp_path, gantry, np.zeros(90), np.zeros(90))
    assert elekta.detect(tmp_path) and elekta.detect(tmp_path / "_Frames.xml")
    assert not elekta.detect(tmp_path / "00001.1.3.46.423632.0.his")
    assert "elekta" in READERS and FORMATS["xvi"] == "elekta"
    assert open_scan(tmp_path, format="xvi").format == "elekta"


# ------------------------------------------------------------------------ errors
def _small(tmp_path):
    gantry = np.linspace(0, 356, 90)
    _write(tmp_path, gantry, np.zeros(90), np.zeros(90))
    return sorted(p for p in tmp_path.iterdir() if p.suffix == ".his")


def test_damaged_files_are_named(tmp_path):
    his = _small(tmp_path)
    xml = tmp_path / "_Frames.xml"
    text = xml.read_text()
    # a truncated image: refused when opened, naming the file
    data = his[7].read_bytes()
    his[7].write_bytes(data[:-10])
    with pytest.raises(ScanFormatError, match=f"{his[7].name}.*truncated"):
        open_scan(tmp_path)
    his[7].write_bytes(data)
    # a file truncated after opening: refused when read
    scan = open_scan(tmp_path)
    his[7].write_bytes(data[:200])
    with pytest.raises(ScanFormatError, match=his[7].name):
        np.asarray(scan.projections[7])
    his[7].write_bytes(data)
    # not a HIS file
    bad = bytearray(his[0].read_bytes())
    bad[1] = 0x71
    his[0].write_bytes(bytes(bad))
    with pytest.raises(ScanFormatError, match="not a Heimann HIS file"):
        open_scan(tmp_path)
    bad[1] = 0x70
    bad[32] = 8
    his[0].write_bytes(bytes(bad))
    with pytest.raises(ScanFormatError, match="pixel type 8"):
        open_scan(tmp_path)
    bad[32] = 4
    his[0].write_bytes(bytes(bad))
    # a missing image
    os.rename(his[3], tmp_path / "moved.bin")
    with pytest.raises(ScanFormatError, match="90 Frame elements but .* 89 .his files"):
        open_scan(tmp_path)
    os.rename(tmp_path / "moved.bin", his[3])
    # the XML
    xml.write_text(text.replace("<GantryAngle>", "<Gantry>", 1).replace("</GantryAngle>",
                                                                        "</Gantry>", 1))
    with pytest.raises(ScanFormatError, match="Frame 1 has no GantryAngle"):
        open_scan(tmp_path)
    xml.write_text(text.replace("<UCentre>0.0</UCentre>", "<UCentre>abc</UCentre>", 1))
    with pytest.raises(ScanFormatError, match="Frame 1: UCentre = 'abc' is not a number"):
        open_scan(tmp_path)
    xml.write_text(text.replace("<VCentre>0.0</VCentre>", "", 1))
    with pytest.raises(ScanFormatError, match="Frame 1 has no VCentre"):
        open_scan(tmp_path)
    xml.write_text(text[: len(text) // 2])
    with pytest.raises(ScanFormatError, match="not well-formed XML"):
        open_scan(tmp_path)
    xml.write_text(text.replace("<GantryAngle>20.0</GantryAngle>",
                                "<GantryAngle>10.0</GantryAngle>"))
    with pytest.raises(ScanFormatError, match="not monotonic"):
        open_scan(tmp_path)
    # anonymised tag names (as RTK accepts them)
    xml.write_text(text.replace("GantryAngle>", "Gantryngle>").replace("UCentre>", "Uentre>"))
    assert open_scan(tmp_path).system.geometry.num_angles == 90


def test_writer_refuses_what_xvi_cannot_hold(tmp_path):
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PH, pixel_width=PW)
    geo = leap.ConeBeam(detector=det, angles=np.zeros(3) + [0, 1, 2], sod=SID, sdd=SDD)
    with pytest.raises(ValueError, match="holds no distances"):
        elekta.write_scan(tmp_path, geo.with_changes(sod=900.0), np.ones((3, ROWS, COLS)))
    with pytest.raises(ValueError, match="tilt, tau"):
        elekta.write_scan(tmp_path, geo.with_changes(tau=1.0), np.ones((3, ROWS, COLS)))
    with pytest.raises(ValueError, match="counts must be"):
        elekta.write_scan(tmp_path, geo, np.ones((3, ROWS, COLS + 1)))
