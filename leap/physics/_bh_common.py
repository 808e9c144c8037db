"""Helpers shared by :mod:`leap.physics.beam_hardening` and :mod:`leap.physics.dual_energy`:
argument checks with errors that name the argument, the spectral forward model
``−log Σ_E w(E) exp(−Σ_m μ_m(E) L_m)`` evaluated a chunk of rays at a time, the array
module of the data (NumPy or CuPy; dask arrays are mapped block by block) and linear
interpolation on uniform grids with linear extrapolation beyond them.
"""
from __future__ import annotations

import numpy as np

#: Rays per chunk of the spectral forward model (a chunk holds rays × energies doubles).
CHUNK = 1 << 13


# ------------------------------------------------------------------ array modules

def is_dask(x) -> bool:
    """Whether ``x`` is a dask array."""
    return type(x).__module__.split(".")[0] == "dask"


def map_dask(fn, *arrays, n_out=1):
    """Apply the elementwise ``fn`` to dask arrays block by block (``n_out`` results,
    float32). Returns None when no argument is a dask array."""
    if not any(is_dask(a) for a in arrays):
        return None
    import dask.array as da
    args = [a if is_dask(a) or a is None or np.ndim(a) == 0 else da.asarray(a) for a in arrays]
    arrs = [a for a in args if a is not None and np.ndim(a) > 0]
    if n_out == 1:
        return da.map_blocks(fn, *args, dtype=np.float32)
    ref = da.broadcast_arrays(*arrs)[0]
    stacked = da.map_blocks(lambda *b: np.stack(fn(*b)), *args, dtype=np.float32,
                            new_axis=0, chunks=((n_out,),) + ref.chunks)
    return tuple(stacked[i] for i in range(n_out))


def float_data(name, x, xp, *, finite=False, nonneg=False):
    """``x`` as a real float32/float64 array of module ``xp`` (float64 stays float64,
    anything else becomes float32); optional checks for finite and non-negative values
    (NaN passes the non-negative check unless ``finite``)."""
    if x is None:
        raise ValueError(f"{name} is None")
    a = xp.asarray(x)
    if np.dtype(a.dtype).kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {a.dtype}")
    if a.dtype != np.float64:
        a = a.astype(np.float32, copy=False)
    if finite:
        bad = int(xp.count_nonzero(~xp.isfinite(a)))
        if bad:
            raise ValueError(f"{name} holds {bad} non-finite value(s) (NaN or inf)")
    if nonneg and bool(xp.any(a < 0)):
        raise ValueError(f"{name} must be >= 0 (a thickness, length or density), found "
                         f"{int(xp.count_nonzero(a < 0))} negative value(s), "
                         f"min {float(a.min())}")
    return a


def out_array(out, shape, xp):
    """``out`` checked (float32, ``shape``) or a new float32 array."""
    if out is None:
        return xp.empty(shape, dtype=np.float32)
    if tuple(out.shape) != tuple(shape) or out.dtype != np.float32:
        raise ValueError(f"out must be a float32 array of shape {tuple(shape)}, got "
                         f"{out.dtype} {tuple(out.shape)}")
    return out


# ------------------------------------------------------------------ 1-D curves

def positive_number(name, x):
    """A finite number > 0 as a float."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, got {x!r}") from None
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x!r}")
    return v


def check_energies(energies):
    """Energies (E,) keV: float64, finite, > 0, strictly increasing, E >= 2."""
    e = np.asarray(energies, dtype=np.float64)
    if e.ndim != 1 or e.size < 2:
        raise ValueError(f"energies must be a 1-D array of at least 2 energies (keV), got "
                         f"shape {e.shape}")
    if not np.all(np.isfinite(e)) or np.any(e <= 0):
        raise ValueError("energies must be finite and > 0 (keV)")
    if np.any(np.diff(e) <= 0):
        raise ValueError("energies must increase strictly")
    return e


def curve(name, x, n, *, nonneg=True):
    """A per-energy curve (E,) as float64 with E == ``n``, finite (and >= 0)."""
    c = np.asarray(x, dtype=np.float64)
    if c.ndim != 1 or c.size != n:
        raise ValueError(f"{name} must be a 1-D array with one value per energy ({n}), got "
                         f"shape {c.shape}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"{name} holds non-finite values")
    if nonneg and np.any(c < 0):
        raise ValueError(f"{name} must be >= 0 at every energy")
    return c


def spectrum_weights(name, spectrum, n):
    """Normalised weights ``s / Σ s`` (E,) of a spectrum (photons per energy bin, detector
    response folded in), checked: one value per energy, finite, >= 0, not all zero."""
    s = curve(name, spectrum, n)
    total = s.sum()
    if not total > 0:
        raise ValueError(f"{name} is zero at every energy")
    return s / total


def interp_energy(name, energies, values, energy, *, log=True):
    """``values`` (E,) or (K, E) at ``energy`` keV (inside the grid): linear in
    log-log (``log``; for positive curves such as attenuation) or linear."""
    e = positive_number(name, energy)
    if not energies[0] <= e <= energies[-1]:
        raise ValueError(f"{name} = {e} keV lies outside the energy grid [{energies[0]}, "
                         f"{energies[-1]}] keV")
    v = np.asarray(values, dtype=np.float64)
    k = int(np.clip(np.searchsorted(energies, e) - 1, 0, energies.size - 2))
    e0, e1 = energies[k], energies[k + 1]
    v0, v1 = v[..., k], v[..., k + 1]
    if log and np.all(v0 > 0) and np.all(v1 > 0):
        t = np.log(e / e0) / np.log(e1 / e0)
        return np.exp((1 - t) * np.log(v0) + t * np.log(v1))
    t = (e - e0) / (e1 - e0)
    return (1 - t) * v0 + t * v1


def energy_where(energies, mu, value, near):
    """The energy (keV) where the curve ``mu`` (E,) equals ``value`` (log-log
    interpolation between samples), the crossing nearest ``near`` keV; None if none."""
    d = mu - value
    idx = np.flatnonzero((d[:-1] == 0) | (d[:-1] * d[1:] < 0))
    if d[-1] == 0:
        idx = np.append(idx, d.size - 2)
    if idx.size == 0:
        return None
    hits = []
    for k in idx:
        e0, e1, m0, m1 = energies[k], energies[k + 1], mu[k], mu[k + 1]
        if d[k] == 0:
            hits.append(e0)
        elif d[k + 1] == 0:
            hits.append(e1)
        elif min(m0, m1, value) > 0:
            t = np.log(value / m0) / np.log(m1 / m0)
            hits.append(float(np.exp(np.log(e0) + t * np.log(e1 / e0))))
        else:
            hits.append(e0 + (value - m0) * (e1 - e0) / (m1 - m0))
    hits = np.asarray(hits)
    return float(hits[np.argmin(np.abs(hits - near))])


def log_weights(w):
    """log of spectrum weights (E,), −inf where zero."""
    lw = np.full(w.shape, -np.inf)
    lw[w > 0] = np.log(w[w > 0])
    return lw


# ------------------------------------------------------------------ forward model

def log_transmission(a, basis, logw, xp=np):
    """``−log Σ_E w(E) exp(−Σ_m a_m B_m(E))`` and its gradient, for a chunk of rays.

    a : (M, n) coefficients (path lengths); basis : (M, E); logw : (S, E) log weights of
    S spectra. Returns p (S, n) and dp/da (S, M, n), computed stably (log-sum-exp)."""
    z = logw[:, None, :] - (a.T @ basis)[None, :, :]          # (S, n, E)
    zmax = z.max(axis=2, keepdims=True)
    q = xp.exp(z - zmax)
    tot = q.sum(axis=2, keepdims=True)
    p = -(zmax[..., 0] + xp.log(tot[..., 0]))
    grad = xp.einsum("sne,me->smn", q / tot, basis)
    return p, grad


def poly_attenuation(lengths, basis, weights, xp=np):
    """Polychromatic attenuation of path lengths ``lengths`` (M, n) through materials with
    attenuation ``basis`` (M, E) for spectrum weights (E,): (n,) float64, chunked."""
    logw = xp.asarray(log_weights(weights)[None])
    B = xp.asarray(basis)
    n = lengths.shape[1]
    out = xp.empty(n, dtype=np.float64)
    for i in range(0, n, CHUNK):
        out[i:i + CHUNK] = log_transmission(lengths[:, i:i + CHUNK], B, logw, xp)[0][0]
    return out + 0.0                # no −0.0 for zero lengths


# ------------------------------------------------------------------ interpolation

def _cell(x, x0, dx, n, xp):
    """Index of the left sample of the grid cell of x (clipped so that the cell exists,
    which extrapolates linearly beyond the grid) and the fraction in it; NaN stays NaN."""
    t = (x - x0) / dx
    i = xp.clip(xp.floor(xp.nan_to_num(t, nan=0.0, posinf=n, neginf=-1.0)), 0, n - 2)
    return i.astype(np.int64), t - i


def lerp(x, x0, dx, table, xp):
    """Linear interpolation of ``table`` (n,) sampled at x0 + k dx; linear extrapolation
    from the end cells beyond the grid; NaN in, NaN out."""
    i, d = _cell(x, x0, dx, table.shape[0], xp)
    d = d.astype(table.dtype, copy=False)
    return table[i] + d * (table[i + 1] - table[i])


def bilerp(u, v, u0, du, v0, dv, table, xp):
    """Bilinear interpolation of ``table`` (nu, nv) sampled at (u0 + i du, v0 + j dv),
    extrapolated linearly from the edge cells beyond the grid; NaN in, NaN out."""
    i, a = _cell(u, u0, du, table.shape[0], xp)
    j, b = _cell(v, v0, dv, table.shape[1], xp)
    a = a.astype(table.dtype, copy=False)
    b = b.astype(table.dtype, copy=False)
    t00, t01 = table[i, j], table[i, j + 1]
    t10, t11 = table[i + 1, j], table[i + 1, j + 1]
    return (1 - a) * ((1 - b) * t00 + b * t01) + a * ((1 - b) * t10 + b * t11)


def invert_monotone(x, y, y_grid):
    """Samples of the inverse of the increasing function y(x) (samples x, y) at
    ``y_grid``, linear between samples and extrapolated from the end segments."""
    r = np.interp(y_grid, y, x)
    lo, hi = y_grid < y[0], y_grid > y[-1]
    r[lo] = x[0] + (y_grid[lo] - y[0]) * (x[1] - x[0]) / (y[1] - y[0])
    r[hi] = x[-1] + (y_grid[hi] - y[-1]) * (x[-1] - x[-2]) / (y[-1] - y[-2])
    return r
