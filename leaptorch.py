"""LEAP compatibility shim: ``from leaptorch import Projector`` as in upstream LEAP scripts.

Re-exports :mod:`leap.torch` (and, as upstream's ``from leapctype import *`` does,
``tomographicModels``, ``np`` and ``torch``).
"""
import numpy as np
import torch

from leap.torch import *  # noqa: F401,F403
from leap.torch import __all__ as _torch_all

__all__ = list(_torch_all) + ["np", "torch"]
