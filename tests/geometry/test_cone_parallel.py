"""Cone-parallel geometry (LEAP's set_coneparallel) and rebinning: leap-only checks.

Upstream's CPU build has no cone-parallel projector, so numbers are checked here
against physics (analytic ray tracing, which ``test_upstream_cases`` ties to upstream,
and FBP amplitude) and limits (huge sod → parallel beam); rebinning is compared with
upstream in ``test_upstream_cases.py`` (case ``rebinning``).
"""
import warnings

import numpy as np
import pytest

import leap
from conftest import rel_l2
from leap.geometry import ConeParallelBeam
from leapctype import tomographicModels

N, NA, PS, SOD, SDD = 32, 36, 3.0, 1100.0, 1400.0


def _model(pitch=0.0, tau=0.0, na=NA, rng=360.0):
    m = tomographicModels()
    m.set_coneparallel(na, N, N, PS * SDD / SOD, PS, 0.5 * (N - 1), 0.5 * (N - 1),
                       m.setAngleArray(na, rng), SOD, SDD, tau, pitch)
    m.set_default_volume()
    return m


def _ellipsoids(m, f=None, oversampling=1):
    m.addObject(f, 0, np.array([8.0, -5.0, 6.0], np.float32), np.array([25.0, 18.0, 20.0], np.float32),
                0.02, oversampling=oversampling)
    m.addObject(f, 0, np.array([-15.0, 9.0, -12.0], np.float32), np.array([10.0, 10.0, 10.0], np.float32),
                0.01, oversampling=oversampling)


@pytest.mark.parametrize("pitch", [0.0, 6.0])
def test_projection_matches_ray_tracing(pitch):
    """The separable-footprint projection of a finely voxelised phantom agrees with the
    exact line integrals (pixel-averaged by oversampling) up to upstream's missing
    √(1 + v²) stretch and discretisation."""
    m = _model(pitch, tau=1.5, na=8)
    _ellipsoids(m)
    exact = m.rayTrace(None, 5)
    m.set_volume(96, 96, 96, PS / 3, PS / 3)
    f = m.allocate_volume()
    _ellipsoids(m, f, 3)
    g = m.allocate_projections()
    m.project(g, f)
    assert rel_l2(g, exact) < 0.02


def test_large_sod_is_parallel_beam():
    geo = ConeParallelBeam(detector=leap.Detector(num_rows=8, num_cols=12, pixel_height=1.0,
                                                  pixel_width=1.0, center_row=3.5, center_col=5.5),
                           angles=np.linspace(0, np.pi, 7), sod=1e7, sdd=1e7 + 1.0)
    par = leap.ParallelBeam(detector=geo.detector, angles=geo.angles)
    vol = leap.Volume(num_x=10, num_y=10, num_z=8, voxel_width=1.0, voxel_height=1.0)
    f = np.random.default_rng(0).random(vol.shape).astype(np.float32)
    assert rel_l2(leap.project(geo, vol, f), leap.project(par, vol, f)) < 1e-5


@pytest.mark.parametrize("rng", [360.0, 240.0])
def test_fbp_amplitude(rng):
    """A uniform cylinder reconstructs to its value (full and short scans)."""
    m = _model(na=180 if rng == 360.0 else 120, rng=rng)
    f = m.allocate_volume()
    m.addObject(f, 4, np.array([0, 0, 0], np.float32), np.array([30.0, 30.0, 30.0], np.float32), 0.02)
    g = m.allocate_projections()
    m.project(g, f)
    h = m.allocate_volume()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.FBP(g, h)
    c = slice(N // 2 - 4, N // 2 + 4)
    assert abs(float(h[c, c, c].mean()) - 0.02) < 0.02 * 0.01


def test_facade_and_params(tmp_path):
    m = _model(pitch=3.0, tau=0.5)
    assert m.get_geometry() == "CONE-PARALLEL"
    assert m.get_voxelWidth() == pytest.approx(PS)
    assert m.get_voxelHeight() == pytest.approx(PS)
    m.save_param(tmp_path / "cp.param")
    m2 = tomographicModels()
    m2.load_param(tmp_path / "cp.param")
    assert m2.core_geometry() == m.core_geometry()
    assert "Cone-Parallel" in m2._parameters_text()
    with pytest.raises(ValueError, match="modular"):
        m.convert_to_modularbeam()
    with pytest.raises(ValueError, match="helical cone-parallel"):
        m.FBP(m.allocate_projections(), m.allocate_volume())
    with pytest.raises(ValueError, match="sod"):
        tomographicModels().set_coneparallel(4, 4, 4, 1.0, 1.0, 1.5, 1.5, 90.0, 1400.0, 1100.0)


def test_rebinned_cone_reconstructs_like_cone():
    """cone → cone-parallel rebinning, then cone-parallel FBP, gives the cone FDK image."""
    m = tomographicModels()
    m.set_conebeam(180, N, N, PS * SDD / SOD, PS * SDD / SOD, 0.5 * (N - 1), 0.5 * (N - 1),
                   m.setAngleArray(180, 360.0), SOD, SDD)
    m.set_default_volume()
    f = m.allocate_volume()
    m.addObject(f, 4, np.array([0, 0, 0], np.float32), np.array([30.0, 30.0, 30.0], np.float32), 0.02)
    g = m.allocate_projections()
    m.project(g, f)
    fdk = m.allocate_volume()
    m.FBP(g, fdk)
    m.rebin_parallel(g)
    assert m.get_geometry() == "CONE-PARALLEL"
    h = m.allocate_volume()
    m.FBP(g, h)
    c = slice(4, N - 4)
    assert rel_l2(h[c, c, c], fdk[c, c, c]) < 0.03
