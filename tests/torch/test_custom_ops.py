"""leap.torch as PyTorch custom ops (``torch.ops.leap.*``): opcheck of every registration,
``torch.compile(fullgraph=True)`` of a training step (eager and inductor back-ends),
``torch.func`` transforms against the operator's matrix, ``torch.export``, DDP, and what
must keep working (dtypes, autocast, copies, ``torch.save``)."""
import copy
import io
import os
import pickle
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import leap.torch as lt  # noqa: E402
from conftest import REPO_ROOT  # noqa: E402
from leap.torch import FBP, PolychromaticProjector, Projector  # noqa: E402
from leap.torch.ops import linear  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_numba_thread")

SAMPLES = lt.opcheck_samples()


def cone(cls=Projector, n=6, views=5, **flags):
    m = cls(**flags)
    m.set_conebeam(views, 4, n, 1.0, 1.0, 1.3, 0.5 * (n - 1) + 0.2,
                   m.leapct.setAngleArray(views, 360.0), 4.0 * n, 8.0 * n)
    m.set_volume(n, n, 3, 0.5, 0.5)
    return m


def matrix(fn, shape, dtype=torch.float64):
    """The matrix of the linear map fn on inputs of ``shape``, column by column."""
    eye = torch.eye(int(np.prod(shape)), dtype=dtype).reshape(-1, *shape)
    return torch.stack([fn(e).reshape(-1) for e in eye], 1)


# ---------------------------------------------------------------- opcheck
def test_samples_cover_every_op():
    names = {op._schema.name for op, _, _ in SAMPLES}
    expected = {f"leap::{n}" for n in ("project", "backproject", "fbp", "fbp_adjoint",
                                        "modular_project", "modular_backproject",
                                        "modular_geometry_vjp", "log_transmission")}
    assert names == expected
    assert {a.dtype for _, args, _ in SAMPLES for a in args[:1]} == {torch.float32,
                                                                    torch.float64}


@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_opcheck(index):
    op, args, kwargs = SAMPLES[index]
    torch.library.opcheck(op, args, kwargs)


# ---------------------------------------------------------- torch.compile
class Net(torch.nn.Module):
    def __init__(self, proj):
        super().__init__()
        self.conv = torch.nn.Conv3d(1, 1, 3, padding=1)
        self.proj = proj

    def forward(self, x):
        return self.proj(torch.relu(self.conv(x[:, None]))[:, 0])


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["eager", "inductor"])
def test_compiled_training_step_equals_eager(backend):
    """A whole training step (forward, loss.backward(), an SGD update) compiled as one
    graph (fullgraph=True: no graph break anywhere, the projector included) gives
    eager's losses and parameters. torch.optim's optimizers break the graph by design
    (they graph-break around step), so the update is written out; Dynamo traces
    loss.backward() with ``trace_autograd_ops``."""
    torch._dynamo.reset()
    proj = cone(n=6)
    torch.manual_seed(0)
    x = torch.rand(2, *proj.get_volume_dim())
    target = proj(torch.rand(2, *proj.get_volume_dim()))
    runs = []
    for compiled in (False, True):
        torch.manual_seed(1)
        net = Net(proj)

        def step():
            loss = torch.nn.functional.mse_loss(net(x), target)
            loss.backward()
            with torch.no_grad():
                for p in net.parameters():
                    p -= 0.02 * p.grad
            return loss.detach()

        run = torch.compile(step, fullgraph=True, backend=backend) if compiled else step
        losses = []
        with torch._dynamo.config.patch(trace_autograd_ops=True):
            for _ in range(3):
                net.zero_grad(set_to_none=True)
                losses.append(float(run()))
        runs.append((losses, [p.detach().clone() for p in net.parameters()]))
    (l0, p0), (l1, p1) = runs
    assert l1[2] < l1[0]                                   # it trains
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    for a, b in zip(p0, p1):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_compiled_module_sees_facade_changes():
    """A change through proj.leapct.set_* after compiling is seen by the next call (a
    recompile on the facade's version), as in eager."""
    torch._dynamo.reset()
    proj = cone()
    run = torch.compile(lambda v: proj(v) * 2, fullgraph=True, backend="eager")
    v = torch.rand(*proj.get_volume_dim())
    torch.testing.assert_close(run(v), 2 * proj(v))
    before = run(v)
    proj.leapct.set_sod(20.0)
    after = run(v)
    torch.testing.assert_close(after, 2 * proj(v))
    assert not torch.allclose(before, after)


def test_compiled_fbp_and_polychromatic_modules():
    torch._dynamo.reset()
    fbp = cone(FBP, forward_FBP=True)
    g = torch.rand(2, *fbp.get_projection_dim())
    torch.testing.assert_close(torch.compile(fbp, fullgraph=True, backend="eager")(g), fbp(g))
    proj = cone()
    poly = PolychromaticProjector(proj, torch.tensor([[0.02, 0.01, 0.005]]),
                                  torch.tensor([1.0, 2.0, 1.0]))
    rho = torch.rand(2, 1, *proj.get_volume_dim(), dtype=torch.float64, requires_grad=True)
    p = torch.compile(poly, fullgraph=True, backend="eager")(rho)
    torch.testing.assert_close(p, poly(rho))
    (g1,) = torch.autograd.grad(p.sum(), rho)
    (g0,) = torch.autograd.grad(poly(rho).sum(), rho)
    torch.testing.assert_close(g1, g0)


# -------------------------------------------------------------- torch.func
@pytest.mark.parametrize("kind", ["project", "backproject", "fbp", "fbp_adjoint"])
def test_func_transforms_match_the_matrix(kind):
    """grad, vjp, vmap, jvp, jacrev, jacfwd and hessian of each linear map against its
    matrix (columns from eager calls) and against eager autograd."""
    m = cone(FBP if kind.startswith("fbp") else Projector, n=4, views=3)
    key = lt.register_system(m.leapct.system)
    s = m.leapct.system
    shape = s.volume_shape if kind in ("project", "fbp_adjoint") else s.projection_shape

    def f(x):
        return linear(x, kind, key)

    A = matrix(f, shape)
    torch.manual_seed(0)
    x = torch.rand(shape, dtype=torch.float64)
    w = torch.rand(A.shape[0], dtype=torch.float64)
    torch.testing.assert_close(torch.func.jacrev(f)(x).reshape(A.shape), A)
    torch.testing.assert_close(torch.func.jacfwd(f)(x).reshape(A.shape), A)
    eye = torch.eye(x.numel(), dtype=torch.float64).reshape(-1, *shape)
    torch.testing.assert_close(torch.func.vmap(f)(eye).reshape(x.numel(), -1).T, A)
    out, tangent = torch.func.jvp(f, (x,), (eye[1],))
    torch.testing.assert_close(tangent.reshape(-1), A[:, 1])
    torch.testing.assert_close(out.reshape(-1), A @ x.reshape(-1))
    grad = torch.func.grad(lambda v: (f(v).reshape(-1) * w).sum())(x)
    torch.testing.assert_close(grad.reshape(-1), A.T @ w)
    xe = x.clone().requires_grad_(True)
    (f(xe).reshape(-1) * w).sum().backward()
    torch.testing.assert_close(xe.grad, grad)
    H = torch.func.hessian(lambda v: f(v).square().sum())(x).reshape(x.numel(), -1)
    torch.testing.assert_close(H, 2 * A.T @ A)


def test_func_through_modules_and_modular_geometry():
    """The modules run inside transforms, and so does the modular beam's geometry
    gradient (equal to eager autograd's); vmap over geometry loops."""
    proj = cone(n=4, views=3)
    vs = proj.get_volume_dim()
    torch.manual_seed(1)
    x = torch.rand(vs, dtype=torch.float64)
    A = matrix(proj, vs)
    torch.testing.assert_close(torch.func.jacrev(proj)(x).reshape(A.shape), A)
    geo = proj.leapct.system.geometry.to_modular()
    tensors = [torch.tensor(a) for a in (geo.source_positions, geo.module_centers,
                                         geo.row_vectors, geo.col_vectors)]
    d = geo.detector
    spec = dict(num_rows=d.num_rows, num_cols=d.num_cols, pixel_height=d.pixel_height,
                pixel_width=d.pixel_width, volume=proj.leapct.system.volume)
    w = torch.rand(geo.projection_shape, dtype=torch.float64)

    def loss(sources, centers):
        return (lt.modular_project(x, sources, centers, *tensors[2:], **spec) * w).sum()

    gs, gc = torch.func.grad(loss, argnums=(0, 1))(tensors[0], tensors[1])
    s0, c0 = (t.clone().requires_grad_(True) for t in tensors[:2])
    loss(s0, c0).backward()
    torch.testing.assert_close(gs, s0.grad)
    torch.testing.assert_close(gc, c0.grad)
    # vmap over the sources: one projection per mapped geometry
    shifted = torch.stack([tensors[0], tensors[0] + torch.tensor([0.0, 0.0, 0.3],
                                                                 dtype=torch.float64)])
    ys = torch.func.vmap(lambda s: lt.modular_project(x, s, *tensors[1:], **spec))(shifted)
    for y, s in zip(ys, shifted):
        torch.testing.assert_close(y, lt.modular_project(x, s, *tensors[1:], **spec))


def test_modular_geometry_second_derivative_raises_clearly():
    proj = cone(n=4, views=3)
    geo = proj.leapct.system.geometry.to_modular()
    sources = torch.tensor(geo.source_positions, requires_grad=True)
    rest = [torch.tensor(a) for a in (geo.module_centers, geo.row_vectors, geo.col_vectors)]
    d = geo.detector
    y = lt.modular_project(torch.rand(proj.get_volume_dim(), dtype=torch.float64), sources,
                           *rest, num_rows=d.num_rows, num_cols=d.num_cols,
                           pixel_height=d.pixel_height, pixel_width=d.pixel_width,
                           volume=proj.leapct.system.volume)
    (g,) = torch.autograd.grad(y.square().sum(), sources, create_graph=True)
    with pytest.raises(NotImplementedError, match="second derivatives .* geometry"):
        g.sum().backward()


def test_vmap_folds_into_the_batch():
    proj = cone()
    x = torch.rand(3, 2, *proj.get_volume_dim())
    torch.testing.assert_close(torch.func.vmap(proj, in_dims=1)(x), proj(x.transpose(0, 1)))


# -------------------------------------------------------------- torch.export
@pytest.mark.parametrize("which", ["projector", "fbp"])
def test_export_equals_eager(which):
    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.op = cone(FBP, forward_FBP=True) if which == "fbp" else cone()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            return self.op(x) * self.scale

    model = Model()
    s = model.op.leapct.system
    x = torch.rand(2, *(s.projection_shape if which == "fbp" else s.volume_shape))
    program = torch.export.export(model, (x,))
    assert f"torch.ops.leap.{'fbp' if which == 'fbp' else 'project'}" in \
        program.graph_module.code
    torch.testing.assert_close(program.module()(x), model(x))
    buffer = io.BytesIO()
    torch.export.save(program, buffer)
    buffer.seek(0)
    torch.testing.assert_close(torch.export.load(buffer).module()(x), model(x))


# ------------------------------------------------------------- the registry
def test_registry_keys_name_content():
    proj = cone()
    s = proj.leapct.system
    key = lt.register_system(s)
    assert key == lt.register_system(pickle.loads(pickle.dumps(s)))
    assert key != lt.register_system(s.with_changes(fov_radius=1.0))
    with pytest.raises(RuntimeError, match="no CT system 'cts-0' is registered"):
        torch.ops.leap.project(torch.zeros(s.volume_shape), "cts-0")
    with pytest.raises(TypeError, match="CTSystem"):
        lt.register_system("not a system")


# ----------------------------------------------------- what keeps working
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_dtypes_in_and_out(dtype):
    proj = cone()
    x = torch.rand(2, *proj.get_volume_dim())
    y = proj(x.to(dtype).requires_grad_(True))
    assert y.dtype == dtype
    torch.testing.assert_close(y, proj(x.to(dtype).float()).to(dtype), rtol=0, atol=0)
    y.sum().backward()


def test_autocast_and_copies():
    proj = cone()
    x = torch.rand(1, *proj.get_volume_dim())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = proj(x)
    torch.testing.assert_close(y.float(), proj(x))
    net = Net(proj)
    buffer = io.BytesIO()
    torch.save(net, buffer)
    buffer.seek(0)
    for other in (copy.deepcopy(net), pickle.loads(pickle.dumps(net)),
                  torch.load(buffer, weights_only=False)):
        torch.testing.assert_close(other(x), net(x))
        torch.testing.assert_close(torch.compile(other, fullgraph=True, backend="eager")(x),
                                   net(x))


@pytest.mark.slow
def test_ddp_two_processes_equal_one(tmp_path):
    """DistributedDataParallel (gloo, 2 CPU processes, one sample each) averages to the
    gradient of one process on both samples."""
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO_ROOT)!r})
        import torch, torch.distributed as dist
        from leaptorch import Projector

        def model():
            torch.manual_seed(0)
            proj = Projector()
            proj.set_conebeam(5, 4, 6, 1.0, 1.0, 1.3, 2.7, proj.leapct.setAngleArray(5, 360.0),
                              24.0, 48.0)
            proj.set_volume(6, 6, 3, 0.5, 0.5)
            conv = torch.nn.Conv3d(1, 1, 3, padding=1)
            class Net(torch.nn.Module):
                def __init__(s):
                    super().__init__(); s.conv = conv; s.proj = proj
                def forward(s, x):
                    return s.proj(s.conv(x[:, None])[:, 0])
            return Net()

        torch.manual_seed(1)
        data = torch.rand(2, 3, 6, 6)

        def grads(net, x):
            net(x).square().mean().backward()
            return torch.cat([p.grad.reshape(-1) for p in net.parameters()])

        def rank(r, out):
            import datetime
            # the loopback only, and an error rather than a wait past two minutes
            dist.init_process_group("gloo", init_method=os.environ["LEAP_TEST_INIT"], rank=r,
                                    world_size=2, timeout=datetime.timedelta(seconds=120))
            net = torch.nn.parallel.DistributedDataParallel(model())
            g = grads(net, data[r:r + 1])
            if r == 0:
                torch.save(g, out)
            # Both ranks past their last collective before either leaves; no
            # destroy_process_group: rank 0 hosts the store, and tearing it down while rank 1
            # still talks to it left rank 1 waiting for ever (seen once in a full run).
            dist.barrier()

        if __name__ == "__main__":
            import socket
            with socket.socket() as sock:            # a free port on the loopback
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            os.environ.update(LEAP_TEST_INIT=f"tcp://127.0.0.1:{{port}}", GLOO_SOCKET_IFNAME="lo")
            out = sys.argv[1]
            torch.multiprocessing.spawn(rank, args=(out,), nprocs=2)
            one = grads(model(), data)
            print("max difference", float((torch.load(out) - one).abs().max()),
                  "scale", float(one.abs().max()))
    """))
    # Its own process group, so that a run past the limit is ended with its workers; and
    # without the variables torch.compile/export set in this process (inductor leaves
    # this process's addresses there, which hang the workers of a new one).
    env = {k: v for k, v in os.environ.items() if "TORCHINDUCTOR" not in k}
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path / "g.pt")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env)
    try:
        stdout, stderr = proc.communicate(timeout=int(os.environ.get("LEAP_DDP_TIMEOUT", 400)))
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    assert proc.returncode == 0, stderr[-3000:]
    diff, scale = (float(v) for v in stdout.split()[-3::2])
    assert diff <= 1e-6 * scale, stdout


def test_copies_of_a_fixed_system_outlive_the_original():
    """A PolychromaticProjector on a CTSystem passes its system to the op by key; a copy
    registers its own system, so it runs after the original (and its system) are gone."""
    import gc
    system = cone().leapct.system
    poly = PolychromaticProjector(system, torch.tensor([[0.02, 0.01]]), torch.tensor([1.0, 1.0]))
    rho = torch.rand(1, 1, *system.volume_shape)
    ref = poly(rho)
    copies = (copy.deepcopy(poly), pickle.loads(pickle.dumps(poly)))
    del poly, system
    gc.collect()
    for c in copies:
        torch.testing.assert_close(c(rho), ref)
