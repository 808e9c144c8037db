"""diondo reader and writer (leap.io.scanners.diondo).

A scan set up by hand is simulated (exact line integrals), written in diondo's layout
(XML + ``Projection/_<height>_<i>.raw``) as each of TIGRE's loaders reads it and read
back with that loader's conventions: the reader must reconstruct the object as well as
the hand-made geometry does, and, independently of the reader's code, the XML's keys
read by the test and placed in TIGRE's frame (as the loader reads them) put every stored
pixel where the reader's geometry puts it. The options that switch one disagreement at a
time change what they say and nothing else.
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
from leap.io.scanners import FORMATS, READERS, diondo
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from scan_checks import fbp_error, line_integrals  # noqa: E402

PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.5), radii=(6, 4, 5),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-4.0, 5.0, -2.0), radii=(2.5, 3, 2),
                                 value=0.04)])
ROWS, COLS, PH, PW, SOD, SDD = 40, 48, 0.9, 0.8, 150.0, 300.0


def _hand(views=72, per_turn=72, tau=0.6):
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PH, pixel_width=PW)
    psi = np.pi / 2 - np.radians(np.arange(views) * 360.0 / per_turn)
    return leap.ConeBeam(detector=det, angles=psi, sod=SOD, sdd=SDD, tau=tau)


def _line_integrals(geometry):
    return line_integrals(geometry, PHANTOM)


def _err(system, g):
    return fbp_error(system, g, PHANTOM)


def _tigre(xml, loader):
    """TIGRE's sources and pixels (row v from the top) from the XML as ``loader`` reads
    it (the Python loader: step 360/N, COR = -offset mm; MATLAB: 360/(N - 1) over files
    1..N-1, COR = -offset * pixel)."""
    r = ET.parse(xml).getroot()

    def f(path):
        return float(r.find(path).text)
    n, nu, nv = int(f("Recon/ProjectionCount")), int(f("Recon/ProjectionDimX")), \
        int(f("Recon/ProjectionDimY"))
    du, dv = f("Recon/ProjectionPixelSizeX"), f("Recon/ProjectionPixelSizeY")
    if loader == "python":
        alpha = -np.arange(n) * 2 * np.pi / n
        cor = -f("Recon/ProjectionCenterOffsetX")
    else:
        alpha = -np.linspace(0, 2 * np.pi, n)[:-1]
        cor = -f("Recon/ProjectionCenterOffsetX") * du
    dso, dsd = f("Geometrie/SourceObjectDist"), f("Geometrie/SourceDetectorDist")
    c, s = np.cos(alpha), np.sin(alpha)
    rz = np.zeros((alpha.size, 3, 3))
    rz[:, 0, 0], rz[:, 0, 1], rz[:, 1, 0], rz[:, 1, 1], rz[:, 2, 2] = c, -s, s, c, 1
    v, u = np.meshgrid(np.arange(nv), np.arange(nu), indexing="ij")
    local = np.stack([np.full(u.shape, -(dsd - dso)), (u - 0.5 * (nu - 1)) * du,
                      (0.5 * (nv - 1) - v) * dv], axis=-1)
    shift = cor * np.stack([-s, c, np.zeros_like(c)], axis=1)
    pix = np.einsum("aij,vuj->avui", rz, local) + shift[:, None, None, :]
    src = np.einsum("aij,j->ai", rz, np.array([dso, 0.0, 0.0])) + shift
    return src, pix


def _check_vendor_frame(scan, xml, loader):
    src, pix = _tigre(xml, loader)
    geo = scan.system.geometry
    # the loader's projection row v is, in leap, row nV - 1 - v
    np.testing.assert_allclose(pixel_positions(geo), pix[:, ::-1], atol=1e-6)
    org, _ = pixel_rays(geo)
    np.testing.assert_allclose(org[:, 0, 0, 0], src, atol=1e-6)
    folder = os.path.join(os.path.dirname(xml), "Projection")
    first = sorted(os.listdir(folder))[0 if loader == "python" else 1]
    stored = np.fromfile(os.path.join(folder, first), "<u2").reshape(ROWS, COLS)
    # Python: TIGRE's projection is the stored image; MATLAB: the stored image upside down
    expect = stored[::-1] if loader == "python" else stored
    np.testing.assert_array_equal(np.asarray(scan.projections[0]), expect)


@pytest.mark.parametrize("loader", ["python", "matlab"])
def test_diondo_scan_reconstructs_the_object(tmp_path, loader):
    hand = _hand(per_turn=72 if loader == "python" else 71, views=72 if loader == "python"
                 else 71)
    g = _line_integrals(hand)
    xml = diondo.write_scan(tmp_path, hand, 65535.0 * np.exp(-g), loader=loader)
    scan = open_scan(tmp_path, loader=loader)
    assert scan.format == "diondo" and scan.metadata["loader"] == loader
    _check_vendor_frame(scan, xml, loader)
    system = default_system(hand)
    err_hand = _err(system, g)
    att = np.asarray(scan.attenuation())
    err_reader = _err(scan.system.with_changes(volume=system.volume), att)
    print(f"diondo {loader}: error by hand {err_hand:.4f}, reader {err_reader:.4f}")
    assert err_hand < 0.35
    assert err_reader <= err_hand + 1e-3, (err_reader, err_hand)
    np.testing.assert_allclose(att, g, atol=0.6 / (65535.0 * np.exp(-g.max())))


def test_each_option_switches_one_disagreement(tmp_path):
    hand = _hand(views=36, per_turn=36, tau=0.6)
    counts = 60000.0 * np.exp(-_line_integrals(hand))
    diondo.write_scan(tmp_path, hand, counts)
    base = open_scan(tmp_path)
    g0 = base.system.geometry
    # first file
    s = open_scan(tmp_path, first_file=1)
    assert s.system.geometry.num_angles == 35
    np.testing.assert_array_equal(np.asarray(s.projections[0]),
                                  np.asarray(base.projections[1]))
    # angle step
    s = open_scan(tmp_path, endpoint=True)
    assert s.angles[1] == pytest.approx(-360.0 / 35) and base.angles[1] == pytest.approx(-10)
    # rows
    s = open_scan(tmp_path, row_order="bottom")
    np.testing.assert_array_equal(np.asarray(s.projections[3]),
                                  np.asarray(base.projections[3])[::-1])
    assert s.system.geometry == g0
    # the offset's unit
    s = open_scan(tmp_path, cor_unit="pixel")
    assert s.system.geometry.tau == pytest.approx(g0.tau * PW)
    # all four: the MATLAB loader's reading
    m = open_scan(tmp_path, loader="matlab")
    assert m.metadata["first_file"] == 1 and m.metadata["row_order"] == "bottom"
    assert m.system.geometry.num_angles == 35
    # binning and the white level
    s = open_scan(tmp_path, binning=2, white_level=50000.0)
    d = s.system.geometry.detector
    assert (d.num_rows, d.num_cols, d.pixel_width) == (ROWS // 2, COLS // 2, 2 * PW)
    assert float(np.asarray(s.flats).max()) == 50000.0
    assert "diondo scan" in base.summary()
    p = pickle.loads(pickle.dumps(base.projections))
    np.testing.assert_array_equal(p[4], np.asarray(base.projections[4]))
    for bad, message in [(dict(loader="c"), "loader must be"),
                         (dict(first_file=2), "first_file must be 0 or 1"),
                         (dict(row_order="up"), "row_order must be"),
                         (dict(cor_unit="cm"), "cor_unit must be")]:
        with pytest.raises(ValueError, match=message):
            open_scan(tmp_path, **bad)


def test_detect_file_names_and_format(tmp_path):
    hand = _hand(views=8, per_turn=8)
    xml = diondo.write_scan(tmp_path, hand, np.full(hand.projection_shape, 1000.0),
                            height=-3.25)
    assert sorted(os.listdir(tmp_path / "Projection"))[0] == "_-003,25_0000.raw"
    assert diondo.detect(tmp_path) and diondo.detect(xml)
    assert "diondo" in READERS and FORMATS["diondo"] == "diondo"
    assert open_scan(tmp_path).format == "diondo"
    # a series whose prefix the slice height does not give: the folder's one series
    for f in os.listdir(tmp_path / "Projection"):
        os.rename(tmp_path / "Projection" / f,
                  tmp_path / "Projection" / f.replace("_-003,25", "_0001,00"))
    assert open_scan(tmp_path).system.geometry.num_angles == 8


def test_damaged_files_are_named(tmp_path):
    hand = _hand(views=8, per_turn=8)
    xml = diondo.write_scan(tmp_path, hand, np.full(hand.projection_shape, 1000.0))
    text = open(xml).read()
    raw = sorted((tmp_path / "Projection").iterdir())
    data = raw[2].read_bytes()
    raw[2].write_bytes(data[:-1])
    with pytest.raises(ScanFormatError, match=f"{raw[2].name}.*truncated"):
        open_scan(tmp_path)
    raw[2].write_bytes(data + b"\0\0")
    with pytest.raises(ScanFormatError, match=f"{raw[2].name}.*too long"):
        open_scan(tmp_path)
    raw[2].write_bytes(data)
    scan = open_scan(tmp_path)
    raw[2].write_bytes(data[:10])
    with pytest.raises(ScanFormatError, match=raw[2].name):
        np.asarray(scan.projections[2])
    raw[2].unlink()
    with pytest.raises(FileNotFoundError, match="1 of Recon/ProjectionCount = 8 missing"):
        open_scan(tmp_path)
    raw[2].write_bytes(data)

    def bad(old, new, message, error=ScanFormatError):
        with open(xml, "w") as fh:
            fh.write(text.replace(old, new))
        with pytest.raises(error, match=message):
            open_scan(xml, format="diondo")
    bad("SourceObjectDist>", "SourceObject>", "Geometrie/SourceObjectDist is missing")
    bad("<ProjectionDimX>48", "<ProjectionDimX>4.8e1.",
        "Recon/ProjectionDimX = '4.8e1.' is not a number")
    bad("<SourceDetectorDist>300.0", "<SourceDetectorDist>100.0", "must exceed")
    bad("<HelixMode>false", "<HelixMode>true", "HelixMode is true")
    bad("<Laminography>false", "<Laminography>True", "Laminography is true")
    bad("12.50 mm", "twelve mm", "does not start with a height")
    bad("<ProjectionCount>8", "<ProjectionCount>9", "projection file .*_0008.raw",
        FileNotFoundError)
    bad("</CTScan>", "", "not well-formed XML")


def test_writer_refuses_what_diondo_cannot_hold(tmp_path):
    hand = _hand(views=8, per_turn=8)
    ones = np.ones(hand.projection_shape)
    off = hand.with_changes(detector=hand.detector.with_changes(center_col=20.0))
    with pytest.raises(ValueError, match="centred detector"):
        diondo.write_scan(tmp_path, off, ones)
    with pytest.raises(ValueError, match="first angle"):
        diondo.write_scan(tmp_path, hand.with_changes(angles=hand.angles + 0.1), ones)
    with pytest.raises(ValueError, match="counts must be"):
        diondo.write_scan(tmp_path, hand, ones[:, :, 1:])
