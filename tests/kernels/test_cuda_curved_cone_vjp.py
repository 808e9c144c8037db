"""The CUDA curved-detector cone-beam geometry VJP (``leap.kernels.cuda.curved_cone_vjp``)
against the CPU one (``leap.kernels.cpu.curved_cone_vjp``), under Numba's CUDA simulator,
plus a PTX compile check.

As in ``test_cuda_axial_view_vjp.py``, the normal run starts this file again in a
subprocess with ``NUMBA_ENABLE_CUDASIM=1`` (the simulator must be on before numba is
imported), where the ``TestSim*`` tests run on tiny problems (6×5×4 volume, 3 views, a
curved detector of 5×9 or 3×9 pixels whose rows the magnified voxels straddle, voxels 1.3
or 0.6 rows tall, some reaching beyond the detector's rows): circular and helical scans,
batches of 1 and 2, footprints two or three pixels wide and four or more (interior
columns), per-view centres and sdd, a row end exactly on the detector's lower edge, and
the torch layer's routing of CUDA tensors. The whole file takes about 20 s on 2 cores.

Both kernels sum in float64 in different orders, so they agree to rounding (measured
≤ 1e-15 relative L2 here; bound ``TOL`` = 1e-10) given the same projection for the row
factor's terms. Without one, the CPU takes those terms from its float32 projection and
the CUDA kernel sums them directly in float64: its result is checked against the CPU's
with a projection of zeros (no row factor terms) plus those terms from a float64 numpy
projection (``projection64``) to TOL, and against the CPU's own to 1e-7 (measured
≤ 2e-9: float32 rounding of a small share of ∂sdd and ∂center_row).
"""
from __future__ import annotations

import numpy as np
import pytest

import leap
from conftest import SIM, compile_to_ptx, rel_l2, run_sim_tests

TOL = 1e-10
ANG = np.array([0.3, 1.9, 4.1])


def case(helical, nb, pixel_scale=1.0, seed=0, pixel_height=0.83, nrows=5):
    """(geometry, volume, f (nb, nz, ny, nx), ḡ (nb, na, nrows, ncols)) of a tiny curved
    cone scan; ``pixel_scale`` < 1 makes the column footprints several pixels wide, a
    ``pixel_height`` above about 1.3 mm the voxels less than a row tall."""
    rng = np.random.default_rng(seed)
    det = leap.Detector(num_rows=nrows, num_cols=9, pixel_height=pixel_height,
                        pixel_width=1.1 * pixel_scale, curved=True, center_col=4.3,
                        center_row=0.52 * (nrows - 1))
    vol = leap.Volume(num_x=6, num_y=5, num_z=4, voxel_width=0.7, voxel_height=0.6,
                      offset_x=0.13, offset_y=-0.21, offset_z=0.1)
    geo = leap.ConeBeam(detector=det, angles=ANG, sod=7.0, sdd=12.5, tau=0.3,
                        helical_pitch=0.4 if helical else 0.0)
    f = rng.uniform(0.0, 1.0, (nb,) + vol.shape).astype(np.float32)
    f[:, :, 1, :] = 0.0                            # a row of empty columns
    f[:, 0, 3, :] = 0.0                            # columns with a zero end voxel
    f[-1, 2, 2, 1] = 0.0                           # a zero voxel inside a column
    g = rng.standard_normal((nb,) + geo.projection_shape).astype(np.float32)
    return geo, vol, f, g


def arguments(geo, vol):
    from leap.kernels.cpu.curved_cone_vjp import plan_arguments
    from leap.kernels.plan import make_plan
    return plan_arguments(make_plan(geo, vol))


def projection(geo, vol, f):
    """The projector's float32 curved cone projection of each sample (row factor in)."""
    return np.stack([leap.project(geo, vol, f[b]) for b in range(f.shape[0])])


def projection64(f, args, nrows, ncols):
    """float64 projection without the row factor, P₀ (nb, na, nrows, ncols), from the
    plain-Python footprint functions column by column (the model of the CPU module)."""
    from leap.kernels import footprints as fp
    (col_dir, source_xy, source_z, sdd, center_col, center_row, fov_r2, x0, y0, z0,
     voxel_width, voxel_height, pixel_width, pixel_height) = args
    f = np.asarray(f, dtype=np.float64)
    nb, nz, ny, nx = f.shape
    na = col_dir.shape[0]
    jj = np.arange(nrows)
    P = np.zeros((nb, na, nrows, ncols))
    for a in range(na):
        for iy in range(ny):
            y = y0 + iy * voxel_width
            for ix in range(nx):
                x = x0 + ix * voxel_width
                if x * x + y * y > fov_r2:
                    continue
                c_lo, c_hi, w, dist = fp.axial_column_footprint(
                    x, y, col_dir[a, 0], col_dir[a, 1], source_xy[a, 0], source_xy[a, 1],
                    sdd[a], fp.CURVED, voxel_width, pixel_width, center_col[a], 0.0, 0.0)
                if not dist > 0:
                    continue
                A, B, _ = fp.row_mapping(z0, voxel_height, source_z[a], dist, sdd[a], True,
                                         pixel_height, center_row[a])
                lo = A + np.arange(nz) * B
                W = np.clip(np.minimum(lo + B, jj[:, None] + 0.5)
                            - np.maximum(lo, jj[:, None] - 0.5), 0.0, None)   # (nrows, nz)
                F = f[:, :, iy, ix] @ W.T                                      # (nb, nrows)
                i0, i1 = fp.column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    P[:, a, :, i] += w * fp.overlap(c_lo, c_hi, i - 0.5, i + 0.5) * F
    return P


def coverage(geo, vol, args):
    """(widest footprint in pixels i1 − i0 + 1, whether a voxel straddles a row edge,
    whether a voxel reaches beyond the detector's rows) over the case's views and columns."""
    from leap.kernels import footprints as fp
    (col_dir, source_xy, source_z, sdd, center_col, center_row, fov_r2, x0, y0, z0,
     voxel_width, voxel_height, pixel_width, pixel_height) = args
    det = geo.detector
    widest, straddle, beyond = 0, False, False
    for a in range(col_dir.shape[0]):
        for iy in range(vol.num_y):
            for ix in range(vol.num_x):
                x, y = x0 + ix * voxel_width, y0 + iy * voxel_width
                c_lo, c_hi, _, dist = fp.axial_column_footprint(
                    x, y, col_dir[a, 0], col_dir[a, 1], source_xy[a, 0], source_xy[a, 1],
                    sdd[a], fp.CURVED, voxel_width, pixel_width, center_col[a], 0.0, 0.0)
                if x * x + y * y > fov_r2 or not dist > 0:
                    continue
                i0, i1 = fp.column_range(c_lo, c_hi, det.num_cols)
                widest = max(widest, i1 - i0 + 1)
                A, B, _ = fp.row_mapping(z0, voxel_height, source_z[a], dist, sdd[a], True,
                                         pixel_height, center_row[a])
                ends = A + 0.5 + np.arange(vol.num_z + 1) * B
                straddle |= bool(np.any(np.floor(ends[1:]) > np.floor(ends[:-1])))
                beyond |= bool(ends[0] < 0 or ends[-1] > det.num_rows)
    return widest, straddle, beyond


def edge_at_row_zero(args, a, iy, ix, q, below=False):
    """``args`` with view a's center_row moved so that voxel edge q of column (iy, ix)
    lies exactly on the detector's lower edge (row position + ½ == 0: in row 0), or
    with ``below`` just under it (off the detector)."""
    from leap.kernels import footprints as fp
    (col_dir, source_xy, source_z, sdd, center_col, center_row, fov_r2, x0, y0, z0,
     voxel_width, voxel_height, pixel_width, pixel_height) = args
    _, _, _, dist = fp.axial_column_footprint(
        x0 + ix * voxel_width, y0 + iy * voxel_width, col_dir[a, 0], col_dir[a, 1],
        source_xy[a, 0], source_xy[a, 1], sdd[a], fp.CURVED, voxel_width, pixel_width,
        center_col[a], 0.0, 0.0)

    def position(c):
        A, B, _ = fp.row_mapping(z0, voxel_height, source_z[a], dist, sdd[a], True,
                                 pixel_height, c)
        return (A + 0.5) + float(q) * B      # the kernels' arithmetic

    c = -position(0.0)
    for _ in range(1000):
        p = position(c)
        if (p < 0.0) if below else (p == 0.0):
            break
        c = np.nextafter(c, -np.inf if below or p > 0.0 else np.inf)
    else:
        raise AssertionError("no centre row puts the edge there")
    rows = np.array(center_row, dtype=np.float64)
    rows[a] = c
    return args[:5] + (rows,) + args[6:]


def assert_close(got, want, tol=TOL, which=range(6)):
    """Every output in ``which`` nonzero and within tol (relative L2); returns the
    worst difference."""
    worst = 0.0
    for i in which:
        w, h = want[i], got[i]
        assert np.shape(h) == np.shape(w), i
        assert np.linalg.norm(w) > 0, i
        worst = max(worst, rel_l2(h, w))
        assert rel_l2(h, w) <= tol, (i, h, w)
    return worst


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="this is the launcher")
def test_cuda_curved_cone_vjp_under_simulator():
    run_sim_tests(__file__)


class TestSimCurvedConeVJP:
    """CUDA (simulated) curved cone geometry VJP equals the CPU kernel's."""

    __test__ = SIM      # collected only in the simulator subprocess

    @pytest.mark.parametrize("helical,nb,pixel_scale,pixel_height,nrows", [
        (False, 2, 1.0, 0.83, 5), (True, 2, 1.0, 0.83, 5), (False, 1, 0.3, 0.83, 5),
        (True, 2, 0.3, 1.7, 3)])
    def test_matches_cpu(self, helical, nb, pixel_scale, pixel_height, nrows):
        """With the caller's projection (and with a projection of zeros, no row factor
        terms) to TOL; without one, to the float64 oracle's row factor terms. Voxels about
        1.3 rows tall (0.6 with tall pixels), footprints up to 2–3 or 5 pixels wide."""
        from numba import cuda
        from leap.kernels.cpu import curved_cone_vjp as cpu
        from leap.kernels.cuda.curved_cone_vjp import geometry_vjp as cuda_vjp
        geo, vol, f, g = case(helical, nb, pixel_scale, nb + int(helical), pixel_height,
                              nrows)
        args = arguments(geo, vol)
        if nb == 1:
            # Per-view sdd and detector centres (the kernels take them per view).
            rng = np.random.default_rng(11)
            na = args[0].shape[0]
            args = args[:3] + (args[3] * rng.uniform(0.95, 1.05, na),
                               args[4] + rng.uniform(-0.7, 0.7, na),
                               args[5] + rng.uniform(-0.7, 0.7, na)) + args[6:]
        widest, straddle, beyond = coverage(geo, vol, args)
        assert straddle and beyond and widest >= (4 if pixel_scale < 1 else 2)
        fd, gd = cuda.to_device(f), cuda.to_device(g)
        P = projection(geo, vol, f)
        zeros = np.zeros_like(P)
        want_p = cpu.geometry_vjp(f, g, *args, projection=P)
        want_0 = cpu.geometry_vjp(f, g, *args, projection=zeros)
        got_p = cuda_vjp(fd, gd, *args, projection=cuda.to_device(P))
        got_0 = cuda_vjp(fd, gd, *args, projection=zeros)
        worst = [assert_close(got_p, want_p), assert_close(got_0, want_0)]
        # No projection: the row factor terms summed directly (float64), against the
        # float64 projection's: R = Σ ḡ·P₀, ∂ += Σ_j ∂rf_j·R_j (sdd, center_row).
        got = cuda_vjp(fd, gd, *args)
        R = np.einsum("bajk,bajk->aj", g.astype(np.float64),
                      projection64(f, args, *g.shape[2:]))
        _, drf_row, drf_sdd = cpu.row_factors(g.shape[2], args[3], args[5], args[13])
        want = list(want_0)
        want[3] = want_0[3] + np.sum(drf_sdd * R, axis=1)
        want[5] = want_0[5] + np.sum(drf_row * R, axis=1)
        worst.append(assert_close(got, want))
        # The CPU's own, its row factor terms from a float32 projection.
        f32 = assert_close(got, cpu.geometry_vjp(f, g, *args), tol=1e-7)
        print(f"worst relative difference {max(worst):.1e} (CPU's own P0: {f32:.1e})")

    def test_host_arrays_and_single_sample(self):
        from leap.kernels.cpu import curved_cone_vjp as cpu
        from leap.kernels.cuda.curved_cone_vjp import plan_geometry_vjp as cuda_plan_vjp
        from leap.kernels.plan import make_plan
        geo, vol, f, g = case(True, 1, seed=5)
        plan = make_plan(geo, vol)
        P = projection(geo, vol, f)
        assert_close(cuda_plan_vjp(plan, f[0], g[0], P[0]),
                     cpu.plan_geometry_vjp(plan, f[0], g[0], P[0]))

    def test_comparison_is_sensitive(self):
        """The comparison resolves far less than a wrong term: a 1e-6 relative change
        of ḡ moves every output by more than 100·TOL, and leaving out the row factor's
        derivative terms moves ∂sdd and ∂center_row by more than 1e-3."""
        from leap.kernels.cpu import curved_cone_vjp as cpu
        from leap.kernels.cuda.curved_cone_vjp import geometry_vjp as cuda_vjp
        geo, vol, f, g = case(False, 1, seed=3)
        args = arguments(geo, vol)
        P = projection(geo, vol, f)
        want = cpu.geometry_vjp(f, g, *args, projection=P)
        rng = np.random.default_rng(9)
        g2 = (g * (1.0 + 1e-6 * rng.standard_normal(g.shape))).astype(np.float32)
        got = cuda_vjp(f, g2, *args, projection=P)
        for i in range(6):
            assert rel_l2(got[i], want[i]) > 100 * TOL, i
        got = cuda_vjp(f, g, *args, projection=np.zeros_like(P))
        assert_close(got, want, which=(0, 1, 2, 4))
        for i in (3, 5):
            assert rel_l2(got[i], want[i]) > 1e-3, i

    def test_end_on_the_detector_lower_edge(self):
        """A row end exactly on the detector's lower edge counts in row 0 (the CPU's
        one-sided convention), which matters: just below it, off the detector, ∂s_z moves
        by more than 1e-2 (relative)."""
        from leap.kernels.cpu import curved_cone_vjp as cpu
        from leap.kernels.cuda.curved_cone_vjp import geometry_vjp as cuda_vjp
        geo, vol, f, g = case(False, 1, seed=0)
        args = edge_at_row_zero(arguments(geo, vol), 1, 2, 3, 2)
        P = projection(geo, vol, f)
        want = cpu.geometry_vjp(f, g, *args, projection=P)
        assert_close(cuda_vjp(f, g, *args, projection=P), want)
        below = cpu.geometry_vjp(f, g, *edge_at_row_zero(args, 1, 2, 3, 2, below=True),
                                 projection=P)
        assert rel_l2(below[2], want[2]) > 1e-2

    def test_torch_layer_routes_cuda_tensors(self, monkeypatch):
        """``leap.torch._curved_params`` sends CUDA tensors to the CUDA kernel with the
        remembered projection: CPU tensors made to look like CUDA ones (the routing test
        and the zero-copy view patched; no torch GPU here) give the CPU path's parameter
        gradients."""
        torch = pytest.importorskip("torch")
        from numba import cuda
        import leap.devices.arrays
        from leap.kernels.cuda import curved_cone_vjp as ccv
        from leap.torch import Projector
        from leap.torch import _curved_params as cp

        def gradients():
            proj = Projector(forward_project=True)
            proj.set_conebeam(4, 5, 9, 0.83, 1.1, 2.1, 4.3, np.array([10., 100., 190., 280.]),
                              7.0, 12.5, 0.3, 0.4)
            proj.leapct.set_curvedDetector()
            proj.set_volume(6, 5, 4, 0.7, 0.6, 0.13, -0.21, 0.1)
            params = proj.geometry_parameters()
            rng = np.random.default_rng(4)
            f = torch.tensor(rng.random((2, *proj.get_volume_dim())), dtype=torch.float32)
            w = torch.tensor(rng.standard_normal((2, *proj.get_projection_dim())),
                             dtype=torch.float32)
            (proj(f) * w).sum().backward()
            return {k: p.grad.numpy().copy() for k, p in params.items()
                    if p.grad is not None}

        want = gradients()
        calls = []
        run = ccv.plan_geometry_vjp

        def counted(plan, f, gbar, projection=None, stream=0):
            calls.append((type(f).__name__, projection is not None))
            return run(plan, f, gbar, projection, stream)

        monkeypatch.setattr(cp, "_numba_cuda", lambda f, gbar: True)
        monkeypatch.setattr(leap.devices.arrays, "as_numba", lambda t: cuda.to_device(t.numpy()))
        monkeypatch.setattr(ccv, "plan_geometry_vjp", counted)
        got = gradients()
        assert calls == [("FakeCUDAArray", True)]
        assert set(got) == set(want) and {"sdd", "centerRow", "phis"} <= set(want)
        for k in want:
            assert rel_l2(got[k], want[k]) <= TOL, k

    def test_bad_shapes(self):
        from leap.kernels.cuda.curved_cone_vjp import geometry_vjp as cuda_vjp
        geo, vol, f, g = case(False, 2, seed=1)
        args = arguments(geo, vol)
        with pytest.raises(ValueError, match="one batch"):
            cuda_vjp(f[:1], g, *args)
        with pytest.raises(ValueError, match="projection"):
            cuda_vjp(f, g, *args, projection=g[:1])


@pytest.mark.slow
@pytest.mark.skipif(SIM, reason="compiles with the real CUDA target")
def test_curved_cone_vjp_kernels_compile_to_ptx():
    """The kernels compile to PTX (sm_90) with their launch argument types
    (``compile_to_ptx``: the typing errors the simulator cannot catch), stage 1 with
    float64 atomics."""
    pytest.importorskip("numba.cuda")
    from numba import boolean, float32, float64, int64
    from leap.kernels.cuda import curved_cone_vjp as m
    f4, d2, d1, d = float32[:, :, :, ::1], float64[:, ::1], float64[::1], float64
    i3 = int64[:, :, ::1]
    sigs = [
        (m._extent, (f4, i3)),
        (m._accumulate, (f4, i3, f4, d2, d2, d2, boolean, d2, d2) + (d1,) * 4 + (d,) * 8
         + (d2,)),
        (m._row_dots, (f4, f4, d2)),
    ]
    assert "atom.global.add.f64" in compile_to_ptx(sigs)[1]
