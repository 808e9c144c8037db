"""Geometry utilities of the LEAP facade: editing a set geometry, data-range queries,
geometric calibration, volume masks, resampling and small array helpers.

Numerics live in :mod:`leap.calibration`, :mod:`leap.resample` and :mod:`leap.mar`;
this mixin translates LEAP's parameters (degrees, pixel indices) for them.
"""
from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np

from .. import _validate
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _torch():
    import torch
    return torch


class GeometryToolsMixin:
    """Geometry-editing, calibration and masking methods of
    :class:`leap.compat.model.tomographicModels`."""

    # ============================================================ geometry editing
    def set_numAngles(self, numAngles):
        """Change the number of views.

        LEAP discards the angles (they must be set again); leap keeps the geometry usable
        by spreading ``numAngles`` equal steps over the old angular range from the old
        first angle. Call :meth:`set_phis` to choose other angles. Modular beams need
        new per-view vectors: use :meth:`set_modularbeam`.
        """
        g = self._need_geometry()
        n = _as_int("numAngles", numAngles)
        if n <= 0:
            raise ValueError(f"numAngles must be positive, got {n}")
        if n == g["numAngles"]:
            return True
        if g["geometry"] == "modular":
            raise ValueError("a modular-beam geometry has per-view vectors; change the number of "
                             "views with set_modularbeam")
        phis = np.asarray(g["phis"], dtype=np.float64)
        rng = self.get_angularRange() if phis.size > 1 else 360.0
        sign = -1.0 if phis.size > 1 and phis[-1] < phis[0] else 1.0
        new = phis[0] + sign * np.arange(n) * rng / n
        return self._update(numAngles=n, phis=new.astype(np.float32))

    def set_numCols(self, numCols):
        """Change the number of detector columns (centerCol unchanged; modular beams stay
        centred on their module centres)."""
        return self._set_detector_count("numCols", "centerCol", numCols)

    def set_numRows(self, numRows):
        """Change the number of detector rows (centerRow unchanged; modular beams stay
        centred on their module centres)."""
        return self._set_detector_count("numRows", "centerRow", numRows)

    def _set_detector_count(self, key, center_key, n):
        g = self._need_geometry()
        n = _as_int(key, n)
        if n <= 0:
            raise ValueError(f"{key} must be positive, got {n}")
        changes = {key: n}
        if g["geometry"] == "modular":
            changes[center_key] = 0.5 * (n - 1)
        return self._update(**changes)

    def set_pixelHeight(self, H):
        """Detector pixel height, mm (> 0)."""
        return self._update(pixelHeight=self._positive("pixelHeight", H))

    def set_pixelWidth(self, W):
        """Detector pixel width, mm (> 0)."""
        return self._update(pixelWidth=self._positive("pixelWidth", W))

    @staticmethod
    def _positive(name, x):
        x = _as_float(name, x)
        if x <= 0:
            raise ValueError(f"{name} must be positive, got {x}")
        return x

    def shift_detector(self, r, c):
        """Move the detector by ``r`` mm along its rows and ``c`` mm along its columns.

        Modular: module centres move by c·colVector + r·rowVector. Other geometries:
        centerRow −= r/pixelHeight, centerCol −= c/pixelWidth.
        """
        g = self._need_geometry()
        r, c = _as_float("r", r), _as_float("c", c)
        if g["geometry"] == "modular":
            return self._set_modular_frames(self.core_geometry().shifted(r, c))
        return self._update(centerRow=g["centerRow"] - r / g["pixelHeight"],
                            centerCol=g["centerCol"] - c / g["pixelWidth"])

    def rotate_detector(self, alpha):
        """Rotate the detector.

        alpha : float, degrees — rotation about the detector normal (col × row), which
            turns the column vector towards the row vector. Cone beams add it to
            tiltAngle; modular beams rotate every module.
        alpha : (3,) Euler angles 'xyz' in degrees, or (3, 3) rotation matrix —
            modular beams only: each module's frame (col, normal, row) is multiplied by
            alpha.T, as LEAP does.
        """
        g = self._need_geometry()
        kind = g["geometry"]
        if kind not in ("cone", "modular"):
            raise ValueError(f"only cone- and modular-beam detectors can be rotated, not {kind}; "
                             "use convert_to_modularbeam() first")
        if np.ndim(alpha) == 0:
            a = _as_float("alpha", alpha)
            if kind == "cone":
                return self.set_tiltAngle(g["tiltAngle"] + a)
            return self._set_modular_frames(self.core_geometry().spun(math.radians(a)))
        if kind != "modular":
            raise ValueError("arbitrary detector rotations need a modular-beam geometry; "
                             "use convert_to_modularbeam() first")
        A = np.asarray(alpha, dtype=np.float64)
        if A.size == 3:
            from scipy.spatial.transform import Rotation
            A = Rotation.from_euler("xyz", A.ravel(), degrees=True).as_matrix()
        elif A.shape != (3, 3):
            raise ValueError(f"alpha must be a scalar (degrees), 3 Euler angles or a 3x3 matrix, "
                             f"got shape {A.shape}")
        return self._set_modular_frames(self.core_geometry().reoriented(A))

    def _set_modular_frames(self, geo):
        """Store a modular geometry's vectors as LEAP's float32 parameters."""
        return self._update(**{k: getattr(geo, a).astype(np.float32) for k, a in
                                (("sourcePositions", "source_positions"),
                                 ("moduleCenters", "module_centers"),
                                 ("rowVectors", "row_vectors"), ("colVectors", "col_vectors"))})

    def rotate_coordinate_system(self, R):
        """Rotate the whole modular-beam system by the 3×3 matrix ``R`` (sources, module
        centres, row and column vectors), e.g. to reconstruct on a rotated voxel grid."""
        g = self._need_geometry()
        if g["geometry"] != "modular":
            raise ValueError("the coordinate system can only be rotated for modular-beam "
                             "geometries; use convert_to_modularbeam() first")
        return self._set_modular_frames(self.core_geometry().rotated(R))

    def set_geometry(self, which):
        """Change the geometry type by name ('CONE', 'FAN', 'PARALLEL', 'MODULAR'),
        keeping the other parameters. Fan ↔ cone always works; to parallel drops sod,
        sdd, tau; to fan/cone from parallel needs sod and sdd, so set those with
        set_fanbeam/set_conebeam instead. 'MODULAR' only applies to a modular beam (use
        convert_to_modularbeam)."""
        g = self._need_geometry()
        names = {0: "CONE", 1: "PARALLEL", 2: "FAN", 3: "MODULAR", 4: "CONE-PARALLEL"}
        if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
            which = names.get(int(which), which)
        if not isinstance(which, str) or which.upper() not in names.values():
            raise ValueError(f"geometry must be one of {sorted(names.values())}, got {which!r}")
        target = which.upper()
        kind = g["geometry"]
        if target == kind.upper():
            return True
        if target == "CONE-PARALLEL":
            raise NotImplementedError("leap has no cone-parallel geometry")
        if "MODULAR" in (target, kind.upper()):
            raise ValueError("a modular beam needs per-view vectors: use convert_to_modularbeam() "
                             "or set_modularbeam")
        base = {k: g[k] for k in ("numAngles", "numRows", "numCols", "pixelHeight", "pixelWidth",
                                  "centerRow", "centerCol", "phis")}
        if target == "PARALLEL":
            return self._set_geometry(dict(base, geometry="parallel", detectorType="flat"))
        if "sod" not in g:
            raise ValueError(f"a {target.lower()}-beam geometry needs sod and sdd; use "
                             f"set_{target.lower()}beam")
        base.update(sod=g["sod"], sdd=g["sdd"], tau=g.get("tau", 0.0))
        if target == "FAN":
            return self._set_geometry(dict(base, geometry="fan", detectorType="flat"))
        return self._set_geometry(dict(base, geometry="cone", detectorType="flat",
                                       helicalPitch=0.0, tiltAngle=0.0))

    # ============================================================ range queries
    # LEAP's range queries; the bounds live in :mod:`leap.geometry.ranges`.
    def _internal_phis(self):
        """LEAP's internal view angles φ = ψ − π/2, radians (float64)."""
        return np.deg2rad(np.asarray(self.get_angles(), dtype=np.float64)) - 0.5 * np.pi

    def sliceRangeNeededForProjection(self, doClip=True):
        """``[first, last]`` z-slice indices (int32) that the detector's rays cross
        (:func:`leap.geometry.ranges.slice_range`). ``doClip=False`` allows indices
        outside [0, numZ−1] (slices beyond the volume that the rays still reach)."""
        from ..geometry.ranges import slice_range
        return np.array(slice_range(self.core_geometry(), self.core_volume(),
                                    self._fov_radius(), clip=bool(doClip)), dtype=np.int32)

    def viewRangeNeededForBackprojection(self):
        """``[first, last]`` view indices (int32) whose rays reach the volume: the views
        whose source height lets the detector see the volume's slices (helical scans);
        all views otherwise."""
        from ..geometry.ranges import view_range
        return np.array(view_range(self.core_geometry(), self.core_volume(),
                                   self._fov_radius()), dtype=np.int32)

    def _row_range_for_slices(self, first, last):
        """LEAP's rowRangeNeededForBackprojection for slices [first, last]."""
        from ..geometry.ranges import leap_row_range
        return leap_row_range(self.core_geometry(), self.core_volume(), self._fov_radius(),
                              first, last)

    def numRowsRequiredForBackprojectingSlab(self, numSlicesPerChunk):
        """Largest number of detector rows any slab of ``numSlicesPerChunk`` z-slices
        needs for back-projection (slabs taken from slice 0 upwards)."""
        n = _as_int("numSlicesPerChunk", numSlicesPerChunk)
        if n <= 0:
            raise ValueError(f"numSlicesPerChunk must be positive, got {n}")
        nz = self._need_volume()["numZ"]
        most = 0
        for first in range(0, nz, n):
            lo, hi = self._row_range_for_slices(first, min(first + n, nz) - 1)
            most = max(most, hi - lo + 1)
        return most

    def extraColumnsForOffsetScan(self):
        """Columns FBP zero-pads an offset-detector scan with (0 unless set_offsetScan(True)
        and a full, non-helical scan)."""
        if not self._offset_scan:
            return 0
        from ..geometry import ConeBeam, ModularBeam
        from ..weights import offset_scan_layout
        geo = self.core_geometry()
        if ((isinstance(geo, ModularBeam) and not geo.axially_aligned)
                or (isinstance(geo, ConeBeam) and geo.is_helical)):
            return 0
        return int(offset_scan_layout(geo)[2])

    def get_diameterFOV_min(self):
        """Diameter (mm) of the field of view without offset-scan widening or
        set_diameterFOV. Modular beams that are not axially aligned: the volume's extent
        (twice the furthest voxel centre plus half a voxel), or inf without a volume."""
        g = self._need_geometry()
        r = self.core_geometry().fov_radius(offset_scan=False)
        if g["geometry"] == "modular" and not math.isfinite(r):
            if self._vol is None:
                return float("inf")
            from ..geometry.ranges import bounding_radius
            return 2.0 * (bounding_radius(self.core_volume(), math.inf)
                          + 0.5 * self._vol["voxelWidth"])
        return 2.0 * r

    def get_z_source_offset(self):
        """LEAP's z_source_offset, mm: helical source height is h·φ + z_source_offset with
        φ = ψ − π/2 in radians, i.e. −h·(φ_first + φ_last)/2 (0 for circular orbits)."""
        g = self._need_geometry()
        h = g.get("helicalPitch", 0.0)
        if g["geometry"] != "cone" or h == 0.0:
            return 0.0
        phis = self._internal_phis()
        return float(-0.5 * (phis[0] + phis[-1]) * h)

    def angles_are_defined(self):
        """Whether view angles exist (a geometry is set)."""
        return self._geom is not None

    def angles_are_equispaced(self):
        """Whether consecutive angles differ by the first step to within 2e-5 rad."""
        if self._geom is None:
            return True
        phis = self._internal_phis()
        if phis.size < 3:
            return True
        steps = np.diff(phis)
        return bool(np.all(np.abs(steps - steps[0]) <= 2.0e-5))

    # ============================================================ calibration
    def _calibration_params(self):
        g = self._need_geometry()
        if g["geometry"] == "modular":
            raise ValueError("geometric calibration works for parallel-, fan- and cone-beam "
                             "geometries, not modular beams")
        return SimpleNamespace(
            kind=g["geometry"], phis=self._internal_phis(), numAngles=g["numAngles"],
            numRows=g["numRows"], numCols=g["numCols"], pixelHeight=g["pixelHeight"],
            pixelWidth=g["pixelWidth"], centerRow=g["centerRow"], centerCol=g["centerCol"],
            sod=g.get("sod", 0.0), sdd=g.get("sdd", 0.0), tau=g.get("tau", 0.0),
            curved=g.get("detectorType") == "curved", tiltAngle=g.get("tiltAngle", 0.0),
            angularRange=self.get_angularRange())

    def _host_projections(self, g, name="g"):
        """Projections as a NumPy array (torch/CuPy are copied to the host)."""
        from ..arrays import is_cuda_array
        if _is_torch(g):
            g = g.detach().cpu().numpy()
        elif is_cuda_array(g):
            import cupy
            g = cupy.asnumpy(g)
        _validate.check_array(name, g, self.get_projection_dim())
        _validate.check_finite(name, g)
        return g

    def _search_range(self, p, searchBounds, scale=1.0, offset=0.0):
        from ..geometric_calibration import default_center_range
        nc = p.numCols
        if searchBounds is not None:
            b = np.asarray(searchBounds, dtype=np.float64).ravel()
            if b.size != 2 or not np.all(np.isfinite(b)):
                raise ValueError(f"searchBounds must be 2 numbers [low, high], got {searchBounds!r}")
            lo, hi = b / scale + offset
            if 0.0 <= lo <= hi <= nc - 1:
                return int(0.5 + lo), int(0.5 + hi)
            if not np.all(b == -1.0):      # [-1, -1] is LEAP's "unset"
                raise ValueError(f"searchBounds {b.tolist()} fall outside the detector "
                                 f"(column indices 0..{nc - 1}) or are not ordered")
        return default_center_range(nc, self._offset_scan)

    def _center_row(self, p, iRow):
        if iRow is None or iRow < 0 or iRow > p.numRows - 1:
            return max(0, min(p.numRows - 1, int(math.floor(0.5 + p.centerRow))))
        return int(iRow)

    def find_centerCol(self, g, iRow=-1, searchBounds=None):
        """Estimate centerCol from conjugate rays, set it, and return the cost (mean
        squared difference of conjugate rays at the estimate).

        iRow : detector row to use (-1: the row nearest centerRow).
        searchBounds : [low, high] candidate centre columns (default: middle 54%).
        Parallel, fan and cone beams; needs ≥ 180° of untruncated data.
        """
        from .. import geometric_calibration as cal
        p = self._calibration_params()
        g = self._host_projections(g)
        if p.angularRange + 2.0 * abs(math.degrees(cal.angular_step(p.phis))) < 180.0:
            raise ValueError(f"find_centerCol needs at least 180 degrees of data, got "
                             f"{p.angularRange:.4g}")
        self._calibration_warnings("find_centerCol")
        row = self._center_row(p, iRow)
        lo, hi = self._search_range(p, searchBounds)
        if p.kind == "parallel":
            costs = cal.parallel_center_costs(g, p, row, lo, hi)
        else:
            costs = cal.divergent_center_costs(cal.rotated_sinogram(g, p, row), p, lo, hi, False)
        pos, value = cal.find_minimum(costs, lo, hi)
        self.set_centerCol(pos)
        return value

    def find_tau(self, g, iRow=-1, searchBounds=None):
        """Estimate tau (rotation-axis offset, mm) from conjugate rays of fan- or cone-beam
        data, set it, and return the cost. searchBounds: [low, high] in mm."""
        from .. import geometric_calibration as cal
        p = self._calibration_params()
        if p.kind not in ("fan", "cone"):
            raise ValueError(f"find_tau works for fan- and cone-beam data, not {p.kind}")
        g = self._host_projections(g)
        if p.angularRange + 2.0 * abs(math.degrees(cal.angular_step(p.phis))) < 180.0:
            raise ValueError(f"find_tau needs at least 180 degrees of data, got {p.angularRange:.4g}")
        self._calibration_warnings("find_tau")
        row = self._center_row(p, iRow)
        step = p.pixelWidth * p.sod / p.sdd
        lo, hi = self._search_range(p, searchBounds, step, 0.5 * (p.numCols - 1))
        costs = cal.divergent_center_costs(cal.rotated_sinogram(g, p, row), p, lo, hi, True)
        pos, value = cal.find_minimum(costs, lo, hi)
        self.set_tau(step * (pos - 0.5 * (p.numCols - 1)))
        return value

    def _calibration_warnings(self, name):
        g = self._geom
        if self._offset_scan:
            warnings.warn(f"{name} may not work for offset scans", RuntimeWarning, stacklevel=3)
        if g.get("helicalPitch", 0.0) != 0.0:
            warnings.warn(f"{name} will likely not work for helical data", RuntimeWarning, stacklevel=3)

    def estimate_tilt(self, g):
        """Estimate the detector tilt (rotation about the optical axis), degrees, from two
        projections 180° apart (fan/cone data rebinned to parallel rays). Changes no
        parameter: apply it with ``rotate_detector(alpha)`` (after convert_to_modularbeam)
        or set_tiltAngle. Works best once centerCol is right."""
        from .. import geometric_calibration as cal
        p = self._calibration_params()
        a, b = cal.conjugate_projections(self._host_projections(g), p)
        angles, costs = cal.tilt_costs(a, b, p)
        pos, _ = cal.find_minimum(costs, 0, costs.size - 1)
        return float(angles[0] + cal.TILT_STEP * pos)

    def conjugate_difference(self, g, alpha=0.0, centerCol=None):
        """Difference (numRows, numCols) float32 of two projections 180° apart, modelling a
        detector rotated by ``alpha`` degrees and the centre column ``centerCol``
        (default: the current one). Mostly noise when both are right."""
        from .. import geometric_calibration as cal
        p = self._calibration_params()
        cc = p.centerCol if centerCol is None else _as_float("centerCol", centerCol)
        shifted = SimpleNamespace(**dict(vars(p), centerCol=cc))
        a, b = cal.conjugate_projections(self._host_projections(g), shifted)
        d = cal.conjugate_difference(a, b, p, _as_float("alpha", alpha), cc).astype(np.float32)
        return _torch().from_numpy(d) if _is_torch(g) else d

    def consistency_cost(self, g, Delta_centerRow=0.0, Delta_centerCol=0.0, Delta_tau=0.0,
                         Delta_tilt=0.0):
        """Data-consistency cost (Lesaint et al. 2017) of an axial flat-panel cone-beam scan
        for perturbations of centerRow, centerCol (pixels), tau (mm) and tilt (degrees).

        ``Delta_centerRow`` may be a list: [row, col], [row, col, tilt] or
        [row, col, tau, tilt] (for scipy.optimize.minimize). Lower is more consistent.
        """
        from .. import geometric_calibration as cal
        if isinstance(Delta_centerRow, (list, tuple, np.ndarray)):
            x = [float(t) for t in np.asarray(Delta_centerRow).ravel()]
            if len(x) == 2:
                Delta_centerRow, Delta_centerCol = x
            elif len(x) == 3:
                Delta_centerRow, Delta_centerCol, Delta_tilt = x
            elif len(x) == 4:
                Delta_centerRow, Delta_centerCol, Delta_tau, Delta_tilt = x
            else:
                raise ValueError(f"Delta_centerRow as a list needs 2, 3 or 4 values, got {len(x)}")
        p = self._calibration_params()
        if p.kind != "cone" or p.curved or self._geom["helicalPitch"] != 0.0:
            raise ValueError("consistency_cost works for axial flat-panel cone-beam geometries only")
        return cal.consistency_cost(self._host_projections(g), p,
                                    _as_float("Delta_centerRow", Delta_centerRow),
                                    _as_float("Delta_centerCol", Delta_centerCol),
                                    _as_float("Delta_tau", Delta_tau), _as_float("Delta_tilt", Delta_tilt))

    def inconsistencyReconstruction(self, g, f=None, inplace=False):
        """FBP with the ramp filter replaced by a derivative along detector rows.

        For a calibrated scan of 360° or more the result is pure noise; geometry errors
        show up as structure. Scans shorter than a full turn get a plain FBP (as LEAP).
        ``inplace=True`` leaves the filtered data in ``g``. Returns ``f``.
        """
        from ..geometric_calibration import ray_derivative
        from ..weights import angular_range_degrees, angular_step
        geo = self.core_geometry()
        _validate.check_array("g", g, geo.projection_shape)
        angles = geo.view_angles()
        full = angles.size > 1 and angular_range_degrees(angles) >= min(
            359.0, 360.0 - math.degrees(abs(angular_step(geo))))
        if not full:
            return self.FBP(g, f)
        return self._filtered_backprojection(
            g, f, lambda q, fgeo: ray_derivative(q, fgeo.detector.pixel_width), inplace=inplace)

    # ============================================================ masks
    def set_volume_mask(self, vol_mask):
        """Keep a volume mask (numZ, numY, numX) of 0s and 1s: LEAP multiplies volumes by it
        before projecting and after back-projecting. Same array kind as the volumes
        (NumPy, torch tensor, CuPy or another CUDA array); ``None`` clears it.

        The mask is kept as float32, the volumes' type (LEAP's mask is a float32 volume):
        a bool, integer or float64 mask is converted to a float32 copy (the caller's
        array is unchanged), so that ``f · mask`` stays float32 in :meth:`project` and
        the iterative methods. A float32 mask is kept as it is (not copied).

        Raises TypeError for a non-array or non-numeric mask, ValueError for a mask that is
        not 3-D, does not match the volume's shape (when the volume is set) or holds NaN
        or infinite values.
        """
        if vol_mask is None:
            self.volume_mask = None
            return None
        dtype = getattr(vol_mask, "dtype", None)
        if not hasattr(vol_mask, "shape") or dtype is None:
            raise TypeError("vol_mask must be an array of the volume's shape (numZ, numY, numX) "
                            f"(NumPy, torch tensor or CUDA array), got {type(vol_mask).__name__}")
        shape = tuple(vol_mask.shape)
        if len(shape) != 3:
            raise ValueError(f"vol_mask must be a 3-D volume (numZ, numY, numX), "
                             f"got shape {shape}")
        if self._vol is not None and shape != self.get_volume_dim():
            raise ValueError(f"vol_mask must have the volume's shape {self.get_volume_dim()}, got {shape}")
        if _is_torch(vol_mask):
            torch = _torch()
            if vol_mask.dtype.is_complex:
                raise TypeError(f"vol_mask must be numeric (bool, integer or float), "
                                f"got {vol_mask.dtype}")
            mask = vol_mask if vol_mask.dtype == torch.float32 else vol_mask.to(torch.float32)
            finite = bool(torch.isfinite(mask).all())
        else:
            kind = np.dtype(dtype).kind
            if kind not in "biuf":
                raise TypeError(f"vol_mask must be numeric (bool, integer or float), "
                                f"got dtype {dtype}")
            if isinstance(vol_mask, np.ndarray):
                mask = vol_mask if vol_mask.dtype == np.float32 else vol_mask.astype(np.float32)
                finite = bool(np.isfinite(mask).all())
            elif type(vol_mask).__module__.split(".")[0] in ("cupy", "cupyx"):
                mask = vol_mask if vol_mask.dtype == np.float32 else vol_mask.astype(np.float32)
                finite = bool(self._lib(mask).isfinite(mask).all())
            else:       # a Numba device array or other CUDA array: no conversion at hand
                if np.dtype(dtype) != np.float32:
                    raise TypeError(f"vol_mask must be float32 for a "
                                    f"{type(vol_mask).__name__}, got {dtype}; convert it "
                                    "first (or pass a NumPy, CuPy or torch mask)")
                mask, finite = vol_mask, True
        if not finite:
            raise ValueError("vol_mask contains NaN or infinite values; a volume mask holds "
                             "0s and 1s")
        self.volume_mask = mask
        return None

    def clear_volume_mask(self):
        """Forget the volume mask."""
        self.volume_mask = None
        return None

    def volume_mask_is_valid(self, f):
        """Whether a mask is set and matches ``f`` in array type and shape."""
        m = getattr(self, "volume_mask", None)
        return (m is not None and f is not None and type(f) is type(m)
                and tuple(f.shape) == tuple(m.shape))

    def apply_volume_mask(self, f):
        """``f ← f · volume_mask`` in place when the mask is valid for ``f``; else nothing."""
        if self.volume_mask_is_valid(f):
            f *= self.volume_mask
        return None

    def windowFOV(self, f):
        """Zero the voxels outside the circular field of view (x² + y² > rFOV²), in place;
        returns f."""
        if isinstance(f, np.ndarray):
            _validate.check_array("f", f, self.get_volume_dim())
        r = self._fov_radius()
        if not math.isfinite(r):
            return f
        v = self.core_volume()
        outside = (v.x_samples()[None, :] ** 2 + v.y_samples()[:, None] ** 2) > r * r
        if isinstance(f, np.ndarray):
            f[:, outside] = 0.0
        elif _is_torch(f):
            f *= _torch().as_tensor(~outside, dtype=f.dtype, device=f.device)[None]
        else:                                           # CuPy
            f *= self._lib(f).asarray(~outside, dtype=f.dtype)[None]
        return f

    def space_carving(self, projection_mask, vol_mask):
        """Space carving: ``vol_mask ← 1 − step(Pᵀ(1 − projection_mask))``, then windowFOV.

        Voxels seen by any ray with projection_mask 0 (a ray missing the object) become 0,
        the rest 1. projection_mask is restored afterwards. Returns vol_mask.
        """
        projection_mask[...] = 1.0 - projection_mask
        try:
            self.backproject(projection_mask, vol_mask)
        finally:
            projection_mask[...] = 1.0 - projection_mask
        vol_mask[...] = (vol_mask <= 0.0) * 1.0
        return self.windowFOV(vol_mask)

    def sinogram_replacement(self, g, priorSinogram, metalTrace, windowSize=None):
        """Metal artifact reduction: inside ``metalTrace`` (> 0), replace ``g`` in place by
        ``priorSinogram`` fitted (scale and shift) to the surrounding good data.
        windowSize: half-widths (views, rows, columns), default [3, 1, 50]. Returns True."""
        from ..mar import sinogram_replacement
        shape = self.get_projection_dim()
        for name, a in (("g", g), ("priorSinogram", priorSinogram), ("metalTrace", metalTrace)):
            if _is_torch(a):
                if a.is_cuda:
                    raise NotImplementedError("sinogram_replacement runs on CPU data only")
                a = a.numpy()
            _validate.check_array(name, a, shape)
        arr = g.numpy() if _is_torch(g) else g
        prior = priorSinogram.numpy() if _is_torch(priorSinogram) else priorSinogram
        trace = metalTrace.numpy() if _is_torch(metalTrace) else metalTrace
        sinogram_replacement(arr, prior, trace, (3, 1, 50) if windowSize is None else windowSize)
        return True

    # ============================================================ resampling
    @staticmethod
    def _as_numpy3(I, name):
        if _is_torch(I):
            return I.detach().cpu().numpy(), True
        if not isinstance(I, np.ndarray):
            raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(I).__name__}")
        return I, False

    def down_sample(self, factors, I, dims=None):
        """Anti-aliased down-sampling of a 3-D array by ``factors`` (3 values ≥ 1); output
        shape ``dims`` or ``int(N/factor)`` per axis. Returns a new array."""
        from ..resample import down_sample
        arr, t = self._as_numpy3(I, "I")
        out = down_sample(arr, factors, dims)
        return _torch().from_numpy(out).to(I.device) if t else out

    def up_sample(self, factors, I, dims=None):
        """Linear up-sampling of a 3-D array by ``factors`` (3 values ≥ 1); output shape
        ``dims`` or ``int(N·factor)`` per axis. Returns a new array."""
        from ..resample import up_sample
        arr, t = self._as_numpy3(I, "I")
        out = up_sample(arr, factors, dims)
        return _torch().from_numpy(out).to(I.device) if t else out

    def _resample_detector(self, factors, g, dims, up):
        geom = self._need_geometry()
        f = np.asarray(factors, dtype=np.float64).ravel()
        if f.size != 3:
            raise ValueError(f"factors must have 3 values (views, rows, columns), got {factors!r}")
        if f[0] != 1.0:
            raise ValueError("the view (angle) dimension cannot be resampled: factors[0] must be 1")
        if g is not None:
            if isinstance(g, np.ndarray):
                _validate.check_array("g", g, self.get_projection_dim())
            out = self.up_sample(f, g, dims) if up else self.down_sample(f, g)
            nr, nc = out.shape[1], out.shape[2]
        else:
            out = None
            nr = int(geom["numRows"] * f[1]) if up else int(geom["numRows"] / f[1])
            nc = int(geom["numCols"] * f[2]) if up else int(geom["numCols"] / f[2])
        ph = geom["pixelHeight"] / f[1] if up else geom["pixelHeight"] * f[1]
        pw = geom["pixelWidth"] / f[2] if up else geom["pixelWidth"] * f[2]
        changes = dict(numRows=nr, numCols=nc, pixelHeight=ph, pixelWidth=pw)
        if geom["geometry"] == "modular":
            changes.update(centerRow=0.5 * (nr - 1), centerCol=0.5 * (nc - 1))
        else:
            # Keep the optical axis at the same place on the detector (mm from its middle).
            rs = (geom["centerRow"] - 0.5 * (geom["numRows"] - 1)) * geom["pixelHeight"]
            cs = (geom["centerCol"] - 0.5 * (geom["numCols"] - 1)) * geom["pixelWidth"]
            changes.update(centerRow=rs / ph + 0.5 * (nr - 1), centerCol=cs / pw + 0.5 * (nc - 1))
        self._update(**changes)
        return out

    def down_sample_projections(self, factors, g=None):
        """Down-sample projections along rows and columns (factors = [1, rows, cols]) and
        update numRows/numCols, pixel sizes and the detector centre to match. Returns the
        down-sampled data (None without g)."""
        return self._resample_detector(factors, g, None, up=False)

    def up_sample_projections(self, factors, g=None, dims=None):
        """Up-sample projections along rows and columns (linear) and update the geometry.
        Returns the up-sampled data (None without g)."""
        return self._resample_detector(factors, g, dims, up=True)

    def _resample_volume(self, factors, f, dims, up):
        v = self._need_volume()
        fac = np.asarray(factors, dtype=np.float64).ravel()
        if fac.size != 3:
            raise ValueError(f"factors must have 3 values (z, y, x), got {factors!r}")
        if fac[1] != fac[2]:
            raise ValueError(f"the voxel pitch must stay equal in x and y: factors[1] == factors[2] "
                             f"required, got {fac.tolist()}")
        if f is not None:
            if isinstance(f, np.ndarray):
                _validate.check_array("f", f, self.get_volume_dim())
            out = self.up_sample(fac, f, dims) if up else self.down_sample(fac, f)
            nz, ny, nx = out.shape
        else:
            out = None
            op = (lambda n, k: int(n * k)) if up else (lambda n, k: int(n / k))
            nz, ny, nx = op(v["numZ"], fac[0]), op(v["numY"], fac[1]), op(v["numX"], fac[2])
        vh = v["voxelHeight"] / fac[0] if up else v["voxelHeight"] * fac[0]
        vw = v["voxelWidth"] / fac[1] if up else v["voxelWidth"] * fac[1]
        self.set_volume(nx, ny, nz, vw, vh, v["offsetX"], v["offsetY"], v["offsetZ"])
        return out

    def down_sample_volume(self, factors, f=None):
        """Down-sample a volume (factors = [z, y, x], y == x) and update the volume
        parameters. Returns the down-sampled data (None without f)."""
        return self._resample_volume(factors, f, None, up=False)

    def up_sample_volume(self, factors, f=None, dims=None):
        """Up-sample a volume (linear) and update the volume parameters. Returns the
        up-sampled data (None without f)."""
        return self._resample_volume(factors, f, dims, up=True)

    # ============================================================ array helpers
    @staticmethod
    def _lib(x):
        """The array library of x: torch, cupy or numpy."""
        if _is_torch(x):
            return _torch()
        if type(x).__module__.startswith("cupy"):
            import cupy
            return cupy
        return np

    def isAllZeros(self, f):
        """Whether every element of f is 0."""
        if _is_torch(f):
            return bool(_torch().count_nonzero(f) == 0)
        return not bool(self._lib(f).any(f))

    def innerProd(self, x, y, w=None):
        """Σ x·y (·w)."""
        lib = self._lib(x)
        return lib.sum(x * y) if w is None else lib.sum(x * y * w)

    def sum(self, x):
        return self._lib(x).sum(x)

    def abs(self, x):
        return self._lib(x).abs(x)

    def sign(self, x):
        return self._lib(x).sign(x)

    def minimum(self, x, y):
        return self._lib(x).minimum(x, y)

    def maximum(self, x, y):
        return self._lib(x).maximum(x, y)

    def copy_to_device(self, x):
        """A torch tensor of x on the selected GPU (LEAP's behaviour; needs torch and a GPU)."""
        try:
            torch = _torch()
        except ImportError as exc:
            raise ImportError("copy_to_device needs PyTorch (pip install torch)") from exc
        gpu = self.get_gpu()
        if gpu < 0:
            raise RuntimeError("copy_to_device needs a GPU: select one with set_gpu(index)")
        device = torch.device(f"cuda:{gpu}")
        return x.to(device) if _is_torch(x) else torch.from_numpy(np.ascontiguousarray(x)).to(device)

    def copy_to_host(self, x):
        """A NumPy array of x (torch tensors and CuPy arrays are copied; NumPy returned as is)."""
        if _is_torch(x):
            return x.detach().cpu().numpy()
        if type(x).__module__.startswith("cupy"):
            return x.get()
        return x
