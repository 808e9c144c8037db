"""The CPU ramp filter: FFT convolution of detector rows, blocks of rows on all threads,
with FBP's weights on either side and the result written in the layout its consumer
reads.

The linear map is :func:`leap.reconstruction.filters.filter_rows`' (rows zero-padded to
``n`` samples,
optionally extended by their edge values, multiplied by the real response H in the
rfft layout, the first ``num_cols`` samples kept; or its transpose). The FFTs are
scipy.fft's (pocketfft) compiled into Numba by ``rocket-fft``, so each thread runs its
share of the row blocks in one compiled call (:mod:`leap.kernels.cpu.threads`): no Python
or GIL between blocks, and blocks small enough (:data:`BLOCK_BYTES`) that a block's
padded rows, spectra and output stay in a core's L2 cache. Against the former pool of Python threads calling scipy.fft on 1 MiB blocks
(180 views, 2 threads): 0.55× the time at 128 columns, 0.63× at 256, 0.72× at 512 and
1024; the same results bit for bit, except the transposed extrapolation's fold-back
sums (summed in another order: float rounding).

FBP's filtering stage is one pass of :func:`filter_views`: each block of rows is read
from the measured views (times the offset-scan and pre-weights) into its padded
buffer, filtered, multiplied by the post-weights and written straight into the array
the back-projector reads (:data:`ROWS`, :data:`VALUES`, :data:`CUMSUM`), while it is
in cache. As separate passes (NumPy weighting, filter in place, post-weighting,
:func:`~leap.kernels.cpu.columns.projection_row_values`) the weighting ran on one
thread and each pass read and wrote the whole projection again.
"""
from __future__ import annotations

import numba
import numpy as np
import rocket_fft  # noqa: F401  (registers scipy.fft with Numba)
import scipy.fft

from . import threads
from ._jit import JIT
from .columns import GUARD_HI, GUARD_LO, INLINE, zero_guard_columns

#: Padded bytes per block of rows: a block's three row-sized buffers (padded input,
#: spectrum, output) fit a 512 KiB L2 cache. 64 to 256 KiB measured alike (within
#: 10 %); 16 KiB blocks were up to 1.6× slower at 256 and 512 columns.
BLOCK_BYTES = 1 << 17

#: Layouts :func:`filter_views` writes: the filtered rows as they are, (views, rows,
#: columns); or what the axial back-projector reads
#: (:func:`leap.kernels.cpu.launch.prepare_projections`), rows contiguous between guard
#: columns, as values (:func:`~leap.kernels.cpu.columns.projection_row_values`) or as
#: row-cumulative sums (:func:`~leap.kernels.cpu.columns.projection_row_cumsum`).
ROWS, VALUES, CUMSUM = 0, 1, 2


def rows_per_block(n: int, itemsize: int) -> int:
    """Rows of ``n`` padded samples of ``itemsize`` bytes per block (at least one)."""
    return max(1, BLOCK_BYTES // (n * itemsize))


@numba.njit(**INLINE)
def _at(size, i):
    """Index ``i`` along an axis of ``size`` that broadcasts (size 1: always 0)."""
    return i if size > 1 else 0


@numba.njit(**INLINE)
def _row(w, a, j):
    """Row (a, j) of a weight array broadcasting against (views, rows, columns): its
    columns, or one value for all."""
    return w[_at(w.shape[0], a), _at(w.shape[1], j)]


@numba.njit(**INLINE)
def _multiply(dst, w):
    """``dst *= w`` with ``w`` as long as dst or one value (branch outside the loop, so
    each loop vectorises)."""
    if w.size == 1:
        v = w[0]
        for c in range(dst.size):
            dst[c] = dst[c] * v
    else:
        for c in range(dst.size):
            dst[c] = dst[c] * w[c]


@numba.njit(**INLINE)
def _place(dst, w, src):
    """``dst = w·src`` (float64 product rounded to dst's type), w as for :func:`_multiply`."""
    if w.size == 1:
        v = w[0]
        for c in range(dst.size):
            dst[c] = v * src[c]
    else:
        for c in range(dst.size):
            dst[c] = w[c] * src[c]


def filter_views(g, first, scale, f0, f1, f2, post, H, n, ne, transpose, row_factor, out,
                 layout, step):
    """Weight, ramp filter and lay out the views ``g`` (nv, nr, nci) float32 or float64,
    C-contiguous, in blocks of ``step`` rows; transforms in g's precision.

    Row j of view a is placed at columns ``first .. first + nci`` of an ``nc``-column row
    (zeros elsewhere; nc = out's column count, nci for plain filtering) as
    ``(scale·g)·W``, with ``scale·g`` rounded to g's type (offset scans' weights) and
    W = (f0·f1)·f2 the pre-weights, multiplied in float64 and rounded; then filtered:
    zero-padded to ``n`` samples, times H ((n // 2 + 1,) real, g's type) in the rfft
    layout. ``ne > 0``: the padding's first ``ne`` samples repeat the row's last value
    and its last ``ne`` its first (LEAP's truncated-scan extrapolation); ``transpose``:
    the transpose of that map, the padded outputs folded back onto the edge samples.
    The first nc outputs, times ``post``, go to ``out`` by ``layout``:

    * :data:`ROWS`: ``out[a, j, i]`` (nv, nr, nc); out may be g itself (in place).
    * :data:`VALUES`: ``out[a, GUARD_LO + i, j]`` times ``row_factor[j]`` (float64
      product), out (nv, GUARD_LO + nc + GUARD_HI, m ≥ nr + 1); guard columns and rows
      from nr on zero.
    * :data:`CUMSUM`: the running sums ``out[a, GUARD_LO + i, j + 1] = Σ_{j' <= j}
      value·row_factor[j']`` in float64, ``out[a, GUARD_LO + i, 0] = 0``, out (nv,
      GUARD_LO + nc + GUARD_HI, nr + 1); guard columns zero.

    scale (nv | 1, nr | 1, nci | 1) float64; f0, f1, f2 (nv | 1, nr | 1, nc | 1)
    float64; post (nv | 1, nr | 1, nc | 1) of g's type: an axis of length 1 broadcasts.
    row_factor (nr,) float64 (read by VALUES and CUMSUM).

    Blocks of rows, then (VALUES, CUMSUM) views, on all threads
    (:func:`leap.kernels.cpu.threads.run`).
    """
    nv, nr, nci = g.shape
    threads.run(_filter_blocks, g, first, scale, f0, f1, f2, post, H, n, ne, transpose,
                row_factor, out, layout, step, items=(nv * nr + step - 1) // step)
    if layout != ROWS:
        threads.run(_finish_views, out, nr, row_factor, layout, items=nv)


@numba.njit(**JIT)
def _filter_blocks(g, first, scale, f0, f1, f2, post, H, n, ne, transpose, row_factor, out,
                   layout, rows, start, step):
    """The blocks of ``rows`` rows ``b = start, start + step, …`` of :func:`filter_views`
    (row i: view i // nr, detector row i % nr): weighted into a zero-padded block,
    filtered, post-weighted and written to ``out`` by ``layout`` (CUMSUM: the values,
    summed by :func:`_finish_views`). Loops rather than array expressions: Numba compiles
    an error message with the shapes for each of those (2 s of a first FBP)."""
    nv, nr, nci = g.shape
    nc = out.shape[2] if layout == ROWS else out.shape[1] - GUARD_LO - GUARD_HI
    hi = min(nc + ne, n - ne)
    num_rows = nv * nr
    # Rows of the pre-weights that differ: (view, row) pairs, or fewer where they
    # broadcast; the product is formed again only when a block's rows reach a new one.
    wa = max(f0.shape[0], f1.shape[0], f2.shape[0]) > 1
    wj = max(f0.shape[1], f1.shape[1], f2.shape[1]) > 1
    wd = np.empty(nc, dtype=np.float64)
    w = np.empty(nc, dtype=g.dtype)
    for b in range(start, (num_rows + rows - 1) // rows, step):
        i0 = b * rows
        i1 = min(num_rows, i0 + rows)
        pad = np.zeros((i1 - i0, n), dtype=g.dtype)
        key = -1
        for i in range(i0, i1):
            a = i // nr
            j = i - a * nr
            row = pad[i - i0]
            # Rounded into the row's type at each step, as the separate passes were.
            _place(row[first:first + nci], _row(scale, a, j), g[a, j])
            k = (a if wa else 0) * nr + (j if wj else 0)
            if k != key:
                key = k
                for c in range(nc):
                    wd[c] = 1.0
                _multiply(wd, _row(f0, a, j))
                _multiply(wd, _row(f1, a, j))
                _multiply(wd, _row(f2, a, j))
                for c in range(nc):
                    w[c] = wd[c]
            _multiply(row[:nc], w)
            if ne > 0 and not transpose:
                # Loops, not slice assignments and sums (each of those compiled its own
                # broadcasting and shape checks: 1 s of a first FBP).
                edge = row[nc - 1]
                for c in range(nc, min(nc + ne, n)):
                    row[c] = edge
                edge = row[0]
                for c in range(n - ne, n):
                    row[c] = edge
        spec = scipy.fft.rfft(pad, axis=1)
        for r in range(spec.shape[0]):
            for c in range(spec.shape[1]):
                spec[r, c] *= H[c]
        res = scipy.fft.irfft(spec, n, axis=1)
        for i in range(i0, i1):
            a = i // nr
            j = i - a * nr
            row = res[i - i0]
            if ne > 0 and transpose:
                # Where the two extensions overlap (short rows) the leading-edge one was
                # written last, so those samples fold onto the first value.
                # Summed in order in the row's type, from the first term (what
                # ndarray.sum does).
                if hi > nc:
                    total = row[nc]
                    for c in range(nc + 1, hi):
                        total += row[c]
                    row[nc - 1] += total
                total = row[n - ne]
                for c in range(n - ne + 1, n):
                    total += row[c]
                row[0] += total
            _multiply(row[:nc], _row(post, a, j))
            if layout == ROWS:
                for c in range(nc):
                    out[a, j, c] = row[c]
            elif layout == VALUES:
                factor = row_factor[j]
                for c in range(nc):
                    out[a, GUARD_LO + c, j] = row[c] * factor
            else:
                # The values for now, summed per view by _finish_views.
                for c in range(nc):
                    out[a, GUARD_LO + c, j] = row[c]


@numba.njit(**JIT)
def _finish_views(out, nr, row_factor, layout, start, step):
    """Views ``a = start, start + step, …`` of a VALUES or CUMSUM ``out`` of
    :func:`filter_views`: guard columns (and VALUES' rows from nr on) zeroed, CUMSUM's
    values replaced by their running sums."""
    nc = out.shape[1] - GUARD_LO - GUARD_HI
    for a in range(start, out.shape[0], step):
        zero_guard_columns(out, a, nc)
        if layout == VALUES:
            for c in range(out.shape[1]):
                for j in range(nr, out.shape[2]):
                    out[a, c, j] = 0.0
        else:
            for c in range(GUARD_LO, GUARD_LO + nc):
                _running_sum(out, a, c, nr, row_factor)


@numba.njit(**INLINE)
def _running_sum(out, a, c, nr, row_factor):
    """``out[a, c, :nr]`` (values) → ``out[a, c, :nr + 1]`` (their running sums times
    row_factor, in float64, from 0), in place: row j's value is read before the sum
    through it is written over it at j + 1."""
    run = 0.0
    value = out[a, c, 0]
    out[a, c, 0] = 0.0
    for j in range(nr):
        run += value * row_factor[j]
        value = out[a, c, j + 1] if j + 1 < nr else 0.0
        out[a, c, j + 1] = run
