"""Back-projection filtration (leap.reconstruction.bpf and the facade's ``BPF``): amplitude, agreement
with FBP, offset scans, the extended back-projection, bad input. Issue 11, item 16."""
import numpy as np
import pytest

from leap.reconstruction.bpf import bpf
from conftest import disc_volume as _disc_volume
from conftest import parallel_model as _parallel
from conftest import torch_or_skip as _torch
from leap.compat.model import tomographicModels


# ============================================================ BPF


@pytest.mark.parametrize("rng_deg,nA", [(180.0, 120), (360.0, 240), (270.0, 180)])
def test_bpf_reconstructs_a_uniform_disc_to_its_attenuation(rng_deg, nA):
    ct = _parallel(nA, rng_deg)
    mu = 0.02
    f = _disc_volume(ct, [(0.0, 0.0, 22.0, mu)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.allocate_volume()
    out = ct.BPF(g, rec)
    assert out is rec
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    inside = np.broadcast_to(x ** 2 + y ** 2 < 18.0 ** 2, rec.shape[1:])
    assert abs(rec[:, inside].mean() / mu - 1.0) < 0.005
    ring = np.broadcast_to((x ** 2 + y ** 2 > 26.0 ** 2) & (x ** 2 + y ** 2 < 44.0 ** 2),
                           rec.shape[1:])
    assert abs(rec[:, ring].mean()) < 0.01 * mu
    # zero outside the field of view, as FBP
    outside = np.broadcast_to(x ** 2 + y ** 2 > ct.get_diameterFOV() ** 2 / 4, rec.shape[1:])
    assert np.all(rec[:, outside] == 0.0)


def test_bpf_agrees_with_fbp_on_a_phantom():
    ct = _parallel(180, 180.0)
    f = _disc_volume(ct, [(0.0, 0.0, 35.0, 0.02), (10.0, -5.0, 8.0, 0.04),
                          (-15.0, 10.0, 5.0, 0.01)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.BPF(g)
    fbp = ct.FBP(g)
    rel = np.linalg.norm(rec - fbp) / np.linalg.norm(fbp)
    assert rel < 0.03
    # both reconstruct f about equally well
    e_bpf = np.linalg.norm(rec - f) / np.linalg.norm(f)
    e_fbp = np.linalg.norm(fbp - f) / np.linalg.norm(f)
    assert e_bpf < 1.15 * e_fbp


def test_bpf_of_an_offset_detector_scan():
    ct = tomographicModels()
    ct.set_parallelbeam(240, 1, 70, 1.0, 1.0, 0.0, 15.0, ct.setAngleArray(240, 360.0))
    ct.set_offsetScan(True)
    ct.set_default_volume()
    f = _disc_volume(ct, [(0.0, 0.0, 30.0, 0.02), (8.0, -5.0, 6.0, 0.04)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.BPF(g)
    fbp = ct.FBP(g)
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    flat = (x ** 2 + y ** 2 < 20.0 ** 2) & ((x - 8.0) ** 2 + (y + 5.0) ** 2 > 8.0 ** 2)
    assert abs(rec[:, flat].mean() / 0.02 - 1.0) < 0.01
    assert np.linalg.norm(rec - fbp) / np.linalg.norm(fbp) < 0.03
    # without the half-fan weights the doubly measured band would count twice
    plain = bpf(ct.core_geometry(), ct.core_volume(), g, fov_radius=ct.get_diameterFOV() / 2)
    assert np.linalg.norm(plain - fbp) / np.linalg.norm(fbp) > 0.1


def test_bpf_extended_backprojection_removes_the_truncation_bias():
    """Back-projecting onto the volume alone (upstream's BPF) biases the result: the ramp
    filter misses the tails of the back-projection."""
    ct = _parallel(120, 180.0)
    f = _disc_volume(ct, [(0.0, 0.0, 40.0, 0.02)])
    g = ct.project(ct.allocate_projections(), f)
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    inside = np.broadcast_to(x ** 2 + y ** 2 < 30.0 ** 2, f.shape[1:])
    bias = {}
    for ext in (0.0, 1.0):
        rec = bpf(ct.core_geometry(), ct.core_volume(), g, extension=ext)
        bias[ext] = rec[:, inside].mean() / 0.02 - 1.0
    assert bias[0.0] > 0.02
    assert abs(bias[1.0]) < 0.015


def test_bpf_rejects_other_geometries_and_bad_input():
    ct = tomographicModels()
    ct.set_fanbeam(60, 1, 64, 1.0, 1.0, 0.0, 31.5, ct.setAngleArray(60, 360.0), 200, 400)
    ct.set_default_volume()
    with pytest.raises(ValueError, match="BPF reconstructs parallel-beam data only"):
        ct.BPF(ct.allocate_projections())
    ct = _parallel(30, 180.0, num_cols=32)
    with pytest.raises(ValueError, match="g must have shape"):
        ct.BPF(np.zeros((30, 2, 31), np.float32))
    with pytest.raises(ValueError, match="extension"):
        bpf(ct.core_geometry(), ct.core_volume(), ct.allocate_projections(), extension=-1)
    ct.set_cylindircalAttenuationMap(0.01, 10.0)
    with pytest.raises(ValueError, match="attenuation map"):
        ct.BPF(ct.allocate_projections())


def test_bpf_takes_torch_tensors():
    torch = _torch()
    ct = _parallel(60, 180.0, num_cols=48)
    f = _disc_volume(ct, [(0.0, 0.0, 12.0, 0.02)])
    g = ct.project(ct.allocate_projections(), f)
    ref = ct.BPF(g)
    out = ct.BPF(torch.from_numpy(g))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), ref)
