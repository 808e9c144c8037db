"""Iterative reconstruction, written only against the operator API.

Every method takes an operator ``op`` (:class:`CTOperator`, or anything with
``forward``, ``adjoint``, ``domain_shape``, ``range_shape`` and, for ordered
subsets, ``num_views`` and ``subset(views)``), the projections ``g`` and a starting
volume ``f`` that is updated in place and returned. Arrays are float32 NumPy or CuPy
arrays (the array module is taken from the arguments). All accept ``progress`` (a
tqdm bar once a run lasts over a second) and ``callback(iteration, f, data_fit)``,
which stops the run by returning True.

==========================  ===================================================
:func:`sirt`, :func:`sart`  simultaneous / ordered-subset algebraic updates
:func:`mlem`, :func:`osem`  expectation maximisation (Poisson emission model)
:func:`ls`, :func:`wls`,    (regularised, weighted) least squares by
:func:`rls`, :func:`rwls`   preconditioned conjugate gradients
:func:`asd_pocs`            SART alternated with regulariser steps (iTV)
:func:`mltr`                maximum likelihood for transmission data
==========================  ===================================================

Beside them, what they use and what LEAP scripts call between iterations:
:mod:`~leap.algorithms.regularization` (TV with LEAP's potential, other regularisers and
denoising filters), :mod:`~leap.algorithms.dictionary_denoising` (sparse coding of
patches) and :mod:`~leap.algorithms.masks` (the circular field of view, space carving).
"""
from ._array import array_namespace
from ._monitor import IterationMonitor
from .asdpocs import asd_pocs
from .em import mlem, osem, poisson_misfit
from .least_squares import ls, ramp_filter_slices, rls, rwls, wls
from .mltr import mltr, transmission_misfit
from .operator import CTOperator, sensitivity
from .sart import sart, sirt

__all__ = ["CTOperator", "sensitivity", "array_namespace", "IterationMonitor",
           "sirt", "sart", "mlem", "osem", "ls", "wls", "rls", "rwls", "asd_pocs", "mltr",
           "poisson_misfit", "transmission_misfit", "ramp_filter_slices"]
