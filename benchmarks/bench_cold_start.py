"""Cold-start cost: ``import leap`` and the first calls in a fresh environment.

Run: ``python benchmarks/bench_cold_start.py [--warm-runs N] [--cache-dir DIR] [--keep]
[--json PATH]``

leap's kernels are Numba functions compiled with ``cache=True``: the first call of each
kernel (per argument types) in a process compiles it, or loads it from Numba's on-disk
cache if an earlier process wrote it there. This measures what a user meets in a fresh
environment, where nothing has been compiled yet ("cold"), and in the next fresh
process, which reuses what the first one wrote ("warm").

Every measurement runs in its own child process (``subprocess.run([sys.executable,
"-c", code], env=...)``), with ``NUMBA_CACHE_DIR`` set to a new, empty temporary
directory. That variable makes Numba look for and write its cache files there first
(its user-provided cache locator), so the child neither reads nor writes the cache files
in ``leap/**/__pycache__`` that earlier runs of the repository have left. The script
checks that this held: after each child it lists, for every kernel dispatcher the child
loaded, where its cache lives (all must be under the temporary directory) and Numba's own
per-dispatcher counts of cache hits and misses (the cold run must have misses only, the
warm run hits only), and that no ``.nbi``/``.nbc`` file under ``leap/`` changed.
(Python's own ``.pyc`` bytecode cache is left alone: ``pip install`` writes it at
install time, so a user's first import has it.)

Steps, in this order, in one child process (times are wall seconds of each step alone):

==================  ====================================================================
import numpy        ``import numpy`` (the baseline every user pays anyway).
import leap         ``import leap`` after numpy (includes importing Numba).
cone project        first :func:`leap.project` of a 128³ volume (0.5 mm voxels), cone
                    beam, 180 views over 360°, detector 128 rows × 192 columns of 1 mm,
                    sod 500 mm, sdd 1000 mm: compilation plus one projection.
cone project again  the same call a second time: the run time alone, so the first
                    call's compilation is the difference.
cone fbp            first :func:`leap.reconstruction.fbp.fbp` of the same scan (filtering and the
                    back-projector compile here).
cone fbp again      the same call again.
parallel project    first projection of a small (32³, 30 views, 32² detector) parallel
fan project         beam, fan beam, cone beam with a curved detector, helical cone beam
curved project      (two turns, pitch half the detector per turn) and the cone beam
helical project     converted to modular form (:meth:`ConeBeam.to_modular`), each in
modular project     turn: at these sizes the time is compilation (and whatever an
                    earlier step already compiled is not paid again).
==================  ====================================================================

The table gives each step's seconds cold and warm (the median over ``--warm-runs``
warm processes, each a fresh process reusing the cold run's cache directory), the
child's total, and the count and total size of the cache files (``.nbi`` index,
``.nbc`` compiled code) the cold run wrote. ``--cache-dir`` uses (and must be given an
empty or new) directory instead of a temporary one; ``--keep`` keeps the temporary one.

Measured (2 cores, AMD EPYC, Numba 0.68.1, ``--warm-runs 2``): cold, import 0.5 s, the
first cone projection 7.1 s (0.6 s of it the projection) and the first FBP 7.1 s; the
parallel beam's direct-row kernels add 4.8 s; fan, curved, helical and modular then
compile nothing (they run the same kernels). 26 kernels compile, written as 50 files
(1.6 MiB). Warm, the whole sequence takes 3.4 s. Before the kernels were restructured
for this (footprints inlined into every caller's Numba IR, the direct-row passes a flag
of the cone kernels, ``prange`` loops): 23 s and 32 s, 0.7 s for the parallel beam.
A run takes about a minute.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The child: times each step, then reports where every loaded leap dispatcher keeps its
# cache and Numba's cache hit/miss counters, as one JSON line after a marker.
CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
times = {}
t = time.perf_counter(); import numpy as np; times["import numpy"] = time.perf_counter() - t
t = time.perf_counter(); import leap; times["import leap"] = time.perf_counter() - t
from leap.reconstruction.fbp import fbp

def step(name, fn):
    t = time.perf_counter()
    fn()
    times[name] = time.perf_counter() - t

def cone(n, rows, cols, views, turns=1.0, curved=False, pitch_fraction=0.0):
    det = leap.Detector(num_rows=rows, num_cols=cols, pixel_height=1.0, pixel_width=1.0,
                        curved=curved)
    angles = np.linspace(0, 2 * np.pi * turns, views, endpoint=False)
    sod, sdd = 500.0, 1000.0
    pitch = pitch_fraction * rows * sod / sdd / (2 * np.pi)
    return (leap.ConeBeam(detector=det, angles=angles, sod=sod, sdd=sdd, helical_pitch=pitch),
            leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=0.5, voxel_height=0.5))

rng = np.random.default_rng(0)
geo, vol = cone(128, 128, 192, 180)
f = rng.random(vol.shape, dtype=np.float32)
g = {}
step("cone project", lambda: g.setdefault("g", leap.project(geo, vol, f)))
step("cone project again", lambda: leap.project(geo, vol, f))
step("cone fbp", lambda: fbp(geo, vol, g["g"]))
step("cone fbp again", lambda: fbp(geo, vol, g["g"]))

n = 32
small = {
    "parallel": (leap.ParallelBeam(detector=leap.Detector(num_rows=n, num_cols=n,
                                                          pixel_height=1.0, pixel_width=1.0),
                                   angles=np.linspace(0, np.pi, 30, endpoint=False)),
                 leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=1.0, voxel_height=1.0)),
}
c, v = cone(n, n, n, 30)
small["fan"] = (leap.FanBeam(detector=c.detector, angles=c.angles, sod=c.sod, sdd=c.sdd),
                v.with_changes(voxel_height=1.0))
small["curved"] = cone(n, n, n, 30, curved=True)
small["helical"] = cone(n, n, n, 60, turns=2.0, pitch_fraction=0.5)
small["modular"] = (c.to_modular(), v)
for name, (sg, sv) in small.items():
    sf = rng.random(sv.shape, dtype=np.float32)
    step(name + " project", lambda: leap.project(sg, sv, sf))
times["total"] = time.perf_counter() - t0

from numba.core.registry import CPUDispatcher
paths, hits, misses, nodisp = set(), 0, 0, 0
seen = set()
for mname, mod in list(sys.modules.items()):
    if not (mname == "leap" or mname.startswith("leap.")):
        continue
    for obj in list(vars(mod).values()):
        if isinstance(obj, CPUDispatcher) and id(obj) not in seen:
            seen.add(id(obj))
            cache = getattr(obj, "_cache", None)
            if cache is not None and hasattr(cache, "cache_path"):
                paths.add(cache.cache_path)
            hits += sum(obj._cache_hits.values())
            misses += sum(obj._cache_misses.values())
print("@@RESULT@@" + json.dumps({"times": times, "cache_paths": sorted(paths),
                                 "dispatchers": len(seen), "cache_hits": hits,
                                 "cache_misses": misses}))
'''

STEPS = ["import numpy", "import leap", "cone project", "cone project again", "cone fbp",
         "cone fbp again", "parallel project", "fan project", "curved project",
         "helical project", "modular project", "total"]


def cache_files(root):
    """(count, bytes) of Numba cache files (.nbi, .nbc) under ``root``."""
    files = [p for p in Path(root).rglob("*") if p.suffix in (".nbi", ".nbc")]
    return len(files), sum(p.stat().st_size for p in files)


def repo_cache_state():
    """{path: (mtime, size)} of the cache files inside the leap package."""
    return {str(p): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in (ROOT / "leap").rglob("*") if p.suffix in (".nbi", ".nbc")}


def run_child(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, cwd=str(ROOT),
                          capture_output=True, text=True)
    wall = time.perf_counter() - t
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"child failed (exit status {proc.returncode})")
    res = json.loads(lines[-1][len("@@RESULT@@"):])
    res["process wall"] = wall
    outside = [p for p in res["cache_paths"]
               if not os.path.realpath(p).startswith(os.path.realpath(cache_dir))]
    res["cache_paths_outside"] = outside
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warm-runs", type=int, default=1,
                    help="fresh processes reusing the cold run's cache (median reported)")
    ap.add_argument("--cache-dir", default=None,
                    help="empty or new directory for NUMBA_CACHE_DIR (default: a temporary one)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary cache directory")
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args()

    if args.cache_dir:
        cache_dir = Path(args.cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        if any(cache_dir.iterdir()):
            raise SystemExit(f"{cache_dir} is not empty: a cold run needs an empty cache")
    else:
        cache_dir = Path(tempfile.mkdtemp(prefix="leap_numba_cache_"))
    repo_before = repo_cache_state()
    try:
        print(f"NUMBA_CACHE_DIR={cache_dir}", flush=True)
        cold = run_child(cache_dir)
        n_files, n_bytes = cache_files(cache_dir)
        n_nbi = sum(1 for p in cache_dir.rglob("*.nbi"))
        warm = [run_child(cache_dir) for _ in range(args.warm_runs)]
        n_files_after, n_bytes_after = cache_files(cache_dir)
    finally:
        if not args.cache_dir and not args.keep:
            shutil.rmtree(cache_dir, ignore_errors=True)
    repo_after = repo_cache_state()

    def warm_med(step):
        return statistics.median(w["times"][step] for w in warm)

    print(f"\n{'step':<20}{'cold s':>9}{'warm s':>9}{'cold−warm':>11}")
    for step in STEPS:
        c, w = cold["times"][step], warm_med(step)
        print(f"{step:<20}{c:>9.2f}{w:>9.2f}{c - w:>11.2f}")
    cw = statistics.median(w["process wall"] for w in warm)
    print(f"{'process wall':<20}{cold['process wall']:>9.2f}{cw:>9.2f}"
          f"{cold['process wall'] - cw:>11.2f}")
    print(f"\ncache written by the cold run: {n_files} files ({n_nbi} .nbi, "
          f"{n_files - n_nbi} .nbc), {n_bytes / 2 ** 20:.1f} MiB; after the warm run(s): "
          f"{n_files_after} files, {n_bytes_after / 2 ** 20:.1f} MiB")
    print(f"leap dispatchers loaded: {cold['dispatchers']}; cache misses/hits: "
          f"cold {cold['cache_misses']}/{cold['cache_hits']}, "
          + ", ".join(f"warm {w['cache_misses']}/{w['cache_hits']}" for w in warm))
    outside = cold["cache_paths_outside"] + [p for w in warm for p in w["cache_paths_outside"]]
    changed = sorted(set(repo_before.items()) ^ set(repo_after.items()))
    ok = (not outside and not changed and n_files > 0 and cold["cache_hits"] == 0
          and all(w["cache_misses"] == 0 for w in warm))
    print(f"cache isolation: {'OK' if ok else 'FAILED'} (dispatcher caches outside "
          f"NUMBA_CACHE_DIR: {len(outside)}; leap/**/__pycache__ cache files changed: "
          f"{len(changed)})")

    if args.json:
        out = {"cold": cold, "warm": warm,
               "cache_files": {"count": n_files, "nbi": n_nbi, "bytes": n_bytes,
                               "count_after_warm": n_files_after,
                               "bytes_after_warm": n_bytes_after},
               "isolation_ok": ok, "python": sys.version, "cpu_count": os.cpu_count()}
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"written {args.json}")


if __name__ == "__main__":
    main()
