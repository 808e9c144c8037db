"""ASTRA Toolbox geometries and arrays to and from leap.

ASTRA describes a scan by a projection-geometry dict (``astra.create_proj_geom``) and a
volume-geometry dict (``astra.create_vol_geom``); these functions take and give those
dicts as plain Python values, so ASTRA itself is never imported.

Convention chain
----------------
Facts from astra-toolbox (``python/astra/creators.py``: the dict keys;
``python/astra/functions.py::geom_2vec``: the standard geometries as vectors;
``include/astra/VolumeGeometry2D.h``: 2-D pixel centres; ``src/GeometryUtil3D.cpp`` and
``cuda/3d/cone_bp.cu``: 3-D voxel centres) and leap's LEAP_CONVENTIONS:

* Lengths: ASTRA has no unit; leap reads its numbers as mm (voxel and detector sizes in
  the same unit). Angles: radians in both.
* ASTRA's standard geometries at angle θ put the source at ``(sin θ, −cos θ)·SO`` (SO =
  ``DistanceOriginSource``), the detector centre at ``−(sin θ, −cos θ)·OD`` and the
  column step along ``(cos θ, sin θ)`` (``geom_2vec``): at θ = 0 the source is on −y,
  rays run along +y and columns along +x, turning counter-clockwise seen from +z. That is
  leap's view ψ = θ exactly (LEAP_CONVENTIONS: source ``sod·θ − tau·θ⊥``, column axis
  θ⊥ = (cos ψ, sin ψ)), with ``sod = SO``, ``sdd = SO + OD``. Parallel beams likewise
  (ASTRA's ray vector (sin θ, −cos θ) is the same line as leap's +y ray).
* Detector pixels: ASTRA's vector geometries centre pixel ``(row r, col c)`` at
  ``d + (c − ncols/2 + ½)·u + (r − nrows/2 + ½)·v`` (d the detector centre, u and v one
  pixel step), which is leap's :class:`~leap.geometry.ModularBeam` with pixel sizes the
  lengths of u and v (``leap.interop._vectors``). Row 0 is at the bottom (−z side) in
  both.
* Arrays: ASTRA 3-D projection data are ``(det_rows, angles, det_cols)``, 2-D sinograms
  ``(angles, det_cols)``; leap's ``(angles, rows, cols)`` (a 2-D sinogram is one row).
  ASTRA 3-D volumes are ``(slices, rows, cols)`` = (z, y, x) with every index increasing
  its coordinate from ``WindowMin`` (``cone_bp.cu``: ``fY = Y − nY/2 + ½``), leap's
  ``(num_z, num_y, num_x)`` likewise. ASTRA 2-D volumes are ``(rows, cols)`` with row 0
  at ``WindowMaxY`` (``pixelRowToCenterY = WindowMaxY − (row + ½)·PixelLengthY``): y
  *decreases* down the rows, so the 2-D volume's rows are flipped on the way to leap's
  ``(1, num_y, num_x)``.
* 2-D problems become a one-slice leap problem: one detector row as high as the voxel
  (ASTRA's 2-D geometries have no height), so leap's footprints cover the slice fully.
* ASTRA masks no field of view; the systems made here set ``fov_radius`` to the volume's
  corner so leap masks nothing either.

Which leap class each type becomes
----------------------------------
====================  ==============================================================
ASTRA type            leap geometry
====================  ==============================================================
``parallel``          :class:`~leap.geometry.ParallelBeam`, one row
``parallel_vec``      ParallelBeam (obliquely sampled lines included); vectors no
                      parallel beam holds (rays leaving the xy plane, per-view column
                      offsets) only with ``approximate_parallel=True``: a
                      ModularBeam with the source far away (ParallelBeam.to_modular's
                      rule)
``fanflat``           :class:`~leap.geometry.FanBeam`, one row
``fanflat_vec``       FanBeam when the vectors are a circular orbit (detector and axis
                      offsets included), else a one-row ModularBeam (exact for a slice
                      between source and detector: its footprint covers the row)
``parallel3d``        ParallelBeam
``parallel3d_vec``    as ``parallel_vec``
``cone``              :class:`~leap.geometry.ConeBeam` (flat detector)
``cone_vec``          :class:`~leap.geometry.ModularBeam`
====================  ==============================================================

:func:`to_astra` gives back the standard type where the leap geometry has one (centred
detector, no axis offset, tilt or helix), else the ``_vec`` type, exactly; leap
geometries ASTRA has no form for (curved detectors, cone-parallel beams, multi-row fan
beams) raise ValueError naming them; helical and flying-focal-spot cone beams go out as
``cone_vec``.
"""
from __future__ import annotations

import math

import numpy as np

from ..geometry import (ConeBeam, ConeParallelBeam, Detector, FanBeam, ModularBeam, ParallelBeam,
                        Volume)
from ..system import CTSystem
from ._vectors import (as_vectors, common_length, fan_from_vectors, modular_from_vectors,
                       modular_vectors, parallel_from_vectors, parallel_vectors)

#: ASTRA's 2-D and 3-D projection geometry types (``astra.create_proj_geom``).
TYPES_2D = ("parallel", "parallel_vec", "fanflat", "fanflat_vec")
TYPES_3D = ("parallel3d", "parallel3d_vec", "cone", "cone_vec")


# --------------------------------------------------------------------------- helpers
def _key(geom: dict, key: str, what: str = "proj_geom"):
    try:
        return geom[key]
    except KeyError:
        raise ValueError(f"the ASTRA {what} ({geom.get('type', 'volume')!r}) has no key "
                         f"{key!r}") from None
    except TypeError:
        raise TypeError(f"the ASTRA {what} must be a dict as astra.create_{what}() returns "
                        f"it, got {type(geom).__name__}") from None


def _count(geom: dict, key: str, what: str = "proj_geom") -> int:
    x = _key(geom, key, what)
    try:
        n = int(x)
    except (TypeError, ValueError):
        raise ValueError(f"ASTRA {what} key {key!r} must be a positive integer, "
                         f"got {x!r}") from None
    if n != x or n < 1:
        raise ValueError(f"ASTRA {what} key {key!r} must be a positive integer, got {x!r}")
    return n


def _positive(geom: dict, key: str) -> float:
    x = _key(geom, key)
    try:
        v = float(x)
    except (TypeError, ValueError):
        v = float("nan")
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"ASTRA proj_geom key {key!r} must be a positive number, got {x!r}")
    return v


def _angles(geom: dict) -> np.ndarray:
    a = np.array(_key(geom, "ProjectionAngles"), dtype=np.float64).ravel()
    if a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError("ASTRA proj_geom key 'ProjectionAngles' must hold finite angles "
                         "(radians), at least one")
    return a


def _type(proj_geom) -> str:
    t = str(_key(proj_geom, "type")).lower()
    if t == "cyl_cone_vec":
        raise ValueError("ASTRA's 'cyl_cone_vec' (a cylindrical detector of any axis and "
                         "radius) has no leap form: leap's curved detector is a cylinder "
                         "about the source of a circular cone beam")
    if t not in TYPES_2D + TYPES_3D:
        raise ValueError(f"unknown ASTRA projection geometry type {t!r}; leap reads "
                         f"{', '.join(TYPES_2D + TYPES_3D)}")
    return t


# ---------------------------------------------------------------------------- volume
def volume_from_astra(vol_geom: dict) -> Volume:
    """The :class:`~leap.geometry.Volume` of an ASTRA volume geometry (2-D: one slice,
    as high as a voxel is wide, centred on z = 0).

    ``GridColCount``, ``GridRowCount``, ``GridSliceCount`` are the voxel counts along x,
    y and z; the ``option`` windows ``WindowMinX`` … ``WindowMaxZ`` (default ±count/2)
    the grid's outer faces. leap's voxels are square in x-y: the windows must give
    equal x and y voxel sizes.
    """
    nx = _count(vol_geom, "GridColCount", "vol_geom")
    ny = _count(vol_geom, "GridRowCount", "vol_geom")
    three_d = "GridSliceCount" in vol_geom
    nz = _count(vol_geom, "GridSliceCount", "vol_geom") if three_d else 1
    opt = dict(vol_geom.get("option", {}) or {})

    def window(axis, n):
        lo = opt.get(f"WindowMin{axis}", -n / 2.0)
        hi = opt.get(f"WindowMax{axis}", n / 2.0)
        lo, hi = float(lo), float(hi)
        if not (math.isfinite(lo) and math.isfinite(hi) and hi > lo):
            raise ValueError(f"ASTRA vol_geom: WindowMin{axis} ({lo}) must be below "
                             f"WindowMax{axis} ({hi})")
        return lo, hi, (hi - lo) / n

    x0, x1, px = window("X", nx)
    y0, y1, py = window("Y", ny)
    if abs(px - py) > 1e-6 * max(px, py):
        raise ValueError(f"ASTRA vol_geom has voxels {px:g} wide in x but {py:g} in y; "
                         "leap's voxels are square in x-y (voxel_width)")
    if three_d:
        z0, z1, pz = window("Z", nz)
        oz = 0.5 * (z0 + z1)
    else:
        pz, oz = px, 0.0
    return Volume(num_x=nx, num_y=ny, num_z=nz, voxel_width=px, voxel_height=pz,
                  offset_x=0.5 * (x0 + x1), offset_y=0.5 * (y0 + y1), offset_z=oz)


def volume_to_astra(volume: Volume, two_d: bool = False) -> dict:
    """ASTRA's volume geometry dict of a leap :class:`~leap.geometry.Volume` (``two_d``:
    the x-y grid only; the volume must then have one slice)."""
    if not isinstance(volume, Volume):
        raise TypeError(f"volume must be a leap Volume, got {type(volume).__name__}")
    v = volume
    hx, hy, hz = 0.5 * v.num_x * v.voxel_width, 0.5 * v.num_y * v.voxel_width, \
        0.5 * v.num_z * v.voxel_height
    opt = {"WindowMinX": v.offset_x - hx, "WindowMaxX": v.offset_x + hx,
           "WindowMinY": v.offset_y - hy, "WindowMaxY": v.offset_y + hy}
    out = {"GridRowCount": v.num_y, "GridColCount": v.num_x, "option": opt}
    if two_d:
        if v.num_z != 1:
            raise ValueError(f"a 2-D ASTRA volume has one slice; this volume has {v.num_z}")
        return out
    out["GridSliceCount"] = v.num_z
    opt.update(WindowMinZ=v.offset_z - hz, WindowMaxZ=v.offset_z + hz)
    return out


# ------------------------------------------------------------------------ geometries
def _far_modular(rays, centers, u, v, nr, nc, volume) -> ModularBeam:
    """Parallel rays as a modular beam with the sources far away. Each detector is first
    slid along its rays (which changes none of a parallel beam's lines) to touch the
    sphere of radius r about the origin that holds the volume; its source then sits a
    distance L behind it along the rays, L grown by factors of 10 until a ray's offset
    anywhere in the volume, ``(half the detector)·2r/L``, is below 0.01 voxel (the rule
    of :meth:`leap.geometry.ParallelBeam.to_modular`)."""
    r_hat = rays / np.linalg.norm(rays, axis=1, keepdims=True)
    z = volume.z_samples()
    rmax = float(np.hypot(volume.max_radius(), max(abs(z[0]), abs(z[-1])) + volume.voxel_height))
    half = 0.5 * max(nc * float(np.linalg.norm(u[0])), nr * float(np.linalg.norm(v[0])))
    dist = 10.0 * rmax
    while (half / dist) * 2.0 * rmax / volume.voxel_width >= 0.01 and dist < 1e12:
        dist *= 10.0
    centers = centers + (rmax - np.sum(centers * r_hat, axis=1))[:, None] * r_hat
    return modular_from_vectors(centers - dist * r_hat, centers, u, v, nr, nc)


def from_astra(proj_geom: dict, vol_geom: dict | None = None, *,
               approximate_parallel: bool = False) -> CTSystem:
    """The :class:`~leap.system.CTSystem` of an ASTRA projection geometry (and volume).

    Parameters
    ----------
    proj_geom : dict
        As ``astra.create_proj_geom`` returns it: ``type`` one of 'parallel',
        'parallel_vec', 'fanflat', 'fanflat_vec', 'parallel3d', 'parallel3d_vec',
        'cone', 'cone_vec', with that type's keys (``DetectorWidth``/``DetectorCount``,
        ``DetectorSpacingX/Y``, ``DetectorRowCount/ColCount``, ``ProjectionAngles``
        (radians), ``DistanceOriginSource/Detector``, or ``Vectors`` (num_views, 6 or 12)).
    vol_geom : dict, optional
        As ``astra.create_vol_geom`` returns it (``GridRowCount/ColCount/SliceCount``,
        ``option`` ``WindowMinX`` … ``WindowMaxZ``). None: leap's default volume for the
        detector (LEAP's ``set_default_volume``).
    approximate_parallel : bool
        Accept parallel vector geometries that no leap ParallelBeam holds by a modular
        beam whose sources are far away (rays parallel to 0.01 voxel across the volume;
        needs ``vol_geom``). Default: ValueError for them.

    Returns a CTSystem in leap's conventions (see the module docstring for the convention
    chain): views ψ = ASTRA's θ, projections ``(angles, rows, cols)`` (convert ASTRA arrays
    with :func:`from_astra_data`), no field-of-view mask.
    """
    t = _type(proj_geom)
    two_d = t in TYPES_2D
    if vol_geom is not None:
        if two_d == ("GridSliceCount" in vol_geom):
            raise ValueError(f"a {'2' if two_d else '3'}-D ASTRA projection geometry ({t!r}) "
                             f"needs a {'2' if two_d else '3'}-D vol_geom "
                             f"({'without' if two_d else 'with'} GridSliceCount)")
        volume = volume_from_astra(vol_geom)
    else:
        volume = None

    if two_d:
        nc, nr = _count(proj_geom, "DetectorCount"), 1
    else:
        nc, nr = _count(proj_geom, "DetectorColCount"), _count(proj_geom, "DetectorRowCount")

    if t in ("parallel", "fanflat", "parallel3d", "cone"):
        angles = _angles(proj_geom)
        if two_d:
            pw = _positive(proj_geom, "DetectorWidth")
            ph = volume.voxel_height if volume is not None else pw
        else:
            pw = _positive(proj_geom, "DetectorSpacingX")
            ph = _positive(proj_geom, "DetectorSpacingY")
        det = Detector(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw,
                       center_row=0.0 if two_d else None)
        if t in ("parallel", "parallel3d"):
            geometry = ParallelBeam(detector=det, angles=angles)
        else:
            so = _positive(proj_geom, "DistanceOriginSource")
            od = _positive(proj_geom, "DistanceOriginDetector")
            cls = FanBeam if two_d else ConeBeam
            geometry = cls(detector=det, angles=angles, sod=so, sdd=so + od)
    else:
        vec = as_vectors("ASTRA proj_geom 'Vectors'", _key(proj_geom, "Vectors"),
                         6 if two_d else 12)
        n = vec.shape[0]
        if two_d:
            z = np.zeros((n, 1))
            first, centers, u = (np.hstack([vec[:, k:k + 2], z]) for k in (0, 2, 4))
            ph = volume.voxel_height if volume is not None else float(np.linalg.norm(u[0]))
            v = np.tile([0.0, 0.0, ph], (n, 1))
        else:
            first, centers, u, v = vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12]
        if t == "cone_vec":
            geometry = modular_from_vectors(first, centers, u, v, nr, nc)
        elif t == "fanflat_vec":
            geometry = (fan_from_vectors(first[:, :2], centers[:, :2], u[:, :2], nc, ph)
                        or modular_from_vectors(first, centers, u, v, nr, nc))
        else:
            if not np.all(np.linalg.norm(first, axis=1) > 0):
                raise ValueError(f"ASTRA {t}: a ray direction is zero")
            geometry = parallel_from_vectors(first, centers, u, v, nr, nc)
            if geometry is None:
                if not approximate_parallel:
                    raise ValueError(
                        f"these ASTRA {t} vectors are no leap ParallelBeam (rays leave the "
                        "xy plane, the detector is turned about its normal, or its column "
                        "offset or pixel size across the rays changes from view to view); "
                        "from_astra(..., approximate_parallel=True) models them as a "
                        "modular beam with distant sources")
                if volume is None:
                    raise ValueError("approximate_parallel needs vol_geom (the volume sets "
                                     "how far the sources must be)")
                common_length("the detector column steps u", u)
                geometry = _far_modular(first, centers, u, v, nr, nc, volume)

    if volume is None:
        from ..io.scanners._common import default_system
        volume = default_system(geometry).volume
        if two_d:
            volume = volume.with_changes(num_z=1, offset_z=0.0,
                                         voxel_height=geometry.detector.pixel_height)
    return CTSystem(geometry=geometry, volume=volume, fov_radius=1.000001 * volume.max_radius())


def _is_planar(g: ModularBeam, z: float) -> bool:
    """A one-row modular beam lying in the plane z (a 2-D fan of vectors)."""
    tol = 1e-9 * max(1.0, float(np.max(np.abs(g.module_centers))))
    return (g.detector.num_rows == 1
            and np.all(np.abs(g.source_positions[:, 2] - z) <= tol)
            and np.all(np.abs(g.module_centers[:, 2] - z) <= tol)
            and np.all(np.abs(g.row_vectors - (0.0, 0.0, 1.0)) <= 1e-9))


def to_astra(system: CTSystem, *, dims: int | None = None) -> tuple[dict, dict]:
    """ASTRA's ``(proj_geom, vol_geom)`` of a leap :class:`~leap.system.CTSystem`.

    The standard type where the geometry has one (``parallel``/``parallel3d``: centred
    detector; ``fanflat``/``cone``: also no tau, and for cone no tilt, helix or flying
    focal spot), else the exact ``_vec`` type (per-view vectors: ``parallel_vec``,
    ``fanflat_vec``, ``parallel3d_vec``, ``cone_vec``). ``dims``: 2 or 3 to choose 2-D or
    3-D ASTRA types; None: 2-D for one-row parallel and fan beams (and one-row modular
    beams lying in the plane of the volume's only slice), 3-D otherwise. Angles in
    radians; lengths in leap's mm.

    Raises ValueError for what ASTRA cannot express: curved detectors, cone-parallel
    beams, fan beams with more than one row (or asked for in 3-D), cone and 3-D modular
    beams asked for in 2-D, and a 2-D problem whose detector row misses the volume's
    only slice.
    """
    if not isinstance(system, CTSystem):
        raise TypeError(f"to_astra takes a leap CTSystem, got {type(system).__name__}")
    g, vol = system.geometry, system.volume
    d = g.detector
    if isinstance(g, ConeParallelBeam):
        raise ValueError("ASTRA has no cone-parallel (rebinned) geometry")
    if d.curved:
        raise ValueError(f"ASTRA has no form for a curved-detector {type(g).__name__} "
                         "(its cyl_cone_vec cylinder is not centred on the source)")
    if dims not in (None, 2, 3):
        raise ValueError(f"dims must be None, 2 or 3, got {dims!r}")
    if isinstance(g, FanBeam) and d.num_rows != 1:
        raise ValueError(f"ASTRA's fan beam (fanflat) is 2-D: this FanBeam has {d.num_rows} "
                         "detector rows; pass one row at a time (geometry.cropped)")
    planar = isinstance(g, ModularBeam) and vol.num_z == 1 and _is_planar(g, vol.offset_z)
    if dims is None:
        two_d = vol.num_z == 1 and d.num_rows == 1 and (isinstance(g, (ParallelBeam, FanBeam))
                                                         or planar)
    else:
        two_d = dims == 2
    if two_d:
        if isinstance(g, ConeBeam) or (isinstance(g, ModularBeam) and not planar):
            raise ValueError(f"a {type(g).__name__} has no 2-D ASTRA form (a one-row modular "
                             "beam lying in the plane of the volume's one slice has)")
        if isinstance(g, (ParallelBeam, FanBeam)):
            if d.num_rows != 1 or vol.num_z != 1:
                raise ValueError("a 2-D ASTRA geometry has one detector row and one slice; "
                                 f"this system has {d.num_rows} rows and {vol.num_z} slices")
            z = -d.center_row * d.pixel_height
            if abs(z - vol.offset_z) > 0.5 * vol.voxel_height:
                raise ValueError(f"the detector row (z = {z:g} mm) misses the volume's only "
                                 f"slice (z = {vol.offset_z:g} ± {0.5 * vol.voxel_height:g} mm)")
    elif isinstance(g, FanBeam):
        raise ValueError("ASTRA's fan beam (fanflat) is 2-D only (dims=2)")
    vol_geom = volume_to_astra(vol, two_d=two_d)

    if isinstance(g, ParallelBeam):
        if d.is_centered:
            if two_d:
                pg = {"type": "parallel", "DetectorWidth": d.pixel_width,
                      "DetectorCount": d.num_cols, "ProjectionAngles": np.array(g.angles)}
            else:
                pg = {"type": "parallel3d", "DetectorSpacingX": d.pixel_width,
                      "DetectorSpacingY": d.pixel_height, "DetectorRowCount": d.num_rows,
                      "DetectorColCount": d.num_cols, "ProjectionAngles": np.array(g.angles)}
            return pg, vol_geom
        rays, centers, u, v = parallel_vectors(g)
        if two_d:
            c = centers.copy()
            c[:, 2] = 0.0
            vec = np.hstack([rays[:, :2], c[:, :2], u[:, :2]])
            return {"type": "parallel_vec", "DetectorCount": d.num_cols, "Vectors": vec}, vol_geom
        return ({"type": "parallel3d_vec", "DetectorRowCount": d.num_rows,
                 "DetectorColCount": d.num_cols, "Vectors": np.hstack([rays, centers, u, v])},
                vol_geom)

    if isinstance(g, FanBeam):
        if d.is_centered and g.tau == 0.0:
            return ({"type": "fanflat", "DetectorWidth": d.pixel_width,
                     "DetectorCount": d.num_cols, "ProjectionAngles": np.array(g.angles),
                     "DistanceOriginSource": g.sod, "DistanceOriginDetector": g.sdd - g.sod},
                    vol_geom)
        cone = ConeBeam(detector=d, angles=g.angles, sod=g.sod, sdd=g.sdd, tau=g.tau)
        src, ctr, u, _ = modular_vectors(cone.to_modular())
        vec = np.hstack([src[:, :2], ctr[:, :2], u[:, :2]])
        return {"type": "fanflat_vec", "DetectorCount": d.num_cols, "Vectors": vec}, vol_geom

    if isinstance(g, ConeBeam) and d.is_centered and g.tau == 0.0 and g.tilt == 0.0 \
            and not g.is_helical and g.source_shifts is None:
        return ({"type": "cone", "DetectorSpacingX": d.pixel_width,
                 "DetectorSpacingY": d.pixel_height, "DetectorRowCount": d.num_rows,
                 "DetectorColCount": d.num_cols, "ProjectionAngles": np.array(g.angles),
                 "DistanceOriginSource": g.sod, "DistanceOriginDetector": g.sdd - g.sod},
                vol_geom)
    m = g.to_modular()
    src, ctr, u, v = modular_vectors(m)
    if two_d:
        vec = np.hstack([src[:, :2], ctr[:, :2], u[:, :2]])
        return {"type": "fanflat_vec", "DetectorCount": d.num_cols, "Vectors": vec}, vol_geom
    return ({"type": "cone_vec", "DetectorRowCount": d.num_rows, "DetectorColCount": d.num_cols,
             "Vectors": np.hstack([src, ctr, u, v])}, vol_geom)


# ---------------------------------------------------------------------------- arrays
def _num_views(proj_geom) -> int:
    if "Vectors" in proj_geom:
        return int(np.shape(proj_geom["Vectors"])[0])
    return int(np.size(_key(proj_geom, "ProjectionAngles")))


def _layout(geom: dict):
    """('proj'|'vol', two_d, ASTRA shape)."""
    if not isinstance(geom, dict):
        raise TypeError(f"geom must be an ASTRA proj_geom or vol_geom dict, got "
                        f"{type(geom).__name__}")
    if "type" in geom:
        t = _type(geom)
        n = _num_views(geom)
        if t in TYPES_2D:
            return "proj", True, (n, _count(geom, "DetectorCount"))
        return "proj", False, (_count(geom, "DetectorRowCount"), n,
                               _count(geom, "DetectorColCount"))
    ny = _count(geom, "GridRowCount", "vol_geom")
    nx = _count(geom, "GridColCount", "vol_geom")
    if "GridSliceCount" in geom:
        return "vol", False, (_count(geom, "GridSliceCount", "vol_geom"), ny, nx)
    return "vol", True, (ny, nx)


def from_astra_data(array, geom: dict) -> np.ndarray:
    """An ASTRA array in leap's layout (a new float32 C-contiguous array).

    ``geom`` is the array's ASTRA geometry: a proj_geom for projection data (3-D
    ``(det_rows, angles, det_cols)`` → ``(angles, det_rows, det_cols)``; 2-D
    ``(angles, det_cols)`` → ``(angles, 1, det_cols)``) or a vol_geom for a volume (3-D
    ``(slices, rows, cols)`` unchanged; 2-D ``(rows, cols)`` → ``(1, rows, cols)`` with the
    rows reversed, since ASTRA's 2-D row 0 is at the largest y and leap's at the
    smallest).
    """
    kind, two_d, shape = _layout(geom)
    a = np.asarray(array)
    if a.shape != shape:
        what = {("proj", True): "(angles, det_cols)",
                ("proj", False): "(det_rows, angles, det_cols)",
                ("vol", True): "(rows, cols)", ("vol", False): "(slices, rows, cols)"}[kind, two_d]
        raise ValueError(f"the ASTRA {'projection data' if kind == 'proj' else 'volume'} must "
                         f"have shape {what} = {shape} for this geometry, got {a.shape}")
    if kind == "proj":
        out = a[:, None, :] if two_d else a.transpose(1, 0, 2)
    else:
        out = a[None, ::-1, :] if two_d else a
    return np.ascontiguousarray(out, dtype=np.float32)


def to_astra_data(array, geom: dict) -> np.ndarray:
    """A leap array (projections ``(angles, rows, cols)`` or volume ``(num_z, num_y,
    num_x)``) in ASTRA's layout for ``geom`` (a proj_geom or vol_geom): the inverse of
    :func:`from_astra_data`, a new float32 C-contiguous array."""
    kind, two_d, shape = _layout(geom)
    a = np.asarray(array)
    if kind == "proj":
        leap_shape = (shape[0], 1, shape[1]) if two_d else (shape[1], shape[0], shape[2])
    else:
        leap_shape = (1,) + shape if two_d else shape
    if a.shape != leap_shape:
        what = "(angles, rows, cols)" if kind == "proj" else "(num_z, num_y, num_x)"
        raise ValueError(f"the leap {'projections' if kind == 'proj' else 'volume'} must have "
                         f"shape {what} = {leap_shape} for this ASTRA geometry, got {a.shape}")
    if kind == "proj":
        out = a[:, 0, :] if two_d else a.transpose(1, 0, 2)
    else:
        out = a[0, ::-1, :] if two_d else a
    return np.ascontiguousarray(out, dtype=np.float32)
