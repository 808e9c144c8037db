"""CIL (Core Imaging Library) geometries to and from leap.

CIL describes a scan by an ``AcquisitionGeometry`` whose ``config`` holds the system
(source or ray, detector, rotation axis), the angles and the panel, and the volume by an
``ImageGeometry``. :func:`from_cil` reads them by attribute name (duck typing), so CIL
itself is never imported; :func:`to_cil` gives the same structure as plain namespaces
together with the arguments of CIL's ``create_*`` / ``set_panel`` / ``set_angles`` /
``ImageGeometry`` calls that rebuild it in CIL.

Convention chain
----------------
Facts from TomographicImaging/CIL (``cil/framework/acquisition_geometry.py``:
``align_z``, ``align_reference_frame``, ``rotation_vec_to_z``, ``rotation_vec_to_y``,
``Panel``; ``cil/plugins/astra/utilities/convert_geometry_to_astra_vec_3D.py`` and
``..._vec_2D.py``: how CIL's own ASTRA plugin turns them into ASTRA vectors):

* CIL first moves its system so the rotation axis passes through the origin along +z
  (``align_z``: a translation, then the rotation ``rotation_vec_to_z`` of the axis
  direction), then turns it about z so the beam points along +y: for cone beams the
  direction from the source to the detector centre (``align_reference_frame('cil')``,
  what its ASTRA plugin uses), for parallel beams the ray direction. The
  ``ImageGeometry`` lives in that frame (centre ``center_x/y/z``).
* Angle θ (``angle_data`` in ``angle_unit``, plus ``initial_angle``) turns the aligned
  system by ``Rz(−(initial_angle + θ))`` (the sample turns by +θ).
* Panel: ``num_pixels`` and ``pixel_size`` are (x, y) = (cols, rows); pixel (0, 0) is the
  ``origin`` corner: columns step along ``detector.direction_x`` from 'left', against it
  from 'right'; rows along ``direction_y`` from 'bottom', against it from 'top'. The
  data's default order ('angle', 'vertical', 'horizontal') is leap's (angles, rows, cols)
  and needs no conversion; volumes ('vertical', 'horizontal_y', 'horizontal_x') are leap's
  (z, y, x) with every index increasing its coordinate.
* The resulting per-view vectors are ASTRA's 3-D vector convention in CIL's aligned
  frame, which is leap's world (:mod:`leap.interop.astra`). 2-D geometries are the same
  in the plane z = 0 (CIL's 2-D ASTRA converter mirrors y and the angle sense together
  for ASTRA's 2-D image, which leaves this unchanged).
* ``Cone3D_Flex`` (per-view source and detector, no angles) is used as given, with the
  volume centred at ``volume_centre.position`` plus the image geometry's centre.

CIL disagrees with itself on one point: for its TIGRE plugin it aligns the cone-beam
frame on the direction from the source to the *rotation axis*
(``align_reference_frame('tigre')``), not to the detector centre, so with a detector
offset the two plugins' images are turned against each other by the offset's angle.
:func:`from_cil` follows the ASTRA plugin (``frame='cil'``); ``frame='tigre'`` gives the
other.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np

from ..geometry import ConeBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from ..system import CTSystem
from ._vectors import (cone_from_vectors, fan_from_vectors, modular_from_vectors,
                       parallel_from_vectors)


# --------------------------------------------------------------------------- helpers
def _get(obj, name, what):
    try:
        return getattr(obj, name)
    except AttributeError:
        raise ValueError(f"the CIL {what} has no attribute {name!r}") from None


def _vec3(value, what) -> np.ndarray:
    a = np.array(value, dtype=np.float64).ravel()
    if a.size not in (2, 3) or not np.all(np.isfinite(a)):
        raise ValueError(f"CIL {what} must be 2 or 3 finite numbers, got {value!r}")
    return np.append(a, 0.0) if a.size == 2 else a


def _unit(a, what):
    n = np.linalg.norm(a)
    if not n > 0:
        raise ValueError(f"CIL {what} must be a non-zero vector")
    return a / n


def _text(value) -> str:
    return str(getattr(value, "value", value)).lower()


def _to_z(a):
    """CIL's ``rotation_vec_to_z``: the rotation taking the unit vector a to +z."""
    if np.allclose(a, [0, 0, 1]):
        return np.eye(3)
    if np.allclose(a, [0, 0, -1]):
        return np.diag([1.0, -1.0, -1.0])
    vx = np.array([[0, 0, -a[0]], [0, 0, -a[1]], [a[0], a[1], 0]])
    return np.eye(3) + vx + vx @ vx / (1 + a[2])


def _to_y(b):
    """CIL's ``rotation_vec_to_y``: the turn about z taking b's xy part to +y."""
    b = b / np.linalg.norm(b)
    if np.allclose(b[:2], [0, 1]):
        return np.eye(3)
    if np.allclose(b[:2], [0, -1]):
        return np.diag([-1.0, -1.0, 1.0])
    t = math.atan2(b[0], b[1])
    return np.array([[math.cos(t), -math.sin(t), 0], [math.sin(t), math.cos(t), 0], [0, 0, 1]])


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    r = np.zeros(np.shape(a) + (3, 3))
    r[..., 0, 0], r[..., 0, 1], r[..., 1, 0], r[..., 1, 1], r[..., 2, 2] = c, -s, s, c, 1.0
    return r


def cil_vectors(acquisition_geometry, frame: str = "cil") -> dict:
    """Per-view vectors (ASTRA's 3-D convention, CIL's aligned frame; module docstring)
    of a CIL acquisition geometry: ``sources`` (cone) or ``rays`` (parallel),
    ``centers``, ``u``, ``v`` (n, 3), and ``shape`` (rows, cols), ``two_d``, ``flex``,
    ``volume_centre``."""
    if frame not in ("cil", "tigre"):
        raise ValueError(f"frame must be 'cil' or 'tigre', got {frame!r}")
    config = _get(acquisition_geometry, "config", "AcquisitionGeometry")
    system = _get(config, "system", "configuration")
    panel = _get(config, "panel", "configuration")
    num = np.ravel(_get(panel, "num_pixels", "panel"))
    nx, ny = int(num[0]), int(num[1]) if num.size > 1 else 1
    px, py = (float(x) for x in np.resize(np.ravel(_get(panel, "pixel_size", "panel")), 2))
    if nx < 1 or ny < 1 or not (px > 0 and py > 0):
        raise ValueError(f"CIL panel: num_pixels {panel.num_pixels} and pixel_size "
                         f"{panel.pixel_size} must be positive")
    origin = _text(_get(panel, "origin", "panel"))
    su = -1.0 if "right" in origin else 1.0
    sv = -1.0 if "top" in origin else 1.0
    detector = _get(system, "detector", "system")
    out = dict(shape=(ny, nx), flex=False, volume_centre=np.zeros(3))

    if isinstance(detector, (list, tuple)):                    # Cone3D_Flex
        src = np.array([_vec3(s.position, "source position") for s in system.source])
        ctr = np.array([_vec3(d.position, "detector position") for d in detector])
        dx = np.array([_unit(_vec3(d.direction_x, "direction_x"), "direction_x") for d in detector])
        dy = np.array([_unit(_vec3(d.direction_y, "direction_y"), "direction_y") for d in detector])
        vc = getattr(system, "volume_centre", None)
        out.update(sources=src, centers=ctr, u=su * px * dx, v=sv * py * dy, two_d=False,
                   flex=True, volume_centre=np.zeros(3) if vc is None
                   else _vec3(vc.position, "volume_centre position"))
        return out

    det_pos = _vec3(_get(detector, "position", "detector"), "detector position")
    two_d = np.size(detector.position) == 2
    dir_x = _unit(_vec3(_get(detector, "direction_x", "detector"), "direction_x"), "direction_x")
    dir_y = np.array([0.0, 0.0, 1.0]) if two_d else \
        _unit(_vec3(_get(detector, "direction_y", "detector"), "direction_y"), "direction_y")
    axis = _get(system, "rotation_axis", "system")
    axis_pos = _vec3(_get(axis, "position", "rotation axis"), "rotation axis position")
    axis_dir = np.array([0.0, 0.0, 1.0]) if two_d or getattr(axis, "direction", None) is None \
        else _unit(_vec3(axis.direction, "rotation axis direction"), "rotation axis direction")
    cone = getattr(system, "source", None) is not None
    first = _vec3(system.source.position, "source position") - axis_pos if cone else \
        _unit(_vec3(_get(_get(system, "ray", "system"), "direction", "ray"), "ray direction"),
              "ray direction")
    det_pos = det_pos - axis_pos
    rz = _to_z(axis_dir)                                       # align_z
    first, det_pos, dir_x, dir_y = rz @ first, rz @ det_pos, rz @ dir_x, rz @ dir_y
    if not cone:
        beam = first
    elif frame == "cil":
        beam = det_pos - first
    else:
        beam = -first
    ry = _to_y(beam)                                           # align_reference_frame
    first, det_pos, dir_x, dir_y = ry @ first, ry @ det_pos, ry @ dir_x, ry @ dir_y

    angles = _get(config, "angles", "configuration")
    theta = np.array(_get(angles, "angle_data", "angles"), dtype=np.float64).ravel()
    initial = float(getattr(angles, "initial_angle", 0.0) or 0.0)
    unit = _text(getattr(angles, "angle_unit", "degree"))
    if unit not in ("degree", "radian"):
        raise ValueError(f"CIL angle_unit must be 'degree' or 'radian', got {unit!r}")
    if theta.size == 0 or not np.all(np.isfinite(theta)):
        raise ValueError("CIL angle_data must hold finite angles, at least one")
    turn = -(initial + theta)
    turn = np.radians(turn) if unit == "degree" else turn
    r = _rz(turn)
    key = "sources" if cone else "rays"
    out.update({key: r @ first}, centers=r @ det_pos, u=su * px * (r @ dir_x),
               v=sv * py * (r @ dir_y), two_d=two_d)
    return out


def _volume(image_geometry, offset) -> Volume | None:
    if image_geometry is None:
        return None
    ig = image_geometry
    nx = int(_get(ig, "voxel_num_x", "ImageGeometry"))
    ny = int(_get(ig, "voxel_num_y", "ImageGeometry"))
    nz = int(getattr(ig, "voxel_num_z", 0) or 0)
    sx, sy = float(ig.voxel_size_x), float(ig.voxel_size_y)
    sz = float(getattr(ig, "voxel_size_z", sx) or sx)
    if abs(sx - sy) > 1e-6 * max(sx, sy):
        raise ValueError(f"CIL ImageGeometry voxel_size_x ({sx:g}) and voxel_size_y ({sy:g}) "
                         "differ; leap's voxels are square in x-y (voxel_width)")
    centre = np.array([float(getattr(ig, f"center_{a}", 0.0) or 0.0) for a in "xyz"]) + offset
    two_d = nz < 1
    return Volume(num_x=nx, num_y=ny, num_z=max(nz, 1), voxel_width=sx,
                  voxel_height=sx if two_d else sz, offset_x=centre[0], offset_y=centre[1],
                  offset_z=0.0 if two_d else centre[2])


# ---------------------------------------------------------------------------- in
def from_cil(acquisition_geometry, image_geometry=None, *, frame: str = "cil",
             approximate_parallel: bool = False) -> CTSystem:
    """The :class:`~leap.system.CTSystem` of a CIL ``AcquisitionGeometry`` (and
    ``ImageGeometry``), read by attribute names.

    Parameters
    ----------
    acquisition_geometry : CIL's AcquisitionGeometry (``Parallel2D``, ``Cone2D``,
        ``Parallel3D``, ``Cone3D`` or ``Cone3D_Flex`` system), or anything with its
        ``config.system``, ``config.angles`` and ``config.panel`` attributes.
    image_geometry : CIL's ImageGeometry (``voxel_num_x/y/z``, ``voxel_size_x/y/z``,
        ``center_x/y/z``); None: leap's default volume.
    frame : 'cil' (the frame of CIL's ASTRA plugin, default) or 'tigre' (its TIGRE
        plugin's); see the module docstring.
    approximate_parallel : as in :func:`leap.interop.astra.from_astra`.

    Returns a CTSystem: ConeBeam / FanBeam / ParallelBeam where the aligned system is
    one (axis along z, detector rows along it, offsets allowed), ModularBeam otherwise;
    no field-of-view mask (CIL's projectors mask none). CIL's data arrays in their
    default dimension order are leap's.
    """
    vec = cil_vectors(acquisition_geometry, frame)
    nr, nc = vec["shape"]
    two_d = vec["two_d"]
    volume = _volume(image_geometry, vec["volume_centre"])
    if two_d:
        if nr != 1:
            raise ValueError(f"a 2-D CIL panel has one row, got num_pixels {nc, nr}")
        ph = volume.voxel_height if volume is not None else float(np.linalg.norm(vec["u"][0]))
        vec["v"] = np.tile([0.0, 0.0, ph], (vec["u"].shape[0], 1))
    if "rays" in vec:
        geometry = parallel_from_vectors(vec["rays"], vec["centers"], vec["u"], vec["v"], nr, nc)
        if geometry is None:
            if not approximate_parallel:
                raise ValueError("this CIL parallel geometry is no leap ParallelBeam (its "
                                 "detector is turned out of the rotation axis' direction); "
                                 "from_cil(..., approximate_parallel=True) models it as a "
                                 "modular beam with distant sources")
            if volume is None:
                raise ValueError("approximate_parallel needs the image_geometry")
            from .astra import _far_modular
            geometry = _far_modular(vec["rays"], vec["centers"], vec["u"], vec["v"], nr, nc, volume)
    else:
        src, ctr, u, v = vec["sources"], vec["centers"], vec["u"], vec["v"]
        geometry = None
        if two_d:
            geometry = fan_from_vectors(src[:, :2], ctr[:, :2], u[:, :2], nc, v[0, 2])
        elif not vec["flex"]:
            geometry = cone_from_vectors(src, ctr, u, v, nr, nc)
        if geometry is None:
            geometry = modular_from_vectors(src, ctr, u, v, nr, nc)
    if volume is None:
        from ..io.scanners._common import default_system
        volume = default_system(geometry).volume
        if two_d:
            volume = volume.with_changes(num_z=1, offset_z=0.0,
                                         voxel_height=geometry.detector.pixel_height)
    return CTSystem(geometry=geometry, volume=volume, fov_radius=1.000001 * volume.max_radius())


# --------------------------------------------------------------------------- out
def _ns(**kw):
    return SimpleNamespace(**kw)


def to_cil(system: CTSystem) -> SimpleNamespace:
    """CIL's description of a leap :class:`~leap.system.CTSystem`.

    Returns a namespace with

    * ``config`` (``system``, ``angles``, ``panel``) and ``image`` shaped like CIL's
      ``AcquisitionGeometry.config`` and ``ImageGeometry`` (what :func:`from_cil` reads);
    * ``create`` (the name of CIL's ``AcquisitionGeometry`` factory: 'create_Parallel2D',
      'create_Cone2D', 'create_Parallel3D', 'create_Cone3D' or 'create_Cone3D_Flex') and
      the keyword arguments ``system_args``, ``panel_args``, ``angle_args`` (None for
      Flex) and ``image_args``, so that in CIL::

          ag = getattr(AcquisitionGeometry, c.create)(**c.system_args)
          ag.set_panel(**c.panel_args)
          if c.angle_args: ag.set_angles(**c.angle_args)
          ig = ImageGeometry(**c.image_args)

    Parallel, fan and circular flat cone beams (tau, detector offsets, tilt) become CIL's
    circular systems, posed so CIL's alignment leaves them unchanged (the beam along +y
    at angle 0: leap's view ψ is CIL's θ = ψ₀ − ψ radians); helical cone and modular
    beams become ``Cone3D_Flex``. Curved detectors and cone-parallel beams raise
    ValueError.
    """
    if not isinstance(system, CTSystem):
        raise TypeError(f"to_cil takes a leap CTSystem, got {type(system).__name__}")
    g, vol = system.geometry, system.volume
    d = g.detector
    if d.curved:
        raise ValueError(f"CIL has no curved-detector form for this {type(g).__name__}")
    if not isinstance(g, (ParallelBeam, FanBeam, ConeBeam, ModularBeam)):
        raise ValueError(f"CIL has no form for a {type(g).__name__}")
    two_d = isinstance(g, FanBeam) or (isinstance(g, ParallelBeam) and d.num_rows == 1
                                       and vol.num_z == 1)
    if isinstance(g, FanBeam) and d.num_rows != 1:
        raise ValueError(f"CIL's fan beam (Cone2D) has one detector row; this FanBeam has "
                         f"{d.num_rows}")
    image_args = dict(voxel_num_x=vol.num_x, voxel_num_y=vol.num_y,
                      voxel_num_z=0 if two_d else vol.num_z, voxel_size_x=vol.voxel_width,
                      voxel_size_y=vol.voxel_width, voxel_size_z=vol.voxel_height,
                      center_x=vol.offset_x, center_y=vol.offset_y,
                      center_z=0.0 if two_d else vol.offset_z)
    panel_args = dict(num_pixels=[d.num_cols, d.num_rows], pixel_size=[d.pixel_width,
                                                                       d.pixel_height],
                      origin="bottom-left")
    flex = isinstance(g, ModularBeam) or (isinstance(g, ConeBeam)
                                          and (g.is_helical or g.source_shifts is not None))
    if flex:
        m = g.to_modular()
        system_args = dict(source_position_set=np.array(m.source_positions),
                           detector_position_set=np.array(m.module_centers),
                           detector_direction_x_set=np.array(m.col_vectors),
                           detector_direction_y_set=np.array(m.row_vectors),
                           volume_centre_position=[vol.offset_x, vol.offset_y, vol.offset_z])
        image_args.update(center_x=0.0, center_y=0.0, center_z=0.0)
        sys_ns = _ns(source=[_ns(position=s) for s in system_args["source_position_set"]],
                     detector=[_ns(position=c, direction_x=x, direction_y=y) for c, x, y in
                               zip(system_args["detector_position_set"],
                                   system_args["detector_direction_x_set"],
                                   system_args["detector_direction_y_set"])],
                     volume_centre=_ns(position=np.array(system_args["volume_centre_position"])))
        return _ns(create="create_Cone3D_Flex", system_args=system_args, panel_args=panel_args,
                   angle_args=None, image_args=image_args,
                   config=_ns(system=sys_ns, panel=_ns(**panel_args), angles=None),
                   image=_ns(**image_args))

    # the view at ψ0, where the beam (to the detector centre) points along +y
    if isinstance(g, ParallelBeam):
        one = g.with_changes(angles=np.zeros(1))
        from ._vectors import parallel_vectors
        first, ctr, u, v = (a[0] for a in parallel_vectors(one))
        first = -first                          # leap's rays: +y at ψ = 0
        psi0 = 0.0
    else:
        cone = g if isinstance(g, ConeBeam) else ConeBeam(detector=d, angles=g.angles,
                                                          sod=g.sod, sdd=g.sdd, tau=g.tau)
        m = cone.with_changes(angles=np.zeros(1)).to_modular()
        first, ctr = m.source_positions[0], m.module_centers[0]
        u, v = m.col_vectors[0], m.row_vectors[0]
        b = ctr - first
        psi0 = 0.5 * math.pi - math.atan2(b[1], b[0])
        r0 = _rz(psi0)
        first, ctr, u, v = r0 @ first, r0 @ ctr, r0 @ u, r0 @ v
    theta = psi0 - np.asarray(g.angles, dtype=np.float64)
    angle_args = dict(angles=theta, initial_angle=0.0, angle_unit="radian")
    u = u / np.linalg.norm(u)
    v = v / np.linalg.norm(v)
    if two_d:
        key = "ray_direction" if isinstance(g, ParallelBeam) else "source_position"
        system_args = {key: first[:2], "detector_position": ctr[:2],
                       "detector_direction_x": u[:2], "rotation_axis_position": [0.0, 0.0]}
        create = "create_Parallel2D" if isinstance(g, ParallelBeam) else "create_Cone2D"
        panel_args["num_pixels"] = [d.num_cols, 1]
        det_ns = _ns(position=ctr[:2], direction_x=u[:2])
        axis_ns = _ns(position=np.zeros(2))
    else:
        key = "ray_direction" if isinstance(g, ParallelBeam) else "source_position"
        system_args = {key: first, "detector_position": ctr, "detector_direction_x": u,
                       "detector_direction_y": v, "rotation_axis_position": [0.0, 0.0, 0.0],
                       "rotation_axis_direction": [0.0, 0.0, 1.0]}
        create = "create_Parallel3D" if isinstance(g, ParallelBeam) else "create_Cone3D"
        det_ns = _ns(position=ctr, direction_x=u, direction_y=v)
        axis_ns = _ns(position=np.zeros(3), direction=np.array([0.0, 0.0, 1.0]))
    sys_ns = _ns(detector=det_ns, rotation_axis=axis_ns)
    if isinstance(g, ParallelBeam):
        sys_ns.ray = _ns(direction=np.array(system_args["ray_direction"]))
    else:
        sys_ns.source = _ns(position=np.array(system_args["source_position"]))
    return _ns(create=create, system_args=system_args, panel_args=panel_args,
               angle_args=angle_args, image_args=image_args,
               config=_ns(system=sys_ns, panel=_ns(**panel_args), angles=_ns(
                   angle_data=theta, initial_angle=0.0, angle_unit="radian")),
               image=_ns(**image_args))
