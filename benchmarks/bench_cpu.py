"""CPU benchmarks of the projector, back-projector and FBP for every geometry family.

Run: ``python benchmarks/bench_cpu.py [problem ...] [--small-only] [--repeats N] [--stages]
[--sizes N N]``

Problems (each at two sizes, the larger with twice the volume edge and detector size and
the same views, so 8× the voxel-view updates for the 3-D problems and 4× for the 2-D ones;
the cost growth is visible in the ``×`` column):

=============  =====================================================================
parallel2d     512² / 1024² volume (1 mm voxels), one slice, 720 views over 180°,
               512 / 1024 columns of 1 mm.
fan2d          as parallel2d, fan beam, 720 views over 360°, sod 1000 mm, sdd 1500 mm.
parallel       256³ / 512³ (1 mm), 180 views over 180°, 256² / 512² detector of 1 mm.
fan            256³ / 512³ (0.5 mm voxels, 1 mm high), 180 views over 360°, 256² / 512²
               flat detector of 1 mm, sod 500 mm, sdd 1000 mm.
cone           as fan with 0.5 mm high voxels, cone beam (``--sizes 128 256``: the 128³
               one is the issue's problem).
cone_curved    as cone, curved detector.
helical        as cone, 360 views over two turns, pitch 0.5 of the detector per turn.
modular        the cone scan converted to modular form (per-view vectors; vertical
               modules, so the CPU runs the axial kernels on the modular model).
=============  =====================================================================

Each call is run once to compile and warm caches. The two sizes of a problem are then
timed in alternation (small, large, small, large, ... ``--repeats`` times each, and the
small one at least until it has run for a second), so that both see the same machine:
on shared machines the speed drifts by ±25 % over minutes, which would otherwise land
in the growth column. The best time of each is reported, with the rate of voxel-view
updates (num_voxels × num_views / time), the growth from the small size (``×``, best
over best; ``×rnd``, the median over rounds of the large size's time over the small
one's in the same round, which the machine's drift between rounds does not move) and the
peak extra memory of the call: the largest rise of this process's resident memory above
its level before the call, sampled every millisecond (inputs and outputs are allocated
beforehand, so it is the call's own temporaries).

Why 256³ and 512³: each call also has costs per voxel column and view (footprints, the
set-up of a column's pass, for cone beams the row sums of the projections) and FBP's
filtering costs per detector pixel and view, all ×4 per doubled edge against the
voxel-view work's ×8. At 128³ they weigh enough that the × column shows them rather
than the kernels' growth: where slices lie on detector rows the voxel-view work is cheap
(no interpolation, 15 to 20 G updates/s) and those costs are a third of parallel and fan
FBP, whose growth to 256³ is ×6.2 to 6.8 (fan back-projection ×6.5 to 6.8); the cone
family grows ×6.7 to 7.9 to 256³. From 256³ to 512³ every operation of every geometry
grows ×6.8 to 8.7 (2 cores, AMD EPYC). ``--sizes`` replaces the two volume edges (e.g.
``--sizes 128 256``). A full run takes about half an hour (a 512³ cone-family call takes
15 to 35 s on 2 cores); ``--small-only`` runs the first size alone.
``--stages`` adds FBP's two stages as the public functions run them, so each one's growth
shows: ``fbp:filter`` (:func:`leap.reconstruction.fbp.filter_projections`: weighting and ramp
filtering, a cost in detector pixels × views, ×4 to ×4.5 per doubled edge) and
``fbp:backproj`` (:func:`leap.reconstruction.fbp.weighted_backproject` of the filtered views: voxels ×
views). :func:`leap.reconstruction.fbp.fbp` filters straight into what the back-projector reads,
without the projection-sized array ``filter_projections`` returns.
"""
from __future__ import annotations

import argparse
import ctypes
import threading
import time
from functools import partial

import numpy as np

import leap
from leap.reconstruction.fbp import fbp, filter_projections, weighted_backproject


def _cone(n, views=180, turns=1.0, curved=False, pitch_fraction=0.0):
    det = leap.Detector(num_rows=n, num_cols=n, pixel_height=1.0, pixel_width=1.0,
                        curved=curved)
    angles = np.linspace(0, 2 * np.pi * turns, views, endpoint=False)
    sod, sdd = 500.0, 1000.0
    # Pitch: table advance per radian giving pitch_fraction of the detector's height at
    # the isocentre per turn.
    pitch = pitch_fraction * n * 1.0 * sod / sdd / (2 * np.pi)
    return (leap.ConeBeam(detector=det, angles=angles, sod=sod, sdd=sdd, helical_pitch=pitch),
            leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=0.5, voxel_height=0.5))


def problem(name, n):
    """(geometry, volume) of problem ``name`` at size ``n`` (volume edge)."""
    if name == "parallel2d":
        return (leap.ParallelBeam(detector=leap.Detector(num_rows=1, num_cols=n, pixel_height=1.0,
                                                         pixel_width=1.0),
                                  angles=np.linspace(0, np.pi, 720, endpoint=False)),
                leap.Volume(num_x=n, num_y=n, num_z=1, voxel_width=1.0, voxel_height=1.0))
    if name == "fan2d":
        # Issue 34's 2-D fan scan (sod 1000, sdd 1500, one slice of 1 mm voxels).
        return (leap.FanBeam(detector=leap.Detector(num_rows=1, num_cols=n, pixel_height=1.0,
                                                    pixel_width=1.0),
                             angles=np.linspace(0, 2 * np.pi, 720, endpoint=False),
                             sod=1000.0, sdd=1500.0),
                leap.Volume(num_x=n, num_y=n, num_z=1, voxel_width=1.0, voxel_height=1.0))
    if name == "parallel":
        return (leap.ParallelBeam(detector=leap.Detector(num_rows=n, num_cols=n, pixel_height=1.0,
                                                         pixel_width=1.0),
                                  angles=np.linspace(0, np.pi, 180, endpoint=False)),
                leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=1.0, voxel_height=1.0))
    if name == "fan":
        geo, vol = _cone(n)
        fan = leap.FanBeam(detector=geo.detector, angles=geo.angles, sod=geo.sod, sdd=geo.sdd)
        return fan, vol.with_changes(voxel_height=1.0)
    if name == "cone":
        return _cone(n)
    if name == "cone_curved":
        return _cone(n, curved=True)
    if name == "helical":
        return _cone(n, views=360, turns=2.0, pitch_fraction=0.5)
    if name == "modular":
        geo, vol = _cone(n)
        return geo.to_modular(), vol
    raise ValueError(f"unknown problem {name!r}")


# Sizes large enough that per-call overheads (thread start-up, cumulative sums) and the
# costs per voxel column or detector pixel are small next to the voxel-view work, so the
# × column shows the kernels' growth (see the module notes).
PROBLEMS = {"parallel2d": (512, 1024), "fan2d": (512, 1024), "parallel": (256, 512),
            "fan": (256, 512),
            "cone": (256, 512), "cone_curved": (256, 512), "helical": (256, 512),
            "modular": (256, 512)}


def _rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096


def _release_free_memory():
    """Return freed heap memory to the OS (glibc ``malloc_trim``), so that the memory
    pass's RSS rises by what the call itself touches: glibc keeps large freed blocks
    resident once its dynamic mmap threshold has grown, and an earlier call's
    temporaries would otherwise be reused unseen."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def peak_extra_mib(fn):
    """Peak extra resident memory of one call of ``fn``, MiB (sampled every millisecond
    by a thread, so timed calls run without it competing for the cores)."""
    _release_free_memory()
    base = _rss()
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], _rss())
            time.sleep(0.001)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    fn()
    stop.set()
    th.join()
    return (peak[0] - base) / 2 ** 20


def best_times(fns, repeats, min_seconds=1.0):
    """Best wall time of each of ``fns`` after one warm-up call each, the calls taken in
    alternation: ``repeats`` rounds, and more while the first (the cheapest) has run for
    less than ``min_seconds`` in all. Also the median over rounds of each call's time
    over the first's in the same round (seconds apart, so the machine's drift over
    minutes cancels)."""
    for fn in fns:
        fn()
    best = [float("inf")] * len(fns)
    ratios = [[] for _ in fns]
    spent = 0.0
    rounds = 0
    while rounds < repeats or spent < min_seconds:
        times = []
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
            best[i] = min(best[i], times[-1])
        spent += times[0]
        for i, t in enumerate(times):
            ratios[i].append(t / times[0])
        rounds += 1
    return best, [float(np.median(r)) for r in ratios]


def main():
    ap = argparse.ArgumentParser(description="leap CPU benchmarks")
    ap.add_argument("problems", nargs="*", default=list(PROBLEMS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--small-only", action="store_true")
    ap.add_argument("--sizes", type=int, nargs=2, metavar="N",
                    help="the two volume edges instead of each problem's own")
    ap.add_argument("--stages", action="store_true",
                    help="also time FBP's filtering and back-projection stages apart")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'problem':<12}{'size':>5} {'op':<12}{'best s':>9}{'Gupd/s':>8}{'×':>6}"
          f"{'×rnd':>7}{'extra MiB':>11}{'data MiB':>10}")
    for name in args.problems:
        sizes = tuple(args.sizes) if args.sizes else PROBLEMS[name]
        sizes = sizes[:1] if args.small_only else sizes
        cases = []
        for n in sizes:
            geo, vol = problem(name, n)
            f = rng.random(vol.shape, dtype=np.float32)
            g = rng.random(geo.projection_shape, dtype=np.float32)
            fout = np.empty(vol.shape, dtype=np.float32)
            gout = np.empty(geo.projection_shape, dtype=np.float32)
            calls = {"project": partial(leap.project, geo, vol, f, out=gout),
                     "backproject": partial(leap.backproject, geo, vol, g, out=fout),
                     "fbp": partial(fbp, geo, vol, g, out=fout)}
            if args.stages:
                q, fgeo = filter_projections(geo, vol, g)
                calls["fbp:filter"] = partial(filter_projections, geo, vol, g)
                calls["fbp:backproj"] = partial(weighted_backproject, fgeo, vol, q, out=fout)
            cases.append((n, vol.num_x * vol.num_y * vol.num_z * geo.num_angles,
                           max(f.nbytes, g.nbytes) / 2 ** 20, calls))
        for op in cases[0][3]:
            times, same_round = best_times([c[3][op] for c in cases], args.repeats)
            for (n, updates, data_mib, calls), t, r in zip(cases, times, same_round):
                first = n == cases[0][0]
                growth = f"{'':6s}{'':7s}" if first else f"{t / times[0]:6.2f}{r:7.2f}"
                extra = peak_extra_mib(calls[op])
                print(f"{name:<12}{n:>5} {op:<12}{t:9.3f}{updates / t / 1e9:8.3f}{growth}"
                      f"{extra:11.1f}{data_mib:10.1f}", flush=True)


if __name__ == "__main__":
    main()
