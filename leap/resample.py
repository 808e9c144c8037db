"""Down- and up-sampling of 3-D arrays (LEAP's ``down_sample`` / ``up_sample``).

Both are separable, so each axis is a small (N_out, N_in) matrix applied in turn.
Samples are aligned on the array centres: output sample i sits at input position
``(i − (N_out−1)/2)·f + (N_in−1)/2`` (down, factor f) or
``(i − (N_out−1)/2)/f + (N_in−1)/2`` (up). Indices past the ends are clamped (edge
values are repeated).

* Down-sampling averages with LEAP's anti-alias "bump" filter: taps
  ``cos²(π/2·(l − δ)/f)`` for |l − δ| ≤ f, normalised to sum 1 (δ the sub-sample delay),
  the same filter as LEAP's LowPassFilter.
* Up-sampling interpolates linearly.
"""
from __future__ import annotations

import math

import numpy as np


def _factors(factors, op):
    f = np.asarray(factors, dtype=np.float64).ravel()
    if f.size != 3 or not np.all(np.isfinite(f)):
        raise ValueError(f"factors must be 3 finite numbers (one per array axis), got {factors!r}")
    if np.any(f < 1.0):
        raise ValueError(f"{op} factors must be >= 1, got {f.tolist()}")
    return f


def _dims(dims, default):
    if dims is None:
        return tuple(int(n) for n in default)
    d = [int(n) for n in np.asarray(dims).ravel()]
    if len(d) != 3 or min(d) <= 0:
        raise ValueError(f"dims must be 3 positive sizes, got {dims!r}")
    return tuple(d)


def down_matrix(n_in: int, n_out: int, f: float) -> np.ndarray:
    """(n_out, n_in) anti-aliased down-sampling matrix along one axis."""
    M = np.zeros((n_out, n_in))
    L = int(math.floor(f))
    l = np.arange(-L, L + 1, dtype=np.float64)
    for i in range(n_out):
        x = (i - 0.5 * (n_out - 1)) * f + 0.5 * (n_in - 1)
        ii = int(math.floor(0.5 + x))
        delay = x - ii
        h = np.where(np.abs(l - delay) > f, 0.0, np.cos(0.5 * np.pi * (l - delay) / f) ** 2)
        np.add.at(M[i], np.clip(ii + l.astype(np.intp), 0, n_in - 1), h / h.sum())
    return M


def up_matrix(n_in: int, n_out: int, f: float) -> np.ndarray:
    """(n_out, n_in) linear-interpolation up-sampling matrix along one axis."""
    M = np.zeros((n_out, n_in))
    x = (np.arange(n_out) - 0.5 * (n_out - 1)) / f + 0.5 * (n_in - 1)
    lo = np.floor(x).astype(np.intp)
    d = x - lo
    rows = np.arange(n_out)
    np.add.at(M, (rows, np.clip(lo, 0, n_in - 1)), 1.0 - d)
    np.add.at(M, (rows, np.clip(lo + 1, 0, n_in - 1)), d)
    return M


def _apply(I, mats):
    out = np.asarray(I, dtype=np.float64)
    for axis, M in enumerate(mats):
        out = np.moveaxis(np.tensordot(M, out, axes=([1], [axis])), 0, axis)
    return np.ascontiguousarray(out, dtype=np.float32)


def down_sample(I: np.ndarray, factors, dims=None) -> np.ndarray:
    """Anti-aliased down-sampling of a 3-D array by ``factors`` (each ≥ 1).

    Output shape ``dims``, default ``int(N_k / factors_k)`` per axis. Returns a new
    float32 array.
    """
    I = np.asarray(I)
    if I.ndim != 3:
        raise ValueError(f"down_sample needs a 3-D array, got shape {I.shape}")
    f = _factors(factors, "down-sampling")
    out = _dims(dims, [max(1, int(n / fk)) for n, fk in zip(I.shape, f)])
    return _apply(I, [down_matrix(n, m, fk) for n, m, fk in zip(I.shape, out, f)])


def up_sample(I: np.ndarray, factors, dims=None) -> np.ndarray:
    """Linear-interpolation up-sampling of a 3-D array by ``factors`` (each ≥ 1).

    Output shape ``dims``, default ``int(N_k · factors_k)`` per axis.
    """
    I = np.asarray(I)
    if I.ndim != 3:
        raise ValueError(f"up_sample needs a 3-D array, got shape {I.shape}")
    f = _factors(factors, "up-sampling")
    out = _dims(dims, [int(n * fk) for n, fk in zip(I.shape, f)])
    return _apply(I, [up_matrix(n, m, fk) for n, m, fk in zip(I.shape, out, f)])
