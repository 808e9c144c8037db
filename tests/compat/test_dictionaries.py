"""Upstream's dictionary generators (leap.compat.dictionaries, the generateDictionary
shim) and dictionary denoising (leap.algorithms.dictionary_denoising, the facade's
``DictionaryDenoising``). Issue 11, item 16."""
import math

import numpy as np
import pytest
from scipy.ndimage import maximum_filter, minimum_filter
from scipy.special import eval_legendre

from conftest import REPO_ROOT
from leap.compat import dictionaries as dicts
from leap.compat.model import tomographicModels
from leap.algorithms.dictionary_denoising import dictionary_denoise


def _torch():
    return pytest.importorskip("torch")


# ============================================================ dictionaries
def test_separable_dictionaries_are_orthonormal_with_upstreams_layout():
    for gen in (dicts.generateLegendreDictionary, dicts.generateDCTDictionary):
        for N, do3D in ((4, False), (4, True), (8, False)):
            D = gen(N, do3D)
            shape = (N ** 3, N, N, N) if do3D else (N * N, 1, N, N)
            assert D.shape == shape and D.dtype == np.float32
            A = D.reshape(D.shape[0], -1).astype(np.float64)
            np.testing.assert_allclose(A @ A.T, np.eye(A.shape[0]), atol=2e-6)
            np.testing.assert_allclose(A[0], 1.0 / math.sqrt(A.shape[1]), rtol=1e-6)
            np.testing.assert_allclose(A[1:].sum(axis=1), 0.0, atol=1e-5)


def test_legendre_dictionary_atoms_are_orthonormalised_sampled_polynomials():
    N = 5
    x = (np.arange(N) - 0.5 * (N - 1)) * 2.0 / N
    # Independent Gram–Schmidt of the sampled polynomials P_0..P_4.
    basis = []
    for k in range(N):
        u = eval_legendre(k, x)
        for v in basis:
            u = u - np.dot(u, v) * v
        basis.append(u / np.linalg.norm(u))
    B = np.array(basis)
    D = dicts.generateLegendreDictionary(N)
    i, j = 2, 3   # atom i·N + j = b_i ⊗ b_j (zero-mean already, as i > 0)
    np.testing.assert_allclose(D[i * N + j, 0], np.outer(B[i], B[j]), atol=1e-6)
    D3 = dicts.generateLegendreDictionary(N, True)
    np.testing.assert_allclose(D3[1 * N * N + 4 * N + 2],
                               np.einsum("a,b,c->abc", B[1], B[4], B[2]), atol=1e-6)


def test_dct_basis_and_gram_schmidt():
    B = dicts.DCTBasis(6)
    np.testing.assert_allclose(B[3], np.cos(np.pi / 6 * (np.arange(6) + 0.5) * 3))
    np.testing.assert_allclose(dicts.DCTBasis(6, type=1)[2], np.cos(np.pi / 6 * np.arange(6) * 2))
    A = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    out = dicts.GramSchmidt(A)
    assert out is A
    np.testing.assert_allclose(A[0], [1 / math.sqrt(2), 1 / math.sqrt(2), 0.0])
    np.testing.assert_allclose(A[1], np.array([0.5, -0.5, 1.0]) / math.sqrt(1.5))
    with pytest.raises(ValueError, match="linearly dependent"):
        dicts.GramSchmidt(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(ValueError, match="at most as many functions as samples"):
        dicts.GramSchmidt(np.ones((3, 2)))
    with pytest.raises(TypeError, match="basisFcns"):
        dicts.GramSchmidt([[1.0, 0.0]])
    np.testing.assert_allclose(dicts.BumpBasis(4)[0], [0.5, 0.25, 0.0, 0.25])
    with pytest.raises(ValueError, match="N_max"):
        dicts.generateDCTDictionary(0)


def test_ridgelet_dictionary_is_an_orthonormal_set_of_ridges():
    D = dicts.generateRidgeletDictionary(4)
    A = D.reshape(D.shape[0], -1).astype(np.float64)
    assert D.shape[1:] == (1, 4, 4) and D.shape[0] == np.linalg.matrix_rank(A) == 14
    np.testing.assert_allclose(A @ A.T, np.eye(14), atol=1e-5)
    # The first atom is the first DCT vector smeared along the rays of view 0° (along y).
    b = np.cos(np.pi / 4 * (np.arange(4) + 0.5))
    b = (b - b.mean()) / np.linalg.norm(b - b.mean()) / 2.0
    np.testing.assert_allclose(D[0, 0], np.tile(b, (4, 1)), atol=1e-5)


def test_generateDictionary_shim_gives_upstreams_names(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    import generateDictionary as gd
    for name in ("GramSchmidt", "LegendrePolynomialBasis", "DCTBasis", "BumpBasis",
                 "generateSeparableBasis", "generateLegendreDictionary",
                 "generateDCTDictionary", "generateRidgeletDictionary", "np"):
        assert name in gd.__all__
    np.testing.assert_array_equal(gd.generateLegendreDictionary(4, True),
                                  dicts.generateLegendreDictionary(4, True))


# ============================================================ DictionaryDenoising
def _patches_reference(f3, D, sparsity, eps):
    """Independent reference: OMP by least squares on every edge-replicated patch."""
    K = D.shape[0]
    P = D.shape[1:]
    A = D.reshape(K, -1).astype(np.float64)
    An = A / np.linalg.norm(A, axis=1, keepdims=True)
    fp = np.pad(f3.astype(np.float64), [(p - 1, p - 1) for p in P], mode="edge")
    acc = np.zeros_like(fp)
    C = [fp.shape[i] - P[i] + 1 for i in range(3)]
    for i in range(C[0]):
        for j in range(C[1]):
            for k in range(C[2]):
                x = fp[i:i + P[0], j:j + P[1], k:k + P[2]].ravel()
                chosen, approx = [], np.zeros_like(x)
                r = x.copy()
                while len(chosen) < sparsity:
                    c = np.abs(An @ r)
                    c[chosen] = -1.0
                    chosen.append(int(np.argmax(c)))
                    coef = np.linalg.lstsq(A[chosen].T, x, rcond=None)[0]
                    approx = A[chosen].T @ coef
                    r = x - approx
                    if eps > 0 and r @ r < eps * (x @ x):
                        break
                acc[i:i + P[0], j:j + P[1], k:k + P[2]] += approx.reshape(P)
    inner = tuple(slice(p - 1, p - 1 + n) for p, n in zip(P, f3.shape))
    return acc[inner] / np.prod(P)


@pytest.mark.parametrize("patch,sparsity,eps", [((1, 3, 3), 3, 0.0), ((2, 2, 3), 2, 0.0),
                                                 ((1, 3, 3), 4, 0.05)])
def test_dictionary_denoising_matches_a_least_squares_omp_reference(patch, sparsity, eps):
    rng = np.random.default_rng(7)
    K = 2 * int(np.prod(patch))                       # overcomplete, not normalised
    D = (rng.standard_normal((K,) + patch) * rng.uniform(0.5, 2.0, (K, 1, 1, 1))).astype(
        np.float32)
    f = rng.standard_normal((3, 6, 5)).astype(np.float32)
    ref = _patches_reference(f, D, sparsity, eps)
    ct = tomographicModels()
    out = ct.DictionaryDenoising(f, D, sparsity, eps)
    assert out is f
    np.testing.assert_allclose(f, ref, rtol=1e-4, atol=1e-5)


def test_complete_orthonormal_dictionary_with_all_elements_is_the_identity():
    f = np.random.default_rng(0).standard_normal((5, 13, 11)).astype(np.float32)
    g = f.copy()
    dictionary_denoise(g, dicts.generateLegendreDictionary(4, True), 64, 0.0)
    np.testing.assert_allclose(g, f, atol=1e-5)


def test_patch_representable_content_is_kept_exactly_away_from_the_edges():
    # Legendre atoms 0, 1 and N are the constant and the two linear ramps.
    yy, xx = np.mgrid[0:20, 0:24]
    f = (0.3 + 0.02 * xx - 0.015 * yy).astype(np.float32)[None]
    g = f.copy()
    dictionary_denoise(g, dicts.generateLegendreDictionary(4), 3, 0.0)
    np.testing.assert_allclose(g[:, 3:-3, 3:-3], f[:, 3:-3, 3:-3], atol=1e-5)
    # With one atom per patch only the patch means survive: a ramp is still a ramp inside.
    g1 = f.copy()
    dictionary_denoise(g1, dicts.generateLegendreDictionary(4), 1, 0.0)
    np.testing.assert_allclose(g1[:, 3:-3, 3:-3], f[:, 3:-3, 3:-3], atol=1e-5)


def test_dictionary_denoising_reduces_the_error_of_a_noisy_piecewise_constant_image():
    rng = np.random.default_rng(11)
    n = 64
    yy, xx = np.mgrid[:n, :n]
    clean = np.zeros((2, n, n), np.float32)
    clean[:, (xx - 30) ** 2 + (yy - 32) ** 2 < 20 ** 2] = 1.0
    clean[:, (xx > 40) & (yy < 20)] = 0.5
    noisy = (clean + 0.1 * rng.standard_normal(clean.shape)).astype(np.float32)
    rmse0 = np.sqrt(np.mean((noisy - clean) ** 2))
    errs = {}
    for eps in (0.0, 0.05):
        g = noisy.copy()
        tomographicModels().DictionaryDenoising(g, dicts.generateLegendreDictionary(4), 4, eps)
        errs[eps] = np.sqrt(np.mean((g - clean) ** 2))
    assert errs[0.0] < 0.85 * rmse0
    assert errs[0.05] < errs[0.0]        # a residual tolerance denoises more
    g = noisy.copy()
    dictionary_denoise(g, dicts.generateLegendreDictionary(4, True), 4, 0.05)
    assert np.sqrt(np.mean((g - clean) ** 2)) < 0.7 * rmse0


def test_dictionary_denoising_of_2d_arrays_and_torch_tensors():
    f2 = np.random.default_rng(2).standard_normal((9, 10)).astype(np.float32)
    D = dicts.generateDCTDictionary(3)
    f3 = f2[None].copy()
    tomographicModels().DictionaryDenoising(f2, D, 2, 0.0)
    dictionary_denoise(f3, D, 2, 0.0)
    np.testing.assert_array_equal(f2, f3[0])
    torch = _torch()
    t = torch.from_numpy(np.random.default_rng(4).standard_normal((9, 10)).astype(np.float32))
    ref = t.numpy().copy()
    dictionary_denoise(ref, D, 2, 0.0)
    out = tomographicModels().DictionaryDenoising(t, torch.from_numpy(D), 2, 0.0)
    assert out is t
    np.testing.assert_array_equal(t.numpy(), ref)


def test_dictionary_denoising_rejects_bad_arguments():
    ct = tomographicModels()
    f = np.zeros((4, 5, 6), np.float32)
    D = dicts.generateLegendreDictionary(2)
    with pytest.raises(ValueError, match="dictionary must be a 4-D"):
        ct.DictionaryDenoising(f, D[:, 0], 2)
    with pytest.raises(ValueError, match="sparsityThreshold must be between 1 and .*4"):
        ct.DictionaryDenoising(f, D, 5)
    with pytest.raises(ValueError, match="sparsityThreshold"):
        ct.DictionaryDenoising(f, D, 0)
    with pytest.raises(TypeError, match="sparsityThreshold must be an integer"):
        ct.DictionaryDenoising(f, D, 2.5)
    with pytest.raises(ValueError, match="epsilon must be a finite number >= 0"):
        ct.DictionaryDenoising(f, D, 2, -0.1)
    with pytest.raises(TypeError, match="f must be float32"):
        ct.DictionaryDenoising(f.astype(np.float64), D, 2)
    with pytest.raises(ValueError, match="f must be a non-empty 2-D or 3-D"):
        ct.DictionaryDenoising(np.zeros(5, np.float32), D, 2)
    bad = f.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="f must be finite"):
        ct.DictionaryDenoising(bad, D, 2)
    Dz = D.copy()
    Dz[1] = 0.0
    with pytest.raises(ValueError, match="all-zero patches"):
        ct.DictionaryDenoising(f, Dz, 2)
    with pytest.raises(TypeError, match="f must be a NumPy array, a torch tensor"):
        ct.DictionaryDenoising([[1.0]], D, 2)


@pytest.mark.slow
def test_demo_d27_flow_denoises_an_fbp_reconstruction(monkeypatch):
    """Upstream's demo d27 at a reduced size: FORBILD, noisy cone-beam data, FBP, then
    ``DictionaryDenoising(f, generateLegendreDictionary(4, True), 4, 0.002)``."""
    monkeypatch.syspath_prepend(str(REPO_ROOT))
    from generateDictionary import generateLegendreDictionary
    leapct = tomographicModels()
    numCols, numRows = 128, 8
    numAngles = 2 * 2 * int(360 * numCols / 1024)
    pixelSize = 0.65 * 512 / numCols
    leapct.set_conebeam(numAngles, numRows, numCols, pixelSize, pixelSize, 0.5 * (numRows - 1),
                        0.5 * (numCols - 1), leapct.setAngleArray(numAngles, 360.0), 1100, 1400)
    leapct.set_default_volume()
    g = leapct.allocate_projections()
    truth = leapct.allocate_volume()
    leapct.set_FORBILD(truth, True)
    leapct.project(g, truth)
    rng = np.random.default_rng(5)
    t = rng.poisson(1e4 * np.exp(-g)).astype(np.float64)
    t[t < 1.0] = 1.0
    g[:] = -np.log(t / 1e4)
    f = leapct.FBP(g)
    f0 = f.copy()
    leapct.DictionaryDenoising(f, generateLegendreDictionary(4, True), 4, 0.002)
    # At this coarse sampling FBP's error at the phantom's edges (partial volume) is as
    # large as the noise; the noise is what the denoising removes: measure it where the
    # phantom is flat over a 7×7 neighbourhood.
    inside = truth > 0
    flat = inside & (maximum_filter(truth, (1, 7, 7)) == minimum_filter(truth, (1, 7, 7)))
    assert flat.sum() > 0.3 * inside.sum()

    def rmse(x, m):
        return np.sqrt(np.mean((x - truth)[m] ** 2))
    assert rmse(f, flat) < 0.85 * rmse(f0, flat)
    assert rmse(f, inside) < 1.05 * rmse(f0, inside)
    assert abs(f[inside].mean() - f0[inside].mean()) < 0.01 * f0[inside].mean()
