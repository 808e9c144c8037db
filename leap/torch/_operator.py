"""A CT operator frozen at call time, and the tensor plumbing around the core operators.

:class:`CTOperator` is one linear map of a :class:`leap.system.CTSystem` (geometry,
volume, forward model, field of view, mask, FBP options, devices) applied to batches of
tensors. It is the numerical body of the custom ops ``torch.ops.leap.project`` and its
kin (:mod:`leap.torch.ops`): calling it computes, without autograd.

Tensors reach the core without copies: a float32, C-contiguous CPU tensor is handed
over as a NumPy view (``Tensor.numpy()``) and the result is written straight into a fresh
output tensor through its NumPy view; CUDA tensors are handed over as they are (they
carry ``__cuda_array_interface__``, on which the core dispatches to its CUDA kernels, on
the tensor's device and the caller's current stream). CPU tensors run on the GPUs
selected in the facade (``leapct.set_gpu``/``set_gpus``), from host memory, when any are.
Other strides and floating dtypes are made contiguous float32 first.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..system import CTSystem

#: kind → (adjoint kind, does the operator take a volume?)
KINDS = {
    "project": ("backproject", True),
    "backproject": ("project", False),
    "fbp": ("fbp_adjoint", False),
    "fbp_adjoint": ("fbp", True),
}

_VOLUME_LAYOUT = "(batch, numZ, numY, numX)"
_PROJECTION_LAYOUT = "(batch, numAngles, numRows, numCols)"


@dataclass(frozen=True, eq=False)
class CTOperator:
    """One of the four linear maps of a :class:`~leap.system.CTSystem`, applied to
    batches of tensors.

    ============  =======================  =======================  =================
    kind          input                    output                   adjoint kind
    ============  =======================  =======================  =================
    project       volume (nz, ny, nx)      projections (na, nr, nc)  backproject
    backproject   projections              volume                    project
    fbp           projections              volume                    fbp_adjoint
    fbp_adjoint   volume                   projections               fbp
    ============  =======================  =======================  =================

    Each is the system's method of that name: what ``leapct.project``,
    ``leapct.backproject``, ``leapct.FBP`` and ``leapct.FBP_adjoint`` compute.
    """

    kind: str
    system: CTSystem

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {self.kind!r}")
        if not isinstance(self.system, CTSystem):
            raise TypeError(f"system must be a leap CTSystem, got {type(self.system).__name__}")

    @classmethod
    def from_model(cls, leapct, kind: str) -> "CTOperator":
        """Freeze the current :attr:`~leap.compat.model.tomographicModels.system` of a facade."""
        # .system raises a RuntimeError that says which set_* call is missing; it is an
        # immutable value, so later facade changes do not reach this operator.
        return cls(kind=kind, system=leapct.system)

    # ---------------------------------------------------------------- shapes
    @property
    def takes_volume(self) -> bool:
        return KINDS[self.kind][1]

    @property
    def in_shape(self) -> tuple:
        s = self.system
        return s.volume_shape if self.takes_volume else s.projection_shape

    @property
    def out_shape(self) -> tuple:
        s = self.system
        return s.projection_shape if self.takes_volume else s.volume_shape

    @property
    def in_layout(self) -> str:
        return _VOLUME_LAYOUT if self.takes_volume else _PROJECTION_LAYOUT

    @property
    def adjoint(self) -> "CTOperator":
        return CTOperator(kind=KINDS[self.kind][0], system=self.system)

    @property
    def key(self) -> str:
        """The system's registry key, which ``torch.ops.leap.<kind>`` takes."""
        from ._systems import register_system
        return register_system(self.system)

    # ------------------------------------------------------------ numerics
    def _apply_one(self, x, out):
        """One sample: x (in_shape) → out (out_shape), float32 arrays of one kind."""
        getattr(self.system, self.kind)(x, out=out)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """Apply to ``x`` of shape ``(*batch, *in_shape)``, without autograd; returns a new
        tensor of shape ``(*batch, *out_shape)`` with ``x``'s dtype and device.

        ``x`` is read, never written; any strides and floating dtypes are accepted here
        (the public entry points check them, see :func:`check_input`). float32 contiguous
        input is not copied; other dtypes are computed in float32, the kernels' precision.
        """
        batch, out_shape = x.shape[:-3], self.out_shape
        xs = x.detach()
        if xs.is_neg():                      # a lazily negated view: its values, not its bits
            xs = xs.resolve_neg()
        if xs.dtype != torch.float32 or not xs.is_contiguous():
            xs = xs.to(torch.float32).contiguous()
        n = math.prod(batch)
        out = torch.empty((*batch, *out_shape), dtype=torch.float32, device=x.device)
        if x.device.type == "cpu":
            xs, out_view = xs.numpy(), out.numpy()
        else:
            out_view = out
        xs = xs.reshape(n, *xs.shape[-3:])            # views: both are contiguous
        out_view = out_view.reshape(n, *out_shape)
        for b in range(n):
            self._apply_one(xs[b], out_view[b])
        return out if x.dtype == torch.float32 else out.to(x.dtype)


def check_input(x, op: CTOperator, name: str = "input", devices=("cpu", "cuda")) -> None:
    """Raise a clear exception unless ``x`` can go into ``op`` as given.

    Accepted: a floating-point tensor on one of ``devices`` (the kernels run on CPU and
    CUDA tensors; fake implementations take meta tensors too), any strides, whose last
    three dimensions are ``op.in_shape``; any leading dimensions are batch dimensions
    (none: one sample).
    """
    if not isinstance(x, torch.Tensor):
        hint = f"; wrap it with torch.from_numpy({name})" if isinstance(x, np.ndarray) else ""
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}{hint}")
    layout = op.in_layout
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor (float32; other float dtypes "
                        f"are computed in float32), got {x.dtype}; convert with {name}.float()")
    if x.ndim < 3 or tuple(x.shape[-3:]) != op.in_shape:
        raise ValueError(f"{name} must have shape {layout} = (batch, {', '.join(map(str, op.in_shape))}) "
                         f"(or {op.in_shape} for one sample), got {tuple(x.shape)}")
    if x.device.type not in devices:
        raise ValueError(f"{name} is on device {x.device}; leap runs on CPU and CUDA tensors only, "
                         f"move it with {name}.cpu()")
