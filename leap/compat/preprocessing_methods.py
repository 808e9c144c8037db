"""Projection pre-processing methods of the LEAP facade (filters, bad-pixel and
low-signal correction, transmission-domain filtering).

The stand-alone algorithms behind ``leap_preprocessing_algorithms`` live in
:mod:`leap.compat.preprocessing`; the numerics of these methods in :mod:`leap.preprocessing`
(:mod:`~leap.preprocessing.filters`, :mod:`~leap.preprocessing.bad_pixels`).
Like LEAP, each method works in place on the array it is given and returns it (NumPy
float32; torch tensors and CuPy arrays go through a host copy written back). Where LEAP
prints ``Error:`` and returns False, these methods raise.
"""
from __future__ import annotations

import numpy as np

from ..preprocessing import bad_pixels as _bad_pixels
from ..preprocessing import filters as _filters
from .preprocessing._arrays import check_data, check_radius, check_window, host_view, real

#: The effective atomic number LEAP's convertToRhoeZe gives voxels without attenuation.
AIR_ZE = 7.31231243248


def _low_signal(f, threshold, windowSize, signalThreshold, num_dims):
    with host_view(f, "f") as a:
        check_data("f", a)
        _filters.low_signal_median(
            a, real("threshold", threshold),
            check_window("windowSize", windowSize, (3, 5, 7) if num_dims == 2 else (3, 5)),
            real("signalThreshold", signalThreshold), num_dims=num_dims, out=a)
    return f


def _grid(sampleRate, firstSample):
    """LEAP's look-up table grid (checked under LEAP's names)."""
    sampleRate = real("sampleRate", sampleRate)
    if sampleRate <= 0:
        raise ValueError(f"sampleRate must be > 0, got {sampleRate}")
    return sampleRate, real("firstSample", firstSample)


def _lut(lut):
    if not np.all(np.isfinite(np.asarray(lut, dtype=np.float64))):
        raise ValueError("LUT must be finite (found NaN or inf)")
    return lut


class PreprocessingMixin:
    """Pre-processing methods of :class:`leap.compat.model.tomographicModels`."""

    # ---------------------------------------------------------- local filters
    def MeanFilter(self, x, windowRadius=1):
        """Mean over the (2r+1)³ window around each value (clipped at the edges: the mean
        of the samples inside) of any 2-D/3-D float32 array, in place; returns ``x``."""
        with host_view(x, "x") as a:
            check_data("x", a)
            _filters.mean_filter(a, check_radius("windowRadius", windowRadius), out=a)
        return x

    def VarianceFilter(self, x, windowRadius=1):
        """Variance over the (2r+1)³ window around each value (clipped at the edges), in
        place; returns ``x``."""
        with host_view(x, "x") as a:
            check_data("x", a)
            _filters.variance_filter(a, check_radius("windowRadius", windowRadius), out=a)
        return x

    def LowSignalCorrection(self, f, threshold=0.0, windowSize=3, signalThreshold=0.001):
        r""":meth:`MedianFilter` (3×3×3 or 3×5×5) applied only to values ≤
        ``signalThreshold`` (all values when it is ≤ 0): v becomes the window median m
        when :math:`|v - m| \ge threshold\,|m|`. In place; returns ``f``."""
        return _low_signal(f, threshold, windowSize, signalThreshold, 3)

    def LowSignalCorrection2D(self, f, threshold=0.0, windowSize=3, signalThreshold=0.001):
        """:meth:`MedianFilter2D` (windowSize 3, 5 or 7 within each slice) applied only to
        values ≤ ``signalThreshold`` (all when ≤ 0). In place; returns ``f``."""
        return _low_signal(f, threshold, windowSize, signalThreshold, 2)

    def badPixelCorrection(self, g, badPixelMap, windowSize=3):
        """Replace the pixels where ``badPixelMap`` (numRows, numCols) is 1.0 by the median
        of the good pixels in their windowSize² neighbourhood (3, 5 or 7), in every
        projection of ``g`` ((numAngles, numRows, numCols) or one (numRows, numCols)
        image). In place; returns ``g``."""
        with host_view(g, "g") as a, host_view(badPixelMap, "badPixelMap") as m:
            check_data("g", a)
            w = check_window("windowSize", windowSize, (3, 5, 7))
            if m.shape != a.shape[-2:]:
                raise ValueError(f"badPixelMap must have shape (numRows, numCols) = "
                                 f"{a.shape[-2:]}, got {m.shape}")
            _bad_pixels.replace_bad_pixels(a, m, w, out=a)
        return g

    def Laplacian(self, g, numDims=2, smoothLaplacian=False):
        """Second differences of each projection, replacing ``g``: along columns
        (``numDims=1``) or the sum along rows and columns (``numDims=2``);
        ``smoothLaplacian`` uses the two-pixel stencil ``¼(g[k+2]+g[k−2]) − ½g[k]``.
        Edges replicated, unit pixel spacing. Returns ``g``."""
        with host_view(g, "g") as a:
            check_data("g", a)
            if isinstance(numDims, bool) or numDims not in (1, 2):
                raise ValueError(f"numDims must be 1 (columns only) or 2 (rows and columns), "
                                 f"got {numDims!r}")
            _filters.laplacian(a, numDims, bool(smoothLaplacian), out=a)
        return g

    def transmission_filter(self, g, H, isAttenuationData=True):
        """Filter each projection in the transmission domain with the real 2-D frequency
        response ``H`` (N1 ≥ numRows, N2 ≥ numCols, DC at [0, 0]; e.g.
        N1 = optimalFFTsize(2·numRows)). Attenuation data go through exp(−g) and back
        through −log; transmissions are kept ≥ 2⁻²⁴. In place; returns ``g``."""
        with host_view(g, "g") as a, host_view(H, "H") as h:
            check_data("g", a)
            _filters.transmission_filter(a, h, bool(isAttenuationData), out=a)
        return g

    def AzimuthalBlur(self, f, FWHM):
        """Low-pass filter each z-slice of the volume ``f`` (numZ, numY, numX) along
        circles about the z axis, over an arc ``FWHM`` degrees wide (≥ 360: whole
        circles). Voxels outside the field of view become 0. In place; returns ``f``."""
        self._need_volume()
        with host_view(f, "f") as a:
            check_data("f", a, ndims=(3,), shape=self.get_volume_dim())
            x, y = self.x_samples(), self.y_samples()
            _filters.azimuthal_blur(a, real("FWHM", FWHM), x[0], y[0], self.get_voxelWidth(),
                                    self._fov_radius(), out=a)
        return f

    # ------------------------------------------------------- transfer functions
    def applyTransferFunction(self, x, LUT, sampleRate, firstSample=0.0):
        """``x ← LUT(x)`` in place, LUT[i] being the value at ``firstSample + i·sampleRate``:
        linear interpolation, linear extrapolation above the table, LUT[0] below it.
        Returns ``x``."""
        with host_view(x, "x") as a, host_view(LUT, "LUT") as lut:
            check_data("x", a, ndims=(1, 2, 3))
            _filters.transfer_function(a, _lut(lut), *_grid(sampleRate, firstSample), out=a)
        return x

    def applyDualTransferFunction(self, x, y, LUT, sampleRate, firstSample=0.0):
        """``(x, y) ← (LUT[0](x, y), LUT[1](x, y))`` in place, bilinear on the sample grid
        ``firstSample + i·sampleRate`` (both axes), clamped at its edges. ``LUT``:
        (2, n, n), or (n, n) used for both outputs (of a (k, n, n) table, e.g.
        XrayPhysics' (3, n, n) ``setDEDlookupTable``, the first two planes, as LEAP).
        Returns ``(x, y)``."""
        with host_view(x, "x") as a, host_view(y, "y") as b, host_view(LUT, "LUT") as lut:
            check_data("x", a, ndims=(1, 2, 3))
            check_data("y", b, ndims=(1, 2, 3))
            _filters.dual_transfer_function(a, b, _lut(lut), *_grid(sampleRate, firstSample),
                                            out=(a, b))
        return x, y

    def beam_hardening_heel_effect(self, g, anode_normal, LUT, takeOffAngles, sampleRate,
                                   firstSample=0.0):
        """Beam hardening (or its correction) that varies with the anode take-off angle
        of each ray (the heel effect), in place on the projections ``g``.

        ``anode_normal`` (3,): the anode's unit normal in a frame whose y axis is the
        detector normal (x along the columns, z along the rows); ``LUT`` (numAngles,
        numSamples): one transfer function per take-off angle ``takeOffAngles``
        (degrees, equally spaced), sampled at ``firstSample + i·sampleRate``. A ray of
        detector coordinates (u, v) (mm from the central ray; curved detectors: sdd·tan of
        the column angle) leaves the anode at 90° minus its angle to the normal
        (:func:`leap.physics.beam_hardening.take_off_angles`), and gets its angle's
        table, interpolated (:func:`leap.physics.beam_hardening.apply_heel_effect_table`).
        Cone and modular beams only, as LEAP. Returns ``g``."""
        from ..geometry import ConeBeam, ModularBeam
        from ..physics.beam_hardening import apply_heel_effect_table, take_off_angles
        geo = self.core_geometry()
        if not isinstance(geo, (ConeBeam, ModularBeam)):
            raise ValueError("beam_hardening_heel_effect needs a cone- or modular-beam "
                             f"geometry, not {type(geo).__name__} (as LEAP)")
        d = geo.detector
        cols, rows = np.arange(d.num_cols, dtype=np.float64), np.arange(d.num_rows, dtype=np.float64)
        if isinstance(geo, ModularBeam):
            u = (cols - 0.5 * (d.num_cols - 1)) * d.pixel_width
            v = (rows - 0.5 * (d.num_rows - 1)) * d.pixel_height
            sdd = np.linalg.norm(geo.module_centers - geo.source_positions, axis=1)
        else:
            u = (cols - d.center_col) * d.pixel_width
            if d.curved:
                u = geo.sdd * np.tan(u / d.pixel_width * np.arctan(d.pixel_width / geo.sdd))
            v = (rows - d.center_row) * d.pixel_height
            sdd = np.full(geo.num_angles, geo.sdd)
        angles = take_off_angles(u[None, None, :] / sdd[:, None, None],
                                 v[None, :, None] / sdd[:, None, None], anode_normal)
        with host_view(g, "g") as a, host_view(LUT, "LUT") as lut:
            check_data("g", a, ndims=(3,), shape=geo.projection_shape)
            apply_heel_effect_table(a, angles, lut, takeOffAngles, sampleRate, firstSample,
                                    out=a)
        return g

    def convertToRhoeZe(self, f_L, f_H, sigma_L, sigma_H):
        """Effective atomic number and electron density from a low- and a high-energy
        volume in attenuation units (SIRZ, :func:`leap.physics.dual_energy.rhoe_ze`).

        ``sigma_L``/``sigma_H``: the per-electron cross sections of the elements Z = 1…100
        at the two energies (XrayPhysics' ``sigma_e``). In place, as LEAP: ``f_L`` becomes
        Ze and ``f_H`` ρe (in the units of μ/σ_e); voxels with a non-positive value get
        air's Ze (7.31) and ρe = 0. Returns ``(f_L, f_H)``."""
        from ..physics.dual_energy import rhoe_ze
        with host_view(f_L, "f_L") as a, host_view(f_H, "f_H") as b:
            check_data("f_L", a, ndims=(2, 3))
            check_data("f_H", b, ndims=(2, 3), shape=a.shape)
            ze, rho = rhoe_ze(a, b, sigma_L, sigma_H, empty_ze=AIR_ZE)
            a[...] = ze
            b[...] = rho
        return f_L, f_H
