"""Tests for leap.io.data and the DataIOMixin facade methods (npy, nrrd, tif sequences)."""
from __future__ import annotations

import os

import numpy as np
import pytest

nrrd = pytest.importorskip("nrrd")
tifffile = pytest.importorskip("tifffile")

from leap.io.data import get_file_list, load_data, read_tif, save_data, write_tif  # noqa: E402
from leap.compat.model import tomographicModels  # noqa: E402
from leap.compat.io_methods import DataIOMixin  # noqa: E402

if issubclass(tomographicModels, DataIOMixin):
    Model = tomographicModels
else:  # until the facade inherits the mixin
    Model = type("Model", (DataIOMixin, tomographicModels), {})


@pytest.fixture
def vol(rng):
    return rng.standard_normal((4, 5, 6)).astype(np.float32)


def _names(paths):
    return [os.path.basename(p) for p in paths]


# ----------------------------------------------------------------------- npy
def test_npy_round_trip(tmp_path, vol):
    p = tmp_path / "v.npy"
    assert save_data(p, vol) == [str(p)]
    back = load_data(p)
    assert back.dtype == vol.dtype and np.array_equal(back, vol)
    out = np.zeros_like(vol)
    assert load_data(str(p), out) is out and np.array_equal(out, vol)


def test_npy_ranges_and_axis_split(tmp_path, vol):
    p = tmp_path / "v.npy"
    save_data(p, vol)
    got = load_data(p, file_range=[1, 2], row_range=[0, 3], col_range=[2, 5])
    assert np.array_equal(got, vol[1:3, 0:4, 2:6])
    got = load_data(p, file_range=[1, 2], row_range=[0, 3], col_range=[2, 5], axis_split=1)
    assert np.array_equal(got, vol[0:4, 1:3, 2:6])
    save_data(tmp_path / "im.npy", vol[0])
    assert np.array_equal(load_data(tmp_path / "im.npy", row_range=[1, 1]), vol[0, 1:2])
    with pytest.raises(ValueError, match="file_range needs 3-D"):
        load_data(tmp_path / "im.npy", file_range=[0, 0])


# ---------------------------------------------------------------------- nrrd
def test_nrrd_round_trip_and_header(tmp_path, vol):
    p = tmp_path / "v.nrrd"
    save_data(p, vol, spacing=(0.5, 0.25, 0.25), origin=(-1.0, 2.0, 3.5))
    back, header = nrrd.read(str(p))
    assert back.shape == vol.shape and np.array_equal(back, vol)
    assert np.allclose(header["spacings"], [0.5, 0.25, 0.25])
    assert np.allclose(header["thicknesses"], [0.5, 0.25, 0.25])
    assert np.allclose(header["axismins"], [-1.0, 2.0, 3.5])
    assert list(header["units"]) == ["mm"] * 3
    assert np.array_equal(load_data(p), vol)
    assert np.array_equal(load_data(p, col_range=[1, 2]), vol[:, :, 1:3])
    # a 2-D array takes the last two entries of a 3-entry origin; scalar spacing broadcasts
    save_data(tmp_path / "s.nrrd", vol[0], spacing=2.0, origin=(9.0, 1.0, 2.0))
    header = nrrd.read_header(str(tmp_path / "s.nrrd"))
    assert np.allclose(header["spacings"], [2.0, 2.0]) and np.allclose(header["axismins"], [1, 2])


# ----------------------------------------------------------------------- tif
def test_tif_float_sequence_names_and_round_trip(tmp_path, vol):
    written = save_data(tmp_path / "vol.tif", vol, sequence_offset=3, spacing=(1.0, 0.5, 0.25))
    assert _names(written) == [f"vol_{i}.tif" for i in range(3, 7)]
    assert sorted(os.listdir(tmp_path)) == sorted(_names(written))
    with tifffile.TiffFile(written[0]) as tf:
        page = tf.pages[0]
        assert page.dtype == np.float32 and page.shape == (5, 6)
        x_res, y_res = page.tags["XResolution"].value, page.tags["YResolution"].value
        assert np.isclose(10 * x_res[1] / x_res[0], 0.25)    # mm per column
        assert np.isclose(10 * y_res[1] / y_res[0], 0.5)     # mm per row
    for name in ("vol.tif", "vol_5.tif", "vol_*.tif"):      # base name, a member, a pattern
        back = load_data(tmp_path / name)
        assert back.dtype == np.float32 and np.array_equal(back, vol), name
    assert _names(get_file_list(tmp_path / "vol.tif", [4, 5])) == ["vol_4.tif", "vol_5.tif"]


def test_tif_numeric_order_and_zero_padding(tmp_path, rng):
    imgs = {n: rng.standard_normal((3, 4)).astype(np.float32) for n in (1, 2, 10)}
    names = {1: "img_0001.tif", 2: "img_2.tif", 10: "img_10.tif"}
    for n, img in imgs.items():
        tifffile.imwrite(tmp_path / names[n], img)
    assert _names(get_file_list(tmp_path / "img.tif")) == [names[1], names[2], names[10]]
    back = load_data(tmp_path / "img.tif", file_range=[2, 10])
    assert np.array_equal(back, np.stack([imgs[2], imgs[10]]))
    # base name followed directly by digits (no underscore), as LEAP also accepts
    for n in (7, 8):
        tifffile.imwrite(tmp_path / f"scan{n:03d}.tif", imgs[1] + n)
    assert _names(get_file_list(tmp_path / "scan.tif")) == ["scan007.tif", "scan008.tif"]


def test_tif_uint16_window(tmp_path, vol):
    wmin, wmax = -1.0, 1.5
    written = save_data(tmp_path / "u.tif", vol, dtype=np.uint16, window=(wmin, wmax))
    with tifffile.TiffFile(written[0]) as tf:
        page = tf.pages[0]
        assert page.dtype == np.uint16
        assert page.description.startswith("slope = ") and "offset = " in page.description
        raw = page.asarray()
    step = (wmax - wmin) / 65535
    expected = np.clip(vol, wmin, wmax)
    assert raw.max() <= 65535 and np.array_equal(raw == 65535, vol[0] >= wmax - step / 2)
    back = load_data(tmp_path / "u.tif")
    assert back.dtype == np.float32
    assert np.max(np.abs(back - expected)) <= step / 2 + 1e-6
    # no window: min/max of the whole array; uint8
    save_data(tmp_path / "b.tif", vol, dtype=np.uint8)
    back = load_data(tmp_path / "b.tif")
    assert np.max(np.abs(back - vol)) <= (vol.max() - vol.min()) / 255 / 2 + 1e-6
    raws = [tifffile.imread(p) for p in get_file_list(tmp_path / "b.tif")]
    assert min(r.min() for r in raws) == 0 and max(r.max() for r in raws) == 255


def test_tif_ranges(tmp_path, vol):
    save_data(tmp_path / "r.tif", vol, sequence_offset=10)
    got = load_data(tmp_path / "r.tif", file_range=[11, 12], row_range=[1, 3], col_range=[0, 4])
    assert np.array_equal(got, vol[1:3, 1:4, 0:5])
    with pytest.raises(ValueError, match="row_range"):
        load_data(tmp_path / "r.tif", row_range=[2, 5])         # only 5 rows
    with pytest.raises(ValueError, match="col_range"):
        load_data(tmp_path / "r.tif", col_range=[3, 1])
    with pytest.raises(ValueError, match="selects none"):
        load_data(tmp_path / "r.tif", file_range=[0, 5])


def test_tif_axis_split(tmp_path, vol):
    written = save_data(tmp_path / "a.tif", vol, axis_split=1)
    assert len(written) == vol.shape[1] and tifffile.imread(written[2]).shape == (4, 6)
    assert np.array_equal(tifffile.imread(written[2]), vol[:, 2, :])
    out = np.zeros_like(vol)
    assert load_data(tmp_path / "a.tif", out, axis_split=1) is out
    assert np.array_equal(out, vol)
    assert load_data(tmp_path / "a.tif").shape == (5, 4, 6)    # stacked along axis 0
    got = load_data(tmp_path / "a.tif", file_range=[1, 3], row_range=[2, 3], axis_split=1)
    assert np.array_equal(got, vol[2:4, 1:4, :])


def test_tif_single_2d_image(tmp_path, vol):
    assert save_data(tmp_path / "one.tif", vol[0], sequence_offset=4) == [str(tmp_path / "one.tif")]
    back = load_data(tmp_path / "one.tif")
    assert back.shape == (5, 6) and np.array_equal(back, vol[0])
    assert np.array_equal(read_tif(tmp_path / "one.tif", row_range=[1, 2]), vol[0, 1:3])


def test_reads_leap_style_integer_tif(tmp_path):
    raw = np.arange(12, dtype=np.uint16).reshape(3, 4)
    tifffile.imwrite(tmp_path / "leap.tif", raw,
                     description="slope =  2.500000E-01\x0boffset = -1.000000E+00", metadata=None)
    assert np.allclose(read_tif(tmp_path / "leap.tif"), raw * 0.25 - 1.0)
    tifffile.imwrite(tmp_path / "plain.tif", raw, description="no scaling here", metadata=None)
    assert np.array_equal(read_tif(tmp_path / "plain.tif"), raw.astype(np.float32))


# -------------------------------------------------------------------- errors
def test_load_into_wrong_out(tmp_path, vol):
    save_data(tmp_path / "v.npy", vol)
    save_data(tmp_path / "v.tif", vol)
    for name in ("v.npy", "v.tif"):
        with pytest.raises(ValueError, match="shape"):
            load_data(tmp_path / name, np.zeros((4, 5, 7), np.float32))
    with pytest.raises(ValueError, match="shape"):
        load_data(tmp_path / "v.tif", np.zeros_like(vol), axis_split=1)
    with pytest.raises(TypeError):
        load_data(tmp_path / "v.npy", [[0.0]])


def test_errors(tmp_path, vol):
    for name in ("none.npy", "none.nrrd", "none.tif", "nodir/x_*.tif"):
        with pytest.raises(FileNotFoundError):
            load_data(tmp_path / name)
    for call in (lambda: save_data(tmp_path / "v.png", vol), lambda: load_data(tmp_path / "v.h5")):
        with pytest.raises(ValueError, match=r"\.npy, \.nrrd, \.tif or \.tiff"):
            call()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save_data(tmp_path / "missing" / "v.npy", vol)
    with pytest.raises(ValueError, match="uint16"):
        save_data(tmp_path / "v.tif", vol, dtype=np.int32)
    with pytest.raises(ValueError, match="axis_split"):
        save_data(tmp_path / "v.tif", vol, axis_split=2)
    with pytest.raises(ValueError, match="2-D or 3-D"):
        save_data(tmp_path / "v.tif", vol[None])
    with pytest.raises(ValueError, match="sequence_offset"):
        save_data(tmp_path / "v.tif", vol, sequence_offset=-1)
    with pytest.raises(ValueError, match="spacing"):
        save_data(tmp_path / "v.nrrd", vol, spacing=0.0)
    with pytest.raises(ValueError, match="file_range"):
        load_data(tmp_path / "v.tif", file_range=[3])
    with pytest.raises(ValueError, match="2-D"):
        write_tif(tmp_path / "w.tif", vol)


# -------------------------------------------------------------------- facade
@pytest.fixture
def ct():
    m = Model()
    m.set_conebeam(4, 5, 6, 0.8, 0.4, 2.0, 2.5, m.setAngleArray(4, 360.0), 100.0, 200.0)
    m.set_volume(6, 7, 3, 0.5, 0.25)
    return m


def test_facade_projections_round_trip(tmp_path, ct, rng):
    g = rng.standard_normal((4, 5, 6)).astype(np.float32)
    assert ct.save_projections(str(tmp_path / "g.nrrd"), g) is True
    header = nrrd.read_header(str(tmp_path / "g.nrrd"))
    assert np.allclose(header["axismins"], [0.0, -2.0 * 0.8, -2.5 * 0.4])
    assert np.allclose(header["spacings"], [0.4, 0.8, 0.4])
    assert np.array_equal(ct.load_projections(str(tmp_path / "g.nrrd")), g)
    ct.saveProjections(str(tmp_path / "g.tif"), g, 1, axis_split=1)
    assert _names(ct.get_file_list(str(tmp_path / "g.tif"))) == [f"g_{i}.tif" for i in range(1, 6)]
    x = np.zeros_like(g)                           # one file per detector row
    assert ct.loadProjections(str(tmp_path / "g.tif"), x, axis_split=1) is x
    assert np.array_equal(x, g)
    got = ct.load_projections(str(tmp_path / "g.tif"), None, [2, 3], [0, 1], [4, 5], 1)
    assert np.array_equal(got, g[0:2, 1:3, 4:6])     # files 2..3 are detector rows 1..2


def test_facade_volume_and_file_dtype(tmp_path, ct, rng):
    f = rng.random((3, 7, 6)).astype(np.float32)
    ct.save_volume(str(tmp_path / "f.nrrd"), f)
    header = nrrd.read_header(str(tmp_path / "f.nrrd"))
    assert np.allclose(header["axismins"],
                       [ct.z_samples()[0], ct.y_samples()[0], ct.x_samples()[0]])
    assert np.allclose(header["spacings"], [0.25, 0.5, 0.5])
    assert np.array_equal(ct.loadVolume(str(tmp_path / "f.nrrd")), f)
    assert ct.set_fileIO_parameters(np.uint16, 0.0, 0.5) is True
    ct.saveVolume(str(tmp_path / "f.tif"), f, 2)
    assert tifffile.imread(str(tmp_path / "f_2.tif")).dtype == np.uint16
    back = ct.load_volume(str(tmp_path / "f.tif"))
    assert np.max(np.abs(back - np.clip(f, 0.0, 0.5))) <= 0.5 / 65535
    ct.save_tif(str(tmp_path / "s.tif"), f[0], T=[0.25, 0.5])
    assert np.max(np.abs(ct.load_tif(str(tmp_path / "s.tif"), None, [1, 2]) -
                         np.clip(f[0, 1:3], 0.0, 0.5))) <= 0.5 / 65535
    with pytest.raises(ValueError, match="dtype"):
        ct.set_fileIO_parameters(np.float64)
    assert ct.file_dtype == np.uint16          # unchanged by the failed call


def test_facade_without_geometry_and_torch(tmp_path, rng):
    m = Model()
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    assert m.save_data(str(tmp_path / "d.nrrd"), x) is True
    header = nrrd.read_header(str(tmp_path / "d.nrrd"))
    assert np.allclose(header["spacings"], 1.0) and np.allclose(header["axismins"], 0.0)
    m.save_volume(str(tmp_path / "d.npy"), x)
    assert np.array_equal(m.loadData(str(tmp_path / "d.npy")), x)
    torch = pytest.importorskip("torch")
    t = torch.zeros(2, 3, 4)
    assert m.load_data(str(tmp_path / "d.npy"), t) is t
    assert np.array_equal(t.numpy(), x)
    m.save_data(str(tmp_path / "t.npy"), torch.from_numpy(x))
    assert np.array_equal(np.load(tmp_path / "t.npy"), x)
    with pytest.raises(ValueError, match="shape"):
        m.load_data(str(tmp_path / "d.npy"), torch.zeros(2, 3, 5))
