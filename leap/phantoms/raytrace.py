"""Analytic simulation: a phantom's projections by exact line integrals of the rays
through every detector pixel (LEAP's ``rayTrace``)."""
from __future__ import annotations

import numpy as np

from ..geometry.rays import pixel_rays


def ray_trace(phantom, geometry, oversampling: int = 1, out: np.ndarray | None = None):
    """Projections (num_angles, num_rows, num_cols) float32 of ``phantom`` seen through
    ``geometry``, as LEAP's ``rayTrace`` computes them.

    Each pixel is sampled by n² rays, n = ``oversampling`` made odd and at most 11, on
    a grid of spacing 1/(n + 1) pixel about the pixel centre (LEAP's spacing, not the
    sub-pixel centres' 1/n); its value is −log(mean(exp(−L))) of the rays' line
    integrals L: the transmission is averaged, as a detector would. ``out`` (float32,
    that shape) is filled and returned when given.
    """
    n = int(oversampling)
    if n < 1:
        raise ValueError(f"oversampling must be >= 1, got {n}")
    n = min(11, n if n % 2 == 1 else n + 1)
    g = np.empty(geometry.projection_shape, dtype=np.float32) if out is None else out
    for a in range(geometry.num_angles):   # one view at a time keeps memory small
        org, dirs = pixel_rays(geometry[a], n, spacing=1.0 / (n + 1))
        L = phantom.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3))
        L = L.reshape(org.shape[1:4])
        if n == 1:
            g[a] = L[..., 0]
        else:
            # −log of the mean transmission, computed stably about the smallest L.
            m = L.min(axis=-1, keepdims=True)
            g[a] = (m[..., 0] - np.log(np.mean(np.exp(-(L - m)), axis=-1)))
    return g
