"""LEAP compatibility shim: ``from leapctype import *`` as in upstream LEAP scripts.

Gives scripts what upstream's module gives them: the ``tomographicModels`` class, the
filter-sequence classes of ``leap_filter_sequence`` and the modules scripts use through
it (``np``, ``os``, ``sys``, ``glob``).
"""
import glob
import importlib.util
import os
import sys

import numpy as np

from leap.compat.filter_sequence import (TV, BilateralFilter, BlurFilter, GuidedFilter, LpNorm,
                                  MedianFilter, denoisingFilter, filterSequence,
                                  histogramSparsity)
from leap.compat.model import tomographicModels

# Upstream's module hands scripts ``torch`` (and ``has_torch``) when torch is installed.
# Here ``torch`` is imported only when asked for (``from leapctype import *`` does), so a
# plain ``import leapctype`` stays as light as ``import leap``.
has_torch = importlib.util.find_spec("torch") is not None


def __getattr__(name):
    if name == "torch" and has_torch:
        import torch
        return torch
    raise AttributeError(f"module 'leapctype' has no attribute {name!r}")


__all__ = ["tomographicModels", "np", "os", "sys", "glob", "has_torch",
           "filterSequence", "denoisingFilter", "TV", "LpNorm", "histogramSparsity",
           "BlurFilter", "MedianFilter", "BilateralFilter", "GuidedFilter"]
if has_torch:
    __all__.append("torch")
