"""The circular ("axial") family that the fast kernels see.

Parallel, fan and cone beams (flat or curved detector, tau, helical) all rotate about
the z axis with detector rows along z. Per view they reduce to a few in-plane vectors;
``AxialViews`` is that reduced form, built by each geometry's ``axial_views()``.

Geometry of one view (in-plane, mm): the column axis is the unit vector ``col_dir``;
rays run along ``ray_dir = (-col_dir[1], col_dir[0])`` (from source to detector). For
divergent beams the source sits at ``source_xy`` (at height ``source_z``) and a point
p has ``depth = (p - source)·ray_dir`` and ``lateral = (p - source)·col_dir``; it
projects to detector column coordinate ``sdd * lateral / depth`` (flat) or to the
angle ``atan(lateral / depth)`` (curved), and z maps to the row coordinate
``(z - source_z) * sdd / D`` with D = depth (flat) or the in-plane distance (curved).
Parallel beams use ``lateral = p·col_dir`` and rows ``t = z``; fan beams keep rows
``t = z`` (each slice is its own fan). Cone-parallel beams (rebinned cone beams) use
the parallel column ``lateral = p·col_dir`` and the cone row mapping
``(z − z_s)·sdd / D`` with ``D = √(sod² − lateral²) + p·ray_dir``.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

# Column models.
PARALLEL, FLAT, CURVED, CONE_PARALLEL = 0, 1, 2, 3


class AxialViews(NamedTuple):
    """Per-view arrays (float64, C-contiguous) and scalars for the axial kernels.

    col_dir : (num_angles, 2) in-plane unit column axis.
    source_xy : (num_angles, 2) in-plane source position, mm (zeros for parallel).
    source_z : (num_angles,) source height, mm (helical; zeros otherwise).
    sdd : float, source-to-detector distance, mm (unused for parallel).
    column_model : PARALLEL, FLAT, CURVED or CONE_PARALLEL.
    magnify_z : bool, whether z is magnified onto the rows (cone) or not (parallel, fan).
    fov_radius : float, voxels with x² + y² > fov_radius² are skipped, mm.
    sod : float, cone-parallel only: orbit radius, mm (0 otherwise).
    helical_pitch : float, cone-parallel only: mm/rad; a ray of lateral coordinate s
        has its source at ``source_z + helical_pitch·asin(s/sod)`` (0 otherwise).
    focus : (num_angles, 3) or None, curved cone beams with a flying focal spot only:
        the source's offset from the detector cylinder's axis (the focal centre) along
        ``col_dir``, along ``ray_dir`` and along z, mm. The column of a point is then the
        angle, seen from the focal centre, of where the ray from the source through it
        meets the cylinder of radius sdd, and its row the height of that point above the
        focal centre (:func:`leap.kernels.footprints.axial_column_footprint`).
    """

    col_dir: np.ndarray
    source_xy: np.ndarray
    source_z: np.ndarray
    sdd: float
    column_model: int
    magnify_z: bool
    fov_radius: float
    sod: float = 0.0
    helical_pitch: float = 0.0
    focus: np.ndarray | None = None


class VerticalModules(NamedTuple):
    """A modular beam whose modules all stand vertically, as flat cone-beam views.

    A module is vertical when its rows run along +z and its columns horizontally,
    facing the source (``ModularBeam.vertical_modules``). Then the modular footprint
    model separates like the cone beam's: a voxel column's column footprint is the same
    for every z, and its voxels' row intervals are ``[A + kB, A + (k+1)B]``. Each view
    is a flat cone-beam view with its own distance and detector centre.

    Attributes
    ----------
    views : AxialViews
        FLAT columns, magnified rows, no field-of-view mask (``fov_radius`` inf); its
        scalar ``sdd`` is unused.
    sdd : (num_angles,) float64
        Source-to-module distance, mm.
    center_col, center_row : (num_angles,) float64
        Fractional pixel indices of the foot of the source's perpendicular on the module.
    """

    views: AxialViews
    sdd: np.ndarray
    center_col: np.ndarray
    center_row: np.ndarray


def column_axes(angles: np.ndarray) -> np.ndarray:
    """In-plane column unit vectors θ⊥ = (cos ψ, sin ψ), shape (n, 2), for angles ψ in radians.

    LEAP's convention: at ψ = 0 rays travel along +y and columns run along +x;
    rotation is counter-clockwise seen from +z.
    """
    return np.ascontiguousarray(np.stack([np.cos(angles), np.sin(angles)], axis=1))
