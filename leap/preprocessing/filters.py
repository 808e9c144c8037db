"""Local filters of projections (and volumes): LEAP's thresholded low-signal median, mean
and variance over a box, the discrete Laplacian, filtering of transmissions with a 2-D
frequency response, transfer (look-up) functions and the azimuthal blur of a volume.

Arrays are ``(n0, n1, n2)`` — for projections ``(views, rows, cols)`` — or ``(n1, n2)``,
one slice; any real dtype is read, results are float32: a new array, or written into
``out`` (a float32 array of the result's shape, which may be the input). NumPy or CuPy
(the module of the input; :func:`azimuthal_blur` is NumPy only).

Blocks of views: the 2-D filters (:func:`low_signal_median` with ``num_dims=2``,
:func:`laplacian`, :func:`transmission_filter`) and the transfer functions treat each
view alone, so any block of views gives the rows of the whole. The 3-D windows
(``num_dims=3`` medians: 1 view either side; :func:`mean_filter` and
:func:`variance_filter`: ``window_radius`` views either side) need that many extra views
on each side of a block (an overlap), whose results are then dropped.
"""
from __future__ import annotations

import math

import numpy as np

from ._common import (array_module, as3d, as_float32, fft_module, finish, integer, ndimage,
                      numpy_only, real, window)

__all__ = ["low_signal_median", "mean_filter", "variance_filter", "laplacian",
           "transmission_filter", "transfer_function", "dual_transfer_function",
           "azimuthal_blur", "MIN_TRANSMISSION_FILTER"]

#: Smallest transmission LEAP's 2-D transmission filter keeps (before −log).
MIN_TRANSMISSION_FILTER = 2.0 ** -24


# -------------------------------------------------------------------- medians
def low_signal_median(f, threshold=0.0, window_size=3, signal_threshold=0.0, *, num_dims=2,
                      out=None):
    r"""LEAP's thresholded median filter, restricted to low values.

    A value v with window median m is replaced by m when
    :math:`|v - m| \ge \text{threshold}\,|m|` and (if ``signal_threshold`` > 0)
    :math:`v \le \text{signal\_threshold}`. Windows: w×w within each slice
    (``num_dims=2``, w = 3, 5, 7) or 3×w×w (``num_dims=3``, w = 3, 5); edges replicated.
    ``signal_threshold`` = 0 gives LEAP's ``MedianFilter(2D)``; on transmissions it removes
    zingers and, with ``signal_threshold`` > 0, photon-starved pixels only.

    f : (n0, n1, n2) or (n1, n2).
    """
    xp = array_module(f, out)
    f = as_float32("f", f, xp)
    threshold = real("threshold", threshold)
    signal_threshold = real("signal_threshold", signal_threshold)
    if isinstance(num_dims, bool) or num_dims not in (2, 3):
        raise ValueError(f"num_dims must be 2 (w×w windows) or 3 (3×w×w), got {num_dims!r}")
    w = window("window_size", window_size, (3, 5, 7) if num_dims == 2 else (3, 5))
    f3 = as3d(f)
    m = ndimage(xp).median_filter(f3, size=(1 if num_dims == 2 else 3, w, w), mode="nearest")
    replace = xp.abs(f3 - m) >= xp.float32(threshold) * xp.abs(m)
    if signal_threshold > 0:
        replace &= f3 <= xp.float32(signal_threshold)
    return finish(xp.where(replace, m, f3).reshape(f.shape), out)


# --------------------------------------------------------------- moment filters
def _box_mean(x, radius, xp):
    """Mean over the (2r+1)³ window clipped to the array (LEAP divides by the number of
    samples inside, it does not pad)."""
    nd = ndimage(xp)
    size = 2 * radius + 1
    num = nd.uniform_filter(x, size=size, mode="constant", cval=0.0)
    den = nd.uniform_filter(xp.ones_like(x), size=size, mode="constant", cval=0.0)
    return num / den


def mean_filter(x, window_radius=1, *, out=None):
    """Mean over the (2r+1)³ window around each value, clipped at the array edges (the
    mean of the samples inside), r = ``window_radius`` ≥ 1; a 2-D array is one slice.

    x : (n0, n1, n2) or (n1, n2).
    """
    xp = array_module(x, out)
    x = as_float32("x", x, xp)
    r = integer("window_radius", window_radius, minimum=1)
    m = _box_mean(as3d(x).astype(xp.float64), r, xp)
    return finish(m.reshape(x.shape).astype(xp.float32), out)


def variance_filter(x, window_radius=1, *, out=None):
    """Variance ``E[x²] − E[x]²`` over the (2r+1)³ window clipped at the array edges (as
    :func:`mean_filter`), computed in float64 and kept ≥ 0."""
    xp = array_module(x, out)
    x = as_float32("x", x, xp)
    r = integer("window_radius", window_radius, minimum=1)
    x64 = as3d(x).astype(xp.float64)
    m = _box_mean(x64, r, xp)
    v = _box_mean(x64 * x64, r, xp) - m * m
    return finish(xp.maximum(v, 0.0).reshape(x.shape).astype(xp.float32), out)


def laplacian(g, num_dims=2, smooth=False, *, out=None):
    r"""Discrete Laplacian of each projection, edges replicated.

    ``smooth=False``: :math:`g_{k+1} + g_{k-1} - 2g_k` along columns (and rows when
    ``num_dims`` = 2). ``smooth=True``: the wider stencil
    :math:`\tfrac14(g_{k+2} + g_{k-2}) - \tfrac12 g_k` per axis, a second difference
    over two pixels, less sensitive to noise. Unit pixel spacing, as LEAP.

    g : (views, rows, cols) or (rows, cols).
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp)
    if isinstance(num_dims, bool) or num_dims not in (1, 2):
        raise ValueError(f"num_dims must be 1 (columns only) or 2 (rows and columns), got "
                         f"{num_dims!r}")
    g3 = as3d(g)
    s = 2 if smooth else 1
    a, b = (0.25, 0.5) if smooth else (1.0, 2.0)
    res = xp.zeros(g3.shape, dtype=xp.float32)
    for axis in ((2, 1) if num_dims == 2 else (2,)):
        pad = [(0, 0)] * 3
        pad[axis] = (s, s)
        p = xp.pad(g3, pad, mode="edge")
        n = g3.shape[axis]
        lo = xp.take(p, xp.arange(0, n), axis=axis)
        hi = xp.take(p, xp.arange(2 * s, n + 2 * s), axis=axis)
        res += xp.float32(a) * (lo + hi) - xp.float32(b) * g3
    return finish(res.reshape(g.shape), out)


# ------------------------------------------------------------------ 2-D filter
def _pad_index(n, n_pad):
    """LEAP's padding for its 2-D projection filter: samples past the end repeat the last
    one for the first half of the pad, the first one for the second half (the edge
    nearer in the periodic sense)."""
    j = np.arange(n_pad)
    return np.where(j < n, j, np.where(j - n < n_pad - j, n - 1, 0))


def transmission_filter(g, H, is_attenuation_data=True, *, out=None):
    r"""Filter each transmission projection with the real frequency response ``H``.

    .. math:: t \leftarrow \max\!\big(2^{-24},\ \mathcal F^{-1}[H\cdot\mathcal F[\mathrm{pad}(t)]]\big)

    with t = exp(−g) when ``is_attenuation_data`` (the result then goes back through
    −log), else t = g. ``H`` (N1, N2), N1 ≥ rows, N2 ≥ cols, DC at [0, 0], is the 2-D DFT
    response of the padded (N1, N2) grid; only its columns 0..N2//2 are read (H must be
    Hermitian-symmetric, as for any real PSF). Padding: past the last row (column) the
    last one is repeated for the first half of the pad, the first one for the rest.

    g : (views, rows, cols) or (rows, cols).
    """
    xp = array_module(g, out)
    g = as_float32("g", g, xp)
    H = xp.asarray(H)
    if H.ndim != 2 or not xp.isrealobj(H) or np.dtype(H.dtype).kind not in "biuf":
        raise ValueError(f"H must be a real 2-D array (N1 >= numRows, N2 >= numCols), got "
                         f"shape {tuple(H.shape)} of {H.dtype}")
    g3 = as3d(g)
    nr, nc = g3.shape[1:]
    n1, n2 = H.shape
    if n1 < nr or n2 < nc:
        raise ValueError(f"H must be at least the projection size ({nr}, {nc}), got "
                         f"{tuple(H.shape)}")
    if not bool(xp.all(xp.isfinite(H))):
        raise ValueError("H must be finite (found NaN or inf)")
    fft = fft_module(xp)
    Hh = H[:, : n2 // 2 + 1].astype(xp.float64)
    jr, ic = xp.asarray(_pad_index(nr, n1)), xp.asarray(_pad_index(nc, n2))
    res = xp.empty(g3.shape, dtype=xp.float32)
    step = max(1, (4 << 20) // (n1 * n2))              # views per FFT batch
    for a in range(0, g3.shape[0], step):
        t = g3[a:a + step].astype(xp.float64)
        if is_attenuation_data:
            t = xp.exp(-t)
        tp = t[:, jr[:, None], ic[None, :]]
        tf = fft.irfft2(fft.rfft2(tp) * Hh, s=(n1, n2))[:, :nr, :nc]
        tf = xp.maximum(tf, MIN_TRANSMISSION_FILTER)
        res[a:a + step] = -xp.log(tf) if is_attenuation_data else tf
    return finish(res.reshape(g.shape), out)


# ------------------------------------------------------------ transfer functions
def _lut_params(lut, sample_rate, first_sample, min_samples, xp):
    sample_rate = real("sample_rate", sample_rate)
    first_sample = real("first_sample", first_sample)
    if sample_rate <= 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate}")
    lut = xp.asarray(lut, dtype=xp.float64)
    if not bool(xp.all(xp.isfinite(lut))):
        raise ValueError("lut must be finite (found NaN or inf)")
    if lut.ndim == 0 or lut.shape[-1] < min_samples:
        raise ValueError(f"lut needs at least {min_samples} samples, got shape "
                         f"{tuple(lut.shape)}")
    return lut, sample_rate, first_sample


def transfer_function(x, lut, sample_rate, first_sample=0.0, *, out=None):
    r"""``x ← lut(x)``: piecewise-linear through the samples
    ``(first_sample + i·sample_rate, lut[i])``, linearly extrapolated with the last
    segment's slope above the last sample, ``lut[0]`` at or below the first.

    x : any 1-D, 2-D or 3-D array; lut : (num_samples,), num_samples ≥ 2.
    """
    xp = array_module(x, out)
    x = as_float32("x", x, xp, ndims=(1, 2, 3))
    lut, sr, x0 = _lut_params(lut, sample_rate, first_sample, 2, xp)
    if lut.ndim != 1:
        raise ValueError(f"lut must be 1-D, got shape {tuple(lut.shape)}")
    n = lut.size
    last = x0 + (n - 1) * sr
    xs = x.astype(xp.float64)
    res = xp.interp(xs, x0 + sr * xp.arange(n), lut)
    slope = (lut[-1] - lut[-2]) / sr
    above = xs >= last
    res[above] = lut[-1] + slope * (xs[above] - last)
    return finish(res.astype(xp.float32), out)


def dual_transfer_function(x, y, lut, sample_rate, first_sample=0.0, *, out=None):
    r"""``(x, y) ← (lut₀(x, y), lut₁(x, y))``, bilinear on the grid
    ``first_sample + i·sample_rate`` along both axes, clamped at the grid edges (e.g. a
    dual-energy decomposition table).

    x, y : arrays of one shape; lut : (2, n, n) (or (n, n), used for both; of a
    (k, n, n) table, k > 2, the first two planes are used, as LEAP does).
    ``out`` : a pair of float32 arrays (may be ``(x, y)``). Returns the pair.
    """
    xp = array_module(x, y)
    x = as_float32("x", x, xp, ndims=(1, 2, 3))
    y = as_float32("y", y, xp, ndims=(1, 2, 3))
    if x.shape != y.shape:
        raise ValueError(f"x and y must have one shape, got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    lut, sr, x0 = _lut_params(lut, sample_rate, first_sample, 1, xp)
    if lut.ndim == 2:
        lut = xp.stack([lut, lut])
    if lut.ndim != 3 or lut.shape[0] < 2 or lut.shape[1] != lut.shape[2]:
        raise ValueError(f"lut must have shape (k, n, n) with k >= 2, or (n, n), got "
                         f"{tuple(lut.shape)}")
    lut = lut[:2]                       # as LEAP: a (3, n, n) DED table's first two planes
    if out is not None and (not isinstance(out, (tuple, list)) or len(out) != 2):
        raise ValueError("out must be a pair of arrays (for x and y)")
    n = lut.shape[1]

    def split(v):
        u = xp.clip((v.astype(xp.float64) - x0) / sr, 0.0, n - 1)
        lo = xp.floor(u).astype(xp.intp)
        hi = xp.minimum(lo + 1, n - 1)
        return lo, hi, u - lo

    lo1, hi1, d1 = split(x)
    lo2, hi2, d2 = split(y)
    res = []
    for L in lut:
        a = (1 - d2) * L[lo1, lo2] + d2 * L[lo1, hi2]
        b = (1 - d2) * L[hi1, lo2] + d2 * L[hi1, hi2]
        res.append(((1 - d1) * a + d1 * b).astype(xp.float32))
    if out is None:
        return tuple(res)
    finish(res[0], out[0])
    finish(res[1], out[1])
    return out


# ------------------------------------------------------------------ azimuthal
def _azimuthal_kernel():
    import numba

    @numba.njit(cache=True)
    def kernel(f, res, x0, y0, T, n_phi_max, width, rfov2):
        nz, ny, nx = f.shape
        for j in range(ny):
            y = y0 + j * T
            for i in range(nx):
                x = x0 + i * T
                if x * x + y * y > rfov2:
                    for k in range(nz):
                        res[k, j, i] = 0.0
                    continue
                r = math.sqrt(x * x + y * y)
                t_phi = math.atan(T / r) if r > 0 else 0.5 * math.pi
                if width >= 360.0:
                    n = max(4, min(n_phi_max, 2 * int(math.ceil(math.pi / t_phi))))
                    t_phi = 2.0 * math.pi / n
                    psi = 0.0
                    sgn = 1.0
                else:
                    n = max(4, min(n_phi_max, 2 * int(math.ceil(math.pi / 360.0 * width / t_phi))))
                    t_phi = math.pi / 180.0 * width / n
                    psi = math.atan2(y, x) + 0.5 * t_phi * n
                    sgn = -1.0          # angles psi − φ_l: centred on the voxel's own angle
                for k in range(nz):
                    acc = 0.0
                    for l in range(n):
                        phi = t_phi * l + 0.5 * t_phi - psi
                        # int() truncates towards zero, as LEAP's kernel does.
                        ix = int(0.5 + (r * math.cos(phi) - x0) / T)
                        iy = int(0.5 + (sgn * r * math.sin(phi) - y0) / T)
                        if 0 <= ix < nx and 0 <= iy < ny:
                            acc += f[k, iy, ix]
                    res[k, j, i] = acc / n
    return kernel


_AZ = []


def azimuthal_blur(f, fwhm, x0, y0, voxel_width, rfov, *, out=None):
    """Average each voxel of each z-slice over an arc of the circle through it centred on
    the z axis: ``fwhm`` degrees wide (≥ 360: the full circle), sampled about one voxel
    apart with nearest-neighbour look-up. Voxels outside the field of view (radius
    ``rfov`` mm, may be inf) become 0. A volume filter (LEAP's ``AzimuthalBlur``), NumPy only.

    f : (num_z, num_y, num_x); x0, y0: the first voxel's centre (mm); voxel_width (mm).
    """
    numpy_only("f", f)
    f = as_float32("f", f, np, ndims=(3,))
    fwhm = real("fwhm", fwhm)
    if fwhm <= 0:
        raise ValueError(f"fwhm must be > 0 degrees, got {fwhm}")
    x0, y0 = real("x0", x0), real("y0", y0)
    voxel_width = real("voxel_width", voxel_width)
    if voxel_width <= 0:
        raise ValueError(f"voxel_width must be > 0, got {voxel_width}")
    rfov = float(rfov)                  # inf: no field-of-view mask
    if not rfov >= 0:
        raise ValueError(f"rfov must be >= 0 mm (or inf), got {rfov}")
    if not _AZ:
        _AZ.append(_azimuthal_kernel())
    res = np.empty_like(f)
    n_phi_max = max(4, 2 * max(f.shape[1], f.shape[2]))
    _AZ[0](np.ascontiguousarray(f), res, x0, y0, voxel_width, n_phi_max, fwhm, rfov ** 2)
    return finish(res, out)
