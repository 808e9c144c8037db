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
    # The numbers of the .param file, read here without leap.io, are what the facade has.
    v = {}
    for line in (REFERENCE_DIR / f"{case}.param").read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            key, val = (t.strip() for t in line.split("=", 1))
            v[key] = val
    num = {k: float(x) for k, x in v.items() if k not in ("geometry", "detectorType")}
    assert leapct.get_projection_dim() == (int(num["numAngles"]), int(num["numRows"]),
                                           int(num["numCols"]))
    for name in ("pixelWidth", "pixelHeight", "centerRow", "centerCol", "voxelWidth",
                 "voxelHeight") + (("sod", "sdd") if v["geometry"] != "parallel" else ()):
        assert getattr(leapct, f"get_{name}")() == pytest.approx(num[name], rel=1e-6), name
    nA = int(num["numAngles"])
    np.testing.assert_allclose(leapct.get_angles(), np.arange(nA) * num["angularRange"] / nA,
                               atol=1e-4)
    nX = int(num["numX"])
    np.testing.assert_allclose(leapct.x_samples(),
                               (np.arange(nX) - 0.5 * (nX - 1)) * num["voxelWidth"]
                               + num["offsetX"], atol=1e-5)


def test_reference_parallel_views_carry_the_mass_inside_the_field_of_view():
    """In upstream's parallel-beam projections every view integrates to the mass of f
    inside the field of view: ties pixel and voxel sizes and the FOV to upstream's data."""
    leapct, d = _model("parallel2d")
    pw, vw = leapct.get_pixelWidth(), leapct.get_voxelWidth()
    per_view = d["Pf"].astype(np.float64).sum(axis=(1, 2)) * pw * leapct.get_pixelHeight()
    x, y = leapct.x_samples()[None, :], leapct.y_samples()[:, None]
    r = 0.5 * leapct.get_diameterFOV()
    inside = (x ** 2 + y ** 2 <= r * r)[None]
    mass = (d["f"].astype(np.float64) * inside).sum() * vw * vw * leapct.get_voxelHeight()
    np.testing.assert_allclose(per_view, mass, rtol=1e-5)
    assert mass < 0.95 * d["f"].astype(np.float64).sum() * vw * vw     # the FOV does matter


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
