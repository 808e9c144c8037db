"""leap: LEAP-compatible CT projectors, back-projectors and reconstruction in Python.

Importing leap never imports torch, cupy or CUDA.
"""
from . import _threading  # noqa: F401  (first: TBB must be loaded before any parallel kernel runs)
from .geometry import (ConeBeam, ConeParallelBeam, Detector, FanBeam, ModularBeam, ParallelBeam,
                       Volume)
from .operators import backproject, project

__version__ = "0.1.0"

__all__ = ["ConeBeam", "ConeParallelBeam", "Detector", "FanBeam", "ModularBeam", "ParallelBeam",
           "Volume", "backproject", "project"]
