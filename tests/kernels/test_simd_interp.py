"""The vectorised interpolation of cumulative sums (leap.kernels.cpu.simd.interp_blocks, in
leap.kernels.cpu.columns.cumulative_at) is the scalar arithmetic, with positions advanced
by addition (their rounding moves the values by far less than 1e-11 of the sums), and
reads only inside the column."""
import math
import os
import platform
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from leap.kernels.cpu.columns import add_cumulative_differences, cumulative_at, prefetch_column
from leap.kernels.cpu.simd import prefetch
from leap.kernels.cpu.voxel_weights import ray_stretch


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


def _close(got, want, cum):
    """Equal but for the rounding of advanced positions (simd module notes)."""
    return np.abs(got - want).max(initial=0.0) <= 1e-11 * max(1.0, float(np.abs(cum).max()))


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
        assert _close(got, want, cum), (o, s, t0, t1)
        # The scalar loop's own positions (the first block's lanes, the last inside one)
        # are exact.
        inside = [t for t in range(t0, t1 + 1) if 0.0 < o + t * s < n]
        for t in inside[:1] + inside[-1:]:
            assert E[t] == ref[t]
        assert np.isnan(E[t1 + 1])                 # nothing written past t1
        if t0 > 0:
            assert np.isnan(E[:t0]).all()          # nor before t0
        checked += t1 - t0 + 1
    assert checked > 3000


@numba.njit(cache=True)
def _fused(cum, c, n, o, s, t0, t1, a, a0, w0, a1, w1, mode, D2, r, W):
    """The fused pass."""
    if mode == 3:
        add_cumulative_differences(cum, c, n, o, s, t0, t1, a, a0, W, None, 0.0)
    elif mode == 2:
        add_cumulative_differences(cum, c, n, o, s, t0, t1, a, a0, w0, a1, w1)
    elif mode == 1:
        add_cumulative_differences(cum, c, n, o, s, t0, t1, a, a0, w0, None, 0.0)
    else:
        add_cumulative_differences(cum, c, n, o, s, t0, t1, a, a0, (D2, r, W), None, 0.0)


@numba.njit(cache=True)
def _separate(cum, c, n, o, s, t0, t1, a, a0, w0, a1, w1, mode, D2, r, W, E):
    """The kernels' former two passes: interpolate into E, then add the differences
    (mode 0: weighted by W times the ray stretch of D2 and r, as the modular
    back-projector's separate pass did; mode 3: by W alone)."""
    cumulative_at(cum, c, n, o, s, t0, t1, E)
    for t in range(t0, t1):
        d = E[t + 1] - E[t]
        if mode == 0:
            w = W[t] * ray_stretch(D2[t], r)
        elif mode == 3:
            w = W[t]
        else:
            w = w0
        a[a0 + t] += w * d
        if mode == 2:
            a[a1 + t] += w1 * d


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", [0, 1, 2, 3])
def test_fused_differences_equal_interpolation_then_differences(dtype, mode):
    """add_cumulative_differences = cumulative_at, then the differences added with one
    weight into one column (mode 1) or two (mode 2), or with a weight per difference
    (mode 0: slice weights times the ray stretch, its root taken in the loop; mode 3:
    slice weights alone, helical FBP's back-projection), equal but
    for the rounding of advanced positions (the two passes' blocks start at different
    positions), on ranges that start and end off the column, inside it, and every mix;
    nothing is written outside the output ranges."""
    rng = np.random.default_rng(5)
    n = 41
    cum = np.zeros(2 * (n + 1), dtype=dtype)
    for c in (0, n + 1):
        cum[c + 1:c + n + 1] = np.cumsum(rng.standard_normal(n)).astype(dtype)
    for _ in range(400):
        c = int(rng.integers(0, 2)) * (n + 1)
        s = float(rng.uniform(0.3, 2.5))
        o = float(rng.uniform(-8.0, n + 2.0))
        t0 = int(rng.integers(0, 12))
        t1 = t0 + int(rng.integers(0, 45))
        w0, w1 = (float(w) for w in rng.uniform(-2.0, 2.0, 2))
        W = rng.uniform(-2.0, 2.0, t1 + 1)
        D2 = rng.uniform(0.0, 4e4, t1 + 2)
        r = float(rng.uniform(1e-6, 1e-4))
        a0, a1 = 3, 70 + int(rng.integers(0, 5))
        start = rng.standard_normal(200)
        want, got = start.copy(), start.copy()
        _separate(cum, c, n, o, s, t0, t1, want, a0, w0, a1, w1, mode, D2, r, W,
                  np.zeros(t1 + 2))
        _fused(cum, c, n, o, s, t0, t1, got, a0, w0, a1, w1, mode, D2, r, W)
        assert _close(got, want, 4.0 * cum), (o, s, t0, t1)
        touched = np.zeros(200, bool)
        touched[a0 + t0:a0 + t1] = True
        if mode == 2:
            touched[a1 + t0:a1 + t1] = True
        assert np.array_equal(got[~touched], start[~touched])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_advanced_positions_read_nothing_past_the_column(dtype):
    """The last inside position only just below the column's top (where a position
    advanced by addition could round up onto it): the vector blocks stop a whole step
    before it, so nothing past the column is read (NaN there would reach the values)."""
    rng = np.random.default_rng(11)
    n = 64
    for _ in range(200):
        s = float(rng.uniform(0.05, 1.7))
        t1 = int(rng.integers(8, 60))
        o = n - t1 * s
        while o + t1 * s >= n:                    # o + t1·s the largest below n
            o = np.nextafter(o, -np.inf)
        cum = np.full(n + 9, np.nan, dtype=dtype)
        cum[:n + 1] = np.concatenate([[0.0], np.cumsum(rng.random(n))]).astype(dtype)
        E = np.full(t1 + 1, np.nan)
        _cumulative_at(cum, 0, n, o, s, 0, t1, E)
        a = np.zeros(t1 + 1)
        z = np.zeros(t1 + 2)
        _fused(cum, 0, n, o, s, 0, t1, a, 0, 1.0, 0, 0.0, 1, z, 0.0, z)
        assert np.isfinite(E).all() and np.isfinite(a).all(), (o, s, t1)


@numba.njit(cache=True)
def _prefetch_then_sum(a, c, n):
    prefetch_column(a, c, n)
    return a.sum()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_prefetch_is_a_hint_only(dtype):
    """Ranges inside, across and far past the end of the array (the projector asks for
    the column after next, past the last one at the end of the volume): no fault, no
    change to the array."""
    a = np.arange(100, dtype=dtype)
    for c, n in [(0, 100), (90, 40), (100, 17), (10 ** 7, 33)]:
        assert _prefetch_then_sum(a, c, n) == 4950.0
    assert np.array_equal(a, np.arange(100, dtype=dtype))


def test_prefetch_refuses_what_is_not_a_flat_array():
    @numba.njit
    def bad(a):
        prefetch(a, 0)

    with pytest.raises(numba.core.errors.TypingError):
        bad(np.zeros((2, 2)))


#: An AVX2 CPU without AVX-512 (Haswell to Zen 3): the 32-bit index path.
_AVX2 = ("+64bit,+avx,+avx2,+fma,+sse4.2,+sse4.1,+ssse3,+sse3,+sse2,+sse,+popcnt,+bmi,"
         "+bmi2,+f16c,+lzcnt,+movbe,+cx16,+fxsr,+xsave,-avx512f,-avx512dq,-avx512vl,"
         "-avx512bw,-avx512cd")


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="x86 code generation")
def test_avx2_code_is_bit_for_bit_the_scalar_arithmetic_too(tmp_path):
    """Compiled for an AVX2 CPU (32-bit lane indices; the CI machine may have AVX-512,
    which takes 64-bit ones), in a process of its own with an empty cache; the row
    integrals' loop too."""
    script = (
        "import numpy as np, sys\n"
        "sys.path.insert(0, %r)\n"
        "from numba.core.registry import cpu_target\n"
        "from leap.kernels.cpu import simd\n"
        "assert simd._index_type(cpu_target.target_context).width == 32\n"
        "import test_simd_interp as t\n"
        "for dtype in (np.float32, np.float64):\n"
        "    t.test_blocks_and_tails_equal_the_scalar_arithmetic(dtype)\n"
        "    for mode in (0, 1, 2):\n"
        "        t.test_fused_differences_equal_interpolation_then_differences(dtype, mode)\n"
        "    t.test_advanced_positions_read_nothing_past_the_column(dtype)\n"
        "import test_row_integrals as r\n"
        "r.test_row_integrals_are_the_exact_integrals()\n"
        "r.test_vector_lanes_are_the_scalar_arithmetic_and_take_the_roots()\n"
        "r.test_row_integrals_match_the_cumulative_differences()\n"
        "print('ok')\n" % str(Path(__file__).parent))
    env = dict(os.environ, NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES=_AVX2,
               NUMBA_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
