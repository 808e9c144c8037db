"""``tomographicModels``: the LEAP-compatible facade.

This class keeps LEAP's method names, argument order, units (degrees, mm) and the
output-first calling convention (``project(g, f)`` fills ``g``). It holds no numerics:
it records the parameters LEAP records, builds the core geometry objects from them
(:mod:`leap.geometry`) and calls the core operators (:mod:`leap.operators`).

Where LEAP prints ``Error:`` and returns ``False``, this class raises an exception that
names what was expected.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from .. import _validate
from ..geometry import (ConeBeam, ConeParallelBeam, Detector, FanBeam, ModularBeam, ParallelBeam)
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int
from ..geometry._checks import positive_int as _positive_int
from .iterative_methods import IterativeMethodsMixin
from .display_methods import DisplayMixin
from .fbp_methods import FBPMixin
from .geometry_methods import GeometryToolsMixin
from .io_methods import DataIOMixin
from .phantom_methods import PhantomMixin
from .preprocessing_methods import PreprocessingMixin
from .special_methods import SpecialModelsMixin


class tomographicModels(FBPMixin, PhantomMixin, DisplayMixin, DataIOMixin, IterativeMethodsMixin,
                        PreprocessingMixin, GeometryToolsMixin, SpecialModelsMixin):
    """A CT system: scan geometry, reconstruction volume and processing options.

    Typical use (as in LEAP)::

        leapct = tomographicModels()
        leapct.set_conebeam(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                            centerRow, centerCol, leapct.setAngleArray(numAngles, 360.0),
                            sod, sdd)
        leapct.set_default_volume()
        g = leapct.allocate_projections()     # (numAngles, numRows, numCols)
        f = leapct.allocate_volume()          # (numZ, numY, numX)
        leapct.set_FORBILD(f, True)
        leapct.project(g, f)

    Projections are float32 arrays ``(numAngles, numRows, numCols)`` and volumes float32
    arrays ``(numZ, numY, numX)``; angles ``phis`` are in degrees; lengths in mm.
    """

    def __init__(self, param_id=None, lib_dir=""):
        self.param_id = param_id
        self.reset()

    def __setattr__(self, name, value):
        # Every setting lives in an attribute; the core objects derived from them (the
        # geometry, the volume, the CTSystem) are built once per change and cached.
        object.__setattr__(self, name, value)
        if name != "_derived":
            object.__setattr__(self, "_derived", {})

    def _cached(self, key, build):
        d = self.__dict__.setdefault("_derived", {})
        if key not in d:
            d[key] = build()
        return d[key]

    # ------------------------------------------------------------------ state
    def reset(self):
        """Forget geometry, volume, phantom and options."""
        self._geom = None          # dict of LEAP geometry parameters
        self._vol = None           # dict of LEAP volume parameters
        self._gpus = [-1]
        self._max_slices = None
        self._phantom = None
        self._fov_diameter = None
        self._offset_scan = False
        self._truncated_scan = False
        self._ramp_filter = 2
        self._fbp_lowpass = 1.0
        self._mu_map, self._mu_coeff, self._mu_radius = None, 0.0, 0.0   # attenuated Radon
        self._axis_of_symmetry = None                                     # symmetric objects
        self.volume_mask = None    # set_volume_mask: project/backproject see f · mask
        return True

    def about(self):
        """Print the version of leap."""
        from .. import __version__
        print(f"leap {__version__}: LEAP-compatible CT projectors in Python (Numba CPU and CUDA back-ends)")

    def version(self):
        from .. import __version__
        return __version__

    def ct_geometry_defined(self):
        return self._geom is not None

    def ct_volume_defined(self):
        return self._vol is not None

    def all_defined(self):
        return self.ct_geometry_defined() and self.ct_volume_defined()

    def _need_geometry(self):
        if self._geom is None:
            raise RuntimeError("no CT geometry is set: call set_parallelbeam, set_fanbeam, "
                               "set_conebeam, set_modularbeam or load_param first")
        return self._geom

    def _need_volume(self):
        if self._vol is None:
            raise RuntimeError("no CT volume is set: call set_volume or set_default_volume first")
        return self._vol

    # ---------------------------------------------------------------- angles
    def setAngleArray(self, numAngles, angularRange):
        """Equispaced angles in degrees: ``arange(numAngles) * angularRange / numAngles``."""
        n = _positive_int("numAngles", numAngles)
        from ..geometry.conventions import angle_array
        return angle_array(n, _as_float("angularRange", angularRange))

    def _angles(self, numAngles, phis):
        if phis is None:
            raise ValueError("phis must be given (an array of angles in degrees or an angular range)")
        if hasattr(phis, "detach"):  # a torch tensor
            phis = phis.detach().cpu().numpy()
        if np.ndim(phis) == 0:
            return self.setAngleArray(numAngles, phis)
        arr = np.asarray(phis, dtype=np.float64).ravel()
        if arr.size != numAngles:
            raise ValueError(f"phis has {arr.size} angles but numAngles is {numAngles}")
        if not np.all(np.isfinite(arr)):
            raise ValueError("phis must contain only finite angles (found NaN or inf)")
        return arr.astype(np.float32)

    # -------------------------------------------------------------- geometry
    def _detector_params(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                         centerRow, centerCol):
        p = dict(numAngles=_positive_int("numAngles", numAngles),
                 numRows=_positive_int("numRows", numRows),
                 numCols=_positive_int("numCols", numCols),
                 pixelHeight=_as_float("pixelHeight", pixelHeight),
                 pixelWidth=_as_float("pixelWidth", pixelWidth),
                 centerRow=_as_float("centerRow", centerRow),
                 centerCol=_as_float("centerCol", centerCol))
        for k in ("pixelHeight", "pixelWidth"):
            if p[k] <= 0:
                raise ValueError(f"{k} must be positive, got {p[k]}")
        return p

    def _set_geometry(self, params):
        """Validate by building the core geometry; keep the old one on failure."""
        old = self._geom
        self._geom = params
        try:
            self.core_geometry()
        except Exception:
            self._geom = old
            raise
        return True

    def set_parallelbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                         centerRow, centerCol, phis):
        """Parallel-beam geometry.

        phis : (numAngles,) angles in degrees, or a scalar angular range.
        """
        p = self._detector_params(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                  centerRow, centerCol)
        p.update(geometry="parallel", phis=self._angles(p["numAngles"], phis),
                 detectorType="flat")
        return self._set_geometry(p)

    set_parallelBeam = set_parallelbeam

    def set_fanbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                    centerRow, centerCol, phis, sod, sdd, tau=0.0):
        """Fan-beam geometry (each detector row a fan in its own z slice).

        sod, sdd : source-to-object and source-to-detector distances, mm.
        tau : rotation-axis offset, mm.
        """
        p = self._detector_params(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                  centerRow, centerCol)
        p.update(geometry="fan", phis=self._angles(p["numAngles"], phis),
                 sod=_as_float("sod", sod), sdd=_as_float("sdd", sdd), tau=_as_float("tau", tau),
                 detectorType="flat")
        return self._set_geometry(p)

    set_fanBeam = set_fanbeam

    def set_conebeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                     centerRow, centerCol, phis, sod, sdd, tau=0.0, helicalPitch=0.0,
                     tiltAngle=0.0):
        """Cone-beam geometry (flat detector; see :meth:`set_curvedDetector`).

        helicalPitch : source advance along z in mm per radian (0 = circular orbit).
        tiltAngle : detector rotation about the central ray, degrees (|tilt| ≤ 5).
        """
        p = self._detector_params(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                  centerRow, centerCol)
        p.update(geometry="cone", phis=self._angles(p["numAngles"], phis),
                 sod=_as_float("sod", sod), sdd=_as_float("sdd", sdd), tau=_as_float("tau", tau),
                 helicalPitch=_as_float("helicalPitch", helicalPitch),
                 tiltAngle=_as_float("tiltAngle", tiltAngle), detectorType="flat")
        return self._set_geometry(p)

    set_coneBeam = set_conebeam

    def set_coneparallel(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                         centerRow, centerCol, phis, sod, sdd, tau=0.0, helicalPitch=0.0):
        """Cone-parallel geometry: cone-beam rays rebinned to parallel rays in-plane.

        Columns are lateral positions s = (i − centerCol)·pixelWidth measured at the
        rotation axis (mm); rows are cone-beam rows on a detector at distance sdd. A point
        x projects to column s = x·θ⊥ and row coordinate
        t = sdd·(x₃ − z_s)/(√(sod² − s²) − x·θ) (LEAP's ``set_coneparallel`` formula).

        sod, sdd : source-to-axis and source-to-detector distances, mm.
        tau : rotation-axis offset of the original cone-beam scan, mm.
        helicalPitch : source advance along z in mm per radian (0 = circular orbit).
        """
        p = self._detector_params(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                  centerRow, centerCol)
        p.update(geometry="cone_parallel", phis=self._angles(p["numAngles"], phis),
                 sod=_as_float("sod", sod), sdd=_as_float("sdd", sdd), tau=_as_float("tau", tau),
                 helicalPitch=_as_float("helicalPitch", helicalPitch), detectorType="flat")
        return self._set_geometry(p)

    set_coneParallel = set_coneparallel

    def set_modularbeam(self, numAngles, numRows, numCols, pixelHeight, pixelWidth,
                        sourcePositions, moduleCenters, rowVectors, colVectors):
        """Modular-beam geometry: per view a source and a flat detector module.

        sourcePositions, moduleCenters, rowVectors, colVectors : (numAngles, 3) arrays, mm.
        Row and column vectors are normalised and must be orthogonal to within 0.01.
        """
        p = self._detector_params(numAngles, numRows, numCols, pixelHeight, pixelWidth,
                                  0.5 * (_as_int("numRows", numRows) - 1),
                                  0.5 * (_as_int("numCols", numCols) - 1))
        n = p["numAngles"]
        for name, arr in (("sourcePositions", sourcePositions), ("moduleCenters", moduleCenters),
                          ("rowVectors", rowVectors), ("colVectors", colVectors)):
            a = np.asarray(arr, dtype=np.float64)
            if a.shape != (n, 3):
                raise ValueError(f"{name} must have shape ({n}, 3), got {a.shape}")
            p[name] = a.astype(np.float32)
        p.update(geometry="modular", detectorType="flat")
        return self._set_geometry(p)

    set_modularBeam = set_modularbeam

    def set_curvedDetector(self):
        """Make the cone-beam detector curved (cylinder about the source, equi-angular columns)."""
        g = self._need_kind(("cone",), "a curved detector")
        return self._set_geometry(dict(g, detectorType="curved", tiltAngle=0.0))

    def set_flatDetector(self):
        """Make the detector flat."""
        g = self._need_geometry()
        return self._set_geometry(dict(g, detectorType="flat"))

    def get_detectorType(self):
        return self._need_geometry()["detectorType"]

    def _update(self, **changes):
        return self._set_geometry(dict(self._need_geometry(), **changes))

    def _need_kind(self, kinds, what):
        """The geometry parameters, if the geometry is one of ``kinds``; else raise."""
        g = self._need_geometry()
        if g["geometry"] not in kinds:
            raise ValueError(f"{what} is defined for {' and '.join(kinds)}-beam geometries only, "
                             f"not {g['geometry']}")
        return g

    def set_tau(self, tau):
        self._need_kind(("fan", "cone", "cone_parallel"), "tau")
        return self._update(tau=_as_float("tau", tau))

    def set_tiltAngle(self, tiltAngle):
        self._need_kind(("cone",), "tiltAngle")
        return self._update(tiltAngle=_as_float("tiltAngle", tiltAngle))

    def set_helicalPitch(self, helicalPitch):
        """Helical pitch in mm per radian (cone and cone-parallel beams only)."""
        self._need_kind(("cone", "cone_parallel"), "a helical pitch")
        return self._update(helicalPitch=_as_float("helicalPitch", helicalPitch))

    def set_normalizedHelicalPitch(self, normalizedHelicalPitch):
        """Set the pitch from its normalised value ĥ = 2π·h / (numRows·pixelHeight·sod/sdd)."""
        self._need_kind(("cone", "cone_parallel"), "a helical pitch")
        nh = _as_float("normalizedHelicalPitch", normalizedHelicalPitch)
        geo = self.core_geometry().with_normalized_helical_pitch(nh)
        return self._update(helicalPitch=geo.helical_pitch)

    def get_normalizedHelicalPitch(self):
        geo = self.core_geometry()
        return geo.normalized_helical_pitch() if hasattr(geo, "normalized_helical_pitch") else 0.0

    def set_centerCol(self, centerCol):
        return self._update(centerCol=_as_float("centerCol", centerCol))

    def set_centerRow(self, centerRow):
        return self._update(centerRow=_as_float("centerRow", centerRow))

    def set_sod(self, sod):
        return self._update(sod=_as_float("sod", sod))

    def set_sdd(self, sdd):
        return self._update(sdd=_as_float("sdd", sdd))

    def set_phis(self, phis):
        g = self._need_geometry()
        return self._update(phis=self._angles(g["numAngles"], phis))

    set_angles = set_phis

    def core_geometry(self):
        """The geometry as a core object (:mod:`leap.geometry`), angles in radians."""
        return self._cached("geometry", self._build_geometry)

    def _build_geometry(self):
        g = self._need_geometry()
        kind = g["geometry"]
        if kind == "modular":
            det = Detector(num_rows=g["numRows"], num_cols=g["numCols"],
                           pixel_height=g["pixelHeight"], pixel_width=g["pixelWidth"])
            return ModularBeam(detector=det, source_positions=g["sourcePositions"],
                               module_centers=g["moduleCenters"], row_vectors=g["rowVectors"],
                               col_vectors=g["colVectors"])
        det = Detector(num_rows=g["numRows"], num_cols=g["numCols"],
                       pixel_height=g["pixelHeight"], pixel_width=g["pixelWidth"],
                       center_row=g["centerRow"], center_col=g["centerCol"],
                       curved=g["detectorType"] == "curved")
        angles = np.deg2rad(np.asarray(g["phis"], dtype=np.float64))
        if kind == "parallel":
            return ParallelBeam(detector=det, angles=angles)
        if kind == "fan":
            return FanBeam(detector=det, angles=angles, sod=g["sod"], sdd=g["sdd"], tau=g["tau"])
        if kind == "cone_parallel":
            return ConeParallelBeam(detector=det, angles=angles, sod=g["sod"], sdd=g["sdd"],
                                    tau=g["tau"], helical_pitch=g["helicalPitch"])
        return ConeBeam(detector=det, angles=angles, sod=g["sod"], sdd=g["sdd"], tau=g["tau"],
                        helical_pitch=g["helicalPitch"], tilt=np.deg2rad(g["tiltAngle"]))

    @property
    def system(self):
        """The current problem as a :class:`leap.system.CTSystem` (geometry, volume,
        forward model, field of view, mask, FBP options, devices): what every computing
        method of this facade calls, and what other front ends (torch, Dask) take over.
        An immutable value, built once per change of the settings; later settings give
        a new one and do not change it."""
        return self._cached("system", self._build_system)

    def _build_system(self):
        from ..system import Attenuated, CTSystem, FBPOptions, Symmetric
        geo, vol = self.core_geometry(), self.core_volume()
        model = None
        if self._axis_of_symmetry is not None:
            if self.muSpecified():
                raise ValueError("an attenuation map and an axis of symmetry are both set; "
                                 "clear one (clear_attenuationMap or clear_axisOfSymmetry)")
            model = Symmetric(self._axis_of_symmetry)
        elif self.muSpecified():
            model = Attenuated(self._attenuation())
        mask = self.volume_mask
        if mask is not None and tuple(mask.shape) != vol.shape:
            mask = None      # LEAP: a mask of another shape is not applied
        order, window = self._ramp_filter, "none"
        if isinstance(order, str):
            order, window = 12, order
        options = FBPOptions(ramp_filter=order, window=window, lowpass=self._fbp_lowpass,
                             offset_scan=bool(self._offset_scan),
                             truncated_scan=bool(self._truncated_scan))
        return CTSystem(geometry=geo, volume=vol, model=model, mask=mask,
                        fov_radius=0.5 * self._fov_diameter if self._fov_diameter else None,
                        fbp_options=options, devices=tuple(self.get_gpus()),
                        max_slices=self._max_slices)

    def convert_to_modularbeam(self):
        """Replace a parallel- or cone-beam geometry by its modular-beam equivalent."""
        g = self._need_geometry()
        if g["geometry"] == "modular":
            return True
        geo = self.core_geometry()
        if isinstance(geo, ConeParallelBeam):
            raise ValueError("cone-parallel beams have no modular-beam equivalent (every column "
                             "has its own source); LEAP converts parallel and cone beams only")
        if isinstance(geo, FanBeam):
            raise ValueError("fan beams have no modular-beam equivalent (their rows are not "
                             "magnified along z); LEAP converts parallel and cone beams only")
        if isinstance(geo, ParallelBeam):
            mod = geo.to_modular(self.core_volume())
        else:
            mod = geo.to_modular()
        return self.set_modularbeam(g["numAngles"], g["numRows"], g["numCols"], g["pixelHeight"],
                                    g["pixelWidth"], mod.source_positions, mod.module_centers,
                                    mod.row_vectors, mod.col_vectors)

    convert_conebeam_to_modularbeam = convert_to_modularbeam
    convert_parallelbeam_to_modularbeam = convert_to_modularbeam

    # ------------------------------------------------------------- rebinning
    @staticmethod
    def _host_array(name, g):
        """A NumPy view of ``g`` (NumPy array or CPU torch tensor) for in-place work."""
        if hasattr(g, "detach") and hasattr(g, "is_cuda"):
            if g.is_cuda:
                raise ValueError(f"{name} is a CUDA tensor; rebinning runs on the CPU only: "
                                 f"pass {name}.cpu() and copy the result back")
            return g.detach().numpy()
        return g

    def rebin_curved(self, g, fanAngles, order=6):
        """Resample curved cone-beam data measured at the fan angles ``fanAngles``
        (degrees, one per column; real curved detectors are flat modules on a polygon)
        onto ideal equi-angular columns, in place. Returns True."""
        from ..rebin import rebin_curved
        if hasattr(fanAngles, "detach"):
            fanAngles = fanAngles.detach().cpu().numpy()
        rebin_curved(self.core_geometry(), self._host_array("g", g), fanAngles, order)
        return True

    def rebin_parallel(self, g, order=6):
        """Rebin fan-beam data to parallel-beam, or cone-beam data to cone-parallel, in
        place, and change the geometry to match (as LEAP): sod → √(sod² + tau²),
        tau → 0, pixelWidth → pixelWidth·sod/sdd (spacing at the axis), flat detector.
        Short and helical scans lose the views not fully measured: the geometry then
        has fewer angles, the first views of ``g`` hold the data and the rest are zero
        (resize ``g`` with ``g[:leapct.get_numAngles()]``). Returns True."""
        from ..rebin import orbit_radius, rebin_parallel
        g0 = self._geom
        arr = self._host_array("g", g)
        new, _ = rebin_parallel(self.core_geometry(), arr, order)
        same = new.num_angles == g0["numAngles"] and np.allclose(
            new.angles, np.deg2rad(np.asarray(g0["phis"], dtype=np.float64)), rtol=0, atol=1e-12)
        phis = g0["phis"] if same else np.rad2deg(new.angles).astype(np.float32)
        changes = dict(numAngles=new.num_angles, phis=phis, pixelWidth=new.detector.pixel_width,
                       detectorType="flat")
        if isinstance(new, ParallelBeam):
            # LEAP keeps sod (now √(sod² + tau²)) and sdd in the parameters of the result.
            return self._update(geometry="parallel", sod=orbit_radius(self.core_geometry()),
                                tau=0.0, **changes)
        self._geom = {k: v for k, v in g0.items() if k != "tiltAngle"}
        return self._update(geometry="cone_parallel", sod=new.sod, tau=0.0, **changes)

    def rebin_parallel_sinogram(self, g, order=6, iRow=-1):
        """One row of fan- or cone-beam data rebinned to a parallel-beam sinogram (for
        geometric calibration); ``g`` and the geometry are unchanged.

        iRow : detector row (out of range, e.g. −1: the row nearest centerRow).
        Returns a new float32 array (numAngles, numCols) of parallel views at the
        original angles with columns spaced pixelWidth·√(sod² + tau²)/sdd around
        centerCol (short scans: only the first, fully measured views are filled); with
        ``set_offsetScan(True)`` on a full scan, (numAngles // 2, 2·numCols) views over
        180° of a centred detector twice as wide. A torch tensor in gives a CPU tensor
        out. See :func:`leap.rebin.rebin_parallel_sinogram`.
        """
        from ..rebin import rebin_parallel_sinogram
        arr = self._host_array("g", g)
        sino = rebin_parallel_sinogram(self.core_geometry(), arr, order, iRow,
                                       offset_scan=bool(self._offset_scan))
        if arr is not g:
            import torch
            return torch.from_numpy(sino)
        return sino

    # ---------------------------------------------------------------- volume
    def set_volume(self, numX, numY, numZ, voxelWidth=None, voxelHeight=None,
                   offsetX=0.0, offsetY=0.0, offsetZ=0.0):
        """Reconstruction volume: voxel counts, sizes (mm) and centre offsets (mm).

        ``voxelWidth=None`` uses the nominal size; ``voxelHeight=None`` uses voxelWidth.
        """
        if voxelWidth is None or voxelWidth == 0:
            from ..geometry.conventions import nominal_voxel_size
            voxelWidth = nominal_voxel_size(self.core_geometry())[0]
        if voxelHeight is None or voxelHeight == 0:
            voxelHeight = voxelWidth
        v = dict(numX=_as_int("numX", numX), numY=_as_int("numY", numY), numZ=_as_int("numZ", numZ),
                 voxelWidth=_as_float("voxelWidth", voxelWidth),
                 voxelHeight=_as_float("voxelHeight", voxelHeight),
                 offsetX=_as_float("offsetX", offsetX), offsetY=_as_float("offsetY", offsetY),
                 offsetZ=_as_float("offsetZ", offsetZ))
        for k in ("numX", "numY", "numZ", "voxelWidth", "voxelHeight"):
            if v[k] <= 0:
                raise ValueError(f"{k} must be positive, got {v[k]}")
        old = self._vol
        self._vol = v
        try:
            if self._geom is not None:
                self.core_volume()
        except Exception:
            self._vol = old
            raise
        return True

    def set_default_volume(self, scale=1.0):
        """A volume that fills the field of view with nominal voxels times ``scale``
        (LEAP's rule, :func:`leap.geometry.conventions.default_volume`): numX = numY =
        ceil(numCols/scale), voxelWidth = pixelWidth·sod/sdd·scale (parallel and
        cone-parallel: pixelWidth·scale); cone, cone-parallel and modular beams scale the
        z sampling too, parallel and fan beams keep one slice per detector row; helical
        scans cover the source travel plus the detector height at the isocentre."""
        from ..geometry.conventions import default_volume
        v = default_volume(self.core_geometry(), _as_float("scale", scale),
                           angular_range=self.get_angularRange(),
                           offset_scan=bool(self._offset_scan),
                           symmetric=self._axis_of_symmetry is not None)
        return self.set_volume(**v)

    set_defaultVolume = set_default_volume

    def core_volume(self):
        """The volume as a core :class:`leap.geometry.Volume` (grid-centre offsets)."""
        return self._cached("volume", self._build_volume)

    def _build_volume(self):
        from ..geometry.conventions import volume_from_leap
        geo = self.core_geometry() if self._geom is not None else None
        return volume_from_leap(geo, **self._need_volume())

    def set_numX(self, n): return self.set_volume(**dict(self._need_volume(), numX=n))
    def set_numY(self, n): return self.set_volume(**dict(self._need_volume(), numY=n))
    def set_numZ(self, n): return self.set_volume(**dict(self._need_volume(), numZ=n))
    def set_offsetX(self, x): return self.set_volume(**dict(self._need_volume(), offsetX=x))
    def set_offsetY(self, y): return self.set_volume(**dict(self._need_volume(), offsetY=y))
    def set_offsetZ(self, z): return self.set_volume(**dict(self._need_volume(), offsetZ=z))
    def set_voxelWidth(self, w): return self.set_volume(**dict(self._need_volume(), voxelWidth=w))
    def set_voxelHeight(self, h): return self.set_volume(**dict(self._need_volume(), voxelHeight=h))

    def x_samples(self, centerCoords=False):
        """Voxel-centre x coordinates, (numX,) float32, mm."""
        return self.core_volume().x_samples(bool(centerCoords)).astype(np.float32)

    def y_samples(self, centerCoords=False):
        """Voxel-centre y coordinates, (numY,) float32, mm."""
        return self.core_volume().y_samples(bool(centerCoords)).astype(np.float32)

    def z_samples(self, centerCoords=False):
        """Voxel-centre z coordinates, (numZ,) float32, mm."""
        return self.core_volume().z_samples(bool(centerCoords)).astype(np.float32)

    def voxelSamples(self, centerCoords=False):
        """Voxel-centre coordinates as three (numZ, numY, numX) arrays (x, y, z)."""
        return self.core_volume().voxel_grid(centered=bool(centerCoords))

    # ------------------------------------------------------------- getters
    def get_geometry(self):
        """'CONE', 'PARALLEL', 'FAN', 'MODULAR' or 'CONE-PARALLEL' (LEAP's names); None
        before a geometry is set."""
        if self._geom is None:
            return None
        return self._geom["geometry"].upper().replace("_", "-")

    def get_numAngles(self): return self._need_geometry()["numAngles"]
    def get_numRows(self): return self._need_geometry()["numRows"]
    def get_numCols(self): return self._need_geometry()["numCols"]
    def get_pixelHeight(self): return self._need_geometry()["pixelHeight"]
    def get_pixelWidth(self): return self._need_geometry()["pixelWidth"]
    def get_centerRow(self): return self._need_geometry()["centerRow"]
    def get_centerCol(self): return self._need_geometry()["centerCol"]
    def get_sod(self): return self._need_geometry().get("sod", 0.0)
    def get_sdd(self): return self._need_geometry().get("sdd", 0.0)
    def get_tau(self): return self._need_geometry().get("tau", 0.0)
    def get_tiltAngle(self): return self._need_geometry().get("tiltAngle", 0.0)
    def get_helicalPitch(self): return self._need_geometry().get("helicalPitch", 0.0)
    def get_numX(self): return self._need_volume()["numX"]
    def get_numY(self): return self._need_volume()["numY"]
    def get_numZ(self): return self._need_volume()["numZ"]
    def get_voxelWidth(self): return self._need_volume()["voxelWidth"]
    def get_voxelHeight(self): return self._need_volume()["voxelHeight"]
    def get_offsetX(self): return self._need_volume()["offsetX"]
    def get_offsetY(self): return self._need_volume()["offsetY"]
    def get_offsetZ(self): return self._need_volume()["offsetZ"]

    def get_z0(self):
        return float(self.core_volume().z0)

    def get_angles(self):
        """View angles in degrees, (numAngles,) float32."""
        g = self._need_geometry()
        if g["geometry"] == "modular":
            return np.rad2deg(self.core_geometry().view_angles()).astype(np.float32)
        return np.array(g["phis"], dtype=np.float32)

    get_phis = get_angles

    def get_angularRange(self):
        """Angular range in degrees, counting half a step at either end (as LEAP)."""
        from ..weights import angular_range
        return angular_range(self.get_angles())

    def get_sourcePositions(self):
        return self._modular_field("source_positions")

    def get_moduleCenters(self):
        return self._modular_field("module_centers")

    def get_rowVectors(self):
        return self._modular_field("row_vectors")

    def get_colVectors(self):
        return self._modular_field("col_vectors")

    def _modular_field(self, name):
        geo = self.core_geometry()
        if not isinstance(geo, ModularBeam):
            return None
        return np.array(getattr(geo, name), dtype=np.float32)

    # --------------------------------------------------------------- arrays
    def get_projection_dim(self):
        """Projection array shape ``(numAngles, numRows, numCols)``."""
        g = self._need_geometry()
        return (g["numAngles"], g["numRows"], g["numCols"])

    def get_volume_dim(self):
        """Volume array shape ``(numZ, numY, numX)``."""
        v = self._need_volume()
        return (v["numZ"], v["numY"], v["numX"])

    def allocate_projections(self, val=0.0, astensor=False):
        """A float32 projection array filled with ``val``."""
        return self._allocate(self.get_projection_dim(), val, astensor)

    def allocate_volume(self, val=0.0, astensor=False):
        """A float32 volume array filled with ``val``."""
        return self._allocate(self.get_volume_dim(), val, astensor)

    allocateProjections = allocate_projections
    allocateVolume = allocate_volume

    def allocateData(self, x, val=0.0):
        return np.full_like(x, val)

    def copyData(self, x):
        return x.copy()

    @staticmethod
    def _allocate(shape, val, astensor):
        if astensor:
            import torch
            return torch.full(shape, float(val), dtype=torch.float32)
        return np.full(shape, val, dtype=np.float32)

    # ---------------------------------------------------------- operators
    def project(self, g, f):
        """Forward projection of ``f`` (numZ, numY, numX) into ``g`` (numAngles, numRows, numCols).

        ``g`` is overwritten and returned (LEAP's output-first convention). With a volume
        mask set (:meth:`set_volume_mask`), ``f · mask`` is projected; ``f`` is unchanged.
        """
        return self.system.project(f, out=g)

    def backproject(self, g, f):
        """Back-projection (exact transpose of :meth:`project`) of ``g`` into ``f``; returns
        ``f`` (times the volume mask, when one is set)."""
        return self.system.backproject(g, out=f)

    project_cpu = project
    backproject_cpu = backproject
    # LEAP's *_gpu variants expect data already on a GPU; leap dispatches on the array
    # kind (CuPy, torch CUDA, __cuda_array_interface__), so they are the same methods.
    project_gpu = project
    backproject_gpu = backproject

    def allocate_projections_gpu(self, val=0.0):
        """Projections as a float32 torch tensor on GPU ``get_gpu()`` (LEAP's
        ``allocateProjections_gpu``); needs torch with CUDA."""
        return self._allocate_gpu(self.get_projection_dim(), val)

    def allocate_volume_gpu(self, val=0.0):
        """A volume as a float32 torch tensor on GPU ``get_gpu()``; needs torch with CUDA."""
        return self._allocate_gpu(self.get_volume_dim(), val)

    allocateProjections_gpu = allocate_projections_gpu
    allocateVolume_gpu = allocate_volume_gpu

    def _allocate_gpu(self, shape, val):
        try:
            import torch
        except ImportError as exc:
            raise RuntimeError("GPU allocation returns torch tensors: install torch") from exc
        if not torch.cuda.is_available():
            raise RuntimeError("no CUDA device is available to torch; use allocate_projections / "
                               "allocate_volume for CPU arrays")
        dev = max(self.get_gpu(), 0)
        return torch.full(tuple(shape), float(val), dtype=torch.float32, device=f"cuda:{dev}")

    def verify_inputs(self, g, f):
        """Check that ``g`` (numAngles, numRows, numCols) and ``f`` (numZ, numY, numX) are
        float32 C-contiguous arrays of one kind matching the geometry and volume; returns
        True or raises with what was expected (LEAP prints and returns False)."""
        from .. import arrays
        if type(g) is not type(f):
            raise TypeError(f"g and f must be arrays of the same kind, got {type(g).__name__} "
                            f"and {type(f).__name__}")
        for name, x, shape in (("g", g, self.get_projection_dim()),
                               ("f", f, self.get_volume_dim())):
            if arrays.is_cuda_array(x):
                arrays.check_cuda_array(name, x, tuple(shape))
            else:
                _validate.check_array(name, x, tuple(shape))
        return True

    def get_volumeDimensionOrder(self):
        """1: volumes are (numZ, numY, numX), LEAP's default and leap's only order."""
        return 1

    def set_volumeDimensionOrder(self, which):
        """Only LEAP's default order, 1 (ZYX: arrays (numZ, numY, numX)), is supported."""
        if which in (1, "ZYX", "zyx"):
            return True
        raise ValueError(f"leap stores volumes as (numZ, numY, numX) only (order 1, 'ZYX'); "
                         f"got {which!r} — transpose XYZ arrays with f.transpose(2, 1, 0)")

    def include_cufft(self):
        """Whether GPU FFTs are available: leap filters on the GPU with CuPy's FFT."""
        try:
            import cupy  # noqa: F401
        except ImportError:
            return False
        return self.number_of_gpus() > 0

    # -------------------------------------------------------------- devices
    def number_of_gpus(self):
        """Number of CUDA GPUs leap can use (0 without a CUDA driver)."""
        from ..gpu import device_count
        return device_count()

    def set_maxSlicesForChunking(self, N):
        """Largest chunk (volume slices per slab, views per view chunk) when NumPy data are
        processed on the GPU; 0 or None lets free GPU memory decide."""
        if N is None or N == 0:
            self._max_slices = None
            return True
        n = _as_int("N", N)
        if n < 0:
            raise ValueError(f"N must be >= 0, got {n}")
        self._max_slices = n
        return True

    def set_gpu(self, which):
        """Choose the device: -1 for the CPU, or a GPU index."""
        return self.set_gpus([which])

    set_GPU = set_gpu

    def set_gpus(self, listOfGPUs):
        """Choose devices (a list of GPU indices, or [-1] for the CPU)."""
        ids = [int(i) for i in np.atleast_1d(listOfGPUs)]
        if not ids:
            raise ValueError("set_gpus needs at least one device index (-1 = CPU)")
        if ids != [-1]:
            if any(i < 0 for i in ids):
                raise ValueError(f"GPU indices must be >= 0 (or [-1] alone for the CPU), got {ids}")
            n = self.number_of_gpus()
            if n == 0:
                warnings.warn("no CUDA GPU is available: leap runs on the CPU (set_gpu(-1))",
                              RuntimeWarning, stacklevel=2)
                ids = [-1]
            elif max(ids) >= n:
                raise ValueError(f"GPU index {max(ids)} does not exist: {n} GPU(s) found")
        self._gpus = ids
        return True

    set_GPUs = set_gpus

    def set_all_gpus(self):
        n = self.number_of_gpus()
        return self.set_gpus(list(range(n)) if n else [-1])

    def get_gpu(self):
        return self._gpus[0]

    get_GPU = get_gpu

    def get_gpus(self):
        return list(self._gpus)

    # ------------------------------------------------------------ printing
    def print_parameters(self):
        """Print the geometry and volume, in LEAP's layout."""
        print(self._parameters_text())

    printParameters = print_parameters
    print_param = print_parameters

    def _parameters_text(self):
        lines = [""]
        g = self._geom
        if g is not None:
            kind = g["geometry"]
            title = {"parallel": "Parallel-Beam", "fan": "Fan-Beam", "cone": "Cone-Beam",
                     "modular": "Modular-Beam", "cone_parallel": "Cone-Parallel"}[kind]
            curved = " (curved detector)" if g["detectorType"] == "curved" else ""
            lines.append(f"======== CT {title} Geometry{curved} ========")
            lines.append(f"number of angles: {g['numAngles']}")
            lines.append(f"number of detector elements (rows, cols): {g['numRows']} x {g['numCols']}")
            if g["numAngles"] >= 2 and kind != "modular":
                a = np.asarray(g["phis"], dtype=np.float64)
                sign = "-" if a[-1] < a[0] else ""
                lines.append(f"angular range: {sign}{self.get_angularRange():f} degrees")
            lines.append(f"detector pixel size: {g['pixelHeight']:f} mm x {g['pixelWidth']:f} mm")
            if self._axis_of_symmetry is not None:
                lines.append(f"axis of symmetry = {self._axis_of_symmetry:f} degrees")
            if kind != "modular":
                lines.append(f"center detector pixel: {g['centerRow']:f}, {g['centerCol']:f}")
            if kind in ("fan", "cone", "cone_parallel"):
                lines.append(f"sod = {g['sod']:f} mm")
                lines.append(f"sdd = {g['sdd']:f} mm")
                if g["tau"] != 0.0:
                    lines.append(f"tau = {g['tau']:f} mm")
            if kind == "modular":
                sod, sdd = self.core_geometry().mean_distances()
                lines.append(f"mean sod = {sod:f} mm")
                lines.append(f"mean sdd = {sdd:f} mm")
            if kind == "cone":
                lines.append(f"tiltAngle = {g['tiltAngle']:f} degrees")
            if kind in ("cone", "cone_parallel"):
                if g["helicalPitch"] != 0.0:
                    lines.append(f"helicalPitch = {g['helicalPitch']:f} (mm/radian)")
                    lines.append(f"normalized helicalPitch = {self.get_normalizedHelicalPitch():f}")
            lines.append("")
        if self._vol is not None:
            v = self._vol
            lines.append("======== CT Volume ========")
            lines.append(f"number of voxels (x, y, z): {v['numX']} x {v['numY']} x {v['numZ']}")
            lines.append(f"voxel size: {v['voxelWidth']:f} mm x {v['voxelWidth']:f} mm x "
                         f"{v['voxelHeight']:f} mm")
            if any(v[k] != 0.0 for k in ("offsetX", "offsetY", "offsetZ")):
                lines.append(f"volume offset: {v['offsetX']:f} mm, {v['offsetY']:f} mm, "
                             f"{v['offsetZ']:f} mm")
            if g is not None:
                cv = self.core_volume()
                ext = []
                for c0, n, d in ((cv.x0, cv.num_x, cv.voxel_width), (cv.y0, cv.num_y, cv.voxel_width),
                                 (cv.z0, cv.num_z, cv.voxel_height)):
                    ext.append(f"[{c0 - 0.5 * d:f}, {c0 + (n - 0.5) * d:f}]")
                lines.append("FOV: " + " x ".join(ext))
            lines.append("")
        lines.append("======== Processing Settings ========")
        if self._gpus == [-1]:
            lines.append(f"{os.cpu_count()}-core CPU processing")
        else:
            lines.append(f"GPU processing on device(s) {self._gpus}")
        lines.append("")
        return "\n".join(lines)

    # ------------------------------------------------------------ param files
    def save_param(self, fileName):
        """Write the geometry and volume to a LEAP parameter file."""
        from ..io import write_param_file
        d = {}
        if self._vol is not None:
            d.update(self._vol)
        g = self._need_geometry()
        d.update({k: v for k, v in g.items() if k not in ("phis",)})
        if g["geometry"] != "modular":
            d["phis"] = np.asarray(g["phis"], dtype=np.float64)
            d["angularRange"] = self.get_angularRange() * (1 if g["phis"][-1] >= g["phis"][0] else -1)
            d.setdefault("tau", 0.0)
            d.setdefault("tiltAngle", 0.0)
            d.setdefault("helicalPitch", 0.0)
            d.setdefault("sod", 0.0)
            d.setdefault("sdd", 0.0)
        else:
            d["sod"], d["sdd"] = self.core_geometry().mean_distances()
        if self._offset_scan:
            d["offsetScan"] = True
        if self._axis_of_symmetry is not None:
            d["axisOfSymmetry"] = self._axis_of_symmetry
        if self._mu_coeff != 0.0 and self._mu_radius > 0.0:   # a voxelised map is not saved
            d["muCoeff"], d["muRadius"] = self._mu_coeff, self._mu_radius
        write_param_file(fileName, d)
        return True

    save_parameters = save_param

    def load_param(self, fileName, param_type=0):
        """Read LEAP parameters (geometry and, when present, volume): from a parameter
        file (``param_type`` 0; current or legacy key names) or, with ``param_type`` 1,
        from a dict of a file's keys and values (:meth:`parse_param_dic`)."""
        from ..io import read_param_dict, read_param_file
        if param_type not in (0, 1):
            raise ValueError(f"param_type must be 0 (a parameter file) or 1 (a dict of its "
                             f"keys and values), got {param_type!r}")
        d = read_param_file(fileName) if param_type == 0 else read_param_dict(fileName)
        kind = d["geometry"]
        common = (d["numAngles"], d["numRows"], d["numCols"], d["pixelHeight"], d["pixelWidth"])
        if kind == "modular":
            self.set_modularbeam(*common, d["sourcePositions"], d["moduleCenters"],
                                 d["rowVectors"], d["colVectors"])
        else:
            centers = (d["centerRow"], d["centerCol"], d["phis"])
            if kind == "parallel":
                self.set_parallelbeam(*common, *centers)
            elif kind == "fan":
                self.set_fanbeam(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0))
            elif kind == "cone":
                self.set_conebeam(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0),
                                  d.get("helicalPitch", 0.0), d.get("tiltAngle", 0.0))
                if d.get("detectorType", "flat") == "curved":
                    self.set_curvedDetector()
            elif kind == "cone_parallel":
                self.set_coneparallel(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0),
                                      d.get("helicalPitch", 0.0))
            else:
                raise ValueError(f"{fileName}: geometry '{kind}' is not supported by leap "
                                 "(supported: parallel, fan, cone, cone_parallel, modular)")
        self._offset_scan = bool(d.get("offsetScan", False))
        if "axisOfSymmetry" in d:
            self.set_axisOfSymmetry(d["axisOfSymmetry"])
        if d.get("muCoeff", 0.0) != 0.0 and d.get("muRadius", 0.0) > 0.0:
            self.set_cylindircalAttenuationMap(d["muCoeff"], d["muRadius"])
        if all(k in d for k in ("numX", "numY", "numZ", "voxelWidth", "voxelHeight")):
            self.set_volume(d["numX"], d["numY"], d["numZ"], d["voxelWidth"], d["voxelHeight"],
                            d.get("offsetX", 0.0), d.get("offsetY", 0.0), d.get("offsetZ", 0.0))
        return True

    load_parameters = load_param
    load_param_legacy = load_param   # the reader takes LEAP's legacy key names too

    def parse_param_dic(self, param_fn):
        """A parameter file's ``key = value`` lines as a dict (numbers as floats, lists
        and names as strings), LEAP's format for ``load_param(d, param_type=1)``."""
        from ..io.params import read_param_entries
        return read_param_entries(param_fn)

    # ------------------------------------------------------------- utilities
    def expNeg(self, x):
        """``x ← exp(−x)`` in place (attenuation → transmission); returns x."""
        from ..arrays import exp_neg
        return exp_neg(x)

    def negLog(self, x, gray_value=1.0):
        """``x ← −log(x / gray_value)`` in place (transmission → attenuation); returns x."""
        from ..arrays import neg_log
        return neg_log(x, _as_float("gray_value", gray_value))

    def optimalFFTsize(self, N):
        """LEAP's FFT length for N samples: the smallest 2^a·3^b ≥ N with a ≥ 1 (2 for N ≤ 2)."""
        from ..filters import optimal_fft_size
        return optimal_fft_size(_as_int("N", N))

    def set_projector(self, which="SF"):
        """Projector model. leap has one, LEAP's separable footprint ('SF'), with its exact
        transpose as back-projector; 'VD' (LEAP's approximate voxel-driven back-projector)
        is accepted for script compatibility and keeps the matched SF pair."""
        w = str(which).upper()
        if w not in ("SF", "VD"):
            raise ValueError(f"projector must be 'SF' or 'VD', got {which!r}")
        if w == "VD":
            warnings.warn("leap back-projects with the matched separable-footprint model ('SF'); "
                          "'VD' is accepted for compatibility and changes nothing",
                          RuntimeWarning, stacklevel=2)
        return True

    def get_projector(self):
        return "SF"

    # ------------------------------------------------------------- logging
    print_cost = False
    print_warnings = True

    def _set_log(self, level, cost, warn):
        import logging
        logging.getLogger("leap").setLevel(level)
        self.print_cost, self.print_warnings = cost, warn
        return True

    def set_log_error(self):
        """Only errors are reported."""
        import logging
        return self._set_log(logging.ERROR, False, False)

    def set_log_warning(self):
        """Errors and warnings (the default)."""
        import logging
        return self._set_log(logging.WARNING, False, True)

    def set_log_status(self):
        """Also status messages, such as the cost at every iteration."""
        import logging
        return self._set_log(logging.INFO, True, True)

    def set_log_debug(self):
        """Everything."""
        import logging
        return self._set_log(logging.DEBUG, True, True)

    # ------------------------------------------------------------- cropping
    def crop_projections(self, rowRange, colRange=None, g=None):
        """Keep detector rows ``rowRange = [first, last]`` and columns ``colRange`` (inclusive;
        None keeps all) and update the geometry to match (parallel and fan beams: also the
        volume, one slice per kept row, as LEAP). Returns the cropped copy of ``g`` when
        given, else None."""
        geo = self._need_geometry()
        rows = self._index_range("rowRange", rowRange, geo["numRows"])
        cols = self._index_range("colRange", colRange, geo["numCols"])
        if g is not None:
            _validate.check_array("g", g, self.get_projection_dim())
        new = self.core_geometry().cropped(rows[0], rows[1] + 1, cols[0], cols[1] + 1)
        d = new.detector
        changes = dict(numRows=d.num_rows, numCols=d.num_cols, centerRow=d.center_row,
                       centerCol=d.center_col)
        if hasattr(new, "module_centers"):
            changes["moduleCenters"] = new.module_centers.astype(np.float32)
        self._update(**changes)
        if rowRange is not None and geo["geometry"] in ("parallel", "fan") and self._vol:
            # As LEAP: parallel/fan slices follow the rows, one slice per kept row.
            self.set_volume(**dict(self._vol, numZ=changes["numRows"], offsetZ=0.0))
        if g is None:
            return None
        return np.ascontiguousarray(g[:, rows[0]:rows[1] + 1, cols[0]:cols[1] + 1], dtype=np.float32)

    cropProjections = crop_projections

    def cropRows(self, rowRange, g=None):
        return self.crop_projections(rowRange, None, g)

    def cropCols(self, colRange, g=None):
        return self.crop_projections(None, colRange, g)

    crop_rows = cropRows
    crop_cols = cropCols

    @staticmethod
    def _index_range(name, r, n):
        if r is None:
            return 0, n - 1
        r = [int(v) for v in np.asarray(r).ravel()]
        if len(r) != 2 or not 0 <= r[0] <= r[1] <= n - 1:
            raise ValueError(f"{name} must be [first, last] with 0 <= first <= last <= {n - 1}, got {r}")
        return r[0], r[1]

    # ------------------------------------------------------- copies and chunks
    def copy_parameters(self, leapct):
        """Copy geometry, volume, options and phantom from another tomographicModels."""
        import copy
        if not isinstance(leapct, tomographicModels):
            raise TypeError(f"copy_parameters needs a tomographicModels, got {type(leapct).__name__}")
        for key, value in vars(leapct).items():
            if key != "param_id":
                setattr(self, key, copy.deepcopy(value))
        return True

    def rowRangeNeededForBackprojection(self, iz=None):
        """``[first, last]`` detector rows that back-projecting into the current volume
        (or, with ``iz``, into its slice ``iz``; out of range: the middle slice) needs —
        LEAP's bounds, a (2,) int32 array. Parallel and fan beams: all rows, or row
        ``iz``; geometries with no simple bound: all rows."""
        nz = self._need_volume()["numZ"]
        if iz is not None:
            iz = int(iz) if 0 <= int(iz) < nz else nz // 2
        first, last = (0, nz - 1) if iz is None else (iz, iz)
        if iz is None and self._need_geometry()["geometry"] in ("parallel", "fan"):
            return np.array([0, self.get_numRows() - 1], dtype=np.int32)
        return np.array(self._row_range_for_slices(first, last), dtype=np.int32)
