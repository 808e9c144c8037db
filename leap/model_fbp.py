"""FBP methods of the LEAP facade: filter choices, field of view, FBP and its adjoint."""
from __future__ import annotations

from . import operators
from .geometry._checks import finite_float as _as_float
from .geometry._checks import integer as _as_int


class FBPMixin:
    """``FBP``, ``filterProjections``, ``set_rampFilter`` … of
    :class:`leap.model.tomographicModels` (built on :mod:`leap.fbp`)."""

    def set_rampFilter(self, which):
        """Ramp filter: LEAP's order 0..12 (2 = Shepp–Logan, default; 12 = Ram-Lak), or
        (leap extension) a window name 'hann', 'hamming', 'cosine' on the Ram-Lak ramp."""
        from .filters import WINDOWS
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

    def fbp_options(self):
        """The keyword options of :func:`leap.fbp.fbp` / :func:`leap.fbp.fbp_adjoint` that
        reproduce this object's :meth:`FBP` (ramp filter, window, low-pass, offset and
        truncated scan, field of view)."""
        order, window = self._ramp_filter, "none"
        if isinstance(order, str):
            order, window = 12, order
        return dict(ramp_filter=order, window=window, lowpass=self._fbp_lowpass,
                    offset_scan=self._offset_scan, truncated_scan=self._truncated_scan,
                    fov_radius=0.5 * self._fov_diameter if self._fov_diameter else None)

    def get_FBPscalar(self):
        """LEAP's FBP scale factor (see :func:`leap.weights.fbp_scale`)."""
        from .weights import fbp_scale
        return float(fbp_scale(self.core_geometry(), self.core_volume()))

    def FBP(self, g, f=None, inplace=False):
        """Filtered back-projection (FDK for cone beams) of ``g`` into ``f`` (allocated when
        None); returns ``f``. ``g`` is left untouched unless ``inplace=True`` (then it
        holds the filtered projections afterwards, where their shape allows)."""
        from .fbp import fbp
        if self._special_model():   # attenuated Radon transform or symmetric object
            return self._special_fbp(g, f)
        geo, vol = self.core_geometry(), self.core_volume()
        if f is None:
            f = self.allocate_volume()
        return fbp(geo, vol, g, out=f, **self.fbp_options(), **self._device_options())

    fbp = FBP
    FBP_cpu = FBP
    fbp_cpu = FBP

    def filterProjections(self, g, g_out=None):
        """Apply FBP's weights and ramp filter to ``g`` (in place, or into ``g_out``);
        :meth:`weightedBackproject` of the result gives the FBP reconstruction."""
        from .fbp import filter_projections
        geo, vol = self.core_geometry(), self.core_volume()
        operators._check_array("g", g, geo.projection_shape)
        opts = self.fbp_options()
        q, _ = filter_projections(geo, vol, g, ramp_filter=opts["ramp_filter"],
                                  window=opts["window"], lowpass=opts["lowpass"],
                                  truncated_scan=opts["truncated_scan"])
        target = g if g_out is None else g_out
        operators._check_array("g_out", target, geo.projection_shape)
        target[...] = q
        return target

    def rampFilterProjections(self, g, scalar=1.0):
        """Ramp-filter the rows of ``g`` in place (no geometric weights), times ``scalar``."""
        from .fbp import _sample_spacing
        from .filters import filter_rows, ramp_response
        geo = self.core_geometry()
        operators._check_array("g", g, geo.projection_shape)
        opts = self.fbp_options()
        curved = geo.detector.curved
        H = ramp_response(geo.detector.num_cols, _sample_spacing(geo), opts["ramp_filter"],
                          lowpass=opts["lowpass"], window=opts["window"],
                          curved_pixel_angle=geo.detector.pixel_width / geo.sdd if curved else None)
        filter_rows(g, H * _as_float("scalar", scalar), extrapolate=self._truncated_scan)
        return g

    def weightedBackproject(self, g, f):
        """The back-projection step of FBP (fan: distance weight; helical: view windows)."""
        from .fbp import weighted_backproject
        f = weighted_backproject(self.core_geometry(), self.core_volume(), g, out=f,
                                 fov_radius=self.fbp_options()["fov_radius"])
        self.apply_volume_mask(f)
        return f

    def FBP_adjoint(self, g, f):
        """The exact adjoint of :meth:`FBP`: writes into ``g`` the transpose of FBP applied
        to the volume ``f`` and returns ``g`` (exact for every geometry, fan and helical
        included)."""
        from .fbp import fbp_adjoint
        return fbp_adjoint(self.core_geometry(), self.core_volume(), f, out=g,
                           **self.fbp_options(), **self._device_options())

    fbp_adjoint = FBP_adjoint
