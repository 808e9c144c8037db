"""Flying focal spot: cone beams whose source moves off the detector's focal centre
(``ConeBeam.source_shifts``, DICOM-CT-PD's SourceAngular/Axial/RadialPositionShift).

The projectors must follow the shifted rays exactly (curved detectors through the axial
kernels' focus offsets, flat ones through their modular form): checked against exact
line integrals of an analytic object along the true rays, and by helical FBP that is
no worse with the flying focal spot than without at the same view count, and better
than reconstructing the same data as if the source had not moved.
"""
from __future__ import annotations

import numpy as np
import pytest

from leap import operators
from leap.reconstruction.fbp import fbp
from leap.geometry import ConeBeam, Detector, Volume
from leap.geometry.rays import pixel_positions, pixel_rays
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from leap.phantoms.raytrace import ray_trace
from leap.reconstruction.rebin import rebin_curved, rebin_parallel


def _alternating(n, dpsi, dz, drho):
    """Siemens-like FFS pattern: φ and ρ alternate every view, z every second view."""
    k = np.arange(n)
    s = np.where(k % 2, 1.0, -1.0)
    return np.stack([dpsi * s, dz * np.where((k // 2) % 2, 1.0, -1.0), drho * s], axis=1)


def _geometry(curved=True, n=12, shifts=True, pitch=0.8):
    det = Detector(num_rows=6, num_cols=32, pixel_height=1.0, pixel_width=1.1,
                   center_row=2.4, center_col=15.7, curved=curved)
    ang = np.linspace(0.2, 2.0 * np.pi + 0.2, n, endpoint=False)
    sh = _alternating(n, 0.003, 0.35, 0.8) if shifts else None
    return ConeBeam(detector=det, angles=ang, sod=60.0, sdd=110.0, helical_pitch=pitch,
                    source_shifts=sh)


def test_validation_slicing_and_equality():
    geo = _geometry()
    assert geo.source_shifts.shape == (12, 3) and not geo.source_shifts.flags.writeable
    sub = geo[3:7]
    np.testing.assert_array_equal(sub.source_shifts, geo.source_shifts[3:7])
    assert geo[[0, 5]].source_shifts.shape == (2, 3)
    assert geo == _geometry() and geo != geo.with_changes(source_shifts=None)
    assert geo.with_changes(source_shifts=np.zeros((12, 3))).source_shifts is None
    with pytest.raises(ValueError, match=r"source_shifts must have one row .* \(12, 3\)"):
        geo.with_changes(source_shifts=np.zeros((11, 3)))
    with pytest.raises(ValueError, match="source_shifts must have shape"):
        geo.with_changes(source_shifts=np.zeros(12))
    with pytest.raises(ValueError, match="finite"):
        geo.with_changes(source_shifts=np.full((12, 3), np.nan))
    with pytest.raises(ValueError, match="below π/2"):
        geo.with_changes(source_shifts=np.tile([2.0, 0.0, 0.0], (12, 1)))
    with pytest.raises(ValueError, match="sod \\+ Δρ"):
        geo.with_changes(source_shifts=np.tile([0.0, 0.0, -60.0], (12, 1)))
    with pytest.raises(ValueError, match="cannot be respaced"):
        geo.with_num_angles(24)


def test_source_positions_are_the_cylindrical_shifts():
    geo = _geometry(pitch=0.5)
    psi = geo.angles + geo.source_shifts[:, 0]
    r = geo.sod + geo.source_shifts[:, 2]
    want = np.stack([r * np.sin(psi), -r * np.cos(psi),
                     geo.source_z() + geo.source_shifts[:, 1]], axis=1)
    np.testing.assert_allclose(geo.xray_sources(), want, atol=1e-12)
    # The rays leave the shifted sources; the pixels stay where the unshifted ones are.
    org, _ = pixel_rays(geo)
    np.testing.assert_allclose(org[:, 0, 0, 0], want, atol=1e-12)
    np.testing.assert_allclose(pixel_positions(geo),
                               pixel_positions(geo.with_changes(source_shifts=None)),
                               atol=1e-9)
    # Flat detectors go through the modular form, with the same sources and modules.
    flat = _geometry(curved=False)
    mod = flat.to_modular()
    np.testing.assert_allclose(mod.source_positions, flat.xray_sources(), atol=1e-12)
    np.testing.assert_allclose(mod.module_centers,
                               flat.with_changes(source_shifts=None).to_modular().module_centers)


@pytest.mark.parametrize("curved", [True, False])
def test_projector_is_matched_and_continuous(curved, rng):
    geo = _geometry(curved)
    vol = Volume(num_x=12, num_y=10, num_z=6, voxel_width=1.0, voxel_height=1.0)
    f = rng.random(vol.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    Pf = operators.project(geo, vol, f)
    PTg = operators.backproject(geo, vol, g)
    lhs, rhs = np.vdot(Pf.astype(np.float64), g), np.vdot(f.astype(np.float64), PTg)
    assert abs(lhs - rhs) <= 1e-5 * abs(lhs)
    # Vanishing shifts give the unshifted projector (the focus-offset formulas' limit).
    tiny = geo.with_changes(source_shifts=np.full((geo.num_angles, 3), 1e-9))
    plain = geo.with_changes(source_shifts=None)
    # (Flat detectors with shifts run on the modular kernels: compare like with like.)
    ref = operators.project(plain if curved else plain.to_modular(), vol, f)
    np.testing.assert_allclose(operators.project(tiny, vol, f), ref,
                               atol=1e-5 * float(np.abs(ref).max()))


def _phantom(scale=1.0, z_scale=1.0):
    """Ellipsoids within 36 × 30 × 14 mm (times ``scale`` in-plane, ``z_scale`` in z)."""
    parts = [((0.0, 0.0, 0.0), (36, 30, 14), 0.02), ((12, -8, 2), (6, 8, 5), 0.01),
             ((-15, 10, -3), (5, 5, 5), -0.01), ((-5, -18, 0), (2.5, 2.5, 2.5), 0.02)]
    k = np.array([scale, scale, z_scale])
    return Phantom([PhantomObject(kind=ELLIPSOID, centre=tuple(np.array(c) * k),
                                  radii=tuple(np.array(r) * k), value=v)
                    for c, r, v in parts])


@pytest.mark.parametrize("curved", [True, False])
def test_projections_follow_the_shifted_rays(curved):
    """Projections of a voxelised object through the FFS geometry match exact line
    integrals along the shifted rays as well as the unshifted projector matches its own
    rays, and clearly better than the unshifted projector matches the shifted rays."""
    geo = _geometry(curved, n=16)
    plain = geo.with_changes(source_shifts=None)
    obj = _phantom(0.2, 0.25)
    vol = Volume(num_x=40, num_y=40, num_z=24, voxel_width=0.4, voxel_height=0.4)
    f = obj.voxelize(vol.x_samples(), vol.y_samples(), vol.z_samples(), 0.4, 0.4,
                     oversampling=3).astype(np.float32)

    def rel(a, b):
        return float(np.linalg.norm(a - b) / np.linalg.norm(b))

    exact = ray_trace(obj, geo)
    model = rel(operators.project(geo, vol, f), exact)
    own = rel(operators.project(plain, vol, f), ray_trace(obj, plain))
    ignored = rel(operators.project(plain, vol, f), exact)
    assert model <= 1.1 * own + 1e-3
    assert ignored >= 1.5 * model


def test_helical_fbp_with_flying_focal_spot_is_no_worse():
    """A helical scan with FFS in φ and z (a quarter pixel / row, interleaving views)
    reconstructs by FBP no worse than the same scan without FFS at the same view count,
    and better than its data reconstructed as if the source had not moved."""
    sod, sdd, pw, ph = 300.0, 540.0, 1.6, 1.6
    det = Detector(num_rows=16, num_cols=96, pixel_height=ph, pixel_width=pw, curved=True,
                   center_col=47.25, center_row=7.5)
    per_turn = 180
    ang = np.arange(int(2.5 * per_turn)) * 2.0 * np.pi / per_turn
    pitch = 0.8 * det.num_rows * ph * sod / sdd / (2.0 * np.pi)
    plain = ConeBeam(detector=det, angles=ang, sod=sod, sdd=sdd, helical_pitch=pitch)
    # Lateral source shift of a quarter pixel at the detector, z of a quarter row at the
    # axis (as a φ/z flying focal spot interleaves its views' samples).
    shifts = _alternating(ang.size, 0.25 * pw / (sdd - sod),
                          0.25 * ph * sod / (sdd - sod), 0.5)
    ffs = plain.with_changes(source_shifts=shifts)
    obj = _phantom()
    vol = Volume(num_x=96, num_y=96, num_z=8, voxel_width=1.3, voxel_height=1.3)
    truth = obj.voxelize(vol.x_samples(), vol.y_samples(), vol.z_samples(), 1.3, 1.3,
                         oversampling=3)
    x, y = np.meshgrid(vol.x_samples(), vol.y_samples())
    inside = np.hypot(x, y) < 35.0

    def err(g, geo):
        d = (fbp(geo, vol, g) - truth)[:, inside]
        return float(np.linalg.norm(d) / np.linalg.norm(truth[:, inside]))

    g_plain = ray_trace(obj, plain, oversampling=3)
    g_ffs = ray_trace(obj, ffs, oversampling=3)
    e_plain, e_ffs, e_ignored = err(g_plain, plain), err(g_ffs, ffs), err(g_ffs, plain)
    assert e_plain < 0.1
    assert e_ffs <= e_plain * 1.005
    assert e_ignored >= e_ffs * 1.03


def test_rebinning_refuses_shifted_sources():
    geo = _geometry(pitch=0.0)
    g = np.zeros(geo.projection_shape, dtype=np.float32)
    with pytest.raises(ValueError, match="flying-focal-spot"):
        rebin_curved(geo, g, np.zeros(geo.detector.num_cols))
    with pytest.raises(ValueError, match="flying-focal-spot"):
        rebin_parallel(geo, g)
