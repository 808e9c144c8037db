"""The facade's ``rebin_parallel_sinogram`` (leap.reconstruction.rebin.rebin_parallel_sinogram): one
detector row rebinned to a parallel-beam sinogram, for short, offset and tilted scans, and
as input to the bow-tie centre search. Issue 11, item 16; the core functions are tested
directly in ``test_rebin.py``."""
import math
import warnings

import numpy as np
import pytest

from conftest import disc_volume as _disc_volume
from conftest import parallel_model as _parallel
from conftest import torch_or_skip as _torch
from leap.compat.model import tomographicModels
from leap.reconstruction.rebin import rebin_parallel_sinogram


# ============================================================ rebin_parallel_sinogram
def _fan_or_cone(kind, nA=120, nR=5, nC=96, rng_deg=360.0, tau=0.0, tilt=0.0, centerCol=None):
    ct = tomographicModels()
    cc = 0.5 * (nC - 1) if centerCol is None else centerCol
    args = (nA, nR, nC, 1.0, 1.0, 0.5 * (nR - 1), cc, ct.setAngleArray(nA, rng_deg), 300.0, 600.0)
    if kind == "fan":
        ct.set_fanbeam(*args, tau=tau)
    else:
        ct.set_conebeam(*args, tau=tau, tiltAngle=tilt)
    ct.set_default_volume()
    return ct


DISCS = [(4.0, -3.0, 14.0, 0.02), (-9.0, 7.0, 5.0, 0.04)]


def _parallel_reference(ct, f, angles_deg, T_s, nC, center_col, iz):
    """Parallel-beam projection of slice ``iz`` of f (the same voxels) at ``angles_deg``."""
    p = tomographicModels()
    p.set_parallelbeam(len(angles_deg), 1, nC, 1.0, T_s, 0.0, center_col, angles_deg)
    p.set_volume(ct.get_numX(), ct.get_numY(), 1, ct.get_voxelWidth(), 1.0)
    gp = p.allocate_projections()
    p.project(gp, np.ascontiguousarray(f[iz:iz + 1]))
    return gp[:, 0, :]


@pytest.mark.parametrize("kind,tau", [("fan", 0.0), ("fan", 3.0), ("cone", 0.0)])
def test_rebin_parallel_sinogram_is_a_parallel_beam_sinogram(kind, tau):
    ct = _fan_or_cone(kind, tau=tau)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    g_copy = g.copy()
    params = ct._parameters_text()
    sino = ct.rebin_parallel_sinogram(g, 6, 2)
    assert sino.shape == (120, 96) and sino.dtype == np.float32
    np.testing.assert_array_equal(g, g_copy)            # input and geometry unchanged
    assert ct._parameters_text() == params
    T_s = 1.0 * math.hypot(300.0, tau) / 600.0
    ref = _parallel_reference(ct, f, ct.get_angles(), T_s, 96, 47.5, f.shape[0] // 2)
    assert np.linalg.norm(sino - ref) / np.linalg.norm(ref) < 0.01
    # the same numbers as the whole-data rebinning, row by row
    g2 = g.copy()
    ct.rebin_parallel(g2)
    np.testing.assert_array_equal(sino, g2[:, 2, :])


def test_rebin_parallel_sinogram_row_selection():
    ct = _fan_or_cone("cone", nR=6)
    f = _disc_volume(ct, DISCS)
    f *= (1.0 + np.arange(f.shape[0], dtype=np.float32))[:, None, None]     # rows differ
    g = ct.project(ct.allocate_projections(), f)
    nearest = math.floor(0.5 + ct.get_centerRow())                         # 2.5 → 3
    for iRow in (-1, 6, 100):
        np.testing.assert_array_equal(ct.rebin_parallel_sinogram(g, 6, iRow),
                                      ct.rebin_parallel_sinogram(g, 6, nearest))
    assert not np.allclose(ct.rebin_parallel_sinogram(g, 6, 0),
                           ct.rebin_parallel_sinogram(g, 6, 5))


def test_rebin_parallel_sinogram_short_scan_keeps_the_fully_measured_views():
    ct = _fan_or_cone("fan", nA=100, rng_deg=240.0)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    with pytest.warns(RuntimeWarning, match="only the first"):
        sino = ct.rebin_parallel_sinogram(g)
    g2 = g.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ct.rebin_parallel(g2)
    n = ct.get_numAngles()
    assert 0 < n < 100
    np.testing.assert_array_equal(sino[:n], g2[:n, 2, :])
    assert np.all(sino[n:] == 0.0)


def test_rebin_parallel_sinogram_offset_scan_fills_a_centred_double_detector():
    ct = tomographicModels()
    nA, nC = 120, 56
    ct.set_fanbeam(nA, 3, nC, 1.0, 1.0, 1.0, 10.0, ct.setAngleArray(nA, 360.0), 300.0, 600.0)
    ct.set_offsetScan(True)
    ct.set_default_volume()
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    sino = ct.rebin_parallel_sinogram(g)
    assert sino.shape == (nA // 2, 2 * nC)
    ref = _parallel_reference(ct, f, ct.get_angles()[:nA // 2], 0.5, 2 * nC, nC - 0.5, 1)
    assert np.linalg.norm(sino - ref) / np.linalg.norm(ref) < 0.03


def test_rebin_parallel_sinogram_undoes_a_detector_tilt():
    def sinogram(tilt, model_tilt):
        ct = tomographicModels()
        ct.set_conebeam(90, 31, 100, 1.0, 1.0, 15.0, 49.5, ct.setAngleArray(90, 360.0), 400.0,
                        800.0, tiltAngle=tilt)
        ct.set_volume(80, 80, 40, 0.5, 0.5)
        f = ct.allocate_volume()
        z = ct.z_samples()[:, None, None]
        x, y = ct.x_samples()[None, None, :], ct.y_samples()[None, :, None]
        f[np.broadcast_to((x - 2.5) ** 2 + (y + 1.5) ** 2 < 7.5 ** 2, f.shape)] = 0.02
        f[((x + 5) ** 2 + (y - 4) ** 2 < 9.0) & (z > 1.0)] = 0.04
        f[((x - 6) ** 2 + (y - 6) ** 2 < 6.25) & (z < -0.5)] = 0.05
        g = ct.project(ct.allocate_projections(), f)
        geo = ct.core_geometry().with_changes(tilt=math.radians(model_tilt))
        return rebin_parallel_sinogram(geo, g, 6, 17)
    straight = sinogram(0.0, 0.0)
    corrected = sinogram(3.0, 3.0)
    ignored = sinogram(3.0, 0.0)
    err = np.linalg.norm(corrected - straight) / np.linalg.norm(straight)
    err_ignored = np.linalg.norm(ignored - straight) / np.linalg.norm(straight)
    assert err < 0.05 and err < 0.25 * err_ignored


def test_rebin_parallel_sinogram_feeds_the_bowtie_centre_search():
    from leap.compat.preprocessing.calibration import bowtie_alignment_metric
    ct = _fan_or_cone("fan", nA=180, nR=1, nC=96, centerCol=45.0)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    metric = {}
    for cc in (41.0, 45.0, 49.0):
        ct.set_centerCol(cc)
        metric[cc] = bowtie_alignment_metric(ct, g)
    assert metric[45.0] < min(metric[41.0], metric[49.0])


def test_rebin_parallel_sinogram_rejects_bad_input_and_takes_tensors():
    ct = _parallel(30, 180.0, num_cols=32)
    with pytest.raises(ValueError, match="fan-beam or cone-beam"):
        ct.rebin_parallel_sinogram(ct.allocate_projections())
    ct = _fan_or_cone("fan", nA=40, nC=32)
    with pytest.raises(ValueError, match="g must have shape"):
        ct.rebin_parallel_sinogram(np.zeros((40, 5, 31), np.float32))
    with pytest.raises(TypeError, match="iRow must be an integer"):
        ct.rebin_parallel_sinogram(ct.allocate_projections(), 6, 1.5)
    torch = _torch()
    g = ct.project(ct.allocate_projections(), _disc_volume(ct, [(0.0, 0.0, 5.0, 0.02)]))
    out = ct.rebin_parallel_sinogram(torch.from_numpy(g))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), ct.rebin_parallel_sinogram(g))
