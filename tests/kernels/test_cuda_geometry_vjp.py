"""The CUDA geometry VJP of the modular projector (``leap.kernels.cuda.modular_geometry_vjp``)
against the CPU one, under Numba's CUDA simulator, plus a PTX compile check.

As in ``test_cuda_sim.py``, the normal run starts this file again in a subprocess with
``NUMBA_ENABLE_CUDASIM=1`` (the simulator must be on before numba is imported), where the
``TestSim*`` tests run on tiny problems (5×6×4 volume, 3 views, 4×5 detector).
"""
from __future__ import annotations


import numpy as np
import pytest

import leap
from conftest import SIM, compile_to_ptx, run_sim_tests

TOL = 1e-5

DET = leap.Detector(num_rows=4, num_cols=5, pixel_height=1.0, pixel_width=1.0)
VOL = leap.Volume(num_x=5, num_y=6, num_z=4, voxel_width=1.0, voxel_height=1.0)
ANG = np.array([0.1, 1.0, 2.2])


def _rotation(axis, angle):
    axis = axis / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def tilted():
    """A modular beam whose modules are tilted by 0.2 rad about random axes, with random
    heights and offsets."""
    rng = np.random.default_rng(3)
    a, n = ANG, ANG.size
    sources = np.stack([20 * np.sin(a), -20 * np.cos(a), rng.uniform(-1, 1, n)], 1)
    centers = np.stack([-15 * np.sin(a), 15 * np.cos(a), rng.uniform(-0.5, 0.5, n)], 1)
    cols = np.stack([np.cos(a), np.sin(a), np.zeros(n)], 1)
    rows = np.tile([0.0, 0.0, 1.0], (n, 1))
    for v in range(n):
        R = _rotation(rng.standard_normal(3), 0.2)
        cols[v], rows[v] = R @ cols[v], R @ rows[v]
    centers += rng.uniform(-0.3, 0.3, (n, 1)) * cols + rng.uniform(-0.3, 0.3, (n, 1)) * rows
    return leap.ModularBeam(detector=DET, source_positions=sources, module_centers=centers,
                            row_vectors=rows, col_vectors=cols)


def cone_modular():
    return leap.ConeBeam(detector=DET, angles=ANG, sod=20.0, sdd=35.0).to_modular()


GEOS = {"tilted": tilted, "cone_to_modular": cone_modular}


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_cuda_geometry_vjp_under_simulator():
    run_sim_tests(__file__)


class TestSimGeometryVJP:
    """CUDA (simulated) geometry VJP equals the CPU kernel's."""

    __test__ = SIM      # collected only in the simulator subprocess

    @pytest.mark.parametrize("name", list(GEOS))
    @pytest.mark.parametrize("nb", [1, 2])
    def test_matches_cpu(self, name, nb):
        from numba import cuda
        from leap.kernels.cpu.modular_geometry_vjp import geometry_vjp as cpu_vjp
        from leap.kernels.cuda.modular_geometry_vjp import geometry_vjp as cuda_vjp
        geo = GEOS[name]()
        r = np.random.default_rng(nb)
        f = r.standard_normal((nb, *VOL.shape)).astype(np.float32)
        f[:, 1, 2, :] = 0.0                       # skipped voxels
        g = r.standard_normal((nb, *geo.projection_shape)).astype(np.float32)
        args = (geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors,
                VOL.x0, VOL.y0, VOL.z0, VOL.voxel_width, VOL.voxel_height,
                DET.pixel_width, DET.pixel_height)
        want = cpu_vjp(f, g, *args)
        got = cuda_vjp(cuda.to_device(f), cuda.to_device(g), *args)
        for w, h in zip(want, got):
            assert h.shape == w.shape and h.dtype == np.float64
            assert np.linalg.norm(w) > 0
            assert rel(h, w) <= TOL
        # Host arrays are accepted too.
        got = cuda_vjp(f, g, *args)
        for w, h in zip(want, got):
            assert rel(h, w) <= TOL


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="compiles with the real CUDA target")
def test_geometry_vjp_kernels_compile_to_ptx():
    """The kernels compile to PTX (sm_90) with their launch argument types
    (``compile_to_ptx``: the typing errors the simulator cannot catch), stage 1 with
    float64 atomics."""
    pytest.importorskip("numba.cuda")
    from numba import float32, float64
    from leap.kernels.cuda import modular_geometry_vjp as m
    f4, d2, d = float32[:, :, :, ::1], float64[:, ::1], float64
    sigs = [
        (m._accumulate, (f4, f4, d2, d2, d2, d2) + (d,) * 7 + (d2,)),
        (m._combine, (d2,) * 9),
    ]
    assert "atom.global.add.f64" in compile_to_ptx(sigs)[0]
