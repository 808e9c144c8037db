"""CPU projector and matched back-projector for the axial family.

Parallel, fan and cone beams (flat/curved, tau, helical) share one pair of kernels.

Why cumulative sums: for one view and one voxel column (x, y) the column footprint is
the same for every z, and the row intervals of the voxels are contiguous and equally
long (``[A + kB, A + (k+1)B]``). The row-overlap-weighted sum of the column's values
over detector row j is therefore ∫ over row j of a piecewise-constant function, i.e.
the difference of its piecewise-linear cumulative integral at the row edges. The
projector interpolates a z-cumulative sum of the volume; the back-projector, its exact
transpose, interpolates a row-cumulative sum of the projections. This replaces a
per-voxel × per-row overlap loop by two interpolations per row (or per voxel).

Slices on rows ("direct" rows): parallel and fan beams do not magnify z, so A and B are
the same for every voxel column. When B == 1 and A + 0.5 is an integer (voxel height
= pixel height, slices centred on rows, as LEAP requires for these geometries) voxel k
covers exactly row k + A + 0.5 and the interpolations reduce to differences of
consecutive cumulative sums (the same numbers, without the interpolation arithmetic).

Columns: a voxel's column footprint ``[c_lo, c_hi]`` at most one pixel wide meets at
most two pixels, ``i0 = floor(c_lo + 0.5)`` and ``i0 + 1``; both weights are computed
without branches (:func:`two_tap_columns`) and written into arrays padded with guard
columns (``GUARD_LO`` before and ``GUARD_HI`` after the detector), so a voxel never
needs a bounds test or a data-dependent loop. Wider footprints use the general loop.

Single-slice parallel beams (the 2-D case, one slice on the detector, footprints at
most one pixel wide) have no row work at all, so the footprint and the scatter are the
whole cost: per voxel row the two-tap footprints are computed in a branch-free loop
that vectorises (:func:`_slice_row_taps`), then scattered; the projector alternates
between four copies of its one-row accumulator so that consecutive voxels, which hit
the same pixels, do not serialise on store-to-load forwarding.

Cone beams: per voxel column the cumulative integral is evaluated at all row edges in
one branch-free loop (the few positions off the ends are peeled off first,
:func:`_cumulative_at`), then its differences are scattered into the two columns' rows,
which are contiguous in the (column, row) view buffer (:func:`_add_differences2`). The
back-projector first weights its two taps' cumulative sums into one
(:func:`_combine_columns`), then interpolates once per voxel boundary. The difference
and weighting loops index with unsigned integers, so Numba emits no negative-index
wrap-around and LLVM vectorises them; the interpolations gather and stay scalar.

Vertical modular modules: every view has its own source-to-detector distance and
detector centre (the per-view ``sdd``, ``center_col``, ``center_row`` arrays), and
``stretch`` replaces the per-row ray stretch by the modular model's per-voxel one,
√(1 + (z − z_s)²/ρ²): the projector re-weights the column's values before its running
sum (:func:`_weighted_increments`, :func:`_prefix_sum`), the back-projector weights the
differences (:func:`_voxel_stretch`). The result is the general modular kernel's, a
voxel column at a time.

Parallelisation never lets two threads write one element: the projector runs one
view per thread (accumulating into a private one-view buffer), the back-projector one
row of voxel columns per thread (accumulating into a private one-row buffer, looping
over views outside the voxel loop so per-view constants are computed once per row;
blocks of ROW_BLOCK rows in the single-slice case).

Both kernels call the same inlined footprint functions on the same inputs (x, y, view
constants), so they weight every (voxel, pixel) pair identically: exact transposes.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ..footprints import PARALLEL
from ._jit import (FAST_JIT, FAST_PARALLEL_JIT, axial_footprint, column_range, direct_shift,
                   fbp_distance_weight, overlap, parallel_column_footprint,
                   parallel_view_constants, row_mapping)

# Guard columns around the detector in the projector's view buffer and in the
# back-projector's cumulative sums (see two_tap_columns: i0 ∈ [-1, ncols], i0 + 1).
GUARD_LO = 1
GUARD_HI = 2

# Voxel rows per thread in the single-slice back-projector: the per-view differencing
# of the projection row (ncols values) is shared by this many rows of nx voxels.
ROW_BLOCK = 8

_inline = dict(FAST_JIT, inline="always")


@numba.njit(**FAST_PARALLEL_JIT)
def volume_z_cumsum(f):
    """Cumulative sums along z: ``S[iy, ix, k] = Σ_{k' < k} f[k', iy, ix]``.

    f : (nz, ny, nx) float32. Returns S : (ny, nx, nz + 1) float32, summed in float64.
    """
    nz, ny, nx = f.shape
    S = np.empty((ny, nx, nz + 1), dtype=np.float32)
    for iy in prange(ny):
        run = np.zeros(nx, dtype=np.float64)
        for ix in range(nx):
            S[iy, ix, 0] = 0.0
        for k in range(nz):
            for ix in range(nx):
                run[ix] += f[k, iy, ix]
                S[iy, ix, k + 1] = run[ix]
    return S


@numba.njit(**FAST_PARALLEL_JIT)
def projection_row_cumsum(g, row_factor):
    """Row-cumulative sums of weighted projections, with zero guard columns.

    ``G[a, i + GUARD_LO, j] = Σ_{j' < j} g[a, j', i]·w[j']``; columns ``0 .. GUARD_LO-1``
    and the last ``GUARD_HI`` are zero (pixels off the detector).

    g : (na, nrows, ncols) float32; row_factor : (nrows,) float64.
    Returns G : (na, GUARD_LO + ncols + GUARD_HI, nrows + 1) float32, summed in float64.
    """
    na, nrows, ncols = g.shape
    G = np.empty((na, GUARD_LO + ncols + GUARD_HI, nrows + 1), dtype=np.float32)
    for a in prange(na):
        G[a, :GUARD_LO, :] = 0.0
        G[a, GUARD_LO + ncols:, :] = 0.0
        run = np.zeros(ncols, dtype=np.float64)
        for i in range(ncols):
            G[a, GUARD_LO + i, 0] = 0.0
        for j in range(nrows):
            w = row_factor[j]
            for i in range(ncols):
                run[i] += g[a, j, i] * w
                G[a, GUARD_LO + i, j + 1] = run[i]
    return G






@numba.njit(**_inline)
def _cumulative_at(cum, n, o, s, t0, t1, w, E):
    """``E[t] = w · C(o + t·s)`` for ``t0 <= t <= t1`` (s > 0).

    C is the piecewise-linear interpolant of the cumulative sums ``cum`` (n + 1 values,
    ``cum[0] = 0``), constant beyond its ends: the values of ``interp_cumulative``.
    The few positions off either end are peeled off first, so the main loop has no
    clamps or branches (one gather of two neighbours per position).
    """
    top = w * np.float64(cum[n])
    ta = t0
    while ta <= t1 and o + ta * s <= 0.0:
        E[ta] = 0.0
        ta += 1
    tb = t1
    while tb >= ta and o + tb * s >= n:
        E[tb] = top
        tb -= 1
    # A float copy of t and floor() (q > 0 here) spare two int/float conversions.
    tf = float(ta)
    for t in range(ta, tb + 1):
        q = o + tf * s
        fk = math.floor(q)
        ku = np.uintp(int(fk))
        c0 = np.float64(cum[ku])
        E[np.uintp(t)] = w * (c0 + (q - fk) * (np.float64(cum[ku + np.uintp(1)]) - c0))
        tf += 1.0


@numba.njit(**_inline)
def _add_differences(E, t0, t1, w, a):
    """``a[t] += w · (E[t + 1] − E[t])`` for ``t0 <= t < t1``.

    Unsigned indices: Numba then emits no negative-index wrap-around, and LLVM
    vectorises the loop (so do the other difference loops below).
    """
    one = np.uintp(1)
    for t in range(np.uintp(t0), np.uintp(t1)):
        a[t] += w * (E[t + one] - E[t])


@numba.njit(**_inline)
def _add_differences2(E, t0, t1, w0, a0, w1, a1):
    """``a0[t] += w0 · d[t]`` and ``a1[t] += w1 · d[t]``, ``d[t] = E[t + 1] − E[t]``,
    for ``t0 <= t < t1``: one row profile into the two columns of a two-tap footprint."""
    one = np.uintp(1)
    for t in range(np.uintp(t0), np.uintp(t1)):
        r = E[t + one] - E[t]
        a0[t] += w0 * r
        a1[t] += w1 * r


@numba.njit(**_inline)
def _add_weighted_differences(E, t0, t1, sw, a):
    """``a[t] += sw[t] · (E[t + 1] − E[t])`` for ``t0 <= t < t1`` (helical FBP)."""
    one = np.uintp(1)
    for t in range(np.uintp(t0), np.uintp(t1)):
        a[t] += sw[t] * (E[t + one] - E[t])


@numba.njit(**_inline)
def _combine_columns(c0, c1, w0, w1, n, o, s, t0, t1, out):
    """``out[k] = w0·c0[k] + w1·c1[k]`` (float64) wherever :func:`_cumulative_at` with
    positions ``o + t·s``, ``t0 <= t <= t1``, reads, and at ``n`` (its top value).

    Weighting the two columns of a two-tap footprint first (a contiguous, vectorised
    loop) leaves one interpolation per voxel boundary instead of two.
    """
    lo = max(o + t0 * s, 0.0)
    hi = min(o + t1 * s, float(n - 1))
    k0 = np.uintp(int(lo)) if lo < n else np.uintp(n)
    k1 = np.uintp(int(hi) + 2) if hi >= 0.0 else np.uintp(0)
    for k in range(k0, k1):
        out[k] = w0 * np.float64(c0[k]) + w1 * np.float64(c1[k])
    out[n] = w0 * np.float64(c0[n]) + w1 * np.float64(c1[n])


@numba.njit(**_inline)
def _prefix_sum(p, n, out):
    """``out[k] = Σ_{k' < k} p[k']`` for ``0 <= k <= n`` (float64).

    A running sum is one long chain of dependent additions; four chains over the
    quarters of ``p`` run side by side, and the quarters' offsets are added afterwards
    (vectorised), so the additions' latency is paid once per four entries.
    """
    m = n // 4
    one = np.uintp(1)
    b1 = np.uintp(m)
    b2 = np.uintp(2 * m)
    b3 = np.uintp(3 * m)
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    out[0] = 0.0
    for k in range(np.uintp(0), b1):
        s0 += p[k]
        out[k + one] = s0
        s1 += p[b1 + k]
        out[b1 + k + one] = s1
        s2 += p[b2 + k]
        out[b2 + k + one] = s2
        s3 += p[b3 + k]
        out[b3 + k + one] = s3
    for k in range(b3 + b1, np.uintp(n)):
        s3 += p[k]
        out[k + one] = s3
    for k in range(b1 + one, b2 + one):
        out[k] += s0
    s01 = s0 + s1
    for k in range(b2 + one, b3 + one):
        out[k] += s01
    s012 = s01 + s2
    for k in range(b3 + one, np.uintp(n + 1)):
        out[k] += s012


@numba.njit(**_inline)
def _squared_heights(z0, voxel_height, zs, D2):
    """``D2[k] = (z_k − zs)²``: the squared heights of the slices above the source (one
    view), for :func:`_weighted_increments` and :func:`_voxel_stretch`."""
    for k in range(D2.shape[0]):
        dz = z0 + k * voxel_height - zs
        D2[k] = dz * dz


@numba.njit(**_inline)
def _inverse_rho2(x, y, sx, sy):
    """1/ρ², ρ the in-plane distance of the column at (x, y) from the source."""
    dx = x - sx
    dy = y - sy
    return 1.0 / (dx * dx + dy * dy)


@numba.njit(**_inline)
def _weighted_increments(cum, n, sw, stretch, inv_rho2, D2, P):
    """``P[k] = w_k · (cum[k + 1] − cum[k])``, ``0 <= k < n``: a column's voxel values
    (differences of its cumulative sums) times the projector's per-voxel weights,
    ``w_k = sw[k]`` (helical FBP; 1 if ``sw`` is empty) times, if ``stretch``, the
    voxel's ray stretch √(1 + D2[k]/ρ²) (:func:`_voxel_stretch`). One vectorised pass."""
    weighted = sw.shape[0] > 0
    one = np.uintp(1)
    for k in range(np.uintp(0), np.uintp(n)):
        v = np.float64(cum[k + one]) - np.float64(cum[k])
        if weighted:
            v *= sw[k]
        if stretch:
            v *= math.sqrt(1.0 + D2[k] * inv_rho2)
        P[k] = v


@numba.njit(**_inline)
def _voxel_stretch(inv_rho2, D2, k0, k1, sw, W):
    """``W[k] = sw[k] · √(1 + D2[k]/ρ²)`` for ``k0 <= k < k1`` (``sw`` empty: 1): the
    out-of-plane ray stretch at each voxel centre of a column, ρ its in-plane distance
    from the source and D2 from :func:`_squared_heights` (the modular model's per-voxel
    length factor; its in-plane part ρ/max(|dx|, |dy|) is in the column weight)."""
    weighted = sw.shape[0] > 0
    for k in range(np.uintp(k0), np.uintp(k1)):
        w = math.sqrt(1.0 + D2[k] * inv_rho2)
        W[k] = sw[k] * w if weighted else w


@numba.njit(**_inline)
def _fov_ix_range(y, x0, voxel_width, nx, fov_r2):
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


@numba.njit(**_inline)
def _two_tap(c_lo, c_hi, ncols):
    """Overlaps of ``[c_lo, c_hi]`` (at most one pixel wide) with pixels i0 and i0 + 1.

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




# --------------------------------------------------------------------------------------
# Single-slice parallel beams (the 2-D case): footprint and scatter are the whole cost.

@numba.njit(**FAST_JIT)
def _slice_mode(col_dir, source_z, model, magnify_z, nz, nrows, z0, voxel_height,
                pixel_height, center_row, voxel_width, pixel_width):
    """Whether the single-slice parallel-beam path applies, and its slice and row.

    It does when every view is parallel, has direct rows with the same shift, exactly
    one slice ``ks`` lands on the detector (row ``js``) and every footprint is at most
    one pixel wide (``2·half_p <= 1``). Returns (ok, ks, js).
    """
    if model != PARALLEL or magnify_z:
        return False, 0, 0
    shift0 = 0
    for a in range(col_dir.shape[0]):
        A, B = row_mapping(z0, voxel_height, source_z[a], 1.0, 1.0, False, pixel_height,
                            center_row[a])
        direct, shift = direct_shift(False, A, B)
        if not direct or (a > 0 and shift != shift0):
            return False, 0, 0
        shift0 = shift
        half_p = parallel_view_constants(col_dir[a, 0], col_dir[a, 1], voxel_width,
                                         pixel_width)[2]
        if not 2.0 * half_p <= 1.0:
            return False, 0, 0
    k0 = max(0, -shift0)
    k1 = min(nz, nrows - shift0)
    if k1 - k0 != 1:
        return False, 0, 0
    return True, k0, k0 + shift0


@numba.njit(**_inline)
def _slice_row_taps(y, lo, hi, x0, voxel_width, cxp, cyp, half_p, weight, center_col,
                    ncols, F, W0, W1):
    """Two-tap footprints of voxels ``lo <= ix < hi`` of the voxel row at height y.

    Fills, for ``t = ix - lo``: ``F[t]`` the guard-padded index of the first pixel (a
    float) and ``W0[t]``, ``W1[t]`` the weights (mm) of that pixel and the next.
    No branches and no int conversions, so the loop vectorises.
    """
    for ix in range(lo, hi):
        x = x0 + ix * voxel_width
        c_lo, c_hi = parallel_column_footprint(x, y, cxp, cyp, half_p, center_col)
        fl, o0, o1 = _two_tap(c_lo, c_hi, ncols)
        t = ix - lo
        F[t] = fl + GUARD_LO
        W0[t] = o0 * weight
        W1[t] = o1 * weight


@numba.njit(**FAST_JIT)
def _project_view_slice(S, ga, cx, cy, ks, js, x0, y0, voxel_width, pixel_width,
                        center_col, fov_r2, rf):
    """One view of the single-slice parallel projector into ``ga`` (nrows, ncols).

    The scatter alternates between four copies of the view's row (a few KiB), so that
    consecutive voxels, which hit the same pixels, do not wait on each other's stores.
    """
    ny, nx, nz1 = S.shape
    nrows, ncols = ga.shape
    L = GUARD_LO + ncols + GUARD_HI
    acc = np.zeros(4 * L, dtype=np.float64)
    F = np.empty(nx, dtype=np.float64)
    W0 = np.empty(nx, dtype=np.float64)
    W1 = np.empty(nx, dtype=np.float64)
    cxp, cyp, half_p, weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    one = np.uintp(1)
    for iy in range(ny):
        y = y0 + iy * voxel_width
        lo, hi = _fov_ix_range(y, x0, voxel_width, nx, fov_r2)
        if lo >= hi:
            continue
        _slice_row_taps(y, lo, hi, x0, voxel_width, cxp, cyp, half_p, weight, center_col,
                        ncols, F, W0, W1)
        m = hi - lo
        m4 = m - m % 4
        for t in range(0, m4, 4):
            for u in range(4):
                ix = lo + t + u
                v = np.float64(S[iy, ix, ks + 1]) - np.float64(S[iy, ix, ks])
                i = np.uintp(int(F[t + u])) + np.uintp(u * L)
                acc[i] += W0[t + u] * v
                acc[i + one] += W1[t + u] * v
        for t in range(m4, m):
            ix = lo + t
            v = np.float64(S[iy, ix, ks + 1]) - np.float64(S[iy, ix, ks])
            i = np.uintp(int(F[t]))
            acc[i] += W0[t] * v
            acc[i + one] += W1[t] * v
    ga[:, :] = 0.0
    for i in range(ncols):
        c = GUARD_LO + i
        ga[js, i] = ((acc[c] + acc[L + c]) + (acc[2 * L + c] + acc[3 * L + c])) * rf


@numba.njit(**FAST_PARALLEL_JIT)
def _backproject_slice(G, f, col_dir, ks, js, x0, y0, voxel_width, pixel_width,
                       center_col, fov_r2):
    """Single-slice parallel back-projector (transpose of :func:`_project_view_slice`).

    Threads own blocks of ``ROW_BLOCK`` voxel rows; per view the slice's pixel values
    are differenced out of G once per block, then every voxel gathers its two taps.
    """
    nz, ny, nx = f.shape
    na, L, nrows1 = G.shape
    ncols = L - GUARD_LO - GUARD_HI
    nblocks = (ny + ROW_BLOCK - 1) // ROW_BLOCK
    for b in prange(nblocks):
        r0 = b * ROW_BLOCK
        nr = min(ROW_BLOCK, ny - r0)
        slab = np.zeros((ROW_BLOCK, nx), dtype=np.float64)
        gv = np.empty(L, dtype=np.float64)
        F = np.empty(nx, dtype=np.float64)
        W0 = np.empty(nx, dtype=np.float64)
        W1 = np.empty(nx, dtype=np.float64)
        los = np.empty(ROW_BLOCK, dtype=np.int64)
        his = np.empty(ROW_BLOCK, dtype=np.int64)
        for r in range(nr):
            los[r], his[r] = _fov_ix_range(y0 + (r0 + r) * voxel_width, x0, voxel_width,
                                           nx, fov_r2)
        for a in range(na):
            cxp, cyp, half_p, weight = parallel_view_constants(col_dir[a, 0], col_dir[a, 1],
                                                               voxel_width, pixel_width)
            for c in range(L):
                gv[c] = np.float64(G[a, c, js + 1]) - np.float64(G[a, c, js])
            for r in range(nr):
                lo = los[r]
                hi = his[r]
                if lo >= hi:
                    continue
                y = y0 + (r0 + r) * voxel_width
                _slice_row_taps(y, lo, hi, x0, voxel_width, cxp, cyp, half_p, weight,
                                center_col[a], ncols, F, W0, W1)
                for t in range(hi - lo):
                    i = np.uintp(int(F[t]))
                    slab[r, lo + t] += W0[t] * gv[i] + W1[t] * gv[i + np.uintp(1)]
        for k in range(nz):
            for r in range(nr):
                for ix in range(nx):
                    f[k, r0 + r, ix] = slab[r, ix] if k == ks else 0.0


# --------------------------------------------------------------------------------------
# General axial kernels.

@numba.njit(**FAST_JIT)
def _project_view(S, ga, acc, E, cx, cy, sx, sy, zs, sdd, sod, pitch, model, magnify_z, fov_r2,
                  x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                  center_col, center_row, row_factor, dist_sod, sw, stretch, cumw, W, D2):
    """One view of the general projector into ``ga`` (nrows, ncols).

    acc : (GUARD_LO + ncols + GUARD_HI, nrows) float64 scratch, E : (nrows + 1,) scratch.
    The transposes of the back-projector's FBP weights: ``dist_sod > 0`` weights the
    view by ``fbp_distance_weight`` (fan: sod/(sod − x·θ), cone-parallel: D/sod); a non-empty ``sw`` (nz,) weights slice k by ``sw[k]``
    (magnified rows only), using ``cumw`` (nz + 1,) scratch for the column's weighted
    cumulative sum; ``stretch`` weights each voxel by its own out-of-plane ray stretch
    (:func:`_voxel_stretch`, the modular model; ``row_factor`` is then ones), using
    ``W`` and ``D2`` (nz,) scratch.
    """
    weighted = sw.shape[0] > 0 or stretch
    ny, nx, nz1 = S.shape
    nz = nz1 - 1
    nrows, ncols = ga.shape
    acc[:, :] = 0.0
    if stretch:
        _squared_heights(z0, voxel_height, zs, D2)
    cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    A, B = row_mapping(z0, voxel_height, zs, 1.0, sdd, magnify_z, pixel_height, center_row)
    direct, shift = direct_shift(magnify_z, A, B)
    # Direct rows: slices k0 <= k < k1 land on rows k + shift of the detector.
    k0 = max(0, -shift)
    k1 = min(nz, nrows - shift)
    if direct and k0 >= k1:
        ga[:, :] = 0.0
        return
    for iy in range(ny):
        y = y0 + iy * voxel_width
        lo, hi = _fov_ix_range(y, x0, voxel_width, nx, fov_r2)
        for ix in range(lo, hi):
            x = x0 + ix * voxel_width
            c_lo, c_hi, weight, dist, dz = axial_footprint(
                model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod, pitch,
                voxel_width, pixel_width, center_col)
            if dist <= 0.0:
                continue
            if dist_sod > 0.0:
                weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
            cum = S[iy, ix]
            if direct:
                if c_hi - c_lo <= 1.0:
                    fl, o0, o1 = _two_tap(c_lo, c_hi, ncols)
                    w0 = o0 * weight
                    w1 = o1 * weight
                    r0 = int(fl) + GUARD_LO
                    for k in range(k0, k1):
                        v = np.float64(cum[k + 1]) - np.float64(cum[k])
                        acc[r0, k + shift] += w0 * v
                        acc[r0 + 1, k + shift] += w1 * v
                else:
                    i0, i1 = column_range(c_lo, c_hi, ncols)
                    for i in range(i0, i1 + 1):
                        w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                        if w == 0.0:
                            continue
                        for k in range(k0, k1):
                            v = np.float64(cum[k + 1]) - np.float64(cum[k])
                            acc[i + GUARD_LO, k + shift] += w * v
                continue
            if magnify_z:
                A, B = row_mapping(z0, voxel_height, zs + dz, dist, sdd, magnify_z,
                                    pixel_height, center_row)
            fj0 = max(0.0, np.floor(A + 0.5))
            fj1 = min(nrows - 1.0, np.floor(A + nz * B + 0.5))
            if fj0 > fj1:
                continue
            j0 = int(fj0)
            j1 = int(fj1)
            # E[j] = cumulative integral of the column at row edge j - 1/2, i.e. at
            # voxel coordinate (j - 1/2 - A) / B; row j gets B·(E[j + 1] - E[j]).
            inv_b = 1.0 / B
            if weighted:
                _weighted_increments(cum, nz, sw, stretch, _inverse_rho2(x, y, sx, sy), D2, W)
                _prefix_sum(W, nz, cumw)
                _cumulative_at(cumw, nz, -(A + 0.5) * inv_b, inv_b, j0, j1 + 1, 1.0, E)
            else:
                _cumulative_at(cum, nz, -(A + 0.5) * inv_b, inv_b, j0, j1 + 1, 1.0, E)
            if c_hi - c_lo <= 1.0:
                fl, o0, o1 = _two_tap(c_lo, c_hi, ncols)
                w0 = o0 * weight * B
                w1 = o1 * weight * B
                a0 = acc[int(fl) + GUARD_LO]
                if o1 == 0.0:
                    _add_differences(E, j0, j1 + 1, w0, a0)
                else:
                    _add_differences2(E, j0, j1 + 1, w0, a0, w1, acc[int(fl) + GUARD_LO + 1])
            else:
                i0, i1 = column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight * B
                    if w == 0.0:
                        continue
                    _add_differences(E, j0, j1 + 1, w, acc[i + GUARD_LO])
    for j in range(nrows):
        rf = row_factor[j]
        for i in range(ncols):
            ga[j, i] = acc[i + GUARD_LO, j] * rf


@numba.njit(**FAST_PARALLEL_JIT)
def project(S, g, col_dir, source_xy, source_z, sdd, sod, pitch, model, magnify_z, fov_r2,
            x0, y0, z0, voxel_width, voxel_height,
            pixel_width, pixel_height, center_col, center_row, row_factor, dist_sod, slice_w,
            stretch):
    """Forward projection into g from S = volume_z_cumsum(f); one view per thread.

    S : (ny, nx, nz + 1) float32; g : (na, nrows, ncols) float32, overwritten.
    col_dir, source_xy : (na, 2) float64; source_z, sdd : (na,) float64, mm;
    center_col, center_row : (na,) float64, fractional pixels (per view: vertical
    modular modules have their own). row_factor : (nrows,) float64. ``stretch``: the
    modular model's per-voxel ray stretch instead of row_factor's per-row one. Lengths in mm, centres in fractional pixels.
    ``sod`` and ``pitch`` (mm, mm/rad) are read by the cone-parallel model only.
    ``dist_sod`` and ``slice_w`` (na, nz) (0 and an empty (0, 0) array turn them off)
    are the transposes of :func:`backproject`'s FBP weights.
    """
    na, nrows, ncols = g.shape
    nz = S.shape[2] - 1
    slice_ok, ks, js = _slice_mode(col_dir, source_z, model, magnify_z, nz, nrows, z0,
                                   voxel_height, pixel_height, center_row, voxel_width,
                                   pixel_width)
    for a in prange(na):
        if slice_ok:
            _project_view_slice(S, g[a], col_dir[a, 0], col_dir[a, 1], ks, js, x0, y0,
                                voxel_width, pixel_width, center_col[a], fov_r2, row_factor[js])
        else:
            # One view's pixels, (column, row) so a voxel column's rows are contiguous.
            acc = np.empty((GUARD_LO + ncols + GUARD_HI, nrows), dtype=np.float64)
            E = np.empty(nrows + 1, dtype=np.float64)
            cumw = np.empty(nz + 1, dtype=np.float64)
            W = np.empty(nz, dtype=np.float64)
            D2 = np.empty(nz, dtype=np.float64)
            sw = slice_w[a] if slice_w.shape[0] > 0 else slice_w[0:0, 0:0].ravel()
            _project_view(S, g[a], acc, E, col_dir[a, 0], col_dir[a, 1], source_xy[a, 0],
                          source_xy[a, 1], source_z[a], sdd[a], sod, pitch, model, magnify_z,
                          fov_r2,
                          x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                          center_col[a], center_row[a], row_factor, dist_sod, sw, stretch,
                          cumw, W, D2)


@numba.njit(**FAST_JIT)
def _backproject_row(G, slab, E, Gc, W, D2, iy, col_dir, source_xy, source_z, sdd, sod, pitch,
                     model, magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height,
                     pixel_width, pixel_height, center_col, center_row, dist_sod, slice_w,
                     stretch):
    """Back-project all views into one row of voxel columns: ``slab`` (nx, nz) float64.

    Views are the outer loop so per-view constants are computed once per row.
    E : (nz + 1,), Gc : (nrows + 1,), W and D2 : (nz,) float64 scratch. ``stretch`` weights
    voxel k by its own out-of-plane ray stretch (:func:`_voxel_stretch`). ``dist_sod > 0`` multiplies each view's weight by
    ``fbp_distance_weight`` (fan-beam and cone-parallel FBP); a non-empty ``slice_w`` (na, nz) multiplies voxel
    k's contribution from view a by ``slice_w[a, k]`` (helical FBP, magnified rows).
    """
    weighted = slice_w.shape[0] > 0 or stretch
    nx, nz = slab.shape
    na, L, nrows1 = G.shape
    ncols = L - GUARD_LO - GUARD_HI
    nrows = nrows1 - 1
    slab[:, :] = 0.0
    y = y0 + iy * voxel_width
    lo, hi = _fov_ix_range(y, x0, voxel_width, nx, fov_r2)
    if lo >= hi:
        return
    for a in range(na):
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        sx = source_xy[a, 0]
        sy = source_xy[a, 1]
        zs = source_z[a]
        sdd_a = sdd[a]
        ccol = center_col[a]
        crow = center_row[a]
        sw = slice_w[a] if slice_w.shape[0] > 0 else slice_w[0:0, 0:0].ravel()
        if stretch:
            _squared_heights(z0, voxel_height, zs, D2)
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                               pixel_width)
        A, B = row_mapping(z0, voxel_height, zs, 1.0, sdd_a, magnify_z, pixel_height, crow)
        direct, shift = direct_shift(magnify_z, A, B)
        k0 = max(0, -shift)
        k1 = min(nz, nrows - shift)
        if direct and k0 >= k1:
            continue
        Ga = G[a]
        for ix in range(lo, hi):
            x = x0 + ix * voxel_width
            c_lo, c_hi, weight, dist, dz = axial_footprint(
                model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd_a, sod, pitch,
                voxel_width, pixel_width, ccol)
            if dist <= 0.0:
                continue
            if dist_sod > 0.0:
                # FBP's distance weight (fan, cone-parallel).
                weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
            col = slab[ix]
            if direct:
                if c_hi - c_lo <= 1.0:
                    fl, o0, o1 = _two_tap(c_lo, c_hi, ncols)
                    w0 = o0 * weight
                    w1 = o1 * weight
                    g0 = Ga[int(fl) + GUARD_LO]
                    g1 = Ga[int(fl) + GUARD_LO + 1]
                    for k in range(k0, k1):
                        j = k + shift
                        col[k] += (w0 * (np.float64(g0[j + 1]) - np.float64(g0[j]))
                                   + w1 * (np.float64(g1[j + 1]) - np.float64(g1[j])))
                else:
                    i0, i1 = column_range(c_lo, c_hi, ncols)
                    for i in range(i0, i1 + 1):
                        w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                        if w == 0.0:
                            continue
                        gi = Ga[i + GUARD_LO]
                        for k in range(k0, k1):
                            j = k + shift
                            col[k] += w * (np.float64(gi[j + 1]) - np.float64(gi[j]))
                continue
            if magnify_z:
                A, B = row_mapping(z0, voxel_height, zs + dz, dist, sdd_a, magnify_z,
                                    pixel_height, crow)
            # Voxel boundaries k = 0..nz sit at row coordinate A + kB (cumulative-sum
            # index A + kB + 1/2); below row -0.5 or above nrows - 0.5 the cumulative
            # sums are constant, so only boundaries in between contribute differences.
            inv_b = 1.0 / B
            fk0 = max(np.floor((-0.5 - A) * inv_b), 0.0)
            fk1 = min(np.ceil((nrows - 0.5 - A) * inv_b), float(nz))
            if fk0 >= fk1:
                continue
            kb0 = int(fk0)
            kb1 = int(fk1)
            if stretch:
                _voxel_stretch(_inverse_rho2(x, y, sx, sy), D2, kb0, kb1, sw, W)
            wk = W if stretch else sw
            if c_hi - c_lo <= 1.0:
                fl, o0, o1 = _two_tap(c_lo, c_hi, ncols)
                c0 = int(fl) + GUARD_LO
                if o1 == 0.0:
                    _cumulative_at(Ga[c0], nrows, A + 0.5, B, kb0, kb1, o0 * weight, E)
                else:
                    _combine_columns(Ga[c0], Ga[c0 + 1], o0 * weight, o1 * weight, nrows,
                                     A + 0.5, B, kb0, kb1, Gc)
                    _cumulative_at(Gc, nrows, A + 0.5, B, kb0, kb1, 1.0, E)
                if weighted:
                    _add_weighted_differences(E, kb0, kb1, wk, col)
                else:
                    _add_differences(E, kb0, kb1, 1.0, col)
            else:
                i0, i1 = column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                    if w == 0.0:
                        continue
                    _cumulative_at(Ga[i + GUARD_LO], nrows, A + 0.5, B, kb0, kb1, w, E)
                    if weighted:
                        _add_weighted_differences(E, kb0, kb1, wk, col)
                    else:
                        _add_differences(E, kb0, kb1, 1.0, col)


@numba.njit(**FAST_PARALLEL_JIT)
def backproject(G, f, col_dir, source_xy, source_z, sdd, sod, pitch, model, magnify_z, fov_r2,
                x0, y0, z0, voxel_width, voxel_height,
                pixel_width, pixel_height, center_col, center_row, dist_sod, slice_w,
                stretch):
    """Matched back-projection into f from G = projection_row_cumsum(g).

    G : (na, GUARD_LO + ncols + GUARD_HI, nrows + 1) float32; f : (nz, ny, nx)
    float32, overwritten. Other arguments as for :func:`project`. One row of voxel
    columns per thread (blocks of rows in the single-slice parallel case).
    FBP weights (0 and an empty (0, 0) array turn them off): ``dist_sod`` multiplies
    view weights by sod/(sod − x·θ); ``slice_w`` (na, nz) weights voxel k of view a
    (magnified rows only, i.e. cone beams).
    """
    nz, ny, nx = f.shape
    nrows = G.shape[2] - 1
    slice_ok, ks, js = _slice_mode(col_dir, source_z, model, magnify_z, nz, nrows, z0,
                                   voxel_height, pixel_height, center_row, voxel_width,
                                   pixel_width)
    if slice_ok:
        _backproject_slice(G, f, col_dir, ks, js, x0, y0, voxel_width, pixel_width,
                           center_col, fov_r2)
        return
    for iy in prange(ny):
        # One row of voxel columns, (x, z) so a column's voxels are contiguous.
        slab = np.empty((nx, nz), dtype=np.float64)
        E = np.empty(nz + 1, dtype=np.float64)
        Gc = np.empty(nrows + 1, dtype=np.float64)
        W = np.empty(nz, dtype=np.float64)
        D2 = np.empty(nz, dtype=np.float64)
        _backproject_row(G, slab, E, Gc, W, D2, iy, col_dir, source_xy, source_z, sdd, sod, pitch,
                         model, magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height,
                         pixel_width, pixel_height, center_col, center_row, dist_sod, slice_w,
                         stretch)
        for k in range(nz):
            for ix in range(nx):
                f[k, iy, ix] = slab[ix, k]
