"""FBP methods of the LEAP facade: filter choices, field of view, FBP and its adjoint."""
from __future__ import annotations

import numpy as np

from .. import _validate
from ..geometry._checks import finite_float as _as_float
from ..geometry._checks import integer as _as_int


class FBPMixin:
    """``FBP``, ``filterProjections``, ``set_rampFilter`` … of
    :class:`leap.compat.model.tomographicModels` (built on :mod:`leap.reconstruction.fbp`)."""

    def set_rampFilter(self, which):
        """Ramp filter: LEAP's order 0..12 (2 = Shepp–Logan, default; 12 = Ram-Lak), or
        (leap extension) a window name 'hann', 'hamming', 'cosine' on the Ram-Lak ramp."""
        from ..reconstruction.filters import WINDOWS
        if isinstance(which, str):
            if which.lower() not in WINDOWS:
                raise ValueError(f"ramp filter window must be one of {sorted(WINDOWS)}, got {which!r}")
            self._ramp_filter = which.lower()
            return True
        n = _as_int("which", which)
        if not 0 <= n <= 12:
            raise ValueError(f"ramp filter order must be 0..12 (2 = Shepp-Logan, 12 = Ram-Lak), got {n}")
        self._ramp_filter = n
        return True

    def get_rampFilter(self):
        return self._ramp_filter

    def set_FBPlowpass(self, W=1.0):
        """Extra low-pass on the ramp filter, FWHM ``W`` detector pixels (applied for W ≥ 2)."""
        W = _as_float("W", W)
        if W <= 0:
            raise ValueError(f"W must be positive, got {W}")
        self._fbp_lowpass = W
        return True

    def get_FBPlowpass(self):
        return self._fbp_lowpass

    def set_offsetScan(self, aFlag):
        """Offset-detector (half-fan) scan: FBP weights the doubly measured band."""
        self._offset_scan = bool(aFlag)
        return True

    def get_offsetScan(self):
        return self._offset_scan

    def set_truncatedScan(self, aFlag):
        """Truncated projections: FBP extends rows with their edge values before filtering."""
        self._truncated_scan = bool(aFlag)
        return True

    def get_truncatedScan(self):
        return self._truncated_scan

    def set_diameterFOV(self, d):
        """Diameter (mm) of the circular field of view; voxels outside stay 0."""
        d = _as_float("d", d)
        if d <= 0:
            raise ValueError(f"the field-of-view diameter must be positive, got {d}")
        self._fov_diameter = d
        return True

    def get_diameterFOV(self):
        return 2.0 * self._fov_radius()

    def _fov_radius(self):
        """The field-of-view radius the operators mask with (LEAP's rFOV)."""
        if self._fov_diameter is not None:
            return 0.5 * self._fov_diameter
        return self.core_geometry().fov_radius(offset_scan=self._offset_scan)

    def _offset_fov_radius(self):
        """The field-of-view radius (mm) of an offset scan: the farther detector side."""
        r = self.core_geometry().fov_radius(offset_scan=True)
        if not r > 0:
            raise ValueError("set_offsetScan(True) needs a detector that reaches past the rotation "
                             "axis, but this geometry's field of view has radius 0 mm; check "
                             "centerCol and tau, or call set_offsetScan(False)")
        return r

    def fbp_options(self):
        """The keyword options of :func:`leap.reconstruction.fbp.fbp` /
        :func:`leap.reconstruction.fbp.fbp_adjoint` that reproduce this object's :meth:`FBP`
        (ramp filter, window, low-pass, offset and truncated scan, field of view)."""
        order, window = self._ramp_filter, "none"
        if isinstance(order, str):
            order, window = 12, order
        return dict(ramp_filter=order, window=window, lowpass=self._fbp_lowpass,
                    offset_scan=self._offset_scan, truncated_scan=self._truncated_scan,
                    fov_radius=0.5 * self._fov_diameter if self._fov_diameter else None)

    def get_FBPscalar(self):
        """LEAP's FBP scale factor (see :func:`leap.reconstruction.weights.fbp_scale`)."""
        from ..reconstruction.weights import fbp_scale
        return float(fbp_scale(self.core_geometry(), self.core_volume()))

    def FBP(self, g, f=None, inplace=False, *, client=None):
        """Filtered back-projection (FDK for cone beams) of ``g`` into ``f`` (allocated when
        None); returns ``f``. ``g`` is left untouched unless ``inplace=True`` (then it
        holds the filtered projections afterwards, where their shape allows).

        With ``client=`` (a :class:`distributed.Client`, an address, or False for no
        cluster) or a lazy ``g`` (dask array, Zarr, ``'file.h5:/dataset'``, TIFF stack),
        it runs slab by slab on :func:`leap.distributed.fbp` and returns a dask array
        (or fills a NumPy ``f``)."""
        from .dask_dispatch import run, wants_dask
        if wants_dask(client, g, f):
            return run("fbp", self.system, g, f, client)
        if f is None:
            f = self.allocate_volume()
        return self.system.fbp(g, out=f)

    fbp = FBP
    FBP_cpu = FBP
    fbp_cpu = FBP
    # LEAP's *_gpu variants: leap dispatches on the array kind, so they are the same.
    FBP_gpu = FBP
    fbp_gpu = FBP

    def filterProjections(self, g, g_out=None):
        """Apply FBP's weights and ramp filter to ``g`` (in place, or into ``g_out``);
        :meth:`weightedBackproject` of the result gives the FBP reconstruction."""
        from ..reconstruction.fbp import filter_projections
        geo, vol = self.core_geometry(), self.core_volume()
        _validate.check_array("g", g, geo.projection_shape)
        _validate.check_finite("g", g)
        opts = self.fbp_options()
        q, _ = filter_projections(geo, vol, g, ramp_filter=opts["ramp_filter"],
                                  window=opts["window"], lowpass=opts["lowpass"],
                                  truncated_scan=opts["truncated_scan"])
        target = g if g_out is None else g_out
        _validate.check_array("g_out", target, geo.projection_shape)
        target[...] = q
        return target

    filterProjections_cpu = filterProjections
    filterProjections_gpu = filterProjections

    def rampFilterProjections(self, g, scalar=1.0):
        """Ramp-filter the rows of ``g`` in place (no geometric weights), times ``scalar``."""
        from ..reconstruction.fbp import ramp_filter_rows
        geo = self.core_geometry()
        _validate.check_array("g", g, geo.projection_shape)
        _validate.check_finite("g", g)
        o = self.system.fbp_options
        return ramp_filter_rows(geo, g, ramp_filter=o.ramp_filter, lowpass=o.lowpass,
                                window=o.window, scale=_as_float("scalar", scalar),
                                truncated_scan=o.truncated_scan)

    def _filtered_backprojection(self, g, f, row_filter, *, inplace=False, offset_scan=None):
        """FBP of ``g`` with ``row_filter(q, geometry)`` in place of the ramp filter (CPU,
        NumPy); ``inplace`` leaves the filtered data in ``g`` where the shapes allow."""
        from ..reconstruction.fbp import (_check_axial_modular, filter_projections,
                                          weighted_backproject)
        from ..geometry import ModularBeam
        geo, vol = self.core_geometry(), self.core_volume()
        _validate.check_array("g", g, geo.projection_shape)
        _validate.check_finite("g", g)
        if isinstance(geo, ModularBeam):
            _check_axial_modular(geo)
        opts = self.fbp_options()
        offset = opts["offset_scan"] if offset_scan is None else offset_scan
        q, fgeo = filter_projections(geo, vol, g, ramp_filter=opts["ramp_filter"],
                                     lowpass=opts["lowpass"], window=opts["window"],
                                     truncated_scan=opts["truncated_scan"],
                                     offset_scan=offset, row_filter=row_filter)
        if inplace and q.shape == g.shape:
            g[...] = q
        fov = opts["fov_radius"]
        if fov is None and fgeo is not geo:
            fov = fgeo.fov_radius()
        if f is None:
            f = self.allocate_volume()
        f = weighted_backproject(fgeo, vol, q, out=f, fov_radius=fov)
        self.apply_volume_mask(f)
        return f

    def LT(self, g, f=None, inplace=False):
        """Lambda (local) tomography: FBP with the ramp filter replaced by minus the second
        difference along detector columns (LEAP: ``Laplacian(g, 1)·(−1)``, no FBP scale),
        offset-scan weighting off. It reconstructs a ramp-filtered, edge-like image and
        works on truncated projections. Returns ``f`` (allocated when None)."""
        from ..preprocessing.filters import laplacian

        def minus_second_difference(q, geometry):
            laplacian(q, 1, False, out=q)
            q *= -1.0

        return self._filtered_backprojection(g, f, minus_second_difference, inplace=inplace,
                                             offset_scan=False)

    def preRampFiltering(self, g):
        """FBP's weights before the ramp filter (cosine, short-scan, view weights), applied
        to ``g`` in place; with :meth:`rampFilterProjections` (``get_FBPscalar()``),
        :meth:`postRampFiltering` and :meth:`weightedBackproject` this is :meth:`FBP`."""
        pre, _, _ = self._fbp_steps(g)
        g *= pre
        return g

    def postRampFiltering(self, g):
        """FBP's weights after the ramp filter (see :meth:`preRampFiltering`), in place."""
        _, _, post = self._fbp_steps(g)
        if post is not None:
            g *= post
        return g

    def _fbp_steps(self, g):
        from ..reconstruction.fbp import _filter_steps
        geo = self.core_geometry()
        _validate.check_array("g", g, geo.projection_shape)
        _validate.check_finite("g", g)
        opts = self.fbp_options()
        return _filter_steps(geo, self.core_volume(), opts["ramp_filter"], opts["lowpass"],
                             opts["window"])

    def HilbertFilterProjections(self, g):
        """LEAP's Hilbert filter along detector rows, in place: convolution with
        h[n] = 2/(πn) for odd n, 0 for even n (curved cone detectors: times s/sin(s),
        s = n·pixelWidth·sod/sdd / sod), zero-padded to a power of two ≥ 2·numCols (edge
        values extended for truncated scans). Returns ``g``."""
        from ..reconstruction.filters import hilbert_filter_rows
        geo = self.core_geometry()
        _validate.check_array("g", g, geo.projection_shape)
        _validate.check_finite("g", g)
        return hilbert_filter_rows(g, geo, extrapolate=bool(self._truncated_scan))

    def rampFilterVolume(self, f):
        """LEAP's 2-D ramp filter of every z-slice of ``f``, in place: response
        √(X² + Y² − (XY/2)²)/voxelWidth with X = 2|sin(ω_x/2)| (likewise Y), zero-padded
        to ``optimalFFTsize(2·max(numY, numX))``. Returns ``f``."""
        from ..reconstruction.filters import ramp_filter_volume
        _validate.check_array("f", f, self.core_volume().shape)
        _validate.check_finite("f", f)
        return ramp_filter_volume(f, self.core_volume().voxel_width)

    def FBP_slice(self, g, islice=None, coord="z"):
        """FBP of one slice of the volume: index ``islice`` (default the middle) along
        ``coord`` ('x', 'y' or 'z'). Returns, as LEAP, a (z, y, x) volume one voxel thick
        along ``coord``; the volume specification is unchanged."""
        if coord not in ("x", "y", "z"):
            raise ValueError(f"coord must be 'x', 'y' or 'z', got {coord!r}")
        n = self.get_volume_dim()["zyx".index(coord)]
        i = n // 2 if islice is None or not 0 <= islice < n else int(islice)
        s = self.system
        one = s.with_changes(volume=s.volume.single_slice(coord, i), mask=None)
        return one.fbp(g, out=np.zeros(one.volume_shape, dtype=np.float32))

    def weightedBackproject(self, g, f):
        """The back-projection step of FBP (fan: distance weight; helical: view windows)."""
        from ..reconstruction.fbp import weighted_backproject
        f = weighted_backproject(self.core_geometry(), self.core_volume(), g, out=f,
                                 fov_radius=self.fbp_options()["fov_radius"])
        self.apply_volume_mask(f)
        return f

    def FBP_adjoint(self, g, f):
        """The exact adjoint of :meth:`FBP`: writes into ``g`` the transpose of FBP applied
        to the volume ``f`` and returns ``g`` (exact for every geometry, fan and helical
        included)."""
        return self.system.fbp_adjoint(f, out=g)

    fbp_adjoint = FBP_adjoint
    fbp_adjoint_cpu = FBP_adjoint
    fbp_adjoint_gpu = FBP_adjoint
