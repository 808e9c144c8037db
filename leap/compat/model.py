"""``tomographicModels``: the LEAP-compatible facade.

This class keeps LEAP's method names, argument order, units (degrees, mm) and the
output-first calling convention (``project(g, f)`` fills ``g``). It holds no numerics:
it records the parameters LEAP records, builds the core geometry objects from them
(:mod:`leap.geometry`) and calls the core operators (:mod:`leap.operators`).

Where LEAP prints ``Error:`` and returns ``False``, this class raises an exception that
names what was expected.
"""
from __future__ import annotations

import contextlib
import copy
import itertools

import numpy as np

from ..geometry import ConeBeam, ConeParallelBeam, Detector, FanBeam, ModularBeam, ParallelBeam
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int
from ..geometry._checks import positive_int as _positive_int
from .array_methods import ArrayMixin
from .display_methods import DisplayMixin
from .fbp_methods import FBPMixin
from .geometry_methods import GeometryToolsMixin
from .io_methods import DataIOMixin
from .iterative_methods import IterativeMethodsMixin
from .param_methods import ParameterMixin
from .phantom_methods import PhantomMixin
from .physics_methods import PhysicsMixin
from .preprocessing_methods import PreprocessingMixin
from .rebin_methods import RebinMixin
from .registry import Parameters, library_models, model_id, register, registered
from .special_methods import SpecialModelsMixin

#: Numbers for the facade's states (tomographicModels._version), never reused.
_versions = itertools.count()


class tomographicModels(ArrayMixin, ParameterMixin, RebinMixin, FBPMixin, PhantomMixin,
                        DisplayMixin, DataIOMixin, IterativeMethodsMixin, PreprocessingMixin,
                        GeometryToolsMixin, SpecialModelsMixin, PhysicsMixin):
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
        # param_id None: a new model. An id of a live model: this object works on that
        # model's parameters (LEAP's two Python objects on one library model). Any other
        # id: a new model under that id (LEAP creates model 0 on first use).
        pid = None if param_id is None else model_id(param_id)
        other = None if pid is None else registered(pid)
        if other is not None:
            object.__setattr__(self, "__dict__", other)
            return
        object.__setattr__(self, "__dict__", Parameters())
        self.reset()
        self.param_id = register(vars(self), pid)

    # ---------------------------------------------------------------- models
    # LEAP's library keeps numbered models and each Python object works on one of them
    # (param_id); here a model is the dict of an object's settings (see .registry).
    def __getstate__(self):
        return dict(vars(self))

    def __setstate__(self, state):
        # A copy (copy.deepcopy, pickle) is a new model with the same settings.
        object.__setattr__(self, "__dict__", Parameters(state))
        self.param_id = register(vars(self), None)

    def create_new_model(self):
        """A new model (geometry and volume not set), kept for the life of the process
        as LEAP's library keeps it; returns its id. ``tomographicModels(param_id=id)``
        works on it. This object stays on its own model."""
        params = vars(tomographicModels())
        library_models.append(params)
        return params["param_id"]

    def set_model(self, i=None):
        """LEAP selects model ``i`` (default: this object's) as its library's current
        one before each call (LEAP calls this function "private"). leap keeps no
        library-wide current model: every method works on its object's own model, so
        selecting one changes nothing. Returns True if ``i`` names a live model, as LEAP's
        ids of existing models do; raises ValueError otherwise."""
        pid = self.param_id if i is None else model_id(i)
        if registered(pid) is None:
            raise ValueError(f"model {pid} does not exist: ids come from tomographicModels() "
                             "objects (their param_id) and create_new_model()")
        return True

    def copy_parameters(self, leapct):
        """Copy geometry, volume, options and phantom from another tomographicModels
        (this object keeps its own model id)."""
        if not isinstance(leapct, tomographicModels):
            raise TypeError(f"copy_parameters needs a tomographicModels, got {type(leapct).__name__}")
        for key, value in list(vars(leapct).items()):
            if key not in ("param_id", "_derived"):
                setattr(self, key, copy.deepcopy(value))
        return True

    def test_script(self):
        """LEAP's hook for a developer's test (empty upstream). leap's checks the model it
        is called on: the projector and back-projector of the current geometry and volume
        are matched, ``<P f, g> = <f, Pᵀ g>`` on random non-negative arrays, to 1e-4
        relative. Returns True if so, False otherwise (and logs the mismatch)."""
        import logging
        rng = np.random.default_rng(0)
        s = self.system
        f = rng.random(s.volume_shape, dtype=np.float32)
        g = rng.random(s.projection_shape, dtype=np.float32)
        a = float(np.vdot(s.project(f).astype(np.float64), g))
        b = float(np.vdot(f.astype(np.float64), s.backproject(g)))
        mismatch = abs(a - b) / max(abs(a), abs(b), np.finfo(np.float64).tiny)
        logging.getLogger("leap").info("test_script: <Pf, g> = %.9g, <f, P^T g> = %.9g, "
                                       "relative mismatch %.3g", a, b, mismatch)
        return bool(mismatch <= 1e-4)

    def __setattr__(self, name, value):
        # Every setting lives in an attribute; the core objects derived from them (the
        # geometry, the volume, the CTSystem) are built once per change and cached.
        # _version, unique over the process, names the state: torch.compile guards on it
        # (leap.torch._systems.facade_key) instead of tracing the facade.
        object.__setattr__(self, name, value)
        if name != "_derived":
            object.__setattr__(self, "_derived", {})
            object.__setattr__(self, "_version", next(_versions))

    @contextlib.contextmanager
    def _all_or_nothing(self):
        """Run a block of setter calls as one change: if it raises, every setting (and
        the cache derived from them) is put back as it was before the block."""
        saved = dict(vars(self))
        try:
            yield
        except BaseException:
            state = vars(self)
            state.clear()
            state.update(saved)
            raise

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
        from .._version import __version__
        print(f"leap {__version__}: LEAP-compatible CT projectors in Python (Numba CPU and CUDA back-ends)")

    def version(self):
        from .._version import __version__
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
        tiltAngle : detector rotation about the central ray, degrees (``|tilt| ≤ 5``).
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
        from ..reconstruction.weights import angular_range
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
