"""Ready-made phantoms (FORBILD head, 3-D Shepp–Logan) and rotation matrices."""
from __future__ import annotations

import math
import numbers

import numpy as np

from .objects import (CONE_Y, CYLINDER_X, CYLINDER_Z, ELLIPSOID, PhantomObject,
                      _positive_scalar)
from .phantom import Phantom


def rotation_matrix(axis: str, degrees: float) -> np.ndarray:
    """Matrix of a right-handed rotation by ``degrees`` about a coordinate axis.

    Parameters
    ----------
    axis : {'x', 'y', 'z'}
        Rotation axis.
    degrees : float
        Rotation angle in degrees (counter-clockwise looking down the axis).

    Returns
    -------
    numpy.ndarray, shape (3, 3), float64
        E.g. for ``'z'``: ``[[c, -s, 0], [s, c, 0], [0, 0, 1]]``.
    """
    th = math.radians(float(degrees))
    c, s = math.cos(th), math.sin(th)
    if axis == "x":
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == "y":
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    if axis == "z":
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    raise ValueError(f"axis: expected 'x', 'y' or 'z', got {axis!r}")


# FORBILD head as defined by LEAP's ``set_FORBILD`` (lengths in cm, values as
# densities relative to water; converted below to mm and 1/mm).
# columns: kind, centre (cm), radii (cm), density, rotation (axis, degrees) or None, clip (cm) or None
_COS15 = math.cos(math.radians(15.0))
_FORBILD_CM = (
    (ELLIPSOID, (0.0, 0.0, 0.0), (9.6, 12.0, 12.5), 1.800, None, None),  # skull
    (ELLIPSOID, (0.0, 0.0, 0.0), (9.0, 11.4, 11.9), 1.050, None, None),  # brain
    (ELLIPSOID, (-4.7, 4.3, 0.872), (2.0, 2.0, 2.0), 1.060, None, None),  # eyes
    (ELLIPSOID, (4.7, 4.3, 0.872), (2.0, 2.0, 2.0), 1.060, None, None),
    (ELLIPSOID, (-1.08, -9.0, 0.0), (0.4, 0.4, 0.4), 1.0525, None, None),  # low-contrast spheres
    (ELLIPSOID, (1.08, -9.0, 0.0), (0.4, 0.4, 0.4), 1.0475, None, None),
    (ELLIPSOID, (0.0, 8.4, 0.0), (1.8, 3.0, 3.0), 0.0, None, None),  # frontal sinus (air)
    (ELLIPSOID, (-1.9, 5.4, 0.0), (1.206483 * _COS15, 0.420276 * _COS15, 3.0), 1.800, ("z", -120.0), None),
    (ELLIPSOID, (1.9, 5.4, 0.0), (1.2 * _COS15, 0.42 * _COS15, 3.0), 1.800, ("z", 120.0), None),
    (CYLINDER_Z, (-4.3, 6.8, -1.0), (1.8, 0.24, 2.0), 1.800, ("z", -150.0), None),
    (CYLINDER_Z, (4.3, 6.8, -1.0), (1.8, 0.24, 2.0), 1.800, ("z", -30.0), None),
    (ELLIPSOID, (0.0, -3.6, 0.0), (1.8, 3.6, 3.6), 1.045, None, None),  # ventricle
    (ELLIPSOID, (6.393945, -6.393945, 0.0), (1.2, 0.42, 1.2), 1.055, ("z", -58.1), None),  # blood clot
    (CYLINDER_Z, (0.0, 3.6, 0.0), (1.2, 4.0, 0.25 * _COS15), 1.800, ("x", 60.0), None),
    (CYLINDER_X, (0.0, 9.6, 0.0), (0.525561 / 2.0, 2.0, 0.4), 1.800, ("x", -60.0), None),
    (CONE_Y, (0.0, -11.15, -0.2), (0.5, 0.75, 0.2), 1.800, None, None),  # back of the skull
    (CONE_Y, (0.0, -11.15, 0.2), (0.5, 0.75, 0.2), 1.800, None, None),
    (ELLIPSOID, (9.1, 0.0, 0.0), (4.2, 1.8, 1.8), 1.800, None, (9.1, 0.0, 0.0)),  # ear (bone)
)

# Air cells of the ear: spheres of radius 0.15 cm on a staggered lattice.
# y = j * 0.3464 cm, z = k * 0.3464 cm for j, k in -3..3; along x the spheres
# start at 8.8 cm (j + k even) or 8.6 cm (j + k odd) and continue towards -x
# in steps of 0.4 cm; the number of spheres depends on (|j|, |k|):
_EAR_COUNTS = (  # rows |k| = 0..3 (z), columns |j| = 0..3 (y)
    (9, 8, 8, 6),
    (8, 8, 7, 6),
    (8, 7, 7, 5),
    (6, 6, 5, 4),
)
_EAR_STEP_CM = 0.3464


def _ear_cavities_cm():
    pts = []
    for k in (-3, 3, -2, 2, -1, 1, 0):
        for j in (-3, -2, -1, 3, 2, 1, 0):
            x0 = 8.8 if (j + k) % 2 == 0 else 8.6
            for m in range(_EAR_COUNTS[abs(k)][abs(j)]):
                pts.append((round(x0 - 0.4 * m, 6), j * _EAR_STEP_CM, k * _EAR_STEP_CM))
    return pts


_WATER_MU_PER_MM = 0.02


def forbild_head(include_ear: bool = True, include_ear_bone: bool = True) -> Phantom:
    """The 3-D FORBILD head phantom as defined by LEAP's ``set_FORBILD``.

    Coordinates are in mm (the classical definition in cm multiplied by
    10) and values are linear attenuation coefficients in 1/mm: the FORBILD
    densities multiplied by 0.02 (about the attenuation of water at 60 keV),
    e.g. bone 1.8 * 0.02 = 0.036, brain 1.05 * 0.02 = 0.021.  The phantom
    fits in about [-96, 96] x [-120, 120] x [-125, 125] mm.

    Parameters
    ----------
    include_ear : bool, optional
        Add the 317 air cells (radius 1.5 mm, value 0) of the right ear
        (default True).
    include_ear_bone : bool, optional
        Add the clipped bone ellipsoid of the right ear at x = 91 mm, the last of the
        18 objects (default True). LEAP leaves it out for a one-view, one-column set-up
        (a rotationally symmetric object's half-plane).

    Returns
    -------
    Phantom
        18 objects (335 with the ear cells; one fewer without the ear bone), in LEAP's
        order.
    """
    ph = Phantom()
    table = _FORBILD_CM if include_ear_bone else _FORBILD_CM[:-1]
    for kind, c, r, dens, rot, clip in table:
        A = np.eye(3) if rot is None else rotation_matrix(*rot)
        ph.add(
            PhantomObject(
                kind=kind,
                centre=10.0 * np.asarray(c),
                radii=10.0 * np.asarray(r),
                value=dens * _WATER_MU_PER_MM,
                rotation=A,
                clip=np.zeros(3) if clip is None else 10.0 * np.asarray(clip),
            )
        )
    if include_ear:
        for c in _ear_cavities_cm():
            ph.add(PhantomObject(kind=ELLIPSOID, centre=10.0 * np.asarray(c), radii=(1.5, 1.5, 1.5), value=0.0))
    return ph


# Shepp-Logan 3-D ellipsoids (Kak & Slaney extension of the 2-D phantom; the
# widely used table with rotations about z only), in normalised coordinates
# [-1, 1]^3.  Columns: additive amplitude (original), additive amplitude
# (modified, higher contrast), semi-axes (a, b, c), centre (x, y, z),
# rotation about z (degrees, counter-clockwise).
_SHEPP_LOGAN_3D = (
    (2.00, 1.0, (0.6900, 0.920, 0.810), (0.00, 0.0000, 0.00), 0.0),
    (-0.98, -0.8, (0.6624, 0.874, 0.780), (0.00, -0.0184, 0.00), 0.0),
    (-0.02, -0.2, (0.1100, 0.310, 0.220), (0.22, 0.0000, 0.00), -18.0),
    (-0.02, -0.2, (0.1600, 0.410, 0.280), (-0.22, 0.0000, 0.00), 18.0),
    (0.01, 0.1, (0.2100, 0.250, 0.410), (0.00, 0.3500, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.046, 0.050), (0.00, 0.1000, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.046, 0.050), (0.00, -0.1000, 0.00), 0.0),
    (0.01, 0.1, (0.0460, 0.023, 0.050), (-0.08, -0.6050, 0.00), 0.0),
    (0.01, 0.1, (0.0230, 0.023, 0.020), (0.00, -0.6060, 0.00), 0.0),
    (0.01, 0.1, (0.0230, 0.046, 0.020), (0.06, -0.6050, 0.00), 0.0),
)


def shepp_logan_radius(volume) -> float:
    """The ``radius_mm`` at which :func:`shepp_logan_3d` fills 90 % of ``volume``'s
    smaller in-plane half-width, mm (leap's default for ``set_SheppLogan``)."""
    return 0.45 * min(volume.num_x, volume.num_y) * volume.voxel_width


def shepp_logan_3d(radius_mm: float = 100.0, modified: bool = True, value_scale: float = 1.0) -> Phantom:
    """The 3-D Shepp-Logan head phantom (10 ellipsoids, rotations about z).

    The standard definition lives in the normalised cube ``[-1, 1]^3``; here
    it is scaled so that one normalised unit is ``radius_mm`` millimetres.
    The outer ellipsoid (skull) thus has semi-axes
    ``(0.69, 0.92, 0.81) * radius_mm`` and the phantom fits in the cube
    ``[-radius_mm, radius_mm]^3``.

    The classical phantom is *additive* (overlapping ellipsoids sum), whereas
    :class:`Phantom` uses LEAP's override rule.  Each ellipsoid's value is
    therefore its own amplitude plus those of the ellipsoids that contain it
    (1 contains 2, 2 contains 3-10): the modified phantom has skull 1.0,
    brain 0.2, the two dark ellipsoids 0.0 and the small features 0.3 (the
    original: 2.0, 1.02, 1.00, 1.03).  This reproduces the additive phantom
    everywhere except in three small lens-shaped overlaps of the inner
    ellipsoids, where the later ellipsoid's value is used instead of the sum:
    dark ellipsoid 4 with ellipsoid 5 (about 1 % of 5) and with ellipsoid 7
    (about 7 % of 7) -- additive 0.1 (original 1.01), here 0.3 (1.03); and
    ellipsoid 5 with ellipsoid 6 (about half of 6) -- additive 0.4 (1.04),
    here 0.3 (1.03).

    Parameters
    ----------
    radius_mm : float, optional
        Half-width in mm of the normalised cube ``[-1, 1]^3`` (default 100).
    modified : bool, optional
        If True (default) use the higher-contrast "modified" amplitudes
        (Toft); otherwise the original Shepp-Logan amplitudes.
    value_scale : float, optional
        Multiplier applied to all values (default 1.0), e.g. 0.02 to express
        them relative to water in 1/mm.

    Returns
    -------
    Phantom
        10 ellipsoids, ordered from outside in.
    """
    R = _positive_scalar(radius_mm, "radius_mm")
    if isinstance(value_scale, (bool, np.bool_)) or not isinstance(value_scale, numbers.Real) or not math.isfinite(
        float(value_scale)
    ):
        raise ValueError(f"value_scale: expected a finite real number, got {value_scale!r}")
    scale = float(value_scale)
    col = 1 if modified else 0
    amp = [row[col] for row in _SHEPP_LOGAN_3D]
    # override values: cumulative amplitude of the containing ellipsoids
    # (1 contains 2, 2 contains 3..10)
    override = [amp[0], amp[0] + amp[1]] + [amp[0] + amp[1] + a for a in amp[2:]]
    ph = Phantom()
    for row, v in zip(_SHEPP_LOGAN_3D, override):
        _, _, axes, centre, phi = row
        # the ellipsoid is rotated counter-clockwise by phi: u = R_z(phi)^T (x - c)
        A = rotation_matrix("z", phi).T
        ph.add(
            PhantomObject(
                kind=ELLIPSOID,
                centre=R * np.asarray(centre),
                radii=R * np.asarray(axes),
                value=round(v, 12) * scale,
                rotation=A,
            )
        )
    return ph
