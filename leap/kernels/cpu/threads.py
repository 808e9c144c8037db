"""Run a serial CPU kernel on all threads: ``run(kernel, *args)`` calls ``kernel(*args,
start, step)`` once per thread, share t with ``start = t`` and ``step`` the number of
threads, and the kernel takes the work items ``start, start + step, …`` (views, tiles,
blocks of rows).

Why not ``numba.prange``: Numba compiles every ``prange`` loop into a function of its
own and optimises everything that loop calls once more for it, on top of its parallel
passes over the loop body. For the projector, back-projector and ramp filter that was
3.5 to 5.5 s of compilation each in a fresh environment (2 cores), most of what a new
Colab runtime, CI job or container waited for before the first projection and FBP
(``benchmarks/bench_cold_start.py``). The kernels run here are compiled with
``nogil=True``, so the threads run them at the same time; each writes only its own items'
outputs, so the results do not depend on the number of threads.

The number of threads is Numba's (:func:`numba.get_num_threads`, which
:func:`numba.set_num_threads` and ``NUMBA_NUM_THREADS`` set), so one setting governs
these kernels and the ``prange`` ones. The calling thread runs share 0; the others run
on one pool of ``NUMBA_NUM_THREADS − 1`` threads kept for the process (threads started
per call left each call's scratch in a new malloc arena: a Dask worker's memory grew by
twice as much), which callers on several threads (Dask, data loaders) share. A forked
child starts a pool of its own on first use.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="leap-cpu")
        return _pool


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there."""
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run(kernel, *args, items: int | None = None) -> None:
    """``kernel(*args, t, n)`` for t = 0 … n − 1 (n = Numba's thread count, at most
    ``items`` where given), share 0 on the calling thread and the others on the pool.
    An exception in any share is raised here once all have finished."""
    n = numba.get_num_threads()
    if items is not None:
        n = max(1, min(n, items))
    if n == 1:
        kernel(*args, 0, 1)
        return
    pool = _executor()
    futures = [pool.submit(kernel, *args, t, n) for t in range(1, n)]
    error = None
    try:
        kernel(*args, 0, n)
    except BaseException as e:  # raised below, once the other shares are done
        error = e
    for fut in futures:
        try:
            fut.result()
        except BaseException as e:
            error = error or e
    if error is not None:
        raise error
