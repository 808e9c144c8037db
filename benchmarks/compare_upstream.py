"""leap against a CPU build of upstream LEAP, the same problems in one process.

Run (after building upstream LEAP for the CPU, see tools/make_upstream_references.py)::

    python benchmarks/compare_upstream.py <LEAP>/src <LEAP>/build/lib [--rounds 5]

Both are driven through LEAP's API (``tomographicModels``: upstream's from ``<LEAP>/src``,
leap's from :mod:`leap.compat`) on float32 NumPy arrays, alternating call by call so that
the machine's state affects both alike; each figure is the best of ``--rounds`` after a
warm-up. Reported: seconds of each and leap's time as a fraction of LEAP's.

Problems: cone 128³ (180 views over 360°, 128² detector of 1 mm, sod 500, sdd 1000, LEAP's
default volume), parallel 512² (720 views over 180°, one row of 512 columns), helical cone
128³ (360 views over two turns, half a detector height per turn), the cone scan as a
modular beam (upstream's CPU projects modular beams with its Joseph projector), and, as
``benchmarks/bench_cpu.py`` defines them, fan 128³ (the cone scan's views, 0.5 mm voxels
1 mm high) and parallel3d 128³ (180 views over 180°, 1 mm voxels and pixels).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import time

import numpy as np


#: Calls slower than this (s, at warm-up) are timed once rather than --rounds times.
SLOW_S = 20.0


def load_upstream(src_dir, lib_dir):
    spec = importlib.util.spec_from_file_location("upstream_leapctype",
                                                  os.path.join(src_dir, "leapctype.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return lambda: mod.tomographicModels(lib_dir=lib_dir)


def setups():
    def cone(ct, helical=False):
        n = 128
        views, rng = (360, 720.0) if helical else (180, 360.0)
        ct.set_conebeam(views, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                        ct.setAngleArray(views, rng), 500.0, 1000.0)
        if helical:
            ct.set_helicalPitch(0.5 * n * 0.5 / (2 * np.pi))
        ct.set_default_volume()

    def parallel(ct):
        ct.set_parallelbeam(720, 1, 512, 1.0, 1.0, 0.0, 255.5, ct.setAngleArray(720, 180.0))
        ct.set_default_volume()

    def fan(ct):
        n = 128
        ct.set_fanbeam(180, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                       ct.setAngleArray(180, 360.0), 500.0, 1000.0)
        ct.set_volume(n, n, n, 0.5, 1.0)

    def parallel3d(ct):
        n = 128
        ct.set_parallelbeam(180, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                            ct.setAngleArray(180, 180.0))
        ct.set_volume(n, n, n, 1.0, 1.0)

    def modular(ct, vectors):
        ct.set_modularbeam(180, 128, 128, 1.0, 1.0, *vectors)
        ct.set_default_volume()

    return {"cone": cone, "parallel": parallel, "fan": fan, "parallel3d": parallel3d,
            "helical": lambda ct: cone(ct, helical=True), "modular": modular}


def modular_vectors():
    from leap.compat import tomographicModels
    ct = tomographicModels()
    setups()["cone"](ct)
    ct.convert_to_modularbeam()
    return (ct.get_sourcePositions(), ct.get_moduleCenters(), ct.get_rowVectors(),
            ct.get_colVectors())


def main():
    ap = argparse.ArgumentParser(description="leap vs upstream LEAP on the CPU")
    ap.add_argument("src_dir")
    ap.add_argument("lib_dir")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ops", default="project,backproject,FBP",
                    help="comma-separated subset of project, backproject, FBP")
    ap.add_argument("problems", nargs="*", default=["cone", "parallel", "helical", "modular",
                                                    "fan", "parallel3d"])
    args = ap.parse_args()
    from leap.compat import tomographicModels
    upstream = load_upstream(args.src_dir, args.lib_dir)
    vectors = modular_vectors()
    print(f"{'problem':<12}{'op':<13}{'LEAP s':>9}{'leap s':>9}{'leap/LEAP':>11}")
    for name in args.problems:
        models = {}
        for who, make in (("LEAP", upstream), ("leap", tomographicModels)):
            ct = make()
            if name == "modular":
                setups()[name](ct, vectors)
            else:
                setups()[name](ct)
            f = ct.allocate_volume()
            f[...] = np.random.default_rng(0).random(f.shape, dtype=np.float32)
            g = ct.allocate_projections()
            g[...] = np.random.default_rng(1).random(g.shape, dtype=np.float32)
            models[who] = (ct, f, g)
        for op in args.ops.split(","):
            calls, outputs = {}, {}
            for who, (ct, f, g) in models.items():
                gw, fw = g.copy(), f.copy()
                if op == "project":
                    calls[who] = lambda ct=ct, gw=gw, f=f: ct.project(gw, f)
                    outputs[who] = gw
                elif op == "backproject":
                    calls[who] = lambda ct=ct, g=g, fw=fw: ct.backproject(g, fw)
                    outputs[who] = fw
                else:
                    calls[who] = lambda ct=ct, g=g, fw=fw: ct.FBP(g.copy(), fw)
                    outputs[who] = fw
            best = {who: float("inf") for who in calls}
            rounds = {who: args.rounds for who in calls}
            missing = False
            for who, fn in calls.items():
                before = outputs[who].copy()
                t = time.perf_counter()
                fn()
                if time.perf_counter() - t > SLOW_S:
                    # Upstream's CPU modular back-projector takes minutes: one round.
                    rounds[who] = 1
                # Upstream prints an error and leaves the output as it was for what its
                # CPU build lacks (helical FBP).
                missing = missing or np.array_equal(before, outputs[who])
            if missing:
                print(f"{name:<12}{op:<13}  (an output was left unchanged: not on this CPU "
                      f"build)", flush=True)
                continue
            for r in range(args.rounds):
                for who, fn in calls.items():
                    if r >= rounds[who]:
                        continue
                    t = time.perf_counter()
                    fn()
                    best[who] = min(best[who], time.perf_counter() - t)
            print(f"{name:<12}{op:<13}{best['LEAP']:9.3f}{best['leap']:9.3f}"
                  f"{best['leap'] / best['LEAP']:11.2f}", flush=True)


if __name__ == "__main__":
    main()
