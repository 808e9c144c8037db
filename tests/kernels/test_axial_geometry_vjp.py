"""The column-wise geometry VJP for vertical modules
(``leap.kernels.cpu.axial_geometry_vjp``) against the general per-voxel one
(``leap.kernels.cpu.modular_geometry_vjp``, the same model) and against finite
differences of the model, and ``leap.torch``'s routing to it (issue 35).

Agreement with the general kernel is to float rounding (both sum float32 data in
float64; measured about 1e-13): the tolerance 1e-6 is far below what a wrong term gives
(:func:`test_the_comparison_sees_a_small_change_of_the_model`). The finite differences
are central differences of a float64 evaluation of the model (the plain-Python footprint
functions) at a step of 1e-5 mm, on geometries whose footprint ends stay clear of pixel
edges (odd row counts, views away from the diagonals), as in
``tests/torch/test_geometry_gradients.py``.
"""
import numpy as np
import pytest

import leap
from conftest import with_numba_threads
from leap.kernels import footprints as fp
from leap.kernels.cpu import axial_geometry_vjp as axial_vjp
from leap.kernels.cpu.modular_geometry_vjp import geometry_vjp as general_vjp

TOL = 1e-6


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def args_of(geo, vol):
    d = geo.detector
    return (geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors,
            vol.x0, vol.y0, vol.z0, vol.voxel_width, vol.voxel_height, d.pixel_width,
            d.pixel_height)


def assert_same(got, want, tol=TOL):
    """Each of the four gradients: relative difference ≤ tol, and nonzero."""
    for name, g, w in zip(("sources", "centers", "rows", "cols"), got, want):
        assert g.shape == w.shape and g.dtype == np.float64
        assert np.linalg.norm(w) > 0, name
        assert rel(g, w) <= tol, (name, rel(g, w))


def random_vertical(rng, n, det, mirrored=False):
    """A modular beam of n vertical modules, each view with its own source (distance,
    lateral offset, height) and module (distance, lateral offset, height); ``mirrored``
    flips every other module's column vector (the projectors then take the general
    kernels, but the column-wise VJP's model still holds)."""
    phi = rng.uniform(0, 2 * np.pi, n)
    toward = np.stack([np.cos(phi), np.sin(phi), np.zeros(n)], 1)
    col = np.stack([-np.sin(phi), np.cos(phi), np.zeros(n)], 1)
    sod = rng.uniform(20.0, 40.0)
    sources = (sod + rng.uniform(-3, 3, (n, 1))) * toward + col * rng.uniform(-2, 2, (n, 1))
    sources[:, 2] = rng.uniform(-2, 2, n)
    sdd = sod + rng.uniform(10.0, 40.0) + rng.uniform(-3, 3, n)
    centers = sources - sdd[:, None] * toward + col * rng.uniform(-3, 3, (n, 1))
    centers[:, 2] = rng.uniform(-2, 2, n)
    if mirrored:
        col[::2] *= -1.0
    rows = np.tile([0.0, 0.0, 1.0], (n, 1))
    return leap.ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                            row_vectors=rows, col_vectors=col)


DET = leap.Detector(num_rows=9, num_cols=11, pixel_height=0.9, pixel_width=0.8)
VOL = leap.Volume(num_x=6, num_y=5, num_z=7, voxel_width=0.6, voxel_height=0.5,
                  offset_x=0.3, offset_y=-0.2, offset_z=0.4)
ANGLES = np.linspace(0.0, 2 * np.pi, 7, endpoint=False) + 0.2


def cone_cases():
    """Untilted cone beams in modular form (vertical modules), each with random sod,
    sdd, detector offsets, tau or helical pitch."""
    rng = np.random.default_rng(11)
    out = {}
    for name, kw in (("plain", {}), ("tau", dict(tau=1.7)), ("helical", dict(helical_pitch=0.8)),
                     ("offsets", dict(tau=-0.9, helical_pitch=-0.5))):
        sod = rng.uniform(15.0, 30.0)
        det = DET
        if name in ("offsets", "tau"):
            det = DET.with_changes(center_col=5.0 + rng.uniform(-2, 2),
                                   center_row=4.0 + rng.uniform(-1.5, 1.5))
        cone = leap.ConeBeam(detector=det, angles=ANGLES, sod=sod,
                             sdd=sod + rng.uniform(10.0, 30.0), **kw)
        out[name] = cone.to_modular()
    return out


CONES = cone_cases()


def data(rng, geo, vol, nb, sparse=False):
    f = rng.uniform(0.0, 1.0, (nb,) + vol.shape).astype(np.float32)
    if sparse:
        # Empty voxel columns, and columns empty in one sample only.
        f[:, :, 1, :] = 0.0
        f[:, :, :, 2] = 0.0
        f[0, :, 3, 4] = 0.0
        f[:, :2, 0, 0] = 0.0                 # a column that starts higher up
    g = rng.standard_normal((nb,) + geo.projection_shape).astype(np.float32)
    return f, g


@pytest.mark.parametrize("nb", [1, 2])
@pytest.mark.parametrize("name", sorted(CONES))
def test_cone_beams_in_modular_form_match_the_general_kernel(name, nb):
    geo = CONES[name]
    assert geo.vertical_modules() is not None
    f, g = data(np.random.default_rng(nb), geo, VOL, nb, sparse=nb == 2)
    args = args_of(geo, VOL)
    assert_same(axial_vjp.geometry_vjp(f, g, *args), general_vjp(f, g, *args))


@pytest.mark.parametrize("seed", range(4))
def test_random_vertical_modules_match_the_general_kernel(seed):
    rng = np.random.default_rng(100 + seed)
    geo = random_vertical(rng, 5, DET, mirrored=seed == 3)
    vol = VOL.with_changes(num_z=4 + seed, offset_z=rng.uniform(-1, 1))
    f, g = data(rng, geo, vol, 1 + seed % 2, sparse=seed % 2 == 0)
    args = args_of(geo, vol)
    assert_same(axial_vjp.geometry_vjp(f, g, *args), general_vjp(f, g, *args))


def test_wide_footprints_and_the_detector_edges():
    """Voxels much wider than a pixel (footprints over three or more columns: the
    interior columns' combined sums) and a volume reaching past the detector's sides,
    top and bottom (ends off the detector)."""
    rng = np.random.default_rng(5)
    det = leap.Detector(num_rows=6, num_cols=7, pixel_height=0.3, pixel_width=0.25)
    vol = leap.Volume(num_x=5, num_y=5, num_z=8, voxel_width=0.9, voxel_height=0.7)
    geo = leap.ConeBeam(detector=det, angles=ANGLES, sod=12.0, sdd=20.0).to_modular()
    f, g = data(rng, geo, vol, 2)
    args = args_of(geo, vol)
    assert_same(axial_vjp.geometry_vjp(f, g, *args), general_vjp(f, g, *args))


def test_ends_on_pixel_edges_take_the_general_kernels_side():
    """Row and column ends exactly on pixel edges (binary-exact geometry: magnification
    2, voxels half a pixel): the column-wise kernel's affinely stepped row ends are
    recomputed there as the general kernel computes them, so both take the same
    one-sided derivative. With a single voxel a wrong side would change the result by
    O(1)."""
    theta = [np.array([[0.0, -10.0, 0.0]]), np.array([[0.0, 10.0, 0.0]]),
             np.array([[0.0, 0.0, 1.0]]), np.array([[1.0, 0.0, 0.0]])]
    gbar = np.array([[[0.3, 1.1, 2.9], [0.7, 1.3, 2.2], [0.2, 0.5, 1.7]]], np.float32)
    for nz, z0 in ((1, 0.0), (3, -0.5), (2, -0.25)):
        f = np.ones((nz, 1, 1), np.float32)
        args = (*theta, 0.0, 0.0, z0, 0.5, 0.5, 1.0, 1.0)
        assert_same(axial_vjp.geometry_vjp(f, gbar, *args), general_vjp(f, gbar, *args),
                    tol=1e-12)
    # Many columns and views with edges on pixel edges: a centred volume of even height
    # on a detector with an even number of rows puts z = 0 on the middle row edge.
    geo = leap.ConeBeam(detector=DET.with_changes(num_rows=10), angles=ANGLES, sod=20.0,
                        sdd=40.0).to_modular()
    vol = leap.Volume(num_x=4, num_y=4, num_z=6, voxel_width=0.5, voxel_height=0.5)
    f, g = data(np.random.default_rng(3), geo, vol, 1)
    args = args_of(geo, vol)
    assert_same(axial_vjp.geometry_vjp(f, g, *args), general_vjp(f, g, *args))


def test_the_comparison_sees_a_small_change_of_the_model():
    """The tolerance is meaningful: moving every source by 0.01 mm, or changing one
    view's ḡ, changes the gradients by far more than TOL; a sign error in any term
    would too."""
    geo = CONES["helical"]
    f, g = data(np.random.default_rng(4), geo, VOL, 1)
    args = list(args_of(geo, VOL))
    want = general_vjp(f, g, *args)
    args[0] = args[0] + 0.01
    moved = axial_vjp.geometry_vjp(f, g, *args)
    assert min(rel(m, w) for m, w in zip(moved, want)) > 1e3 * TOL
    g2 = g.copy()
    g2[0, 3] *= 1.01
    changed = axial_vjp.geometry_vjp(f, g2, *args_of(geo, VOL))
    for c, w in zip(changed, want):
        assert rel(c, w) > 1e2 * TOL
        assert rel(-c, w) > 1.0


def test_batches_sum_and_zero_volumes_give_zero():
    geo = CONES["tau"]
    f, g = data(np.random.default_rng(6), geo, VOL, 2, sparse=True)
    args = args_of(geo, VOL)
    both = axial_vjp.geometry_vjp(f, g, *args)
    one = [axial_vjp.geometry_vjp(f[b], g[b], *args) for b in range(2)]
    for gr, g0, g1 in zip(both, *one):
        np.testing.assert_allclose(gr, g0 + g1, rtol=1e-9, atol=1e-9 * np.abs(gr).max())
    zero = axial_vjp.geometry_vjp(np.zeros(VOL.shape, np.float32), g[0], *args)
    assert all(np.all(z == 0.0) for z in zero)


def test_results_do_not_depend_on_the_number_of_threads():
    geo = CONES["offsets"]
    f, g = data(np.random.default_rng(7), geo, VOL, 1)
    args = args_of(geo, VOL)
    one = with_numba_threads(1, lambda: axial_vjp.geometry_vjp(f, g, *args))
    two = with_numba_threads(2, lambda: axial_vjp.geometry_vjp(f, g, *args))
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def test_a_source_in_its_module_plane_gives_zero_gradients():
    """dn = 0: the general kernel skips every voxel of the view, and so does this one."""
    geo = CONES["plain"]
    theta = [np.array(t) for t in args_of(geo, VOL)[:4]]
    theta[1][2, :2] = theta[0][2, :2]                # module centre beside its source
    f, g = data(np.random.default_rng(8), geo, VOL, 1)
    rest = args_of(geo, VOL)[4:]
    got = axial_vjp.geometry_vjp(f, g, *theta, *rest)
    assert all(np.all(x[2] == 0.0) for x in got)
    assert_same(got, general_vjp(f, g, *theta, *rest))


def test_clear_errors():
    geo = CONES["plain"]
    f, g = data(np.random.default_rng(9), geo, VOL, 1)
    args = list(args_of(geo, VOL))
    tilted = list(args)
    tilted[2] = args[2] + np.array([0.0, 0.01, 0.0])
    with pytest.raises(ValueError, match="vertical"):
        axial_vjp.geometry_vjp(f, g, *tilted)
    with pytest.raises(ValueError, match="sources must have shape"):
        axial_vjp.geometry_vjp(f, g, args[0][:, :2], *args[1:])
    with pytest.raises(ValueError, match="one batch"):
        axial_vjp.geometry_vjp(f, np.concatenate([g, g]), *args)


# ------------------------------------------------------------ finite differences
FD_DET = dict(num_rows=7, num_cols=9, pixel_height=1.3, pixel_width=1.1)
FD_VOL = leap.Volume(num_x=4, num_y=5, num_z=4, voxel_width=0.5, voxel_height=0.5,
                     offset_z=0.13)
FD_ANGLES = np.array([0.15, 1.45, 1.75, 3.0])        # ≥ 20° from the diagonals


def reference_loss(f, gbar, sources, centers, rows, cols, v=FD_VOL, det=FD_DET):
    """``Σ ḡ · P(θ) f`` in float64 from the plain-Python footprint functions (vectors
    used as given, like the kernels)."""
    nr, nc, ph, pw = det["num_rows"], det["num_cols"], det["pixel_height"], det["pixel_width"]
    total = 0.0
    for a in range(sources.shape[0]):
        frame = fp.modular_view_frame(sources, centers, rows, cols, a)
        for k in range(v.num_z):
            for iy in range(v.num_y):
                for ix in range(v.num_x):
                    ua, ub, va, vb, l = fp.modular_footprint(
                        v.x0 + ix * v.voxel_width, v.y0 + iy * v.voxel_width,
                        v.z0 + k * v.voxel_height, *frame, 0.5 * v.voxel_width,
                        0.5 * v.voxel_height)
                    if l == 0.0:
                        continue
                    c_lo, c_hi = ua / pw + 0.5 * (nc - 1), ub / pw + 0.5 * (nc - 1)
                    r_lo, r_hi = va / ph + 0.5 * (nr - 1), vb / ph + 0.5 * (nr - 1)
                    i0, i1 = fp.column_range(c_lo, c_hi, nc)
                    j0, j1 = fp.column_range(r_lo, r_hi, nr)
                    w = f[k, iy, ix] * v.voxel_width * l
                    for j in range(j0, j1 + 1):
                        wr = fp.overlap(r_lo, r_hi, j - 0.5, j + 0.5) * w
                        for i in range(i0, i1 + 1):
                            total += gbar[a, j, i] * wr * fp.overlap(c_lo, c_hi, i - 0.5,
                                                                     i + 0.5)
    return total


FD_CASES = {
    "cone": dict(sod=30.0, sdd=50.0),
    "tau_helical_offsets": dict(sod=25.0, sdd=47.0, tau=0.8, helical_pitch=0.7,
                                center_col=4.3, center_row=2.8),
}


@pytest.mark.parametrize("name", sorted(FD_CASES))
def test_directional_derivatives_match_finite_differences(name):
    """Along random directions of (s, c, r, e), each part alone and all together (rows
    and columns leave the vertical: the gradient covers every direction)."""
    kw = dict(FD_CASES[name])
    det = dict(FD_DET)
    dkw = {k: kw.pop(k) for k in ("center_col", "center_row") if k in kw}
    geo = leap.ConeBeam(detector=leap.Detector(**det, **dkw), angles=FD_ANGLES,
                        **kw).to_modular()
    theta = [geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors]
    rng = np.random.default_rng(21)
    f = rng.uniform(0.5, 1.5, FD_VOL.shape)
    f[:, 1, 2] = 0.0
    gbar = rng.uniform(0.5, 1.5, geo.projection_shape)
    grads = axial_vjp.geometry_vjp(f.astype(np.float32), gbar.astype(np.float32), *theta,
                                   FD_VOL.x0, FD_VOL.y0, FD_VOL.z0, FD_VOL.voxel_width,
                                   FD_VOL.voxel_height, det["pixel_width"],
                                   det["pixel_height"])
    h = 1e-5
    n = theta[0].shape[0]
    scale = np.array([1.0, 1.0, 1 / 20.0, 1 / 20.0])[:, None, None]
    for mask in ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 1, 1, 1]):
        d = rng.standard_normal((4, n, 3)) * scale * np.array(mask, float)[:, None, None]
        plus = [t + h * dq for t, dq in zip(theta, d)]
        minus = [t - h * dq for t, dq in zip(theta, d)]
        fd = (reference_loss(f, gbar, *plus, det=det) -
              reference_loss(f, gbar, *minus, det=det)) / (2 * h)
        analytic = sum(np.sum(gr * dq) for gr, dq in zip(grads, d))
        size = np.sqrt(sum(np.sum((gr * dq) ** 2) for gr, dq in zip(grads, d)))
        assert analytic == pytest.approx(fd, rel=1e-6, abs=1e-6 * size), (name, mask)
        # The check can fail: the derivative is far from zero at this scale.
        assert abs(fd) > 1e-3 * size


# ------------------------------------------------------------------ leap.torch
def test_torch_routes_vertical_modules_to_the_column_wise_kernel(monkeypatch):
    torch = pytest.importorskip("torch")
    import leap.torch._modular_vjp as vjp_module
    import leap.torch.geometry as tg
    calls = []

    def spy(name, fn):
        def wrapped(*a):
            calls.append(name)
            return fn(*a)
        return wrapped

    monkeypatch.setattr(axial_vjp, "geometry_vjp", spy("axial", axial_vjp.geometry_vjp))
    monkeypatch.setattr(vjp_module, "geometry_vjp", spy("general", vjp_module.geometry_vjp))
    kw = dict(num_rows=DET.num_rows, num_cols=DET.num_cols, pixel_height=DET.pixel_height,
              pixel_width=DET.pixel_width, volume=VOL)
    f = torch.rand(VOL.shape)
    rng = np.random.default_rng(12)
    vertical = CONES["helical"]
    tilted = random_vertical(rng, 4, DET)
    normal = np.cross(tilted.col_vectors, tilted.row_vectors)
    rows = tilted.row_vectors + 0.05 * normal                   # tilted modules
    for geo, rows, want in ((vertical, vertical.row_vectors, "axial"),
                            (tilted, rows, "general")):
        th = [torch.tensor(t, requires_grad=True)
              for t in (geo.source_positions, geo.module_centers, rows, geo.col_vectors)]
        tg.modular_project(f, *th, **kw).sum().backward()
        assert calls[-1] == want
        assert all(t.grad is not None and bool(torch.isfinite(t.grad).all()) for t in th)
    assert calls == ["axial", "general"]
