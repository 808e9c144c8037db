"""Rebinning and cropping methods of the LEAP facade: ``rebin_curved``,
``rebin_parallel``, ``rebin_parallel_sinogram``, ``crop_projections``.
"""
from __future__ import annotations

import numpy as np

from .. import _validate
from ..geometry import ParallelBeam


class RebinMixin:
    """Rebinning and cropping methods of :class:`leap.compat.model.tomographicModels`."""

    # ------------------------------------------------------------- rebinning
    @staticmethod
    def _host_array(name, g):
        """A NumPy view of ``g`` (NumPy array or CPU torch tensor) for in-place work."""
        if hasattr(g, "detach") and hasattr(g, "is_cuda"):
            if g.is_cuda:
                raise ValueError(f"{name} is a CUDA tensor; rebinning runs on the CPU only: "
                                 f"pass {name}.cpu() and copy the result back")
            return g.detach().numpy()
        return g

    def rebin_curved(self, g, fanAngles, order=6):
        """Resample curved cone-beam data measured at the fan angles ``fanAngles``
        (degrees, one per column; real curved detectors are flat modules on a polygon)
        onto ideal equi-angular columns, in place. Returns True."""
        from ..reconstruction.rebin import rebin_curved
        if hasattr(fanAngles, "detach"):
            fanAngles = fanAngles.detach().cpu().numpy()
        rebin_curved(self.core_geometry(), self._host_array("g", g), fanAngles, order)
        return True

    def rebin_parallel(self, g, order=6):
        """Rebin fan-beam data to parallel-beam, or cone-beam data to cone-parallel, in
        place, and change the geometry to match (as LEAP): sod → √(sod² + tau²),
        tau → 0, pixelWidth → pixelWidth·sod/sdd (spacing at the axis), flat detector.
        Short and helical scans lose the views not fully measured: the geometry then
        has fewer angles, the first views of ``g`` hold the data and the rest are zero
        (resize ``g`` with ``g[:leapct.get_numAngles()]``). Returns True."""
        from ..reconstruction.rebin import orbit_radius, rebin_parallel
        g0 = self._geom
        arr = self._host_array("g", g)
        new, _ = rebin_parallel(self.core_geometry(), arr, order)
        same = new.num_angles == g0["numAngles"] and np.allclose(
            new.angles, np.deg2rad(np.asarray(g0["phis"], dtype=np.float64)), rtol=0, atol=1e-12)
        phis = g0["phis"] if same else np.rad2deg(new.angles).astype(np.float32)
        changes = dict(numAngles=new.num_angles, phis=phis, pixelWidth=new.detector.pixel_width,
                       detectorType="flat")
        if isinstance(new, ParallelBeam):
            # LEAP keeps sod (now √(sod² + tau²)) and sdd in the parameters of the result.
            return self._update(geometry="parallel", sod=orbit_radius(self.core_geometry()),
                                tau=0.0, **changes)
        self._geom = {k: v for k, v in g0.items() if k != "tiltAngle"}
        return self._update(geometry="cone_parallel", sod=new.sod, tau=0.0, **changes)

    def rebin_parallel_sinogram(self, g, order=6, iRow=-1):
        """One row of fan- or cone-beam data rebinned to a parallel-beam sinogram (for
        geometric calibration); ``g`` and the geometry are unchanged.

        iRow : detector row (out of range, e.g. −1: the row nearest centerRow).
        Returns a new float32 array (numAngles, numCols) of parallel views at the
        original angles with columns spaced pixelWidth·√(sod² + tau²)/sdd around
        centerCol (short scans: only the first, fully measured views are filled); with
        ``set_offsetScan(True)`` on a full scan, (numAngles // 2, 2·numCols) views over
        180° of a centred detector twice as wide. A torch tensor in gives a CPU tensor
        out. See :func:`leap.reconstruction.rebin.rebin_parallel_sinogram`.
        """
        from ..reconstruction.rebin import rebin_parallel_sinogram
        arr = self._host_array("g", g)
        sino = rebin_parallel_sinogram(self.core_geometry(), arr, order, iRow,
                                       offset_scan=bool(self._offset_scan))
        if arr is not g:
            import torch
            return torch.from_numpy(sino)
        return sino

    # ------------------------------------------------------------- cropping
    def crop_projections(self, rowRange, colRange=None, g=None):
        """Keep detector rows ``rowRange = [first, last]`` and columns ``colRange`` (inclusive;
        None keeps all) and update the geometry to match (parallel and fan beams: also the
        volume, one slice per kept row, as LEAP). Returns the cropped copy of ``g`` when
        given, else None."""
        geo = self._need_geometry()
        rows = self._index_range("rowRange", rowRange, geo["numRows"])
        cols = self._index_range("colRange", colRange, geo["numCols"])
        if g is not None:
            _validate.check_array("g", g, self.get_projection_dim())
        new = self.core_geometry().cropped(rows[0], rows[1] + 1, cols[0], cols[1] + 1)
        d = new.detector
        changes = dict(numRows=d.num_rows, numCols=d.num_cols, centerRow=d.center_row,
                       centerCol=d.center_col)
        if hasattr(new, "module_centers"):
            changes["moduleCenters"] = new.module_centers.astype(np.float32)
        self._update(**changes)
        if rowRange is not None and geo["geometry"] in ("parallel", "fan") and self._vol:
            # As LEAP: parallel/fan slices follow the rows, one slice per kept row.
            self.set_volume(**dict(self._vol, numZ=changes["numRows"], offsetZ=0.0))
        if g is None:
            return None
        return np.ascontiguousarray(g[:, rows[0]:rows[1] + 1, cols[0]:cols[1] + 1], dtype=np.float32)

    cropProjections = crop_projections

    def cropRows(self, rowRange, g=None):
        return self.crop_projections(rowRange, None, g)

    def cropCols(self, colRange, g=None):
        return self.crop_projections(None, colRange, g)

    crop_rows = cropRows
    crop_cols = cropCols

    @staticmethod
    def _index_range(name, r, n):
        if r is None:
            return 0, n - 1
        r = [int(v) for v in np.asarray(r).ravel()]
        if len(r) != 2 or not 0 <= r[0] <= r[1] <= n - 1:
            raise ValueError(f"{name} must be [first, last] with 0 <= first <= last <= {n - 1}, got {r}")
        return r[0], r[1]
