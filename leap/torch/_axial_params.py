"""Parallel- and fan-beam parameters as tensors, differentiable (issue 35).

Parallel and fan beams have no exact modular form (parallel rays have no source; each
row of a fan beam has its own source height), so they are differentiated on their own
model: the axial footprint model without z magnification, whose geometry enters through
per-view in-plane quantities only (``leap.kernels.cpu.axial_view_vjp``): the column axis
``col_dir`` (num_views, 2), the source ``source_xy`` (num_views, 2, fan beams), the detector
centre ``center_col`` (num_views,) and ``sdd`` (num_views,). :func:`axial_views` maps the
standard parameters to them in torch (float64, so autograd chains) with the formulas of
``leap.geometry.ParallelBeam.axial_views`` and ``leap.geometry.FanBeam.axial_views``:
with ψ the view angle, θ⊥ = (cos ψ, sin ψ) and θ = (sin ψ, −cos ψ),

* ``col_dir = θ⊥``;
* fan: ``source_xy = sod·θ − tau·θ⊥ − shift``, ``sdd``, ``center_col = centerCol``;
* parallel: ``center_col = centerCol + (shift·θ⊥)/pixelWidth`` (the source is unused).

``shift`` is a per-view in-plane rigid translation of the object (mm): translating the
object by s is translating the source (and the detector with it) by −s; for parallel rays
only its component across the rays counts. There is no z shift and ``centerRow`` is not
a parameter: the VJP holds every voxel slice's detector rows fixed (no magnification along
z, and no in-plane parameter moves them), and both would move them.

``leap.torch.geometry.GeometryOperator`` (the ``torch.autograd.Function`` the modular
beams use too) projects and back-projects with these tensors (``_Axial``): the forward is the facade's own operator on the core geometry built from the
parameters' current values (``leap.project``'s numbers) when every shift is 0, else the
CPU axial kernels with the per-view values the core geometries cannot hold. The backward
is the other operator for the data and the geometry VJP for the tensors. The VJP runs
where the volume and upstream gradient are (``plan_vjp``): on CUDA tensors the CUDA
kernel (``leap.kernels.cuda.axial_view_vjp``, on the caller's stream; the tensors are
copied to the host only where Numba cannot run CUDA kernels), otherwise the CPU one; the
gradients are returned on the tensors' device. A forward with nonzero shifts is computed
on the host (the result returned on the input's device). The field-of-view mask is the
one of the core geometry at the parameters' values (forward) and is held fixed for the
gradient (a jump of the model, which no gradient sees).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..geometry import FanBeam, ParallelBeam
from ..kernels.cpu import launch
from ..kernels.cpu.axial_view_vjp import plan_arguments, plan_geometry_vjp
from ..kernels.plan import make_plan
from ._geometry_params import facade_values
from ._operator import CTOperator
from ._modular_vjp import _as_array, _as_samples, _cuda_samples
from .geometry import GeometryOperator

__all__ = ["axial_views", "PARALLEL_NAMES", "FAN_NAMES", "axial_facade_parameters",
           "axial_apply"]

#: The names of :meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters` for each geometry.
PARALLEL_NAMES = ("phis", "centerCol", "shifts")
#: The names for fan beams.
FAN_NAMES = ("phis", "centerCol", "tau", "sod", "sdd", "shifts")


def parameter_names(leapct):
    """The parameter names of the facade's parallel or fan geometry (ValueError else)."""
    kind = leapct.get_geometry() if leapct.ct_geometry_defined() else None
    if kind == "PARALLEL":
        return PARALLEL_NAMES
    if kind == "FAN":
        return FAN_NAMES
    raise ValueError("axial geometry parameters are defined for parallel and fan beams, "
                     f"this module has {kind or 'no geometry'}")


def axial_facade_parameters(leapct):
    """{name: float64 tensor} of a facade's parallel or fan geometry, in LEAP's units:
    ``phis`` (numAngles,) degrees, ``centerCol`` pixels, ``tau``, ``sod``, ``sdd`` mm
    (fan), ``shifts`` zeros (numAngles, 2) mm."""
    return facade_values(leapct, parameter_names(leapct), 2)


def parse_views(params, shift_components):
    """``(psi, scalar, shifts)`` of parameters named as LEAP's: the view angles ψ (radians,
    float64, from ``phis`` in degrees with ``np.deg2rad``'s arithmetic), ``scalar(name)``
    (the named parameter as a float64 0-d tensor on ψ's device) and the per-view
    ``shifts`` (num_views, shift_components) float64, or None; ValueError on wrong shapes."""
    phis = torch.as_tensor(params["phis"], dtype=torch.float64)
    if phis.ndim != 1 or phis.shape[0] == 0:
        raise ValueError(f"phis must have shape (num_views,), got {tuple(phis.shape)}")
    n, dev = phis.shape[0], phis.device

    def scalar(name):
        v = torch.as_tensor(params[name], dtype=torch.float64, device=dev)
        if v.numel() != 1:
            raise ValueError(f"{name} must be a scalar, got shape {tuple(v.shape)}")
        return v.reshape(())

    shifts = params.get("shifts")
    if shifts is not None:
        shifts = torch.as_tensor(shifts, dtype=torch.float64, device=dev)
        if tuple(shifts.shape) != (n, shift_components):
            raise ValueError(f"shifts must have shape (num_views, {shift_components}) = "
                             f"({n}, {shift_components}), got {tuple(shifts.shape)}")
    return phis * (np.pi / 180.0), scalar, shifts


def facade_angles(params):
    """The parameters' current view angles (radians, float64 NumPy), for a core geometry."""
    return np.deg2rad(torch.as_tensor(params["phis"]).detach().cpu().numpy()
                      .astype(np.float64))


def run_plan(plan, system, kind, x):
    """``kind`` ("project" / "backproject") of the batch x (…, *in_shape) by the CPU
    kernels on ``plan`` (per-view values the core geometries cannot hold), one sample at
    a time on the host; the result on x's device and in its dtype."""
    take, give = ((system.volume_shape, system.projection_shape) if kind == "project"
                  else (system.projection_shape, system.volume_shape))
    xs = _as_samples(x, take)
    out = np.zeros((xs.shape[0], *give), dtype=np.float32)
    run = launch.project if kind == "project" else launch.backproject
    for b in range(xs.shape[0]):
        run(plan, xs[b], out[b])
    return torch.from_numpy(out).to(device=x.device, dtype=x.dtype).reshape(
        *x.shape[:-3], *give)


def axial_views(params, *, fan, pixel_width):
    """The per-view tensors ``(col_dir, source_xy, center_col, sdd)`` of the footprint
    model, float64, from parameters named as :data:`PARALLEL_NAMES` / :data:`FAN_NAMES`
    (LEAP's units, tensors or numbers); see the module notes for the formulas.

    Returns
    -------
    col_dir, source_xy : (num_views, 2)
    center_col, sdd : (num_views,)
        (``source_xy`` and ``sdd`` zeros for parallel beams.)
    """
    psi, scalar, shifts = parse_views(params, 2)
    n, dev = psi.shape[0], psi.device
    cos, sin = torch.cos(psi), torch.sin(psi)
    col_dir = torch.stack([cos, sin], dim=1)
    center_col = scalar("centerCol").expand(n)
    if not fan:
        if shifts is not None:
            center_col = center_col + (shifts * col_dir).sum(dim=1) / pixel_width
        zeros = torch.zeros(n, dtype=torch.float64, device=dev)
        return col_dir, torch.zeros(n, 2, dtype=torch.float64, device=dev), center_col, zeros
    theta = torch.stack([sin, -cos], dim=1)
    source = scalar("sod") * theta - scalar("tau") * col_dir
    if shifts is not None:
        source = source - shifts
    return col_dir, source, center_col, scalar("sdd").expand(n)


def core_geometry(params, detector, fan):
    """The core ``ParallelBeam`` / ``FanBeam`` of the parameters' current values (shifts
    aside), on ``detector`` with its ``center_col`` replaced."""
    def value(name):
        return float(torch.as_tensor(params[name]).detach())

    det = detector.with_changes(center_col=value("centerCol"))
    angles = facade_angles(params)
    if not fan:
        return ParallelBeam(detector=det, angles=angles)
    return FanBeam(detector=det, angles=angles, sod=value("sod"), sdd=value("sdd"),
                   tau=value("tau"))


class _Axial:
    """What one call needs: the system (core geometry at the parameters' values) and a
    plan of it with the per-view values the tensors give (``view_plan``)."""

    def __init__(self, system, col_dir, source_xy, center_col, shifted):
        self.system = system
        plan = make_plan(system.geometry, system.volume, fov_radius=system._projector_fov())
        self.shifted = shifted
        # The per-view values as the tensors give them: where shifts make them differ
        # from the core geometry's, the CPU kernels run on this plan (launch's own
        # dispatch); the VJP is always evaluated at them.
        views = plan.views._replace(col_dir=_as_array(col_dir),
                                    source_xy=_as_array(source_xy))
        self.view_plan = dataclasses.replace(plan, views=views,
                                             center_cols=_as_array(center_col))

    def apply(self, kind, x):
        """``kind`` ("project" / "backproject") of the batch x (batch, *in_shape)."""
        if not self.shifted:
            return CTOperator(kind=kind, system=self.system)(x)
        return run_plan(self.view_plan, self.system, kind, x)

    def vjp(self, f, gbar, tensors, needs):
        """The geometry VJP (``plan_vjp``) as tensors like ``tensors`` where
        ``needs``."""
        result = plan_vjp(self.view_plan, self.system, f, gbar)
        return [torch.as_tensor(g, dtype=t.dtype, device=t.device) if need else None
                for g, t, need in zip(result, tensors, needs)]


def _numba_cuda(f, gbar):
    """Whether f and gbar are CUDA tensors on one device and Numba can run CUDA kernels."""
    if not (f.is_cuda and gbar.is_cuda and f.device == gbar.device):
        return False
    from ..devices.arrays import require_cuda
    try:
        require_cuda()
    except NotImplementedError:
        return False
    return True


def plan_vjp(plan, system, f, gbar):
    """``plan_geometry_vjp`` (``leap.kernels.cpu.axial_view_vjp``) of the batches f and
    gbar (tensors) of ``system``'s volume and projection shapes: on CUDA tensors the CUDA
    kernel (``leap.kernels.cuda.axial_view_vjp``) on the device arrays, zero-copy, on the
    caller's stream; otherwise (or where Numba cannot run CUDA kernels) the CPU kernel on
    host copies. Returns host arrays, as ``plan_geometry_vjp`` does."""
    if _numba_cuda(f, gbar):
        from ..devices.arrays import as_numba, caller_stream, device_context
        from ..kernels.cuda.axial_view_vjp import geometry_vjp as cuda_geometry_vjp
        fs = _cuda_samples(f, system.volume_shape)
        gs = _cuda_samples(gbar, system.projection_shape)
        with device_context(fs.device.index):
            return cuda_geometry_vjp(as_numba(fs), as_numba(gs), *plan_arguments(plan),
                                     stream=caller_stream(fs))
    return plan_geometry_vjp(plan, _as_samples(f, system.volume_shape),
                             _as_samples(gbar, system.projection_shape))


def axial_apply(x, params, system, kind):
    """``kind`` ("project" / "backproject") of the batch ``x`` through the parallel or fan
    beam of ``system`` with its parameters replaced by ``params`` (named as
    :data:`PARALLEL_NAMES` / :data:`FAN_NAMES`), differentiable in x and in the
    parameters. ``system`` is the facade's :class:`leap.system.CTSystem` (volume, field of
    view, devices are taken from it)."""
    base = system.geometry
    fan = isinstance(base, FanBeam)
    if not fan and not isinstance(base, ParallelBeam):
        raise ValueError(f"axial_apply takes parallel and fan beams, not {type(base).__name__}")
    det = base.detector
    col_dir, source_xy, center_col, sdd = axial_views(params, fan=fan,
                                                      pixel_width=det.pixel_width)
    geometry = core_geometry(params, det, fan)
    shifted = bool((params["shifts"] != 0).any())
    op = _Axial(system.with_changes(geometry=geometry), col_dir, source_xy, center_col,
                shifted)
    return GeometryOperator.apply(x, col_dir, source_xy, center_col, sdd, op, kind)
