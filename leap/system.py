"""``CTSystem``: everything a projector needs, in one immutable value.

Every front end (the LEAP facade :class:`leap.compat.model.tomographicModels`, the torch
modules, the Dask layer) hands its problem to the core as a :class:`CTSystem` and calls
its four maps, so a setting made anywhere reaches every front end alike:

=================  ===============================  ===============================
method             input                            output
=================  ===============================  ===============================
``project``        volume (num_z, num_y, num_x)      projections (num_angles, num_rows,
                                                      num_cols)
``backproject``    projections                       volume (exact transpose of project)
``fbp``            projections                       volume (attenuation units, 1/mm)
``fbp_adjoint``    volume                            projections (exact transpose of fbp)
=================  ===============================  ===============================

Arrays are float32 and C-contiguous: NumPy arrays run on the CPU (or on the GPUs in
``devices``), CUDA arrays (CuPy, torch CUDA) on their own GPU. ``out`` is optional and
returned when given.

What a system holds:

* ``geometry`` (any :mod:`leap.geometry` scan geometry) and ``volume``;
* ``model``: the forward model, ``None`` for the X-ray transform, :class:`Symmetric`
  for a rotationally symmetric object, :class:`Attenuated` for the attenuated Radon
  transform;
* ``fov_radius``: the field of view, mm (None: the geometry's own, widened for an
  offset-detector scan); ``mask``: a volume mask (LEAP's ``set_volume_mask``), applied
  to volumes before projection and after back-projection, so the pair stays matched;
* ``fbp_options`` (:class:`FBPOptions`) and the device choice (``devices``,
  ``max_slices``).

Changes give a new system (:meth:`CTSystem.with_changes`); subsets of views
(:meth:`CTSystem.views`) and slabs of slices (:meth:`CTSystem.slab`), with the detector
rows and views a slab touches (:meth:`CTSystem.rows_needed`,
:meth:`CTSystem.views_needed`), let a front end cut a problem into independent pieces.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from . import operators
from .geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from .geometry import ranges as _ranges

_GEOMETRIES = (ParallelBeam, FanBeam, ConeBeam, ConeParallelBeam, ModularBeam)


@dataclass(frozen=True)
class FBPOptions:
    """Options of filtered back-projection (LEAP's ``set_rampFilter``, ``set_FBPlowpass``,
    ``set_offsetScan``, ``set_truncatedScan``).

    Attributes
    ----------
    ramp_filter : int
        LEAP's ramp filter order 0..12 (2 = Shepp–Logan, 12 = Ram–Lak).
    window : str
        Extra apodisation window of :data:`leap.reconstruction.filters.WINDOWS` ('none',
        'hann', …).
    lowpass : float
        LEAP's FBPlowpass, FWHM of a low-pass filter in detector pixels (< 2: none).
    offset_scan : bool
        The detector covers one side of the axis (half-fan weights).
    truncated_scan : bool
        The projections are truncated (edge extrapolation in the filter).
    helical_window : float or None
        Helical scans only: δ, the half-width (radians, in (0, π/2]) of the taper of the
        view weights (:func:`leap.reconstruction.fbp.helical_slice_weights`); None: as wide as the
        detector allows (:func:`leap.reconstruction.fbp.helical_window`).
    """

    ramp_filter: int = 2
    window: str = "none"
    lowpass: float = 1.0
    offset_scan: bool = False
    truncated_scan: bool = False
    helical_window: float | None = None

    def __post_init__(self):
        if self.helical_window is not None:
            d = float(self.helical_window)
            if not 0 < d <= 0.5 * np.pi + 1e-12:
                raise ValueError(f"helical_window must be in (0, pi/2] radians, got "
                                 f"{self.helical_window}")
            object.__setattr__(self, "helical_window", d)

    def as_kwargs(self) -> dict:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Symmetric:
    """A rotationally symmetric object (LEAP ``set_axisOfSymmetry``): its axis is tilted
    ``axis_deg`` degrees from +z; the volume is (num_z, num_y, 1), y the signed radius."""

    axis_deg: float


@dataclass(frozen=True, eq=False)
class Attenuated:
    """The attenuated Radon transform (parallel beams): attenuation map ``map`` (a
    :class:`leap.reconstruction.special_models.AttenuationMap`, voxelised or a cylinder)."""

    map: object


@dataclass(frozen=True, kw_only=True, eq=False)
class CTSystem:
    """A CT problem: geometry, volume, forward model, field of view, mask, FBP options and
    device choice (see the module docstring). Immutable."""

    geometry: object
    volume: Volume
    model: Symmetric | Attenuated | None = None
    fov_radius: float | None = None
    mask: object = None
    fbp_options: FBPOptions = FBPOptions()
    devices: tuple | None = None
    max_slices: int | None = None

    def __post_init__(self):
        if not isinstance(self.geometry, _GEOMETRIES):
            raise TypeError("geometry must be a ParallelBeam, FanBeam, ConeBeam, ConeParallelBeam "
                            f"or ModularBeam, got {type(self.geometry).__name__}")
        if not isinstance(self.volume, Volume):
            raise TypeError(f"volume must be a Volume, got {type(self.volume).__name__}")
        if self.model is not None and not isinstance(self.model, (Symmetric, Attenuated)):
            raise TypeError(f"model must be None, Symmetric or Attenuated, got {self.model!r}")
        if self.fov_radius is not None:
            r = float(self.fov_radius)
            if not r > 0:
                raise ValueError(f"fov_radius must be a positive number of mm, got {self.fov_radius}")
            object.__setattr__(self, "fov_radius", r)
        if self.mask is not None and tuple(self.mask.shape) != self.volume.shape:
            raise ValueError(f"mask must have the volume's shape {self.volume.shape}, "
                             f"got {tuple(self.mask.shape)}")
        if not isinstance(self.fbp_options, FBPOptions):
            raise TypeError(f"fbp_options must be an FBPOptions, got {type(self.fbp_options).__name__}")
        if self.devices is not None:
            object.__setattr__(self, "devices", tuple(int(d) for d in self.devices))

    def __repr__(self):
        parts = [type(self.geometry).__name__, f"projections={self.projection_shape}",
                 f"volume={self.volume_shape}"]
        if self.model is not None:
            parts.append(f"model={type(self.model).__name__}")
        if self.fov_radius is not None:
            parts.append(f"fov_radius={self.fov_radius:g}")
        if self.mask is not None:
            parts.append("masked")
        return f"CTSystem({', '.join(parts)})"

    def with_changes(self, **changes) -> "CTSystem":
        """A copy with some fields replaced (validated again)."""
        return dataclasses.replace(self, **changes)

    # ----------------------------------------------------------------- shapes
    @property
    def projection_shape(self) -> tuple:
        """(num_angles, num_rows, num_cols)."""
        return tuple(self.geometry.projection_shape)

    @property
    def volume_shape(self) -> tuple:
        """(num_z, num_y, num_x)."""
        return tuple(self.volume.shape)

    # ---------------------------------------------------------- field of view
    def fov(self) -> float:
        """The field-of-view radius (mm) of LEAP's ``rFOV``: ``fov_radius`` when set,
        else the geometry's own (its farther detector side for an offset scan; inf
        where there is none)."""
        if self.fov_radius is not None:
            return self.fov_radius
        return self.geometry.fov_radius(offset_scan=self.fbp_options.offset_scan)

    def _projector_fov(self) -> float | None:
        """The radius the projectors mask with: ``fov_radius``, or for an offset scan the
        farther side's; None leaves the projectors their geometry's own."""
        if self.fov_radius is not None:
            return self.fov_radius
        if self.fbp_options.offset_scan:
            r = self.geometry.fov_radius(offset_scan=True)
            if not r > 0:
                raise ValueError("an offset scan needs a detector that reaches past the rotation "
                                 "axis, but this geometry's field of view has radius 0 mm; check "
                                 "centerCol and tau, or turn the offset scan off")
            return r
        return None

    # ------------------------------------------------------------------- maps
    def _devices(self) -> dict:
        if self.devices is None:
            return {}
        return dict(devices=list(self.devices), max_slices=self.max_slices)

    def _masked(self, f):
        """``f · mask`` (a new array) when a mask of ``f``'s array type is set; else f."""
        if self.mask is None or type(f) is not type(self.mask):
            return f
        return f * self.mask

    def _apply_mask(self, f):
        if self.mask is not None and type(f) is type(self.mask):
            f *= self.mask
        return f

    def _special(self):
        from .reconstruction import special_models
        return special_models

    def project(self, f, out=None):
        """Forward projection ``P M f`` (M the mask): volume → projections."""
        f = self._masked(f)
        fov = self._projector_fov()
        if isinstance(self.model, Symmetric):
            return self._special().symmetric_project(self.geometry, self.volume, f,
                                                     self.model.axis_deg, out=out)
        if isinstance(self.model, Attenuated):
            return self._special().attenuated_project(self.geometry, self.volume, f,
                                                      self.model.map, out=out, fov_radius=fov)
        return operators.project(self.geometry, self.volume, f, out=out, fov_radius=fov,
                                 **self._devices())

    def backproject(self, g, out=None):
        """Back-projection ``M Pᵀ g``, the exact transpose of :meth:`project`."""
        fov = self._projector_fov()
        if isinstance(self.model, Symmetric):
            f = self._special().symmetric_backproject(self.geometry, self.volume, g,
                                                      self.model.axis_deg, out=out)
        elif isinstance(self.model, Attenuated):
            f = self._special().attenuated_backproject(self.geometry, self.volume, g,
                                                       self.model.map, out=out, fov_radius=fov)
        else:
            f = operators.backproject(self.geometry, self.volume, g, out=out, fov_radius=fov,
                                      **self._devices())
        return self._apply_mask(f)

    def fbp(self, g, out=None):
        """Filtered back-projection of ``g`` (FDK for cone beams; the symmetric-object and
        attenuated inversions for those models), in attenuation units."""
        o = self.fbp_options
        if isinstance(self.model, Symmetric):
            return self._special().symmetric_fbp(
                self.geometry, self.volume, g, self.model.axis_deg, out=out,
                ramp_filter=o.ramp_filter, lowpass=o.lowpass, window=o.window)
        if isinstance(self.model, Attenuated):
            return self._special().attenuated_fbp(self.geometry, self.volume, g, self.model.map,
                                                  out=out, fov_radius=self._projector_fov())
        from .reconstruction.fbp import fbp
        return fbp(self.geometry, self.volume, g, out=out, fov_radius=self.fov_radius,
                   **o.as_kwargs(), **self._devices())

    def fbp_adjoint(self, f, out=None):
        """The exact transpose of :meth:`fbp` (X-ray transform only)."""
        if self.model is not None:
            raise NotImplementedError(
                f"the transpose of FBP is not available for the {type(self.model).__name__} "
                "model; use the X-ray transform (no attenuation map, no axis of symmetry)")
        from .reconstruction.fbp import fbp_adjoint
        return fbp_adjoint(self.geometry, self.volume, f, out=out, fov_radius=self.fov_radius,
                           **self.fbp_options.as_kwargs(), **self._devices())

    def operator(self) -> "SystemOperator":
        """This system's projection as a linear operator (see :class:`SystemOperator`)."""
        return SystemOperator(self)

    # ---------------------------------------------------------------- subsets
    def views(self, idx) -> "CTSystem":
        """The system of some views (an int, slice or index array) with the same volume."""
        return self.with_changes(geometry=self.geometry[idx])

    def slab(self, z0: int, z1: int) -> "CTSystem":
        """The system of volume slices ``z0:z1`` (0 ≤ z0 < z1 ≤ num_z): the same scan,
        a volume of z1 − z0 slices at their place in z. The mask and a voxelised
        attenuation map are cut alike."""
        v = self.volume
        z0, z1 = int(z0), int(z1)
        if not 0 <= z0 < z1 <= v.num_z:
            raise ValueError(f"slab needs 0 <= z0 < z1 <= num_z = {v.num_z}, got z0={z0}, z1={z1}")
        centre = v.z0 + 0.5 * (z0 + z1 - 1) * v.voxel_height
        changes = dict(volume=v.with_changes(num_z=z1 - z0, offset_z=centre))
        if self.mask is not None:
            changes["mask"] = self.mask[z0:z1]
        if isinstance(self.model, Attenuated) and self.model.map.mu is not None:
            from .reconstruction.special_models import AttenuationMap
            changes["model"] = Attenuated(AttenuationMap(mu=self.model.map.mu[z0:z1]))
        return self.with_changes(**changes)

    def rows_needed(self) -> tuple[int, int]:
        """``(first, stop)``: the detector rows this system's volume projects into (and
        back-projection reads), as a half-open range; conservative (LEAP's bounds)."""
        lo, hi = _ranges.row_range(self.geometry, self.volume, self.fov())
        return lo, hi + 1

    def views_needed(self) -> tuple[int, int]:
        """``(first, stop)``: the views whose rays reach this system's volume (helical
        scans skip the others), half-open; conservative."""
        lo, hi = _ranges.view_range(self.geometry, self.volume, self.fov())
        return max(0, lo), min(self.geometry.num_angles, hi + 1)

    def part(self, z0: int, z1: int, *, for_fbp: bool = False) -> tuple["CTSystem", slice, slice]:
        """The piece of this problem that volume slices ``z0:z1`` make, for front ends that
        cut a problem into independent tasks: ``(system, views, rows)``.

        ``system`` is :meth:`slab` ``(z0, z1)`` on the detector rows ``rows`` and the views
        ``views`` (slices of the projection axes) that the slab touches
        (:meth:`rows_needed`, :meth:`views_needed`), so that

        * ``system.project(f[z0:z1])`` is the slab's share of ``project(f)[views, rows]``
          (the projection of f is the sum of the shares of its slabs);
        * ``system.backproject(g[views, rows])`` is ``backproject(g)[z0:z1]``;
        * with ``for_fbp``, ``system.fbp(g[views, rows])`` is ``fbp(g)[z0:z1]``: every
          view is kept, except for helical scans with equal angular steps, whose view
          weights do not depend on the views left out, and the helical taper is pinned
          to the whole detector's (:attr:`FBPOptions.helical_window`).

        Equal to float rounding: the kernels see the same rays on a cropped detector.
        """
        sub = self.slab(z0, z1)
        r0, r1 = sub.rows_needed()
        v0, v1 = sub.views_needed()
        options = self.fbp_options
        helical = bool(getattr(self.geometry, "is_helical", False))
        if for_fbp and helical and options.helical_window is None \
                and hasattr(self.geometry, "normalized_helical_pitch"):
            from .reconstruction.fbp import helical_window
            options = dataclasses.replace(options, helical_window=helical_window(self.geometry))
        if for_fbp and not (helical and _equal_steps(self.geometry.view_angles())):
            v0, v1 = 0, self.geometry.num_angles
        if for_fbp:
            # A tilted detector's FBP resamples each view upright first; its taps reach a
            # few rows beyond those the slab's rays touch.
            from .reconstruction.tilt_resampling import fbp_row_reach
            reach = fbp_row_reach(self.geometry)
            r0, r1 = max(0, r0 - reach), min(self.geometry.detector.num_rows, r1 + reach)
        nc = self.geometry.detector.num_cols
        geometry = self.geometry[v0:v1].cropped(r0, r1, 0, nc)
        return (sub.with_changes(geometry=geometry, fbp_options=options),
                slice(v0, v1), slice(r0, r1))


def _equal_steps(angles) -> bool:
    """Whether successive view angles are equally spaced (to float rounding)."""
    steps = np.diff(np.asarray(angles, dtype=np.float64))
    return steps.size == 0 or bool(np.allclose(steps, steps[0], rtol=1e-9, atol=1e-12))


class SystemOperator:
    """The projection ``P`` of a :class:`CTSystem` as a linear operator.

    For :mod:`leap.algorithms`: ``forward(f, out=None)`` and ``adjoint(g, out=None)`` on
    3-D arrays, ``domain_shape``/``range_shape``, ``num_views``, ``subset(views)`` and
    ``fbp``. As a matrix, the conventions of ``scipy.sparse.linalg.LinearOperator``
    (and of pylops and ODL, which follow them): ``shape`` (number of projection values,
    number of voxels), ``dtype`` (float32), ``op @ x`` and ``op(x)`` on a flat vector
    (length ``shape[1]``: a flat result), a 2-D array of such columns (``shape[1]``,
    k) or an array of ``domain_shape`` (an array of ``range_shape``), ``x @ op`` for a
    flat ``x`` (``op.T @ x``), ``matvec``/``rmatvec``/``matmat``/``rmatmat``, and
    ``scipy.sparse.linalg.aslinearoperator(op)``. ``.T`` (also ``.H``: the operator is
    real) is the transpose, an operator of the same kind with the roles swapped.

    Flat vectors are NumPy or CuPy arrays; any real dtype is computed in float32 and
    returned in ``result_type(x.dtype, float32)`` (float64 in, float64 out, as scipy's
    solvers expect).
    """

    dtype = np.dtype(np.float32)
    # NumPy defers ``x @ op`` (and any ufunc of op) to op's own methods instead of
    # treating op as an object scalar.
    __array_ufunc__ = None

    def __init__(self, system: CTSystem, transposed: bool = False):
        self.system = system
        self._transposed = transposed

    def __repr__(self):
        return f"SystemOperator({self.system!r}{', transposed' if self._transposed else ''})"

    @property
    def domain_shape(self) -> tuple:
        s = self.system
        return s.projection_shape if self._transposed else s.volume_shape

    @property
    def range_shape(self) -> tuple:
        s = self.system
        return s.volume_shape if self._transposed else s.projection_shape

    @property
    def shape(self) -> tuple:
        return (int(np.prod(self.range_shape)), int(np.prod(self.domain_shape)))

    @property
    def ndim(self) -> int:
        return 2

    @property
    def num_views(self) -> int:
        return int(self.system.geometry.num_angles)

    @property
    def T(self) -> "SystemOperator":
        return SystemOperator(self.system, not self._transposed)

    H = T

    def forward(self, x, out=None):
        s = self.system
        return s.backproject(x, out=out) if self._transposed else s.project(x, out=out)

    def adjoint(self, y, out=None):
        s = self.system
        return s.project(y, out=out) if self._transposed else s.backproject(y, out=out)

    def subset(self, views) -> "SystemOperator":
        """The operator of some views (a slice or an index array)."""
        return SystemOperator(self.system.views(views), self._transposed)

    def fbp(self, g, out=None):
        """FBP of ``g``, an approximate inverse of ``forward`` (RWLS's 'SARR'
        preconditioner)."""
        return self.system.fbp(g, out=out)

    # ------------------------------------------------------ the matrix view
    def __call__(self, x, out=None):
        """``self @ x``; an array of ``domain_shape`` may come with ``out``."""
        if out is not None:
            return self.forward(x, out=out)
        return self @ x

    def __matmul__(self, x):
        if isinstance(x, SystemOperator):
            return NotImplemented
        x = _as_array(x)
        if tuple(x.shape) == tuple(self.domain_shape):
            return self.forward(x)
        if x.ndim == 1 and x.shape[0] == self.shape[1]:
            return self.matvec(x)
        if x.ndim == 2 and x.shape[0] == self.shape[1]:
            return self.matmat(x)
        raise ValueError(f"{self._name()} @ x needs x of shape {tuple(self.domain_shape)}, "
                         f"({self.shape[1]},) or ({self.shape[1]}, k), got {tuple(x.shape)}")

    def __rmatmul__(self, x):
        x = _as_array(x)
        if x.ndim == 1 and x.shape[0] == self.shape[0]:
            return self.rmatvec(x)
        raise ValueError(f"x @ {self._name()} needs a flat x of length {self.shape[0]}, got "
                         f"shape {tuple(x.shape)}")

    dot = __matmul__

    def _name(self) -> str:
        return "op.T" if self._transposed else "op"

    def _flat(self, fn, v, shape, n):
        v = _as_array(v)
        if not hasattr(v, "astype"):
            raise TypeError(f"flat vectors must be NumPy or CuPy arrays, got {type(v).__name__} "
                            f"(pass an array of shape {tuple(shape)} instead)")
        if v.ndim != 1 or v.shape[0] != n:
            raise ValueError(f"expected a flat vector of length {n}, got shape {tuple(v.shape)}")
        if getattr(v.dtype, "kind", "f") not in "fiub":
            raise TypeError(f"expected a real vector, got dtype {v.dtype}")
        y = fn(v.reshape(shape).astype(np.float32, order="C", copy=False)).ravel()
        return y.astype(np.result_type(v.dtype, np.float32), copy=False)

    def matvec(self, x):
        """``forward`` of a flat vector (length ``shape[1]``): a flat vector."""
        return self._flat(self.forward, x, self.domain_shape, self.shape[1])

    def rmatvec(self, y):
        """``adjoint`` of a flat vector (length ``shape[0]``): a flat vector."""
        return self._flat(self.adjoint, y, self.range_shape, self.shape[0])

    def matmat(self, X):
        """``forward`` of each column of ``X`` (``shape[1]``, k): (``shape[0]``, k)."""
        return self._columns(self.matvec, X, self.shape[1], self.shape[0])

    def rmatmat(self, Y):
        """``adjoint`` of each column of ``Y`` (``shape[0]``, k): (``shape[1]``, k)."""
        return self._columns(self.rmatvec, Y, self.shape[0], self.shape[1])

    @staticmethod
    def _columns(fn, X, n, n_out):
        X = _as_array(X)
        if X.ndim != 2 or X.shape[0] != n:
            raise ValueError(f"expected a 2-D array of {n} rows, got shape {tuple(X.shape)}")
        xp = _namespace(X)
        cols = [fn(xp.ascontiguousarray(X[:, k])) for k in range(X.shape[1])]
        if not cols:
            return xp.zeros((n_out, 0), dtype=np.result_type(X.dtype, np.float32))
        return xp.stack(cols, axis=1)


def _as_array(x):
    """``x`` itself if it is a NumPy or CUDA array, else ``np.asarray(x)``."""
    if isinstance(x, np.ndarray) or hasattr(x, "__cuda_array_interface__"):
        return x
    return np.asarray(x)


def _namespace(x):
    if isinstance(x, np.ndarray):
        return np
    import cupy
    return cupy
