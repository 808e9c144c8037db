"""FBP's projection-domain steps on the GPU: weights, offset-scan padding, ramp filter.

The ramp filter is the linear convolution of :func:`leap.reconstruction.filters.filter_rows` (rows
zero-padded to N = ``2·(H.size − 1)`` samples, optional edge extrapolation, its exact
transpose). With CuPy installed it runs as float64 FFTs (``cupy.fft``) on the caller's
stream, in row blocks that bound the temporary spectra; without CuPy (or under the
Numba simulator) a Numba kernel applies the same circular convolution directly with
the spatial kernel ``h = irfft(H)`` (O(N) per sample instead of O(log N), still fast
enough on a GPU for detector rows of a few thousand pixels). Both compute the CPU's
linear map in float64 (the CPU filters float32 rows with single-precision FFTs), so
results agree to float32 rounding.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, float64

from ...devices.arrays import simulator_enabled
from ._jit import BLOCK_2D, KERNEL, THREADS_1D, blocks

# Rows per CuPy FFT block: bounds the float64/complex128 temporaries to ~256 MiB.
FFT_BLOCK_ELEMENTS = 1 << 24


@cuda.jit(**KERNEL)
def _scale(q, w):
    """q[a, j, i] *= w[a % p0, j % p1, i % p2] (w broadcasts: each axis 1 or full)."""
    n = cuda.grid(1)
    na, nr, nc = q.shape
    if n >= na * nr * nc:
        return
    i = n % nc
    r = n // nc
    j = r % nr
    a = r // nr
    q[a, j, i] = q[a, j, i] * w[a % w.shape[0], j % w.shape[1], i % w.shape[2]]


@cuda.jit(**KERNEL)
def _pad_columns(g, w2, first, q):
    """q (na, nr, nc + n_add) = 0 except q[:, :, first:first + nc] = float32(w2 · g)."""
    n = cuda.grid(1)
    na, nr, ncq = q.shape
    nc = g.shape[2]
    if n >= na * nr * ncq:
        return
    c = n % ncq
    r = n // ncq
    j = r % nr
    a = r // nr
    i = c - first
    if 0 <= i < nc:
        q[a, j, c] = float32(w2[i] * float64(g[a, j, i]))
    else:
        q[a, j, c] = 0.0


@cuda.jit(**KERNEL)
def _crop_columns(q, w2, first, out):
    """out[a, j, i] = q[a, j, first + i] · w2[i] (float32 weights)."""
    n = cuda.grid(1)
    na, nr, nc = out.shape
    if n >= na * nr * nc:
        return
    i = n % nc
    r = n // nc
    j = r % nr
    a = r // nr
    out[a, j, i] = q[a, j, first + i] * w2[i]


@cuda.jit(**KERNEL)
def _copy(src, dst):
    n = cuda.grid(1)
    na, nr, nc = dst.shape
    if n >= na * nr * nc:
        return
    i = n % nc
    r = n // nc
    dst[r // nr, r % nr, i] = src[r // nr, r % nr, i]


@cuda.jit(device=True, inline="always")
def _conv_at(x, row, p, h, nc, n):
    """Σ_{m < nc} x[row, m] · h[(p − m) mod n]."""
    s = 0.0
    for m in range(nc):
        d = p - m
        if d < 0:
            d += n
        s += float64(x[row, m]) * h[d]
    return s


@cuda.jit(**KERNEL)
def _convolve_rows(x, h, y, ne, transpose):
    """y[row, i] = the filtered row (see filter_rows), thread (i, row); x, y (rows, nc)."""
    i, row = cuda.grid(2)
    nrows, nc = x.shape
    n = h.shape[0]
    if i >= nc or row >= nrows:
        return
    s = _conv_at(x, row, i, h, nc, n)
    if ne > 0:
        t_end = min(nc + ne, n - ne)
        if transpose:
            # Padded samples fold back onto the edge columns (transpose of the extension).
            if i == nc - 1:
                for p in range(nc, t_end):
                    s += _conv_at(x, row, p, h, nc, n)
            if i == 0:
                for p in range(n - ne, n):
                    s += _conv_at(x, row, p, h, nc, n)
        else:
            last = float64(x[row, nc - 1])
            lead = float64(x[row, 0])
            for m in range(nc, t_end):
                d = i - m
                if d < 0:
                    d += n
                s += last * h[d]
            for m in range(n - ne, n):
                d = i - m
                if d < 0:
                    d += n
                s += lead * h[d]
    y[row, i] = s


def _n1(shape):
    return blocks(int(np.prod(shape)), THREADS_1D)


def scale(q, w, stream):
    """q *= w in place; w a host array broadcasting against q (float32 arithmetic)."""
    w = np.asarray(w, dtype=np.float32)
    w = w.reshape((1,) * (3 - w.ndim) + w.shape)
    if q.size == 0:
        return
    _scale[_n1(q.shape), THREADS_1D, stream](q, cuda.to_device(np.ascontiguousarray(w),
                                                               stream=stream))


def pad_columns(g, w2, first, q, stream):
    """Offset-scan padding: q = 0 with q[:, :, first:first+nc] = w2·g (w2 float64 (nc,))."""
    if q.size:
        w = cuda.to_device(np.ascontiguousarray(np.ravel(w2), dtype=np.float64), stream=stream)
        _pad_columns[_n1(q.shape), THREADS_1D, stream](g, w, int(first), q)


def crop_columns(q, w2, first, out, stream):
    if out.size:
        w = cuda.to_device(np.ascontiguousarray(np.ravel(w2), dtype=np.float32), stream=stream)
        _crop_columns[_n1(out.shape), THREADS_1D, stream](q, w, int(first), out)


def copy(src, dst, stream):
    if dst.size:
        _copy[_n1(dst.shape), THREADS_1D, stream](src, dst)


def _stream_ptr(stream) -> int:
    h = getattr(stream, "handle", 0)
    h = getattr(h, "value", h)
    return int(h or 0)


def _have_cupy() -> bool:
    if simulator_enabled():
        return False
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def filter_rows(q, H, stream, *, extrapolate=False, transpose=False, alloc=None):
    """Ramp-filter every row of the device array q (…, num_cols) in place; see
    :func:`leap.reconstruction.filters.filter_rows` for ``H``, ``extrapolate`` and ``transpose``.

    ``alloc(shape)`` returns a float32 device scratch array (direct-convolution path).
    """
    num_cols = tuple(q.shape)[-1]
    n = 2 * (H.size - 1)
    ne = min(n - num_cols - 1, 100) if extrapolate else 0
    rows = int(np.prod(tuple(q.shape)[:-1]))
    if rows == 0:
        return
    if _have_cupy():
        _filter_rows_cupy(q, H, stream, n, ne, transpose)
        return
    h = np.fft.irfft(np.asarray(H, dtype=np.float64), n=n)
    hd = cuda.to_device(h, stream=stream)
    x = q.reshape(rows, num_cols)
    y = alloc((rows, num_cols)) if alloc is not None else cuda.device_array((rows, num_cols),
                                                                             np.float32)
    grid = (blocks(num_cols, BLOCK_2D[0]), blocks(rows, BLOCK_2D[1]))
    _convolve_rows[grid, BLOCK_2D, stream](x, hd, y, int(ne), bool(transpose))
    _copy[_n1((1, rows, num_cols)), THREADS_1D, stream](y.reshape(1, rows, num_cols),
                                                         x.reshape(1, rows, num_cols))


def _filter_rows_cupy(q, H, stream, n, ne, transpose):
    import cupy
    num_cols = tuple(q.shape)[-1]
    ptr = _stream_ptr(stream)
    with (cupy.cuda.ExternalStream(ptr) if ptr else cupy.cuda.Stream.null):
        x = cupy.asarray(q).reshape(-1, num_cols)
        Hd = cupy.asarray(H, dtype=cupy.float64)
        step = max(1, FFT_BLOCK_ELEMENTS // n)
        for start in range(0, x.shape[0], step):
            block = x[start:start + step]
            pad = cupy.zeros((block.shape[0], n), dtype=cupy.float64)
            pad[:, :num_cols] = block
            if ne > 0 and not transpose:
                pad[:, num_cols:num_cols + ne] = block[:, -1:]
                pad[:, n - ne:] = block[:, :1]
            spec = cupy.fft.rfft(pad, axis=1)
            spec *= Hd
            out = cupy.fft.irfft(spec, n=n, axis=1)
            if ne > 0 and transpose:
                out[:, num_cols - 1] += out[:, num_cols:min(num_cols + ne, n - ne)].sum(axis=1)
                out[:, 0] += out[:, n - ne:].sum(axis=1)
            block[...] = out[:, :num_cols]
