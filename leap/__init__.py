"""leap: LEAP-compatible CT projectors, back-projectors and reconstruction in Python.

Importing leap never imports torch, cupy or CUDA.
"""
from . import _moved
# First: TBB must be loaded before any parallel kernel runs.
from .devices import _threading  # noqa: F401
from .geometry import (ConeBeam, ConeParallelBeam, Detector, FanBeam, ModularBeam, ParallelBeam,
                       Volume)
from ._version import __version__
from .operators import backproject, project

_moved.install()


def __getattr__(name):
    # The LEAP front end is imported on first use, so ``import leap`` stays light.
    if name == "tomographicModels":
        from .compat import tomographicModels
        return tomographicModels
    moved = _moved.attribute(name)         # an old module path (leap.fbp, leap.gpu, ...)
    if moved is not None:
        return moved
    raise AttributeError(f"module 'leap' has no attribute {name!r}")


__all__ = ["__version__", "tomographicModels", "ConeBeam", "ConeParallelBeam", "Detector",
           "FanBeam", "ModularBeam", "ParallelBeam", "Volume", "backproject", "project"]
