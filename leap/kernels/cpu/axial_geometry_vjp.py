"""CPU geometry vector–Jacobian product of the modular projector for vertical modules,
a voxel column at a time.

``geometry_vjp`` returns what ``leap.kernels.cpu.modular_geometry_vjp.geometry_vjp``
returns (``∂L/∂s, ∂L/∂c, ∂L/∂r, ∂L/∂e`` of every view's source, module centre, row and
column vector for ``L = Σ ḡ · P(θ) f``, the same model, formulas and conventions: read
that module's docstring first) when every module is vertical: row vector ``r = +z`` and
column vector ``e`` horizontal, the geometries that the CPU projectors run on the fast
axial kernels (``leap.geometry.ModularBeam.vertical_modules``, ``plan.vertical``).
The general kernel evaluates every (view, voxel) footprint; here the model separates
like the cone beam's (``leap.kernels.cpu.columns``) and the per-voxel terms collapse
into a few sums along each voxel column.

Why it separates. With ``r = (0, 0, 1)`` and ``e = (e₀, e₁, 0)`` the normal
``n = e × r = (e₁, −e₀, 0)`` is horizontal, so for the voxel column at (x, y)
(``d = p − s``, ``ρ² = d_x² + d_y²``, ``dz_k = z_k − s_z``):

* the column ends ``ua, ub``, their ray parameters ``ta, tb`` and coordinates
  ``ma, mb``, the in-plane segment (ax, ay), the denominator ``big = max(|d_x|, |d_y|)``
  of ``l`` and every skip test do not depend on the voxel index k (they are taken from
  ``leap.kernels.cpu.modular_geometry_vjp.footprint_terms`` once per column);
* both row ends share one ray parameter ``T = dn/(d·n) > 0``, and voxel k's row ends are
  ``v = sv + T·m`` with ``m = dz_k ∓ half_h`` (``m = q·r = q_z``): affine in k, never
  swapped;
* ``l_k = √(ρ² + dz_k²)/big``.

So, with ``w_k = f_k·√(ρ² + dz_k²)`` (``f_k`` the voxel's value, batch samples in turn),
the general kernel's per-view accumulators (``NACC`` slots, filled per voxel there) get,
per column,

* column ends (slots 0–9): ``Σ_k U_k`` and ``Σ_k U_k·dz_k`` for each end, ``U_lo =
  −(voxel_width/big)/pixel_width · Σ_k w_k·SL_k``, ``SL_k`` the ḡ of the detector column
  holding ``c_lo`` summed over voxel k's rows with their overlaps (likewise ``SH_k``,
  ``c_hi``);
* row ends (10–19): ``Σ V``, ``Σ V·m``, ``Σ V·m²`` over both ends of all voxels (one
  ``T`` for both), ``V_lo = −(voxel_width/big)/pixel_height · w_k·t(j_lo)``, ``t(j) =
  Σ_i O_c(i)·ḡ[j, i]`` the row j of ḡ weighted by the column footprint and ``j_lo`` the
  row holding the end (``V_hi`` alike, ``+``);
* ray length (20–22): ``Σ f_k G_k/√(ρ² + dz_k²)``, the same times ``dz_k``, and
  ``Σ f_k G_k·√(ρ² + dz_k²)``, ``G_k = Σ_j wr_kj·t(j)`` the forward's weighted sum;

after which the general kernel's per-view step
(``leap.kernels.cpu.modular_geometry_vjp.make_vjp_kernels``' ``view_vjp``) turns
them into the gradients. ``SL_k``, ``SH_k`` and ``G_k`` are differences of
piecewise-linear cumulative sums of ḡ's detector columns (float64, made once per view)
at voxel k's row ends, as in the axial back-projector; ``t(j)`` is a difference of the
same sums. Per column, view and sample there are two passes, with no footprint
evaluation: one over the voxel edges (``_edges``: the footprint's first and last
detector columns' sums interpolated at the edge, ``t`` from the same loads), then one
over the voxels (``_voxel_sums``, vectorised: its sums may be reassociated,
``leap.kernels.cpu._jit.REDUCE_JIT``). Columns that are zero in every sample are
skipped, and only the voxels between a column's first and last nonzero are visited.
The result equals the general kernel's up to float64 rounding (measured ~1e-13
relative), not bit for bit: the sums are taken in another order.

Kinks: as the general kernel (one-sided derivatives of the branch the forward takes; an
end on a pixel edge counted in pixel ``floor(end + ½)``). The row ends are stepped
affinely along the column; where one lies within 1e-8 pixel of a pixel edge it is
recomputed with the general kernel's arithmetic (``(sv + T·((z_k − s_z) ∓ half_h)) /
pixel_height + (nrows − 1)/2``), so both kernels put it in the same pixel; the column
ends are computed with that arithmetic anyway. The interpolated sums are continuous in
the ends, so their rounding differences (about 1e-16 relative) do not matter.

Vertical means: the row vectors are +z and the column vectors horizontal to within
``TOLERANCE``; the kernel uses ``r = (0, 0, 1)`` and ``e = (e₀, e₁, 0)`` (as the
axial projectors do), so within that tolerance the result is the general kernel's for
the snapped vectors. The gradients still have all three components (tilting a module
changes the projection): only the point of evaluation is vertical.

Parallelisation: ``leap.kernels.cpu.threads.run`` shares the views out, one view at
a time per thread, each view's accumulators and gradients written by its thread only
(results do not depend on the number of threads); sums are float64.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from . import columns, threads
from ._jit import FAST_JIT, REDUCE_JIT, column_range, modular_view_frame, overlap
from .modular_geometry_vjp import (NACC, _end_pixel, _footprint_terms, _view_vjp,
                                   batched, checked_inputs)

#: Largest deviation of a row vector from +z, or of a column vector's z component from
#: 0, that ``geometry_vjp`` accepts (the vectors are snapped to vertical).
TOLERANCE = 1e-6
#: A row end stepped affinely (fractional pixel + ½) closer than this to a pixel edge is
#: recomputed with the general kernel's arithmetic (the affine step is off by ~1e-13).
EDGE_GUARD = 1e-8



@numba.njit(**FAST_JIT)
def _row_value(cum, b0, b1, bm, o0, o1, wide, j):
    """``t(j) = Σ_i O_c(i)·ḡ[j, i]`` (0 for j = −1, an end off the detector): the
    differences of the footprint's first and last columns' cumulative sums (offsets b0,
    b1 in ``cum``, overlaps o0, o1) and, for footprints wider than two pixels, of the
    interior columns' combined sums (offset bm)."""
    if j < 0:
        return 0.0
    t = o0 * (cum[b0 + j + 1] - cum[b0 + j]) + o1 * (cum[b1 + j + 1] - cum[b1 + j])
    if wide:
        t += cum[bm + j + 1] - cum[bm + j]
    return t


@numba.njit(**FAST_JIT)
def _exact_row(sv, T, z, sz, h, pixel_height, center, nrows):
    """The row holding the row end ``sv + T·((z − sz) + h)`` (h = ∓half_h), computed
    as the general kernel computes it (``footprint_terms``, ``modular_box``,
    ``end_pixel``)."""
    v = sv + T * ((z - sz) + h)
    return _end_pixel(v / pixel_height + center, nrows)


@numba.njit(**FAST_JIT)
def row_cumsums(gbar, a, rf, cum):
    """``cum[(b·ncols + i)·(nrows + 1) + j] = Σ_{j' < j} ḡ[b, a, j', i]`` (float64) for
    every sample b and detector column i of view a, each row j' weighted by
    ``rf[a, j']`` (``rf`` None: unweighted; the curved cone's ray stretch,
    ``leap.kernels.cpu.curved_cone_vjp``)."""
    nb, _, nrows, ncols = gbar.shape
    n1 = nrows + 1
    for b in range(nb):
        for i in range(ncols):
            c = (b * ncols + i) * n1
            run = 0.0
            cum[c] = 0.0
            for j in range(nrows):
                if rf is None:
                    run += gbar[b, a, j, i]
                else:
                    run += gbar[b, a, j, i] * rf[a, j]
                cum[c + j + 1] = run


@numba.njit(**FAST_JIT)
def interior_cumsums(cum, b, ncols, nrows, bm, i0, i1, P0, Ps, kf, kl):
    """``cum[bm + j]`` = the sum over sample b's interior footprint columns
    ``i0 < i < i1`` (overlap 1) of their cumulative sums (``row_cumsums``' layout),
    for the rows j that the column's row ends ``P0 + q·Ps``, q = kf … kl + 1, reach (and
    a row beyond, for the edge guard); the other entries are left as they were."""
    n1 = nrows + 1
    ja = max(0, int(math.floor(max(P0 + kf * Ps, -1.0))) - 1)
    jb = min(nrows, int(math.floor(min(P0 + (kl + 1) * Ps, nrows + 1.0))) + 2)
    for j in range(ja, jb + 1):
        t = 0.0
        for i in range(i0 + 1, i1):
            t += cum[(b * ncols + i) * n1 + j]
        cum[bm + j] = t


@numba.njit(**FAST_JIT)
def _edges(cum, b0, b1, bm, wide, o0, o1, nrows, P0, Ps, q0, q1, E0, E1, Em, TL, TH,
           near_q):
    """Per voxel edge q = q0 … q1 of a column (row position ``p = P0 + q·Ps``,
    fractional pixel + ½): the cumulative sums of the footprint's first and last
    detector columns (E0, E1) and of its interior ones (Em, wide footprints only) at
    p, and the footprint-weighted ḡ of the row holding p, ``t(j)``, into TL[q] (the
    lower end of voxel q) and TH[q] (the upper end of voxel q − 1). Returns how many
    edges lay within ``EDGE_GUARD`` of a pixel edge, their q in ``near_q`` (their TL,
    TH are then to be recomputed, ``_fix_rows``). The interpolations' slopes are
    ḡ's rows, so t costs no further loads."""
    n = float(nrows)
    # Unsigned indices and a float edge counter: no negative-index wrap-around and no
    # int-to-float conversion per edge (columns module notes).
    one = np.uintp(1)
    u0 = np.uintp(b0)
    u1 = np.uintp(b1)
    um = np.uintp(bm)
    top0 = cum[u0 + np.uintp(nrows)]
    top1 = cum[u1 + np.uintp(nrows)]
    topm = cum[um + np.uintp(nrows)] if wide else 0.0
    count = 0
    qf = float(q0)
    for q in range(np.uintp(q0), np.uintp(q1 + 1)):
        p = P0 + qf * Ps
        qf += 1.0
        if p > 0.0 and p < n:
            ki = int(p)
            fr = p - ki
            k = np.uintp(ki)
            x0 = cum[u0 + k]
            d0 = cum[u0 + k + one] - x0
            x1 = cum[u1 + k]
            d1 = cum[u1 + k + one] - x1
            E0[q] = x0 + fr * d0
            E1[q] = x1 + fr * d1
            t = o0 * d0 + o1 * d1
            if wide:
                xm = cum[um + k]
                dm = cum[um + k + one] - xm
                Em[q] = xm + fr * dm
                t += dm
            near = fr < EDGE_GUARD or fr > 1.0 - EDGE_GUARD
        else:
            low = p <= 0.0
            E0[q] = 0.0 if low else top0
            E1[q] = 0.0 if low else top1
            Em[q] = 0.0 if low else topm
            t = 0.0
            near = abs(p) < EDGE_GUARD or abs(p - n) < EDGE_GUARD
        TL[q] = t
        TH[q] = t
        if near:
            near_q[count] = q
            count += 1
    return count


@numba.njit(**FAST_JIT)
def _fix_rows(cum, b0, b1, bm, wide, o0, o1, nrows, near_q, count, kf, kl, sv, T, sz, z0,
              voxel_height, half_h, pixel_height, c_row, TL, TH):
    """Rows of the ends at the edges ``near_q[:count]`` (near pixel edges, see
    ``_edges``), each end as the general kernel computes it: voxel q − 1's upper
    end into TH[q], voxel q's lower end into TL[q]."""
    for c in range(count):
        q = near_q[c]
        if q > kf:
            j = _exact_row(sv, T, z0 + (q - 1) * voxel_height, sz, half_h, pixel_height,
                           c_row, nrows)
            TH[q] = _row_value(cum, b0, b1, bm, o0, o1, wide, j)
        if q <= kl:
            j = _exact_row(sv, T, z0 + q * voxel_height, sz, -half_h, pixel_height,
                           c_row, nrows)
            TL[q] = _row_value(cum, b0, b1, bm, o0, o1, wide, j)


@numba.njit(**REDUCE_JIT)
def _voxel_sums(Vf, v0, kf, kl, E0, E1, Em, TL, TH, DZ, D2, rho2, o0, o1, wide, half_h):
    """The column's per-voxel sums over k = kf … kl (module notes), with ``w = f_k·s``
    and ``f_k/s``, ``s = √(ρ² + dz_k²)``: Σ w·SL, Σ w·SL·dz, Σ w·SH, Σ w·SH·dz (column
    ends); Σ V, Σ V·m, Σ V·m² (row ends, ``V = −w·t_lo`` at ``m = dz − half_h`` and
    ``w·t_hi`` at ``dz + half_h``); Σ G·f/s, Σ G·f/s·dz, Σ G·w (ray length). Vf is the
    flat voxel columns, v0 the column's offset; DZ, D2 the slices' dz and dz²."""
    a_lo = a_loz = a_hi = a_hiz = 0.0
    s0 = s1 = s2 = 0.0
    h0 = hz = hl = 0.0
    one = np.uintp(1)
    base = np.uintp(v0)
    for k in range(np.uintp(kf), np.uintp(kl + 1)):
        val = np.float64(Vf[base + k])
        s = math.sqrt(rho2 + D2[k])
        ws = val * s
        wi = val / s
        dz = DZ[k]
        sl = E0[k + one] - E0[k]
        sh = E1[k + one] - E1[k]
        g = o0 * sl + o1 * sh
        if wide:
            g += Em[k + one] - Em[k]
        x = ws * sl
        a_lo += x
        a_loz += x * dz
        x = ws * sh
        a_hi += x
        a_hiz += x * dz
        m_lo = dz - half_h
        m_hi = dz + half_h
        v_lo = -ws * TL[k]
        v_hi = ws * TH[k + one]
        s0 += v_lo + v_hi
        x = v_lo * m_lo
        y = v_hi * m_hi
        s1 += x + y
        s2 += x * m_lo + y * m_hi
        x = g * wi
        h0 += x
        hz += x * dz
        hl += g * ws
    return a_lo, a_loz, a_hi, a_hiz, s0, s1, s2, h0, hz, hl


@numba.njit(**FAST_JIT)
def _views(V, extent, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width,
           voxel_height, pixel_width, pixel_height, d_sources, d_centers, d_rows, d_cols,
           start, step):
    """Views ``start, start + step, …`` (``leap.kernels.cpu.threads.run``) of
    ``geometry_vjp``: V (nb, ny, nx, nz) float32 the samples' voxel columns,
    extent (ny, nx, 2) int32 each column's first and last voxel nonzero in any sample,
    gbar (nb, na, nrows, ncols) float32, the (na, 3) float64 geometry with rows and
    columns vertical, gradients added into the (na, 3) float64 outputs."""
    nb, ny, nx, nz = V.shape
    na, nrows, ncols = gbar.shape[1], gbar.shape[2], gbar.shape[3]
    n1 = nrows + 1
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    c_col = 0.5 * (ncols - 1)
    c_row = 0.5 * (nrows - 1)
    inv_ph = 1.0 / pixel_height
    # ḡ's cumulative sums for every sample and column, then one sample's combined
    # interior columns (wide footprints), in one block.
    cum = np.empty(nb * ncols * n1 + n1)
    bm = nb * ncols * n1
    # Per-edge and per-slice vectors, in one block (columns.scratch_vectors' reason).
    m = nz + 9
    block = np.zeros(7 * m)
    E0, E1, Em = block[:nz + 1], block[m:m + nz + 1], block[2 * m:2 * m + nz + 1]
    TL, TH = block[3 * m:3 * m + nz + 1], block[4 * m:4 * m + nz + 1]
    DZ, D2 = block[5 * m:5 * m + nz], block[6 * m:6 * m + nz]
    acc = np.zeros(NACC)
    sums = np.zeros(10)
    near_q = np.empty(nz + 1, dtype=np.intp)
    Vf = V.reshape(-1)
    for a in range(start, na, step):
        frame = modular_view_frame(sources, centers, rows, cols, a)
        sx, sy, sz, su, sv, n0, n1_, n2, dn, e0, e1, e2, r0, r1, r2 = frame
        if dn == 0.0:
            continue                    # every voxel is skipped: zero gradients
        inv_dn = 1.0 / dn
        acc[:] = 0.0
        row_cumsums(gbar, a, None, cum)
        for k in range(nz):
            dz = (z0 + k * voxel_height) - sz
            DZ[k] = dz
            D2[k] = dz * dz
        for iy in range(ny):
            y = y0 + iy * voxel_width
            for ix in range(nx):
                kf = extent[iy, ix, 0]
                kl = extent[iy, ix, 1]
                if kl < kf:
                    continue
                x = x0 + ix * voxel_width
                (ua, ub, va, vb, l, ax, ay, ta, tb, T, td, ma, mb, mc, md,
                 big_is_x) = _footprint_terms(x, y, z0 + kf * voxel_height, sx, sy, sz, su,
                                              sv, n0, n1_, n2, dn, e0, e1, e2, r0, r1, r2,
                                              half_w, half_h)
                if l == 0.0:
                    continue
                swap_u = ua > ub
                c_lo = (ub if swap_u else ua) / pixel_width + c_col
                c_hi = (ua if swap_u else ub) / pixel_width + c_col
                if not c_hi > c_lo:
                    continue
                i0, i1 = column_range(c_lo, c_hi, ncols)
                if i0 > i1:
                    continue
                o0 = overlap(c_lo, c_hi, i0 - 0.5, i0 + 0.5)
                o1 = 0.0 if i1 == i0 else overlap(c_lo, c_hi, i1 - 0.5, i1 + 0.5)
                wide = i1 - i0 >= 2
                dx = x - sx
                dy = y - sy
                # Row ends at positions P0 + q·Ps (fractional pixel + ½) of the voxel
                # edges q = kf … kl + 1.
                P0 = (sv + T * ((z0 - sz) - half_h)) * inv_ph + c_row + 0.5
                Ps = T * voxel_height * inv_ph
                sums[:] = 0.0
                for b in range(nb):
                    b0 = (b * ncols + i0) * n1
                    b1 = (b * ncols + i1) * n1
                    if wide:
                        interior_cumsums(cum, b, ncols, nrows, bm, i0, i1, P0, Ps, kf, kl)
                    count = _edges(cum, b0, b1, bm, wide, o0, o1, nrows, P0, Ps, kf, kl + 1,
                                   E0, E1, Em, TL, TH, near_q)
                    if count > 0:
                        _fix_rows(cum, b0, b1, bm, wide, o0, o1, nrows, near_q, count, kf, kl,
                                  sv, T, sz, z0, voxel_height, half_h, pixel_height, c_row,
                                  TL, TH)
                    part = _voxel_sums(Vf, ((b * ny + iy) * nx + ix) * nz, kf, kl, E0, E1,
                                       Em, TL, TH, DZ, D2, dx * dx + dy * dy, o0, o1, wide,
                                       half_h)
                    for i in range(10):
                        sums[i] += part[i]
                big = abs(dx) if big_is_x else abs(dy)
                _column_terms(acc, sums, _end_pixel(c_lo, ncols) >= 0,
                              _end_pixel(c_hi, ncols) >= 0, swap_u, dx, dy, ax, ay, ta, tb,
                              ma, mb, T, big, big_is_x, inv_dn, voxel_width, pixel_width,
                              pixel_height)
        _view_vjp(acc, centers, a, frame, d_sources, d_centers, d_rows, d_cols)


@numba.njit(**FAST_JIT)
def _end_sums(acc, o, U, Uz, qx, qy, t, m, inv_dn):
    """A column end's share of the accumulators (slots o … o + 9, as ``end_terms``
    with ``q = (qx, qy, dz_k)``) from ``U = Σ_k U_k`` and ``Uz = Σ_k U_k·dz_k``."""
    k = t * m * inv_dn
    ut = U * t
    utz = Uz * t
    acc[o] += U
    acc[o + 1] += U * k
    acc[o + 2] += ut
    acc[o + 3] += ut * k
    acc[o + 4] += ut * qx
    acc[o + 5] += ut * qy
    acc[o + 6] += utz
    acc[o + 7] += ut * k * qx
    acc[o + 8] += ut * k * qy
    acc[o + 9] += utz * k


@numba.njit(**FAST_JIT)
def _column_terms(acc, sums, lo_on, hi_on, swap_u, dx, dy, ax, ay, ta, tb, ma, mb, T, big,
                  big_is_x, inv_dn, voxel_width, pixel_width, pixel_height):
    """Add one voxel column's sums (see ``_views`` and the module notes) into the
    view's accumulators: the factors common to the column's voxels (voxel_width/big,
    the pixel sizes, the ends' ray parameters) are applied here, once. ``sums``: the
    column's ``_voxel_sums``, summed over the batch."""
    a_lo, a_loz, a_hi, a_hiz, s0, s1, s2, h0, hz, hl = (sums[0], sums[1], sums[2], sums[3],
                                                        sums[4], sums[5], sums[6], sums[7],
                                                        sums[8], sums[9])
    scale = voxel_width / big
    cu = scale / pixel_width
    u_lo = -cu * a_lo if lo_on else 0.0
    u_loz = -cu * a_loz if lo_on else 0.0
    u_hi = cu * a_hi if hi_on else 0.0
    u_hiz = cu * a_hiz if hi_on else 0.0
    if swap_u:
        u_lo, u_hi = u_hi, u_lo
        u_loz, u_hiz = u_hiz, u_loz
    # u_lo now belongs to end a (p − (ax, ay, 0)), u_hi to end b.
    _end_sums(acc, 0, u_lo, u_loz, dx - ax, dy - ay, ta, ma, inv_dn)
    _end_sums(acc, 0, u_hi, u_hiz, dx + ax, dy + ay, tb, mb, inv_dn)
    # Row ends: q = (dx, dy, m), t = T for both, so Σ V, Σ V·m, Σ V·m².
    cv = scale / pixel_height
    v0 = cv * s0
    v1 = cv * s1
    v2 = cv * s2
    tk = T * inv_dn
    acc[10] += v0
    acc[11] += tk * v1
    acc[12] += T * v0
    acc[13] += T * tk * v1
    acc[14] += T * dx * v0
    acc[15] += T * dy * v0
    acc[16] += T * v1
    acc[17] += T * tk * dx * v1
    acc[18] += T * tk * dy * v1
    acc[19] += T * tk * v2
    # Ray length l = |d|/big: the general kernel's h = voxel_width·G·l/|d|², summed.
    acc[20] -= scale * h0 * dx
    acc[21] -= scale * h0 * dy
    acc[22] -= scale * hz
    hb = scale * hl / (big * big)
    if big_is_x:
        acc[20] += hb * dx
    else:
        acc[21] += hb * dy


def _columns(f):
    """f (nb, nz, ny, nx) float32 → its voxel columns (nb, ny, nx, nz) float32 and each
    column's first and last voxel nonzero in any sample (ny, nx, 2) int32
    (``leap.kernels.cpu.columns.volume_z_columns``)."""
    parts = [columns.volume_z_columns(f[b]) for b in range(f.shape[0])]
    if len(parts) == 1:
        V, extent = parts[0]
        return V[None], extent
    V = np.stack([p[0] for p in parts])
    ext = np.stack([p[1] for p in parts])
    extent = np.empty_like(parts[0][1])
    extent[..., 0] = ext[..., 0].min(axis=0)
    extent[..., 1] = ext[..., 1].max(axis=0)
    return V, extent


def geometry_vjp(f, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                 voxel_height, pixel_width, pixel_height):
    """``∂L/∂(s, c, r, e)`` of ``L = Σ ḡ · P(θ) f`` for the modular projector, vertical
    modules only; arguments and results as
    ``leap.kernels.cpu.modular_geometry_vjp.geometry_vjp``.

    Parameters
    ----------
    f : (nz, ny, nx) or (nb, nz, ny, nx) float32
        Volume(s); a batch is summed.
    gbar : (na, nrows, ncols) or (nb, na, nrows, ncols) float32
        Upstream gradient ḡ, with f's batch.
    sources, centers, rows, cols : (na, 3) float64
        Source, module centre, row and column vectors (mm; unit vectors as
        :class:`leap.geometry.ModularBeam` stores them). Every row vector must be +z and
        every column vector horizontal, to within ``TOLERANCE``.
    x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height : float
        First voxel centre and sizes, mm.

    Returns
    -------
    d_sources, d_centers, d_rows, d_cols : (na, 3) float64

    Raises
    ------
    ValueError
        Wrong shapes, or a module that is not vertical.
    """
    f, gbar = batched(f, gbar)
    sources, centers, rows, cols = checked_inputs(f.shape, gbar.shape, sources, centers,
                                                  rows, cols)
    if (np.any(np.abs(rows - (0.0, 0.0, 1.0)) > TOLERANCE)
            or np.any(np.abs(cols[:, 2]) > TOLERANCE)):
        raise ValueError("geometry_vjp for vertical modules needs row vectors +z and "
                         "horizontal column vectors; use modular_geometry_vjp otherwise")
    rows = np.zeros_like(rows)
    rows[:, 2] = 1.0
    cols = cols.copy()
    cols[:, 2] = 0.0
    na = gbar.shape[1]
    out = [np.zeros((na, 3)) for _ in range(4)]
    V, extent = _columns(np.ascontiguousarray(f, dtype=np.float32))
    threads.run(_views, V, extent, np.ascontiguousarray(gbar, dtype=np.float32), sources,
                centers, rows, cols, float(x0), float(y0), float(z0), float(voxel_width),
                float(voxel_height), float(pixel_width), float(pixel_height), *out, items=na)
    return tuple(out)
