"""Detector deblurring: undo a known detector blur (scintillator light spread, a
frequency response ``H``) on transmissions, by a regularised inverse filter or by
Richardson–Lucy iterations.

``H`` (N1, N2) is a real frequency response on the DFT grid of a projection padded to
N1 ≥ rows, N2 ≥ cols (e.g. N = 2·n rounded up to an FFT-friendly size), DC at [0, 0], as
:func:`~leap.preprocessing.filters.transmission_filter` applies it. Each view is
deblurred alone, so blocks of views give the views of the whole. NumPy or CuPy.
"""
from __future__ import annotations

from ._common import array_module, as_float32, integer, real
from .filters import transmission_filter

__all__ = ["deconvolution_filter", "deconvolve", "richardson_lucy"]


def _response(H, xp):
    """``H`` as a finite float64 2-D array with a non-zero DC response."""
    H = xp.asarray(H, dtype=xp.float64)
    if H.ndim != 2 or not bool(xp.all(xp.isfinite(H))):
        raise ValueError(f"H must be a finite 2-D frequency response, got shape "
                         f"{tuple(H.shape)}")
    if float(H[0, 0]) == 0:
        raise ValueError("H[0, 0] (the DC response) must be non-zero")
    return H


def deconvolution_filter(H, wiener_param=0.0):
    r"""The inverse filter of the blur ``H``, normalised to unit DC response, float32:

    .. math:: H_{inv} = \frac{(1+w)H}{H^2 + w}\ (0 < w \le 1),\qquad 1/H\ (\text{else}),

    w = ``wiener_param``, raised to 2.5·10⁻⁵ when min|H| < 0.01 (a plain inverse would
    amplify noise without bound there). LEAP's ``detectorDeblur_FourierDeconv``."""
    xp = array_module(H)
    H = _response(H, xp)
    w = real("wiener_param", wiener_param)
    if float(xp.min(xp.abs(H))) < 0.01:
        w = max(2.5e-5, w)
    if 0 < w <= 1:
        Hinv = (1.0 + w) * H / (H * H + w)
    else:
        if bool(xp.any(H == 0)):
            raise ValueError("H has zeros: give a wiener_param in (0, 1]")
        Hinv = 1.0 / H
    Hinv /= Hinv[0, 0]
    return Hinv.astype(xp.float32)


def deconvolve(g, H, wiener_param=0.0, is_attenuation_data=True, *, out=None):
    """Deblur projections ``g`` (views, rows, cols) by filtering their transmissions with
    :func:`deconvolution_filter` (``is_attenuation_data``: g is −log data, converted to
    transmissions and back). Float32."""
    return transmission_filter(g, deconvolution_filter(H, wiener_param), is_attenuation_data,
                               out=out)


def richardson_lucy(t, H, num_iter=10, *, out=None):
    r"""Deblur transmissions ``t`` (views, rows, cols) by ``num_iter`` Richardson–Lucy
    iterations with the blur ``H`` (normalised to H[0, 0] = 1):

    .. math:: t_{n+1} = t_n\cdot H^T\!\left[\frac{t_0}{H t_n}\right]

    (H is real, so Hᵀ = H; each H is :func:`~leap.preprocessing.filters.transmission_filter`).
    Suited to Poisson data; keeps t > 0. ``out`` may be ``t``. Float32."""
    xp = array_module(t, out)
    t = as_float32("t", t, xp)
    H = _response(H, xp)
    H = (H / H[0, 0]).astype(xp.float32)
    n = integer("num_iter", num_iter, minimum=0)
    t0 = t.copy()
    if out is None:
        x = t0.copy()
    else:
        if tuple(out.shape) != tuple(t.shape) or out.dtype != xp.float32:
            raise ValueError(f"out must be a float32 array of shape {tuple(t.shape)}")
        out[...] = t0
        x = out
    for _ in range(n):
        Ht = transmission_filter(x, H, False)
        x *= transmission_filter(t0 / Ht, H, False)
    return x
