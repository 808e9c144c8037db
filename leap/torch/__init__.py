"""PyTorch adapter: differentiable, exact CT operators (the only part of leap that imports torch).

The public API is upstream LEAP's ``leaptorch``:

* :class:`Projector` (projection / back-projection, and ``fbp``), :class:`FBP`
  (FBP / its adjoint), both :class:`BaseProjector` modules with LEAP's geometry methods
  and a ``leapct`` facade;
* the autograd Functions ``ProjectorFunctionCPU/GPU``, ``BackProjectorFunctionCPU/GPU``,
  ``FBPFunctionCPU/GPU``, ``FBPReverseFunctionCPU/GPU`` — thin names for one
  implementation, :class:`LinearOperatorFunction`.

Volumes are ``(batch, numZ, numY, numX)`` and projections ``(batch, numAngles, numRows,
numCols)``; the batch size comes from the input and every call returns a new tensor.
Gradients are exact (matched back-projection; the exact adjoint of FBP) and twice
differentiable. :class:`PolychromaticProjector` (:mod:`leap.torch.polychromatic`) maps
material density maps through a spectrum to the expected log transmission, differentiable
in the maps, the spectrum and the attenuation coefficients. :func:`modular_project` and
:func:`modular_backproject` (:mod:`leap.torch.geometry`) take a modular-beam geometry as
tensors and are differentiable in it as well (exact first-order gradients of the
footprint model). See :mod:`leap.torch.modules` for the differences from upstream.

Underneath, every operator is a PyTorch custom op, ``torch.ops.leap.*``
(:mod:`leap.torch.ops`), so ``torch.compile`` (``fullgraph=True``), ``torch.export``,
``torch.func`` transforms and DDP see leap as they see a built-in op. The linear ops
take a :class:`~leap.system.CTSystem` by its registry key (:func:`register_system`);
:func:`opcheck_samples` gives sample calls of every op for ``torch.library.opcheck``.
"""
from ..compat import tomographicModels
from .functions import (BackProjectorFunctionCPU, BackProjectorFunctionGPU, FBPFunctionCPU,
                        FBPFunctionGPU, FBPReverseFunctionCPU, FBPReverseFunctionGPU,
                        LinearOperatorFunction, ProjectorFunctionCPU, ProjectorFunctionGPU)
from .geometry import cone_beam_modular, modular_backproject, modular_project
from .modules import FBP, BaseProjector, Projector
from .polychromatic import PolychromaticProjector
from ._op_samples import opcheck_samples
from ._systems import register_system

__all__ = [
    "BaseProjector", "Projector", "FBP", "PolychromaticProjector",
    "ProjectorFunctionCPU", "ProjectorFunctionGPU",
    "BackProjectorFunctionCPU", "BackProjectorFunctionGPU",
    "FBPFunctionCPU", "FBPFunctionGPU",
    "FBPReverseFunctionCPU", "FBPReverseFunctionGPU",
    "LinearOperatorFunction", "tomographicModels",
    "modular_project", "cone_beam_modular", "modular_backproject",
    "register_system", "opcheck_samples",
]
