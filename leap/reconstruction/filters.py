"""Ramp filters for filtered back-projection, LEAP's family and common windows.

Filtering is a *linear* convolution along each detector row: rows are zero-padded to
``N = 2^ceil(log2(2·num_cols))`` samples (so the circular FFT convolution cannot wrap
around), filtered, and the first ``num_cols`` samples are kept.

LEAP builds the frequency response from a truncated *spatial* kernel ``h[k] = K(s)/T``
(``s = k`` for ``k < N/2``, ``k − N`` above; ``T`` the sample spacing at the
isocentre, mm), ``H = Re(FFT(h))``. Its kernels are 2π times the textbook ones; the
1/(2π) lives in the FBP scale factor. Orders (``set_rampFilter``):

* 0  — blurred Shepp–Logan: SL(s)·(¾ − s²)/(9/4 − s²)
* 1  — cosine-type: (π(−1)^s/(¼ − s²) − (2s² + ½)/(s² − ¼)²)/(2π)
* 2  — Shepp–Logan, the default: SL(s) = 1/(π(¼ − s²))
* 3, 4 / 5, 6 / 7, 8 / 9, 10 — sharper rational refinements of Shepp–Logan
* 11, 12 — Ram-Lak: π/2 at s = 0, ((−1)^s − 1)/(π s²) elsewhere
"""
from __future__ import annotations

import math

import numpy as np

from ..kernels.cpu import filters as _cpu_filters

#: Windows leap adds on top of LEAP's family, as functions of ω/π ∈ [0, 1].
WINDOWS = {
    "none": lambda x: np.ones_like(x),
    "hann": lambda x: 0.5 * (1.0 + np.cos(np.pi * x)),
    "hamming": lambda x: 0.54 + 0.46 * np.cos(np.pi * x),
    "cosine": lambda x: np.cos(0.5 * np.pi * x),
}


def fft_length(num_cols: int) -> int:
    """Padded row length: the power of two ≥ 2·num_cols."""
    return 1 << int(math.ceil(math.log2(max(2 * int(num_cols), 2))))


def optimal_fft_size(n: int) -> int:
    """LEAP's FFT length for n samples: the smallest 2^a·3^b ≥ n with a ≥ 1."""
    best, p2 = None, 2
    while best is None or p2 < best:
        m = p2
        while m < n:
            m *= 3
        best = m if best is None else min(best, m)
        p2 *= 2
    return best


def ramp_filter_volume(f, voxel_width: float):
    """LEAP's 2-D ramp filter of every z-slice of ``f`` (num_z, num_y, num_x), in place:
    response √(X² + Y² − (XY/2)²)/voxel_width with X = 2|sin(ω_x/2)| (likewise Y),
    zero-padded to ``optimal_fft_size(2·max(num_y, num_x))``. Returns ``f``."""
    from ..algorithms.least_squares import ramp_filter_slices
    ramp_filter_slices(f, out=f, n=optimal_fft_size(2 * max(f.shape[1], f.shape[2])))
    f *= np.float32(1.0 / voxel_width)
    return f


def _spatial_kernel(order: int, s: np.ndarray) -> np.ndarray:
    s2 = s * s
    sl = 1.0 / (np.pi * (0.25 - s2))
    if order == 0:
        return sl * (0.75 - s2) / (2.25 - s2)
    if order == 1:
        sign = np.where(s.astype(np.int64) % 2 == 0, 1.0, -1.0)
        return (np.pi * sign / (0.25 - s2) - (2.0 * s2 + 0.5) / (s2 - 0.25) ** 2) / (2.0 * np.pi)
    if order == 2:
        return sl
    if order in (3, 4):
        return sl * (2.5 - s2) / (2.25 - s2)
    if order in (5, 6):
        return sl * (s2 * s2 - 35.0 / 4.0 * s2 + 259.0 / 16.0) / ((6.25 - s2) * (2.25 - s2))
    if order in (7, 8):
        num = s2**3 - 336.0 / 16.0 * s2**2 + 1974.0 / 16.0 * s2 - 3229.0 / 16.0
        return sl * num / ((s2 - 49.0 / 4.0) * (s2 - 25.0 / 4.0) * (s2 - 9.0 / 4.0))
    if order in (9, 10):
        num = (s2**4 - 165.0 / 4.0 * s2**3 + 4389.0 / 8.0 * s2**2 - 86405.0 / 32.0 * s2
               + 1057221.0 / 256.0)
        den = (s2 - 81.0 / 4.0) * (s2 - 49.0 / 4.0) * (s2 - 25.0 / 4.0) * (s2 - 9.0 / 4.0)
        return sl * num / den
    if order in (11, 12):
        out = np.empty_like(s)
        nz = s != 0
        sign = np.where(s.astype(np.int64) % 2 == 0, 1.0, -1.0)
        out[nz] = (sign[nz] - 1.0) / (np.pi * s2[nz])
        out[~nz] = 0.5 * np.pi
        return out
    raise ValueError(f"ramp filter order must be an integer 0..12 (2 = Shepp-Logan, 12 = Ram-Lak), got {order}")


def lowpass_power(width: float) -> float:
    """Exponent p of LEAP's low-pass ``cos(ω/2)^(2p)`` of FWHM ``width`` pixels (≥ 2):
    ``p = 1/(1 − log2(1 + cos(π/W)))``, the power whose gain is ½ at ω = π/W.

    Written as ``−ln 2 / log1p(−sin²(π/2W))`` (since 1 + cos x = 2cos²(x/2)), which
    stays finite for wide filters: the textbook form divides by zero once cos(π/W)
    rounds to 1 (W ≳ 1e8). Very wide filters keep little more than the mean.
    """
    y = math.sin(0.5 * math.pi / width) ** 2
    # y underflows to 0 beyond W ~ 1e154: the limit, a filter that keeps only ω = 0.
    return math.inf if y == 0.0 else -math.log(2.0) / math.log1p(-y)


def ramp_response(num_cols: int, spacing: float, order: int = 2, *, lowpass: float = 1.0,
                  window: str = "none", curved_pixel_angle: float | None = None) -> np.ndarray:
    """Real frequency response of the ramp filter, shape ``(N // 2 + 1,)`` (rfft layout).

    Parameters
    ----------
    num_cols : detector columns; sets the padded length N (:func:`fft_length`).
    spacing : sample spacing T at the isocentre, mm.
    order : LEAP filter order 0..12 (2 default, 12 Ram-Lak).
    lowpass : LEAP's ``FBPlowpass`` W (detector pixels, positive); applied when W ≥ 2 as
        ``cos(ω/2)^(2p)``, p from :func:`lowpass_power` (gain ½ at ω = π/W).
    window : one of :data:`WINDOWS` (leap extension), applied over ω/π.
    curved_pixel_angle : for curved detectors, ``pixel_width/sdd``: the kernel is
        multiplied by ``(s′/sin s′)²``, ``s′ = s·pixel_width/sdd`` (fan-beam ramp).

    Filtering a row ``x`` (length num_cols) is ``irfft(rfft(x, N) · H, N)[:num_cols]``
    (numpy's ``irfft`` carries the 1/N).
    """
    if isinstance(order, bool) or int(order) != order:
        raise ValueError(f"ramp filter order must be an integer 0..12, got {order!r}")
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {sorted(WINDOWS)}, got {window!r}")
    if not (spacing > 0 and math.isfinite(spacing)):
        raise ValueError(f"sample spacing must be positive, got {spacing}")
    n = fft_length(num_cols)
    k = np.arange(n)
    s = np.where(k < n // 2, k, k - n).astype(np.float64)
    h = _spatial_kernel(int(order), s) / spacing
    if curved_pixel_angle is not None:
        sp = s * curved_pixel_angle
        nz = s != 0
        h[nz] *= (sp[nz] / np.sin(sp[nz])) ** 2
    # LEAP keeps the kernel in float32 before its FFT; doing the same keeps us in step.
    H = np.fft.rfft(h.astype(np.float32).astype(np.float64)).real
    omega = np.pi * np.arange(H.size) / n * 2.0         # 0 .. π
    if lowpass is not None and not (lowpass > 0 and math.isfinite(lowpass)):
        raise ValueError(f"lowpass (FBPlowpass, FWHM in detector pixels) must be a positive "
                         f"finite number, got {lowpass}")
    if lowpass is not None and lowpass >= 2.0:
        H *= np.maximum(0.0, np.cos(0.5 * omega)) ** (2.0 * lowpass_power(lowpass))
    H *= WINDOWS[window](omega / np.pi)
    return H


def filter_rows(g: np.ndarray, H: np.ndarray, *, extrapolate: bool = False,
                transpose: bool = False) -> None:
    """Convolve every detector row of ``g`` (…, num_cols) in place with the response H.

    ``extrapolate`` (LEAP's truncated-scan option) fills up to 100 padded samples past
    each end with the edge value instead of zeros, so truncated rows do not ring.
    ``transpose`` applies the transpose of that linear map instead (the kernel is even,
    so only the edge extension changes: padded samples fold back onto the edges).

    The FFTs run in g's precision: float32 projections are filtered with single-precision
    transforms, as LEAP's GPU filter (cuFFT R2C/C2R) does; they take half the time and
    memory traffic of double ones and differ from them by float32 rounding (relative
    error ~1e-7·log2 N).
    """
    if not g.flags.c_contiguous:
        raise ValueError("filter_rows filters in place and needs a C-contiguous array; "
                         f"got strides {g.strides} for shape {g.shape}")
    if not g.flags.writeable:
        raise ValueError("filter_rows filters in place and needs a writeable array; got a "
                         "read-only one (pass a copy)")
    if g.dtype not in (np.float32, np.float64):
        raise ValueError(f"filter_rows filters float32 or float64 rows, got {g.dtype}")
    rows = g.reshape(1, -1, g.shape[-1])
    filter_views(rows, H, rows, extrapolate=extrapolate, transpose=transpose)


#: The :func:`filter_views` layout of the filtered views as they are, (views, rows,
#: columns).
ROWS = _cpu_filters.ROWS
#: The :func:`filter_views` layout the CPU back-projector reads for direct rows (parallel
#: and fan beams), rows contiguous between guard columns and times the row factor.
VALUES = _cpu_filters.VALUES
#: The :func:`filter_views` layout the CPU back-projector reads otherwise, the running
#: sums of those values along each detector column.
CUMSUM = _cpu_filters.CUMSUM

_ONE = np.ones((1, 1, 1))


def _broadcast3(name, w, shape, dtype):
    """w as a C-contiguous 3-D array of ``dtype`` whose axes have ``shape``'s lengths or 1."""
    w = np.asarray(w, dtype=dtype)
    w = np.ascontiguousarray(w.reshape((1,) * (3 - w.ndim) + w.shape))
    if not w.flags.writeable:
        w = w.copy()    # one compiled kernel: Numba types read-only arrays apart
    if w.ndim != 3 or any(m not in (1, k) for m, k in zip(w.shape, shape)):
        raise ValueError(f"{name} must broadcast against {shape}, got shape {w.shape}")
    return w


def filter_views(g: np.ndarray, H: np.ndarray, out: np.ndarray, *, layout: int = ROWS,
                 first: int = 0, scale=None, pre=(), post=None, row_factor=None,
                 extrapolate: bool = False, transpose: bool = False) -> np.ndarray:
    """FBP's filtering stage in one pass: ``out`` ← the views g (nv, nr, nci), weighted,
    ramp filtered (as :func:`filter_rows`) and post-weighted, in ``layout``.

    Each row is placed at columns ``first .. first + nci`` of a row of nc columns (nc =
    out's detector columns; zeros elsewhere) as ``(scale·g)·W``, W the float64 product of
    the ``pre`` factors (at most three) rounded to g's type; after filtering it is
    multiplied by ``post``. Weights are arrays broadcasting against (nv, nr, nci) for
    ``scale`` and (nv, nr, nc) for the others. ``layout``: :data:`ROWS`, out (nv, nr,
    nc) — g itself for in-place filtering; :data:`VALUES` or :data:`CUMSUM`, out the
    array the CPU back-projector reads (``leap.kernels.cpu.launch.prepare_projections``
    of the filtered views) and ``row_factor`` (nr,) its row weights. Bit for bit the
    separate steps (NumPy weighting, :func:`filter_rows`, post-weighting,
    ``prepare_projections``), up to the FFTs' blocking; the weighting runs on all
    threads and each block is laid out while it is in cache. Returns ``out``.
    """
    if g.ndim != 3 or g.dtype not in (np.float32, np.float64):
        raise ValueError(f"filter_views filters (views, rows, columns) float32 or float64 "
                         f"arrays, got {g.dtype} of shape {g.shape}")
    g = np.ascontiguousarray(g)
    nv, nr, nci = g.shape
    if layout == ROWS:
        nc = out.shape[-1]
        expected = (nv, nr, nc)
    elif layout in (VALUES, CUMSUM):
        nc = out.shape[1] - _cpu_filters.GUARD_LO - _cpu_filters.GUARD_HI
        # Stored columns: nr + 1 sums, or at least nr + 1 values (padded, column_length).
        rows = nr + 1 if layout == CUMSUM else max(out.shape[2], nr + 1)
        expected = (nv, out.shape[1], rows)
    else:
        raise ValueError(f"layout must be ROWS, VALUES or CUMSUM, got {layout!r}")
    if out.shape != expected or out.dtype != g.dtype or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous {g.dtype} array of shape {expected}, "
                         f"got {out.dtype} of shape {out.shape}")
    if not 0 <= first <= nc - nci:
        raise ValueError(f"{nci} columns at column {first} do not fit rows of {nc}")
    if len(pre) > 3:
        raise ValueError(f"at most three pre-weight factors, got {len(pre)}")
    n = 2 * (np.size(H) - 1)
    if n < nc:
        raise ValueError(f"H of {np.size(H)} frequencies pads rows to {n} samples, fewer than "
                         f"their {nc} columns")
    f0, f1, f2 = (_broadcast3("pre", w, (nv, nr, nc), np.float64)
                  for w in list(pre) + [_ONE] * (3 - len(pre)))
    row_factor = np.ones(nr) if row_factor is None else np.asarray(row_factor, np.float64)
    if row_factor.shape != (nr,):
        raise ValueError(f"row_factor must have shape ({nr},), got {row_factor.shape}")
    _cpu_filters.filter_views(
        g, first, _broadcast3("scale", _ONE if scale is None else scale, (nv, nr, nci),
                              np.float64),
        f0, f1, f2, _broadcast3("post", _ONE if post is None else post, (nv, nr, nc), g.dtype),
        np.ascontiguousarray(H, dtype=g.dtype), n, min(n - nc - 1, 100) if extrapolate else 0,
        transpose, row_factor, out, layout, _cpu_filters.rows_per_block(n, g.itemsize))
    return out


def hilbert_filter_rows(g: np.ndarray, geometry, *, extrapolate: bool = False) -> np.ndarray:
    """LEAP's Hilbert filter along detector rows, in place on ``g`` (..., num_cols).

    Convolution with h[n] = 2/(πn) for odd n and 0 for even n (curved cone-beam
    detectors: times s/sin(s), s = n·pixel_width/sdd, the angular form), zero-padded to a
    power of two ≥ 2·num_cols; ``extrapolate`` (truncated scans) extends the edge values
    up to 100 samples into the padding. Returns ``g``.
    """
    from ..geometry import ConeBeam
    nc = geometry.detector.num_cols
    n = 1 << int(math.ceil(math.log2(2 * nc)))
    m = np.fft.fftfreq(n, 1.0 / n)              # 0, 1, …, −1: the sample offsets
    h = np.where(m % 2 == 1, 2.0 / (math.pi * np.where(m == 0, 1, m)), 0.0)
    if isinstance(geometry, ConeBeam) and geometry.detector.curved:
        s = m * geometry.detector.pixel_width / geometry.sdd
        h = np.where(m != 0, h * s / np.where(m == 0, 1.0, np.sin(s)), h)
    H = np.fft.fft(h)
    x = np.zeros(g.shape[:-1] + (n,), dtype=np.float64)
    x[..., :nc] = g
    if extrapolate:
        k = min(n - nc - 1, 100)
        x[..., nc:nc + k] = x[..., nc - 1:nc]
        x[..., n - k:] = x[..., :1]
    g[...] = np.fft.ifft(np.fft.fft(x, axis=-1) * H, axis=-1).real[..., :nc]
    return g
