"""FBP of helical scans with a flying focal spot (issue 49, item 0; leap.reconstruction.focal_spots and
the helical weighting of leap.reconstruction.fbp).

A flat detector's views of one focal spot are exactly a cone beam about that spot (the
rays agree), so the reference is the mean of those per-spot cone-beam reconstructions;
FBP of the whole scan must reach it (before: the modular path dropped the helical
weighting, relative error 1.2–1.5). On a curved detector (the back-projector's focus
offsets apply the shifts) the helical window of each view now follows its own source's
angle and height, as each spot's views reconstructed about their own source would: a
z-flying spot then samples z more finely and FBP beats the scan without it (before: no
better).
"""
from __future__ import annotations

import numpy as np
import pytest

from leap.reconstruction.fbp import fbp, fbp_adjoint, helical_slice_weights
from leap.reconstruction.focal_spots import groups_by_spot, uses_spot_groups
from leap.geometry import ConeBeam, Detector, Volume
from leap.geometry.rays import pixel_rays
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject
from leap.phantoms.raytrace import ray_trace
from conftest import dot_test

SOD, SDD, PW, PH = 300.0, 540.0, 1.6, 1.6
PER_TURN = 120
VOL = Volume(num_x=64, num_y=64, num_z=6, voxel_width=1.0, voxel_height=1.0)
PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=c, radii=r, value=v) for c, r, v in [
    ((0.0, 0.0, 0.0), (20.0, 16.0, 9.0), 0.02), ((7.0, -5.0, 1.0), (4.0, 5.0, 3.0), 0.01),
    ((-9.0, 6.0, -2.0), (3.0, 3.0, 3.0), -0.01), ((-3.0, -11.0, 0.0), (1.6, 1.6, 1.6), 0.02)]])


def _scan(curved, shifts=None):
    det = Detector(num_rows=12, num_cols=64, pixel_height=PH, pixel_width=PW, curved=curved,
                   center_col=31.25, center_row=5.5)
    ang = np.arange(2 * PER_TURN) * 2.0 * np.pi / PER_TURN
    pitch = 0.8 * det.num_rows * PH * SOD / SDD / (2.0 * np.pi)
    return ConeBeam(detector=det, angles=ang, sod=SOD, sdd=SDD, helical_pitch=pitch,
                    source_shifts=shifts)


def _ffsxyz(n, z_rows=0.5):
    """Siemens-like FFSXYZ: φ (half a pixel at the detector) and ρ alternate every view,
    z (``z_rows`` rows at the axis) every second view: four spots."""
    k = np.arange(n)
    a, b = np.where(k % 2, 1.0, -1.0), np.where((k // 2) % 2, 1.0, -1.0)
    return np.stack([0.5 * PW / (SDD - SOD) * a, z_rows * PH * SOD / SDD * b, 1.5 * a], axis=1)


def _err(rec):
    truth = PHANTOM.voxelize(VOL.x_samples(), VOL.y_samples(), VOL.z_samples(), 1.0, 1.0,
                             oversampling=3)
    inside = np.hypot(VOL.x_samples()[None, :], VOL.y_samples()[:, None]) < 25.0
    return float(np.linalg.norm((rec - truth)[:, inside]) / np.linalg.norm(truth[:, inside]))


def test_flat_ffsxyz_reaches_the_per_spot_reconstruction():
    plain = _scan(curved=False)
    ffs = plain.with_changes(source_shifts=_ffsxyz(plain.num_angles))
    assert uses_spot_groups(ffs) and not uses_spot_groups(plain)
    g = ray_trace(PHANTOM, ffs, oversampling=2)
    groups = groups_by_spot(ffs)
    assert len(groups) == 4 and sorted(np.concatenate([i for i, _ in groups])) == \
        list(range(ffs.num_angles))
    recs = []
    for idx, cone in groups:
        # Each group is a plain cone beam about its own source: the same rays.
        assert cone.source_shifts is None
        o1, d1 = pixel_rays(cone)
        o2, d2 = pixel_rays(ffs[idx])
        np.testing.assert_allclose(o1, o2, atol=1e-9)
        np.testing.assert_allclose(d1, d2, atol=1e-12)
        recs.append(idx.size / ffs.num_angles * fbp(cone, VOL, np.ascontiguousarray(g[idx]),
                                                    fov_radius=ffs.fov_radius()))
    e_spots = _err(np.sum(recs, axis=0))
    e_ffs = _err(fbp(ffs, VOL, g))
    e_ignored = _err(fbp(plain, VOL, g))
    e_plain = _err(fbp(plain, VOL, ray_trace(PHANTOM, plain, oversampling=2)))
    assert e_ffs <= e_spots + 1e-3, (e_ffs, e_spots)
    assert e_ffs <= 1.02 * e_plain, (e_ffs, e_plain)
    assert e_ignored >= 1.1 * e_ffs, (e_ignored, e_ffs)


def test_helical_window_follows_each_spot():
    """View k's window is the unshifted window at ψ_k + Δψ_k + Δz_k/h."""
    plain = _scan(curved=True)
    sh = _ffsxyz(plain.num_angles, z_rows=1.0)
    ffs = plain.with_changes(source_shifts=sh)
    moved = plain.with_changes(angles=plain.angles + sh[:, 0] + sh[:, 1] / plain.helical_pitch,
                               helical_mid_angle=plain.helical_mid_angle)
    window = 0.3
    w = helical_slice_weights(ffs, VOL, window)
    w_moved = helical_slice_weights(moved, VOL, window)
    # The same windows; the end-of-helix normalisation integrates over the true angles.
    steps = np.abs(np.gradient(plain.angles))[:, None]
    np.testing.assert_allclose(w / np.sum(w * steps, axis=0),
                               w_moved / np.sum(w_moved * steps, axis=0), rtol=1e-9)
    assert not np.allclose(w, helical_slice_weights(plain, VOL, window))


def test_curved_z_flying_spot_samples_z_more_finely():
    plain = _scan(curved=True)
    n = plain.num_angles
    sh = np.zeros((n, 3))
    sh[:, 1] = np.where(np.arange(n) % 2, 1.0, -1.0) * PH * SOD / SDD     # ±1 row at the axis
    ffs = plain.with_changes(source_shifts=sh)
    e_ffs = _err(fbp(ffs, VOL, ray_trace(PHANTOM, ffs, oversampling=2)))
    e_plain = _err(fbp(plain, VOL, ray_trace(PHANTOM, plain, oversampling=2)))
    assert e_ffs <= 0.99 * e_plain, (e_ffs, e_plain)


def test_spot_groups_refuse_what_they_cannot_represent(rng):
    flat = _scan(curved=False)
    n = flat.num_angles
    with pytest.raises(ValueError, match="more than 16"):
        groups_by_spot(flat.with_changes(source_shifts=np.c_[np.zeros(n),
                                                              np.linspace(-0.5, 0.5, n),
                                                              np.zeros(n)]))
    with pytest.raises(ValueError, match="flat, untilted"):
        groups_by_spot(_scan(curved=True, shifts=_ffsxyz(n)))
    one = np.zeros((n, 3))
    one[5, 2] = 1.0
    with pytest.raises(ValueError, match="one view only"):
        groups_by_spot(flat.with_changes(source_shifts=one))
    circular = flat.with_changes(helical_pitch=0.0, source_shifts=_ffsxyz(n))
    assert not uses_spot_groups(circular)
    with pytest.raises(ValueError, match="moves in z"):
        groups_by_spot(circular)


def test_spot_grouped_fbp_adjoint_is_exact(rng):
    det = Detector(num_rows=6, num_cols=20, pixel_height=1.0, pixel_width=1.0)
    vol = Volume(num_x=10, num_y=10, num_z=4, voxel_width=0.8, voxel_height=0.8)
    ang = np.arange(24) * 2.0 * np.pi / 12
    k = np.arange(24)
    sh = np.stack([0.002 * np.where(k % 2, 1, -1), 0.2 * np.where((k // 2) % 2, 1, -1),
                   np.where(k % 2, 0.5, -0.5)], axis=1)
    geo = ConeBeam(detector=det, angles=ang, sod=60.0, sdd=110.0, helical_pitch=0.6,
                   source_shifts=sh)
    mism, _ = dot_test(lambda x: fbp(geo, vol, x), lambda y: fbp_adjoint(geo, vol, y),
                       geo.projection_shape, vol.shape, rng)
    assert mism < 1e-5
