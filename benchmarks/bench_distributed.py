"""Dask benchmark: FBP and SIRT of a cone-beam problem on 1 and 2 workers, against the
in-memory call.

Run: ``python benchmarks/bench_distributed.py [--size 256] [--views 256] [--iters 10]``

Problem: ``size``³ volume (1 mm voxels), ``views`` views over 360°, ``size``×``size``
flat detector of 1.5 mm pixels, sod 600 mm, sdd 900 mm (magnification 1.5). The Dask runs
read the projections from a Zarr store (chunks of 16 views, as a detector writes them) and
bring the volume back to this process (``.compute()``), so the figures include reading
and moving the data; the in-memory calls take NumPy arrays.

Each Dask run uses a LocalCluster of ``w`` worker processes with one task thread each and
``cores / w`` Numba threads per worker, so every configuration has the machine's cores.
The in-memory calls use all cores in this process. Each timing is the best of
``--repeat`` runs after a warm-up run (one FBP; SIRT with one iteration), so compilation
and worker start-up are excluded.

Reported: seconds, the overhead against the in-memory call (t_dask / t_memory), and the
parallel efficiency of 2 workers against 1 with the same cores in all (t_1 / t_2: 1.0
means splitting the machine between two workers loses nothing; on a cluster of machines
each worker brings its own cores and the speed-up is 2 × this efficiency).
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
    return ct


def best(fn, repeat, warm_up=None):
    (warm_up or fn)()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--views", type=int, default=256)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = ap.parse_args()

    import distributed
    from leap import algorithms as alg
    import leap.distributed as ld

    ct = build(args.size, args.views)
    system = ct.system
    f = ct.allocate_volume()
    ct.set_FORBILD(f, oversampling=1)
    g = system.project(f)
    cores = os.cpu_count() or 1
    work = tempfile.mkdtemp(prefix="leap-bench-")
    import dask.array as da
    source = os.path.join(work, "scan.zarr")
    ld.write_zarr(da.from_array(g, chunks=(16,) + g.shape[1:]), source, client=False)
    print(f"cone {args.size}³ volume, {args.views} views, {args.size}² detector; "
          f"{cores} cores")

    t_fbp = best(lambda: system.fbp(g), args.repeat)
    op = system.operator()
    t_sirt = best(lambda: alg.sirt(op, g, np.zeros(system.volume_shape, np.float32),
                                   args.iters), args.repeat,
                  lambda: alg.sirt(op, g, np.zeros(system.volume_shape, np.float32), 1))
    rows = [("in memory", t_fbp, t_sirt)]
    for w in args.workers:
        threads = max(1, cores // w)
        with distributed.LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                      env={"NUMBA_NUM_THREADS": str(threads)},
                                      dashboard_address=":0") as lc, \
                distributed.Client(lc) as client:
            slabs = max(4 * w, 8)
            tf = best(lambda: ld.fbp(system, source, client=client, slabs=slabs).compute(),
                      args.repeat)
            ts = best(lambda: ld.sirt(system, source, args.iters, client=client,
                                      slabs=slabs).compute(), args.repeat,
                      lambda: ld.sirt(system, source, 1, client=client, slabs=slabs).compute())
            rows.append((f"dask, {w} worker{'s' if w > 1 else ''} × {threads} threads",
                         tf, ts))
    print(f"{'':32s} {'FBP s':>8s} {'vs mem':>7s} {f'SIRT×{args.iters} s':>11s} {'vs mem':>7s}")
    for name, tf, ts in rows:
        print(f"{name:32s} {tf:8.2f} {tf / t_fbp:7.2f} {ts:11.2f} {ts / t_sirt:7.2f}")
    import shutil
    shutil.rmtree(work, ignore_errors=True)
    by = dict(zip(args.workers, rows[1:]))
    if 1 in by and 2 in by:
        print(f"parallel efficiency, 2 workers vs 1 on the same cores: "
              f"FBP {by[1][1] / by[2][1]:.2f}, SIRT {by[1][2] / by[2][2]:.2f}")


if __name__ == "__main__":
    main()
