"""Numba kernels of the first-order scatter model (:mod:`leap.physics.scatter`).

One model, two targets: ``_lerp0``, ``_bilinear0`` and what the ``_make_*``
factories return are plain Python, compiled here for the CPU (``numba.njit``) and, on
request, for CUDA (:func:`cuda_kernels`, ``numba.cuda.jit(device=True)``), the way
``leap.kernels`` shares its footprint functions. Arithmetic is float64; ``fastmath`` stays off.

Conventions (as upstream LEAP's ``src/scatter_models.cu``):

* a density volume ``R`` is (nz, ny, nx), already scaled so that ``sigma * R`` is in
  1/mm; for line integrals it is also passed as three copies ``V0, V1, V2`` whose first
  index runs along x, y and z (``V0[ix, iz, iy]``, ``V1[iy, iz, ix]``, ``V2[iz, iy, ix]``)
  so that a march along its dominant axis reads 2-D slices;
* samples off the grid's integer positions are bilinear in the two non-marching axes
  with a zero border, which is what upstream's linearly filtered CUDA texture with
  ``cudaAddressModeBorder`` returns (at full precision here: CUDA's filter weights have
  8 fractional bits);
* 1-keV tables (detector response, total cross section) are read at index ``E - 1``
  (upstream's ``tex1D(t, E - 0.5)``), linearly, zero outside.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import prange

JIT = dict(cache=True, nogil=True)
PARALLEL_JIT = dict(cache=True, nogil=True, parallel=True)


# ------------------------------------------------------------- shared model functions
def _lerp0(tab, c):
    """Linear interpolation of the 1-D table ``tab`` at fractional index ``c``; zero
    border (0 beyond index -1 and n)."""
    n = tab.shape[0]
    if not (c > -1.0 and c < n):
        return 0.0
    f = math.floor(c)
    w = c - f
    i = int(f)
    v = 0.0
    if i >= 0:
        v += (1.0 - w) * tab[i]
    if i + 1 < n:
        v += w * tab[i + 1]
    return v


def _bilinear0(V, ia, fb, fc):
    """``V[ia]`` (shape (nc, nb)) at fractional (fc, fb); zero border."""
    nc = V.shape[1]
    nb = V.shape[2]
    if not (fb > -1.0 and fb < nb and fc > -1.0 and fc < nc):
        return 0.0
    b0 = math.floor(fb)
    c0 = math.floor(fc)
    wb = fb - b0
    wc = fc - c0
    ib = int(b0)
    ic = int(c0)
    v = 0.0
    if ic >= 0:
        if ib >= 0:
            v += (1.0 - wc) * (1.0 - wb) * V[ia, ic, ib]
        if ib + 1 < nb:
            v += (1.0 - wc) * wb * V[ia, ic, ib + 1]
    if ic + 1 < nc:
        if ib >= 0:
            v += wc * (1.0 - wb) * V[ia, ic + 1, ib]
        if ib + 1 < nb:
            v += wc * wb * V[ia, ic + 1, ib + 1]
    return v


def _make_march(bilinear0):
    def march(V, ipa, ipb, ipc, da, db, dc, qa, ta, tb, tc):
        """Upstream's ``divergentBeamTransform`` along its dominant axis ``a``: ``ip*`` the
        start point and ``d*`` the direction in index units, ``qa`` the end point's
        index along ``a``, ``t*`` the voxel sizes (mm). Returns the integral in
        density·mm."""
        na = V.shape[0]
        inv = 1.0 / abs(da)
        irb = db * inv
        irc = dc * inv
        f = math.floor(0.5 + ipa)
        f = min(max(f, 0.0), na - 1.0)
        ia0 = int(f)
        if da > 0.0:
            if ipa >= na - 0.5:
                return 0.0
            t = ia0 - ipa
            fb = ipb + t * irb
            fc = ipc + t * irc
            m = min(math.ceil(qa), na - 1.0)
            ia1 = int(m) if m > -1.0 else -1
            val = bilinear0(V, ia0, fb, fc) * ((ia0 - 0.5) - max(-0.5, ipa))
            for ia in range(ia0, ia1 + 1):
                s = ia - ia0
                val += bilinear0(V, ia, fb + irb * s, fc + irc * s)
        else:
            if ipa <= -0.5:
                return 0.0
            t = ipa - ia0
            fb = ipb + t * irb
            fc = ipc + t * irc
            m = max(math.floor(qa), 0.0)
            ia1 = int(m) if m < na else na
            val = bilinear0(V, ia0, fb, fc) * (min(na - 0.5, ipa) - (ia0 + 0.5))
            for ia in range(ia0, ia1 - 1, -1):
                s = ia0 - ia
                val += bilinear0(V, ia, fb + irb * s, fc + irc * s)
        return val * math.sqrt(ta * ta + (irb * tb) ** 2 + (irc * tc) ** 2)
    return march


def _make_line_integral(march):
    def line_integral(V0, V1, V2, x0, y0, z0, tx, ty, tz, px, py, pz, qx, qy, qz):
        """Integral of the density from p to q (upstream's ``divergentBeamTransform(f,
        ..., p, q)``): along the axis with the largest index-space extent, one sample
        per plane, the first one cut at p."""
        ipx = (px - x0) / tx
        ipy = (py - y0) / ty
        ipz = (pz - z0) / tz
        dx = (qx - px) / tx
        dy = (qy - py) / ty
        dz = (qz - pz) / tz
        ax = abs(dx)
        ay = abs(dy)
        az = abs(dz)
        if ax >= ay and ax >= az:
            if ax == 0.0:
                return 0.0
            return march(V0, ipx, ipy, ipz, dx, dy, dz, (qx - x0) / tx, tx, ty, tz)
        if ay >= az:
            return march(V1, ipy, ipx, ipz, dy, dx, dz, (qy - y0) / ty, ty, tx, tz)
        return march(V2, ipz, ipx, ipy, dz, dx, dy, (qz - z0) / tz, tz, tx, ty)
    return line_integral


def _make_pair_term(lerp0):
    def pair_term(x, y, z, sx, sy, sz, fx, fy, fz, nx_, ny_, nz_, d1, d2, spec, g0, mu0,
                  cs0, rs0, det0, distcs, distrs, det_tab, mu_tab, mec2):
        """Scatter from the voxel at (x, y, z) into the pixel at f, per unit density and
        volume: solid-angle factor times the sum over source energies of upstream's
        Compton and Rayleigh terms (``firstOrderScatterModel``)."""
        r0x = x - sx
        r0y = y - sy
        r0z = z - sz
        rfx = fx - x
        rfy = fy - y
        rfz = fz - z
        l0 = r0x * r0x + r0y * r0y + r0z * r0z
        lf = rfx * rfx + rfy * rfy + rfz * rfz
        if l0 <= 0.0 or lf <= 0.0:
            return 0.0
        a = 1.0 / math.sqrt(l0 * lf)
        solid = ((r0x * nx_ + r0y * ny_ + r0z * nz_) * (rfx * nx_ + rfy * ny_ + rfz * nz_)
                 * a * a * a)
        cos_t = (r0x * rfx + r0y * rfy + r0z * rfz) * a
        cos_t = min(1.0, max(-1.0, cos_t))
        theta = math.acos(cos_t) * (180.0 / math.pi)
        it = min(int(theta), 179)
        wt = theta - it
        inner = 0.0
        for e in range(spec.shape[0]):
            sp = spec[e]
            if sp > 0.0:
                gam = g0[e]
                gf = mec2 * gam / (mec2 + (1.0 - cos_t) * gam)
                dcs = (1.0 - wt) * distcs[e, it] + wt * distcs[e, it + 1]
                drs = (1.0 - wt) * distrs[e, it] + wt * distrs[e, it + 1]
                cur_cs = lerp0(det_tab, gf - 1.0) * cs0[e] * dcs
                cur_rs = det0[e] * rs0[e] * drs
                muf = lerp0(mu_tab, gf - 1.0)
                inner += sp * (cur_cs * math.exp(-mu0[e] * d1 - muf * d2)
                               + cur_rs * math.exp(-mu0[e] * (d1 + d2)))
        return inner * solid
    return pair_term


# ------------------------------------------------------------------- CPU compilation
def _pixel_position(m, n, nrows, ncols, pixel_height, pixel_width, center, rowv, colv):
    """Centre (mm) of pixel (row m, column n) of a flat module."""
    t = (m - 0.5 * (nrows - 1)) * pixel_height
    s = (n - 0.5 * (ncols - 1)) * pixel_width
    return (center[0] + t * rowv[0] + s * colv[0], center[1] + t * rowv[1] + s * colv[1],
            center[2] + t * rowv[2] + s * colv[2])


def _make_scatter_pixel(pixel_position, line_integral, pair_term):
    def scatter_pixel(m, n, R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, src, center, rowv,
                      colv, nrm, pixel_height, pixel_width, spec, g0, mu0, cs0, rs0, det0,
                      distcs, distrs, det_tab, mu_tab, mec2, step, lo_off, ctr_off, anchor,
                      out):
        """``out[m, n]``: first-order scatter into pixel (m, n); the arguments as for
        :func:`scatter_view`."""
        nz, ny, nx = R.shape
        nrows, ncols = out.shape
        fx, fy, fz = pixel_position(m, n, nrows, ncols, pixel_height, pixel_width, center,
                                    rowv, colv)
        val = 0.0
        for k in range(0, nz, step):
            zc = z0 + min(k + ctr_off, nz - 1) * tz
            k_lo = max(k + lo_off, 0)
            k_hi = min(k + lo_off + step, nz)
            for j in range(0, ny, step):
                yc = y0 + min(j + ctr_off, ny - 1) * ty
                j_lo = max(j + lo_off, 0)
                j_hi = min(j + lo_off + step, ny)
                for i in range(0, nx, step):
                    rho_a = R[k, j, i]
                    if anchor and rho_a <= 0.0:
                        continue
                    xc = x0 + min(i + ctr_off, nx - 1) * tx
                    i_lo = max(i + lo_off, 0)
                    i_hi = min(i + lo_off + step, nx)
                    d2 = 0.0
                    have_d2 = False
                    for kk in range(k_lo, k_hi):
                        z = z0 + kk * tz
                        for jj in range(j_lo, j_hi):
                            y = y0 + jj * ty
                            for ii in range(i_lo, i_hi):
                                if anchor:
                                    rho = rho_a
                                    d1 = D1[k, j, i]
                                else:
                                    rho = R[kk, jj, ii]
                                    if rho <= 0.0:
                                        continue
                                    d1 = D1[kk, jj, ii]
                                if not have_d2:
                                    d2 = line_integral(V0, V1, V2, x0, y0, z0, tx, ty, tz,
                                                       xc, yc, zc, fx, fy, fz)
                                    have_d2 = True
                                val += rho * pair_term(
                                    x0 + ii * tx, y, z, src[0], src[1], src[2], fx, fy, fz,
                                    nrm[0], nrm[1], nrm[2], d1, d2, spec, g0, mu0, cs0,
                                    rs0, det0, distcs, distrs, det_tab, mu_tab, mec2)
        out[m, n] = val * (tx * ty * tz)
    return scatter_pixel


def _make_primary_pixel(pixel_position, line_integral):
    def primary_pixel(m, n, V0, V1, V2, x0, y0, z0, tx, ty, tz, src, center, rowv, colv,
                      nrm, pixel_height, pixel_width, spec, mu0, det0, primary, air):
        """``primary[m, n]``, ``air[m, n]``: pixel (m, n) of :func:`primary_view`."""
        nrows, ncols = primary.shape
        fx, fy, fz = pixel_position(m, n, nrows, ncols, pixel_height, pixel_width, center,
                                    rowv, colv)
        rx = fx - src[0]
        ry = fy - src[1]
        rz = fz - src[2]
        il = 1.0 / math.sqrt(rx * rx + ry * ry + rz * rz)
        solid = (rx * nrm[0] + ry * nrm[1] + rz * nrm[2]) * il * il * il
        prho = line_integral(V0, V1, V2, x0, y0, z0, tx, ty, tz, fx, fy, fz,
                             src[0], src[1], src[2])
        vp = 0.0
        va = 0.0
        for e in range(spec.shape[0]):
            sp = spec[e]
            if sp > 0.0:
                vp += det0[e] * sp * math.exp(-mu0[e] * prho)
                va += det0[e] * sp
        primary[m, n] = vp * solid
        air[m, n] = va * solid
    return primary_pixel


_inline = numba.njit(inline="always", **JIT)
lerp0 = _inline(_lerp0)
bilinear0 = _inline(_bilinear0)
march = numba.njit(**JIT)(_make_march(bilinear0))
line_integral = _inline(_make_line_integral(march))
pair_term = numba.njit(**JIT)(_make_pair_term(lerp0))
pixel_position = _inline(_pixel_position)
scatter_pixel = numba.njit(**JIT)(_make_scatter_pixel(pixel_position, line_integral,
                                                      pair_term))
primary_pixel = numba.njit(**JIT)(_make_primary_pixel(pixel_position, line_integral))


@numba.njit(**PARALLEL_JIT)
def first_leg(V0, V1, V2, x0, y0, z0, tx, ty, tz, sx, sy, sz, out):
    """``out[k, j, i]``: density integral from the voxel centre to the source."""
    nz, ny, nx = out.shape
    for k in prange(nz):
        z = z0 + k * tz
        for j in range(ny):
            y = y0 + j * ty
            for i in range(nx):
                out[k, j, i] = line_integral(V0, V1, V2, x0, y0, z0, tx, ty, tz,
                                             x0 + i * tx, y, z, sx, sy, sz)


@numba.njit(**PARALLEL_JIT)
def scatter_view(R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, src, center, rowv, colv, nrm,
                 pixel_height, pixel_width, spec, g0, mu0, cs0, rs0, det0, distcs, distrs,
                 det_tab, mu_tab, mec2, step, lo_off, ctr_off, anchor, out):
    """First-order scatter of one view into ``out`` (nrows, ncols).

    Voxels are visited in groups along each axis: ``step`` 1 (every voxel its own
    group), or 3 with the group ``[k + lo_off, k + lo_off + 3)`` around the anchor
    ``k = 0, 3, 6, …`` and the second leg (voxel → pixel) integrated once per group
    from voxel ``min(k + ctr_off, n - 1)``. ``anchor``: every voxel of a group takes
    the anchor's density and first leg (upstream's ``firstOrderScatterModel_fast``).
    """
    nrows, ncols = out.shape
    for p in prange(nrows * ncols):
        m = p // ncols
        scatter_pixel(m, p - m * ncols, R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, src,
                      center, rowv, colv, nrm, pixel_height, pixel_width, spec, g0, mu0, cs0,
                      rs0, det0, distcs, distrs, det_tab, mu_tab, mec2, step, lo_off, ctr_off,
                      anchor, out)


@numba.njit(**PARALLEL_JIT)
def primary_view(V0, V1, V2, x0, y0, z0, tx, ty, tz, src, center, rowv, colv, nrm,
                 pixel_height, pixel_width, spec, mu0, det0, primary, air):
    """Primary (``PrimaryScan``) and unattenuated (``airScan``) signals of one view."""
    nrows, ncols = primary.shape
    for p in prange(nrows * ncols):
        m = p // ncols
        primary_pixel(m, p - m * ncols, V0, V1, V2, x0, y0, z0, tx, ty, tz, src, center,
                      rowv, colv, nrm, pixel_height, pixel_width, spec, mu0, det0, primary,
                      air)


def axis_copies(R):
    """The three march-ordered copies ``V0, V1, V2`` of a (nz, ny, nx) volume."""
    return (np.ascontiguousarray(R.transpose(2, 0, 1)),
            np.ascontiguousarray(R.transpose(1, 0, 2)), R)


# ------------------------------------------------------------------ CUDA compilation
#: ``numba.cuda``, imported by :func:`cuda_kernels` (a module global, so that Numba's
#: simulator can swap it inside the kernels).
cuda = None


@functools.lru_cache(maxsize=None)
def cuda_kernels():
    """``(first_leg, scatter_view, primary_view)`` CUDA kernels with the CPU kernels'
    arguments (arrays on the device; ``scatter_view`` and ``primary_view`` one thread per
    pixel, ``first_leg`` one per voxel). Compiled on first use."""
    global cuda
    from numba import cuda

    device = cuda.jit(device=True, inline="always", fastmath=False)
    d_lerp0 = device(_lerp0)
    d_bilinear0 = device(_bilinear0)
    d_march = cuda.jit(device=True, fastmath=False)(_make_march(d_bilinear0))
    d_line = device(_make_line_integral(d_march))
    d_pair = cuda.jit(device=True, fastmath=False)(_make_pair_term(d_lerp0))
    d_position = device(_pixel_position)
    d_scatter_pixel = cuda.jit(device=True, fastmath=False)(
        _make_scatter_pixel(d_position, d_line, d_pair))
    d_primary_pixel = cuda.jit(device=True, fastmath=False)(
        _make_primary_pixel(d_position, d_line))

    @cuda.jit(fastmath=False)
    def k_first_leg(V0, V1, V2, x0, y0, z0, tx, ty, tz, sx, sy, sz, out):
        i, j, k = cuda.grid(3)
        nz, ny, nx = out.shape
        if i < nx and j < ny and k < nz:
            out[k, j, i] = d_line(V0, V1, V2, x0, y0, z0, tx, ty, tz, x0 + i * tx,
                                  y0 + j * ty, z0 + k * tz, sx, sy, sz)

    @cuda.jit(fastmath=False)
    def k_scatter(R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, src, center, rowv, colv, nrm,
                  pixel_height, pixel_width, spec, g0, mu0, cs0, rs0, det0, distcs, distrs,
                  det_tab, mu_tab, mec2, step, lo_off, ctr_off, anchor, out):
        n, m = cuda.grid(2)
        nrows, ncols = out.shape
        if m >= nrows or n >= ncols:
            return
        d_scatter_pixel(m, n, R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, src, center, rowv,
                        colv, nrm, pixel_height, pixel_width, spec, g0, mu0, cs0, rs0, det0,
                        distcs, distrs, det_tab, mu_tab, mec2, step, lo_off, ctr_off, anchor,
                        out)

    @cuda.jit(fastmath=False)
    def k_primary(V0, V1, V2, x0, y0, z0, tx, ty, tz, src, center, rowv, colv, nrm,
                  pixel_height, pixel_width, spec, mu0, det0, primary, air):
        n, m = cuda.grid(2)
        nrows, ncols = primary.shape
        if m >= nrows or n >= ncols:
            return
        d_primary_pixel(m, n, V0, V1, V2, x0, y0, z0, tx, ty, tz, src, center, rowv, colv,
                        nrm, pixel_height, pixel_width, spec, mu0, det0, primary, air)

    return k_first_leg, k_scatter, k_primary


# ------------------------------------------------------------------------- drivers
def simulate(backend, R, vol, views, computed, nrows, ncols, pixel_height, pixel_width,
             tables, mec2, step, lo_off, ctr_off, anchor):
    """Scatter S, primary P and air A, each (num_angles, nrows, ncols) float64, for the
    views with ``computed`` True (the others stay 0).

    ``R``: (nz, ny, nx) float64 scaled density; ``vol``: (x0, y0, z0, tx, ty, tz);
    ``views``: (sources, centres, row vectors, column vectors, normals), each
    (num_angles, 3); ``tables``: (spec, g0, mu0, cs0, rs0, det0, distcs, distrs,
    det_tab, mu_tab) as :func:`scatter_view` takes them.
    """
    na = computed.size
    S = np.zeros((na, nrows, ncols))
    P = np.zeros((na, nrows, ncols))
    A = np.zeros((na, nrows, ncols))
    tabs = tuple(np.ascontiguousarray(t, dtype=np.float64) for t in tables)
    V0, V1, V2 = axis_copies(R)
    x0, y0, z0, tx, ty, tz = (float(v) for v in vol)
    src, ctr, rows, cols, nrm = views
    spec, g0, mu0, cs0, rs0, det0, distcs, distrs, det_tab, mu_tab = tabs
    sel = np.flatnonzero(computed)
    if backend == "cuda":
        _simulate_cuda(R, V0, V1, V2, vol, views, sel, tabs, pixel_height, pixel_width, mec2,
                       step, lo_off, ctr_off, anchor, S, P, A)
        return S, P, A
    D1 = np.empty_like(R)
    for a in sel:
        s, c, r, u, n = (v[a].copy() for v in (src, ctr, rows, cols, nrm))
        first_leg(V0, V1, V2, x0, y0, z0, tx, ty, tz, s[0], s[1], s[2], D1)
        scatter_view(R, V0, V1, V2, D1, x0, y0, z0, tx, ty, tz, s, c, r, u, n, pixel_height,
                     pixel_width, spec, g0, mu0, cs0, rs0, det0, distcs, distrs, det_tab,
                     mu_tab, mec2, step, lo_off, ctr_off, anchor, S[a])
        primary_view(V0, V1, V2, x0, y0, z0, tx, ty, tz, s, c, r, u, n, pixel_height,
                     pixel_width, spec, mu0, det0, P[a], A[a])
    return S, P, A


def _simulate_cuda(R, V0, V1, V2, vol, views, sel, tabs, pixel_height, pixel_width, mec2,
                   step, lo_off, ctr_off, anchor, S, P, A):
    import os

    k_first_leg, k_scatter, k_primary = cuda_kernels()
    sim = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"
    b2, b3 = ((4, 4), (4, 2, 2)) if sim else ((16, 8), (32, 4, 2))
    nz, ny, nx = R.shape
    _, nrows, ncols = S.shape
    x0, y0, z0, tx, ty, tz = (float(v) for v in vol)
    dR, dV0, dV1, dV2 = (cuda.to_device(a) for a in (R, V0, V1, V2))
    dD1 = cuda.device_array(R.shape, dtype=np.float64)
    dt = [cuda.to_device(t) for t in tabs]
    out_s = cuda.device_array((nrows, ncols), dtype=np.float64)
    out_p = cuda.device_array((nrows, ncols), dtype=np.float64)
    out_a = cuda.device_array((nrows, ncols), dtype=np.float64)
    g3 = tuple(-(-n // b) for n, b in zip((nx, ny, nz), b3))
    g2 = (-(-ncols // b2[0]), -(-nrows // b2[1]))
    for a in sel:
        s, c, r, u, n = (cuda.to_device(np.ascontiguousarray(v[a])) for v in views)
        src = views[0][a]
        k_first_leg[g3, b3](dV0, dV1, dV2, x0, y0, z0, tx, ty, tz, float(src[0]),
                            float(src[1]), float(src[2]), dD1)
        k_scatter[g2, b2](dR, dV0, dV1, dV2, dD1, x0, y0, z0, tx, ty, tz, s, c, r, u, n,
                          pixel_height, pixel_width, dt[0], dt[1], dt[2], dt[3], dt[4],
                          dt[5], dt[6], dt[7], dt[8], dt[9], mec2, step, lo_off, ctr_off,
                          anchor, out_s)
        k_primary[g2, b2](dV0, dV1, dV2, x0, y0, z0, tx, ty, tz, s, c, r, u, n, pixel_height,
                          pixel_width, dt[0], dt[2], dt[5], out_p, out_a)
        S[a] = out_s.copy_to_host()
        P[a] = out_p.copy_to_host()
        A[a] = out_a.copy_to_host()
