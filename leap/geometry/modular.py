"""Modular-beam geometry: the canonical per-view vector form.

Every divergent-beam geometry with flat detectors can be written this way (LEAP's
``set_modularbeam``): per view a source position, the centre of a flat detector
module and its unit row and column vectors.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import readonly_array
from .axial import FLAT, AxialViews, VerticalModules
from .base import ScanGeometry
from .detector import Detector

#: Largest |row·col| accepted for the module axes (LEAP's tolerance).
ORTHOGONALITY_TOLERANCE = 0.01

#: Largest deviation of a unit row vector from +z, and of a column vector's z component
#: from 0, for a module to count as vertical (:meth:`ModularBeam.vertical_modules`).
VERTICAL_TOLERANCE = 1e-9

#: Smallest z component of every row vector of an axially aligned scan (rows within 5°
#: of +z, LEAP's rule).
AXIAL_ROW_Z = 0.9961


def mean_distances(source_positions, module_centers, row_vectors, col_vectors):
    """LEAP's sod and sdd of a modular beam, mm: the mean over the views of the source's
    distance from the origin and from its module, along the module normal col × row.

    All arguments (num_angles, 3); the row and column vectors are normalised here.
    """
    u = np.asarray(col_vectors, dtype=np.float64)
    v = np.asarray(row_vectors, dtype=np.float64)
    s = np.asarray(source_positions, dtype=np.float64)
    normal = np.cross(u / np.linalg.norm(u, axis=1, keepdims=True),
                      v / np.linalg.norm(v, axis=1, keepdims=True))
    sod = np.abs(np.sum(s * normal, axis=1))
    sdd = np.abs(np.sum((s - np.asarray(module_centers, dtype=np.float64)) * normal, axis=1))
    return float(np.mean(sod)), float(np.mean(sdd))


@dataclass(frozen=True, eq=False)
class AxialTerms:
    """A modular beam described view by view as a circular cone beam.

    For an axially aligned scan every view is a flat cone-beam view; these are its
    parameters, in the conventions of :class:`leap.geometry.ConeBeam`, so the weights
    of cone-beam FBP (cosine, Parker, offset scan) and its field of view apply view by
    view. For ``cone.to_modular()`` they reproduce the cone's own values.

    Attributes
    ----------
    angles : (num_angles,) view angles ψ, radians, unwrapped (LEAP: the direction of
        source − module centre).
    sod : (num_angles,) distance of the source from the plane through the z axis
        parallel to the module, mm.
    sdd : (num_angles,) distance of the source from the module plane, mm.
    tau : (num_angles,) lateral offset of the source, mm: the source is at
        ``sod·θ − tau·θ⊥`` in the module's frame (θ⊥ = (cos ψ, sin ψ, 0)).
    u : (num_angles, num_cols) normalised column coordinates s/sdd of the pixel centres,
        measured from the foot of the source's perpendicular, increasing along θ⊥.
    v : (num_angles, num_rows) normalised row coordinates t/sdd, same origin.
    orientation : (num_angles,) +1 where the column index increases along θ⊥, −1 where
        the module is mirrored (column index increasing along −θ⊥).
    """

    angles: np.ndarray
    sod: np.ndarray
    sdd: np.ndarray
    tau: np.ndarray
    u: np.ndarray
    v: np.ndarray
    orientation: np.ndarray


@dataclass(frozen=True, kw_only=True, eq=False)
class ModularBeam(ScanGeometry):
    """Per-view source and flat detector module, in mm.

    Parameters
    ----------
    detector : Detector
        Pixel counts and sizes; must be flat and centred (the module centre is the
        middle of the pixel grid).
    source_positions, module_centers : (num_angles, 3) arrays
        Source and module-centre positions (x, y, z), mm.
    row_vectors, col_vectors : (num_angles, 3) arrays
        Directions of increasing row and column index. They are normalised here and
        must be orthogonal to within 0.01.

    Pixel ``[j, i]`` of view ``a`` is centred at
    ``module_centers[a] + (i - (num_cols-1)/2)·pixel_width·col + (j - (num_rows-1)/2)·pixel_height·row``.
    """

    detector: Detector
    source_positions: np.ndarray
    module_centers: np.ndarray
    row_vectors: np.ndarray
    col_vectors: np.ndarray

    _view_fields = ("source_positions", "module_centers", "row_vectors", "col_vectors")

    def __post_init__(self):
        if not isinstance(self.detector, Detector):
            raise TypeError(f"detector must be a Detector, got {type(self.detector).__name__}")
        if self.detector.curved:
            raise ValueError("modular-beam modules are flat: the detector cannot be curved")
        if not self.detector.is_centered:
            raise ValueError("modular-beam detectors are centred on module_centers: "
                             "center_row/center_col must be (num-1)/2")
        arrays = {}
        for name in self._view_fields:
            arrays[name] = readonly_array(name, getattr(self, name), (None, 3))
        n = arrays["source_positions"].shape[0]
        if n == 0:
            raise ValueError("modular beam needs at least one view")
        for name, a in arrays.items():
            if a.shape[0] != n:
                raise ValueError(f"{name} has {a.shape[0]} views but source_positions has {n}")
        for name in ("row_vectors", "col_vectors"):
            norms = np.linalg.norm(arrays[name], axis=1)
            if np.any(norms < 1e-12):
                raise ValueError(f"{name} must be non-zero vectors (view {int(np.argmin(norms))} is zero)")
            arrays[name] = readonly_array(name, arrays[name] / norms[:, None], (n, 3))
        dots = np.abs(np.sum(arrays["row_vectors"] * arrays["col_vectors"], axis=1))
        if np.any(dots > ORTHOGONALITY_TOLERANCE):
            a = int(np.argmax(dots))
            raise ValueError(f"row and column vectors must be orthogonal to within "
                             f"{ORTHOGONALITY_TOLERANCE}; view {a} has |row·col| = {dots[a]:.3g}")
        normal = np.cross(arrays["col_vectors"], arrays["row_vectors"])
        dist = np.sum((arrays["module_centers"] - arrays["source_positions"]) * normal, axis=1)
        if np.any(np.abs(dist) < 1e-9):
            a = int(np.argmin(np.abs(dist)))
            raise ValueError(f"view {a}: the source lies in the plane of its detector module")
        for name, a in arrays.items():
            object.__setattr__(self, name, a)

    def view_angles(self) -> np.ndarray:
        """View angles ψ (num_angles,), radians, unwrapped: the direction of source −
        module centre, as LEAP assigns modular beams their angles (ψ = 0: source at −y)."""
        d = self.source_positions - self.module_centers
        return np.unwrap(np.arctan2(d[:, 1], d[:, 0])) + 0.5 * np.pi

    @property
    def axially_aligned(self) -> bool:
        """Whether this is LEAP's "axially aligned" modular beam, with every row vector
        within 5° of +z and the sources spread over at most half the detector height in
        z. Such scans have a circular field of view and cone-beam FBP weights
        (:meth:`axial_terms`)."""
        d = self.detector
        zs = self.source_positions[:, 2]
        return bool(np.all(self.row_vectors[:, 2] >= AXIAL_ROW_Z)
                    and zs.max() - zs.min() <= 0.5 * d.num_rows * d.pixel_height)

    def vertical_modules(self) -> VerticalModules | None:
        """Every view as a flat cone-beam view with its own distance and detector
        centre, when every module is vertical (rows along +z, columns horizontal, the
        column axis turned so that (−col_y, col_x) points from the source to the
        module, as for cone beams); None otherwise.

        The CPU kernels then project with the axial (cone-beam) kernels, which compute
        the same modular footprint model column by column (see :class:`VerticalModules`).
        """
        src, ctr = self.source_positions, self.module_centers
        cols, rows = self.col_vectors, self.row_vectors
        if (np.any(np.abs(rows - (0.0, 0.0, 1.0)) > VERTICAL_TOLERANCE)
                or np.any(np.abs(cols[:, 2]) > VERTICAL_TOLERANCE)):
            return None
        col_dir = cols[:, :2] / np.linalg.norm(cols[:, :2], axis=1)[:, None]
        ray = np.stack([-col_dir[:, 1], col_dir[:, 0]], axis=1)
        sdd = np.sum((ctr[:, :2] - src[:, :2]) * ray, axis=1)
        if not np.all(sdd > 0.0):
            return None                                 # mirrored modules
        d = self.detector
        rel = src - ctr
        center_col = 0.5 * (d.num_cols - 1) + np.sum(rel[:, :2] * col_dir, axis=1) / d.pixel_width
        center_row = 0.5 * (d.num_rows - 1) + rel[:, 2] / d.pixel_height
        views = AxialViews(np.ascontiguousarray(col_dir), np.ascontiguousarray(src[:, :2]),
                           np.ascontiguousarray(src[:, 2]), float(np.mean(sdd)), FLAT, True,
                           float("inf"))
        return VerticalModules(views, np.ascontiguousarray(sdd),
                               np.ascontiguousarray(center_col),
                               np.ascontiguousarray(center_row))

    def axial_terms(self) -> AxialTerms:
        """Every view as a flat cone-beam view (see :class:`AxialTerms`)."""
        d = self.detector
        src, ctr = self.source_positions, self.module_centers
        cols, rows = self.col_vectors, self.row_vectors
        normal = np.cross(cols, rows)
        normal /= np.linalg.norm(normal, axis=1)[:, None]
        sdd_signed = np.sum((ctr - src) * normal, axis=1)
        foot = src + sdd_signed[:, None] * normal
        u0 = np.sum((ctr - foot) * cols, axis=1)
        v0 = np.sum((ctr - foot) * rows, axis=1)
        sdd = np.abs(sdd_signed)
        angles = self.view_angles()
        # Orient the column coordinate along θ⊥, the way the source moves as ψ grows, so
        # that fan angles have the cone's sign convention even for mirrored modules.
        along = cols[:, 0] * np.cos(angles) + cols[:, 1] * np.sin(angles)
        orientation = np.where(along < 0.0, -1.0, 1.0)
        i = (np.arange(d.num_cols) - 0.5 * (d.num_cols - 1)) * d.pixel_width
        j = (np.arange(d.num_rows) - 0.5 * (d.num_rows - 1)) * d.pixel_height
        u = orientation[:, None] * (u0[:, None] + i[None, :]) / sdd[:, None]
        v = (v0[:, None] + j[None, :]) / sdd[:, None]
        return AxialTerms(angles=angles, sod=np.abs(np.sum(src * normal, axis=1)), sdd=sdd,
                          tau=-orientation * np.sum(src * cols, axis=1), u=u, v=v,
                          orientation=orientation)

    def fov_radius(self, offset_scan: bool = False) -> float:
        """Radius (mm) of the circle about the z axis seen in every view.

        Axially aligned scans (:attr:`axially_aligned`): the cone-beam rule
        (:meth:`leap.geometry.ConeBeam.fov_radius`) per view,
        ``sod·sin(|α − atan(tau/sod)|)`` for the fan angles α of the outermost column
        centres (the nearer end, or the farther one for an offset scan), and the
        smallest value over the views. Other modular beams have no circular field of
        view: inf. The modular projectors mask nothing either way; the radius serves
        FBP's offset-scan layout, ``windowFOV`` and LEAP's ``get_diameterFOV``.
        """
        if not self.axially_aligned:
            return float("inf")
        t = self.axial_terms()
        shift = np.arctan2(t.tau, t.sod)
        ends = np.abs(np.arctan(t.u[:, [0, -1]]) - shift[:, None])
        half = ends.max(axis=1) if offset_scan else ends.min(axis=1)
        return float(np.min(t.sod * np.sin(np.minimum(half, 0.5 * math.pi))))

    def cropped(self, row_start: int, row_stop: int, col_start: int, col_stop: int):
        """The geometry of detector rows ``row_start:row_stop`` and columns
        ``col_start:col_stop``: smaller modules centred on the kept pixels."""
        d = self.detector
        du = (0.5 * (col_start + col_stop - 1) - 0.5 * (d.num_cols - 1)) * d.pixel_width
        dv = (0.5 * (row_start + row_stop - 1) - 0.5 * (d.num_rows - 1)) * d.pixel_height
        det = d.with_changes(num_rows=row_stop - row_start, num_cols=col_stop - col_start,
                             center_row=None, center_col=None)
        return self.with_changes(detector=det, module_centers=self.module_centers
                                 + du * self.col_vectors + dv * self.row_vectors)

    def with_num_angles(self, num_angles: int):
        """Modular beams have no angles to respace: raises ValueError."""
        raise ValueError("a modular-beam geometry has per-view vectors; build it again with "
                         "the views you want (LEAP: set_modularbeam)")

    def resized(self, num_rows: int | None = None, num_cols: int | None = None) -> "ModularBeam":
        """Modules with other pixel counts (None: unchanged), still centred on
        module_centers."""
        d = self.detector
        return self.with_changes(detector=d.with_changes(
            num_rows=d.num_rows if num_rows is None else num_rows,
            num_cols=d.num_cols if num_cols is None else num_cols,
            center_row=None, center_col=None))

    # ------------------------------------------------------------ rigid changes
    def shifted(self, row_mm: float, col_mm: float) -> "ModularBeam":
        """Every module moved ``row_mm`` along its rows and ``col_mm`` along its columns."""
        return self.with_changes(module_centers=self.module_centers + col_mm * self.col_vectors
                                 + row_mm * self.row_vectors)

    def spun(self, angle: float) -> "ModularBeam":
        """Every module turned by ``angle`` radians about its normal (col × row), the
        column vector towards the row vector (Rodrigues' formula)."""
        n = np.cross(self.col_vectors, self.row_vectors)
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        c, s = math.cos(angle), math.sin(angle)

        def turn(v):
            return v * c + np.cross(n, v) * s + n * np.sum(n * v, axis=1, keepdims=True) * (1 - c)

        return self.with_changes(col_vectors=turn(self.col_vectors), row_vectors=turn(self.row_vectors))

    def reoriented(self, A: np.ndarray) -> "ModularBeam":
        """Every module's frame (col, normal, row), as the columns of a 3×3 matrix,
        multiplied on the right by ``A.T`` (LEAP's ``rotate_detector`` with a matrix);
        ``A`` is first divided by its determinant."""
        A = np.asarray(A, dtype=np.float64)
        if A.shape != (3, 3) or not np.all(np.isfinite(A)):
            raise ValueError(f"A must be a finite 3x3 matrix, got shape {A.shape}")
        det = np.linalg.det(A)
        if det == 0.0:
            raise ValueError("the rotation matrix must be nonsingular")
        frames = np.stack([self.col_vectors, np.cross(self.col_vectors, self.row_vectors),
                           self.row_vectors], axis=2) @ (A / det).T
        return self.with_changes(col_vectors=frames[:, :, 0], row_vectors=frames[:, :, 2])

    def rotated(self, R: np.ndarray) -> "ModularBeam":
        """The whole system (sources, module centres, row and column vectors) rotated by
        the 3×3 matrix ``R`` about the origin."""
        R = np.asarray(R, dtype=np.float64)
        if R.shape != (3, 3) or not np.all(np.isfinite(R)):
            raise ValueError(f"R must be a finite 3x3 rotation matrix, got shape {R.shape}")
        return self.with_changes(**{name: getattr(self, name) @ R.T for name in self._view_fields})

    def mean_distances(self) -> tuple[float, float]:
        """Mean source-to-axis and source-to-module distances over the views, mm
        (:func:`mean_distances`)."""
        return mean_distances(self.source_positions, self.module_centers, self.row_vectors,
                              self.col_vectors)

    def to_modular(self) -> "ModularBeam":
        return self
