"""NeXus NXtomo, DXchange and Zeiss Xradia readers (leap.io.scanners).

Each format gets a file set of an analytic object (two off-centre ellipsoids) simulated in
the format's own frame (its axes, angle direction, detector orientation and offsets, as
the reader's docstring cites them) and written by the format's writer (``nxtomo``), by
h5py following the documented layout (DXchange) or by a small MS-CFB writer below
(Zeiss, ``olefile`` cannot write). Opened with ``open_scan`` and reconstructed with FBP,
it must match the object as well as the same geometry set up by hand (+1e-3).
"""
import math
import pickle
import struct

import numpy as np
import pytest

import leap
from scan_checks import fov_error, line_integrals  # noqa: E402
from leap.io import open_scan
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject

h5py = pytest.importorskip("h5py")


# ============================================================ a minimal MS-CFB writer
# [MS-CFB] v3 compound file: 512-byte sectors, one FAT (its sectors listed in the
# header's DIFAT, so at most 109 FAT sectors, about 7 MB), streams under 4096 bytes in
# the mini stream (64-byte mini sectors, chained by the mini FAT), 128-byte directory
# entries whose siblings form a red-black tree ordered by name length, then upper case.
CFB_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
FREESECT, ENDOFCHAIN, FATSECT, NOSTREAM = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD, 0xFFFFFFFF
SECTOR, MINI_SECTOR, MINI_CUTOFF = 512, 64, 4096


def write_cfb(path, streams):
    """Write ``streams`` ({'Storage/Sub/Stream': bytes}) as a compound file."""
    nodes = [{"name": "Root Entry", "kind": 5, "children": [], "data": b""}]
    index = {(): 0}
    for full, data in streams.items():
        parts = tuple(full.split("/"))
        for depth in range(1, len(parts) + 1):
            key = parts[:depth]
            if key in index:
                assert depth < len(parts), f"duplicate stream {full}"
                continue
            assert len(key[-1]) <= 31 and not set(key[-1]) & set("/\\:!")
            index[key] = len(nodes)
            last = depth == len(parts)
            nodes.append({"name": key[-1], "kind": 2 if last else 1, "children": [],
                          "data": bytes(data) if last else b""})
            nodes[index[key[:-1]]]["children"].append(index[key])
    fat, body, mini, minifat = [], bytearray(), bytearray(), []

    def chain(nbytes, content):                  # regular sectors, contiguous
        n = -(-nbytes // SECTOR)
        start = len(fat)
        fat.extend(start + i + 1 if i < n - 1 else ENDOFCHAIN for i in range(n))
        body.extend(bytes(content).ljust(n * SECTOR, b"\0"))
        return start if n else ENDOFCHAIN

    for node in nodes:
        node.update(start=0, size=len(node["data"]))
        if node["kind"] == 2 and node["size"] >= MINI_CUTOFF:
            node["start"] = chain(node["size"], node["data"])
        elif node["kind"] == 2:
            n = -(-node["size"] // MINI_SECTOR)
            first = len(minifat)
            node["start"] = first if n else ENDOFCHAIN
            minifat.extend(first + i + 1 if i < n - 1 else ENDOFCHAIN for i in range(n))
            mini.extend(node["data"].ljust(n * MINI_SECTOR, b"\0"))
    nodes[0]["start"], nodes[0]["size"] = chain(len(mini), mini), len(mini)
    minifat_bytes = struct.pack(f"<{len(minifat)}I", *minifat)
    n_minifat = -(-len(minifat_bytes) // SECTOR)
    minifat_start = chain(len(minifat_bytes), minifat_bytes.ljust(n_minifat * SECTOR, b"\xff"))

    links = {i: [NOSTREAM, NOSTREAM, NOSTREAM, 1] for i in range(len(nodes))}  # l, r, child, color

    def tree(ids, depth, deepest):               # balanced: the median on top
        if not ids:
            return NOSTREAM
        mid = len(ids) // 2
        me = ids[mid]
        links[me][0] = tree(ids[:mid], depth + 1, deepest)
        links[me][1] = tree(ids[mid + 1:], depth + 1, deepest)
        links[me][3] = 0 if depth == deepest and depth > 0 else 1   # red only at the bottom
        return me

    for i, node in enumerate(nodes):
        kids = sorted(node["children"], key=lambda k: (len(nodes[k]["name"]),
                                                         nodes[k]["name"].upper()))
        links[i][2] = tree(kids, 0, int(math.log2(len(kids))) if kids else 0)
    entries = bytearray()
    for i, node in enumerate(nodes):
        name = node["name"].encode("utf-16-le") + b"\0\0"
        left, right, child, color = links[i]
        entries += name.ljust(64, b"\0") + struct.pack("<HBBIII", len(name), node["kind"],
                                                       color, left, right, child)
        entries += bytes(16 + 4 + 16) + struct.pack("<IQ", node["start"], node["size"])
    while len(entries) % SECTOR:                 # unused entries fill the last sector
        entries += bytes(64) + struct.pack("<HBBIII", 0, 0, 0, NOSTREAM, NOSTREAM, NOSTREAM)
        entries += bytes(36) + struct.pack("<IQ", 0, 0)
    dir_start = chain(len(entries), entries)
    n_fat = 1
    while n_fat * (SECTOR // 4) < len(fat) + n_fat:
        n_fat += 1
    assert n_fat <= 109, "this writer keeps the FAT in the header's DIFAT (files under 7 MB)"
    fat_sectors = list(range(len(fat), len(fat) + n_fat))
    fat.extend([FATSECT] * n_fat)
    fat.extend([FREESECT] * (n_fat * SECTOR // 4 - len(fat)))
    header = CFB_SIGNATURE + bytes(16) + struct.pack("<HHHHH", 0x3E, 3, 0xFFFE, 9, 6)
    header += bytes(6) + struct.pack("<9I", 0, n_fat, dir_start, 0, MINI_CUTOFF,
                                     minifat_start if minifat else ENDOFCHAIN, n_minifat,
                                     ENDOFCHAIN, 0)
    header += struct.pack("<109I", *(fat_sectors + [FREESECT] * (109 - n_fat)))
    assert len(header) == SECTOR
    with open(path, "wb") as fh:
        fh.write(header + body + struct.pack(f"<{len(fat)}I", *fat))


def test_cfb_writer_is_read_by_olefile(tmp_path):
    olefile = pytest.importorskip("olefile")
    streams = {"Small": b"abc", "A/B/C": bytes(range(256)) * 20, "A/Tiny": b"x" * 65,
               "Zed": struct.pack("<f", 1.5)}
    streams.update({f"Many/S{k}": bytes([k]) * (k * 37 % 5000 + 1) for k in range(40)})
    write_cfb(tmp_path / "t.cfb", streams)
    with olefile.OleFileIO(str(tmp_path / "t.cfb"), raise_defects=olefile.DEFECT_INCORRECT) as ole:
        for name, data in streams.items():
            assert ole.get_size(name) == len(data)
            assert ole.openstream(name).read() == data, name
        assert sorted("/".join(e) for e in ole.listdir()) == sorted(streams)


# ==================================================================== shared helpers
def _phantom(r, h):
    """Two off-centre ellipsoids inside a field of view of radius ``r`` and height ``h``
    (mm), neither symmetric about an axis nor about the centre."""
    return Phantom([
        PhantomObject(kind=ELLIPSOID, centre=(0.35 * r, -0.2 * r, 0.08 * h),
                      radii=(0.35 * r, 0.22 * r, 0.25 * h), value=0.6 / r),
        PhantomObject(kind=ELLIPSOID, centre=(-0.3 * r, 0.32 * r, -0.1 * h),
                      radii=(0.18 * r, 0.25 * r, 0.2 * h), value=1.0 / r),
    ])


def _by_hand(geometry, phantom):
    """Error of FBP of exact line integrals of ``geometry`` set up by hand."""
    s = default_system(geometry)
    g = line_integrals(geometry, phantom).astype(np.float32)
    return fov_error(s, s.fbp(g), phantom)


def _from_file(scan, phantom):
    g = np.asarray(scan.attenuation(), dtype=np.float32)
    return fov_error(scan.system, scan.system.fbp(g), phantom)


def _integrals(phantom, origins, directions):
    shape = origins.shape[:-1]
    o = np.broadcast_to(origins, np.broadcast_shapes(origins.shape, directions.shape))
    d = np.broadcast_to(directions, o.shape)
    return phantom.line_integrals(o.reshape(-1, 3), d.reshape(-1, 3)).reshape(
        np.broadcast_shapes(shape, directions.shape[:-1]))


# ============================================================================ NXtomo
# McStas (NeXus): z along the beam, y up, x = y × z; detector columns along +x, rows
# along +y; rotation_angle ω turns the sample right-handed about +y. A sample point p at
# ω is at R_y(ω)·p in the lab; the reader maps the sample frame to leap's by
# (x, y, z) -> (−x, z, y).
NX = dict(rows=24, cols=64, views=72, axis=3.5)          # axis: x_rotation_axis_pixel_position


def _nx_rays(omega_deg, rows, cols, px, py, axis, sod=None, odd=None):
    """Origins and directions (views, rows, cols, 3) in leap's frame of the pixels of an
    NXtomo detector (stored order) at sample angles ``omega_deg``."""
    c = 0.5 * (cols - 1) + axis
    x = (np.arange(cols) - c) * px
    y = (np.arange(rows) - 0.5 * (rows - 1)) * py
    pix = np.zeros((rows, cols, 3))
    pix[..., 0], pix[..., 1] = x[None, :], y[:, None]
    if sod is None:
        org, d = pix, np.broadcast_to([0.0, 0.0, 1.0], pix.shape)
    else:
        pix[..., 2] = odd
        org = np.broadcast_to([0.0, 0.0, -sod], pix.shape)
        d = pix - org
    to_leap = np.array([[-1.0, 0, 0], [0, 0, 1], [0, 1, 0]])
    out_o, out_d = [], []
    for w in np.deg2rad(omega_deg):
        ry = np.array([[math.cos(w), 0, math.sin(w)], [0, 1, 0], [-math.sin(w), 0, math.cos(w)]])
        m = to_leap @ ry.T                         # lab -> sample (R_y(ω)ᵀ) -> leap
        out_o.append(org @ m.T)
        out_d.append(d @ m.T)
    return np.stack(out_o), np.stack(out_d)


def _write_nxtomo(path, cone, *, flip_lr=False, rng=None):
    """An NXtomo file written by ``nxtomo``: 2 darks, 2 flats, the projections, 2 flats
    (the beam brighter by 10 %), one invalid frame. Returns (phantom, hand geometry)."""
    nxtomo_app = pytest.importorskip("nxtomo.application.nxtomo")
    pint = pytest.importorskip("pint")
    ureg = pint.get_application_registry()
    rows, cols, n, axis = NX["rows"], NX["cols"], NX["views"], NX["axis"]
    span = 360.0 if cone else 180.0
    omega = np.arange(n) * span / n + 5.0
    if cone:
        sod, odd, px = 120.0, 240.0, 0.15                 # mm
        mag = (sod + odd) / sod
        r = sod * math.sin(math.atan((0.5 * cols - abs(axis) - 1) * px / (sod + odd)))
        h = rows * px / mag
    else:
        sod = odd = None
        px = 0.05
        r, h = (0.5 * cols - abs(axis) - 1) * px, rows * px
    phantom = _phantom(r, 0.8 * h)
    org, d = _nx_rays(omega, rows, cols, px, px, axis, sod, odd)
    g = _integrals(phantom, org, d)
    f0, f1, dark = 1000.0, 1100.0, 30.0
    w = (np.arange(n) + 0.5) / n
    flat_v = f0 + (f1 - f0) * w
    counts = flat_v[:, None, None] * np.exp(-g) + dark
    if flip_lr:
        counts = counts[:, :, ::-1]
    frames = np.concatenate([np.full((2, rows, cols), dark), np.full((2, rows, cols), f0 + dark),
                             counts, np.full((2, rows, cols), f1 + dark),
                             np.zeros((1, rows, cols))]).astype(np.float32)
    keys = np.array([2, 2, 1, 1] + [0] * n + [1, 1, 3])
    angles = np.concatenate([[omega[0]] * 4, omega, [omega[-1]] * 3])
    nx = nxtomo_app.NXtomo()
    nx.instrument.detector.data = frames
    nx.instrument.detector.image_key_control = keys
    nx.sample.rotation_angle = angles * ureg.degree
    nx.instrument.detector.x_pixel_size = px * 1000 * ureg.micrometer
    nx.instrument.detector.y_pixel_size = px * ureg.mm
    # the axis position counts in the frames as stored (mirrored when flipped)
    nx.instrument.detector.x_rotation_axis_pixel_position = -axis if flip_lr else axis
    if flip_lr:
        nx.instrument.detector.set_transformation_from_lr_flipped(True)
    if cone:
        nx.instrument.detector.distance = odd / 1000 * ureg.m
        nx.instrument.source.distance = -sod / 1000 * ureg.m       # upstream: negative
    nx.save(str(path), data_path="/entry0000", overwrite=True)
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=px, pixel_width=px,
                        center_col=(cols - 1) - (0.5 * (cols - 1) + axis))
    psi = -np.deg2rad(omega)
    hand = (leap.ConeBeam(detector=det, angles=psi, sod=sod, sdd=sod + odd) if cone
            else leap.ParallelBeam(detector=det, angles=psi))
    return phantom, hand


@pytest.mark.parametrize("cone", [False, True], ids=["parallel", "cone"])
def test_nxtomo_reconstructs_the_object(tmp_path, cone):
    path = tmp_path / "scan.nx"
    phantom, hand = _write_nxtomo(path, cone)
    scan = open_scan(path)
    assert scan.format == "nxtomo" and scan.angle_unit == "degree"
    g = scan.system.geometry
    assert isinstance(g, leap.ConeBeam if cone else leap.ParallelBeam)
    assert scan.projections.shape == (NX["views"], NX["rows"], NX["cols"])
    assert scan.flats.shape[0] == 4 and scan.darks.shape[0] == 2
    np.testing.assert_allclose(scan.flat_positions, [-0.5, -0.5, NX["views"] - 0.5,
                                                     NX["views"] - 0.5])
    np.testing.assert_allclose(g.angles, hand.angles)
    assert g.detector.center_col == pytest.approx(hand.detector.center_col)
    assert g.detector.pixel_width == pytest.approx(hand.detector.pixel_width)
    if cone:
        assert (g.sod, g.sdd) == pytest.approx((hand.sod, hand.sdd))
    err_hand = _by_hand(hand, phantom)
    err_file = _from_file(scan, phantom)
    print(f"nxtomo {'cone' if cone else 'parallel'}: error from the file {err_file:.5f}, "
          f"by hand {err_hand:.5f}")
    assert err_file <= err_hand + 1e-3
    assert err_hand < 0.5


def test_nxtomo_detector_flip_is_undone(tmp_path):
    path = tmp_path / "flipped.nx"
    phantom, hand = _write_nxtomo(path, cone=False, flip_lr=True)
    scan = open_scan(path)
    # the stored frames are mirrored, the transformation ry = 180° says so: leap reads
    # them as stored
    assert scan.system.geometry.detector.center_col == pytest.approx(
        0.5 * (NX["cols"] - 1) - NX["axis"])
    assert _from_file(scan, phantom) <= _by_hand(hand, phantom) + 1e-3


# ========================================================================= DXchange
# tomopy's parallel beam as TIGRE's loader and dxchange hand it on: theta θ unchanged,
# column i at s = (i − center)·pixel with s = x cos θ + y sin θ, row j at z.
DX = dict(rows=16, cols=64, views=90, center=29.25, pixel_um=50.0)


def _write_dxchange(path, *, theta_units=None, resolution=True, pixel_xy=False):
    rows, cols, n, c = DX["rows"], DX["cols"], DX["views"], DX["center"]
    px = DX["pixel_um"] * 1e-3
    theta = np.arange(n) * 180.0 / n
    r, h = (min(c, cols - 1 - c) - 1) * px, rows * px
    phantom = _phantom(r, 0.8 * h)
    t = np.deg2rad(theta)[:, None, None]
    s = ((np.arange(cols) - c) * px)[None, None, :]
    z = ((np.arange(rows) - 0.5 * (rows - 1)) * px)[None, :, None]
    org = np.stack(np.broadcast_arrays(s * np.cos(t), s * np.sin(t), z + 0 * t), axis=-1)
    d = np.stack(np.broadcast_arrays(-np.sin(t), np.cos(t), 0 * t), axis=-1)
    g = _integrals(phantom, org, np.broadcast_to(d, org.shape))
    white, dark = 40000.0, 100.0
    with h5py.File(path, "w") as f:
        counts = np.round(white * np.exp(-g) + dark).astype(np.uint16)
        f.create_dataset("exchange/data", data=counts)
        f.create_dataset("exchange/data_white",
                         data=np.full((3, rows, cols), white + dark, np.uint16))
        f.create_dataset("exchange/data_dark", data=np.full((2, rows, cols), dark, np.uint16))
        th = f.create_dataset("exchange/theta", data=theta if theta_units != "rad"
                              else np.deg2rad(theta))
        if theta_units:
            th.attrs["units"] = theta_units
        if resolution:
            res = f.create_dataset("measurement/instrument/detection_system/objective/resolution",
                                   data=DX["pixel_um"])
            res.attrs["units"] = "microns"
        if pixel_xy:
            f.create_dataset("measurement/instrument/detector/actual_pixel_size_x",
                             data=DX["pixel_um"])
            f.create_dataset("measurement/instrument/detector/actual_pixel_size_y",
                             data=DX["pixel_um"])
        f.create_dataset("measurement/instrument/monochromator/energy", data=25.0)
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=px, pixel_width=px,
                        center_col=c)
    return phantom, leap.ParallelBeam(detector=det, angles=np.deg2rad(theta))


@pytest.mark.parametrize("units", [None, "deg", "rad"])
def test_dxchange_reconstructs_the_object(tmp_path, units):
    path = tmp_path / "scan.h5"
    phantom, hand = _write_dxchange(path, theta_units=units)
    scan = open_scan(path, center_col=DX["center"])
    assert scan.format == "dxchange"
    assert scan.angle_unit == ("radian" if units == "rad" else "degree")
    g = scan.system.geometry
    assert isinstance(g, leap.ParallelBeam)
    np.testing.assert_allclose(g.angles, hand.angles, atol=1e-12)
    assert g.detector.pixel_width == pytest.approx(0.05)
    assert scan.metadata["pixel_size_source"].endswith("objective/resolution")
    assert scan.metadata["/measurement/instrument/monochromator/energy"] == 25.0
    err_hand = _by_hand(hand, phantom)
    err_file = _from_file(scan, phantom)
    print(f"dxchange theta {units}: error from the file {err_file:.5f}, by hand {err_hand:.5f}")
    assert err_file <= err_hand + 1e-3
    assert err_hand < 0.5


def test_dxchange_pixel_size_sources(tmp_path):
    _write_dxchange(tmp_path / "xy.h5", resolution=False, pixel_xy=True)
    scan = open_scan(tmp_path / "xy.h5")
    assert scan.system.geometry.detector.pixel_width == pytest.approx(0.05)  # µm, no units
    assert scan.system.geometry.detector.center_col == pytest.approx(0.5 * (DX["cols"] - 1))
    _write_dxchange(tmp_path / "none.h5", resolution=False)
    with pytest.warns(UserWarning, match="no pixel size"):
        scan = open_scan(tmp_path / "none.h5")
    assert scan.system.geometry.detector.pixel_width == 1.0
    assert scan.metadata["pixel_size_source"].startswith("default: 1 mm")
    scan = open_scan(tmp_path / "none.h5", pixel_size=0.02)
    assert scan.system.geometry.detector.pixel_width == 0.02


# ============================================================================ Zeiss
# CIL's ZEISSDataReader frame: source at (0, −S, 0), detector centre at (0, D, 0), columns
# along +x, rows along +z (stored row 0 lowest), the system turned by −θ about z; the
# rotation axis at column (W − 1)/2 + CenterShift; PixelSize is the pixel at the axis.
ZS = dict(rows=40, cols=56, views=80, S=80.0, D=160.0, pixel_um=40.0, shift=-2.75)


def _u4(*v):
    return struct.pack(f"<{len(v)}I", *v)


def _f4(v):
    v = np.atleast_1d(np.asarray(v, np.float32))
    return v.astype("<f4").tobytes()


def _txrm_streams(images, angles, *, pixel_um, S, D, shift, reference, dtype_code=5):
    n, height, width = images.shape
    streams = {"ImageInfo/NoOfImages": _u4(n), "ImageInfo/ImageWidth": _u4(width),
               "ImageInfo/ImageHeight": _u4(height), "ImageInfo/DataType": _u4(dtype_code),
               "ImageInfo/Angles": _f4(angles), "ImageInfo/PixelSize": _f4(pixel_um),
               "ImageInfo/StoRADistance": _f4(np.full(n, -S)),
               "ImageInfo/DtoRADistance": _f4(np.full(n, D)),
               "ImageInfo/XrayGeometry": struct.pack("<i", 1),
               "ImageInfo/AcquisitionMode": struct.pack("<i", 0),
               "ImageInfo/CameraBinning": _u4(1), "ReconSettings/CenterShift": _f4(shift),
               "SampleInfo/SampleID": b"ellipsoids\0\0\0\0",
               "ReferenceData/DataType": _u4(10),
               "ReferenceData/Image": np.asarray(reference, "<f4").tobytes()}
    dt = "<u2" if dtype_code == 5 else "<f4"
    for k, img in enumerate(images):
        streams[f"ImageData{k // 100 + 1}/Image{k + 1}"] = np.asarray(img, dt).tobytes()
    return streams


def _write_zeiss(path):
    rows, cols, n = ZS["rows"], ZS["cols"], ZS["views"]
    S, D, shift = ZS["S"], ZS["D"], ZS["shift"]
    p_axis = ZS["pixel_um"] * 1e-3
    p = p_axis * (S + D) / S                               # the detector pixel, mm
    theta = -180.0 + np.arange(n) * 360.0 / n
    c = 0.5 * (cols - 1) + shift
    r = S * math.sin(math.atan((min(c, cols - 1 - c) - 1) * p / (S + D)))
    phantom = _phantom(r, 0.8 * rows * p_axis)
    pix = np.zeros((rows, cols, 3))
    pix[..., 0] = ((np.arange(cols) - c) * p)[None, :]
    pix[..., 1] = D
    pix[..., 2] = ((np.arange(rows) - 0.5 * (rows - 1)) * p)[:, None]
    src = np.array([0.0, -S, 0.0])
    org, d = [], []
    for t in np.deg2rad(-theta):                           # the system turns by −θ
        rz = np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])
        org.append(np.broadcast_to(rz @ src, pix.shape))
        d.append((pix - src) @ rz.T)
    g = _integrals(phantom, np.stack(org), np.stack(d))
    reference = np.full((rows, cols), 50000.0) * (1 + 0.02 * np.linspace(-1, 1, cols))[None, :]
    images = np.round(reference * np.exp(-g)).astype(np.uint16)
    write_cfb(path, _txrm_streams(images, theta, pixel_um=ZS["pixel_um"], S=S, D=D,
                                  shift=shift, reference=reference))
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=p, pixel_width=p,
                        center_col=c)
    return phantom, leap.ConeBeam(detector=det, angles=-np.deg2rad(theta), sod=S, sdd=S + D)


def test_zeiss_reconstructs_the_object(tmp_path):
    pytest.importorskip("olefile")
    path = tmp_path / "scan.txrm"
    phantom, hand = _write_zeiss(path)
    scan = open_scan(path)
    assert scan.format == "zeiss" and scan.darks is None and scan.flats.shape[0] == 1
    g = scan.system.geometry
    assert isinstance(g, leap.ConeBeam)
    assert (g.sod, g.sdd) == pytest.approx((hand.sod, hand.sdd))
    np.testing.assert_allclose(g.angles, hand.angles, atol=1e-6)
    assert g.detector.center_col == pytest.approx(hand.detector.center_col)
    assert g.detector.pixel_width == pytest.approx(hand.detector.pixel_width, rel=1e-6)
    assert scan.projections.dtype == np.uint16
    assert scan.projections[3, 5:9, 2].shape == (4,)
    assert scan.metadata["SampleInfo/SampleID"] == "ellipsoids"
    assert scan.metadata["ImageInfo/NoOfImages"] == ZS["views"]
    err_hand = _by_hand(hand, phantom)
    err_file = _from_file(scan, phantom)
    print(f"zeiss: error from the file {err_file:.5f}, by hand {err_hand:.5f}")
    assert err_file <= err_hand + 1e-3
    assert err_hand < 0.5


# ====================================================================== bad input
def _small_nxtomo(path, n=6):
    nxtomo_app = pytest.importorskip("nxtomo.application.nxtomo")
    ureg = pytest.importorskip("pint").get_application_registry()
    nx = nxtomo_app.NXtomo()
    nx.instrument.detector.data = np.arange((n + 2) * 12, dtype=np.uint16).reshape(n + 2, 3, 4)
    nx.instrument.detector.image_key_control = np.array([1] + [0] * n + [2])
    nx.sample.rotation_angle = np.arange(n + 2) * 10.0 * ureg.degree
    nx.instrument.detector.x_pixel_size = 1e-5 * ureg.m
    nx.instrument.detector.y_pixel_size = 1e-5 * ureg.m
    nx.save(str(path), data_path="/entry0000", overwrite=True)
    return str(path)


def _edit(path, name, data=None, **attrs):
    """Replace (data given), delete (data None, no attrs) or re-attribute a dataset."""
    with h5py.File(path, "a") as f:
        if data is None and not attrs:
            del f[name]
            return
        if data is not None:
            old = dict(f[name].attrs)
            del f[name]
            f.create_dataset(name, data=data)
            f[name].attrs.update({k: v for k, v in old.items() if k != "target"})
        f[name].attrs.update(attrs)


def test_nxtomo_detection_and_small_file(tmp_path):
    path = _small_nxtomo(tmp_path / "a.nx")
    from leap.io.scanners import dxchange, nxtomo, zeiss
    assert nxtomo.detect(path) and not dxchange.detect(path) and not zeiss.detect(path)
    (tmp_path / "b.nx").write_text("not HDF5")
    assert not nxtomo.detect(tmp_path / "b.nx")
    scan = open_scan(path)
    assert scan.projections.shape == (6, 3, 4) and np.asarray(scan.projections).dtype == np.uint16
    # frames 1..6, columns reversed (leap's column axis is −x), read lazily region by region
    stored = np.arange(8 * 12, dtype=np.uint16).reshape(8, 3, 4)
    expected = stored[1:7, :, ::-1]
    proj = pickle.loads(pickle.dumps(scan.projections))
    np.testing.assert_array_equal(np.asarray(proj), expected)
    for key in ((slice(1, 4), slice(0, 2), slice(1, 3)), (2, 1), (slice(None), 0, 3),
                (np.array([5, 0]), slice(None), slice(None, None, -2)), (Ellipsis, -1)):
        np.testing.assert_array_equal(proj[key], expected[key])
    np.testing.assert_array_equal(np.asarray(scan.flats), stored[:1, :, ::-1])
    np.testing.assert_array_equal(np.asarray(scan.darks), stored[7:, :, ::-1])
    assert scan.system.geometry.detector.pixel_width == pytest.approx(0.01)
    np.testing.assert_allclose(scan.angles, np.arange(1, 7) * 10.0)
    assert scan.flat_positions.tolist() == [-0.5] and scan.dark_positions.tolist() == [5.5]
    assert scan.metadata["instrument/detector/x_pixel_size"] == pytest.approx(1e-5)
    # an alignment frame (image_key_control -1) is left out
    _edit(path, "entry0000/instrument/detector/image_key_control",
          np.array([1, 0, 0, 0, 0, 0, -1, 2]))
    assert open_scan(path).projections.shape == (5, 3, 4)


DET = "entry0000/instrument/detector/"


@pytest.mark.parametrize("edits, message", [
    ([("entry0000/sample/rotation_angle",)], "/entry0000/sample/rotation_angle is missing"),
    ([(DET + "image_key_control",), (DET + "image_key",)], "image_key is missing"),
    ([("entry0000/sample/rotation_angle", np.arange(7.0))],
     "rotation_angle holds 7 angles but .*data holds 8 frames"),
    ([(DET + "image_key_control", np.array([1, 0, 0, 0, 0, 0, 0]))],
     "image_key_control holds 7 keys but .*8 frames"),
    ([("entry0000/sample/rotation_angle", np.array([0, 10, 20, 40, 30, 50, 60, 70.0]))],
     "rotation_angle are not monotonic"),
    ([(DET + "image_key_control", np.array([1, 0, 0, 7, 0, 0, 0, 2]))],
     "unknown image keys \\[7\\]"),
    ([(DET + "x_pixel_size", 1e-5, "furlong")], "x_pixel_size has units 'furlong'"),
    ([("entry0000/sample/rotation_angle", np.arange(8.0), "gradian")],
     "rotation_angle has units 'gradian'"),
    ([(DET + "x_pixel_size",)], "x_pixel_size is missing"),
    ([(DET + "data",)], "/entry0000/instrument/detector/data is missing"),
])
def test_nxtomo_bad_input_names_file_and_dataset(tmp_path, edits, message):
    path = _small_nxtomo(tmp_path / "bad.nx")
    for edit in edits:           # (name,) deletes; (name, data[, units]) replaces
        _edit(path, edit[0], *edit[1:2], **({"units": edit[2]} if len(edit) == 3 else {}))
    with pytest.raises(ScanFormatError, match=message) as info:
        open_scan(path)
    assert "bad.nx" in str(info.value)


def test_nxtomo_without_image_key_is_refused_or_read_from_nxdata(tmp_path):
    """Issue 53: frames without image_key cannot be told apart (flat, projections, dark
    here); a file with no image_key anywhere is refused naming the dataset, one whose
    only image_key is in its NXdata group is read from there."""
    path = _small_nxtomo(tmp_path / "nokey.nx")
    with h5py.File(path, "a") as f:
        keys = f[DET + "image_key_control"][()]
        names = []
        f.visit(names.append)                  # (soft links in NXdata are not visited)
        for name in names + ["entry0000/data/image_key", "entry0000/data/image_key_control"]:
            if name.rsplit("/", 1)[-1].startswith("image_key") and name in f:
                del f[name]
        left = []
        f.visit(left.append)
        assert not [n for n in left if "image_key" in n]
    with pytest.raises(ScanFormatError, match=r"nokey\.nx: the dataset /entry0000/instrument/"
                       r"detector/image_key is missing .*NXtomo requires it"):
        open_scan(path)
    # the same keys as a dataset of the entry's NXdata group: read from there
    with h5py.File(path, "a") as f:
        f["entry0000/data"].create_dataset("image_key", data=keys)
    scan = open_scan(path)
    stored = np.arange(8 * 12, dtype=np.uint16).reshape(8, 3, 4)
    assert scan.projections.shape == (6, 3, 4)
    np.testing.assert_array_equal(np.asarray(scan.flats), stored[:1, :, ::-1])
    np.testing.assert_array_equal(np.asarray(scan.darks), stored[7:, :, ::-1])
    # NXdata keys for another number of frames are refused, not matched to these
    with h5py.File(path, "a") as f:
        del f["entry0000/data/image_key"]
        f["entry0000/data"].create_dataset("image_key", data=keys[:-1])
    with pytest.raises(ScanFormatError, match=r"data/image_key holds 7 keys but .*8 frames"):
        open_scan(path)


def test_nxtomo_lengths_need_units_and_entries_a_choice(tmp_path):
    path = _small_nxtomo(tmp_path / "c.nx")
    with h5py.File(path, "a") as f:
        del f["entry0000/instrument/detector/x_pixel_size"].attrs["units"]
    with pytest.raises(ScanFormatError, match="x_pixel_size has no 'units'"):
        open_scan(path)
    path = _small_nxtomo(tmp_path / "d.nx")
    with h5py.File(path, "a") as f:
        f.copy("entry0000", "entry0001")
    with pytest.raises(ScanFormatError, match="several NXtomo entries"):
        open_scan(path)
    assert open_scan(path, entry="entry0001").metadata["entry"] == "/entry0001"
    with pytest.raises(ScanFormatError, match="no entry 'entry9'"):
        open_scan(path, entry="entry9")
    # a cone beam needs the sample-detector distance
    path = _small_nxtomo(tmp_path / "e.nx")
    with h5py.File(path, "a") as f:
        f["entry0000/instrument/source"].create_dataset("distance", data=-0.1)
        f["entry0000/instrument/source/distance"].attrs["units"] = "m"
    with pytest.raises(ScanFormatError, match="detector/distance"):
        open_scan(path)


def _small_dxchange(path, n=5):
    with h5py.File(path, "w") as f:
        f.create_dataset("exchange/data", data=np.full((n, 3, 4), 50, np.uint16))
        f.create_dataset("exchange/data_white", data=np.full((2, 3, 4), 100, np.uint16))
        f.create_dataset("exchange/data_dark", data=np.zeros((1, 3, 4), np.uint16))
        f.create_dataset("exchange/theta", data=np.arange(n) * 36.0)
    return str(path)


@pytest.mark.parametrize("edit, message", [
    (("exchange/data",), "/exchange/data is missing"),
    (("exchange/theta",), "/exchange/theta is missing"),
    (("exchange/theta", np.arange(4.0)), "theta holds 4 angles but /exchange/data holds 5"),
    (("exchange/theta", np.array([0, 36, 72, 70, 144.0])), "theta are not monotonic"),
    (("exchange/theta", np.arange(5.0), "grad"), "theta has units 'grad'"),
    (("exchange/data_white", np.ones((2, 3, 5), np.uint16)),
     "data_white holds images of \\(3, 5\\) pixels but /exchange/data of \\(3, 4\\)"),
    (("exchange/data_dark", np.ones((3, 4), np.uint16)), "data_dark must be a 3-D"),
])
def test_dxchange_bad_input_names_file_and_dataset(tmp_path, edit, message):
    path = _small_dxchange(tmp_path / "bad.h5")
    if len(edit) == 1:
        _edit(path, edit[0])
    else:
        _edit(path, edit[0], edit[1], **({"units": edit[2]} if len(edit) == 3 else {}))
    with pytest.raises(ScanFormatError, match=message) as info:
        open_scan(path, format="dxchange", pixel_size=1.0)
    assert "bad.h5" in str(info.value)


def test_dxchange_rotation_from_process_group(tmp_path):
    path = _small_dxchange(tmp_path / "r.h5")
    _edit(path, "exchange/theta")
    with h5py.File(path, "a") as f:
        for k, v in (("rotation_start", 10.0), ("rotation_step", 0.5), ("num_angles", 5)):
            f.create_dataset(f"process/acquisition/rotation/{k}", data=v)
    from leap.io.scanners import dxchange, nxtomo
    assert dxchange.detect(path) and not nxtomo.detect(path)
    scan = open_scan(path, pixel_size=0.01, center_col=1.25)
    np.testing.assert_allclose(scan.angles, [10, 10.5, 11, 11.5, 12])
    assert scan.system.geometry.detector.center_col == 1.25
    assert scan.flats.shape == (2, 3, 4) and scan.darks.shape == (1, 3, 4)
    with h5py.File(path, "a") as f:
        f["process/acquisition/rotation/num_angles"][()] = 6
    with pytest.raises(ScanFormatError, match="num_angles is 6 but /exchange/data holds 5"):
        open_scan(path, pixel_size=0.01)


def _small_txrm(path, n=4, shape=(3, 5), **change):
    images = np.arange(n * shape[0] * shape[1], dtype=np.uint16).reshape((n,) + shape)
    streams = _txrm_streams(images, np.arange(n) * 90.0 / n, pixel_um=10.0, S=50.0, D=100.0,
                            shift=0.0, reference=np.full(shape, 1000.0))
    for k, v in change.items():
        k = k.replace("__", "/")
        if v is None:
            del streams[k]
        else:
            streams[k] = v
    write_cfb(path, streams)
    return str(path)


def test_zeiss_detection_and_many_images(tmp_path):
    pytest.importorskip("olefile")
    from leap.io.scanners import dxchange, nxtomo, zeiss
    path = _small_txrm(tmp_path / "a.txrm", n=105)
    assert zeiss.detect(path) and not nxtomo.detect(path) and not dxchange.detect(path)
    (tmp_path / "b.txrm").write_text("not OLE")
    assert not zeiss.detect(tmp_path / "b.txrm")
    with pytest.raises(ScanFormatError, match="b.txrm: is not an OLE compound file"):
        open_scan(tmp_path / "b.txrm", format="zeiss")
    scan = open_scan(path)
    assert scan.projections.shape == (105, 3, 5)
    expected = np.arange(105 * 15, dtype=np.uint16).reshape(105, 3, 5)
    np.testing.assert_array_equal(scan.projections[99:103], expected[99:103])  # ImageData2
    np.testing.assert_array_equal(np.asarray(scan.projections), expected)
    np.testing.assert_array_equal(scan.projections[104, 2], expected[104, 2])
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(scan.projections))[7:9, :, 1:4],
                                  expected[7:9, :, 1:4])
    g = scan.system.geometry
    assert g.detector.pixel_width == pytest.approx(0.01 * 150 / 50)
    np.testing.assert_allclose(np.asarray(scan.flats), 1000.0)


@pytest.mark.parametrize("change, message", [
    ({"ImageInfo__Angles": None}, "the stream ImageInfo/Angles is missing"),
    ({"ImageInfo__NoOfImages": _u4(5)}, "the stream ImageData1/Image5 is missing"),
    ({"ImageInfo__NoOfImages": _u4(3)}, "ImageData1/Image4 exists but .*NoOfImages says 3"),
    ({"ImageInfo__Angles": _f4([0, 10, 20])}, "ImageInfo/Angles holds 3 values .*4 expected"),
    ({"ImageInfo__Angles": _f4([0, 10, 5, 20])}, "ImageInfo/Angles are not monotonic"),
    ({"ImageData1__Image3": np.zeros((4, 5), "<u2").tobytes()},
     "ImageData1/Image3 holds 40 bytes.*mixed shapes"),
    ({"ReferenceData__Image": np.zeros((3, 4), "<f4").tobytes()},
     "ReferenceData/Image holds 48 bytes.*mixed shapes"),
    ({"ImageInfo__DataType": _u4(7)}, "ImageInfo/DataType is 7"),
    ({"ImageInfo__AcquisitionMode": struct.pack("<i", 10)}, "reconstruction, not projections"),
    ({"ImageInfo__StoRADistance": None}, "ImageInfo/StoRADistance is missing"),
])
def test_zeiss_bad_input_names_file_and_stream(tmp_path, change, message):
    pytest.importorskip("olefile")
    path = _small_txrm(tmp_path / "bad.txrm", **change)
    with pytest.raises(ScanFormatError, match=message) as info:
        open_scan(path)
    assert "bad.txrm" in str(info.value)


def test_zeiss_alignment_shifts_are_reported(tmp_path):
    pytest.importorskip("olefile")
    path = _small_txrm(tmp_path / "s.txrm", **{"Alignment__X-Shifts": _f4([0, 1, 0, 0])})
    with pytest.warns(UserWarning, match="alignment shifts"):
        scan = open_scan(path, center_shift=1.5)
    assert scan.system.geometry.detector.center_col == pytest.approx(2 + 1.5)
    assert scan.metadata["Alignment/X-Shifts"] == [0, 1, 0, 0]


# ====================================================== scans without a white level
def _without_flats(kind, tmp_path):
    """A small file of ``kind`` with no flat frames; returns (path, what is missing)."""
    if kind == "dxchange":
        path = _small_dxchange(tmp_path / "noflat.h5")
        _edit(path, "exchange/data_white")
        return path, "no /exchange/data_white"
    if kind == "nxtomo":
        path = _small_nxtomo(tmp_path / "noflat.nx")
        _edit(path, DET + "image_key_control", np.array([2] + [0] * 7))
        return path, "no frame of /entry0000/instrument/detector/image_key_control is a flat"
    pytest.importorskip("olefile")
    return _small_txrm(tmp_path / "noflat.txrm", ReferenceData__Image=None), \
        "no ReferenceData/Image"


@pytest.mark.parametrize("kind", ["dxchange", "nxtomo", "zeiss"])
def test_scan_without_flats_warns_once_naming_white_level(tmp_path, kind):
    """Issue 49: no flat and no white level must not give -log(counts) silently."""
    import warnings
    from leap.io.scanners._common import MissingWhiteLevelWarning
    path, missing = _without_flats(kind, tmp_path)
    options = {"pixel_size": 1.0} if kind == "dxchange" else {}
    with pytest.warns(MissingWhiteLevelWarning, match=f"noflat.*: no flat frames .*{missing}"
                      ".*pass white_level=") as caught:
        scan = open_scan(path, **options)
    assert len([w for w in caught if w.category is MissingWhiteLevelWarning]) == 1
    assert scan.flats is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingWhiteLevelWarning)
        scan = open_scan(path, white_level=300.0, **options)
    shape = scan.projections.shape[1:]
    assert scan.flats.shape == (1,) + shape and np.all(np.asarray(scan.flats) == 300.0)
    raw = np.asarray(scan.projections, np.float64)
    dark = 0.0 if scan.darks is None else np.asarray(scan.darks, np.float64).mean(axis=0)
    ok = raw > dark + 0.5                   # (the floor of -log is not tested here)
    assert ok.sum() > ok.size // 2
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = -np.log((raw - dark) / (300.0 - dark))
    np.testing.assert_allclose(np.asarray(scan.attenuation())[ok], expected[ok], rtol=1e-5,
                               atol=1e-5)
