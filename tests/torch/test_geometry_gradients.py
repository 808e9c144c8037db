"""leap.torch.modular_project / modular_backproject: exact gradients with respect to a
modular-beam geometry (issue 35, first part).

How the finite differences are set up. The footprint model is piecewise smooth in the
geometry: overlaps are piecewise linear in the projected footprint ends (a kink where an
end crosses a pixel edge; across a detector edge the slope jumps by the whole ḡ of the
edge pixel), and a voxel's dominant in-plane axis switches, discontinuously, where its
ray turns through 45°. So:

* the views look along directions at least 20° away from the diagonals, and the volume
  projects well inside every module (no end near a detector edge);
* the strict checks compare with central differences of a float64 evaluation of the
  same model (the plain-Python footprint functions of ``leap.kernels.footprints``) at a
  step of 1e-5 mm: the kernel's vector–Jacobian product and the torch gradients
  (including the normalisation of the row and column vectors) agree to 1e-6;
* the end-to-end checks difference the float32 forward itself. Its rounding costs about
  3e-8·‖ḡ‖‖g‖ / h, and on these tiny grids kinks are dense: z-stacks of voxels share
  their column ends, so a whole stack crosses a pixel edge at once, about once per 1e-3
  mm of displacement, each crossing moving the difference quotient by up to ~1e-3 of the
  derivative. The step is therefore 2e-4 mm of displacement (the unit row and column
  vectors are stepped over a lever of 20 mm), ḡ is a smooth ramp (small slope jumps at
  the kinks), and the error is measured over six random directions, ‖analytic − FD‖ /
  ‖FD‖ ≤ 1e-3 (measured 1.5e-4–4.3e-4 over nine geometries).
"""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import leap  # noqa: E402
import leap.operators  # noqa: E402
from leap.geometry import ConeBeam, Detector, ModularBeam, Volume  # noqa: E402
from leap.kernels import footprints as fp  # noqa: E402
from leap.kernels.cpu.modular_geometry_vjp import geometry_vjp  # noqa: E402
from leap.torch import modular_backproject, modular_project  # noqa: E402

NUM_ROWS, NUM_COLS, PIXEL_HEIGHT, PIXEL_WIDTH = 5, 6, 2.0, 1.7
VOLUME = Volume(num_x=5, num_y=7, num_z=6, voxel_width=0.5, voxel_height=0.5)
DETECTOR = dict(num_rows=NUM_ROWS, num_cols=NUM_COLS, pixel_height=PIXEL_HEIGHT,
                pixel_width=PIXEL_WIDTH)
KW = dict(DETECTOR, volume=VOLUME)
#: Displacement step (mm) and lever (mm) that turns a unit-vector step into mm.
STEP, LEVER = 2e-4, 20.0
# View angles (radians) at least 20° from the diagonals.
ANGLES = np.array([0.15, 1.45, 1.75, 3.0])


pytestmark = pytest.mark.usefixtures("one_numba_thread")


def _rotation(axis, angle):
    axis = axis / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K


def tilted_geometry(seed=0):
    """(sources, centers, rows, cols) of a generic modular beam: sources at 30 mm,
    modules 20 mm beyond the axis, each tilted by 0.2 rad about a random axis, random
    heights and module offsets."""
    rng = np.random.default_rng(seed)
    a = ANGLES
    n = a.size
    sources = np.stack([30 * np.sin(a), -30 * np.cos(a), rng.uniform(-1, 1, n)], 1)
    centers = np.stack([-20 * np.sin(a), 20 * np.cos(a), rng.uniform(-0.5, 0.5, n)], 1)
    cols = np.stack([np.cos(a), np.sin(a), np.zeros(n)], 1)
    rows = np.tile([0.0, 0.0, 1.0], (n, 1))
    for v in range(n):
        R = _rotation(rng.standard_normal(3), 0.2)
        cols[v], rows[v] = R @ cols[v], R @ rows[v]
    centers += rng.uniform(-0.3, 0.3, (n, 1)) * cols + rng.uniform(-0.3, 0.3, (n, 1)) * rows
    return sources, centers, rows, cols


def cone_geometry():
    """The modular form of a circular cone beam (vertical modules: the forward runs on
    the axial kernels; perturbed, on the general modular ones)."""
    cone = ConeBeam(detector=Detector(**DETECTOR), angles=ANGLES, sod=30.0, sdd=50.0)
    m = cone.to_modular()
    return m.source_positions, m.module_centers, m.row_vectors, m.col_vectors


GEOMETRIES = {"tilted": tilted_geometry, "cone": cone_geometry}


def smooth_volume():
    z, y, x = np.meshgrid(*(np.arange(n) for n in VOLUME.shape), indexing="ij")
    return 1 + 0.5 * np.sin(0.7 * x + 0.3) * np.cos(0.5 * y) + 0.3 * np.sin(0.4 * z)


def ramp_projections(num_views):
    """A smooth, monotone upstream gradient ḡ (small slope jumps at the model's kinks)."""
    a, j, i = np.meshgrid(np.arange(num_views), np.arange(NUM_ROWS), np.arange(NUM_COLS),
                          indexing="ij")
    return 1 + 0.3 * i + 0.2 * j + 0.1 * a


def directions(rng, num_views, k):
    """k random directions in (s, c, r, e), the unit vectors' parts over the lever."""
    scale = np.array([1.0, 1.0, 1 / LEVER, 1 / LEVER])[:, None, None]
    return [rng.standard_normal((4, num_views, 3)) * scale for _ in range(k)]


def tensors(theta, dtype=torch.float64, grad=True):
    return [torch.tensor(np.asarray(t), dtype=dtype, requires_grad=grad) for t in theta]


# ------------------------------------------------------------------ kernel, float64
def reference_projection(f, sources, centers, rows, cols, v=VOLUME, shape=(NUM_ROWS, NUM_COLS),
                         pixel=(PIXEL_HEIGHT, PIXEL_WIDTH)):
    """The modular projector's model in float64, from the plain-Python footprint
    functions (vectors used as given, like the kernel)."""
    na = sources.shape[0]
    (num_rows, num_cols), (pixel_height, pixel_width) = shape, pixel
    g = np.zeros((na, num_rows, num_cols))
    for a in range(na):
        (sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1,
         r2) = fp.modular_view_frame(sources, centers, rows, cols, a)
        for k in range(v.num_z):
            for iy in range(v.num_y):
                for ix in range(v.num_x):
                    ua, ub, va, vb, l = fp.modular_footprint(
                        v.x0 + ix * v.voxel_width, v.y0 + iy * v.voxel_width,
                        v.z0 + k * v.voxel_height, sx, sy, sz, su, sv, n0, n1, n2, dn,
                        e0, e1, e2, r0, r1, r2, 0.5 * v.voxel_width, 0.5 * v.voxel_height)
                    if l == 0.0:
                        continue
                    c_lo = ua / pixel_width + 0.5 * (num_cols - 1)
                    c_hi = ub / pixel_width + 0.5 * (num_cols - 1)
                    r_lo = va / pixel_height + 0.5 * (num_rows - 1)
                    r_hi = vb / pixel_height + 0.5 * (num_rows - 1)
                    i0, i1 = fp.column_range(c_lo, c_hi, num_cols)
                    j0, j1 = fp.column_range(r_lo, r_hi, num_rows)
                    w = f[k, iy, ix] * v.voxel_width * l
                    for j in range(j0, j1 + 1):
                        wr = fp.overlap(r_lo, r_hi, j - 0.5, j + 0.5) * w
                        for i in range(i0, i1 + 1):
                            g[a, j, i] += wr * fp.overlap(c_lo, c_hi, i - 0.5, i + 0.5)
    return g


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_kernel_vjp_is_the_derivative_of_the_model(name):
    """Each of the four gradients, and a joint direction, against float64 central
    differences of the model (vectors as free 3-vectors, as the kernel takes them)."""
    theta = [np.array(t) for t in GEOMETRIES[name]()]
    f = smooth_volume()
    gbar = ramp_projections(theta[0].shape[0])
    v = VOLUME
    grads = geometry_vjp(f.astype(np.float32), gbar.astype(np.float32), *theta, v.x0, v.y0,
                         v.z0, v.voxel_width, v.voxel_height, PIXEL_WIDTH, PIXEL_HEIGHT)
    assert all(gr.shape == (theta[0].shape[0], 3) and gr.dtype == np.float64 for gr in grads)
    rng = np.random.default_rng(3)
    h = 1e-5
    for d in directions(rng, theta[0].shape[0], 5):
        for mask in ([1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1], [1, 1, 1, 1]):
            dm = d * np.array(mask, dtype=float)[:, None, None]
            plus = [t + h * dq for t, dq in zip(theta, dm)]
            minus = [t - h * dq for t, dq in zip(theta, dm)]
            fd = np.sum(gbar * (reference_projection(f, *plus) - reference_projection(f, *minus)))
            fd /= 2 * h
            analytic = sum(np.sum(gr * dq) for gr, dq in zip(grads, dm))
            scale = np.sqrt(sum(np.sum((gr * dq) ** 2) for gr, dq in zip(grads, dm)))
            assert analytic == pytest.approx(fd, rel=1e-6, abs=1e-6 * scale), (name, mask)


def test_an_end_on_a_pixel_edge_takes_the_one_sided_derivative_upwards():
    """One voxel whose column footprint is exactly [0.5, 1.5] (both ends on pixel edges,
    all values exact in binary): the gradient is the derivative for the ends moving
    towards higher columns (the right-sided difference), not the left-sided one."""
    vol = Volume(num_x=1, num_y=1, num_z=1, voxel_width=0.5, voxel_height=0.3)
    theta = [np.array([[0.0, -10.0, 0.0]]), np.array([[0.0, 10.0, 0.0]]),
             np.array([[0.0, 0.0, 1.0]]), np.array([[1.0, 0.0, 0.0]])]
    gbar = np.array([[[0.3, 1.1, 2.9], [0.7, 1.3, 2.2], [0.2, 0.5, 1.7]]])
    grads = geometry_vjp(np.ones((1, 1, 1), np.float32), gbar.astype(np.float32), *theta,
                         vol.x0, vol.y0, vol.z0, vol.voxel_width, vol.voxel_height, 1.0, 1.0)
    # Moving the module centre along −x moves the footprint towards higher columns.
    d = [np.zeros((1, 3)), np.array([[-1.0, 0.0, 0.0]]), np.zeros((1, 3)), np.zeros((1, 3))]
    analytic = sum(np.sum(gr * dq) for gr, dq in zip(grads, d))

    def L(step):
        th = [t + step * dq for t, dq in zip(theta, d)]
        return np.sum(gbar * reference_projection(np.ones((1, 1, 1)), *th, v=vol, shape=(3, 3),
                                                  pixel=(1.0, 1.0)))

    h = 1e-6
    right, left = (L(h) - L(0.0)) / h, (L(0.0) - L(-h)) / h
    assert analytic == pytest.approx(right, rel=1e-6)
    assert abs(right - left) > 0.1 * abs(right)          # it is a kink


def test_kernel_vjp_sums_a_batch_and_skips_zero_voxels():
    theta = tilted_geometry()
    v = VOLUME
    args = (*theta, v.x0, v.y0, v.z0, v.voxel_width, v.voxel_height, PIXEL_WIDTH, PIXEL_HEIGHT)
    rng = np.random.default_rng(1)
    f = rng.uniform(0, 1, (2,) + v.shape).astype(np.float32)
    f[1, :2] = 0.0
    gbar = rng.standard_normal((2, 4, NUM_ROWS, NUM_COLS)).astype(np.float32)
    both = geometry_vjp(f, gbar, *args)
    one = [geometry_vjp(f[b], gbar[b], *args) for b in range(2)]
    for gr, g0, g1 in zip(both, *one):
        np.testing.assert_allclose(gr, g0 + g1, rtol=1e-9, atol=1e-9 * np.abs(gr).max())
    zero = geometry_vjp(np.zeros(v.shape, np.float32), gbar[0], *args)
    assert all(np.all(gr == 0.0) for gr in zero)


def _normalised(theta):
    """The geometry as ModularBeam stores it: unit row and column vectors."""
    th = [np.array(t, dtype=np.float64) for t in theta]
    for q in (2, 3):
        th[q] = th[q] / np.linalg.norm(th[q], axis=1, keepdims=True)
    return th


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_torch_gradients_are_the_derivative_of_the_normalised_model(name):
    """The autograd geometry gradient of modular_project (vectors of any length) against
    float64 central differences of the model of the normalised geometry."""
    theta = [np.array(t) for t in GEOMETRIES[name]()]
    theta[2] = theta[2] * np.array([1.5, 0.7, 2.0, 1.0])[:, None]    # not unit vectors
    theta[3] = theta[3] * np.array([0.8, 1.0, 3.0, 0.5])[:, None]
    f = smooth_volume()
    gbar = ramp_projections(theta[0].shape[0])
    th = tensors(theta)
    torch.sum(torch.from_numpy(gbar) * modular_project(torch.tensor(f, dtype=torch.float32),
                                                       *th, **KW)).backward()
    grads = [t.grad.numpy() for t in th]
    h = 1e-5
    for d in directions(np.random.default_rng(6), theta[0].shape[0], 4):
        plus = _normalised([t + h * dq for t, dq in zip(theta, d)])
        minus = _normalised([t - h * dq for t, dq in zip(theta, d)])
        fd = np.sum(gbar * (reference_projection(f, *plus) - reference_projection(f, *minus)))
        fd /= 2 * h
        analytic = sum(np.sum(gr * dq) for gr, dq in zip(grads, d))
        scale = np.sqrt(sum(np.sum((gr * dq) ** 2) for gr, dq in zip(grads, d)))
        assert analytic == pytest.approx(fd, rel=1e-6, abs=1e-6 * scale), name


# ------------------------------------------------------------------- torch, float32
def _relative_error(analytic, fd):
    analytic, fd = np.array(analytic), np.array(fd)
    return float(np.linalg.norm(analytic - fd) / np.linalg.norm(fd))


def _check_against_fd(loss, theta, rng, k=6):
    """loss(list of 4 float64 tensors) → scalar tensor; the autograd directional
    derivatives along k random directions against central differences."""
    th = tensors(theta)
    loss(th).backward()
    grads = [t.grad.numpy() for t in th]
    analytic, fd = [], []
    for d in directions(rng, theta[0].shape[0], k):
        with torch.no_grad():
            plus = loss(tensors([t + STEP * dq for t, dq in zip(theta, d)], grad=False))
            minus = loss(tensors([t - STEP * dq for t, dq in zip(theta, d)], grad=False))
        fd.append(float(plus - minus) / (2 * STEP))
        analytic.append(sum(float(np.sum(gr * dq)) for gr, dq in zip(grads, d)))
    return _relative_error(analytic, fd), grads


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_projection_geometry_gradient_matches_finite_differences(name):
    theta = GEOMETRIES[name]()
    f = torch.tensor(smooth_volume(), dtype=torch.float32)
    gbar = torch.tensor(ramp_projections(theta[0].shape[0]))

    def loss(th):
        return torch.sum(gbar * modular_project(f, *th, **KW))

    err, grads = _check_against_fd(loss, theta, np.random.default_rng(7))
    assert err <= 1e-3, err
    # The vectors are normalised: moving one along itself changes nothing.
    for gr, v in zip(grads[2:], theta[2:]):
        np.testing.assert_allclose(np.sum(gr * v, axis=1), 0.0, atol=1e-9 * np.abs(gr).max())


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_backprojection_geometry_gradient_matches_finite_differences(name):
    theta = GEOMETRIES[name]()
    g = torch.tensor(ramp_projections(theta[0].shape[0]), dtype=torch.float32)
    ybar = torch.tensor(smooth_volume())

    def loss(th):
        return torch.sum(ybar * modular_backproject(g, *th, **KW))

    err, _ = _check_against_fd(loss, theta, np.random.default_rng(8))
    assert err <= 1e-3, err


@pytest.mark.parametrize("name", sorted(GEOMETRIES))
def test_data_gradients_are_the_matched_operators(name):
    """∂/∂f of the projection is the back-projection, ∂/∂g of the back-projection the
    projection, exactly (the same operators as leap.operators)."""
    theta = GEOMETRIES[name]()
    geo = ModularBeam(detector=Detector(**DETECTOR), source_positions=theta[0],
                      module_centers=theta[1], row_vectors=theta[2], col_vectors=theta[3])
    rng = np.random.default_rng(2)
    f = torch.tensor(rng.uniform(0, 1, VOLUME.shape), dtype=torch.float32, requires_grad=True)
    gbar = rng.standard_normal(geo.projection_shape).astype(np.float32)
    g = modular_project(f, *tensors(theta), **KW)
    Pf = leap.operators.project(geo, VOLUME, f.detach().numpy())
    assert torch.equal(g.detach(), torch.from_numpy(Pf))
    g.backward(torch.from_numpy(gbar))
    assert torch.equal(f.grad, torch.from_numpy(leap.operators.backproject(geo, VOLUME, gbar)))

    gt = torch.tensor(gbar, requires_grad=True)
    y = modular_backproject(gt, *tensors(theta), **KW)
    assert torch.equal(y.detach(), torch.from_numpy(leap.operators.backproject(geo, VOLUME, gbar)))
    ybar = rng.uniform(0, 1, VOLUME.shape).astype(np.float32)
    y.backward(torch.from_numpy(ybar))
    assert torch.equal(gt.grad, torch.from_numpy(leap.operators.project(geo, VOLUME, ybar)))


def test_backprojection_geometry_gradient_is_the_projection_vjp_transposed():
    """⟨Pᵀ(θ) g, ȳ⟩ = ⟨P(θ) ȳ, g⟩: both functions give one geometry gradient."""
    theta = tilted_geometry(seed=4)
    rng = np.random.default_rng(4)
    g = torch.tensor(rng.standard_normal((4, NUM_ROWS, NUM_COLS)), dtype=torch.float32)
    y = torch.tensor(rng.uniform(0, 1, VOLUME.shape), dtype=torch.float32)
    a, b = tensors(theta), tensors(theta)
    torch.sum(y * modular_backproject(g, *a, **KW)).backward()
    torch.sum(g * modular_project(y, *b, **KW)).backward()
    for ta, tb in zip(a, b):
        torch.testing.assert_close(ta.grad, tb.grad, rtol=1e-12, atol=0.0)


def test_batches_share_the_geometry_and_sum_its_gradient():
    theta = tilted_geometry(seed=5)
    rng = np.random.default_rng(5)
    f = torch.tensor(rng.uniform(0, 1, (3,) + VOLUME.shape), dtype=torch.float32)
    gbar = torch.tensor(rng.standard_normal((3, 4, NUM_ROWS, NUM_COLS)), dtype=torch.float32)
    th = tensors(theta)
    g = modular_project(f, *th, **KW)
    assert g.shape == (3, 4, NUM_ROWS, NUM_COLS) and g.dtype == torch.float32
    torch.sum(gbar * g).backward()
    single = [tensors(theta) for _ in range(3)]
    for b in range(3):
        gb = modular_project(f[b], *single[b], **KW)
        assert torch.equal(gb, g[b])
        torch.sum(gbar[b] * gb).backward()
    for q in range(4):
        total = sum(s[q].grad for s in single)
        torch.testing.assert_close(th[q].grad, total, rtol=1e-9,
                                   atol=1e-9 * float(total.abs().max()))
    # Back-projection of a batch: one volume per sample.
    y = modular_backproject(gbar.double(), *tensors(theta), **KW)
    assert y.shape == (3,) + VOLUME.shape and y.dtype == torch.float64


def test_float64_in_float64_out_and_gradients_in_each_dtype():
    theta = tilted_geometry()
    f = torch.tensor(smooth_volume(), dtype=torch.float64, requires_grad=True)
    th = [torch.tensor(theta[0], dtype=torch.float32, requires_grad=True)] + tensors(theta[1:])
    g = modular_project(f, *th, **KW)
    assert g.dtype == torch.float64 and g.shape == (4, NUM_ROWS, NUM_COLS)
    g.sum().backward()
    assert f.grad.dtype == torch.float64 and th[0].grad.dtype == torch.float32
    assert all(t.grad is not None and bool(torch.isfinite(t.grad).all()) for t in th)


def test_only_the_requested_gradients_are_computed():
    theta = tilted_geometry()
    th = tensors(theta, grad=False)
    th[1].requires_grad_(True)
    f = torch.tensor(smooth_volume(), dtype=torch.float32)
    modular_project(f, *th, **KW).sum().backward()
    assert th[1].grad is not None and th[0].grad is None and f.grad is None


def test_second_derivatives_raise():
    theta = tilted_geometry()
    th = tensors(theta)
    f = torch.tensor(smooth_volume(), dtype=torch.float32, requires_grad=True)
    (gs,) = torch.autograd.grad(modular_project(f, *th, **KW).sum(), th[0], create_graph=True)
    with pytest.raises(RuntimeError):
        gs.sum().backward()


def _call(**changes):
    theta = tilted_geometry()
    args = dict(f=torch.tensor(smooth_volume(), dtype=torch.float32), sources=theta[0],
                centers=theta[1], row_vectors=theta[2], col_vectors=theta[3])
    args.update({k: torch.as_tensor(v) for k, v in args.items() if k != "f"})
    kw = dict(KW)
    for k, v in changes.items():
        (args if k in args else kw)[k] = v
    return modular_project(args.pop("f"), *args.values(), **kw)


@pytest.mark.parametrize("changes, error, match", [
    (dict(sources=torch.zeros(4, 2)), ValueError, "sources must have shape"),
    (dict(centers=torch.zeros(3, 3)), ValueError, "centers has 3 views"),
    (dict(row_vectors=torch.zeros(4, 3, 1)), ValueError, "row_vectors must have shape"),
    (dict(col_vectors=torch.full((4, 3), float("nan"))), ValueError, "col_vectors must be finite"),
    (dict(sources=np.zeros((4, 3))), TypeError, "sources must be a torch.Tensor"),
    (dict(f=torch.zeros(6, 7, 4)), ValueError, "f must have shape"),
    (dict(f=torch.full((6, 7, 5), float("inf"))), ValueError, "f must be finite"),
    (dict(f=torch.zeros((6, 7, 5), dtype=torch.int32)), TypeError, "f must be a floating"),
    (dict(volume=(6, 7, 5)), TypeError, "volume must be a leap.Volume"),
    (dict(num_rows=0), ValueError, "num_rows"),
    (dict(row_vectors=torch.tensor([[1.0, 0.0, 0.0]] * 4),
          col_vectors=torch.tensor([[1.0, 0.1, 0.0]] * 4)), ValueError, "orthogonal"),
])
def test_clear_errors(changes, error, match):
    with pytest.raises(error, match=match):
        _call(**changes)


def test_backprojection_checks_its_projections():
    theta = [torch.as_tensor(t) for t in tilted_geometry()]
    with pytest.raises(ValueError, match="g must have shape"):
        modular_backproject(torch.zeros(4, NUM_ROWS, NUM_COLS + 1), *theta, **KW)
    with pytest.raises(ValueError, match="g must be finite"):
        modular_backproject(torch.full((4, NUM_ROWS, NUM_COLS), float("nan")), *theta, **KW)
