"""Analytic phantoms built from simple geometric solids.

This module is a framework-neutral (NumPy + Numba) implementation of the
phantom machinery of LEAP: a phantom is an *ordered* list of solids
(ellipsoids, parallelepipeds, elliptic cylinders and circular cone frusta),
each with a constant value.  The phantom can be

* voxelised onto a regular grid (:meth:`Phantom.voxelize`), optionally with
  sub-voxel oversampling to model the partial-volume effect, and
* integrated exactly along straight lines (:meth:`Phantom.line_integrals`),
  which is what an analytic ray-tracing simulation needs.

Conventions
-----------
* Lengths are in millimetres, values are linear attenuation coefficients in
  1/mm (so line integrals are dimensionless).
* World coordinates are ``(x, y, z)``; voxel volumes are stored as
  ``(numZ, numY, numX)`` float32 C-contiguous arrays.
* **Later objects override earlier ones.**  Where objects overlap, the value
  of the phantom is the value of the *last* object (in insertion order) that
  contains the point; values are never summed.  A value of ``0`` therefore
  carves a hole (e.g. an air cavity) into whatever was defined before it.
  Background objects must be added first.  Voxelisation and line integrals
  use the same rule, so the line integrals are the continuum limit of
  integrating the voxelised volume.
* An object occupies the closed set ``{x : inside(A @ (x - centre))}``, where
  ``A`` is the object's ``rotation`` matrix and ``inside`` tests the
  axis-aligned solid described by ``kind`` and ``radii``.  ``A`` maps a world
  offset to the object's own axes, i.e. the solid is rotated by ``A.T``.
* ``clip``: for every axis ``i`` with ``clip[i] != 0`` the object is cut by
  the world-coordinate plane ``x_i = clip[i]`` (mm) and only the part with
  ``x_i <= clip[i]`` is kept.  ``clip[i] == 0`` means "no clipping on that
  axis" (so a cut exactly at ``x_i = 0`` cannot be expressed; use a tiny
  non-zero value instead).

Relation to upstream LEAP
-------------------------
The object codes, parameter meanings, override rule, oversampling rule and
the FORBILD head definition follow LEAP (``phantom.cpp``,
``analytic_ray_tracing.cpp``, ``leapctype.py``).  Where upstream's code paths
disagree with each other, one consistent definition is used here:

* ``clip`` follows upstream's analytic ray tracer (absolute world plane,
  keep ``x_i <= clip[i]``).  Upstream's voxelisers instead cut through the
  object centre in object coordinates, removing the side given by the sign
  of ``clip[i]``; both agree for the only upstream use (the FORBILD ear,
  ``clip = centre_x = 91 mm``, unrotated).
* Cones are rotated about their centre (upstream effectively rotates them
  about their apex) and clip planes apply to cones too.
* Line integrals of cones are exact for every ray direction.

Voxelisation and line integrals depend on no other ``leap`` module;
module.
"""
from __future__ import annotations

from .library import forbild_head, rotation_matrix, shepp_logan_3d, shepp_logan_radius
from .objects import (CONE_X, CONE_Y, CONE_Z, CYLINDER_X, CYLINDER_Y, CYLINDER_Z, ELLIPSOID,
                      KIND_NAMES, PARALLELEPIPED, PhantomObject)
from .phantom import Phantom
from .raytrace import ray_trace

__all__ = [
    "ELLIPSOID",
    "PARALLELEPIPED",
    "CYLINDER_X",
    "CYLINDER_Y",
    "CYLINDER_Z",
    "CONE_X",
    "CONE_Y",
    "CONE_Z",
    "KIND_NAMES",
    "PhantomObject",
    "Phantom",
    "rotation_matrix",
    "forbild_head",
    "shepp_logan_3d",
    "shepp_logan_radius",
    "ray_trace",
]
