"""Real-GPU check of leap's CUDA back-end (needs an NVIDIA GPU; about 2-4 minutes).

Runs, and prints a PASS/FAIL line per check plus a JSON summary (also written to
``--json`` if given):

1. CPU-vs-GPU parity (relative L2 ≤ 1e-5) of project, back-project and FBP for every
   geometry (parallel, parallel 2-D, fan flat/curved, cone flat/curved/helical/tilted,
   modular, cone-parallel) on 48³-ish problems;
2. dot-product adjoint tests on the GPU alone;
3. zero-copy: CuPy in → CuPy out and torch CUDA in → torch CUDA out, with pointer
   checks (``out`` written in place) and float64 / mixed-kind inputs refused;
4. host data on the GPU: chunked (``max_slices`` with a partial last chunk) and
   multi-device split (``devices=[0, 0]``, or all GPUs) equal to the unchunked result;
5. geometry gradients through torch (``Projector.geometry_parameters()``): parallel, fan,
   flat and curved cone and modular beams, CUDA tensors against CPU tensors (the CUDA
   geometry VJPs of the modular, parallel/fan and curved cone models, relative L2
   ≤ 1e-5), and the volume gradient;
6. benchmarks (device-resident CuPy arrays when CuPy is installed, else Numba device
   arrays): cone beam 256³ / 360 views / 256² detector and 512³ / 720 views / 512²
   detector: project, back-project and FBP seconds and voxel-view updates per second
   (target on H100/H200: ≥ 3e11 for project and back-project, FBP of 512³ < 1 s).

Usage: ``python benchmarks/gpu_check.py [--skip-bench] [--small-bench] [--json out.json]``
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback

import numpy as np

import leap
from leap import arrays
from leap.reconstruction.fbp import fbp, fbp_adjoint

TOL = 1e-5
results = {"checks": {}, "bench": {}}


def rel(a, b):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def check(name, ok, detail=""):
    results["checks"][name] = {"ok": bool(ok), "detail": detail}
    print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def guarded(fn):
    def run(*a, **k):
        try:
            fn(*a, **k)
        except Exception as exc:  # noqa: BLE001 - report and go on with the other checks
            check(fn.__name__, False, f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
    return run


def geometries(n=48, na=60, full=True):
    det = leap.Detector(num_rows=n, num_cols=int(1.5 * n), pixel_height=1.0, pixel_width=1.0,
                        center_row=(n - 1) / 2, center_col=(1.5 * n - 1) / 2 + 0.3)
    ang = np.linspace(0, 2 * np.pi if full else np.pi, na, endpoint=False)
    sod, sdd = 4.0 * n, 8.0 * n
    cone = leap.ConeBeam(detector=det, angles=ang, sod=sod, sdd=sdd)
    vol = leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=0.5, voxel_height=0.5)
    return vol, {
        "parallel": leap.ParallelBeam(detector=det, angles=ang),
        "parallel_2d": leap.ParallelBeam(detector=det.with_changes(num_rows=1, center_row=0.0),
                                         angles=ang),
        "fan": leap.FanBeam(detector=det, angles=ang, sod=sod, sdd=sdd, tau=0.5),
        "fan_curved": leap.FanBeam(detector=det.with_changes(curved=True), angles=ang,
                                   sod=sod, sdd=sdd),
        "cone": cone,
        "cone_curved": leap.ConeBeam(detector=det.with_changes(curved=True), angles=ang,
                                     sod=sod, sdd=sdd),
        "cone_helical": leap.ConeBeam(detector=det, angles=ang, sod=sod, sdd=sdd,
                                      helical_pitch=0.5),
        "cone_tilted": leap.ConeBeam(detector=det, angles=ang, sod=sod, sdd=sdd, tilt=0.05),
        "modular": cone.to_modular(),
        "cone_parallel": leap.ConeParallelBeam(detector=det, angles=ang, sod=sod, sdd=sdd),
    }


def vol_for(vol, geo):
    return vol.with_changes(num_z=1) if geo.detector.num_rows == 1 else vol


def to_dev(x):
    from numba import cuda
    return cuda.to_device(x)


def host(x):
    return x.copy_to_host() if hasattr(x, "copy_to_host") else np.asarray(x)


@guarded
def parity_and_adjoint():
    vol0, geos = geometries()
    r = np.random.default_rng(0)
    for name, geo in geos.items():
        vol = vol_for(vol0, geo)
        f = r.random(vol.shape, dtype=np.float32)
        g = r.random(geo.projection_shape, dtype=np.float32)
        p = rel(host(leap.project(geo, vol, to_dev(f))), leap.project(geo, vol, f))
        b = rel(host(leap.backproject(geo, vol, to_dev(g))), leap.backproject(geo, vol, g))
        check(f"parity/{name}", p <= TOL and b <= TOL, f"project {p:.2e} backproject {b:.2e}")
        fr = r.standard_normal(vol.shape).astype(np.float32)
        gr = r.standard_normal(geo.projection_shape).astype(np.float32)
        Pf = host(leap.project(geo, vol, to_dev(fr))).astype(np.float64)
        PTg = host(leap.backproject(geo, vol, to_dev(gr))).astype(np.float64)
        mm = abs(np.vdot(Pf, gr) - np.vdot(fr, PTg)) / (np.linalg.norm(Pf) * np.linalg.norm(gr))
        check(f"adjoint/{name}", mm <= TOL, f"{mm:.2e}")
        if name != "cone_tilted":
            q = rel(host(fbp(geo, vol, to_dev(g))), fbp(geo, vol, g))
            qa = rel(host(fbp_adjoint(geo, vol, to_dev(f))), fbp_adjoint(geo, vol, f))
            check(f"fbp_parity/{name}", q <= TOL and qa <= TOL, f"fbp {q:.2e} adjoint {qa:.2e}")


@guarded
def zero_copy_cupy():
    try:
        import cupy as cp
    except ImportError:
        check("zero_copy/cupy", False, "cupy not installed")
        return
    vol, geos = geometries(32, 40)
    geo = geos["cone"]
    f = np.random.default_rng(1).random(vol.shape, dtype=np.float32)
    fd = cp.asarray(f)
    out = cp.empty(geo.projection_shape, dtype=cp.float32)
    ptr = out.data.ptr
    res = leap.project(geo, vol, fd, out=out)
    ok = res is out and res.data.ptr == ptr
    new = leap.backproject(geo, vol, out)
    ok = ok and isinstance(new, cp.ndarray)
    err = rel(cp.asnumpy(new), leap.backproject(geo, vol, leap.project(geo, vol, f)))
    rec = fbp(geo, vol, out)
    ok = ok and isinstance(rec, cp.ndarray)
    s = cp.cuda.Stream(non_blocking=True)
    with s:                                   # runs on the caller's current stream
        res2 = leap.project(geo, vol, fd)
    s.synchronize()
    ok = ok and rel(cp.asnumpy(res2), cp.asnumpy(res)) <= 1e-6
    refused = []
    for bad in (lambda: leap.project(geo, vol, fd.astype(cp.float64)),
                lambda: leap.project(geo, vol, f, out=out),
                lambda: leap.project(geo, vol, fd, out=np.empty(geo.projection_shape, np.float32))):
        try:
            bad()
            refused.append(False)
        except (TypeError, ValueError):
            refused.append(True)
    check("zero_copy/cupy", ok and err <= TOL and all(refused),
          f"pointer kept, CuPy out, rel {err:.2e}, bad inputs refused {refused}")


@guarded
def zero_copy_torch():
    try:
        import torch
    except ImportError:
        check("zero_copy/torch", False, "torch not installed")
        return
    if not torch.cuda.is_available():
        check("zero_copy/torch", False, "torch has no CUDA")
        return
    vol, geos = geometries(32, 40)
    geo = geos["fan"]
    f = torch.rand(vol.shape, device="cuda")
    out = torch.empty(geo.projection_shape, device="cuda")
    ptr = out.data_ptr()
    res = leap.project(geo, vol, f, out=out)
    ok = res is out and res.data_ptr() == ptr
    back = leap.backproject(geo, vol, out)
    ok = ok and isinstance(back, torch.Tensor) and back.is_cuda
    err = rel(back.cpu().numpy(), leap.backproject(geo, vol, out.cpu().numpy()))
    check("zero_copy/torch", ok and err <= TOL, f"pointer kept, torch CUDA out, rel {err:.2e}")
    if torch.cuda.device_count() > 1:
        try:
            leap.project(geo, vol, f, out=torch.empty(geo.projection_shape, device="cuda:1"))
            check("two_devices_refused", False)
        except ValueError as exc:
            check("two_devices_refused", "different GPUs" in str(exc), str(exc))


def _torch_projector(kind):
    """A small torch Projector of geometry ``kind`` (parallel, fan, cone, curved, modular)."""
    from leap.torch import Projector
    proj = Projector(forward_project=True)
    phis = np.arange(24) * 15.0 + 3.0
    if kind == "parallel":
        proj.set_parallelbeam(24, 8, 40, 1.0, 1.0, 3.5, 20.3, phis)
    elif kind == "fan":
        proj.set_fanbeam(24, 8, 48, 1.0, 1.0, 3.5, 24.2, phis, 60.0, 100.0)
    else:
        proj.set_conebeam(24, 24, 40, 1.0, 1.0, 11.8, 19.6, phis, 60.0, 100.0)
        if kind == "curved":
            proj.leapct.set_curvedDetector()
        elif kind == "modular":
            proj.leapct.convert_to_modularbeam()
    proj.set_volume(24, 24, 8 if kind in ("parallel", "fan") else 12, 0.6, 0.6)
    return proj


def geometry_gradient_parity(device):
    """{kind: (worst relative L2 of the geometry gradients, of the volume gradient)}: the
    same loss through ``geometry_parameters()`` on CPU tensors and on ``device``."""
    import torch
    out = {}
    for kind in ("parallel", "fan", "cone", "curved", "modular"):
        grads = []
        for dev in ("cpu", device):
            proj = _torch_projector(kind)
            params = proj.geometry_parameters()
            proj.to(dev)
            rng = np.random.default_rng(7)
            f = torch.tensor(rng.random((1, *proj.get_volume_dim())), dtype=torch.float32,
                             device=dev, requires_grad=True)
            w = torch.tensor(rng.standard_normal((1, *proj.get_projection_dim())),
                             dtype=torch.float32, device=dev)
            (proj(f) * w).sum().backward()
            params = proj.geometry_parameters()
            grads.append(({k: p.grad.detach().cpu().numpy() for k, p in params.items()
                           if p.grad is not None}, f.grad.detach().cpu().numpy()))
        (gc, fc), (gd, fd) = grads
        worst = max(rel(gd[k], gc[k]) for k in gc) if gc else float("nan")
        out[kind] = (worst, rel(fd, fc), sorted(gc))
    return out


@guarded
def geometry_gradients_torch():
    try:
        import torch
    except ImportError:
        check("geometry_gradients/torch", False, "torch not installed")
        return
    if not torch.cuda.is_available():
        check("geometry_gradients/torch", False, "torch has no CUDA")
        return
    for kind, (worst, fgrad, names) in geometry_gradient_parity("cuda").items():
        check(f"geometry_gradients/{kind}", worst <= TOL and fgrad <= TOL,
              f"parameters {names}: worst rel {worst:.2e}; volume gradient rel {fgrad:.2e}")


@guarded
def chunking_and_multi_gpu():
    from leap import gpu
    vol, geos = geometries(64, 90)
    r = np.random.default_rng(2)
    devs = list(range(gpu.device_count())) if gpu.device_count() > 1 else [0, 0]
    for name in ("cone", "fan", "modular", "cone_helical"):
        geo = geos[name]
        f = r.random(vol.shape, dtype=np.float32)
        g = r.random(geo.projection_shape, dtype=np.float32)
        p1 = leap.project(geo, vol, f, devices=[0])
        b1 = leap.backproject(geo, vol, g, devices=[0])
        r1 = fbp(geo, vol, g, devices=[0]) if name != "modular" else None
        errs = []
        for d, cap in (([0], 27), (devs, None), (devs, 13)):   # partial last chunks
            errs.append(rel(leap.project(geo, vol, f, devices=d, max_slices=cap), p1))
            errs.append(rel(leap.backproject(geo, vol, g, devices=d, max_slices=cap), b1))
            if r1 is not None:
                errs.append(rel(fbp(geo, vol, g, devices=d, max_slices=cap), r1))
        cpu = rel(p1, leap.project(geo, vol, f))
        check(f"chunked/{name}", max(errs) <= TOL and cpu <= TOL,
              f"max rel vs unchunked {max(errs):.2e}, vs CPU {cpu:.2e}, devices {devs}")


def bench(n, na, ncols):
    """Cone beam n³, na views over 360°, n×ncols detector; device-resident arrays."""
    from numba import cuda
    try:
        import cupy as cp
        dev = cp.asarray
        kind = "cupy"
    except ImportError:
        dev = cuda.to_device
        kind = "numba"
    det = leap.Detector(num_rows=n, num_cols=ncols, pixel_height=1.0, pixel_width=1.0,
                        center_row=(n - 1) / 2, center_col=(ncols - 1) / 2)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, na, endpoint=False),
                        sod=2.0 * n, sdd=4.0 * n)
    vol = leap.Volume(num_x=n, num_y=n, num_z=n, voxel_width=1.0, voxel_height=1.0)
    f = dev(np.random.default_rng(3).random(vol.shape, dtype=np.float32))
    g = dev(np.zeros(geo.projection_shape, dtype=np.float32))
    fo = dev(np.zeros(vol.shape, dtype=np.float32))

    def timed(fn, reps=3):
        fn()
        cuda.synchronize()
        if kind == "cupy":
            cp.cuda.get_current_stream().synchronize()
        best = np.inf
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            cuda.synchronize()
            if kind == "cupy":
                cp.cuda.get_current_stream().synchronize()
            best = min(best, time.perf_counter() - t)
        return best

    updates = float(n) ** 3 * na
    tp = timed(lambda: leap.project(geo, vol, f, out=g))
    tb = timed(lambda: leap.backproject(geo, vol, g, out=fo))
    tf = timed(lambda: fbp(geo, vol, g, out=fo))
    key = f"cone_{n}^3_{na}views_{n}x{ncols}"
    results["bench"][key] = {"array_kind": kind, "project_s": tp, "backproject_s": tb,
                             "fbp_s": tf, "project_updates_per_s": updates / tp,
                             "backproject_updates_per_s": updates / tb,
                             "fbp_updates_per_s": updates / tf}
    print(f"BENCH {key} ({kind}): project {tp:.3f} s ({updates / tp:.2e}/s), back-project "
          f"{tb:.3f} s ({updates / tb:.2e}/s), FBP {tf:.3f} s", flush=True)
    return tp, tb, tf, updates


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--skip-bench", action="store_true")
    ap.add_argument("--small-bench", action="store_true", help="only the 256³ benchmark")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from numba import cuda
    if not cuda.is_available() or arrays.simulator_enabled():
        print("no CUDA GPU available (or the simulator is on): nothing to check")
        return 2
    t0 = time.time()
    print(f"device: {cuda.get_current_device().name}", flush=True)
    parity_and_adjoint()
    zero_copy_cupy()
    zero_copy_torch()
    geometry_gradients_torch()
    chunking_and_multi_gpu()
    if not args.skip_bench:
        try:
            bench(256, 360, 256)
            if not args.small_bench:
                tp, tb, tf, u = bench(512, 720, 512)
                results["bench"]["targets_met"] = {"project": u / tp >= 3e11,
                                                   "backproject": u / tb >= 3e11,
                                                   "fbp_under_1s": tf < 1.0}
        except Exception as exc:  # noqa: BLE001
            check("bench", False, f"{type(exc).__name__}: {exc}")
            traceback.print_exc()
    results["elapsed_s"] = time.time() - t0
    failed = [k for k, v in results["checks"].items() if not v["ok"]]
    results["failed"] = failed
    print(json.dumps(results, indent=1, default=str))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
