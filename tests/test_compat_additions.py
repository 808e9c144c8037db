"""Issue 11, items 15–16: leaptorch keyword names, and the facade methods
``DictionaryDenoising`` (with upstream's dictionary generators), ``BPF`` and
``rebin_parallel_sinogram``."""
import inspect
import math
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.ndimage import maximum_filter, minimum_filter
from scipy.special import eval_legendre

from leap.compat import dictionaries as dicts
from leap.bpf import bpf
from leap.dictionary_denoising import dictionary_denoise
from leap.compat.model import tomographicModels
from leap.rebin import rebin_parallel_sinogram

REPO = Path(__file__).resolve().parent.parent


def _disc_volume(ct, discs):
    """The facade's volume with uniform cylinders (x, y, radius, value) in mm, z-invariant."""
    f = ct.allocate_volume()
    x = ct.x_samples()[None, :]
    y = ct.y_samples()[:, None]
    for cx, cy, r, val in discs:
        f[:, (x - cx) ** 2 + (y - cy) ** 2 < r * r] = val
    return f


# ============================================================ item 15: leaptorch keywords
def _torch():
    return pytest.importorskip("torch")


def _modular_arrays(n=4):
    ct = tomographicModels()
    ct.set_conebeam(n, 3, 6, 1.0, 1.0, 1.0, 2.5, ct.setAngleArray(n, 360.0), 50.0, 100.0)
    ct.convert_to_modularbeam()
    return (ct.get_sourcePositions(), ct.get_moduleCenters(), ct.get_rowVectors(),
            ct.get_colVectors())


def test_projector_setters_take_tomographicModels_keyword_names():
    """Every Projector.set_* that tomographicModels also has accepts all of
    tomographicModels' parameter names."""
    _torch()
    from leap.torch import Projector
    checked = []
    for name, meth in inspect.getmembers(Projector, inspect.isfunction):
        if not name.startswith("set_") or not hasattr(tomographicModels, name):
            continue
        theirs = list(inspect.signature(getattr(tomographicModels, name)).parameters)[1:]
        ours = inspect.signature(meth).parameters
        missing = [p for p in theirs if p not in ours]
        assert not missing, f"Projector.{name} lacks tomographicModels' keyword(s) {missing}"
        checked.append(name)
    for name in ("set_parallelbeam", "set_fanbeam", "set_conebeam", "set_coneparallel",
                 "set_modularbeam", "set_volume", "set_default_volume", "set_gpu", "set_gpus"):
        assert name in checked


def test_projector_setters_called_with_keywords_match_the_facade(tmp_path):
    _torch()
    from leap.torch import Projector
    phis = np.array([0.0, 60.0, 120.0], dtype=np.float32)
    common = dict(numAngles=3, numRows=2, numCols=8, pixelHeight=1.0, pixelWidth=1.0,
                  centerRow=0.5, centerCol=3.5, phis=phis)
    cases = [
        ("set_parallelbeam", common),
        ("set_fanbeam", dict(common, sod=100.0, sdd=200.0, tau=1.5)),
        ("set_conebeam", dict(common, sod=100.0, sdd=200.0, tau=1.5, helicalPitch=0.5,
                              tiltAngle=2.0)),
        ("set_coneparallel", dict(common, sod=100.0, sdd=200.0, tau=0.0, helicalPitch=0.0)),
    ]
    src, mc, rv, cv = _modular_arrays(3)
    cases.append(("set_modularbeam", dict(numAngles=3, numRows=3, numCols=6, pixelHeight=1.0,
                                          pixelWidth=1.0, sourcePositions=src,
                                          moduleCenters=mc, rowVectors=rv, colVectors=cv)))
    for name, kw in cases:
        p, ref = Projector(), tomographicModels()
        getattr(p, name)(**kw)
        getattr(ref, name)(**kw)
        assert p.leapct._parameters_text() == ref._parameters_text(), name
        p.set_volume(numX=6, numY=5, numZ=3, voxelWidth=0.5, voxelHeight=0.75, offsetX=0.25,
                     offsetY=-0.5, offsetZ=0.125)
        ref.set_volume(numX=6, numY=5, numZ=3, voxelWidth=0.5, voxelHeight=0.75,
                       offsetX=0.25, offsetY=-0.5, offsetZ=0.125)
        assert p.leapct._parameters_text() == ref._parameters_text(), name
        p.set_default_volume(scale=2.0)
        ref.set_default_volume(scale=2.0)
        assert p.get_volume_dim() == ref.get_volume_dim(), name
    # conebeam's tilt really arrives
    p = Projector()
    p.set_conebeam(**dict(common, sod=100.0, sdd=200.0, tiltAngle=2.0))
    assert p.leapct.get_tiltAngle() == 2.0
    # set_volume's sizes default to the nominal ones, as tomographicModels'
    p.set_volume(numX=4, numY=4, numZ=2)
    assert p.leapct.get_voxelWidth() == pytest.approx(0.5)
    p.set_gpu(which=-1)
    p.set_gpus(listOfGPUs=[-1])
    p.set_gpus(listofgpus=[-1])        # upstream leaptorch's name still works
    p.set_GPUs(listOfGPUs=[-1])
    fn = tmp_path / "g.param"
    p.save_param(fileName=str(fn))
    q = Projector()
    q.load_param(fileName=str(fn))
    assert q.leapct.get_tiltAngle() == 2.0 and q.get_volume_dim() == p.get_volume_dim()
    q2 = Projector()
    q2.load_param(param_fn=str(fn))
    assert q2.get_projection_dim() == p.get_projection_dim()


def test_projector_set_modularbeam_keywords_project_like_the_facade():
    torch = _torch()
    from leap.torch import Projector
    src, mc, rv, cv = _modular_arrays(4)
    ref = tomographicModels()
    ref.set_modularbeam(4, 3, 6, 1.0, 1.0, src, mc, rv, cv)
    ref.set_default_volume()
    f = np.random.default_rng(3).random(ref.get_volume_dim(), dtype=np.float32)
    g_ref = ref.project(ref.allocate_projections(), f)
    for kw in (dict(moduleCenters=mc, rowVectors=rv, colVectors=cv),
               dict(detectorCenters=mc, rowVec=rv, colVec=cv)):     # upstream leaptorch's
        p = Projector()
        p.set_modularbeam(numAngles=4, numRows=3, numCols=6, pixelHeight=1.0, pixelWidth=1.0,
                          sourcePositions=torch.from_numpy(src),
                          **{k: torch.from_numpy(v) for k, v in kw.items()})
        p.set_default_volume()
        g = p(torch.from_numpy(f)[None])[0].numpy()
        np.testing.assert_allclose(g, g_ref, rtol=1e-6, atol=1e-6)
    p = Projector()
    with pytest.raises(TypeError, match="moduleCenters.*detectorCenters"):
        p.set_modularbeam(4, 3, 6, 1.0, 1.0, src, mc, rv, cv, detectorCenters=mc)
    with pytest.raises(TypeError, match="missing argument 'rowVectors'"):
        p.set_modularbeam(4, 3, 6, 1.0, 1.0, src, moduleCenters=mc, colVectors=cv)


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
    monkeypatch.syspath_prepend(str(REPO))
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


def test_demo_d27_flow_denoises_an_fbp_reconstruction(monkeypatch):
    """Upstream's demo d27 at a reduced size: FORBILD, noisy cone-beam data, FBP, then
    ``DictionaryDenoising(f, generateLegendreDictionary(4, True), 4, 0.002)``."""
    monkeypatch.syspath_prepend(str(REPO))
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


# ============================================================ BPF
def _parallel(nA, rng_deg, nC=96, nR=2):
    ct = tomographicModels()
    ct.set_parallelbeam(nA, nR, nC, 1.0, 1.0, 0.5 * (nR - 1), 0.5 * (nC - 1),
                        ct.setAngleArray(nA, rng_deg))
    ct.set_default_volume()
    return ct


@pytest.mark.parametrize("rng_deg,nA", [(180.0, 120), (360.0, 240), (270.0, 180)])
def test_bpf_reconstructs_a_uniform_disc_to_its_attenuation(rng_deg, nA):
    ct = _parallel(nA, rng_deg)
    mu = 0.02
    f = _disc_volume(ct, [(0.0, 0.0, 22.0, mu)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.allocate_volume()
    out = ct.BPF(g, rec)
    assert out is rec
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    inside = np.broadcast_to(x ** 2 + y ** 2 < 18.0 ** 2, rec.shape[1:])
    assert abs(rec[:, inside].mean() / mu - 1.0) < 0.005
    ring = np.broadcast_to((x ** 2 + y ** 2 > 26.0 ** 2) & (x ** 2 + y ** 2 < 44.0 ** 2),
                           rec.shape[1:])
    assert abs(rec[:, ring].mean()) < 0.01 * mu
    # zero outside the field of view, as FBP
    outside = np.broadcast_to(x ** 2 + y ** 2 > ct.get_diameterFOV() ** 2 / 4, rec.shape[1:])
    assert np.all(rec[:, outside] == 0.0)


def test_bpf_agrees_with_fbp_on_a_phantom():
    ct = _parallel(180, 180.0)
    f = _disc_volume(ct, [(0.0, 0.0, 35.0, 0.02), (10.0, -5.0, 8.0, 0.04),
                          (-15.0, 10.0, 5.0, 0.01)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.BPF(g)
    fbp = ct.FBP(g)
    rel = np.linalg.norm(rec - fbp) / np.linalg.norm(fbp)
    assert rel < 0.03
    # both reconstruct f about equally well
    e_bpf = np.linalg.norm(rec - f) / np.linalg.norm(f)
    e_fbp = np.linalg.norm(fbp - f) / np.linalg.norm(f)
    assert e_bpf < 1.15 * e_fbp


def test_bpf_of_an_offset_detector_scan():
    ct = tomographicModels()
    ct.set_parallelbeam(240, 1, 70, 1.0, 1.0, 0.0, 15.0, ct.setAngleArray(240, 360.0))
    ct.set_offsetScan(True)
    ct.set_default_volume()
    f = _disc_volume(ct, [(0.0, 0.0, 30.0, 0.02), (8.0, -5.0, 6.0, 0.04)])
    g = ct.project(ct.allocate_projections(), f)
    rec = ct.BPF(g)
    fbp = ct.FBP(g)
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    flat = (x ** 2 + y ** 2 < 20.0 ** 2) & ((x - 8.0) ** 2 + (y + 5.0) ** 2 > 8.0 ** 2)
    assert abs(rec[:, flat].mean() / 0.02 - 1.0) < 0.01
    assert np.linalg.norm(rec - fbp) / np.linalg.norm(fbp) < 0.03
    # without the half-fan weights the doubly measured band would count twice
    plain = bpf(ct.core_geometry(), ct.core_volume(), g, fov_radius=ct.get_diameterFOV() / 2)
    assert np.linalg.norm(plain - fbp) / np.linalg.norm(fbp) > 0.1


def test_bpf_extended_backprojection_removes_the_truncation_bias():
    """Back-projecting onto the volume alone (upstream's BPF) biases the result: the ramp
    filter misses the tails of the back-projection."""
    ct = _parallel(120, 180.0)
    f = _disc_volume(ct, [(0.0, 0.0, 40.0, 0.02)])
    g = ct.project(ct.allocate_projections(), f)
    x, y = ct.x_samples()[None, :], ct.y_samples()[:, None]
    inside = np.broadcast_to(x ** 2 + y ** 2 < 30.0 ** 2, f.shape[1:])
    bias = {}
    for ext in (0.0, 1.0):
        rec = bpf(ct.core_geometry(), ct.core_volume(), g, extension=ext)
        bias[ext] = rec[:, inside].mean() / 0.02 - 1.0
    assert bias[0.0] > 0.02
    assert abs(bias[1.0]) < 0.015


def test_bpf_rejects_other_geometries_and_bad_input():
    ct = tomographicModels()
    ct.set_fanbeam(60, 1, 64, 1.0, 1.0, 0.0, 31.5, ct.setAngleArray(60, 360.0), 200, 400)
    ct.set_default_volume()
    with pytest.raises(ValueError, match="BPF reconstructs parallel-beam data only"):
        ct.BPF(ct.allocate_projections())
    ct = _parallel(30, 180.0, nC=32)
    with pytest.raises(ValueError, match="g must have shape"):
        ct.BPF(np.zeros((30, 2, 31), np.float32))
    with pytest.raises(ValueError, match="extension"):
        bpf(ct.core_geometry(), ct.core_volume(), ct.allocate_projections(), extension=-1)
    ct.set_cylindircalAttenuationMap(0.01, 10.0)
    with pytest.raises(ValueError, match="attenuation map"):
        ct.BPF(ct.allocate_projections())


def test_bpf_takes_torch_tensors():
    torch = _torch()
    ct = _parallel(60, 180.0, nC=48)
    f = _disc_volume(ct, [(0.0, 0.0, 12.0, 0.02)])
    g = ct.project(ct.allocate_projections(), f)
    ref = ct.BPF(g)
    out = ct.BPF(torch.from_numpy(g))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), ref)


# ============================================================ rebin_parallel_sinogram
def _fan_or_cone(kind, nA=120, nR=5, nC=96, rng_deg=360.0, tau=0.0, tilt=0.0, centerCol=None):
    ct = tomographicModels()
    cc = 0.5 * (nC - 1) if centerCol is None else centerCol
    args = (nA, nR, nC, 1.0, 1.0, 0.5 * (nR - 1), cc, ct.setAngleArray(nA, rng_deg), 300.0, 600.0)
    if kind == "fan":
        ct.set_fanbeam(*args, tau=tau)
    else:
        ct.set_conebeam(*args, tau=tau, tiltAngle=tilt)
    ct.set_default_volume()
    return ct


DISCS = [(4.0, -3.0, 14.0, 0.02), (-9.0, 7.0, 5.0, 0.04)]


def _parallel_reference(ct, f, angles_deg, T_s, nC, center_col, iz):
    """Parallel-beam projection of slice ``iz`` of f (the same voxels) at ``angles_deg``."""
    p = tomographicModels()
    p.set_parallelbeam(len(angles_deg), 1, nC, 1.0, T_s, 0.0, center_col, angles_deg)
    p.set_volume(ct.get_numX(), ct.get_numY(), 1, ct.get_voxelWidth(), 1.0)
    gp = p.allocate_projections()
    p.project(gp, np.ascontiguousarray(f[iz:iz + 1]))
    return gp[:, 0, :]


@pytest.mark.parametrize("kind,tau", [("fan", 0.0), ("fan", 3.0), ("cone", 0.0)])
def test_rebin_parallel_sinogram_is_a_parallel_beam_sinogram(kind, tau):
    ct = _fan_or_cone(kind, tau=tau)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    g_copy = g.copy()
    params = ct._parameters_text()
    sino = ct.rebin_parallel_sinogram(g, 6, 2)
    assert sino.shape == (120, 96) and sino.dtype == np.float32
    np.testing.assert_array_equal(g, g_copy)            # input and geometry unchanged
    assert ct._parameters_text() == params
    T_s = 1.0 * math.hypot(300.0, tau) / 600.0
    ref = _parallel_reference(ct, f, ct.get_angles(), T_s, 96, 47.5, f.shape[0] // 2)
    assert np.linalg.norm(sino - ref) / np.linalg.norm(ref) < 0.01
    # the same numbers as the whole-data rebinning, row by row
    g2 = g.copy()
    ct.rebin_parallel(g2)
    np.testing.assert_array_equal(sino, g2[:, 2, :])


def test_rebin_parallel_sinogram_row_selection():
    ct = _fan_or_cone("cone", nR=6)
    f = _disc_volume(ct, DISCS)
    f *= (1.0 + np.arange(f.shape[0], dtype=np.float32))[:, None, None]     # rows differ
    g = ct.project(ct.allocate_projections(), f)
    nearest = math.floor(0.5 + ct.get_centerRow())                         # 2.5 → 3
    for iRow in (-1, 6, 100):
        np.testing.assert_array_equal(ct.rebin_parallel_sinogram(g, 6, iRow),
                                      ct.rebin_parallel_sinogram(g, 6, nearest))
    assert not np.allclose(ct.rebin_parallel_sinogram(g, 6, 0),
                           ct.rebin_parallel_sinogram(g, 6, 5))


def test_rebin_parallel_sinogram_short_scan_keeps_the_fully_measured_views():
    ct = _fan_or_cone("fan", nA=100, rng_deg=240.0)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    with pytest.warns(RuntimeWarning, match="only the first"):
        sino = ct.rebin_parallel_sinogram(g)
    g2 = g.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ct.rebin_parallel(g2)
    n = ct.get_numAngles()
    assert 0 < n < 100
    np.testing.assert_array_equal(sino[:n], g2[:n, 2, :])
    assert np.all(sino[n:] == 0.0)


def test_rebin_parallel_sinogram_offset_scan_fills_a_centred_double_detector():
    ct = tomographicModels()
    nA, nC = 120, 56
    ct.set_fanbeam(nA, 3, nC, 1.0, 1.0, 1.0, 10.0, ct.setAngleArray(nA, 360.0), 300.0, 600.0)
    ct.set_offsetScan(True)
    ct.set_default_volume()
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    sino = ct.rebin_parallel_sinogram(g)
    assert sino.shape == (nA // 2, 2 * nC)
    ref = _parallel_reference(ct, f, ct.get_angles()[:nA // 2], 0.5, 2 * nC, nC - 0.5, 1)
    assert np.linalg.norm(sino - ref) / np.linalg.norm(ref) < 0.03


def test_rebin_parallel_sinogram_undoes_a_detector_tilt():
    def sinogram(tilt, model_tilt):
        ct = tomographicModels()
        ct.set_conebeam(90, 31, 100, 1.0, 1.0, 15.0, 49.5, ct.setAngleArray(90, 360.0), 400.0,
                        800.0, tiltAngle=tilt)
        ct.set_volume(80, 80, 40, 0.5, 0.5)
        f = ct.allocate_volume()
        z = ct.z_samples()[:, None, None]
        x, y = ct.x_samples()[None, None, :], ct.y_samples()[None, :, None]
        f[np.broadcast_to((x - 2.5) ** 2 + (y + 1.5) ** 2 < 7.5 ** 2, f.shape)] = 0.02
        f[((x + 5) ** 2 + (y - 4) ** 2 < 9.0) & (z > 1.0)] = 0.04
        f[((x - 6) ** 2 + (y - 6) ** 2 < 6.25) & (z < -0.5)] = 0.05
        g = ct.project(ct.allocate_projections(), f)
        geo = ct.core_geometry().with_changes(tilt=math.radians(model_tilt))
        return rebin_parallel_sinogram(geo, g, 6, 17)
    straight = sinogram(0.0, 0.0)
    corrected = sinogram(3.0, 3.0)
    ignored = sinogram(3.0, 0.0)
    err = np.linalg.norm(corrected - straight) / np.linalg.norm(straight)
    err_ignored = np.linalg.norm(ignored - straight) / np.linalg.norm(straight)
    assert err < 0.05 and err < 0.25 * err_ignored


def test_rebin_parallel_sinogram_feeds_the_bowtie_centre_search():
    from leap.compat.preprocessing.calibration import bowtie_alignment_metric
    ct = _fan_or_cone("fan", nA=180, nR=1, nC=96, centerCol=45.0)
    f = _disc_volume(ct, DISCS)
    g = ct.project(ct.allocate_projections(), f)
    metric = {}
    for cc in (41.0, 45.0, 49.0):
        ct.set_centerCol(cc)
        metric[cc] = bowtie_alignment_metric(ct, g)
    assert metric[45.0] < min(metric[41.0], metric[49.0])


def test_rebin_parallel_sinogram_rejects_bad_input_and_takes_tensors():
    ct = _parallel(30, 180.0, nC=32)
    with pytest.raises(ValueError, match="fan-beam or cone-beam"):
        ct.rebin_parallel_sinogram(ct.allocate_projections())
    ct = _fan_or_cone("fan", nA=40, nC=32)
    with pytest.raises(ValueError, match="g must have shape"):
        ct.rebin_parallel_sinogram(np.zeros((40, 5, 31), np.float32))
    with pytest.raises(TypeError, match="iRow must be an integer"):
        ct.rebin_parallel_sinogram(ct.allocate_projections(), 6, 1.5)
    torch = _torch()
    g = ct.project(ct.allocate_projections(), _disc_volume(ct, [(0.0, 0.0, 5.0, 0.02)]))
    out = ct.rebin_parallel_sinogram(torch.from_numpy(g))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), ct.rebin_parallel_sinogram(g))
