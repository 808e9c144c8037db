"""CPU compilation of the shared footprint functions.

One place decides how the CPU kernels are compiled. ``fastmath`` stays off: the
projector and back-projector must use bit-for-bit the same footprint arithmetic so
that they are exact transposes, and contraction/reassociation could differ between
the two call sites.

``FAST_JIT``/``FAST_PARALLEL_JIT`` (used by the axial kernels) add
``error_model="numpy"``: float division by zero gives inf/nan instead of raising, which
removes a zero test and a branch from every division in the hot loops. The kernels
guard their divisions themselves (``dist > 0``, ``B > 0``), so no result changes.

The shared footprint functions are ordinary compiled functions, not inlined into each
caller's Numba IR (``inline="always"``): each is typed and compiled once and LLVM
inlines it where it is called, with the same arithmetic bit for bit. Inlining at the
Numba level copied the whole footprint dispatch into every call site and made the first
call in a fresh environment compile for minutes in all (cone projection 22 s, FBP 32 s
on 2 cores; ``benchmarks/bench_cold_start.py``); the kernels' own small per-column
helpers (:data:`leap.kernels.cpu.columns.INLINE`) stay inlined where that was measured
to matter (the direct-row footprint loops vectorise only when specialised in place).
"""
import numba

from .. import footprints as _fp

JIT = dict(cache=True, nogil=True)
PARALLEL_JIT = dict(cache=True, nogil=True, parallel=True)
FAST_JIT = dict(JIT, error_model="numpy")
FAST_PARALLEL_JIT = dict(PARALLEL_JIT, error_model="numpy")
#: The kernels' small per-column helpers, inlined into their callers (see above).
INLINE = dict(FAST_JIT, inline="always")
#: The geometry gradients' sums (``axial_geometry_vjp``, ``axial_view_vjp``) may be
#: reassociated, so that LLVM vectorises them (4 values per AVX2 instruction, square
#: roots and divisions included): float64 sums of float32 data, and no transpose relation
#: depends on their rounding (the reason why the projectors keep fastmath off). Only
#: ``reassoc``: no other fast-math flag.
REDUCE_JIT = dict(FAST_JIT, fastmath={"reassoc"})

#: How the shared functions are compiled for the CPU kernels (see above).
compiled = numba.njit(**JIT)

overlap = compiled(_fp.overlap)
axial_column_footprint = compiled(_fp.axial_column_footprint)
interp_cumulative = compiled(_fp.interp_cumulative)
modular_footprint = compiled(_fp.modular_footprint)
parallel_view_constants = compiled(_fp.parallel_view_constants)
parallel_column_footprint = compiled(_fp.parallel_column_footprint)
cone_parallel_distance = compiled(_fp.cone_parallel_distance)
fbp_distance_weight = compiled(_fp.fbp_distance_weight)
row_mapping = compiled(_fp.row_mapping)
direct_shift = compiled(_fp.direct_shift)
column_range = compiled(_fp.column_range)
modular_view_frame = compiled(_fp.modular_view_frame)
modular_box, modular_gather = _fp.make_modular_kernels(compiled, overlap, column_range)
#: The axial kernels divide without zero tests (``FAST_JIT``); their footprint dispatch
#: is compiled the same way.
axial_footprint = _fp.make_axial_footprint(
    numba.njit(**FAST_JIT), parallel_column_footprint,
    cone_parallel_distance, axial_column_footprint)
