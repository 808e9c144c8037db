"""Projections of voxelised solids agree with their exact line integrals."""
import numpy as np
import pytest

import leap
from conftest import rel_l2
from leap.geometry.rays import pixel_rays
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject

VOL3 = leap.Volume(num_x=64, num_y=64, num_z=32, voxel_width=0.5, voxel_height=0.5)
VOL2 = leap.Volume(num_x=96, num_y=96, num_z=1, voxel_width=0.5, voxel_height=1.0)
DET3 = leap.Detector(num_rows=32, num_cols=64, pixel_height=1.0, pixel_width=1.0)
DET2 = leap.Detector(num_rows=1, num_cols=96, pixel_height=1.0, pixel_width=1.0, center_row=0.0)
ANGLES = np.deg2rad(np.arange(12) * 30.0 + 7.0)


def _phantom(three_d):
    objs = [PhantomObject(kind=ELLIPSOID, centre=[2.0, -1.0, 0.5 if three_d else 0.0],
                          radii=[9.0, 6.0, 5.0 if three_d else 50.0], value=0.02),
            PhantomObject(kind=ELLIPSOID, centre=[-3.0, 2.0, 0.0], radii=[2.5, 2.5, 2.5 if three_d else 50.0],
                          value=0.05)]
    return Phantom(objs)


CASES = {
    "parallel": (leap.ParallelBeam(detector=DET2.with_changes(pixel_width=0.5), angles=ANGLES), VOL2, False, 0.02),
    "fan": (leap.FanBeam(detector=DET2, angles=ANGLES, sod=300.0, sdd=600.0, tau=1.0), VOL2, False, 0.02),
    "cone": (leap.ConeBeam(detector=DET3, angles=ANGLES, sod=300.0, sdd=600.0), VOL3, True, 0.02),
    "cone_curved": (leap.ConeBeam(detector=DET3.with_changes(curved=True), angles=ANGLES, sod=300.0,
                                  sdd=600.0), VOL3, True, 0.02),
    "helical": (leap.ConeBeam(detector=DET3, angles=ANGLES, sod=300.0, sdd=600.0, helical_pitch=0.5),
                VOL3, True, 0.025),
    "modular": (leap.ConeBeam(detector=DET3, angles=ANGLES, sod=300.0, sdd=600.0, tau=1.5,
                              tilt=0.03).to_modular(), VOL3, True, 0.03),
}


@pytest.mark.parametrize("name", CASES)
def test_projection_matches_line_integrals(name):
    geo, vol, three_d, tol = CASES[name]
    ph = _phantom(three_d)
    f = ph.voxelize(vol.x_samples(), vol.y_samples(), vol.z_samples(), vol.voxel_width,
                    vol.voxel_height, oversampling=3)
    g = leap.project(geo, vol, f)
    org, dirs = pixel_rays(geo, oversampling=3)
    exact = ph.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3)).reshape(org.shape[:4]).mean(-1)
    assert rel_l2(g, exact) <= tol
    # Peak values are physical line integrals (mm × 1/mm), not scaled versions of them.
    assert g.max() == pytest.approx(exact.max(), rel=0.05)


def test_standard_and_modular_forms_project_alike():
    rng = np.random.default_rng(3)
    f = rng.random(VOL3.shape).astype(np.float32)
    det = DET3.with_changes(center_col=30.2, center_row=17.0)
    for kw in (dict(), dict(tau=2.0), dict(helical_pitch=0.8)):
        cone = leap.ConeBeam(detector=det, angles=ANGLES, sod=300.0, sdd=600.0, **kw)
        # The modular kernel has no circular field-of-view mask: compare inside it.
        x = VOL3.x_samples()
        X, Y = np.meshgrid(x, x)
        fm = f * (X**2 + Y**2 <= cone.fov_radius() ** 2)
        g1 = leap.project(cone, VOL3, fm)
        g2 = leap.project(cone.to_modular(), VOL3, fm)
        assert rel_l2(g2, g1) <= 1e-3
        b1 = leap.backproject(cone, VOL3, g1)
        b2 = leap.backproject(cone.to_modular(), VOL3, g1) * (X**2 + Y**2 <= cone.fov_radius() ** 2)
        assert rel_l2(b2, b1) <= 1e-3


def test_parallel_modular_conversion_projects_alike():
    geo = leap.ParallelBeam(detector=leap.Detector(num_rows=8, num_cols=40, pixel_height=1.0,
                                                   pixel_width=1.0), angles=ANGLES)
    vol = leap.Volume(num_x=30, num_y=30, num_z=8, voxel_width=1.0, voxel_height=1.0)
    rng = np.random.default_rng(4)
    f = rng.random(vol.shape).astype(np.float32)
    x = vol.x_samples()
    X, Y = np.meshgrid(x, x)
    f *= (X**2 + Y**2 <= geo.fov_radius() ** 2)
    g1 = leap.project(geo, vol, f)
    g2 = leap.project(geo.to_modular(vol), vol, f)
    assert rel_l2(g2, g1) <= 1e-3
