"""The linear operator the iterative algorithms are written against.

An algorithm needs only ``forward`` (P), ``adjoint`` (Pᵀ), the two shapes and, for
ordered subsets, ``num_views`` and ``subset(views)``. :meth:`leap.system.CTSystem.operator`
provides them (with the system's field of view, mask and forward model) on top of the
core projectors, which dispatch on the array kind, so the same algorithm runs on NumPy or
CUDA arrays; :class:`CTOperator` is the operator of a bare geometry and volume.
Any object with these members can be passed instead (e.g. a matrix in tests).
"""
from __future__ import annotations

from ..system import CTSystem, SystemOperator
from ._array import array_namespace


class CTOperator(SystemOperator):
    """Projection ``P``: volume (num_z, num_y, num_x) → projections
    (num_angles, num_rows, num_cols), float32, attenuation/mm → mm·attenuation/mm: the
    operator of ``CTSystem(geometry=geometry, volume=volume, fov_radius=fov_radius)``
    (see :class:`leap.system.SystemOperator`; other settings — masks, special models,
    FBP options — through :meth:`leap.system.CTSystem.operator`).
    """

    def __init__(self, geometry, volume, *, fov_radius=None):
        super().__init__(CTSystem(geometry=geometry, volume=volume, fov_radius=fov_radius))


def sensitivity(op, like=None, weights=None):
    """``Pᵀ w`` (``w`` = 1 by default, or an array/scalar weight): the back-projection of
    ones, the normalisation of SIRT/SART and EM. ``like`` (an array) sets the array
    module; NumPy by default."""
    xp = array_namespace(like, weights if hasattr(weights, "shape") else None)
    w = xp.ones(op.range_shape, dtype=xp.float32)
    if weights is not None:
        w = xp.ascontiguousarray(w * weights, dtype=xp.float32)
    return op.adjoint(w)
