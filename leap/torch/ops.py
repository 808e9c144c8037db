"""leap's operators as PyTorch custom ops: ``torch.ops.leap.*``.

Registered with ``torch.library.custom_op``, so ``torch.compile`` (Dynamo and
Inductor), ``torch.export`` and AOTAutograd see each as one opaque node with a fake
(meta) implementation for its shapes, instead of tracing into Numba:

* ``leap::project(x, system)``: projections of volumes ``(*batch, nz, ny, nx)``;
* ``leap::backproject(x, system)``: the matched back-projection of projections
  ``(*batch, na, nr, nc)``;
* ``leap::fbp(x, system)``: FBP of projections;
* ``leap::fbp_adjoint(x, system)``: the exact adjoint of FBP, volumes → projections;
* ``leap::modular_project(f, sources, centers, row_vectors, col_vectors, detector,
  volume)``: projection through a modular beam given as four ``(views, 3)`` tensors,
  differentiable in them; ``leap::modular_backproject(g, ...)``: its transpose;
* ``leap::modular_geometry_vjp(f, gbar, sources, centers, row_vectors, col_vectors,
  detector, volume)``: the geometry's vector–Jacobian product of the two above (four
  tensors like the geometry's);
* ``leap::log_transmission(L, mu, theta, log_mode)``: the polychromatic layer's
  ``−log Σ_E w_E exp(−Σ_m μ_mE L_m)``, ``L`` (B, M, N) → (B, N).

``system`` is a registry key (:func:`leap.torch.register_system`, :mod:`leap.torch._systems`);
``detector`` is ``[num_rows, num_cols, pixel_height, pixel_width]`` and ``volume``
``[num_x, num_y, num_z, voxel_width, voxel_height, offset_x, offset_y, offset_z]`` (mm).
Inputs may have any strides and floating dtype (computed in float32, returned in the
input's dtype), on the CPU or a CUDA device (the same registration serves both).

Derivatives: autograd through ``torch.library.register_autograd`` (the adjoint of a
linear op is the other op, itself differentiable, so second order works; the modular
ops' geometry gradient is ``modular_geometry_vjp``, first order only), and a vmap rule
per op (a vmapped dimension of the data folds into the op's batch dimension; anything
else is looped). ``torch.func`` transforms (grad, vjp, jvp, jacrev, jacfwd, hessian)
cannot run a custom op's autograd registration, so the Python entry points
(:func:`linear`, :func:`modular`, :func:`log_transmission`) run, inside such a
transform, through an equivalent ``torch.autograd.Function`` with ``setup_context``,
the same backward, a vmap rule and, for the linear ops, ``jvp`` (the op itself). Under
``torch.compile`` and ``torch.export`` they call the op. In plain eager mode
:func:`linear` runs the op's body through a ``forward(ctx)`` Function with the same
derivatives: a custom op's Python dispatch would more than double the per-call cost of
a small problem's Python (``benchmarks/bench_torch_ops.py``).
"""
from __future__ import annotations

import torch

from ..geometry import Detector, ModularBeam, Volume
from ..system import CTSystem
from ._modular_vjp import geometry_grads
from ._operator import KINDS, CTOperator, check_input
from ._systems import system_for

__all__ = ["linear", "modular", "log_transmission", "LINEAR_OPS", "MODULAR_OPS"]

Tensor = torch.Tensor


def _in_functorch() -> bool:
    """Inside a torch.func transform (and not being compiled)."""
    return (not torch.compiler.is_compiling()
            and torch._C._are_functorch_transforms_active())


def _loop_vmap(op, in_dims, args):
    """vmap by looping over the mapped dimension (all mapped args have the same size;
    a list argument's in_dims entry is a list of Nones)."""
    mapped = [isinstance(d, int) for d in in_dims]
    size = next(a.shape[d] for a, d, m in zip(args, in_dims, mapped) if m)
    outs = []
    for i in range(size):
        outs.append(op(*(a.select(d, i) if m else a
                         for a, d, m in zip(args, in_dims, mapped))))
    if isinstance(outs[0], (tuple, list)):
        return tuple(torch.stack(o) for o in zip(*outs)), (0,) * len(outs[0])
    return torch.stack(outs), 0


# =============================================================== linear ops
def _linear_impl(kind, x, key):
    """The body of ``leap::<kind>``: checks, then the kernels (no autograd)."""
    op = CTOperator(kind=kind, system=system_for(key))
    check_input(x, op)
    return op(x)


def _linear_op(kind):
    def impl(x, system):
        return _linear_impl(kind, x, system)

    def fake(x, system):
        op = CTOperator(kind=kind, system=system_for(system))
        check_input(x, op, devices=("cpu", "cuda", "meta"))
        return x.new_empty((*x.shape[:-3], *op.out_shape))

    op = torch.library.custom_op(f"leap::{kind}", impl, mutates_args=(),
                                 schema="(Tensor x, str system) -> Tensor")
    op.register_fake(fake)

    def setup_context(ctx, inputs, output):
        ctx.system_key = inputs[1]
        ctx.system = system_for(inputs[1])   # keeps the registry entry alive until backward

    def backward(ctx, grad):
        # The adjoint op itself (differentiable by its own registration): this runs when
        # the op does, under torch.compile/export/AOTAutograd, on traced tensors too.
        return LINEAR_OPS[KINDS[kind][0]](grad, ctx.system_key), None

    op.register_autograd(backward, setup_context=setup_context)

    def vmap_rule(info, in_dims, x, system):
        if in_dims[0] is None:
            return op(x, system), None
        return op(x.movedim(in_dims[0], 0), system), 0

    op.register_vmap(vmap_rule)
    return op


#: kind → the custom op (``torch.ops.leap.<kind>``).
LINEAR_OPS = {kind: _linear_op(kind) for kind in KINDS}


class _Linear(torch.autograd.Function):
    """The linear ops in eager mode and inside torch.func transforms (see the module
    docstring): the op's body, with the op's derivatives."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, kind, key):
        if _in_functorch():          # vmap hands over batched tensors: the op's vmap rule
            return LINEAR_OPS[kind](x, key)
        return _linear_impl(kind, x, key)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.kind, ctx.system_key = inputs[1], inputs[2]
        ctx.system = system_for(inputs[2])

    @staticmethod
    def backward(ctx, grad):
        return linear(grad, KINDS[ctx.kind][0], ctx.system_key), None, None

    @staticmethod
    def jvp(ctx, tangent, _kind, _key):
        return linear(tangent, ctx.kind, ctx.system_key)


class _LinearEager(torch.autograd.Function):
    """The linear ops in plain eager mode: the op's body and derivatives, as a Function
    in the ``forward(ctx, ...)`` form, whose ``apply`` binds no signature (the
    ``setup_context`` form's ``apply`` calls ``inspect.signature`` on every call)."""

    @staticmethod
    def forward(ctx, x, kind, key):
        ctx.kind, ctx.system_key = kind, key
        ctx.system = system_for(key)
        return _linear_impl(kind, x, key)

    backward = _Linear.backward
    jvp = _Linear.jvp


def linear(x, kind: str, key: str) -> Tensor:
    """``torch.ops.leap.<kind>(x, key)``, differentiable (also inside torch.func).

    Under ``torch.compile`` / ``torch.export`` the op itself; otherwise an equivalent
    Function that calls the op's body directly (a custom op's Python dispatch costs
    about as much again as the rest of a tiny problem's overhead): inside torch.func
    transforms one with ``setup_context`` and a vmap rule, else a plain one."""
    if torch.compiler.is_compiling() or (isinstance(x, torch.Tensor) and x.is_meta):
        return LINEAR_OPS[kind](x, key)            # meta tensors: the op's fake
    if torch._C._are_functorch_transforms_active():
        return _Linear.apply(x, kind, key)
    return _LinearEager.apply(x, kind, key)


# ============================================================== modular ops
def modular_system(sources, centers, row_vectors, col_vectors, detector, volume) -> CTSystem:
    """The :class:`~leap.system.CTSystem` of a modular beam given as four ``(views, 3)``
    tensors and the ops' ``detector`` and ``volume`` lists (validated by the core)."""
    num_rows, num_cols, pixel_height, pixel_width = detector
    det = Detector(num_rows=int(num_rows), num_cols=int(num_cols),
                   pixel_height=float(pixel_height), pixel_width=float(pixel_width))
    nx, ny, nz, vw, vh, ox, oy, oz = volume
    vol = Volume(num_x=int(nx), num_y=int(ny), num_z=int(nz), voxel_width=float(vw),
                 voxel_height=float(vh), offset_x=float(ox), offset_y=float(oy),
                 offset_z=float(oz))
    raw = [t.detach().to("cpu", torch.float64).contiguous().numpy()
           for t in (sources, centers, row_vectors, col_vectors)]
    geometry = ModularBeam(detector=det, source_positions=raw[0], module_centers=raw[1],
                           row_vectors=raw[2], col_vectors=raw[3])
    return CTSystem(geometry=geometry, volume=vol)


def volume_list(volume: Volume) -> list:
    """A :class:`~leap.geometry.Volume` as the ops' ``volume`` argument."""
    return [float(volume.num_x), float(volume.num_y), float(volume.num_z),
            float(volume.voxel_width), float(volume.voxel_height), float(volume.offset_x),
            float(volume.offset_y), float(volume.offset_z)]


def _modular_shape(kind, x, sources, detector, volume):
    """The output shape of modular_<kind> on x."""
    if kind == "project":
        return (*x.shape[:-3], sources.shape[0], int(detector[0]), int(detector[1]))
    return (*x.shape[:-3], int(volume[2]), int(volume[1]), int(volume[0]))


_MODULAR_SCHEMA = ("(Tensor x, Tensor sources, Tensor centers, Tensor row_vectors, "
                   "Tensor col_vectors, float[] detector, float[] volume) -> Tensor")


def _modular_op(kind):
    def impl(x, sources, centers, row_vectors, col_vectors, detector, volume):
        # Values are checked here, on real tensors (the Python entry points check
        # types and shapes, which tracing can see).
        for name, t in (("f" if kind == "project" else "g", x), ("sources", sources),
                        ("centers", centers), ("row_vectors", row_vectors),
                        ("col_vectors", col_vectors)):
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} must be finite (it holds inf or nan)")
        system = modular_system(sources, centers, row_vectors, col_vectors, detector, volume)
        op = CTOperator(kind=kind, system=system)
        check_input(x, op, "f" if kind == "project" else "g")
        return op(x)

    def fake(x, sources, centers, row_vectors, col_vectors, detector, volume):
        return x.new_empty(_modular_shape(kind, x, sources, detector, volume))

    op = torch.library.custom_op(f"leap::modular_{kind}", impl, mutates_args=(),
                                 schema=_MODULAR_SCHEMA)
    op.register_fake(fake)
    op.register_autograd(_modular_backward(kind), setup_context=_modular_setup)

    def vmap_rule(info, in_dims, x, *rest):
        if all(d is None for d in in_dims[1:5]):   # one geometry: fold into the batch
            if in_dims[0] is None:
                return op(x, *rest), None
            return op(x.movedim(in_dims[0], 0), *rest), 0
        return _loop_vmap(op, in_dims, (x, *rest))

    op.register_vmap(vmap_rule)
    return op


def _modular_setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs[:5])
    ctx.detector, ctx.volume = inputs[5], inputs[6]


def _modular_backward(kind):
    other = "backproject" if kind == "project" else "project"

    def backward(ctx, upstream):
        x, *geometry = ctx.saved_tensors
        spec = (ctx.detector, ctx.volume)
        needs = ctx.needs_input_grad
        grad_x = modular(other, upstream, *geometry, *spec) if needs[0] else None
        grads = [None] * 4
        if any(needs[1:5]):
            # ⟨Pᵀ(θ) g, ȳ⟩ = ⟨P(θ) ȳ, g⟩: the same product with (f, ḡ) = (ȳ, g).
            f, gbar = (x, upstream) if kind == "project" else (upstream, x)
            grads = list(_geometry_vjp(f, gbar, *geometry, *spec))
            grads = [g if need else None for g, need in zip(grads, needs[1:5])]
        return (grad_x, *grads, None, None)

    return backward


@torch.library.custom_op("leap::modular_geometry_vjp", mutates_args=())
def _modular_geometry_vjp(f: Tensor, gbar: Tensor, sources: Tensor, centers: Tensor,
                          row_vectors: Tensor, col_vectors: Tensor, detector: list[float],
                          volume: list[float]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    tensors = (sources, centers, row_vectors, col_vectors)
    system = modular_system(*tensors, detector, volume)
    return geometry_grads(system, f, gbar, tensors)


@_modular_geometry_vjp.register_fake
def _(f, gbar, sources, centers, row_vectors, col_vectors, detector, volume):
    return tuple(torch.empty_like(t) for t in (sources, centers, row_vectors, col_vectors))


def _vjp_vmap(info, in_dims, *args):
    # A mapped volume and upstream pair sums over the batch (the geometry is shared),
    # but vmap asks for one product per mapped sample: loop.
    return _loop_vmap(_modular_geometry_vjp, in_dims, args)


_modular_geometry_vjp.register_vmap(_vjp_vmap)

MODULAR_VJP = _modular_geometry_vjp


_SECOND_ORDER = ("second derivatives with respect to a modular beam's geometry are not "
                 "implemented (the geometry gradient is first order)")


def _no_second_order(ctx, *grads):
    raise NotImplementedError(_SECOND_ORDER)


MODULAR_VJP.register_autograd(_no_second_order, setup_context=lambda ctx, inputs, output: None)


class _GeometryVjpFn(torch.autograd.Function):
    """``leap::modular_geometry_vjp`` inside torch.func transforms: first order only."""

    generate_vmap_rule = True

    @staticmethod
    def forward(*args):
        return MODULAR_VJP(*args)

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    backward = staticmethod(_no_second_order)


def _geometry_vjp(*args):
    if _in_functorch():
        return _GeometryVjpFn.apply(*args)
    return MODULAR_VJP(*args)
#: kind ("project", "backproject") → the custom op (``torch.ops.leap.modular_<kind>``).
MODULAR_OPS = {kind: _modular_op(kind) for kind in ("project", "backproject")}


class _ModularFn(torch.autograd.Function):
    """The modular ops inside torch.func transforms (see the module docstring)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(x, sources, centers, row_vectors, col_vectors, detector, volume, kind):
        return MODULAR_OPS[kind](x, sources, centers, row_vectors, col_vectors, detector,
                                 volume)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _modular_setup(ctx, inputs, output)
        ctx.kind = inputs[7]

    @staticmethod
    def backward(ctx, upstream):
        return (*_modular_backward(ctx.kind)(ctx, upstream), None)


def modular(kind, x, sources, centers, row_vectors, col_vectors, detector, volume) -> Tensor:
    """``torch.ops.leap.modular_<kind>``, differentiable (also inside torch.func)."""
    if _in_functorch():
        return _ModularFn.apply(x, sources, centers, row_vectors, col_vectors, detector,
                                volume, kind)
    return MODULAR_OPS[kind](x, sources, centers, row_vectors, col_vectors, detector, volume)


# ===================================================== polychromatic layer
#: Elements of the largest ``(batch, energies, pixels)`` temporary: energies are taken
#: this many pixels' worth at a time (at least one energy per chunk).
CHUNK_ELEMENTS = 1 << 22


def _log_weights(theta, log_mode):
    """Normalised log weights ``log(s_E / Σ s)`` (−inf for empty bins), (E,)."""
    logs = theta if log_mode else torch.log(theta)
    return logs - torch.logsumexp(logs, 0)


def _chunks(num_energies, per_energy):
    step = max(1, CHUNK_ELEMENTS // max(1, per_energy))
    for e0 in range(0, num_energies, step):
        yield slice(e0, min(e0 + step, num_energies))


@torch.library.custom_op("leap::log_transmission", mutates_args=())
def _log_transmission(L: Tensor, mu: Tensor, theta: Tensor, log_mode: bool) -> Tensor:
    """``p = −log Σ_E w_E exp(−Σ_m μ_mE L_m)`` for line integrals ``L`` (B, M, N),
    ``mu`` (M, E) and the spectrum ``theta`` (E,): weights ``s ≥ 0`` (``log_mode``
    False) or log weights (True, −inf for empty bins); ``w = s / Σ s``. Returns ``p``
    (B, N), energies taken in chunks so that no (B, E, N) tensor is made."""
    log_w = _log_weights(theta, log_mode)
    lse = None
    for sl in _chunks(mu.shape[1], L.shape[0] * L.shape[2]):
        a = log_w[sl, None] - torch.einsum("me,bmn->ben", mu[:, sl], L)
        part = torch.logsumexp(a, 1)
        lse = part if lse is None else torch.logaddexp(lse, part)
    return -lse


@_log_transmission.register_fake
def _(L, mu, theta, log_mode):
    return L.new_empty((L.shape[0], L.shape[2]))


def _log_transmission_setup(ctx, inputs, output):
    L, mu, theta, log_mode = inputs
    ctx.save_for_backward(L, mu, theta, output)
    ctx.log_mode = log_mode


def _log_transmission_backward(ctx, g):
    """With ``q_E = w_E exp(p − A_E)`` (the share of the detected photons in bin E,
    ``A_E = Σ_m μ_mE L_m``): ``∂p/∂L_m = Σ_E q_E μ_mE``, ``∂p/∂μ_mE = q_E L_m``,
    ``∂p/∂θ_E = w_E − q_E`` for log weights and ``(1 − exp(p − A_E)) / Σ s`` for
    weights (finite for empty bins too). Chunked as the forward, and written in
    differentiable torch operations, so double backward works as well."""
    L, mu, theta, p = ctx.saved_tensors
    need_L, need_mu, need_theta = ctx.needs_input_grad[:3]
    log_w = _log_weights(theta, ctx.log_mode)
    gL = torch.zeros_like(L) if need_L else None
    gmu, gth = [], []
    for sl in _chunks(mu.shape[1], L.shape[0] * L.shape[2]):
        A = torch.einsum("me,bmn->ben", mu[:, sl], L)
        gq = g[:, None] * torch.exp(log_w[sl, None] + p[:, None] - A)   # g · q_E
        if need_L:
            gL = gL + torch.einsum("me,ben->bmn", mu[:, sl], gq)
        if need_mu:
            gmu.append(torch.einsum("bmn,ben->me", L, gq))
        if need_theta:
            if ctx.log_mode:
                gth.append(gq.sum((0, 2)))
            else:
                gth.append((g[:, None] * torch.exp(p[:, None] - A)).sum((0, 2)))
    grad_mu = torch.cat(gmu, 1) if need_mu else None
    grad_theta = None
    if need_theta:
        G = g.sum()
        if ctx.log_mode:
            grad_theta = G * torch.exp(log_w) - torch.cat(gth)
        else:
            grad_theta = (G - torch.cat(gth)) / theta.sum()
    return gL, grad_mu, grad_theta, None


_log_transmission.register_autograd(_log_transmission_backward,
                                    setup_context=_log_transmission_setup)


def _log_transmission_vmap(info, in_dims, L, mu, theta, log_mode):
    if in_dims[1] is None and in_dims[2] is None:
        if in_dims[0] is None:
            return _log_transmission(L, mu, theta, log_mode), None
        Lb = L.movedim(in_dims[0], 0)
        p = _log_transmission(Lb.reshape(-1, *Lb.shape[2:]), mu, theta, log_mode)
        return p.reshape(Lb.shape[0], Lb.shape[1], -1), 0
    return _loop_vmap(_log_transmission, (*in_dims[:3], None), (L, mu, theta, log_mode))


_log_transmission.register_vmap(_log_transmission_vmap)


class _LogTransmissionFn(torch.autograd.Function):
    """``leap::log_transmission`` inside torch.func transforms."""

    generate_vmap_rule = True

    @staticmethod
    def forward(L, mu, theta, log_mode):
        return _log_transmission(L, mu, theta, log_mode)

    setup_context = staticmethod(_log_transmission_setup)
    backward = staticmethod(_log_transmission_backward)


def log_transmission(L, mu, theta, log_mode: bool) -> Tensor:
    """``torch.ops.leap.log_transmission``, differentiable (also inside torch.func)."""
    if _in_functorch():
        return _LogTransmissionFn.apply(L, mu, theta, log_mode)
    return _log_transmission(L, mu, theta, log_mode)
