"""The GPU FBP of modular beams under Numba's CUDA simulator: short and offset scans
agree with the CPU (regression of issue 11, items 1 and 8, on the CUDA path).

As in ``test_cuda_sim.py``, the normal run starts this file again in a subprocess with
``NUMBA_ENABLE_CUDASIM=1``, where the ``TestSim*`` tests run.
"""
from __future__ import annotations


import numpy as np
import pytest

import leap
from conftest import SIM, run_sim_tests
from leap.reconstruction.fbp import fbp, fbp_adjoint


DET = leap.Detector(num_rows=6, num_cols=32, pixel_height=2.0, pixel_width=2.0)


def _cone(range_deg, num_angles=90, *, center_col=None, tau=0.0, det=DET, vol=None):
    """A circular cone scan over ``range_deg`` degrees (negative: clockwise), sod 200, sdd 400."""
    if center_col is not None:
        det = det.with_changes(center_col=center_col)
    angles = 0.3 + np.deg2rad(range_deg) * np.arange(num_angles) / num_angles
    return leap.ConeBeam(detector=det, angles=angles, sod=200.0, sdd=400.0, tau=tau)


# ------------------------------------------------------ GPU path (CUDA simulator)

@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_gpu_fbp_of_modular_beams_under_simulator():
    """The GPU FBP shares the CPU's weights: modular short and offset scans agree."""
    run_sim_tests(__file__, timeout=600)


@pytest.mark.skipif(not SIM, reason="runs under NUMBA_ENABLE_CUDASIM=1 only")
class TestSimModularFBP:
    DET = leap.Detector(num_rows=4, num_cols=6, pixel_height=1.0, pixel_width=1.0)
    VOL = leap.Volume(num_x=4, num_y=5, num_z=3, voxel_width=1.0, voxel_height=1.0)

    def _check(self, geo, **kw):
        from numba import cuda
        r = np.random.default_rng(3)
        g = r.standard_normal(geo.projection_shape).astype(np.float32)
        f = r.standard_normal(self.VOL.shape).astype(np.float32)
        ref = fbp(geo, self.VOL, g, **kw)
        scale = np.abs(ref).max()
        assert np.abs(fbp(geo, self.VOL, cuda.to_device(g), **kw).copy_to_host() - ref).max() <= 1e-5 * scale
        assert np.abs(fbp(geo, self.VOL, g, devices=[0], **kw) - ref).max() <= 1e-5 * scale
        adj = fbp_adjoint(geo, self.VOL, f, **kw)
        dev = fbp_adjoint(geo, self.VOL, cuda.to_device(f), **kw).copy_to_host()
        assert np.abs(dev - adj).max() <= 1e-5 * np.abs(adj).max()

    def test_short_scan(self):
        geo = _cone(230.0, 6, det=self.DET).to_modular()
        self._check(geo)

    def test_offset_scan(self):
        geo = _cone(360.0, 4, center_col=1.0, det=self.DET).to_modular()
        self._check(geo, offset_scan=True)
