"""LEAP's volume conventions: nominal voxels, the default volume, and how LEAP places
parallel- and fan-beam slices.

LEAP describes a volume by ``numX, numY, numZ, voxelWidth, voxelHeight`` and offsets
``offsetX, offsetY, offsetZ`` (mm). For cone, cone-parallel and modular beams the
offsets are those of the grid centre, as in :class:`~leap.geometry.Volume`. Parallel
and fan beams tie slices to detector rows instead: the first slice is at
``z0 = offsetZ − centerRow·pixelHeight``. :func:`volume_from_leap` turns LEAP's
numbers into a :class:`Volume`; :func:`default_volume` gives LEAP's
``set_default_volume`` in LEAP's numbers.
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import MAX_COUNT
from .cone import ConeBeam
from .coneparallel import ConeParallelBeam
from .fan import FanBeam
from .modular import ModularBeam
from .parallel import ParallelBeam
from .volume import Volume

#: Geometries whose slices LEAP ties to detector rows.
ROW_ALIGNED = (ParallelBeam, FanBeam)


def angle_array(num_angles: int, angular_range: float) -> np.ndarray:
    """LEAP's ``setAngleArray``: ``arange(N)·angularRange/N`` degrees, float32 (N,)."""
    return (np.arange(num_angles, dtype=np.float32)
            * np.float32(angular_range / num_angles)).astype(np.float32)


def magnification(geometry) -> float:
    """sod/sdd: LEAP's magnification from the axis to the detector (1 for parallel beams,
    the views' mean for modular beams)."""
    if isinstance(geometry, ParallelBeam):
        return 1.0
    if isinstance(geometry, ModularBeam):
        sod, sdd = geometry.mean_distances()
        return sod / sdd
    return geometry.sod / geometry.sdd


def nominal_voxel_size(geometry) -> tuple[float, float]:
    """LEAP's default (voxelWidth, voxelHeight), mm: the pixel size at the axis.

    Parallel beams keep the pixel size; fan beams magnify the width only, cone-parallel
    beams the height only (their columns are already lateral positions at the axis);
    cone and modular beams both.
    """
    d, m = geometry.detector, magnification(geometry)
    pw, ph = d.pixel_width, d.pixel_height
    if isinstance(geometry, ParallelBeam):
        return pw, ph
    if isinstance(geometry, ConeParallelBeam):
        return pw, ph * m
    if isinstance(geometry, FanBeam):
        return pw * m, ph
    return pw * m, ph * m


def volume_from_leap(geometry, numX, numY, numZ, voxelWidth, voxelHeight, offsetX=0.0,
                     offsetY=0.0, offsetZ=0.0) -> Volume:
    """The :class:`Volume` of LEAP's volume parameters for ``geometry`` (see the module
    docstring for the parallel/fan z convention; ``geometry=None``: grid-centre
    offsets)."""
    offset_z = offsetZ
    if isinstance(geometry, ROW_ALIGNED):
        d = geometry.detector
        z0 = offsetZ - d.center_row * d.pixel_height
        offset_z = z0 + 0.5 * (numZ - 1) * voxelHeight
    return Volume(num_x=numX, num_y=numY, num_z=numZ, voxel_width=voxelWidth,
                  voxel_height=voxelHeight, offset_x=offsetX, offset_y=offsetY,
                  offset_z=offset_z)


def helical_num_z(geometry, scale: float, angular_range: float) -> int:
    """LEAP's number of slices for a helical scan's default volume: those under the
    detector at the axis, H/vh rounded, and beyond one turn (``angular_range`` > 360°,
    degrees) enough to cover H plus the source travel past the first turn, rounded up.

    Evaluated as LEAP evaluates it, in single precision: LEAP keeps sod, sdd, the pixel
    height, the pitch and the angular range as C floats and forms the detector height
    at the axis H and the voxel height vh in float arithmetic. For common scans the
    exact (H + travel)/vh is an integer (5.5·numRows at normalized pitch 0.5 over ten
    turns: 176 for 32 rows) that the float inputs put just above, so LEAP's ceil gives
    one slice more (177). The exact value would be the better volume, but a volume's
    shape is API: an array saved by a LEAP script must load into the same script run
    with leap, so leap reproduces LEAP's count.
    """
    f32 = np.float32
    d = geometry.detector
    m = f32(f32(geometry.sod) / f32(geometry.sdd))
    vh = f32(m * f32(d.pixel_height))                    # LEAP's default_voxelHeight()
    if scale != 1.0:
        vh = f32(vh * f32(scale))
    H = f32(f32(m * f32(d.num_rows)) * f32(d.pixel_height))
    min_slices = int(float(H / vh) + 0.5)
    turns = abs(float(f32(angular_range)))
    if turns <= 360.0:
        return min_slices
    with np.errstate(over="ignore"):            # a pitch beyond float32: inf, refused below
        pitch = abs(float(f32(geometry.helical_pitch)))
    slices = (float(H) + pitch * (turns * math.pi / 180.0 - 2.0 * math.pi)) / float(vh)
    if not slices <= MAX_COUNT:
        raise ValueError(f"the helical scan's default volume would need {slices:.3g} slices "
                         f"(at most {MAX_COUNT}): check helicalPitch "
                         f"({geometry.helical_pitch:g} mm per radian) and the angular range "
                         f"({angular_range:g} degrees)")
    return max(min_slices, int(math.ceil(slices)))


def default_volume(geometry, scale: float = 1.0, *, angular_range: float = 360.0,
                   offset_scan: bool = False, symmetric: bool = False) -> dict:
    """LEAP's ``set_default_volume``: a volume that fills the field of view with nominal
    voxels times ``scale``, as LEAP's parameters ``numX … offsetZ``.

    numX = numY = ceil(numCols/scale), voxelWidth = nominal·scale. Cone, cone-parallel
    (more than one row) and modular beams scale the z sampling too; parallel and fan
    beams keep one slice per detector row. Helical scans cover the source travel over
    ``angular_range`` (LEAP's, degrees) plus the detector height at the axis. An
    ``offset_scan`` widens x and y to the farther detector side; a ``symmetric`` object
    gets numX = 1 and an even numY.
    """
    d = geometry.detector
    if not scale > 0 or not math.isfinite(scale):
        raise ValueError(f"scale must be a positive number, got {scale}")
    if max(d.num_cols, d.num_rows) / scale > MAX_COUNT:
        raise ValueError(f"scale {scale:g} is too small: the volume would need more than "
                         f"{MAX_COUNT} voxels along an axis")
    vw0, vh0 = nominal_voxel_size(geometry)
    numX = int(math.ceil(d.num_cols / scale))
    vw = vw0 * scale
    offsetZ = 0.0
    magnified = (isinstance(geometry, ModularBeam)
                 or (isinstance(geometry, (ConeBeam, ConeParallelBeam)) and d.num_rows > 1))
    if magnified:
        vh = vh0 * scale
        numZ = int(math.ceil(d.num_rows / scale))
    else:
        vh = vh0
        numZ = d.num_rows
    if isinstance(geometry, (ConeBeam, ConeParallelBeam)):
        if geometry.is_helical:
            numZ = helical_num_z(geometry, scale if magnified else 1.0, angular_range)
        if geometry.is_helical or scale != 1.0:
            offsetZ = ((0.5 * (d.num_rows - 1) - d.center_row) * geometry.sod / geometry.sdd
                       * d.pixel_height)
        else:
            offsetZ = (0.5 * (numZ - 1) - d.center_row) * vh
    if offset_scan:
        if isinstance(geometry, ModularBeam):
            r = numX * vw / 2            # LEAP: the farther detector edge sets the FOV
        else:
            r = geometry.fov_radius(offset_scan=True)
            if not r > 0:
                raise ValueError("an offset scan needs a detector that reaches past the rotation "
                                 "axis, but this geometry's field of view has radius 0 mm; check "
                                 "centerCol and tau, or call set_offsetScan(False)")
        numX = 2 * int(math.ceil(r / vw))
    numZ = max(numZ, 1)
    numY = numX
    offsetX = offsetY = 0.0
    if symmetric:                        # LEAP: symmetric objects get numX = 1, numY even
        numX, numY = 1, numY + numY % 2
    return dict(numX=numX, numY=numY, numZ=numZ, voxelWidth=vw, voxelHeight=vh,
                offsetX=offsetX, offsetY=offsetY, offsetZ=offsetZ)
