"""Array functions behind LEAP's projection pre-processing (the numerics of the facade's
``LowSignalCorrection2D``, ``badPixelCorrection``, ``transmission_filter``, ...).

Arrays are NumPy float32, projections ``(numAngles, numRows, numCols)``, volumes
``(numZ, numY, numX)``; a 2-D array counts as one slice, as in LEAP. Every function
returns a new array, or writes into ``out`` (which may be the input) and returns it.
``host_view`` lets the LEAP-named wrappers work in place on torch tensors and CuPy
arrays too (through a host copy that is written back).
"""
from __future__ import annotations

import contextlib
import math
import numbers

import numpy as np

__all__ = ["host_view", "check_data", "check_window", "low_signal_median", "bad_pixel_correction",
           "mean_filter", "variance_filter", "laplacian", "transmission_filter",
           "transfer_function", "dual_transfer_function", "azimuthal_blur"]

#: Smallest transmission LEAP's 2-D transmission filter keeps (before −log).
MIN_TRANSMISSION_FILTER = 2.0 ** -24


# ----------------------------------------------------------------- validation
@contextlib.contextmanager
def host_view(x, name="g"):
    """A NumPy array sharing or mirroring ``x`` for in-place work.

    NumPy arrays and torch CPU tensors are viewed (no copy); CuPy arrays and torch CUDA
    tensors are copied to the host and the result copied back on exit.
    """
    if x is None:
        raise ValueError(f"no data given: {name} is None")
    if isinstance(x, np.ndarray):
        yield x
        return
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        if x.is_cuda:
            import torch
            a = x.detach().cpu().numpy()
            yield a
            with torch.no_grad():
                x.copy_(torch.from_numpy(a))
        else:
            yield x.detach().numpy()
    elif mod in ("cupy", "cupyx"):
        a = x.get()
        yield a
        x.set(a)
    else:
        raise TypeError(f"{name} must be a numpy.ndarray (or a torch tensor / CuPy array), "
                        f"got {type(x).__name__}")


def check_data(name, x, ndims=(2, 3), shape=None):
    """Raise unless ``x`` is a float32 NumPy array with ``ndim`` in ``ndims`` (and, when
    given, trailing ``shape``); returns ``x``."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be float32 (LEAP's data type), got {x.dtype}; "
                        f"convert with {name}.astype(np.float32)")
    if x.ndim not in ndims:
        want = " or ".join(f"{n}-D" for n in ndims)
        raise ValueError(f"{name} must be a {want} array, got shape {x.shape}")
    if shape is not None and tuple(x.shape[-len(shape):]) != tuple(shape):
        raise ValueError(f"{name} must end in shape {tuple(shape)}, got {x.shape}")
    return x


def _real(name, value):
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def check_window(name, value, allowed):
    """``value`` as an int from ``allowed`` (e.g. median window sizes 3, 5, 7)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or float(value) != int(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    v = int(value)
    if v not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {v}")
    return v


def _finish(res, out):
    if out is None:
        return res
    out[...] = res
    return out


def _as3d(x):
    return x if x.ndim == 3 else x[None]


# -------------------------------------------------------------------- medians
def low_signal_median(f, threshold=0.0, window_size=3, signal_threshold=0.0, *, num_dims=2,
                      out=None):
    r"""LEAP's thresholded median filter, restricted to low values.

    A value v with window median m is replaced by m when
    :math:`|v - m| \ge \text{threshold}\,|m|` and (if ``signal_threshold`` > 0)
    :math:`v \le \text{signal\_threshold}`. Windows: w×w within each slice
    (``num_dims=2``, w = 3, 5, 7) or 3×w×w (``num_dims=3``, w = 3, 5); edges replicated.
    ``signal_threshold`` = 0 gives LEAP's ``MedianFilter(2D)``.

    f : (n0, n1, n2) or (n1, n2) float32.
    """
    check_data("f", f)
    threshold = _real("threshold", threshold)
    signal_threshold = _real("signalThreshold", signal_threshold)
    w = check_window("windowSize", window_size, (3, 5, 7) if num_dims == 2 else (3, 5))
    import scipy.ndimage as ndi          # scipy loads lazily: `import leap` stays light
    f3 = _as3d(f)
    m = ndi.median_filter(f3, size=(1 if num_dims == 2 else 3, w, w), mode="nearest")
    replace = np.abs(f3 - m) >= np.float32(threshold) * np.abs(m)
    if signal_threshold > 0:
        replace &= f3 <= np.float32(signal_threshold)
    return _finish(np.where(replace, m, f3).reshape(f.shape), out)


def bad_pixel_correction(g, bad_pixel_map, window_size=3, *, out=None):
    """Replace the pixels flagged 1.0 in ``bad_pixel_map`` by the median of the good
    pixels in their w×w neighbourhood (w = 3, 5 or 7; indices clamped at the detector
    edges, so an edge pixel can count twice, as in LEAP; an even number of good pixels
    gives the mean of the middle two). Pixels with no good neighbour are kept.

    g : (numAngles, numRows, numCols) or (numRows, numCols) float32.
    bad_pixel_map : (numRows, numCols), 1.0 marks a bad pixel.
    """
    check_data("g", g)
    w = check_window("windowSize", window_size, (3, 5, 7))
    bad = np.asarray(bad_pixel_map)
    if bad.shape != g.shape[-2:]:
        raise ValueError(f"badPixelMap must have shape (numRows, numCols) = {g.shape[-2:]}, "
                         f"got {bad.shape}")
    bad = bad == 1.0
    res = np.array(g, copy=True)
    rows, cols = np.nonzero(bad)
    if rows.size == 0:
        return _finish(res, out)
    nr, nc = bad.shape
    d = np.arange(-(w // 2), w // 2 + 1)
    rr = np.clip(rows[:, None, None] + d[None, :, None], 0, nr - 1)
    cc = np.clip(cols[:, None, None] + d[None, None, :], 0, nc - 1)
    rr, cc = (a.reshape(rows.size, w * w) for a in np.broadcast_arrays(rr, cc))
    good = ~bad[rr, cc]                                     # (numBad, w*w)
    fixable = good.any(axis=1)
    rr, cc, good = rr[fixable], cc[fixable], good[fixable]
    rows, cols = rows[fixable], cols[fixable]
    r3 = _as3d(res)
    # Chunk over views to bound the (views, numBad, w*w) gather to ~32 MB.
    step = max(1, (8 << 20) // max(1, rr.size))
    for a in range(0, r3.shape[0], step):
        vals = r3[a:a + step][:, rr, cc]
        vals[:, ~good] = np.nan
        r3[a:a + step, rows, cols] = np.nanmedian(vals, axis=2)
    return _finish(res, out)


# --------------------------------------------------------------- moment filters
def _box_mean(x, radius):
    """Mean over the (2r+1)³ window clipped to the array (LEAP divides by the number of
    samples inside, it does not pad)."""
    import scipy.ndimage as ndi
    size = 2 * radius + 1
    num = ndi.uniform_filter(x, size=size, mode="constant", cval=0.0)
    den = ndi.uniform_filter(np.ones_like(x), size=size, mode="constant", cval=0.0)
    return num / den


def _radius(window_radius):
    if isinstance(window_radius, bool) or not isinstance(window_radius, numbers.Real) \
            or float(window_radius) != int(window_radius):
        raise TypeError(f"windowRadius must be an integer, got {window_radius!r}")
    r = int(window_radius)
    if r < 1:
        raise ValueError(f"windowRadius must be >= 1, got {r}")
    return r


def mean_filter(x, window_radius=1, *, out=None):
    """Mean over a (2r+1)³ window (clipped at the array edges) of a 2-D/3-D float32
    array; a 2-D array is one slice."""
    check_data("x", x)
    r = _radius(window_radius)
    m = _box_mean(_as3d(x).astype(np.float64), r)
    return _finish(m.reshape(x.shape).astype(np.float32), out)


def variance_filter(x, window_radius=1, *, out=None):
    """Variance ``E[x²] − E[x]²`` over a (2r+1)³ window clipped at the array edges."""
    check_data("x", x)
    r = _radius(window_radius)
    x64 = _as3d(x).astype(np.float64)
    m = _box_mean(x64, r)
    v = _box_mean(x64 * x64, r) - m * m
    return _finish(np.maximum(v, 0.0).reshape(x.shape).astype(np.float32), out)


def laplacian(g, num_dims=2, smooth=False, *, out=None):
    r"""Discrete Laplacian of each projection, edges replicated.

    ``smooth=False``: :math:`g_{k+1} + g_{k-1} - 2g_k` along columns (and rows when
    ``num_dims`` = 2). ``smooth=True``: the wider stencil
    :math:`\tfrac14(g_{k+2} + g_{k-2}) - \tfrac12 g_k` per axis, a second difference
    over two pixels, less sensitive to noise. Unit pixel spacing, as LEAP.

    g : (numAngles, numRows, numCols) or (numRows, numCols) float32.
    """
    check_data("g", g)
    if isinstance(num_dims, bool) or num_dims not in (1, 2):
        raise ValueError(f"numDims must be 1 (columns only) or 2 (rows and columns), got {num_dims!r}")
    g3 = _as3d(g)
    s = 2 if smooth else 1
    a, b = (0.25, 0.5) if smooth else (1.0, 2.0)
    res = np.zeros(g3.shape, dtype=np.float32)
    for axis in ((2, 1) if num_dims == 2 else (2,)):
        pad = [(0, 0)] * 3
        pad[axis] = (s, s)
        p = np.pad(g3, pad, mode="edge")
        n = g3.shape[axis]
        lo = np.take(p, np.arange(0, n), axis=axis)
        hi = np.take(p, np.arange(2 * s, n + 2 * s), axis=axis)
        res += np.float32(a) * (lo + hi) - np.float32(b) * g3
    return _finish(res.reshape(g.shape), out)


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
    −log), else t = g. ``H`` (N1, N2), N1 ≥ numRows, N2 ≥ numCols, DC at [0, 0], is the
    2-D DFT response of the padded (N1, N2) grid; only its columns 0..N2//2 are read
    (H must be Hermitian-symmetric, as for any real PSF).

    g : (numAngles, numRows, numCols) or (numRows, numCols) float32.
    """
    check_data("g", g)
    H = np.asarray(H)
    if H.ndim != 2 or not np.isrealobj(H):
        raise ValueError(f"H must be a real 2-D array (N1 >= numRows, N2 >= numCols), got "
                         f"shape {H.shape} of {H.dtype}")
    g3 = _as3d(g)
    nr, nc = g3.shape[1:]
    n1, n2 = H.shape
    if n1 < nr or n2 < nc:
        raise ValueError(f"H must be at least the projection size ({nr}, {nc}), got {H.shape}")
    if not np.all(np.isfinite(H)):
        raise ValueError("H must be finite (found NaN or inf)")
    import scipy.fft
    Hh = H[:, : n2 // 2 + 1].astype(np.float64)
    jr, ic = _pad_index(nr, n1), _pad_index(nc, n2)
    res = np.empty(g3.shape, dtype=np.float32)
    step = max(1, (4 << 20) // (n1 * n2))              # views per FFT batch
    for a in range(0, g3.shape[0], step):
        t = g3[a:a + step].astype(np.float64)
        if is_attenuation_data:
            t = np.exp(-t)
        tp = t[:, jr[:, None], ic[None, :]]
        tf = scipy.fft.irfft2(scipy.fft.rfft2(tp) * Hh, s=(n1, n2))[:, :nr, :nc]
        tf = np.maximum(tf, MIN_TRANSMISSION_FILTER)
        res[a:a + step] = -np.log(tf) if is_attenuation_data else tf
    return _finish(res.reshape(g.shape), out)


# ------------------------------------------------------------ transfer functions
def _lut_params(lut, sample_rate, first_sample, min_samples):
    sample_rate = _real("sampleRate", sample_rate)
    first_sample = _real("firstSample", first_sample)
    if sample_rate <= 0:
        raise ValueError(f"sampleRate must be > 0, got {sample_rate}")
    lut = np.asarray(lut, dtype=np.float64)
    if not np.all(np.isfinite(lut)):
        raise ValueError("LUT must be finite (found NaN or inf)")
    if lut.shape[-1] < min_samples:
        raise ValueError(f"LUT needs at least {min_samples} samples, got shape {lut.shape}")
    return lut, sample_rate, first_sample


def transfer_function(x, lut, sample_rate, first_sample=0.0, *, out=None):
    r"""``x ← LUT(x)``: piecewise-linear through the samples
    ``(first_sample + i·sample_rate, LUT[i])``, linearly extrapolated with the last
    segment's slope above the last sample, ``LUT[0]`` at or below the first.

    x : any-shape float32; LUT : (numSamples,), numSamples ≥ 2.
    """
    check_data("x", x, ndims=(1, 2, 3))
    lut, sr, x0 = _lut_params(lut, sample_rate, first_sample, 2)
    if lut.ndim != 1:
        raise ValueError(f"LUT must be 1-D, got shape {lut.shape}")
    n = lut.size
    last = x0 + (n - 1) * sr
    xs = x.astype(np.float64)
    res = np.interp(xs, x0 + sr * np.arange(n), lut)
    slope = (lut[-1] - lut[-2]) / sr
    above = xs >= last
    res[above] = lut[-1] + slope * (xs[above] - last)
    return _finish(res.astype(np.float32), out)


def dual_transfer_function(x, y, lut, sample_rate, first_sample=0.0, *, out=None):
    r"""``(x, y) ← (LUT₀(x, y), LUT₁(x, y))``, bilinear on the grid
    ``first_sample + i·sample_rate`` along both axes, clamped at the grid edges.

    x, y : float32 arrays of one shape; LUT : (2, n, n) (or (n, n), used for both).
    ``out`` : a pair of arrays (may be ``(x, y)``). Returns the pair.
    """
    check_data("x", x, ndims=(1, 2, 3))
    check_data("y", y, ndims=(1, 2, 3))
    if x.shape != y.shape:
        raise ValueError(f"x and y must have one shape, got {x.shape} and {y.shape}")
    lut, sr, x0 = _lut_params(lut, sample_rate, first_sample, 1)
    if lut.ndim == 2:
        lut = np.stack([lut, lut])
    if lut.ndim != 3 or lut.shape[0] != 2 or lut.shape[1] != lut.shape[2]:
        raise ValueError(f"LUT must have shape (2, n, n) or (n, n), got {lut.shape}")
    n = lut.shape[1]

    def split(v):
        u = np.clip((v.astype(np.float64) - x0) / sr, 0.0, n - 1)
        lo = np.floor(u).astype(np.intp)
        hi = np.minimum(lo + 1, n - 1)
        return lo, hi, u - lo

    lo1, hi1, d1 = split(x)
    lo2, hi2, d2 = split(y)
    res = []
    for L in lut:
        a = (1 - d2) * L[lo1, lo2] + d2 * L[lo1, hi2]
        b = (1 - d2) * L[hi1, lo2] + d2 * L[hi1, hi2]
        res.append(((1 - d1) * a + d1 * b).astype(np.float32))
    if out is None:
        return tuple(res)
    out[0][...] = res[0]
    out[1][...] = res[1]
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
    ``rfov`` mm) become 0.

    f : (numZ, numY, numX) float32; x0, y0: first voxel centre (mm).
    """
    check_data("f", f, ndims=(3,))
    fwhm = _real("FWHM", fwhm)
    if fwhm <= 0:
        raise ValueError(f"FWHM must be > 0 degrees, got {fwhm}")
    if not _AZ:
        _AZ.append(_azimuthal_kernel())
    res = np.empty_like(f)
    n_phi_max = max(4, 2 * max(f.shape[1], f.shape[2]))
    _AZ[0](np.ascontiguousarray(f), res, float(x0), float(y0), float(voxel_width), n_phi_max,
           fwhm, float(rfov) ** 2)
    return _finish(res, out)
