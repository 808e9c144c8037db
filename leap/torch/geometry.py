"""Projection differentiable in the geometry: modular beams whose sources, module centres
and module axes are tensors.

:func:`modular_project` and :func:`modular_backproject` take a modular-beam geometry as
four ``(num_views, 3)`` tensors (mm; source positions, module centres, row and column
vectors), any of which may require grad, and return ``P(θ) f`` and ``Pᵀ(θ) g``. Their
gradients are exact for leap's separable-footprint model:

* with respect to the volume / projections, the matched back-projection / projection
  (the same operators as :class:`leap.torch.Projector`);
* with respect to the geometry θ, the analytic vector–Jacobian product of the model
  (:func:`leap.kernels.cpu.modular_geometry_vjp.geometry_vjp`), one pass over (view,
  voxel), no finite differences and no Jacobian; on the CPU, for vertical modules (the
  geometries its projectors run on the axial kernels, e.g. an untilted
  ``ConeBeam.to_modular``), the same product a voxel column at a time
  (:func:`leap.kernels.cpu.axial_geometry_vjp.geometry_vjp`). The model is piecewise
  smooth; at its kinks (a footprint end exactly on a pixel edge, the switch of a voxel's
  dominant in-plane axis, the order of a footprint's ends) the gradient is the one-sided
  value of the branch the projector takes (see that module).

:class:`leap.geometry.ModularBeam` normalises the row and column vectors, so the
projection depends only on their directions; the gradients include that step (they are
orthogonal to the vectors given). The module normal is col × row. Rows and columns must
stay orthogonal to within 0.01 (``ModularBeam``'s rule), or the forward raises.

Inputs are computed in float32 (the kernels' precision) and results returned in the
input's dtype. A batch (leading dimension) shares one geometry; the geometry gradient
sums over it. The geometry gradient runs where the volume and upstream gradient are: on
CUDA tensors the CUDA kernel (:mod:`leap.kernels.cuda.modular_geometry_vjp`, on the
caller's stream), otherwise the CPU one; the projections themselves run where
:mod:`leap.operators` sends them.
Both are custom ops (``torch.ops.leap.modular_project`` / ``modular_backproject``,
:mod:`leap.torch.ops`), so they compile, export and run inside ``torch.func``
transforms. Gradients with respect to the data are differentiable again; with respect
to the geometry they are first order (a second derivative raises).

:func:`cone_beam_modular` builds the four tensors from standard cone-beam parameters
(tensors: angles, detector offsets, tau, tilt, sod, sdd, helical pitch, per-view object
shifts) with the formulas of :meth:`leap.geometry.ConeBeam.to_modular`, so gradients reach
those parameters too; :meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters` does this for a
module's cone-beam geometry.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..geometry import Volume
from . import ops
from ._geometry_params import cone_beam_modular

__all__ = ["modular_project", "modular_backproject", "cone_beam_modular"]

_GEOMETRY_NAMES = ("sources", "centers", "row_vectors", "col_vectors")


def _check_geometry(tensors):
    """The four (num_views, 3) geometry tensors, checked; returns num_views."""
    n = None
    for name, t in zip(_GEOMETRY_NAMES, tensors):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
        if t.ndim != 2 or t.shape[1] != 3 or t.shape[0] == 0:
            raise ValueError(f"{name} must have shape (num_views, 3), got {tuple(t.shape)}")
        if n is None:
            n = t.shape[0]
        elif t.shape[0] != n:
            raise ValueError(f"{name} has {t.shape[0]} views but sources has {n}")
    return n


def _check_data(x, name, shape, layout):
    """``x`` of shape ``shape`` or ``(batch, *shape)``, floating point and finite."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if x.ndim not in (3, 4) or tuple(x.shape[-3:]) != tuple(shape):
        raise ValueError(f"{name} must have shape {layout} = {tuple(shape)} or (batch, "
                         f"{', '.join(map(str, shape))}), got {tuple(x.shape)}")
    if x.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} is on device {x.device}; leap runs on CPU and CUDA tensors")


class GeometryOperator(torch.autograd.Function):
    """``P(θ) x`` (``kind="project"``) or ``Pᵀ(θ) x`` (``"backproject"``) for a geometry
    given as four tensors θ, through ``op``: ``op.apply(kind, x)`` computes the operator,
    ``op.vjp(f, gbar, tensors, needs)`` the geometry's vector–Jacobian product (a tensor
    like each of the four that ``needs`` marks, None for the others). Backward: the other
    operator applied to the upstream gradient for x, and for θ the VJP with (f, ḡ) = (x,
    upstream) for P and (upstream, x) for Pᵀ, since ⟨Pᵀ(θ) g, ȳ⟩ = ⟨P(θ) ȳ, g⟩. Serves
    the parallel/fan beams (``leap.torch._axial_params``), the curved cone beams
    (``leap.torch._curved_params``) and fan-beam FBP (``leap.torch._fbp_params``); modular
    beams have custom ops of their own (:mod:`leap.torch.ops`)."""

    @staticmethod
    def forward(ctx, x, t0, t1, t2, t3, op, kind):
        ctx.op, ctx.kind = op, kind
        ctx.save_for_backward(x, t0, t1, t2, t3)
        return op.apply(kind, x)

    @staticmethod
    @once_differentiable
    def backward(ctx, upstream):
        x, *tensors = ctx.saved_tensors
        project = ctx.kind == "project"
        grad_x = None
        if ctx.needs_input_grad[0]:
            grad_x = ctx.op.apply("backproject" if project else "project",
                                  upstream.contiguous())
        grads = (None,) * 4
        needs = ctx.needs_input_grad[1:5]
        if any(needs):
            f, gbar = (x, upstream) if project else (upstream, x)
            grads = ctx.op.vjp(f, gbar, tensors, needs)
        return (grad_x, *grads, None, None)


def _modular_apply(x, tensors, spec, kind):
    """``torch.ops.leap.modular_<kind>`` of the modular beam ``tensors`` on x (checked)."""
    num_rows, num_cols, pixel_height, pixel_width, volume = spec
    if not isinstance(volume, Volume):
        raise TypeError(f"volume must be a leap.Volume, got {type(volume).__name__}")
    num_views = _check_geometry(tensors)
    if kind == "project":
        _check_data(x, "f", volume.shape, "(num_z, num_y, num_x)")
    else:
        _check_data(x, "g", (num_views, num_rows, num_cols), "(num_views, num_rows, num_cols)")
    detector = [float(num_rows), float(num_cols), float(pixel_height), float(pixel_width)]
    return ops.modular(kind, x, *tensors, detector, ops.volume_list(volume))


def modular_project(f, sources, centers, row_vectors, col_vectors, *, num_rows, num_cols,
                    pixel_height, pixel_width, volume):
    """Forward projection ``P(θ) f`` through a modular-beam geometry given as tensors,
    differentiable in ``f`` and in the geometry.

    Parameters
    ----------
    f : torch.Tensor
        Volume ``(num_z, num_y, num_x)`` or a batch ``(batch, num_z, num_y, num_x)``
        (float32; other floating dtypes are computed in float32 and returned in theirs).
    sources, centers, row_vectors, col_vectors : torch.Tensor, (num_views, 3)
        Per view the source position and module centre (mm) and the directions of
        increasing row and column index (normalised here; the module normal is
        col × row), as :class:`leap.geometry.ModularBeam` takes them. May require grad.
    num_rows, num_cols : int
        Pixels per module.
    pixel_height, pixel_width : float
        Pixel pitch along rows and columns, mm.
    volume : leap.Volume
        The voxel grid of ``f``.

    Returns
    -------
    torch.Tensor
        Projections ``(num_views, num_rows, num_cols)``, with ``f``'s batch dimension if
        it has one, dtype and device.

    Gradients: ``∂L/∂f = Pᵀ ∂L/∂g`` (the matched back-projection) and the exact
    vector–Jacobian product of the footprint model with respect to the geometry, summed
    over the batch (one-sided at the model's kinks; see :mod:`leap.torch.geometry`).

    Raises
    ------
    TypeError, ValueError
        Naming the argument: non-tensors, wrong shapes, non-finite values; and the
        errors of :class:`leap.geometry.ModularBeam` (e.g. rows and columns not
        orthogonal, a source in its module's plane).
    """
    spec = (num_rows, num_cols, pixel_height, pixel_width, volume)
    return _modular_apply(f, (sources, centers, row_vectors, col_vectors), spec, "project")


def modular_backproject(g, sources, centers, row_vectors, col_vectors, *, num_rows, num_cols,
                        pixel_height, pixel_width, volume):
    """Back-projection ``Pᵀ(θ) g``, the exact transpose of :func:`modular_project`,
    differentiable in ``g`` and in the geometry.

    ``g`` is ``(num_views, num_rows, num_cols)`` or ``(batch, num_views, num_rows,
    num_cols)``; the other arguments are those of :func:`modular_project`. Returns the
    volume ``(num_z, num_y, num_x)`` (with ``g``'s batch dimension if it has one).

    Gradients: ``∂L/∂g = P ∂L/∂y`` and, since ``⟨Pᵀ(θ) g, ȳ⟩ = ⟨g, P(θ) ȳ⟩``, the
    projector's geometry vector–Jacobian product with the volume ``ȳ`` and the upstream
    projections ``g``, summed over the batch.
    """
    spec = (num_rows, num_cols, pixel_height, pixel_width, volume)
    return _modular_apply(g, (sources, centers, row_vectors, col_vectors), spec,
                          "backproject")
