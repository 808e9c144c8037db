"""leap.preprocessing.filters and .deblur called directly (the facade's tests check LEAP's
numbers), and the array-module rules shared by the package (CuPy-free paths, dask)."""
import numpy as np
import pytest

from leap.preprocessing import (azimuthal_blur, deconvolution_filter, deconvolve,
                                dual_transfer_function, laplacian, low_signal_median,
                                mean_filter, remove_zingers, richardson_lucy, transfer_function,
                                transmission_filter, variance_filter)


def blur_response(n1, n2):
    y = np.fft.fftfreq(n1)[:, None] * 2
    x = np.fft.fftfreq(n2)[None, :] * 2
    return (0.1 + 0.9 / (1.0 + 9.0 * np.sqrt(x ** 2 + y ** 2))).astype(np.float32)


def test_filters_read_any_real_dtype_and_return_float32(rng):
    x = rng.standard_normal((3, 6, 7))
    for fn in (lambda a: low_signal_median(a, 0.0, 3), lambda a: mean_filter(a, 1),
               lambda a: variance_filter(a, 1), lambda a: laplacian(a, 2)):
        r64, r32 = fn(x), fn(x.astype(np.float32))
        assert r64.dtype == np.float32
        np.testing.assert_array_equal(r64, r32)
    np.testing.assert_array_equal(laplacian(np.arange(12).reshape(3, 4)).dtype, np.float32)


def test_filters_on_known_data():
    a, r, c = np.meshgrid(np.arange(2), np.arange(8), np.arange(9), indexing="ij")
    q = (0.5 * c ** 2 + 2 * r).astype(np.float32)              # Laplacian 1 (columns only)
    np.testing.assert_allclose(laplacian(q, 2)[:, 1:-1, 1:-1], 1.0, atol=1e-5)
    const = np.full((3, 4, 5), 2.5, np.float32)
    np.testing.assert_allclose(mean_filter(const, 2), 2.5, rtol=1e-6)
    np.testing.assert_allclose(variance_filter(const, 2), 0.0, atol=1e-6)
    t = np.full((2, 6, 7), 0.8, np.float32)
    t[1, 3, 3] = 0.001                                          # a photon-starved pixel
    t[0, 2, 2] = 5.0                                            # a bright outlier
    out = low_signal_median(t, 0.0, 3, signal_threshold=0.01)
    assert out[1, 3, 3] == pytest.approx(0.8) and out[0, 2, 2] == 5.0


def test_filter_arguments_are_checked():
    x = np.ones((2, 4, 5), np.float32)
    with pytest.raises(ValueError, match="window_radius must be >= 1"):
        mean_filter(x, 0)
    with pytest.raises(ValueError, match="window_size must be one of"):
        low_signal_median(x, 0.0, 7, num_dims=3)
    with pytest.raises(ValueError, match="num_dims must be 2"):
        low_signal_median(x, num_dims=1)
    with pytest.raises(ValueError, match="threshold must be finite"):
        low_signal_median(x, float("nan"))
    with pytest.raises(ValueError, match="out must be a float32 array of shape"):
        mean_filter(x, 1, out=np.empty((2, 4, 4), np.float32))
    with pytest.raises(ValueError, match="at least the projection size"):
        transmission_filter(x, np.ones((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        transfer_function(x, [0.0, np.nan], 1.0)
    with pytest.raises(ValueError, match="sample_rate must be > 0"):
        dual_transfer_function(x, x, np.zeros((2, 3, 3)), 0.0)
    with pytest.raises(ValueError, match="x and y must have one shape"):
        dual_transfer_function(x, x[0], np.zeros((2, 3, 3)), 1.0)
    with pytest.raises(ValueError, match="3-D"):
        azimuthal_blur(x[0], 10.0, 0.0, 0.0, 1.0, 10.0)


def test_transfer_functions():
    x = np.array([[-1.0, 0.25, 0.6, 2.0]], np.float32)
    np.testing.assert_allclose(transfer_function(x, [0.0, 1.0, 3.0], 0.5),
                               [[0.0, 0.5, 1.4, 7.0]], rtol=1e-6)        # slope 4 above
    lut = np.arange(9, dtype=np.float32).reshape(3, 3)                   # lut[i, j] = 3i + j
    a, b = dual_transfer_function(np.float32([[0.5, 1.0]]), np.float32([[1.5, 0.0]]), lut, 1.0)
    np.testing.assert_allclose(a, [[3.0, 3.0]], rtol=1e-6)
    np.testing.assert_allclose(b, a)


def test_deconvolution_inverts_a_known_blur():
    rows, cols = 16, 40
    yy, xx = np.mgrid[0:rows, 0:cols]
    g = (0.5 + 0.4 * ((xx - 20) ** 2 + (yy - 8) ** 2 < 40)).astype(np.float32)[None]
    H = blur_response(32, 80)
    blurred = transmission_filter(g, H, True)
    assert np.abs(blurred - g).max() > 0.05
    Hinv = deconvolution_filter(H)
    assert Hinv.dtype == np.float32 and Hinv[0, 0] == pytest.approx(1.0)
    np.testing.assert_allclose(Hinv * H / H[0, 0], 1.0, rtol=1e-5)       # plain inverse
    restored = deconvolve(blurred, H)
    assert np.abs(restored - g).max() < 0.2 * np.abs(blurred - g).max()   # (edge padding)
    w = deconvolution_filter(H, 0.5)                                     # Wiener: damped
    assert np.all(np.abs(w) <= np.abs(Hinv) + 1e-6)
    with pytest.raises(ValueError, match="H has zeros"):
        deconvolution_filter(np.float32([[1.0, 0.0], [0.5, 0.5]]), 2.0)
    with pytest.raises(ValueError, match="DC response"):
        deconvolution_filter(np.zeros((4, 4)))


def test_richardson_lucy_reduces_blur_in_place_or_not():
    rows, cols = 16, 40
    yy, xx = np.mgrid[0:rows, 0:cols]
    t = np.exp(-3 * ((xx - 20) ** 2 + (yy - 8) ** 2 < 40)).astype(np.float32)[None]
    H = blur_response(32, 80)
    blurred = transmission_filter(t, H, False)
    out = richardson_lucy(blurred, H, 10)
    assert np.linalg.norm(out - t) < 0.5 * np.linalg.norm(blurred - t)
    a = blurred.copy()
    assert richardson_lucy(a, H, 10, out=a) is a
    np.testing.assert_array_equal(a, out)
    np.testing.assert_array_equal(richardson_lucy(blurred, H, 0), blurred)
    with pytest.raises(ValueError, match="num_iter must be >= 0"):
        richardson_lucy(blurred, H, -1)


class FakeCudaArray:
    """A device array that is not CuPy (e.g. a Numba device array)."""
    __cuda_array_interface__ = {"shape": (2, 3, 4), "typestr": "<f4", "data": (0, False),
                                "version": 3}
    shape, dtype, ndim = (2, 3, 4), np.dtype(np.float32), 3


def test_non_cupy_device_arrays_and_dask_arrays_are_refused_clearly():
    with pytest.raises(TypeError, match="CuPy array"):
        mean_filter(FakeCudaArray(), 1)
    da = pytest.importorskip("dask.array")
    with pytest.raises(TypeError, match="map_overlap"):
        remove_zingers(da.ones((4, 5, 6), chunks=2))


def test_dask_blocks_with_overlap_equal_the_whole(rng):
    """How a scan too large for memory is processed: dask maps the function over blocks
    of views, with window_size // 2 views of overlap for zinger removal."""
    da = pytest.importorskip("dask.array")
    t = np.repeat(np.linspace(0.5, 1.0, 60, dtype=np.float32)[:, None, None], 4, axis=1)
    t = np.repeat(t, 5, axis=2) + rng.uniform(0, 0.01, (60, 4, 5)).astype(np.float32)
    t[[7, 20, 41], [1, 2, 3], [0, 4, 2]] *= 2
    whole = remove_zingers(t, 0.1, 5)
    lazy = da.from_array(t, chunks=(16, 4, 5)).map_overlap(
        lambda b: remove_zingers(b, 0.1, 5), depth={0: 2, 1: 0, 2: 0}, boundary="none",
        dtype=np.float32)
    np.testing.assert_array_equal(lazy.compute(scheduler="synchronous"), whole)
