"""What a drawing of a CT system shows, as 3-D polylines in mm (LEAP's ``sketch_system``).

:func:`sketch` computes the lines; plotting them is up to the caller (the LEAP facade
draws them with matplotlib).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .parallel import ParallelBeam
from .rays import pixel_positions, pixel_rays
from .volume import Volume

#: Corner pixels (row, column indices) of a detector outline, closed.
_OUTLINE = ([0, 0, -1, -1, 0], [0, -1, -1, 0, 0])


class Sketch(NamedTuple):
    """Polylines of a sketch, mm.

    detectors : tuple of (5, 3) arrays, the closed outline through the corner pixel
        centres of each drawn view's detector.
    sources : (num_views, 3) array, the source of each drawn view (the origin of the
        ray of pixel (0, 0)); None for parallel beams.
    source_path : (num_angles, 3) array, the source of every view; None for parallel
        beams.
    volume_edges : tuple of twelve (2, 3) arrays, the edges of the volume's box (outer
        voxel faces); empty without a volume.
    """

    detectors: tuple
    sources: np.ndarray | None
    source_path: np.ndarray | None
    volume_edges: tuple


def volume_edges(volume: Volume) -> tuple:
    """The twelve edges (2, 3) of the box bounded by the outer voxel faces, mm."""
    v = volume
    lo = np.array([v.x0, v.y0, v.z0]) - 0.5 * np.array([v.voxel_width] * 2 + [v.voxel_height])
    hi = lo + np.array([v.num_x * v.voxel_width, v.num_y * v.voxel_width,
                        v.num_z * v.voxel_height])
    edges = []
    for i in range(8):
        p = np.where([(i >> k) & 1 for k in range(3)], hi, lo)
        for k in range(3):
            if not (i >> k) & 1:
                q = p.copy()
                q[k] = hi[k]
                edges.append(np.stack([p, q]))
    return tuple(edges)


def sketch(geometry, volume: Volume | None = None, views=(0,)) -> Sketch:
    """The lines of a sketch of ``geometry``: the detector of each view in ``views``
    (indices), the source path and the volume box.

    Parallel beams have no detector distance: their detector is drawn as far beyond the
    rotation axis as its longer side is long. Raises ValueError for a view index outside
    ``[0, num_angles)``.
    """
    n = geometry.num_angles
    views = [int(a) for a in np.atleast_1d(views)]
    for a in views:
        if not 0 <= a < n:
            raise ValueError(f"view index must be in [0, {n}), got {a}")
    d = geometry.detector
    distance = max(d.num_cols * d.pixel_width, d.num_rows * d.pixel_height)
    detectors = tuple(pixel_positions(geometry[a], parallel_distance=distance)[0][_OUTLINE]
                      for a in views)
    sources = path = None
    if not isinstance(geometry, ParallelBeam):
        # The ray origin of pixel (0, 0) in every view: a one-pixel crop keeps it.
        path = np.ascontiguousarray(pixel_rays(geometry.cropped(0, 1, 0, 1))[0][:, 0, 0, 0])
        sources = path[views]
    edges = () if volume is None else volume_edges(volume)
    return Sketch(detectors=detectors, sources=sources, source_path=path, volume_edges=edges)
