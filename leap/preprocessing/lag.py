r"""Detector lag (afterglow, image retention): linear time-invariant correction.

A flat-panel or scintillator detector releases part of the charge of each exposure in
later frames. As a linear time-invariant system along the view (frame) axis, frame k
reads

.. math:: y_k = \sum_{j \le k} h(k - j)\, x_j, \qquad
          h(k) = \sum_{n=1}^{N} b_n\, e^{-a_n k}\quad (k \ge 0),

with x the lag-free signal, amplitudes :math:`b_n` and rates :math:`a_n` > 0 per frame
(a rate of ``inf`` gives a term :math:`b_n\,\delta(k)`, the prompt part of the
response), fitted to the detector's falling-edge step response. Writing
:math:`S_{n,k} = \sum_{j<k} e^{-a_n (k-1-j)} x_j`, the model is inverted exactly by the
recursion of Hsieh et al. and Starman et al.:

.. math:: x_k = \frac{y_k - \sum_n b_n e^{-a_n} S_{n,k}}{\sum_n b_n}, \qquad
          S_{n,k+1} = x_k + e^{-a_n} S_{n,k}, \quad S_{n,0} = 0.

References: J. Hsieh, O. E. Gurmen, K. F. King, "Recursive correction algorithm for
detector decay characteristics in CT", Proc. SPIE 3977, Medical Imaging 2000: Physics of
Medical Imaging, 298–305 (2000); J. Starman, J. Star-Lack, G. Virshup, E. Shapiro,
R. Fahrig, "Investigation into the optimal linear time-invariant lag correction for radar
artifact removal", Med. Phys. 38(5), 2398–2411 (2011).

Blocks of views: the recursion carries one state :math:`S` of shape
(N, rows, cols) from view to view. Each function returns it with the result; pass it as
``state`` with the next block (in view order), and the blocks give the views of the
whole scan. ``state=None`` starts a scan (no exposure before its first view). Views
must be in acquisition order (not sorted by angle, if the two differ). Any real dtype is
read; results are float32, the state float64. NumPy or CuPy.
"""
from __future__ import annotations

import numpy as np

from ._common import array_module, as_float32, check_out, integer

__all__ = ["lag_impulse_response", "simulate_lag", "correct_lag"]


def _model(amplitudes, rates):
    """``b``, ``exp(−a)`` as float64 NumPy vectors (checked) and ``Σ b``."""
    b = np.asarray(amplitudes, dtype=np.float64).ravel()
    a = np.asarray(rates, dtype=np.float64).ravel()
    if b.size == 0 or b.size != a.size:
        raise ValueError(f"amplitudes and rates must be two vectors of one length >= 1, got "
                         f"{b.size} and {a.size}")
    if not np.all(np.isfinite(b)):
        raise ValueError(f"amplitudes must be finite, got {b.tolist()}")
    if np.any(np.isnan(a)) or not np.all(a > 0):
        raise ValueError(f"rates must be > 0 per frame (inf: a prompt term), got {a.tolist()}")
    total = float(b.sum())
    if not total > 0:
        raise ValueError(f"the amplitudes must sum to > 0 (the response of the frame itself), "
                         f"got {total}")
    return b, np.exp(-a), total


def lag_impulse_response(amplitudes, rates, num_frames):
    r"""``h(k)`` for k = 0 … ``num_frames`` − 1 (float64 NumPy): the signal read in frame
    k after a unit exposure in frame 0 (:math:`h(0) = \sum_n b_n`)."""
    b, d, _ = _model(amplitudes, rates)
    k = np.arange(integer("num_frames", num_frames, minimum=1), dtype=np.float64)
    powers = np.where(k[None] == 0, 1.0, d[:, None] ** k[None])
    return (b[:, None] * powers).sum(axis=0)


def _state(state, n, shape, xp):
    if state is None:
        return xp.zeros((n,) + tuple(shape), dtype=xp.float64)
    if tuple(getattr(state, "shape", ())) != (n,) + tuple(shape):
        raise ValueError(f"state must be the (terms, rows, cols) = {(n,) + tuple(shape)} "
                         f"array returned for the previous block, got shape "
                         f"{tuple(getattr(state, 'shape', ()))}")
    return xp.array(state, dtype=xp.float64, copy=True)


def _run(data, amplitudes, rates, state, out, forward):
    xp = array_module(data, out)
    data = as_float32("data", data, xp, ndims=(3,))
    b, d, total = _model(amplitudes, rates)
    S = _state(state, b.size, data.shape[1:], xp)
    if out is None:
        out = xp.empty(data.shape, dtype=xp.float32)
    check_out(out, data.shape)
    bd = xp.asarray(b * d)[:, None, None]           # b_n e^{-a_n}
    dd = xp.asarray(d)[:, None, None]
    for k in range(data.shape[0]):
        v = data[k].astype(xp.float64)
        tail = (bd * S).sum(axis=0)                 # lag of the earlier frames
        if forward:
            x, res = v, total * v + tail
        else:
            x = res = (v - tail) / total
        S *= dd
        S += x[None]
        out[k] = res
    return out, S


def simulate_lag(x, amplitudes, rates, *, state=None, out=None):
    """Frames ``y = h * x`` read by a lagging detector from lag-free frames ``x`` (views,
    rows, cols), convolved along views with :func:`lag_impulse_response`. Returns
    ``(y, state)``; ``state`` continues the scan in the next block (module docstring)."""
    return _run(x, amplitudes, rates, state, out, True)


def correct_lag(y, amplitudes, rates, *, state=None, out=None):
    """Lag-free frames from measured frames ``y`` (views, rows, cols) by the recursive
    deconvolution above (exact inverse of :func:`simulate_lag`). Returns
    ``(x, state)``; pass ``state`` with the next block. ``out`` may be ``y``
    (float32)."""
    return _run(y, amplitudes, rates, state, out, False)
