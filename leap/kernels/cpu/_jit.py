"""CPU compilation of the shared footprint functions.

One place decides how the CPU kernels are compiled. ``fastmath`` stays off: the
projector and back-projector must use bit-for-bit the same footprint arithmetic so
that they are exact transposes, and contraction/reassociation could differ between
the two call sites.

``FAST_JIT``/``FAST_PARALLEL_JIT`` (used by the axial kernels) add
``error_model="numpy"``: float division by zero gives inf/nan instead of raising, which
removes a zero test and a branch from every division in the hot loops. The kernels
guard their divisions themselves (``dist > 0``, ``B > 0``), so no result changes.
"""
import numba

from .. import footprints as _fp

JIT = dict(cache=True, nogil=True)
PARALLEL_JIT = dict(cache=True, nogil=True, parallel=True)
FAST_JIT = dict(JIT, error_model="numpy")
FAST_PARALLEL_JIT = dict(PARALLEL_JIT, error_model="numpy")

inline = numba.njit(inline="always", **JIT)

overlap = inline(_fp.overlap)
axial_column_footprint = inline(_fp.axial_column_footprint)
interp_cumulative = inline(_fp.interp_cumulative)
modular_footprint = inline(_fp.modular_footprint)
parallel_view_constants = inline(_fp.parallel_view_constants)
parallel_column_footprint = inline(_fp.parallel_column_footprint)
cone_parallel_distance = inline(_fp.cone_parallel_distance)
fbp_distance_weight = inline(_fp.fbp_distance_weight)
row_mapping = inline(_fp.row_mapping)
direct_shift = inline(_fp.direct_shift)
column_range = inline(_fp.column_range)
modular_view_frame = inline(_fp.modular_view_frame)
modular_box, modular_gather = _fp.make_modular_kernels(inline, overlap, column_range)
#: The axial kernels divide without zero tests (``FAST_JIT``); their footprint dispatch
#: is compiled the same way.
axial_footprint = _fp.make_axial_footprint(
    numba.njit(inline="always", **FAST_JIT), parallel_column_footprint,
    cone_parallel_distance, axial_column_footprint)
