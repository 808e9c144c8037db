"""Phantom methods of the LEAP facade: voxelised and analytic (ray-traced) phantoms."""
from __future__ import annotations

import numpy as np

from .. import _validate
from ..geometry._checks import integer as _as_int


class PhantomMixin:
    """``addObject``, ``set_FORBILD``, ``set_SheppLogan``, ``rayTrace`` … of
    :class:`leap.compat.model.tomographicModels` (built on :mod:`leap.phantoms`)."""

    def _phantom_objects(self):
        from ..phantoms import Phantom
        if self._phantom is None:
            self._phantom = Phantom()
        return self._phantom

    def _voxelize(self, phantom, f, oversampling):
        n = _as_int("oversampling", oversampling)
        if n < 1:
            raise ValueError(f"oversampling must be >= 1, got {n}")
        v = self.core_volume()
        # LEAP voxelises with at most 5 sub-samples per axis (larger values act as 5).
        oversampling = min(n, 5)
        if self._axis_of_symmetry is not None:
            # A symmetric volume (numZ, numY, 1) holds the object's half-plane: LEAP
            # draws object x along the volume's y and object y along z.
            phantom = phantom.permute_axes((2, 0, 1))
        return phantom.voxelize(v.x_samples(), v.y_samples(), v.z_samples(), v.voxel_width,
                                v.voxel_height, oversampling=oversampling, out=f)

    def _place(self, ph, f, oversampling):
        """Voxelise the objects of ``ph`` into ``f`` (returns f) or, for f=None, append
        them to the analytic phantom (returns True)."""
        if f is None:
            for obj in ph:
                self._phantom_objects().add(obj)
            return True
        self._voxelize(ph, f, oversampling)
        return f

    def addObject(self, f, typeOfObject, c, r, val, A=None, clip=None, oversampling=1):
        """Add a solid to the volume ``f`` (voxelised), or, with ``f=None``, to the
        analytic phantom used by :meth:`rayTrace`.

        Parameters
        ----------
        typeOfObject : int
            ELLIPSOID=0, PARALLELEPIPED=1, CYLINDER_X=2, CYLINDER_Y=3, CYLINDER_Z=4,
            CONE_X=5, CONE_Y=6, CONE_Z=7.
        c, r : float or (3,) floats
            Centre and radii (x, y, z), mm (a scalar means the same on all axes).
        val : float
            Value inside the object (attenuation per mm); it replaces what is there.
        A : (3, 3) array, optional
            Rotation about the centre.
        clip : (3,) array, optional
            Clipping planes, mm.
        """
        from ..phantoms import Phantom, PhantomObject
        c = [c, c, c] if np.ndim(c) == 0 else c
        r = [r, r, r] if np.ndim(r) == 0 else r
        kw = dict(kind=int(typeOfObject), centre=c, radii=r, value=float(val))
        if A is not None:
            kw["rotation"] = A
        if clip is not None:
            kw["clip"] = clip
        obj = PhantomObject(**kw)
        if f is None:
            self._phantom_objects().add(obj)
            return True
        self._voxelize(Phantom([obj]), f, oversampling)
        return True

    def clearPhantom(self):
        """Forget the analytic phantom built by addObject(None, ...) / set_FORBILD(None)."""
        self._phantom = None
        return True

    def set_FORBILD(self, f=None, includeEar=True, oversampling=1):
        """The FORBILD head phantom: voxelised into ``f``, or (f=None) as the analytic phantom.

        As LEAP, a set-up of one view and one column (LEAP's rotationally symmetric
        example) gets the head without the ear's bone ellipsoid (the air cells stay
        with ``includeEar``)."""
        from ..phantoms import forbild_head
        one_view_one_column = (self.ct_geometry_defined() and self.ct_volume_defined()
                               and self.get_numAngles() == 1 and self.get_numX() == 1)
        ph = forbild_head(include_ear=includeEar, include_ear_bone=not one_view_one_column)
        return self._place(ph, f, oversampling)

    def set_SheppLogan(self, f=None, radius=None, oversampling=1):
        """The 3-D (modified) Shepp–Logan phantom, outer semi-axis ``radius`` mm.

        By default the phantom fills 90 % of the volume's smaller in-plane half-width.
        Voxelised into ``f``, or (f=None) added to the analytic phantom.
        """
        from ..phantoms import shepp_logan_3d, shepp_logan_radius
        if radius is None:
            radius = shepp_logan_radius(self.core_volume())
        ph = shepp_logan_3d(radius_mm=float(radius))
        return self._place(ph, f, oversampling)

    def voxelize(self, f, oversampling=1):
        """Paint the analytic phantom (objects added with ``addObject(None, …)``,
        ``set_FORBILD(None)`` …) into the volume ``f`` (numZ, numY, numX) float32, object
        by object as :meth:`addObject` does (voxels outside every object keep their
        value); returns ``f``."""
        if self._phantom is None or len(self._phantom) == 0:
            raise RuntimeError("no analytic phantom: add objects with addObject(None, ...) "
                               "or set_FORBILD(None) first")
        return self._voxelize(self._phantom, f, oversampling)

    def scalePhantom(self, c):
        """Scale the size of the analytic phantom by ``c``."""
        if self._phantom is not None:
            self._phantom = self._phantom.scale(c)
        return True

    def rayTrace(self, g=None, oversampling=1):
        """Analytic simulation of the phantom built with addObject(None, ...).

        As LEAP: each pixel is sampled by ``n²`` rays (``n`` the oversampling made odd,
        at most 11) on a grid of spacing ``1/(n+1)`` pixel about the pixel centre (LEAP's
        spacing, not the sub-pixel centres' ``1/n``), and the value is
        ``−log(mean(exp(−L)))`` of their line integrals L (the transmission is averaged,
        as a detector would).
        Returns (and fills, when given) ``g`` of shape (numAngles, numRows, numCols).
        """
        from ..phantoms.raytrace import ray_trace
        if self._phantom is None or len(self._phantom) == 0:
            raise RuntimeError("no analytic phantom: add objects with addObject(None, ...) "
                               "or set_FORBILD(None) first")
        n = _as_int("oversampling", oversampling)
        shape = self.get_projection_dim()
        if g is not None:
            _validate.check_array("g", g, shape)
        return ray_trace(self._phantom, self.core_geometry(), n, out=g)
