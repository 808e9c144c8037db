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
(``idle_cpu_s`` in the JSON; a row where it is not negligible gets a warning).

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
import subprocess
import sys
import time
import traceback
import types

import numpy as np


#: A library whose first timed call is slower than this (s) is timed only once.
SLOW_S = 20.0
#: Pause (s) before each timed call, for the other library's workers to fall asleep.
SETTLE_S = 0.25
#: Fraction of the voxels inside the ball of the sparse volume.
SPARSE_FILL = 0.13
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


def _parallel(ct):
    ct.set_parallelbeam(720, 1, 512, 1.0, 1.0, 0.0, 255.5, ct.setAngleArray(720, 180.0))
    ct.set_default_volume()


def _fan2d(ct):
    ct.set_fanbeam(720, 1, 512, 1.0, 1.0, 0.0, 255.5, ct.setAngleArray(720, 360.0),
                   1000.0, 1500.0)
    ct.set_volume(512, 512, 1, 1.0, 1.0)


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


PROBLEMS = {"cone": _cone, "cone_peers": _cone_peers, "parallel": _parallel,
            "fan2d": _fan2d, "helical": lambda ct: _cone(ct, helical=True),
            "modular": _modular, "fan": _fan, "parallel3d": _parallel3d}


def ball(ct, f):
    """Fill ``f`` (ct's volume, axes z, y, x) with the sparse volume: 1 inside the centred
    sphere (in mm) holding ``SPARSE_FILL`` of the voxels, 0 elsewhere."""
    w, h = ct.get_voxelWidth(), ct.get_voxelHeight()
    z, y, x = (s * (np.arange(n) - 0.5 * (n - 1)) for s, n in zip((h, w, w), f.shape))
    d2 = z[:, None, None] ** 2 + y[None, :, None] ** 2 + x[None, None, :] ** 2
    f[...] = d2 <= np.quantile(d2, SPARSE_FILL)


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


def seconds(fn, *args):
    """Wall time (s) of ``fn(*args)``; the arguments are evaluated before the clock starts."""
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


class Child:
    """One library, its current problem and its prepared call, in a child process."""

    def __init__(self, who, src_dir, lib_dir):
        if who == "LEAP":
            self.make = upstream_models(src_dir, lib_dir)
        else:
            from leap.compat import tomographicModels
            self.make = tomographicModels
        self.key, self.ct, self.inputs, self.call = None, None, {}, None

    def _problem(self, problem, vectors):
        """Set up ``problem`` (kept until another is asked for) and its dense inputs."""
        if self.key != problem:
            self.ct = ct = self.make()
            if problem == "modular":
                PROBLEMS[problem](ct, vectors)
            else:
                PROBLEMS[problem](ct)
            f = ct.allocate_volume()
            f[...] = np.random.default_rng(0).random(f.shape, dtype=np.float32)
            g = ct.allocate_projections()
            g[...] = np.random.default_rng(1).random(g.shape, dtype=np.float32)
            self.key, self.inputs = problem, {"dense": (f, g)}
        return self.ct

    def _volume(self, kind):
        """The (volume, projections) inputs of ``kind``; the sparse ones on first use."""
        if kind not in self.inputs:
            ct = self.ct
            f = ct.allocate_volume()
            ball(ct, f)
            g = ct.allocate_projections()
            ct.project(g, f)
            self.inputs[kind] = (f, g)
        return self.inputs[kind]

    def vectors(self):
        """The modular-beam vectors of the cone scan (leap's conversion)."""
        ct = self.make()
        PROBLEMS["cone"](ct)
        ct.convert_to_modularbeam()
        return {"vectors": [np.asarray(v, dtype=np.float64).tolist() for v in (
            ct.get_sourcePositions(), ct.get_moduleCenters(), ct.get_rowVectors(),
            ct.get_colVectors())]}

    def setup(self, problem, volume, op, vectors=None):
        """Prepare ``op`` of ``problem`` on ``volume`` inputs and make the warm-up call.

        The output array is filled beforehand with values no computation gives here, so
        that an output left as it was (what upstream's CPU build lacks) is detected.
        """
        ct = self._problem(problem, vectors)
        f, g = self._volume(volume)
        out = (ct.allocate_projections() if op == "project" else ct.allocate_volume())
        out[...] = np.random.default_rng(2).random(out.shape, dtype=np.float32) - 7.0
        before = out.copy()
        if op == "project":
            self.call = lambda: seconds(ct.project, out, f)
        elif op == "backproject":
            self.call = lambda: seconds(ct.backproject, g, out)
        else:  # a fresh copy each call (not timed): FBP may filter its input in place
            self.call = lambda: seconds(ct.FBP, g.copy(), out)
        warmup_s = self.call()
        return {"warmup_s": warmup_s, "unchanged": bool(np.array_equal(before, out)),
                "fill": float(np.count_nonzero(f)) / f.size}

    def timed(self):
        """Run the prepared call once: its wall time in seconds."""
        return {"s": self.call()}


def child_main(who, src_dir, lib_dir):
    """Serve the parent: one JSON command per stdin line, one JSON answer per line.

    The answers go to a duplicate of the original stdout; stdout itself (fd 1, where both
    libraries and C ``printf`` write) is sent to stderr so as not to corrupt them.
    """
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    child = None
    for line in sys.stdin:
        cmd = json.loads(line)
        name = cmd.pop("cmd")
        if name == "quit":
            break
        try:
            if child is None:
                child = Child(who, src_dir, lib_dir)
            answer = getattr(child, name)(**cmd)
        except Exception:
            answer = {"error": traceback.format_exc()}
        proto.write(json.dumps(answer) + "\n")


# ----------------------------------------------------------------------------- parent

class Peer:
    """The parent's handle on one library's child process."""

    def __init__(self, who, src_dir, lib_dir):
        self.who = who
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), src_dir, lib_dir, "--child", who],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def ask(self, cmd, **kw):
        """Send one command and return the child's answer (RuntimeError on an error)."""
        self.proc.stdin.write(json.dumps({"cmd": cmd, **kw}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.who} child exited (status {self.proc.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{self.who}: {answer['error']}")
        return answer

    def cpu_s(self):
        """CPU seconds the child has used so far (Linux's /proc; NaN elsewhere)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return float("nan")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def measure(peers, problem, volume, op, rounds, vectors):
    """One row: warm-up in each child, then ``rounds`` alternating timed rounds."""
    row = {"problem": problem, "volume": volume, "op": op}
    warm = {who: peers[who].ask("setup", problem=problem, volume=volume, op=op,
                                vectors=vectors) for who in LIBRARIES}
    row["fill"] = warm["leap"]["fill"]
    row["warmup_s"] = {who: w["warmup_s"] for who, w in warm.items()}
    if any(w["unchanged"] for w in warm.values()):
        row["note"] = "an output was left unchanged: not on this CPU build"
        return row
    times = {who: [] for who in LIBRARIES}
    idle = {who: 0.0 for who in LIBRARIES}  # CPU s of the *other* child during who's calls
    for r in range(rounds):
        for who in LIBRARIES:
            if times[who] and times[who][0] > SLOW_S:
                continue
            other = peers[LIBRARIES[1 - LIBRARIES.index(who)]]
            time.sleep(SETTLE_S)
            c0 = other.cpu_s()
            times[who].append(peers[who].ask("timed")["s"])
            idle[who] += other.cpu_s() - c0
    row.update({"LEAP_s": min(times["LEAP"]), "leap_s": min(times["leap"]),
                "rounds": {who: len(t) for who, t in times.items()},
                "times_s": times, "idle_cpu_s": idle})
    row["ratio"] = row["leap_s"] / row["LEAP_s"]
    busy = {who: sum(t) for who, t in times.items()}
    if any(idle[w] > max(0.05, 0.1 * busy[w]) for w in LIBRARIES):
        row["note"] = f"idle peer used CPU while timed: {idle}"
    return row


def print_row(row):
    head = f"{row['problem']:<12}{row['volume']:<8}{row['op']:<13}"
    if "LEAP_s" in row:
        print(f"{head}{row['LEAP_s']:9.3f}{row['leap_s']:9.3f}{row['ratio']:11.2f}"
              + (f"  ({row['note']})" if "note" in row else ""), flush=True)
    else:
        print(f"{head}  ({row.get('note', 'failed')})", flush=True)


def split_list(text, allowed, what):
    items = [s for s in text.split(",") if s]
    bad = [s for s in items if s not in allowed]
    if bad or not items:
        raise SystemExit(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items


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

    peers = {who: Peer(who, args.src_dir, args.lib_dir) for who in LIBRARIES}
    rows = []
    try:
        print(f"{'problem':<12}{'volume':<8}{'op':<13}{'LEAP s':>9}{'leap s':>9}"
              f"{'leap/LEAP':>11}", flush=True)
        for problem in problems:
            vectors = (peers["leap"].ask("vectors")["vectors"] if problem == "modular"
                       else None)
            for volume in volumes:
                for op in ops:
                    try:
                        row = measure(peers, problem, volume, op, args.rounds, vectors)
                    except RuntimeError as err:
                        row = {"problem": problem, "volume": volume, "op": op,
                               "note": f"error: {str(err).strip().splitlines()[-1]}"}
                        print(err, file=sys.stderr)
                    rows.append(row)
                    print_row(row)
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
