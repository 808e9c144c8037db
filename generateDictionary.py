"""LEAP compatibility shim: ``from generateDictionary import *`` as in upstream LEAP's
demo ``d27_dictionaryDenoising`` (upstream keeps this module in ``utils/``).

Re-exports the dictionary generators of :mod:`leap.compat.dictionaries` (and ``np``, which
upstream's module hands on from its own ``from leapctype import *``).
"""
import numpy as np

from leap.compat.dictionaries import *  # noqa: F401,F403
from leap.compat.dictionaries import __all__ as _dict_all

__all__ = list(_dict_all) + ["np"]
