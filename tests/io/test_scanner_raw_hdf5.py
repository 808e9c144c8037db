"""Raw NeXus / HDF5 by path (leap.io.scanners.raw_hdf5).

A scan in Diamond's DIAD layout (as httomo's ``standard_tomo`` loader reads it): the
detector's own HDF5 file holds the frames at ``/entry/data/data``; the NeXus file links
to them from the NXdata group ``/entry/imaging`` and from the NXdetector
``/entry/instrument/imaging`` (external links), keeps ``image_key`` (2 darks, 1 flats, 0
projections) in the NXdetector and the angles in another NXdata group
(``/entry/imaging_sum/gts_theta_value``). The frames are simulated in tomopy's parallel
beam (the reader's default convention, as the DXchange tests do): column i at
s = (i − c)·pixel with s = x cos θ + y sin θ, row j at z, rays along (−sin θ, cos θ, 0).
"""
import pickle

import numpy as np
import pytest

import leap
from scan_checks import fov_error, line_integrals  # noqa: E402
from leap.io import open_scan
from leap.io.scanners import MissingWhiteLevelWarning, raw_hdf5
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject

h5py = pytest.importorskip("h5py")

P = dict(rows=16, cols=64, views=90, center=30.5, pixel_um=50.0, darks=2, flats=3)
DETECTOR_FILE = "k11-1234-imaging.h5"


def _phantom(r, h):
    """Two off-centre ellipsoids inside a field of view of radius ``r``, height ``h``."""
    return Phantom([
        PhantomObject(kind=ELLIPSOID, centre=(0.35 * r, -0.2 * r, 0.08 * h),
                      radii=(0.35 * r, 0.22 * r, 0.25 * h), value=0.6 / r),
        PhantomObject(kind=ELLIPSOID, centre=(-0.3 * r, 0.32 * r, -0.1 * h),
                      radii=(0.18 * r, 0.25 * r, 0.2 * h), value=1.0 / r)])


def _by_hand(geometry, phantom):
    s = default_system(geometry)
    g = line_integrals(geometry, phantom)
    return fov_error(s, s.fbp(g.astype(np.float32)), phantom)


def _from_file(scan, phantom):
    g = np.asarray(scan.attenuation(), dtype=np.float32)
    return fov_error(scan.system, scan.system.fbp(g), phantom)


def write_diamond(folder, *, pixel=True, units="deg"):
    """The detector file and the NeXus file (``k11-1234.nxs``) of a DIAD-layout scan;
    returns (NeXus path, phantom, hand geometry, frames as stored)."""
    rows, cols, n, c = P["rows"], P["cols"], P["views"], P["center"]
    px = P["pixel_um"] * 1e-3
    theta = np.arange(n) * 180.0 / n + 0.3
    r, h = (min(c, cols - 1 - c) - 1) * px, rows * px
    phantom = _phantom(r, 0.8 * h)
    t = np.deg2rad(theta)[:, None, None]
    s = ((np.arange(cols) - c) * px)[None, None, :]
    z = ((np.arange(rows) - 0.5 * (rows - 1)) * px)[None, :, None]
    org = np.stack(np.broadcast_arrays(s * np.cos(t), s * np.sin(t), z + 0 * t), axis=-1)
    d = np.stack(np.broadcast_arrays(-np.sin(t), np.cos(t), 0 * t), axis=-1)
    d = np.broadcast_to(d, org.shape)
    g = phantom.line_integrals(org.reshape(-1, 3), d.reshape(-1, 3)).reshape(org.shape[:3])
    white, dark = 30000.0, 90.0
    counts = white * np.exp(-g) + dark
    nd, nf = P["darks"], P["flats"]
    frames = np.concatenate([np.full((nd, rows, cols), dark), np.full((nf, rows, cols),
                             white + dark), counts]).round().astype(np.uint16)
    keys = np.array([2] * nd + [1] * nf + [0] * n, np.uint8)
    angles = np.concatenate([[theta[0]] * (nd + nf), theta])
    with h5py.File(folder / DETECTOR_FILE, "w") as f:
        f.create_dataset("entry/data/data", data=frames, chunks=(1, rows, cols))
    path = folder / "k11-1234.nxs"
    link = h5py.ExternalLink(DETECTOR_FILE, "/entry/data/data")
    with h5py.File(path, "w") as f:
        entry = f.create_group("entry")
        entry.attrs["NX_class"] = "NXentry"
        inst = entry.create_group("instrument")
        inst.attrs["NX_class"] = "NXinstrument"
        det = inst.create_group("imaging")
        det.attrs["NX_class"] = "NXdetector"
        det["data"] = link
        det["image_key"] = keys
        if pixel:
            det["x_pixel_size"] = P["pixel_um"]
            det["x_pixel_size"].attrs["units"] = "um"
        inst.create_group("stage").create_dataset("gts_y", data=np.zeros(n + nd + nf))
        imaging = entry.create_group("imaging")
        imaging.attrs.update(NX_class="NXdata", signal="data")
        imaging["data"] = link
        total = entry.create_group("imaging_sum")
        total.attrs.update(NX_class="NXdata", signal="total")
        total["total"] = frames.sum(axis=(1, 2), dtype=np.float64)
        total["gts_theta_value"] = np.deg2rad(angles) if units == "rad" else angles
        if units:
            total["gts_theta_value"].attrs["units"] = units
        entry.create_group("sample").attrs["NX_class"] = "NXsample"
        entry["sample/name"] = "two ellipsoids"
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=px, pixel_width=px,
                        center_col=c)
    return path, phantom, leap.ParallelBeam(detector=det, angles=np.deg2rad(theta)), frames


PATHS = dict(data="/entry/imaging/data", image_key="/entry/instrument/imaging/image_key",
             angles="/entry/imaging_sum/gts_theta_value")


def test_diamond_layout_opens_by_paths_and_detected(tmp_path, monkeypatch):
    (tmp_path / "scan").mkdir()
    path, phantom, hand, frames = write_diamond(tmp_path / "scan")
    monkeypatch.chdir(tmp_path)          # the external link is found beside the file
    assert raw_hdf5.detect(path)
    by_paths = open_scan(path, format="hdf5", center_col=P["center"], **PATHS)
    found = open_scan(path, center_col=P["center"])
    nd, nf, n = P["darks"], P["flats"], P["views"]
    for scan in (by_paths, found):
        assert scan.format == "hdf5" and scan.angle_unit == "degree"
        assert scan.metadata["paths"]["data"] == PATHS["data"]
        assert scan.metadata["paths"]["image_key"] == PATHS["image_key"]
        assert scan.metadata["paths"]["angles"] == PATHS["angles"]
        assert scan.metadata["paths"]["pixel_size"] == "/entry/instrument/imaging/x_pixel_size"
        assert scan.metadata["/entry/sample/name"] == "two ellipsoids"
        g = scan.system.geometry
        assert isinstance(g, leap.ParallelBeam)
        np.testing.assert_allclose(g.angles, hand.angles, atol=1e-12)
        assert g.detector.pixel_width == pytest.approx(0.05)
        assert g.detector.center_col == P["center"]
        assert scan.projections.shape == (n, P["rows"], P["cols"])
        assert scan.flats.shape[0] == nf and scan.darks.shape[0] == nd
        np.testing.assert_array_equal(scan.flat_positions, [-0.5] * nf)
        np.testing.assert_array_equal(scan.projections[5:7, 3], frames[nd + nf + 5:nd + nf + 7, 3])
    assert "hdf5 scan" in found.summary() and "3 flats, 2 darks" in found.summary()
    err_hand = _by_hand(hand, phantom)
    err_paths, err_found = _from_file(by_paths, phantom), _from_file(found, phantom)
    print(f"raw hdf5 (Diamond layout): error by paths {err_paths:.5f}, detected "
          f"{err_found:.5f}, by hand {err_hand:.5f}")
    assert err_paths <= err_hand + 1e-3 and err_found <= err_hand + 1e-3
    assert err_hand < 0.5


def test_paths_that_are_not_in_the_file_are_refused_naming_them(tmp_path):
    path, *_ = write_diamond(tmp_path)
    with pytest.raises(ScanFormatError, match=r"k11-1234\.nxs: data='/entry/nothing/data': "
                       r"the file has no dataset /entry/nothing/data; its datasets: .*"
                       r"/entry/imaging/data.*/entry/imaging_sum/gts_theta_value"):
        open_scan(path, format="hdf5", data="/entry/nothing/data")
    with pytest.raises(ScanFormatError, match=r"angles='entry/theta': the file has no "
                       r"dataset /entry/theta"):
        open_scan(path, format="hdf5", **dict(PATHS, angles="entry/theta"))
    with pytest.raises(ScanFormatError, match=r"data='/entry/imaging': /entry/imaging is a "
                       r"group"):
        open_scan(path, format="hdf5", data="/entry/imaging")
    with pytest.raises(ScanFormatError, match=r"must be 3-D"):
        open_scan(path, format="hdf5", data="/entry/imaging_sum/total")
    with pytest.raises(ScanFormatError, match=r"the image key /entry/imaging_sum/total holds "
                       r"unknown values"):
        open_scan(path, format="hdf5", **dict(PATHS, image_key="/entry/imaging_sum/total"))
    with pytest.raises(ScanFormatError, match=r"angles \(/entry/instrument/stage/gts_y\) are "
                       r"not monotonic"):
        open_scan(path, format="hdf5", **dict(PATHS, angles="/entry/instrument/stage/gts_y"))
    (tmp_path / DETECTOR_FILE).rename(tmp_path / "moved.h5")
    with pytest.raises(ScanFormatError, match=r"/entry/imaging/data links to "
                       r"k11-1234-imaging\.h5:/entry/data/data, which cannot be opened"):
        open_scan(path, format="hdf5", **PATHS)
    assert not raw_hdf5.detect(path)


def test_frames_are_read_lazily_through_the_link(tmp_path, monkeypatch):
    path, _, _, frames = write_diamond(tmp_path)
    read = []
    getitem = h5py.Dataset.__getitem__

    def spy(self, key):
        read.append((self.file.filename.rsplit("/", 1)[-1], self.name, key))
        return getitem(self, key)

    monkeypatch.setattr(h5py.Dataset, "__getitem__", spy)
    scans = [open_scan(path, center_col=P["center"]),
             open_scan(path, format="hdf5", center_col=P["center"], **PATHS)]
    assert read and not [r for r in read if r[0] == DETECTOR_FILE], read
    # the frames are read when asked for, region by region, and what is on disk then
    with h5py.File(tmp_path / DETECTOR_FILE, "a") as f:
        f["entry/data/data"][...] = frames + 1
    nd, nf = P["darks"], P["flats"]
    for scan in scans:
        read.clear()
        part = pickle.loads(pickle.dumps(scan.projections))[10, 2:4]
        np.testing.assert_array_equal(part, frames[nd + nf + 10, 2:4] + 1)
        assert [r[:2] for r in read] == [(DETECTOR_FILE, "/entry/data/data")]
        np.testing.assert_array_equal(np.asarray(scan.flats), frames[nd:nd + nf] + 1)


def test_options_pixel_size_units_separate_flats_and_conventions(tmp_path):
    path, phantom, hand, frames = write_diamond(tmp_path, pixel=False, units=None)
    with pytest.raises(ScanFormatError, match=r"k11-1234\.nxs: the file gives no pixel size.*"
                       r"pass pixel_size="):
        open_scan(path)
    scan = open_scan(path, pixel_size=0.05, center_col=P["center"])
    assert scan.angle_unit == "degree"                  # no units attribute: degrees
    np.testing.assert_allclose(scan.system.geometry.angles, hand.angles, atol=1e-12)
    with h5py.File(path, "a") as f:
        f["entry/imaging_sum/gts_theta_value"][...] = np.deg2rad(
            f["entry/imaging_sum/gts_theta_value"][()])
    rad = open_scan(path, pixel_size=0.05, angle_unit="radian")
    assert rad.angle_unit == "radian"
    np.testing.assert_allclose(rad.system.geometry.angles, hand.angles, atol=1e-12)
    # frames given without keys, flats and darks as separate datasets, angles as an array
    nd, nf = P["darks"], P["flats"]
    with h5py.File(path, "a") as f:
        f["entry/proj"] = frames[nd + nf:]
        f["entry/flat"] = frames[nd:nd + nf]
        f["entry/dark"] = frames[:nd]
    sep = open_scan(path, format="hdf5", data="entry/proj", image_key=False,
                    flats="entry/flat", darks="/entry/dark", angles=scan.angles,
                    pixel_size=0.05, center_col=P["center"])
    np.testing.assert_array_equal(np.asarray(sep.attenuation()), np.asarray(scan.attenuation()))
    with pytest.raises(ScanFormatError, match=r"angles \(angles=\) hold 3 values but there "
                       r"are 90 frames and 90 projections"):
        open_scan(path, format="hdf5", data="entry/proj", image_key=False, angles=[1, 2, 3],
                  pixel_size=0.05)
    with pytest.warns(MissingWhiteLevelWarning, match=r"white_level=, flats= or image_key="):
        open_scan(path, format="hdf5", data="entry/proj", image_key=False,
                  angles=scan.angles, pixel_size=0.05)
    # the NXtomo (McStas) reading: columns reversed and angles negated
    nexus = open_scan(path, pixel_size=0.05, convention="nexus", angle_unit="radian")
    np.testing.assert_array_equal(np.asarray(nexus.projections[3]),
                                  np.asarray(scan.projections[3])[:, ::-1])
    np.testing.assert_allclose(nexus.system.geometry.angles, -hand.angles, atol=1e-12)
    with pytest.raises(ValueError, match="convention must be one of"):
        open_scan(path, pixel_size=0.05, convention="astra")
    with pytest.raises(TypeError, match="image_key= must be a path"):
        open_scan(path, pixel_size=0.05, image_key=np.zeros(95))


def test_detection_leaves_other_files_and_ambiguity_is_refused(tmp_path):
    path, *_ = write_diamond(tmp_path)
    # a second, different image key of the same length: which one is meant is not known
    with h5py.File(path, "a") as f:
        f["entry/other/image_key"] = np.zeros(P["views"] + P["darks"] + P["flats"], np.uint8)
    assert not raw_hdf5.detect(path)
    with pytest.raises(ScanFormatError, match=r"several datasets could be the image key of "
                       r"/entry/imaging/data \(/entry/instrument/imaging/image_key, "
                       r"/entry/other/image_key\); name one with image_key="):
        open_scan(path, format="hdf5")
    with pytest.raises(ScanFormatError, match=r"several datasets could be the image key "
                       r"\(.*/entry/instrument/imaging/image_key.*/entry/other/image_key"):
        open_scan(path, format="hdf5", data=PATHS["data"])
    scan = open_scan(path, format="hdf5", data=PATHS["data"], image_key=PATHS["image_key"])
    assert scan.flats.shape[0] == P["flats"]
    # an NXtomo file and a DXchange file are left to their readers
    nx = tmp_path / "tomo.nx"
    with h5py.File(nx, "w") as f:
        e = f.create_group("entry")
        e.attrs["NX_class"] = "NXentry"
        e["definition"] = "NXtomo"
        d = e.create_group("data")
        d.attrs.update(NX_class="NXdata", signal="data")
        d["data"] = np.zeros((3, 2, 2))
        d["image_key"] = np.zeros(3, np.uint8)
    assert not raw_hdf5.detect(nx)
    text = tmp_path / "not.h5"
    text.write_text("not HDF5")
    assert not raw_hdf5.detect(text)
