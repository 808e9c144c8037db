"""Projection pre-processing: array functions on a block of views (NumPy or CuPy), so a
scan is corrected a block at a time, out of core (each module says what a block needs:
nothing, an overlap of neighbouring views, a state carried from block to block, or all
views of a detector row).

- :mod:`~leap.preprocessing.flat_field`: flat/dark normalisation (averaged or
  interpolated flats, dose normalisation from an air region), −log with a floor, and
  LEAP's flat-field steps (plain ratio, flux normalisation, two-point gain calibration,
  transmission shift).
- :mod:`~leap.preprocessing.bad_pixels`: bad-pixel maps from flats and darks (dead,
  gain or offset outliers, noisy pixels) or from the data, their replacement by the
  median of good neighbours, and zinger removal.
- :mod:`~leap.preprocessing.rings`: ring (stripe) removal: LEAP's TV and median methods
  and the sorting-based method of Vo et al. (2018).
- :mod:`~leap.preprocessing.lag`: detector lag (afterglow) correction by recursive
  deconvolution of a multi-exponential impulse response (Hsieh et al. 2000, Starman et
  al. 2011), with the recursion's state carried between blocks.
- :mod:`~leap.preprocessing.deblur`: detector deblurring (regularised inverse filter,
  Richardson–Lucy).
- :mod:`~leap.preprocessing.filters`: local filters (LEAP's thresholded low-signal
  median, box mean and variance, Laplacian, transmission-domain 2-D filter, transfer
  functions, azimuthal blur of a volume).

Calibration and sinogram tools beside them (imported by name, not re-exported here):
:mod:`~leap.preprocessing.geometric_calibration` (centre of rotation, tau, detector
tilt and consistency costs from the data), :mod:`~leap.preprocessing.mar` (sinogram
replacement for metal) and :mod:`~leap.preprocessing.resample` (down- and up-sampling of
projections and volumes).

LEAP's names and argument order for these live in :mod:`leap.compat.preprocessing` (and
the facade's methods), which call this package.
"""
from .bad_pixels import bad_pixel_map, outlier_pixel_map, remove_zingers, replace_bad_pixels
from .deblur import deconvolution_filter, deconvolve, richardson_lucy
from .filters import (azimuthal_blur, dual_transfer_function, laplacian, low_signal_median,
                      mean_filter, transfer_function, transmission_filter, variance_filter)
from .flat_field import (MIN_TRANSMISSION, TwoPointGain, apply_two_point_gain, attenuation,
                         fill_nonpositive, flat_at_views, flat_dark_ratio, flat_field, neg_log,
                         normalize_dose, replace_nonpositive, shift_transmission, two_point_gain)
from .lag import correct_lag, lag_impulse_response, simulate_lag
from .rings import (mean_view, remove_stripes_sorting, ring_correction_tv, ring_removal_median,
                    ring_removal_tv)

__all__ = ["MIN_TRANSMISSION", "attenuation", "flat_at_views", "flat_field", "neg_log",
           "TwoPointGain", "apply_two_point_gain", "fill_nonpositive", "flat_dark_ratio",
           "normalize_dose", "replace_nonpositive", "shift_transmission", "two_point_gain",
           "bad_pixel_map", "outlier_pixel_map", "remove_zingers", "replace_bad_pixels",
           "mean_view", "remove_stripes_sorting", "ring_correction_tv", "ring_removal_median",
           "ring_removal_tv",
           "correct_lag", "lag_impulse_response", "simulate_lag",
           "deconvolution_filter", "deconvolve", "richardson_lucy",
           "azimuthal_blur", "dual_transfer_function", "laplacian", "low_signal_median",
           "mean_filter", "transfer_function", "transmission_filter", "variance_filter"]
