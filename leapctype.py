"""LEAP compatibility shim: ``from leapctype import *`` as in upstream LEAP scripts.

Gives scripts what upstream's module gives them: the ``tomographicModels`` class and
the modules scripts use through it (``np``, ``os``, ``sys``, ``glob``).
"""
import glob
import os
import sys

import numpy as np

from leap.model import tomographicModels

__all__ = ["tomographicModels", "np", "os", "sys", "glob"]
