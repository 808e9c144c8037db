"""CUDA compilation of the shared footprint functions: one model, two targets.

``fastmath`` stays off, as on the CPU (``leap.kernels.cpu._jit``): the projector and
back-projector must evaluate bit-for-bit the same footprint arithmetic so that they
are exact transposes, and flush-to-zero / approximate division would also move the
GPU away from the CPU numbers. Footprints are computed in float64 (the CPU model);
data stay float32.
"""
from numba import cuda
from numba.cuda.core import config

from .. import footprints as _fp

KERNEL = dict(fastmath=False)
device = cuda.jit(device=True, inline="always", fastmath=False)

overlap = device(_fp.overlap)
axial_column_footprint = device(_fp.axial_column_footprint)
interp_cumulative = device(_fp.interp_cumulative)
modular_footprint = device(_fp.modular_footprint)
parallel_view_constants = device(_fp.parallel_view_constants)
parallel_column_footprint = device(_fp.parallel_column_footprint)
cone_parallel_distance = device(_fp.cone_parallel_distance)
fbp_distance_weight = device(_fp.fbp_distance_weight)
row_mapping = device(_fp.row_mapping)
direct_shift = device(_fp.direct_shift)
column_range = device(_fp.column_range)
modular_view_frame = device(_fp.modular_view_frame)
modular_box, modular_gather = _fp.make_modular_kernels(device, overlap, column_range)
axial_footprint = _fp.make_axial_footprint(device, parallel_column_footprint,
                                           cone_parallel_distance, axial_column_footprint)

#: Threads per block for 1-D launches and the 2-D/3-D block shape (x fastest: voxel or
#: detector column index, so neighbouring threads touch neighbouring addresses).
#: The simulator runs one Python thread per CUDA thread, so there blocks are tiny.
if config.ENABLE_CUDASIM:
    THREADS_1D, BLOCK_2D, BLOCK_3D = 16, (4, 4), (4, 2, 2)
else:
    THREADS_1D, BLOCK_2D, BLOCK_3D = 256, (32, 8), (32, 4, 2)


def blocks(n, b):
    return max(1, (int(n) + b - 1) // b)
