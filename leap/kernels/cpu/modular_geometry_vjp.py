"""CPU vector–Jacobian product of the modular projector with respect to its geometry.

The modular projector (``leap.kernels.cpu.modular``) computes, for view ``a``,

    g[a, j, i] = Σ_v f_v · w_v,   w_v = voxel_width · l · O(r_lo, r_hi; j) · O(c_lo, c_hi; i)

with ``leap.kernels.footprints.modular_footprint`` giving the column interval
``[ua, ub]`` and row interval ``[va, vb]`` (mm from the module centre; ``c = u /
pixel_width + (ncols − 1)/2``, ``r = v / pixel_height + (nrows − 1)/2``), the ray-length
factor ``l = |p − s| / max(|p_x − s_x|, |p_y − s_y|)`` and ``O(lo, hi; i)`` the overlap of
``[lo, hi]`` with pixel ``[i − ½, i + ½]``. :func:`geometry_vjp` returns, for
``L = Σ ḡ · g``, the gradients ``∂L/∂s``, ``∂L/∂c``, ``∂L/∂r``, ``∂L/∂e`` of every view's
source ``s``, module centre ``c``, row vector ``r`` and column vector ``e``, treated as free
3-vectors exactly as the projector uses them (the module normal ``n = e × r`` depends
on both; the kernel does not normalise them: :class:`leap.geometry.ModularBeam` does,
and callers that start from unnormalised vectors add that step's Jacobian).

The derivative is analytic: every projected end (``ua, ub, va, vb``) has the form
``u = (s − c)·e + t·(q·e)``, ``t = (c − s)·n / (q·n)``, ``q`` the end point minus ``s``,
whose partial derivatives are

* ``∂u/∂c = −e + (m/D)·n`` and ``∂u/∂s = (1 − t)·(e − (m/D)·n)``, with ``m = q·e``, ``D = q·n``;
* ``∂u/∂e = (s − c) + t·q`` directly, and ``∂u/∂n = (m/D)·((c − s) − t·q)``, which reaches
  ``e`` and ``r`` through ``n = e × r`` (``∂L/∂e += r × n̄``, ``∂L/∂r += n̄ × e``);

(rows: the same with ``r`` for ``e``), and the overlaps are piecewise linear in the ends:
``∂O/∂lo = −1`` in the pixel that holds ``lo``, ``∂O/∂hi = +1`` in the pixel that holds
``hi``, 0 elsewhere. So one pass over (view, voxel) gathers, besides the forward's weighted
sum ``G = Σ ḡ·O_r·O_c``, the ḡ-weighted overlap sums along the footprint's four edges, and
accumulates a few scalars per view; no Jacobian is formed. Views run in parallel
(``prange``), each view's gradients owned by one thread; sums are float64.

Kinks and jumps. The model is piecewise smooth in θ. Where it is not differentiable the
kernel returns the derivative of the branch the forward code takes:

* an end exactly on a pixel edge (or a detector edge), a kink: the one-sided derivative
  for that end moving towards higher pixel indices, the end counted in pixel
  ``floor(end + ½)`` as the forward's ``column_range`` assigns it (this is not the
  literal derivative of ``overlap``'s ``max``/``min`` at a tie, which would drop the
  end's term; it is a true one-sided derivative);
* the order of the ends (``ua > ub``: swapped; ``va > vb`` likewise), a kink only where
  the footprint has zero width: the forward's branch; a footprint of zero width in either
  direction (weight 0) contributes 0;
* the dominant in-plane axis (``|dy| > |dx|``: segment along x, otherwise along y) and
  the denominator of ``l`` (``|dx|`` if ``|dx| > |dy|`` else ``|dy|``): the branch the
  forward's tests take (at a tie: segment along y, denominator ``|dy|``). The switch of
  the segment is a jump of the model (the footprint changes width), which no gradient
  sees;
* voxels the forward skips (``l = 0``: behind the source, or the source side of the
  module plane) contribute 0, also on the boundary of that region (again a jump);
* voxels whose value is 0 in every batch sample are skipped (their terms vanish).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from ._jit import JIT, PARALLEL_JIT, modular_box, modular_view_frame, overlap


def footprint_terms(px, py, pz, sx, sy, sz, su, sv, n0, n1, n2, dn,
                    e0, e1, e2, r0, r1, r2, half_w, half_h):
    """``leap.kernels.footprints.modular_footprint`` (same arithmetic, same branches)
    and what its derivative needs.

    Returns ``(ua, ub, va, vb, l, ax, ay, ta, tb, tc, td, ma, mb, mc, md, big_is_x)``:
    the unsorted ends, ``l`` (0: skipped voxel), the in-plane half segment
    ``(ax, ay, 0)`` (the column ends are at ``p ∓ (ax, ay, 0)``, the row ends at
    ``p ∓ (0, 0, half_h)``), the ends' ray parameters ``t = dn / (q·n)`` and their
    coordinates ``m = q·e`` (columns) or ``q·r`` (rows), ``q`` the end minus the source
    (so ``u = su + t·m``), and whether the denominator of ``l`` is ``|dx|``.
    """
    dx = px - sx
    dy = py - sy
    dz = pz - sz
    adx = abs(dx)
    ady = abs(dy)
    big = adx if adx > ady else ady
    dd = dx * n0 + dy * n1 + dz * n2
    z = 0.0
    if big <= 0.0 or dd * dn <= 0.0:
        return z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, False
    if ady > adx:
        ax = half_w
        ay = 0.0
    else:
        ax = 0.0
        ay = half_w
    da = (dx - ax) * n0 + (dy - ay) * n1 + dz * n2
    db = (dx + ax) * n0 + (dy + ay) * n1 + dz * n2
    if da * dn <= 0.0 or db * dn <= 0.0:
        return z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, False
    ma = (dx - ax) * e0 + (dy - ay) * e1 + dz * e2
    mb = (dx + ax) * e0 + (dy + ay) * e1 + dz * e2
    ta = dn / da
    tb = dn / db
    ua = su + ta * ma
    ub = su + tb * mb
    dc = dd - half_h * n2
    de = dd + half_h * n2
    if dc * dn <= 0.0 or de * dn <= 0.0:
        return z, z, z, z, z, z, z, z, z, z, z, z, z, z, z, False
    mc = dx * r0 + dy * r1 + (dz - half_h) * r2
    md = dx * r0 + dy * r1 + (dz + half_h) * r2
    tc = dn / dc
    td = dn / de
    va = sv + tc * mc
    vb = sv + td * md
    l = math.sqrt(dx * dx + dy * dy + dz * dz) / big
    return ua, ub, va, vb, l, ax, ay, ta, tb, tc, td, ma, mb, mc, md, adx > ady


def end_pixel(x, n):
    """The pixel ``floor(x + ½)`` that holds the end ``x`` (fractional pixel index) for
    the right-sided derivative, clamped as ``column_range`` clamps it; -1 when it is off
    the detector."""
    k = int(math.floor(min(max(x + 0.5, -1.0), n + 1.0)))
    return k if 0 <= k < n else -1


def end_terms(U, qx, qy, qz, t, m, inv_dn):
    """One projected end's share of the per-view sums: with ``k = m/D = t·m/dn``,
    ``(U, U·k, U·t, U·t·k, U·t·q, U·k·t·q)`` (the last two 3-vectors)."""
    ut = U * t
    k = t * m * inv_dn
    utk = ut * k
    return U, U * k, ut, utk, ut * qx, ut * qy, ut * qz, utk * qx, utk * qy, utk * qz


#: Slots of the per-view accumulator (float64, :data:`NACC` of them) that
#: :func:`make_vjp_kernels`' ``voxel_vjp`` fills and ``view_vjp`` reads: column ends
#: ``Σ U, Σ U·k, Σ U·t, Σ U·t·k`` (0–3), ``Σ U·t·q`` (4–6), ``Σ U·k·t·q`` (7–9); the same
#: for the row ends (10–19); ``∂L/∂s`` through ``l`` (20–22).
NACC = 23


def make_vjp_kernels(jit, footprint_terms, end_pixel, end_terms, overlap, modular_box):
    """Build, with one target's ``jit`` decorator, the per-(view, voxel) and per-view
    steps of the VJP on top of that target's compiled helpers (composites are made per
    target, see :func:`leap.kernels.footprints.make_modular_kernels`): the CPU kernel
    below and :mod:`leap.kernels.cuda.modular_geometry_vjp` run the same arithmetic.

    Returns ``(voxel_vjp, view_vjp)``:

    * ``voxel_vjp(f, gbar, a, kz, iy, ix, x, y, z, frame, inv_dn, half_w, half_h,
      voxel_width, pixel_width, pixel_height, acc)`` adds voxel ``(kz, iy, ix)``'s terms
      for view ``a`` into ``acc`` (:data:`NACC` float64); ``frame`` is view ``a``'s
      ``modular_view_frame`` tuple;
    * ``view_vjp(acc, centers, a, frame, d_sources, d_centers, d_rows, d_cols)`` adds
      view ``a``'s gradients, linear in ``acc``, into the (na, 3) outputs.

    (Calls stay under 30 arguments: CPython passes more as ``*args``, which Numba
    cannot inline.)
    """
    @jit
    def add_end_terms(acc, o, U, qx, qy, qz, t, m, inv_dn):
        """``acc[o:o + 10] +=`` :func:`end_terms` of one footprint end."""
        t1, t2, t3, t4, t5, t6, t7, t8, t9, t10 = end_terms(U, qx, qy, qz, t, m, inv_dn)
        acc[o] += t1
        acc[o + 1] += t2
        acc[o + 2] += t3
        acc[o + 3] += t4
        acc[o + 4] += t5
        acc[o + 5] += t6
        acc[o + 6] += t7
        acc[o + 7] += t8
        acc[o + 8] += t9
        acc[o + 9] += t10

    @jit
    def voxel_vjp(f, gbar, a, kz, iy, ix, x, y, z, frame, inv_dn, half_w, half_h,
                  voxel_width, pixel_width, pixel_height, acc):
        sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = frame
        nb = f.shape[0]
        nrows, ncols = gbar.shape[2], gbar.shape[3]
        nonzero = False
        for b in range(nb):
            if f[b, kz, iy, ix] != 0.0:
                nonzero = True
                break
        if not nonzero:
            return
        (ua, ub, va, vb, l, ax, ay, ta, tb, tc, td, ma, mb, mc, md,
         big_is_x) = footprint_terms(x, y, z, sx, sy, sz, su, sv, n0, n1, n2, dn,
                                     e0, e1, e2, r0, r1, r2, half_w, half_h)
        if l == 0.0:
            return
        swap_u = ua > ub
        swap_v = va > vb
        ulo, uhi = (ub, ua) if swap_u else (ua, ub)
        vlo, vhi = (vb, va) if swap_v else (va, vb)
        c_lo, c_hi, r_lo, r_hi, i0, i1, j0, j1 = modular_box(
            ulo, uhi, vlo, vhi, pixel_width, pixel_height, ncols, nrows)
        if not (c_hi > c_lo and r_hi > r_lo):
            return
        il = end_pixel(c_lo, ncols)
        ih = end_pixel(c_hi, ncols)
        jl = end_pixel(r_lo, nrows)
        jh = end_pixel(r_hi, nrows)
        G = SL = SH = RL = RH = 0.0
        for b in range(nb):
            val = f[b, kz, iy, ix]
            if val == 0.0:
                continue
            G_b = SL_b = SH_b = RL_b = RH_b = 0.0
            for j in range(j0, j1 + 1):
                wr = overlap(r_lo, r_hi, j - 0.5, j + 0.5)
                if wr == 0.0 and j != jh:   # r_hi on row jh's lower edge
                    continue
                t = 0.0
                for i in range(i0, i1 + 1):
                    t += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * gbar[b, a, j, i]
                G_b += wr * t
                if il >= 0:
                    SL_b += wr * gbar[b, a, j, il]
                if ih >= 0:
                    SH_b += wr * gbar[b, a, j, ih]
                if j == jl:
                    RL_b = t
                if j == jh:
                    RH_b = t
            G += val * G_b
            SL += val * SL_b
            SH += val * SH_b
            RL += val * RL_b
            RH += val * RH_b
        scale = voxel_width * l
        # ∂L/∂(lo, hi) in mm, then onto the unsorted ends.
        d_ulo = -scale * SL / pixel_width
        d_uhi = scale * SH / pixel_width
        d_vlo = -scale * RL / pixel_height
        d_vhi = scale * RH / pixel_height
        Ua, Ub = (d_uhi, d_ulo) if swap_u else (d_ulo, d_uhi)
        Va, Vb = (d_vhi, d_vlo) if swap_v else (d_vlo, d_vhi)
        dx = x - sx
        dy = y - sy
        dz = z - sz
        # Column ends at p ∓ (ax, ay, 0).
        add_end_terms(acc, 0, Ua, dx - ax, dy - ay, dz, ta, ma, inv_dn)
        add_end_terms(acc, 0, Ub, dx + ax, dy + ay, dz, tb, mb, inv_dn)
        # Row ends at p ∓ (0, 0, half_h).
        add_end_terms(acc, 10, Va, dx, dy, dz - half_h, tc, mc, inv_dn)
        add_end_terms(acc, 10, Vb, dx, dy, dz + half_h, td, md, inv_dn)
        # l = |d| / big, d = p − s: ∂L/∂s = −L̄ ∂l/∂d.
        # ∂l/∂d = d/(|d|·big) − (l/big)·sign·axis, and 1/big = l/|d|.
        d2 = dx * dx + dy * dy + dz * dz
        h = voxel_width * G * l / d2
        acc[20] -= h * dx
        acc[21] -= h * dy
        acc[22] -= h * dz
        h *= l * l
        if big_is_x:
            acc[20] += h * dx
        else:
            acc[21] += h * dy

    @jit
    def view_vjp(acc, centers, a, frame, d_sources, d_centers, d_rows, d_cols):
        sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2 = frame
        c1, c2, c3, c4 = acc[0], acc[1], acc[2], acc[3]
        cbx, cby, cbz, ccx, ccy, ccz = acc[4], acc[5], acc[6], acc[7], acc[8], acc[9]
        w1, w2, w3, w4 = acc[10], acc[11], acc[12], acc[13]
        wbx, wby, wbz, wcx, wcy, wcz = acc[14], acc[15], acc[16], acc[17], acc[18], acc[19]
        lx, ly, lz = acc[20], acc[21], acc[22]
        qx, qy, qz = sx - centers[a, 0], sy - centers[a, 1], sz - centers[a, 2]   # s − c
        # ∂L/∂n: A2 (c − s) − C, both families.
        nbx = -(c2 + w2) * qx - (ccx + wcx)
        nby = -(c2 + w2) * qy - (ccy + wcy)
        nbz = -(c2 + w2) * qz - (ccz + wcz)
        d_centers[a, 0] += -c1 * e0 - w1 * r0 + (c2 + w2) * n0
        d_centers[a, 1] += -c1 * e1 - w1 * r1 + (c2 + w2) * n1
        d_centers[a, 2] += -c1 * e2 - w1 * r2 + (c2 + w2) * n2
        kn = (c2 - c4) + (w2 - w4)
        d_sources[a, 0] += (c1 - c3) * e0 + (w1 - w3) * r0 - kn * n0 + lx
        d_sources[a, 1] += (c1 - c3) * e1 + (w1 - w3) * r1 - kn * n1 + ly
        d_sources[a, 2] += (c1 - c3) * e2 + (w1 - w3) * r2 - kn * n2 + lz
        # n = e × r: ∂L/∂e += r × n̄, ∂L/∂r += n̄ × e.
        d_cols[a, 0] += c1 * qx + cbx + (r1 * nbz - r2 * nby)
        d_cols[a, 1] += c1 * qy + cby + (r2 * nbx - r0 * nbz)
        d_cols[a, 2] += c1 * qz + cbz + (r0 * nby - r1 * nbx)
        d_rows[a, 0] += w1 * qx + wbx + (nby * e2 - nbz * e1)
        d_rows[a, 1] += w1 * qy + wby + (nbz * e0 - nbx * e2)
        d_rows[a, 2] += w1 * qz + wbz + (nbx * e1 - nby * e0)

    return voxel_vjp, view_vjp


_inline = numba.njit(inline="always", **JIT)
_footprint_terms = _inline(footprint_terms)
_end_pixel = _inline(end_pixel)
_end_terms = _inline(end_terms)
_voxel_vjp, _view_vjp = make_vjp_kernels(_inline, _footprint_terms, _end_pixel, _end_terms,
                                         overlap, modular_box)


def batched(f, gbar):
    """f and gbar as NumPy arrays with a leading batch axis (added to a single sample).
    Shared by the CPU entry points."""
    f = np.asarray(f)
    gbar = np.asarray(gbar)
    return (f[None] if f.ndim == 3 else f), (gbar[None] if gbar.ndim == 3 else gbar)


def checked_inputs(f_shape, gbar_shape, sources, centers, rows, cols):
    """Check the VJP's batch shapes (f (nb, nz, ny, nx), gbar (nb, na, nrows, ncols))
    and return the four geometry arrays as C-contiguous (na, 3) float64 NumPy arrays;
    a clear error names what is wrong. Shared by the CPU and CUDA entry points."""
    if len(f_shape) != 4 or len(gbar_shape) != 4 or f_shape[0] != gbar_shape[0]:
        raise ValueError(f"f (nb, nz, ny, nx) and gbar (nb, na, nrows, ncols) need one batch; "
                         f"got shapes {tuple(f_shape)} and {tuple(gbar_shape)}")
    na = gbar_shape[1]
    geo = []
    for name, v in (("sources", sources), ("centers", centers), ("rows", rows),
                    ("cols", cols)):
        v = np.ascontiguousarray(v, dtype=np.float64)
        if v.shape != (na, 3):
            raise ValueError(f"{name} must have shape ({na}, 3), got {v.shape}")
        geo.append(v)
    return geo


@numba.njit(**PARALLEL_JIT)
def _vjp(f, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width, voxel_height,
         pixel_width, pixel_height, d_sources, d_centers, d_rows, d_cols):
    """Accumulate into the (na, 3) float64 outputs; f (nb, nz, ny, nx) and gbar
    (nb, na, nrows, ncols) float32, the batch summed."""
    nb, nz, ny, nx = f.shape
    na = gbar.shape[1]
    half_w = 0.5 * voxel_width
    half_h = 0.5 * voxel_height
    for a in prange(na):
        frame = modular_view_frame(sources, centers, rows, cols, a)
        dn = frame[8]
        inv_dn = 1.0 / dn if dn != 0.0 else 0.0   # dn = 0: every voxel is skipped
        acc = np.zeros(NACC)
        for kz in range(nz):
            z = z0 + kz * voxel_height
            for iy in range(ny):
                y = y0 + iy * voxel_width
                for ix in range(nx):
                    x = x0 + ix * voxel_width
                    _voxel_vjp(f, gbar, a, kz, iy, ix, x, y, z, frame, inv_dn, half_w,
                               half_h, voxel_width, pixel_width, pixel_height, acc)
        _view_vjp(acc, centers, a, frame, d_sources, d_centers, d_rows, d_cols)


def geometry_vjp(f, gbar, sources, centers, rows, cols, x0, y0, z0, voxel_width,
                 voxel_height, pixel_width, pixel_height):
    """``∂L/∂(s, c, r, e)`` of ``L = Σ ḡ · P(θ) f`` for the modular projector.

    Parameters
    ----------
    f : (nz, ny, nx) or (nb, nz, ny, nx) float32
        Volume(s); a batch is summed (every sample projected with the same geometry).
    gbar : (na, nrows, ncols) or (nb, na, nrows, ncols) float32
        Upstream gradient ḡ, with f's batch.
    sources, centers, rows, cols : (na, 3) float64
        The geometry as the projector takes it (``leap.kernels.cpu.modular.project``):
        source, module centre, row and column vectors (used as given, not normalised).
    x0, y0, z0, voxel_width, voxel_height, pixel_width, pixel_height : float
        As for the projector (first voxel centre and sizes, mm).

    Returns
    -------
    d_sources, d_centers, d_rows, d_cols : (na, 3) float64
        The gradients, per view (see the module docstring for the values at kinks).
    """
    f, gbar = batched(f, gbar)
    geo = checked_inputs(f.shape, gbar.shape, sources, centers, rows, cols)
    na = gbar.shape[1]
    out = [np.zeros((na, 3)) for _ in range(4)]
    _vjp(np.ascontiguousarray(f, dtype=np.float32), np.ascontiguousarray(gbar, dtype=np.float32),
         *geo, float(x0), float(y0), float(z0), float(voxel_width), float(voxel_height),
         float(pixel_width), float(pixel_height), *out)
    return tuple(out)
