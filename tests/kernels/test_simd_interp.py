"""The vectorised interpolation of cumulative sums (leap.kernels.cpu.simd.interp_block, in
leap.kernels.cpu.columns.cumulative_at) is bit for bit the scalar arithmetic."""
import math

import numba
import numpy as np
import pytest

from leap.kernels.cpu.columns import cumulative_at


@numba.njit(cache=True)
def _cumulative_at(cum, c, n, o, s, t0, t1, E):
    cumulative_at(cum, c, n, o, s, t0, t1, E)


def _reference(cum, c, n, o, s, t0, t1):
    """E[t] for t0 <= t <= t1 in Python floats (float64), the same operations in order."""
    out = {}
    for t in range(t0, t1 + 1):
        q = o + float(t) * s
        if q <= 0.0:
            out[t] = 0.0
        elif q >= n:
            out[t] = float(cum[c + n])
        else:
            k = math.floor(q)
            c0 = float(cum[c + k])
            out[t] = c0 + (q - k) * (float(cum[c + k + 1]) - c0)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocks_and_tails_equal_the_scalar_arithmetic(dtype):
    rng = np.random.default_rng(3)
    n = 37
    cum = np.zeros(3 * (n + 1), dtype=dtype)
    for c in (0, n + 1, 2 * (n + 1)):
        cum[c + 1:c + n + 1] = np.cumsum(rng.random(n)).astype(dtype)
    checked = 0
    for _ in range(300):
        c = int(rng.integers(0, 3)) * (n + 1)
        s = float(rng.uniform(0.3, 2.5))
        o = float(rng.uniform(-6.0, 4.0))
        t0 = int(rng.integers(0, 20))
        t1 = t0 + int(rng.integers(0, 40))        # 1 to 40 positions: blocks of 4 and tails
        E = np.full(t1 + 2, np.nan)
        _cumulative_at(cum, c, n, o, s, t0, t1, E)
        ref = _reference(cum, c, n, o, s, t0, t1)
        got = E[t0:t1 + 1]
        want = np.array([ref[t] for t in range(t0, t1 + 1)])
        assert np.array_equal(got, want), (o, s, t0, t1)
        assert np.isnan(E[t1 + 1])                 # nothing written past t1
        if t0 > 0:
            assert np.isnan(E[:t0]).all()          # nor before t0
        checked += t1 - t0 + 1
    assert checked > 3000
