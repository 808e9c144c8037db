"""CPU geometry vector–Jacobian product of the axial projector for curved-detector cone
beams (circular or helical), a voxel column at a time.

The model (``leap.kernels.cpu.axial``, column model ``CURVED`` with z magnified): for
view ``a`` and the voxel column at (x, y) inside the field of view, with ``e = (cx, cy)``
the column axis, ``r = (−cy, cx)`` the ray direction, ``d = (x, y) − s`` (s the in-plane
source), ``ρ = |d|``,

* ``leap.kernels.footprints.axial_column_footprint`` gives the column interval: the
  mid-plane segment's ends ``u = (d·e ∓ δl)/(d·r ∓ δd)`` map to
  ``c = atan(u)/atan(pixel_width/sdd) + center_col``, and the weight
  ``w = voxel_width·ρ/max(|dx|, |dy|)``;
* ``leap.kernels.footprints.row_mapping`` (dist = ρ) the rows: voxel k covers
  ``[center_row + M·(dz_k − h), center_row + M·(dz_k + h)]``, ``M = sdd/(ρ·pixel_height)``,
  ``dz_k = z_k − s_z``, ``h = voxel_height/2``;
* the projections are multiplied per detector row by the ray stretch
  ``rf_j = √(1 + v_j²)``, ``v_j = (j − center_row)·pixel_height/sdd``
  (``leap.kernels.plan.row_factor``),

    g[a, j, i] = rf_j · Σ_columns w · O(c_lo, c_hi; i) · Σ_k f_k · O(row ends of k; j).

:func:`geometry_vjp` returns the gradients of ``L = Σ ḡ·g`` with respect to the per-view
quantities the kernels take: ``col_dir`` (a free 2-vector, not normalised here),
``source_xy``, ``source_z``, ``sdd``, ``center_col`` and ``center_row``.

How. The row factor is folded into ḡ (``ḡ' = rf·ḡ``, float64) and the rest follows
the column-wise scheme of ``leap.kernels.cpu.axial_geometry_vjp`` (read its notes): per
view, cumulative sums of ḡ' along each detector column (``cum``); per voxel column, the
column footprint's first and last detector columns i0, i1 (overlaps o0, o1) and, for
wider footprints, its interior ones combined. Voxel k covers the rows between its edges
k and k + 1, at row positions ``A + q·B`` (the forward's own ``row_mapping``), so with
``E_q`` a detector column's cumulative sum interpolated at edge q, ``t_q`` the
footprint-weighted ḡ' of the row holding edge q and ``D_q = f_{q−1} − f_q`` (the
column's differences, f = 0 beyond its ends; made once, not per view), summation by
parts turns the per-voxel sums into sums over the edges, one branch-free pass per column
and sample (``_edge_sums``):

* ``H_lo = Σ_k f_k·(E_i0[k + 1] − E_i0[k]) = Σ_q E_i0,q·D_q`` (ḡ' over the column's
  voxels and rows at the pixel holding ``c_lo``; ``H_hi`` likewise with i1);
* ``S = Σ_k f_k·G_k = o0·H_lo + o1·H_hi + Σ_q E_int,q·D_q`` (``∂L/∂w``);
* the row ends: ``ΣV = Σ_k f_k·(t_hi − t_lo) = Σ_q t_q·D_q`` (a voxel's upper end is
  the next one's lower end) and ``ΣVζ = Σ_q t_q·ζ_q·D_q``, ``ζ_q`` edge q's height above
  the source.

Then per column:

* column ends and weight: ``leap.kernels.cpu.axial_view_vjp``'s ``_fan_col`` (the
  curved fan-beam column, the same footprint) gives the terms of ``col_dir``,
  ``source_xy``, ``sdd`` and ``center_col`` from ``H_lo``, ``H_hi``, ``S``;
* rows (ends ``center_row + M·ζ``): ``∂L/∂center_row += w·ΣV``,
  ``∂L/∂s_z −= M·w·ΣV``, and ``∂L/∂M = w·ΣVζ`` reaches ``sdd`` (``∂M/∂sdd = M/sdd``)
  and the source through ρ (``∂M/∂ρ = −M/ρ``, ``∂ρ/∂s = −d/ρ``).

The row factor's own derivative needs ``R_j = Σ_i ḡ[j, i]·P₀[j, i]``, ``P₀`` the
projection without it: one forward projection (the axial projector with unit row
factors), then ``∂L/∂center_row += Σ_j ∂rf_j/∂center_row·R_j`` and likewise ``sdd``.

Cost, measured on 2 shared, loaded cores (``benchmarks/bench_geometry_vjp.py``, 90
views, a (1.5·N)² detector, dense random data, best of 3): 2.4–2.7× the back-projection
of the same problem at 64³ and 1.4–2.8× at 128³; the forward projection for the row
factor is about 40 % of it, and a caller that has it already passes it in
(``projection=``; 1.6× at 64³, 0.8–1.4× at 128³).

Kinks: as ``axial_view_vjp`` and ``axial_geometry_vjp`` (one-sided derivatives of the
branch the forward takes): an end on a pixel edge counts in pixel ``floor(end + ½)``
(the row ends are the forward's values ``A + q·B``, so they fall on the forward's side;
an end exactly on the detector's lower edge is in row 0), an end off the detector
contributes 0, the order of the column ends and the dominant axes are the forward's
branches, columns behind the source and outside the field of view (held fixed: a jump
of the model) are skipped. Not modelled here: a flying focal spot (``focus``).

Parallelisation: ``leap.kernels.cpu.threads.run`` shares the views out, each view's
gradients written by its thread only (results do not depend on the number of threads);
sums are float64 (reassociated, ``REDUCE_JIT``). The CUDA twin,
``leap.kernels.cuda.curved_cone_vjp``, compiles this module's scalar functions
(``row_terms``) and shares its checks (``checked_views``, ``plan_arguments``).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from ..footprints import CURVED
from . import axial, columns, threads
from ._jit import (FAST_JIT, REDUCE_JIT, axial_column_footprint, column_range, overlap,
                   row_mapping)
from .axial_geometry_vjp import _columns, interior_cumsums, row_cumsums
from .axial_view_vjp import _curved_scales, _fan_col
from .columns import fov_ix_range
from .modular_geometry_vjp import _end_pixel, batched


def row_terms(weight, s0, s1, mfac, dist, sd, dx, dy):
    """One voxel column's row-end terms (∂sx, ∂sy, ∂sdd, ∂s_z, ∂center_row) from its
    edge sums ``s0 = ΣV``, ``s1 = ΣVζ`` (module notes), its weight, ``dist = ρ``, the
    view's ``mfac = sdd/pixel_height`` (M = mfac/ρ), sdd and ``(dx, dy) = (x, y) − s``:
    the row ends ``center_row + M·ζ`` give ``∂L/∂center_row = w·ΣV``,
    ``∂L/∂s_z = −M·w·ΣV`` and ``∂L/∂M = w·ΣVζ``, which reaches sdd (∂M/∂sdd = M/sdd)
    and the source through ρ (∂M/∂ρ = −M/ρ, ∂ρ/∂s = −d/ρ). A plain scalar function:
    the CPU (:func:`_views`) and CUDA (``leap.kernels.cuda.curved_cone_vjp``) kernels
    compile it."""
    v0 = weight * s0
    gM = weight * s1
    M = mfac / dist
    gr = gM * M / (dist * dist)          # −∂L/∂ρ / ρ
    return gr * dx, gr * dy, gM * M / sd, -(M * v0), v0


_row_terms = numba.njit(**dict(FAST_JIT, inline="always"))(row_terms)


@numba.njit(**dict(REDUCE_JIT, inline="always"))
def _interior_edges(cum, u0, u1, um, wide, o0, o1, P0, Ps, qa, qb, Df, base, zb,
                    voxel_height):
    """:func:`_edge_sums`' terms of the edges ``qa <= q < qb``, whose row positions lie
    inside the detector (``0 < p < nrows``): no clamps, no branches (``wide`` a constant
    of each call site, so each loop is compiled for one footprint kind)."""
    one = np.uintp(1)
    a0 = a1 = am = s0 = s1 = 0.0
    qf = float(qa)
    for q in range(np.uintp(qa), np.uintp(qb)):
        p = P0 + qf * Ps
        zeta = zb + qf * voxel_height
        qf += 1.0
        fk = math.floor(p)
        k = np.uintp(int(fk))
        fr = p - fk
        x0 = cum[u0 + k]
        g0 = cum[u0 + k + one] - x0
        x1 = cum[u1 + k]
        g1 = cum[u1 + k + one] - x1
        t = o0 * g0 + o1 * g1
        d = Df[base + q]
        a0 += (x0 + fr * g0) * d
        a1 += (x1 + fr * g1) * d
        if wide:
            xm = cum[um + k]
            gm = cum[um + k + one] - xm
            am += (xm + fr * gm) * d
            t += gm
        x = t * d
        s0 += x
        s1 += x * zeta
    return a0, a1, am, s0, s1


@numba.njit(**REDUCE_JIT)
def _edge_sums(cum, b0, b1, bm, wide, o0, o1, nrows, P0, Ps, q0, q1, Df, d0, zb,
               voxel_height):
    """One column's sums over its voxel edges q = q0 … q1, with ``D_q = f_{q−1} − f_q``
    (``Df[d0 + q]``, float64, 0 beyond the column's nonzero voxels) and ``E(p)`` the
    cumulative sums of ḡ' at the edge's row position ``p = P0 + q·Ps`` (fractional pixel
    + ½): ``(Σ E_i0·D, Σ E_i1·D, Σ E_int·D, Σ t·D, Σ t·ζ·D)``, ``E_i0``, ``E_i1`` those
    of the footprint's first and last detector columns (offsets b0, b1 in ``cum``),
    ``E_int`` of its interior ones combined (offset bm, wide footprints), ``t`` the
    footprint-weighted ḡ' of the row holding the edge (0 off the detector) and
    ``ζ = zb + q·voxel_height`` its height above the source's. By parts these are the
    per-voxel sums of the module notes: ``Σ_k f_k·(E[k + 1] − E[k]) = Σ_q E_q·D_q``
    and the row ends ``Σ_k f_k·(t_hi − t_lo) = Σ_q t_q·D_q`` (a voxel's upper end and
    the next one's lower end are one edge). The edges below and above the detector are
    peeled off (E constant there, t = 0), the others summed without branches."""
    n = float(nrows)
    one = np.uintp(1)
    u0 = np.uintp(b0)
    u1 = np.uintp(b1)
    um = np.uintp(bm)
    base = np.uintp(d0)
    s0 = s1 = 0.0
    qa = q0
    while qa <= q1 and P0 + float(qa) * Ps <= 0.0:
        if P0 + float(qa) * Ps == 0.0:
            # An end on the detector's lower edge is in row 0 (floor(end + ½)).
            t = o0 * cum[u0 + one] + o1 * cum[u1 + one]
            if wide:
                t += cum[um + one]
            x = t * Df[base + np.uintp(qa)]
            s0 += x
            s1 += x * (zb + float(qa) * voxel_height)
        qa += 1
    qb = q1
    top = 0.0
    while qb >= qa and P0 + float(qb) * Ps >= n:
        top += Df[base + np.uintp(qb)]
        qb -= 1
    if wide:
        a0, a1, am, t0, t1 = _interior_edges(cum, u0, u1, um, True, o0, o1, P0, Ps, qa,
                                             qb + 1, Df, base, zb, voxel_height)
        am += cum[um + np.uintp(nrows)] * top
    else:
        a0, a1, am, t0, t1 = _interior_edges(cum, u0, u1, um, False, o0, o1, P0, Ps, qa,
                                             qb + 1, Df, base, zb, voxel_height)
    a0 += cum[u0 + np.uintp(nrows)] * top
    a1 += cum[u1 + np.uintp(nrows)] * top
    return a0, a1, am, s0 + t0, s1 + t1


@numba.njit(**FAST_JIT)
def _views(Dc, extent, gbar, rf, col_dir, source_xy, source_z, sdd, center_col, center_row,
           fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height, out,
           start, step):
    """Views ``start, start + step, …`` of :func:`geometry_vjp`: Dc (nb, ny, nx, nz + 1)
    float64 the voxel columns' differences ``D_q = f_{q−1} − f_q``, extent (ny, nx, 2)
    int32 their first and last voxel nonzero in any sample, gbar (nb, na, nrows, ncols)
    float32, rf (na, nrows) float64 the row factors; ``out[a]`` (na, 8) float64 receives
    ∂cx, ∂cy, ∂sx, ∂sy, ∂sdd, ∂center_col, ∂s_z, ∂center_row (the row factor's terms
    aside)."""
    nb, ny, nx, nz1 = Dc.shape
    na, nrows, ncols = gbar.shape[1], gbar.shape[2], gbar.shape[3]
    n1 = nrows + 1
    half_w = 0.5 * voxel_width
    cum = np.empty(nb * ncols * n1 + n1)
    bm = nb * ncols * n1
    fp = np.zeros((3, 1))
    H = np.zeros((3, 1))
    acc = np.zeros(8)
    Df = Dc.reshape(-1)
    for a in range(start, na, step):
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        sx = source_xy[a, 0]
        sy = source_xy[a, 1]
        sz = source_z[a]
        sd = sdd[a]
        cc = center_col[a]
        cr = center_row[a]
        scale, dscale = _curved_scales(CURVED, sd, pixel_width)
        mfac = sd / pixel_height                    # M = mfac / ρ
        zb = (z0 - 0.5 * voxel_height) - sz         # edge 0's height above the source
        acc[:] = 0.0
        row_cumsums(gbar, a, rf, cum)
        for iy in range(ny):
            y = y0 + iy * voxel_width
            dy = y - sy
            lo, hi = fov_ix_range(y, x0, voxel_width, nx, fov_r2)
            for ix in range(lo, hi):
                kf = extent[iy, ix, 0]
                kl = extent[iy, ix, 1]
                if kl < kf:
                    continue
                x = x0 + ix * voxel_width
                # The forward's own footprint and row mapping (bit for bit its ends).
                c_lo, c_hi, weight, dist = axial_column_footprint(
                    x, y, cx, cy, sx, sy, sd, CURVED, voxel_width, pixel_width, cc, 0.0, 0.0)
                if dist <= 0.0 or not c_hi > c_lo:
                    continue
                i0, i1 = column_range(c_lo, c_hi, ncols)
                if i0 > i1:
                    continue
                A, B, _ = row_mapping(z0, voxel_height, sz, dist, sd, True, pixel_height, cr)
                o0 = overlap(c_lo, c_hi, i0 - 0.5, i0 + 0.5)
                o1 = 0.0 if i1 == i0 else overlap(c_lo, c_hi, i1 - 0.5, i1 + 0.5)
                wide = i1 - i0 >= 2
                P0 = A + 0.5
                a_lo = a_hi = a_m = s0 = s1 = 0.0
                for b in range(nb):
                    if wide:
                        interior_cumsums(cum, b, ncols, nrows, bm, i0, i1, P0, B, kf, kl)
                    t = _edge_sums(cum, (b * ncols + i0) * n1, (b * ncols + i1) * n1, bm,
                                   wide, o0, o1, nrows, P0, B, kf, kl + 1, Df,
                                   ((b * ny + iy) * nx + ix) * nz1, zb, voxel_height)
                    a_lo += t[0]
                    a_hi += t[1]
                    a_m += t[2]
                    s0 += t[3]
                    s1 += t[4]
                # Column ends and weight: the curved fan-beam column's terms.
                fp[0, 0] = c_lo
                fp[1, 0] = c_hi
                fp[2, 0] = weight
                H[0, 0] = a_lo if _end_pixel(c_lo, ncols) >= 0 else 0.0
                H[1, 0] = a_hi if _end_pixel(c_hi, ncols) >= 0 else 0.0
                H[2, 0] = o0 * a_lo + o1 * a_hi + a_m
                t = _fan_col(fp, H, 0, x, y, dy, abs(dy), cx, cy, sx, sd, True, scale,
                             dscale, half_w, voxel_width, pixel_width, 0.0)
                for i in range(6):
                    acc[i] += t[i]
                # Rows: ends center_row + M·ζ.
                t = _row_terms(weight, s0, s1, mfac, dist, sd, x - sx, dy)
                acc[2] += t[0]
                acc[3] += t[1]
                acc[4] += t[2]
                acc[6] += t[3]
                acc[7] += t[4]
        for i in range(8):
            out[a, i] = acc[i]


@numba.njit(**FAST_JIT)
def _differences(V, Dc):
    """``Dc[..., q] = V[..., q − 1] − V[..., q]`` in float64 (V = 0 beyond its ends)."""
    nb, ny, nx, nz = V.shape
    for b in range(nb):
        for iy in range(ny):
            for ix in range(nx):
                prev = 0.0
                for q in range(nz):
                    v = np.float64(V[b, iy, ix, q])
                    Dc[b, iy, ix, q] = prev - v
                    prev = v
                Dc[b, iy, ix, nz] = prev


def _column_differences(f):
    """f (nb, nz, ny, nx) float32 → (Dc, extent): Dc (nb, ny, nx, nz + 1) float64 the
    voxel columns' differences ``D_q = f_{q−1} − f_q`` (f = 0 beyond the volume), extent
    (ny, nx, 2) int32 each column's first and last voxel nonzero in any sample
    (``axial_geometry_vjp._columns``)."""
    V, extent = _columns(f)
    Dc = np.empty(V.shape[:3] + (V.shape[3] + 1,))
    _differences(V, Dc)
    return Dc, extent


def row_factors(nrows, sdd, center_row, pixel_height):
    """(rf, ∂rf/∂center_row, ∂rf/∂sdd), each (na, nrows) float64, of the per-row ray
    stretch ``√(1 + v²)``, ``v = (j − center_row)·pixel_height/sdd``, per view."""
    sdd = np.asarray(sdd, dtype=np.float64)[:, None]
    v = (np.arange(nrows) - np.asarray(center_row, dtype=np.float64)[:, None]) \
        * pixel_height / sdd
    rf = np.sqrt(1.0 + v * v)
    return rf, -(pixel_height / sdd) * v / rf, -(v * v) / (sdd * rf)


def _row_products(f, gbar, col_dir, source_xy, source_z, sdd, center_col, center_row,
                  fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height):
    """R (na, nrows) float64: ``Σ_b Σ_i ḡ[b, a, j, i]·P₀[b, a, j, i]``, P₀ the axial
    projector's curved-cone projection of f[b] without the row factor."""
    nb, na, nrows, ncols = gbar.shape
    R = np.zeros((na, nrows))
    p0 = np.empty((na, nrows, ncols), dtype=np.float32)
    ones = np.ones(nrows)
    focus = np.zeros((na, 2))
    for b in range(nb):
        threads.run(axial.project, *columns.volume_z_cumsum(f[b]), p0, col_dir, source_xy,
                    source_z, focus, sdd, 0.0, 0.0, CURVED, True, fov_r2, x0, y0, z0,
                    voxel_width, voxel_height, pixel_width, pixel_height, center_col,
                    center_row, ones, 0.0, None, False, 0, False, items=na)
        _add_row_dots(gbar, b, p0, R)
    return R


@numba.njit(**REDUCE_JIT)
def _add_row_dots(gbar, b, p0, R):
    """``R[a, j] += Σ_i ḡ[b, a, j, i]·p0[a, j, i]`` in float64."""
    na, nrows, ncols = p0.shape
    for a in range(na):
        for j in range(nrows):
            s = 0.0
            for i in range(ncols):
                s += np.float64(gbar[b, a, j, i]) * np.float64(p0[a, j, i])
            R[a, j] += s


def checked_views(f_shape, gbar_shape, col_dir, source_xy, source_z, sdd, center_col,
                  center_row):
    """:func:`geometry_vjp`'s checks of the batched shapes (nb, nz, ny, nx) and (nb, na,
    nrows, ncols); returns the per-view inputs as C-contiguous float64 arrays, col_dir
    and source_xy (na, 2), the others (na,) (scalars broadcast). Shared with the CUDA
    kernel (``leap.kernels.cuda.curved_cone_vjp``)."""
    if len(f_shape) != 4 or len(gbar_shape) != 4 or f_shape[0] != gbar_shape[0]:
        raise ValueError("f (nb, nz, ny, nx) and gbar (nb, na, nrows, ncols) need one batch; "
                         f"got shapes {tuple(f_shape)} and {tuple(gbar_shape)}")
    na = gbar_shape[1]
    col_dir = np.ascontiguousarray(col_dir, dtype=np.float64)
    source_xy = np.ascontiguousarray(source_xy, dtype=np.float64)
    for name, v in (("col_dir", col_dir), ("source_xy", source_xy)):
        if v.shape != (na, 2):
            raise ValueError(f"{name} must have shape ({na}, 2), got {v.shape}")
    per_view = [np.ascontiguousarray(np.broadcast_to(v, (na,)), dtype=np.float64)
                for v in (source_z, sdd, center_col, center_row)]
    return (col_dir, source_xy, *per_view)


def geometry_vjp(f, gbar, col_dir, source_xy, source_z, sdd, center_col, center_row, fov_r2,
                 x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height,
                 projection=None):
    """Gradients of ``L = Σ ḡ · P(θ) f`` with respect to the per-view quantities of a
    curved-detector cone beam (module notes).

    Parameters
    ----------
    f : (nz, ny, nx) or (nb, nz, ny, nx) float32
        Volume(s); a batch is summed.
    gbar : (na, nrows, ncols) or (nb, na, nrows, ncols) float32
        Upstream gradient ḡ, with f's batch.
    col_dir, source_xy : (na, 2) float64
        Column axis (unit vector as the geometry gives it) and in-plane source, mm.
    source_z, sdd : (na,) float64
        Source height and source-to-detector distance (the cylinder's radius), mm.
    center_col, center_row : (na,) float64
        Detector position of the central ray, fractional pixels.
    fov_r2 : float
        Squared field-of-view radius, mm² (voxel columns beyond are skipped).
    x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height : float
        First voxel centre and sizes, mm.
    projection : (na, nrows, ncols) or (nb, na, nrows, ncols) float32, optional
        ``P(θ) f`` itself (row factor included), when the caller has it (a projector's
        forward output): the row factor's terms are then taken from it
        (``R = Σ_i ḡ·projection/rf``) instead of a projection of their own (about 40 %
        of the cost).

    Returns
    -------
    d_col_dir, d_source_xy : (na, 2) float64
    d_source_z, d_sdd, d_center_col, d_center_row : (na,) float64
    """
    f, gbar = batched(f, gbar)
    views = checked_views(f.shape, gbar.shape, col_dir, source_xy, source_z, sdd,
                          center_col, center_row)
    col_dir, source_xy, source_z, sdd, center_col, center_row = views
    f = np.ascontiguousarray(f, dtype=np.float32)
    gbar = np.ascontiguousarray(gbar, dtype=np.float32)
    na, nrows = gbar.shape[1], gbar.shape[2]
    scalars = [float(v) for v in (fov_r2, x0, y0, z0, voxel_width, voxel_height,
                                  pixel_width, pixel_height)]
    rf, drf_row, drf_sdd = row_factors(nrows, sdd, center_row, pixel_height)
    Dc, extent = _column_differences(f)
    out = np.zeros((na, 8))
    threads.run(_views, Dc, extent, gbar, rf, col_dir, source_xy, source_z, sdd, center_col,
                center_row, *scalars, out, items=na)
    if projection is None:
        R = _row_products(f, gbar, col_dir, source_xy, source_z, sdd, center_col,
                          center_row, *scalars)
    else:
        projection = np.asarray(projection, dtype=np.float32)
        projection = projection[None] if projection.ndim == 3 else projection
        if projection.shape != gbar.shape:
            raise ValueError(f"projection must have gbar's shape {gbar.shape}, got "
                             f"{projection.shape}")
        R = np.zeros((na, nrows))
        for b in range(gbar.shape[0]):
            _add_row_dots(gbar, b, np.ascontiguousarray(projection[b]), R)
        R /= rf
    d_sdd = out[:, 4] + np.sum(drf_sdd * R, axis=1)
    d_row = out[:, 7] + np.sum(drf_row * R, axis=1)
    return (np.ascontiguousarray(out[:, 0:2]), np.ascontiguousarray(out[:, 2:4]),
            out[:, 6].copy(), d_sdd, out[:, 5].copy(), d_row)


def plan_geometry_vjp(plan, f, gbar, projection=None):
    """:func:`geometry_vjp` for a plan (``leap.kernels.plan.make_plan``) of a curved
    cone beam, at its views' ``col_dir``, ``source_xy``, ``source_z`` and its per-view
    detector columns (``plan.center_cols``, else the detector's); ``projection`` as
    for :func:`geometry_vjp`.

    Raises
    ------
    ValueError
        A plan the model above does not describe: not a curved cone beam, FBP's
        weights, or a flying focal spot.
    """
    return geometry_vjp(f, gbar, *plan_arguments(plan), projection)


def plan_arguments(plan):
    """The arguments of :func:`geometry_vjp` after f and gbar, up to ``pixel_height``,
    for a plan (see :func:`plan_geometry_vjp`, whose ValueError it raises): shared with
    the CUDA kernel's callers (``leap.kernels.cuda.curved_cone_vjp``)."""
    views = getattr(plan, "views", None)
    if (plan.modular or views is None or not views.magnify_z or views.column_model != CURVED
            or plan.slice_weights is not None or plan.dist_sod != 0.0):
        raise ValueError("plan_geometry_vjp takes the plain projection of curved-detector "
                         "cone beams (no FBP weights)")
    if views.focus is not None:
        raise ValueError("the curved cone-beam geometry gradient does not model a flying "
                         "focal spot (source_shifts); clear them")
    s = plan.scalars()
    na = views.col_dir.shape[0]
    center_col = (np.full(na, float(s.center_col)) if plan.center_cols is None
                  else plan.center_cols)
    return (views.col_dir, views.source_xy, views.source_z, np.full(na, float(views.sdd)),
            center_col, np.full(na, float(s.center_row)), s.fov_r2, s.x0, s.y0, s.z0,
            s.voxel_width, s.voxel_height, s.pixel_width, s.pixel_height)
