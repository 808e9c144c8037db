"""Projection pre-processing: array functions on a block of views (NumPy or CuPy), so a
scan is corrected a block at a time, out of core.

- :mod:`~leap.preprocessing.flat_field`: flat/dark normalisation (averaged or
  interpolated flats, dose normalisation from an air region) and −log with a floor.

LEAP's names and argument order for these live in :mod:`leap.compat.preprocessing`,
which calls this package.
"""
from .flat_field import MIN_TRANSMISSION, attenuation, flat_at_views, flat_field, neg_log

__all__ = ["MIN_TRANSMISSION", "attenuation", "flat_at_views", "flat_field", "neg_log"]
