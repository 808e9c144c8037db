"""X-ray physics methods of the LEAP facade: ``scatter_model``, LEAP's first-order
scatter simulation and correction (:func:`leap.physics.scatter.first_order_scatter`).
"""
from __future__ import annotations

import numpy as np

#: LEAP's argument names for the core function's arguments (for error messages).
_LEAP_NAMES = {"density": "f", "spectrum": "source", "detector_response": "detector",
               "distributions": "scatterDist", "job": "jobType"}


def _to_numpy(x, name):
    """``(numpy array, torch tensor or None)``: the host data of ``x``."""
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy(), x
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy
        return cupy.asnumpy(x), None
    try:
        return np.asarray(x), None
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a NumPy array or a torch tensor, got "
                        f"{type(x).__name__}") from None


class PhysicsMixin:
    """Scatter methods of :class:`leap.compat.model.tomographicModels`."""

    def scatter_model(self, f, source, energies, detector, sigma, scatterDist, jobType=-1):
        """Simulates first-order scatter through an object of one material (variable
        density): scatter-correction gain, scatter-simulation gain or scatter transmission.

        As LEAP (see its demo ``d31_scatter_correction.py``) this needs a modular-beam
        geometry (call :meth:`convert_to_modularbeam` first) and down-sampled data: at
        most 200³ voxels, 256² detector pixels and 20 source-spectrum samples. It
        computes what upstream's GPU kernel does (``sampling="leap"`` of
        :func:`leap.physics.scatter.first_order_scatter`, including its view skipping),
        on the GPU selected with :meth:`set_gpu` or on the CPU.

        Args:
            f: (numZ, numY, numX) mass density (NumPy array or torch tensor); with
                ``sigma`` it must give 1/mm, i.e. g/mm³ with mm²/g cross sections
                (XrayPhysics after ``use_mm()``).
            source: source spectrum (including filters), at most 20 samples.
            energies: its energies (keV), increasing.
            detector: detector response at 1, 2, …, ceil(energies[-1]) keV.
            sigma: (3, n) photoelectric, Compton and Rayleigh mass cross sections on
                the same 1-keV grid.
            scatterDist: (2, n, 181) normalised incoherent and coherent scatter
                distributions (1/sr) on that grid and at 0, 1, …, 180 degrees.
            jobType: -1 scatter-correction gain P/(P+S) (multiply measured transmission
                by it), 1 scatter-simulation gain (P+S)/P, 0 scatter transmission S/air.

        Returns:
            (numAngles, numRows, numCols) float32 array (a torch tensor on ``f``'s device
            when ``f`` is one).
        """
        from ..physics.scatter import _first_order_scatter
        if self.get_geometry() != "MODULAR":
            raise ValueError("scatter_model only works for modular-beam geometries; call "
                             "convert_to_modularbeam() first")
        f_np, tensor = _to_numpy(f, "f")
        args = [_to_numpy(a, n)[0] for a, n in ((source, "source"), (energies, "energies"),
                                                (detector, "detector"), (sigma, "sigma"),
                                                (scatterDist, "scatterDist"))]
        gpu = self.get_gpu()
        backend = "cuda" if gpu >= 0 else "cpu"
        from ..devices.arrays import device_context
        with device_context(gpu if gpu >= 0 else None):
            g = _first_order_scatter(self.core_geometry(), self.core_volume(), f_np, *args,
                                     jobType, "g/mm^3", "mm", "leap", True, backend,
                                     _LEAP_NAMES)
        if tensor is not None:
            import torch
            return torch.from_numpy(g).to(tensor.device)
        return g
