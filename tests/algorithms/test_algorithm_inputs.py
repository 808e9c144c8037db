"""Input checks of the iterative methods (leap.algorithms and the facade's
IterativeMethodsMixin): outputs that alias inputs, non-array arguments, masks and volume
masks of other dtypes. Regressions of issue 11, items 3, 11 and 12 (item 4, ASD-POCS's TV
phase, is in ``test_asdpocs.py``)."""
import numpy as np
import pytest

import leap.algorithms as alg
from leap.compat.filter_sequence import TV, LpNorm, filterSequence
from leap.compat.model import tomographicModels
from leap.algorithms.regularization import TotalVariation

N = 12          # detector columns and volume side (small: these are input checks)
VIEWS = 16      # g has more values than the volume (the aliasing tests view one in the other)


def rel(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def small():
    """A parallel-beam scan of a square, with consistent data."""
    ct = tomographicModels()
    ct.set_parallelbeam(VIEWS, 1, N, 1.0, 1.0, 0.0, 0.5 * (N - 1), ct.setAngleArray(VIEWS, 180.0))
    ct.set_default_volume()
    truth = ct.allocate_volume()
    truth[:, 3:9, 4:8] = 0.02
    g = ct.allocate_projections()
    ct.project(g, truth)
    return ct, g, truth


def _tv(ct):
    seq = filterSequence(1e-3)
    seq.append(TV(ct, delta=1e-4))
    return seq


# Every facade method that updates f in place while reading g (and maybe more).
METHODS = {
    "SIRT": lambda ct, g, f, **kw: ct.SIRT(g, f, 2, progress=False, **kw),
    "SART": lambda ct, g, f, **kw: ct.SART(g, f, 2, 2, progress=False, **kw),
    "ASDPOCS": lambda ct, g, f, **kw: ct.ASDPOCS(g, f, 2, 2, 2, progress=False, **kw),
    "OSEM": lambda ct, g, f, **kw: ct.OSEM(g, f, 2, 2, progress=False, **kw),
    "MLEM": lambda ct, g, f, **kw: ct.MLEM(g, f, 2, progress=False, **kw),
    "MLTR": lambda ct, g, f, **kw: ct.MLTR(g, f, 2, 2, progress=False, **kw),
    "LS": lambda ct, g, f, **kw: ct.LS(g, f, 2, progress=False, **kw),
    "WLS": lambda ct, g, f, **kw: ct.WLS(g, f, 2, progress=False, **kw),
    "RLS": lambda ct, g, f, **kw: ct.RLS(g, f, 2, _tv(ct), progress=False, **kw),
    "RWLS": lambda ct, g, f, **kw: ct.RWLS(g, f, 2, _tv(ct), progress=False, **kw),
    "DLS": lambda ct, g, f, **kw: ct.DLS(g, f, 2, progress=False, **kw),
    "RDLS": lambda ct, g, f, **kw: ct.RDLS(g, f, 2, _tv(ct), progress=False, **kw),
}
WITH_MASK = ("SIRT", "SART", "ASDPOCS", "OSEM", "MLEM", "MLTR")
WITH_W = ("WLS", "RWLS")


def _aliased_volume(ct, g):
    """A float32 volume that is a view of g's memory (g has at least as many values)."""
    nvol = int(np.prod(ct.get_volume_dim()))
    assert g.size >= nvol
    return g.reshape(-1)[:nvol].reshape(ct.get_volume_dim())


# ------------------------------------------------------------ item 3: aliasing
@pytest.mark.parametrize("name", list(METHODS))
def test_output_aliasing_the_projections_is_refused(small, name):
    """f sharing g's memory gave a result as wrong as the volume itself, silently (the
    update overwrote the data it was fitting); now a ValueError names f and g, and
    neither array is touched."""
    ct, g0, _ = small
    buf = g0.copy()
    f = _aliased_volume(ct, buf)
    f[...] = 0.0
    before = buf.copy()
    with pytest.raises(ValueError, match=r"\bf\b.*\bg\b.*share memory"):
        METHODS[name](ct, buf, f)
    np.testing.assert_array_equal(buf, before)


@pytest.mark.parametrize("name", WITH_MASK)
def test_output_aliasing_the_mask_is_refused(small, name):
    ct, g, _ = small
    mask = np.ones(g.shape, np.float32)
    f = _aliased_volume(ct, mask)
    f[...] = 0.0
    with pytest.raises(ValueError, match=r"\bf\b.*\bmask\b.*share memory"):
        METHODS[name](ct, g, f, mask=mask)
    assert np.all(mask.reshape(-1)[f.size:] == 1.0)


@pytest.mark.parametrize("name", WITH_W)
def test_output_aliasing_the_weights_is_refused(small, name):
    ct, g, _ = small
    W = np.ones(g.shape, np.float32)
    f = _aliased_volume(ct, W)
    f[...] = 0.0
    with pytest.raises(ValueError, match=r"\bf\b.*weights \(W\).*share memory"):
        METHODS[name](ct, g, f, W=W)


def test_output_aliasing_the_volume_mask_is_refused(small):
    ct, g, _ = small
    f = ct.allocate_volume(1.0)
    ct.set_volume_mask(f)           # the mask is f's own memory
    try:
        with pytest.raises(ValueError, match="volume mask"):
            ct.SART(g, f, 1, progress=False)
    finally:
        ct.clear_volume_mask()


def test_separate_arrays_still_work_and_match(small):
    """The check refuses only real overlap: a copy of the same values runs as before."""
    ct, g, truth = small
    f = ct.SIRT(g.copy(), ct.allocate_volume(), 20, progress=False)
    assert rel(f, truth) < 0.5


def test_prior_of_the_bilateral_filter_may_share_f(small):
    """PriorBilateralFilter builds its result before writing f, so a prior that is f
    itself gives the result of an independent copy (no refusal needed)."""
    ct, _, truth = small
    rng = np.random.default_rng(0)
    noisy = (truth + rng.normal(0, 0.002, truth.shape)).astype(np.float32)
    a = noisy.copy()
    ct.PriorBilateralFilter(a, 2.0, 0.01, prior=noisy.copy())
    b = noisy.copy()
    ct.PriorBilateralFilter(b, 2.0, 0.01, prior=b)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, noisy)
    with pytest.raises(ValueError, match="prior must have f's shape"):
        ct.PriorBilateralFilter(noisy.copy(), 2.0, 0.01, prior=np.zeros((2, 2, 2), np.float32))
    with pytest.raises(TypeError, match="prior"):
        ct.PriorBilateralFilter(noisy.copy(), 2.0, 0.01, prior=[1.0, 2.0])


@pytest.mark.parametrize("make", [
    lambda ct, f0: TV(ct, delta=1e-3, f_0=f0),
    lambda ct, f0: LpNorm(ct, delta=1e-3, f_0=f0),
    lambda ct, f0: TotalVariation(1e-3, f0=f0),
])
def test_regulariser_prior_sharing_the_volume_is_refused(small, make):
    """A prior f_0 that is the volume being regularised makes f − f_0 = 0: the term
    would silently do nothing. Raise instead."""
    ct, _, truth = small
    f = truth.copy()
    reg = make(ct, f)
    with pytest.raises(ValueError, match=r"\bf\b.*f_?0.*share memory"):
        reg.gradient(f)
    ok = make(ct, truth * 0.5)
    assert np.any(ok.gradient(f) != 0)


# ------------------------------------------------- item 11: non-array arguments
@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("bad", [None, 3.0, "list"], ids=["None", "scalar", "list"])
def test_non_array_volume_or_projections_raise_type_error_naming_them(small, name, bad):
    ct, g, _ = small
    if bad == "list":
        bad = [0.0] * int(np.prod(ct.get_volume_dim()))
    g0 = g.copy()
    with pytest.raises(TypeError, match=r"^f must be .*float32 array of shape"):
        METHODS[name](ct, g, bad)
    with pytest.raises(TypeError, match=r"^g must be .*float32 array of shape"):
        METHODS[name](ct, bad, ct.allocate_volume())
    np.testing.assert_array_equal(g, g0)


FILTERS = {
    "BlurFilter": lambda ct, f: ct.BlurFilter(f, 2.0),
    "HighPassFilter2D": lambda ct, f: ct.HighPassFilter2D(f, 2.0),
    "MedianFilter": lambda ct, f: ct.MedianFilter(f),
    "BilateralFilter": lambda ct, f: ct.BilateralFilter(f, 2.0, 0.01),
    "GuidedFilter": lambda ct, f: ct.GuidedFilter(f, 1, 1e-4),
    "diffuse": lambda ct, f: ct.diffuse(f, 1e-3, 2),
    "TV_denoise": lambda ct, f: ct.TV_denoise(f, 1e-3, 0.1, 2),
}


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("bad", [None, 3.0, [[0.0, 1.0]]], ids=["None", "scalar", "list"])
def test_filters_refuse_non_arrays_naming_f(small, name, bad):
    """The in-place filters raised AttributeError from inside leap.algorithms.regularization for a
    volume that was None or a number; now a TypeError names f."""
    ct, _, _ = small
    with pytest.raises(TypeError, match="^f must be"):
        FILTERS[name](ct, bad)


@pytest.mark.parametrize("name", list(FILTERS))
def test_filters_refuse_integer_volumes(small, name):
    """An integer volume would silently truncate the filtered values written into it."""
    ct, _, truth = small
    f = (truth * 1000).astype(np.int32)
    f0 = f.copy()
    with pytest.raises(TypeError, match="floating-point"):
        FILTERS[name](ct, f)
    np.testing.assert_array_equal(f, f0)


def test_core_functions_name_bad_arguments(small):
    ct, g, _ = small
    op = alg.CTOperator(ct.core_geometry(), ct.core_volume())
    f = np.zeros(op.domain_shape, np.float32)
    with pytest.raises(TypeError, match="^f must be"):
        alg.sirt(op, g, None, 1)
    with pytest.raises(TypeError, match="^g must be"):
        alg.rwls(op, [1.0], f, 1)
    with pytest.raises(TypeError, match="^mask must be"):
        alg.sart(op, g, f, 1, mask=[1.0])
    with pytest.raises(TypeError, match=r"weights \(W\) must be"):
        alg.wls(op, g, f, 1, weights=[1.0, 2.0])
    with pytest.raises(TypeError, match="mask must be a numeric"):
        alg.sart(op, g, f, 1, mask=np.full(g.shape, "x"))
    bad = np.ones(g.shape, np.float32)
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="mask contains NaN"):
        alg.sart(op, g, f, 1, mask=bad)


def test_projection_masks_negative_entries_count_as_zero(small):
    """SIRT's documented rule, 'negatives are set to 0', was not applied: a −1 entry
    flipped the sign of that pixel's update. Now it counts as 0 (the caller's mask is
    unchanged)."""
    ct, g, _ = small
    m = np.ones(g.shape, np.float32)
    m[:, :, :2] = 0.0
    neg = m.copy()
    neg[:, :, :2] = -1.0
    neg0 = neg.copy()
    for run in (lambda mask: ct.SIRT(g, ct.allocate_volume(), 3, mask, progress=False),
                lambda mask: ct.SART(g, ct.allocate_volume(), 3, 2, mask, progress=False),
                lambda mask: ct.MLEM(g, ct.allocate_volume(), 3, None, mask, progress=False)):
        np.testing.assert_array_equal(run(neg), run(m))
    np.testing.assert_array_equal(neg, neg0)


def test_integer_and_bool_masks_are_used_as_float(small):
    """A 0/1 projection mask given as bool or int gives SART's float32-mask result (a
    float32 copy is used; the caller's array is unchanged)."""
    ct, g, _ = small
    m = np.ones(g.shape, np.float32)
    m[:, :, :2] = 0.0
    ref = ct.SART(g, ct.allocate_volume(), 3, 2, m, progress=False)
    for mask in (m.astype(bool), m.astype(np.int32), m.astype(np.float64)):
        mask0 = mask.copy()
        f = ct.SART(g, ct.allocate_volume(), 3, 2, mask, progress=False)
        np.testing.assert_array_equal(f, ref)
        np.testing.assert_array_equal(mask, mask0)
    W = m.astype(np.float64)
    a = ct.WLS(g, ct.allocate_volume(), 3, W, progress=False)
    b = ct.WLS(g, ct.allocate_volume(), 3, m, progress=False)
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)


# --------------------------------------------- item 12: set_volume_mask dtypes
@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8, bool])
def test_volume_mask_of_another_dtype_is_converted(small, dtype):
    """set_volume_mask took an int32/float64 mask as it was; project and SIRT with valid
    float32 arrays then failed, blaming the caller's f dtype. The mask is now stored as
    float32 (the caller's array unchanged) and gives the float32 mask's results."""
    ct, g, truth = small
    m32 = np.zeros(ct.get_volume_dim(), np.float32)
    m32[:, 2:10, 2:10] = 1.0
    ct.set_volume_mask(m32)
    try:
        ref_p = ct.project(ct.allocate_projections(), truth)
        ref_s = ct.SIRT(g, ct.allocate_volume(), 3, progress=False)
        mask = m32.astype(dtype)
        mask0 = mask.copy()
        ct.set_volume_mask(mask)
        assert ct.volume_mask.dtype == np.float32
        np.testing.assert_array_equal(mask, mask0)
        np.testing.assert_array_equal(ct.project(ct.allocate_projections(), truth), ref_p)
        np.testing.assert_array_equal(ct.SIRT(g, ct.allocate_volume(), 3, progress=False), ref_s)
    finally:
        ct.clear_volume_mask()


def test_volume_mask_validation(small):
    ct, _, _ = small
    shape = ct.get_volume_dim()
    try:
        with pytest.raises(ValueError, match="shape"):
            ct.set_volume_mask(np.ones((2, 2, 2), np.float32))
        with pytest.raises(ValueError, match="3-D"):
            ct.set_volume_mask(np.ones(shape[1:], np.float32))
        with pytest.raises(TypeError, match="vol_mask must be an array"):
            ct.set_volume_mask([[[1.0]]])
        with pytest.raises(TypeError, match="numeric"):
            ct.set_volume_mask(np.full(shape, "a"))
        bad = np.ones(shape, np.float32)
        bad[0, 0, 0] = np.inf
        with pytest.raises(ValueError, match="NaN or infinite"):
            ct.set_volume_mask(bad)
        assert ct.volume_mask is None          # nothing kept from the refused masks
        m = np.ones(shape, np.float32)
        ct.set_volume_mask(m)
        assert ct.volume_mask is m             # float32 masks are kept as they are
    finally:
        ct.clear_volume_mask()


def test_volume_mask_torch_tensor_is_converted(small):
    torch = pytest.importorskip("torch")
    ct, _, _ = small
    m = torch.zeros(ct.get_volume_dim(), dtype=torch.int64)
    m[:, 2:10, 2:10] = 1
    try:
        ct.set_volume_mask(m)
        assert ct.volume_mask.dtype == torch.float32
        assert m.dtype == torch.int64
        # the same 0/1 values, a copy (the caller's tensor is unchanged)
        np.testing.assert_array_equal(ct.volume_mask.numpy(), m.numpy().astype(np.float32))
        assert ct.volume_mask.data_ptr() != m.data_ptr()
        assert int(m.sum()) == 64 and float(ct.volume_mask.sum()) == 64.0
    finally:
        ct.clear_volume_mask()
