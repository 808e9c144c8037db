"""Trainable scan geometry for the torch modules (issue 35): ``geometry_parameters()``.

:class:`TrainableGeometry` is the part of :class:`leap.torch.BaseProjector` that turns the
facade's geometry into ``torch.nn.Parameter`` objects and projects through them: flat
cone beams by their modular form (:mod:`leap.torch._geometry_params`, :mod:`leap.torch.geometry`),
modular beams directly (:func:`leap.torch.modular_project`), parallel and fan beams by
their own footprint model (:mod:`leap.torch._axial_params`), curved-detector cone beams by
theirs (:mod:`leap.torch._curved_params`).
"""
from __future__ import annotations

import numpy as np
import torch

from ..kernels.plan import make_plan
from ._axial_params import axial_apply, axial_facade_parameters, parameter_names
from ._curved_params import CURVED_NAMES, core_geometry, curved_apply, curved_facade_parameters
from ._geometry_params import PARAMETER_NAMES, facade_parameters, modular_from_parameters
from ._operator import CTOperator, check_input
from .geometry import modular_backproject, modular_project

__all__ = ["TrainableGeometry", "MODULAR_NAMES", "cone_operators"]

#: The names of the parameters of modular beams (``set_modularbeam``'s arrays), in order.
MODULAR_NAMES = ("sourcePositions", "moduleCenters", "rowVectors", "colVectors")


def _family(params):
    """Which geometry a ParameterDict describes: "modular", "cone" (flat, through the
    modular form), "curved" (curved-detector cone) or "axial" (parallel, fan)."""
    if "sourcePositions" in params:
        return "modular"
    if "tiltAngle" in params:
        return "cone"
    if "centerRow" in params:
        return "curved"
    return "axial"


def _modular_facade_parameters(leapct):
    """{name: float64 tensor (numAngles, 3)} of a facade's modular beam, mm."""
    g = leapct._need_geometry()
    return {k: torch.tensor(g[k], dtype=torch.float64) for k in MODULAR_NAMES}


def _fov_mask(params, system, device):
    """The field-of-view mask (ny, nx) float64 of leap's cone kernels for the flat cone
    beam of the parameters' current values (shifts aside; the radius the facade's
    projectors use, ``CTSystem._projector_fov``), or None where they mask nothing (a
    tilted detector runs on the modular kernels). The modular kernels mask nothing, so
    :func:`cone_operators` applies it; it is held fixed for the gradient (a jump of the
    model, which no gradient sees)."""
    cone = core_geometry(params, system.geometry.detector)
    vol = system.volume
    plan = make_plan(cone, vol, fov_radius=system.with_changes(geometry=cone)._projector_fov())
    if plan.modular:
        return None
    # The kernels' own test (leap.kernels.cpu.columns.fov_ix_range).
    x = vol.x0 + np.arange(vol.num_x) * vol.voxel_width
    y = vol.y0 + np.arange(vol.num_y) * vol.voxel_width
    inside = x[None, :] * x[None, :] + (y * y)[:, None] <= plan.fov_r2
    return torch.as_tensor(inside, dtype=torch.float64, device=device)


def _modular_operators(geometry, system, mask=None):
    """(project, backproject): functions of a batch through the modular tensors
    ``geometry`` (:func:`leap.torch.modular_project` / ``modular_backproject`` on
    ``system``'s detector and volume), the volume side times ``mask`` (ny, nx) if given."""
    d = system.geometry.detector
    spec = dict(num_rows=d.num_rows, num_cols=d.num_cols, pixel_height=d.pixel_height,
                pixel_width=d.pixel_width, volume=system.volume)
    if mask is None:
        return (lambda f: modular_project(f, *geometry, **spec),
                lambda q: modular_backproject(q, *geometry, **spec))

    def masked(x):
        return x * mask.to(device=x.device, dtype=x.dtype)

    return (lambda f: modular_project(masked(f), *geometry, **spec),
            lambda q: masked(modular_backproject(q, *geometry, **spec)))


def cone_operators(params, leapct, system):
    """(project, backproject): functions of a batch ``(b, nz, ny, nx)`` / ``(b, numAngles,
    numRows, numCols)`` through the flat cone beam of ``params``
    (:data:`~leap.torch._geometry_params.PARAMETER_NAMES`), differentiable in both: the
    modular form (:func:`~leap.torch._geometry_params.modular_from_parameters`,
    :func:`leap.torch.modular_project`) with the facade's field-of-view mask (``_fov_mask``)."""
    return _modular_operators(modular_from_parameters(params, leapct), system,
                              _fov_mask(params, system, params["sod"].device))


def _require_zero_shifts(params, what):
    """ValueError unless every per-view shift is 0: ``what`` holds no per-view translations."""
    if bool((params["shifts"] != 0).any()):
        raise ValueError(f"the shifts of a {what} cannot be written back: no {what} geometry "
                         "holds per-view translations. Zero them, or "
                         "clear_geometry_parameters(write_back=False)")


class TrainableGeometry:
    """Mixin of :class:`leap.torch.BaseProjector` (a ``torch.nn.Module`` with a facade
    ``self.leapct``): the scan geometry as trainable parameters."""

    @property
    def _geometry_params(self):
        return self._modules.get("geometry_params")

    def geometry_parameters(self):
        """The scan geometry as trainable parameters (``torch.optim`` can calibrate them
        from data): cone beams (flat or curved detector), modular beams, parallel beams
        and fan beams.

        The first call reads the current geometry into float64 ``torch.nn.Parameter``
        objects, registered in the submodule ``geometry_params`` (so ``module.parameters()``
        includes them); later calls return the same parameters. From then on
        the module's ``forward`` projects through the geometry these parameters describe, and its
        gradient reaches them as well as the input. The detector size and pixel pitch and
        the volume stay the facade's.

        * Flat-detector cone beams (``set_conebeam``) go through their modular form
          (:func:`leap.torch.geometry.cone_beam_modular`, :func:`leap.torch.modular_project`).
        * Modular beams (``set_modularbeam``) go through :func:`leap.torch.modular_project`
          / :func:`leap.torch.modular_backproject` with the parameters as they are.
        * Parallel and fan beams (``set_parallelbeam``, ``set_fanbeam``; flat or curved
          fan detector) have no exact modular form; they are differentiated on their own
          footprint model (the kernels ``leap.kernels.cpu.axial_view_vjp`` and, for CUDA
          tensors, ``leap.kernels.cuda.axial_view_vjp``; the parameters mapped by
          ``leap.torch._axial_params``).
        * Curved-detector cone beams (``set_conebeam`` then ``set_curvedDetector``;
          circular or helical) likewise, on the axial cone model (the kernels
          ``leap.kernels.cpu.curved_cone_vjp`` and, for CUDA tensors,
          ``leap.kernels.cuda.curved_cone_vjp``; the parameters mapped by
          ``leap.torch._curved_params``).

        For the last two, with all shifts 0 the forward numbers are the facade's
        (``leapct.project``); nonzero shifts, which the core geometries cannot hold, run
        on the CPU kernels with per-view values; the geometry gradient is computed where
        the tensors are (on CUDA tensors by the CUDA kernels, where Numba can run them);
        the gradients come back on the parameters' device. Every gradient is the exact
        derivative of leap's footprint model, one-sided at its kinks (a footprint end on a pixel edge and the like; see
        the kernels' modules).

        Returns
        -------
        dict of str to torch.nn.Parameter
            Flat cone beams: ``phis`` (numAngles,) degrees; ``centerRow``, ``centerCol``
            pixels; ``tau``, ``sod``, ``sdd`` mm; ``tiltAngle`` degrees; ``helicalPitch``
            mm per radian (the source's advance along z, about the middle angle as in
            ``set_conebeam``; 0 for an axial scan, and trainable all the same: freeze it
            with ``requires_grad_(False)`` to keep a scan axial); ``shifts``
            (numAngles, 3) mm, a per-view rigid translation of the object (zeros).

            Curved cone beams: the same without ``tiltAngle`` (a curved detector cannot
            tilt).

            Modular beams: ``sourcePositions``, ``moduleCenters``, ``rowVectors``,
            ``colVectors``, each (numAngles, 3) mm, as ``set_modularbeam`` takes them (the
            row and column vectors are normalised in the forward, so their gradients are
            orthogonal to them).

            Parallel beams: ``phis`` degrees, ``centerCol`` pixels (the column of the
            rotation axis: centre-of-rotation calibration), ``shifts`` (numAngles, 2) mm,
            the object's in-plane translation per view. Fan beams: ``phis``, ``centerCol``,
            ``tau``, ``sod``, ``sdd`` and ``shifts`` (numAngles, 2). There is no
            ``centerRow`` and no z shift for these two: their detector rows are the
            volume's slices (no in-plane parameter moves them).

            Set ``requires_grad_(False)`` on those to keep fixed.

        Raises
        ------
        ValueError
            If the geometry is none of these (cone-parallel), or a curved cone beam with
            a flying focal spot (source shifts).
        """
        if self._geometry_params is None:
            kind = self.leapct.get_geometry() if self.leapct.ct_geometry_defined() else None
            if kind in ("PARALLEL", "FAN"):
                names = parameter_names(self.leapct)
                values = axial_facade_parameters(self.leapct)
            elif kind == "CONE" and self.leapct.get_detectorType() == "curved":
                names, values = CURVED_NAMES, curved_facade_parameters(self.leapct)
            elif kind == "CONE":
                names, values = PARAMETER_NAMES, facade_parameters(self.leapct)
            elif kind == "MODULAR":
                names, values = MODULAR_NAMES, _modular_facade_parameters(self.leapct)
            else:
                raise ValueError("geometry parameters are defined for cone-beam (set_conebeam, "
                                 "flat or curved detector), modular-beam, parallel-beam and "
                                 "fan-beam geometries; this module has "
                                 f"{kind or 'no geometry'}")
            self.geometry_params = torch.nn.ParameterDict(
                {k: torch.nn.Parameter(values[k]) for k in names})
        return dict(self._geometry_params.items())

    def clear_geometry_parameters(self, write_back=False):
        """Drop the :meth:`geometry_parameters`, so that calls use the facade's geometry
        again; with ``write_back`` the facade first takes their current values: flat cone
        beams by ``set_conebeam`` (or ``set_modularbeam`` when ``shifts`` are not all
        zero), curved cone beams by ``set_conebeam`` then ``set_curvedDetector``, modular
        beams by ``set_modularbeam``, parallel and fan beams by ``set_parallelbeam`` /
        ``set_fanbeam`` (a curved fan detector stays curved).

        Raises
        ------
        ValueError
            ``write_back`` of a parallel, fan or curved cone beam with nonzero ``shifts``:
            none of these geometries holds per-view translations (the parameters are
            kept; zero the shifts, or clear without ``write_back``).
        """
        params = self._geometry_params
        if params is None:
            return
        if write_back:
            lc = self.leapct
            dims = (lc.get_numAngles(), lc.get_numRows(), lc.get_numCols(),
                    lc.get_pixelHeight(), lc.get_pixelWidth())
            family = _family(params)
            with torch.no_grad():
                if family == "axial":
                    self._write_back_axial(params, dims)
                elif family == "modular":
                    lc.set_modularbeam(*dims, *(params[k].detach().cpu().numpy().copy()
                                                for k in MODULAR_NAMES))
                elif family == "curved":
                    _require_zero_shifts(params, "curved cone beam")
                    self._write_back_cone(params, dims)
                    lc.set_curvedDetector()
                elif bool((params["shifts"] == 0).all()):
                    self._write_back_cone(params, dims)
                else:
                    arrays = [t.cpu().numpy().copy()
                              for t in modular_from_parameters(params, lc)]
                    lc.set_modularbeam(*dims, *arrays)
        del self.geometry_params

    def _write_back_cone(self, params, dims):
        """``set_conebeam`` with the parameters' values (``tiltAngle`` where they have it)."""
        v = {k: params[k].detach().cpu() for k in params}
        tilt = float(v["tiltAngle"]) if "tiltAngle" in v else 0.0
        self.leapct.set_conebeam(*dims, float(v["centerRow"]), float(v["centerCol"]),
                                 v["phis"].numpy().copy(), float(v["sod"]), float(v["sdd"]),
                                 float(v["tau"]), float(v["helicalPitch"]), tilt)

    def _write_back_axial(self, params, dims):
        """``set_parallelbeam`` / ``set_fanbeam`` with the parameters' values."""
        _require_zero_shifts(params, "parallel or fan beam")
        lc = self.leapct
        v = {k: params[k].detach().cpu() for k in params}
        phis = v["phis"].numpy().copy()
        center_row, center_col = lc.get_centerRow(), float(v["centerCol"])
        if "sod" not in v:
            lc.set_parallelbeam(*dims, center_row, center_col, phis)
            return
        curved = lc.get_detectorType() == "curved"
        lc.set_fanbeam(*dims, center_row, center_col, phis, float(v["sod"]), float(v["sdd"]),
                       float(v["tau"]))
        if curved:   # set_fanbeam makes the detector flat
            lc._update(detectorType="curved")

    def _run_parametric(self, input, params):
        system = self.leapct.system
        if system.model is not None or system.mask is not None:
            raise ValueError("geometry_parameters() project the plain line integrals: clear "
                             "the attenuation map / axis of symmetry and the volume mask")
        op = CTOperator(kind="project" if self.forward_project else "backproject",
                        system=system)
        check_input(input, op)
        family = _family(params)
        if family == "axial":               # parallel and fan beams
            return axial_apply(input, dict(params.items()), system, op.kind)
        if family == "curved":
            return curved_apply(input, dict(params.items()), system, op.kind)
        if family == "modular":
            project, backproject = _modular_operators(
                tuple(params[k] for k in MODULAR_NAMES), system)
        else:
            project, backproject = cone_operators(params, self.leapct, system)
        x = input.reshape(-1, *op.in_shape)
        out = project(x) if self.forward_project else backproject(x)
        return out.reshape(*input.shape[:-3], *op.out_shape)
