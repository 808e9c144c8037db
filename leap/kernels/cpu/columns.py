"""Per-column building blocks of the axial CPU kernels (:mod:`leap.kernels.cpu.axial`,
:mod:`leap.kernels.cpu.axial_direct`, :mod:`leap.kernels.cpu.axial_slice`).

Why cumulative sums: for one view and one voxel column (x, y) the column footprint is
the same for every z, and the row intervals of the voxels are contiguous and equally
long (``[A + kB, A + (k+1)B]``). The row-overlap-weighted sum of the column's values
over detector row j is therefore ∫ over row j of a piecewise-constant function, i.e.
the difference of its piecewise-linear cumulative integral at the row edges. The
projector interpolates a z-cumulative sum of the volume; the back-projector, its exact
transpose, interpolates a row-cumulative sum of the projections. This replaces a
per-voxel × per-row overlap loop by two interpolations per row (or per voxel).

Columns: a voxel's column footprint ``[c_lo, c_hi]`` at most one pixel wide meets at
most two pixels, ``i0 = floor(c_lo + 0.5)`` and ``i0 + 1``; both weights are computed
without branches (:func:`two_tap`) and written into arrays padded with guard
columns (``GUARD_LO`` before and ``GUARD_HI`` after the detector), so a voxel never
needs a bounds test or a data-dependent loop. The cone back-projector takes footprints
up to two pixels wide as three taps (:func:`three_tap`, one interpolation of the
combined columns); wider ones, and the other kernels' wider ones, use the general loop.

Cone beams: per voxel column the cumulative integral is evaluated at all row edges in
one branch-free loop (the few positions off the ends are peeled off first) and its
differences are added, in the same pass, into the two columns' rows, which are
contiguous in the (column, row) view buffer (:func:`add_cumulative_differences`; wider
footprints interpolate once into a vector, :func:`cumulative_at`, for all their
pixels). A column whose values the projector weights per view (the modular stretch,
slice weights) has no precomputed running sum: where its rows are at most two voxels
long, each row's integral is taken from the two or three values it meets
(:func:`add_integrals`, no running sum; :func:`row_integral`). The back-projector first
weights its two or three taps' cumulative sums into
one (:func:`combine_columns`), then interpolates once per voxel boundary. The
difference and weighting loops index with unsigned integers, so Numba emits no
negative-index wrap-around and LLVM vectorises them; the interpolations, whose indexed
loads LLVM leaves scalar, are vector code written out (:mod:`leap.kernels.cpu.simd`).

Direct rows (parallel and fan beams whose slices lie on detector rows): voxel k meets
only row k + shift, so no interpolation is needed and the kernels read the values
themselves, laid out the same way (:func:`volume_z_columns`,
:func:`projection_row_values`): one load per tap instead of two, and none of the
cancellation of differencing float32 sums that grow along the column.

Flat arrays: the helpers take a raveled array and an offset (a voxel column at
``(iy·nx + ix)·nz``, a detector column's rows at ``(a·L + c)·m``, m the stored column
length) rather than a view per voxel column. In Numba a view takes a reference on its
parent, an atomic update at each end, and the projections and the volume are shared by
all threads: a fixed cost per voxel column and view that weighs most where columns are
short (parallel back-projection at nz = 32, 128² columns, 90 views: 21 to 27 % of its
time).

Strides: arrays that are transposed into or read back out across their columns (the
direct-row G, the projectors' view accumulators) store columns an odd number of cache
lines long (:func:`column_length`), and the volume is transposed a few slices at a time
(:data:`Z_BLOCK`): with strides a power of two, the accesses of one pass fell on a few
cache sets.

The per-column helpers are compiled inline into the kernels that call them; the
whole-array passes (:func:`volume_z_cumsum`, :func:`volume_z_columns`,
:func:`projection_row_values`, :func:`projection_row_cumsum`) run on all threads
(:mod:`leap.kernels.cpu.threads`).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from . import threads
from ._jit import FAST_JIT, INLINE
from .simd import LANES, add_interp_differences, add_row_integrals, interp_blocks, prefetch
from .voxel_weights import ray_stretch

# Guard columns around the detector in the projector's view buffer and in the
# back-projector's cumulative sums (see two_tap and three_tap: i0 ∈ [-1, ncols], up to
# i0 + 2).
GUARD_LO = 1
GUARD_HI = 3
#: Slices per pass of :func:`volume_z_columns`' transposition.
Z_BLOCK = 8


def volume_z_cumsum(f, iy0=0, iy1=None):
    """Cumulative sums along z of the rows ``iy0 <= iy < iy1`` (default: all) of f,
    ``S[r, ix, k] = Σ_{k' < k} f[k', iy0 + r, ix]``, and each voxel column's extent
    (:func:`volume_z_columns`).

    f : (nz, ny, nx) float32. Returns S : (iy1 − iy0, nx, nz + 1) float32, summed in
    float64, and the extents (iy1 − iy0, nx, 2) int32.
    """
    return _z_pass(_volume_z_cumsum_rows, f, iy0, iy1, f.shape[0] + 1)


def _z_pass(kernel, f, iy0, iy1, depth):
    """Run a z pass ``kernel(f, out, extent, iy0, start, step)`` over the rows ``iy0 <= iy
    < iy1`` (None: to the end) of f on all threads; returns ``out`` (iy1 − iy0, nx,
    depth) float32 and the extents (iy1 − iy0, nx, 2) int32."""
    nz, ny, nx = f.shape
    iy1 = ny if iy1 is None else iy1
    out = np.empty((iy1 - iy0, nx, depth), dtype=np.float32)
    extent = np.empty((iy1 - iy0, nx, 2), dtype=np.int32)
    threads.run(kernel, f, out, extent, iy0, items=iy1 - iy0)
    return out, extent


@numba.njit(**FAST_JIT)
def _volume_z_cumsum_rows(f, S, extent, iy0, start, step):
    """Rows ``iy0 + r``, ``r = start, start + step, …`` of :func:`volume_z_cumsum`."""
    nz = f.shape[0]
    nx = f.shape[2]
    run = np.empty(nx, dtype=np.float64)
    first = np.empty(nx, dtype=np.int32)
    last = np.empty(nx, dtype=np.int32)
    for r in range(start, S.shape[0], step):
        iy = iy0 + r
        # Loops rather than slice assignments here and below: Numba compiles each of
        # those with its broadcasting and shape checks (0.2 to 0.5 s of a fresh
        # environment's first call apiece).
        for ix in range(nx):
            run[ix] = 0.0
            first[ix] = nz
            last[ix] = -1
            S[r, ix, 0] = 0.0
        for k in range(nz):
            for ix in range(nx):
                v = f[k, iy, ix]
                run[ix] += v
                S[r, ix, k + 1] = run[ix]
                # Selects, not branches: the loop still vectorises. NaN counts as
                # nonzero (v != 0), so it still reaches the projections.
                last[ix] = k if v != 0.0 else last[ix]
                first[ix] = min(first[ix], k if v != 0.0 else nz)
        for ix in range(nx):
            extent[r, ix, 0] = first[ix]
            extent[r, ix, 1] = last[ix]


def volume_z_columns(f, iy0=0, iy1=None):
    """The rows ``iy0 <= iy < iy1`` (default: all) of the volume with z contiguous:
    ``V[r, ix, k] = f[k, iy0 + r, ix]``.

    f : (nz, ny, nx) float32. Returns V : (iy1 − iy0, nx, nz) float32 (what the projector reads
    for direct rows, in place of :func:`volume_z_cumsum`) and each voxel column's extent
    (ny, nx, 2) int32: the first and last k with ``f[k, iy, ix] != 0`` (NaN included),
    ``(nz, -1)`` for a column of zeros. The projectors skip empty columns and the
    voxels outside the extent (adding zeros changes nothing), so a phantom in air
    costs in proportion to what is not air.
    """
    return _z_pass(_volume_z_columns_rows, f, iy0, iy1, f.shape[0])


@numba.njit(**FAST_JIT)
def _volume_z_columns_rows(f, V, extent, iy0, start, step):
    """Rows ``iy0 + r``, ``r = start, start + step, …`` of :func:`volume_z_columns`."""
    nz = f.shape[0]
    nx = f.shape[2]
    for r in range(start, V.shape[0], step):
        iy = iy0 + r
        for ix in range(nx):
            extent[r, ix, 0] = nz
            extent[r, ix, 1] = -1
        # Eight slices at a time: each column gets 32 contiguous bytes per pass instead
        # of 4 (a slice at a time, the writes of a pass touched nx cache lines, nz·4 bytes
        # apart: few cache sets where nz is a power of two), and the eight rows of f read
        # together (ny·nx·4 bytes apart, often one set) fit an 8-way set. 128³: 1.1 ms
        # instead of 2.9; 256³: 34 instead of 49; 512³: 275 instead of 502 (2 threads).
        for k0 in range(0, nz, Z_BLOCK):
            k1 = min(nz, k0 + Z_BLOCK)
            for ix in range(nx):
                lo = extent[r, ix, 0]
                hi = extent[r, ix, 1]
                for k in range(k0, k1):
                    v = f[k, iy, ix]
                    V[r, ix, k] = v
                    hi = k if v != 0.0 else hi
                    lo = min(lo, k if v != 0.0 else nz)
                extent[r, ix, 0] = lo
                extent[r, ix, 1] = hi


@numba.njit(**INLINE)
def tile_fov_ranges(ty, tx, nx, iy0, ix0, x0, y0, voxel_width, fov_r2):
    """(lo, hi, inside) of a back-projection tile (``ty`` rows from ``iy0``, ``tx``
    columns from ``ix0`` of a volume ``nx`` columns wide): row r's columns inside the
    field of view are ``lo[r] <= ix < hi[r]`` ((ty,) intp each, :func:`fov_ix_range`
    clipped to the tile); ``inside``: whether any is."""
    lo = np.empty(ty, dtype=np.intp)
    hi = np.empty(ty, dtype=np.intp)
    inside = False
    for r in range(ty):
        l, h = fov_ix_range(y0 + (iy0 + r) * voxel_width, x0, voxel_width, nx, fov_r2)
        lo[r] = max(l, ix0)
        hi[r] = min(h, ix0 + tx)
        inside = inside or lo[r] < hi[r]
    return lo, hi, inside


@numba.njit(**INLINE)
def store_tile(f, slab, iy0, ix0):
    """Write a back-projection tile ``slab`` (ty, tx, nz) float64, (y, x, z) order, into
    the volume f (nz, ny, nx) float32 at rows ``iy0..`` and columns ``ix0..``."""
    ty, tx, nz = slab.shape
    for k in range(nz):
        for r in range(ty):
            for c in range(tx):
                f[k, iy0 + r, ix0 + c] = slab[r, c, k]


@numba.njit(**INLINE)
def load_tile(f, slab, iy0, ix0):
    """The inverse of :func:`store_tile`: the volume's values at the tile into ``slab``
    (back-projections that add to what f holds)."""
    ty, tx, nz = slab.shape
    for k in range(nz):
        for r in range(ty):
            for c in range(tx):
                slab[r, c, k] = f[k, iy0 + r, ix0 + c]


@numba.njit(**FAST_JIT)
def column_length(n, itemsize):
    """Stored length of columns of ``n`` values of ``itemsize`` bytes that are read or
    written many at a time (G's detector columns, the projector's accumulators): at
    least n + 1, and from a 64-byte cache line's worth on, an odd number of lines.

    Columns a power of two long put the same element of neighbouring columns on a few
    cache sets, and two columns 4 KiB apart into each other's way (a store to one looks
    like it may feed a load from the other): transposing 180 views of 128 rows into G
    took 4.2 ms, 1.5 ms with the columns padded to 144; reading a 512-row accumulator
    back out 0.90 ms a view, 0.20 ms padded to 520. Whole lines, because with columns
    not a whole number of lines the back-projector's vector loads straddle lines (3 %
    slower with nrows + 1)."""
    per_line = 64 // itemsize
    if n < per_line:
        return n + 1
    lines = n // per_line + 1
    return per_line * (lines + 1 - lines % 2)


@numba.njit(**INLINE)
def zero_guard_columns(G, a, ncols):
    """Zero view a's guard columns in G (a prepared array, :func:`projection_row_values`
    or :func:`projection_row_cumsum`, of ``ncols`` detector columns): the pixels off the
    detector that two-tap footprints read without bounds tests."""
    m = G.shape[2]
    for c in range(GUARD_LO):
        for j in range(m):
            G[a, c, j] = 0.0
    for c in range(GUARD_LO + ncols, G.shape[1]):
        for j in range(m):
            G[a, c, j] = 0.0


def projection_row_values(g, row_factor, G):
    """Weighted projections with rows contiguous, with zero guard columns, into G
    (what the back-projector reads for direct rows, in place of
    :func:`projection_row_cumsum`).

    ``G[a, i + GUARD_LO, j] = g[a, j, i]·w[j]``; columns ``0 .. GUARD_LO-1`` and the last
    ``GUARD_HI`` are zero, and so are rows ``nrows`` and beyond. g : (na, nrows, ncols)
    float32; row_factor : (nrows,) float64; G : (na, GUARD_LO + ncols + GUARD_HI, m)
    float32 with m = :func:`column_length` (nrows, 4), overwritten.
    """
    threads.run(_projection_row_values_views, g, row_factor, G, items=g.shape[0])
    return G


@numba.njit(**FAST_JIT)
def _projection_row_values_views(g, row_factor, G, start, step):
    """Views ``a = start, start + step, …`` of :func:`projection_row_values`."""
    na, nrows, ncols = g.shape
    for a in range(start, na, step):
        zero_guard_columns(G, a, ncols)
        G[a, :, nrows:] = 0.0
        for j in range(nrows):
            w = row_factor[j]
            for i in range(ncols):
                G[a, GUARD_LO + i, j] = g[a, j, i] * w


def projection_row_cumsum(g, row_factor, G):
    """Row-cumulative sums of weighted projections, with zero guard columns, into G.

    ``G[a, i + GUARD_LO, j] = Σ_{j' < j} g[a, j', i]·w[j']``; columns ``0 .. GUARD_LO-1``
    and the last ``GUARD_HI`` are zero (pixels off the detector).

    g : (na, nrows, ncols) float32; row_factor : (nrows,) float64;
    G : (na, GUARD_LO + ncols + GUARD_HI, nrows + 1) float32, overwritten (summed in
    float64).
    """
    threads.run(_projection_row_cumsum_views, g, row_factor, G, items=g.shape[0])
    return G


@numba.njit(**FAST_JIT)
def _projection_row_cumsum_views(g, row_factor, G, start, step):
    """Views ``a = start, start + step, …`` of :func:`projection_row_cumsum`."""
    na, nrows, ncols = g.shape
    run = np.empty(ncols, dtype=np.float64)
    for a in range(start, na, step):
        zero_guard_columns(G, a, ncols)
        for i in range(ncols):
            run[i] = 0.0
            G[a, GUARD_LO + i, 0] = 0.0
        for j in range(nrows):
            w = row_factor[j]
            for i in range(ncols):
                run[i] += g[a, j, i] * w
                G[a, GUARD_LO + i, j + 1] = run[i]


@numba.njit(**INLINE)
def scratch_vectors(n0, n1, n2, n3, n4, n5):
    """Six float64 work vectors of lengths n0..n5, carved from one block in order with
    a cache line between them.

    Separate allocations land wherever the heap has room, and two of them 4 KiB apart
    (or a multiple) make the core treat a load from one as dependent on a store to the
    other (4K aliasing): the modular projector, whose loops read one vector while
    writing the next, ran 1.4x slower after other calls had shuffled the heap. In one
    block the vectors lie less than 4 KiB from their neighbours' matching entries.
    """
    gap = 8
    block = np.zeros(n0 + n1 + n2 + n3 + n4 + n5 + 5 * gap, dtype=np.float64)
    o1 = n0 + gap
    o2 = o1 + n1 + gap
    o3 = o2 + n2 + gap
    o4 = o3 + n3 + gap
    o5 = o4 + n4 + gap
    return (block[:n0], block[o1:o1 + n1], block[o2:o2 + n2], block[o3:o3 + n3],
            block[o4:o4 + n4], block[o5:o5 + n5])


@numba.njit(**INLINE)
def prefetch_column(a, c, n):
    """Ask the CPU to fetch ``a[c:c + n]`` (a flat array; past its end: nothing) into
    its caches ahead of use (:func:`leap.kernels.cpu.simd.prefetch`, a line at a time).

    The cone projector reads the volume's cumulative sums a column at a time, in memory
    order, but the hardware prefetcher stops at each 4 KiB page and takes a few misses to
    start again: at nz = 512 every second column, and the slab of cumulative sums
    (64 MiB) does not stay in the caches from one view to the next. Fetched two columns
    ahead, 512³ bench problems (24 views, 2 threads, alternated): cone projection
    1.25-1.29 → 1.10-1.11 s, modular 2.50-2.52 → 2.28-2.34 s; 256³ within the noise.
    """
    line = 64 // a.itemsize          # entries per cache line (64 bytes on x86 and Arm)
    for i in range(c, c + n, line):
        prefetch(a, i)


@numba.njit(**INLINE)
def cumulative_at(cum, c, n, o, s, t0, t1, E):
    """``E[t] = C(o + t·s)`` for ``t0 <= t <= t1`` (s > 0).

    C is the piecewise-linear interpolant of the cumulative sums ``cum[c:c + n + 1]``
    (``cum[c] = 0``), constant beyond its ends: the values of ``interp_cumulative``.
    ``cum`` is a flat array, ``c`` an offset into it (flat arrays: see the module
    notes).
    The few positions off either end are peeled off first, so the main loop has no
    clamps or branches; it runs four positions at a time as vector code
    (:func:`leap.kernels.cpu.simd.interp_blocks`, the scalar loop's arithmetic with
    positions advanced by addition) and the scalar loop takes the last few.
    """
    base = np.uintp(c)
    top = np.float64(cum[base + np.uintp(n)])
    ta = t0
    while ta <= t1 and o + ta * s <= 0.0:
        E[ta] = 0.0
        ta += 1
    tb = t1
    while tb >= ta and o + tb * s >= n:
        E[tb] = top
        tb -= 1
    # The last inside position tb is the scalar loop's (simd module notes).
    blocks = max(tb - ta, 0) // LANES
    interp_blocks(cum, base, o, s, ta, blocks, E)
    t = ta + blocks * LANES
    # A float copy of t and floor() (q > 0 here) spare two int/float conversions.
    tf = float(t)
    for t in range(t, tb + 1):
        q = o + tf * s
        fk = math.floor(q)
        ku = base + np.uintp(int(fk))
        c0 = np.float64(cum[ku])
        E[np.uintp(t)] = c0 + (q - fk) * (np.float64(cum[ku + np.uintp(1)]) - c0)
        tf += 1.0


@numba.njit(**INLINE)
def _interp_one(cum, base, o, s, t):
    """C(o + t·s) inside the column (0 < q < n): the scalar loop of :func:`cumulative_at`."""
    q = o + float(t) * s
    fk = math.floor(q)
    ku = base + np.uintp(int(fk))
    c0 = np.float64(cum[ku])
    return c0 + (q - fk) * (np.float64(cum[ku + np.uintp(1)]) - c0)


def _weight(w, t):
    """w (a float), ``w[t]`` (an array of weights) or, for a ray-stretch triple (D2, r, v),
    ``v[t]·√(1 + D2[t]·r)``."""


@overload(_weight, inline="always")
def _weight_impl(w, t):
    if isinstance(w, types.BaseTuple):
        return lambda w, t: w[2][np.uintp(t)] * ray_stretch(w[0][np.uintp(t)], w[1])
    if isinstance(w, types.Array):
        return lambda w, t: w[np.uintp(t)]
    return lambda w, t: w


@numba.njit(**INLINE)
def _add_pair(a, a0, w0, a1, w1, t, d):
    a[np.uintp(a0 + t)] += _weight(w0, t) * d
    if a1 is not None:
        a[np.uintp(a1 + t)] += w1 * d


@numba.njit(**INLINE)
def add_cumulative_differences(cum, c, n, o, s, t0, t1, a, a0, w0, a1, w1):
    """``a[a0 + t] += w0·(E[t + 1] − E[t])`` and, unless a1 is None, ``a[a1 + t] +=
    w1·(E[t + 1] − E[t])`` for ``t0 <= t < t1``, with ``E[t] = C(o + t·s)`` as
    :func:`cumulative_at` gives it (w0 may be an array of weights instead, with a1 None:
    ``w0[t]``, or a ray-stretch triple (D2, r, v): weight ``v[t]·√(1 + D2[t]·r)``,
    :mod:`leap.kernels.cpu.voxel_weights`):
    :func:`cumulative_at` then :func:`add_differences` (or its two-column and weighted
    forms) in one pass, the same sums bit for bit, without storing and reloading E (the
    vector blocks difference in registers,
    :func:`leap.kernels.cpu.simd.add_interp_differences`). The differences between
    positions off the same end are exactly 0 and are not added.
    """
    base = np.uintp(c)
    top = np.float64(cum[base + np.uintp(n)])
    ta = t0
    while ta <= t1 and o + ta * s <= 0.0:
        ta += 1
    tb = t1
    while tb >= ta and o + tb * s >= n:
        tb -= 1
    prev = 0.0                   # E at ta − 1 (off the lower end) or at the last position
    blocks = 0
    if ta <= tb:
        # The first inside position alone, so that every vector lane's difference has
        # a left neighbour inside [t0, t1].
        e = _interp_one(cum, base, o, s, ta)
        if ta > t0:
            _add_pair(a, a0, w0, a1, w1, ta - 1, e)
        # The last inside position tb is the scalar loop's (simd module notes).
        blocks = max(tb - ta - 1, 0) // LANES
        prev = add_interp_differences(cum, base, o, s, ta + 1, blocks, e, a, a0, w0, a1, w1)
        for t in range(ta + 1 + blocks * LANES, tb + 1):
            e = _interp_one(cum, base, o, s, t)
            _add_pair(a, a0, w0, a1, w1, t - 1, e - prev)
            prev = e
    if t0 <= tb < t1:
        _add_pair(a, a0, w0, a1, w1, tb, top - prev)


#: Zeros before a column's values in the buffer of :func:`add_integrals` (rows reach up
#: to two cells below the column's first voxel) and at least as many after it.
CELL_PAD = 4


@numba.njit(**INLINE)
def row_integral(u, p, s):
    """``∫ u`` over ``[p, p + s]`` (``0 <= p``, ``0 < s <= 2``) of the piecewise-constant
    ``u[k]`` on ``[k, k + 1)``: the row integrals of
    :func:`leap.kernels.cpu.simd.add_row_integrals`, operation for operation."""
    kf = float(int(p))
    frac = p - kf
    upper = frac + s                 # the upper edge from the start of cell kf
    past1 = upper >= 1.0
    past2 = upper >= 2.0
    i = np.uintp(int(kf))
    c0 = u[i]
    c1 = u[i + np.uintp(1)]
    top = u[i + np.uintp(2)] if past2 else (c1 if past1 else c0)
    whole = (c0 if past1 else 0.0) + (c1 if past2 else 0.0)
    frac1 = upper - (2.0 if past2 else (1.0 if past1 else 0.0))
    return (whole - frac * c0) + frac1 * top


@numba.njit(**INLINE)
def add_integrals(u, n, o, s, t0, t1, a, a0, w0, a1, w1, roots, most):
    """``a[a0 + t] += w0·(E[t + 1] − E[t])`` and ``a[a1 + t] += w1·(E[t + 1] − E[t])``
    for ``t0 <= t < t1``, ``E[t] = C(o + t·s)`` the cumulative integral of a column of n
    values, as :func:`add_cumulative_differences` adds them, but from the values
    themselves: ``u[CELL_PAD + k]`` (value k; zeros in the CELL_PAD entries before and
    the CELL_PAD after them), each row's integral over its cells
    (:func:`row_integral`) instead of differences of interpolated cumulative sums,
    so the caller takes no running sum of the column. For ``0 < s <= 2`` and rows
    whose positions lie in ``[−2, n]``.

    ``roots`` (a triple (D2, r, Q), D2 and Q at least ``t1 − t0 + 1`` long): in the same
    loop, ``Q[i] = √(1 + D2[i]·r)`` for ``0 <= i <`` the returned count (the vector
    loop's positions, a multiple of 4, at most ``most``, 0 for none; the caller takes the
    rest): the modular projector's next voxel column's stretch
    (:mod:`leap.kernels.cpu.voxel_weights`).
    """
    o = o + CELL_PAD
    blocks = max(t1 - t0, 0) // LANES
    root_blocks = min(blocks, most // LANES)
    add_row_integrals(u, o, s, t0, blocks, a, a0, w0, a1, w1, roots, root_blocks)
    for t in range(t0 + blocks * LANES, t1):
        d = row_integral(u, o + t * s, s)
        a[np.uintp(a0 + t)] += w0 * d
        a[np.uintp(a1 + t)] += w1 * d
    return LANES * root_blocks


@numba.njit(**INLINE)
def add_differences(E, t0, t1, w, a, a0):
    """``a[a0 + t] += w · (E[t + 1] − E[t])`` for ``t0 <= t < t1`` (a flat, a0 an offset).

    Unsigned indices: Numba then emits no negative-index wrap-around, and LLVM
    vectorises the loop (so do the other difference loops below).
    """
    one = np.uintp(1)
    b = np.uintp(a0)
    for t in range(np.uintp(t0), np.uintp(t1)):
        a[b + t] += w * (E[t + one] - E[t])


@numba.njit(**INLINE)
def direct_slices(shift, nz, nrows):
    """Direct rows: the slices ``k0 <= k < k1`` of nz that land on the detector's nrows
    rows, slice k on row k + shift (``k0 >= k1``: none do)."""
    return max(0, -shift), min(nz, nrows - shift)


@numba.njit(**INLINE)
def add_direct2(v, v0, n, w0, w1, a, a0, a1):
    """Direct rows (voxel k covers exactly row k + shift): ``a[a0 + t] += w0·v[v0 + t]``
    and ``a[a1 + t] += w1·v[v0 + t]`` for ``0 <= t < n``: a voxel column's values into
    two detector columns' rows (w1 = 0: a0 only). Flat arrays and offsets (module
    notes), unsigned so the loop vectorises."""
    b = np.uintp(v0)
    c0 = np.uintp(a0)
    c1 = np.uintp(a1)
    two = w1 != 0.0
    for t in range(np.uintp(n)):
        x = np.float64(v[b + t])
        a[c0 + t] += w0 * x
        if two:
            a[c1 + t] += w1 * x


@numba.njit(**INLINE)
def gather_direct2(g, g0, g1, n, w0, w1, col, c0):
    """Transpose of :func:`add_direct2`: ``col[c0 + t] += w0·g[g0 + t] + w1·g[g1 + t]``
    for ``0 <= t < n``: two detector columns' row values (flat offsets g0 and g1 of a
    raveled projection) into a voxel column (flat offset c0 of a raveled tile), direct
    rows (w1 = 0: g0 only; flat arrays: see the module notes)."""
    a = np.uintp(g0)
    b = np.uintp(g1)
    c = np.uintp(c0)
    two = w1 != 0.0
    for t in range(np.uintp(n)):
        d = w0 * np.float64(g[a + t])
        if two:
            d += w1 * np.float64(g[b + t])
        col[c + t] += d


@numba.njit(**INLINE)
def combine_columns(g, c0, c1, c2, w0, w1, w2, n, o, s, t0, t1, out):
    """``out[k] = w0·g[c0 + k] + w1·g[c1 + k] + w2·g[c2 + k]`` (float64; the third column
    is not read when w2 = 0; g flat, c0, c1, c2 offsets)
    wherever :func:`cumulative_at` with positions ``o + t·s``, ``t0 <= t <= t1``, reads,
    and at ``n`` (its top value).

    Weighting the columns of a two- or three-tap footprint first (a contiguous,
    vectorised loop) leaves one interpolation per voxel boundary instead of one per
    column.
    """
    lo = max(o + t0 * s, 0.0)
    hi = min(o + t1 * s, float(n - 1))
    k0 = np.uintp(int(lo)) if lo < n else np.uintp(n)
    k1 = np.uintp(int(hi) + 2) if hi >= 0.0 else np.uintp(0)
    b0 = np.uintp(c0)
    b1 = np.uintp(c1)
    b2 = np.uintp(c2)
    top = np.uintp(n)
    if w2 == 0.0:
        for k in range(k0, k1):
            out[k] = w0 * np.float64(g[b0 + k]) + w1 * np.float64(g[b1 + k])
        out[n] = w0 * np.float64(g[b0 + top]) + w1 * np.float64(g[b1 + top])
    else:
        for k in range(k0, k1):
            out[k] = (w0 * np.float64(g[b0 + k]) + w1 * np.float64(g[b1 + k])
                      + w2 * np.float64(g[b2 + k]))
        out[n] = (w0 * np.float64(g[b0 + top]) + w1 * np.float64(g[b1 + top])
                  + w2 * np.float64(g[b2 + top]))


@numba.njit(**INLINE)
def fov_ix_range(y, x0, voxel_width, nx, fov_r2):
    """Half-open range ``[lo, hi)`` of ix with ``(x0 + ix·w)² + y² <= fov_r2``.

    Solved analytically, then corrected with exactly the per-voxel test so that both
    kernels keep precisely the voxel columns the per-voxel test keeps.
    """
    rem = fov_r2 - y * y
    if not rem >= 0.0:
        return 0, 0
    r = math.sqrt(rem)
    flo = math.ceil((-r - x0) / voxel_width)
    fhi = math.floor((r - x0) / voxel_width) + 1.0
    lo = int(min(max(flo, 0.0), float(nx)))
    hi = int(min(max(fhi, float(lo)), float(nx)))
    yy = y * y
    while lo < hi:
        x = x0 + lo * voxel_width
        if x * x + yy <= fov_r2:
            break
        lo += 1
    while lo > 0:
        x = x0 + (lo - 1) * voxel_width
        if x * x + yy > fov_r2:
            break
        lo -= 1
    while hi > lo:
        x = x0 + (hi - 1) * voxel_width
        if x * x + yy <= fov_r2:
            break
        hi -= 1
    while hi < nx and hi >= lo:
        x = x0 + hi * voxel_width
        if x * x + yy > fov_r2:
            break
        hi += 1
    return lo, hi


@numba.njit(**INLINE)
def two_pixels(c_lo, c_hi):
    """Whether ``[c_lo, c_hi]`` meets at most two pixels, ``floor(c_lo + 0.5)`` and the
    next: the intervals :func:`two_tap` weighs exactly (False for NaN). Every interval at
    most one pixel wide does, and so do most wider ones: divergent beams magnify voxels
    past a pixel near the source (14 % of the fan benchmark's column-views), and of those
    only 2 % reach a third pixel."""
    return c_hi <= np.floor(c_lo + 0.5) + 1.5


@numba.njit(**INLINE)
def two_tap(c_lo, c_hi, ncols):
    """Overlaps of ``[c_lo, c_hi]`` (meeting at most two pixels, :func:`two_pixels`) with
    pixels i0 and i0 + 1.

    ``i0 = floor(c_lo + 0.5)`` is returned as a float, clamped to ``[-1, ncols]``; the
    overlaps are exactly what ``overlap`` gives for those two pixels (the second may be
    0). Callers index arrays padded with GUARD_LO/GUARD_HI guard columns, so the clamp
    only acts when the interval lies off the detector, where only guards get weight.
    Branch-free (min/max), so a loop over voxels calling it can be vectorised.
    """
    fl = np.floor(c_lo + 0.5)
    fl = min(max(fl, -1.0), float(ncols))
    e = fl + 0.5
    o0 = min(c_hi, e) - c_lo
    o1 = max(c_hi - e, 0.0)
    return fl, o0, o1


@numba.njit(**INLINE)
def three_tap(c_lo, c_hi, ncols):
    """Overlaps of ``[c_lo, c_hi]`` (one to two pixels wide) with pixels i0, i0 + 1 and
    i0 + 2, as :func:`two_tap` (the last may be 0).

    Divergent beams magnify a voxel's footprint: with voxels half a pixel wide at
    magnification 2 about one pixel, and more for the columns nearest the source (13 %
    of the fan benchmark's column-views). The cone back-projector combines the three
    columns and interpolates once, where a loop over pixels interpolated once per pixel
    (the other kernels keep that loop: a three-tap branch there made them slower).
    """
    fl = np.floor(c_lo + 0.5)
    fl = min(max(fl, -1.0), float(ncols))
    e = fl + 0.5
    o0 = min(c_hi, e) - c_lo
    o1 = min(max(c_hi - e, 0.0), 1.0)
    o2 = max(c_hi - e - 1.0, 0.0)
    return fl, o0, o1, o2
