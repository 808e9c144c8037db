"""Numba CUDA kernels (numba-cuda) on float32 device arrays.

Importing this package imports ``numba.cuda``; :mod:`leap.operators` only does so when
it is handed a CUDA array or a GPU is selected. Kernels compile the shared footprint
model of :mod:`leap.kernels.footprints` with ``cuda.jit(device=True)`` (see ``_jit``),
so CPU and GPU compute the same weights.
"""
