"""CUDA projector and matched back-projector for the axial family (parallel, fan, cone).

The same model and the same cumulative-sum formulation as :mod:`leap.kernels.cpu.axial`
(read its docstring first; direct rows, which the CPU runs on values in
:mod:`leap.kernels.cpu.axial_direct`, run on the cumulative sums here too): the
projector interpolates z-cumulative sums of the volume per voxel column, the
back-projector row-cumulative sums of the projections per detector column, at the row /
voxel boundaries of the column footprint. Only the data layouts and the parallelisation
differ, chosen for coalesced GPU access:

* ``S`` (ny, nx, nz + 1): z-cumulative sums, z fastest, so a projector thread reads
  a voxel column along contiguous addresses; ``G`` (na, nrows + 1, ncols):
  row-cumulative sums of the row-factor-weighted projections, no guard columns (taps
  off the detector are skipped instead).
* Projector: gather, one thread per (detector column, block of ``RBLOCK`` rows, view).
  The thread walks the voxel columns whose squares meet the pixel column's strip
  between its two edge rays, one band of voxels along the dominant in-plane axis at a
  time (2–4 voxels per band), and sums their footprint-weighted row integrals. No
  atomics; a voxel column's footprint is evaluated once per row block. The sums run
  in another order than on the CPU, so results agree to float32 rounding (≈1e-6
  relative), not bit for bit.
* Back-projector: gather, one thread per (voxel column, block of ``KBLOCK`` slices),
  looping over views; consecutive voxels share their boundary values, float64
  accumulators, no atomics.

Both kernels evaluate the footprint (``axial_column_footprint`` /
``parallel_column_footprint`` / ``cone_parallel_distance`` from :mod:`leap.kernels.footprints`, compiled for the
GPU) on identical inputs, so they weight every (voxel, pixel) pair identically and
remain exact transposes of each other.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from ..footprints import CONE_PARALLEL, CURVED, PARALLEL
from ._jit import (BLOCK_2D, BLOCK_3D, KERNEL, THREADS_1D, axial_footprint, blocks,
                   column_range, device, direct_shift, fbp_distance_weight, interp_cumulative,
                   overlap, parallel_view_constants, row_mapping)

#: Slices per back-projector thread (boundary values shared between neighbours).
KBLOCK = 8
#: Detector rows per projector thread: the footprint of each voxel column is computed
#: once per block of rows, and the column's cumulative sums are read along z.
RBLOCK = 16


# ------------------------------------------------------------------ device helpers







# ------------------------------------------------------------------ cumulative sums

@cuda.jit(**KERNEL)
def volume_z_cumsum(f, S):
    """S[iy, ix, k] = Σ_{k' < k} f[k', iy, ix]; f (nz, ny, nx), S (ny, nx, nz + 1).

    z is S's fastest axis because the projector reads each voxel column along z."""
    ix, iy = cuda.grid(2)
    nz, ny, nx = f.shape
    if ix >= nx or iy >= ny:
        return
    run = 0.0
    S[iy, ix, 0] = 0.0
    for k in range(nz):
        run += f[k, iy, ix]
        S[iy, ix, k + 1] = run


@cuda.jit(**KERNEL)
def projection_row_cumsum(g, row_factor, G):
    """G[a, j, i] = Σ_{j' < j} g[a, j', i]·w[j']; g (na, nrows, ncols), G (na, nrows + 1, ncols)."""
    i, a = cuda.grid(2)
    na, nrows, ncols = g.shape
    if i >= ncols or a >= na:
        return
    run = 0.0
    G[a, 0, i] = 0.0
    for j in range(nrows):
        run += g[a, j, i] * row_factor[j]
        G[a, j + 1, i] = run


@cuda.jit(**KERNEL)
def fill(x, value):
    """x[...] = value for a C-contiguous 3-D array."""
    i = cuda.grid(1)
    n0, n1, n2 = x.shape
    if i >= n0 * n1 * n2:
        return
    c = i % n2
    r = i // n2
    x[r // n1, r % n1, c] = value


# ------------------------------------------------------------------ projector

@device
def _edge_line(e, cx, cy, sx, sy, sdd, model, pixel_width, center_col, ox, oy):
    """The in-plane line on which column coordinate ``e`` (fractional pixels) is
    constant: a point (px, py) and a direction (dx, dy), the inverse of the column
    mapping of ``axial_column_footprint`` (rays run along r = (−cy, cx); ``ox, oy`` the
    curved detector's focus offsets)."""
    if model == PARALLEL or model == CONE_PARALLEL:
        s = (e - center_col) * pixel_width
        return s * cx, s * cy, -cy, cx
    if model == CURVED:
        ang = (e - center_col) * math.atan(pixel_width / sdd)
        # Columns at or beyond ±90° see nothing in front of the source.
        ang = min(max(ang, -1.5707), 1.5707)
        if ox != 0.0 or oy != 0.0:
            # From the source to the column's point on the cylinder about the focal centre.
            lat = sdd * math.sin(ang) - ox
            dep = sdd * math.cos(ang) - oy
            return sx, sy, -cy * dep + lat * cx, cx * dep + lat * cy
        u = math.tan(ang)
    else:
        u = (e - center_col) * pixel_width / sdd
    return sx, sy, -cy + u * cx, cx + u * cy


@device
def _band_range(p_lo, d_lo, q_lo, e_lo, p_hi, d_hi, q_hi, e_hi, band, half, origin,
                step, n):
    """Voxels ``m0..m1`` along the non-dominant axis whose squares may meet the strip
    between two lines inside one band of the dominant axis.

    A line is the point (p, q) and direction (d, e) with p, d along the non-dominant
    axis and q, e along the dominant one; the band is ``band ± half``. The strip's
    extent in the band lies between the four points where the lines cross the band's
    edges (also when the lines meet inside the band: the meeting point lies between
    them), so the voxels are those whose extent ±half meets that interval.
    """
    if e_lo == 0.0 or e_hi == 0.0 or (e_lo > 0.0) != (e_hi > 0.0):
        return 0, n - 1
    t_lo = d_lo / e_lo
    t_hi = d_hi / e_hi
    a = p_lo + (band - half - q_lo) * t_lo
    b = p_lo + (band + half - q_lo) * t_lo
    c = p_hi + (band - half - q_hi) * t_hi
    d = p_hi + (band + half - q_hi) * t_hi
    lo = min(min(a, b), min(c, d))
    hi = max(max(a, b), max(c, d))
    # A small margin keeps rounding from dropping a voxel that touches the strip.
    flo = min(max((lo - origin) / step - 0.5 - 1e-3, -1.0), n + 1.0)
    fhi = min(max((hi - origin) / step + 0.5 + 1e-3, -1.0), n + 1.0)
    return max(int(math.ceil(flo)), 0), min(int(math.floor(fhi)), n - 1)


@device
def _weighted_cumulative(cum, sw, a, nz, q, kc, run):
    """Cumulative integral at ``q`` of the column weighted by the slice weights
    ``sw[a, k]``, continuing a running sum (``kc`` slices summed into ``run``; q must
    not decrease between calls). Returns (value, kc, run)."""
    if q <= 0.0:
        return 0.0, kc, run
    kq = nz if q >= nz else int(q)
    while kc < kq:
        run += sw[a, kc] * (float64(cum[kc + 1]) - float64(cum[kc]))
        kc += 1
    if q >= nz:
        return run, kc, run
    return run + (q - kc) * sw[a, kc] * (float64(cum[kc + 1]) - float64(cum[kc])), kc, run


@cuda.jit(**KERNEL)
def _project(S, g, col_dir, source_xy, source_z, focus, row_factor, slice_w, weighted, sdd, sod,
             pitch, model,
             magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
             pixel_height, center_col, center_row, dist_sod, accumulate):
    """Projection of S's volume into g (na, nrows, ncols): a gather, one thread per
    (detector column, block of RBLOCK rows, view), no atomics.

    The thread walks the voxel columns whose squares meet the column's strip (one band
    of voxels at a time along the ray's dominant in-plane axis) and adds, for each, the
    same footprint weight the back-projector uses for that (voxel column, pixel) pair.
    """
    i, jb, a = cuda.grid(3)
    ny, nx, nz1 = S.shape
    na, nrows, ncols = g.shape
    js = jb * RBLOCK
    if i >= ncols or js >= nrows or a >= na:
        return
    je = min(js + RBLOCK, nrows)
    nz = nz1 - 1
    acc = cuda.local.array(RBLOCK, float64)
    for m in range(RBLOCK):
        acc[m] = 0.0
    cx = col_dir[a, 0]
    cy = col_dir[a, 1]
    sx = source_xy[a, 0]
    sy = source_xy[a, 1]
    zs = source_z[a]
    ox = focus[a, 0]
    oy = focus[a, 1]
    # A flying focal spot's rows are counted from the focal centre (launch._axial_form).
    crow = center_row + focus[a, 2] / pixel_height
    cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width, pixel_width)
    c0 = i - 0.5
    c1 = i + 0.5
    plx, ply, dlx, dly = _edge_line(c0, cx, cy, sx, sy, sdd, model, pixel_width, center_col,
                                    ox, oy)
    phx, phy, dhx, dhy = _edge_line(c1, cx, cy, sx, sy, sdd, model, pixel_width, center_col,
                                    ox, oy)
    y_major = abs(dlx + dhx) <= abs(dly + dhy)
    half = 0.5 * voxel_width
    n_band = ny if y_major else nx
    for band in range(n_band):
        if y_major:
            m0, m1 = _band_range(plx, dlx, ply, dly, phx, dhx, phy, dhy,
                                 y0 + band * voxel_width, half, x0, voxel_width, nx)
        else:
            m0, m1 = _band_range(ply, dly, plx, dlx, phy, dhy, phx, dhx,
                                 x0 + band * voxel_width, half, y0, voxel_width, ny)
        for m in range(m0, m1 + 1):
            ix = m if y_major else band
            iy = band if y_major else m
            x = x0 + ix * voxel_width
            y = y0 + iy * voxel_width
            if not x * x + y * y <= fov_r2:
                continue
            c_lo, c_hi, weight, dist, dz = axial_footprint(model, x, y, cx, cy, sx, sy, cxp, cyp,
                                                      half_p, par_weight, sdd, sod, pitch,
                                                      voxel_width, pixel_width, center_col,
                                                      ox, oy)
            if dist <= 0.0:
                continue
            w = overlap(c_lo, c_hi, c0, c1)
            if w == 0.0:
                continue
            if dist_sod > 0.0:
                weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
            A, B, inv_b = row_mapping(z0, voxel_height, zs + dz, dist, sdd, magnify_z,
                                      pixel_height, crow)
            # Rows the column covers, ∩ this thread's rows: row j gets
            # B·(E(j + 1) − E(j)), E(t) the cumulative integral at row edge t − ½.
            t0 = max(float(js), math.floor(A + 0.5))
            t1 = min(je - 1.0, math.floor(A + nz * B + 0.5))
            if t0 > t1:
                continue
            j0 = int(t0)
            j1 = int(t1)
            o = -(A + 0.5) * inv_b
            cum = S[iy, ix, :]
            wB = w * weight * B
            kc = 0
            run = 0.0
            e_prev = 0.0
            for t in range(j0, j1 + 2):
                q = o + t * inv_b
                if weighted:
                    e, kc, run = _weighted_cumulative(cum, slice_w, a, nz, q, kc, run)
                else:
                    e = interp_cumulative(cum, nz, q)
                if t > j0:
                    acc[t - 1 - js] += wB * (e - e_prev)
                e_prev = e
    for j in range(js, je):
        v = acc[j - js] * row_factor[j]
        if accumulate:
            g[a, j, i] += v
        else:
            g[a, j, i] = v


# ------------------------------------------------------------------ back-projector

@cuda.jit(**KERNEL)
def _backproject(G, f, col_dir, source_xy, source_z, focus, slice_w, weighted, sdd, sod, pitch,
                 model,
                 magnify_z, fov_r2, x0, y0, z0, voxel_width, voxel_height, pixel_width,
                 pixel_height, center_col, center_row, dist_sod, accumulate):
    """Back-project G's views into f (nz, ny, nx): thread (ix, iy, block of KBLOCK slices)."""
    ix, iy, kb = cuda.grid(3)
    nz, ny, nx = f.shape
    na, nrows1, ncols = G.shape
    nrows = nrows1 - 1
    ks = kb * KBLOCK
    if ix >= nx or iy >= ny or ks >= nz:
        return
    ke = min(ks + KBLOCK, nz)
    acc = cuda.local.array(KBLOCK, float64)
    for m in range(KBLOCK):
        acc[m] = 0.0
    x = x0 + ix * voxel_width
    y = y0 + iy * voxel_width
    inside = x * x + y * y <= fov_r2
    for a in range(na if inside else 0):
        cx = col_dir[a, 0]
        cy = col_dir[a, 1]
        zs = source_z[a]
        crow = center_row + focus[a, 2] / pixel_height
        cxp, cyp, half_p, par_weight = parallel_view_constants(cx, cy, voxel_width,
                                                               pixel_width)
        c_lo, c_hi, weight, dist, dz = axial_footprint(model, x, y, cx, cy, source_xy[a, 0],
                                                  source_xy[a, 1], cxp, cyp, half_p,
                                                  par_weight, sdd, sod, pitch, voxel_width,
                                                  pixel_width, center_col, focus[a, 0],
                                                  focus[a, 1])
        if dist <= 0.0:
            continue
        if dist_sod > 0.0:
            weight *= fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist)
        i0, i1 = column_range(c_lo, c_hi, ncols)
        if i0 > i1:
            continue
        A, B, inv_b = row_mapping(z0, voxel_height, zs, 1.0, sdd, magnify_z, pixel_height,
                                  crow)
        direct, shift = direct_shift(magnify_z, A, B)
        if direct:
            k0 = max(ks, -shift)
            k1 = min(ke, nrows - shift)
            for i in range(i0, i1 + 1):
                w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
                if w == 0.0:
                    continue
                for k in range(k0, k1):
                    j = k + shift
                    acc[k - ks] += w * (float64(G[a, j + 1, i]) - float64(G[a, j, i]))
            continue
        if magnify_z:
            A, B, inv_b = row_mapping(z0, voxel_height, zs + dz, dist, sdd, magnify_z,
                                      pixel_height, crow)
        kb0 = int(max(math.floor(max((-0.5 - A) * inv_b, -1.0)), float(ks)))
        kb1 = int(min(math.ceil(min((nrows - 0.5 - A) * inv_b, nz + 1.0)), float(ke)))
        if kb0 >= kb1:
            continue
        for i in range(i0, i1 + 1):
            w = overlap(c_lo, c_hi, i - 0.5, i + 0.5) * weight
            if w == 0.0:
                continue
            cum = G[a, :, i]
            e_prev = w * interp_cumulative(cum, nrows, A + 0.5 + kb0 * B)
            for k in range(kb0, kb1):
                e = w * interp_cumulative(cum, nrows, A + 0.5 + (k + 1) * B)
                if weighted:
                    acc[k - ks] += slice_w[a, k] * (e - e_prev)
                else:
                    acc[k - ks] += e - e_prev
                e_prev = e
    for k in range(ks, ke):
        if accumulate:
            f[k, iy, ix] += acc[k - ks]
        else:
            f[k, iy, ix] = acc[k - ks]


# ------------------------------------------------------------------ launchers

def _slice_weights(sw, stream):
    """Device (na, nz) float64 slice weights, or a (1, 1) dummy when there are none."""
    if sw is None or sw.size == 0:
        return cuda.to_device(np.zeros((1, 1)), stream=stream), False
    return cuda.to_device(np.ascontiguousarray(sw, dtype=np.float64), stream=stream), True


def _views(v, stream):
    """The per-view arrays on the device: col_dir, source_xy, source_z and the focus
    offsets (zeros without a flying focal spot)."""
    focus = np.zeros((v.source_z.shape[0], 3)) if v.focus is None else v.focus
    return (cuda.to_device(np.ascontiguousarray(v.col_dir, dtype=np.float64), stream=stream),
            cuda.to_device(np.ascontiguousarray(v.source_xy, dtype=np.float64), stream=stream),
            cuda.to_device(np.ascontiguousarray(v.source_z, dtype=np.float64), stream=stream),
            cuda.to_device(np.ascontiguousarray(focus, dtype=np.float64), stream=stream))


def zero(x, stream):
    n = int(np.prod(x.shape))
    if n:
        fill[blocks(n, THREADS_1D), THREADS_1D, stream](x, np.float32(0.0))


def cumsum_volume(f, S, stream):
    """S ← volume_z_cumsum(f) on the GPU; f (nz, ny, nx), S (ny, nx, nz + 1)."""
    nz, ny, nx = f.shape
    volume_z_cumsum[(blocks(nx, BLOCK_2D[0]), blocks(ny, BLOCK_2D[1])), BLOCK_2D, stream](f, S)


def cumsum_projections(g, row_factor, G, stream):
    """G ← row-cumulative sums of g·row_factor; G (na, nrows + 1, ncols)."""
    na, nrows, ncols = g.shape
    rf = cuda.to_device(np.ascontiguousarray(row_factor, dtype=np.float64), stream=stream)
    projection_row_cumsum[(blocks(ncols, BLOCK_2D[0]), blocks(na, BLOCK_2D[1])), BLOCK_2D,
                          stream](g, rf, G)


def project(S, g, views, p, row_factor, slice_weights, stream, *, accumulate=False):
    """Projection of the volume whose cumulative sums are S (ny, nx, nz + 1) into g.

    ``views`` is the geometry's ``AxialViews`` (for g's views), ``p`` a
    :class:`leap.operators.AxialParams`-like object with the scalars (lengths in mm,
    centres in fractional pixels, ``z0`` of S's first slice). ``accumulate`` adds to g
    instead of overwriting it.
    """
    na, nrows, ncols = g.shape
    if na == 0 or nrows == 0:
        return
    col_dir, source_xy, source_z, focus = _views(views, stream)
    rf = cuda.to_device(np.ascontiguousarray(row_factor, dtype=np.float64), stream=stream)
    sw, weighted = _slice_weights(slice_weights, stream)
    grid = (blocks(ncols, BLOCK_3D[0]), blocks(blocks(nrows, RBLOCK), BLOCK_3D[1]),
            blocks(na, BLOCK_3D[2]))
    _project[grid, BLOCK_3D, stream](
        S, g, col_dir, source_xy, source_z, focus, rf, sw, weighted, float(views.sdd),
        float(views.sod), float(views.helical_pitch),
        int(views.column_model), bool(views.magnify_z), float(p.fov_r2), float(p.x0),
        float(p.y0), float(p.z0), float(p.voxel_width), float(p.voxel_height),
        float(p.pixel_width), float(p.pixel_height), float(p.center_col),
        float(p.center_row), float(p.dist_sod), bool(accumulate))


def backproject(G, f, views, p, slice_weights, stream, *, accumulate=False):
    """Matched back-projection of the projections whose cumulative sums are G into f."""
    nz, ny, nx = f.shape
    if G.shape[0] == 0:
        if not accumulate:
            zero(f, stream)
        return
    col_dir, source_xy, source_z, focus = _views(views, stream)
    sw, weighted = _slice_weights(slice_weights, stream)
    grid = (blocks(nx, BLOCK_3D[0]), blocks(ny, BLOCK_3D[1]),
            blocks(blocks(nz, KBLOCK), BLOCK_3D[2]))
    _backproject[grid, BLOCK_3D, stream](
        G, f, col_dir, source_xy, source_z, focus, sw, weighted, float(views.sdd),
        float(views.sod), float(views.helical_pitch),
        int(views.column_model), bool(views.magnify_z), float(p.fov_r2), float(p.x0),
        float(p.y0), float(p.z0), float(p.voxel_width), float(p.voxel_height),
        float(p.pixel_width), float(p.pixel_height), float(p.center_col),
        float(p.center_row), float(p.dist_sod), bool(accumulate))
