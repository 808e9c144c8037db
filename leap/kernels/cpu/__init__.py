"""Numba CPU kernels (``njit(parallel=True)``) on NumPy float32 arrays."""
