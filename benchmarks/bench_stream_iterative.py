"""Out-of-core SIRT, OS-SART and LS against in memory: time per iteration.

Run: ``python benchmarks/bench_stream_iterative.py [--size 128] [--views 180]
[--iters 4] [--subsets 10] [--repeat 2] [--methods sirt sart ls]``

Problem: ``size``³ volume, ``views`` cone-beam views over 360° on a ``size``×``size``
detector (the geometry of ``bench_distributed.py``), projections of a uniform cube.
Three paths, each in this process on all cores:

* ``memory``: :mod:`leap.algorithms` on NumPy arrays;
* ``dask``: :mod:`leap.distributed` with ``client=False`` and no ``out`` (Dask's threaded
  scheduler, the iterate in slabs in memory);
* ``out of core``: ``client=False, out=<tmp>/r.zarr`` (:mod:`leap.distributed.stream_sirt`,
  :mod:`leap.distributed.stream_ls`; scratch files in a temporary directory).

Each path runs 1 and ``iters`` iterations after a warm-up (compilation excluded), each
timing the best of ``repeat`` runs (the paths alternate, so that they share whatever
else the machine is doing); reported: the time of the 1-iteration run (set-up
and first iteration) and the time per further iteration, ``(t_iters − t_1) /
(iters − 1)``, with its ratio to memory's, as wall-clock time and as the process's CPU
time (user + system, all threads: the work done, which other processes on a shared
machine disturb far less than the wall-clock time).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np


def build(size, views):
    from leapctype import tomographicModels
    ct = tomographicModels()
    ct.set_conebeam(views, size, size, 1.5, 1.5, 0.5 * (size - 1), 0.5 * (size - 1),
                    ct.setAngleArray(views, 360.0), 600.0, 900.0)
    ct.set_default_volume()
    return ct.system


def runners(system, g, method, subsets, tmp):
    import leap.algorithms as alg
    import leap.distributed as ld
    zero = lambda: np.zeros(system.volume_shape, np.float32)      # noqa: E731
    op = system.operator()
    out = os.path.join(tmp, "r.zarr")
    if method == "sirt":
        return {"memory": lambda n: alg.sirt(op, g, zero(), n),
                "dask": lambda n: ld.sirt(system, g, n, client=False).compute(),
                "out of core": lambda n: ld.sirt(system, g, n, client=False, out=out,
                                                 overwrite=True)}
    if method == "sart":
        return {"memory": lambda n: alg.sart(op, g, zero(), n, subsets),
                "dask": lambda n: ld.sart(system, g, n, subsets, client=False).compute(),
                "out of core": lambda n: ld.sart(system, g, n, subsets, client=False,
                                                 out=out, overwrite=True)}
    return {"memory": lambda n: alg.ls(op, g, zero(), n),
            "dask": lambda n: ld.ls(system, g, n, client=False).compute(),
            "out of core": lambda n: ld.ls(system, g, n, client=False, out=out,
                                           overwrite=True)}


def timed(fn):
    """Wall-clock and CPU seconds of a call of ``fn``."""
    t, c = time.perf_counter(), time.process_time()
    fn()
    return np.array([time.perf_counter() - t, time.process_time() - c])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--views", type=int, default=180)
    ap.add_argument("--iters", type=int, default=4)
    ap.add_argument("--subsets", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--methods", nargs="+", default=["sirt", "sart", "ls"],
                    choices=["sirt", "sart", "ls"])
    a = ap.parse_args()
    if a.iters < 2:
        ap.error("--iters must be at least 2")
    system = build(a.size, a.views)
    f = np.zeros(system.volume_shape, np.float32)
    q = a.size // 4
    f[q:-q, q:-q, q:-q] = 0.02
    g = system.project(f)
    print(f"{a.size}^3 volume, {a.views} views of {a.size}x{a.size}, cone beam; "
          f"{os.cpu_count()} CPUs; OS-SART with {a.subsets} subsets")
    print(f"{'':21} {'set-up + 1 iteration':>21} {'per further iteration':>33}")
    print(f"{'method':8} {'path':12} {'wall (s)':>10} {'CPU (s)':>10} {'wall (s)':>10} "
          f"{'CPU (s)':>10} {'wall/mem':>9} {'CPU/mem':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for method in a.methods:
            paths = runners(system, g, method, a.subsets, tmp)
            for run in paths.values():
                run(1)                                       # warm-up: compilation
            best = {name: [np.inf, np.inf] for name in paths}
            for _ in range(a.repeat):
                for name, run in paths.items():
                    for k, n in enumerate((1, a.iters)):
                        best[name][k] = np.minimum(best[name][k], timed(lambda: run(n)))
            base = None
            for name in paths:
                t1, tn = best[name]
                per = (tn - t1) / (a.iters - 1)
                base = per if base is None else base
                print(f"{method:8} {name:12} {t1[0]:10.2f} {t1[1]:10.2f} {per[0]:10.2f} "
                      f"{per[1]:10.2f} {per[0] / base[0]:9.2f} {per[1] / base[1]:9.2f}")


if __name__ == "__main__":
    main()
