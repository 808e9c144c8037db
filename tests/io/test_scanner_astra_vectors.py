"""Vector-geometry folders (leap.io.scanners.astra_vectors): the CWI walnut layout and
``format="astra"``.

The walnut folder is written from the layout its reference script documents
(cicwi/WalnutReconstructionCodes FDKReconstruction.py: one more vector than views, the
last repeating the first; images stored so that ASTRA's image is
``transpose(flipud(stored))``; files in the reverse order of the vectors), with exact
line integrals of an analytic object along the rays of ASTRA's cone_vec convention,
written out here independently of the reader. The reader's scan must reconstruct the
object as well as the same data with the geometry set up by hand.
"""
from __future__ import annotations

import numpy as np
import pytest

import leap
from leap.io import open_scan
from leap.io.scanners import astra_vectors
from leap.io.scanners._common import ScanFormatError, default_system
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject

tifffile = pytest.importorskip("tifffile")

PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(3.0, -2.0, 1.5), radii=(6, 4, 5),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-4.0, 5.0, -2.0), radii=(2.5, 3, 2),
                                 value=0.04)])
ROWS, COLS, PIXEL, SO, OD, SHIFT = 40, 56, 0.8, 150.0, 150.0, 1.6
FLAT, DARK = 50000.0, 200.0
THETA = np.linspace(0, 2 * np.pi, 90, endpoint=False)


def cone_vec():
    """ASTRA cone vectors (geom_2vec's formulas) with the detector moved SHIFT mm along
    u, plus the repeated first view at the end (the walnut files' full turn)."""
    s, c, z = np.sin(THETA), np.cos(THETA), np.zeros_like(THETA)
    u = np.stack([c, s, z], 1) * PIXEL
    vec = np.hstack([np.stack([s * SO, -c * SO, z], 1),
                     np.stack([-s * OD, c * OD, z], 1) + SHIFT * u / PIXEL, u,
                     np.stack([z, z, z + PIXEL], 1)])
    return np.vstack([vec, vec[:1]])


def astra_images(vec):
    """Line integrals (views, rows, cols) in ASTRA's image orientation: pixel (r, c) at
    d + (c − ncols/2 + ½)u + (r − nrows/2 + ½)v."""
    cc, rr = np.meshgrid(np.arange(COLS) - COLS / 2 + 0.5, np.arange(ROWS) - ROWS / 2 + 0.5)
    out = np.empty((vec.shape[0], ROWS, COLS))
    for k, (src, d, u, v) in enumerate(vec.reshape(-1, 4, 3)):
        pix = d + cc[..., None] * u + rr[..., None] * v
        out[k] = PHANTOM.line_integrals(np.broadcast_to(src, pix.shape).reshape(-1, 3),
                                        (pix - src).reshape(-1, 3)).reshape(ROWS, COLS)
    return out


def write_walnut(folder, name="scan_geom_corrected.geom"):
    vec = cone_vec()
    L = astra_images(vec[:-1])
    n = L.shape[0]
    np.savetxt(folder / name, vec)

    def stored(img):                      # ASTRA image = transpose(flipud(stored))
        return np.rint(img).astype(np.uint16).T[::-1]

    counts = DARK + (FLAT - DARK) * np.exp(-L)
    for k in range(n):                    # files in the reverse order of the vectors
        tifffile.imwrite(folder / f"scan_{n - 1 - k:06d}.tif", stored(counts[k]))
    tifffile.imwrite(folder / f"scan_{n:06d}.tif", stored(counts[0]))
    for i in range(2):
        tifffile.imwrite(folder / f"io{i:06d}.tif", stored(np.full((ROWS, COLS), FLAT)))
    tifffile.imwrite(folder / "di000000.tif", stored(np.full((ROWS, COLS), DARK)))
    (folder / "scan_settings.txt").write_text("Voltage: 40 kV\nBinning = 2\n")
    return L


def _err(system, g):
    v = system.volume
    truth = PHANTOM.voxelize(v.x_samples(), v.y_samples(), v.z_samples(), v.voxel_width,
                             v.voxel_height)
    rec = system.fbp(np.ascontiguousarray(g, dtype=np.float32))
    x, y, z = v.voxel_grid()
    inner = (x ** 2 + y ** 2 < 12.0 ** 2) & (np.abs(z) < 6.0)
    return np.linalg.norm((rec - truth)[inner]) / np.linalg.norm(truth[inner])


def test_walnut_folder_opens_and_reconstructs_like_the_hand_set_geometry(tmp_path):
    L = write_walnut(tmp_path)
    assert astra_vectors.detect(tmp_path)
    scan = open_scan(tmp_path)
    assert scan.format == "walnut" and scan.angle_unit == "radian"
    g = scan.system.geometry
    assert isinstance(g, leap.ModularBeam) and g.num_angles == THETA.size
    assert scan.projections.shape == (THETA.size, ROWS, COLS)
    assert scan.flats.shape == (2, ROWS, COLS) and scan.darks.shape == (1, ROWS, COLS)
    assert scan.metadata["Voltage"] == "40 kV" and scan.metadata["Binning"] == "2"
    # leap's modular angles: the direction of source − module centre (the shifted
    # detector turns it by atan(SHIFT/(SO + OD)))
    np.testing.assert_allclose(scan.angles, THETA - np.arctan(SHIFT / (SO + OD)), atol=1e-9)
    att = np.asarray(scan.attenuation())
    np.testing.assert_allclose(att, L, atol=1e-3)
    # a region read lazily is the same region of the whole
    np.testing.assert_array_equal(scan.projections[5:7, 3:9, 10:30],
                                  np.asarray(scan.projections)[5:7, 3:9, 10:30])
    # the geometry set up by hand: ASTRA's cone at θ is leap's ψ = θ, the detector
    # shifted SHIFT mm along the columns
    det = leap.Detector(num_rows=ROWS, num_cols=COLS, pixel_height=PIXEL, pixel_width=PIXEL,
                        center_col=(COLS - 1) / 2 - SHIFT / PIXEL)
    hand = default_system(leap.ConeBeam(detector=det, angles=THETA, sod=SO, sdd=SO + OD))
    read = scan.system.with_changes(volume=hand.volume)
    e_hand, e_read = _err(hand, L), _err(read, att)
    assert e_hand < 0.25, e_hand
    assert e_read < 1.05 * e_hand + 0.01, (e_read, e_hand)
    # a wrong file order (the layout's reversal ignored) reconstructs far worse
    wrong = np.ascontiguousarray(att[::-1])
    assert _err(read, wrong) > 2 * e_hand


def test_walnut_original_geometry_and_options(tmp_path):
    write_walnut(tmp_path, name="scan_geom_original.geom")
    scan = open_scan(tmp_path, format="walnut")
    assert scan.metadata["vectors_file"].endswith("scan_geom_original.geom")
    # keep the repeated view: one more vector than the files used
    scan2 = open_scan(tmp_path, drop_last_view=False)
    assert scan2.system.geometry.num_angles == THETA.size + 1


def test_generic_astra_folder_round_trip(tmp_path):
    geo = leap.ConeBeam(detector=leap.Detector(num_rows=6, num_cols=9, pixel_height=0.8,
                                               pixel_width=0.7, center_row=2.6, center_col=4.3),
                        angles=np.linspace(0.2, 6.0, 12), sod=150.0, sdd=300.0, tau=0.7,
                        tilt=0.01)
    rng = np.random.default_rng(0)
    L = rng.random((12, 6, 9)) * 0.5
    counts = 100.0 + (60000.0 - 100.0) * np.exp(-L)
    astra_vectors.write_scan(tmp_path, geo, counts, flat=60000.0, dark=100.0, walnut=False)
    assert not astra_vectors.detect(tmp_path)
    with pytest.raises(ValueError, match="not a scan leap can read"):
        open_scan(tmp_path)
    scan = open_scan(tmp_path, format="astra", vectors="vectors.txt", projections="proj_*.tif",
                     flats="flat_*.tif", darks="dark_*.tif")
    assert scan.format == "astra"
    m = geo.to_modular()
    back = scan.system.geometry
    np.testing.assert_allclose(back.source_positions, m.source_positions, atol=1e-9)
    np.testing.assert_allclose(back.module_centers, m.module_centers, atol=1e-9)
    np.testing.assert_allclose(back.col_vectors, m.col_vectors, atol=1e-12)
    np.testing.assert_allclose(back.row_vectors, m.row_vectors, atol=1e-12)
    np.testing.assert_allclose(np.asarray(scan.attenuation()), L, atol=2e-4)
    # and the walnut writer reads back through detection
    astra_vectors.write_scan(tmp_path / "w", geo, counts, flat=60000.0, dark=100.0)
    w = open_scan(tmp_path / "w")
    assert w.format == "walnut"
    np.testing.assert_allclose(np.asarray(w.attenuation()), L, atol=2e-4)


def test_turned_source_regions():
    from leap.io.lazy import InMemory
    a = np.arange(3 * 5 * 7).reshape(3, 5, 7)
    for fr in (False, True):
        for fc in (False, True):
            for tr in (False, True):
                t = astra_vectors.Turned(InMemory(a), flip_rows=fr, flip_cols=fc, transpose=tr)
                ref = a[:, ::-1 if fr else 1, ::-1 if fc else 1]
                ref = ref.transpose(0, 2, 1) if tr else ref
                np.testing.assert_array_equal(np.asarray(t), ref)
                np.testing.assert_array_equal(t[1, 2:4, 1], ref[1, 2:4, 1])
                np.testing.assert_array_equal(t[:, [3, 0], 1:3], ref[:, [3, 0], 1:3])


def test_bad_vector_folders_raise(tmp_path):
    write_walnut(tmp_path)
    (tmp_path / "bad.txt").write_text("1 2 3\n4 5 6\n")
    with pytest.raises(ScanFormatError, match=r"bad.txt.*shape \(num_views, 12\)"):
        open_scan(tmp_path, vectors="bad.txt")
    (tmp_path / "nan.txt").write_text("1 2 x 4 5 6 7 8 9 10 11 12\n")
    with pytest.raises(ScanFormatError, match="nan.txt"):
        open_scan(tmp_path, vectors="nan.txt")
    with pytest.raises(FileNotFoundError, match="missing.geom"):
        open_scan(tmp_path, vectors="missing.geom")
    with pytest.raises(FileNotFoundError, match=r"no projection files match 'none_\*.tif'"):
        open_scan(tmp_path, projections="none_*.tif")
    vec = cone_vec()
    np.savetxt(tmp_path / "many.geom", np.vstack([vec[:-1], vec[:-1]]))     # 180 lines, the last dropped
    with pytest.raises(ScanFormatError, match="describes 179 views but only 91 projection"):
        open_scan(tmp_path, vectors="many.geom")
    vec[4, 6:9] *= 1.5
    np.savetxt(tmp_path / "pix.geom", vec)
    with pytest.raises(ScanFormatError, match="pixel size"):
        open_scan(tmp_path, vectors="pix.geom")
    tifffile.imwrite(tmp_path / "odd.tif", np.zeros((COLS, ROWS + 1), np.uint16))
    with pytest.raises(ScanFormatError, match="dark image .*odd.tif.* once oriented"):
        open_scan(tmp_path, darks="odd.tif")
