"""Detector-pixel rays of a geometry: where each measured line integral runs.

Used for analytic simulation (``rayTrace``) and for tests of the projectors against
exact line integrals.
"""
from __future__ import annotations

import numpy as np

from .axial import column_axes
from .cone import ConeBeam
from .coneparallel import ConeParallelBeam
from .fan import FanBeam
from .modular import ModularBeam
from .parallel import ParallelBeam


def _sub_offsets(oversampling: int, spacing=None) -> np.ndarray:
    n = int(oversampling)
    if n < 1:
        raise ValueError(f"oversampling must be a positive integer, got {oversampling}")
    step = 1.0 / n if spacing is None else float(spacing)
    if not 0.0 < step <= 1.0:
        raise ValueError(f"sub-ray spacing must be in (0, 1] pixel, got {spacing}")
    return (np.arange(n) - 0.5 * (n - 1)) * step


def pixel_rays(geometry, oversampling: int = 1, spacing=None):
    """Origins and unit directions of the rays through every detector pixel.

    Parameters
    ----------
    geometry : ParallelBeam, FanBeam, ConeBeam, ConeParallelBeam or ModularBeam
    oversampling : int
        Rays per pixel along each detector axis (``oversampling²`` per pixel, placed
        at the centres of equal sub-pixels).
    spacing : float, optional
        Distance between neighbouring sub-rays, in pixels, instead of the sub-pixel
        centres' ``1/oversampling``; LEAP's ``rayTrace`` uses ``1/(oversampling + 1)``.

    Returns
    -------
    origins, directions : (num_angles, num_rows, num_cols, oversampling², 3) float64
        A point on each ray (the source for divergent beams), mm, and the unit
        direction from source to detector.
    """
    org, vec, reach = _ray_vectors(geometry, oversampling, spacing)
    if reach is None:        # parallel beams: the directions are unit vectors already
        return org, vec
    return _normalised(org, vec)


def pixel_positions(geometry, parallel_distance: float = 0.0) -> np.ndarray:
    """Centres of the detector pixels in space, (num_angles, num_rows, num_cols, 3), mm.

    Flat detectors (modular modules included): the pixel centres on the detector plane;
    curved detectors: on the cylinder of radius sdd about the source (about the focal
    centre with a flying focal spot, :attr:`ConeBeam.source_shifts`). Fan beams: each
    row's pixels at that row's height. Cone-parallel beams: each column's pixels at depth
    sdd from that column's source along the view's central direction. Parallel beams have
    no detector distance: their pixels are placed ``parallel_distance`` mm along the rays
    from the plane through the z axis (0: on that plane).
    """
    org, vec, reach = _ray_vectors(geometry, 1, None)
    if reach is None:
        reach = float(parallel_distance)
    return org[..., 0, :] + reach * vec[..., 0, :]


def _ray_vectors(geometry, oversampling: int = 1, spacing=None):
    """Ray origins and un-normalised directions of every (sub-)pixel, and the multiple of
    the direction that ends on the detector: ``(origins, vectors, reach)``, the arrays
    (num_angles, num_rows, num_cols, oversampling², 3). Parallel beams give unit
    directions (fresh arrays) and ``reach = None``: they have no detector distance."""
    off = _sub_offsets(oversampling, spacing)
    du, dv = np.meshgrid(off, off, indexing="ij")
    du, dv = du.ravel(), dv.ravel()                       # (m,)
    if isinstance(geometry, ConeBeam) and (
            geometry.tilt != 0.0
            or (geometry.source_shifts is not None and not geometry.detector.curved)):
        geometry = geometry.to_modular()
    d = geometry.detector
    cols = np.arange(d.num_cols)[None, :, None] + du[None, None, :]   # (1, nc, m)
    rows = np.arange(d.num_rows)[:, None, None] + dv[None, None, :]   # (nr, 1, m)
    if isinstance(geometry, ModularBeam):
        u = (cols - 0.5 * (d.num_cols - 1)) * d.pixel_width
        v = (rows - 0.5 * (d.num_rows - 1)) * d.pixel_height
        pix = (geometry.module_centers[:, None, None, None, :]
               + u[None, ..., None] * geometry.col_vectors[:, None, None, None, :]
               + v[None, ..., None] * geometry.row_vectors[:, None, None, None, :])
        src = np.broadcast_to(geometry.source_positions[:, None, None, None, :], pix.shape)
        return src, pix - src, 1.0
    s = (cols - d.center_col) * d.pixel_width                           # (1, nc, m)
    t = (rows - d.center_row) * d.pixel_height                          # (nr, 1, m)
    s, t = np.broadcast_arrays(s, t)                                    # (nr, nc, m)
    c = column_axes(geometry.angles)                                    # θ⊥ (n, 2)
    perp = np.concatenate([c, np.zeros((len(c), 1))], axis=1)[:, None, None, None, :]
    ray = np.stack([-c[:, 1], c[:, 0], np.zeros(len(c))], axis=1)[:, None, None, None, :]
    zhat = np.array([0.0, 0.0, 1.0])
    shape = (geometry.num_angles,) + s.shape + (3,)
    if isinstance(geometry, ParallelBeam):
        org = s[None, ..., None] * perp + t[None, ..., None] * zhat
        return np.broadcast_to(org, shape).copy(), np.broadcast_to(ray, shape).copy(), None
    if isinstance(geometry, ConeParallelBeam):
        # Source of the ray at lateral s: on the orbit, √(sod² − s²) along θ; the ray
        # runs along −θ + (t/sdd)·ẑ (LEAP's set_coneparallel formula), unit length in-plane.
        theta = -ray
        R = geometry.sod
        z_s = (geometry.source_z()[:, None, None, None]
               + geometry.helical_pitch * np.arcsin(s / R)[None])
        org = (s[None, ..., None] * perp + np.sqrt(R * R - s * s)[None, ..., None] * theta
               + z_s[..., None] * zhat)
        dirs = ray + (t / geometry.sdd)[None, ..., None] * zhat
        return np.broadcast_to(org, shape), np.broadcast_to(dirs, shape), geometry.sdd
    src2 = geometry.source_xy()
    src = np.zeros((geometry.num_angles, 3))
    src[:, :2] = src2
    if isinstance(geometry, ConeBeam):
        src[:, 2] = geometry.source_z()
    src = src[:, None, None, None, :]
    if d.curved:
        alpha = (cols - d.center_col) * np.arctan(d.pixel_width / geometry.sdd)
        alpha = np.broadcast_to(alpha, s.shape)[None, ..., None]
        in_plane = geometry.sdd * (np.cos(alpha) * ray + np.sin(alpha) * perp)
    else:
        in_plane = geometry.sdd * ray + s[None, ..., None] * perp
    if isinstance(geometry, FanBeam):
        # Each row is a fan in the plane z = t: source and pixel at the row's height.
        org = np.broadcast_to(src + t[None, ..., None] * zhat, shape)
        return org, np.broadcast_to(in_plane, shape), 1.0
    to_pixel = in_plane + t[None, ..., None] * zhat
    if isinstance(geometry, ConeBeam) and geometry.source_shifts is not None:
        # Flying focal spot: the detector stays about the focal centre (src), the rays
        # leave the shifted source.
        shifted = geometry.xray_sources()[:, None, None, None, :]
        return np.broadcast_to(shifted, shape), np.broadcast_to(src + to_pixel - shifted,
                                                                shape), 1.0
    org = np.broadcast_to(src, shape)
    return org, np.broadcast_to(to_pixel, shape), 1.0


def _normalised(origins, directions):
    directions = np.array(directions, dtype=np.float64)
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    return np.array(origins, dtype=np.float64), directions
