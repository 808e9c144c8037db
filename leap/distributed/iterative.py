"""Iterative reconstruction on Dask: the iterate stays on the workers, one z-slab per
chunk, between iterations.

Each method mirrors its in-memory counterpart in :mod:`leap.algorithms` step for step
(same arithmetic, same stopping rules, same data fit passed to ``callback``), with
projections and back-projections done slab by slab (:class:`~leap.distributed.slabs.SlabPlan`)
and the scalars (inner products) computed on the cluster; after every update the new
iterate (and its projection) are persisted, so each iteration's graph is small and the
previous iterate's memory is released.

``callback(iteration, f, data_fit)`` gets ``f`` as a persisted dask array (``f.compute()``
fetches it; cheap statistics such as ``f.mean().compute()`` run on the workers).
"""
from __future__ import annotations

import numbers

import numpy as np

from ..algorithms._array import safe_reciprocal
from ..algorithms._common import check_count
from ..algorithms._monitor import IterationMonitor
from ..algorithms.least_squares import CG_RESTART
from ..algorithms.sart import check_relaxation
from . import _cluster, tv as _tv
from .maps import open_input
from .sources import _da, as_dask
from .slabs import SlabPlan, check_system


class _Problem:
    """A system's slab plan, the client, and the dask arrays of one reconstruction."""

    def __init__(self, system, client, slabs):
        check_system(system)
        self.client = _cluster.resolve_client(client)
        self.system = system
        self.plan = SlabPlan(system, slabs, self.client)
        self.slabs = len(self.plan.bounds)
        self._subset_plans = {}

    # arrays ------------------------------------------------------------------
    def projections(self, x, name):
        if x is None:
            return None
        return as_dask(open_input(x, name, self.system.projection_shape))

    def volume(self, f):
        da = _da()
        if f is None:
            return da.zeros(self.system.volume_shape, dtype=np.float32,
                            chunks=self.plan.volume_chunks)
        return as_dask(open_input(f, "f", self.system.volume_shape)).rechunk(
            self.plan.volume_chunks)

    def ones_volume(self):
        return _da().ones(self.system.volume_shape, dtype=np.float32,
                          chunks=self.plan.volume_chunks)

    def ones_projections(self, plan=None):
        plan = plan or self.plan
        views, rows, nc = plan.projection_chunks()
        chunks = (tuple(b - a for a, b in views), tuple(b - a for a, b in rows), (nc,))
        return _da().ones(plan.system.projection_shape, dtype=np.float32, chunks=chunks)

    # maps --------------------------------------------------------------------
    def subset(self, views):
        """The slab plan of some views (a slice)."""
        key = (views.start, views.stop, views.step)
        if key not in self._subset_plans:
            self._subset_plans[key] = SlabPlan(self.system.views(views), self.slabs)
        return self._subset_plans[key]

    def forward(self, f, plan=None):
        return (plan or self.plan).project(f)

    def adjoint(self, g, plan=None):
        return (plan or self.plan).backproject(g)

    def persist(self, *xs):
        out = _cluster.persist(self.client, *xs)
        return out if len(out) > 1 else out[0]

    def scalars(self, *exprs):
        """Compute dask scalars (or delayed floats) on the cluster, as Python floats."""
        return tuple(float(v) for v in _cluster.compute(self.client, *exprs))


def _checked(x, name, shape):
    """``x`` checked (None kept): a Source or NumPy array as it is, else a dask array."""
    if x is None:
        return None
    from .sources import Source
    if isinstance(x, (Source, np.ndarray)):
        from .maps import check_input
        check_input(name, x, shape)
        return x
    return open_input(x, name, shape)


def _vdot(x, y, w=None):
    """<x, y> (or <x, w y>) as a lazy float64 sum, as :func:`leap.algorithms._array.vdot`."""
    prod = x * y if w is None else x * y * w
    return prod.sum(dtype=np.float64)


def _aligned(x, like):
    return x.rechunk(like.chunks)


def _out_of_core(name, client, out, callback):
    """Whether a method runs out of core here (``client=False`` and ``out``); refuses a
    ``callback`` there and ``out`` with a cluster."""
    if client is False and out is not None:
        if callback is not None:
            raise ValueError(f"the out-of-core {name} (client=False, out=...) takes no "
                             "callback")
        return True
    if out is not None:
        raise ValueError(f"out= writes the out-of-core {name} (client=False); with a cluster, "
                         "store the result yourself (leap.distributed.write_zarr)")
    return False


def _stream_inputs(system, g, f, **projections):
    """The checked inputs of an out-of-core method: ``(g, f, {name: array})``."""
    check_system(system)
    return (_checked(g, "g", system.projection_shape), _checked(f, "f", system.volume_shape),
            {k: _checked(x, k, system.projection_shape) for k, x in projections.items()})


# ------------------------------------------------------------------- SIRT / SART
def sart(system, g, num_iter, num_subsets=1, f=None, *, mask=None, nonnegative=True,
         relaxation=0.9, progress=False, callback=None, client=None, slabs=None, out=None,
         overwrite=False, out_format=None, scratch_dir=None, name="SART"):
    """OS-SART on Dask: :func:`leap.algorithms.sart` with the volume in z-slabs on the
    workers.

    ``g``: projections (dask array, NumPy array or source, float32); ``f``: the
    starting volume (None: zeros); ``mask``: projection mask (0 = pixel not used);
    ``client``, ``slabs``: as for :func:`leap.distributed.fbp`. Subsets are LEAP's
    interleaved views (m, m+M, …).

    Returns the reconstructed volume, a persisted dask array (num_z, num_y, num_x)
    float32 chunked by slabs.

    With ``client=False`` and ``out`` (a Zarr, HDF5 or TIFF-stack path, as for
    :func:`leap.distributed.fbp`), OS-SART runs out of core on this machine
    (:mod:`leap.distributed.stream_sirt`): the projections are read once and every
    array lives on local disk (``scratch_dir``), a slab at a time in memory; the result
    is written to ``out`` and read back lazily. No ``callback`` there.
    """
    if _out_of_core(name, client, out, callback):
        from .stream_sirt import stream_sart
        g, f, p = _stream_inputs(system, g, f, mask=mask)
        return stream_sart(system, g, num_iter, num_subsets, out, f=f, mask=p["mask"],
                           nonnegative=nonnegative, relaxation=relaxation, slabs=slabs,
                           overwrite=overwrite, out_format=out_format, progress=progress,
                           scratch_dir=scratch_dir, name=name)
    num_iter = check_count("num_iter", num_iter)
    lam = check_relaxation(relaxation)
    pb = _Problem(system, client, slabs)
    g = pb.projections(g, "g")
    mask = pb.projections(mask, "mask")
    f = pb.volume(f)
    M = max(1, min(check_count("num_subsets", num_subsets, 0), system.geometry.num_angles))

    w = safe_reciprocal(pb.forward(pb.ones_volume()), _da())
    if mask is not None:
        w = w * _aligned(mask, w)
    subsets = [slice(None)] if M == 1 else [slice(m, None, M) for m in range(M)]
    plans = [pb.plan] if M == 1 else [pb.subset(s) for s in subsets]
    inv_sens = [safe_reciprocal(pb.adjoint(pb.ones_projections(p), p), _da()) for p in plans]
    # Everything the iterations reuse is computed once and kept on the workers.
    g, w, f, *inv_sens = pb.persist(_aligned(g, w), w, f, *inv_sens)
    g_sub = [g] if M == 1 else [g[s] for s in subsets]
    w_sub = [w] if M == 1 else [w[s] for s in subsets]

    def update(f, m, Pf_m):
        r = (_aligned(g_sub[m], Pf_m) - Pf_m) * _aligned(w_sub[m], Pf_m)
        d = pb.adjoint(r, plans[m]) * inv_sens[m]
        f = f + lam * d
        if nonnegative:
            f = _da().maximum(f, 0.0)
        return f

    def data_fit(Pf):
        r = Pf - _aligned(g, Pf)
        return 0.5 * pb.scalars(_vdot(r, r, _aligned(w, Pf)))[0]

    Pf = pb.persist(pb.forward(f)) if M == 1 else None
    with IterationMonitor(name, num_iter, progress, callback) as mon:
        for n in range(num_iter):
            for m in range(M):
                Pf_m = Pf if M == 1 else pb.forward(f, plans[m])
                f = pb.persist(update(f, m, Pf_m).astype(np.float32))
            if M == 1:
                Pf = pb.persist(pb.forward(f))
                fit = data_fit(Pf)
            else:
                fit = data_fit(pb.forward(f)) if mon.wants_data_fit else None
            if mon.step(n + 1, f, fit):
                break
    return f


def sirt(system, g, num_iter, f=None, *, mask=None, nonnegative=True, relaxation=0.9,
         progress=False, callback=None, client=None, slabs=None, out=None, overwrite=False,
         out_format=None, scratch_dir=None):
    """SIRT on Dask: :func:`sart` with one subset (see there and
    :func:`leap.algorithms.sirt`).

    With ``client=False`` and ``out`` (a Zarr, HDF5 or TIFF-stack path, as for
    :func:`leap.distributed.fbp`), SIRT runs out of core on this machine
    (:mod:`leap.distributed.stream_sirt`): the projections are read once and every
    array lives on local disk (``scratch_dir``), a slab at a time in memory; the result
    is written to ``out`` and read back lazily. No ``callback`` there."""
    return sart(system, g, num_iter, 1, f, mask=mask, nonnegative=nonnegative,
                relaxation=relaxation, progress=progress, callback=callback, client=client,
                slabs=slabs, out=out, overwrite=overwrite, out_format=out_format,
                scratch_dir=scratch_dir, name="SIRT")


# --------------------------------------------------------------------- RWLS / LS
def rwls(system, g, num_iter, f=None, *, regularizer=None, weights=None, preconditioner=None,
         nonnegative=True, progress=False, callback=None, client=None, slabs=None, out=None,
         overwrite=False, out_format=None, scratch_dir=None, name="RWLS"):
    """Regularised weighted least squares by preconditioned conjugate gradients on Dask:
    :func:`leap.algorithms.rwls` with the volume in z-slabs on the workers.

    ``regularizer``: None or a :class:`leap.algorithms.regularization.TotalVariation` (its
    gradient, cost and quadratic form computed slab by slab with one ghost slice);
    ``weights``: None, a number or projections (dask/NumPy/source) of ``g``'s shape;
    ``preconditioner``: None or 'SQS' (``1/PᵀWP1``). Other arguments as for
    :func:`sart`. Returns the volume as a persisted dask array chunked by slabs.

    With ``client=False`` and ``out`` (as for :func:`sart`) and no regulariser, the
    conjugate gradients run out of core on this machine (:mod:`leap.distributed.stream_ls`;
    preconditioner None, 'SQS' or 'RAMP'; no ``callback``). A regulariser there raises
    NotImplementedError (its gradient needs neighbouring slices: use a cluster or
    :func:`leap.algorithms.rwls`).
    """
    if callable(weights) and not hasattr(weights, "shape"):
        raise TypeError("the distributed rwls takes weights as None, a number or an array of "
                        "the projections' shape, not a callable")
    if _out_of_core(name, client, out, callback):
        from .stream_ls import stream_rwls
        if _tv.check_regularizer(regularizer) is not None:
            raise NotImplementedError(f"the out-of-core {name} (client=False, out=...) takes "
                                      "no regularizer; run it with a cluster (client=None) "
                                      "or in memory (leap.algorithms.rwls)")
        scalar = weights is None or isinstance(weights, numbers.Real) \
            or getattr(weights, "ndim", None) == 0
        g, f, p = _stream_inputs(system, g, f, **{"weights (W)": None if scalar else weights})
        return stream_rwls(system, g, num_iter, out, f=f,
                           weights=weights if scalar else p["weights (W)"],
                           preconditioner=preconditioner, nonnegative=nonnegative,
                           slabs=slabs, overwrite=overwrite, out_format=out_format,
                           progress=progress, scratch_dir=scratch_dir, name=name)
    num_iter = check_count("num_iter", num_iter)
    from .stream_ls import check_preconditioner
    preconditioner = check_preconditioner(preconditioner, (None, "SQS"),
                                          "the distributed rwls")
    reg = _tv.check_regularizer(regularizer)
    pb = _Problem(system, client, slabs)
    da = _da()
    g = pb.projections(g, "g")
    W = None
    if weights is not None:
        if isinstance(weights, numbers.Real) or getattr(weights, "ndim", None) == 0:
            W = None if float(weights) == 1.0 else float(weights)
        else:
            W = pb.projections(weights, "weights (W)")
    f = pb.volume(f)

    def weighted(x):
        if W is None:
            return x
        return x * (W if isinstance(W, float) else _aligned(W, x))

    def clip(x):
        return da.maximum(x, 0.0).astype(np.float32)

    # Starting point, its projection and the residual r = P f − g.
    if not bool(pb.scalars(da.any(f != 0))[0]):
        Pf = pb.persist(pb.ones_projections() * np.float32(0.0))
    else:
        if nonnegative:
            f = pb.persist(clip(f))
        Pf = pb.persist(pb.forward(f))
        pp, gp = pb.scalars(_vdot(Pf, Pf), _vdot(_aligned(g, Pf), Pf))
        if pp > 0 and gp > 0:
            f, Pf = pb.persist((f * (gp / pp)).astype(np.float32),
                               (Pf * (gp / pp)).astype(np.float32))
    g = pb.persist(_aligned(g, Pf))
    if W is not None and not isinstance(W, float):
        W = pb.persist(_aligned(W, Pf))
    r = Pf - g

    Q = seen = None
    if preconditioner == "SQS":
        H1 = pb.adjoint(weighted(pb.forward(pb.ones_volume())).astype(np.float32))
        seen, Q = pb.persist(H1 > 0, safe_reciprocal(H1, _da()))

    grad_old = d = None
    uTg_old = 0.0
    with IterationMonitor(name, num_iter, progress, callback) as mon:
        for n in range(num_iter):
            grad = pb.adjoint(weighted(r).astype(np.float32))
            if reg is not None:
                Sf = _tv.gradient(reg, f)
                if seen is not None:
                    Sf = da.where(seen, Sf, 0.0).astype(np.float32)
                grad = grad + Sf
            u = Q * grad if preconditioner == "SQS" else grad
            grad, u = pb.persist(grad, u) if u is not grad else (pb.persist(grad),) * 2
            uTg, uTg_prev = pb.scalars(_vdot(u, grad),
                                       _vdot(u, grad_old) if grad_old is not None else da.zeros(()))
            if d is None or n % CG_RESTART == 0 or uTg_old <= 0:
                d = u
            else:
                gamma = (uTg - uTg_prev) / uTg_old
                d = pb.persist((u + gamma * d).astype(np.float32))
                if pb.scalars(_vdot(d, grad))[0] <= 0:
                    d = u
            grad_old, uTg_old = grad, uTg

            Pd = pb.persist(pb.forward(d))
            exprs = [_vdot(d, grad), _vdot(Pd, weighted(Pd))]
            if reg is not None:
                exprs.append(_tv.quad_form(reg, f, d))
            vals = pb.scalars(*exprs)
            num, denom = vals[0], vals[1] + (vals[2] if reg is not None else 0.0)
            if not (num > 0 and denom > 0):
                break      # at a minimum (or no descent possible): nothing left to do
            step = num / denom
            f = (f - step * d).astype(np.float32)
            if nonnegative:
                f = pb.persist(clip(f))
                Pf = pb.persist(pb.forward(f))
            else:
                f, Pf = pb.persist(f, (Pf - step * Pd).astype(np.float32))
            r = Pf - g
            fit = 0.5 * pb.scalars(_vdot(r, weighted(r)))[0]
            if mon.step(n + 1, f, fit):
                break
    return f


def ls(system, g, num_iter, f=None, *, preconditioner=None, nonnegative=True, progress=False,
       callback=None, client=None, slabs=None, out=None, overwrite=False, out_format=None,
       scratch_dir=None):
    """Least squares ``½‖P f − g‖²`` on Dask: :func:`rwls` without weights or
    regulariser (see :func:`leap.algorithms.ls`); out of core with ``client=False`` and
    ``out`` (:mod:`leap.distributed.stream_ls`)."""
    return rwls(system, g, num_iter, f, preconditioner=preconditioner, nonnegative=nonnegative,
                progress=progress, callback=callback, client=client, slabs=slabs, out=out,
                overwrite=overwrite, out_format=out_format, scratch_dir=scratch_dir,
                name="LS")
