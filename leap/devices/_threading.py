"""Make Numba's parallel kernels fork-safe: load Intel TBB for its threading layer.

Numba runs ``parallel=True`` kernels on the first threading layer it can load, in the
order tbb, omp, workqueue. Without TBB it takes GNU OpenMP, and a process that has
used GNU OpenMP cannot ``fork``: the child aborts ("fork() called from a process
already using GNU OpenMP, this is unsafe") at its first parallel call. That kills
``multiprocessing`` workers and torch ``DataLoader`` workers that simulate
projections. TBB is both thread-safe and fork-safe; workqueue is fork-safe but aborts
when two threads launch kernels at once (Dask, threaded loaders), so it is no
substitute.

The ``tbb`` wheel (a dependency of leap where PyPI has wheels) puts ``libtbb`` in the
environment's ``lib`` folder, which Numba's TBB pool does not search (it has no
rpath), so Numba reports TBB as unavailable. Loading the library once, globally,
before the first parallel launch lets the dynamic loader resolve Numba's pool
against it by soname.

A user's ``NUMBA_THREADING_LAYER`` is respected: nothing is loaded then.
"""
from __future__ import annotations

import ctypes
import os

#: Sonames of the TBB runtime that Numba's pool links against, per platform.
_TBB_NAMES = ("libtbb.so.12", "libtbb.12.dylib", "tbb12.dll")


def _tbb_library() -> str | None:
    """Path of the TBB runtime installed by the ``tbb`` wheel, or None."""
    from importlib import metadata
    try:
        files = metadata.files("tbb") or ()
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if f.name in _TBB_NAMES:
            path = str(f.locate())
            if os.path.exists(path):
                return path
    return None


def load_tbb() -> bool:
    """Load the TBB runtime for Numba's threading layer; True if it was loaded.

    Does nothing (returns False) when ``NUMBA_THREADING_LAYER`` is set or no TBB
    runtime is installed; Numba then picks its layer as usual.
    """
    if os.environ.get("NUMBA_THREADING_LAYER"):
        return False
    path = _tbb_library()
    if path is None:
        return False
    try:
        ctypes.CDLL(path, mode=getattr(ctypes, "RTLD_GLOBAL", 0))
    except OSError:
        return False
    return True


TBB_LOADED = load_tbb()
