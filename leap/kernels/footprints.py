"""Footprint geometry shared by every kernel, written once as plain functions.

These functions use only scalar arithmetic and ``math``, so the same source compiles
with ``numba.njit`` for the CPU kernels (:mod:`leap.kernels.cpu._jit`) and with
``numba.cuda.jit(device=True)`` for the GPU kernels: both back-ends compute the same
model. All coordinates are float64, lengths in mm, detector coordinates in fractional
pixel indices (pixel ``i`` covers ``[i - 0.5, i + 0.5]``).

The model is LEAP's separable footprint ("distance-driven" in-plane, rectangle in z):

* In-plane, a voxel is replaced by its mid-plane segment along whichever of the x or
  y axes is more perpendicular to the ray through its centre; the segment's two end
  points project to a column interval ``[c_lo, c_hi]``.
* Along z the voxel's extent projects to a row interval; for the axial family the
  interval of voxel ``k`` of a column is ``[A + k B, A + (k+1) B]``.
* A pixel's weight is (column overlap) × (row overlap), both in pixel units, times
  ``voxel_width · l``, where ``l`` is the ray length per unit step along the
  dominant in-plane axis. For cone beams the out-of-plane stretch √(1 + v²) is
  applied per detector row (axial kernels) or per voxel (modular kernel).
"""
from __future__ import annotations

import math

# Column models of the axial family (same values as leap.geometry.axial).
PARALLEL, FLAT, CURVED, CONE_PARALLEL = 0, 1, 2, 3


def overlap(a0, a1, b0, b1):
    """Length of the intersection of the intervals [a0, a1] and [b0, b1] (0 if disjoint)."""
    lo = a0 if a0 > b0 else b0
    hi = a1 if a1 < b1 else b1
    return hi - lo if hi > lo else 0.0


def axial_column_footprint(x, y, cx, cy, sx, sy, sdd, model, voxel_width,
                           pixel_width, center_col, ox, oy):
    """In-plane footprint of the voxel column centred at (x, y) for one axial view.

    Parameters
    ----------
    x, y : voxel-column centre, mm.
    cx, cy : column unit vector θ⊥ of the view; rays run along (−cy, cx).
    sx, sy : in-plane source position, mm (ignored for parallel beams).
    sdd : source-to-detector distance, mm (curved: the cylinder's radius).
    model : PARALLEL, FLAT or CURVED.
    ox, oy : curved detectors with a flying focal spot: the source's offset from the
        cylinder's axis (the focal centre) along θ⊥ and along the rays, mm (0, 0: the
        cylinder is about the source). A ray leaving the source with lateral slope u
        meets the cylinder after the in-plane distance ``t = −b + √(b² − |o|² + sdd²)``,
        ``b = (ox·u + oy)/√(1 + u²)``, at the point ``o + t·(u, 1)/√(1 + u²)``, whose angle
        seen from the focal centre is the column coordinate; z is magnified by t/ρ.

    Returns
    -------
    c_lo, c_hi : column interval, fractional pixel indices.
    weight : voxel_width × in-plane ray length factor l, mm.
    dist : distance that magnifies z onto the detector (depth for flat, in-plane
        source distance for curved, 0 for parallel), mm; ``dist <= 0`` means the
        voxel is not in front of the source and must be skipped.
    """
    half = 0.5 * voxel_width
    if model == PARALLEL:
        lateral = x * cx + y * cy
        ax = abs(cx)
        ay = abs(cy)
        m = ax if ax > ay else ay
        hw = half * m
        return ((lateral - hw) / pixel_width + center_col,
                (lateral + hw) / pixel_width + center_col,
                voxel_width / m, 1.0)
    dx = x - sx
    dy = y - sy
    rx = -cy
    ry = cx
    depth = dx * rx + dy * ry
    lateral = dx * cx + dy * cy
    adx = abs(dx)
    ady = abs(dy)
    if depth <= 1e-9 * (adx + ady):
        return 0.0, 0.0, 0.0, -1.0
    if ady > adx:
        # Ray mostly along y: the segment along x is the more perpendicular one.
        dlat = half * cx
        ddep = half * rx
    else:
        dlat = half * cy
        ddep = half * ry
    # Both end points' ratios with one division (the kernels call this per voxel
    # column and view, and divisions are their slowest scalar operations).
    d0 = depth - ddep
    d1 = depth + ddep
    r = 1.0 / (d0 * d1)
    u0 = (lateral - dlat) * d1 * r
    u1 = (lateral + dlat) * d0 * r
    rho = math.sqrt(dx * dx + dy * dy)
    if model == CURVED:
        scale = 1.0 / math.atan(pixel_width / sdd)
        if ox == 0.0 and oy == 0.0:
            c0 = math.atan(u0) * scale + center_col
            c1 = math.atan(u1) * scale + center_col
            dist = rho
        else:
            # The end points' rays and the centre's (written out: device functions
            # cannot call plain helpers, see make_axial_footprint).
            q = ox * ox + oy * oy - sdd * sdd
            n = math.sqrt(1.0 + u0 * u0)
            b = (ox * u0 + oy) / n
            t = math.sqrt(b * b - q) - b
            c0 = math.atan2(ox + t * u0 / n, oy + t / n) * scale + center_col
            n = math.sqrt(1.0 + u1 * u1)
            b = (ox * u1 + oy) / n
            t = math.sqrt(b * b - q) - b
            c1 = math.atan2(ox + t * u1 / n, oy + t / n) * scale + center_col
            # Rows: the centre's ray reaches the cylinder after t = rho·sdd/dist.
            b = (ox * lateral + oy * depth) / rho
            dist = rho * sdd / (math.sqrt(b * b - q) - b)
    else:
        scale = sdd / pixel_width
        c0 = u0 * scale + center_col
        c1 = u1 * scale + center_col
        dist = depth
    big = adx if adx > ady else ady
    if c0 > c1:
        c0, c1 = c1, c0
    return c0, c1, voxel_width * rho / big, dist


def cone_parallel_distance(x, y, cx, cy, sod, helical_pitch):
    """Row magnification of the voxel column at (x, y) in a cone-parallel view.

    Cone-parallel rays are parallel in-plane (column = lateral coordinate
    ``s = x cx + y cy``, the parallel-beam column footprint) but diverge out of plane
    from a source on the orbit of radius ``sod`` at in-plane distance √(sod² − s²)
    before the rotation axis: z maps to ``t = (z − z_s)·sdd / D`` with
    ``D = √(sod² − s²) − x·θ`` (θ = (cy, −cx), so −x·θ is the voxel's depth along the
    ray). A helical source sits at ``z_s = z_view + helical_pitch·asin(s/sod)``: the
    ray of lateral coordinate s comes from the fan view ψ + asin(s/sod).

    Returns
    -------
    dist : D, mm (``<= 0``: the voxel is not in front of the source, skip it).
    dz : ``helical_pitch·asin(s/sod)``, mm, added to the view's source height.
    """
    s = x * cx + y * cy
    if not abs(s) < sod:
        return -1.0, 0.0
    dist = math.sqrt(sod * sod - s * s) - (x * cy - y * cx)
    dz = 0.0
    if helical_pitch != 0.0:
        dz = helical_pitch * math.asin(s / sod)
    return dist, dz


def fbp_distance_weight(model, dist_sod, x, y, cx, cy, dist):
    """Back-projection weight of FBP for the voxel column at (x, y), one view.

    Fan beams: sod/(sod − x·θ), the fan-beam distance weight. Cone-parallel beams
    (``model == CONE_PARALLEL``): D/sod with D the row-magnifying distance of
    :func:`cone_parallel_distance`; it cancels the 1/D of the footprint's row extent,
    so FBP interpolates rebinned data like a parallel beam (upstream LEAP's
    ``v_denom / √(R² + v²)``, with v² ≪ R² dropped). ``dist_sod`` is sod, mm.
    """
    if model == CONE_PARALLEL:
        return dist / dist_sod
    return dist_sod / (dist_sod - (x * cy - y * cx))


def parallel_view_constants(cx, cy, voxel_width, pixel_width):
    """Per-view constants of the parallel-beam column footprint (see ``axial_column_footprint``).

    Returns ``cxp, cyp`` (column axis in pixels per mm), ``half_p`` (half the footprint
    width, pixels) and ``weight`` (voxel_width × ray length factor, mm). With these,
    :func:`parallel_column_footprint` is a multiply-add per voxel instead of two divisions.
    """
    ax = abs(cx)
    ay = abs(cy)
    m = ax if ax > ay else ay
    inv_pw = 1.0 / pixel_width
    return cx * inv_pw, cy * inv_pw, 0.5 * voxel_width * m * inv_pw, voxel_width / m


def parallel_column_footprint(x, y, cxp, cyp, half_p, center_col):
    """Column interval ``[c_lo, c_hi]`` of the voxel column at (x, y), parallel beams.

    Same model as ``axial_column_footprint(..., model=PARALLEL)`` (equal up to float
    rounding); ``cxp, cyp, half_p`` come from :func:`parallel_view_constants`.
    """
    c = x * cxp + y * cyp + center_col
    return c - half_p, c + half_p


def interp_cumulative(cum, n, q):
    """Value at fractional index ``q`` of the piecewise-linear cumulative sum ``cum``.

    ``cum`` has ``n + 1`` entries, ``cum[0] = 0``; the result is clamped to
    ``cum[0]`` for ``q <= 0`` and to ``cum[n]`` for ``q >= n``.
    """
    if q <= 0.0:
        return 0.0
    if q >= n:
        return cum[n]
    k = int(q)
    c0 = cum[k]
    return c0 + (q - k) * (cum[k + 1] - c0)


def modular_footprint(px, py, pz, sx, sy, sz, su, sv, n0, n1, n2, dn,
                      e0, e1, e2, r0, r1, r2, half_w, half_h):
    """Footprint of the voxel centred at p on one flat module.

    Parameters
    ----------
    px, py, pz : voxel centre, mm.
    sx, sy, sz : source position, mm.
    su, sv : (source − module centre)·col and ·row, mm.
    n0, n1, n2 : module normal col × row; dn = (module centre − source)·n.
    e0, e1, e2 / r0, r1, r2 : unit column / row vectors.
    half_w, half_h : half voxel width and height, mm.

    Returns
    -------
    u_lo, u_hi, v_lo, v_hi : column and row intervals on the module, mm from its centre.
    l : 3-D ray length per unit step along the dominant in-plane axis (0: skip).
    """
    dx = px - sx
    dy = py - sy
    dz = pz - sz
    adx = abs(dx)
    ady = abs(dy)
    big = adx if adx > ady else ady
    dd = dx * n0 + dy * n1 + dz * n2
    if big <= 0.0 or dd * dn <= 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    # Column interval: end points of the in-plane segment.
    if ady > adx:
        ax = half_w
        ay = 0.0
    else:
        ax = 0.0
        ay = half_w
    da = (dx - ax) * n0 + (dy - ay) * n1 + dz * n2
    db = (dx + ax) * n0 + (dy + ay) * n1 + dz * n2
    if da * dn <= 0.0 or db * dn <= 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    ua = su + dn / da * ((dx - ax) * e0 + (dy - ay) * e1 + dz * e2)
    ub = su + dn / db * ((dx + ax) * e0 + (dy + ay) * e1 + dz * e2)
    # Row interval: end points of the voxel's z extent.
    dc = dd - half_h * n2
    de = dd + half_h * n2
    if dc * dn <= 0.0 or de * dn <= 0.0:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    va = sv + dn / dc * (dx * r0 + dy * r1 + (dz - half_h) * r2)
    vb = sv + dn / de * (dx * r0 + dy * r1 + (dz + half_h) * r2)
    if ua > ub:
        ua, ub = ub, ua
    if va > vb:
        va, vb = vb, va
    return ua, ub, va, vb, math.sqrt(dx * dx + dy * dy + dz * dz) / big


def row_mapping(z0, voxel_height, source_z, dist, sdd, magnify_z, pixel_height, center_row):
    """Axial family: row coordinate A of the bottom edge of voxel 0 of a column, the
    row step B per voxel (the column's voxel k covers rows ``[A + kB, A + (k+1)B]``)
    and 1/B.

    ``dist`` is the magnifying distance from :func:`axial_column_footprint`; without
    magnification (parallel and fan beams) rows are z itself. Magnified, this is one
    division per call (the kernels call it per voxel column and view): the ratio
    ``pixel_height / (voxel_height · sdd)`` does not depend on the column, and the
    compiler hoists it.
    """
    if magnify_z:
        m = sdd / (dist * pixel_height)
        A = (z0 - 0.5 * voxel_height - source_z) * m + center_row
        return A, voxel_height * m, dist * (pixel_height / (voxel_height * sdd))
    A = (z0 - 0.5 * voxel_height - source_z) / pixel_height + center_row
    return A, voxel_height / pixel_height, pixel_height / voxel_height


def direct_shift(magnify_z, A, B):
    """``(True, j − k)`` when voxel k covers exactly row j for every column (no
    magnification, B == 1, A + ½ an integer), else ``(False, 0)``."""
    if magnify_z or B != 1.0:
        return False, 0
    s = A + 0.5
    if abs(s) > 1e9 or s != math.floor(s):
        return False, 0
    return True, int(s)


def column_range(c_lo, c_hi, ncols):
    """Pixels ``i0..i1`` (clamped to the detector) that ``[c_lo, c_hi]`` may meet;
    ``i0 > i1`` when none. Clamping before ``floor`` keeps huge values finite ints."""
    lo = min(max(c_lo + 0.5, -1.0), ncols + 1.0)
    hi = min(max(c_hi + 0.5, -1.0), ncols + 1.0)
    i0 = max(int(math.floor(lo)), 0)
    i1 = min(int(math.floor(hi)), ncols - 1)
    return i0, i1


def modular_view_frame(sources, centers, rows, cols, a):
    """The per-view quantities :func:`modular_footprint` takes, for view ``a``:
    source, (source − centre)·col and ·row, normal n = col × row, (centre − source)·n,
    and the column and row unit vectors."""
    sx, sy, sz = sources[a, 0], sources[a, 1], sources[a, 2]
    e0, e1, e2 = cols[a, 0], cols[a, 1], cols[a, 2]
    r0, r1, r2 = rows[a, 0], rows[a, 1], rows[a, 2]
    n0 = e1 * r2 - e2 * r1
    n1 = e2 * r0 - e0 * r2
    n2 = e0 * r1 - e1 * r0
    qx, qy, qz = sx - centers[a, 0], sy - centers[a, 1], sz - centers[a, 2]
    su = qx * e0 + qy * e1 + qz * e2
    sv = qx * r0 + qy * r1 + qz * r2
    dn = -(qx * n0 + qy * n1 + qz * n2)
    return sx, sy, sz, su, sv, n0, n1, n2, dn, e0, e1, e2, r0, r1, r2


def make_modular_kernels(jit, overlap, column_range):
    """Build and compile, with one target's ``jit`` decorator, the modular pixel-box
    and gather functions on top of that target's compiled ``overlap`` and
    ``column_range`` (plain functions cannot call plain functions under Numba, so the
    composites are made per target: CPU ``_jit`` and CUDA ``_jit``).

    Returns ``(modular_box, modular_gather)``:

    * ``modular_box(ua, ub, va, vb, pixel_width, pixel_height, ncols, nrows)`` → the
      footprint in fractional pixel indices ``(c_lo, c_hi, r_lo, r_hi)`` and the pixels
      it may meet, ``i0..i1`` × ``j0..j1`` (module centre at the middle of the grid);
    * ``modular_gather(g, a, ua, ub, va, vb, pixel_width, pixel_height)`` → the
      footprint-weighted sum of view ``a`` of g (na, nrows, ncols), overlaps in pixels.
    """
    @jit
    def modular_box(ua, ub, va, vb, pixel_width, pixel_height, ncols, nrows):
        c_lo = ua / pixel_width + 0.5 * (ncols - 1)
        c_hi = ub / pixel_width + 0.5 * (ncols - 1)
        r_lo = va / pixel_height + 0.5 * (nrows - 1)
        r_hi = vb / pixel_height + 0.5 * (nrows - 1)
        i0, i1 = column_range(c_lo, c_hi, ncols)
        j0, j1 = column_range(r_lo, r_hi, nrows)
        return c_lo, c_hi, r_lo, r_hi, i0, i1, j0, j1

    @jit
    def modular_gather(g, a, ua, ub, va, vb, pixel_width, pixel_height):
        nrows = g.shape[1]
        ncols = g.shape[2]
        c_lo, c_hi, r_lo, r_hi, i0, i1, j0, j1 = modular_box(
            ua, ub, va, vb, pixel_width, pixel_height, ncols, nrows)
        s = 0.0
        for j in range(j0, j1 + 1):
            wr = overlap(r_lo, r_hi, j - 0.5, j + 0.5)
            if wr == 0.0:
                continue
            t = 0.0
            for i in range(i0, i1 + 1):
                t += overlap(c_lo, c_hi, i - 0.5, i + 0.5) * g[a, j, i]
            s += wr * t
        return s

    return modular_box, modular_gather


def make_axial_footprint(jit, parallel_column_footprint, cone_parallel_distance,
                         axial_column_footprint):
    """Build, with one target's ``jit`` decorator, the axial family's footprint
    dispatch on top of that target's compiled column footprints (see
    :func:`make_modular_kernels` for why composites are built per target).

    Returns ``axial_footprint(model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight,
    sdd, sod, pitch, voxel_width, pixel_width, center_col, ox, oy)`` → ``(c_lo, c_hi, weight,
    dist, dz)`` for the voxel column at (x, y): parallel and cone-parallel beams use the
    per-view constants (cxp, cyp, half_p, par_weight from
    :func:`parallel_view_constants`) and cone-parallel adds its row distance and helical
    source offset dz (:func:`cone_parallel_distance`); divergent beams use
    :func:`axial_column_footprint` (dz = 0; ``ox, oy`` the curved detector's focus
    offsets, 0 for every other beam).
    """
    @jit
    def axial_footprint(model, x, y, cx, cy, sx, sy, cxp, cyp, half_p, par_weight, sdd, sod,
                        pitch, voxel_width, pixel_width, center_col, ox, oy):
        if model == PARALLEL or model == CONE_PARALLEL:
            c_lo, c_hi = parallel_column_footprint(x, y, cxp, cyp, half_p, center_col)
            if model == PARALLEL:
                return c_lo, c_hi, par_weight, 1.0, 0.0
            dist, dz = cone_parallel_distance(x, y, cx, cy, sod, pitch)
            return c_lo, c_hi, par_weight, dist, dz
        c_lo, c_hi, weight, dist = axial_column_footprint(x, y, cx, cy, sx, sy, sdd, model,
                                                          voxel_width, pixel_width, center_col,
                                                          ox, oy)
        return c_lo, c_hi, weight, dist, 0.0

    return axial_footprint
