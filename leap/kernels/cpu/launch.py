"""CPU launchers: ``project(plan, f, g)`` and ``backproject(plan, g, f)``.

The one place where a :class:`~leap.kernels.plan.Plan` is unpacked into the Numba CPU
kernels' arguments (:mod:`leap.kernels.cpu.axial`, :mod:`leap.kernels.cpu.modular`).
Arrays are float32, C-contiguous and already validated; the outputs are overwritten.
"""
from __future__ import annotations

import numpy as np

from . import axial, modular

_NO_SLICE_WEIGHTS = np.zeros((0, 0))


def project(plan, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """g (num_angles, num_rows, num_cols) ← P f, f (num_z, num_y, num_x)."""
    v, s = plan.volume, plan.scalars()
    if plan.modular:
        geo = plan.geometry
        modular.project(f, g, geo.source_positions, geo.module_centers, geo.row_vectors,
                        geo.col_vectors, v.x0, v.y0, v.z0, v.voxel_width, v.voxel_height,
                        s.pixel_width, s.pixel_height)
        return g
    views = plan.views
    sw = _NO_SLICE_WEIGHTS if plan.slice_weights is None else plan.slice_weights
    axial.project(axial.volume_z_cumsum(f), g, views.col_dir, views.source_xy,
                  views.source_z, views.sdd, views.sod, views.helical_pitch,
                  views.column_model, views.magnify_z, s.fov_r2, s.x0, s.y0, s.z0,
                  s.voxel_width, s.voxel_height, s.pixel_width, s.pixel_height,
                  s.center_col, s.center_row, plan.row_factor, s.dist_sod, sw)
    return g


def backproject(plan, g: np.ndarray, f: np.ndarray) -> np.ndarray:
    """f (num_z, num_y, num_x) ← Pᵀ g (with FBP's weights when the plan has them)."""
    v, s = plan.volume, plan.scalars()
    if plan.modular:
        geo = plan.geometry
        modular.backproject(g, f, geo.source_positions, geo.module_centers, geo.row_vectors,
                            geo.col_vectors, v.x0, v.y0, v.z0, v.voxel_width, v.voxel_height,
                            s.pixel_width, s.pixel_height)
        return f
    views = plan.views
    sw = _NO_SLICE_WEIGHTS if plan.slice_weights is None else plan.slice_weights
    axial.backproject(axial.projection_row_cumsum(g, plan.row_factor), f, views.col_dir,
                      views.source_xy, views.source_z, views.sdd, views.sod,
                      views.helical_pitch, views.column_model, views.magnify_z, s.fov_r2,
                      s.x0, s.y0, s.z0, s.voxel_width, s.voxel_height, s.pixel_width,
                      s.pixel_height, s.center_col, s.center_row, s.dist_sod, sw)
    return f
