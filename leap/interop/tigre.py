"""TIGRE geometries to and from leap.

TIGRE (CERN/TIGRE) keeps a scan in a ``tigre.geometry`` object and an angle array. These
functions read the object's fields by name (attributes, or keys of a dict), so a plain
object or dict works and TIGRE itself is never imported; :func:`to_tigre` gives a
``types.SimpleNamespace`` with the fields (``tg = tigre.geometry();
tg.__dict__.update(vars(geo))`` makes it TIGRE's own).

Convention chain
----------------
Facts from TIGRE's Python interface (``Python/tigre/utilities/geometry.py``: field
shapes, per-angle fields; ``cuda_interface/_types.pxd``: the Python arrays' axis order)
and its CUDA projectors (``Common/CUDA/Siddon_projection.cu::computeDeltas_Siddon``,
``rollPitchYaw``, ``eulerZYZ``, ``kernelPixelDetector``; ``Siddon_projection_parallel.cu``):

* Python field order is reversed from x-y-z: ``nVoxel``, ``dVoxel``, ``sVoxel``,
  ``offOrigin`` are (z, y, x); ``nDetector``, ``dDetector``, ``offDetector`` are
  (v, u) = (rows, cols); ``rotDetector`` is (about x, about y, about z), i.e.
  (yaw, pitch, roll). Lengths in mm, angles in radians.
* Cone mode, view i with Euler angles (α, θ, ψ) (a plain angle vector is α with
  θ = ψ = 0): before rotation the source is at ``(DSO, 0, 0)``; the detector's pixel
  grid is centred at the origin with column step ``(0, dU, 0)`` and row step
  ``(0, 0, dV)``, turned by ``R = Rz(roll)·Ry(pitch)·Rx(yaw)``, moved to
  ``(−(DSD − DSO), offU, offV)`` (the offsets are not turned). Everything is then turned
  by ``Rz(α)·Ry(θ)·Rz(ψ)`` and moved by ``COR·(−sin α, cos α, 0)``; the image's centre
  is at ``offOrigin`` (TIGRE moves everything else by −offOrigin). Projections are
  ``(angles, v, u)`` with row index v increasing along +z (the kernel's
  ``pixelV = nV − v − 1`` on a grid stepping −z) and column u along the column step.
* So at α = 0 the source is on +x and the columns run along +y. leap's view ψ has its
  source on ``(sin ψ, −cos ψ)`` and columns along ``(cos ψ, sin ψ)`` (LEAP_CONVENTIONS):
  TIGRE's α is leap's ψ = α + π/2, the columns in the same order, ``sod = DSO``,
  ``sdd = DSD``, ``tau = −COR``, ``center_col = (nU−1)/2 − offU/dU``,
  ``center_row = (nV−1)/2 − offV/dV``. A detector turned only about its normal (yaw) is
  leap's cone-beam ``tilt``; other rotations, Euler angles, per-view distances or
  offsets give a :class:`~leap.geometry.ModularBeam`. An image offset that moves only
  along z, linearly with α, is a helix (``helical_pitch``).
* Arrays need no conversion: TIGRE's projections ``(angles, v, u)`` and images
  ``(z, y, x)`` (voxel 0 at the −x, −y, −z corner) are leap's layouts.
* Parallel mode: rays along ``Rz(α)·(−1, 0, 0)``, the detector as in cone mode, so
  ``ψ = α + π/2`` and ``center_col = (nU−1)/2 − (offU + COR)/dU``. TIGRE's parallel
  CUDA code starts each ray at the *unshifted* pixel position on the source side, so a
  non-zero ``offDetector`` makes its rays oblique; leap follows the documented meaning
  (the detector shifted, rays along −x), which is also the physical one. Its code uses
  only the first Euler angle; θ, ψ ≠ 0 are refused here.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..geometry import ConeBeam, Detector, ModularBeam, ParallelBeam, Volume
from ..system import CTSystem
from ._vectors import RTOL, modular_from_vectors, parallel_from_vectors, same


# --------------------------------------------------------------------------- helpers
def _field(geo, name, default=None):
    if isinstance(geo, dict):
        value = geo.get(name, default)
    else:
        value = getattr(geo, name, default)
    if value is None:
        raise ValueError(f"the TIGRE geometry has no field {name!r}")
    return value


def _per_view(geo, name, n, width, default):
    """A field that TIGRE accepts once or per angle, as (n, width) float64."""
    a = np.array(_field(geo, name, default), dtype=np.float64)
    if width == 1:
        a = a.reshape(-1, 1) if a.ndim <= 1 else a
    if a.ndim == 1 and a.size == width:
        a = np.tile(a, (n, 1))
    elif a.shape == (1, width):
        a = np.tile(a, (n, 1))
    if a.shape != (n, width):
        raise ValueError(f"TIGRE field {name} must have {width} value(s) or one row per "
                         f"angle ({n}, {width}), got shape {np.shape(_field(geo, name))}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"TIGRE field {name} holds a value that is not finite")
    return a


def _pair_or_triple(geo, name, k, positive=False, integer=False):
    a = np.array(_field(geo, name), dtype=np.float64).ravel()
    if a.size != k or not np.all(np.isfinite(a)) or (positive and not np.all(a > 0)):
        kind = "finite positive" if positive else "finite"
        raise ValueError(f"TIGRE field {name} must hold {k} {kind} numbers, got "
                         f"{_field(geo, name)!r}")
    if integer and not np.all(a == np.round(a)):
        raise ValueError(f"TIGRE field {name} must hold whole numbers, got {a}")
    return a


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    r = np.zeros(np.shape(a) + (3, 3))
    r[..., 0, 0], r[..., 0, 1], r[..., 1, 0], r[..., 1, 1], r[..., 2, 2] = c, -s, s, c, 1.0
    return r


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    r = np.zeros(np.shape(a) + (3, 3))
    r[..., 0, 0], r[..., 0, 2], r[..., 2, 0], r[..., 2, 2], r[..., 1, 1] = c, s, -s, c, 1.0
    return r


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    r = np.zeros(np.shape(a) + (3, 3))
    r[..., 1, 1], r[..., 1, 2], r[..., 2, 1], r[..., 2, 2], r[..., 0, 0] = c, -s, s, c, 1.0
    return r


def _angles(angles, geo) -> np.ndarray:
    if angles is None:
        angles = _field(geo, "angles")
    a = np.array(angles, dtype=np.float64)
    if a.ndim == 1 or (a.ndim == 2 and a.shape[1] == 1):
        a = np.hstack([a.reshape(-1, 1), np.zeros((a.size, 2))])
    if a.ndim != 2 or a.shape[1] != 3 or a.shape[0] == 0:
        raise ValueError(f"TIGRE angles must be a vector (radians) or (N, 3) Euler angles "
                         f"(α, θ, ψ), got shape {np.shape(angles)}")
    if not np.all(np.isfinite(a)):
        raise ValueError("TIGRE angles hold a value that is not finite")
    return a


def tigre_vectors(geo, angles=None) -> dict:
    """Per-view vectors of a TIGRE geometry in TIGRE's world frame (image centre at
    ``offOrigin``), following the CUDA projectors' construction (module docstring):
    ``sources`` (cone) or ``rays`` (parallel), ``centers``, ``u``, ``v`` (n, 3), and
    ``offorigin`` (n, 3) as x, y, z."""
    eul = _angles(angles, geo)
    n = eul.shape[0]
    mode = str(_field(geo, "mode", "cone")).lower()
    if mode not in ("cone", "parallel"):
        raise ValueError(f"TIGRE mode must be 'cone' or 'parallel', got {mode!r}")
    nv, nu = _pair_or_triple(geo, "nDetector", 2, positive=True, integer=True)
    dv, du = _pair_or_triple(geo, "dDetector", 2, positive=True)
    dso = _per_view(geo, "DSO", n, 1, None)[:, 0]
    dsd = _per_view(geo, "DSD", n, 1, None)[:, 0]
    off_det = _per_view(geo, "offDetector", n, 2, (0.0, 0.0))          # (v, u)
    rot = _per_view(geo, "rotDetector", n, 3, (0.0, 0.0, 0.0))         # (yaw, pitch, roll)
    cor = _per_view(geo, "COR", n, 1, 0.0)[:, 0]
    off_org = _per_view(geo, "offOrigin", n, 3, (0.0, 0.0, 0.0))[:, ::-1]   # to x, y, z
    if mode == "cone" and not (np.all(dso > 0) and np.all(dsd > dso)):
        raise ValueError("TIGRE cone geometry needs 0 < DSO < DSD (the detector beyond the "
                         "origin)")
    alpha, theta, psi = eul.T
    rpy = _rz(rot[:, 2]) @ _ry(rot[:, 1]) @ _rx(rot[:, 0])
    euler = _rz(alpha) @ _ry(theta) @ _rz(psi)
    if mode == "parallel" and (np.any(theta != 0) or np.any(psi != 0)):
        raise ValueError("TIGRE's parallel mode uses only the first Euler angle; θ and ψ "
                         "must be 0")
    shift = cor[:, None] * np.stack([-np.sin(alpha), np.cos(alpha), np.zeros(n)], axis=1)
    local_c = np.stack([-(dsd - dso), off_det[:, 1], off_det[:, 0]], axis=1)
    out = dict(centers=np.einsum("nij,nj->ni", euler, local_c) + shift,
               u=np.einsum("nij,nj->ni", euler @ rpy, np.tile([0.0, du, 0.0], (n, 1))),
               v=np.einsum("nij,nj->ni", euler @ rpy, np.tile([0.0, 0.0, dv], (n, 1))),
               offorigin=off_org, shape=(int(nv), int(nu)), mode=mode)
    if mode == "cone":
        out["sources"] = np.einsum("nij,nj->ni", euler,
                                   np.stack([dso, np.zeros(n), np.zeros(n)], 1)) + shift
    else:
        out["rays"] = np.einsum("nij,j->ni", euler, [-1.0, 0.0, 0.0])
    return out


def _volume(geo, offset_xyz) -> Volume:
    nz, ny, nx = _pair_or_triple(geo, "nVoxel", 3, positive=True, integer=True)
    has = (lambda k: (geo.get(k) if isinstance(geo, dict) else getattr(geo, k, None))
           is not None)
    n = np.array([nz, ny, nx])
    if not has("dVoxel"):
        d = _pair_or_triple(geo, "sVoxel", 3, positive=True) / n
    else:
        d = _pair_or_triple(geo, "dVoxel", 3, positive=True)
        if has("sVoxel"):             # TIGRE's check_geo asks nVoxel·dVoxel = sVoxel
            s = _pair_or_triple(geo, "sVoxel", 3, positive=True)
            if np.max(np.abs(n * d - s)) > 1e-6 * np.max(s):
                raise ValueError(f"TIGRE nVoxel·dVoxel ({n * d}) is not sVoxel ({s})")
    dz, dy, dx = d
    if abs(dx - dy) > 1e-6 * max(dx, dy):
        raise ValueError(f"TIGRE dVoxel has x size {dx:g} and y size {dy:g}; leap's voxels "
                         "are square in x-y (voxel_width)")
    return Volume(num_x=int(nx), num_y=int(ny), num_z=int(nz), voxel_width=float(dx),
                  voxel_height=float(dz), offset_x=float(offset_xyz[0]),
                  offset_y=float(offset_xyz[1]), offset_z=float(offset_xyz[2]))


# ---------------------------------------------------------------------------- in
def from_tigre(geo, angles=None, *, approximate_parallel: bool = False) -> CTSystem:
    """The :class:`~leap.system.CTSystem` of a TIGRE geometry and its angles.

    Parameters
    ----------
    geo : a ``tigre.geometry`` (or any object or dict with its fields): ``mode``
        ('cone' or 'parallel'), ``DSD``, ``DSO``, ``nDetector``, ``dDetector``,
        ``nVoxel``, ``dVoxel`` (or ``sVoxel``), and optionally ``offOrigin``,
        ``offDetector``, ``rotDetector``, ``COR`` (each fixed or per angle).
    angles : (N,) radians, or (N, 3) Euler angles (α, θ, ψ); None: ``geo.angles``.
    approximate_parallel : parallel-mode detectors turned out of the leap parallel
        beam's form (pitch or yaw) as a modular beam with distant sources (see
        :func:`leap.interop.astra.from_astra`); default ValueError.

    Returns a CTSystem (see the module docstring for the mapping): a ConeBeam (tilted or
    helical where TIGRE's fields say so) or ParallelBeam where the fields fit one, a
    ModularBeam otherwise; the volume from ``nVoxel``/``dVoxel`` centred at
    ``offOrigin``; no field-of-view mask (TIGRE masks none). TIGRE's arrays are leap's.
    """
    vec = tigre_vectors(geo, angles)
    eul = _angles(angles, geo)
    n = eul.shape[0]
    nr, nc = vec["shape"]
    org = vec["offorigin"]
    ref = org[0].copy()
    helical = None
    if not same(org[:, 2], 1.0):
        # a helix: only z moves, linearly with α (a least-squares line, then checked)
        a = eul[:, 0]
        if (same(org[:, 0], 1.0) and same(org[:, 1], 1.0) and np.all(eul[:, 1:] == 0)
                and n > 2 and np.ptp(a) > 0):
            slope = float(np.sum((a - a.mean()) * (org[:, 2] - org[:, 2].mean()))
                          / np.sum((a - a.mean()) ** 2))
            line = org[:, 2].mean() + slope * (a - a.mean())
            if np.max(np.abs(line - org[:, 2])) <= RTOL * max(1.0, np.max(np.abs(org[:, 2]))):
                helical = -slope
                # the volume where the source is at z = 0: ψ_mid, the mean of the first
                # and last angle (leap's ConeBeam default)
                ref[2] = org[:, 2].mean() + slope * (0.5 * (a[0] + a[-1]) - a.mean())
        if helical is None:
            ref = org.mean(axis=0)
    elif not (same(org[:, 0], 1.0) and same(org[:, 1], 1.0)):
        ref = org.mean(axis=0)
    volume = _volume(geo, ref)
    rel = org - ref                       # the image's shift per view; move the rest back
    centers, u, v = vec["centers"] - rel, vec["u"], vec["v"]

    if vec["mode"] == "parallel":
        if np.any(np.abs(rel) > RTOL * max(1.0, float(np.max(np.abs(org))))):
            raise ValueError("a TIGRE parallel geometry with an offOrigin that changes "
                             "from view to view has no leap form")
        geometry = parallel_from_vectors(vec["rays"], centers, u, v, nr, nc)
        if geometry is None:
            if not approximate_parallel:
                raise ValueError("this TIGRE parallel geometry's detector is turned out of "
                                 "leap's parallel-beam form (rotDetector pitch or yaw); "
                                 "from_tigre(..., approximate_parallel=True) models it as a "
                                 "modular beam with distant sources")
            from .astra import _far_modular
            geometry = _far_modular(vec["rays"], centers, u, v, nr, nc, volume)
        return CTSystem(geometry=geometry, volume=volume,
                        fov_radius=1.000001 * volume.max_radius())

    sources = vec["sources"] - rel
    geometry = _standard_cone(geo, eul, nr, nc, helical) \
        if (helical is not None or not np.any(np.abs(rel) > 0)) else None
    if geometry is None:
        geometry = modular_from_vectors(sources, centers, u, v, nr, nc)
    return CTSystem(geometry=geometry, volume=volume, fov_radius=1.000001 * volume.max_radius())


def _standard_cone(geo, eul, nr, nc, helical):
    """The ConeBeam of a TIGRE cone geometry with fixed distances, offsets and COR,
    plain angles and a detector turned at most about its normal; None otherwise."""
    n = eul.shape[0]
    if np.any(eul[:, 1:] != 0):
        return None
    dso = _per_view(geo, "DSO", n, 1, None)[:, 0]
    dsd = _per_view(geo, "DSD", n, 1, None)[:, 0]
    off = _per_view(geo, "offDetector", n, 2, (0.0, 0.0))
    rot = _per_view(geo, "rotDetector", n, 3, (0.0, 0.0, 0.0))
    cor = _per_view(geo, "COR", n, 1, 0.0)[:, 0]
    scale = float(np.max(dsd))
    if not all(same(x, scale) for x in (dso, dsd, cor, off[:, 0], off[:, 1])):
        return None
    if not (same(rot[:, 0], 1.0) and np.all(rot[:, 1:] == 0)):
        return None
    tilt = float(rot[0, 0])
    if abs(tilt) > ConeBeam.MAX_TILT:
        return None
    dv, du = _pair_or_triple(geo, "dDetector", 2, positive=True)
    # TIGRE adds the offsets along the unturned axes, leap along the turned ones
    c, s = math.cos(tilt), math.sin(tilt)
    h = c * off[0, 1] + s * off[0, 0]
    w = -s * off[0, 1] + c * off[0, 0]
    det = Detector(num_rows=nr, num_cols=nc, pixel_height=dv, pixel_width=du,
                   center_row=0.5 * (nr - 1) - w / dv, center_col=0.5 * (nc - 1) - h / du)
    angles = eul[:, 0] + 0.5 * math.pi
    return ConeBeam(detector=det, angles=angles, sod=float(dso[0]), sdd=float(dsd[0]),
                    tau=-float(cor[0]), tilt=tilt, helical_pitch=helical or 0.0)


# --------------------------------------------------------------------------- out
def _euler_zyz(e):
    """(α, θ, ψ) with ``Rz(α)·Ry(θ)·Rz(ψ) = e`` (ψ = 0 where θ = 0)."""
    theta = math.acos(max(-1.0, min(1.0, e[2, 2])))
    if abs(math.sin(theta)) < 1e-12:
        return math.atan2(e[1, 0], e[0, 0]), theta, 0.0
    return math.atan2(e[1, 2], e[0, 2]), theta, math.atan2(e[2, 1], -e[2, 0])


def _rpy(r):
    """(yaw, pitch, roll) with ``Rz(roll)·Ry(pitch)·Rx(yaw) = r``."""
    pitch = -math.asin(max(-1.0, min(1.0, r[2, 0])))
    return math.atan2(r[2, 1], r[2, 2]), pitch, math.atan2(r[1, 0], r[0, 0])


def to_tigre(system: CTSystem) -> tuple[SimpleNamespace, np.ndarray]:
    """TIGRE's ``(geo, angles)`` of a leap :class:`~leap.system.CTSystem`.

    Parallel beams and circular or helical flat cone beams (tau, detector offsets and
    tilt included) use TIGRE's own fields (``angles = ψ − π/2``, ``COR = −tau``,
    ``rotDetector`` yaw = tilt, a helix as a per-angle ``offOrigin`` z); other modular
    beams get per-view Euler angles ``(N, 3)``, distances, offsets and ``rotDetector``
    (the source on each view's rotated x axis; ``offOrigin`` the volume's centre).
    Curved detectors, cone-parallel and fan beams (TIGRE has no per-row fan) raise
    ValueError. Arrays need no conversion (module docstring).
    """
    if not isinstance(system, CTSystem):
        raise TypeError(f"to_tigre takes a leap CTSystem, got {type(system).__name__}")
    g, vol = system.geometry, system.volume
    d = g.detector
    if d.curved:
        raise ValueError(f"TIGRE has no curved-detector form for this {type(g).__name__} "
                         "(its cone mode has a flat detector)")
    if not isinstance(g, (ParallelBeam, ConeBeam, ModularBeam)):
        raise ValueError(f"TIGRE has no form for a {type(g).__name__} (cone and parallel "
                         "modes only)")
    n = g.num_angles
    geo = SimpleNamespace(
        nVoxel=np.array([vol.num_z, vol.num_y, vol.num_x]),
        dVoxel=np.array([vol.voxel_height, vol.voxel_width, vol.voxel_width]),
        nDetector=np.array([d.num_rows, d.num_cols]),
        dDetector=np.array([d.pixel_height, d.pixel_width]), accuracy=0.5)
    geo.sVoxel = geo.nVoxel * geo.dVoxel
    geo.sDetector = geo.nDetector * geo.dDetector
    origin = np.array([vol.offset_z, vol.offset_y, vol.offset_x])
    if isinstance(g, ParallelBeam):
        geo.mode = "parallel"
        geo.DSO, geo.DSD = 2.0 * vol.max_radius(), 4.0 * vol.max_radius()
        geo.offOrigin = origin
        geo.offDetector = np.array([(0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height,
                                    (0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width])
        geo.rotDetector, geo.COR = np.zeros(3), 0.0
        return geo, np.array(g.angles) - 0.5 * math.pi
    geo.mode = "cone"
    if isinstance(g, ConeBeam) and g.source_shifts is None:
        t = g.tilt
        h = (0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width
        w = (0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height
        geo.DSO, geo.DSD, geo.COR = g.sod, g.sdd, -g.tau
        geo.offDetector = np.array([math.sin(t) * h + math.cos(t) * w,
                                    math.cos(t) * h - math.sin(t) * w])
        geo.rotDetector = np.array([t, 0.0, 0.0])
        if g.is_helical:
            org = np.tile(origin, (n, 1))
            org[:, 0] -= g.source_z()
            geo.offOrigin = org
        else:
            geo.offOrigin = origin
        return geo, np.array(g.angles) - 0.5 * math.pi
    m = g.to_modular()
    src, ctr = m.source_positions, m.module_centers      # TIGRE's world is leap's
    if np.max(np.abs(np.sum(m.row_vectors * m.col_vectors, axis=1))) > 1e-9:
        raise ValueError("TIGRE's detectors are rectangular: this modular beam's row and "
                         "column vectors are not orthogonal")
    eul, dso, dsd, off, rot = (np.zeros((n, 3)), np.zeros(n), np.zeros(n), np.zeros((n, 2)),
                               np.zeros((n, 3)))
    zhat = np.array([0.0, 0.0, 1.0])
    for i in range(n):
        dso[i] = np.linalg.norm(src[i])
        if dso[i] == 0:
            raise ValueError(f"view {i}: the source sits at the origin; TIGRE needs it at "
                             "a distance DSO")
        e1 = src[i] / dso[i]
        e3 = zhat - (zhat @ e1) * e1
        if np.linalg.norm(e3) < 1e-9:                      # source on the z axis
            e3 = np.array([1.0, 0.0, 0.0]) - e1[0] * e1
        e3 /= np.linalg.norm(e3)
        e = np.stack([e1, np.cross(e3, e1), e3], axis=1)
        eul[i] = _euler_zyz(e)
        local = e.T @ ctr[i]
        dsd[i] = dso[i] - local[0]
        off[i] = local[2], local[1]
        u, v = e.T @ m.col_vectors[i], e.T @ m.row_vectors[i]
        rot[i] = _rpy(np.stack([np.cross(u, v), u, v], axis=1))
    if np.any(dsd <= dso):
        raise ValueError("TIGRE needs each detector beyond the origin seen from its source "
                         "(DSD > DSO)")
    geo.DSO, geo.DSD, geo.offDetector, geo.rotDetector = dso, dsd, off, rot
    geo.COR, geo.offOrigin = np.zeros(n), origin
    return geo, eul
