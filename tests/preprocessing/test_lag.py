"""leap.preprocessing.lag: linear time-invariant lag (afterglow) correction inverts a
simulated lag, and blocks of views with the carried state equal the whole scan."""
import numpy as np
import pytest

from leap.preprocessing import correct_lag, lag_impulse_response, simulate_lag

#: A three-term response: prompt 90 %, then 6 % and 3 % released with decays of about
#: 1.5 and 20 frames (rates per frame), and a pure prompt term (rate inf).
AMPLITUDES = [0.06, 0.03, 0.91]
RATES = [0.7, 0.05, np.inf]


@pytest.fixture
def frames(rng):
    x = rng.uniform(100.0, 1000.0, (40, 3, 5)).astype(np.float32)
    x[10:20] *= 0.1                           # a strong object edge crossing in view 10
    return x


def test_impulse_response():
    h = lag_impulse_response(AMPLITUDES, RATES, 4)
    k = np.arange(4)
    expected = 0.06 * np.exp(-0.7 * k) + 0.03 * np.exp(-0.05 * k)
    expected[0] += 0.91
    np.testing.assert_allclose(h, expected, rtol=1e-12)
    assert h[0] == pytest.approx(1.0)


def test_simulated_lag_is_the_convolution_with_the_impulse_response(frames):
    y, state = simulate_lag(frames, AMPLITUDES, RATES)
    h = lag_impulse_response(AMPLITUDES, RATES, frames.shape[0])
    lag = np.subtract.outer(np.arange(40), np.arange(40))          # k − j
    H = np.where(lag >= 0, h[lag.clip(0)], 0.0)                     # causal Toeplitz
    expected = np.einsum("kj,jrc->krc", H, frames.astype(np.float64))
    np.testing.assert_allclose(y, expected, rtol=2e-6)
    assert y.dtype == np.float32 and state.shape == (3, 3, 5) and state.dtype == np.float64
    assert np.all(y[10:20] > frames[10:20])              # lag of the bright views before


def test_correct_lag_inverts_the_simulated_lag(frames):
    y, _ = simulate_lag(frames, AMPLITUDES, RATES)
    x, _ = correct_lag(y, AMPLITUDES, RATES)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, frames, rtol=1e-5)     # exact to float32 rounding of y
    a = y.copy()
    assert correct_lag(a, AMPLITUDES, RATES, out=a)[0] is a          # in place
    np.testing.assert_array_equal(a, x)


def test_blocks_with_carried_state_equal_the_whole_scan(frames):
    y, _ = simulate_lag(frames, AMPLITUDES, RATES)
    whole, s_whole = correct_lag(y, AMPLITUDES, RATES)
    parts, state = [], None
    for a, b in ((0, 7), (7, 8), (8, 25), (25, 40)):
        x, state = correct_lag(y[a:b], AMPLITUDES, RATES, state=state)
        parts.append(x)
    np.testing.assert_array_equal(np.concatenate(parts), whole)
    np.testing.assert_array_equal(state, s_whole)
    y1, s = simulate_lag(frames[:13], AMPLITUDES, RATES)
    y2, _ = simulate_lag(frames[13:], AMPLITUDES, RATES, state=s)
    np.testing.assert_array_equal(np.concatenate([y1, y2]), y)


def test_lag_bad_input(frames):
    with pytest.raises(ValueError, match="one length"):
        correct_lag(frames, [0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="rates must be > 0"):
        correct_lag(frames, [1.0], [0.0])
    with pytest.raises(ValueError, match="rates must be > 0"):
        correct_lag(frames, [1.0], [np.nan])
    with pytest.raises(ValueError, match="amplitudes must be finite"):
        correct_lag(frames, [np.nan], [1.0])
    with pytest.raises(ValueError, match="sum to > 0"):
        correct_lag(frames, [0.5, -0.5], [1.0, 2.0])
    with pytest.raises(ValueError, match="state must be"):
        correct_lag(frames, AMPLITUDES, RATES, state=np.zeros((2, 3, 5)))
    with pytest.raises(ValueError, match="3-D"):
        correct_lag(frames[0], AMPLITUDES, RATES)
    with pytest.raises(ValueError, match="out must be a float32"):
        correct_lag(frames, AMPLITUDES, RATES, out=np.empty(frames.shape))
    with pytest.raises(ValueError, match="num_frames must be >= 1"):
        lag_impulse_response(AMPLITUDES, RATES, 0)
