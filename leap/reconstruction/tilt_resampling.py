"""FBP of a tilted flat cone-beam detector: its views resampled onto an upright detector
by two shears.

FDK filters each view along the lines where the detector meets the planes through the
source and the orbit's tangent θ⊥, the rows of an upright detector. A detector tilted by
t about the central ray (``tilt`` of :class:`leap.geometry.ConeBeam`, LEAP's ``tiltAngle``)
records pixel (u, v) (mm along its column and row vectors, from the central ray) at the
upright position::

    U = cos t·u − sin t·v,    V = sin t·u + cos t·v,

so filtering along its own rows mixes heights: per view the filtered values are off by
about t times a Hilbert transform of ∂g/∂V (16 % of a filtered view at t = 5°). In an
equally spaced full scan, conjugate views carry that error with opposite signs and it
mostly cancels; measured (non-uniform) angles break the pairing (issue 53: relative error
0.127 with angles jittered by ±0.6°, against 0.029 untilted).

FBP of a tilted scan is therefore FBP of its *upright form* (:func:`upright_form`): an
untilted cone beam with pixels ``pixel_width / cos t`` wide and ``cos t·pixel_height``
high, ``2·margin`` rows more, whose pixel grid the tilted views are resampled onto by two
shears, each one fractional shift per line (a Lanczos kernel of :data:`LANCZOS_A` taps
each side):

1. along the columns: column i (at u_i) is shifted by ``tan t·u_i / pixel_height`` rows,
   so row k holds the line ``V = V_k`` of the upright detector (rows past the detector's
   edges repeat its edge rows: the natural extension of an object longer than the
   field of view);
2. along the rows: the samples of row k lie at ``U = u_i / cos t − tan t·V_k``, equally
   spaced by ``pixel_width / cos t``; row k is shifted by ``sin t·V_k / pixel_width``
   columns onto the upright columns (columns past the edges repeat the edge columns).

Scale needs no interpolation (it is in the upright form's pixel sizes), and each shear
moves every line by one constant fractional shift. Against rotating each view upright onto the
detector's own grid with a 2-D cubic interpolation, this keeps every measured pixel
inside the upright detector (the rotated detector's corners need the extra rows) and
interpolates each direction once. All of FBP's weights (cosine, τ, Parker, offset scan,
helical) then come from the upright form, and the back-projection runs on the axial
kernels. The projectors keep applying the tilt as a rotated module (upstream LEAP's GPU
path; its CPU build ignores the tilt).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class UprightResampling(NamedTuple):
    """The two shears of :func:`upright_form` (see the module docstring).

    Attributes
    ----------
    num_rows, num_cols : the tilted detector's shape.
    margin : rows added on each side (the upright form has num_rows + 2·margin rows).
    row_taps, row_weights : (2a, num_cols) int64 and float64 (a = :data:`LANCZOS_A`):
        upright row k of column i is ``Σ_t row_weights[t, i]·view[clip(row_taps[t, i] +
        k), i]``.
    col_taps, col_weights : (2a, num_rows + 2·margin): upright column m of row k is
        ``Σ_t col_weights[t, k]·sheared[k, clip(col_taps[t, k] + m)]``.
    """

    num_rows: int
    num_cols: int
    margin: int
    row_taps: np.ndarray
    row_weights: np.ndarray
    col_taps: np.ndarray
    col_weights: np.ndarray

    @property
    def upright_rows(self) -> int:
        return self.num_rows + 2 * self.margin


def is_tilted(geometry) -> bool:
    """Whether ``geometry`` is a cone beam with a tilted (flat) detector."""
    from ..geometry import ConeBeam
    return isinstance(geometry, ConeBeam) and geometry.tilt != 0.0


#: Half-width (taps on each side) of the Lanczos kernel of the shears. Measured on issue
#: 53's scan (relative error, uniform / jittered angles): Keys' cubic convolution 0.0315 /
#: 0.0350, a = 3 0.0307 / 0.0344, a = 6 0.0305 / 0.0342, the same as exact (FFT) shifts:
#: the rest is the data's own error.
LANCZOS_A = 6


def _taps(x: np.ndarray):
    """Lanczos taps at positions x (n,): indices (2a, n) int64 and weights (2a, n)
    float64 (normalised to sum 1, so constants are kept exactly)."""
    a = LANCZOS_A
    base = np.floor(x)
    offsets = np.arange(-a + 1, a + 1)[:, None]
    d = offsets - (x - base)[None, :]
    w = np.sinc(d) * np.sinc(d / a)
    return (base[None, :] + offsets).astype(np.int64), w / np.sum(w, axis=0, keepdims=True)


def fbp_row_reach(geometry) -> int:
    """Detector rows beyond those a volume slab's rays touch that FBP of ``geometry``
    reads: the resampling's taps for tilted cone beams (the column shear's half-width,
    and one row for the row shear moving its taps across columns of other shifts), 0
    otherwise. Used by :meth:`leap.system.CTSystem.part`."""
    if not is_tilted(geometry):
        return 0
    d = geometry.detector
    across = LANCZOS_A * d.pixel_width * abs(math.tan(geometry.tilt)) / d.pixel_height
    return LANCZOS_A + int(math.ceil(across)) + 1


def upright_form(geometry):
    """The upright cone beam that FBP reconstructs a tilted scan with, and the
    :class:`UprightResampling` of its views onto it: ``(upright, resampling)``.

    ``upright``: ``geometry`` without tilt, its detector ``num_rows + 2·margin`` rows of
    ``cos t·pixel_height`` and ``num_cols`` columns of ``pixel_width / cos t``, centred on
    the same central ray (margin: the rows the tilt reaches beyond the detector, plus
    one). Raises ValueError for geometries that are not tilted cone beams.
    """
    if not is_tilted(geometry):
        raise ValueError("upright_form applies to cone beams with a tilted detector")
    d = geometry.detector
    c, s = math.cos(geometry.tilt), math.sin(geometry.tilt)
    u = (np.arange(d.num_cols) - d.center_col) * d.pixel_width
    row_shift = (s / c) * u / d.pixel_height                     # rows, per column
    margin = int(math.ceil(float(np.max(np.abs(row_shift))))) + 1
    k = np.arange(d.num_rows + 2 * margin)
    # Upright row k is the line V_k = cos t·(k − margin − center_row)·pixel_height; on
    # column i it crosses detector row k − margin − row_shift_i.
    row_taps, row_weights = _taps(-margin - row_shift)
    V = c * (k - margin - d.center_row) * d.pixel_height
    # Row k's samples sit at columns m − sin t·V_k/pixel_width of the upright grid, so
    # upright column m reads sheared column m + sin t·V_k / pixel_width.
    col_taps, col_weights = _taps(s * V / d.pixel_width)
    upright = geometry.with_changes(
        tilt=0.0, detector=d.with_changes(num_rows=d.num_rows + 2 * margin,
                                          pixel_height=c * d.pixel_height,
                                          pixel_width=d.pixel_width / c,
                                          center_row=d.center_row + margin))
    return upright, UprightResampling(d.num_rows, d.num_cols, margin, row_taps,
                                      row_weights, col_taps, col_weights)


def _gather(x, taps, weights, n_out):
    """out[:, k, i] = Σ_t weights[t, i]·x[:, clip(taps[t, i] + k), i] along axis 1 (float64
    sums)."""
    nv, n_in, nc = x.shape
    k = np.arange(n_out)[:, None]
    cols = np.arange(nc)[None, :]
    out = np.zeros((nv, n_out, nc), dtype=np.float64)
    for t in range(taps.shape[0]):
        out += weights[t][None, None, :] * x[:, np.clip(taps[t][None, :] + k, 0, n_in - 1), cols]
    return out


def _scatter(y, taps, weights, n_in):
    """The transpose of :func:`_gather`: (nv, n_out, nc) → (nv, n_in, nc), float64."""
    nv, n_out, nc = y.shape
    k = np.arange(n_out)[:, None]
    cols = np.arange(nc)[None, :]
    out = np.zeros((nv, n_in * nc), dtype=np.float64)
    yf = y.reshape(nv, -1)
    for t in range(taps.shape[0]):
        idx = (np.clip(taps[t][None, :] + k, 0, n_in - 1) * nc + cols).ravel()
        w = np.broadcast_to(weights[t][None, :], (n_out, nc)).ravel()
        for v in range(nv):
            out[v] += np.bincount(idx, weights=yf[v] * w, minlength=n_in * nc)
    return out.reshape(nv, n_in, nc)


def _blocks(n_views, view_size):
    step = max(1, (1 << 21) // max(1, view_size))
    return ((vs, min(n_views, vs + step)) for vs in range(0, n_views, step))


def to_upright(g, rs: UprightResampling, out=None) -> np.ndarray:
    """Tilted views g (num_angles, num_rows, num_cols) resampled onto the upright form's
    pixels: (num_angles, num_rows + 2·margin, num_cols) float32 (into ``out`` if given)."""
    na = g.shape[0]
    if out is None:
        out = np.empty((na, rs.upright_rows, rs.num_cols), dtype=np.float32)
    for vs, ve in _blocks(na, rs.upright_rows * rs.num_cols):
        rows = _gather(np.asarray(g[vs:ve], dtype=np.float64), rs.row_taps, rs.row_weights,
                       rs.upright_rows)
        cols = _gather(rows.transpose(0, 2, 1), rs.col_taps, rs.col_weights, rs.num_cols)
        out[vs:ve] = cols.transpose(0, 2, 1)
    return out


def to_upright_transpose(q, rs: UprightResampling, out=None) -> np.ndarray:
    """The transpose of :func:`to_upright`: (num_angles, num_rows + 2·margin, num_cols) →
    (num_angles, num_rows, num_cols) float32 (for FBP's exact adjoint)."""
    na = q.shape[0]
    if out is None:
        out = np.empty((na, rs.num_rows, rs.num_cols), dtype=np.float32)
    for vs, ve in _blocks(na, rs.upright_rows * rs.num_cols):
        y = np.asarray(q[vs:ve], dtype=np.float64).transpose(0, 2, 1)
        rows = _scatter(y, rs.col_taps, rs.col_weights, rs.num_cols).transpose(0, 2, 1)
        out[vs:ve] = _scatter(np.ascontiguousarray(rows), rs.row_taps, rs.row_weights,
                              rs.num_rows)
    return out
