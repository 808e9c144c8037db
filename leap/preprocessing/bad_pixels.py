"""Bad detector pixels and zingers.

- :func:`bad_pixel_map`: the pixels to distrust, from flat and dark frames: dead pixels
  (no response), pixels whose gain (flat − dark) or offset (dark) is an outlier against
  their neighbourhood, and pixels far noisier than their neighbours across flat frames.
- :func:`outlier_pixel_map`: LEAP's estimate from the data themselves: the pixels of the
  mean view that a thresholded median filter changes.
- :func:`replace_bad_pixels`: each bad pixel, in every view, replaced by the median of the
  good pixels of its w×w neighbourhood.
- :func:`remove_zingers`: isolated spikes (direct hits of scattered or primary photons on
  the detector) in single views, found against a median over neighbouring views or
  neighbouring pixels, and replaced by it.

Projections are ``(views, rows, cols)`` (any real dtype; results float32, or written into
``out``, which may be the input), NumPy or CuPy. Maps are ``(rows, cols)`` bool arrays.
Blocks of views: maps and replacement treat each view alone. Zinger removal across views
needs ``window_size // 2`` extra views on each side of a block (an overlap, e.g.
``dask.array.map_overlap`` with that depth along axis 0); the results for the extra views
are dropped. :func:`outlier_pixel_map` needs the mean over all views: accumulate it over
the blocks and pass that image.
"""
from __future__ import annotations

import numpy as np

from ._common import array_module, as3d, as_float32, finish, integer, ndimage, real, window
from .filters import low_signal_median

__all__ = ["bad_pixel_map", "outlier_pixel_map", "replace_bad_pixels", "remove_zingers"]

#: MAD to standard deviation for normally distributed values.
_MAD_TO_SIGMA = 1.4826


def _outliers(x, valid, threshold, w, xp, *, high_only=False):
    """Pixels of the 2-D map ``x`` (among ``valid``) that deviate from the median of their
    w×w neighbourhood by more than ``threshold`` robust standard deviations (1.4826 times
    the median absolute deviation of those differences over the detector)."""
    if not bool(xp.any(valid)):
        return xp.zeros(x.shape, dtype=bool)
    fill = xp.median(x[valid])
    x = xp.where(valid, x, fill)              # invalid pixels must not pull their neighbours
    local = ndimage(xp).median_filter(x, size=w, mode="nearest")
    r = x - local
    sigma = _MAD_TO_SIGMA * float(xp.median(xp.abs(r[valid])))
    # Noise-free maps (MAD 0) still flag what stands out beyond rounding.
    sigma = max(sigma, 1e-6 * float(xp.median(xp.abs(local[valid]))), 1e-30)
    dev = r if high_only else xp.abs(r)
    return valid & (dev > threshold * sigma)


def bad_pixel_map(flats, darks=None, *, threshold=6.0, window_size=7):
    """The bad pixels of a detector, from flat frames (beam, no object) and dark frames
    (no beam), as a (rows, cols) bool map (True = bad):

    - dead: gain ``mean(flats) − mean(darks)`` ≤ 0 or not finite (also NaN/inf darks);
    - gain outliers: gain differs from the median of its ``window_size``² neighbourhood
      by more than ``threshold`` robust standard deviations (σ = 1.4826·MAD of those
      differences over the detector) — low-response and over-responding pixels;
    - offset outliers (with darks): the same test on the mean dark (hot pixels);
    - noisy (three or more flat frames): the standard deviation over the flat frames
      above its neighbourhood's median by more than ``threshold`` robust σ.

    The neighbourhood median follows smooth variations of the field (heel effect,
    vignetting), so only pixel-scale outliers are flagged.

    flats : (k, rows, cols) or (rows, cols); darks : None or (k', rows, cols) or
    (rows, cols). ``threshold`` > 0; ``window_size`` odd, ≥ 3.
    """
    xp = array_module(flats, darks)
    F = as3d(as_float32("flats", flats, xp))
    if F.shape[0] == 0:
        raise ValueError("flats holds no frames")
    threshold = real("threshold", threshold)
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0 (robust standard deviations), got {threshold}")
    w = integer("window_size", window_size, minimum=3)
    if w % 2 == 0:
        raise ValueError(f"window_size must be odd, got {w}")
    flat = F.mean(axis=0, dtype=xp.float64)
    dark = xp.zeros_like(flat)
    if darks is not None:
        D = as3d(as_float32("darks", darks, xp))
        if D.shape[1:] != F.shape[1:] or D.shape[0] == 0:
            raise ValueError(f"darks must be (frames, rows, cols) frames of the flats' detector "
                             f"{tuple(F.shape[1:])}, got shape {tuple(D.shape)}")
        dark = D.mean(axis=0, dtype=xp.float64)
    gain = flat - dark
    finite = xp.isfinite(gain)
    bad = ~finite | (gain <= 0)
    bad |= _outliers(gain, ~bad, threshold, w, xp)
    if darks is not None:
        bad |= _outliers(dark, xp.isfinite(dark) & ~bad, threshold, w, xp)
    if F.shape[0] >= 3:
        noise = F.std(axis=0, dtype=xp.float64)
        bad |= _outliers(noise, xp.isfinite(noise) & ~bad, threshold, w, xp, high_only=True)
    return bad


def outlier_pixel_map(g, threshold=0.1, window_size=5):
    """LEAP's bad-pixel estimate: the pixels of the mean view (``g`` (views, rows, cols),
    averaged over views in float32; or a (rows, cols) image, e.g. the mean accumulated
    over blocks) that a thresholded w×w median filter
    (:func:`~leap.preprocessing.filters.low_signal_median`, ``threshold`` relative to
    the median) changes. Returns a (rows, cols) bool map. Best on transmissions."""
    xp = array_module(g)
    g = as_float32("g", g, xp)
    mean = g if g.ndim == 2 else xp.mean(g, axis=0, dtype=xp.float32)
    return mean != low_signal_median(mean, threshold, window_size, 0.0)


def _bad_mask(bad_map, shape, xp):
    bad = xp.asarray(bad_map)
    if tuple(bad.shape) != tuple(shape):
        raise ValueError(f"bad_map must have shape (rows, cols) = {tuple(shape)}, got "
                         f"{tuple(bad.shape)}")
    kind = np.dtype(bad.dtype).kind
    if kind not in "biuf":
        raise TypeError(f"bad_map must be a bool or numeric map, got dtype {bad.dtype}")
    if kind == "f" and not bool(xp.all(xp.isfinite(bad))):
        raise ValueError("bad_map must not hold NaN or inf (True or 1 marks a bad pixel)")
    return bad == 1.0


def replace_bad_pixels(g, bad_map, window_size=3, *, out=None):
    """Replace the pixels flagged in ``bad_map`` by the median of the good pixels in their
    w×w neighbourhood, in every view (w = 3, 5 or 7; indices clamped at the detector
    edges, so an edge pixel can count twice, as in LEAP; an even number of good pixels
    gives the mean of the middle two; NaN neighbours are skipped). Pixels with no good
    neighbour are kept. LEAP's ``badPixelCorrection``.

    g : (views, rows, cols) or (rows, cols).
    bad_map : (rows, cols), True (or 1, LEAP's convention) marks a bad pixel.
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp)
    w = window("window_size", window_size, (3, 5, 7))
    bad = _bad_mask(bad_map, g.shape[-2:], xp)
    res = xp.array(g, copy=True)
    rows, cols = xp.nonzero(bad)
    if rows.size == 0:
        return finish(res, out)
    nr, nc = bad.shape
    d = xp.arange(-(w // 2), w // 2 + 1)
    rr = xp.clip(rows[:, None, None] + d[None, :, None], 0, nr - 1)
    cc = xp.clip(cols[:, None, None] + d[None, None, :], 0, nc - 1)
    rr, cc = (a.reshape(rows.size, w * w) for a in xp.broadcast_arrays(rr, cc))
    good = ~bad[rr, cc]                                     # (numBad, w*w)
    fixable = good.any(axis=1)
    rr, cc, good = rr[fixable], cc[fixable], good[fixable]
    rows, cols = rows[fixable], cols[fixable]
    r3 = as3d(res)
    # Chunk over views to bound the (views, numBad, w*w) gather to ~32 MB.
    step = max(1, (8 << 20) // max(1, rr.size))
    for a in range(0, r3.shape[0], step):
        vals = r3[a:a + step][:, rr, cc]
        vals[:, ~good] = xp.nan
        r3[a:a + step, rows, cols] = xp.nanmedian(vals, axis=2)
    return finish(res, out)


def remove_zingers(g, threshold=0.1, window_size=3, *, axis="views", polarity="both",
                   out=None):
    r"""Replace zingers — spikes in single views — by the local median m:

    a value v is a zinger when :math:`|v - m| > \text{threshold}\cdot|m|` (``polarity``
    "both"; "bright": :math:`v - m > \ldots`, "dark": :math:`m - v > \ldots`), with m the
    median of v's pixel over ``window_size`` neighbouring views (``axis="views"``: an
    object's edges, which move smoothly from view to view, are kept; the window is
    clamped at the block's ends, so a zinger in the first or last view of a scan is not
    found this way) or over the w×w pixels around it in its view (``axis="pixels"``,
    edges replicated).
    ``threshold`` is relative: use positive data (raw counts or transmissions), where
    zingers are bright.

    g : (views, rows, cols), no NaN. ``window_size`` odd ≥ 3. Blocks of views along
    ``axis="views"``: add ``window_size // 2`` views of overlap on each side and drop
    their results.
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp, ndims=(3,))
    threshold = real("threshold", threshold)
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0, got {threshold}")
    w = integer("window_size", window_size, minimum=3)
    if w % 2 == 0:
        raise ValueError(f"window_size must be odd, got {w}")
    if axis not in ("views", "pixels"):
        raise ValueError(f"axis must be 'views' or 'pixels', got {axis!r}")
    if polarity not in ("both", "bright", "dark"):
        raise ValueError(f"polarity must be 'both', 'bright' or 'dark', got {polarity!r}")
    if bool(xp.isnan(g).any()):
        raise ValueError("g holds NaN: replace bad pixels first (replace_bad_pixels)")
    size = (w, 1, 1) if axis == "views" else (1, w, w)
    m = ndimage(xp).median_filter(g, size=size, mode="nearest")
    d = g - m
    lim = xp.float32(threshold) * xp.abs(m)
    if polarity == "both":
        hit = xp.abs(d) > lim
    elif polarity == "bright":
        hit = d > lim
    else:
        hit = -d > lim
    return finish(xp.where(hit, m, g), out)
