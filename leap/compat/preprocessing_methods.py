"""Projection pre-processing methods of the LEAP facade (filters, bad-pixel and
low-signal correction, transmission-domain filtering).

The stand-alone algorithms behind ``leap_preprocessing_algorithms`` live in
:mod:`leap.compat.preprocessing`; the numerics of these methods in :mod:`leap.compat.preprocessing.core`.
Like LEAP, each method works in place on the array it is given and returns it (NumPy
float32; torch tensors and CuPy arrays go through a host copy written back). Where LEAP
prints ``Error:`` and returns False, these methods raise.
"""
from __future__ import annotations

from .preprocessing import core as _core


class PreprocessingMixin:
    """Pre-processing methods of :class:`leap.compat.model.tomographicModels`."""

    # ---------------------------------------------------------- local filters
    def MeanFilter(self, x, windowRadius=1):
        """Mean over the (2r+1)³ window around each value (clipped at the edges: the mean
        of the samples inside) of any 2-D/3-D float32 array, in place; returns ``x``."""
        with _core.host_view(x, "x") as a:
            _core.mean_filter(a, windowRadius, out=a)
        return x

    def VarianceFilter(self, x, windowRadius=1):
        """Variance over the (2r+1)³ window around each value (clipped at the edges), in
        place; returns ``x``."""
        with _core.host_view(x, "x") as a:
            _core.variance_filter(a, windowRadius, out=a)
        return x

    def LowSignalCorrection(self, f, threshold=0.0, windowSize=3, signalThreshold=0.001):
        r""":meth:`MedianFilter` (3×3×3 or 3×5×5) applied only to values ≤
        ``signalThreshold`` (all values when it is ≤ 0): v becomes the window median m
        when :math:`|v - m| \ge threshold\,|m|`. In place; returns ``f``."""
        with _core.host_view(f, "f") as a:
            _core.low_signal_median(a, threshold, windowSize, signalThreshold, num_dims=3, out=a)
        return f

    def LowSignalCorrection2D(self, f, threshold=0.0, windowSize=3, signalThreshold=0.001):
        """:meth:`MedianFilter2D` (windowSize 3, 5 or 7 within each slice) applied only to
        values ≤ ``signalThreshold`` (all when ≤ 0). In place; returns ``f``."""
        with _core.host_view(f, "f") as a:
            _core.low_signal_median(a, threshold, windowSize, signalThreshold, num_dims=2, out=a)
        return f

    def badPixelCorrection(self, g, badPixelMap, windowSize=3):
        """Replace the pixels where ``badPixelMap`` (numRows, numCols) is 1.0 by the median
        of the good pixels in their windowSize² neighbourhood (3, 5 or 7), in every
        projection of ``g`` ((numAngles, numRows, numCols) or one (numRows, numCols)
        image). In place; returns ``g``."""
        with _core.host_view(g, "g") as a, _core.host_view(badPixelMap, "badPixelMap") as m:
            _core.bad_pixel_correction(a, m, windowSize, out=a)
        return g

    def Laplacian(self, g, numDims=2, smoothLaplacian=False):
        """Second differences of each projection, replacing ``g``: along columns
        (``numDims=1``) or the sum along rows and columns (``numDims=2``);
        ``smoothLaplacian`` uses the two-pixel stencil ``¼(g[k+2]+g[k−2]) − ½g[k]``.
        Edges replicated, unit pixel spacing. Returns ``g``."""
        with _core.host_view(g, "g") as a:
            _core.laplacian(a, numDims, bool(smoothLaplacian), out=a)
        return g

    def transmission_filter(self, g, H, isAttenuationData=True):
        """Filter each projection in the transmission domain with the real 2-D frequency
        response ``H`` (N1 ≥ numRows, N2 ≥ numCols, DC at [0, 0]; e.g.
        N1 = optimalFFTsize(2·numRows)). Attenuation data go through exp(−g) and back
        through −log; transmissions are kept ≥ 2⁻²⁴. In place; returns ``g``."""
        with _core.host_view(g, "g") as a, _core.host_view(H, "H") as h:
            _core.transmission_filter(a, h, bool(isAttenuationData), out=a)
        return g

    def AzimuthalBlur(self, f, FWHM):
        """Low-pass filter each z-slice of the volume ``f`` (numZ, numY, numX) along
        circles about the z axis, over an arc ``FWHM`` degrees wide (≥ 360: whole
        circles). Voxels outside the field of view become 0. In place; returns ``f``."""
        self._need_volume()
        with _core.host_view(f, "f") as a:
            _core.check_data("f", a, ndims=(3,), shape=self.get_volume_dim())
            x, y = self.x_samples(), self.y_samples()
            _core.azimuthal_blur(a, FWHM, x[0], y[0], self.get_voxelWidth(), self._fov_radius(),
                                 out=a)
        return f

    # ------------------------------------------------------- transfer functions
    def applyTransferFunction(self, x, LUT, sampleRate, firstSample=0.0):
        """``x ← LUT(x)`` in place, LUT[i] being the value at ``firstSample + i·sampleRate``:
        linear interpolation, linear extrapolation above the table, LUT[0] below it.
        Returns ``x``."""
        with _core.host_view(x, "x") as a, _core.host_view(LUT, "LUT") as lut:
            _core.transfer_function(a, lut, sampleRate, firstSample, out=a)
        return x

    def applyDualTransferFunction(self, x, y, LUT, sampleRate, firstSample=0.0):
        """``(x, y) ← (LUT[0](x, y), LUT[1](x, y))`` in place, bilinear on the sample grid
        ``firstSample + i·sampleRate`` (both axes), clamped at its edges. ``LUT``:
        (2, n, n), or (n, n) used for both outputs. Returns ``(x, y)``."""
        with _core.host_view(x, "x") as a, _core.host_view(y, "y") as b, \
                _core.host_view(LUT, "LUT") as lut:
            _core.dual_transfer_function(a, b, lut, sampleRate, firstSample, out=(a, b))
        return x, y
