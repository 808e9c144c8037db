"""CPU compilation of the shared footprint functions.

One place decides how the CPU kernels are compiled. ``fastmath`` stays off: the
projector and back-projector must use bit-for-bit the same footprint arithmetic so
that they are exact transposes, and contraction/reassociation could differ between
the two call sites.
"""
import numba

from .. import footprints as _fp

JIT = dict(cache=True, nogil=True)
PARALLEL_JIT = dict(cache=True, nogil=True, parallel=True)

inline = numba.njit(inline="always", **JIT)

overlap = inline(_fp.overlap)
axial_column_footprint = inline(_fp.axial_column_footprint)
interp_cumulative = inline(_fp.interp_cumulative)
modular_footprint = inline(_fp.modular_footprint)
