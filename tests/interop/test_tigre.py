"""leap.interop.tigre: TIGRE geometries in and out.

Conventions against exact line integrals of an ellipsoid phantom along rays built the way
TIGRE's CUDA projector builds them (Siddon_projection.cu computeDeltas_Siddon: the
corner pixel, its two neighbours, roll-pitch-yaw, ZYZ Euler angles, COR; the kernel's
``pixelV = nV − v − 1``), written out here; round trips leap → TIGRE → leap.
"""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from leap.geometry import ConeBeam, Detector, FanBeam, ModularBeam, ParallelBeam, Volume
from leap.interop import from_tigre, to_tigre
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject, ray_trace
from leap.system import CTSystem

NV, NU, DV, DU = 9, 13, 1.1, 0.9


def phantom(shift=(0.0, 0.0, 0.0)):
    s = np.asarray(shift, float)
    return Phantom([PhantomObject(kind=ELLIPSOID, centre=s + (1.5, -2.0, 0.7), radii=(4.0, 2.5, 3.0),
                                  value=0.02),
                    PhantomObject(kind=ELLIPSOID, centre=s + (-2.0, 1.0, -1.0), radii=(1.5, 1.5, 2.0),
                                  value=0.05)])


def _rot(axis, a):
    c, s = np.cos(a), np.sin(a)
    if axis == "x":
        return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
    if axis == "y":
        return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _field(geo, name, i, width):
    a = np.atleast_1d(np.asarray(getattr(geo, name, np.zeros(width)), float))
    return a.reshape(-1, width)[i if a.size > width else 0] if width > 1 else \
        (a[i] if a.size > 1 else a[0])


def tigre_line_integrals(geo, angles, shift=(0.0, 0.0, 0.0)):
    """(angles, nV, nU) line integrals of ``phantom`` held at the image (offOrigin) along
    the rays of TIGRE's projector."""
    ang = np.asarray(angles, float)
    ang = np.hstack([ang.reshape(-1, 1), np.zeros((ang.size, 2))]) if ang.ndim == 1 else ang
    ph = phantom()
    out = np.zeros((ang.shape[0], NV, NU))
    vv, uu = np.meshgrid(np.arange(NV), np.arange(NU), indexing="ij")
    for i, (alpha, theta, psi) in enumerate(ang):
        dso, dsd, cor = (_field(geo, k, i, 1) for k in ("DSO", "DSD", "COR"))
        off_v, off_u = _field(geo, "offDetector", i, 2)
        yaw, pitch, roll = _field(geo, "rotDetector", i, 3)
        oz, oy, ox = _field(geo, "offOrigin", i, 3)
        rpy = _rot("z", roll) @ _rot("y", pitch) @ _rot("x", yaw)
        eul = _rot("z", alpha) @ _rot("y", theta) @ _rot("z", psi)
        corner = rpy @ [0.0, DU * (-NU / 2 + 0.5), DV * (NV / 2 - 0.5)]
        corner = corner + [-(dsd - dso), off_u, off_v]
        du, dv = eul @ rpy @ [0.0, DU, 0.0], eul @ rpy @ [0.0, 0.0, -DV]
        shift_cor = cor * np.array([-np.sin(alpha), np.cos(alpha), 0.0])
        corner = eul @ corner + shift_cor
        pix = corner + uu[..., None] * du + (NV - vv - 1)[..., None] * dv
        pix = pix - (ox, oy, oz)                          # relative to the image
        if geo.mode == "cone":
            src = eul @ [dso, 0.0, 0.0] + shift_cor - (ox, oy, oz)
            dirs, org = pix - src, np.broadcast_to(src, pix.shape)
        else:                                 # the documented rays: along −x, turned by α
            dirs, org = np.broadcast_to(eul @ [-1.0, 0.0, 0.0], pix.shape), pix
        out[i] = ph.line_integrals(np.ascontiguousarray(org).reshape(-1, 3),
                                   np.ascontiguousarray(dirs).reshape(-1, 3)).reshape(NV, NU)
    return out


def base_geo(mode="cone", **changes):
    geo = SimpleNamespace(mode=mode, DSO=60.0, DSD=100.0, nDetector=np.array([NV, NU]),
                          dDetector=np.array([DV, DU]), nVoxel=np.array([8, 16, 16]),
                          dVoxel=np.array([1.0, 1.0, 1.0]), offOrigin=np.array([0.3, -0.5, 0.8]),
                          offDetector=np.array([0.0, 0.0]), rotDetector=np.zeros(3), COR=0.0)
    for k, v in changes.items():
        setattr(geo, k, v)
    return geo


ANG = np.linspace(0.2, 2 * np.pi + 0.2, 8, endpoint=False)
CASES = {
    "cone": (base_geo(), ANG, ConeBeam),
    "cone_offsets_cor": (base_geo(offDetector=np.array([0.7, -1.3]), COR=0.9), ANG, ConeBeam),
    "cone_yaw": (base_geo(offDetector=np.array([0.7, -1.3]), rotDetector=np.array([0.05, 0, 0])),
                 ANG, ConeBeam),
    "cone_rpy": (base_geo(rotDetector=np.array([0.05, 0.1, -0.08]), COR=0.4), ANG, ModularBeam),
    "cone_euler": (base_geo(), np.stack([ANG, 0.2 * np.ones(8), 0.1 * np.sin(ANG)], 1), ModularBeam),
    "cone_per_view": (base_geo(DSO=60 + np.sin(ANG), offDetector=np.stack([np.cos(ANG), np.sin(ANG)], 1)),
                      ANG, ModularBeam),
    "cone_helix": (base_geo(offOrigin=np.stack([0.8 - 0.6 * ANG, np.full(8, -0.5), np.full(8, 0.3)], 1)),
                   ANG, ConeBeam),
    "parallel": (base_geo("parallel", offDetector=np.array([0.4, -1.1]), COR=0.6), ANG, ParallelBeam),
    "parallel_roll": (base_geo("parallel", rotDetector=np.array([0, 0, 0.3])), ANG, ParallelBeam),
}


@pytest.mark.parametrize("name", list(CASES))
def test_tigre_geometries_trace_tigre_rays(name):
    geo, angles, expected = CASES[name]
    system = from_tigre(geo, angles)
    assert type(system.geometry) is expected
    if name == "cone_helix":
        assert system.geometry.helical_pitch == pytest.approx(0.6)
    if name == "cone_yaw":
        assert system.geometry.tilt == pytest.approx(0.05)
    ref = tigre_line_integrals(geo, angles)
    assert ref.max() > 0.1
    v = system.volume
    got = ray_trace(phantom((v.offset_x, v.offset_y, v.offset_z)), system.geometry)
    np.testing.assert_allclose(got, ref, atol=2e-5 * ref.max())
    assert np.abs(got[:, :, ::-1] - ref).max() > 0.05 * ref.max()


def test_dict_geometry_and_geo_angles():
    geo = vars(base_geo(offDetector=np.array([0.7, -1.3]), COR=0.9)).copy()
    geo["angles"] = ANG
    s = from_tigre(geo)
    s2 = from_tigre(base_geo(offDetector=np.array([0.7, -1.3]), COR=0.9), ANG)
    assert s.geometry == s2.geometry


def _close(a, b):
    da, db = dataclasses.asdict(a), dataclasses.asdict(b)
    return all(np.isclose(da[k], db[k], rtol=1e-12, atol=1e-12) for k in da)


def _systems():
    vol = Volume(num_x=10, num_y=10, num_z=6, voxel_width=0.7, voxel_height=0.6, offset_x=0.4,
                 offset_y=-0.3, offset_z=0.2)
    det = Detector(num_rows=8, num_cols=15, pixel_width=0.8, pixel_height=0.9, center_row=3.2,
                   center_col=8.1)
    cone = ConeBeam(detector=det, angles=ANG, sod=90, sdd=140, tau=1.3, tilt=0.02)
    rng = np.random.default_rng(0)
    mod = cone.to_modular()
    mod = mod.with_changes(source_positions=mod.source_positions + rng.normal(0, 2, (8, 3)))
    mod = mod.reoriented(Rotation.from_rotvec([0.05, -0.03, 0.08]).as_matrix())
    return {"parallel": ParallelBeam(detector=det, angles=ANG), "cone": cone,
            "helix": ConeBeam(detector=det, angles=ANG, sod=90, sdd=140, tau=-0.4,
                              helical_pitch=0.7),
            "modular": mod}, vol


@pytest.mark.parametrize("name", ["parallel", "cone", "helix", "modular"])
def test_leap_tigre_leap_round_trip(name):
    geoms, vol = _systems()
    g = geoms[name]
    geo, angles = to_tigre(CTSystem(geometry=g, volume=vol))
    assert angles.ndim == (2 if name == "modular" else 1)
    back = from_tigre(geo, angles)
    assert type(back.geometry) is type(g)
    if name == "helix":     # the volume moves to the helix's middle, the sources with it
        np.testing.assert_allclose(back.volume.offset_z, vol.offset_z, atol=1e-12)
    assert _close(back.volume, vol)
    assert _close(back.geometry.detector, g.detector)
    assert back.geometry.with_changes(detector=g.detector) == g


def test_what_tigre_cannot_express_raises():
    vol = Volume(num_x=8, num_y=8, num_z=4, voxel_width=1.0, voxel_height=1.0)
    det = Detector(num_rows=4, num_cols=8, pixel_height=1, pixel_width=1)
    with pytest.raises(ValueError, match="curved"):
        to_tigre(CTSystem(geometry=ConeBeam(detector=det.with_changes(curved=True), angles=ANG,
                                            sod=90, sdd=140), volume=vol))
    with pytest.raises(ValueError, match="no form for a FanBeam"):
        to_tigre(CTSystem(geometry=FanBeam(detector=det, angles=ANG, sod=90, sdd=140), volume=vol))
    with pytest.raises(TypeError, match="CTSystem"):
        to_tigre(vol)


def test_bad_tigre_input_raises_naming_it():
    with pytest.raises(ValueError, match="no field 'DSD'"):
        geo = base_geo()
        del geo.DSD
        from_tigre(geo, ANG)
    with pytest.raises(ValueError, match="0 < DSO < DSD"):
        from_tigre(base_geo(DSD=50.0), ANG)
    with pytest.raises(ValueError, match=r"offDetector must have 2 value\(s\) or one row per angle"):
        from_tigre(base_geo(offDetector=np.zeros((3, 2))), ANG)
    with pytest.raises(ValueError, match="is not sVoxel"):
        from_tigre(base_geo(sVoxel=np.array([8.0, 16.0, 15.0])), ANG)
    with pytest.raises(ValueError, match="square in x-y"):
        from_tigre(base_geo(dVoxel=np.array([1.0, 1.0, 2.0])), ANG)
    with pytest.raises(ValueError, match=r"\(N, 3\) Euler angles"):
        from_tigre(base_geo(), np.zeros((8, 2)))
    with pytest.raises(ValueError, match="mode must be 'cone' or 'parallel'"):
        from_tigre(base_geo("fan"), ANG)
    with pytest.raises(ValueError, match="only the first Euler angle"):
        from_tigre(base_geo("parallel"), np.stack([ANG, ANG, ANG], 1))
    with pytest.raises(ValueError, match="approximate_parallel=True"):
        from_tigre(base_geo("parallel", rotDetector=np.array([0.1, 0, 0])), ANG)
    with pytest.raises(ValueError, match="nDetector must hold 2 finite positive"):
        from_tigre(base_geo(nDetector=np.array([4, -1])), ANG)
