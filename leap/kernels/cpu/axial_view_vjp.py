"""CPU geometry vector–Jacobian product of the axial projector without z magnification:
parallel and fan beams (flat or curved detector).

The axial kernels (``leap.kernels.cpu.launch``: ``axial_direct``, ``axial_slice``,
``fan_slice``, ``axial``) compute one model. For view ``a`` and the voxel column at
(x, y) inside the field of view (``x² + y² <= fov_r2``),
``leap.kernels.footprints.axial_column_footprint`` (fan) or
``parallel_column_footprint`` (parallel) give the column interval ``[c_lo, c_hi]``
(fractional pixels) and the weight ``w`` (voxel_width × in-plane ray-length factor, mm),
and voxel k of the column covers the detector rows ``[A + kB, A + (k+1)B]``
(``leap.kernels.footprints.row_mapping``). Without z magnification A and B are the same
for every column and view, and no in-plane quantity moves them. So, with
``F_j = Σ_k f_k·O(A + kB, A + (k+1)B; j)`` the column resampled onto the detector rows
(for direct rows, voxel k on row k + shift, simply ``f_{j − shift}``),

    g[a, j, i] = Σ_columns w · O(c_lo, c_hi; i) · F_j,
    L = Σ ḡ·g = Σ_columns w · Σ_i O(c_lo, c_hi; i) · H_i,   H_i = Σ_j F_j · ḡ[a, j, i]

(the batch summed in H). The overlap ``O`` is piecewise linear in the ends:
``∂/∂c_lo Σ_i O_i H_i = −H`` at the pixel holding ``c_lo`` and ``∂/∂c_hi = +H`` at the
pixel holding ``c_hi``. Per (view, column) the kernel forms the ``H_i`` of the footprint's
pixels (dot products along the rows, like a back-projection's gathers), then
``dL = w·(H_hi·dc_hi − H_lo·dc_lo) + (Σ_i O_i H_i)·dw`` with the derivatives of the
footprint's own formulas:

* parallel: ``c = (x·cx + y·cy)/pixel_width + center_col``, ends ``c ∓ half``,
  ``half = ½·voxel_width·m/pixel_width`` and ``w = voxel_width/m`` with
  ``m = max(|cx|, |cy|)``: per view a few sums over the columns;
* fan: with ``d = (x, y) − s`` (s the source), ``lateral = d·e``, ``depth = d·r``
  (``e = (cx, cy)`` the column axis, ``r = (−cy, cx)`` the ray direction), the
  mid-plane segment's ends ``u = (lateral ∓ δl)/(depth ∓ δd)`` (``(δl, δd) =
  ½·voxel_width·(cx, −cy)`` for a segment along x, ``(cy, cx)`` along y) map to
  ``c = u·sdd/pixel_width + center_col`` (flat) or ``atan(u)/atan(pixel_width/sdd) +
  center_col`` (curved); ``w = voxel_width·|d|/max(|dx|, |dy|)``.

FBP's back-projection of fan beams weights each column by ``D = dist_sod/(dist_sod −
(x·cy − y·cx))`` (``leap.kernels.footprints.fbp_distance_weight``); with ``dist_sod``
the kernel differentiates that weighted model: ``w`` becomes ``w·D`` in the terms
above, and ``S·w·∂D`` adds ``−S·w·D·y/den`` to ∂cx, ``S·w·D·x/den`` to ∂cy and a
gradient with respect to dist_sod itself (den the denominator of D).

The inputs are the per-view quantities as the footprint takes them: the column axis
``col_dir`` (a free 2-vector: not normalised here; callers that parametrise it by an
angle chain through ``(cos ψ, sin ψ)``), the source ``source_xy`` (fan), the detector
centre ``center_col`` (per view) and ``sdd`` (per view, fan). The field-of-view mask and
the row intervals are held fixed (the mask is a jump of the model, not differentiable).

Kinks (the model is piecewise smooth; where it is not differentiable the kernel returns
the one-sided derivative of the branch the projector takes, as
``leap.kernels.cpu.modular_geometry_vjp`` documents): an end on a pixel edge counts in
pixel ``floor(end + ½)`` (derivative for the end moving towards higher pixel indices),
an end off the detector contributes 0; the order of the ends is the forward's; the
dominant axis of the in-plane segment (``|dy| > |dx|``: along x) and of the ray length's
denominator (``|dx| > |dy|``: ``|dx|``) and the parallel ``m`` (``|cx| > |cy|``: ``|cx|``)
are the forward's tests' branches; voxel columns behind the source are skipped.
Columns that are zero in every sample are skipped.

How it runs. The columns are resampled onto the rows once (``row_columns``: moved values
for direct rows, the row overlaps otherwise; each column's nonzero rows), and each view's
ḡ is transposed, rows contiguous, with zero guard columns (footprint ends off the detector
read zeros: their terms vanish, as the forward clamps them away). Per view and volume row
the footprints come from the projectors' own ``direct_footprints`` (bit for bit the
forward's ends, so kinks fall on the forward's side); then, per column, the ``H_i`` are
dot products along the column's nonzero rows (one slice on one row and one sample: a
branch-free pass over the row with ``two_tap`` / ``three_tap`` weights, and a
branch-free pass for the fan terms, both vectorised). Measured on 2 cores against the
back-projection of the same problem: about 2.9× for a 512² parallel-beam slice with 720
views, 1.4× for a 128³ fan beam with 180 views, 3× for a 512² fan-beam slice.

Parallelisation: ``leap.kernels.cpu.threads.run`` shares the views out, each view's
gradients written by its thread only (results do not depend on the number of threads);
sums are float64 (the sums over rows and columns of float32 data may be reassociated,
``REDUCE_JIT``, so that they vectorise). The CUDA counterpart
(``leap.kernels.cuda.axial_view_vjp``) compiles the same scalar functions of the chain rule
(``fan_terms``, ``parallel_view_grads``, ``curved_scales``).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from .. import footprints as _fp
from ..footprints import CURVED, FLAT, PARALLEL
from . import threads
from ._jit import FAST_JIT, REDUCE_JIT, overlap, parallel_view_constants
from .axial_direct import direct_footprints
from .columns import INLINE, fov_ix_range, three_tap, two_pixels, two_tap


#: Guard columns on either side of ḡ's columns (zeros): footprint ends off the detector
#: read a guard (H = 0, their terms vanish, as the forward clamps them away), so the
#: loops need no bounds tests.
PAD_LO = 1
PAD_HI = 3


@numba.njit(**REDUCE_JIT)
def _dot(Ff, fo, Gf, go, n):
    """Σ_{j < n} Ff[fo + j]·Gf[go + j] in float64."""
    # Unsigned indices: no negative-index wrap-around, so the loop vectorises.
    s = 0.0
    uf = np.uintp(fo)
    ug = np.uintp(go)
    for j in range(np.uintp(n)):
        s += np.float64(Ff[uf + j]) * np.float64(Gf[ug + j])
    return s


@numba.njit(**INLINE)
def _h(Ff, Gf, nb, fstride, gstride, fo, go, n):
    """H of one detector column: Σ_b Σ_j F·ḡ over the column's nonzero rows."""
    if nb == 1:
        if n == 1:          # one row (single slices): no loop
            return np.float64(Ff[fo]) * np.float64(Gf[go])
        return _dot(Ff, fo, Gf, go, n)
    h = 0.0
    for b in range(nb):
        h += _dot(Ff, fo + b * fstride, Gf, go + b * gstride, n)
    return h


@numba.njit(**INLINE)
def _sums(Ff, Gf, nb, fstride, gstride, fo, go0, gcol, n, c_lo, c_hi, ncols):
    """(H at the pixel of c_lo, H at the pixel of c_hi, Σ_i O_i·H_i) of one column;
    ``go0`` is the offset of padded detector column 0 (guard columns hold zeros) and
    ``gcol`` the stride between detector columns."""
    if two_pixels(c_lo, c_hi):
        fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
        i0 = int(fl)
        h0 = _h(Ff, Gf, nb, fstride, gstride, fo, go0 + i0 * gcol, n)
        if o1 > 0.0 or c_hi >= fl + 0.5:
            h1 = _h(Ff, Gf, nb, fstride, gstride, fo, go0 + (i0 + 1) * gcol, n)
            return h0, h1, o0 * h0 + o1 * h1
        return h0, h0, o0 * h0
    lo = min(max(c_lo + 0.5, -1.0), ncols + 0.0)
    hi = min(max(c_hi + 0.5, -1.0), ncols + 0.0)
    i0 = int(math.floor(lo))
    i1 = int(math.floor(hi))
    hl = hh = s = 0.0
    for i in range(i0, i1 + 1):
        h = _h(Ff, Gf, nb, fstride, gstride, fo, go0 + i * gcol, n)
        s += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * h
        if i == i0:
            hl = h
        hh = h
    return hl, hh, s


@numba.njit(**INLINE)
def _three_pixels(c_lo, c_hi):
    """Whether ``[c_lo, c_hi]`` meets at most three pixels, ``floor(c_lo + 0.5)`` and the
    next two (False for NaN)."""
    return c_hi <= np.floor(c_lo + 0.5) + 2.5


@numba.njit(**INLINE)
def _slice_col(Ff, fo, Gf, fp, ix, ncols, H, three):
    """``H[:, ix] = (H_lo, H_hi, S)`` of column ix of a single-slice row, footprint
    meeting at most two (``three``: three) pixels: ``two_tap`` / ``three_tap``, ḡ's
    padded detector row at ``Gf[PAD_LO + i]``. Branch-free."""
    fv = np.float64(Ff[np.uintp(fo) + ix])
    c_lo = fp[0, ix]
    c_hi = fp[1, ix]
    if three:
        fl, o0, o1, o2 = three_tap(c_lo, c_hi, ncols)
    else:
        fl, o0, o1 = two_tap(c_lo, c_hi, ncols)
        o2 = 0.0
    k = np.uintp(int(fl) + PAD_LO)
    g0 = np.float64(Gf[k])
    g1 = np.float64(Gf[k + np.uintp(1)])
    g2 = np.float64(Gf[k + np.uintp(2)]) if three else 0.0
    # The pixel floor(c_hi + ½) that holds the upper end.
    gh = g2 if c_hi >= fl + 1.5 else (g1 if c_hi >= fl + 0.5 else g0)
    H[0, ix] = fv * g0
    H[1, ix] = fv * gh
    H[2, ix] = fv * (o0 * g0 + o1 * g1 + o2 * g2)


@numba.njit(**REDUCE_JIT)
def _slice_row(Ff, fo, Gf, fp, lo, hi, ncols, H, three):
    """:func:`_slice_col` for the columns ``lo <= ix < hi`` of a volume row (values from
    ``Ff[fo + ix]``), footprints in fp. Footprints wider than ``three`` allows are to be
    redone (``_sums``)."""
    if three:
        for ix in range(np.uintp(lo), np.uintp(hi)):
            _slice_col(Ff, fo, Gf, fp, ix, ncols, H, True)
    else:
        for ix in range(np.uintp(lo), np.uintp(hi)):
            _slice_col(Ff, fo, Gf, fp, ix, ncols, H, False)


@numba.njit(**REDUCE_JIT)
def _parallel_row_sums(H, lo, hi, x0, voxel_width, sums):
    """Add a row's Σ (H_hi − H_lo), Σ (H_hi − H_lo)·x, Σ (H_hi + H_lo), Σ S into sums[0],
    sums[1], sums[3], sums[4] and Σ (H_hi − H_lo) into sums[2] (times y by the caller)."""
    d = dx = h = s = 0.0
    # A float column counter: no int-to-float conversion per column (none vectorises).
    xf = float(lo)
    for ix in range(np.uintp(lo), np.uintp(hi)):
        x = x0 + xf * voxel_width
        xf += 1.0
        dd = H[1, ix] - H[0, ix]
        d += dd
        dx += dd * x
        h += H[1, ix] + H[0, ix]
        s += H[2, ix]
    sums[0] += d
    sums[1] += dx
    sums[2] = d
    sums[3] += h
    sums[4] += s


def fan_terms(weight, hl, hh, h_sum, x, y, dy, ady, cx, cy, sx, sd, curved, scale, dscale,
              half, voxel_width, pixel_width, dist_sod):
    """One fan-beam column's terms (∂cx, ∂cy, ∂sx, ∂sy, ∂sdd, ∂center_col, ∂dist_sod)
    from its ``(H_lo, H_hi, S) = (hl, hh, h_sum)`` and weight: the footprint's
    intermediates (``axial_column_footprint``' arithmetic) and their derivatives (module
    notes; ends u0, u1 over d0, d1 with ∂u = (∂n − u·∂d)/d). ``dist_sod > 0``: the weight
    includes FBP's distance weight D = dist_sod/(dist_sod − (x·cy − y·cx)). Branch-free
    (selects; a dead column, weight 0, masked rather than skipped). A plain scalar
    function: the CPU (:func:`_fan_col`) and CUDA (``leap.kernels.cuda.axial_view_vjp``)
    kernels compile it."""
    live = weight != 0.0
    s = h_sum if live else 0.0
    # FBP's distance weight D (1 without; weight already holds it): ∂D/∂cx = −D·y/den,
    # ∂D/∂cy = D·x/den, ∂D/∂dist_sod = D·(1/dist_sod − 1/den). A branch on a value the
    # loops do not change (unswitched out of them): no division without the weight.
    dist_w = 1.0
    sw = 0.0
    d_sod = 0.0
    if dist_sod > 0.0:
        inv = 1.0 / (dist_sod - (x * cy - y * cx))
        dist_w = dist_sod * inv
        sw = s * weight * inv
        d_sod = s * weight * (1.0 / dist_sod - inv)
    dx = x - sx
    lat = dx * cx + dy * cy
    depth = dy * cx - dx * cy
    adx = abs(dx)
    along_x = ady > adx
    dlat = half * cx if along_x else half * cy
    ddep = -half * cy if along_x else half * cx
    d0 = depth - ddep if live else 1.0
    d1 = depth + ddep if live else 1.0
    u0 = (lat - dlat) / d0
    u1 = (lat + dlat) / d1
    if curved:
        k0 = scale / (1.0 + u0 * u0)
        k1 = scale / (1.0 + u1 * u1)
        t0 = math.atan(u0)
        t1 = math.atan(u1)
        e0 = t0 * dscale
        e1 = t1 * dscale
        c0 = t0 * scale
        c1 = t1 * scale
    else:
        k0 = sd / pixel_width
        k1 = k0
        e0 = u0 / pixel_width
        e1 = u1 / pixel_width
        c0 = u0 * k0
        c1 = u1 * k1
    swap = c0 > c1
    g0 = weight * (hh if swap else -hl)
    g1 = weight * (-hl if swap else hh)
    a0 = g0 * k0 / d0
    a1 = g1 * k1 / d1
    b0 = a0 * u0
    b1 = a1 * u1
    P = a0 + a1
    Q = a1 - a0
    R = b0 + b1
    T = b1 - b0
    rho = math.sqrt(dx * dx + dy * dy)
    x_big = adx > ady
    big = (adx if x_big else ady) if live else 1.0
    base = voxel_width / (rho * big)
    corr = voxel_width * rho / (big * big)
    sgx = 1.0 if dx >= 0.0 else -1.0
    sgy = 1.0 if dy >= 0.0 else -1.0
    dwx = (-dx * base + (corr * sgx if x_big else 0.0)) * dist_w
    dwy = (-dy * base + (0.0 if x_big else corr * sgy)) * dist_w
    return (P * dx - R * dy + (Q * half if along_x else -T * half) - sw * y,
            P * dy + R * dx + (T * half if along_x else Q * half) + sw * x,
            -P * cx - R * cy + s * dwx,
            -P * cy + R * cx + s * dwy,
            g0 * e0 + g1 * e1,
            g0 + g1,
            d_sod)


def parallel_view_grads(cx, cy, par_weight, p_d, p_dx, p_dy, p_h, p_s, voxel_width,
                        pixel_width):
    """(∂cx, ∂cy, ∂center_col) of a parallel-beam view from its sums over the columns:
    Σ (H_hi − H_lo), its moments Σ (H_hi − H_lo)·x and ·y, Σ (H_hi + H_lo) and Σ S
    (module notes). A plain scalar function, for both targets."""
    ax = abs(cx)
    ay = abs(cy)
    m = ax if ax > ay else ay
    # ∂L/∂m through half_p = ½·voxel_width·m/pixel_width and w = voxel_width/m.
    gm = (par_weight * p_h * 0.5 * voxel_width / pixel_width
          - p_s * voxel_width / (m * m))
    d_cx = par_weight * p_dx / pixel_width
    d_cy = par_weight * p_dy / pixel_width
    if ax > ay:
        d_cx += gm * (1.0 if cx >= 0.0 else -1.0)
    else:
        d_cy += gm * (1.0 if cy >= 0.0 else -1.0)
    return d_cx, d_cy, par_weight * p_d


def curved_scales(model, sd, pixel_width):
    """(scale, dscale): the curved detector's 1/atan(pixel_width/sdd) and its derivative
    with respect to sdd (0, 0 for the other models). A plain scalar function, for both
    targets."""
    scale = 0.0
    dscale = 0.0
    if model == CURVED:
        scale = 1.0 / math.atan(pixel_width / sd)
        dscale = scale * scale * pixel_width / (sd * sd + pixel_width * pixel_width)
    return scale, dscale


_fan_terms = numba.njit(**INLINE)(fan_terms)
_parallel_view_grads = numba.njit(**INLINE)(parallel_view_grads)
_curved_scales = numba.njit(**INLINE)(curved_scales)


@numba.njit(**INLINE)
def _fan_col(fp, H, ix, x, y, dy, ady, cx, cy, sx, sd, curved, scale, dscale, half,
             voxel_width, pixel_width, dist_sod):
    """:func:`fan_terms` of column ix: ``H[:, ix] = (H_lo, H_hi, S)``, weight ``fp[2, ix]``."""
    return _fan_terms(fp[2, ix], H[0, ix], H[1, ix], H[2, ix], x, y, dy, ady, cx, cy, sx, sd,
                      curved, scale, dscale, half, voxel_width, pixel_width, dist_sod)


@numba.njit(**dict(REDUCE_JIT, inline="always"))
def _fan_row_loop(fp, H, lo, hi, x0, y, dy, ady, cx, cy, sx, sd, curved, scale, dscale,
                  half, voxel_width, pixel_width, dist_sod):
    """The loop of :func:`_fan_row` for one detector model (``curved`` a constant)."""
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = 0.0
    xf = float(lo)      # a float counter: no int-to-float conversion per column
    for ix in range(np.uintp(lo), np.uintp(hi)):
        t = _fan_col(fp, H, ix, x0 + xf * voxel_width, y, dy, ady, cx, cy, sx, sd, curved,
                     scale, dscale, half, voxel_width, pixel_width, dist_sod)
        xf += 1.0
        a0 += t[0]
        a1 += t[1]
        a2 += t[2]
        a3 += t[3]
        a4 += t[4]
        a5 += t[5]
        a6 += t[6]
    return a0, a1, a2, a3, a4, a5, a6


@numba.njit(**REDUCE_JIT)
def _fan_row(fp, H, lo, hi, x0, y, cx, cy, sx, sy, sd, model, scale, dscale, half,
             voxel_width, pixel_width, dist_sod):
    """:func:`_fan_col` summed over the columns ``lo <= ix < hi`` of a row (H from
    ``_slice_row``). One loop per model (the curved one calls atan), so that the flat
    model's loop vectorises."""
    dy = y - sy
    ady = abs(dy)
    if model == CURVED:
        return _fan_row_loop(fp, H, lo, hi, x0, y, dy, ady, cx, cy, sx, sd, True, scale,
                             dscale, half, voxel_width, pixel_width, dist_sod)
    return _fan_row_loop(fp, H, lo, hi, x0, y, dy, ady, cx, cy, sx, sd, False, scale, dscale,
                         half, voxel_width, pixel_width, dist_sod)


@numba.njit(**FAST_JIT)
def _views(Fc, ext, gbar, col_dir, source_xy, center_col, sdd, model, fov_r2, x0, y0,
           voxel_width, pixel_width, dist_sod, d_col, d_src, d_cc, d_sdd, d_sod, start, step):
    """Views ``start, start + step, …`` of :func:`geometry_vjp`: Fc (nb, ny, nx, nrows)
    float32 the columns resampled onto the rows, ext (ny, nx, 2) int64 each column's
    first and last nonzero row in any sample (last < first: empty), gbar (nb, na, nrows,
    ncols) float32; gradients written into d_col, d_src (na, 2), d_cc, d_sdd, d_sod (na,)
    float64 (fan beams: ``dist_sod > 0`` weights by FBP's distance weight)."""
    nb, ny, nx, nrows = Fc.shape
    na, ncols = gbar.shape[1], gbar.shape[3]
    width = PAD_LO + ncols + PAD_HI
    # One view of ḡ at a time, rows contiguous, guard columns zero (made by the thread
    # that owns the view: the transposition runs in parallel and stays in cache).
    Gt = np.zeros((nb, width, nrows), dtype=np.float32)
    Ff = Fc.reshape(-1)
    Gf = Gt.reshape(-1)
    fstride = ny * nx * nrows
    gstride = width * nrows
    half = 0.5 * voxel_width
    fp = np.empty((3, nx))
    H = np.zeros((3, nx))
    psums = np.zeros(5)
    slices = nrows == 1 and nb == 1
    acc = np.zeros(7)
    for a in range(start, na, step):
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        sx = source_xy[a, 0]
        sy = source_xy[a, 1]
        cc = center_col[a]
        sd = sdd[a]
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                               pixel_width)
        scale, dscale = _curved_scales(model, sd, pixel_width)
        acc[:] = 0.0
        # Parallel footprints at most a pixel wide meet at most two pixels.
        narrow = model == PARALLEL and 2.0 * half_p <= 1.0
        # Parallel: Σ (H_hi − H_lo), its moments in x and y, Σ (H_hi + H_lo), Σ S.
        p_d = p_dx = p_dy = p_h = p_s = 0.0
        psums[:] = 0.0
        for b in range(nb):
            for j in range(nrows):
                for i in range(ncols):
                    Gt[b, PAD_LO + i, j] = gbar[b, a, j, i]
        go0 = PAD_LO * nrows
        for iy in range(ny):
            y = y0 + iy * voxel_width
            lo, hi = fov_ix_range(y, x0, voxel_width, nx, fov_r2)
            if lo >= hi:
                continue
            direct_footprints(fp, lo, hi, 0, x0, y, cx, cy, sx, sy, cxp, cyp, half_p,
                              par_weight, sd, 0.0, 0.0, model, voxel_width, pixel_width, cc,
                              dist_sod if model != PARALLEL else 0.0)
            if slices:
                # One slice, one row, one sample: a vectorised pass, the footprints wider
                # than three pixels redone, then the row's terms in a pass of their own.
                fo = iy * nx
                _slice_row(Ff, fo, Gf, fp, lo, hi, ncols, H, not narrow)
                for ix in range(lo, hi if not narrow else lo):
                    if not _three_pixels(fp[0, ix], fp[1, ix]):
                        H[0, ix], H[1, ix], H[2, ix] = _sums(
                            Ff, Gf, 1, fstride, gstride, fo + ix, go0, 1, 1, fp[0, ix],
                            fp[1, ix], ncols)
                if model == PARALLEL:
                    _parallel_row_sums(H, lo, hi, x0, voxel_width, psums)
                    p_dy += psums[2] * y
                    continue
                terms = _fan_row(fp, H, lo, hi, x0, y, cx, cy, sx, sy, sd, model, scale,
                                 dscale, half, voxel_width, pixel_width, dist_sod)
                for t in range(7):
                    acc[t] += terms[t]
                continue
            for ix in range(lo, hi):
                jlo = ext[iy, ix, 0]
                jhi = ext[iy, ix, 1]
                weight = fp[2, ix]
                if jhi < jlo or weight == 0.0:
                    continue
                c_lo = fp[0, ix]
                c_hi = fp[1, ix]
                hl, hh, s = _sums(Ff, Gf, nb, fstride, gstride, (iy * nx + ix) * nrows + jlo,
                                  go0 + jlo, nrows, jhi - jlo + 1, c_lo, c_hi, ncols)
                if model == PARALLEL:
                    x = x0 + ix * voxel_width
                    dd = hh - hl
                    p_d += dd
                    p_dx += dd * x
                    p_dy += dd * y
                    p_h += hh + hl
                    p_s += s
                else:
                    H[0, ix] = hl
                    H[1, ix] = hh
                    H[2, ix] = s
                    dy = y - sy
                    x = x0 + ix * voxel_width
                    curved = model == CURVED
                    # A literal 0 without the weight: its terms compile away there.
                    if dist_sod > 0.0:
                        t = _fan_col(fp, H, ix, x, y, dy, abs(dy), cx, cy, sx, sd, curved,
                                     scale, dscale, half, voxel_width, pixel_width, dist_sod)
                    else:
                        t = _fan_col(fp, H, ix, x, y, dy, abs(dy), cx, cy, sx, sd, curved,
                                     scale, dscale, half, voxel_width, pixel_width, 0.0)
                    for k in range(7):
                        acc[k] += t[k]
        if model == PARALLEL:
            p_d += psums[0]
            p_dx += psums[1]
            p_h += psums[3]
            p_s += psums[4]
            acc[0], acc[1], acc[5] = _parallel_view_grads(cx, cy, par_weight, p_d, p_dx,
                                                          p_dy, p_h, p_s, voxel_width,
                                                          pixel_width)
        d_col[a, 0] = acc[0]
        d_col[a, 1] = acc[1]
        d_src[a, 0] = acc[2]
        d_src[a, 1] = acc[3]
        d_sdd[a] = acc[4]
        d_cc[a] = acc[5]
        d_sod[a] = acc[6]


def row_weights(nz, nrows, z0, voxel_height, pixel_height, center_row):
    """``(W, shift)``: W (nrows, nz) float64 the overlaps (pixel units) of voxel k's row
    interval with row j (``leap.kernels.footprints.row_mapping`` without magnification),
    and ``shift`` the direct-row shift (voxel k exactly on row k + shift) or None."""
    A, B, _ = _fp.row_mapping(z0, voxel_height, 0.0, 1.0, 1.0, False, pixel_height,
                              center_row)
    direct, shift = _fp.direct_shift(False, A, B)
    lo = A + np.arange(nz) * B
    j = np.arange(nrows)[:, None]
    W = np.clip(np.minimum(lo + B, j + 0.5) - np.maximum(lo, j - 0.5), 0.0, None)
    return W, (shift if direct else None)


def row_columns(f, nrows, z0, voxel_height, pixel_height, center_row):
    """f (nb, nz, ny, nx) float32 → (Fc, ext): Fc (nb, ny, nx, nrows) float32 the voxel
    columns resampled onto the detector rows (:func:`row_weights`; values moved for
    direct rows), ext (ny, nx, 2) int64 each column's first and last row nonzero in any
    sample (last < first where none)."""
    nb, nz, ny, nx = f.shape
    W, shift = row_weights(nz, nrows, z0, voxel_height, pixel_height, center_row)
    if shift is not None:
        Fc = np.zeros((nb, ny, nx, nrows), dtype=np.float32)
        k0, k1 = max(0, -shift), min(nz, nrows - shift)
        if k1 > k0:
            Fc[..., k0 + shift:k1 + shift] = f[:, k0:k1].transpose(0, 2, 3, 1)
    else:
        # Each slice meets a few rows only: add it into those, rows outermost, then
        # transpose once (a dense product with W would cost nz·nrows per column).
        F = np.zeros((nb, nrows, ny, nx), dtype=np.float32)
        for k in range(nz):
            for j in np.flatnonzero(W[:, k]):
                F[:, j] += np.float32(W[j, k]) * f[:, k]
        Fc = np.ascontiguousarray(F.transpose(0, 2, 3, 1))
    nonzero = (Fc != 0).any(axis=0)
    ext = np.empty((ny, nx, 2), dtype=np.int64)
    ext[..., 0] = np.argmax(nonzero, axis=2)
    ext[..., 1] = nrows - 1 - np.argmax(nonzero[..., ::-1], axis=2)
    empty = ~nonzero.any(axis=2)
    ext[empty, 0] = 1
    ext[empty, 1] = 0
    return Fc, ext


def checked_views(f_shape, gbar_shape, col_dir, source_xy, center_col, sdd, column_model,
                  dist_sod):
    """:func:`geometry_vjp`'s checks (batched shapes (nb, nz, ny, nx) and (nb, na, nrows,
    ncols)); returns the per-view inputs as contiguous float64 arrays, the model and
    dist_sod (shared with the CUDA kernel, ``leap.kernels.cuda.axial_view_vjp``)."""
    if len(f_shape) != 4 or len(gbar_shape) != 4 or f_shape[0] != gbar_shape[0]:
        raise ValueError("f (nb, nz, ny, nx) and gbar (nb, na, nrows, ncols) need one batch; "
                         f"got shapes {tuple(f_shape)} and {tuple(gbar_shape)}")
    na = gbar_shape[1]
    model = int(column_model)
    if model not in (PARALLEL, FLAT, CURVED):
        raise ValueError(f"column_model must be PARALLEL, FLAT or CURVED, got {column_model}")
    dist_sod = float(dist_sod)
    if dist_sod != 0.0 and (model == PARALLEL or not dist_sod > 0.0):
        raise ValueError(f"dist_sod (FBP's distance weight) must be a positive sod for fan "
                         f"beams, got {dist_sod} for column model {model}")
    col_dir = np.ascontiguousarray(col_dir, dtype=np.float64)
    source_xy = np.ascontiguousarray(source_xy, dtype=np.float64)
    center_col = np.ascontiguousarray(np.broadcast_to(center_col, (na,)), dtype=np.float64)
    sdd = np.ascontiguousarray(np.broadcast_to(sdd, (na,)), dtype=np.float64)
    for name, v in (("col_dir", col_dir), ("source_xy", source_xy)):
        if v.shape != (na, 2):
            raise ValueError(f"{name} must have shape ({na}, 2), got {v.shape}")
    return col_dir, source_xy, center_col, sdd, model, dist_sod


def geometry_vjp(f, gbar, col_dir, source_xy, center_col, sdd, column_model, fov_r2, x0, y0,
                 z0, voxel_width, voxel_height, pixel_width, pixel_height, center_row,
                 dist_sod=0.0):
    """Gradients of ``L = Σ ḡ · P(θ) f`` with respect to the per-view in-plane quantities
    of a parallel or fan beam (module notes); with ``dist_sod`` (fan beams), of FBP's
    distance-weighted projection (each column times dist_sod/(dist_sod − x·θ), θ = (cy,
    −cx)) and also with respect to dist_sod.

    Parameters
    ----------
    f : (nz, ny, nx) or (nb, nz, ny, nx) float32
        Volume(s); a batch is summed.
    gbar : (na, nrows, ncols) or (nb, na, nrows, ncols) float32
        Upstream gradient ḡ, with f's batch.
    col_dir, source_xy : (na, 2) float64
        Column axis (unit vector as the geometry gives it) and source position, mm
        (ignored for parallel beams).
    center_col, sdd : (na,) float64
        Detector centre, fractional pixels, and source-to-detector distance, mm (fan).
    column_model : int
        ``PARALLEL``, ``FLAT`` or ``CURVED`` (``leap.kernels.footprints``).
    fov_r2 : float
        Squared field-of-view radius, mm² (voxel columns beyond are skipped).
    x0, y0, z0, voxel_width, voxel_height : float
        First voxel centre and voxel sizes, mm.
    pixel_width, pixel_height, center_row : float
        Pixel sizes, mm, and the detector's centre row, fractional pixels.
    dist_sod : float
        Fan beams: sod (mm) of FBP's distance weight; 0 (default): none.

    Returns
    -------
    d_col_dir, d_source_xy : (na, 2) float64
    d_center_col, d_sdd : (na,) float64
        (``d_source_xy`` and ``d_sdd`` are 0 for parallel beams.)
    d_dist_sod : float
        Only with ``dist_sod > 0``: the gradient with respect to it.
    """
    f = np.asarray(f, dtype=np.float32)
    gbar = np.asarray(gbar, dtype=np.float32)
    if f.ndim == 3:
        f = f[None]
    if gbar.ndim == 3:
        gbar = gbar[None]
    col_dir, source_xy, center_col, sdd, model, dist_sod = checked_views(
        f.shape, gbar.shape, col_dir, source_xy, center_col, sdd, column_model, dist_sod)
    na = gbar.shape[1]
    Fc, ext = row_columns(np.ascontiguousarray(f), gbar.shape[2], z0, voxel_height,
                          pixel_height, center_row)
    d_col = np.zeros((na, 2))
    d_src = np.zeros((na, 2))
    d_cc = np.zeros(na)
    d_sdd = np.zeros(na)
    d_sod = np.zeros(na)
    threads.run(_views, Fc, ext, np.ascontiguousarray(gbar), col_dir, source_xy, center_col,
                sdd, model, float(fov_r2), float(x0), float(y0), float(voxel_width),
                float(pixel_width), dist_sod, d_col, d_src, d_cc, d_sdd, d_sod, items=na)
    if dist_sod > 0.0:
        return d_col, d_src, d_cc, d_sdd, float(d_sod.sum())
    return d_col, d_src, d_cc, d_sdd


def plan_geometry_vjp(plan, f, gbar):
    """:func:`geometry_vjp` for a plan (``leap.kernels.plan.make_plan``) of a parallel or
    fan beam, at its views' ``col_dir`` and ``source_xy`` and its per-view detector
    centres (``plan.center_cols``, else the detector's), with its FBP distance weight
    (``plan.dist_sod``, fan beams). Returns what :func:`geometry_vjp` returns.

    Raises
    ------
    ValueError
        A plan the model above does not describe: not parallel or fan (z magnified,
        cone-parallel, modular), helical FBP weights, or a flying focal spot.
    """
    return geometry_vjp(f, gbar, *plan_arguments(plan))


def plan_arguments(plan):
    """The arguments of :func:`geometry_vjp` after f and gbar for a plan (checked by
    :func:`plan_geometry_vjp`): its views' ``col_dir`` and ``source_xy``, its per-view
    detector centres (``plan.center_cols``, else the detector's), sdd, the model, and the
    volume, detector and FBP distance weight (``plan.dist_sod``) scalars. Raises what
    :func:`plan_geometry_vjp` raises."""
    views = getattr(plan, "views", None)
    if (plan.modular or views is None or views.magnify_z
            or views.column_model not in (PARALLEL, FLAT, CURVED) or views.focus is not None
            or plan.slice_weights is not None
            or np.any(views.source_z != 0.0) or np.any(plan.row_factor != 1.0)):
        raise ValueError("plan_geometry_vjp takes the (distance-weighted) projection of "
                         "parallel and fan beams (no z magnification, no slice weights)")
    s = plan.scalars()
    na = views.col_dir.shape[0]
    center_col = (np.full(na, float(s.center_col)) if plan.center_cols is None
                  else plan.center_cols)
    return (views.col_dir, views.source_xy, center_col, np.full(na, float(views.sdd)),
            views.column_model, s.fov_r2, s.x0, s.y0, s.z0, s.voxel_width, s.voxel_height,
            s.pixel_width, s.pixel_height, s.center_row, float(plan.dist_sod))
