"""leap.torch: the leaptorch interface — exact and twice-differentiable gradients, any
batch size, new tensors on every call, modules that do not share geometry, flat memory.

Tolerances of the gradient checks. The kernels compute in float32; float64 inputs are
rounded to float32 and the result is returned as float64. Every operator here is linear,
so the finite differences ``(A(x + εe) − A(x − εe)) / 2ε`` have no truncation error at
all: the only error is float32 rounding of the two evaluations, about
``|A x| · 6e-8 / ε`` per entry. With ε = 0.1 and ``|A x| ≲ 10`` on these tiny geometries
that is ~1e-5, against Jacobian entries of order 0.1–1; ``atol = rtol = 1e-3`` leaves a
margin of ~100 while still catching any gradient that is not the exact adjoint (an
approximate adjoint, as upstream's FBP gradient, is off by O(10 %)).
"""
import copy
import gc
import pickle
import subprocess
import sys
import tracemalloc
import weakref

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import leap  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402
import leap.reconstruction.fbp  # noqa: E402
import leap.operators  # noqa: E402
from leap.torch import (FBP, BackProjectorFunctionCPU, BackProjectorFunctionGPU,  # noqa: E402
                        BaseProjector, FBPFunctionCPU, FBPFunctionGPU, FBPReverseFunctionCPU,
                        FBPReverseFunctionGPU, Projector, ProjectorFunctionCPU,
                        ProjectorFunctionGPU)

GEOMETRIES = ("parallel", "fan", "cone", "modular", "cone_parallel")
# (module class, constructor flag, does the map take a volume?)
MAPS = {
    "project": (Projector, dict(forward_project=True), True),
    "backproject": (Projector, dict(forward_project=False), False),
    "fbp": (FBP, dict(forward_FBP=True), False),
    "fbp_reverse": (FBP, dict(forward_FBP=False), True),
}
GRADCHECK = dict(eps=1e-1, atol=1e-3, rtol=1e-3)


pytestmark = pytest.mark.usefixtures("one_numba_thread")


def make(kind, cls=Projector, nangles=4, nrows=2, ncols=5, **flags):
    """A module with a tiny geometry of the given kind and its default volume."""
    m = cls(**flags)
    ct = m.leapct
    if kind == "parallel":
        m.set_parallelbeam(nangles, nrows, ncols, 1.0, 1.0, 0.5 * (nrows - 1), 0.5 * (ncols - 1) + 0.2,
                           ct.setAngleArray(nangles, 180.0))
    elif kind == "fan":
        m.set_fanbeam(nangles, nrows, ncols, 1.0, 1.0, 0.5 * (nrows - 1), 0.5 * (ncols - 1) + 0.2,
                      ct.setAngleArray(nangles, 360.0), 20.0, 40.0)
    elif kind in ("cone", "modular"):
        m.set_conebeam(nangles, nrows, ncols, 1.0, 1.0, 0.5 * (nrows - 1) - 0.3,
                       0.5 * (ncols - 1) + 0.2, ct.setAngleArray(nangles, 360.0), 20.0, 40.0)
        if kind == "modular":
            ct.convert_to_modularbeam()
    elif kind == "cone_parallel":
        m.set_coneparallel(nangles, nrows, ncols, 1.0, 0.5, 0.5 * (nrows - 1) - 0.3,
                           0.5 * (ncols - 1) + 0.2, ct.setAngleArray(nangles, 360.0), 20.0, 40.0)
    else:
        raise ValueError(kind)
    m.set_default_volume()
    return m


def make_map(kind, name, **kw):
    cls, flags, takes_volume = MAPS[name]
    m = make(kind, cls, **flags, **kw)
    shape = m.get_volume_dim() if takes_volume else m.get_projection_dim()
    return m, shape


# ------------------------------------------------------------------ packaging
@pytest.mark.slow
def test_importing_leap_does_not_import_torch():
    code = ("import sys, leap, leap.compat.model, leap.reconstruction.fbp, leap.operators, leapctype; "
            "assert 'torch' not in sys.modules, 'leap imported torch'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_leaptorch_reexports_leap_torch(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    import leaptorch
    import leap.torch as lt
    for name in lt.__all__:
        assert getattr(leaptorch, name) is getattr(lt, name)
    for name in ("BaseProjector", "Projector", "FBP", "ProjectorFunctionCPU",
                 "ProjectorFunctionGPU", "BackProjectorFunctionCPU", "BackProjectorFunctionGPU",
                 "FBPFunctionCPU", "FBPFunctionGPU", "FBPReverseFunctionCPU",
                 "FBPReverseFunctionGPU", "tomographicModels"):
        assert hasattr(leaptorch, name)


# ---------------------------------------------------------------- gradients
@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("kind", [k if k in ("parallel", "cone") else
                                  pytest.param(k, marks=pytest.mark.slow) for k in GEOMETRIES])
def test_gradcheck_and_gradgradcheck(kind, name):
    """Every map of every geometry (fan, modular and cone-parallel only in the full run:
    the quick loop keeps one parallel and one divergent geometry)."""
    m, shape = make_map(kind, name)
    x = torch.randn(1, *shape, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (x,), **GRADCHECK)
    assert torch.autograd.gradgradcheck(m, (x,), **GRADCHECK)


def test_gradcheck_fbp_with_facade_options():
    """FBP options set on the facade reach the forward map and its adjoint alike."""
    m, shape = make_map("cone", "fbp", ncols=6)
    m.leapct.set_rampFilter(12)
    m.leapct.set_truncatedScan(True)
    m.leapct.set_diameterFOV(4.0)
    g = torch.randn(1, *shape, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (g,), **GRADCHECK)
    g32 = g.detach().float()
    ref = m.leapct.FBP(g32[0].numpy().copy())
    assert torch.equal(m(g32)[0], torch.from_numpy(ref))


def test_gradcheck_fbp_offset_scan():
    m = FBP()
    m.set_conebeam(4, 2, 6, 1.0, 1.0, 0.5, 1.2, m.leapct.setAngleArray(4, 360.0), 20.0, 40.0)
    m.leapct.set_offsetScan(True)
    m.set_default_volume()
    g = torch.randn(1, *m.get_projection_dim(), dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(m, (g,), **GRADCHECK)


@pytest.mark.parametrize("kind", GEOMETRIES)
def test_grad_is_the_facades_backprojection(kind):
    proj = make(kind, nangles=6, nrows=3, ncols=8)
    ct = proj.leapct
    x = torch.rand(2, *proj.get_volume_dim(), requires_grad=True)
    y = proj(x)
    gy = torch.randn_like(y)
    y.backward(gy)
    for b in range(2):
        g_ref = ct.project(ct.allocate_projections(), x[b].detach().numpy())
        assert torch.equal(y[b].detach(), torch.from_numpy(g_ref))
        f_ref = ct.backproject(gy[b].numpy().copy(), ct.allocate_volume())
        assert torch.equal(x.grad[b], torch.from_numpy(f_ref))


@pytest.mark.parametrize("kind", GEOMETRIES)
def test_fbp_forward_is_facade_fbp_and_grad_is_its_adjoint(kind):
    m = make(kind, FBP, nangles=6, nrows=3, ncols=8)
    ct = m.leapct
    g = torch.rand(2, *m.get_projection_dim(), requires_grad=True)
    f = m(g)
    v = torch.randn_like(f)
    f.backward(v)
    for b in range(2):
        assert torch.equal(f[b].detach(), torch.from_numpy(ct.FBP(g[b].detach().numpy().copy())))
        adj = leap.reconstruction.fbp.fbp_adjoint(ct.core_geometry(), ct.core_volume(), v[b].numpy().copy(),
                                   **ct.fbp_options())
        assert torch.equal(g.grad[b], torch.from_numpy(adj))
    # and the adjoint identity <FBP g, v> = <g, FBPᵀ v>, scale-free
    lhs = torch.vdot(f.detach().double().ravel(), v.double().ravel())
    rhs = torch.vdot(g.detach().double().ravel(), g.grad.double().ravel())
    assert abs(lhs - rhs) / (f.norm() * v.norm()) < 1e-5


def test_double_backward_gradient_penalty():
    """∇ₓ‖∇ₓ ½‖Px − y‖²‖² = 2 PᵀP Pᵀ(Px − y), through create_graph=True."""
    proj = make("cone", nangles=6, nrows=3, ncols=8)
    ct = proj.leapct
    x = torch.rand(1, *proj.get_volume_dim(), dtype=torch.float64, requires_grad=True)
    y = torch.rand(1, *proj.get_projection_dim(), dtype=torch.float64)
    loss = 0.5 * ((proj(x) - y) ** 2).sum()
    (gx,) = torch.autograd.grad(loss, x, create_graph=True)
    (gx ** 2).sum().backward()

    def P(f):
        return ct.project(ct.allocate_projections(), np.ascontiguousarray(f, np.float32))

    def PT(g):
        return ct.backproject(np.ascontiguousarray(g, np.float32), ct.allocate_volume())

    r = P(x.detach()[0].numpy()) - y[0].numpy()
    ref = 2.0 * PT(P(PT(r)))
    assert np.allclose(x.grad[0].numpy(), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


# ------------------------------------------------------- batches and aliasing
@pytest.mark.parametrize("name", list(MAPS))
@pytest.mark.parametrize("batch", [1, 3, 7])
def test_any_batch_size_equals_per_sample_calls(name, batch):
    m, shape = make_map("cone", name, nangles=6, nrows=3, ncols=8, batch_size=1)
    x = torch.rand(batch, *shape)
    y = m(x)
    assert y.shape[0] == batch
    for b in range(batch):
        assert torch.equal(y[b], m(x[b:b + 1])[0])
        assert torch.equal(y[b], m(x[b]))            # a sample without batch dimension
    # leading dimensions beyond one batch dimension, e.g. a channel
    assert torch.equal(m(x.reshape(1, batch, *shape))[0], y)


def test_successive_outputs_never_alias():
    proj = make("fan", nangles=6, nrows=3, ncols=8)
    x1 = torch.rand(3, *proj.get_volume_dim())
    x2 = torch.rand(3, *proj.get_volume_dim())
    y1 = proj(x1)
    kept = y1.clone()
    y2 = proj(x2)
    y3 = proj.fbp(y2)
    y4 = proj.fbp(y1)
    assert torch.equal(y1, kept)
    ptrs = {t.untyped_storage().data_ptr() for t in (x1, x2, y1, y2, y3, y4)}
    assert len(ptrs) == 6
    assert not torch.equal(y3, y4)


def test_cpu_tensors_reach_the_core_without_copies(monkeypatch):
    proj = make("cone", nangles=6, nrows=3, ncols=8)
    seen = []
    real = leap.operators.project

    def spy(geometry, volume, f, out=None, **kw):
        seen.append((f.__array_interface__["data"][0], out.__array_interface__["data"][0]))
        return real(geometry, volume, f, out=out, **kw)

    monkeypatch.setattr(leap.operators, "project", spy)
    x = torch.rand(3, *proj.get_volume_dim())
    y = proj(x)
    assert seen == [(x[b].data_ptr(), y[b].data_ptr()) for b in range(3)]


@pytest.mark.parametrize("name", list(MAPS))
def test_cpu_tensors_follow_the_facades_gpu_selection(monkeypatch, name):
    """The module passes the facade's device selection to the core, forward and backward:
    [-1] (the CPU) by default; with GPUs selected, NumPy views go to the core with
    devices=... (run on those GPUs from host memory)."""
    m, shape = make_map("cone", name, nangles=6, nrows=3, ncols=8)
    seen = []

    def spy(module, fn):
        real = getattr(module, fn)

        def wrapper(*args, **kw):
            seen.append(kw.get("devices", "absent"))
            kw.pop("devices", None)
            return real(*args, **kw)
        monkeypatch.setattr(module, fn, wrapper)

    # the core function each map calls (FBP calls back-projection inside: not spied)
    core = {"project": (leap.operators, "project"), "backproject": (leap.operators, "backproject"),
            "fbp": (leap.reconstruction.fbp, "fbp"), "fbp_reverse": (leap.reconstruction.fbp, "fbp_adjoint")}
    adjoint = {"project": "backproject", "backproject": "project", "fbp": "fbp_reverse",
               "fbp_reverse": "fbp"}
    spy(*core[name])
    spy(*core[adjoint[name]])
    x = torch.rand(2, *shape, requires_grad=True)
    m(x).sum().backward()
    assert seen == [[-1]] * 4
    seen.clear()
    monkeypatch.setattr(m.leapct, "get_gpus", lambda: [0, 1])
    m(x).sum().backward()
    assert seen == [[0, 1]] * 4          # forward and backward, two samples each


def test_float64_is_computed_in_float32_and_returned_as_float64():
    proj = make("parallel", nangles=6, nrows=3, ncols=8)
    x = torch.rand(2, *proj.get_volume_dim(), dtype=torch.float64)
    y = proj(x)
    assert y.dtype == torch.float64
    assert torch.equal(y, proj(x.float()).double())


# ------------------------------------------------------ modules coexisting
def test_modules_with_different_geometries_coexist():
    a = make("parallel", nangles=6, nrows=2, ncols=8, use_static=True)
    b = make("cone", nangles=5, nrows=3, ncols=7, use_static=True)
    assert a.param_id != b.param_id
    xa = torch.rand(2, *a.get_volume_dim())
    xb = torch.rand(2, *b.get_volume_dim())
    ga, gb = a(xa), b(xb)
    assert ga.shape[1:] == a.get_projection_dim() and gb.shape[1:] == b.get_projection_dim()
    assert torch.equal(ga[0], torch.from_numpy(
        a.leapct.project(a.leapct.allocate_projections(), xa[0].numpy())))
    # the named Functions find each module's own geometry through its param_id
    assert torch.equal(ProjectorFunctionCPU.apply(xa, None, None, a.param_id_t), ga)
    assert torch.equal(ProjectorFunctionCPU.apply(xb, None, None, b.param_id_t), gb)
    assert torch.equal(ProjectorFunctionGPU.apply(xb, None, None, b.param_id), gb)
    assert torch.equal(ProjectorFunctionCPU.apply(xb, None, None, b), gb)


def test_modules_of_different_geometries_in_one_network():
    """Reconstruct in geometry A by FBP, re-project in geometry B; gradients flow through."""
    rec = make("cone", FBP, nangles=6, nrows=3, ncols=8)
    reproj = Projector()
    reproj.set_parallelbeam(5, 3, 9, 0.5, 0.5, 1.0, 4.0, reproj.leapct.setAngleArray(5, 180.0))
    reproj.set_volume(*reversed(rec.get_volume_dim()), rec.leapct.get_voxelWidth(),
                      rec.leapct.get_voxelHeight())

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rec, self.reproj = rec, reproj
            self.conv = torch.nn.Conv3d(1, 1, 3, padding=1, dtype=torch.float64)

        def forward(self, g):
            return self.reproj(self.conv(self.rec(g)[:, None])[:, 0])

    torch.manual_seed(3)            # the convolution's initial weights and g: one case
    net = Net()
    g = torch.rand(2, *rec.get_projection_dim(), dtype=torch.float64, requires_grad=True)
    out = net(g)
    assert out.shape == (2, *reproj.get_projection_dim())
    # the forward pass is the facades' FBP, the convolution and the facades' projection
    for i in range(2):
        f = rec.leapct.FBP(g[i].detach().numpy().astype(np.float32))
        with torch.no_grad():
            c = net.conv(torch.from_numpy(f).double()[None, None])[0, 0].numpy()
        ref = reproj.leapct.project(reproj.leapct.allocate_projections(), c.astype(np.float32))
        np.testing.assert_allclose(out[i].detach().numpy(), ref, rtol=1e-4,
                                   atol=1e-5 * np.abs(ref).max())
    loss = out.square().sum()
    loss.backward()
    assert g.grad.shape == g.shape and torch.isfinite(g.grad).all() and g.grad.abs().sum() > 0
    # the network is linear, the loss quadratic: a central difference is exact but for
    # float32 rounding, and equals the gradient along any direction h
    # (a random direction plus the gradient's: along a direction where the derivative is
    # small next to the loss, float32 rounding of the two losses dominated the difference)
    h = torch.rand(g.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    h = h + g.grad * (h.norm() / g.grad.norm())
    with torch.no_grad():
        eps = 1e-2
        fd = (net(g + eps * h).square().sum() - net(g - eps * h).square().sum()) / (2 * eps)
    assert float(fd) == pytest.approx(float((g.grad * h).sum()), rel=1e-3)


def test_reconfiguring_the_facade_between_forward_and_backward():
    """backward applies the adjoint of the operator forward used, not of the current one."""
    proj = make("cone", nangles=6, nrows=3, ncols=8)
    x = torch.rand(1, *proj.get_volume_dim(), requires_grad=True)
    y = proj(x)
    gy = torch.rand_like(y)
    ref = proj.leapct.backproject(gy[0].numpy().copy(), proj.leapct.allocate_volume())
    proj.leapct.set_sod(15.0)
    y.backward(gy)
    assert torch.equal(x.grad[0], torch.from_numpy(ref))


def test_param_ids_of_dead_modules_are_forgotten():
    m = make("parallel")
    pid = m.param_id
    x = torch.rand(1, *m.get_volume_dim())
    ProjectorFunctionCPU.apply(x, None, None, pid)
    del m
    gc.collect()
    with pytest.raises(ValueError, match="does not name a live"):
        ProjectorFunctionCPU.apply(x, None, None, pid)


def test_copies_get_their_own_param_id():
    m = make("fan")
    for c in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c.param_id != m.param_id and c.leapct is not m.leapct
        x = torch.rand(1, *m.get_volume_dim())
        assert torch.equal(c(x), m(x))
        c.leapct.set_sod(25.0)
        assert torch.equal(ProjectorFunctionCPU.apply(x, None, None, c.param_id_t), c(x))
        assert not torch.equal(c(x), m(x))


@pytest.mark.parametrize("cls, kind, takes_volume", [
    (ProjectorFunctionCPU, "project", True), (ProjectorFunctionGPU, "project", True),
    (BackProjectorFunctionCPU, "backproject", False), (BackProjectorFunctionGPU, "backproject", False),
    (FBPFunctionCPU, "fbp", False), (FBPFunctionGPU, "fbp", False),
    (FBPReverseFunctionCPU, "fbp_reverse", True), (FBPReverseFunctionGPU, "fbp_reverse", True),
])
def test_named_functions_match_modules_and_differentiate_twice(cls, kind, takes_volume):
    m, shape = make_map("fan", kind)
    x = torch.randn(2, *shape, dtype=torch.float64, requires_grad=True)
    pid = m.param_id_t
    assert torch.equal(cls.apply(x, None, None, pid), m(x))

    def f(t):
        return cls.apply(t, None, None, pid)

    assert torch.autograd.gradcheck(f, (x[:1].detach().requires_grad_(),), **GRADCHECK)
    assert torch.autograd.gradgradcheck(f, (x[:1].detach().requires_grad_(),), **GRADCHECK)


# ----------------------------------------------------------------- memory
@pytest.mark.slow
def test_memory_stays_flat_over_1000_iterations():
    psutil = pytest.importorskip("psutil")
    proj = make("cone", nangles=8, nrows=4, ncols=16)       # volume 2 × 4×16×16 floats
    fbp = FBP()
    fbp.leapct = proj.leapct
    x0 = torch.rand(2, *proj.get_volume_dim())
    g0 = torch.rand(2, *proj.get_projection_dim())

    def step(i):
        x = x0.clone().requires_grad_()
        y = proj(x)
        loss = (y - g0).square().sum()
        if i % 5 == 0:                      # FBP and its adjoint too, less often (slower)
            loss = loss + fbp(y).square().mean()
        loss.backward()
        return weakref.ref(loss), x.grad

    for i in range(50):                     # warm up: JIT, allocator pools
        step(i)
    gc.collect()
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    tracemalloc.start()
    py0, _ = tracemalloc.get_traced_memory()
    for i in range(1000):
        ref, grad = step(i)
        assert ref() is None                # the graph and its outputs are freed at once
    gc.collect()
    py1, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss1 = proc.memory_info().rss
    # Leaking each iteration's tensors (output 4 KiB, gradient 8 KiB) would add ≥ 12 MiB.
    growth = f"Python/NumPy memory grew by {py1 - py0} bytes, RSS by {(rss1 - rss0) / 2**20:.1f} MiB"
    assert rss1 - rss0 < 8 * 2**20, growth
    assert py1 - py0 < 256 * 1024, growth


# ------------------------------------------------------- upstream usage
UPSTREAM_EXAMPLE = """
import numpy as np
import torch
from leaptorch import Projector

use_cuda = torch.cuda.is_available()
device = torch.device("cuda:0" if use_cuda else "cpu")

proj = Projector(forward_project=True, use_static=True, use_gpu=use_cuda, gpu_device=device)
numCols = 16
numAngles = 12
numRows = 4
pixelSize = 0.5*512/numCols
proj.set_conebeam(numAngles, numRows, numCols, pixelSize, pixelSize, 0.5*(numRows-1),
                  0.5*(numCols-1), proj.leapct.setAngleArray(numAngles, 360.0), 1100.0, 1400.0)
proj.set_default_volume()

f = proj.leapct.allocate_volume()
proj.leapct.set_FORBILD(f, True)
f_th = torch.from_numpy(f).to(device).unsqueeze(0)
g_th = proj(f_th)
g = g_th.cpu().detach().numpy()[0, :, :, :]

# the leaptorch demos: geometry through proj.leapct, then allocate_batch_data, then FBP
proj.leapct.set_parallelbeam(numAngles, 1, numCols, pixelSize, pixelSize, 0.0, 0.5*(numCols-1),
                             proj.leapct.setAngleArray(numAngles, 180.0))
proj.leapct.set_default_volume()
proj.allocate_batch_data()
proj.print_param()
dimz, dimy, dimx = proj.leapct.get_volume_dim()
f2 = proj.leapct.allocate_volume()
proj.leapct.set_FORBILD(f2, True, 3)
g2 = proj(torch.from_numpy(f2).to(device).unsqueeze(0)).clone()
f_recon = proj.fbp(g2).cpu().detach().numpy()[0, :, :, :]
"""


def test_upstream_usage_example_runs_unchanged(monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    ns = {}
    exec(compile(UPSTREAM_EXAMPLE, "upstream_example", "exec"), ns)
    assert ns["g"].shape == (12, 4, 16) and ns["g"].max() > 0
    assert ns["f_recon"].shape == (1, 16, 16)
    assert "Parallel-Beam" in capsys.readouterr().out
    # the FBP of the projections of the phantom resembles the phantom
    f2, rec = ns["f2"][0], ns["f_recon"][0]
    assert np.corrcoef(f2.ravel(), rec.ravel())[0, 1] > 0.7


def test_upstream_nn_demo_passes_unbatched_volumes():
    """upstream's test_recon_NN feeds (numZ, numY, numX) without a batch dimension."""
    proj = make("parallel", nrows=1, ncols=8)
    x = torch.rand(*proj.get_volume_dim(), requires_grad=True)
    y = proj(x)
    assert y.shape == proj.get_projection_dim()
    ct = proj.leapct
    np.testing.assert_allclose(y.detach().numpy(),
                               ct.project(ct.allocate_projections(), x.detach().numpy()),
                               rtol=1e-6, atol=1e-6)
    y.sum().backward()
    assert x.grad.shape == x.shape
    # d(sum Px)/dx = Pᵀ 1
    np.testing.assert_allclose(x.grad.numpy(),
                               ct.backproject(ct.allocate_projections(1.0), ct.allocate_volume()),
                               rtol=1e-6, atol=1e-6)


# --------------------------------------------------------- module methods
def test_module_methods_delegate_to_the_facade(tmp_path):
    m = make("cone", nangles=6, nrows=3, ncols=8)
    assert m.get_projection_dim() == m.leapct.get_projection_dim() == (6, 3, 8)
    assert m.get_volume_dim() == m.leapct.get_volume_dim()
    m.set_volume(6, 5, 3, 0.5, 0.5)
    assert m.get_volume_dim() == (3, 5, 6)
    fn = tmp_path / "geom.cfg"
    assert m.save_param(str(fn))
    m2 = Projector()
    m2.load_param(str(fn))
    x = torch.rand(1, *m.get_volume_dim())
    assert torch.allclose(m2(x), m(x), rtol=1e-5, atol=1e-6)
    assert "param_id" in repr(m) and "cone" in repr(m)
    # geometry arrays may be tensors, as upstream allows
    p = Projector()
    p.set_parallelbeam(4, 1, 6, 1.0, 1.0, 0.0, 2.5, torch.tensor([0.0, 45.0, 90.0, 135.0]))
    assert p.get_projection_dim() == (4, 1, 6)
    q = Projector()
    mod = make("modular", nangles=4).leapct
    q.set_modularbeam(4, 2, 5, 1.0, 1.0, *(torch.from_numpy(a) for a in (
        mod.get_sourcePositions(), mod.get_moduleCenters(), mod.get_rowVectors(),
        mod.get_colVectors())))
    assert q.leapct.get_geometry() == "MODULAR"


def test_use_gpu_without_cuda_warns_and_runs_on_cpu():
    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    with pytest.warns(RuntimeWarning, match="no CUDA"):
        proj = Projector(use_gpu=True, gpu_device=torch.device("cuda:0"))
    assert proj.use_gpu is False and proj.gpu_device == torch.device("cpu")
    proj.set_parallelbeam(4, 1, 6, 1.0, 1.0, 0.0, 2.5, proj.leapct.setAngleArray(4, 180.0))
    proj.set_default_volume()
    assert proj(torch.rand(1, 1, 6, 6)).device.type == "cpu"


@pytest.mark.gpu
@pytest.mark.parametrize("name", list(MAPS))
def test_cuda_tensors_run_zero_copy_and_give_the_cpu_result(monkeypatch, name):
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    m, shape = make_map("cone", name, nangles=6, nrows=3, ncols=8)
    x = torch.rand(2, *shape, requires_grad=True)
    xc = x.detach().cuda().requires_grad_()
    seen = []
    if name == "project":
        real = leap.operators.project

        def spy(geometry, volume, f, out=None, **kw):
            seen.append((f.data_ptr(), out.data_ptr()))
            return real(geometry, volume, f, out=out, **kw)
        monkeypatch.setattr(leap.operators, "project", spy)
    yc = m(xc)
    yc.backward(torch.ones_like(yc))
    if name == "project":
        assert seen == [(xc[b].data_ptr(), yc[b].data_ptr()) for b in range(2)]
    y = m(x)
    y.backward(torch.ones_like(y))
    assert yc.device == xc.device and xc.grad.device == xc.device
    # the same model on another back-end: equal up to float32 summation order (and FFTs)
    for a, b in ((yc.detach().cpu(), y.detach()), (xc.grad.cpu(), x.grad)):
        assert torch.allclose(a, b, rtol=1e-3, atol=1e-4 * float(b.abs().max()))


# -------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad, err, match", [
    ("numpy", TypeError, "torch.from_numpy"),
    ("int", TypeError, "floating-point"),
    ("complex", TypeError, "floating-point"),
    ("2d", ValueError, "must have shape"),
    ("shape", ValueError, "must have shape"),
    ("projections", ValueError, "numZ, numY, numX"),
])
def test_bad_input_raises_clearly(bad, err, match):
    proj = make("cone", nangles=6, nrows=3, ncols=8)
    vd = proj.get_volume_dim()
    x = {
        "numpy": lambda: np.zeros((1, *vd), np.float32),
        "int": lambda: torch.zeros((1, *vd), dtype=torch.int32),
        "complex": lambda: torch.zeros((1, *vd), dtype=torch.complex64),
        "2d": lambda: torch.zeros(vd[1:]),
        "shape": lambda: torch.zeros((1, vd[0], vd[1], vd[2] + 1)),
        "projections": lambda: torch.zeros((1, *proj.get_projection_dim())),
    }[bad]()
    with pytest.raises(err, match=match):
        proj(x)


@pytest.mark.parametrize("module", ["project", "backproject", "fbp"])
def test_any_strides_accepted(module):
    """Transposed, sliced and expanded inputs give the contiguous input's results
    (and gradients), as every torch op does."""
    proj = make("cone", nangles=6, nrows=5, ncols=8)
    if module == "backproject":
        proj.forward_project = False
    shape = proj.get_volume_dim() if module == "project" else proj.get_projection_dim()
    run = proj.fbp if module == "fbp" else proj
    torch.manual_seed(0)
    base = torch.rand(3, shape[0], shape[2], shape[1], dtype=torch.float64)
    views = {"transposed": base.transpose(2, 3), "sliced": base.transpose(2, 3)[::2],
             "expanded": base[:1].transpose(2, 3).expand(2, -1, -1, -1)}
    for name, x in views.items():
        assert not x.is_contiguous()
        x = x.detach().requires_grad_(True)
        xc = x.detach().contiguous().requires_grad_(True)
        y, yc = run(x), run(xc)
        torch.testing.assert_close(y, yc, rtol=0, atol=0, msg=name)
        w = torch.rand_like(yc)
        (y * w).sum().backward()
        (yc * w).sum().backward()
        torch.testing.assert_close(x.grad, xc.grad, rtol=0, atol=0, msg=name)


def test_meta_tensors_give_shapes():
    """On the meta device the op runs its fake implementation: shapes and dtypes, no
    kernel (model initialisation and shape inference on meta tensors work)."""
    proj = make("cone", nangles=6, nrows=3, ncols=8)
    y = proj(torch.zeros((2, *proj.get_volume_dim()), device="meta", dtype=torch.float64))
    assert y.device.type == "meta" and y.dtype == torch.float64
    assert tuple(y.shape) == (2, *proj.get_projection_dim())


def test_missing_geometry_and_misuse_raise_clearly():
    with pytest.raises(RuntimeError, match="no CT geometry"):
        Projector()(torch.zeros(1, 1, 4, 4))
    p = Projector()
    p.set_parallelbeam(4, 1, 6, 1.0, 1.0, 0.0, 2.5, p.leapct.setAngleArray(4, 180.0))
    with pytest.raises(RuntimeError, match="no CT volume"):
        p(torch.zeros(1, 1, 6, 6))
    with pytest.raises(NotImplementedError, match="Projector"):
        BaseProjector()(torch.zeros(1, 1, 4, 4))
    for bs in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match="batch_size"):
            Projector(batch_size=bs)
    p.set_default_volume()
    x = torch.zeros(1, 1, 6, 6)
    with pytest.raises(TypeError, match="param_id is required"):
        ProjectorFunctionCPU.apply(x, None, None, None)
    with pytest.raises(ValueError, match="integer tensor"):
        ProjectorFunctionCPU.apply(x, None, None, torch.tensor(1.5))
    with pytest.raises(ValueError, match="does not name a live"):
        ProjectorFunctionCPU.apply(x, None, None, 10**9)
    with pytest.raises(TypeError, match="device"):
        p.set_gpu(1.5)
