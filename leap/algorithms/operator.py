"""The linear operator the iterative algorithms are written against.

An algorithm needs only ``forward`` (P), ``adjoint`` (Pᵀ), the two shapes and, for
ordered subsets, ``num_views`` and ``subset(views)``. :class:`CTOperator` provides
them on top of the core projectors (:func:`leap.project`, :func:`leap.backproject`),
which dispatch on the array kind, so the same algorithm runs on NumPy or CUDA arrays.
Any object with these members can be passed instead (e.g. a matrix in tests).
"""
from __future__ import annotations

from .. import _validate, operators
from ._array import array_namespace


class CTOperator:
    """Projection ``P``: volume (num_z, num_y, num_x) → projections
    (num_angles, num_rows, num_cols), float32, attenuation/mm → mm·attenuation/mm.

    Parameters
    ----------
    geometry : ParallelBeam, FanBeam, ConeBeam or ModularBeam
    volume : Volume
    fov_radius : float, optional
        Field-of-view radius (mm) passed to the projectors; default the geometry's own.
    """

    def __init__(self, geometry, volume, *, fov_radius=None):
        _validate.check_geometry(geometry, volume)
        self.geometry = geometry
        self.volume = volume
        self.fov_radius = fov_radius

    def __repr__(self):
        return (f"CTOperator({type(self.geometry).__name__}, views={self.num_views}, "
                f"domain={self.domain_shape}, range={self.range_shape})")

    @property
    def domain_shape(self) -> tuple:
        """Volume shape (num_z, num_y, num_x)."""
        return tuple(self.volume.shape)

    @property
    def range_shape(self) -> tuple:
        """Projection shape (num_angles, num_rows, num_cols)."""
        return tuple(self.geometry.projection_shape)

    @property
    def num_views(self) -> int:
        return int(self.geometry.num_angles)

    def forward(self, f, out=None):
        """``P f``; ``out`` (range_shape) is written into and returned when given."""
        return operators.project(self.geometry, self.volume, f, out=out,
                                 fov_radius=self.fov_radius)

    def adjoint(self, g, out=None):
        """``Pᵀ g``, the exact transpose of :meth:`forward`."""
        return operators.backproject(self.geometry, self.volume, g, out=out,
                                     fov_radius=self.fov_radius)

    def subset(self, views) -> "CTOperator":
        """The operator of some views (a slice or an index array) with the same volume."""
        return CTOperator(self.geometry[views], self.volume, fov_radius=self.fov_radius)

    def fbp(self, g, out=None):
        """Filtered back-projection of ``g`` (an approximate inverse of :meth:`forward`),
        used by RWLS's 'SARR' preconditioner; NumPy arrays only."""
        from ..fbp import fbp
        return fbp(self.geometry, self.volume, g, out=out, fov_radius=self.fov_radius)


class MaskedOperator:
    """``P M``: an operator whose volumes are multiplied by a fixed ``mask`` (LEAP's
    volume mask, e.g. from space carving) before projection and after back-projection,
    so ``adjoint`` stays the exact transpose. Same interface as :class:`CTOperator`."""

    def __init__(self, op, mask):
        if tuple(mask.shape) != tuple(op.domain_shape):
            raise ValueError(f"volume mask has shape {tuple(mask.shape)}, expected the "
                             f"volume shape {tuple(op.domain_shape)}")
        self.op, self.mask = op, mask

    def __getattr__(self, name):   # geometry, volume, shapes, num_views …
        return getattr(self.op, name)

    def forward(self, f, out=None):
        return self.op.forward(f * self.mask, out=out)

    def adjoint(self, g, out=None):
        f = self.op.adjoint(g, out=out)
        f *= self.mask
        return f

    def subset(self, views) -> "MaskedOperator":
        return MaskedOperator(self.op.subset(views), self.mask)

    def fbp(self, g, out=None):
        f = self.op.fbp(g, out=out)
        f *= self.mask
        return f


def sensitivity(op, like=None, weights=None):
    """``Pᵀ w`` (``w`` = 1 by default, or an array/scalar weight): the back-projection of
    ones, the normalisation of SIRT/SART and EM. ``like`` (an array) sets the array
    module; NumPy by default."""
    xp = array_namespace(like, weights if hasattr(weights, "shape") else None)
    w = xp.ones(op.range_shape, dtype=xp.float32)
    if weights is not None:
        w = xp.ascontiguousarray(w * weights, dtype=xp.float32)
    return op.adjoint(w)
