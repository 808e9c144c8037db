"""Geometry editing, range queries, calibration, masks and resampling of the LEAP facade
(leap/compat/geometry_methods.py). The calibration numerics are tested directly in
tests/geometry/test_geometric_calibration.py."""
import numpy as np
import pytest

from leap.compat.model import tomographicModels

NA, NC = 90, 64


def _blobs(ct):
    """A few balls (1/mm) inside the field of view."""
    x, y, z = ct.voxelSamples()
    return (0.02 * ((x - 3) ** 2 + (y + 2) ** 2 + z ** 2 < 12 ** 2)
            + 0.03 * ((x + 8) ** 2 + (y - 5) ** 2 + (z - 3) ** 2 < 5 ** 2)
            + 0.05 * ((x - 10) ** 2 + (y - 9) ** 2 + (z + 4) ** 2 < 3 ** 2)).astype(np.float32)


def _model(kind, nr=4, center_col=0.5 * (NC - 1), tau=0.0, center_row=None, na=NA, rng=360.0):
    ct = tomographicModels()
    cr = 0.5 * (nr - 1) if center_row is None else center_row
    args = (na, nr, NC, 1.0, 1.0, cr, center_col, ct.setAngleArray(na, rng))
    if kind == "parallel":
        ct.set_parallelbeam(*args)
    elif kind == "fan":
        ct.set_fanbeam(*args, 500.0, 1000.0, tau)
    else:
        ct.set_conebeam(*args, 500.0, 1000.0, tau)
    ct.set_default_volume()
    return ct


def _data(ct):
    g = ct.allocate_projections()
    ct.project(g, _blobs(ct))
    return g


# ------------------------------------------------------------------ calibration
@pytest.mark.parametrize("kind", ["parallel", "fan", "cone"])
def test_find_centerCol_recovers_offset(kind):
    true = 0.5 * (NC - 1) + 3.3
    ct = _model(kind, center_col=true)
    g = _data(ct)
    ct.set_centerCol(0.0)
    cost = ct.find_centerCol(g)
    assert abs(ct.get_centerCol() - true) <= 0.25
    assert 0.0 <= cost < 1e-3


def test_find_centerCol_tilted_cone():
    true = 0.5 * (NC - 1) + 4.4
    ct = _model("cone", nr=16, center_col=true, center_row=9.0)
    ct.set_tiltAngle(3.0)
    g = _data(ct)
    ct.set_centerCol(20.0)
    ct.find_centerCol(g)
    assert abs(ct.get_centerCol() - true) <= 0.25


def test_find_centerCol_search_bounds_and_bad_input():
    ct = _model("parallel", center_col=30.0)
    g = _data(ct)
    ct.find_centerCol(g, searchBounds=[25, 35])
    assert abs(ct.get_centerCol() - 30.0) <= 0.25
    with pytest.raises(ValueError, match="searchBounds"):
        ct.find_centerCol(g, searchBounds=[40, 20])
    with pytest.raises(ValueError, match="shape"):
        ct.find_centerCol(g[:, :, :10])
    short = _model("parallel", na=30, rng=90.0)
    with pytest.raises(ValueError, match="180 degrees"):
        short.find_centerCol(short.allocate_projections())


def test_find_tau_fan():
    ct = _model("fan", tau=2.0)
    g = _data(ct)
    ct.set_tau(0.0)
    ct.find_tau(g)
    assert abs(ct.get_tau() - 2.0) <= 0.25 * 500.0 / 1000.0
    with pytest.raises(ValueError, match="fan- and cone-beam"):
        _model("parallel").find_tau(g)


@pytest.mark.parametrize("kind", ["parallel", "cone"])
def test_estimate_tilt_recovers_detector_rotation(kind):
    # An off-centre detector: the rotation is about the module centre, not the axis.
    ct = _model(kind, nr=32, center_row=15.5 - 3.25, center_col=31.5 + 5.75)
    if kind == "cone":
        # Cone-beam conjugate projections differ off the mid-plane; at d12's cone angle
        # that biases the estimate by ~0.15 degrees (as in LEAP).
        ct.set_sdd(1400.0)
        ct.set_sod(1100.0)
        ct.set_default_volume()
    rot = tomographicModels()
    rot.copy_parameters(ct)
    rot.convert_to_modularbeam()
    rot.rotate_detector(2.34)
    g = ct.allocate_projections()
    rot.project(g, _blobs(ct))
    alpha = ct.estimate_tilt(g)
    assert abs(alpha - 2.34) <= (0.1 if kind == "parallel" else 0.25)
    d0, da = ct.conjugate_difference(g, 0.0), ct.conjugate_difference(g, alpha)
    assert d0.shape == (32, NC) and d0.dtype == np.float32
    assert np.sum(da ** 2) < 0.2 * np.sum(d0 ** 2)


def test_consistency_cost_minimal_at_true_geometry():
    ct = _model("cone", nr=32)
    g = _data(ct)
    c0 = ct.consistency_cost(g)
    assert ct.consistency_cost(g, [0.0, 1.0]) > c0 and ct.consistency_cost(g, 0.0, -1.0) > c0
    assert ct.consistency_cost(g, 0.0, 0.0, 0.0, 1.0) > c0
    with pytest.raises(ValueError, match="cone-beam"):
        _model("fan").consistency_cost(g)


def test_inconsistency_reconstruction():
    ct = _model("parallel", center_col=0.5 * (NC - 1) + 2.0)
    g = _data(ct)
    good = ct.inconsistencyReconstruction(g)
    ct.set_centerCol(ct.get_centerCol() + 2.0)
    bad = ct.inconsistencyReconstruction(g)
    assert np.abs(bad).sum() > 5 * np.abs(good).sum()
    short = _model("parallel", na=45, rng=180.0)
    gs = _data(short)
    np.testing.assert_allclose(short.inconsistencyReconstruction(gs), short.FBP(gs), atol=1e-6)


# ------------------------------------------------------------------ range queries
def _touched_slices(ct):
    """Slices any ray of the detector reaches: the back-projection of ones is > 0 there."""
    f = ct.allocate_volume()
    ct.backproject(ct.allocate_projections(1.0), f)
    return np.nonzero(f.reshape(f.shape[0], -1).max(axis=1) > 0)[0]


@pytest.mark.parametrize("helical", [False, True])
def test_slice_range_contains_touched_slices(helical):
    ct = _model("cone", nr=16, na=24)
    if helical:
        ct.set_normalizedHelicalPitch(0.5)
    ct.set_numZ(ct.get_numZ() + 24)            # a long object: slices beyond the cone
    touched = _touched_slices(ct)
    lo, hi = ct.sliceRangeNeededForProjection()
    assert lo <= touched.min() and touched.max() <= hi
    assert hi - lo + 1 < ct.get_numZ()          # some slices are really not needed
    # Projecting single slices confirms the edges: the first one outside touches nothing.
    for k, expect in ((lo - 1, False), (touched.min(), True)):
        if 0 <= k < ct.get_numZ():
            f = ct.allocate_volume()
            f[k] = 1.0
            assert (ct.project(ct.allocate_projections(), f).max() > 0) == expect
    unclipped = ct.sliceRangeNeededForProjection(False)
    assert unclipped.dtype == np.int32 and unclipped[0] <= lo and unclipped[1] >= hi


def test_slice_and_row_ranges_parallel():
    ct = _model("parallel", nr=8)
    assert ct.sliceRangeNeededForProjection().tolist() == [0, 7]
    assert ct.numRowsRequiredForBackprojectingSlab(3) == 3
    assert ct.viewRangeNeededForBackprojection().tolist() == [0, NA - 1]


def test_view_range_helical():
    ct = _model("cone", nr=8, na=72, rng=720.0)
    ct.set_normalizedHelicalPitch(1.0)
    ct.set_default_volume()
    ct.set_numZ(4)
    lo, hi = ct.viewRangeNeededForBackprojection()
    assert 0 < lo <= hi < 71
    g = ct.project(ct.allocate_projections(), ct.allocate_volume(1.0))
    seen = np.nonzero(g.reshape(72, -1).max(axis=1) > 0)[0]
    assert lo <= seen.min() and seen.max() <= hi


def test_rows_for_slab_cover_backprojection_needs():
    ct = _model("cone", nr=16, na=24)
    n = ct.numRowsRequiredForBackprojectingSlab(4)
    assert 4 <= n <= 16
    with pytest.raises(ValueError):
        ct.numRowsRequiredForBackprojectingSlab(0)


def test_offset_scan_columns_fov_and_angles():
    ct = _model("fan", center_col=10.0)
    assert ct.extraColumnsForOffsetScan() == 0
    ct.set_offsetScan(True)
    assert ct.extraColumnsForOffsetScan() > 0
    assert ct.get_diameterFOV_min() < ct.get_diameterFOV()
    assert ct.angles_are_defined() and ct.angles_are_equispaced()
    ct.set_phis(np.r_[0.0, np.sort(np.random.default_rng(0).uniform(1, 359, NA - 1))])
    assert not ct.angles_are_equispaced()
    assert not tomographicModels().angles_are_defined()


def test_z_source_offset():
    ct = _model("cone", nr=8, na=36, rng=720.0)
    assert ct.get_z_source_offset() == 0.0
    ct.set_helicalPitch(2.0)
    phi0 = np.deg2rad(ct.get_angles()[0]) - 0.5 * np.pi
    z0 = ct.core_geometry().source_z()[0]
    assert np.isclose(2.0 * phi0 + ct.get_z_source_offset(), z0, atol=1e-4)


# ------------------------------------------------------------------ geometry editing
def test_detector_setters():
    ct = _model("cone", nr=8)
    ct.set_numCols(40)
    ct.set_numRows(6)
    ct.set_pixelWidth(0.5)
    ct.set_pixelHeight(0.25)
    assert ct.get_projection_dim() == (NA, 6, 40)
    assert (ct.get_pixelWidth(), ct.get_pixelHeight()) == (0.5, 0.25)
    ct.set_numAngles(30)
    assert ct.get_numAngles() == 30 and np.isclose(ct.get_angularRange(), 360.0)
    for bad in (lambda: ct.set_numCols(0), lambda: ct.set_pixelWidth(-1.0),
                lambda: ct.set_numAngles(-3)):
        with pytest.raises(ValueError):
            bad()


def test_shift_and_rotate_detector_match_cone_parameters():
    ct = _model("cone", nr=8)
    ct.shift_detector(1.0, 2.0)
    assert np.isclose(ct.get_centerRow(), 3.5 - 1.0) and np.isclose(ct.get_centerCol(), 31.5 - 2.0)
    mod = tomographicModels()
    mod.copy_parameters(_model("cone", nr=8))
    mod.convert_to_modularbeam()
    mod.shift_detector(1.0, 2.0)
    ref = tomographicModels()
    ref.copy_parameters(ct)
    ref.convert_to_modularbeam()
    np.testing.assert_allclose(mod.get_moduleCenters(), ref.get_moduleCenters(), atol=1e-4)
    # A scalar rotation of a converted cone = the cone's tiltAngle.
    tilted = _model("cone", nr=8)
    tilted.rotate_detector(1.5)
    assert tilted.get_tiltAngle() == 1.5
    tilted.convert_to_modularbeam()
    mod = _model("cone", nr=8)
    mod.convert_to_modularbeam()
    mod.rotate_detector(1.5)
    np.testing.assert_allclose(mod.get_colVectors(), tilted.get_colVectors(), atol=1e-5)
    np.testing.assert_allclose(mod.get_rowVectors(), tilted.get_rowVectors(), atol=1e-5)
    # Matrix form: a rotation about the detector normal by the same angle.
    mod2 = _model("cone", nr=8)
    mod2.convert_to_modularbeam()
    mod2.rotate_detector(np.array([0.0, 1.5, 0.0]))
    assert np.allclose(np.abs(np.sum(mod2.get_colVectors() * mod.get_colVectors(), axis=1)), 1, atol=1e-3)
    with pytest.raises(ValueError, match="modular"):
        _model("cone").rotate_detector(np.eye(3))
    with pytest.raises(ValueError):
        _model("parallel").rotate_detector(1.0)


def test_rotate_coordinate_system_and_set_geometry():
    ct = _model("cone", nr=8)
    with pytest.raises(ValueError, match="modular"):
        ct.rotate_coordinate_system(np.eye(3))
    ct.convert_to_modularbeam()
    src = ct.get_sourcePositions()
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])
    ct.rotate_coordinate_system(R)
    np.testing.assert_allclose(ct.get_sourcePositions(), src @ R.T, atol=1e-3)
    with pytest.raises(ValueError, match="3x3"):
        ct.rotate_coordinate_system(np.eye(2))
    fan = _model("fan")
    fan.set_geometry("CONE")
    assert fan.get_geometry() == "CONE"
    fan.set_geometry("PARALLEL")
    with pytest.raises(ValueError, match="sod"):
        fan.set_geometry("FAN")
    with pytest.raises(ValueError):
        fan.set_geometry("HELIX")


# ------------------------------------------------------------------ resampling
def test_down_up_sample_round_trip():
    ct = tomographicModels()
    z, y, x = np.meshgrid(np.linspace(-1, 1, 8), np.linspace(-1, 1, 32), np.linspace(-1, 1, 32),
                          indexing="ij")
    I = np.exp(-(x ** 2 + y ** 2 + z ** 2)).astype(np.float32)
    dn = ct.down_sample([1, 2, 2], I)
    assert dn.shape == (8, 16, 16) and dn.dtype == np.float32
    up = ct.up_sample([1, 2, 2], dn)
    assert up.shape == I.shape
    assert np.abs(up - I)[:, 2:-2, 2:-2].max() < 0.02
    np.testing.assert_allclose(ct.down_sample([1, 1, 1], I), I, atol=1e-6)
    with pytest.raises(ValueError, match=">= 1"):
        ct.down_sample([1, 0.5, 1], I)
    with pytest.raises(ValueError, match="3 finite"):
        ct.up_sample([2, 2], I)


def test_down_sample_projections_keeps_geometry_consistent():
    ct = _model("cone", nr=16, center_col=33.0)
    f = _blobs(ct)
    g = ct.project(ct.allocate_projections(), f)
    axis_mm = (33.0 - 31.5) * 1.0
    g2 = ct.down_sample_projections([1, 2, 2], g)
    assert g2.shape == ct.get_projection_dim() == (NA, 8, 32)
    assert ct.get_pixelWidth() == 2.0
    assert np.isclose((ct.get_centerCol() - 15.5) * 2.0, axis_mm)
    # The data projected with the new geometry matches the down-sampled data.
    g_new = ct.project(ct.allocate_projections(), f)
    assert np.linalg.norm(g_new - g2) < 0.1 * np.linalg.norm(g_new)
    g3 = ct.up_sample_projections([1, 2, 2], g2)
    assert g3.shape == (NA, 16, 64) and np.isclose(ct.get_centerCol(), 33.0)
    with pytest.raises(ValueError, match="view"):
        ct.down_sample_projections([2, 1, 1])


def test_down_up_sample_volume():
    ct = _model("parallel", nr=8)
    f = _blobs(ct)
    nx, vw = ct.get_numX(), ct.get_voxelWidth()
    fd = ct.down_sample_volume([1, 2, 2], f)
    assert fd.shape == ct.get_volume_dim() and ct.get_voxelWidth() == 2 * vw
    fu = ct.up_sample_volume([1, 2, 2], fd)
    assert fu.shape == ct.get_volume_dim() == f.shape and ct.get_numX() == nx
    with pytest.raises(ValueError, match="x and y"):
        ct.down_sample_volume([1, 2, 1])


# ------------------------------------------------------------------ masks, MAR
def test_space_carving_and_volume_mask():
    ct = _model("fan", nr=1, na=12)
    f = _blobs(ct)
    g = ct.project(ct.allocate_projections(), f)
    pm = (g > 0.0).astype(np.float32)       # rays that touch the object
    pm_copy = pm.copy()
    mask = ct.space_carving(pm, ct.allocate_volume())
    np.testing.assert_array_equal(pm, pm_copy)            # restored
    assert set(np.unique(mask)) <= {0.0, 1.0}
    assert np.all(mask[f > 0.01] == 1.0)                   # the object survives carving
    fov = ct.windowFOV(ct.allocate_volume(1.0))
    assert np.all(mask <= fov) and mask.sum() < fov.sum() - 50   # empty space is carved
    ct.set_volume_mask(mask)
    assert ct.volume_mask_is_valid(f)
    h = f + 1.0
    ct.apply_volume_mask(h)
    assert np.all(h[mask == 0] == 0)
    ct.clear_volume_mask()
    assert not ct.volume_mask_is_valid(f)
    with pytest.raises(ValueError, match="shape"):
        ct.set_volume_mask(np.ones((2, 2, 2), np.float32))


def test_volume_mask_in_projectors_and_iterations():
    """With a mask M set, project sees f·M, backproject returns M·Pᵀg (so the pair stays
    an exact transpose) and the iterative methods reconstruct only inside the mask."""
    ct = _model("parallel", nr=2, na=20)
    f = _blobs(ct) + 0.01
    mask = np.zeros_like(f)
    mask[:, 20:44, 16:40] = 1.0
    ct.set_volume_mask(mask)
    g = ct.project(ct.allocate_projections(), f)
    ct.clear_volume_mask()
    np.testing.assert_allclose(g, ct.project(ct.allocate_projections(), f * mask), rtol=1e-6)
    ct.set_volume_mask(mask)
    r = np.random.default_rng(0)
    x = r.standard_normal(f.shape).astype(np.float32)
    y = r.standard_normal(g.shape).astype(np.float32)
    Px = ct.project(ct.allocate_projections(), x)
    PTy = ct.backproject(y, ct.allocate_volume())
    assert np.all(PTy[mask == 0] == 0)
    assert abs(np.vdot(Px, y) - np.vdot(x, PTy)) <= 1e-5 * np.linalg.norm(Px) * np.linalg.norm(y)
    for method in ("SART", "LS"):
        h = ct.allocate_volume()
        getattr(ct, method)(g, h, 3, *(() if method == "LS" else (4,)))
        assert np.all(h[mask == 0] == 0) and h[mask == 1].max() > 0.01


def test_default_volume_of_offset_scan_covers_the_wide_side():
    """LEAP sizes the default volume of an offset scan by the farther detector edge."""
    ct = _model("cone", center_col=0.5 * (NC - 1) - 12.0)
    n_normal = ct.get_numX()
    ct.set_offsetScan(True)
    ct.set_default_volume()
    r = ct.core_geometry().fov_radius(offset_scan=True)
    assert ct.get_numX() == 2 * int(np.ceil(r / ct.get_voxelWidth())) > n_normal


def test_windowFOV():
    ct = _model("parallel", nr=2)
    ct.set_diameterFOV(20.0)
    f = ct.windowFOV(ct.allocate_volume(1.0))
    x, y, _ = ct.voxelSamples()
    assert np.all(f[x ** 2 + y ** 2 > 100.0] == 0) and np.all(f[x ** 2 + y ** 2 < 90.0] == 1)


def test_sinogram_replacement_fits_prior():
    ct = _model("parallel", nr=2, na=40)
    g = _data(ct) + 0.01
    trace = np.zeros_like(g)
    trace[:, :, 28:36] = 1.0
    prior = ((g - 0.05) / 1.1).astype(np.float32)          # g = 1.1·prior + 0.05
    out = g.copy()
    out[trace > 0] = 5.0                                    # corrupted measurement
    assert ct.sinogram_replacement(out, prior, trace) is True
    np.testing.assert_allclose(out, g, rtol=0.03, atol=0.005)   # soft pull of a→1, b→0
    with pytest.raises(ValueError, match="shape"):
        ct.sinogram_replacement(out, prior[:, :1], trace)


def test_array_helpers():
    ct = tomographicModels()
    x = np.array([-1.0, 2.0], np.float32)
    assert ct.innerProd(x, x) == 5.0 and ct.sum(x) == 1.0
    assert ct.abs(x).tolist() == [1, 2] and ct.sign(x).tolist() == [-1, 1]
    assert ct.maximum(x, 0).tolist() == [0, 2] and ct.minimum(x, 0).tolist() == [-1, 0]
    assert ct.isAllZeros(np.zeros(3)) and not ct.isAllZeros(x)
    assert ct.copy_to_host(x) is x
