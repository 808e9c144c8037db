"""Autograd Functions: one implementation, and LEAP's eight names for it.

All four CT maps are linear, ``y = A x``; each is a custom op (``torch.ops.leap.project``,
``backproject``, ``fbp``, ``fbp_adjoint``; :mod:`leap.torch.ops`) whose autograd applies
``Aᵀ``, and these Functions are thin wrappers over them. :class:`LinearOperatorFunction`
applies a frozen ``CTOperator`` (``leap/torch/_operator.py``) ``A`` and its backward applies
``Aᵀ`` *through the same Function's* ``apply``. The gradient is exact (the matched
back-projector for projection, the exact adjoint of FBP for FBP) and is itself
differentiable, so double backward and ``gradgradcheck`` work. Nothing is saved for
backward but the operator (no tensors), so memory does not grow with the number of
calls.

The named classes (``ProjectorFunctionCPU`` … ``FBPReverseFunctionGPU``) keep upstream
``leaptorch``'s signature ``forward(ctx, input, proj, vol, param_id)``. ``param_id``
names the model (a module's) whose geometry to use (see :func:`model_for`); ``proj`` and ``vol``,
upstream's preallocated output buffers, are accepted and ignored: every call returns a
new tensor. CPU and GPU variants are the same class; the device follows the input.
"""
from __future__ import annotations

import numbers

import torch

from ..compat import tomographicModels
from ..compat.registry import registered
from ._operator import CTOperator, check_input
from .ops import LINEAR_OPS, linear

__all__ = [
    "LinearOperatorFunction",
    "ProjectorFunctionCPU", "ProjectorFunctionGPU",
    "BackProjectorFunctionCPU", "BackProjectorFunctionGPU",
    "FBPFunctionCPU", "FBPFunctionGPU",
    "FBPReverseFunctionCPU", "FBPReverseFunctionGPU",
]


# --------------------------------------------------------------------------- param_id
# Upstream keeps geometries in numbered models of a C++ library, and every
# ``use_static=True`` module writes model 0, so two such modules silently share (and
# overwrite) one geometry. Here every module's facade is a model of its own whatever
# ``use_static`` says, and its id is the module's ``param_id``: the facade's registry
# (:mod:`leap.compat.registry`) maps ids to live models, weakly, so it neither keeps
# modules alive nor grows with modules that are gone.
def model_for(param_id) -> tomographicModels:
    """The facade that ``param_id`` names.

    ``param_id`` may be a module's ``param_id`` (an int) or ``param_id_t`` (a one-element
    integer tensor, as upstream passes it), a module itself, or a ``tomographicModels``.
    """
    if isinstance(param_id, tomographicModels):
        return param_id
    if hasattr(param_id, "leapct") and isinstance(param_id.leapct, tomographicModels):
        return param_id.leapct
    if isinstance(param_id, torch.Tensor):
        if param_id.numel() != 1 or param_id.dtype.is_floating_point or param_id.dtype.is_complex:
            raise ValueError("param_id must be a one-element integer tensor (a module's "
                             f"param_id_t), got dtype {param_id.dtype} and shape "
                             f"{tuple(param_id.shape)}")
        param_id = int(param_id.item())
    if param_id is None:
        raise TypeError("param_id is required: pass the module's param_id_t (or param_id, "
                        "or the module itself)")
    if isinstance(param_id, bool) or not isinstance(param_id, numbers.Integral):
        raise TypeError(f"param_id must be an int, a one-element integer tensor, a leap.torch "
                        f"module or a tomographicModels, got {type(param_id).__name__}")
    params = registered(int(param_id)) if param_id >= 0 else None
    if params is None:
        raise ValueError(f"param_id {int(param_id)} does not name a live leap.torch module; "
                         "pass module.param_id_t of the Projector/FBP whose geometry to use")
    return tomographicModels(param_id=int(param_id))   # on params, alive while referenced


# ------------------------------------------------------------------ implementation
class LinearOperatorFunction(torch.autograd.Function):
    """``y = A x`` for a frozen linear CT operator ``A``; ``∂L/∂x = Aᵀ ∂L/∂y``.

    ``apply(x, op)``: ``x`` of shape ``(*batch, *op.in_shape)``, any floating dtype and
    strides (float32 contiguous is passed to the kernels without a copy; float64 is
    computed in float32 and returned as float64, which lets ``gradcheck`` run). Returns
    a new tensor ``(*batch, *op.out_shape)``. A thin wrapper over the custom op
    ``torch.ops.leap.<op.kind>`` (:mod:`leap.torch.ops`), usable inside ``torch.func``
    transforms (``setup_context``, a generated vmap rule, ``jvp``: the op itself).
    """

    generate_vmap_rule = True

    @staticmethod
    def forward(x, op):
        return LINEAR_OPS[op.kind](x, op.key)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.op = inputs[1]

    @staticmethod
    def backward(ctx, grad_output):
        # Through apply: the backward of a linear map is linear and differentiable, with
        # A (= (Aᵀ)ᵀ) as its own backward.
        return LinearOperatorFunction.apply(grad_output, ctx.op.adjoint), None

    @staticmethod
    def jvp(ctx, tangent, _op):
        return LinearOperatorFunction.apply(tangent, ctx.op)


def _forward(ctx, kind, input, param_id):
    op = CTOperator.from_model(model_for(param_id), kind)
    check_input(input, op)
    ctx.op = op
    return LINEAR_OPS[kind](input, op.key)


def _backward(ctx, grad_output):
    return linear(grad_output, ctx.op.adjoint.kind, ctx.op.key), None, None, None


# ------------------------------------------------------- upstream names (thin)
class ProjectorFunctionCPU(torch.autograd.Function):
    """Forward projection: volumes ``(batch, numZ, numY, numX)`` → projections
    ``(batch, numAngles, numRows, numCols)``; backward is the matched back-projection.

    ``apply(input, proj, vol, param_id)``; ``proj`` and ``vol`` are ignored (a new tensor
    is returned), ``param_id`` names the module whose geometry is used.
    """

    @staticmethod
    def forward(ctx, input, proj=None, vol=None, param_id=None):
        return _forward(ctx, "project", input, param_id)

    backward = staticmethod(_backward)


class BackProjectorFunctionCPU(torch.autograd.Function):
    """Back-projection (transpose of the projector): projections → volumes; backward is
    the forward projection. Arguments as :class:`ProjectorFunctionCPU`."""

    @staticmethod
    def forward(ctx, input, proj=None, vol=None, param_id=None):
        return _forward(ctx, "backproject", input, param_id)

    backward = staticmethod(_backward)


class FBPFunctionCPU(torch.autograd.Function):
    """Filtered back-projection (the module's ``leapct.FBP``): projections → volumes;
    backward is the exact adjoint of FBP. Arguments as :class:`ProjectorFunctionCPU`."""

    @staticmethod
    def forward(ctx, input, proj=None, vol=None, param_id=None):
        return _forward(ctx, "fbp", input, param_id)

    backward = staticmethod(_backward)


class FBPReverseFunctionCPU(torch.autograd.Function):
    """The exact adjoint of FBP: volumes → projections; backward is FBP.
    Arguments as :class:`ProjectorFunctionCPU`."""

    @staticmethod
    def forward(ctx, input, proj=None, vol=None, param_id=None):
        return _forward(ctx, "fbp_adjoint", input, param_id)

    backward = staticmethod(_backward)


# The device follows the input tensor, so the GPU names need no code of their own.
class ProjectorFunctionGPU(ProjectorFunctionCPU):
    """Same as :class:`ProjectorFunctionCPU` (the device follows the input)."""


class BackProjectorFunctionGPU(BackProjectorFunctionCPU):
    """Same as :class:`BackProjectorFunctionCPU` (the device follows the input)."""


class FBPFunctionGPU(FBPFunctionCPU):
    """Same as :class:`FBPFunctionCPU` (the device follows the input)."""


class FBPReverseFunctionGPU(FBPReverseFunctionCPU):
    """Same as :class:`FBPReverseFunctionCPU` (the device follows the input)."""
