"""LEAP compatibility shim: ``from leapctype import *`` as in upstream LEAP scripts.

Gives scripts what upstream's module gives them: the ``tomographicModels`` class, the
filter-sequence classes of ``leap_filter_sequence`` and the modules scripts use through
it (``np``, ``os``, ``sys``, ``glob``).
"""
import glob
import os
import sys

import numpy as np

try:  # upstream's module exposes torch (and has_torch) to scripts when it is installed
    import torch
    has_torch = True
except ImportError:
    torch = None
    has_torch = False

from leap.filter_sequence import (TV, BilateralFilter, BlurFilter, GuidedFilter, LpNorm,
                                  MedianFilter, denoisingFilter, filterSequence,
                                  histogramSparsity)
from leap.model import tomographicModels

__all__ = ["tomographicModels", "np", "os", "sys", "glob", "torch", "has_torch",
           "filterSequence", "denoisingFilter", "TV", "LpNorm", "histogramSparsity",
           "BlurFilter", "MedianFilter", "BilateralFilter", "GuidedFilter"]
