"""LEAP's transfer-function look-ups (``applyTransferFunction``,
``applyDualTransferFunction``) on NumPy/CuPy/dask arrays, for tables sampled uniformly
at ``first_sample + k·sample_rate`` (what XrayPhysics' ``set*lookupTable`` functions and
:meth:`leap.physics.beam_hardening.BeamHardeningTable.leap_lut` return).

Unlike LEAP, which modifies its input in place, these return new arrays (or fill
``out``); the sample position is ``(x − first_sample) / sample_rate`` (LEAP computes
``x / sample_rate − first_sample``, the same for the usual ``first_sample = 0``).
"""
from __future__ import annotations

import numpy as np

from ._bh_common import array_module, float_data, map_dask, positive_number


def _lut(name, lut, ndim):
    t = np.asarray(lut, dtype=np.float64)
    if t.ndim not in ndim or t.shape[-1] < 2 or not np.all(np.isfinite(t)):
        raise ValueError(f"{name} must be a finite {' or '.join(f'{d}-D' for d in ndim)} "
                         f"table of at least 2 samples, got shape {t.shape}")
    return t


def apply_transfer_function(x, lut, sample_rate, first_sample=0.0, *, out=None):
    """``x ↦ LUT(x)`` elementwise (LEAP's ``applyTransferFunction``): linear
    interpolation of ``lut`` (N,); at or below ``first_sample`` the result is
    ``first_sample`` (as in LEAP), beyond the last sample the table is extended linearly
    with its last slope. Float32 (float64 for float64 input); NaN stays NaN."""
    t = _lut("lut", lut, (1,))
    T = positive_number("sample_rate", sample_rate)
    x0 = float(first_sample)
    res = map_dask(lambda b: apply_transfer_function(b, t, T, x0), x)
    if res is not None:
        return res
    xp = array_module(x, out)
    a = float_data("x", x, xp)
    tab = xp.asarray(t, dtype=a.dtype)
    n = t.size
    s = (a - a.dtype.type(x0)) / a.dtype.type(T)
    i = xp.clip(xp.floor(xp.nan_to_num(s, nan=0.0, posinf=n, neginf=0.0)), 0, n - 2)
    d = s - i
    i = i.astype(np.int64)
    r = tab[i] + d * (tab[i + 1] - tab[i])
    r = xp.where(s <= 0, a.dtype.type(x0), r)
    if out is None:
        return r
    out[...] = r
    return out


def apply_dual_transfer_function(x, y, lut, sample_rate, first_sample=0.0):
    """``(x, y) ↦ (LUT₀(x, y), LUT₁(x, y))`` (LEAP's ``applyDualTransferFunction``):
    bilinear interpolation of ``lut`` (2, N, N) (or (N, N), used for both outputs),
    first index ↔ ``x``, second ↔ ``y``, both sampled at ``first_sample + k·sample_rate``
    and clamped to the table's range (as in LEAP). Returns two float32 arrays (float64
    for float64 input)."""
    t = _lut("lut", lut, (2, 3))
    if t.ndim == 2:
        t = np.stack([t, t])
    if t.shape[0] != 2 or t.shape[1] != t.shape[2]:
        raise ValueError(f"lut must be (N, N) or (2, N, N), got shape {t.shape}")
    T = positive_number("sample_rate", sample_rate)
    x0 = float(first_sample)
    res = map_dask(lambda a, b: apply_dual_transfer_function(a, b, t, T, x0), x, y, n_out=2)
    if res is not None:
        return res
    xp = array_module(x, y)
    a = float_data("x", x, xp)
    b = float_data("y", y, xp)
    a, b = xp.broadcast_arrays(a, b)
    dt = np.result_type(a.dtype, b.dtype)
    n = t.shape[1]

    def cell(v):
        s = xp.clip((v - x0) / T, 0, n - 1)
        i = xp.clip(xp.floor(xp.nan_to_num(s, nan=0.0)), 0, n - 2)
        return i.astype(np.int64), (s - i).astype(dt)

    i, u = cell(a)
    j, v = cell(b)
    outs = []
    for k in range(2):
        tab = xp.asarray(t[k], dtype=dt)
        outs.append((1 - u) * ((1 - v) * tab[i, j] + v * tab[i, j + 1])
                    + u * ((1 - v) * tab[i + 1, j] + v * tab[i + 1, j + 1]))
    return outs[0], outs[1]
