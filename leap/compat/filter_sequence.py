"""LEAP's filter-sequence API: regularisers and denoising filters for the iterative
methods (upstream ``leap_filter_sequence.py``; names and arguments kept).

A :class:`filterSequence` is a weighted sum of filters. Differentiable filters
(:class:`TV`, :class:`LpNorm`, :class:`histogramSparsity`) define ``cost``,
``gradient`` and ``quadForm`` and can regularise every gradient-based method (RLS,
RWLS, MLEM/OSEM, MLTR); non-differentiable ones (:class:`BlurFilter`,
:class:`MedianFilter`, :class:`BilateralFilter`, :class:`GuidedFilter`) only
``apply`` a denoising step and are used by ASD-POCS (and MLEM, after each update).
The cost of a sequence is ``beta · Σ cost`` over its differentiable filters with
positive weight, each filter carrying its own ``weight``.

Every filter takes the ``tomographicModels`` object as its first argument, as in
LEAP; it is used only for settings such as the TV neighbourhood
(``leapct.set_numTVneighbors``). The numerics are in :mod:`leap.algorithms.regularization`
and run on NumPy or CuPy arrays.

Example (as in LEAP)::

    filters = filterSequence(1.0e1)
    filters.append(TV(leapct, delta=0.02 / 20.0))
    leapct.RWLS(g, f, 50, filters, preconditioner='SQS')
"""
from __future__ import annotations

import numpy as np

from ..algorithms import regularization as _reg
from ..algorithms._array import array_namespace, check_no_overlap, vdot

__all__ = ["denoisingFilter", "filterSequence", "TV", "LpNorm", "histogramSparsity",
           "BlurFilter", "MedianFilter", "BilateralFilter", "GuidedFilter"]


def _tv_neighbors(leapct) -> int:
    get = getattr(leapct, "get_numTVneighbors", None)
    return int(get()) if callable(get) else 26


class denoisingFilter:
    """Base class of all filters (LEAP's name).

    Subclasses set ``isDifferentiable`` and define ``apply`` (a denoising step, in
    place, returning its input); differentiable ones also define ``cost``,
    ``gradient`` and ``quadForm``. The default ``apply`` of a differentiable filter is
    one descent step on its cost with the step ``|∇C|² / quadForm(f, ∇C)``.
    """

    def __init__(self, leapct):
        self.leapct = leapct
        self.weight = 1.0
        self.isDifferentiable = False

    def __repr__(self):
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items()
                           if k != "leapct" and not isinstance(v, np.ndarray)
                           and not hasattr(v, "__cuda_array_interface__"))
        return f"{type(self).__name__}({fields})"

    def _not_differentiable(self, what):
        raise TypeError(f"{type(self).__name__} is not differentiable: it has no {what}; "
                        "use it in ASDPOCS (or MLEM), or use a differentiable filter such as TV")

    def cost(self, f):
        """The filter's cost functional at ``f`` (a float)."""
        self._not_differentiable("cost")

    def gradient(self, f):
        """The gradient of :meth:`cost` at ``f`` (an array of f's shape)."""
        self._not_differentiable("gradient")

    def quadForm(self, f, d):
        """``dᵀ H d`` for a quadratic surrogate (Hessian bound) of :meth:`cost` at ``f``."""
        self._not_differentiable("quadratic form")

    def quad_form(self, f, d):
        return self.quadForm(f, d)

    def apply(self, f):
        """Denoise ``f`` in place; returns ``f``."""
        if not self.isDifferentiable:
            raise NotImplementedError(f"{type(self).__name__} does not define apply")
        d = self.gradient(f)
        num = vdot(d, d)
        denom = self.quadForm(f, d)
        if num > 0 and denom > 0:
            f -= (num / denom) * d
        return f


class filterSequence:
    """A weighted sequence of filters (LEAP's name).

    Parameters
    ----------
    beta : float
        Overall strength; with ``beta`` ≤ 0 the sequence contributes no cost or gradient.
    """

    def __init__(self, beta=1.0):
        self.filters = []
        self.beta = float(beta)

    def __repr__(self):
        return f"filterSequence(beta={self.beta!r}, filters={self.filters!r})"

    def __len__(self):
        return len(self.filters)

    def __iter__(self):
        return iter(self.filters)

    def count(self):
        return len(self.filters)

    def append(self, newFilter):
        """Add a filter. ASD-POCS applies the filters in order; gradient-based methods use
        ``beta · Σ filter.cost`` over the differentiable ones."""
        if not isinstance(newFilter, denoisingFilter):
            raise TypeError("filterSequence.append expects a filter (TV, LpNorm, "
                            f"histogramSparsity, BlurFilter, ...), got {type(newFilter).__name__}")
        self.filters.append(newFilter)
        return self

    def anyDifferentiable(self):
        return any(flt.isDifferentiable for flt in self.filters)

    def clear(self):
        """Remove all filters."""
        self.filters = []

    def _terms(self):
        if self.beta > 0.0:
            for flt in self.filters:
                if flt.isDifferentiable and flt.weight > 0.0:
                    yield flt

    @property
    def differentiable(self) -> bool:
        """Whether the sequence contributes a cost (β > 0 and a differentiable filter):
        what the algorithms in :mod:`leap.algorithms` check."""
        return self.beta > 0.0 and self.anyDifferentiable()

    def cost(self, f):
        """``beta · Σ cost(f)`` over the differentiable filters with positive weight."""
        return self.beta * sum(float(flt.cost(f)) for flt in self._terms())

    def gradient(self, f):
        """``beta · Σ gradient(f)`` (zeros when there is no such filter)."""
        xp = array_namespace(f)
        D = xp.zeros(f.shape, dtype=f.dtype)
        for flt in self._terms():
            D += flt.gradient(f)
        D *= self.beta
        return D

    def quadForm(self, f, d):
        """``beta · Σ quadForm(f, d)``."""
        return self.beta * sum(float(flt.quadForm(f, d)) for flt in self._terms())

    quad_form = quadForm

    def apply(self, f):
        """Apply every filter in turn, in place; returns ``f``."""
        for flt in self.filters:
            out = flt.apply(f)
            if out is not None and out is not f:
                f[...] = out
        return f


class TV(denoisingFilter):
    """Anisotropic total variation with LEAP's Huber-like potential (see
    :mod:`leap.algorithms.regularization`): ``weight · Σ_pairs ‖i−j‖⁻¹ h(f_i − f_j)``.

    Choose ``delta`` below the contrast to preserve (LEAP suggests starting from a
    twentieth of the difference between two materials' values).

    Parameters
    ----------
    leapct : tomographicModels (its TV neighbourhood, 6 or 26, is used)
    delta : float  Huber threshold (value units); 0 means the pure ``|t|^p`` potential.
    p : float      exponent beyond delta (1.2 as in LEAP; 1 = Huber).
    weight : float strength of this term.
    f_0 : optional prior volume; then the functional is TV(f − f_0) (PICCS).
    """

    def __init__(self, leapct, delta=0.0, p=1.2, weight=1.0, f_0=None):
        super().__init__(leapct)
        self.delta = float(delta)
        self.p = max(0.01, float(p))
        self.weight = float(weight)
        self.isDifferentiable = True
        self.f_0 = f_0

    def _x(self, f):
        if self.f_0 is None:
            return f
        # f − f_0 with f_0 a view of f would be 0 whatever f is: the filter would do nothing.
        check_no_overlap("f", f, f_0=self.f_0)
        return f - self.f_0

    def cost(self, f):
        return _reg.tv_cost(self._x(f), self.delta, self.weight, self.p,
                            neighbors=_tv_neighbors(self.leapct))

    def gradient(self, f):
        return _reg.tv_gradient(self._x(f), self.delta, self.weight, self.p,
                                neighbors=_tv_neighbors(self.leapct))

    def quadForm(self, f, d):
        return _reg.tv_quad_form(self._x(f), d, self.delta, self.weight, self.p,
                                 neighbors=_tv_neighbors(self.leapct))

    def apply(self, f):
        """One TV diffusion step (LEAP's ``diffuse``), in place."""
        n = _tv_neighbors(self.leapct)
        if self.f_0 is None:
            return _reg.tv_diffuse(f, self.delta, 1, self.p, neighbors=n, out=f)
        f[...] = _reg.tv_diffuse(self._x(f), self.delta, 1, self.p, neighbors=n) + self.f_0
        return f


class LpNorm(denoisingFilter):
    """``weight · Σ h(B(f − f_0))``: LEAP's Huber-like potential of the (filtered) values.

    ``B`` is the identity, or for ``FWHM`` > 1 the low-pass
    :func:`~leap.algorithms.regularization.blur` of that FWHM (voxels), or for ``FWHM`` < −1
    the high-pass ``I − blur``. The gradient uses B's exact transpose.
    """

    def __init__(self, leapct, delta=0.0, p=1.0, weight=1.0, f_0=None, FWHM=0.0):
        super().__init__(leapct)
        self.delta = float(delta)
        self.p = max(0.01, float(p))
        self.weight = float(weight)
        self.f_0 = f_0
        self.FWHM = float(FWHM)
        self.isDifferentiable = True

    def _B(self, x):
        if self.FWHM > 1.0:
            return _reg.blur(x, self.FWHM)
        if self.FWHM < -1.0:
            return _reg.high_pass(x, -self.FWHM)
        return x

    def _Bt(self, y):
        if self.FWHM > 1.0:
            return _reg.blur_adjoint(y, self.FWHM)
        if self.FWHM < -1.0:
            return y - _reg.blur_adjoint(y, -self.FWHM)
        return y

    def _Bx(self, f):
        if self.f_0 is None:
            return self._B(f)
        check_no_overlap("f", f, f_0=self.f_0)      # else f − f_0 = 0 whatever f is
        return self._B(f - self.f_0)

    def cost(self, f):
        xp = array_namespace(f)
        return self.weight * float(xp.sum(_reg.huber(self._Bx(f), self.delta, self.p),
                                          dtype=xp.float64))

    def gradient(self, f):
        return (self.weight * self._Bt(_reg.huber_derivative(self._Bx(f), self.delta, self.p))
                ).astype(f.dtype, copy=False)

    def quadForm(self, f, d):
        Bd = self._B(d)
        return self.weight * vdot(Bd, Bd, _reg.huber_curvature(self._Bx(f), self.delta, self.p))


class histogramSparsity(denoisingFilter):
    """Encourages values near a few expected ones ``mus`` (0 is always added):
    ``weight · Σ_i Π_l G(f_i − μ_l)`` with the Geman–McClure function
    ``G(x) = x²/(x² + c)``, c a quarter of the smallest squared gap between the μ's.

    Non-convex: start from a reasonable reconstruction. ``quadForm`` is an
    approximation (curvature ``G'(x)/x`` at the nearest μ), as in LEAP.
    """

    def __init__(self, leapct, mus=None, weight=1.0):
        super().__init__(leapct)
        self.weight = float(weight)
        self.isDifferentiable = True
        mus = np.atleast_1d(np.asarray([] if mus is None else mus, dtype=np.float64))
        self.mus = np.unique(np.append(mus, 0.0))
        if self.mus.size > 1:
            self.GemanParam = 0.25 * float(np.min(np.diff(self.mus))) ** 2
        else:
            self.GemanParam = 1.0e-5

    def Geman0(self, x):
        return x * x / (x * x + self.GemanParam)

    def Geman1(self, x):
        s = x * x + self.GemanParam
        return 2.0 * self.GemanParam * x / (s * s)

    def Geman1_over_x(self, x):
        s = x * x + self.GemanParam
        return 2.0 * self.GemanParam / (s * s)

    def cost(self, f):
        xp = array_namespace(f)
        prod = xp.ones(f.shape, dtype=xp.float64)
        for mu in self.mus:
            prod *= self.Geman0(f - mu)
        return self.weight * float(xp.sum(prod))

    def gradient(self, f):
        xp = array_namespace(f)
        G0 = [self.Geman0(f - mu) for mu in self.mus]
        D = xp.zeros(f.shape, dtype=f.dtype)
        for l, mu in enumerate(self.mus):
            term = self.Geman1(f - mu)
            for k, g0 in enumerate(G0):
                if k != l:
                    term = term * g0
            D += term
        D *= self.weight
        return D

    def quadForm(self, f, d):
        xp = array_namespace(f, d)
        nearest = xp.abs(f - self.mus[0])
        for mu in self.mus[1:]:
            nearest = xp.minimum(nearest, xp.abs(f - mu))
        return self.weight * vdot(d, d, self.Geman1_over_x(nearest))


class BlurFilter(denoisingFilter):
    """LEAP's raised-cosine low-pass of full width at half maximum ``FWHM`` voxels."""

    def __init__(self, leapct, FWHM):
        super().__init__(leapct)
        self.FWHM = float(FWHM)

    def apply(self, f):
        return _reg.blur(f, self.FWHM, out=f)


class MedianFilter(denoisingFilter):
    """Thresholded 3-D median filter: window 3 (3×3×3) or 5 (3×5×5); a value is replaced
    by its median only where ``|value − median| ≥ threshold·|median|``."""

    def __init__(self, leapct, threshold=0.0, windowSize=3):
        super().__init__(leapct)
        self.threshold = float(threshold)
        self.windowSize = int(windowSize)

    def apply(self, f):
        return _reg.median(f, self.threshold, self.windowSize, out=f)


class BilateralFilter(denoisingFilter):
    """Bilateral filter: spatial FWHM (voxels), intensity FWHM (value units), and
    ``scale``: the FWHM of a blur applied to the values the intensity weights compare
    (≤ 1: none)."""

    def __init__(self, leapct, spatialFWHM, intensityFWHM, scale=1.0):
        super().__init__(leapct)
        self.spatialFWHM = float(spatialFWHM)
        self.intensityFWHM = float(intensityFWHM)
        self.scale = float(scale)

    def apply(self, f):
        return _reg.bilateral(f, self.spatialFWHM, self.intensityFWHM, scale=self.scale, out=f)


class GuidedFilter(denoisingFilter):
    """Self-guided filter with window radius ``r`` (voxels) and smoothing ``epsilon``."""

    def __init__(self, leapct, r, epsilon):
        super().__init__(leapct)
        self.r = int(r)
        self.epsilon = float(epsilon)

    def apply(self, f):
        return _reg.guided(f, self.r, self.epsilon, out=f)
