"""XrayPhysics compatibility shim: ``from xrayphysics import *`` as in LEAP's scripts.

LLNL's XrayPhysics (https://github.com/kylechampley/XrayPhysics; C++ behind a ctypes
wrapper, not on PyPI) is LEAP's companion package for cross sections, spectra and
beam-hardening/dual-energy tables. This module gives scripts its class,
``physics = xrayPhysics()``, and its module-level material library
(``materialFormulas``, ``materialDensities``), with the modules scripts use through it
(``np``, ``os``, ``sys``). The implementation, its units and its differences from
XrayPhysics are in :mod:`leap.compat.xrayphysics`, computed by :mod:`leap.physics`.
"""
import os
import sys

import numpy as np

from leap.compat.xrayphysics import materialDensities, materialFormulas, xrayPhysics

__all__ = ["xrayPhysics", "materialFormulas", "materialDensities", "np", "os", "sys"]
