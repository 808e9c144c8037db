"""YXLON reader and writer (leap.io.scanners.yxlon).

A scan set up by hand is simulated (exact line integrals), written in YXLON's layout
(``ScanParameter.xml`` or ``.txt``, uint16 ``.raw`` projections) and read back: the reader
must reconstruct the object as well as the hand-made geometry does, and, independently of
the reader's code, the parameter file's keys read by the test and placed in TIGRE's
frame (TIGRE's projector: source ``Rz(α)(DSO, 0, 0)``, pixel (v, u) from the top-left,
``COR`` along ``Rz(α)ŷ``; a raw image turned upside down as TIGRE's loaders do) put every
stored pixel where the reader's geometry puts it.
"""
from __future__ import annotations

import os
import pickle
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import leap
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.io import open_scan
from leap.io.scanners import FORMATS, READERS, yxlon
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from scan_checks import fbp_error, line_integrals  # noqa: E402

PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.5), radii=(6, 4, 5),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-4.0, 5.0, -2.0), radii=(2.5, 3, 2),
                                 value=0.04)])
ROWS, COLS, PIXEL, SOD, SDD = 40, 48, 0.8, 150.0, 300.0


def _hand(*, views=72, start=0.3, step=-5.0, tau=0.6, cc=None, cr=None, rows=ROWS,
          cols=COLS, ph=PIXEL, pw=PIXEL):
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=ph, pixel_width=pw,
                        center_row=cr, center_col=cc)
    psi = np.radians(start + step * np.arange(views))
    return leap.ConeBeam(detector=det, angles=psi, sod=SOD, sdd=SDD, tau=tau)


def _line_integrals(geometry):
    return line_integrals(geometry, PHANTOM)


def _err(system, g):
    return fbp_error(system, g, PHANTOM)


def _tigre_pixels(alpha, dso, dsd, cor, nu, nv, du, dv, off_u, off_v):
    """TIGRE's sources (views, 3) and pixels (views, nV, nU, 3), row v from the top."""
    c, s = np.cos(alpha), np.sin(alpha)
    rz = np.zeros((alpha.size, 3, 3))
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c, -s, s, c, 1
    v, u = np.meshgrid(np.arange(nv), np.arange(nu), indexing="ij")
    local = np.stack([np.full(u.shape, -(dsd - dso)), (u - 0.5 * (nu - 1)) * du + off_u,
                      (0.5 * (nv - 1) - v) * dv + off_v], axis=-1)
    shift = cor * np.stack([-s, c, np.zeros_like(c)], axis=1)
    pix = np.einsum("aij,vuj->avui", rz, local) + shift[:, None, None, :]
    src = np.einsum("aij,j->ai", rz, np.array([dso, 0.0, 0.0])) + shift
    return src, pix


def _vendor_frame(param):
    """Sources and TIGRE's pixels read from a written parameter file by the test."""
    if param.endswith(".xml"):
        root = ET.parse(param).getroot()
        p = root.find("ConeBeamScanParameter")
        t = p.find("ScanTrajectory")
        dj = p.find("DejustmentParameter")

        def f(el, k):
            return float(el.find(k).text)
        pitch, n = f(t, "PixelPitch"), int(f(t, "NumberOfProjections"))
        alpha = np.radians(f(t, "StartAngle") - np.arange(n) * f(t, "Rotation") / n)
        return _tigre_pixels(alpha, pitch * f(t, "Fod"), pitch * f(t, "Fdd"),
                             -pitch * f(t, "YoCenter"), int(f(p, "ProjectionSize/Width")),
                             int(f(p, "ProjectionSize/Height")), f(p, "PixelSize/Width"),
                             f(p, "PixelSize/Height"),
                             -pitch * f(dj, "HorizontalDetectorOffset"),
                             -pitch * f(dj, "VerticalDetectorOffset"))
    lines = dict(reversed(ln.split("\t")) for ln in open(param).read().splitlines())
    n = int(lines["CT: Number of Projections"])
    ne = int(lines["Number of Detector Elements "])
    px = float(lines["2D-Pixel Size [mm]"]) * float(lines["Pixelbinning"])
    alpha = -np.arange(n) * 2 * np.pi / n
    return _tigre_pixels(alpha, float(lines["FOD [mm]"]), float(lines["FDD [mm]"]),
                         float(lines["Center Offset [mm]"]), ne, ne, px, px, 0.0, 0.0)


def _check_vendor_frame(scan, param):
    src, pix = _vendor_frame(param)
    geo = scan.system.geometry
    # TIGRE's row v is the stored row nV - 1 - v (flipud); leap keeps stored rows
    np.testing.assert_allclose(pixel_positions(geo), pix[:, ::-1], atol=1e-6)
    org, _ = pixel_rays(geo)
    np.testing.assert_allclose(org[:, 0, 0, 0], src, atol=1e-6)
    folder = os.path.join(os.path.dirname(param), "Projections")
    first = sorted(os.listdir(folder))[0]
    stored = np.fromfile(os.path.join(folder, first), "<u2").reshape(geo.projection_shape[1:])
    np.testing.assert_array_equal(np.asarray(scan.projections[0]), stored)


# --------------------------------------------------------------- reconstruction
@pytest.mark.parametrize("variant", ["xml", "txt"])
def test_yxlon_scan_reconstructs_the_object(tmp_path, variant):
    if variant == "xml":     # detector offsets, axis offset, a start angle, clockwise
        hand = _hand(start=97.0, step=-5.0, tau=0.6, cc=0.5 * (COLS - 1) + 2.3,
                     cr=0.5 * (ROWS - 1) - 1.7, ph=0.9)
    else:                    # what the .txt holds: square, centred, TIGRE's angles
        hand = _hand(start=90.0, step=-5.0, tau=-0.4, rows=COLS)
    g = _line_integrals(hand)
    param = yxlon.write_scan(tmp_path, hand, 65535.0 * np.exp(-g), variant=variant)
    scan = open_scan(tmp_path)
    assert scan.format == "yxlon" and scan.metadata["parameter_file"] == variant
    _check_vendor_frame(scan, param)
    system = default_system(hand)
    err_hand = _err(system, g)
    att = np.asarray(scan.attenuation())
    err_reader = _err(scan.system.with_changes(volume=system.volume), att)
    print(f"yxlon {variant}: error by hand {err_hand:.4f}, reader {err_reader:.4f}")
    assert err_hand < 0.35
    assert err_reader <= err_hand + 1e-3, (err_reader, err_hand)
    np.testing.assert_allclose(att, g, atol=0.6 / (65535.0 * np.exp(-g.max())))


# ----------------------------------------------------------------------- options
def test_endpoint_binning_pixel_size_white_level_and_tiffs(tmp_path):
    tifffile = pytest.importorskip("tifffile")
    hand = _hand(views=36, start=90.0, step=-360.0 / 35, tau=0.0, rows=COLS)
    counts = 60000.0 * np.exp(-_line_integrals(hand))
    param = yxlon.write_scan(tmp_path, hand, counts, variant="txt", endpoint=True)
    # TIGRE's Python reading: the last view at the full turn
    scan = open_scan(param, endpoint=True)
    np.testing.assert_allclose(scan.system.geometry.angles, hand.angles, atol=1e-12)
    assert scan.angles[-1] == pytest.approx(-360.0)
    # TIGRE's MATLAB reading (the default): a step of 360/N
    assert open_scan(tmp_path).angles[1] == pytest.approx(-10.0)
    s2 = open_scan(tmp_path, binning=2, pixel_size=0.5, white_level=50000.0)
    d = s2.system.geometry.detector
    assert (d.num_rows, d.num_cols, d.pixel_width) == (COLS // 2, COLS // 2, 1.0)
    assert d.center_col == pytest.approx((0.5 * (COLS - 1) - 0.5) / 2)
    assert float(np.asarray(s2.flats).max()) == 50000.0
    np.testing.assert_allclose(np.asarray(s2.projections[2]),
                               np.asarray(scan.projections[2], np.float64)
                               .reshape(COLS // 2, 2, COLS // 2, 2).mean(axis=(1, 3)),
                               rtol=1e-6)
    assert "yxlon scan" in scan.summary() and "source to axis 150 mm" in scan.summary()
    p = pickle.loads(pickle.dumps(scan.projections))
    np.testing.assert_array_equal(p[5], np.asarray(scan.projections[5]))
    # TIFF projections (as TIGRE's Python loader reads them: row 0 at the top)
    raw = np.asarray(scan.projections)
    folder = tmp_path / "Projections"
    for f in sorted(folder.iterdir()):
        f.unlink()
    for i in range(raw.shape[0]):
        tifffile.imwrite(folder / f"scan_{i:04d}.tif", raw[i][::-1])
    tif = open_scan(tmp_path)
    assert tif.metadata["projection_files"] == "tif"
    np.testing.assert_array_equal(np.asarray(tif.projections), raw)


def test_detect_and_format_names(tmp_path):
    hand = _hand(views=8)
    yxlon.write_scan(tmp_path, hand, np.full(hand.projection_shape, 1000.0))
    assert yxlon.detect(tmp_path) and yxlon.detect(tmp_path / "ScanParameter.xml")
    assert not yxlon.detect(tmp_path / "Projections")
    assert "yxlon" in READERS and FORMATS["yxlon"] == "yxlon"
    assert open_scan(tmp_path, format="yxlon").format == "yxlon"


# ------------------------------------------------------------------------ errors
def test_damaged_files_are_named(tmp_path):
    hand = _hand(views=8)
    param = yxlon.write_scan(tmp_path, hand, np.full(hand.projection_shape, 1000.0))
    text = open(param).read()
    raw = sorted((tmp_path / "Projections").iterdir())
    data = raw[3].read_bytes()
    raw[3].write_bytes(data[:-2])
    with pytest.raises(ScanFormatError, match=f"{raw[3].name}.*truncated"):
        open_scan(tmp_path)
    raw[3].write_bytes(data)
    scan = open_scan(tmp_path)
    raw[3].write_bytes(data[:100])
    with pytest.raises(ScanFormatError, match=raw[3].name):
        np.asarray(scan.projections[3])
    raw[3].unlink()
    with pytest.raises(ScanFormatError, match="give 8 projections but .* holds 7 raw"):
        open_scan(tmp_path)
    raw[3].write_bytes(data)

    def bad(old, new, message):
        with open(param, "w") as fh:
            fh.write(text.replace(old, new))
        with pytest.raises(ScanFormatError, match=message):
            open_scan(tmp_path)
    bad("Fod>", "Fodd>", "the key Fod is missing")
    bad("<Fdd>", "<Fdd>-", "Fdd = '-.*' must be a finite positive number")
    bad("<NumberOfProjections>8", "<NumberOfProjections>8.5", "whole number")
    bad("<DetectorTiltB>0", "<DetectorTiltB>0.2", "DetectorTiltB is not 0")
    bad(">Original<", ">Rotated90<", "DetectorOrientation = 'Rotated90'")
    bad('"CircleTrajectory"', '"HelixTrajectory"', "only CircleTrajectory")
    bad("</ScanParameter>", "", "not well-formed XML")
    bad("ProjectionSize>", "ProjSize>", "the key ProjectionSize/Height is missing")
    with open(param, "w") as fh:
        fh.write(text)
    os.rename(tmp_path / "Projections", tmp_path / "Other")
    with pytest.raises(FileNotFoundError, match="no projection folder"):
        open_scan(tmp_path)


def test_txt_errors_and_writer_refusals(tmp_path):
    hand = _hand(views=8, start=90.0, step=-45.0, tau=0.0, rows=COLS)
    param = yxlon.write_scan(tmp_path, hand, np.full(hand.projection_shape, 1000.0),
                             variant="txt")
    text = open(param).read()
    with open(param, "w") as fh:
        fh.write(text.replace("\tFDD [mm]", "\tFDD"))
    with pytest.raises(ScanFormatError, match="'FDD \\[mm\\]' is missing"):
        open_scan(tmp_path)
    with open(param, "w") as fh:
        fh.write(text.replace("150.0\tFOD", "abc\tFOD"))
    with pytest.raises(ScanFormatError, match="FOD \\[mm\\] = 'abc' is not a number"):
        open_scan(tmp_path)
    with pytest.raises(ValueError, match="write variant='xml'"):
        yxlon.write_scan(tmp_path / "b", _hand(views=8), np.ones(_hand(views=8)
                                                                 .projection_shape),
                         variant="txt")
    uneven = hand.with_changes(angles=np.radians([0, 1, 3, 4, 5, 6, 7, 8.0]))
    with pytest.raises(ValueError, match="not equally spaced"):
        yxlon.write_scan(tmp_path / "c", uneven, np.ones(hand.projection_shape))
