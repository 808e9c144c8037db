"""Array, device and utility methods of the LEAP facade: allocation, ``project`` /
``backproject``, GPU selection, logging, copies and chunking helpers.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import _validate
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int


class ArrayMixin:
    """Array, operator, device and utility methods of
    :class:`leap.compat.model.tomographicModels`."""

    # --------------------------------------------------------------- arrays
    def get_projection_dim(self):
        """Projection array shape ``(numAngles, numRows, numCols)``."""
        g = self._need_geometry()
        return (g["numAngles"], g["numRows"], g["numCols"])

    def get_volume_dim(self):
        """Volume array shape ``(numZ, numY, numX)``."""
        v = self._need_volume()
        return (v["numZ"], v["numY"], v["numX"])

    def allocate_projections(self, val=0.0, astensor=False):
        """A float32 projection array filled with ``val``."""
        return self._allocate(self.get_projection_dim(), val, astensor)

    def allocate_volume(self, val=0.0, astensor=False):
        """A float32 volume array filled with ``val``."""
        return self._allocate(self.get_volume_dim(), val, astensor)

    allocateProjections = allocate_projections
    allocateVolume = allocate_volume

    def allocateData(self, x, val=0.0):
        return np.full_like(x, val)

    def copyData(self, x):
        return x.copy()

    @staticmethod
    def _allocate(shape, val, astensor):
        if astensor:
            import torch
            return torch.full(shape, float(val), dtype=torch.float32)
        return np.full(shape, val, dtype=np.float32)

    # ---------------------------------------------------------- operators
    def project(self, g, f, *, client=None):
        """Forward projection of ``f`` (numZ, numY, numX) into ``g`` (numAngles, numRows, numCols).

        ``g`` is overwritten and returned (LEAP's output-first convention). With a volume
        mask set (:meth:`set_volume_mask`), ``f · mask`` is projected; ``f`` is unchanged.
        With ``client=`` or a lazy ``f`` (dask array, Zarr, HDF5): on
        :func:`leap.distributed.project`, returning a dask array when ``g`` is None.
        """
        from .dask_dispatch import run, wants_dask
        if wants_dask(client, f, g):
            return run("project", self.system, f, g, client)
        return self.system.project(f, out=g)

    def backproject(self, g, f, *, client=None):
        """Back-projection (exact transpose of :meth:`project`) of ``g`` into ``f``; returns
        ``f`` (times the volume mask, when one is set). With ``client=`` or a lazy ``g``:
        on :func:`leap.distributed.backproject`, as :meth:`project`."""
        from .dask_dispatch import run, wants_dask
        if wants_dask(client, g, f):
            return run("backproject", self.system, g, f, client)
        return self.system.backproject(g, out=f)

    project_cpu = project
    backproject_cpu = backproject
    # LEAP's *_gpu variants expect data already on a GPU; leap dispatches on the array
    # kind (CuPy, torch CUDA, __cuda_array_interface__), so they are the same methods.
    project_gpu = project
    backproject_gpu = backproject

    def allocate_projections_gpu(self, val=0.0):
        """Projections as a float32 torch tensor on GPU ``get_gpu()`` (LEAP's
        ``allocateProjections_gpu``); needs torch with CUDA."""
        return self._allocate_gpu(self.get_projection_dim(), val)

    def allocate_volume_gpu(self, val=0.0):
        """A volume as a float32 torch tensor on GPU ``get_gpu()``; needs torch with CUDA."""
        return self._allocate_gpu(self.get_volume_dim(), val)

    allocateProjections_gpu = allocate_projections_gpu
    allocateVolume_gpu = allocate_volume_gpu

    def _allocate_gpu(self, shape, val):
        try:
            import torch
        except ImportError as exc:
            raise RuntimeError("GPU allocation returns torch tensors: install torch") from exc
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device is available to torch; use allocate_projections / "
                               "allocate_volume for CPU arrays")
        dev = max(self.get_gpu(), 0)
        return torch.full(tuple(shape), float(val), dtype=torch.float32, device=f"cuda:{dev}")

    def verify_inputs(self, g, f):
        """Check that ``g`` (numAngles, numRows, numCols) and ``f`` (numZ, numY, numX) are
        float32 C-contiguous arrays of one kind matching the geometry and volume; returns
        True or raises with what was expected (LEAP prints and returns False)."""
        from ..devices import arrays
        if type(g) is not type(f):
            raise TypeError(f"g and f must be arrays of the same kind, got {type(g).__name__} "
                            f"and {type(f).__name__}")
        for name, x, shape in (("g", g, self.get_projection_dim()),
                               ("f", f, self.get_volume_dim())):
            if arrays.is_cuda_array(x):
                arrays.check_cuda_array(name, x, tuple(shape))
            else:
                _validate.check_array(name, x, tuple(shape))
        return True

    def get_volumeDimensionOrder(self):
        """1: volumes are (numZ, numY, numX), LEAP's default and leap's only order."""
        return 1

    def set_volumeDimensionOrder(self, which):
        """Only LEAP's default order, 1 (ZYX: arrays (numZ, numY, numX)), is supported."""
        if which in (1, "ZYX", "zyx"):
            return True
        raise ValueError(f"leap stores volumes as (numZ, numY, numX) only (order 1, 'ZYX'); "
                         f"got {which!r} — transpose XYZ arrays with f.transpose(2, 1, 0)")

    def include_cufft(self):
        """Whether GPU FFTs are available: leap filters on the GPU with CuPy's FFT."""
        try:
            import cupy  # noqa: F401
        except ImportError:
            return False
        return self.number_of_gpus() > 0

    # -------------------------------------------------------------- devices
    def number_of_gpus(self):
        """Number of CUDA GPUs leap can use (0 without a CUDA driver)."""
        from ..devices.gpu import device_count
        return device_count()

    def set_maxSlicesForChunking(self, N):
        """Largest chunk (volume slices per slab, views per view chunk) when NumPy data are
        processed on the GPU; 0 or None lets free GPU memory decide."""
        if N is None or N == 0:
            self._max_slices = None
            return True
        n = _as_int("N", N)
        if n < 0:
            raise ValueError(f"N must be >= 0, got {n}")
        self._max_slices = n
        return True

    def set_gpu(self, which):
        """Choose the device: -1 for the CPU, or a GPU index."""
        return self.set_gpus([which])

    set_GPU = set_gpu

    def set_gpus(self, listOfGPUs):
        """Choose devices (a list of GPU indices, or [-1] for the CPU)."""
        ids = [int(i) for i in np.atleast_1d(listOfGPUs)]
        if not ids:
            raise ValueError("set_gpus needs at least one device index (-1 = CPU)")
        if ids != [-1]:
            if any(i < 0 for i in ids):
                raise ValueError(f"GPU indices must be >= 0 (or [-1] alone for the CPU), got {ids}")
            n = self.number_of_gpus()
            if n == 0:
                warnings.warn("no CUDA GPU is available: leap runs on the CPU (set_gpu(-1))",
                              RuntimeWarning, stacklevel=2)
                ids = [-1]
            elif max(ids) >= n:
                raise ValueError(f"GPU index {max(ids)} does not exist: {n} GPU(s) found")
        self._gpus = ids
        return True

    set_GPUs = set_gpus

    def set_all_gpus(self):
        n = self.number_of_gpus()
        return self.set_gpus(list(range(n)) if n else [-1])

    def get_gpu(self):
        return self._gpus[0]

    get_GPU = get_gpu

    def get_gpus(self):
        return list(self._gpus)

    # ------------------------------------------------------------- utilities
    def expNeg(self, x):
        """``x ← exp(−x)`` in place (attenuation → transmission); returns x."""
        from ..devices.arrays import exp_neg
        return exp_neg(x)

    def negLog(self, x, gray_value=1.0):
        """``x ← −log(x / gray_value)`` in place (transmission → attenuation); returns x."""
        from ..devices.arrays import neg_log
        return neg_log(x, _as_float("gray_value", gray_value))

    def optimalFFTsize(self, N):
        """LEAP's FFT length for N samples: the smallest 2^a·3^b ≥ N with a ≥ 1 (2 for N ≤ 2)."""
        from ..reconstruction.filters import optimal_fft_size
        return optimal_fft_size(_as_int("N", N))

    def set_projector(self, which="SF"):
        """Projector model. leap has one, LEAP's separable footprint ('SF'), with its exact
        transpose as back-projector; 'VD' (LEAP's approximate voxel-driven back-projector)
        is accepted for script compatibility and keeps the matched SF pair."""
        w = str(which).upper()
        if w not in ("SF", "VD"):
            raise ValueError(f"projector must be 'SF' or 'VD', got {which!r}")
        if w == "VD":
            warnings.warn("leap back-projects with the matched separable-footprint model ('SF'); "
                          "'VD' is accepted for compatibility and changes nothing",
                          RuntimeWarning, stacklevel=2)
        return True

    def get_projector(self):
        return "SF"

    # ------------------------------------------------------------- logging
    print_cost = False
    print_warnings = True

    def _set_log(self, level, cost, warn):
        import logging
        logging.getLogger("leap").setLevel(level)
        self.print_cost, self.print_warnings = cost, warn
        return True

    def set_log_error(self):
        """Only errors are reported."""
        import logging
        return self._set_log(logging.ERROR, False, False)

    def set_log_warning(self):
        """Errors and warnings (the default)."""
        import logging
        return self._set_log(logging.WARNING, False, True)

    def set_log_status(self):
        """Also status messages, such as the cost at every iteration."""
        import logging
        return self._set_log(logging.INFO, True, True)

    def set_log_debug(self):
        """Everything."""
        import logging
        return self._set_log(logging.DEBUG, True, True)

    # ------------------------------------------------------------- chunks
    def rowRangeNeededForBackprojection(self, iz=None):
        """``[first, last]`` detector rows that back-projecting into the current volume
        (or, with ``iz``, into its slice ``iz``; out of range: the middle slice) needs —
        LEAP's bounds, a (2,) int32 array. Parallel and fan beams: all rows, or row
        ``iz``; geometries with no simple bound: all rows."""
        nz = self._need_volume()["numZ"]
        if iz is not None:
            iz = int(iz) if 0 <= int(iz) < nz else nz // 2
        first, last = (0, nz - 1) if iz is None else (iz, iz)
        if iz is None and self._need_geometry()["geometry"] in ("parallel", "fan"):
            return np.array([0, self.get_numRows() - 1], dtype=np.int32)
        return np.array(self._row_range_for_slices(first, last), dtype=np.int32)
