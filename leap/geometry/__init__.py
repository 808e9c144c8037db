"""Geometry model: the volume grid, the detector and the scan geometries.

Internally everything is in mm and radians. Every scan geometry can be converted to
the canonical per-view vector form :class:`ModularBeam` (``to_modular()``) where that
form can express it.
"""
from .cone import ConeBeam
from .coneparallel import ConeParallelBeam
from .detector import Detector
from .fan import FanBeam
from .modular import ModularBeam
from .parallel import ParallelBeam
from .volume import Volume

__all__ = ["ConeBeam", "ConeParallelBeam", "Detector", "FanBeam", "ModularBeam", "ParallelBeam", "Volume"]
