"""What ``compare_upstream.py`` and ``compare_peers.py`` share: one child process per
library driven over JSON lines, settled, alternated rounds, best of N.

The parent imports no library under test. Each child (the same script run with
``--child WHO``) serves one JSON command per stdin line with one JSON answer per line
(:func:`serve`); the parent holds a :class:`Peer` per child and times a row with
:func:`measure`: one ``setup`` call per child (set-up and warm-up), then ``timed`` calls
alternating between the children for the given rounds, ``SETTLE_S`` of sleep before
each, the CPU time the idle child used meanwhile recorded. A child's ``setup`` answers
``{"warmup_s", "fill"}`` and, for what its library lacks, ``"unchanged": true`` (the
output was left as it was) or ``"unsupported": "<why>"``; ``timed`` answers ``{"s"}``.

A row (a dict, also what ``--json`` writes) holds ``<WHO>_s`` (best of the rounds) for
each library, ``ratio`` (the last library's best over the first's), ``rounds``,
``times_s``, ``idle_cpu_s``, ``warmup_s``, ``fill`` and, where something is off, ``note``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np


#: A library whose first timed call is slower than this (s) is timed only once.
SLOW_S = 20.0
#: Pause (s) before each timed call, for the other library's workers to fall asleep.
SETTLE_S = 0.25
#: Fraction of the voxels inside the ball of the sparse volume.
SPARSE_FILL = 0.13


def seconds(fn, *args):
    """Wall time (s) of ``fn(*args)``; the arguments are evaluated before the clock starts."""
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def ball(f, voxel_width, voxel_height):
    """Fill ``f`` (a volume, axes z, y, x; voxel sizes in mm) with the sparse volume: 1
    inside the centred sphere (in mm) holding ``SPARSE_FILL`` of the voxels, 0 elsewhere."""
    w, h = voxel_width, voxel_height
    z, y, x = (s * (np.arange(n) - 0.5 * (n - 1)) for s, n in zip((h, w, w), f.shape))
    d2 = z[:, None, None] ** 2 + y[None, :, None] ** 2 + x[None, None, :] ** 2
    f[...] = d2 <= np.quantile(d2, SPARSE_FILL)


class ModelsChild:
    """A library driven through LEAP's API (``tomographicModels``) in a child process:
    its current problem and its prepared call.

    ``make()`` gives a fresh ``tomographicModels``; ``problems`` maps a problem's name to
    a function setting a ``tomographicModels``'s geometry and volume (called with the
    modular beam's ``vectors`` when the parent sends them).
    """

    def __init__(self, make, problems):
        self.make, self.problems = make, problems
        self.key, self.ct, self.inputs, self.call = None, None, {}, None

    def _problem(self, problem, vectors=None):
        """Set up ``problem`` (kept until another is asked for) and its dense inputs."""
        if self.key != problem:
            self.ct = ct = self.make()
            if vectors is not None:
                self.problems[problem](ct, vectors)
            else:
                self.problems[problem](ct)
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
            ball(f, ct.get_voxelWidth(), ct.get_voxelHeight())
            g = ct.allocate_projections()
            ct.project(g, f)
            self.inputs[kind] = (f, g)
        return self.inputs[kind]

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


def serve(make_child):
    """Serve the parent: one JSON command per stdin line, one JSON answer per line.

    ``make_child()`` builds the object whose methods the commands name (on the first
    command, so that an import error is answered, not lost). The answers go to a
    duplicate of the original stdout; stdout itself (fd 1, where the libraries and C
    ``printf`` write) is sent to stderr so as not to corrupt them.
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
                child = make_child()
            answer = getattr(child, name)(**cmd)
        except Exception:
            answer = {"error": traceback.format_exc()}
        proto.write(json.dumps(answer) + "\n")


class Peer:
    """The parent's handle on one library's child process, started as
    ``python <argv...>``."""

    def __init__(self, who, argv):
        self.who = who
        self.proc = subprocess.Popen([sys.executable, *argv], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)

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


def measure(peers, order, problem, volume, op, rounds, unchanged_note, **setup_kw):
    """One row: warm-up in each child, then ``rounds`` alternating timed rounds.

    ``peers`` maps each name of ``order`` (two libraries, timed in that order each
    round) to its :class:`Peer`; ``setup_kw`` goes to both children's ``setup``;
    ``unchanged_note`` is the row's note when a child left its output unchanged.
    """
    row = {"problem": problem, "volume": volume, "op": op}
    warm = {who: peers[who].ask("setup", problem=problem, volume=volume, op=op, **setup_kw)
            for who in order}
    row["fill"] = warm[order[-1]]["fill"]
    row["warmup_s"] = {who: w["warmup_s"] for who, w in warm.items()}
    lacking = [w["unsupported"] for w in warm.values() if w.get("unsupported")]
    if lacking or any(w.get("unchanged") for w in warm.values()):
        row["note"] = lacking[0] if lacking else unchanged_note
        return row
    times = {who: [] for who in order}
    idle = {who: 0.0 for who in order}  # CPU s of the *other* child during who's calls
    for _ in range(rounds):
        for who in order:
            if times[who] and times[who][0] > SLOW_S:
                continue
            other = peers[order[1 - order.index(who)]]
            time.sleep(SETTLE_S)
            c0 = other.cpu_s()
            times[who].append(peers[who].ask("timed")["s"])
            idle[who] += other.cpu_s() - c0
    row.update({f"{who}_s": min(times[who]) for who in order})
    row.update({"rounds": {who: len(t) for who, t in times.items()},
                "times_s": times, "idle_cpu_s": idle})
    row["ratio"] = row[f"{order[-1]}_s"] / row[f"{order[0]}_s"]
    busy = {who: sum(t) for who, t in times.items()}
    if any(idle[w] > max(0.05, 0.1 * busy[w]) for w in order):
        row["note"] = f"idle peer used CPU while timed: {idle}"
    return row


def measure_rows(peers, order, problem, volumes, ops, rounds, unchanged_note, rows,
                 **setup_kw):
    """:func:`measure` every (volume, op) of ``problem``, appending each row (or the
    error that stopped it) to ``rows`` and printing it."""
    for volume in volumes:
        for op in ops:
            try:
                row = measure(peers, order, problem, volume, op, rounds, unchanged_note,
                              **setup_kw)
            except RuntimeError as err:
                row = {"problem": problem, "volume": volume, "op": op,
                       "note": f"error: {str(err).strip().splitlines()[-1]}"}
                print(err, file=sys.stderr)
            rows.append(row)
            print_row(row, order)


def print_header(order):
    a, b = order
    print(f"{'problem':<12}{'volume':<8}{'op':<13}{a + ' s':>9}{b + ' s':>9}"
          f"{b + '/' + a:>11}", flush=True)


def print_row(row, order):
    head = f"{row['problem']:<12}{row['volume']:<8}{row['op']:<13}"
    a, b = order
    if f"{a}_s" in row:
        print(f"{head}{row[a + '_s']:9.3f}{row[b + '_s']:9.3f}{row['ratio']:11.2f}"
              + (f"  ({row['note']})" if "note" in row else ""), flush=True)
    else:
        print(f"{head}  ({row.get('note', 'failed')})", flush=True)


def split_list(text, allowed, what):
    items = [s for s in text.split(",") if s]
    bad = [s for s in items if s not in allowed]
    if bad or not items:
        raise SystemExit(f"unknown {what} {bad}; choose from {', '.join(allowed)}")
    return items
