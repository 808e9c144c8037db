"""LEAP-named iterative reconstruction and regularisation methods of ``tomographicModels``.

:class:`IterativeMethodsMixin` gives the facade LEAP's ``SIRT``, ``SART``, ``OSEM``,
``MLEM``, ``LS``, ``WLS``, ``RLS``, ``RWLS``, ``ASDPOCS``, ``MLTR``, the TV functions
(``TVcost``, ``TVgradient``, ``TVquadForm``, ``diffuse``, ``TV_denoise``), the
denoising filters the filter-sequence classes use (``BlurFilter``, ``MedianFilter``,
...), ``sensitivity`` and ``breakIntoSubsets``, with LEAP's argument names, order and
defaults. It holds no numerics: the operator is ``self.system.operator()`` (the
facade's :class:`leap.system.CTSystem`: field of view, mask and forward model
included), and the methods call :mod:`leap.algorithms` and :mod:`leap.algorithms.regularization`.

Beyond LEAP, every iterative method takes keyword-only ``progress`` (a tqdm bar for
runs longer than a second; ``False`` turns it off) and ``callback(iteration, f,
data_fit)`` (called after each iteration; returning ``True`` stops the run). Where
LEAP prints ``Error:`` and returns ``None``, these methods raise.
"""
from __future__ import annotations

import numbers

from .. import algorithms as _alg
from ..algorithms import regularization as _reg
from .filter_sequence import TV, denoisingFilter, filterSequence


def _filters(filters, name):
    """LEAP's ``filters`` argument as a filter sequence (or None)."""
    if filters is None:
        return None
    if isinstance(filters, filterSequence):
        return filters
    if isinstance(filters, denoisingFilter):
        seq = filterSequence(1.0)
        seq.append(filters)
        return seq
    if isinstance(filters, numbers.Real):
        raise TypeError(f"{name}: filters must be a filterSequence (LEAP's algorithm syntax "
                        "changed: build filterSequence(beta) and append TV(leapct, delta))")
    if hasattr(filters, "gradient") and hasattr(filters, "apply"):
        return filters          # any regulariser object of leap.algorithms' protocol
    raise TypeError(f"{name}: filters must be a filterSequence, got {type(filters).__name__}")


def _filtered_in_place(f):
    """``f`` for a filter that writes its result into it: raise a TypeError naming ``f``
    unless it is a floating-point 2-D or 3-D array (an integer array would silently
    truncate the filtered values)."""
    from ..algorithms._array import check_array_argument
    check_array_argument("f", f, "a float32 2-D or 3-D array (filtered in place)")
    if getattr(f.dtype, "kind", "f") != "f":
        raise TypeError(f"f must be a floating-point (float32) array: it is filtered in place, "
                        f"got dtype {f.dtype}")
    return f


def _step(num, denom_data, denom_reg) -> float:
    """``num / (denom_data + denom_reg)`` as a float; 0 when the denominator is below
    1e-16 in magnitude (LEAP's rule for step sizes)."""
    num, denom = float(num), float(denom_data) + float(denom_reg)
    return num / denom if abs(denom) > 1e-16 else 0.0


def _tv_beta(beta):
    # LEAP's TV routines treat beta <= 0 as 1.
    beta = float(beta)
    return beta if beta > 0 else 1.0


class IterativeMethodsMixin:
    """Iterative reconstruction and regularisation for ``tomographicModels``.

    Needs ``core_geometry()``, ``core_volume()`` and ``allocate_volume()`` from the class
    it is mixed into.
    """

    # ------------------------------------------------------------- helpers
    def _operator(self):
        return self.system.operator()

    def _checked_operator(self, g, f):
        """The operator of an iterative method, after checking that ``g`` and ``f`` are
        arrays (a clear TypeError naming them, before any work on them) and that ``f``
        is not the volume mask's memory (it would change the operator while it runs).
        Shapes, dtypes, finiteness and the overlap of ``f`` with the other inputs are
        checked by :func:`leap.algorithms._common.check_inputs`."""
        from ..algorithms._array import (check_array_argument, check_no_overlap, computable,
                                        is_array)
        op = self._operator()
        check_array_argument("g", g, f"the projections (a float32 array of shape "
                                     f"{tuple(op.range_shape)})")
        check_array_argument("f", f, f"the volume to update in place (a float32 array of "
                                     f"shape {tuple(op.domain_shape)})")
        mask = op.system.mask
        if mask is not None and is_array(mask):
            check_no_overlap("f", computable(f), **{"the volume mask": computable(mask)})
        return op

    def set_numTVneighbors(self, N):
        """Neighbourhood of the 3-D TV functions: 6 (faces) or 26 (faces, edges, corners)."""
        if isinstance(N, bool) or N not in (6, 26):
            raise ValueError(f"the number of TV neighbours must be 6 or 26, got {N!r}")
        self._num_tv_neighbors = int(N)
        return True

    def get_numTVneighbors(self):
        """The TV neighbourhood size (26 unless set with :meth:`set_numTVneighbors`)."""
        return getattr(self, "_num_tv_neighbors", 26)

    def sensitivity(self, f=None):
        """Back-projection of all-ones projections, ``Pᵀ1``, into ``f`` (allocated when
        None); returns ``f``."""
        from ..algorithms._array import check_array_argument, check_shape, prepare
        if f is None:
            f = self.allocate_volume()
        op = self._operator()
        check_array_argument("f", f, f"None or a float32 array of shape {tuple(op.domain_shape)}")
        xp, op, fv = prepare(op, f)
        check_shape("f", fv, op.domain_shape)
        op.adjoint(xp.ones(op.range_shape, dtype=xp.float32), out=fv)
        return f

    def breakIntoSubsets(self, g, numSubsets):
        """Projections split into ``numSubsets`` interleaved view subsets (views m, m+M,
        …) as a list of C-contiguous arrays."""
        if isinstance(numSubsets, bool) or not isinstance(numSubsets, numbers.Integral) \
                or numSubsets <= 0:
            raise ValueError(f"numSubsets must be a positive integer, got {numSubsets!r}")
        from ..algorithms._array import check_array_argument, computable
        check_array_argument("g", g, "a 3-D projection array (numAngles, numRows, numCols)")
        if getattr(g, "ndim", 0) != 3:
            raise ValueError("g must be a 3-D projection array (numAngles, numRows, numCols)")
        g = computable(g)
        xp = _alg.array_namespace(g)
        M = int(numSubsets)
        return [xp.ascontiguousarray(g[m::M], dtype=xp.float32) for m in range(M)]

    # ---------------------------------------------------- algebraic methods
    def SIRT(self, g, f, numIter, mask=None, *, progress=True, callback=None, client=None):
        r"""Simultaneous Iterative Reconstruction Technique: SART with one subset,

        .. math:: f \leftarrow f + \frac{0.9}{P^T 1} P^T\left[\frac{g - Pf}{P1}\right]

        ``mask`` (projections' shape; 0 = pixel not used) is optional; negatives are set
        to 0. ``callback`` gets ``½ Σ mask·(Pf − g)²/P1``. Returns ``f``. With
        ``client=`` or lazy inputs: on :func:`leap.distributed.sirt` (``f`` the start,
        filled when a NumPy array, else the result is returned as a dask array).
        """
        from .dask_dispatch import run, wants_dask
        if wants_dask(client, g, f, mask):
            return run("sirt", self.system, g, f, client, numIter, f, mask=mask,
                       progress=progress, callback=callback)
        return _alg.sirt(self._checked_operator(g, f), g, f, numIter, mask=mask,
                         nonnegative=True, progress=progress, callback=callback)

    def SART(self, g, f, numIter, numSubsets=1, mask=None, nonnegativityConstraint=True, *,
             progress=True, callback=None):
        """Simultaneous Algebraic Reconstruction Technique: SIRT updates over
        ``numSubsets`` interleaved view subsets in turn. Returns ``f`` (updated in place).
        See :func:`leap.algorithms.sart`."""
        return _alg.sart(self._checked_operator(g, f), g, f, numIter, numSubsets,
                         mask=mask, nonnegative=bool(nonnegativityConstraint),
                         progress=progress, callback=callback)

    def ASDPOCS(self, g, f, numIter, numSubsets, numTV, filters=None, mask=None,
                nonnegativityConstraint=True, *, tv_step=_alg.asdpocs.TV_STEP,
                line_search=True, progress=True, callback=None):
        """Adaptive Steepest Descent – POCS: SART passes (``numSubsets`` subsets), each
        continued along its direction to the data misfit's minimum, alternated with a TV
        phase of ``numTV`` steepest-descent steps on ``filters`` (a number is taken as
        TV's delta; a filterSequence with non-differentiable filters steps towards their
        output instead).

        Default filter: TV with delta = 0 and p = 1, i.e. plain total variation
        ``Σ |f_i − f_j|``, the functional Sidky & Pan's ASD-POCS minimises. LEAP's
        default is ``TV(leapct, delta=0.0)`` with p = 1.2, which penalises large jumps
        more than small ones and so erodes edges: on 20- and 30-view data at 30
        iterations it gives 0.37–0.95× SART's error where p = 1 gives 0.35–0.70×
        (0.95 against 0.60 on Shepp–Logan with one subset). With delta = 0 it has no
        value scale, so it suits attenuation in 1/mm as well as any other units (the
        result scales with g). Pass ``TV(leapct, delta, p)`` (delta about a twentieth
        of the contrast to keep, LEAP's advice) to smooth noise below delta
        quadratically, or another filterSequence.

        The TV phase moves the volume by at most the data step (Sidky & Pan's balance),
        and LEAP's iTV rule then limits it to giving back 80 % of the step's data-fit
        gain; the ``numTV`` steps share that budget (more steps follow the TV flow more
        closely). On 20-view data at 30 iterations the default gives 0.35–0.70× SART's
        error with one subset as with five, 0.60–0.68× on 30-view Shepp–Logan (see
        :func:`leap.algorithms.asd_pocs` for the figures). ``numTV`` ≤ 0 runs SART.

        Keyword-only, beyond LEAP: ``tv_step`` (default 1) scales the TV budget: lower
        it where TV's prior fits the object poorly (fine low-contrast detail, texture),
        raise it for piecewise-constant objects or noisy data; ``line_search=False``
        keeps SART's own step (LEAP's data step, slower to converge).
        ``g``: projections (numAngles, numRows, numCols), ``f``: volume (numZ, numY,
        numX), float32; ``mask``: projections' shape, 0 = pixel not used. Returns ``f``
        (updated in place). See :func:`leap.algorithms.asd_pocs`."""
        if filters is None:
            filters = filterSequence()
            filters.append(TV(self, delta=0.0, p=1.0))
        elif isinstance(filters, numbers.Real) and not isinstance(filters, bool):
            delta = float(filters)
            filters = filterSequence()
            filters.append(TV(self, delta=delta))
        else:
            filters = _filters(filters, "ASDPOCS")
        return _alg.asd_pocs(self._checked_operator(g, f), g, f, numIter, numSubsets, numTV,
                             filters, mask=mask, nonnegative=bool(nonnegativityConstraint),
                             tv_step=tv_step, line_search=bool(line_search),
                             progress=progress, callback=callback)

    # ------------------------------------------------------------ EM methods
    def MLEM(self, g, f, numIter, filters=None, mask=None, *, progress=True, callback=None):
        r"""Maximum Likelihood – Expectation Maximization,

        .. math:: f \leftarrow \frac{f}{P^T 1 + R'(f)} P^T\left[\frac{g}{Pf}\right]

        Differentiable ``filters`` enter through R' (one-step-late); non-differentiable
        ones are applied after each update, blended with weight ``filters.beta`` when it
        is below 1. An all-zero ``f`` starts from ones. ``callback`` gets the
        Kullback–Leibler data fit. Returns ``f``.
        """
        seq = _filters(filters, "MLEM")
        blend = getattr(seq, "beta", 1.0) if seq is not None else 0.0
        return _alg.mlem(self._checked_operator(g, f), g, f, numIter, regularizer=seq,
                         mask=mask, blend=blend, progress=progress, callback=callback)

    def OSEM(self, g, f, numIter, numSubsets=1, filters=None, mask=None, *, progress=True,
             callback=None):
        """Ordered Subsets – Expectation Maximization: MLEM updates over ``numSubsets``
        interleaved view subsets in turn. Returns ``f``. See :meth:`MLEM`."""
        seq = _filters(filters, "OSEM")
        blend = getattr(seq, "beta", 1.0) if seq is not None else 0.0
        return _alg.osem(self._checked_operator(g, f), g, f, numIter, numSubsets,
                         regularizer=seq, mask=mask, blend=blend, progress=progress,
                         callback=callback)

    def MLTR(self, g, f, numIter, numSubsets=1, filters=None, mask=None, *, progress=True,
             callback=None):
        """Maximum Likelihood Transmission reconstruction for low-count data (Poisson
        transmission model, ``t = exp(−g)``). ``g`` is not modified (LEAP converts it in
        place and back). Returns ``f``. See :func:`leap.algorithms.mltr`."""
        return _alg.mltr(self._checked_operator(g, f), g, f, numIter, numSubsets,
                         regularizer=_filters(filters, "MLTR"), mask=mask, progress=progress,
                         callback=callback)

    # ------------------------------------------------------ least squares
    def _default_weights(self, g):
        """LEAP's default WLS weights: ``exp(−blur₂D(g, FWHM 3))``."""
        from ..algorithms._array import computable
        g = computable(g)
        xp = _alg.array_namespace(g)
        return xp.exp(-_reg.blur(g, 3.0, num_dims=2)).astype(xp.float32)

    def LS(self, g, f, numIter, preconditioner=None, nonnegativityConstraint=True, *,
           progress=True, callback=None, client=None):
        r"""Least Squares, :math:`\frac12\|Pf - g\|^2`, by preconditioned conjugate
        gradients; ``preconditioner`` is None, 'SQS', 'RAMP' or 'SARR'. Returns ``f``.
        With ``client=`` or lazy inputs: on :func:`leap.distributed.ls` (None or 'SQS'),
        as :meth:`SIRT`."""
        from .dask_dispatch import run, wants_dask
        if wants_dask(client, g, f):
            return run("ls", self.system, g, f, client, numIter, f,
                       preconditioner=preconditioner,
                       nonnegative=bool(nonnegativityConstraint), progress=progress,
                       callback=callback)
        return self._rwls("LS", g, f, numIter, None, 1.0, preconditioner,
                          nonnegativityConstraint, progress, callback)

    def WLS(self, g, f, numIter, W=None, preconditioner=None, nonnegativityConstraint=True, *,
            progress=True, callback=None):
        r"""Weighted Least Squares, :math:`\frac12 (Pf-g)^T W (Pf-g)`; ``W`` defaults to
        ``exp(−g)`` (smoothed), and can mask out bad data. Returns ``f``."""
        return self._rwls("WLS", g, f, numIter, None, W, preconditioner,
                          nonnegativityConstraint, progress, callback)

    def RLS(self, g, f, numIter, filters=None, preconditioner=None, nonnegativityConstraint=True,
            *, progress=True, callback=None):
        r"""Regularized Least Squares, :math:`\frac12\|Pf - g\|^2 + R(f)` with R given by
        ``filters`` (a filterSequence). Returns ``f``."""
        return self._rwls("RLS", g, f, numIter, filters, 1.0, preconditioner,
                          nonnegativityConstraint, progress, callback)

    def RWLS(self, g, f, numIter, filters=None, W=None, preconditioner=None,
             nonnegativityConstraint=True, *, progress=True, callback=None):
        r"""Regularized Weighted Least Squares,

        .. math:: C(f) = \frac12 (Pf - g)^T W (Pf - g) + R(f),

        by preconditioned conjugate gradients. ``filters``: a filterSequence (its
        differentiable filters make R); ``W``: weights of g's shape (default
        ``exp(−g)``, smoothed; LEAP's choice), or a scalar; ``preconditioner``: None,
        'SQS' (``1/PᵀWP1``), 'RAMP' or 'SARR'. A non-zero ``f`` is the starting point
        (scaled to fit the data first). ``callback`` gets ``½(Pf−g)ᵀW(Pf−g)``; the
        regularizer's part is ``filters.cost(f)``. Returns ``f``.
        """
        return self._rwls("RWLS", g, f, numIter, filters, W, preconditioner,
                          nonnegativityConstraint, progress, callback)

    def RDLS(self, g, f, numIter, filters=None, preconditionerFWHM=1.0,
             nonnegativityConstraint=False, dimDeriv=1, *, progress=True, callback=None):
        r"""Regularized Derivative Least Squares,

        .. math:: C(f) = \frac12 (Pf - g)^T (-\Delta) (Pf - g) + R(f),

        with Δ the Laplacian of each projection (:meth:`Laplacian`: along columns for
        ``dimDeriv=1``, rows and columns for 2; its two-pixel smoothed form when
        ``preconditionerFWHM`` > 1, as LEAP), by conjugate gradients. Weighting the
        residual by −Δ (a ramp-like high-pass) makes the iterations converge like FBP:
        fast on edges, slow on the mean. Returns ``f``."""
        seq = _filters(filters, "RDLS")
        dims = int(dimDeriv)
        if dims not in (1, 2) or dims != dimDeriv:
            raise ValueError(f"dimDeriv must be 1 (columns) or 2 (rows and columns), got {dimDeriv!r}")
        smooth = float(preconditionerFWHM) > 1.0

        def minus_laplacian(r):
            y = self.copyData(r)
            self.Laplacian(y, dims, smooth)
            y *= -1.0
            return y

        return _alg.rwls(self._checked_operator(g, f), g, f, numIter, regularizer=seq,
                         weights=minus_laplacian, preconditioner=None,
                         nonnegative=bool(nonnegativityConstraint), progress=progress,
                         callback=callback, name="RDLS")

    def DLS(self, g, f, numIter, preconditionerFWHM=1.0, nonnegativityConstraint=False,
            dimDeriv=2, *, progress=True, callback=None):
        """Derivative Least Squares: :meth:`RDLS` without regularisation. Returns ``f``."""
        return self.RDLS(g, f, numIter, None, preconditionerFWHM, nonnegativityConstraint,
                         dimDeriv, progress=progress, callback=callback)

    # ------------------------------------------------------- step sizes
    def RWLSstepSize(self, f, grad, d, Pd, W, filters, num=None):
        r"""Step size of an RWLS iteration along the descent direction ``d``: the minimiser
        of the quadratic model of :math:`\frac12 (Pf-g)^T W (Pf-g) + R(f)` along ``d``,

        .. math:: \lambda = \frac{\langle d, \mathrm{grad}\rangle}
                  {\langle Pd, W\,Pd\rangle + d^T H_R d},

        ``grad`` the cost's (negative) gradient that ``d`` descends, ``Pd`` the projection
        of ``d``, ``W`` the weights (None: all ones), ``filters`` R (a filterSequence or
        None; ``dᵀH_R d`` is its ``quadForm(f, d)``, counted when its beta > 0) and
        ``num`` the numerator if already known. Volumes and projections as in
        :meth:`RWLS`; returns a float, 0 where the denominator vanishes (LEAP's rule)."""
        if num is None:
            num = self.innerProd(d, grad)
        denom = self.innerProd(Pd, Pd) if W is None else self.innerProd(Pd, Pd, W)
        return _step(num, denom, self._quad_form(filters, f, d, "RWLSstepSize"))

    def RDLSstepSize(self, f, grad, d, Pd, filters, dimDeriv, smoothLaplacian):
        r"""Step size of an RDLS iteration along ``d``: as :meth:`RWLSstepSize` with the
        weights −Δ of :meth:`RDLS` (the projections' Laplacian, along columns for
        ``dimDeriv=1``, rows and columns for 2, its two-pixel form when
        ``smoothLaplacian``): :math:`\lambda = \langle d, \mathrm{grad}\rangle /
        (\langle -\Delta Pd, Pd\rangle + d^T H_R d)`. Returns a float."""
        num = self.innerProd(d, grad)
        LPd = self.copyData(Pd)
        self.Laplacian(LPd, dimDeriv, smoothLaplacian)
        denom = -self.innerProd(LPd, Pd)
        return _step(num, denom, self._quad_form(filters, f, d, "RDLSstepSize"))

    @staticmethod
    def _quad_form(filters, f, d, name):
        """``dᵀ H_R d`` of ``filters`` at ``f`` (0 without filters or with beta ≤ 0)."""
        seq = _filters(filters, name)
        if seq is None or not getattr(seq, "beta", 1.0) > 0.0:
            return 0.0
        quad = getattr(seq, "quadForm", None) or getattr(seq, "quad_form", None)
        if quad is None:
            raise TypeError(f"{name}: filters must define quadForm(f, d) (a differentiable "
                            f"filter sequence), got {type(seq).__name__}")
        return quad(f, d)

    def _rwls(self, name, g, f, numIter, filters, W, preconditioner, nonnegativityConstraint,
              progress, callback):
        seq = _filters(filters, name)
        op = self._checked_operator(g, f)
        if W is None:
            W = self._default_weights(g)
        return _alg.rwls(op, g, f, numIter, regularizer=seq, weights=W,
                         preconditioner=preconditioner,
                         nonnegative=bool(nonnegativityConstraint), progress=progress,
                         callback=callback, name=name)

    # ------------------------------------------------------------------- TV
    def TVcost(self, f, delta, beta=0.0, p=1.2):
        r"""Anisotropic TV functional of any 2-D/3-D array,
        :math:`\beta\sum_{\{i,j\}}\|i-j\|^{-1}h(f_i - f_j)` over neighbour pairs (see
        :mod:`leap.algorithms.regularization`; ``beta`` ≤ 0 counts as 1, as in LEAP). Each pair is
        counted once, so the value is half LEAP's (whose gradient counts it once too)."""
        return _reg.tv_cost(f, delta, _tv_beta(beta), p, neighbors=self.get_numTVneighbors())

    def TVgradient(self, f, delta, beta=0.0, p=1.2):
        """Gradient of :meth:`TVcost` (a new array; LEAP's values)."""
        return _reg.tv_gradient(f, delta, _tv_beta(beta), p, neighbors=self.get_numTVneighbors())

    def TVquadForm(self, f, d, delta, beta=0.0, p=1.2):
        """``dᵀ H d`` for the quadratic surrogate of :meth:`TVcost` at ``f`` (h'' replaced
        by h'(t)/t, an upper bound); half LEAP's number, like the cost."""
        return _reg.tv_quad_form(f, d, delta, _tv_beta(beta), p,
                                 neighbors=self.get_numTVneighbors())

    def diffuse(self, f, delta, numIter, p=1.2):
        """``numIter`` TV steepest-descent steps on ``f`` in place (LEAP's step size);
        returns ``f``."""
        _filtered_in_place(f)
        return _reg.tv_diffuse(f, delta, numIter, p, neighbors=self.get_numTVneighbors(), out=f)

    def TV_denoise(self, f, delta, beta, numIter, p=1.2, meanOverFirstDim=False):
        """TV denoising of ``f`` in place towards ``argmin ½‖x − f‖² + βTV(x)`` with LEAP's
        ``numIter`` steps (:func:`leap.algorithms.regularization.tv_denoise`); returns ``f``."""
        _filtered_in_place(f)
        return _reg.tv_denoise(f, delta, beta, numIter, p, neighbors=self.get_numTVneighbors(),
                               mean_over_first_dim=bool(meanOverFirstDim), out=f)

    # -------------------------------------------------------------- filters
    def BlurFilter(self, f, FWHM=2.0):
        """Low-pass filter ``f`` in place (raised cosine, FWHM in voxels); returns ``f``."""
        return _reg.blur(_filtered_in_place(f), FWHM, out=f)

    LowPassFilter = BlurFilter

    def HighPassFilter(self, f, FWHM=2.0):
        """``f − BlurFilter(f)``, in place; returns ``f``."""
        return _reg.high_pass(_filtered_in_place(f), FWHM, out=f)

    def BlurFilter2D(self, f, FWHM=2.0):
        """:meth:`BlurFilter` within each slice ``f[k]``."""
        return _reg.blur(_filtered_in_place(f), FWHM, num_dims=2, out=f)

    LowPassFilter2D = BlurFilter2D

    def HighPassFilter2D(self, f, FWHM=2.0):
        return _reg.high_pass(_filtered_in_place(f), FWHM, num_dims=2, out=f)

    def MedianFilter(self, f, threshold=0.0, windowSize=3):
        """Thresholded 3-D median filter (3×3×3 or 3×5×5), in place; returns ``f``."""
        return _reg.median(_filtered_in_place(f), threshold, windowSize, out=f)

    def MedianFilter2D(self, f, threshold=0.0, windowSize=3):
        """Thresholded median filter within each slice (3, 5 or 7 wide), in place."""
        return _reg.median(_filtered_in_place(f), threshold, windowSize, num_dims=2, out=f)

    def BilateralFilter(self, f, spatialFWHM, intensityFWHM, scale=1.0):
        """Bilateral filter, in place; returns ``f``."""
        return _reg.bilateral(_filtered_in_place(f), spatialFWHM, intensityFWHM, scale=scale,
                              out=f)

    def PriorBilateralFilter(self, f, spatialFWHM, intensityFWHM, prior=None):
        """Bilateral filter whose intensity weights compare values of ``prior`` (an array;
        a number or None: as :meth:`BilateralFilter` with that scale)."""
        if prior is None or isinstance(prior, numbers.Real):
            return self.BilateralFilter(f, spatialFWHM, intensityFWHM,
                                        1.0 if prior is None else float(prior))
        from ..algorithms._array import check_array_argument
        check_array_argument("prior", prior, "None, a number or an array of f's shape")
        # bilateral() writes f only once its result is complete, so a prior that shares
        # memory with f (e.g. prior=f) gives the same result as a copy of it.
        return _reg.bilateral(_filtered_in_place(f), spatialFWHM, intensityFWHM, prior=prior,
                              out=f)

    def GuidedFilter(self, f, r, epsilon, numIter=1):
        """Self-guided filter (radius ``r`` ≤ 10 voxels), in place; returns ``f``."""
        return _reg.guided(_filtered_in_place(f), min(int(r), 10), epsilon, numIter, out=f)
