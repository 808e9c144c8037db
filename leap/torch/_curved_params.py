"""Curved-detector cone-beam parameters as tensors, differentiable (issue 35).

A curved detector has no modular (flat-module) form, so, like parallel and fan beams
(``leap.torch._axial_params``), it is differentiated on leap's own axial model: the
kernel ``leap.kernels.cpu.curved_cone_vjp`` (CPU) or ``leap.kernels.cuda.curved_cone_vjp``
(CUDA) gives the gradient with respect to the per-view quantities the axial kernels take,
and :func:`curved_views` maps the standard parameters to them in torch (float64, so
autograd chains) with the formulas of
``leap.geometry.ConeBeam.axial_views``: with ψ the view angle (``phis`` in degrees),
θ⊥ = (cos ψ, sin ψ), θ = (sin ψ, −cos ψ) and ψ_mid the mean of the first and last angle,

* ``col_dir = θ⊥``;
* ``source = (sod·θ − tau·θ⊥ − shift_xy, helicalPitch·(ψ − ψ_mid) − shift_z)``;
* ``centers = (centerCol, centerRow)`` and ``sdd``, the same in every view.

``shift`` (numAngles, 3) mm is a per-view rigid translation of the object: translating the
object by s is translating the source (and the detector with it) by −s.

``leap.torch.geometry.GeometryOperator`` projects and back-projects with the four
tensors ``(col_dir (n, 2), source (n, 3), centers (n, 2), sdd (n,))``: the forward is the
facade's own operator on the core ``ConeBeam`` built from the parameters' current values
when every shift is 0, else the CPU axial kernels with the per-view sources. The backward
is the other operator for the data and the curved cone VJP for the tensors, run where the
volume and upstream gradient are (as ``leap.torch._axial_params.plan_vjp``): on CUDA
tensors the CUDA kernel on the device arrays, zero-copy, on the caller's stream (the
tensors are copied to the host only where Numba cannot run CUDA kernels), otherwise the
CPU kernel; the gradients are returned on the parameters' device. The VJP takes its row
factor's terms from the projection the call has computed anyway (the projector's output,
or the back-projector's data gradient) when there is one (the CPU kernel projects
otherwise, the CUDA kernel sums those terms itself).
The field-of-view mask is the core geometry's at the parameters' values, held fixed for
the gradient. No flying focal spot (``source_shifts``: ValueError) and no tilt (a curved
detector cannot tilt).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import torch

from ..geometry import ConeBeam
from ..kernels.cpu.curved_cone_vjp import plan_geometry_vjp
from ._axial_params import _Axial, _numba_cuda, facade_angles, parse_views
from ._geometry_params import facade_values
from ._modular_vjp import _as_array, _as_samples, _cuda_samples
from .geometry import GeometryOperator

__all__ = ["CURVED_NAMES", "curved_views", "curved_facade_parameters", "curved_apply"]

#: The names of :meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters` for
#: curved-detector cone beams, in order.
CURVED_NAMES = ("phis", "centerRow", "centerCol", "tau", "sod", "sdd", "helicalPitch",
                "shifts")

_NO_FOCAL_SPOT = ("geometry parameters of a curved cone beam do not model a flying focal "
                  "spot (source_shifts); clear the source shifts first")


def _check_curved(geometry):
    if not (isinstance(geometry, ConeBeam) and geometry.detector.curved):
        raise ValueError("curved cone-beam parameters need a cone beam with a curved "
                         f"detector, got {type(geometry).__name__}")
    if geometry.source_shifts is not None:
        raise ValueError(_NO_FOCAL_SPOT)


def curved_facade_parameters(leapct):
    """{name: float64 tensor} of a facade's curved cone beam, in LEAP's units: ``phis``
    (numAngles,) degrees, ``centerRow``, ``centerCol`` pixels, ``tau``, ``sod``, ``sdd`` mm,
    ``helicalPitch`` mm/rad, ``shifts`` zeros (numAngles, 3) mm."""
    _check_curved(leapct.core_geometry())
    return facade_values(leapct, CURVED_NAMES, 3)


def curved_views(params):
    """The per-view tensors ``(col_dir, source, centers, sdd)`` of the curved cone model,
    float64, from parameters named as :data:`CURVED_NAMES` (LEAP's units, tensors or
    numbers; ``shifts`` may be None); see the module notes for the formulas.

    Returns
    -------
    col_dir : (num_views, 2)
    source : (num_views, 3)
        In-plane source and source height, mm.
    centers : (num_views, 2)
        ``(center_col, center_row)``, pixels.
    sdd : (num_views,)
    """
    psi, scalar, shifts = parse_views(params, 3)
    n = psi.shape[0]
    cos, sin = torch.cos(psi), torch.sin(psi)
    col_dir = torch.stack([cos, sin], dim=1)
    theta = torch.stack([sin, -cos], dim=1)
    xy = scalar("sod") * theta - scalar("tau") * col_dir
    z = scalar("helicalPitch") * (psi - 0.5 * (psi[0] + psi[-1]))
    if shifts is not None:
        xy = xy - shifts[:, :2]
        z = z - shifts[:, 2]
    source = torch.cat([xy, z[:, None]], dim=1)
    centers = torch.stack([scalar("centerCol"), scalar("centerRow")]).expand(n, 2)
    return col_dir, source, centers, scalar("sdd").expand(n)


def core_geometry(params, detector):
    """The core ``ConeBeam`` of cone-beam parameters' current values (shifts aside), on
    ``detector`` (flat or curved) with its centre replaced; ``tiltAngle`` (degrees) where
    the parameters have one (flat detectors)."""
    def value(name):
        return float(torch.as_tensor(params[name]).detach())

    det = detector.with_changes(center_col=value("centerCol"), center_row=value("centerRow"))
    angles = facade_angles(params)
    tilt = math.radians(value("tiltAngle")) if "tiltAngle" in params else 0.0
    return ConeBeam(detector=det, angles=angles, sod=value("sod"), sdd=value("sdd"),
                    tau=value("tau"), helical_pitch=value("helicalPitch"), tilt=tilt)


class _Curved(_Axial):
    """``_Axial`` with the sources' heights per view and the curved cone VJP. Its
    projections are remembered (the last one, with the identity of its input), so that
    the VJP of the same volume takes its row factor's terms from them rather than
    projecting again (CPU) or summing those terms itself (CUDA): the forward's output
    for a projector, the data gradient's projection for a back-projector
    (``GeometryOperator.backward`` computes it first)."""

    def __init__(self, system, col_dir, source, centers, shifted):
        super().__init__(system, col_dir, source[:, :2], centers[:, 0], shifted)
        views = self.view_plan.views._replace(
            source_z=np.ascontiguousarray(_as_array(source)[:, 2]))
        self.view_plan = dataclasses.replace(self.view_plan, views=views)
        self._projected = None

    @staticmethod
    def _key(x):
        """What identifies x's values (None for inference tensors, which have no
        version counter: nothing is remembered then)."""
        try:
            return (x.device, x.data_ptr(), tuple(x.shape), x.dtype, x._version)
        except RuntimeError:
            return None

    def apply(self, kind, x):
        out = super().apply(kind, x)
        if kind == "project":
            key, out_key = self._key(x), self._key(out)
            self._projected = (key, out.detach(), out_key) if key and out_key else None
        return out

    def _projection(self, f, on_cuda=False):
        """The remembered projection of f, or None: float32 host samples, or with
        ``on_cuda`` float32 contiguous CUDA samples on f's device."""
        if self._projected is None:
            return None
        key, out, out_key = self._projected
        if key != self._key(f) or out_key != self._key(out):
            return None
        if on_cuda:
            return _cuda_samples(out.to(f.device), self.system.projection_shape)
        return _as_samples(out, self.system.projection_shape)

    def _plan_vjp(self, f, gbar):
        """``plan_geometry_vjp`` of the batches f and gbar (tensors): on CUDA tensors the
        CUDA kernel on the device arrays, zero-copy, on the caller's stream; otherwise (or
        where Numba cannot run CUDA kernels) the CPU kernel on host copies. Host arrays."""
        s = self.system
        if _numba_cuda(f, gbar):
            from ..devices.arrays import as_numba, caller_stream, device_context
            from ..kernels.cuda.curved_cone_vjp import plan_geometry_vjp as cuda_vjp
            fs = _cuda_samples(f, s.volume_shape)
            gs = _cuda_samples(gbar, s.projection_shape)
            proj = self._projection(f, on_cuda=True)
            with device_context(fs.device.index):
                return cuda_vjp(self.view_plan, as_numba(fs), as_numba(gs),
                                None if proj is None else as_numba(proj),
                                stream=caller_stream(fs))
        return plan_geometry_vjp(self.view_plan, _as_samples(f, s.volume_shape),
                                 _as_samples(gbar, s.projection_shape), self._projection(f))

    def vjp(self, f, gbar, tensors, needs):
        d_col, d_xy, d_z, d_sdd, d_cc, d_cr = self._plan_vjp(f, gbar)
        result = (d_col, np.concatenate([d_xy, d_z[:, None]], axis=1),
                  np.stack([d_cc, d_cr], axis=1), d_sdd)
        return [torch.as_tensor(g, dtype=t.dtype, device=t.device) if need else None
                for g, t, need in zip(result, tensors, needs)]


def curved_apply(x, params, system, kind):
    """``kind`` ("project" / "backproject") of the batch ``x`` through the curved cone
    beam of ``system`` with its parameters replaced by ``params`` (named as
    :data:`CURVED_NAMES`), differentiable in x and in the parameters. ``system`` is the
    facade's :class:`leap.system.CTSystem` (volume, field of view, devices)."""
    _check_curved(system.geometry)
    col_dir, source, centers, sdd = curved_views(params)
    geometry = core_geometry(params, system.geometry.detector)
    shifted = bool((params["shifts"] != 0).any())
    op = _Curved(system.with_changes(geometry=geometry), col_dir, source, centers, shifted)
    return GeometryOperator.apply(x, col_dir, source, centers, sdd, op, kind)
