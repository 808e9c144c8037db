"""Regularisers and denoising filters on 3-D arrays (NumPy or CuPy).

Anisotropic total variation (TV) with LEAP's Huber-like potential
---------------------------------------------------------------------
For a 3-D array ``f`` (any shape (n0, n1, n2); 2-D arrays are treated as one slice)

.. math::

    R(f) = \\beta \\sum_{\\{i, j\\}} \\|i - j\\|^{-1}\\, h(f_i - f_j),

    h(t) = \\begin{cases} t^2/2, & |t| \\le \\delta \\\\
           \\frac{\\delta^{2-p}}{p}|t|^p + \\delta^2(\\tfrac12 - \\tfrac1p), & |t| > \\delta
           \\end{cases}

summed once over every unordered pair of neighbouring voxels inside the array (26
neighbours: faces, edges and corners, weighted by the inverse distance in voxel
units; or the 6 face neighbours). ``h`` is quadratic below δ and grows like
``|t|^p`` above it (p = 1.2 by default, p = 1 is the Huber function).

- :func:`tv_gradient` is the exact gradient ∇R. It equals LEAP's ``TVgradient`` with
  6 neighbours, and with 26 away from the array's faces: there LEAP clamps indices, so
  a diagonal neighbour outside the array becomes an extra face pair with a diagonal
  weight, and its gradient no longer matches its cost; here pairs that leave the
  array are simply absent;
- :func:`tv_cost` is R, half of LEAP's ``TVcost`` number: LEAP sums h over every
  voxel *and* every neighbour, counting each pair twice, while its gradient counts
  each pair once. Halving the cost makes cost, gradient and quadratic form agree
  (the gradient matches finite differences of the cost) and keeps LEAP's gradient, so
  a regularisation strength β tuned for LEAP gives the same RWLS solution;
- :func:`tv_quad_form` is ``dᵀ H d`` with H the Hessian of R's separable quadratic
  surrogate (h''(t) replaced by h'(t)/t ≥ h''(t)). The surrogate majorises R along
  any line, so the step ``<∇R, d> / tv_quad_form`` never increases R.

Filters
-------
:func:`blur` (LEAP's raised-cosine low-pass), :func:`high_pass`, :func:`median`
(thresholded), :func:`bilateral` and :func:`guided` work on any 3-D array.
"""
from __future__ import annotations

import math

import numpy as np

from ._array import array_namespace, vdot
from ._common import check_count
from ..geometry._checks import integer as _integer

__all__ = ["huber", "huber_derivative", "huber_curvature", "tv_cost", "tv_gradient",
           "tv_quad_form", "tv_diffuse", "tv_denoise", "TotalVariation",
           "blur", "blur_adjoint", "high_pass", "median", "bilateral", "guided"]

_DELTA_MIN = 1.0e-8


# ------------------------------------------------------------------ potential

def _check_p(p):
    p = float(p)
    if not p > 0:
        raise ValueError(f"p must be positive, got {p}")
    return p


def _delta(delta):
    delta = float(delta)
    if not math.isfinite(delta) or delta < 0:
        raise ValueError(f"delta must be a finite number >= 0, got {delta}")
    # As LEAP: delta = 0 means 'as small as possible' (the pure |t|^p potential).
    return max(delta, _DELTA_MIN)


def huber(t, delta, p=1.2):
    """LEAP's Huber-like potential h(t) (see the module docstring), elementwise."""
    xp = array_namespace(t)
    delta, p = _delta(delta), _check_p(p)
    a = xp.abs(t)
    slope = delta ** (2.0 - p) / p
    shift = delta * delta * (0.5 - 1.0 / p)
    shape = getattr(t, "shape", ())
    a = a.reshape(-1)                   # 1-D even for a scalar, so ``out=`` works
    inside = a <= delta
    big = xp.maximum(a, delta)          # a new array, worked in place below
    if p != 1.0:
        # exp(p log a): several times faster than a ** p on NumPy float32 arrays (the
        # cost is evaluated in ASD-POCS's line search, once or twice per TV step).
        xp.log(big, out=big)
        big *= p
        xp.exp(big, out=big)
    big *= slope
    big += shift
    a = a * a
    a *= 0.5
    return xp.where(inside, a, big).reshape(shape)


def huber_curvature(t, delta, p=1.2):
    """h'(t)/t: 1 for ``|t| ≤ δ``, ``(|t|/δ)^(p−2)`` beyond: the surrogate's curvature."""
    xp = array_namespace(t)
    delta, p = _delta(delta), _check_p(p)
    shape = getattr(t, "shape", ())
    a = xp.abs(t).reshape(-1)          # a new array (1-D even for a scalar), worked in place
    xp.maximum(a, delta, out=a)
    a *= 1.0 / delta
    if p == 1.0:
        xp.reciprocal(a, out=a)
    else:
        # exp((p − 2) log a): twice as fast as a ** (p − 2) on NumPy float32 arrays.
        xp.log(a, out=a)
        a *= p - 2.0
        xp.exp(a, out=a)
    return a.reshape(shape)


def huber_derivative(t, delta, p=1.2):
    """h'(t) = t for ``|t| ≤ δ``, ``δ^(2−p) sign(t) |t|^(p−1)`` beyond."""
    return t * huber_curvature(t, delta, p)


# ------------------------------------------------------------- neighbourhoods
def _neighbour_offsets(neighbors):
    """One offset per unordered neighbour pair: the half of {−1, 0, 1}³ \\ {0} whose first
    non-zero component is positive, with its inverse-distance weight."""
    if neighbors not in (6, 26):
        raise ValueError(f"the TV neighbourhood has 6 or 26 neighbours, got {neighbors}")
    out = []
    for a in (-1, 0, 1):
        for b in (-1, 0, 1):
            for c in (-1, 0, 1):
                o = (a, b, c)
                nz = [v for v in o if v != 0]
                if not nz or nz[0] < 0:
                    continue
                if neighbors == 6 and len(nz) != 1:
                    continue
                out.append((o, 1.0 / math.sqrt(len(nz))))
    return out


def _pair_slices(offset, shape):
    """Slices (A, B) so that A[k] and B[k] are voxels i and i + offset, or None when the
    array is too thin along an axis for this offset."""
    A, B = [], []
    for o, n in zip(offset, shape):
        if o == 0:
            A.append(slice(None)); B.append(slice(None))
        elif n < 2:
            return None
        elif o > 0:
            A.append(slice(0, n - 1)); B.append(slice(1, n))
        else:
            A.append(slice(1, n)); B.append(slice(0, n - 1))
    return tuple(A), tuple(B)


def _check_input(name, x):
    """Raise a clear TypeError/ValueError naming ``name`` unless ``x`` is a numeric 2-D
    or 3-D array (NumPy, or CuPy on the GPU)."""
    if not (hasattr(x, "shape") and hasattr(x, "dtype")) or isinstance(x, np.generic):
        got = "None" if x is None else type(x).__name__
        raise TypeError(f"{name} must be a 2-D or 3-D array (NumPy or CuPy), got {got}")
    if np.dtype(x.dtype).kind not in "biuf":
        raise TypeError(f"{name} must be a numeric array, got dtype {x.dtype}")
    if x.ndim not in (2, 3):
        raise ValueError(f"{name} must be a 2-D or 3-D array, got shape {tuple(x.shape)}")


def _as3d(f):
    if f.ndim == 3:
        return f
    if f.ndim == 2:
        return f[None]
    raise ValueError(f"expected a 2-D or 3-D array, got shape {tuple(f.shape)}")


def _pairs(f, neighbors):
    f3 = _as3d(f)
    for offset, w in _neighbour_offsets(neighbors):
        sl = _pair_slices(offset, f3.shape)
        if sl is not None:
            yield w, sl[0], sl[1], f3


# ------------------------------------------------------------------------ TV
def tv_cost(f, delta, beta=1.0, p=1.2, *, neighbors=26) -> float:
    """R(f) = β Σ_pairs w_ij h(f_i − f_j) (see the module docstring); a Python float."""
    _check_input("f", f)
    xp = array_namespace(f)
    total = 0.0
    for w, A, B, f3 in _pairs(f, neighbors):
        total += w * float(xp.sum(huber(f3[A] - f3[B], delta, p), dtype=xp.float64))
    return float(beta) * total


def tv_gradient(f, delta, beta=1.0, p=1.2, *, neighbors=26, out=None):
    """∇R(f), an array of f's shape and dtype (written into ``out`` when given)."""
    _check_input("f", f)
    xp = array_namespace(f, out)
    g = xp.zeros(_as3d(f).shape, dtype=f.dtype)
    for w, A, B, f3 in _pairs(f, neighbors):
        hp = huber_derivative(f3[A] - f3[B], delta, p)
        hp *= w * float(beta)
        g[A] += hp
        g[B] -= hp
    g = g.reshape(f.shape)
    if out is None:
        return g
    out[...] = g
    return out


def tv_quad_form(f, d, delta, beta=1.0, p=1.2, *, neighbors=26) -> float:
    """``dᵀ H(f) d`` for the separable quadratic surrogate of R at ``f`` (a float ≥ 0).

    ``<∇R(f), d> / tv_quad_form(f, d)`` is the step along −d that minimises the
    surrogate, which majorises R on that line.
    """
    _check_input("f", f)
    _check_input("d", d)
    xp = array_namespace(f, d)
    if tuple(d.shape) != tuple(f.shape):
        raise ValueError(f"d must have f's shape {tuple(f.shape)}, got {tuple(d.shape)}")
    d3 = _as3d(d)
    total = 0.0
    for w, A, B, f3 in _pairs(f, neighbors):
        c = huber_curvature(f3[A] - f3[B], delta, p)
        dd = d3[A] - d3[B]
        total += w * float(xp.sum(c * dd * dd, dtype=xp.float64))
    return float(beta) * total


def tv_diffuse(f, delta, num_iter, p=1.2, *, neighbors=26, out=None):
    """``num_iter`` steepest-descent steps on the TV functional (β = 1), LEAP's
    ``diffuse``: each takes half the surrogate-optimal step ``|∇R|²/dᵀHd``, the step
    LEAP takes, so a given number of steps smooths as much as in LEAP (any step up to
    twice this one decreases R).

    Returns a new array (or fills ``out``, which may be ``f`` itself).
    """
    _check_input("f", f)
    xp = array_namespace(f, out)
    x = xp.array(f, dtype=f.dtype, copy=True) if out is None else out
    if out is not None and out is not f:
        out[...] = f
    for _ in range(check_count("num_iter", num_iter)):
        d = tv_gradient(x, delta, 1.0, p, neighbors=neighbors)
        num = vdot(d, d)
        denom = tv_quad_form(x, d, delta, 1.0, p, neighbors=neighbors)
        if not (num > 0 and denom > 0):       # flat (or at a minimum): nothing to do
            break
        x -= (0.5 * num / denom) * d
    return x


def tv_denoise(f, delta, beta, num_iter, p=1.2, *, neighbors=26, mean_over_first_dim=False,
               out=None):
    """LEAP's ``TV_denoise``: ``num_iter`` steps towards min ½‖x − f‖² + R(x), from x = f.

    Each step is LEAP's: with d = ∇R(x) (averaged over the first axis when
    ``mean_over_first_dim``, one smoothing shared by all slices), the step length is
    the surrogate-optimal one for R alone, ``s = |d|² / (2·dᵀHd)`` (LEAP's quadratic form is
    twice :func:`tv_quad_form`), and x ← x − s·(d + x − f), the gradient of the whole
    objective. Steps stop when dᵀHd vanishes (x flat).

    Returns a new array (or fills ``out``, which may be ``f`` itself).
    """
    _check_input("f", f)
    xp = array_namespace(f, out)
    f0 = xp.array(f, dtype=f.dtype, copy=True)
    x = f0.copy() if out is None else out
    if out is not None and out is not f:
        out[...] = f
    for _ in range(check_count("num_iter", num_iter)):
        d = tv_gradient(x, delta, beta, p, neighbors=neighbors)
        if mean_over_first_dim and d.ndim == 3:
            d[...] = xp.mean(d, axis=0, keepdims=True)
        num = vdot(d, d)
        denom = 2.0 * tv_quad_form(x, d, delta, beta, p, neighbors=neighbors)
        if not denom > 1e-16:
            break
        d += x
        d -= f0
        x -= (num / denom) * d
    return x


class TotalVariation:
    """TV as a regulariser object for the algorithms of :mod:`leap.algorithms`:
    ``cost``, ``gradient``, ``quad_form`` and ``apply`` (one diffusion step).

    ``f0`` (optional prior volume) makes it TV(f − f0) (PICCS-like).
    """

    differentiable = True

    def __init__(self, delta, beta=1.0, p=1.2, *, neighbors=26, f0=None):
        self.delta = _delta(delta)
        self.beta = float(beta)
        self.p = _check_p(p)
        self.neighbors = neighbors
        self.f0 = f0
        _neighbour_offsets(neighbors)

    def __repr__(self):
        return (f"TotalVariation(delta={self.delta!r}, beta={self.beta!r}, p={self.p!r}, "
                f"neighbors={self.neighbors})")

    def _x(self, f):
        if self.f0 is None:
            return f
        from ._array import check_no_overlap
        check_no_overlap("f", f, f0=self.f0)        # else f − f0 = 0 whatever f is
        return f - self.f0

    def cost(self, f) -> float:
        return tv_cost(self._x(f), self.delta, self.beta, self.p, neighbors=self.neighbors)

    def gradient(self, f):
        return tv_gradient(self._x(f), self.delta, self.beta, self.p, neighbors=self.neighbors)

    def quad_form(self, f, d) -> float:
        return tv_quad_form(self._x(f), d, self.delta, self.beta, self.p,
                            neighbors=self.neighbors)

    def apply(self, f):
        """One TV diffusion step on ``f`` in place; returns ``f``."""
        if self.f0 is None:
            return tv_diffuse(f, self.delta, 1, self.p, neighbors=self.neighbors, out=f)
        x = tv_diffuse(self._x(f), self.delta, 1, self.p, neighbors=self.neighbors)
        f[...] = x + self.f0
        return f


# ------------------------------------------------------------------- filters
def _ndimage(xp):
    if xp is np:
        import scipy.ndimage as nd
    else:
        import cupyx.scipy.ndimage as nd
    return nd


def _axes(ndim_spatial):
    if ndim_spatial not in (1, 2, 3):
        raise ValueError(f"num_dims must be 1, 2 or 3, got {ndim_spatial}")
    return tuple(range(3 - ndim_spatial, 3))


def _raised_cosine_offsets(fwhm, axes, shape):
    """LEAP's blur kernel: w(r) = ½ + ½cos(π·min(r/FWHM, 1)) over offsets with
    |offset_k| ≤ floor(FWHM) along the filtered axes (r in voxels), normalised.

    The kernel has (2·floor(FWHM) + 1)^d taps; a FWHM beyond the array's largest filtered
    dimension (``shape``: the array's (nz, ny, nx)) is refused rather than run for ever
    (2**40 did in a fuzz run)."""
    fwhm = float(fwhm)
    if not fwhm > 0:
        raise ValueError(f"FWHM must be positive (voxels), got {fwhm}")
    largest = max(shape[k] for k in axes)
    if not fwhm <= largest:
        raise ValueError(f"FWHM must be at most the largest filtered dimension, {largest} "
                         f"voxels, got {fwhm}")
    R = int(math.floor(fwhm))
    rng = range(-R, R + 1)
    offs, ws = [], []
    for a in (rng if 0 in axes else (0,)):
        for b in (rng if 1 in axes else (0,)):
            for c in (rng if 2 in axes else (0,)):
                r = math.sqrt(a * a + b * b + c * c)
                w = 0.5 + 0.5 * math.cos(math.pi * min(r / fwhm, 1.0))
                if w > 1e-4:
                    offs.append((a, b, c)); ws.append(w)
    s = sum(ws)
    return offs, [w / s for w in ws], R


def _window(offset, pads, shape):
    """Slices of a padded array that give the array shifted by ``offset``."""
    return tuple(slice(p + o, p + o + n) for o, p, n in zip(offset, pads, shape))


def blur(f, fwhm=2.0, *, num_dims=3, out=None):
    """LEAP's low-pass (``BlurFilter``): a normalised raised-cosine kernel of full width
    at half maximum ``fwhm`` voxels, edges extended by replication. ``num_dims`` = 2
    filters each slice f[k] only (``BlurFilter2D``). Returns a new array (or fills
    ``out``)."""
    _check_input("f", f)
    xp = array_namespace(f, out)
    f3 = _as3d(f)
    axes = _axes(num_dims)
    offs, ws, R = _raised_cosine_offsets(fwhm, axes, f3.shape)
    pads = [R if k in axes else 0 for k in range(3)]
    fp = xp.pad(f3, [(p, p) for p in pads], mode="edge")
    res = xp.zeros(f3.shape, dtype=f.dtype)
    for o, w in zip(offs, ws):
        res += w * fp[_window(o, pads, f3.shape)]
    res = res.reshape(f.shape)
    if out is None:
        return res
    out[...] = res
    return out


def blur_adjoint(y, fwhm=2.0, *, num_dims=3):
    """The exact transpose of :func:`blur` (it differs from :func:`blur` only near the
    edges, where replication folds weight back onto the edge voxels)."""
    _check_input("y", y)
    xp = array_namespace(y)
    y3 = _as3d(y)
    axes = _axes(num_dims)
    offs, ws, R = _raised_cosine_offsets(fwhm, axes, y3.shape)
    pads = [R if k in axes else 0 for k in range(3)]
    z = xp.zeros(tuple(n + 2 * p for n, p in zip(y3.shape, pads)), dtype=y.dtype)
    for o, w in zip(offs, ws):
        z[_window(o, pads, y3.shape)] += w * y3
    for k in axes:
        n = y3.shape[k]
        lo = [slice(None)] * 3; lo[k] = slice(0, R)
        hi = [slice(None)] * 3; hi[k] = slice(R + n, None)
        first = [slice(None)] * 3; first[k] = slice(R, R + 1)
        last = [slice(None)] * 3; last[k] = slice(R + n - 1, R + n)
        z[tuple(first)] += xp.sum(z[tuple(lo)], axis=k, keepdims=True)
        z[tuple(last)] += xp.sum(z[tuple(hi)], axis=k, keepdims=True)
        keep = [slice(None)] * 3; keep[k] = slice(R, R + n)
        z = z[tuple(keep)]
    return xp.ascontiguousarray(z).reshape(y.shape)


def high_pass(f, fwhm=2.0, *, num_dims=3, out=None):
    """LEAP's ``HighPassFilter``: ``f − blur(f)``."""
    _check_input("f", f)
    res = f - blur(f, fwhm, num_dims=num_dims)
    if out is None:
        return res
    out[...] = res
    return out


def median(f, threshold=0.0, window_size=3, *, num_dims=3, out=None):
    """LEAP's thresholded median filter: each value is replaced by the median of its
    window when ``|value − median| ≥ threshold·|median|`` (``threshold`` = 0: a plain
    median filter). Windows: 3×3×3 or 3×5×5 (3-D), or w×w in each slice (2-D, w = 3,
    5 or 7); edges replicated."""
    _check_input("f", f)
    xp = array_namespace(f, out)
    w = int(window_size)
    if num_dims == 3:
        if w not in (3, 5):
            raise ValueError(f"the 3-D median window is 3 (3×3×3) or 5 (3×5×5), got {window_size}")
        size = (3, w, w)
    elif num_dims == 2:
        if w not in (3, 5, 7):
            raise ValueError(f"the 2-D median window is 3, 5 or 7, got {window_size}")
        size = (1, w, w)
    else:
        raise ValueError(f"num_dims must be 2 or 3, got {num_dims}")
    f3 = _as3d(f)
    m = _ndimage(xp).median_filter(f3, size=size, mode="nearest")
    res = xp.where(xp.abs(f3 - m) >= float(threshold) * xp.abs(m), m, f3).astype(f.dtype)
    res = res.reshape(f.shape)
    if out is None:
        return res
    out[...] = res
    return out


def bilateral(f, spatial_fwhm, intensity_fwhm, *, prior=None, scale=1.0, out=None):
    """Bilateral filter: a Gaussian-weighted mean over neighbours (spatial FWHM in
    voxels) whose weights also fall off with the intensity difference (intensity FWHM
    in value units) measured on ``prior`` (default: ``blur(f, scale)``, i.e. ``f`` for
    ``scale`` ≤ 1). Edges replicated."""
    _check_input("f", f)
    xp = array_namespace(f, prior, out)
    f3 = _as3d(f)
    sig_s = float(spatial_fwhm) / (2.0 * math.sqrt(2.0 * math.log(2.0)))
    sig_i = float(intensity_fwhm) / (2.0 * math.sqrt(2.0 * math.log(2.0)))
    if not (sig_s > 0 and sig_i > 0):
        raise ValueError("spatial_fwhm and intensity_fwhm must be positive")
    if prior is None:
        prior = blur(f, scale) if scale > 1.0 else f
    elif tuple(prior.shape) != tuple(f.shape):
        raise ValueError(f"prior must have f's shape {tuple(f.shape)}, got {tuple(prior.shape)}")
    # The result is built in new arrays and written to ``out`` last, so ``prior`` (or
    # ``f``) may share memory with ``out``: PriorBilateralFilter(f, ..., prior=f) is safe.
    p3 = _as3d(prior)
    R = max(1, int(math.ceil(float(spatial_fwhm))))
    pad = [(R, R) if n > 1 else (0, 0) for n in f3.shape]
    fp = xp.pad(f3, pad, mode="edge")
    pp = xp.pad(p3, pad, mode="edge")
    num = xp.zeros(f3.shape, dtype=xp.float32)
    den = xp.zeros(f3.shape, dtype=xp.float32)
    rng = [range(-R, R + 1) if n > 1 else (0,) for n in f3.shape]
    for a in rng[0]:
        for b in rng[1]:
            for c in rng[2]:
                ws = math.exp(-(a * a + b * b + c * c) / (2.0 * sig_s * sig_s))
                if ws < 1e-4:
                    continue
                sl = tuple(slice(pd[0] + o, pd[0] + o + n) for pd, o, n in zip(pad, (a, b, c), f3.shape))
                diff = pp[sl] - p3
                w = ws * xp.exp(-(diff * diff) / (2.0 * sig_i * sig_i))
                num += w * fp[sl]
                den += w
    res = (num / den).astype(f.dtype).reshape(f.shape)
    if out is None:
        return res
    out[...] = res
    return out


def guided(f, r, epsilon, num_iter=1, *, out=None):
    """Self-guided filter (He, Sun and Tang, 2013): in every (2r+1)³ box the output is
    the local linear fit a·f + b with a = var/(var + ε), averaged over the boxes that
    contain a voxel; ``epsilon`` (value units²) sets the smoothing. Repeated
    ``num_iter`` times."""
    _check_input("f", f)
    xp = array_namespace(f, out)
    nd = _ndimage(xp)
    r = _integer("r", r)
    if r < 1:
        raise ValueError(f"the guided filter's radius must be >= 1, got {r}")
    x = _as3d(f).astype(xp.float32, copy=True)
    size = tuple(2 * r + 1 if n > 1 else 1 for n in x.shape)
    for _ in range(check_count("num_iter", num_iter)):
        mean = nd.uniform_filter(x, size=size, mode="nearest")
        var = nd.uniform_filter(x * x, size=size, mode="nearest") - mean * mean
        a = var / (var + float(epsilon))
        b = mean * (1.0 - a)
        x = nd.uniform_filter(a, size=size, mode="nearest") * x + \
            nd.uniform_filter(b, size=size, mode="nearest")
    res = x.astype(f.dtype).reshape(f.shape)
    if out is None:
        return res
    out[...] = res
    return out
