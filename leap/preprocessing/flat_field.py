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

import numpy as np

#: Default transmission floor before −log (LEAP's makeAttenuationRadiographs uses 2⁻¹⁶).
MIN_TRANSMISSION = 2.0 ** -16


def _xp(x):
    if isinstance(x, np.ndarray) or not hasattr(x, "__cuda_array_interface__"):
        return np
    import cupy
    return cupy


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
    xp = _xp(flats)
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
    xp = _xp(raw)
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
    elif tuple(out.shape) != tuple(raw.shape) or out.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of shape {tuple(raw.shape)}, got "
                         f"{out.dtype} {tuple(out.shape)}")
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
    xp = _xp(t)
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
