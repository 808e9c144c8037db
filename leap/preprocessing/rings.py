"""Ring removal: detector pixels whose gain error is the same in every view put a stripe
(a constant column offset) in each sinogram, and a ring in the reconstruction.

LEAP's three methods, on attenuation data ``g`` (views, rows, cols):

- :func:`ring_correction_tv` (``ringRemoval_fast``): one correction map from the mean
  view (:func:`mean_view`): its TV-denoised version minus itself, clipped;
- :func:`ring_removal_median` (``ringRemoval_median``): subtract the mean over views of
  what a thresholded median filter removes from each view;
- :func:`ring_removal_tv` (``ringRemoval``): TV denoising whose gradient is averaged over
  views, so the correction is one map shared by all views;

and the sorting-based stripe removal of Vo, Atwood & Drakopoulos,
"Superior techniques for eliminating ring artifacts in X-ray micro-tomography",
Optics Express 26(22), 28396–28412 (2018), algorithm 3: :func:`remove_stripes_sorting`.

Blocks: a stripe is found from all views of a detector pixel, so these functions need
every view. :func:`mean_view` can be accumulated over blocks of views (the sum of the
blocks' sums over the number of views), and :func:`ring_correction_tv`'s map then added
to each block. :func:`remove_stripes_sorting` treats each detector row alone: process
blocks of rows (``g[:, r0:r1]``, all views). :func:`ring_removal_median` mixes rows
within its median window: blocks of rows need ``window_size // 2`` rows of overlap on
each side (dropped after); :func:`ring_removal_tv` couples all rows and views.

Any real dtype is read; results are float32 (or written into ``out``, which may be
``g``). NumPy or CuPy.
"""
from __future__ import annotations

import numpy as np

from ._common import array_module, as_float32, finish, integer, ndimage, real, window
from .filters import low_signal_median

__all__ = ["mean_view", "ring_correction_tv", "ring_removal_median", "ring_removal_tv",
           "remove_stripes_sorting", "TV_NEIGHBORS"]

#: Neighbours of LEAP's TV in its ring removal (the 6 face neighbours).
TV_NEIGHBORS = 6


def mean_view(g, *, in_transmission=False):
    """The mean of ``g`` (views, rows, cols) over views, float32 (rows, cols), summed in
    float32 as LEAP; ``in_transmission``: ``−log mean exp(−g)`` (the mean of the
    transmissions, which weights views as the detector saw them)."""
    xp = array_module(g)
    g = as_float32("g", g, xp, ndims=(3,))
    if in_transmission:
        return -xp.log(xp.mean(xp.exp(-g), axis=0, dtype=xp.float32))
    return xp.mean(g, axis=0, dtype=xp.float32)


def ring_correction_tv(mean, delta=0.01, beta=1.0e3, num_iter=30, max_change=0.05):
    r"""The ring correction of LEAP's ``ringRemoval_fast``, a (rows, cols) float32 map
    to add to every view:

    .. math::
        c = \mathrm{clip}\big(\max(\mathrm{TV}(\bar g), \min(\bar g, 0)) - \bar g,
        \ \pm\,\text{max\_change}\big)

    with ḡ = ``mean`` (:func:`mean_view`) and TV(ḡ) ``num_iter`` steps of
    :func:`leap.algorithms.regularization.tv_denoise` towards
    :math:`\arg\min_x \tfrac12\|x - \bar g\|^2 + \beta\,TV(x)` (Huber δ = ``delta``,
    p = 1, 6 neighbours). Fast, but strong edges of the mean view can leave rings."""
    from ..algorithms.regularization import tv_denoise
    xp = array_module(mean)
    g_mean = as_float32("mean", mean, xp, ndims=(2,))
    max_change = real("max_change", max_change)
    g_smooth = g_mean.copy()
    floor = min(float(xp.min(g_mean)), 0.0)
    tv_denoise(g_smooth, delta, beta, num_iter, 1.0, neighbors=TV_NEIGHBORS, out=g_smooth)
    xp.maximum(g_smooth, xp.float32(floor), out=g_smooth)
    return xp.clip(g_smooth - g_mean, -max_change, max_change)


def ring_removal_median(g, threshold=0.0, window_size=5, num_iter=1, *, out=None):
    r"""LEAP's ``ringRemoval_median``: ``num_iter`` times

    .. math:: g \leftarrow g - \mathrm{mean}_{views}\big[g - \mathrm{M}(g)\big]

    with M the thresholded w×w median of each view
    (:func:`~leap.preprocessing.filters.low_signal_median`, w = 3, 5, 7): what the
    median removes from every view alike is a stripe. Adds no new rings.

    g : (views, rows, cols) attenuation data.
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp, ndims=(3,))
    w = window("window_size", window_size, (3, 5, 7))
    n = integer("num_iter", num_iter, minimum=0)
    a = xp.array(g, copy=True) if out is None else finish(g, out)
    for _ in range(n):
        noise = a - low_signal_median(a, threshold, w, 0.0)
        a -= xp.mean(noise, axis=0, dtype=xp.float32)[None]
    return a


def ring_removal_tv(g, delta=0.01, beta=1.0e1, num_iter=30, *, out=None):
    r"""LEAP's ``ringRemoval``: ``num_iter`` steps of
    :func:`leap.algorithms.regularization.tv_denoise` on :math:`\tfrac12\|x - g\|^2 + \beta\,TV(x)`
    (Huber δ = ``delta``, p = 1, 6 neighbours) whose gradient is averaged over the
    views, so the change is one detector map shared by all views. Slower than
    :func:`ring_correction_tv`, adds no rings.

    g : (views, rows, cols) attenuation data.
    """
    from ..algorithms.regularization import tv_denoise
    xp = array_module(g, out)
    g = as_float32("g", g, xp, ndims=(3,))
    if out is not None:
        finish(g, out)
        g = out
    return tv_denoise(g, delta, beta, num_iter, 1.0, neighbors=TV_NEIGHBORS,
                      mean_over_first_dim=True, out=out)


def remove_stripes_sorting(g, window_size=21, *, out=None):
    """Stripe (ring) removal by sorting, Vo et al. 2018 (algorithm 3): in each sinogram
    ``g[:, r, :]`` (views × columns),

    1. sort every column (detector pixel) along the views;
    2. median-filter the sorted sinogram along each row, across ``window_size``
       neighbouring columns (edges reflected);
    3. put the values back in their columns' original view order.

    Sorting turns an object's features into smooth profiles that neighbouring columns
    share, while a pixel with a gain error stands out from its neighbours over the whole
    sorted column, so the median removes it (and full- as well as partial stripes)
    without the blurring of a filter along the views. ``window_size`` (≥ 3, 21–31 in the
    paper) should be wider than the widest stripe.

    g : (views, rows, cols), normally attenuation data (any block of rows, all views).
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp, ndims=(3,))
    w = integer("window_size", window_size, minimum=3)
    kind = "stable" if xp is np else None         # (CuPy's sorts are stable)
    order = xp.argsort(g, axis=0, kind=kind)
    s = xp.take_along_axis(g, order, axis=0)
    s = ndimage(xp).median_filter(s, size=(1, 1, w), mode="reflect")
    back = xp.argsort(order, axis=0, kind=kind)
    return finish(xp.take_along_axis(s, back, axis=0), out)
