"""Where the work runs: array kinds and zero-copy conversion (:mod:`~leap.devices.arrays`),
GPU selection, chunking and multi-GPU splitting (:mod:`~leap.devices.gpu`), and the CPU
thread pool's threading layer (``leap.devices._threading``, loaded first by ``import
leap``).

The package itself imports nothing, so loading the threading layer first loads nothing
else.
"""
