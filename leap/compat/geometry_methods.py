"""Geometry utilities of the LEAP facade: editing a set geometry, data-range queries,
geometric calibration, volume masks, resampling and small array helpers.

The computations live in the core: the geometry classes' edits (``with_num_angles``,
``resized``, ``shifted``, ``spun``, ``reoriented``, ``rotated``),
:mod:`leap.geometry.angles`, :mod:`leap.geometry.ranges`,
:mod:`leap.preprocessing.geometric_calibration`, :mod:`leap.algorithms.masks`,
:mod:`leap.preprocessing.resample` and
:mod:`leap.preprocessing.mar`. This mixin converts LEAP's arguments (degrees, pixel indices, LEAP
names, array kinds) for them and records the geometries they return as LEAP's
parameters (``GeometryToolsMixin._record``).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _validate
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int

#: LEAP's names of the geometry kinds (``set_geometry`` also takes their indices).
_GEOMETRY_NAMES = {0: "CONE", 1: "PARALLEL", 2: "FAN", 3: "MODULAR", 4: "CONE-PARALLEL"}


def _float32(a):
    return np.asarray(a).astype(np.float32)


# Fields of the core geometries and the LEAP parameters that hold them: (core field,
# LEAP name, conversion to LEAP's units). The per-view arrays of one geometry are
# recorded together, as LEAP's set_* methods take them.
_DETECTOR_FIELDS = (("num_rows", "numRows"), ("num_cols", "numCols"),
                    ("pixel_height", "pixelHeight"), ("pixel_width", "pixelWidth"),
                    ("center_row", "centerRow"), ("center_col", "centerCol"))
_SCALAR_FIELDS = (("sod", "sod", float), ("sdd", "sdd", float), ("tau", "tau", float),
                  ("helical_pitch", "helicalPitch", float), ("tilt", "tiltAngle", math.degrees))
_VIEW_FIELDS = (("angles", "phis", lambda a: np.rad2deg(a).astype(np.float32)),
                ("source_positions", "sourcePositions", _float32),
                ("module_centers", "moduleCenters", _float32),
                ("row_vectors", "rowVectors", _float32),
                ("col_vectors", "colVectors", _float32))


def _same_array(a, b):
    """Equal up to the round-off of re-validating a geometry (modular beams normalise
    their row and column vectors again on every change)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    scale = float(np.max(np.abs(a))) if a.size else 0.0
    return bool(np.allclose(a, b, rtol=0.0, atol=1e-12 * (1.0 + scale)))


def _is_torch(x):
    return type(x).__module__.startswith("torch")


def _torch():
    import torch
    return torch


class GeometryToolsMixin:
    """Geometry-editing, calibration and masking methods of
    :class:`leap.compat.model.tomographicModels`."""

    # ============================================================ geometry editing
    def _record(self, new, **exact):
        """Store the core geometry ``new``, an edit of the current one, as LEAP's
        parameters: the values that changed, in LEAP's names and units (all per-view
        arrays when any changed). ``exact``: LEAP values to store as given instead of
        converting back from the core (a tilt the caller has in degrees, exactly)."""
        old = self.core_geometry()
        changes = {}
        for core, leap in _DETECTOR_FIELDS:
            if getattr(new.detector, core) != getattr(old.detector, core):
                changes[leap] = getattr(new.detector, core)
        for core, leap, to_leap in _SCALAR_FIELDS:
            if hasattr(new, core) and getattr(new, core) != getattr(old, core):
                changes[leap] = to_leap(getattr(new, core))
        views = [f for f in _VIEW_FIELDS if hasattr(new, f[0])]
        if any(not _same_array(getattr(new, core), getattr(old, core)) for core, _, _ in views):
            changes["numAngles"] = new.num_angles
            changes.update({leap: to_leap(getattr(new, core)) for core, leap, to_leap in views})
        changes.update({k: v for k, v in exact.items() if k in changes})
        return self._update(**changes)

    def set_numAngles(self, numAngles):
        """Change the number of views.

        LEAP discards the angles (they must be set again); leap keeps the geometry usable
        by spreading ``numAngles`` equal steps over the old angular range from the old
        first angle (:meth:`leap.geometry.ParallelBeam.with_num_angles`). Call
        :meth:`set_phis` to choose other angles. Modular beams need new per-view
        vectors: use :meth:`set_modularbeam`.
        """
        self._need_geometry()
        n = _as_int("numAngles", numAngles)
        if n <= 0:
            raise ValueError(f"numAngles must be positive, got {n}")
        if n == self.get_numAngles():
            return True
        return self._record(self.core_geometry().with_num_angles(n))

    def set_numCols(self, numCols):
        """Change the number of detector columns (centerCol unchanged; modular beams stay
        centred on their module centres)."""
        return self._record(self.core_geometry().resized(num_cols=self._count("numCols", numCols)))

    def set_numRows(self, numRows):
        """Change the number of detector rows (centerRow unchanged; modular beams stay
        centred on their module centres)."""
        return self._record(self.core_geometry().resized(num_rows=self._count("numRows", numRows)))

    @staticmethod
    def _count(name, n):
        n = _as_int(name, n)
        if n <= 0:
            raise ValueError(f"{name} must be positive, got {n}")
        return n

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
        r, c = _as_float("r", r), _as_float("c", c)
        return self._record(self.core_geometry().shifted(r, c))

    def rotate_detector(self, alpha):
        """Rotate the detector.

        alpha : float, degrees — rotation about the detector normal (col × row), which
            turns the column vector towards the row vector. Cone beams add it to
            tiltAngle; modular beams rotate every module.
        alpha : (3,) Euler angles 'xyz' in degrees, or (3, 3) rotation matrix —
            modular beams only: each module's frame (col, normal, row) is multiplied by
            alpha.T, as LEAP does.
        """
        geo = self.core_geometry()
        if np.ndim(alpha) == 0:
            a = _as_float("alpha", alpha)
            # A cone's tilt is a LEAP parameter in degrees: keep the exact sum rather than
            # a round trip through radians.
            return self._record(geo.spun(math.radians(a)), tiltAngle=self.get_tiltAngle() + a)
        A = np.asarray(alpha, dtype=np.float64)
        if A.size == 3:
            from scipy.spatial.transform import Rotation
            A = Rotation.from_euler("xyz", A.ravel(), degrees=True).as_matrix()
        elif A.shape != (3, 3):
            raise ValueError(f"alpha must be a scalar (degrees), 3 Euler angles or a 3x3 matrix, "
                             f"got shape {A.shape}")
        return self._record(geo.reoriented(A))

    def rotate_coordinate_system(self, R):
        """Rotate the whole modular-beam system by the 3×3 matrix ``R`` (sources, module
        centres, row and column vectors), e.g. to reconstruct on a rotated voxel grid."""
        return self._record(self.core_geometry().rotated(R))

    def set_geometry(self, which):
        """Change the geometry type by name ('CONE', 'FAN', 'PARALLEL', 'MODULAR'),
        keeping the other parameters. Fan ↔ cone always works; to parallel drops sod,
        sdd, tau; to fan/cone from parallel needs sod and sdd, so set those with
        set_fanbeam/set_conebeam instead. 'MODULAR' only applies to a modular beam (use
        convert_to_modularbeam)."""
        self._need_geometry()
        names = _GEOMETRY_NAMES
        if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
            which = names.get(int(which), which)
        if not isinstance(which, str) or which.upper() not in names.values():
            raise ValueError(f"geometry must be one of {sorted(names.values())}, got {which!r}")
        target, current = which.upper(), self.get_geometry()      # LEAP's names
        if target == current:
            return True
        if target == "CONE-PARALLEL":
            raise NotImplementedError("a cone-parallel geometry comes from rebinning cone-beam "
                                      "data: use rebin_parallel")
        if "MODULAR" in (target, current):
            raise ValueError("a modular beam needs per-view vectors: use convert_to_modularbeam() "
                             "or set_modularbeam")
        detector = (self.get_numAngles(), self.get_numRows(), self.get_numCols(),
                    self.get_pixelHeight(), self.get_pixelWidth(), self.get_centerRow(),
                    self.get_centerCol(), self.get_angles())
        if target == "PARALLEL":
            return self.set_parallelbeam(*detector)
        sod, sdd = self.get_sod(), self.get_sdd()     # 0 where the geometry has none
        if sod == 0.0:
            raise ValueError(f"a {target.lower()}-beam geometry needs sod and sdd; use "
                             f"set_{target.lower()}beam")
        if target == "FAN":
            return self.set_fanbeam(*detector, sod, sdd, self.get_tau())
        return self.set_conebeam(*detector, sod, sdd, self.get_tau())

    # ============================================================ range queries
    # LEAP's range queries; the bounds live in :mod:`leap.geometry.ranges`.
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
        from ..geometry.ranges import rows_per_slab
        n = _as_int("numSlicesPerChunk", numSlicesPerChunk)
        if n <= 0:
            raise ValueError(f"numSlicesPerChunk must be positive, got {n}")
        return rows_per_slab(self.core_geometry(), self.core_volume(), self._fov_radius(), n)

    def extraColumnsForOffsetScan(self):
        """Columns FBP zero-pads an offset-detector scan with (0 unless set_offsetScan(True)
        and a full, non-helical scan)."""
        if not self._offset_scan:
            return 0
        from ..reconstruction.weights import offset_scan_extra_columns
        return offset_scan_extra_columns(self.core_geometry())

    def get_diameterFOV_min(self):
        """Diameter (mm) of the field of view without offset-scan widening or
        set_diameterFOV. Modular beams that are not axially aligned: the volume's extent
        (twice the furthest voxel centre plus half a voxel), or inf without a volume."""
        from ..geometry.ranges import fov_or_volume_radius
        volume = self.core_volume() if self.ct_volume_defined() else None
        return 2.0 * fov_or_volume_radius(self.core_geometry(), volume)

    def get_z_source_offset(self):
        """LEAP's z_source_offset, mm: helical source height is h·φ + z_source_offset with
        φ = ψ − π/2 in radians, i.e. −h·(φ_first + φ_last)/2 (0 for circular orbits)."""
        from ..geometry.cone import z_source_offset
        return z_source_offset(self.core_geometry())

    def angles_are_defined(self):
        """Whether view angles exist (a geometry is set)."""
        return self._geom is not None

    def angles_are_equispaced(self):
        """Whether consecutive angles differ by the first step to within 2e-5 rad."""
        if self._geom is None:
            return True
        from ..geometry.angles import are_equispaced
        return are_equispaced(np.deg2rad(np.asarray(self.get_angles(), dtype=np.float64)))

    # ============================================================ calibration
    # The searches live in :mod:`leap.preprocessing.geometric_calibration`; they check the geometry
    # kind and the data (shape, finite values).
    @staticmethod
    def _host(g):
        """Projections as a NumPy array (torch tensors and CuPy arrays are copied to the
        host; the core checks shape and values)."""
        from ..devices.arrays import is_cuda_array
        if _is_torch(g):
            return g.detach().cpu().numpy()
        if is_cuda_array(g):
            import cupy
            return cupy.asnumpy(g)
        return g

    def find_centerCol(self, g, iRow=-1, searchBounds=None):
        """Estimate centerCol from conjugate rays, set it, and return the cost (mean
        squared difference of conjugate rays at the estimate).

        iRow : detector row to use (-1: the row nearest centerRow).
        searchBounds : [low, high] candidate centre columns (default: middle 54%).
        Parallel, fan and cone beams; needs ≥ 180° of untruncated data.
        """
        from ..preprocessing.geometric_calibration import find_center_col
        center_col, cost = find_center_col(self.core_geometry(), self._host(g), iRow, searchBounds,
                                           offset_scan=bool(self._offset_scan))
        self.set_centerCol(center_col)
        return cost

    def find_tau(self, g, iRow=-1, searchBounds=None):
        """Estimate tau (rotation-axis offset, mm) from conjugate rays of fan- or cone-beam
        data, set it, and return the cost. searchBounds: [low, high] in mm."""
        from ..preprocessing.geometric_calibration import find_tau
        tau, cost = find_tau(self.core_geometry(), self._host(g), iRow, searchBounds,
                             offset_scan=bool(self._offset_scan))
        self.set_tau(tau)
        return cost

    def estimate_tilt(self, g):
        """Estimate the detector tilt (rotation about the optical axis), degrees, from two
        projections 180° apart (fan/cone data rebinned to parallel rays). Changes no
        parameter: apply it with ``rotate_detector(alpha)`` (after convert_to_modularbeam)
        or set_tiltAngle. Works best once centerCol is right."""
        from ..preprocessing.geometric_calibration import find_tilt
        return find_tilt(self.core_geometry(), self._host(g))

    def conjugate_difference(self, g, alpha=0.0, centerCol=None):
        """Difference (numRows, numCols) float32 of two projections 180° apart, modelling a
        detector rotated by ``alpha`` degrees and the centre column ``centerCol``
        (default: the current one). Mostly noise when both are right."""
        from ..preprocessing.geometric_calibration import conjugate_view_difference
        cc = None if centerCol is None else _as_float("centerCol", centerCol)
        d = conjugate_view_difference(self.core_geometry(), self._host(g),
                                      _as_float("alpha", alpha), cc)
        return _torch().from_numpy(d) if _is_torch(g) else d

    def consistency_cost(self, g, Delta_centerRow=0.0, Delta_centerCol=0.0, Delta_tau=0.0,
                         Delta_tilt=0.0):
        """Data-consistency cost (Lesaint et al. 2017) of an axial flat-panel cone-beam scan
        for perturbations of centerRow, centerCol (pixels), tau (mm) and tilt (degrees).

        ``Delta_centerRow`` may be a list: [row, col], [row, col, tilt] or
        [row, col, tau, tilt] (for scipy.optimize.minimize). Lower is more consistent.
        """
        from ..preprocessing.geometric_calibration import scan_consistency_cost
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
        return scan_consistency_cost(self.core_geometry(), self._host(g),
                                     _as_float("Delta_centerRow", Delta_centerRow),
                                     _as_float("Delta_centerCol", Delta_centerCol),
                                     _as_float("Delta_tau", Delta_tau),
                                     _as_float("Delta_tilt", Delta_tilt))

    def inconsistencyReconstruction(self, g, f=None, inplace=False):
        """FBP with the ramp filter replaced by a derivative along detector rows.

        For a calibrated scan of 360° or more the result is pure noise; geometry errors
        show up as structure. Scans shorter than a full turn get a plain FBP (as LEAP).
        ``inplace=True`` leaves the filtered data in ``g``. Returns ``f``.
        """
        from ..preprocessing.geometric_calibration import derivative_filter, is_full_scan
        geo = self.core_geometry()
        _validate.check_array("g", g, geo.projection_shape)
        if not is_full_scan(geo):
            return self.FBP(g, f)
        return self._filtered_backprojection(g, f, derivative_filter, inplace=inplace)

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
        from ..algorithms.masks import window_fov
        if isinstance(f, np.ndarray):
            _validate.check_array("f", f, self.get_volume_dim())
        return window_fov(f, self.core_volume(), self._fov_radius())

    def space_carving(self, projection_mask, vol_mask):
        """Space carving: ``vol_mask ← 1 − step(Pᵀ(1 − projection_mask))``, then windowFOV.

        Voxels seen by any ray with projection_mask 0 (a ray missing the object) become 0,
        the rest 1. projection_mask is restored afterwards. Returns vol_mask.
        """
        from ..algorithms.masks import space_carving
        return space_carving(self.system, projection_mask, vol_mask)

    def sinogram_replacement(self, g, priorSinogram, metalTrace, windowSize=None):
        """Metal artifact reduction: inside ``metalTrace`` (> 0), replace ``g`` in place by
        ``priorSinogram`` fitted (scale and shift) to the surrounding good data.
        windowSize: half-widths (views, rows, columns), default [3, 1, 50]. Returns True."""
        from ..preprocessing.mar import sinogram_replacement
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
        from ..preprocessing.resample import down_sample
        arr, t = self._as_numpy3(I, "I")
        out = down_sample(arr, factors, dims)
        return _torch().from_numpy(out).to(I.device) if t else out

    def up_sample(self, factors, I, dims=None):
        """Linear up-sampling of a 3-D array by ``factors`` (3 values ≥ 1); output shape
        ``dims`` or ``int(N·factor)`` per axis. Returns a new array."""
        from ..preprocessing.resample import up_sample
        arr, t = self._as_numpy3(I, "I")
        out = up_sample(arr, factors, dims)
        return _torch().from_numpy(out).to(I.device) if t else out

    def _resample_detector(self, factors, g, dims, up):
        from ..preprocessing.resample import detector_factors, resample_geometry
        geo = self.core_geometry()
        f = detector_factors(factors)
        out = None
        if g is not None:
            if isinstance(g, np.ndarray):
                _validate.check_array("g", g, self.get_projection_dim())
            out = self.up_sample(f, g, dims) if up else self.down_sample(f, g)
        self._record(resample_geometry(geo, f, up=up, shape=None if out is None else out.shape))
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
        from ..preprocessing.resample import resample_volume, volume_factors
        self._need_volume()
        fac = volume_factors(factors)
        out = None
        if f is not None:
            if isinstance(f, np.ndarray):
                _validate.check_array("f", f, self.get_volume_dim())
            out = self.up_sample(fac, f, dims) if up else self.down_sample(fac, f)
        new = resample_volume(self.core_volume(), fac, up=up,
                              shape=None if out is None else out.shape)
        # LEAP's offsets stay as they are (parallel and fan offsetZ is not the core's).
        self.set_volume(new.num_x, new.num_y, new.num_z, new.voxel_width, new.voxel_height,
                        self.get_offsetX(), self.get_offsetY(), self.get_offsetZ())
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
