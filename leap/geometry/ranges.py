"""Which part of the data a part of the volume touches: LEAP's range queries.

Conservative bounds (never too small) on

* the z slices that the detector's rays cross (:func:`slice_range`),
* the detector rows that back-projecting into slices ``[first, last]`` reads
  (:func:`row_range`),
* the views whose rays reach slices ``[first, last]`` (:func:`view_range`; only helical
  scans skip views).

They follow LEAP's rules (``sliceRangeNeededForProjection``,
``rowRangeNeededForBackprojection``, ``viewRangeNeededForBackprojection``): the rays are
traced back through a cylinder of radius ``radius`` about the z axis (the smaller of the
field of view and the volume's extent), with one voxel of margin in x/y, half a voxel
in z and half a pixel on the detector. All indices are inclusive.

Parallel and fan beams have one volume slice per detector row; the other geometries
magnify rows with distance from the source. Modular beams get bounds view by view when
they are axially aligned, and the whole range otherwise.
"""
from __future__ import annotations

import math

import numpy as np

from .cone import ConeBeam
from .coneparallel import ConeParallelBeam
from .fan import FanBeam
from .modular import ModularBeam
from .parallel import ParallelBeam
from .volume import Volume


def bounding_radius(volume: Volume, fov_radius: float) -> float:
    """min(furthest voxel centre from the z axis, ``fov_radius``), mm: every ray that
    meets a voxel the projectors use passes within this radius of the axis."""
    xs, ys = volume.x_samples()[[0, -1]], volume.y_samples()[[0, -1]]
    furthest = math.sqrt(float(np.max(xs ** 2) + np.max(ys ** 2)))
    return min(furthest, fov_radius)


def fov_or_volume_radius(geometry, volume: Volume | None = None) -> float:
    """The geometry's own field-of-view radius, mm (no offset-scan widening); for a
    geometry without a circular field of view (a modular beam that is not axially
    aligned) the volume's in-plane reach instead: its furthest voxel centre from the z
    axis plus half a voxel (inf without a volume). LEAP's ``get_diameterFOV_min`` / 2."""
    r = geometry.fov_radius(offset_scan=False)
    if math.isfinite(r):
        return r
    if volume is None:
        return math.inf
    return bounding_radius(volume, math.inf) + 0.5 * volume.voxel_width


def _row_aligned(geometry) -> bool:
    return isinstance(geometry, (ParallelBeam, FanBeam))


def _clamp(i: int, n: int) -> int:
    return max(0, min(n - 1, i))


def _source_z_span(geometry) -> tuple[float, float]:
    """Lowest and highest source height over the views (and, for cone-parallel beams,
    over the columns, whose rays leave the source at different points of the helix)."""
    zs = geometry.source_z()
    lo, hi = float(zs.min()), float(zs.max())
    if isinstance(geometry, ConeParallelBeam) and geometry.is_helical:
        d = geometry.detector
        smax = max(abs(-0.5 - d.center_col), abs(d.num_cols - 0.5 - d.center_col)) * d.pixel_width
        reach = abs(geometry.helical_pitch) * (math.asin(min(1.0, smax / geometry.sod))
                                               + abs(math.asin(geometry.tau / geometry.sod)))
        lo, hi = lo - reach, hi + reach
    shifts = getattr(geometry, "source_shifts", None)
    if shifts is not None:
        # A flying focal spot moves the rays' origin by Δz off the focal centre that
        # carries the detector, and the rows by up to Δz more: twice as wide a margin.
        dz = 2.0 * float(np.max(np.abs(shifts[:, 1])))
        lo, hi = lo - dz, hi + dz
    return lo, hi


def _distances(geometry, radius: float, voxel_width: float) -> tuple[float, float]:
    """Nearest and farthest source distance (along the central ray) of a point within
    ``radius`` (+ one voxel) of the axis."""
    near = geometry.sod - radius - voxel_width
    if isinstance(geometry, ConeParallelBeam):   # rays start at √(sod² − s²) from the axis
        near = math.sqrt(max(geometry.sod ** 2 - radius ** 2, 0.0)) - radius - voxel_width
    far = geometry.sod + radius + voxel_width
    shifts = getattr(geometry, "source_shifts", None)
    if shifts is not None:
        # A flying focal spot: the source is up to |Δρ| + (sod + Δρ)·|Δψ| off the orbit.
        off = float(np.max(np.abs(shifts[:, 2]) + (geometry.sod + np.abs(shifts[:, 2]))
                           * np.abs(shifts[:, 0])))
        near, far = near - off, far + off
    return near, far


def _clocking(geometry) -> float:
    """Extra normalised row reach of a tilted detector at its outermost column."""
    if not isinstance(geometry, ConeBeam) or geometry.tilt == 0.0:
        return 0.0
    d = geometry.detector
    i = np.array([0.0, d.num_cols - 1.0]) - d.center_col
    u_max = float(np.max(np.abs(i))) * d.pixel_width
    return abs(math.sin(geometry.tilt) * u_max) / geometry.sdd


def _row_extent(geometry) -> tuple[float, float]:
    """Normalised row coordinates v = t/sdd of the detector's outer row edges."""
    d = geometry.detector
    row0 = -d.center_row * d.pixel_height
    return ((row0 - 0.5 * d.pixel_height) / geometry.sdd,
            (row0 + (d.num_rows - 0.5) * d.pixel_height) / geometry.sdd)


def _modular_views(geometry: ModularBeam):
    """Per view: source, module centre, column and row vectors, the in-plane distances
    of the source from the axis (R) and from the module centre (D), and the half pixel
    plus column-clocking pad of the module's rows (mm)."""
    d = geometry.detector
    for s, c, u, rv in zip(geometry.source_positions, geometry.module_centers,
                           geometry.col_vectors, geometry.row_vectors):
        pad = abs(u[2] * 0.5 * d.pixel_width * (d.num_cols - 1)) + 0.5 * d.pixel_height
        yield s, c, u, rv, math.hypot(s[0], s[1]), math.hypot(s[0] - c[0], s[1] - c[1]), pad


def slice_range(geometry, volume: Volume, fov_radius: float, clip: bool = True) -> tuple[int, int]:
    """``(first, last)`` z slices that the detector's rays cross.

    ``fov_radius``: the field of view the projectors use (mm; inf for none). With
    ``clip=False`` the indices may lie outside ``[0, num_z − 1]``.
    """
    nz, vh, vw, z0 = volume.num_z, volume.voxel_height, volume.voxel_width, volume.z0
    if _row_aligned(geometry):
        return 0, min(nz - 1, geometry.detector.num_rows - 1)
    r = bounding_radius(volume, fov_radius)
    if isinstance(geometry, ModularBeam):
        if not geometry.axially_aligned:
            return 0, nz - 1
        d = geometry.detector
        row0 = -0.5 * (d.num_rows - 1) * d.pixel_height
        zs = []
        for s, c, _, rv, R, D, pad in _modular_views(geometry):
            for vv in (row0 - pad, row0 + (d.num_rows - 1) * d.pixel_height + pad):
                for dist in (R - r - vw, R + r + vw):
                    zs.append(s[2] + (c[2] + vv * rv[2] - s[2]) * dist / D)
        lo, hi = min(zs) - 0.5 * vh, max(zs) + 0.5 * vh
    else:
        v_lo, v_hi = _row_extent(geometry)
        near, far = _distances(geometry, r, vw)
        if geometry.is_helical:
            z_lo, z_hi = _source_z_span(geometry)
            pts = [z + dist * vv for z in (z_lo, z_hi) for dist in (near, far)
                   for vv in (v_lo, v_hi)]
            lo, hi = min(pts) - 0.5 * vh, max(pts) + 0.5 * vh
        else:
            clock = _clocking(geometry)
            v_lo, v_hi = v_lo - clock, v_hi + clock
            lo = min(v_lo * near, v_lo * far) - 0.5 * vh
            hi = max(v_hi * near, v_hi * far) + 0.5 * vh
    first, last = int(math.floor((lo - z0) / vh)), int(math.ceil((hi - z0) / vh))
    if clip:
        first, last = _clamp(first, nz), _clamp(last, nz)
    return first, last


#: Rows within this fraction of a pixel of a slab's boundary count as touched: a row
#: that only touches the boundary gets zero footprint weight in exact arithmetic, but
#: rounding can leave ~1e-17 of it.
_TOUCH = 1e-6


def row_range(geometry, volume: Volume, fov_radius: float, first: int = 0,
              last: int | None = None) -> tuple[int, int]:
    """``(lo, hi)`` detector rows that back-projecting into slices ``first..last``
    (default: all) reads, or equally that projecting those slices writes."""
    nr = geometry.detector.num_rows
    last = volume.num_z - 1 if last is None else last
    vh, vw = volume.voxel_height, volume.voxel_width
    z_lo = first * vh + volume.z0 - 0.5 * vh
    z_hi = last * vh + volume.z0 + 0.5 * vh
    if _row_aligned(geometry):
        # Rows are not magnified: row j covers z in (j − centre_row ± ½)·pixel_height.
        d = geometry.detector
        lo = math.ceil(z_lo / d.pixel_height + d.center_row - 0.5 - _TOUCH)
        hi = math.floor(z_hi / d.pixel_height + d.center_row + 0.5 + _TOUCH)
        return _clamp(lo, nr), _clamp(hi, nr)
    r = bounding_radius(volume, fov_radius)
    if isinstance(geometry, ModularBeam):
        if not geometry.axially_aligned:
            return 0, nr - 1
        d = geometry.detector
        row0 = -0.5 * (d.num_rows - 1) * d.pixel_height
        idx = []
        for s, c, u, rv, R, D, pad in _modular_views(geometry):
            n = np.cross(u, rv)
            for dist in (R - r - vw, R + r + vw):
                vs = []
                for z in (z_lo, z_hi):
                    ray = np.array([(c[0] - s[0]) * dist / D, (c[1] - s[1]) * dist / D, z - s[2]])
                    t = float((c - s) @ n) / float(ray @ n)
                    vs.append(float((s + t * ray - c) @ rv))
                idx.append(int(math.floor((min(vs) - pad - row0) / d.pixel_height)))
                idx.append(int(math.ceil((max(vs) + pad - row0) / d.pixel_height)))
        return _clamp(min(idx), nr), _clamp(max(idx), nr)
    d = geometry.detector
    ph, sdd = d.pixel_height, geometry.sdd
    zs_lo, zs_hi = _source_z_span(geometry) if geometry.is_helical else (0.0, 0.0)
    near, far = _distances(geometry, r, vw)
    clock = _clocking(geometry)
    v_lo = min((z_lo - zs_hi) / near, (z_lo - zs_hi) / far) - 0.5 * ph / sdd - clock
    v_hi = max((z_hi - zs_lo) / near, (z_hi - zs_lo) / far) + 0.5 * ph / sdd + clock
    row0 = -d.center_row * ph / sdd
    Tv = ph / sdd
    return (_clamp(int(math.floor((v_lo - row0) / Tv)), nr),
            _clamp(int(math.ceil((v_hi - row0) / Tv)), nr))


def leap_row_range(geometry, volume: Volume, fov_radius: float, first: int = 0,
                   last: int | None = None) -> tuple[int, int]:
    """LEAP's answer to ``rowRangeNeededForBackprojection``: :func:`row_range`, except
    that parallel and fan beams return the slice indices themselves (LEAP ties their
    slices to detector rows; :func:`row_range` adds the neighbouring rows that touch a
    slab's boundary)."""
    if _row_aligned(geometry):
        last = volume.num_z - 1 if last is None else last
        return max(0, first), min(geometry.detector.num_rows - 1, last)
    return row_range(geometry, volume, fov_radius, first, last)


def rows_per_slab(geometry, volume: Volume, fov_radius: float, num_slices: int) -> int:
    """Largest number of detector rows (:func:`leap_row_range`) that back-projecting any
    slab of ``num_slices`` z slices reads, slabs taken from slice 0 upwards (the last one
    may be thinner). LEAP's ``numRowsRequiredForBackprojectingSlab``."""
    if num_slices <= 0:
        raise ValueError(f"num_slices must be positive, got {num_slices}")
    nz = volume.num_z
    most = 0
    for first in range(0, nz, num_slices):
        lo, hi = leap_row_range(geometry, volume, fov_radius, first,
                                min(first + num_slices, nz) - 1)
        most = max(most, hi - lo + 1)
    return most


def view_range(geometry, volume: Volume, fov_radius: float, first: int = 0,
               last: int | None = None) -> tuple[int, int]:
    """``(first_view, last_view)`` whose rays reach slices ``first..last`` (default: all):
    for helical scans, the views whose source height lets the detector see them; all
    views otherwise."""
    n = geometry.num_angles
    if not isinstance(geometry, (ConeBeam, ConeParallelBeam)) or not geometry.is_helical:
        return 0, n - 1
    steps = np.diff(geometry.angles)
    if not (np.all(steps > 0) or np.all(steps < 0)):
        return 0, n - 1          # the source height is not monotone in the view index
    from ..preprocessing.geometric_calibration import phi_index
    last = volume.num_z - 1 if last is None else last
    vh, vw = volume.voxel_height, volume.voxel_width
    v_lo, v_hi = _row_extent(geometry)
    z_lo = first * vh + volume.z0 - 0.5 * vh
    z_hi = last * vh + volume.z0 + 0.5 * vh
    near, far = _distances(geometry, bounding_radius(volume, fov_radius), vw)
    src = [z - dist * vv for z in (z_lo, z_hi) for dist in (near, far) for vv in (v_lo, v_hi)]
    zc = geometry.source_z() - geometry.helical_pitch * (geometry.angles - geometry.helical_mid_angle)
    # z_s(ψ) = h·(ψ − ψ_mid) + const: invert for the angles, then for the view indices;
    # cone-parallel rays leave the helix up to |h|·asin(s_max/sod) away from it, a
    # flying focal spot's up to its Δz (the margins of _source_z_span).
    lo_z, hi_z = _source_z_span(geometry)
    reach = max(abs(lo_z - float(geometry.source_z().min())),
                abs(hi_z - float(geometry.source_z().max())))
    h = geometry.helical_pitch
    lo_s, hi_s = min(src) - reach - float(zc[0]), max(src) + reach - float(zc[0])
    a = phi_index(geometry.angles, lo_s / h + geometry.helical_mid_angle)
    b = phi_index(geometry.angles, hi_s / h + geometry.helical_mid_angle)
    return int(math.floor(min(a, b))), int(math.ceil(max(a, b)))
