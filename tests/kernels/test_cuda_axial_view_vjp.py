"""The CUDA geometry VJP of parallel and fan beams (``leap.kernels.cuda.axial_view_vjp``)
against the CPU one (``leap.kernels.cpu.axial_view_vjp``), under Numba's CUDA simulator,
plus a PTX compile check.

As in ``test_cuda_geometry_vjp.py``, the normal run starts this file again in a subprocess
with ``NUMBA_ENABLE_CUDASIM=1`` (the simulator must be on before numba is imported), where
the ``TestSim*`` tests run on tiny problems (6×6×3 volume, 3 views, 3×7 detector): parallel,
flat and curved fan beams, fan beams with FBP's distance weight, batches of 1 and 2, direct
rows and row overlaps.
"""
from __future__ import annotations

import numpy as np
import pytest

import leap
from conftest import SIM, compile_to_ptx, rel_l2, run_sim_tests

TOL = 1e-5
ANG = np.array([0.3, 1.4, 2.5])


def case(kind, nb, direct=True, seed=0):
    """(plan, f (nb, nz, ny, nx), ḡ (nb, na, nrows, ncols)) of a tiny scan."""
    from leap.kernels.plan import make_plan
    rng = np.random.default_rng(seed)
    det = leap.Detector(num_rows=3, num_cols=7, pixel_height=1.0 if direct else 0.8,
                        pixel_width=1.3, center_col=3.2)
    vol = leap.Volume(num_x=6, num_y=6, num_z=3, voxel_width=0.9, voxel_height=1.0,
                      offset_x=0.1, offset_y=-0.15)
    weighted = kind == "fbp"
    if kind == "parallel":
        geo = leap.ParallelBeam(detector=det, angles=ANG)
    else:
        geo = leap.FanBeam(detector=det.with_changes(curved=kind == "curved"), angles=ANG,
                           sod=9.0, sdd=14.0, tau=0.4)
    plan = (make_plan(geo, vol, fan_distance_weight=True) if weighted
            else make_plan(geo, vol))
    f = rng.uniform(0.0, 1.0, (nb,) + vol.shape).astype(np.float32)
    f[:, :, 1, :] = 0.0                            # a row of empty columns
    g = rng.standard_normal((nb,) + geo.projection_shape).astype(np.float32)
    return plan, f, g


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_cuda_axial_view_vjp_under_simulator():
    run_sim_tests(__file__)


class TestSimAxialViewVJP:
    """CUDA (simulated) parallel/fan geometry VJP equals the CPU kernel's."""

    __test__ = SIM      # collected only in the simulator subprocess

    @pytest.mark.parametrize("kind,nb,direct", [
        ("parallel", 2, True), ("parallel", 1, False), ("flat", 2, True),
        ("flat", 1, False), ("curved", 2, True), ("fbp", 2, True), ("fbp", 1, False)])
    def test_matches_cpu(self, kind, nb, direct):
        from numba import cuda
        from leap.kernels.cpu import axial_view_vjp as cpu
        from leap.kernels.cuda.axial_view_vjp import geometry_vjp as cuda_vjp
        plan, f, g = case(kind, nb, direct)
        want = cpu.plan_geometry_vjp(plan, f, g)
        args = cpu.plan_arguments(plan)
        assert (args[-1] > 0) == (kind == "fbp")
        got = cuda_vjp(cuda.to_device(f), cuda.to_device(g), *args)
        assert len(got) == len(want) == (5 if kind == "fbp" else 4)
        for i, (w, h) in enumerate(zip(want, got)):
            assert np.shape(h) == np.shape(w)
            if kind == "parallel" and i in (1, 3):  # no source, no sdd
                assert not np.any(h) and not np.any(w)
                continue
            assert np.linalg.norm(w) > 0
            assert rel_l2(h, w) <= TOL, (i, h, w)

    def test_host_arrays_and_single_sample(self):
        from leap.kernels.cpu import axial_view_vjp as cpu
        from leap.kernels.cuda.axial_view_vjp import geometry_vjp as cuda_vjp
        plan, f, g = case("flat", 1, seed=1)
        want = cpu.plan_geometry_vjp(plan, f, g)
        got = cuda_vjp(f[0], g[0], *cpu.plan_arguments(plan))
        for w, h in zip(want, got):
            assert rel_l2(h, w) <= TOL


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="compiles with the real CUDA target")
def test_axial_view_vjp_kernels_compile_to_ptx():
    """The kernels compile to PTX (sm_90) with their launch argument types
    (``compile_to_ptx``: the typing errors the simulator cannot catch), stage 1 with
    float64 atomics."""
    pytest.importorskip("numba.cuda")
    from numba import float32, float64, int64
    from leap.kernels.cuda import axial_view_vjp as m
    f4, d2, d1, d = float32[:, :, :, ::1], float64[:, ::1], float64[::1], float64
    i1, i3 = int64[::1], int64[:, :, ::1]
    sigs = [
        (m._resample, (f4, float32[:, ::1], i1, i1, f4, i3)),
        (m._accumulate, (f4, i3, f4, d2, d2, d1, d1, int64) + (d,) * 6 + (d2,)),
    ]
    assert "atom.global.add.f64" in compile_to_ptx(sigs)[1]
