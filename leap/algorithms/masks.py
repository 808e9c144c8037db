"""Volume masks: the circular field of view and space carving (LEAP's ``windowFOV`` and
``space_carving``).

Volumes are (num_z, num_y, num_x) arrays; the functions here work in place on NumPy
arrays, torch tensors and CuPy arrays alike.
"""
from __future__ import annotations

import math

import numpy as np

from ..geometry import Volume


def fov_mask(volume: Volume, radius: float) -> np.ndarray:
    """Which voxel columns lie in the field of view, (num_y, num_x) bool: True where the
    voxel centre has ``x² + y² ≤ radius²`` (mm; all True for an infinite radius)."""
    x, y = volume.x_samples(), volume.y_samples()
    if not math.isfinite(radius):
        return np.ones((y.size, x.size), dtype=bool)
    return ~((x[None, :] ** 2 + y[:, None] ** 2) > radius * radius)


def window_fov(f, volume: Volume, radius: float):
    """Zero the voxels of ``f`` (num_z, num_y, num_x) outside the field of view of
    ``radius`` mm (:func:`fov_mask`), in place; returns ``f``. Nothing changes for an
    infinite radius."""
    if not math.isfinite(radius):
        return f
    inside = fov_mask(volume, radius)
    if isinstance(f, np.ndarray):
        f[:, ~inside] = 0.0
    elif type(f).__module__.startswith("torch"):
        import torch
        f *= torch.as_tensor(inside, dtype=f.dtype, device=f.device)[None]
    else:
        xp = np
        if type(f).__module__.startswith("cupy"):
            import cupy as xp
        f *= xp.asarray(inside, dtype=f.dtype)[None]
    return f


def space_carving(system, projection_mask, out):
    """Space carving: ``out ← 1 − step(Pᵀ(1 − projection_mask))`` inside the field of
    view, 0 outside.

    ``projection_mask`` (num_angles, num_rows, num_cols) is 1 where a ray meets the
    object and 0 where it misses; every voxel that a missing ray crosses becomes 0, the
    others 1. ``system`` is a :class:`leap.system.CTSystem` (its back-projector, mask and
    field of view are used). ``projection_mask`` is turned into ``1 − projection_mask``
    for the back-projection and back afterwards (no second projection-sized array; a
    mask of 0s and 1s comes back exactly). Returns ``out`` (num_z, num_y, num_x).
    """
    projection_mask[...] = 1.0 - projection_mask
    try:
        system.backproject(projection_mask, out=out)
    finally:
        projection_mask[...] = 1.0 - projection_mask
    out[...] = (out <= 0.0) * 1.0
    return window_fov(out, system.volume, system.fov())
