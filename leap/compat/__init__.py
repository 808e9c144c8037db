"""The LEAP front end: ``tomographicModels`` and LEAP's companion modules.

A LEAP user's script runs unchanged on these classes and functions; they keep LEAP's
names, argument order, degrees and output-first calls, and hand every computation to
the core through one :class:`leap.system.CTSystem` (``tomographicModels().system``).

- :mod:`.model`: ``tomographicModels`` (state, geometry and volume set-up, getters, the
  ``system`` it derives) with its method groups ``*_methods.py`` (arrays and devices,
  parameter files, rebinning, FBP, iterative methods, phantoms, geometry tools and
  calibration, special models, data I/O, display, pre-processing);
- :mod:`.filter_sequence`: LEAP's ``leap_filter_sequence`` (denoising filters and
  regularisers for the iterative methods);
- :mod:`.preprocessing`: LEAP's ``leap_preprocessing_algorithms``;
- :mod:`.dictionaries`: LEAP's ``utils/generateDictionary.py``;
- :mod:`.xrayphysics`: LLNL XrayPhysics' ``xrayPhysics`` class over :mod:`leap.physics`
  (its spectrum methods in :mod:`.xrayphysics_spectra`).

The top-level shims ``leapctype``, ``leaptorch``, ``leap_filter_sequence`` and
``leap_preprocessing_algorithms`` (and ``xrayphysics``) re-export these under LEAP's
module names.
"""
from .model import tomographicModels

__all__ = ["tomographicModels"]
