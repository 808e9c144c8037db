"""Nikon XT/XTH and Bruker SkyScan readers (leap.io.scanners.nikon, .skyscan).

Each format's file set is written from its published layout, with the projections of an
analytic object simulated in the *vendor's* frame (source, detector, rotation axis and
image orientation as the reader's docstring states them, independent of the reader's
code): the reader must turn them into a leap geometry that reconstructs the object as
well as the geometry set up by hand does (exact line integrals of that geometry, FBP).
"""
from __future__ import annotations

import os
import pickle
import struct
import warnings

import numpy as np
import pytest

import leap
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.io import open_scan
from leap.io.scanners import nikon, skyscan
from leap.io.scanners._common import (MissingWhiteLevelWarning, ScanFormatError,
                                      default_system)
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from scan_checks import fbp_error  # noqa: E402

tifffile = pytest.importorskip("tifffile")

# Two ellipsoids, off the axis and off the mid-plane: a mirrored axis, a wrong angle
# direction or a wrong offset sign moves them.
PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.5), radii=(6, 4, 5),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-4.0, 5.0, -2.0), radii=(2.5, 3, 2),
                                 value=0.04)])
ROWS, COLS, PIXEL, SOD, SDD = 48, 64, 0.8, 150.0, 300.0
WHITE = 60000.0


def _rz(deg):
    """Rotations by ``deg`` (array) counter-clockwise about z, (n, 3, 3)."""
    t = np.radians(np.atleast_1d(deg))
    r = np.zeros((t.size, 3, 3))
    r[:, 0, 0], r[:, 0, 1], r[:, 1, 0], r[:, 1, 1], r[:, 2, 2] = (np.cos(t), -np.sin(t),
                                                                 np.sin(t), np.cos(t), 1)
    return r


def _vendor_line_integrals(source, pixels, to_object):
    """Line integrals from ``source`` (3,) to ``pixels`` (rows, cols, 3), all in the lab
    frame, through the phantom held in the object frame: ``to_object`` (views, 3, 3)
    turns lab offsets from the axis point (the origin here) into object coordinates."""
    d = pixels - source
    o = np.einsum("vij,j->vi", to_object, source)
    dirs = np.einsum("vij,rcj->vrci", to_object, d)
    org = np.broadcast_to(o[:, None, None, :], dirs.shape)
    g = PHANTOM.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3))
    return g.reshape(dirs.shape[:3])


def _err(system, g):
    return fbp_error(system, g, PHANTOM)


def _by_hand(geometry):
    """The hand-made geometry's system, its exact line integrals and its FBP error."""
    system = default_system(geometry)
    org, dirs = pixel_rays(geometry)
    g = PHANTOM.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3))
    g = g.reshape(geometry.projection_shape).astype(np.float32)
    return system, g, _err(system, g)


def _check_reconstruction(scan, hand_geometry):
    """err(reader) <= err(by hand) + 1e-3 on the by-hand system's volume; returns both."""
    system, g_hand, err_hand = _by_hand(hand_geometry)
    att = np.asarray(scan.attenuation())
    err_reader = _err(scan.system.with_changes(volume=system.volume), att)
    assert err_reader <= err_hand + 1e-3, (err_reader, err_hand)
    return att, g_hand, err_reader, err_hand


# ------------------------------------------------------------------------ Nikon
NIKON = dict(dox=2.4, doy=-1.6, cor=-1.3, initial=23.0, views=72, step=5.0)


def _nikon_pixels(dox, doy):
    """Image pixel centres (rows, cols, 3), CIL's frame: panel centre at (-dox, sdd - sod,
    doy), pixel (0, 0) top-right seen from the source (x falls with the column)."""
    r, c = np.meshgrid(np.arange(ROWS), np.arange(COLS), indexing="ij")
    x = -dox - (c - 0.5 * (COLS - 1)) * PIXEL
    z = doy - (r - 0.5 * (ROWS - 1)) * PIXEL
    return np.stack([x, np.full_like(x, SDD - SOD), z], axis=-1)


def write_nikon(folder, *, name="scan 1", angles_file="ctdata", offset_key="cor", extra=None,
                drop=(), measured=None, roll=0.0):
    """A Nikon file set: ``<name>.xtekct``, ``_ctdata.txt`` or ``<name>.ang``, and
    ``<name>_0001.tif``...; returns the measured angles (deg)."""
    p = NIKON
    n = p["views"]
    a = np.arange(n) * p["step"] + 0.013 if measured is None else np.asarray(measured)
    oox = p["cor"] * SOD / SDD                          # CoR in mm at the detector
    theta = 180.0 - p["initial"] - a                    # the object's turn (CCW)
    axis_point = np.array([-oox, 0.0, 0.0])
    q = np.eye(3)
    if roll:
        cr, sr = np.cos(np.radians(roll)), np.sin(np.radians(roll))
        axis = np.array([sr, 0.0, cr])
        q = _smallest_rotation(axis)
        to_object = np.stack([q @ _rot(axis, -t) for t in theta])
    else:
        to_object = _rz(-theta)
    g = _vendor_line_integrals(np.array([0.0, -SOD, 0.0]) - axis_point,
                               _nikon_pixels(p["dox"], p["doy"]) - axis_point, to_object)
    counts = np.round(WHITE * np.exp(-g)).astype(np.uint16)
    keys = {"Name": name, "InputSeparator": "_", "InputDigits": 4, "InputFolderName": "",
            "VoxelsX": COLS, "Projections": n, "InitialAngle": p["initial"],
            "AngularStep": p["step"], "DetectorPixelsX": COLS, "DetectorPixelsY": ROWS,
            "DetectorPixelSizeX": PIXEL, "DetectorPixelSizeY": PIXEL,
            "DetectorOffsetX": p["dox"], "DetectorOffsetY": p["doy"], "SrcToObject": SOD,
            "SrcToDetector": SDD, "WhiteLevel": WHITE, "Units": "mm"}
    if offset_key == "cor":
        keys.update(CentreOfRotationTop=p["cor"], CentreOfRotationBottom=p["cor"])
    else:
        keys.update(ObjectOffsetX=oox, ObjectRoll=roll, ObjectTilt=0.0)
    keys.update(extra or {})
    lines = ["[XTekCT]"] + [f"{k}={v}" for k, v in keys.items() if k not in drop]
    lines += ["[Xrays]", "XraykV=90", "[CTPro]", "AngleFile_Use=True"]
    (folder / f"{name}.xtekct").write_text("\n".join(lines) + "\n")
    if angles_file == "ctdata":
        rows = [f"{i + 1}\t{x:08.4f}\t{2.8 + 0.7 * i:08.4f}" for i, x in enumerate(a)]
        (folder / "_ctdata.txt").write_text("Projections\tFrames\tExposure(ms)\n"
                                            f"{n}\t1\t708.00\nProjection\tAngle(deg)\tTime(s)\n"
                                            + "\n".join(rows) + "\n")
    elif angles_file == "ang":
        rows = [f"{i + 1}\t{x:.4f}" for i, x in enumerate(a)]
        (folder / f"{name}.ang").write_text("Projection\tAngle\n" + "\n".join(rows) + "\n")
    for i in range(n):
        tifffile.imwrite(folder / f"{name}_{i + 1:04d}.tif", counts[i])
    return a


def _rot(axis, deg):
    """Rotation by ``deg`` counter-clockwise about the unit vector ``axis``."""
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    t = np.radians(deg)
    return np.eye(3) + np.sin(t) * k + (1 - np.cos(t)) * k @ k


def _smallest_rotation(axis):
    """The rotation about axis × z taking ``axis`` to z."""
    w = np.cross(axis, [0.0, 0.0, 1.0])
    return _rot(w / np.linalg.norm(w), np.degrees(np.arcsin(np.linalg.norm(w))))


def _nikon_by_hand(measured):
    p = NIKON
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PIXEL, pixel_width=PIXEL,
                        center_row=0.5 * (ROWS - 1) - p["doy"] / PIXEL,
                        center_col=0.5 * (COLS - 1) + p["dox"] / PIXEL)
    return leap.ConeBeam(detector=det, angles=np.radians(measured + p["initial"] - 180.0),
                         sod=SOD, sdd=SDD, tau=-p["cor"] * SOD / SDD)


@pytest.mark.parametrize("angles_file, offset_key", [("ctdata", "cor"), ("ang", "offset")])
def test_nikon_reconstructs_the_object(tmp_path, angles_file, offset_key):
    measured = write_nikon(tmp_path, angles_file=angles_file, offset_key=offset_key)
    scan = open_scan(tmp_path / "scan 1.xtekct")
    assert scan.format == "nikon" and isinstance(scan.system.geometry, leap.ConeBeam)
    np.testing.assert_allclose(scan.angles, np.round(measured, 4), atol=1e-9)
    assert scan.metadata["SrcToObject"] == SOD and scan.metadata["Name"] == "scan 1"
    assert scan.projections.shape == (NIKON["views"], ROWS, COLS)
    assert scan.darks is None and np.all(np.asarray(scan.flats) == WHITE)
    att, g_hand, err_reader, err_hand = _check_reconstruction(scan, _nikon_by_hand(measured))
    np.testing.assert_allclose(att, g_hand, atol=2e-3)     # the same rays, pixel by pixel
    assert err_hand < 0.2


def test_nikon_directory_binning_and_nominal_angles(tmp_path):
    write_nikon(tmp_path)
    whole = open_scan(tmp_path, angles_file=False)        # the directory; i·AngularStep
    np.testing.assert_allclose(whole.angles, np.arange(NIKON["views"]) * NIKON["step"])
    binned = nikon.open_scan(tmp_path, binning=2, angles_file=False)
    assert binned.projections.shape == (NIKON["views"], ROWS // 2, COLS // 2)
    a, b = np.asarray(whole.projections, np.float64), np.asarray(binned.projections)
    np.testing.assert_allclose(b, a.reshape(-1, ROWS // 2, 2, COLS // 2, 2).mean((2, 4)),
                               rtol=1e-6)
    # each binned pixel sits at the mean of its four pixels
    pa, pb = pixel_positions(whole.system.geometry), pixel_positions(binned.system.geometry)
    np.testing.assert_allclose(pb, pa.reshape(-1, ROWS // 2, 2, COLS // 2, 2, 3).mean((2, 4)),
                               atol=1e-9)
    assert np.array_equal(binned.projections[3, 5:9, 2], b[3, 5:9, 2])   # regions alike
    assert np.array_equal(binned.projections[[4, 1], -1, ::3], b[[4, 1], -1, ::3])
    again = pickle.loads(pickle.dumps(binned.attenuation()))          # sources pickle
    np.testing.assert_array_equal(again[2:4], np.asarray(binned.attenuation())[2:4])


def test_nikon_rolled_axis_is_a_modular_beam(tmp_path):
    roll = 2.0
    measured = write_nikon(tmp_path, offset_key="offset", roll=roll)
    scan = open_scan(tmp_path / "scan 1.xtekct")
    g = scan.system.geometry
    assert isinstance(g, leap.ModularBeam)
    # by hand: the CIL frame's source and panel, moved to the axis, turned with the object
    p, oox = NIKON, NIKON["cor"] * SOD / SDD
    axis = np.array([np.sin(np.radians(roll)), 0.0, np.cos(np.radians(roll))])
    q = _smallest_rotation(axis)
    m = np.stack([q @ _rot(axis, -(180.0 - p["initial"] - t)) for t in measured])
    src = np.array([oox, -SOD, 0.0])
    centre = np.array([oox - p["dox"], SDD - SOD, p["doy"]])
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PIXEL, pixel_width=PIXEL)
    hand = leap.ModularBeam(detector=det, source_positions=m @ src, module_centers=m @ centre,
                            row_vectors=m @ [0, 0, 1.0], col_vectors=m @ [1.0, 0, 0])
    np.testing.assert_allclose(pixel_positions(g), pixel_positions(hand), atol=1e-9)
    _check_reconstruction(scan, hand)
    # the older keys: CentreOfRotationTop/Bottom (mm at the detector) give the same
    xtekct = tmp_path / "scan 1.xtekct"
    h = ROWS * PIXEL
    top = oox * SDD / SOD - 0.5 * h * np.tan(np.radians(roll))
    bottom = oox * SDD / SOD + 0.5 * h * np.tan(np.radians(roll))
    text = [ln for ln in xtekct.read_text().splitlines() if not ln.startswith("Object")]
    xtekct.write_text("\n".join(text + [f"CentreOfRotationTop={top}",
                                        f"CentreOfRotationBottom={bottom}"]) + "\n")
    older = open_scan(xtekct).system.geometry
    np.testing.assert_allclose(pixel_positions(older), pixel_positions(g), atol=1e-9)
    # without roll, the modular form is the cone beam's
    cone = _nikon_by_hand(measured)
    flat = nikon._modular(cone.angles, SOD, SDD, NIKON["cor"] * SOD / SDD, ROWS, COLS, PIXEL,
                          PIXEL, cone.detector.center_row, cone.detector.center_col, 0.0, 0.0)
    np.testing.assert_allclose(pixel_positions(flat), pixel_positions(cone), atol=1e-9)


# ------------------------------------------------------------------- Nikon errors
def test_nikon_without_white_level_warns_naming_the_option(tmp_path):
    write_nikon(tmp_path, drop=("WhiteLevel",))
    with pytest.warns(MissingWhiteLevelWarning, match=r"scan 1\.xtekct: no flat frames .*"
                      r"no WhiteLevel.*pass white_level= or flats=") as caught:
        scan = open_scan(tmp_path)
    assert len(caught) == 1 and scan.flats is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingWhiteLevelWarning)
        scan = nikon.open_scan(tmp_path, white_level=WHITE)
    assert scan.flats.shape == (1, ROWS, COLS) and np.all(np.asarray(scan.flats) == WHITE)
    att = np.asarray(scan.attenuation()[::9])
    assert att.min() >= 0.0 and att.max() < 5.0
    with pytest.raises(ValueError, match="flats= images or white_level="):
        nikon.open_scan(tmp_path, white_level=WHITE, flats="scan 1_0001.tif")


def test_nikon_bad_inputs_name_the_file_and_key(tmp_path):
    def fresh(name, **kw):
        d = tmp_path / name
        d.mkdir()
        write_nikon(d, **kw)
        return d

    d = fresh("missing_key", drop=("SrcToObject",))
    with pytest.raises(ScanFormatError, match=r"scan 1\.xtekct.*SrcToObject"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("missing_file")
    os.remove(d / "scan 1_0007.tif")
    with pytest.raises(FileNotFoundError, match=r"scan 1\.xtekct.*scan 1_0007\.tif.*Projections"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("too_many", extra={"Projections": NIKON["views"] - 1}, angles_file=None)
    with pytest.raises(ScanFormatError, match=r"scan 1\.xtekct: Projections = 71 but.*_0072"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("short_angles")
    (d / "_ctdata.txt").write_text("\n".join((d / "_ctdata.txt").read_text().split("\n")[:-3]))
    with pytest.raises(ScanFormatError, match=r"_ctdata\.txt: holds 70 angles but Projections"):
        open_scan(d / "scan 1.xtekct")
    back = np.arange(NIKON["views"]) * NIKON["step"]
    back[[10, 11]] = back[[11, 10]]
    d = fresh("unordered", measured=back)
    with pytest.raises(ScanFormatError, match=r"_ctdata\.txt: the angles are not monotonic "
                                              r"\(view 11"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("shapes")
    tifffile.imwrite(d / "scan 1_0005.tif", np.zeros((ROWS, COLS - 1), np.uint16))
    with pytest.raises(ScanFormatError, match=r"scan 1\.xtekct: .*scan 1_0005\.tif.*InputDigits"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("size", extra={"DetectorPixelsX": COLS + 2})
    with pytest.raises(ScanFormatError, match=r"DetectorPixelsY, DetectorPixelsX"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("units", extra={"Units": "furlong"})
    with pytest.raises(ScanFormatError, match=r"scan 1\.xtekct: Units = 'furlong'"):
        open_scan(d / "scan 1.xtekct")
    d = fresh("number", extra={"SrcToDetector": "far"})
    with pytest.raises(ScanFormatError, match=r"SrcToDetector = 'far' is not a number"):
        open_scan(d / "scan 1.xtekct")
    with pytest.raises(ScanFormatError, match=r"holds 0 \.xtekct files"):
        nikon.open_scan(tmp_path)


# ---------------------------------------------------------------------- SkyScan
SKY = dict(line=20.0, post=2.5)


def _sky_pixels(line):
    """Image pixel centres (rows, cols, 3): seen from behind the detector with row 0 at
    the top (x falls with the column, z with the row), the central ray at row ``line``
    and the middle column."""
    r, c = np.meshgrid(np.arange(ROWS), np.arange(COLS), indexing="ij")
    x = -(c - 0.5 * (COLS - 1)) * PIXEL
    z = -(r - line) * PIXEL
    return np.stack([x, np.full_like(x, SDD - SOD), z], axis=-1)


def write_bmp(path, img, *, top_down=False):
    """An uncompressed BMP (BITMAPINFOHEADER): 16-bit grey values or 8-bit with a grey
    palette; rows bottom-up unless ``top_down``."""
    img = np.asarray(img)
    bits = 16 if img.dtype == np.uint16 else 8
    rows, cols = img.shape
    stride = (cols * bits + 31) // 32 * 4
    palette = b"" if bits == 16 else bytes(np.repeat(np.arange(256, dtype=np.uint8), 4))
    body = np.zeros((rows, stride), np.uint8)
    body[:, :cols * bits // 8] = img.astype("<u2" if bits == 16 else np.uint8).view(np.uint8) \
        .reshape(rows, -1)
    body = body if top_down else body[::-1]
    offset = 54 + len(palette)
    head = struct.pack("<2sIHHI", b"BM", offset + body.size, 0, 0, offset)
    head += struct.pack("<IiiHHIIiiII", 40, cols, -rows if top_down else rows, 1, bits, 0,
                        body.size, 2835, 2835, 0 if bits == 16 else 256, 0)
    path.write_bytes(head + palette + body.tobytes())


def write_skyscan(folder, *, views, step, full, fmt="TIFF", prefix="bone_", refs=True,
                  drop=(), extra=None, direction="CC", flat_corrected=False):
    """A SkyScan file set: ``<prefix[:-1]>.log``, ``<prefix>0000.tif``... (or ``.bmp``),
    flat and dark references; counts = flat·exp(−g) + dark, the flat drifting between
    the three references (open beam, so flat + dark) taken every ``FF updating interval``
    views. ``flat_corrected``: as SkyScan usually stores them, 16-bit images already
    divided by the flat field (air at 65535, counts = 65535·exp(−g)), no references and
    "Flat Field Correction=ON"."""
    a = np.arange(views) * step
    sign = 1.0 if direction == "CC" else -1.0
    axis_x = -SKY["post"] * PIXEL * SOD / SDD
    axis_point = np.array([axis_x, 0.0, 0.0])
    g = _vendor_line_integrals(np.array([0.0, -SOD, 0.0]) - axis_point,
                               _sky_pixels(SKY["line"]) - axis_point, _rz(-sign * a))
    rng = np.random.default_rng(7)
    every = 30
    flats = 40000 + 8000 * rng.random((3, ROWS, COLS))
    flats[1] *= 1.04
    flats[2] *= 1.07
    dark = 100 + 20 * rng.random((ROWS, COLS))
    flat_v = np.stack([np.interp(i, [0, every, 2 * every], [0, 1, 2]) for i in range(views)])
    lo = np.minimum(np.floor(flat_v).astype(int), 1)
    w = (flat_v - lo)[:, None, None]
    flat_views = (1 - w) * flats[lo] + w * flats[lo + 1]
    counts = np.round(flat_views * np.exp(-g) + dark).astype(np.uint16)
    if flat_corrected:
        counts, refs = np.round(65535.0 * np.exp(-g)).astype(np.uint16), False
    ext = ".tif" if fmt == "TIFF" else ".bmp"
    write = (lambda p, x: tifffile.imwrite(p, x)) if fmt == "TIFF" else write_bmp
    for i in range(views):
        write(folder / f"{prefix}{i:04d}{ext}", counts[i])
    if refs:
        for j in range(3):
            write(folder / f"{prefix}flat{j}{ext}", np.round(flats[j] + dark).astype(np.uint16))
        write(folder / f"{prefix}dark{ext}", np.round(dark).astype(np.uint16))
    keys = {"Number Of Files": views, "Number Of Rows": ROWS, "Number Of Columns": COLS,
            "Camera binning": "1x1", "Optical Axis (line)": SKY["line"],
            "Camera to Source (mm)": SDD, "Object to Source (mm)": SOD,
            "Image Pixel Size (um)": PIXEL * SOD / SDD * 1000, "Image Format": fmt,
            "Depth (bits)": 16, "Rotation Step (deg)": step,
            "Use 360 Rotation": "YES" if full else "NO",
            "Flat Field Correction": "ON" if flat_corrected else "OFF",
            "FF updating interval": every, "Rotation Direction": direction,
            "Scanning Trajectory": "ROUND"}
    keys.update(extra or {})
    lines = ["[System]", "Scanner=SkyScan1272", "Camera Pixel Size (um)=9.0",
             "Camera X/Y Ratio=0.9851", "[Acquisition]",
             f"Filename Prefix={prefix}", "Filename Index Length=4"]
    lines += [f"{k}={v}" for k, v in keys.items() if k not in drop]
    lines += ["[Reconstruction]", f"Postalignment={SKY['post']:.2f}"]
    log = folder / f"{prefix[:-1]}.log"
    log.write_text("\n".join(lines) + "\n")
    return log, a


def _sky_by_hand(a, direction="CC"):
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PIXEL, pixel_width=PIXEL,
                        center_row=ROWS - 1 - SKY["line"])
    sign = -1.0 if direction == "CC" else 1.0
    return leap.ConeBeam(detector=det, angles=sign * np.radians(a), sod=SOD, sdd=SDD,
                         tau=-SKY["post"] * PIXEL * SOD / SDD)


@pytest.mark.parametrize("fmt, views, step, full, direction",
                         [("TIFF", 60, 6.0, True, "CC"), ("BMP", 50, 4.0, False, "CW")])
def test_skyscan_reconstructs_the_object(tmp_path, fmt, views, step, full, direction):
    log, a = write_skyscan(tmp_path, views=views, step=step, full=full, fmt=fmt,
                           direction=direction)
    (tmp_path / "bone__spr.bmp").write_bytes(b"BM not a projection")
    scan = open_scan(log)
    assert scan.format == "skyscan" and isinstance(scan.system.geometry, leap.ConeBeam)
    np.testing.assert_allclose(scan.angles, a)
    assert scan.metadata["Number Of Files"] == views and scan.metadata["Scanner"] == "SkyScan1272"
    assert scan.flats.shape == (3, ROWS, COLS) and scan.darks.shape == (1, ROWS, COLS)
    np.testing.assert_array_equal(scan.flat_positions, [0, 30, 60])
    att, g_hand, err_reader, err_hand = _check_reconstruction(scan, _sky_by_hand(a, direction))
    np.testing.assert_allclose(att, g_hand, atol=2e-3)
    assert err_hand < 0.2


def test_skyscan_directory_references_and_bmp_reader(tmp_path):
    log, a = write_skyscan(tmp_path, views=8, step=45.0, full=True, refs=False,
                           extra={"Reference Intensity": 57000})
    scan = open_scan(tmp_path)                              # the directory
    assert scan.darks is None and scan.flat_positions is None
    assert np.all(np.asarray(scan.flats) == 57000)
    explicit = skyscan.open_scan(log, flats=["bone_0000.tif"], darks=False)
    assert explicit.flats.shape == (1, ROWS, COLS) and explicit.darks is None
    # options: the camera's pixel size, another rotation direction, no post-alignment
    other = skyscan.open_scan(log, pixel_size="camera", rotation_direction="CW",
                              postalignment=0)
    g = other.system.geometry
    assert g.detector.pixel_width == pytest.approx(9.0e-3) and g.tau == 0.0
    np.testing.assert_allclose(g.angles, np.radians(a))
    np.testing.assert_allclose(scan.system.geometry.angles, -np.radians(a))
    # BMP: 8-bit palette, 16-bit, both row orders, read lazily by region
    rng = np.random.default_rng(3)
    img16 = rng.integers(0, 65535, (7, 9)).astype(np.uint16)
    img8 = rng.integers(0, 255, (7, 9)).astype(np.uint8)
    write_bmp(tmp_path / "a.bmp", img16)
    write_bmp(tmp_path / "b.bmp", img16[::-1], top_down=True)
    write_bmp(tmp_path / "c.bmp", img8)
    s16 = skyscan.BmpStack([tmp_path / "a.bmp", tmp_path / "b.bmp"])
    assert s16.shape == (2, 7, 9) and s16.dtype == np.uint16
    np.testing.assert_array_equal(np.asarray(s16), np.stack([img16, img16[::-1]]))
    np.testing.assert_array_equal(s16[1, 2:5, ::2], img16[::-1][2:5, ::2])
    np.testing.assert_array_equal(np.asarray(skyscan.BmpStack([tmp_path / "c.bmp"]))[0], img8)
    pil = pytest.importorskip("PIL.Image")
    rgb = np.repeat(img8[:, :, None], 3, axis=2)
    pil.fromarray(rgb).save(tmp_path / "d.bmp")
    pil.fromarray(img8).save(tmp_path / "e.bmp")
    np.testing.assert_array_equal(skyscan.BmpStack([tmp_path / "d.bmp"])[0], img8)
    np.testing.assert_array_equal(skyscan.BmpStack([tmp_path / "e.bmp"])[0], img8)
    with pytest.raises(ValueError, match=r"a\.bmp.*unlike"):
        skyscan.BmpStack([tmp_path / "c.bmp", tmp_path / "a.bmp"])


def test_skyscan_flat_corrected_16_bit_white_level_is_2_to_the_depth(tmp_path):
    """Issue 49: flat-corrected 16-bit images, neither flats nor "Reference Intensity":
    the white level is 2**"Depth (bits)", so the attenuation is the line integrals (not
    −log of the counts, about −11) and the object reconstructs."""
    a = np.arange(60) * 6.0
    log, _ = write_skyscan(tmp_path, views=60, step=6.0, full=True, flat_corrected=True)
    assert "Reference Intensity" not in log.read_text()
    assert not [p for p in os.listdir(tmp_path) if "flat" in p or "dark" in p]
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingWhiteLevelWarning)
        scan = open_scan(log)
    assert scan.darks is None and np.all(np.asarray(scan.flats) == 2.0 ** 16)
    att, g_hand, err_reader, err_hand = _check_reconstruction(scan, _sky_by_hand(a))
    print(f"skyscan flat-corrected: attenuation {att.min():.3g} to {att.max():.3g}; error "
          f"{err_reader:.4f}, by hand {err_hand:.4f}")
    assert att.min() >= 0.0 and att.max() < 5.0
    np.testing.assert_allclose(att, g_hand, atol=2e-3)
    assert err_hand < 0.2
    # "Reference Intensity" comes before the depth; white_level= before both
    (tmp_path / "ri").mkdir()
    log2, _ = write_skyscan(tmp_path / "ri", views=4, step=90.0, full=True,
                            flat_corrected=True, extra={"Reference Intensity": 60000})
    assert np.all(np.asarray(open_scan(log2).flats) == 60000)
    assert np.all(np.asarray(skyscan.open_scan(log2, white_level=1234.5).flats) == 1234.5)
    with pytest.raises(ValueError, match="flats= images or white_level="):
        skyscan.open_scan(log2, flats=["bone_0000.tif"], white_level=1.0)
    with pytest.raises(ScanFormatError, match=r"bone\.log: the white level \(white_level=\)"):
        skyscan.open_scan(log2, white_level=-3)
    # neither: opened with a warning naming the option (once), attenuation -log(counts)
    (tmp_path / "none").mkdir()
    log3, _ = write_skyscan(tmp_path / "none", views=4, step=90.0, full=True,
                            flat_corrected=True, drop=("Depth (bits)",))
    with pytest.warns(MissingWhiteLevelWarning, match=r"bone\.log: no flat frames.*"
                      r"white_level= or flats=") as caught:
        scan = open_scan(log3)
    assert len(caught) == 1 and scan.flats is None
    # raw images (Flat Field Correction=OFF) without flat images: 2**Depth, with a warning
    (tmp_path / "raw").mkdir()
    log5, _ = write_skyscan(tmp_path / "raw", views=4, step=90.0, full=True, refs=False)
    with pytest.warns(MissingWhiteLevelWarning, match=r"Flat Field Correction=OFF and no "
                      r"flat\* images.*pass flats= or white_level="):
        assert np.all(np.asarray(open_scan(log5).flats) == 2.0 ** 16)
    log4, _ = write_skyscan(tmp_path / "none", views=4, step=90.0, full=True,
                            flat_corrected=True, extra={"Depth (bits)": 40}, prefix="bad_")
    with pytest.raises(ScanFormatError, match=r"bad\.log: Depth \(bits\) = 40"):
        open_scan(log4)


def test_skyscan_bad_inputs_name_the_file_and_key(tmp_path):
    def fresh(name, **kw):
        d = tmp_path / name
        d.mkdir()
        kw.setdefault("views", 6)
        kw.setdefault("step", 30.0)
        kw.setdefault("full", False)
        return write_skyscan(d, **kw)[0]

    log = fresh("missing_key", drop=("Object to Source (mm)",))
    with pytest.raises(ScanFormatError, match=r"bone\.log: the key 'Object to Source \(mm\)'"):
        open_scan(log)
    log = fresh("direction", extra={"Rotation Direction": "UP"})
    with pytest.raises(ScanFormatError, match=r"bone\.log: Rotation Direction = 'UP'"):
        open_scan(log)
    log = fresh("not_full", extra={"Use 360 Rotation": "YES"})
    with pytest.raises(ScanFormatError, match=r"bone\.log: Use 360 Rotation = YES but Number"):
        open_scan(log)
    log = fresh("missing_file", fmt="BMP")
    os.remove(log.parent / "bone_0003.bmp")
    with pytest.raises(FileNotFoundError, match=r"bone\.log.*bone_0003\.bmp.*Number of Files"):
        open_scan(log)
    log = fresh("too_many", extra={"Number Of Files": 5})
    with pytest.raises(ScanFormatError, match=r"bone\.log: Number of Files = 5 but.*bone_0005"):
        open_scan(log)
    log = fresh("shapes", fmt="BMP")
    write_bmp(log.parent / "bone_0002.bmp", np.zeros((ROWS - 2, COLS), np.uint16))
    with pytest.raises(ScanFormatError, match=r"bone\.log: .*bone_0002\.bmp.*Filename Prefix"):
        open_scan(log)
    log = fresh("flat_shape")
    tifffile.imwrite(log.parent / "bone_flat1.tif", np.ones((ROWS, COLS + 1), np.uint16))
    with pytest.raises(ScanFormatError, match=r"bone\.log: .*bone_flat1\.tif.*flat\* files"):
        open_scan(log)
    log = fresh("format", extra={"Image Format": "JPEG"})
    with pytest.raises(ScanFormatError, match=r"bone\.log: Image Format = 'JPEG'"):
        open_scan(log)
    log = fresh("size", extra={"Number Of Rows": ROWS + 1})
    with pytest.raises(ScanFormatError, match=r"Number of Rows, Number of Columns"):
        open_scan(log)
    assert skyscan.detect(log) and not skyscan.detect(log.parent / "bone_0000.tif")
    assert not nikon.detect(log) and nikon.detect(tmp_path / "x.xtekct")
