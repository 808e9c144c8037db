"""Flat-field (gain and offset) normalisation and −log: raw detector counts to line
integrals.

For raw counts ``I`` of view v, dark frames ``D`` (detector offset, no beam) and flat
frames ``F`` (beam, no object), the transmission is

    t_v = (I_v − D) / (F_v − D) / s_v,

with ``F_v`` the flat of view v (the mean of the flat frames, or, for flats taken at
several points of the scan, interpolated linearly in the view index between them, which
follows a slow drift of the source) and ``s_v`` an optional dose normalisation: the mean
of ``(I_v − D)/(F_v − D)`` over an air region (pixels the object never shadows), which
removes view-to-view changes of the tube output. The attenuation (line integral) is
``−log t``, with transmissions below ``min_transmission`` (photon starvation, dead
pixels, dark noise) raised to it first, so that the result stays finite.

Every function works on a block of views, so that a scan can be normalised a block at a
time, out of core: ``views`` gives the block's view indices when flats are interpolated.
Arrays are NumPy or CuPy (the array module of ``raw``); results are float32.
"""
from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ._common import array_module, as_float32, check_out, finish, real

#: Default transmission floor before −log (LEAP's makeAttenuationRadiographs uses 2⁻¹⁶).
MIN_TRANSMISSION = 2.0 ** -16


def _frames(name, x, shape, xp):
    """A scan given as None, a number, a (rows, cols) image or a (k, rows, cols) stack of
    frames, as float32 ``(k, rows, cols)`` or a 0-d scalar; checks the detector shape."""
    if x is None:
        return None
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        if not np.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x}")
        return xp.asarray(np.float32(x))
    a = xp.asarray(x, dtype=xp.float32)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3 or a.shape[1:] != tuple(shape):
        raise ValueError(f"{name} must be a number, a (rows, cols) = {tuple(shape)} image or a "
                         f"(frames, rows, cols) stack of them, got shape {tuple(a.shape)}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} holds no frames")
    return a


def flat_at_views(flats, flat_positions=None, views=None):
    """The flat field of each view: ``flats`` (k, rows, cols) averaged (no
    ``flat_positions``), or interpolated linearly in the view index between flats taken at
    view positions ``flat_positions`` (k,) (frames at equal positions are averaged first;
    before the first and after the last position the nearest is used). ``views`` (n,): the
    view indices wanted. Returns (1, rows, cols) or (n, rows, cols) float32."""
    xp = array_module(flats)
    if flat_positions is None:
        return flats.mean(axis=0, keepdims=True, dtype=xp.float32)
    pos = np.asarray(flat_positions, dtype=np.float64).ravel()
    if pos.size != flats.shape[0]:
        raise ValueError(f"flat_positions must give one view position per flat frame "
                         f"({flats.shape[0]}), got {pos.size}")
    if not np.all(np.isfinite(pos)):
        raise ValueError("flat_positions must be finite view indices")
    if views is None:
        raise ValueError("interpolated flats need the block's view indices (views=)")
    uniq = np.unique(pos)
    sets = xp.stack([flats[xp.asarray(np.flatnonzero(pos == p))].mean(axis=0) for p in uniq])
    if uniq.size == 1:
        return sets[:1]
    v = np.clip(np.asarray(views, dtype=np.float64).ravel(), uniq[0], uniq[-1])
    hi = np.clip(np.searchsorted(uniq, v, side="right"), 1, uniq.size - 1)
    lo = hi - 1
    w = ((v - uniq[lo]) / (uniq[hi] - uniq[lo])).astype(np.float32)[:, None, None]
    w = xp.asarray(w)
    return (1 - w) * sets[xp.asarray(lo)] + w * sets[xp.asarray(hi)]


def _region(air_region, shape):
    """``air_region`` = (row slice, col slice), or [first_row, last_row, first_col,
    last_col] inclusive (LEAP's ROI), as a tuple of slices with at least one pixel."""
    if isinstance(air_region, tuple) and len(air_region) == 2 and \
            all(isinstance(s, slice) for s in air_region):
        rows, cols = air_region
    else:
        r = np.asarray(air_region).ravel()
        if r.size != 4 or not np.all(np.equal(np.mod(r, 1), 0)):
            raise ValueError("air_region must be (row slice, col slice) or [first_row, "
                             f"last_row, first_col, last_col] (inclusive), got {air_region!r}")
        r = r.astype(int)
        rows, cols = slice(r[0], r[1] + 1), slice(r[2], r[3] + 1)
    n_r = len(range(*rows.indices(shape[0])))
    n_c = len(range(*cols.indices(shape[1])))
    if n_r == 0 or n_c == 0:
        raise ValueError(f"air_region {air_region!r} holds no pixel of the {tuple(shape)} "
                         "detector")
    return rows, cols


def flat_field(raw, flats=None, darks=None, *, flat_positions=None, views=None,
               air_region=None, out=None):
    """Transmissions ``(raw − dark) / (flat − dark)`` of a block of views, float32.

    Parameters
    ----------
    raw : (n, rows, cols) counts (any real dtype).
    flats, darks : None, a number, a (rows, cols) image or a (k, rows, cols) stack of
        frames. Darks are averaged; flats are averaged or, with ``flat_positions``,
        interpolated per view (:func:`flat_at_views`). No darks: the data are taken as
        offset-free; no flats: ``raw − dark`` is taken as the transmission already.
    flat_positions : (k,) view indices at which the flat frames were taken.
    views : (n,) view indices of ``raw`` in the scan (for interpolated flats).
    air_region : (row slice, col slice) or LEAP's inclusive [r0, r1, c0, c1]: divide each
        view by its mean over this region (dose normalisation).
    out : (n, rows, cols) float32 array to write into (may be ``raw`` itself if float32).

    Flat pixels not above the dark level (dead pixels) give transmission 0, not inf or
    NaN; the −log step then raises them to its floor.
    """
    xp = array_module(raw)
    if getattr(raw, "ndim", 0) != 3:
        raise ValueError(f"raw must be a (views, rows, cols) block, got shape "
                         f"{tuple(getattr(raw, 'shape', ()))}")
    shape = tuple(raw.shape[1:])
    dark = _frames("darks", darks, shape, xp)
    flat = _frames("flats", flats, shape, xp)
    if dark is not None and dark.ndim == 3:
        dark = dark.mean(axis=0, keepdims=True, dtype=xp.float32)
    if flat is not None and flat.ndim == 3:
        flat = flat_at_views(flat, flat_positions, views)
        if flat.shape[0] not in (1, raw.shape[0]):
            raise ValueError(f"views must give one index per view of raw ({raw.shape[0]})")
    if out is None:
        out = xp.empty(raw.shape, dtype=xp.float32)
    check_out(out, raw.shape)
    out[...] = raw
    if dark is not None:
        out -= dark
    if flat is not None:
        gain = flat - dark if dark is not None else flat.astype(xp.float32, copy=True)
        good = gain > 0
        out *= xp.where(good, 1.0 / xp.where(good, gain, 1), 0).astype(xp.float32)
    if air_region is not None:
        rows, cols = _region(air_region, shape)
        level = out[:, rows, cols].mean(axis=(1, 2), dtype=xp.float64)
        if bool(xp.any(level <= 0)):
            bad = int(xp.argmax(level <= 0))
            raise ValueError(f"air_region {air_region!r} has mean transmission {float(level[bad])}"
                             f" <= 0 in view {bad} of the block: it must be a region the "
                             "object never shadows")
        out /= level.astype(xp.float32)[:, None, None]
    return out


def neg_log(t, *, min_transmission: float = MIN_TRANSMISSION, out=None):
    """``−log(max(t, min_transmission))``, float32 (NaN stays NaN): line integrals from
    transmissions, with a floor for photon-starved and dead pixels."""
    xp = array_module(t)
    if not 0 < min_transmission < 1:
        raise ValueError(f"min_transmission must lie in (0, 1), got {min_transmission}")
    if out is None:
        out = xp.empty(t.shape, dtype=xp.float32)
    xp.maximum(t, xp.float32(min_transmission), out=out)
    xp.log(out, out=out)
    xp.negative(out, out=out)
    return out


def attenuation(raw, flats=None, darks=None, *, flat_positions=None, views=None,
                air_region=None, min_transmission: float = MIN_TRANSMISSION, out=None):
    """Line integrals of raw counts: :func:`flat_field` then :func:`neg_log` (same
    arguments), float32 (n, rows, cols)."""
    t = flat_field(raw, flats, darks, flat_positions=flat_positions, views=views,
                   air_region=air_region, out=out)
    return neg_log(t, min_transmission=min_transmission, out=t)


# ----------------------------------------------------- LEAP's flat-field pieces
# The functions below are the steps of LEAP's makeAttenuationRadiographs and
# gain_correction, with LEAP's arithmetic (plain division, float32 means), so that
# leap.compat.preprocessing gives LEAP's numbers; flat_field() above is the guarded
# general version.

def _number(x):
    """``x`` as a Python float when it is a real number (or a 0-d array), else None."""
    if isinstance(x, numbers.Real) and not isinstance(x, bool):
        return float(x)
    if getattr(x, "ndim", None) == 0 and np.dtype(x.dtype).kind in "biuf":
        return float(x)
    return None


def _image(name, x, shape, xp):
    """A number (as a Python float, LEAP's scalar arithmetic) or a (rows, cols) image
    (float32; a (k, rows, cols) stack is averaged)."""
    v = _number(x)
    if v is not None:
        if not np.isfinite(v):
            raise ValueError(f"{name} must be finite, got {v}")
        return v
    a = as_float32(name, x, xp)
    if a.ndim == 3:
        if a.shape[0] == 0:
            raise ValueError(f"{name} holds no frames")
        a = a.mean(axis=0, dtype=xp.float32)
    if tuple(a.shape) != tuple(shape):
        raise ValueError(f"{name} must be a number or a (rows, cols) = {tuple(shape)} image "
                         f"(or a stack of them), got shape {tuple(a.shape)}")
    return a


def fill_nonpositive(x, *, name="x", out=None):
    """``x`` with its values ≤ 0 (dead pixels of a flat, pixels at the dark level)
    replaced by its smallest positive value, float32; a ValueError when none is
    positive. LEAP's treatment of air scans and calibration flats."""
    xp = array_module(x, out)
    x = as_float32(name, x, xp, ndims=(1, 2, 3))
    pos = x > 0
    if not bool(pos.any()):
        raise ValueError(f"{name} has no positive pixel")
    res = xp.array(x, copy=True) if out is None else finish(x, out)
    res[~pos] = x[pos].min()
    return res


def flat_dark_ratio(raw, flat=None, dark=None, *, out=None):
    r"""LEAP's flat-field ratio :math:`(raw - dark) / (flat - dark)`, float32, by plain
    division (no guard: flat = dark gives ±inf or NaN; see :func:`flat_field` for the
    guarded version). No flat: only the dark is subtracted; no dark: ``raw / flat``.

    raw : (views, rows, cols) or one (rows, cols) frame; flat, dark : None, a number or a
    (rows, cols) image (a stack of frames is averaged). ``out`` may be ``raw``.
    """
    xp = array_module(raw, flat, dark, out)
    raw = as_float32("raw", raw, xp)
    shape = raw.shape[-2:]
    flat = None if flat is None else _image("flat", flat, shape, xp)
    dark = None if dark is None else _image("dark", dark, shape, xp)
    a = xp.array(raw, copy=True) if out is None else finish(raw, out)
    if dark is not None:
        a -= dark
        if flat is not None:
            a /= flat - dark
    elif flat is not None:
        a /= flat
    return a


def normalize_dose(t, air_region, *, reference=1.0, out=None):
    r"""Divide each view of ``t`` (views, rows, cols) by its mean over ``air_region``
    relative to a reference level (LEAP's flux normalisation, ``ROI``):

    .. math:: t_v \leftarrow t_v \,/\, \big(\mathrm{mean}_{region}(t_v) / r\big)

    ``air_region``: (row slice, col slice) or LEAP's inclusive [r0, r1, c0, c1].
    ``reference`` r: a number > 0, or a (rows, cols) image (the air scan) whose region
    mean is r. Means are taken in float32, as LEAP; a view whose region mean is ≤ 0 or
    NaN gives non-finite values (use :func:`flat_field`'s ``air_region`` for a checked
    version). Float32; ``out`` may be ``t``.
    """
    xp = array_module(t, out)
    t = as_float32("t", t, xp, ndims=(3,))
    rows, cols = _region(air_region, t.shape[1:])
    ref = _number(reference)
    if ref is None:
        img = as_float32("reference", reference, xp, ndims=(2,))
        if tuple(img.shape) != tuple(t.shape[1:]):
            raise ValueError(f"reference must be a number or a (rows, cols) = "
                             f"{tuple(t.shape[1:])} image, got shape {tuple(img.shape)}")
        ref = float(xp.mean(img[rows, cols]))
    if not ref > 0 or not np.isfinite(ref):
        raise ValueError(f"the reference level must be finite and > 0, got {ref}")
    a = xp.array(t, copy=True) if out is None else finish(t, out)
    level = xp.mean(a[:, rows, cols], axis=(1, 2)) / ref
    a /= level[:, None, None].astype(xp.float32)
    return a


def replace_nonpositive(t, value=MIN_TRANSMISSION, *, out=None):
    """``t`` with its values ≤ 0 set to ``value`` (LEAP's floor before −log: positive
    transmissions below it are kept, unlike :func:`neg_log`'s), float32."""
    xp = array_module(t, out)
    t = as_float32("t", t, xp, ndims=(1, 2, 3))
    value = real("value", value)
    if value <= 0:
        raise ValueError(f"value must be > 0, got {value}")
    a = xp.array(t, copy=True) if out is None else finish(t, out)
    a[a <= 0] = value
    return a


def shift_transmission(t, shift, *, min_transmission=MIN_TRANSMISSION, out=None):
    r"""Subtract a constant from transmissions (a crude scatter correction):
    :math:`t \leftarrow \max\big((t - shift)/(1 - shift),\ t_{min}\big)`, ``shift`` < 1.
    Float32; ``out`` may be ``t``."""
    xp = array_module(t, out)
    t = as_float32("t", t, xp, ndims=(1, 2, 3))
    shift = real("shift", shift)
    if shift >= 1.0:
        raise ValueError(f"shift must be < 1 (a transmission offset), got {shift}")
    min_transmission = real("min_transmission", min_transmission)
    a = xp.array(t, copy=True) if out is None else finish(t, out)
    a -= xp.float32(shift)
    a *= xp.float32(1.0 / (1.0 - shift))
    a[a < min_transmission] = min_transmission
    return a


class TwoPointGain(NamedTuple):
    """A two-point piecewise-linear pixel gain (from :func:`two_point_gain`): (rows, cols)
    float32 maps ``knee`` (M, the mid-level flat's dark-subtracted counts), ``gain_low``
    (below the knee), ``gain_high`` (above it) and the float32 number ``level`` (median
    of M, where the two pieces meet)."""

    knee: object
    gain_low: object
    gain_high: object
    level: object


def two_point_gain(dark_level, mid_level, high_level, *, threshold=0.1, window_size=5):
    r"""The two-point pixel gain calibration of LEAP's ``gain_correction``, from three
    flat fields taken at the dark level c0, a mid level c1 and a high level c2
    ((rows, cols) each):

    M = c1 − c0 and L = c2 − c0, each outlier-filtered (thresholded
    ``window_size``² median, :func:`~leap.preprocessing.filters.low_signal_median`) and
    its values ≤ 0 raised to its smallest positive one; with the medians m_M, m_L over
    the detector, ``gain_low`` = m_M / M and ``gain_high`` = (m_L − m_M)/(L − M), so that
    every pixel maps M to m_M and L to m_L (:func:`apply_two_point_gain`).
    """
    xp = array_module(dark_level, mid_level, high_level)
    c0 = as_float32("dark_level", dark_level, xp, ndims=(2,))
    c1 = as_float32("mid_level", mid_level, xp, ndims=(2,))
    c2 = as_float32("high_level", high_level, xp, ndims=(2,))
    if c1.shape != c0.shape or c2.shape != c0.shape:
        raise ValueError(f"the three calibration flats must have one (rows, cols) shape, got "
                         f"{tuple(c0.shape)}, {tuple(c1.shape)}, {tuple(c2.shape)}")
    from .filters import low_signal_median
    maps = []
    for name, c in (("mid_level - dark_level", c1 - c0), ("high_level - dark_level", c2 - c0)):
        c = low_signal_median(c, threshold, window_size, 0.0)
        if not bool((c > 0).any()):
            raise ValueError(f"calibration flats: {name} has no pixel above the dark level")
        maps.append(fill_nonpositive(c, name=name))
    M, L = maps
    medM = xp.float32(float(xp.median(M)))
    medL = xp.float32(float(xp.median(L)))
    return TwoPointGain(M, medM / M, (medL - medM) / (L - M), medM)


def apply_two_point_gain(counts, gain, *, knee_is_low=False, out=None):
    r"""Apply a :class:`TwoPointGain` to dark-subtracted counts x (views, rows, cols) or
    one (rows, cols) frame:

    .. math:: x \leftarrow \begin{cases} g_{low}\,x & x < M \\
              g_{high}\,(x - M) + m_M & \text{else} \end{cases}

    (``knee_is_low``: x = M takes the first branch, as LEAP does for its air scan; both
    give m_M up to rounding). Float32; ``out`` may be ``counts``.
    """
    if not isinstance(gain, TwoPointGain):
        raise TypeError(f"gain must be a TwoPointGain (from two_point_gain), got "
                        f"{type(gain).__name__}")
    xp = array_module(counts, out, gain.knee)
    x = as_float32("counts", counts, xp)
    M, g_low, g_high, level = gain
    if tuple(M.shape) != tuple(x.shape[-2:]):
        raise ValueError(f"the gain maps are {tuple(M.shape)}, the counts' detector is "
                         f"{tuple(x.shape[-2:])}")
    low = x <= M if knee_is_low else x < M
    return finish(xp.where(low, g_low * x, g_high * (x - M) + level).astype(xp.float32), out)
