"""CUDA back-end tests: every kernel under Numba's CUDA simulator, plus real-GPU checks.

The simulator can only be switched on before numba is imported, so the normal test
run starts this same file again in a subprocess with ``NUMBA_ENABLE_CUDASIM=1``
(:func:`test_cuda_kernels_under_simulator`); there the ``TestSim*`` tests run. The
simulator executes every CUDA thread as Python, so problems are tiny (4×5×3 volumes,
3–4 views, 4×6 detectors). Tests marked ``gpu`` need a real NVIDIA GPU (CuPy / torch
zero-copy, pointer checks) and are skipped without one; ``benchmarks/gpu_check.py``
covers the rest on real hardware.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import leap
from conftest import SIM, compile_to_ptx, run_sim_tests
from leap.reconstruction.fbp import fbp, fbp_adjoint
from leap.geometry import ConeParallelBeam

TOL = 1e-5

def rel(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def dot_mismatch(P, PT, f_shape, g_shape, seed=0):
    r = np.random.default_rng(seed)
    f = r.standard_normal(f_shape).astype(np.float32)
    g = r.standard_normal(g_shape).astype(np.float32)
    Pf = np.asarray(P(f), dtype=np.float64)
    PTg = np.asarray(PT(g), dtype=np.float64)
    denom = np.linalg.norm(Pf) * np.linalg.norm(g)
    return abs(np.vdot(Pf, g) - np.vdot(f, PTg)) / denom if denom else 0.0


# --------------------------------------------------------------------- tiny cases

DET = leap.Detector(num_rows=4, num_cols=6, pixel_height=1.0, pixel_width=1.0,
                    center_row=1.5, center_col=2.5)
VOL = leap.Volume(num_x=4, num_y=5, num_z=3, voxel_width=1.0, voxel_height=1.0)
ANG = np.array([0.1, 1.0, 2.2])
FULL = np.linspace(0, 2 * np.pi, 4, endpoint=False)


def geometries(angles=ANG):
    cone = leap.ConeBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0)
    # Flying focal spot: alternating in-plane and z shifts (exaggerated: 0.5 mm, 0.4 mm).
    sign = np.where(np.arange(len(angles)) % 2, 1.0, -1.0)
    shifts = np.stack([0.025 * sign, 0.4 * sign, 0.3 * sign], axis=1)
    return {
        "cone_curved_ffs": leap.ConeBeam(detector=DET.with_changes(curved=True), angles=angles,
                                         sod=20.0, sdd=40.0, helical_pitch=0.3,
                                         source_shifts=shifts),
        "cone_flat_ffs": leap.ConeBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0,
                                       source_shifts=shifts),
        "parallel": leap.ParallelBeam(detector=DET, angles=angles),
        "parallel_2d": leap.ParallelBeam(detector=DET.with_changes(num_rows=1, center_row=0.0),
                                         angles=angles),
        "fan": leap.FanBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0, tau=0.7),
        "fan_curved": leap.FanBeam(detector=DET.with_changes(curved=True), angles=angles,
                                   sod=20.0, sdd=40.0),
        "cone": cone,
        "cone_curved": leap.ConeBeam(detector=DET.with_changes(curved=True), angles=angles,
                                     sod=20.0, sdd=40.0),
        "cone_helical": leap.ConeBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0,
                                      helical_pitch=0.3),
        "cone_tilted": leap.ConeBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0, tilt=0.05),
        "modular": cone.to_modular(),
        "cone_parallel": ConeParallelBeam(detector=DET, angles=angles, sod=20.0, sdd=40.0,
                                          tau=0.4),
        "cone_parallel_helical": ConeParallelBeam(detector=DET, angles=angles, sod=20.0,
                                                  sdd=40.0, helical_pitch=0.3),
    }


def vol_for(geo):
    if geo.detector.num_rows == 1:
        return VOL.with_changes(num_z=1)
    return VOL


GEOS = geometries()
FBP_GEOS = {k: v for k, v in geometries(FULL).items()
            if k not in ("cone_tilted", "cone_parallel_helical")}


class CAIArray:
    """A foreign CUDA array: NumPy memory behind ``__cuda_array_interface__`` (under the
    simulator device pointers are host addresses). ``device`` fakes the GPU it is on."""

    def __init__(self, a, device=None):
        self.a = a
        if device is not None:
            self.device = SimpleNamespace(id=device)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.a.shape, "typestr": self.a.dtype.str, "version": 3,
                "data": (self.a.__array_interface__["data"][0], False), "strides": None,
                "stream": None}


# ---------------------------------------------------------------- the simulator run

@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_cuda_kernels_under_simulator():
    run_sim_tests(__file__)


class TestSimKernels:
    """Every geometry: GPU vs CPU parity, adjoint, chunked/multi-device host path."""

    __test__ = SIM      # collected only in the simulator subprocess

    @pytest.mark.parametrize("name", list(GEOS))
    def test_parity_adjoint_chunks(self, name):
        from numba import cuda
        geo = GEOS[name]
        vol = vol_for(geo)
        r = np.random.default_rng(1)
        f = r.standard_normal(vol.shape).astype(np.float32)
        g = r.standard_normal(geo.projection_shape).astype(np.float32)
        p_cpu = leap.project(geo, vol, f)
        b_cpu = leap.backproject(geo, vol, g)
        p_gpu = leap.project(geo, vol, cuda.to_device(f)).copy_to_host()
        b_gpu = leap.backproject(geo, vol, cuda.to_device(g)).copy_to_host()
        assert np.linalg.norm(p_cpu) > 0 and np.linalg.norm(b_cpu) > 0
        assert rel(p_gpu, p_cpu) <= TOL
        assert rel(b_gpu, b_cpu) <= TOL
        # Adjoint on the GPU alone.
        mm = dot_mismatch(lambda x: leap.project(geo, vol, cuda.to_device(x)).copy_to_host(),
                          lambda y: leap.backproject(geo, vol, cuda.to_device(y)).copy_to_host(),
                          vol.shape, geo.projection_shape)
        assert mm <= TOL
        # Host data on the "GPU": unchunked, chunked (1 slice / view per chunk, last
        # chunk partial for 3 slices and views split 2 ways) and a two-device split.
        p_one = leap.project(geo, vol, f, devices=0)
        b_one = leap.backproject(geo, vol, g, devices=0)
        assert isinstance(p_one, np.ndarray) and isinstance(b_one, np.ndarray)
        assert rel(p_one, p_gpu) <= 1e-6 and rel(b_one, b_gpu) <= 1e-6
        for devs, cap in (([0], 2), ([0, 0], 1), ([0, 0], None)):
            assert rel(leap.project(geo, vol, f, devices=devs, max_slices=cap), p_one) <= TOL
            assert rel(leap.backproject(geo, vol, g, devices=devs, max_slices=cap), b_one) <= TOL

    def test_projector_gather_random_geometries(self):
        """The gather projector must find every voxel column whose footprint meets a
        pixel: random detectors (flat/curved, off-centre), voxel sizes 0.2–1.8× the
        pixel, volume offsets, tau, helical pitch, cone-parallel and a 45° view, vs the
        CPU scatter."""
        from numba import cuda
        r = np.random.default_rng(7)
        for trial in range(24):
            nrows = int(r.integers(1, 6))
            det = leap.Detector(num_rows=nrows, num_cols=int(r.integers(5, 12)),
                                pixel_height=float(r.uniform(0.5, 2)),
                                pixel_width=float(r.uniform(0.5, 2)),
                                center_row=float(r.uniform(0, nrows - 1)),
                                center_col=float(r.uniform(2, 8)),
                                curved=bool(r.integers(0, 2)))
            ang = np.concatenate([[np.pi / 4], r.uniform(0, 2 * np.pi, 2)])
            kind = trial % 5
            sod = float(r.uniform(15, 30))
            sdd = sod * float(r.uniform(1.2, 2.0))
            if kind == 0:
                geo = leap.ParallelBeam(detector=det.with_changes(curved=False), angles=ang)
            elif kind == 1:
                geo = leap.FanBeam(detector=det, angles=ang, sod=sod, sdd=sdd,
                                   tau=float(r.uniform(-2, 2)))
            elif kind == 4:
                geo = ConeParallelBeam(detector=det.with_changes(curved=False), angles=ang,
                                       sod=sod, sdd=sdd, tau=float(r.uniform(-2, 2)),
                                       helical_pitch=float(r.uniform(-1, 1)))
            else:
                geo = leap.ConeBeam(detector=det, angles=ang, sod=sod, sdd=sdd,
                                    helical_pitch=float(r.uniform(-1, 1)) * (kind == 3))
            vol = leap.Volume(num_x=int(r.integers(3, 8)), num_y=int(r.integers(3, 8)),
                              num_z=1 if nrows == 1 else int(r.integers(1, 4)),
                              voxel_width=float(r.uniform(0.2, 1.8)) * det.pixel_width,
                              voxel_height=float(r.uniform(0.3, 1.5)) * det.pixel_height,
                              offset_x=float(r.uniform(-1, 1)),
                              offset_y=float(r.uniform(-1, 1)))
            f = r.standard_normal(vol.shape).astype(np.float32)
            p_cpu = leap.project(geo, vol, f)
            p_gpu = leap.project(geo, vol, cuda.to_device(f)).copy_to_host()
            assert rel(p_gpu, p_cpu) <= TOL, (trial, geo, vol)

    @pytest.mark.parametrize("name", ["fan", "cone_helical", "cone_parallel"])
    def test_fbp_weighted_operators(self, name):
        """The FBP back-projection weights (fan and cone-parallel distance weights,
        helical slice weights) and their transposes in the projector."""
        from numba import cuda
        from leap.reconstruction.fbp import helical_slice_weights
        geo = geometries(FULL)[name]
        kw = ({"fan_distance_weight": True} if name in ("fan", "cone_parallel")
              else {"slice_weights": helical_slice_weights(geo, VOL)})
        r = np.random.default_rng(2)
        f = r.standard_normal(VOL.shape).astype(np.float32)
        g = r.standard_normal(geo.projection_shape).astype(np.float32)
        assert rel(leap.project(geo, VOL, cuda.to_device(f), **kw).copy_to_host(),
                   leap.project(geo, VOL, f, **kw)) <= TOL
        assert rel(leap.backproject(geo, VOL, cuda.to_device(g), **kw).copy_to_host(),
                   leap.backproject(geo, VOL, g, **kw)) <= TOL
        assert rel(leap.backproject(geo, VOL, g, devices=[0, 0], max_slices=1, **kw),
                   leap.backproject(geo, VOL, g, **kw)) <= TOL

    @pytest.mark.parametrize("name", list(FBP_GEOS))
    def test_fbp(self, name):
        from numba import cuda
        geo = FBP_GEOS[name]
        vol = vol_for(geo)
        kw = {"truncated_scan": name == "fan"}
        r = np.random.default_rng(3)
        g = r.standard_normal(geo.projection_shape).astype(np.float32)
        f = r.standard_normal(vol.shape).astype(np.float32)
        ref = fbp(geo, vol, g, **kw)
        assert rel(fbp(geo, vol, cuda.to_device(g), **kw).copy_to_host(), ref) <= TOL
        assert rel(fbp(geo, vol, g, devices=[0, 0], max_slices=1, **kw), ref) <= TOL
        assert rel(fbp_adjoint(geo, vol, cuda.to_device(f), **kw).copy_to_host(),
                   fbp_adjoint(geo, vol, f, **kw)) <= TOL
        mm = dot_mismatch(lambda y: fbp(geo, vol, cuda.to_device(y), **kw).copy_to_host(),
                          lambda x: fbp_adjoint(geo, vol, cuda.to_device(x), **kw).copy_to_host(),
                          geo.projection_shape, vol.shape)
        assert mm <= TOL

    def test_fbp_offset_scan(self):
        from numba import cuda
        geo = leap.ConeBeam(detector=DET.with_changes(center_col=1.0), angles=FULL,
                            sod=20.0, sdd=40.0)
        g = np.random.default_rng(4).standard_normal(geo.projection_shape).astype(np.float32)
        f = np.random.default_rng(5).standard_normal(VOL.shape).astype(np.float32)
        ref = fbp(geo, VOL, g, offset_scan=True)
        assert rel(fbp(geo, VOL, cuda.to_device(g), offset_scan=True).copy_to_host(), ref) <= TOL
        assert rel(fbp(geo, VOL, g, offset_scan=True, devices=[0, 0], max_slices=1), ref) <= TOL
        assert rel(fbp_adjoint(geo, VOL, cuda.to_device(f), offset_scan=True).copy_to_host(),
                   fbp_adjoint(geo, VOL, f, offset_scan=True)) <= TOL

    def test_ramp_filter_kernel(self):
        """The direct-convolution filter equals leap.reconstruction.filters.filter_rows (both directions)."""
        from numba import cuda
        from leap.reconstruction.filters import filter_rows, ramp_response
        from leap.kernels.cuda.filters import filter_rows as gpu_filter_rows
        H = ramp_response(6, 0.8, 2)
        x = np.random.default_rng(6).standard_normal((2, 3, 6)).astype(np.float32)
        for ext in (False, True):
            for tr in (False, True):
                ref = x.copy()
                filter_rows(ref, H, extrapolate=ext, transpose=tr)
                d = cuda.to_device(x)
                gpu_filter_rows(d, H, cuda.default_stream(), extrapolate=ext, transpose=tr)
                assert rel(d.copy_to_host(), ref) <= 1e-6


class TestSimArrays:
    """Zero-copy through __cuda_array_interface__, output kinds, and bad input."""

    __test__ = SIM

    def test_cai_zero_copy(self):
        geo, vol = GEOS["cone"], VOL
        r = np.random.default_rng(7)
        f = r.standard_normal(vol.shape).astype(np.float32)
        gbuf = np.full(geo.projection_shape, np.nan, dtype=np.float32)
        fin, gout = CAIArray(f), CAIArray(gbuf)
        res = leap.project(geo, vol, fin, out=gout)
        assert res is gout
        # The kernel wrote straight into the caller's buffer: no copy on either side.
        from leap import arrays
        assert arrays.data_pointer(res) == gbuf.__array_interface__["data"][0]
        assert rel(gbuf, leap.project(geo, vol, f)) <= TOL
        fbuf = np.zeros(vol.shape, dtype=np.float32)
        leap.backproject(geo, vol, CAIArray(gbuf), out=CAIArray(fbuf))
        assert rel(fbuf, leap.backproject(geo, vol, gbuf)) <= TOL
        vbuf = np.zeros(vol.shape, dtype=np.float32)
        fgeo = FBP_GEOS["cone"]
        g2 = leap.project(fgeo, vol, f)
        fbp(fgeo, vol, CAIArray(g2), out=CAIArray(vbuf))
        assert rel(vbuf, fbp(fgeo, vol, g2)) <= TOL

    def test_numba_out_kind_and_pointer(self):
        from numba import cuda
        from leap import arrays
        geo, vol = GEOS["fan"], VOL
        f = cuda.to_device(np.ones(vol.shape, dtype=np.float32))
        out = cuda.device_array(geo.projection_shape, dtype=np.float32)
        ptr = arrays.data_pointer(out)
        res = leap.project(geo, vol, f, out=out)
        assert res is out and arrays.data_pointer(res) == ptr
        new = leap.project(geo, vol, f)
        assert arrays.array_kind(new) == arrays.NUMBA
        assert rel(new.copy_to_host(), out.copy_to_host()) == 0.0

    def test_bad_input(self):
        from numba import cuda
        geo, vol = GEOS["cone"], VOL
        f = np.zeros(vol.shape, dtype=np.float32)
        g = np.zeros(geo.projection_shape, dtype=np.float32)
        with pytest.raises(TypeError, match="CUDA array"):
            leap.project(geo, vol, f, out=cuda.to_device(g))          # CPU in, GPU out
        with pytest.raises(TypeError, match="CUDA array"):
            leap.backproject(geo, vol, cuda.to_device(g), out=f)      # GPU in, CPU out
        with pytest.raises(ValueError, match="different GPUs"):
            leap.project(geo, vol, CAIArray(f, device=0), out=CAIArray(g, device=1))
        with pytest.raises(TypeError, match="float32"):
            leap.project(geo, vol, CAIArray(f.astype(np.float64)))
        with pytest.raises(ValueError, match="shape"):
            leap.project(geo, vol, cuda.to_device(g))
        with pytest.raises(ValueError, match="overlap"):
            leap.backproject(geo, vol, CAIArray(g), out=CAIArray(g.reshape(-1)[:f.size].reshape(f.shape)))
        with pytest.raises(TypeError, match="CUDA array"):
            fbp(FBP_GEOS["cone"], vol,
                cuda.to_device(np.zeros(FBP_GEOS["cone"].projection_shape, np.float32)), out=f)
        with pytest.raises(ValueError, match="does not exist"):
            leap.project(geo, vol, f, devices=[0, 3])

    def test_device_selection(self):
        from leap import gpu
        geo, vol = GEOS["parallel"], VOL
        f = np.random.default_rng(8).standard_normal(vol.shape).astype(np.float32)
        ref = leap.project(geo, vol, f)
        try:
            gpu.set_devices([0, 0])
            gpu.set_max_slices(1)
            assert gpu.get_devices() == [0, 0] and gpu.get_max_slices() == 1
            assert rel(leap.project(geo, vol, f), ref) <= TOL
        finally:
            gpu.set_devices(-1)
            gpu.set_max_slices(None)
        assert gpu.get_devices() == []


# ------------------------------------------------------- PTX compilation (no GPU)

@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="compiles with the real CUDA target")
def test_kernels_compile_to_ptx():
    """The simulator runs kernels as Python, so it cannot catch Numba CUDA typing
    errors; compiling every kernel to PTX (sm_90) with the launch argument types does.
    Needs NVVM/NVRTC (the ``gpu`` extra), not a GPU."""
    pytest.importorskip("numba.cuda")
    from numba import boolean, float32, float64, int64
    from leap.kernels.cuda import axial, filters, modular
    f3, d2, d1, d = float32[:, :, ::1], float64[:, ::1], float64[::1], float64
    sigs = [
        (axial.volume_z_cumsum, (f3, f3)),
        (axial.projection_row_cumsum, (f3, d1, f3)),
        (axial.fill, (f3, float32)),
        (axial._project, (f3, f3, d2, d2, d1, d2, d1, d2, boolean, d, d, d, int64, boolean)
         + (d,) * 11 + (boolean,)),
        (axial._backproject, (f3, f3, d2, d2, d1, d2, d2, boolean, d, d, d, int64, boolean)
         + (d,) * 11 + (boolean,)),
        (modular._project, (f3, f3, d2, d2, d2, d2) + (d,) * 7),
        (modular._backproject, (f3, f3, d2, d2, d2, d2) + (d,) * 7 + (boolean,)),
        (filters._scale, (f3, f3)),
        (filters._pad_columns, (f3, d1, int64, f3)),
        (filters._crop_columns, (f3, float32[::1], int64, f3)),
        (filters._copy, (f3, f3)),
        (filters._convolve_rows, (float32[:, ::1], d1, float32[:, ::1], int64, boolean)),
    ]
    compile_to_ptx(sigs)


# ----------------------------------------------------------------------- real GPU

def _have_gpu():
    if SIM:
        return False
    try:
        from numba import cuda
        return cuda.is_available()
    except Exception:  # noqa: BLE001
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _have_gpu(), reason="needs an NVIDIA GPU")
def test_cupy_zero_copy():
    cp = pytest.importorskip("cupy")
    geo, vol = GEOS["cone"], VOL
    f = np.random.default_rng(9).standard_normal(vol.shape).astype(np.float32)
    fd = cp.asarray(f)
    out = cp.empty(geo.projection_shape, dtype=cp.float32)
    res = leap.project(geo, vol, fd, out=out)
    assert res is out and res.data.ptr == out.data.ptr
    new = leap.project(geo, vol, fd)
    assert isinstance(new, cp.ndarray)
    assert rel(cp.asnumpy(new), leap.project(geo, vol, f)) <= TOL
    with pytest.raises(TypeError, match="float32"):
        leap.project(geo, vol, fd.astype(cp.float64))


@pytest.mark.gpu
@pytest.mark.skipif(not _have_gpu(), reason="needs an NVIDIA GPU")
def test_torch_zero_copy():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    geo, vol = GEOS["cone"], VOL
    f = torch.randn(vol.shape, device="cuda")
    out = torch.empty(geo.projection_shape, device="cuda")
    res = leap.project(geo, vol, f, out=out)
    assert res is out and res.data_ptr() == out.data_ptr()
    new = leap.backproject(geo, vol, out)
    assert isinstance(new, torch.Tensor) and new.is_cuda
    assert rel(new.cpu().numpy(), leap.backproject(geo, vol, out.cpu().numpy())) <= TOL
