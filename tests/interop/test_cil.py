"""leap.interop.cil: CIL AcquisitionGeometry / ImageGeometry in and out (duck-typed: the
geometries are built here as plain namespaces with CIL's attribute names).

Conventions against exact line integrals of an ellipsoid phantom held by the sample:
the lab's rays (source or ray direction, panel pixel (0, 0) at the ``origin`` corner)
stay fixed and the sample turns by +θ about CIL's rotation axis; the phantom lives in
CIL's reconstruction frame (rotation axis through the origin along z, beam along +y),
which the test sets up with its own rotations.
"""
import dataclasses
from types import SimpleNamespace as NS

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from leap.geometry import ConeBeam, Detector, FanBeam, ModularBeam, ParallelBeam, Volume
from leap.interop import from_cil, to_cil
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject, ray_trace
from leap.system import CTSystem

PHANTOM = Phantom([PhantomObject(kind=ELLIPSOID, centre=(1.5, -2.0, 0.7), radii=(4.0, 2.5, 3.0),
                                 value=0.02),
                   PhantomObject(kind=ELLIPSOID, centre=(-2.0, 1.0, -1.0), radii=(1.5, 1.5, 2.0),
                                 value=0.05)])
PHANTOM_2D = Phantom([PhantomObject(kind=ELLIPSOID, centre=(1.5, -2.0, 0.0), radii=(4.0, 2.5, 30.0),
                                    value=0.02),
                      PhantomObject(kind=ELLIPSOID, centre=(-2.0, 1.0, 0.0), radii=(1.5, 1.5, 30.0),
                                    value=0.05)])
DEG = np.arange(0.0, 360.0, 45.0) + 10.0


def ag(system, nx, ny, px, py, origin="bottom-left", angles=DEG, unit="degree", initial=0.0):
    return NS(config=NS(system=system, panel=NS(num_pixels=[nx, ny], pixel_size=[px, py],
                                                origin=origin),
                        angles=NS(angle_data=np.asarray(angles, float), initial_angle=initial,
                                  angle_unit=unit)))


def frame(axis_dir, beam):
    """The lab → reconstruction-frame rotation: the axis to +z by the smallest turn,
    then about z so the beam's xy part points along +y."""
    a = np.asarray(axis_dir, float) / np.linalg.norm(axis_dir)
    if np.allclose(a, [0, 0, 1]):
        m = np.eye(3)
    else:
        k = np.cross(a, [0, 0, 1])
        m = Rotation.from_rotvec(k / np.linalg.norm(k) * np.arccos(a[2])).as_matrix()
    b = m @ beam
    t = np.arctan2(b[0], b[1])                # turn b's xy part onto +y
    return Rotation.from_euler("z", t).as_matrix() @ m


def lab_line_integrals(geom, phantom):
    """(views, rows, cols) line integrals: fixed lab rays, the sample turned by +θ."""
    c = geom.config
    s, p = c.system, c.panel
    nx, ny = p.num_pixels
    px, py = p.pixel_size
    two_d = np.size(s.detector.position) == 2
    pad = (lambda x: np.append(np.asarray(x, float), 0.0)) if two_d else (lambda x: np.asarray(x, float))
    dx = pad(s.detector.direction_x) / np.linalg.norm(s.detector.direction_x)
    dy = np.array([0, 0, 1.0]) if two_d else np.asarray(s.detector.direction_y, float)
    dy = dy / np.linalg.norm(dy)
    # pixel (0, 0) at the origin corner
    i = np.arange(nx) - (nx - 1) / 2
    j = np.arange(ny) - (ny - 1) / 2
    if "right" in p.origin:
        i = -i
    if "top" in p.origin:
        j = -j
    pix = pad(s.detector.position) + j[:, None, None] * py * dy + i[None, :, None] * px * dx
    axis_pos = pad(s.rotation_axis.position)
    axis_dir = np.array([0, 0, 1.0]) if two_d else np.asarray(s.rotation_axis.direction, float)
    cone = hasattr(s, "source")
    src = pad(s.source.position) if cone else None
    beam = (pad(s.detector.position) - src) if cone else pad(s.ray.direction)
    m = frame(axis_dir, beam if not cone else (np.eye(3) @ beam))
    ang = np.asarray(c.angles.angle_data, float) + c.angles.initial_angle
    ang = np.radians(ang) if c.angles.angle_unit == "degree" else ang
    out = np.zeros((ang.size, ny, nx))
    for k, a in enumerate(ang):
        to_obj = Rotation.from_euler("z", -a).as_matrix() @ m     # the sample turned by +a
        q = (pix - axis_pos) @ to_obj.T
        if cone:
            o = to_obj @ (src - axis_pos)
            dirs, org = q - o, np.broadcast_to(o, q.shape)
        else:
            dirs, org = np.broadcast_to(to_obj @ pad(s.ray.direction), q.shape), q
        out[k] = phantom.line_integrals(np.ascontiguousarray(org).reshape(-1, 3),
                                        np.ascontiguousarray(dirs).reshape(-1, 3)).reshape(ny, nx)
    return out


def _cone3d(**kw):
    d = dict(source=NS(position=np.array([0.0, -60.0, 0.0])),
             detector=NS(position=np.array([0.0, 40.0, 0.0]), direction_x=np.array([1.0, 0, 0]),
                         direction_y=np.array([0, 0, 1.0])),
             rotation_axis=NS(position=np.zeros(3), direction=np.array([0, 0, 1.0])))
    d.update(kw)
    return NS(**d)


OFFSET = _cone3d(detector=NS(position=np.array([1.3, 40.0, -0.8]), direction_x=np.array([1.0, 0, 0]),
                             direction_y=np.array([0, 0, 1.0])),
                 rotation_axis=NS(position=np.array([0.7, 0.0, 0.0]), direction=np.array([0, 0, 1.0])))
tilted_x = Rotation.from_rotvec([0.03, 0.02, 0.06]).as_matrix()
CASES = {
    "cone3d": (ag(_cone3d(), 13, 9, 0.9, 1.1), ConeBeam),
    "cone3d_offsets": (ag(OFFSET, 13, 9, 0.9, 1.1, initial=15.0), ConeBeam),
    # pixel (0, 0) top right: rows run down, which only a modular beam holds as stored
    "cone3d_top_right": (ag(OFFSET, 13, 9, 0.9, 1.1, origin="top-right", initial=15.0), ModularBeam),
    "cone3d_radians": (ag(_cone3d(), 13, 9, 0.9, 1.1, angles=np.radians(DEG), unit="radian"), ConeBeam),
    "cone3d_tilts": (ag(_cone3d(detector=NS(position=np.array([1.3, 40.0, -0.8]),
                                            direction_x=tilted_x @ [1.0, 0, 0],
                                            direction_y=tilted_x @ [0, 0, 1.0]),
                                rotation_axis=NS(position=np.array([0.7, 2.0, 0.3]),
                                                 direction=np.array([0.05, -0.03, 1.0]))),
                        13, 9, 0.9, 1.1), ModularBeam),
    "parallel3d": (ag(NS(ray=NS(direction=np.array([0.0, 1.0, 0.0])),
                         detector=NS(position=np.array([0.8, 0.0, 0.4]),
                                     direction_x=np.array([1.0, 0, 0]),
                                     direction_y=np.array([0, 0, 1.0])),
                         rotation_axis=NS(position=np.array([-0.5, 0.0, 0.0]),
                                          direction=np.array([0, 0, 1.0]))),
                      13, 9, 0.9, 1.1, origin="bottom-right"), ParallelBeam),
}
CASES_2D = {
    "cone2d": (ag(NS(source=NS(position=np.array([0.0, -60.0])),
                     detector=NS(position=np.array([1.1, 40.0]), direction_x=np.array([1.0, 0])),
                     rotation_axis=NS(position=np.array([0.4, 0.0]))), 17, 1, 0.9, 0.9), FanBeam),
    "parallel2d": (ag(NS(ray=NS(direction=np.array([0.0, 1.0])),
                         detector=NS(position=np.array([0.6, 0.0]), direction_x=np.array([1.0, 0])),
                         rotation_axis=NS(position=np.array([-0.3, 0.0]))), 17, 1, 0.9, 0.9,
                      origin="top-right"), ParallelBeam),
}


@pytest.mark.parametrize("name", list(CASES))
def test_cil_3d_geometries_trace_cil_rays(name):
    geom, expected = CASES[name]
    system = from_cil(geom)
    assert type(system.geometry) is expected
    ref = lab_line_integrals(geom, PHANTOM)
    assert ref.max() > 0.1
    got = ray_trace(PHANTOM, system.geometry)
    np.testing.assert_allclose(got, ref, atol=2e-5 * ref.max())
    assert np.abs(got[:, :, ::-1] - ref).max() > 0.05 * ref.max()


@pytest.mark.parametrize("name", list(CASES_2D))
def test_cil_2d_geometries_trace_cil_rays(name):
    geom, expected = CASES_2D[name]
    ig = NS(voxel_num_x=24, voxel_num_y=24, voxel_num_z=0, voxel_size_x=0.8, voxel_size_y=0.8,
            center_x=0.0, center_y=0.0)
    system = from_cil(geom, ig)
    assert type(system.geometry) is expected
    assert system.volume.shape == (1, 24, 24)
    ref = lab_line_integrals(geom, PHANTOM_2D)
    got = ray_trace(PHANTOM_2D, system.geometry)
    np.testing.assert_allclose(got, ref, atol=2e-5 * ref.max())


def test_flex_geometry_and_tigre_frame():
    base = from_cil(CASES["cone3d_tilts"][0]).geometry
    flex = NS(config=NS(system=NS(source=[NS(position=s) for s in base.source_positions],
                                  detector=[NS(position=c, direction_x=x, direction_y=y) for c, x, y
                                            in zip(base.module_centers, base.col_vectors, base.row_vectors)],
                                  volume_centre=NS(position=np.array([1.0, 2.0, 3.0]))),
                        panel=NS(num_pixels=[13, 9], pixel_size=[0.9, 1.1], origin="bottom-left"),
                        angles=None))
    ig = NS(voxel_num_x=8, voxel_num_y=8, voxel_num_z=4, voxel_size_x=1.0, voxel_size_y=1.0,
            voxel_size_z=2.0, center_x=0.5, center_y=0.0, center_z=0.0)
    s = from_cil(flex, ig)
    assert s.geometry == base
    assert (s.volume.offset_x, s.volume.offset_y, s.volume.offset_z) == (1.5, 2.0, 3.0)
    # CIL's TIGRE plugin aligns on the rotation axis, not the detector centre: with
    # offsets the frames differ (axis at x = 0.7, source 60 mm before it, detector centre
    # at x = 1.3, 40 mm beyond): each turns the beam onto +y counter-clockwise
    geom = CASES["cone3d_offsets"][0]
    a = from_cil(geom).geometry
    b = from_cil(geom, frame="tigre").geometry
    turn = np.arctan2(0.7, 60.0) - np.arctan2(1.3, 100.0)
    np.testing.assert_allclose(b.angles - a.angles, turn, atol=1e-12)
    with pytest.raises(ValueError, match="frame must be 'cil' or 'tigre'"):
        from_cil(geom, frame="astra")


def _close(a, b):
    da, db = dataclasses.asdict(a), dataclasses.asdict(b)
    return all(np.isclose(da[k], db[k], rtol=1e-12, atol=1e-12) for k in da)


def _systems():
    ang = np.linspace(-0.3, 5.9, 8)
    v3 = Volume(num_x=10, num_y=10, num_z=6, voxel_width=0.7, voxel_height=0.6, offset_x=0.4,
                offset_y=-0.3, offset_z=0.2)
    v2 = Volume(num_x=10, num_y=12, num_z=1, voxel_width=0.7, voxel_height=0.7, offset_x=0.4)
    det = Detector(num_rows=8, num_cols=15, pixel_width=0.8, pixel_height=0.9, center_row=3.2,
                   center_col=8.1)
    det2 = Detector(num_rows=1, num_cols=15, pixel_width=0.8, pixel_height=0.7, center_row=0.0,
                    center_col=6.6)
    cone = ConeBeam(detector=det, angles=ang, sod=90, sdd=140, tau=1.3)
    mod = ConeBeam(detector=det, angles=ang, sod=90, sdd=140, tau=1.3, tilt=0.02).to_modular()
    mod = mod.with_changes(source_positions=mod.source_positions
                           + np.random.default_rng(0).normal(0, 2, (8, 3)))
    return {"parallel3d": (ParallelBeam(detector=det, angles=ang), v3, "create_Parallel3D"),
            "parallel2d": (ParallelBeam(detector=det2, angles=ang), v2, "create_Parallel2D"),
            "fan": (FanBeam(detector=det2, angles=ang, sod=90, sdd=140, tau=-2.0), v2, "create_Cone2D"),
            "cone": (cone, v3, "create_Cone3D"),
            "helix": (cone.with_changes(helical_pitch=0.8), v3, "create_Cone3D_Flex"),
            "modular": (mod, v3, "create_Cone3D_Flex")}


@pytest.mark.parametrize("name", list(_systems()))
def test_leap_cil_leap_round_trip(name):
    g, vol, create = _systems()[name]
    c = to_cil(CTSystem(geometry=g, volume=vol))
    assert c.create == create
    back = from_cil(c, c.image)
    expected = g.to_modular() if name == "helix" else g
    assert type(back.geometry) is type(expected)
    assert _close(back.volume, vol)
    assert _close(back.geometry.detector, expected.detector)
    assert back.geometry.with_changes(detector=expected.detector) == expected
    # the create_* arguments carry the same numbers as the config
    if c.angle_args is not None:
        np.testing.assert_array_equal(c.angle_args["angles"], c.config.angles.angle_data)


def test_what_cil_cannot_express_and_bad_input_raise():
    vol = Volume(num_x=8, num_y=8, num_z=4, voxel_width=1.0, voxel_height=1.0)
    det = Detector(num_rows=4, num_cols=8, pixel_height=1, pixel_width=1)
    with pytest.raises(ValueError, match="curved"):
        to_cil(CTSystem(geometry=ConeBeam(detector=det.with_changes(curved=True), angles=DEG,
                                          sod=90, sdd=140), volume=vol))
    with pytest.raises(ValueError, match="Cone2D.*has 4"):
        to_cil(CTSystem(geometry=FanBeam(detector=det, angles=DEG, sod=90, sdd=140), volume=vol))
    with pytest.raises(ValueError, match="has no attribute 'config'"):
        from_cil(NS())
    bad = ag(_cone3d(), 13, 9, 0.9, 1.1, unit="gradian")
    with pytest.raises(ValueError, match="angle_unit must be 'degree' or 'radian'"):
        from_cil(bad)
    with pytest.raises(ValueError, match="pixel_size"):
        from_cil(ag(_cone3d(), 13, 9, -0.9, 1.1))
    ig = NS(voxel_num_x=8, voxel_num_y=8, voxel_num_z=4, voxel_size_x=1.0, voxel_size_y=2.0,
            voxel_size_z=1.0, center_x=0.0, center_y=0.0, center_z=0.0)
    with pytest.raises(ValueError, match="square in x-y"):
        from_cil(ag(_cone3d(), 13, 9, 0.9, 1.1), ig)
    tilted = ag(NS(ray=NS(direction=np.array([0.0, 1.0, 0.3])),
                   detector=NS(position=np.zeros(3), direction_x=np.array([1.0, 0, 0]),
                               direction_y=np.array([0, -0.3, 1.0])),
                   rotation_axis=NS(position=np.zeros(3), direction=np.array([0, 0, 1.0]))),
                13, 9, 0.9, 1.1)
    with pytest.raises(ValueError, match="approximate_parallel=True"):
        from_cil(tilted)
