"""Down- and up-sampling of 3-D arrays (LEAP's ``down_sample`` / ``up_sample``).

Both are separable, so each axis is a small (N_out, N_in) matrix applied in turn.
Samples are aligned on the array centres: output sample i sits at input position
``(i − (N_out−1)/2)·f + (N_in−1)/2`` (down, factor f) or
``(i − (N_out−1)/2)/f + (N_in−1)/2`` (up). Indices past the ends are clamped (edge
values are repeated).

* Down-sampling averages with LEAP's anti-alias "bump" filter: taps
  ``cos²(π/2·(l − δ)/f)`` for ``|l − δ| ≤ f``, normalised to sum 1 (δ the sub-sample delay),
  the same filter as LEAP's LowPassFilter.
* Up-sampling interpolates linearly.
"""
from __future__ import annotations

import math

import numpy as np


def _factors(factors, op):
    f = np.asarray(factors, dtype=np.float64).ravel()
    if f.size != 3 or not np.all(np.isfinite(f)):
        raise ValueError(f"factors must be 3 finite numbers (one per array axis), got {factors!r}")
    if np.any(f < 1.0):
        raise ValueError(f"{op} factors must be >= 1, got {f.tolist()}")
    return f


def _dims(dims, default):
    if dims is None:
        return tuple(int(n) for n in default)
    d = [int(n) for n in np.asarray(dims).ravel()]
    if len(d) != 3 or min(d) <= 0:
        raise ValueError(f"dims must be 3 positive sizes, got {dims!r}")
    return tuple(d)


def down_matrix(n_in: int, n_out: int, f: float) -> np.ndarray:
    """(n_out, n_in) anti-aliased down-sampling matrix along one axis."""
    M = np.zeros((n_out, n_in))
    L = int(math.floor(f))
    l = np.arange(-L, L + 1, dtype=np.float64)
    for i in range(n_out):
        x = (i - 0.5 * (n_out - 1)) * f + 0.5 * (n_in - 1)
        ii = int(math.floor(0.5 + x))
        delay = x - ii
        h = np.where(np.abs(l - delay) > f, 0.0, np.cos(0.5 * np.pi * (l - delay) / f) ** 2)
        np.add.at(M[i], np.clip(ii + l.astype(np.intp), 0, n_in - 1), h / h.sum())
    return M


def up_matrix(n_in: int, n_out: int, f: float) -> np.ndarray:
    """(n_out, n_in) linear-interpolation up-sampling matrix along one axis."""
    M = np.zeros((n_out, n_in))
    x = (np.arange(n_out) - 0.5 * (n_out - 1)) / f + 0.5 * (n_in - 1)
    lo = np.floor(x).astype(np.intp)
    d = x - lo
    rows = np.arange(n_out)
    np.add.at(M, (rows, np.clip(lo, 0, n_in - 1)), 1.0 - d)
    np.add.at(M, (rows, np.clip(lo + 1, 0, n_in - 1)), d)
    return M


def _apply(I, mats):
    out = np.asarray(I, dtype=np.float64)
    for axis, M in enumerate(mats):
        out = np.moveaxis(np.tensordot(M, out, axes=([1], [axis])), 0, axis)
    return np.ascontiguousarray(out, dtype=np.float32)


def down_sample(I: np.ndarray, factors, dims=None) -> np.ndarray:
    """Anti-aliased down-sampling of a 3-D array by ``factors`` (each ≥ 1).

    Output shape ``dims``, default ``int(N_k / factors_k)`` per axis. Returns a new
    float32 array.
    """
    I = np.asarray(I)
    if I.ndim != 3:
        raise ValueError(f"down_sample needs a 3-D array, got shape {I.shape}")
    f = _factors(factors, "down-sampling")
    out = _dims(dims, [max(1, int(n / fk)) for n, fk in zip(I.shape, f)])
    return _apply(I, [down_matrix(n, m, fk) for n, m, fk in zip(I.shape, out, f)])


def up_sample(I: np.ndarray, factors, dims=None) -> np.ndarray:
    """Linear-interpolation up-sampling of a 3-D array by ``factors`` (each ≥ 1).

    Output shape ``dims``, default ``int(N_k · factors_k)`` per axis.
    """
    I = np.asarray(I)
    if I.ndim != 3:
        raise ValueError(f"up_sample needs a 3-D array, got shape {I.shape}")
    f = _factors(factors, "up-sampling")
    out = _dims(dims, [int(n * fk) for n, fk in zip(I.shape, f)])
    return _apply(I, [up_matrix(n, m, fk) for n, m, fk in zip(I.shape, out, f)])


# ------------------------------------------------------------ grids after resampling
def detector_factors(factors) -> np.ndarray:
    """Validated resampling factors of projections (views, rows, columns): 3 finite
    numbers ≥ 1, the first (views) exactly 1. Returns a float64 (3,) array."""
    f = _factors(factors, "resampling")
    if f[0] != 1.0:
        raise ValueError("the view (angle) dimension cannot be resampled: factors[0] must be 1, "
                         f"got {f.tolist()}")
    return f


def volume_factors(factors) -> np.ndarray:
    """Validated resampling factors of a volume (z, y, x): 3 finite numbers ≥ 1 with
    y == x (voxels stay square in-plane). Returns a float64 (3,) array."""
    f = _factors(factors, "resampling")
    if f[1] != f[2]:
        raise ValueError(f"the voxel pitch must stay equal in x and y: factors[1] == factors[2] "
                         f"required, got {f.tolist()}")
    return f


def _resampled_counts(counts, factors, up, shape):
    if shape is not None:
        return tuple(int(n) for n in shape)
    if up:
        return tuple(int(n * f) for n, f in zip(counts, factors))
    return tuple(int(n / f) for n, f in zip(counts, factors))


def resample_geometry(geometry, factors, *, up: bool = False, shape=None):
    """The scan geometry of projections down-sampled (``up=False``) or up-sampled by
    :func:`down_sample` / :func:`up_sample` with ``factors`` (1, rows, columns).

    Pixels grow (shrink) by the factors; the detector gets ``shape[1:]`` rows and
    columns when ``shape`` (the resampled data's (num_angles, num_rows, num_cols)) is
    given, else ``int(N/f)`` (``int(N·f)``). The central ray keeps its place on the
    detector, in mm from the detector's middle, so a centred detector (every modular
    one) stays centred.
    """
    f = detector_factors(factors)
    d = geometry.detector
    nr, nc = _resampled_counts((d.num_rows, d.num_cols), f[1:], up,
                               None if shape is None else tuple(shape)[1:])
    ph = d.pixel_height / f[1] if up else d.pixel_height * f[1]
    pw = d.pixel_width / f[2] if up else d.pixel_width * f[2]
    # The central ray's offset from the detector's middle, mm, kept.
    rs = (d.center_row - 0.5 * (d.num_rows - 1)) * d.pixel_height
    cs = (d.center_col - 0.5 * (d.num_cols - 1)) * d.pixel_width
    det = d.with_changes(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw,
                         center_row=rs / ph + 0.5 * (nr - 1), center_col=cs / pw + 0.5 * (nc - 1))
    return geometry.with_changes(detector=det)


def resample_volume(volume, factors, *, up: bool = False, shape=None):
    """The :class:`~leap.geometry.Volume` of a volume down-sampled (``up=False``) or
    up-sampled with ``factors`` (z, y, x; y == x): voxels grow (shrink) by the factors,
    the counts are ``shape`` (the resampled data's (num_z, num_y, num_x)) or
    ``int(N/f)`` (``int(N·f)``); the grid keeps its centre."""
    f = volume_factors(factors)
    v = volume
    nz, ny, nx = _resampled_counts((v.num_z, v.num_y, v.num_x), f, up, shape)
    vh = v.voxel_height / f[0] if up else v.voxel_height * f[0]
    vw = v.voxel_width / f[1] if up else v.voxel_width * f[1]
    return v.with_changes(num_x=nx, num_y=ny, num_z=nz, voxel_width=vw, voxel_height=vh)
