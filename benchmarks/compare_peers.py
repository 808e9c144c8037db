"""leap against ASTRA Toolbox's CPU projectors, each library in its own process.

Run (with ``astra-toolbox`` installed; a CUDA build runs its CPU projectors as well)::

    python benchmarks/compare_peers.py [problem ...] [--size 512] [--views 720]
        [--astra-kernel closest|strip|line|linear] [--rounds 5]
        [--ops project,backproject,FBP] [--volumes dense,sparse] [--json PATH]

Printed is one row per (problem, volume, op): the seconds of each and leap's time as a
fraction of ASTRA's; ``--json`` also writes these figures (with the rounds each got, the
fill of the sparse volume, the agreement figures below, ASTRA's version and leap's
thread count) to a file.

**Which peer.** On the CPU, ASTRA is the only peer with projectors of its own: TIGRE and
tomosipo compute on CUDA only, and CIL's CPU projector is ASTRA's. ASTRA's CPU
projectors are 2-D (its only 3-D projector is ``CudaProjector3D`` and its 3-D algorithms
are the ``Cuda*Algorithm3D`` ones), so the problems are the 2-D ones of ``compare_upstream.py`` (``PROBLEMS``), the same
functions at the default ``--size`` and ``--views``:

- ``parallel``: one slice of 512² voxels of 1 mm, 720 views over 180°, one row of 512
  columns of 1 mm, centred;
- ``fan2d``: the same slice, a flat fan beam over 360° of 720 views, 512 columns of 1 mm,
  sod 1000 mm, sdd 1500 mm.

The ASTRA geometry is leap's, converted by :func:`leap.interop.astra.to_astra` in the leap
child (``parallel`` and ``fanflat``) and sent to the ASTRA child, which imports no leap.

**Which projector** (``--astra-kernel``, ``ASTRA_KERNELS``). leap's model is LEAP's
separable footprint, for a slice a rectangle: along the axis more perpendicular to the
ray the voxel's mid-plane is projected onto the detector and the overlap taken with each
pixel, scaled by the ray's length per unit step along that axis. ASTRA's CPU projector
of that model for parallel beams is ``distance_driven``, which by default is timed
(leap's and its projections agree to about 1e-5); for fan beams ASTRA has no
distance-driven CPU projector, and the nearest is ``strip_fanflat``, the area of each
pixel inside the fan of rays that meets a detector pixel, whose exact area differs from
the rectangle at oblique views by under 1 % (relative L2). ``--astra-kernel strip``
takes ``strip`` (the exact area for parallel beams too) and ``strip_fanflat``, ``line``
the length of a zero-width ray through each detector pixel's centre in each pixel
(``line``, ``line_fanflat``), ``linear`` (parallel only) a zero-width ray with linear
interpolation between pixels.

**Agreement check.** Once per problem, before any timing, the leap child projects a
random volume inside a centred disc of radius 0.3 of the volume's width (inside both
problems' field of view; not symmetric, so a mirrored convention would show) and
back-projects random projections; the ASTRA child does the same through its projector
(leap's arrays reach it in ASTRA's layout, by ``to_astra_data``) and reports the
relative L2 differences ‖astra − leap‖/‖leap‖ of the projections and of the
back-projections (within the disc, since leap masks its field of view). Above the
kernel's tolerance (0.01 for ``closest``, 0.02 ``strip``, 0.05 ``line`` and ``linear``;
a mirrored or shifted geometry differs by tens of per cent) it raises and the problem is
not timed. The figures are printed before the problem's rows and kept in the JSON.

**What is timed.** ASTRA: the data objects are created (``astra.data2d.link``: ASTRA's
objects share the NumPy arrays' memory), the projector made and the algorithm object
created (``astra.algorithm.create``) at set-up; each timed call is one
``astra.algorithm.run`` of the ``FP`` (project), ``BP`` (back-project) or ``FBP``
(ram-lak filter, ASTRA's default) algorithm, which zeroes its output and computes into
it. ASTRA's CPU FBP takes parallel beams only
(``src/FilteredBackProjectionAlgorithm.cpp``: "FBP currently only supports parallel
projection geometries"), so fan FBP reads "not on ASTRA's CPU". leap: as in
``compare_upstream.py``, ``tomographicModels.project``, ``backproject`` and ``FBP`` into
arrays allocated at set-up (FBP's input copied before the clock starts).

**Threads.** ASTRA's CPU projectors and algorithms are single-threaded: its sources hold
no ``#pragma omp`` outside the MATLAB interface's data copies
(``matlab/mex/mexCopyDataHelpFunctions.cpp``), ``-fopenmp`` is set only for the MATLAB and
Octave builds (``build/linux/Makefile.in``), its only threads are the per-GPU workers of
``CompositeGeometryManager.cpp``, and the wheel's ``libastra.so`` links no OpenMP
runtime. leap runs with its default thread count (``numba.get_num_threads()``, all
cores; 2 on the machine of ``docs/guides/performance.md``), reported in the JSON. The
figures therefore compare libraries as a user gets them, not per-core efficiency.

**Method** (``benchmarks/_compare.py``, shared with ``compare_upstream.py``): one child
process per library driven over JSON lines, one warm-up call per row (leap compiles its
kernels there), then timed calls alternating ASTRA, leap, ASTRA, ... for ``--rounds``
rounds, ``SETTLE_S`` of sleep before each and the idle child's CPU time recorded; each
figure is the best of its rounds. Dense volumes are uniform random (back-projection and
FBP get uniform random projections); sparse ones are a ball in air holding 13 % of the
voxels (a disc of the slice), back-projection and FBP getting its projections made in
each child by its own library.
"""
from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time

import numpy as np

from _compare import (SETTLE_S, SLOW_S, SPARSE_FILL, ModelsChild, Peer, ball, measure_rows,
                      print_header, seconds, serve, split_list)
from compare_upstream import fan2d, parallel2d

#: Order of the calls in a round.
LIBRARIES = ("ASTRA", "leap")
OPS = ("project", "backproject", "FBP")
VOLUMES = ("dense", "sparse")
#: The problems (compare_upstream's 2-D ones), each ``fn(ct, n, views)``.
PROBLEMS = {"parallel": parallel2d, "fan2d": fan2d}
#: ASTRA's CPU projector for each ``--astra-kernel`` and ASTRA geometry type, and the
#: largest relative L2 difference from leap's projections (and back-projections) at
#: which a problem counts as the same problem (a mirrored or shifted geometry differs
#: by tens of per cent on the random volume of the check).
ASTRA_KERNELS = {
    "closest": ({"parallel": "distance_driven", "fanflat": "strip_fanflat"}, 0.01),
    "strip": ({"parallel": "strip", "fanflat": "strip_fanflat"}, 0.02),
    "line": ({"parallel": "line", "fanflat": "line_fanflat"}, 0.05),
    "linear": ({"parallel": "linear"}, 0.05),
}
#: Radius of the agreement check's disc, as a fraction of the volume's width.
DISC = 0.3


def _plain(obj):
    """``obj`` with NumPy arrays and scalars turned into lists and floats (for JSON)."""
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _disc(shape):
    """A boolean (..., ny, nx) mask: the centred disc of radius ``DISC`` of the width."""
    ny, nx = shape[-2:]
    y = np.arange(ny) - 0.5 * (ny - 1)
    x = np.arange(nx) - 0.5 * (nx - 1)
    return np.broadcast_to(y[:, None] ** 2 + x[None, :] ** 2 <= (DISC * nx) ** 2, shape)


def _rel_l2(a, ref):
    return float(np.linalg.norm((a - ref).ravel()) / np.linalg.norm(ref.ravel()))


# --------------------------------------------------------------------------- children

class LeapChild(ModelsChild):
    """leap's ``tomographicModels`` in a child process, with the agreement check's side."""

    def astra_problem(self, problem, path):
        """Set ``problem`` up; write the agreement check's arrays (in ASTRA's layout) to
        ``path`` (.npz) and answer ASTRA's geometry of it and leap's thread count."""
        import numba
        from leap.interop.astra import to_astra, to_astra_data
        ct = self._problem(problem)
        pg, vg = to_astra(ct.system)
        rng = np.random.default_rng(3)
        f = ct.allocate_volume()
        f[...] = rng.random(f.shape, dtype=np.float32) * _disc(f.shape)
        g = ct.allocate_projections()
        ct.project(g, f)
        s = ct.allocate_projections()
        s[...] = rng.random(s.shape, dtype=np.float32)
        b = ct.allocate_volume()
        ct.backproject(s, b)
        np.savez(path, volume=to_astra_data(f, vg), projections=to_astra_data(g, pg),
                 sinogram=to_astra_data(s, pg), backprojection=to_astra_data(b, vg))
        return {"proj_geom": _plain(pg), "vol_geom": _plain(vg),
                "threads": numba.get_num_threads()}


class AstraChild:
    """ASTRA's CPU projectors in a child process: the current problem (geometry and
    projector), its inputs, and the prepared algorithm."""

    def __init__(self, kernel):
        import astra
        self.astra = astra
        self.kernel = kernel
        self.projectors, self.tolerance = ASTRA_KERNELS[kernel]
        self.key, self.geom, self.proj_id, self.inputs = None, None, None, {}
        self.ids, self.call = [], None   # data and algorithm objects of the set-up

    def _free_setup(self):
        a = self.astra
        for kind, i in self.ids:
            (a.algorithm.delete if kind == "alg" else a.data2d.delete)(i)
        self.ids, self.call = [], None

    def _link(self, kind, array):
        i = self.astra.data2d.link(kind, self.geom[0 if kind == "-sino" else 1], array)
        self.ids.append(("data", i))
        return i

    def _run(self, name, proj_id, vol, sino, **cfg):
        """Create algorithm ``name`` on the linked arrays; answer its id (kept for
        deletion at the next set-up)."""
        a = self.astra
        conf = a.astra_dict(name)
        conf["ProjectorId"] = proj_id
        conf["ProjectionDataId"] = self._link("-sino", sino)
        conf["VolumeDataId" if name == "FP" else "ReconstructionDataId"] = \
            self._link("-vol", vol)
        conf.update(cfg)
        i = a.algorithm.create(conf)
        self.ids.append(("alg", i))
        return i

    def problem(self, problem, proj_geom, vol_geom, reference):
        """Take ``problem``'s ASTRA geometry (from the leap child), make its projector,
        and check it against leap's arrays in ``reference`` (.npz): answer the relative
        L2 differences; raise above the kernel's tolerance."""
        a = self.astra
        self._free_setup()
        if self.proj_id is not None:
            a.projector.delete(self.proj_id)
            self.proj_id = None
        pg = dict(proj_geom)
        if "ProjectionAngles" in pg:
            pg["ProjectionAngles"] = np.asarray(pg["ProjectionAngles"], dtype=np.float64)
        if "Vectors" in pg:
            pg["Vectors"] = np.asarray(pg["Vectors"], dtype=np.float64)
        name = self.projectors.get(pg["type"])
        if name is None:
            raise ValueError(f"ASTRA has no CPU {self.kernel!r} projector for "
                             f"{pg['type']!r}; it has one for {', '.join(self.projectors)}")
        self.geom = (pg, vol_geom)
        self.proj_id = a.create_projector(name, pg, vol_geom)
        self.key, self.inputs = problem, {}
        with np.load(reference) as ref:
            ref = dict(ref)
        sino = np.zeros_like(ref["projections"])
        a.algorithm.run(self._run("FP", self.proj_id, ref["volume"], sino))
        vol = np.zeros_like(ref["backprojection"])
        a.algorithm.run(self._run("BP", self.proj_id, vol, ref["sinogram"]))
        self._free_setup()
        inside = _disc(vol.shape)
        agree = {"projector": name, "type": pg["type"], "version": a.__version__,
                 "tolerance": self.tolerance,
                 "project_rel_l2": _rel_l2(sino, ref["projections"]),
                 "backproject_rel_l2": _rel_l2(vol[inside], ref["backprojection"][inside])}
        worst = max(agree["project_rel_l2"], agree["backproject_rel_l2"])
        if not worst <= self.tolerance:
            raise ValueError(f"ASTRA's {name!r} and leap differ by {worst:.3g} (relative "
                             f"L2) on {problem}, more than {self.tolerance}: not the same "
                             "problem")
        return agree

    def _volume(self, kind):
        """The (volume, projections) inputs of ``kind`` in ASTRA's layout."""
        if kind not in self.inputs:
            pg, vg = self.geom
            vol_shape = (vg["GridRowCount"], vg["GridColCount"])
            sino_shape = (len(pg.get("ProjectionAngles", pg.get("Vectors"))),
                          pg["DetectorCount"])
            if kind == "dense":
                f = np.random.default_rng(0).random(vol_shape, dtype=np.float32)
                g = np.random.default_rng(1).random(sino_shape, dtype=np.float32)
            else:
                opt = vg["option"]
                w = (opt["WindowMaxX"] - opt["WindowMinX"]) / vg["GridColCount"]
                f = np.zeros((1,) + vol_shape, dtype=np.float32)
                ball(f, w, w)
                f = f[0]
                g = np.zeros(sino_shape, dtype=np.float32)
                self.astra.algorithm.run(self._run("FP", self.proj_id, f, g))
                self._free_setup()
            self.inputs[kind] = (f, g)
        return self.inputs[kind]

    def setup(self, problem, volume, op):
        """Prepare ``op`` on ``volume`` inputs of ``problem`` (set by :meth:`problem`) and
        make the warm-up call."""
        if problem != self.key:
            raise ValueError(f"the ASTRA child has {self.key!r} set up, not {problem!r}")
        self._free_setup()
        f, g = self._volume(volume)
        pg, vg = self.geom
        fill = float(np.count_nonzero(f)) / f.size
        out = np.zeros_like(g if op == "project" else f)
        out[...] = np.random.default_rng(2).random(out.shape, dtype=np.float32) - 7.0
        before = out.copy()
        if op == "project":
            alg = self._run("FP", self.proj_id, f, out)
        elif op == "backproject":
            alg = self._run("BP", self.proj_id, out, g)
        else:
            try:
                alg = self._run("FBP", self.proj_id, out, g)
            except Exception:
                if pg["type"] == "parallel":
                    raise
                # ASTRA's message went to stderr: "FBP currently only supports parallel
                # projection geometries"
                return {"unsupported": "not on ASTRA's CPU: its FBP takes parallel beams "
                        "only", "fill": fill, "warmup_s": None}
        self.call = lambda: seconds(self.astra.algorithm.run, alg)
        warmup_s = self.call()
        return {"warmup_s": warmup_s, "unchanged": bool(np.array_equal(before, out)),
                "fill": fill}

    def timed(self):
        """Run the prepared algorithm once: its wall time in seconds."""
        return {"s": self.call()}


def child_main(who, size, views, kernel):
    """Serve the parent as library ``who``'s child."""
    def make():
        if who == "ASTRA":
            return AstraChild(kernel)
        from leap.compat import tomographicModels
        problems = {k: functools.partial(fn, n=size, views=views)
                    for k, fn in PROBLEMS.items()}
        return LeapChild(tomographicModels, problems)
    serve(make)


# ----------------------------------------------------------------------------- parent

def check_problem(peers, problem):
    """The agreement check of ``problem`` (sets it up in both children): its figures."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "reference.npz")
        geo = peers["leap"].ask("astra_problem", problem=problem, path=path)
        agree = peers["ASTRA"].ask("problem", problem=problem, proj_geom=geo["proj_geom"],
                                   vol_geom=geo["vol_geom"], reference=path)
    agree["leap_threads"] = geo["threads"]
    print(f"# {problem}: ASTRA {agree['version']} {agree['projector']!r} ({agree['type']}) "
          f"against leap ({geo['threads']} threads): relative L2 difference "
          f"{agree['project_rel_l2']:.2e} (projections), {agree['backproject_rel_l2']:.2e} "
          f"(back-projections); tolerance {agree['tolerance']}", flush=True)
    return agree


def main():
    ap = argparse.ArgumentParser(
        description="leap vs ASTRA's CPU projectors, each library in its own process")
    ap.add_argument("problems", nargs="*", default=list(PROBLEMS),
                    help=f"subset of {', '.join(PROBLEMS)} (default: all)")
    ap.add_argument("--size", type=int, default=512,
                    help="volume edge and detector columns (default 512)")
    ap.add_argument("--views", type=int, default=720, help="views (default 720)")
    ap.add_argument("--astra-kernel", choices=ASTRA_KERNELS, default="closest",
                    help="ASTRA's projector: closest to leap's model (distance_driven, "
                    "strip_fanflat; default), strip (strip, strip_fanflat), line (line, "
                    "line_fanflat) or linear (parallel only)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds (best is kept)")
    ap.add_argument("--ops", default=",".join(OPS), help=f"comma-separated subset of "
                    f"{', '.join(OPS)}")
    ap.add_argument("--volumes", default=",".join(VOLUMES),
                    help="comma-separated subset of dense, sparse")
    ap.add_argument("--json", metavar="PATH", help="also write the figures to PATH")
    ap.add_argument("--child", choices=LIBRARIES, help=argparse.SUPPRESS)
    args = ap.parse_intermixed_args()
    if args.size < 8 or args.views < 1 or args.rounds < 1:
        raise SystemExit(f"--size must be at least 8, --views and --rounds at least 1; got "
                         f"{args.size}, {args.views}, {args.rounds}")
    if args.child:
        return child_main(args.child, args.size, args.views, args.astra_kernel)
    problems = split_list(",".join(args.problems), PROBLEMS, "problems")
    ops = split_list(args.ops, OPS, "ops")
    volumes = split_list(args.volumes, VOLUMES, "volumes")

    script = os.path.abspath(__file__)
    peers = {who: Peer(who, [script, "--child", who, "--size", str(args.size),
                             "--views", str(args.views), "--astra-kernel",
                             args.astra_kernel]) for who in LIBRARIES}
    rows, agreement = [], {}
    try:
        for problem in problems:
            try:
                agreement[problem] = check_problem(peers, problem)
            except RuntimeError as err:
                print(err, file=sys.stderr)
                last = str(err).strip().splitlines()[-1]
                print(f"# {problem}: not timed: {last}", flush=True)
                rows.append({"problem": problem, "note": f"error: {last}"})
                continue
            print_header(LIBRARIES)
            measure_rows(peers, LIBRARIES, problem, volumes, ops, args.rounds,
                         "an output was left unchanged", rows)
    finally:
        for peer in peers.values():
            peer.close()
    if args.json:
        meta = {"size": args.size, "views": args.views, "rounds": args.rounds,
                "astra_kernel": args.astra_kernel,
                "slow_s": SLOW_S, "settle_s": SETTLE_S, "sparse_fill": SPARSE_FILL,
                "agreement": agreement,
                "cpu_count": os.cpu_count(), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}
        with open(args.json, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
