"""LEAP's projection pre-processing algorithms (upstream ``leap_preprocessing_algorithms``).

Same names, arguments and defaults as LEAP. Each function takes a
:class:`leap.compat.model.tomographicModels` first (``None``: a default one, as LEAP) and
projections ``g`` (numAngles, numRows, numCols) float32, which it modifies in place.
Differences from LEAP:

- the correction functions return ``g`` (LEAP returns True), so both
  ``f(leapct, g)`` and ``g2 = f(leapct, g.copy())`` work;
- bad input raises (LEAP prints ``Error:`` and returns False or None);
- ``gain_correction`` and ``makeAttenuationRadiographs`` do not modify the caller's
  air and dark scans (LEAP dark-subtracts and median-filters them in place);
- ``geometric_calibration`` passes ``param`` on to the bowtie search for every tilt (LEAP
  forgets it before the final refinement, so 'tau' sweeps centerCol there).

Data processing: :func:`gain_correction`, :func:`makeAttenuationRadiographs`,
:func:`badPixelCorrection`, :func:`outlierCorrection`, :func:`outlierCorrection_highEnergy`,
:func:`LowSignalCorrection`, :func:`detectorDeblur_FourierDeconv`,
:func:`detectorDeblur_RichardsonLucy`, :func:`ringRemoval_fast`, :func:`ringRemoval_median`,
:func:`ringRemoval`, :func:`transmission_shift`. Geometry calibration and image metrics
(:mod:`leap.compat.preprocessing.calibration`): :func:`parameter_sweep`,
:func:`geometric_calibration`, :func:`find_centerCol_and_tiltAngle`,
:func:`find_tau_and_tiltAngle`, :func:`find_centerCol_or_tau_bowtie`,
:func:`bowtie_alignment_metric`, :func:`entropy`, :func:`MTF`, :func:`quadratic_extrema`;
:class:`ball_phantom_calibration` (:mod:`leap.compat.preprocessing.ball_phantom`).

The numerics are those of :mod:`leap.preprocessing` (flat fields, bad pixels, rings,
deblurring, filters); this module keeps LEAP's names, argument order and conventions
(in-place work on ``g``, ``isAttenuationData``, the order of LEAP's steps).
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from ...preprocessing import bad_pixels as _bad_pixels
from ...preprocessing import deblur as _deblur
from ...preprocessing import rings as _rings
from ...preprocessing.flat_field import MIN_TRANSMISSION  # the floor before -log, LEAP 2^-16
from ...preprocessing.flat_field import (apply_two_point_gain, fill_nonpositive, flat_dark_ratio,
                                         normalize_dose, replace_nonpositive, shift_transmission,
                                         two_point_gain)
from ._arrays import check_data as _check_data
from ._arrays import check_window as _check_window
from ._arrays import count as _count
from ._arrays import host_view as _host_view
from ._arrays import real as _real
from .calibration import (MTF, bowtie_alignment_metric, entropy, find_centerCol_and_tiltAngle,
                          find_centerCol_or_tau_bowtie, find_tau_and_tiltAngle,
                          geometric_calibration, parameter_sweep, quadratic_extrema)
from .ball_phantom import ball_phantom_calibration
from .calibration import default_model as _default_model

__all__ = ["gain_correction", "makeAttenuationRadiographs", "badPixelCorrection",
           "outlierCorrection", "outlierCorrection_highEnergy", "LowSignalCorrection",
           "detectorDeblur_FourierDeconv", "detectorDeblur_RichardsonLucy", "ringRemoval_fast",
           "ringRemoval_median", "ringRemoval", "transmission_shift", "quadratic_extrema",
           "find_centerCol_and_tiltAngle", "find_tau_and_tiltAngle", "geometric_calibration",
           "find_centerCol_or_tau_bowtie", "bowtie_alignment_metric", "parameter_sweep",
           "entropy", "MTF", "ball_phantom_calibration"]

def _model(leapct):
    return _default_model() if leapct is None else leapct


def _projections(g):
    if g is None:
        raise ValueError("no data given: g must be a (numAngles, numRows, numCols) float32 array")
    return _check_data("g", g, ndims=(3,))


def _is_scalar(x):
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _scan(name, x, g):
    """An air or dark scan: a number, or a (numRows, numCols) array (returned as a float32
    copy so the caller's scan is left alone)."""
    if x is None or _is_scalar(x):
        return None if x is None else float(x)
    x = np.asarray(x)
    if x.shape != g.shape[1:]:
        raise ValueError(f"{name} must be a number or a (numRows, numCols) = {g.shape[1:]} array, "
                         f"got shape {x.shape}")
    return x.astype(np.float32, copy=True)


def _roi(ROI, g):
    """``[first row, last row, first col, last col]`` (inclusive) as slices."""
    if ROI is None:
        return None
    r = [int(v) for v in np.asarray(ROI).ravel()]
    if len(r) != 4 or r[0] < 0 or r[2] < 0 or r[1] < r[0] or r[3] < r[2] \
            or r[1] >= g.shape[1] or r[3] >= g.shape[2]:
        raise ValueError(f"ROI must be [firstRow, lastRow, firstCol, lastCol] inside the "
                         f"{g.shape[1]}×{g.shape[2]} detector, got {ROI}")
    return slice(r[0], r[1] + 1), slice(r[2], r[3] + 1)


# ------------------------------------------------------- radiograph corrections
def gain_correction(leapct, g, air_scan, dark_scan, calibration_scans=None, ROI=None,
                    badPixelMap=None, flux_response=None):
    r"""Dark subtraction, pixel gain calibration, flux normalisation and bad-pixel removal
    of raw radiographs ``g`` (numAngles, numRows, numCols), in place. The result stays in
    raw (dark-subtracted) units: it is **not** divided by the air scan; use
    :func:`makeAttenuationRadiographs` for that.

    - ``g ← g − dark``;
    - with ``calibration_scans`` (3, numRows, numCols) = dark-level, mid-level and
      high-level flat fields c0, c1, c2: M = c1 − c0, L = c2 − c0 (median filtered,
      non-positive values raised to the smallest positive one), gains
      ``gM = median(M)/M`` and ``gL = (median(L) − median(M))/(L − M)``, and
      ``g ← gM·g`` where g < M, ``g ← gL·(g − M) + median(M)`` elsewhere (two-point
      piecewise-linear gain);
    - with ``ROI`` = [firstRow, lastRow, firstCol, lastCol] (an air region, inclusive):
      each view is divided by its ROI mean relative to the (filtered) air scan's;
    - bad pixels (``badPixelMap``, or estimated from the mean view) replaced by medians
      of 5×5 good neighbours.

    ``air_scan``, ``dark_scan``: numbers or (numRows, numCols) arrays (both required;
    they are not modified). ``flux_response`` is accepted and ignored, as in LEAP.
    Returns ``g``.
    """
    leapct = _model(leapct)
    if air_scan is None or dark_scan is None:
        raise ValueError("gain_correction needs both air_scan and dark_scan")
    with _host_view(g, "g") as a:
        _projections(a)
        dark = _scan("dark_scan", dark_scan, a)
        air = _scan("air_scan", air_scan, a)
        roi = _roi(ROI, a)
        cal = None
        if calibration_scans is not None:
            cal = np.asarray(calibration_scans, dtype=np.float32)
            if cal.ndim != 3 or cal.shape[1:] != a.shape[1:]:
                raise ValueError(f"calibration_scans must be (numScans, numRows, numCols) with "
                                 f"detector shape {a.shape[1:]}, got {cal.shape}")
            if cal.shape[0] > 3:
                raise ValueError(f"gain_correction handles 3 calibration scans (dark, mid, "
                                 f"high level), got {cal.shape[0]}")
            if cal.shape[0] < 3:
                cal = None              # LEAP skips the calibration with fewer than 3 scans

        flat_dark_ratio(a, None, dark, out=a)
        air = air - dark            # a Python number stays one, as in LEAP
        if not _is_scalar(air):
            leapct.MedianFilter2D(air, threshold=0.03, windowSize=5)

        if cal is not None:
            gain = two_point_gain(cal[0], cal[1], cal[2], threshold=0.1, window_size=5)
            apply_two_point_gain(a, gain, out=a)
            if not _is_scalar(air):
                # LEAP's air branch puts the boundary value itself on the low side.
                air = apply_two_point_gain(air, gain, knee_is_low=True)

        if roi is not None:
            normalize_dose(a, roi, reference=air, out=a)

        badPixelCorrection(leapct, a, None, None, badPixelMap, 5, isAttenuationData=False)
    return g


def makeAttenuationRadiographs(leapct, g, air_scan=None, dark_scan=None, ROI=None,
                               isAttenuationData=False):
    r"""Flat-field and −log raw radiographs ``g`` (numAngles, numRows, numCols), in place:

    .. math:: g \leftarrow -\log\max\!\Big(\frac{g - dark}{air - dark} / s_v,\ 2^{-16}\Big)

    with :math:`s_v` the mean of view v over ``ROI`` = [firstRow, lastRow, firstCol,
    lastCol] (flux normalisation; 1 without ROI). ``air_scan``/``dark_scan``: numbers or
    (numRows, numCols) arrays; without air the data are taken as transmissions, without
    dark as dark-subtracted. Non-positive air pixels are raised to the smallest positive
    one. With ``isAttenuationData`` the input is already −log data: only the ROI
    normalisation is applied (nothing without ROI). Returns ``g``.
    """
    leapct = _model(leapct)
    with _host_view(g, "g") as a:
        _projections(a)
        dark = _scan("dark_scan", dark_scan, a)
        air = _scan("air_scan", air_scan, a)
        roi = _roi(ROI, a)
        if isinstance(air, np.ndarray):
            air = fill_nonpositive(air, name="air_scan", out=air)
        if isAttenuationData:
            if roi is None:
                return g
            leapct.expNeg(a)
        flat_dark_ratio(a, air, dark, out=a)
        if roi is not None:
            normalize_dose(a, roi, out=a)
        if np.isnan(a).any():
            warnings.warn("makeAttenuationRadiographs: NaN in the flat-fielded data (air equal "
                          "to dark somewhere?)", RuntimeWarning, stacklevel=2)
        replace_nonpositive(a, MIN_TRANSMISSION, out=a)
        leapct.negLog(a)
    return g


def badPixelCorrection(leapct, g, air_scan=None, dark_scan=None, badPixelMap=None, windowSize=3,
                       isAttenuationData=True):
    """Replace bad detector pixels, in every projection, by the median of the good pixels
    in their windowSize² neighbourhood (3, 5 or 7), working on transmissions.

    ``badPixelMap`` (numRows, numCols), 1.0 = bad; when None it is estimated: pixels of
    the mean transmission projection that a 5×5 median filter with threshold 0.1 changes.
    ``air_scan``/``dark_scan`` (numRows, numCols) arrays are corrected too, in place.
    Returns ``g``.
    """
    leapct = _model(leapct)
    with _host_view(g, "g") as a:
        _projections(a)
        if isAttenuationData:
            leapct.expNeg(a)
        if badPixelMap is None:
            badPixelMap = _bad_pixels.outlier_pixel_map(a, threshold=0.1,
                                                        window_size=5).astype(np.float32)
        leapct.badPixelCorrection(a, badPixelMap, windowSize)
        for scan in (air_scan, dark_scan):
            if scan is not None and not _is_scalar(scan):
                leapct.badPixelCorrection(scan, badPixelMap, windowSize)
        if isAttenuationData:
            leapct.negLog(a)
    return g


def _median_in_transmission(leapct, g, isAttenuationData, passes):
    with _host_view(g, "g") as a:
        _projections(a)
        if isAttenuationData:
            leapct.expNeg(a)
        for threshold, w, signal in passes:
            leapct.LowSignalCorrection2D(a, threshold, w, signal)
        if isAttenuationData:
            leapct.negLog(a)
    return g


def outlierCorrection(leapct, g, threshold=0.03, windowSize=3, isAttenuationData=True):
    r"""Remove zingers: each transmission value t with windowSize² median m (3, 5 or 7)
    becomes m when :math:`|t - m| \ge threshold\cdot|m|`. Projections are processed
    independently; no geometry needed. Returns ``g``."""
    threshold = _real("threshold", threshold)
    return _median_in_transmission(_model(leapct), g, isAttenuationData,
                                   [(threshold, windowSize, 0.0)])


def outlierCorrection_highEnergy(leapct, g, isAttenuationData=True):
    """Outlier removal for MV or neutron data, whose zingers spread over several pixels:
    thresholded median filters 7×7 (threshold 0.08), 5×5 (0.024), 3×3 (0.0032) in
    turn, on transmissions. Returns ``g``."""
    return _median_in_transmission(_model(leapct), g, isAttenuationData,
                                   [(0.08, 7, 0.0), (0.024, 5, 0.0), (0.0032, 3, 0.0)])


def LowSignalCorrection(leapct, g, threshold=0.03, windowSize=3, signalThreshold=0.001,
                        isAttenuationData=True):
    """Correct photon starvation: as :func:`outlierCorrection`, but only transmissions ≤
    ``signalThreshold`` are replaced. Returns ``g``."""
    threshold = _real("threshold", threshold)
    signalThreshold = _real("signalThreshold", signalThreshold)
    return _median_in_transmission(_model(leapct), g, isAttenuationData,
                                   [(threshold, windowSize, signalThreshold)])


# ---------------------------------------------------------------- detector blur
def _response(H):
    """``H`` as a NumPy array (torch tensors and CuPy arrays copied to the host)."""
    with _host_view(H, "H") as h:
        return np.array(h)


def detectorDeblur_FourierDeconv(leapct, g, H, WienerParam=0.0, isAttenuationData=True):
    r"""Undo detector blur of frequency response ``H`` (N1 ≥ numRows, N2 ≥ numCols, DC at
    [0, 0], e.g. N = optimalFFTsize(2·n)) by deconvolving the transmissions with

    .. math:: H_{inv} = \frac{(1+w)H}{H^2 + w} \;(0 < w \le 1),\qquad 1/H \;(\text{else}),

    normalised to :math:`H_{inv}[0,0] = 1`; w = ``WienerParam``, raised to 2.5e-5 when
    min|H| < 0.01 (a plain inverse would blow up). Returns ``g``."""
    if leapct is None:
        raise ValueError("detectorDeblur_FourierDeconv needs a tomographicModels object")
    w = _real("WienerParam", WienerParam)
    Hinv = _deblur.deconvolution_filter(_response(H), w)
    return leapct.transmission_filter(g, Hinv, isAttenuationData)


def detectorDeblur_RichardsonLucy(leapct, g, H, numIter=10, isAttenuationData=True):
    r"""Undo detector blur of frequency response ``H`` (DC at [0, 0]) by ``numIter``
    Richardson–Lucy iterations on the transmissions t (Poisson-suited, keeps t > 0):

    .. math:: t_{n+1} = t_n\cdot H^T\!\left[\frac{t_0}{H t_n}\right]

    (H is real, so Hᵀ = H). Returns ``g``."""
    if leapct is None:
        raise ValueError("detectorDeblur_RichardsonLucy needs a tomographicModels object")
    H = _response(H)
    n = _count("numIter", numIter)
    with _host_view(g, "g") as t:
        _projections(t)
        if isAttenuationData:
            leapct.expNeg(t)
        _deblur.richardson_lucy(t, H, n, out=t)
        if isAttenuationData:
            leapct.negLog(t)
    return g


# ---------------------------------------------------------------- ring removal
def ringRemoval_fast(leapct, g, delta=0.01, beta=1.0e3, numIter=30, maxChange=0.05,
                     average_in_transmission_space=False):
    r"""Remove ring artifacts (pixel gain errors) from attenuation data, quickly:

    .. math::
        \bar g = \mathrm{mean}_{views}\, g,\quad
        c = \mathrm{clip}\big(\arg\min_x \tfrac12\|x - \bar g\|^2 + \beta\,TV(x) - \bar g,
        \ \pm maxChange\big),\quad g \leftarrow g + c

    (TV with Huber δ = ``delta``, p = 1, 6 neighbours, ``numIter`` steps; the TV result
    is kept ≥ min(ḡ, 0)). With ``average_in_transmission_space`` ḡ = −log mean exp(−g).
    Fast, but may add rings at sharp edges. Returns ``g``."""
    leapct = _model(leapct)
    maxChange = _real("maxChange", maxChange)
    with _host_view(g, "g") as a:
        _projections(a)
        g_mean = _rings.mean_view(a, in_transmission=bool(average_in_transmission_space))
        if average_in_transmission_space:
            # LEAP converts g to transmissions and back in place (a rounding-level change).
            leapct.negLog(leapct.expNeg(a))
        a += _rings.ring_correction_tv(g_mean, delta, beta, numIter, maxChange)[None]
    return g


def ringRemoval_median(leapct, g, threshold=0.0, windowSize=5, numIter=1):
    r"""Remove ring artifacts from attenuation data: ``numIter`` times,

    .. math:: g \leftarrow g - \mathrm{mean}_{views}\big[g - \mathrm{Median2D}(g)\big]

    (thresholded windowSize² median). Adds no new rings. Returns ``g``."""
    threshold = _real("threshold", threshold)
    windowSize = _check_window("windowSize", windowSize, (3, 5, 7))
    n = _count("numIter", numIter)
    with _host_view(g, "g") as a:
        _projections(a)
        _rings.ring_removal_median(a, threshold, windowSize, n, out=a)
    return g


def ringRemoval(leapct, g, delta=0.01, beta=1.0e1, numIter=30, maxChange=0.05):
    r"""Remove ring artifacts from attenuation data by TV denoising whose gradient is
    averaged over the views, so the correction is one detector-gain map shared by all
    projections: ``numIter`` descent steps on :math:`\tfrac12\|x - g\|^2 + \beta\,TV(x)`
    (Huber δ = ``delta``, p = 1, 6 neighbours). ``maxChange`` is accepted and unused, as
    in LEAP. Slower than :func:`ringRemoval_fast`, adds no rings. Returns ``g``."""
    with _host_view(g, "g") as a:
        _projections(a)
        _rings.ring_removal_tv(a, delta, beta, numIter, out=a)
    return g


def transmission_shift(leapct, g, shift, isAttenuationData=True):
    r"""Subtract a constant from the transmissions (a crude scatter correction):
    :math:`t \leftarrow \max\big((t - shift)/(1 - shift),\ 2^{-16}\big)`; ``shift`` < 1.
    Returns ``g``."""
    leapct = _model(leapct)
    shift = _real("shift", shift)
    if shift >= 1.0:
        raise ValueError(f"shift must be < 1 (a transmission offset), got {shift}")
    with _host_view(g, "g") as a:
        _projections(a)
        if isAttenuationData:
            leapct.expNeg(a)
        shift_transmission(a, shift, min_transmission=MIN_TRANSMISSION, out=a)
        if isAttenuationData:
            leapct.negLog(a)
    return g
