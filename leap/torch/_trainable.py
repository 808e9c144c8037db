"""Trainable scan geometry for the torch modules (issue 35): ``geometry_parameters()``.

:class:`TrainableGeometry` is the part of :class:`leap.torch.BaseProjector` that turns the
facade's geometry into ``torch.nn.Parameter`` objects and projects through them: cone
beams by their modular form (:mod:`leap.torch._geometry_params`, :mod:`leap.torch.geometry`),
parallel and fan beams by their own footprint model (:mod:`leap.torch._axial_params`).
"""
from __future__ import annotations

import torch

from ._axial_params import axial_apply, axial_facade_parameters, parameter_names
from ._geometry_params import PARAMETER_NAMES, facade_parameters, modular_from_parameters
from ._operator import CTOperator, check_input
from .geometry import modular_backproject, modular_project

__all__ = ["TrainableGeometry"]


class TrainableGeometry:
    """Mixin of :class:`leap.torch.BaseProjector` (a ``torch.nn.Module`` with a facade
    ``self.leapct``): the scan geometry as trainable parameters."""

    @property
    def _geometry_params(self):
        return self._modules.get("geometry_params")

    def geometry_parameters(self):
        """The scan geometry as trainable parameters (``torch.optim`` can calibrate them
        from data): flat-detector cone beams, parallel beams and fan beams.

        The first call reads the current geometry into float64 ``torch.nn.Parameter``
        objects, registered in the submodule ``geometry_params`` (so ``module.parameters()``
        includes them); later calls return the same parameters. From then on
        the module's ``forward`` projects through the geometry these parameters describe, and its
        gradient reaches them as well as the input. The detector size and pixel pitch and
        the volume stay the facade's.

        * Cone beams (``set_conebeam``, flat detector) go through their modular form
          (:func:`leap.torch.geometry.cone_beam_modular`, :func:`leap.torch.modular_project`).
        * Parallel and fan beams (``set_parallelbeam``, ``set_fanbeam``; flat or curved
          fan detector) have no exact modular form; they are differentiated on their own
          footprint model (the CPU kernel ``leap.kernels.cpu.axial_view_vjp``, the
          parameters mapped by ``leap.torch._axial_params``). With all shifts 0 the
          forward numbers are the facade's (``leapct.project``); nonzero shifts, which
          the core geometries cannot hold, run on the CPU kernels with per-view values.
          The geometry gradient is computed on the CPU (CUDA tensors are copied to the
          host for it; the gradients come back on the parameters' device).

        Returns
        -------
        dict of str to torch.nn.Parameter
            Cone beams: ``phis`` (numAngles,) degrees; ``centerRow``, ``centerCol``
            pixels; ``tau``, ``sod``, ``sdd`` mm; ``tiltAngle`` degrees; ``helicalPitch``
            mm per radian (the source's advance along z, about the middle angle as in
            ``set_conebeam``; 0 for an axial scan, and trainable all the same: freeze it
            with ``requires_grad_(False)`` to keep a scan axial); ``shifts``
            (numAngles, 3) mm, a per-view rigid translation of the object (zeros).

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
            If the geometry is none of these (modular, cone-parallel, curved cone).
        """
        if self._geometry_params is None:
            kind = self.leapct.get_geometry() if self.leapct.ct_geometry_defined() else None
            if kind in ("PARALLEL", "FAN"):
                names = parameter_names(self.leapct)
                values = axial_facade_parameters(self.leapct)
            elif kind == "CONE":
                names, values = PARAMETER_NAMES, facade_parameters(self.leapct)
            else:
                raise ValueError("geometry parameters are defined for cone-beam (set_conebeam, "
                                 "flat detector), parallel-beam and fan-beam geometries; this "
                                 f"module has {kind or 'no geometry'}")
            self.geometry_params = torch.nn.ParameterDict(
                {k: torch.nn.Parameter(values[k]) for k in names})
        return dict(self._geometry_params.items())

    def clear_geometry_parameters(self, write_back=False):
        """Drop the :meth:`geometry_parameters`, so that calls use the facade's geometry
        again; with ``write_back`` the facade first takes their current values: cone
        beams by ``set_conebeam`` (or ``set_modularbeam`` when ``shifts`` are not all
        zero), parallel and fan beams by ``set_parallelbeam`` / ``set_fanbeam`` (a curved
        fan detector stays curved).

        Raises
        ------
        ValueError
            ``write_back`` of a parallel or fan beam with nonzero ``shifts``: no parallel
            or fan geometry holds per-view translations (the parameters are kept; zero the
            shifts, or clear without ``write_back``).
        """
        params = self._geometry_params
        if params is None:
            return
        if write_back:
            lc = self.leapct
            dims = (lc.get_numAngles(), lc.get_numRows(), lc.get_numCols(),
                    lc.get_pixelHeight(), lc.get_pixelWidth())
            with torch.no_grad():
                if "tiltAngle" not in params:
                    self._write_back_axial(params, dims)
                elif bool((params["shifts"] == 0).all()):
                    v = {k: params[k].detach().cpu() for k in PARAMETER_NAMES}
                    lc.set_conebeam(*dims, float(v["centerRow"]), float(v["centerCol"]),
                                    v["phis"].numpy().copy(), float(v["sod"]), float(v["sdd"]),
                                    float(v["tau"]), float(v["helicalPitch"]),
                                    float(v["tiltAngle"]))
                else:
                    arrays = [t.cpu().numpy().copy()
                              for t in modular_from_parameters(params, lc)]
                    lc.set_modularbeam(*dims, *arrays)
        del self.geometry_params

    def _write_back_axial(self, params, dims):
        """``set_parallelbeam`` / ``set_fanbeam`` with the parameters' values."""
        if bool((params["shifts"] != 0).any()):
            raise ValueError("the shifts of a parallel or fan beam cannot be written back: "
                             "no parallel or fan geometry holds per-view translations. Zero "
                             "them, or clear_geometry_parameters(write_back=False)")
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
        if "tiltAngle" not in params:        # parallel and fan beams
            return axial_apply(input, dict(params.items()), system, op.kind)
        g = system.geometry.detector
        spec = dict(num_rows=g.num_rows, num_cols=g.num_cols, pixel_height=g.pixel_height,
                    pixel_width=g.pixel_width, volume=system.volume)
        geometry = modular_from_parameters(params, self.leapct)
        fn = modular_project if self.forward_project else modular_backproject
        x = input.reshape(-1, *op.in_shape)
        out = fn(x, *geometry, **spec)
        return out.reshape(*input.shape[:-3], *op.out_shape)
