"""DICOM-CT-PD reader and writer (leap.io.scanners.dicom_ct_pd).

A scan set up by hand (helical or axial, curved or flat detector, flying focal spot) is
simulated by exact ray tracing, written as DICOM-CT-PD files (private values as FL or as
raw bytes with VR UN, as the TCIA files read), read back and reconstructed: the reader's
geometry must reconstruct the object as well as the hand-made one. Independently of the
reader's code, the headers read with pydicom put the focal centre, source and detector
elements where the module docstring says (the scanner's frame), and the reader's
geometry puts them there too.
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
from leap.io.scanners import FORMATS, READERS, dicom_ct_pd
from leap.io.scanners._common import ScanFormatError, default_system
from leap.io.scanners.dicom_ct_pd import write_scan
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from scan_checks import fbp_error, line_integrals  # noqa: E402

pydicom = pytest.importorskip("pydicom")

# Two ellipsoids off the axis and off the mid-plane: a mirrored channel axis, a wrong
# angle offset or direction, or a wrong table origin moves them.
PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.0), radii=(6, 4, 3),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-4.0, 5.0, -1.5), radii=(2.5, 3, 2),
                                 value=0.04)])
NU, NV, SOD, SDD = 48, 12, 160.0, 290.0      # channels, rows; mm
DU, DV = 1.3, 1.2                            # mm at the detector (DU: arc length if curved)
U0, V0 = 24.7, 6.2                           # the central element (channel, row), 1-based
Z_ORIGIN = 37.5                              # table position of leap's z = 0, mm


def _hand(*, curved=True, pitch=1.1, views=240, turns=2.0, start=2.0, direction=1.0,
          shifts=None, nu=NU, nv=NV):
    """The scan by hand: leap's ConeBeam from the docstring's table."""
    pw = SDD * np.tan(DU / SDD) if curved else DU
    det = leap.Detector(num_rows=nv, num_cols=nu, pixel_height=DV, pixel_width=pw,
                        center_row=V0 - 1.0, center_col=nu - U0, curved=curved)
    psi = start + direction * np.arange(views) * (2 * np.pi * turns / views)
    return leap.ConeBeam(detector=det, angles=psi, sod=SOD, sdd=SDD, helical_pitch=pitch,
                         source_shifts=shifts)


def _line_integrals(geometry):
    return line_integrals(geometry, PHANTOM)


def _err(system, g):
    return fbp_error(system, g, PHANTOM)


def _check_reconstruction(scan, hand, g_hand):
    """err(reader) <= err(by hand) + 1e-3 on the by-hand system's volume."""
    system = default_system(hand)
    assert max(system.volume.num_x, system.volume.num_y, system.volume.num_z) <= 48
    err_hand = _err(system, g_hand)
    att = np.asarray(scan.attenuation())
    err_reader = _err(scan.system.with_changes(volume=system.volume), att)
    assert err_reader <= err_hand + 1e-3, (err_reader, err_hand)
    assert err_hand < 0.25
    return att, err_reader, err_hand


def _f(ds, tag, n=1):
    """A private value read independently of the reader: FL numbers or raw '<f' bytes."""
    v = ds[tag].value
    x = struct.unpack(f"<{len(v) // 4}f", v) if isinstance(v, bytes) else np.atleast_1d(v)
    assert len(x) == n
    return np.asarray(x, dtype=np.float64) if n > 1 else float(x[0])


def _scanner_frame(folder):
    """(sources (views, 3), elements (views, rows, channels, 3)) in the scanner's frame,
    from the headers read with pydicom, as the module docstring places them; views in
    file-name order."""
    sources, elements = [], []
    for f in sorted(os.listdir(folder)):
        ds = pydicom.dcmread(os.path.join(folder, f), stop_before_pixels=True)
        phi, z0, rho = (_f(ds, t) for t in (0x70311001, 0x70311002, 0x70311003))
        d0, du, dv = (_f(ds, t) for t in (0x70311031, 0x70291002, 0x70291006))
        u0, v0 = _f(ds, 0x70311033, 2)
        dphi, dz, drho = (_f(ds, t) for t in (0x7033100B, 0x7033100C, 0x7033100D))
        shape = ds[0x7029100B].value
        shape = (shape.decode() if isinstance(shape, bytes) else shape).strip()
        nu, nv = ds.Rows, ds.Columns
        e_rho = np.array([np.cos(phi), np.sin(phi), 0.0])
        e_phi = np.array([-np.sin(phi), np.cos(phi), 0.0])
        z = np.array([0.0, 0.0, 1.0])
        k, j = np.arange(1, nu + 1), np.arange(1, nv + 1)
        if shape == "CYLINDRICAL":   # fan angle (k − u0)·du/d0 counter-clockwise from −e_rho
            b = (k - u0) * du / d0
            lateral = d0 * (np.cos(b)[:, None] * -e_rho - np.sin(b)[:, None] * e_phi)
        else:
            lateral = d0 * -e_rho - ((k - u0) * du)[:, None] * e_phi
        focal = rho * e_rho + z0 * z
        elements.append(focal + lateral[None, :, :] + ((j - v0) * dv)[:, None, None] * z)
        sources.append((rho + drho) * np.array([np.cos(phi + dphi), np.sin(phi + dphi), 0.0])
                       + (z0 + dz) * z)
    return np.array(sources), np.array(elements)


def _check_scanner_frame(scan, folder):
    """The reader's geometry puts sources and pixels where the headers say (leap z =
    DICOM z − z_origin_mm; leap's columns are the channels reversed)."""
    sources, elements = _scanner_frame(folder)
    g = scan.system.geometry
    shift = np.array([0.0, 0.0, scan.metadata["z_origin_mm"]])
    np.testing.assert_allclose(pixel_positions(g) + shift, elements[:, :, ::-1], atol=2e-4)
    org, _ = pixel_rays(g)
    np.testing.assert_allclose(org[:, 0, 0, 0] + shift, sources, atol=2e-4)


# --------------------------------------------------------------- reconstruction
@pytest.mark.parametrize("pitch, curved, private_vr, direction", [
    (1.1, True, "FL", 1.0),          # helical, curved, the private tags as FL
    (1.1, True, "UN", -1.0),         # ... as raw bytes (implicit VR), turning clockwise
    (0.0, True, "FL", 1.0),          # axial
    (0.0, False, "UN", 1.0),         # axial, flat detector
])
def test_scan_reconstructs_the_object(tmp_path, pitch, curved, private_vr, direction):
    turns = 2.0 if pitch else 1.0
    hand = _hand(curved=curved, pitch=pitch, views=int(120 * turns), turns=turns,
                 direction=direction)
    g_hand = _line_integrals(hand)
    write_scan(tmp_path, g_hand, hand, private_vr=private_vr, z_origin=Z_ORIGIN)
    scan = open_scan(tmp_path)
    assert scan.format == "dicom_ct_pd" and scan.is_attenuation
    assert scan.flats is None and scan.darks is None and scan.angle_unit == "radian"
    g = scan.system.geometry
    assert isinstance(g, leap.ConeBeam) and g.detector.curved == curved
    assert g.source_shifts is None and g.helical_pitch == pytest.approx(pitch, rel=1e-5)
    assert scan.metadata["z_origin_mm"] == pytest.approx(Z_ORIGIN, abs=1e-4)
    np.testing.assert_allclose(scan.angles, hand.angles, atol=1e-6)
    att, _, _ = _check_reconstruction(scan, hand, g_hand)
    np.testing.assert_allclose(att, g_hand, atol=1e-4 * g_hand.max())   # uint16 steps
    _check_scanner_frame(scan, tmp_path)


# -------------------------------------------------------------- round trip
@pytest.mark.parametrize("curved", [True, False])
def test_geometry_and_metadata_read_back(tmp_path, curved):
    hand = _hand(curved=curved, pitch=0.8, views=40, turns=1.5, nu=20, nv=6)
    rng = np.random.default_rng(1)
    att = rng.random(hand.projection_shape) * 3.0
    write_scan(tmp_path, att, hand, z_origin=-12.25, water_mu=0.0201, first_instance=7)
    scan = open_scan(tmp_path / "000003.dcm")                  # one file of the series
    g, d, dh = scan.system.geometry, scan.system.geometry.detector, hand.detector
    np.testing.assert_allclose(g.angles, hand.angles, atol=1e-6)
    for name in ("sod", "sdd", "helical_pitch", "helical_mid_angle"):
        assert getattr(g, name) == pytest.approx(getattr(hand, name), rel=1e-6), name
    for name in ("pixel_width", "pixel_height", "center_col", "center_row"):
        assert getattr(d, name) == pytest.approx(getattr(dh, name), rel=1e-6), name
    assert (d.num_rows, d.num_cols, d.curved) == (6, 20, curved)
    assert d.center_col == pytest.approx(20 - U0, rel=1e-6)        # not the middle
    np.testing.assert_allclose(pixel_positions(g), pixel_positions(hand), atol=2e-4)
    m = scan.metadata
    assert m["z_origin_mm"] == pytest.approx(-12.25, abs=1e-4)
    assert m["water_attenuation_mm"] == pytest.approx(0.0201, rel=1e-6)
    assert m["flying_focal_spot_mode"] == "FFSNONE" and m["FlyingFocalSpotMode"] == "FFSNONE"
    assert m["DetectorShape"] == ("CYLINDRICAL" if curved else "FLAT")
    assert m["NumberofDetectorRows"] == 6 and m["NumberofDetectorColumns"] == 20
    assert m["NumberofSourceAngularSteps"] == 27 and m["InstanceNumber"] == 7
    assert m["Rows"] == 20 and m["Columns"] == 6 and m["Modality"] == "CT"
    assert m["DetectorCentralElement"] == pytest.approx([U0, V0], rel=1e-6)
    assert isinstance(m["Manufacturer"], str) and isinstance(m["RescaleSlope"], float)
    # the projections: line integrals in leap's order, lazy, by region, picklable
    p = scan.projections
    assert p.shape == hand.projection_shape and p.dtype == np.float32
    whole = np.asarray(p)
    np.testing.assert_allclose(whole, att, atol=1e-4 * att.max())
    np.testing.assert_array_equal(p[5], whole[5])
    np.testing.assert_array_equal(p[[9, 2], 1:4, ::3], whole[[9, 2], 1:4, ::3])
    np.testing.assert_array_equal(p[-1, 2, 7], whole[-1, 2, 7])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(p))[3:6], whole[3:6])
    assert "helical pitch" in scan.summary()
    # the stored pixel array is (channels, rows) with the channels reversed
    ds = pydicom.dcmread(tmp_path / "000001.dcm")
    pix = np.frombuffer(ds.PixelData, "<u2").reshape(ds.Rows, ds.Columns)
    stored = pix * float(ds.RescaleSlope) + float(ds.RescaleIntercept)
    np.testing.assert_allclose(stored.T[:, ::-1], whole[0], rtol=1e-6)


def test_angles_are_known_modulo_a_turn_and_order_follows_instance_numbers(tmp_path):
    # ψ of the first view is φ0 + π/2 with φ0 in [0, 2π): another turn reads back as
    # the same scan
    hand = _hand(pitch=0.9, views=30, turns=1.0, start=-7.0, nu=16, nv=4)
    att = np.random.default_rng(2).random(hand.projection_shape)
    write_scan(tmp_path / "a", att, hand)
    g = open_scan(tmp_path / "a").system.geometry
    turns = (g.angles - hand.angles) / (2 * np.pi)
    np.testing.assert_allclose(turns, np.round(turns[0]), atol=1e-6)
    assert round(turns[0]) == 2                       # ψ0 = −7 + 4π
    np.testing.assert_allclose(pixel_positions(g), pixel_positions(hand), atol=2e-4)
    # files named out of order: InstanceNumber decides; without it, the names do
    d = tmp_path / "b"
    write_scan(d, att, hand, first_instance=100)
    for i, f in enumerate(sorted(os.listdir(d))):
        os.rename(d / f, d / f"x{29 - i:03d}.DCM")
    back = open_scan(d)
    np.testing.assert_allclose(back.system.geometry.angles, g.angles, atol=1e-6)
    np.testing.assert_allclose(np.asarray(back.projections), att, atol=1e-4)
    for f in os.listdir(d):
        ds = pydicom.dcmread(d / f)
        del ds.InstanceNumber
        ds.save_as(d / f, enforce_file_format=True)
    by_name = open_scan(d)                           # the reversed scan: still monotonic
    turns = (by_name.system.geometry.angles - hand.angles[::-1]) / (2 * np.pi)
    np.testing.assert_allclose(turns, np.round(turns[0]), atol=1e-6)
    np.testing.assert_allclose(pixel_positions(by_name.system.geometry),
                               pixel_positions(hand[::-1]), atol=2e-4)
    np.testing.assert_allclose(np.asarray(by_name.projections), att[::-1], atol=1e-4)


# -------------------------------------------------------------- flying focal spot
def test_flying_focal_spot_reads_back_and_reconstructs(tmp_path):
    views = 240
    k = np.arange(views)
    shifts = np.zeros((views, 3))
    shifts[:, 0] = np.where(k % 2, 1.0, -1.0) * 0.6 * DU / SDD / 2     # Δφ: alternate
    shifts[:, 1] = np.where((k // 2) % 2, 1.0, -1.0) * 0.25 * DV        # Δz: every other pair
    shifts[:, 2] = -0.05
    hand = _hand(pitch=1.1, views=views, turns=2.0, shifts=shifts)
    g_hand = _line_integrals(hand)
    write_scan(tmp_path, g_hand, hand, private_vr="UN", z_origin=Z_ORIGIN)
    scan = open_scan(tmp_path)
    back = scan.system.geometry.source_shifts
    assert back is not None
    np.testing.assert_allclose(back, shifts, atol=1e-6)
    assert scan.metadata["flying_focal_spot_mode"] == "FFSXYZ"
    _check_scanner_frame(scan, tmp_path)
    _check_reconstruction(scan, hand, g_hand)
    # the mode as written; a mode that needs the shifts and a file without them
    d = tmp_path / "z"
    small = _hand(pitch=1.1, views=8, turns=0.25, nu=16, nv=4,
                  shifts=np.c_[np.zeros(8), np.resize([0.3, -0.3], 8), np.zeros(8)])
    write_scan(d, np.ones(small.projection_shape), small, ffs_mode="FFSZ")
    assert open_scan(d).metadata["FlyingFocalSpotMode"] == "FFSZ"
    ds = pydicom.dcmread(d / "000004.dcm")
    del ds[0x7033100C]
    ds.save_as(d / "000004.dcm", enforce_file_format=True)
    with pytest.raises(ScanFormatError, match=r"000004\.dcm: the tag \(7033,100C\) "
                                              r"SourceAxialPositionShift is missing.*FFSZ"):
        open_scan(d)


# ------------------------------------------------------------- row direction
def test_rows_option_reads_a_minus_z_file_as_the_plus_z_one(tmp_path):
    """A scan written with its rows towards −z and read with rows='-z' is the scan written
    towards +z read as usual: the same geometry, projections and reconstruction. Read
    with the default instead, the helical reconstruction is clearly worse."""
    hand = _hand(pitch=1.1, views=120, turns=1.5)
    g = _line_integrals(hand)
    plus, minus = tmp_path / "plus", tmp_path / "minus"
    write_scan(plus, g, hand)
    write_scan(minus, g, hand, rows="-z")
    a = open_scan(plus)
    b = open_scan(minus, rows="-z")
    assert a.metadata["detector_rows"] == "+z" and b.metadata["detector_rows"] == "-z"
    assert b.system.geometry == a.system.geometry
    pa, pb = np.asarray(a.projections), np.asarray(b.projections)
    np.testing.assert_array_equal(pb, pa)
    ds = pydicom.dcmread(minus / "000001.dcm")
    stored = np.frombuffer(ds.PixelData, "<u2").reshape(NU, NV)
    np.testing.assert_array_equal(stored, np.frombuffer(
        pydicom.dcmread(plus / "000001.dcm").PixelData, "<u2").reshape(NU, NV)[:, ::-1])
    _check_reconstruction(b, hand, g)
    system = default_system(hand)
    wrong = open_scan(minus)
    err_right = _err(b.system.with_changes(volume=system.volume), pb)
    err_wrong = _err(wrong.system.with_changes(volume=system.volume),
                     np.asarray(wrong.attenuation()))
    assert err_wrong > 1.5 * err_right, (err_wrong, err_right)
    with pytest.raises(ValueError, match="rows must be '\\+z' or '-z'"):
        open_scan(plus, rows="up")
    with pytest.raises(ValueError, match="rows must be"):
        write_scan(tmp_path / "bad", g, hand, rows="z")


# ---------------------------------------------------------------------- errors
def _edit(path, fn):
    ds = pydicom.dcmread(path)
    fn(ds)
    ds.save_as(path, enforce_file_format=True)


def test_bad_inputs_name_the_file_and_tag(tmp_path):
    hand = _hand(pitch=1.0, views=8, turns=0.25, nu=16, nv=4)
    att = np.random.default_rng(3).random(hand.projection_shape)

    def fresh(name, private_vr="FL"):
        d = tmp_path / name
        write_scan(d, att, hand, private_vr=private_vr)
        return d

    d = fresh("missing")
    _edit(d / "000003.dcm", lambda ds: ds.__delitem__(0x70311003))
    with pytest.raises(ScanFormatError, match=r"000003\.dcm: the tag \(7031,1003\) "
                                              r"DetectorFocalCenterRadialDistance is missing"):
        open_scan(d)
    d = fresh("shapes")

    def fewer_channels(ds):
        pix = np.frombuffer(ds.PixelData, "<u2").reshape(ds.Rows, ds.Columns)
        ds.Rows = ds.Rows - 2
        ds.PixelData = pix[:-2].tobytes()
    _edit(d / "000005.dcm", fewer_channels)
    with pytest.raises(ScanFormatError, match=r"000005\.dcm: Rows, Columns \(0028,0010\), "
                                              r"\(0028,0011\) = 14, 4 but 16, 4"):
        open_scan(d)
    d = fresh("order", private_vr="UN")
    a, b = (pydicom.dcmread(d / f"00000{i}.dcm")[0x70311001].value for i in (4, 5))
    _edit(d / "000004.dcm", lambda ds: setattr(ds[0x70311001], "value", b))
    _edit(d / "000005.dcm", lambda ds: setattr(ds[0x70311001], "value", a))
    with pytest.raises(ScanFormatError, match=r"000005\.dcm: the angles .* of the tag "
                                              r"\(7031,1001\) DetectorFocalCenterAngularPosition"
                                              r".* are not monotonic \(view 4"):
        open_scan(d)
    d = fresh("table")
    _edit(d / "000006.dcm", lambda ds: setattr(ds[0x70311002], "value",
                                               ds[0x70311002].value + 0.5))
    with pytest.raises(ScanFormatError, match=r"000006\.dcm: the tag \(7031,1002\) "
                                              r"DetectorFocalCenterAxialPosition: table motion "
                                              r"is not linear in the view angle.*constant pitch"):
        open_scan(d)
    d = fresh("sphere")
    _edit(d / "000001.dcm", lambda ds: setattr(ds[0x7029100B], "value", "SPHERICAL"))
    with pytest.raises(ScanFormatError, match=r"000001\.dcm: the tag \(7029,100B\) "
                                              r"DetectorShape = 'SPHERICAL'"):
        open_scan(d)
    d = fresh("count", private_vr="UN")
    for f in os.listdir(d):
        _edit(d / f, lambda ds: setattr(ds[0x70291010], "value", struct.pack("<H", 5)))
    with pytest.raises(ScanFormatError, match=r"000001\.dcm: the tag \(7029,1010\) "
                                              r"NumberofDetectorRows = 5 but Columns "
                                              r"\(0028,0011\) = 4"):
        open_scan(d)
    d = fresh("constant")
    _edit(d / "000002.dcm", lambda ds: setattr(ds[0x70311031], "value", 291.0))
    with pytest.raises(ScanFormatError, match=r"000002\.dcm: the tag \(7031,1031\) "
                                              r"ConstantRadialDistance = 291.0 but 290.0"):
        open_scan(d)
    d = fresh("radius")
    _edit(d / "000007.dcm", lambda ds: setattr(ds[0x70311003], "value", SOD + 0.01))
    with pytest.raises(ScanFormatError, match=r"000007\.dcm: the tag \(7031,1003\) "
                                              r"DetectorFocalCenterRadialDistance = 160.01"):
        open_scan(d)
    d = fresh("text")

    def as_text(ds):
        del ds[0x70291006]
        ds.add_new(0x70291006, "LO", "wide")
    _edit(d / "000001.dcm", as_text)
    with pytest.raises(ScanFormatError, match=r"000001\.dcm: the tag \(7029,1006\) "
                                              r"DetectorElementAxialSpacing = 'wide' is not a "
                                              "number"):
        open_scan(d)
    d = fresh("twins")
    _edit(d / "000002.dcm", lambda ds: setattr(ds, "InstanceNumber", 1))
    with pytest.raises(ScanFormatError, match=r"000002\.dcm: the tag InstanceNumber "
                                              r"\(0020,0013\) = 1 is also that of 000001\.dcm"):
        open_scan(d)
    d = fresh("garbage")
    (d / "000004.dcm").write_bytes(b"not a DICOM file at all" * 10)
    with pytest.raises(ScanFormatError, match=r"000004\.dcm: cannot be read as a DICOM file"):
        open_scan(d)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ScanFormatError, match=r"empty: holds no \.dcm files"):
        dicom_ct_pd.open_scan(tmp_path / "empty")


def test_projections_are_read_lazily_and_a_corrupt_view_is_named(tmp_path):
    hand = _hand(pitch=1.0, views=8, turns=0.25, nu=16, nv=4)
    att = np.random.default_rng(4).random(hand.projection_shape)
    write_scan(tmp_path, att, hand)
    f = tmp_path / "000006.dcm"
    good = f.read_bytes()
    f.write_bytes(good[:-40])                  # pixel data cut short: the header reads
    scan = open_scan(tmp_path)                 # nothing of the pixels read yet
    np.testing.assert_allclose(scan.projections[2:5], att[2:5], atol=1e-4)
    with pytest.raises(ScanFormatError, match=r"000006\.dcm.*\(7FE0,0010\) PixelData"):
        scan.projections[4:7]
    with pytest.raises(ScanFormatError, match=r"000006\.dcm.*\(7FE0,0010\) PixelData"):
        np.asarray(scan.attenuation())
    f.write_bytes(good)
    ds = pydicom.dcmread(f)
    ds.Rows = 8
    ds.save_as(f, enforce_file_format=True)     # changed after the scan was opened
    with pytest.raises(ScanFormatError, match=r"000006\.dcm: Rows, Columns \(0028,0010\), "
                                              r"\(0028,0011\) = \(8, 4\), but the scan"):
        scan.projections[5]


# ---------------------------------------------------------------------- detect
def test_detect_and_format_names(tmp_path):
    hand = _hand(pitch=0.0, views=6, turns=0.25, nu=16, nv=4)
    write_scan(tmp_path / "ct", np.zeros(hand.projection_shape), hand)
    assert dicom_ct_pd.detect(tmp_path / "ct")
    assert dicom_ct_pd.detect(tmp_path / "ct" / "000002.dcm")
    assert open_scan(tmp_path / "ct").format == "dicom_ct_pd"
    for name in ("dicom-ct-pd", "DICOM_CT_PD", "dicomctpd"):
        assert open_scan(tmp_path / "ct", format=name).format == "dicom_ct_pd"
    assert READERS[-1] == "dicom_ct_pd" and FORMATS["dicom-ct-pd"] == "dicom_ct_pd"
    # a plain CT image: DICOM, but not DICOM-CT-PD
    plain = tmp_path / "plain"
    plain.mkdir()
    ds = pydicom.dcmread(tmp_path / "ct" / "000001.dcm")
    for tag in [e.tag for e in ds if e.tag.group in (0x7029, 0x7031, 0x7033, 0x7041)]:
        del ds[tag]
    ds.save_as(plain / "image.dcm", enforce_file_format=True)
    assert not dicom_ct_pd.detect(plain) and not dicom_ct_pd.detect(plain / "image.dcm")
    with pytest.raises(ValueError, match="not a scan leap can read"):
        open_scan(plain)
    (tmp_path / "empty").mkdir()
    (tmp_path / "text.dcm").write_text("not DICOM")
    assert not dicom_ct_pd.detect(tmp_path / "empty")
    assert not dicom_ct_pd.detect(tmp_path / "text.dcm")
    assert not dicom_ct_pd.detect(tmp_path / "nothing")
    pytest.importorskip("tifffile")
    from leap.io.scanners import nikon
    det = leap.Detector(num_rows=4, num_cols=6, pixel_height=0.8, pixel_width=0.8)
    cone = leap.ConeBeam(detector=det, angles=np.radians(np.arange(4) * 90.0), sod=100.0,
                         sdd=200.0)
    nikon.write_scan(tmp_path / "nikon", cone, np.full((4, 4, 6), 1000.0))
    assert not dicom_ct_pd.detect(tmp_path / "nikon")
    assert not nikon.detect(tmp_path / "ct")


def test_writer_refuses_what_the_format_cannot_hold(tmp_path):
    hand = _hand(pitch=0.0, views=6, turns=0.25, nu=16, nv=4)
    ok = np.zeros(hand.projection_shape)
    with pytest.raises(ValueError, match="attenuation must be"):
        write_scan(tmp_path, np.zeros((6, 4, 15)), hand)
    with pytest.raises(ValueError, match="tau = 0"):
        write_scan(tmp_path, ok, hand.with_changes(tau=1.0))
    with pytest.raises(ValueError, match="private_vr"):
        write_scan(tmp_path, ok, hand, private_vr="OB")
    with pytest.raises(ValueError, match="ffs_mode"):
        write_scan(tmp_path, ok, hand, ffs_mode="FFSW")
    flat = _hand(curved=False, pitch=0.0, views=6, turns=0.25, nu=16, nv=4)
    with pytest.raises(ValueError, match="tilt"):
        write_scan(tmp_path, ok, flat.with_changes(tilt=0.01))
    assert not os.listdir(tmp_path)
