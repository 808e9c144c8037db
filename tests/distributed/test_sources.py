"""Lazy Zarr / HDF5 / TIFF sources, atomic Zarr output and their errors."""
import os

import numpy as np
import pytest

import leap.distributed as ld

from dask_cases import make_system, rel

h5py = pytest.importorskip("h5py")
zarr = pytest.importorskip("zarr")
tifffile = pytest.importorskip("tifffile")


@pytest.fixture(scope="module")
def cone():
    s = make_system("cone")
    g = np.random.default_rng(7).random(s.projection_shape, dtype=np.float32)
    return s, g, s.fbp(g)


def test_fbp_from_hdf5_zarr_and_tiff(cone, tmp_path):
    s, g, ref = cone
    with h5py.File(tmp_path / "scan.nxs", "w") as h:
        h.create_dataset("/entry/data/data", data=g, chunks=(4, 23, 32))
    z = zarr.open(str(tmp_path / "scan.zarr"), mode="w", shape=g.shape, chunks=(8, 23, 32),
                  dtype="float32")
    z[...] = g
    tif = tmp_path / "tiffs"
    tif.mkdir()
    for i, view in enumerate(g):
        tifffile.imwrite(tif / f"proj_{i:04d}.tif", view)
    sources = [f"{tmp_path / 'scan.nxs'}:/entry/data/data",
               ld.open_hdf5(tmp_path / "scan.nxs", "/entry/data/data"),
               str(tmp_path / "scan.zarr"), z, str(tif), str(tif / "proj_*.tif"),
               sorted(str(p) for p in tif.iterdir())]
    for src in sources:
        arr = ld.as_dask(src)
        assert arr.shape == g.shape and arr.dtype == np.float32
        assert rel(ld.fbp(s, src, client=False, slabs=3).compute(), ref) <= 1e-6


def test_multipage_tiff_is_one_stack(tmp_path):
    g = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    tifffile.imwrite(tmp_path / "a.tif", g, photometric="minisblack")
    tifffile.imwrite(tmp_path / "b.tif", g + 100, photometric="minisblack")
    arr = ld.open_tiff_stack([tmp_path / "a.tif", tmp_path / "b.tif"])
    assert np.array_equal(arr.compute(), np.concatenate([g, g + 100]))


def test_zarr_output_is_all_or_nothing(cone, tmp_path):
    s, g, ref = cone
    target = tmp_path / "recon.zarr"
    f = ld.fbp(s, g, client=False, slabs=4, out=target)
    assert rel(f.compute(), ref) <= 1e-6
    assert rel(zarr.open(str(target), mode="r")[...], ref) <= 1e-6
    with pytest.raises(FileExistsError, match="overwrite=True"):
        ld.fbp(s, g, client=False, out=target)
    bad = g.copy()
    bad[30, 20, 3] = np.nan          # one slab's task fails
    with pytest.raises(ValueError, match="finite|NaN"):
        ld.fbp(s, bad, client=False, slabs=4, out=tmp_path / "bad.zarr")
    assert sorted(os.listdir(tmp_path)) == ["recon.zarr"]   # no target, no partial store
    # an overwrite that fails leaves the old result in place
    with pytest.raises(ValueError, match="finite|NaN"):
        ld.fbp(s, bad, client=False, slabs=4, out=target, overwrite=True)
    assert rel(zarr.open(str(target), mode="r")[...], ref) <= 1e-6
    assert sorted(os.listdir(tmp_path)) == ["recon.zarr"]


def test_source_errors_name_the_file(tmp_path):
    g = np.zeros((4, 3, 5), np.float32)
    with h5py.File(tmp_path / "scan.h5", "w") as h:
        h.create_dataset("/entry/data/data", data=g)
        h.create_group("/entry/instrument")
    with pytest.raises(KeyError, match=r"no dataset '/entry/data/dark'.*'/entry/data/data'"):
        ld.as_dask(f"{tmp_path / 'scan.h5'}:/entry/data/dark")
    with pytest.raises(ValueError, match="is a group"):
        ld.open_hdf5(tmp_path / "scan.h5", "/entry/instrument")
    with pytest.raises(FileNotFoundError, match="no HDF5 file"):
        ld.open_hdf5(tmp_path / "missing.h5", "/entry/data/data")
    with pytest.raises(ValueError, match="give the dataset"):
        ld.as_dask(str(tmp_path / "scan.h5"))
    (tmp_path / "notzarr").write_text("x")
    with pytest.raises((FileNotFoundError, ValueError), match="Zarr"):
        ld.open_zarr(tmp_path / "nothing.zarr")
    tif = tmp_path / "stack"
    tif.mkdir()
    for i in range(3):
        tifffile.imwrite(tif / f"p{i}.tif", g[0])
    (tif / "p3.tif").write_bytes(b"not a tiff at all")
    with pytest.raises(ValueError, match=r"cannot read TIFF file .*p3\.tif"):
        ld.open_tiff_stack(tif)
    (tif / "p3.tif").unlink()
    tifffile.imwrite(tif / "p3.tif", np.zeros((2, 2), np.float32))
    with pytest.raises(ValueError, match=r"p3\.tif.*one shape"):
        ld.open_tiff_stack(tif)
    with pytest.raises(FileNotFoundError, match="no TIFF files"):
        ld.open_tiff_stack(str(tmp_path / "none_*.tif"))


def test_wrong_dtype_source_fails_before_work(cone, tmp_path):
    s, g, _ = cone
    z = zarr.open(str(tmp_path / "raw.zarr"), mode="w", shape=g.shape, dtype="uint16")
    with pytest.raises(TypeError, match="float32.*astype"):
        ld.fbp(s, str(tmp_path / "raw.zarr"), client=False)
    assert rel(ld.fbp(s, ld.as_dask(z).astype("float32") + g, client=False).compute(),
               s.fbp(g)) <= 1e-6
