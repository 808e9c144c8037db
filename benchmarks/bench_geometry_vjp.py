"""CPU geometry VJPs for vertical modules and curved-detector cone beams against a
back-projection of the same size (issue 35: "a geometry VJP costs at most 3× a
back-projection of the same size").

Run: ``python benchmarks/bench_geometry_vjp.py [--sizes N ...] [--repeats R]
[--general-repeats R] [--batch B] [--curved-only]``

Problem of edge N (default 64 and 128): an N³ volume 64 mm across (voxels 64/N mm),
90 views over 360°, a flat (1.5·N)² detector 192 mm across, cone beam sod 500 mm,
sdd 1000 mm, converted to modular form (``ConeBeam.to_modular``: vertical modules, so
the CPU projectors run the axial kernels). The volume and ḡ are random and dense (every
voxel column nonzero, the VJP's worst case).

Timed, best of ``--repeats`` after a warm-up call (compilation excluded):

* ``backproject``: :func:`leap.backproject` of ḡ (the public API: the axial kernels);
* ``vjp (columns)``: :func:`leap.kernels.cpu.axial_geometry_vjp.geometry_vjp`;
* ``vjp (general)``: :func:`leap.kernels.cpu.modular_geometry_vjp.geometry_vjp`, the
  per-voxel kernel (``--general-repeats``, default 1 at sizes above 64: seconds each;
  not run above ``--general-max``, default 128: minutes);

and the ratios of each VJP to the back-projection. The two VJPs' results are compared
(relative difference of each gradient).

Curved detector: the same cone beam with a curved detector of the same angular pitch
(``ConeBeam`` with ``detector.curved``, the axial kernels), timed alike:
``backproject`` (:func:`leap.backproject`) and ``vjp (curved)``
(:func:`leap.kernels.cpu.curved_cone_vjp.plan_geometry_vjp`, which includes one forward
projection for the row factor's derivative), and ``vjp given P f``, the same with the
forward projection passed in (``projection=``, as the torch layer does). Uses Numba's
thread count (``NUMBA_NUM_THREADS``).
"""
from __future__ import annotations

import argparse
import time

import numba
import numpy as np

import leap
from leap.kernels.cpu.axial_geometry_vjp import geometry_vjp as column_vjp
from leap.kernels.cpu.curved_cone_vjp import plan_geometry_vjp as curved_vjp
from leap.kernels.cpu.modular_geometry_vjp import geometry_vjp as general_vjp
from leap.kernels.plan import make_plan


def problem(n, batch):
    """(geometry, volume, f, ḡ) of edge n (module notes)."""
    nd = (3 * n) // 2
    det = leap.Detector(num_rows=nd, num_cols=nd, pixel_height=192.0 / nd,
                        pixel_width=192.0 / nd)
    vol = leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=64.0 / n, voxel_height=64.0 / n)
    angles = np.linspace(0.0, 2 * np.pi, 90, endpoint=False)
    geo = leap.ConeBeam(detector=det, angles=angles, sod=500.0, sdd=1000.0).to_modular()
    rng = np.random.default_rng(0)
    f = rng.random((batch,) + vol.shape, dtype=np.float32)
    g = rng.standard_normal((batch,) + geo.projection_shape).astype(np.float32)
    if batch == 1:
        f, g = f[0], g[0]
    return geo, vol, f, g


def curved_problem(n, batch):
    """(geometry, volume, f, ḡ) of edge n with a curved detector (module notes)."""
    geo, vol, f, g = problem(n, batch)
    nd = geo.detector.num_cols
    det = leap.Detector(num_rows=nd, num_cols=nd, pixel_height=192.0 / nd,
                        pixel_width=192.0 / nd, curved=True)
    cone = leap.ConeBeam(detector=det, angles=np.linspace(0.0, 2 * np.pi, 90, endpoint=False),
                         sod=500.0, sdd=1000.0)
    return cone, vol, f, g


def best(fn, repeats):
    """(best time in s, last result) of ``repeats`` calls."""
    times = []
    out = None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--general-repeats", type=int, default=None,
                    help="repeats of the general VJP (default: --repeats at 64 and below, "
                         "else 1)")
    ap.add_argument("--general-max", type=int, default=128,
                    help="largest size at which the general VJP is timed")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--curved-only", action="store_true",
                    help="time the curved-detector cone beam only")
    a = ap.parse_args()
    print(f"{numba.get_num_threads()} threads, batch {a.batch}")
    for n in a.sizes:
        if not a.curved_only:
            modular(n, a)
        curved(n, a)


def curved(n, a):
    """Time and print the curved-detector case of edge n."""
    geo, vol, f, g = curved_problem(n, a.batch)
    d = geo.detector
    plan = make_plan(geo, vol)
    gb = g if a.batch == 1 else g[0]

    def bp():
        return leap.backproject(geo, vol, gb)

    fs = f if a.batch > 1 else f[None]
    pf = np.stack([leap.project(geo, vol, x) for x in fs])

    def vjp():
        return curved_vjp(plan, f, g)

    def vjp_given():
        return curved_vjp(plan, f, g, projection=pf)

    bp()
    vjp()                                       # compile / warm up
    vjp_given()
    t_bp, _ = best(bp, a.repeats)
    t_vjp, _ = best(vjp, a.repeats)
    t_given, _ = best(vjp_given, a.repeats)
    print(f"{n}³, 90 views, {d.num_rows}×{d.num_cols} curved detector:")
    print(f"  backproject      {t_bp * 1e3:9.1f} ms   (×batch {a.batch}: "
          f"{t_bp * a.batch * 1e3:.1f} ms)")
    print(f"  vjp (curved)     {t_vjp * 1e3:9.1f} ms   {t_vjp / (t_bp * a.batch):6.2f}× "
          f"back-projection(s)")
    print(f"  vjp given P f    {t_given * 1e3:9.1f} ms   {t_given / (t_bp * a.batch):6.2f}× "
          f"back-projection(s)   (the torch layer's case)")


def modular(n, a):
    """Time and print the vertical-modules case of edge n."""
    geo, vol, f, g = problem(n, a.batch)
    d = geo.detector
    args = (geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors,
            vol.x0, vol.y0, vol.z0, vol.voxel_width, vol.voxel_height, d.pixel_width,
            d.pixel_height)
    gb = g if a.batch == 1 else g[0]

    def bp():
        return leap.backproject(geo, vol, gb)

    def fast():
        return column_vjp(f, g, *args)

    def general():
        return general_vjp(f, g, *args)

    rg = a.general_repeats or (a.repeats if n <= 64 else 1)
    bp()
    fast()                                  # compile / warm up
    t_bp, _ = best(bp, a.repeats)
    t_fast, got = best(fast, a.repeats)
    if n <= a.general_max:
        t_gen, want = best(general, rg)
        diff = max(float(np.linalg.norm(x - y) / np.linalg.norm(y))
                   for x, y in zip(got, want))
    print(f"{n}³, 90 views, {d.num_rows}×{d.num_cols} detector:")
    print(f"  backproject      {t_bp * 1e3:9.1f} ms   (×batch {a.batch}: "
          f"{t_bp * a.batch * 1e3:.1f} ms)")
    print(f"  vjp (columns)    {t_fast * 1e3:9.1f} ms   {t_fast / (t_bp * a.batch):6.2f}× "
          f"back-projection(s)")
    if n <= a.general_max:
        print(f"  vjp (general)    {t_gen * 1e3:9.1f} ms   "
              f"{t_gen / (t_bp * a.batch):6.2f}× back-projection(s)   (best of {rg})")
        print(f"  speed-up {t_gen / t_fast:.1f}×, max relative difference {diff:.1e}")


if __name__ == "__main__":
    main()
