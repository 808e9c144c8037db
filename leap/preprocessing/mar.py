"""Sinogram replacement, a metal-artifact-reduction step (LEAP's ``sinogram_replacement``;
S. Karimi et al., https://www.osti.gov/servlets/purl/1557944).

Inside the metal trace of each detector row of each view, the measured data are
replaced by the prior sinogram fitted to the measurement: ``g ← a·prior + b``, with
(a, b) a least-squares fit over good (non-trace) samples next to the trace — at least
12 samples on each side, searched up to 2·windowSize[2] columns out, pooled over
±windowSize[0] views and ±windowSize[1] rows. The fit is softly pulled towards a = 1
and b = 0 (weights 0.4), and a is clipped to [1/1.5, 1.5].

Only samples within the trace whose measured value is > 0 are replaced. Good samples
are never modified, so updating ``g`` in place does not change later fits.
"""
from __future__ import annotations

import numpy as np
from numba import njit

MIN_SAMPLES = 12
SCALE_WEIGHT = 0.4
SHIFT_WEIGHT = 0.4
SCALE_MAX = 1.5


@njit(cache=True)
def _pool(g, prior, trace, i, j, k, step, k_stop, n_view, n_row, A, B, C, E, F):  # pragma: no cover
    """Add to the least-squares sums (Σp², Σp, n, Σqp, Σq) the good samples of columns
    k, k + step, … (up to k_stop) until MIN_SAMPLES are pooled; returns the sums and
    the number of samples added."""
    na, nr, nc = g.shape
    n = 0
    while 0 <= k < nc and (k - k_stop) * step <= 0:
        for di in range(-n_view, n_view + 1):
            for dj in range(-n_row, n_row + 1):
                ii, jj = i + di, j + dj
                if 0 <= ii < na and 0 <= jj < nr and trace[ii, jj, k] <= 0.0:
                    p, q = prior[ii, jj, k], g[ii, jj, k]
                    A += p * p
                    B += p
                    C += 1.0
                    E += q * p
                    F += q
                    n += 1
        if n >= MIN_SAMPLES:
            break
        k += step
    return A, B, C, E, F, n


@njit(cache=True)
def _replace(g, prior, trace, n_view, n_row, n_col):  # pragma: no cover - compiled
    na, nr, nc = g.shape
    starts = np.empty(nc + 1, np.int64)
    ends = np.empty(nc + 1, np.int64)
    for j in range(nr):
        for i in range(na):
            # Good-data intervals of this line: [starts[m], ends[m]].
            ns, ne = 1, 0
            starts[0] = 0
            inside = False
            for k in range(nc):
                if not inside and trace[i, j, k] > 0.0:
                    inside = True
                    ends[ne] = k - 1
                    ne += 1
                elif inside and trace[i, j, k] <= 0.0:
                    inside = False
                    starts[ns] = k
                    ns += 1
            ends[ne] = nc - 1
            ne += 1
            if ns < 2 or ends[0] >= nc - 1:
                continue
            for m in range(ns - 1):
                k_left, k_right = ends[m], starts[m + 1]
                # Good samples pooled over the neighbouring views and rows, walking
                # outwards from each end of the trace until MIN_SAMPLES are found.
                A, B, C, E, F, n_left = _pool(g, prior, trace, i, j, k_left, -1,
                                              max(0, k_left - 2 * n_col), n_view, n_row,
                                              0.0, 0.0, 0.0, 0.0, 0.0)
                A, B, C, E, F, n_right = _pool(g, prior, trace, i, j, k_right, 1,
                                               min(nc - 1, k_right + 2 * n_col), n_view,
                                               n_row, A, B, C, E, F)
                if n_left < 2 or n_right < 2:
                    continue
                A += SCALE_WEIGHT
                C += SHIFT_WEIGHT
                E += SCALE_WEIGHT
                det = A * C - B * B
                if det == 0.0:
                    continue
                a = min(max((C * E - B * F) / det, 1.0 / SCALE_MAX), SCALE_MAX)
                b = (F - a * B) / C
                for kk in range(k_left + 1, k_right):
                    if g[i, j, kk] > 0.0:
                        g[i, j, kk] = a * prior[i, j, kk] + b


def sinogram_replacement(g: np.ndarray, prior: np.ndarray, trace: np.ndarray,
                         window=(3, 1, 50)) -> np.ndarray:
    """Replace ``g`` (numAngles, numRows, numCols) float32, in place, inside ``trace``
    (> 0 marks bad samples) by the fitted ``prior``. ``window`` = half-widths (views,
    rows, columns); views and columns are at least 2. Returns g."""
    w = [int(v) for v in np.asarray(window).ravel()]
    if len(w) != 3:
        raise ValueError(f"windowSize must have 3 integers (views, rows, columns), got {window!r}")
    _replace(g, np.ascontiguousarray(prior, dtype=np.float32),
             np.ascontiguousarray(trace, dtype=np.float32), max(2, w[0]), max(0, w[1]), max(2, w[2]))
    return g
