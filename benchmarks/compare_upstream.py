"""leap against a CPU build of upstream LEAP, each library in its own process.

Run (after building upstream LEAP for the CPU, see tools/make_upstream_references.py;
at upstream 0c8846f, ``src/filtered_backprojection.cpp`` calls ``zeroPadForOffsetScan_GPU``
and ``cudaFree`` outside a ``#ifndef __USE_CPU`` guard, which the CPU-only build needs
around them, with ``free`` for the latter)::

    python benchmarks/compare_upstream.py <LEAP>/src <LEAP>/build/lib [problem ...]
        [--rounds 5] [--ops project,backproject,FBP] [--volumes dense,sparse]
        [--json PATH]

Both libraries are driven through LEAP's API (``tomographicModels``: upstream's from
``<LEAP>/src``, leap's from :mod:`leap.compat`) on float32 NumPy arrays. Printed is one
row per (problem, volume, op): the seconds of each and leap's time as a fraction of
LEAP's; ``--json`` also writes these figures (with the rounds each got and the fill of
the sparse volume) to a file.

**One process per library.** The parent imports neither library: it starts one child
per library (``compare_upstream.py --child LEAP|leap``) and drives both through JSON
lines on their stdin and stdout. With both libraries in one process, one library's idle
OpenMP/TBB workers spin while the other computes (LEAP's cone projection ran 2.2x slower
next to leap). While one child computes, the other is blocked reading its stdin; the
parent waits ``SETTLE_S`` before each timed call so that the previous call's workers
have stopped spinning, and records the CPU time the idle child used meanwhile
(``idle_cpu_s`` in the JSON; a row where it is not negligible gets a warning). The
machinery is ``benchmarks/_compare.py``, shared with ``compare_peers.py`` (leap against
ASTRA's CPU projectors).

**Timing.** For each row each child sets the problem up and makes one warm-up call
(leap compiles its kernels there). The timed calls then alternate, LEAP, leap, LEAP, ...
for ``--rounds`` rounds, so that drift of the machine (clock, heat, other load) affects
both alike; each figure is the best of its rounds. A library whose first timed call
takes more than ``SLOW_S`` is timed only once (upstream's CPU modular back-projector
takes minutes). Upstream prints an error and leaves the output as it was for what its
CPU build lacks (helical FBP): such a row reads "not on this CPU build".

**Dense and sparse volumes.** LEAP skips zero voxels when projecting, so a random dense
volume is its worst case. Every problem is therefore measured on two volumes:

- ``dense``: uniform random voxels; back-projection and FBP get uniform random
  projections;
- ``sparse``: a ball in air, 1 inside a centred sphere whose radius is chosen so that it
  holds 13 % of the voxels (``SPARSE_FILL``; of a one-slice volume, a disc), 0 elsewhere;
  back-projection and FBP get the ball's projections, made in each child by its own
  library.

Problems (``PROBLEMS``): cone 128³ (180 views over 360°, 128² detector of 1 mm, sod 500,
sdd 1000, LEAP's default volume), cone_peers (the cone problem other packages are
compared on: 128³ of 1 mm voxels, 160² detector of 1.5 mm, sod 1000, sdd 1500, 180 views
over 360°), parallel 512² (720 views over 180°, one row of 512 columns), fan2d 512²
(720 views over 360°, one row of 512 columns of 1 mm, sod 1000, sdd 1500, one slice of
512² 1 mm voxels), helical cone 128³ (360 views over two turns, half a detector height
per turn), the cone scan as a modular beam (upstream's CPU projects modular beams with
its Joseph projector; both get the vectors of leap's ``convert_to_modularbeam``), and, as
``benchmarks/bench_cpu.py`` defines them, fan 128³ (the cone scan's views, 0.5 mm voxels
1 mm high) and parallel3d 128³ (180 views over 180°, 1 mm voxels and pixels).
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
import types

import numpy as np

from _compare import (SETTLE_S, SLOW_S, SPARSE_FILL, ModelsChild, Peer, measure_rows,
                      print_header, serve, split_list)

#: Order of the calls in a round.
LIBRARIES = ("LEAP", "leap")
OPS = ("project", "backproject", "FBP")
VOLUMES = ("dense", "sparse")


# --------------------------------------------------------------------------- problems
# Each set-up takes a tomographicModels of either library (and, for the modular beam,
# the vectors) and sets its geometry and volume.

def _cone(ct, helical=False):
    n = 128
    views, rng = (360, 720.0) if helical else (180, 360.0)
    ct.set_conebeam(views, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                    ct.setAngleArray(views, rng), 500.0, 1000.0)
    if helical:
        ct.set_helicalPitch(0.5 * n * 0.5 / (2 * np.pi))
    ct.set_default_volume()


def _cone_peers(ct):
    n, m = 128, 160
    ct.set_conebeam(180, m, m, 1.5, 1.5, 0.5 * (m - 1), 0.5 * (m - 1),
                    ct.setAngleArray(180, 360.0), 1000.0, 1500.0)
    ct.set_volume(n, n, n, 1.0, 1.0)


def parallel2d(ct, n=512, views=720):
    """Parallel beam over 180°: ``views`` views of one row of ``n`` columns of 1 mm, LEAP's
    default volume (one slice of n² 1 mm voxels)."""
    ct.set_parallelbeam(views, 1, n, 1.0, 1.0, 0.0, 0.5 * (n - 1),
                        ct.setAngleArray(views, 180.0))
    ct.set_default_volume()


def fan2d(ct, n=512, views=720):
    """Fan beam over 360° (sod 1000 mm, sdd 1500 mm): ``views`` views of one row of ``n``
    columns of 1 mm, one slice of n² 1 mm voxels."""
    ct.set_fanbeam(views, 1, n, 1.0, 1.0, 0.0, 0.5 * (n - 1),
                   ct.setAngleArray(views, 360.0), 1000.0, 1500.0)
    ct.set_volume(n, n, 1, 1.0, 1.0)


def _fan(ct):
    n = 128
    ct.set_fanbeam(180, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                   ct.setAngleArray(180, 360.0), 500.0, 1000.0)
    ct.set_volume(n, n, n, 0.5, 1.0)


def _parallel3d(ct):
    n = 128
    ct.set_parallelbeam(180, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                        ct.setAngleArray(180, 180.0))
    ct.set_volume(n, n, n, 1.0, 1.0)


def _modular(ct, vectors):
    ct.set_modularbeam(180, 128, 128, 1.0, 1.0,
                       *(np.asarray(v, dtype=np.float32) for v in vectors))
    ct.set_default_volume()


PROBLEMS = {"cone": _cone, "cone_peers": _cone_peers, "parallel": parallel2d,
            "fan2d": fan2d, "helical": lambda ct: _cone(ct, helical=True),
            "modular": _modular, "fan": _fan, "parallel3d": _parallel3d}


# ------------------------------------------------------------------------------ child

def upstream_models(src_dir, lib_dir):
    """Upstream's ``tomographicModels`` class bound to the library in ``lib_dir``.

    Upstream's ``leapctype`` imports ``leap_filter_sequence``, which imports
    ``leapctype`` by name, so ``src_dir`` goes first on ``sys.path`` (ahead of leap's
    shims of the same names). Its optional torch support is switched off so that the
    LEAP process loads no torch runtime (only NumPy arrays are used), and ``imageio``,
    which it needs only for image files, is stubbed when it is not installed.
    """
    sys.path.insert(0, os.path.abspath(src_dir))
    sys.modules["torch"] = None  # makes ``import torch`` raise ImportError
    if importlib.util.find_spec("imageio") is None:
        sys.modules["imageio"] = types.ModuleType("imageio")
    import leapctype
    if os.path.dirname(os.path.abspath(leapctype.__file__)) != os.path.abspath(src_dir):
        raise SystemExit(f"leapctype resolved to {leapctype.__file__}, not {src_dir}")
    return lambda: leapctype.tomographicModels(lib_dir=lib_dir)


class Child(ModelsChild):
    """One library (upstream's or leap's ``tomographicModels``) in a child process."""

    def vectors(self):
        """The modular-beam vectors of the cone scan (leap's conversion)."""
        ct = self.make()
        PROBLEMS["cone"](ct)
        ct.convert_to_modularbeam()
        return {"vectors": [np.asarray(v, dtype=np.float64).tolist() for v in (
            ct.get_sourcePositions(), ct.get_moduleCenters(), ct.get_rowVectors(),
            ct.get_colVectors())]}


def child_main(who, src_dir, lib_dir):
    """Serve the parent as library ``who``'s child."""
    def make():
        if who == "LEAP":
            return Child(upstream_models(src_dir, lib_dir), PROBLEMS)
        from leap.compat import tomographicModels
        return Child(tomographicModels, PROBLEMS)
    serve(make)


# ----------------------------------------------------------------------------- parent

def main():
    ap = argparse.ArgumentParser(
        description="leap vs upstream LEAP on the CPU, each library in its own process")
    ap.add_argument("src_dir", help="upstream LEAP's src directory (leapctype.py)")
    ap.add_argument("lib_dir", help="directory of upstream's built libleapct.so")
    ap.add_argument("problems", nargs="*", default=list(PROBLEMS),
                    help=f"subset of {', '.join(PROBLEMS)} (default: all)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (best is kept)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated subset of "
                    f"{', '.join(OPS)}")
    ap.add_argument("--volumes", default=",".join(VOLUMES),
                    help="comma-separated subset of dense, sparse")
    ap.add_argument("--json", metavar="PATH", help="also write the figures to PATH")
    ap.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = ap.parse_intermixed_args()
    if args.child:
        return child_main(args.child, args.src_dir, args.lib_dir)
    problems = split_list(",".join(args.problems), PROBLEMS, "problems")
    ops = split_list(args.ops, OPS, "ops")
    volumes = split_list(args.volumes, VOLUMES, "volumes")

    script = os.path.abspath(__file__)
    peers = {who: Peer(who, [script, args.src_dir, args.lib_dir, "--child", who])
             for who in LIBRARIES}
    rows = []
    try:
        print_header(LIBRARIES)
        for problem in problems:
            vectors = (peers["leap"].ask("vectors")["vectors"] if problem == "modular"
                       else None)
            measure_rows(peers, LIBRARIES, problem, volumes, ops, args.rounds,
                         "an output was left unchanged: not on this CPU build", rows,
                         vectors=vectors)
    finally:
        for peer in peers.values():
            peer.close()
    if args.json:
        meta = {"src_dir": os.path.abspath(args.src_dir),
                "lib_dir": os.path.abspath(args.lib_dir), "rounds": args.rounds,
                "slow_s": SLOW_S, "settle_s": SETTLE_S, "sparse_fill": SPARSE_FILL,
                "cpu_count": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
