"""Old import paths of modules that moved into subpackages, kept working.

The top level of ``leap`` once held its modules side by side (``leap.fbp``,
``leap.weights``, ``leap.gpu``, ...); they now live in the subpackage of their role
(issue 52). ``import leap.fbp``, ``from leap.weights import ...``, ``python -m
leap.precompile``, pickles that name an old path and ``leap.fbp`` as an attribute all
still work, and give the *same* module object as the new path (so a monkeypatch or a
module-level setting made through either name is seen through the other). Nothing is
imported until an old name is used.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

#: old module name → its home now.
MOVED = {
    "leap.fbp": "leap.reconstruction.fbp",
    "leap.bpf": "leap.reconstruction.bpf",
    "leap.filters": "leap.reconstruction.filters",
    "leap.weights": "leap.reconstruction.weights",
    "leap.rebin": "leap.reconstruction.rebin",
    "leap.tilt_resampling": "leap.reconstruction.tilt_resampling",
    "leap.focal_spots": "leap.reconstruction.focal_spots",
    "leap.special_models": "leap.reconstruction.special_models",
    "leap.arrays": "leap.devices.arrays",
    "leap.gpu": "leap.devices.gpu",
    "leap._threading": "leap.devices._threading",
    "leap.precompile": "leap.kernels.precompile",
    "leap.regularization": "leap.algorithms.regularization",
    "leap.dictionary_denoising": "leap.algorithms.dictionary_denoising",
    "leap.masks": "leap.algorithms.masks",
    "leap.geometric_calibration": "leap.preprocessing.geometric_calibration",
    "leap.mar": "leap.preprocessing.mar",
    "leap.resample": "leap.preprocessing.resample",
}


class _AliasLoader(importlib.abc.Loader):
    """Loads an old name as the module at its new home (one module, two names)."""

    def __init__(self, target):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self.spec = module.__spec__
        return module

    def exec_module(self, module):
        # Executed once, under its new name. The import system has just set the module's
        # __spec__ to the old name's: its own goes back, or relative imports inside its
        # functions would see __package__ != __spec__.parent (an ImportWarning).
        module.__spec__ = self.spec

    def get_code(self, fullname):
        # ``python -m leap.precompile`` (runpy) runs the new module's code as __main__.
        spec = importlib.util.find_spec(self.target)
        return spec.loader.get_code(self.target)


class _AliasFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.util.spec_from_loader(fullname, _AliasLoader(new))


def install():
    """Put the finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())   # before any stale file of the old name


def attribute(name):
    """``leap.<name>`` for an old module name, else None."""
    new = MOVED.get(f"leap.{name}")
    return None if new is None else importlib.import_module(f"leap.{name}")
