"""Agreement with upstream LEAP 1.26 (CPU build) on its own reference outputs."""
import numpy as np
import pytest

from conftest import REFERENCE_CASES, REFERENCE_DIR, rel_l2
from leapctype import tomographicModels

# Same footprint model as upstream: measured ~2e-5 (project) and ~1e-6 (back-project).
TOL = 1e-4


def _model(case):
    leapct = tomographicModels()
    leapct.load_param(str(REFERENCE_DIR / f"{case}.param"))
    return leapct, dict(np.load(REFERENCE_DIR / f"{case}.npz"))


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_project_matches_upstream(case):
    leapct, d = _model(case)
    g = leapct.allocate_projections()
    f = d["f"].copy()
    out = leapct.project(g, f)
    assert out is g
    np.testing.assert_array_equal(f, d["f"])          # input untouched
    assert rel_l2(g, d["Pf"]) <= TOL


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_backproject_matches_upstream(case):
    leapct, d = _model(case)
    f = leapct.allocate_volume()
    r = d["r"].copy()
    out = leapct.backproject(r, f)
    assert out is f
    np.testing.assert_array_equal(r, d["r"])
    assert rel_l2(f, d["Ptr"]) <= TOL
    assert rel_l2(leapct.backproject(d["Pf"].copy(), f), d["PtPf"]) <= TOL


@pytest.mark.parametrize("case", REFERENCE_CASES)
def test_reference_geometry_dimensions(case):
    leapct, d = _model(case)
    assert leapct.get_projection_dim() == d["Pf"].shape
    assert leapct.get_volume_dim() == d["f"].shape


def test_parallel_axis_convention():
    """ψ = 0 sums along y and ψ = 90° along x (LEAP's axis and angle convention)."""
    leapct = tomographicModels()
    n = 16
    leapct.set_parallelbeam(2, 3, n, 1.0, 1.0, 1.0, 0.5 * (n - 1), np.array([0.0, 90.0]))
    leapct.set_volume(n, n, 3, 1.0, 1.0)
    f = np.zeros(leapct.get_volume_dim(), np.float32)
    rng = np.random.default_rng(0)
    # Keep the object inside the field of view (radius 7.5 mm).
    x = leapct.x_samples()
    X, Y = np.meshgrid(x, x)
    inside = X**2 + Y**2 <= 7.0**2
    f[:] = rng.random(f.shape) * inside
    g = leapct.project(leapct.allocate_projections(), f)
    np.testing.assert_allclose(g[0], f.sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g[1], f.sum(axis=2), rtol=1e-5, atol=1e-5)


def test_cone_source_position_convention():
    """At ψ = 0 the source is at (0, −sod, 0): a voxel at +x appears at column > centre,
    and a voxel nearer the source (−y) is magnified more."""
    leapct = tomographicModels()
    leapct.set_conebeam(1, 41, 41, 1.0, 1.0, 20.0, 20.0, np.array([0.0]), 100.0, 200.0)
    leapct.set_volume(21, 21, 1, 1.0, 1.0)
    f = leapct.allocate_volume()
    f[0, 10, 15] = 1.0   # x = +5, y = 0
    g = leapct.project(leapct.allocate_projections(), f)
    assert np.argmax(g[0, 20]) == 30            # s = sdd/sod · 5 = 10 pixels right
    f[:] = 0
    f[0, 5, 15] = 1.0    # x = +5, y = −5 (towards the source)
    g = leapct.project(leapct.allocate_projections(), f)
    col = np.sum(g[0, 20] * np.arange(41)) / np.sum(g[0, 20])
    assert col == pytest.approx(20 + 200 / 95 * 5, abs=0.05)   # depth sod − 5
