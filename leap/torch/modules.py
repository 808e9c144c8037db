"""``torch.nn.Module`` wrappers with upstream ``leaptorch``'s names and arguments.

A module owns a ``tomographicModels`` facade (``module.leapct``) and builds the CT
operator from it at every call, so changes made through ``module.leapct.set_*`` (as the
upstream demos do) are seen by the next call. Differences from upstream, all fixes:

* the batch size comes from the input; ``batch_size`` is kept for compatibility only;
* every call returns a new tensor (upstream returns, and overwrites, a module buffer);
* gradients are exact (FBP's is the exact adjoint of FBP, not an approximation);
* modules never share a geometry: ``use_static=True`` no longer makes every module use
  (and overwrite) one global slot; each module's ``param_id`` names its own geometry;
* the output is on the input's device and in its dtype (float32 is the kernels'
  precision; float64 is computed in float32, for ``gradcheck``).
"""
from __future__ import annotations

import numbers
import warnings

import torch

from ..compat import tomographicModels
from ._fbp_params import fbp_parametric
from ._operator import CTOperator, check_input
from ._systems import facade_key
from ._trainable import TrainableGeometry
from .ops import linear

__all__ = ["BaseProjector", "Projector", "FBP"]


def _host(a):
    """Geometry arrays may come as tensors (upstream accepts them); the facade wants NumPy."""
    if isinstance(a, torch.Tensor):
        return a.detach().cpu().numpy()
    return a


def _one_of(name, value, alias, alias_value):
    """The argument given as ``name`` or as its alias ``alias`` (exactly one of them).

    Projector methods take tomographicModels' keyword names and, where upstream
    leaptorch used other names, those too, so scripts written for either work."""
    if value is None and alias_value is None:
        raise TypeError(f"missing argument {name!r} (also accepted as {alias!r})")
    if value is not None and alias_value is not None:
        raise TypeError(f"{name!r} and {alias!r} name the same argument: pass only one")
    return value if value is not None else alias_value


def _as_device(which) -> torch.device:
    """A torch.device from a torch.device, a device string or a GPU index (-1: CPU)."""
    if isinstance(which, torch.device):
        dev = which
    elif isinstance(which, str):
        dev = torch.device(which)
    elif isinstance(which, numbers.Integral) and not isinstance(which, bool):
        dev = torch.device("cpu") if which < 0 else torch.device("cuda", int(which))
    else:
        raise TypeError(f"a device must be a torch.device, a device string such as 'cuda:0' "
                        f"or a GPU index (-1 for the CPU), got {which!r}")
    if dev.type == "cuda" and dev.index is None and torch.cuda.is_available():
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


def _gpu_index(dev: torch.device) -> int:
    return -1 if dev.type != "cuda" else (0 if dev.index is None else dev.index)


class BaseProjector(TrainableGeometry, torch.nn.Module):
    """Common part of :class:`Projector` and :class:`FBP`: a CT geometry and volume.

    Parameters
    ----------
    use_static : bool
        Accepted for compatibility. Upstream stores the geometry of every
        ``use_static=True`` module in one global slot (id 0), so such modules overwrite
        each other; here every module owns its geometry either way.
    use_gpu : bool
        Select a GPU in ``leapct`` (``set_gpu(gpu_device)``). CUDA tensors always run on
        their own device (zero-copy) and give CUDA tensors; CPU tensors run on the
        selected GPU from host memory and give CPU tensors. Without CUDA this warns and
        runs on the CPU, as ``tomographicModels.set_gpu`` does.
    gpu_device : torch.device, str or int, optional
        The GPU to select when ``use_gpu`` (default: torch's current CUDA device).
    batch_size : int
        Accepted for compatibility; the batch size is taken from each input.

    Attributes
    ----------
    leapct : tomographicModels
        The facade holding this module's geometry, volume and FBP options; all of
        ``tomographicModels`` is available through it (e.g. ``leapct.set_diameterFOV``).
    param_id : int
        This module's id (unique in the process); ``param_id_t`` is the same as a tensor.
        The named autograd Functions take it to find this module's geometry.
    """

    def __init__(self, use_static=False, use_gpu=False, gpu_device=None, batch_size=1):
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
                or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r} (it is "
                             "only a hint: the batch size is taken from the input)")
        self.use_static = bool(use_static)
        self.batch_size = int(batch_size)
        self.use_gpu = bool(use_gpu)
        self.gpu_device = gpu_device
        self.leapct = tomographicModels()
        if self.use_gpu:
            if torch.cuda.is_available():
                self.set_gpu(gpu_device if gpu_device is not None else "cuda")
            else:
                warnings.warn("use_gpu=True but torch finds no CUDA device: running on the CPU",
                              RuntimeWarning, stacklevel=3)
                self.use_gpu = False
                self.gpu_device = torch.device("cpu")

    @property
    def param_id(self) -> int:
        """The module's id, which is its facade's model id (as LEAP sets ``self.param_id =
        self.leapct.param_id``); the named Functions find the model by it. A copy
        (copy.deepcopy, pickle) has its own facade, a new model, so its own id."""
        return self.leapct.param_id

    @property
    def param_id_t(self) -> torch.Tensor:
        """``param_id`` as a tensor (on ``gpu_device`` when ``use_gpu``), as upstream has it."""
        dev = self.gpu_device if self.use_gpu and self.gpu_device is not None else "cpu"
        return torch.tensor(self.param_id, device=dev)

    # ------------------------------------------------------------------ calls
    def _run(self, kind: str, input):
        # The custom op checks the input's dtype, shape and device (and so does its fake,
        # under torch.compile); facade_key is evaluated, not traced, by Dynamo.
        if not isinstance(input, torch.Tensor):
            check_input(input, CTOperator.from_model(self.leapct, kind))
        return linear(input, kind, facade_key(self.leapct))

    def forward(self, input):
        raise NotImplementedError("BaseProjector has no forward model; use Projector "
                                  "(projection/back-projection) or FBP")

    def extra_repr(self) -> str:
        parts = [f"param_id={self.param_id}"]
        if self.leapct.ct_geometry_defined():
            parts.append(f"{self.leapct.get_geometry().lower()}-beam projections "
                         f"{self.leapct.get_projection_dim()}")
        if self.leapct.ct_volume_defined():
            parts.append(f"volume {self.leapct.get_volume_dim()}")
        return ", ".join(parts)

    # --------------------------------------------------------------- geometry
    def set_parallelbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                         centerRow, centerCol, phis):
        """Parallel-beam geometry; see ``tomographicModels.set_parallelbeam``.

        phis : (numAngles,) angles in degrees (NumPy array or tensor).
        """
        return self.leapct.set_parallelbeam(numAngles, numRows, numCols, pixelHeight,
                                            pixelWidth, centerRow, centerCol, _host(phis))

    def set_fanbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth, centerRow,
                    centerCol, phis, sod, sdd, tau=0.0):
        """Fan-beam geometry; see ``tomographicModels.set_fanbeam`` (lengths in mm)."""
        return self.leapct.set_fanbeam(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                       centerRow, centerCol, _host(phis), sod, sdd, tau)

    def set_conebeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth, centerRow,
                     centerCol, phis, sod, sdd, tau=0.0, helicalPitch=0.0, tiltAngle=0.0):
        """Cone-beam geometry; see ``tomographicModels.set_conebeam`` (lengths in mm,
        helicalPitch in mm per radian, tiltAngle in degrees)."""
        return self.leapct.set_conebeam(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                        centerRow, centerCol, _host(phis), sod, sdd, tau,
                                        helicalPitch, tiltAngle)

    def set_coneparallel(self, numAngles, numRows, numCols, pixelHeight, pixelWidth, centerRow,
                         centerCol, phis, sod, sdd, tau=0.0, helicalPitch=0.0):
        """Cone-parallel geometry (e.g. rebinned cone-beam data); see
        ``tomographicModels.set_coneparallel`` (pixelWidth at the rotation axis, mm)."""
        return self.leapct.set_coneparallel(numAngles, numRows, numCols, pixelHeight,
                                            pixelWidth, centerRow, centerCol, _host(phis), sod,
                                            sdd, tau, helicalPitch)

    def set_modularbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                        sourcePositions, moduleCenters=None, rowVectors=None, colVectors=None,
                        *, detectorCenters=None, rowVec=None, colVec=None):
        """Modular-beam geometry; the four arrays are (numAngles, 3), mm (NumPy or tensors).
        See ``tomographicModels.set_modularbeam``.

        The keyword names are tomographicModels' (``moduleCenters``, ``rowVectors``,
        ``colVectors``); upstream leaptorch's own names (``detectorCenters``, ``rowVec``,
        ``colVec``) are accepted as well.
        """
        moduleCenters = _one_of("moduleCenters", moduleCenters, "detectorCenters", detectorCenters)
        rowVectors = _one_of("rowVectors", rowVectors, "rowVec", rowVec)
        colVectors = _one_of("colVectors", colVectors, "colVec", colVec)
        return self.leapct.set_modularbeam(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                           _host(sourcePositions), _host(moduleCenters),
                                           _host(rowVectors), _host(colVectors))

    def set_volume(self, numX, numY, numZ, voxelWidth=None, voxelHeight=None, offsetX=0.0,
                   offsetY=0.0, offsetZ=0.0):
        """Reconstruction volume (voxel counts, sizes and offsets in mm); see
        ``tomographicModels.set_volume`` (``voxelWidth=None``: the nominal size;
        ``voxelHeight=None``: voxelWidth)."""
        return self.leapct.set_volume(numX, numY, numZ, voxelWidth, voxelHeight, offsetX,
                                      offsetY, offsetZ)

    def set_default_volume(self, scale=1.0):
        """The volume that fills the field of view; see ``tomographicModels.set_default_volume``."""
        return self.leapct.set_default_volume(scale)

    def get_volume_dim(self):
        """Volume shape ``(numZ, numY, numX)``."""
        return self.leapct.get_volume_dim()

    def get_projection_dim(self):
        """Projection shape ``(numAngles, numRows, numCols)``."""
        return self.leapct.get_projection_dim()

    def allocate_batch_data(self):
        """Kept for compatibility; there is nothing to allocate.

        Upstream preallocates ``batch_size`` output buffers here and returns them (and
        overwrites them) on every call; here each call returns a new tensor sized by
        its input.
        """
        return None

    def load_param(self, param_fn=None, param_type=0, *, fileName=None):
        """Read a LEAP parameter file; see ``tomographicModels.load_param`` (the file name
        may be passed as ``param_fn``, upstream leaptorch's name, or ``fileName``)."""
        return self.leapct.load_param(_one_of("param_fn", param_fn, "fileName", fileName),
                                      param_type)

    def save_param(self, param_fn=None, *, fileName=None):
        """Write a LEAP parameter file; see ``tomographicModels.save_param`` (the file name
        may be passed as ``param_fn`` or ``fileName``)."""
        return self.leapct.save_param(_one_of("param_fn", param_fn, "fileName", fileName))

    def print_parameters(self):
        """Print the geometry and volume parameters."""
        self.leapct.print_parameters()

    def set_gpu(self, which):
        """Select a GPU (a torch.device, 'cuda:N' or an index; -1 or 'cpu' for the CPU)."""
        dev = _as_device(which)
        self.gpu_device = dev
        return self.leapct.set_gpu(_gpu_index(dev))

    def set_gpus(self, listOfGPUs=None, *, listofgpus=None):
        """Select several GPUs (devices or indices); the first is this module's device.
        ``listofgpus`` (upstream leaptorch's keyword) is accepted as well."""
        listOfGPUs = _one_of("listOfGPUs", listOfGPUs, "listofgpus", listofgpus)
        devs = [_as_device(w) for w in listOfGPUs]
        if not devs:
            raise ValueError("set_gpus needs at least one device")
        self.gpu_device = devs[0]
        return self.leapct.set_gpus([_gpu_index(d) for d in devs])

    # upstream's aliases
    def print_param(self):
        self.print_parameters()

    def set_GPU(self, which):
        return self.set_gpu(which)

    def set_GPUs(self, listOfGPUs=None, *, listofgpus=None):
        return self.set_gpus(listOfGPUs, listofgpus=listofgpus)


class Projector(BaseProjector):
    """Differentiable CT projector (PyTorch binding of leap).

    ``forward(input)``: with ``forward_project=True``, volumes ``(batch, numZ, numY,
    numX)`` → projections ``(batch, numAngles, numRows, numCols)``, the line integrals
    of ``leapct.project``; otherwise projections → volumes by the matched
    back-projection (``leapct.backproject``). The gradient of each is the other, exactly.
    A tensor without the batch dimension is one sample.

    ``leapct`` is this module's ``tomographicModels``; all its methods are available,
    e.g. ``proj.leapct.set_diameterFOV(...)``.

    Usage::

        from leaptorch import Projector
        proj = Projector(forward_project=True, use_static=True, use_gpu=use_cuda,
                         gpu_device=device)
        proj.set_conebeam(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                          centerRow, centerCol, proj.leapct.setAngleArray(numAngles, 360.0),
                          sod, sdd)
        proj.set_default_volume()
        g = proj(f)        # f: (batch, numZ, numY, numX)
    """

    def __init__(self, forward_project=True, use_static=False, use_gpu=False, gpu_device=None,
                 batch_size=1):
        super().__init__(use_static, use_gpu, gpu_device, batch_size)
        self.forward_project = bool(forward_project)

    def forward(self, input):
        """Project (``forward_project=True``) or back-project a batch; returns a new tensor.

        Once :meth:`geometry_parameters` has been called, the geometry is the one those
        parameters describe (cone beams through :func:`leap.torch.modular_project` /
        :func:`~leap.torch.modular_backproject`; parallel and fan beams through their own
        footprint model), differentiable in them as well."""
        params = self._geometry_params
        if params is None:
            return self._run("project" if self.forward_project else "backproject", input)
        return self._run_parametric(input, params)

    def fbp(self, input):
        """FBP reconstruction of projections ``(batch, numAngles, numRows, numCols)`` →
        ``(batch, numZ, numY, numX)``, as ``leapct.FBP`` (differentiable; its gradient is
        the exact adjoint of FBP). Once :meth:`geometry_parameters` have been called, FBP
        through the geometry they describe, differentiable in them as well (parallel, and
        flat fan and circular cone beams; see :class:`FBP`)."""
        params = self._geometry_params
        if params is not None:
            return fbp_parametric(self.leapct, input, params)
        return self._run("fbp", input)


class FBP(BaseProjector):
    """Differentiable filtered back-projection.

    ``forward(input)``: with ``forward_FBP=True``, projections ``(batch, numAngles,
    numRows, numCols)`` → volumes ``(batch, numZ, numY, numX)`` by ``leapct.FBP``;
    otherwise the reverse map, the exact adjoint (transpose) of FBP, volumes →
    projections. The gradient of each is the other.

    Once :meth:`geometry_parameters` have been called, both run through the geometry
    those parameters describe, differentiable in them as well as in the input: leap's
    FBP composed in torch (weights, ramp filter, matched back-projection; module
    ``leap.torch._fbp_params``) for parallel beams and flat-detector fan and circular
    cone beams (full and short scans). Untilted cone beams are back-projected through
    their modular form (:func:`leap.torch.modular_backproject`), whose ray stretch
    differs from the facade's cone kernels by about 1e-5 (relative) of the result; the
    others give the facade's numbers. Helical, curved-detector, cone-parallel and
    modular geometries, offset-detector scans and facades with an attenuation map, axis
    of symmetry or volume mask raise a ValueError.
    """

    def __init__(self, forward_FBP=True, use_static=False, use_gpu=False, gpu_device=None,
                 batch_size=1):
        super().__init__(use_static, use_gpu, gpu_device, batch_size)
        self.forward_FBP = bool(forward_FBP)

    def forward(self, input):
        """FBP (``forward_FBP=True``) or its adjoint of a batch; returns a new tensor
        (through the :meth:`geometry_parameters` once they have been called)."""
        params = self._geometry_params
        if params is not None:
            return fbp_parametric(self.leapct, input, params, adjoint=not self.forward_FBP)
        return self._run("fbp" if self.forward_FBP else "fbp_adjoint", input)
