"""Big-scan benchmark: FBP of a Nikon folder in memory against out of core (issue 51).

Run: ``python benchmarks/bench_big_scan.py [--views 800] [--det 768] [--size 768]
[--repeat 2] [--folder DIR] [--out-format zarr|hdf5|tiff] [--modes memory,stream]
[--no-warmup] [--coarse 1]``

Writes a simulated Nikon XT scan (``leap.io.scanners.nikon.write_scan``: ``views`` uint16
TIFF projections of ``det``×``det`` pixels of 0.2 mm, sod 500 mm, sdd 1000 mm, the 3-D
Shepp-Logan phantom ray traced (``--coarse k``: on a detector of k times larger pixels,
interpolated up), a white level of 60000 counts), unless ``--folder``
already holds one written with the same sizes, then times, each in its own Python
process (so that peak memory is the process's own, and nothing stays cached in one
process for the next):

* in memory: ``scan.system.fbp(np.asarray(scan.attenuation()))``, read and FBP timed
  apart;
* out of core: ``leap.distributed.fbp(scan.system, scan.attenuation(), client=False,
  out=...)`` (the two streaming passes of :mod:`leap.distributed.stream`), the volume
  written to a Zarr store (or HDF5 / TIFF stack) next to the scan.

The volume is ``size``³ voxels of ``0.2·sod/sdd`` mm. The runs alternate (memory, out of
core, memory, …) ``--repeat`` times after one warm-up run of each (Numba's cache loaded,
files in the page cache; ``--no-warmup`` skips it, for sizes where one run of each is
what there is time for); ``--modes`` runs one of the two paths only. The table gives every run's seconds and peak RSS (the child's
``getrusage`` maximum resident set) and the ratio of the best times.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

SOD, SDD, PIXEL = 500.0, 1000.0, 0.2


def geometry(views, det):
    import leap
    d = leap.Detector(num_rows=det, num_cols=det, pixel_height=PIXEL, pixel_width=PIXEL,
                      center_row=0.5 * (det - 1), center_col=0.5 * (det - 1))
    return leap.ConeBeam(detector=d, angles=np.linspace(0, 2 * np.pi, views, endpoint=False),
                         sod=SOD, sdd=SDD)


class _SimulatedCounts:
    """Grey values of the ray-traced phantom, one view at a time (what write_scan reads).

    ``coarse`` > 1 ray traces a detector of pixels ``coarse`` times larger and
    interpolates each view (linearly, pixel centres aligned) up to the full detector:
    ``coarse``² fewer rays, for folders too big to ray trace in the time at hand; the
    timings depend only on the sizes, the images are a little smoother."""

    def __init__(self, geo, phantom, coarse=1):
        self.geo, self.phantom, self.coarse = geo, phantom, int(coarse)
        self.shape = geo.projection_shape
        if self.coarse > 1:
            d = geo.detector
            n = -(-d.num_cols // self.coarse)
            small = type(d)(num_rows=n, num_cols=n, pixel_height=d.pixel_height * self.coarse,
                            pixel_width=d.pixel_width * self.coarse,
                            center_row=0.5 * (n - 1), center_col=0.5 * (n - 1))
            self.traced = geo.with_changes(detector=small)
            full = (np.arange(d.num_cols) - 0.5 * (d.num_cols - 1)) / self.coarse + 0.5 * (n - 1)
            self.at = np.clip(full, 0, n - 1)
        else:
            self.traced = geo

    def __getitem__(self, i):
        from leap.phantoms.raytrace import ray_trace
        p = ray_trace(self.phantom, self.traced[i:i + 1])[0]
        if self.coarse > 1:
            from scipy.ndimage import map_coordinates
            r, c = np.meshgrid(self.at, self.at, indexing="ij")
            p = map_coordinates(p, [r, c], order=1)
        return 60000.0 * np.exp(-p)


def write_folder(folder, views, det, size, coarse=1):
    from leap.io.scanners.nikon import write_scan
    from leap.phantoms.library import shepp_logan_3d
    stamp = os.path.join(folder, "bench_sizes.json")
    sizes = {"views": views, "det": det, "size": size}
    if coarse > 1:
        sizes["coarse"] = coarse
    if os.path.exists(stamp) and json.load(open(stamp)) == sizes:
        return
    os.makedirs(folder, exist_ok=True)
    geo = geometry(views, det)
    radius = 0.45 * size * PIXEL * SOD / SDD      # mm: inside the volume
    t = time.perf_counter()
    phantom = shepp_logan_3d(radius, value_scale=1.0 / radius)
    write_scan(folder, geo, _SimulatedCounts(geo, phantom, coarse), name="bench")
    json.dump(sizes, open(stamp, "w"))
    print(f"wrote {views} projections of {det}x{det} to {folder} in "
          f"{time.perf_counter() - t:.1f} s")


def child(mode, folder, size, out):
    """One timed run in this process; prints a JSON line."""
    import leap
    import leap.distributed as ld
    from leap.io import open_scan
    scan = open_scan(folder)
    vw = PIXEL * SOD / SDD
    vol = leap.Volume(num_x=size, num_y=size, num_z=size, voxel_width=vw, voxel_height=vw)
    scan = scan.with_system(scan.system.with_changes(volume=vol))
    t0 = time.perf_counter()
    result = {"mode": mode}
    if mode == "memory":
        g = np.asarray(scan.attenuation())
        t1 = time.perf_counter()
        f = scan.system.fbp(g)
        result.update(read_s=t1 - t0, fbp_s=time.perf_counter() - t1)
        centre = float(f[size // 2].mean())
    else:
        vol_out = ld.fbp(scan.system, scan.attenuation(), client=False, out=out,
                         overwrite=True, progress=False)
        centre = float(np.asarray(vol_out[size // 2]).mean())
    result["seconds"] = time.perf_counter() - t0
    result["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    result["centre_slice_mean"] = centre
    if mode == "memory":                  # after the timing: compared with the stream's
        np.save(_memory_volume_path(folder), f)
    print(json.dumps(result))


def _memory_volume_path(folder):
    return os.path.join(os.path.dirname(os.path.abspath(folder)), "bench-memory-volume.npy")


def compare_volumes(folder, out, out_format):
    """max |out of core − in memory| / max |in memory| over the whole volume, slab by
    slab (the last runs of each path)."""
    import leap.distributed as ld
    ref = np.load(_memory_volume_path(folder), mmap_mode="r")
    if out_format == "zarr":
        vol = ld.open_zarr(out)
    elif out_format == "hdf5":
        vol = ld.open_hdf5(out + ":/volume")
    else:
        vol = ld.open_tiff_stack(os.path.dirname(out))
    worst = scale = 0.0
    for z in range(0, ref.shape[0], 32):
        a = np.asarray(ref[z:z + 32], np.float64)
        b = np.asarray(vol[z:z + 32], np.float64)
        worst, scale = max(worst, float(np.abs(a - b).max())), max(scale, float(np.abs(a).max()))
    return worst / scale


def run_child(mode, folder, size, out):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--folder", folder,
           "--size", str(size), "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{mode} run failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--views", type=int, default=800)
    ap.add_argument("--det", type=int, default=768)
    ap.add_argument("--size", type=int, default=768)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--folder", default=None, help="scan folder (default: a temporary one)")
    ap.add_argument("--out-format", default="zarr", choices=["zarr", "hdf5", "tiff"])
    ap.add_argument("--modes", default="memory,stream",
                    help="comma-separated paths to time: memory, stream (default both)")
    ap.add_argument("--no-warmup", action="store_true", help="no untimed first run")
    ap.add_argument("--coarse", type=int, default=1,
                    help="ray trace pixels this many times larger and interpolate (quicker "
                         "to write big folders)")
    ap.add_argument("--child", choices=["memory", "stream"], help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.folder, args.size, args.out)
    tmp = None
    folder = args.folder
    if folder is None:
        tmp = tempfile.TemporaryDirectory(prefix="leap-bench-big-")
        folder = os.path.join(tmp.name, "scan")
    write_folder(folder, args.views, args.det, args.size, args.coarse)
    suffix = {"zarr": "recon.zarr", "hdf5": "recon.h5", "tiff": os.path.join("recon",
                                                                              "slice.tif")}
    out = os.path.join(os.path.dirname(os.path.abspath(folder)), "bench-" +
                       suffix[args.out_format])
    raw_gib = args.views * args.det ** 2 * 2 / 2 ** 30
    print(f"scan: {args.views} views of {args.det}x{args.det} uint16 ({raw_gib:.2f} GiB), "
          f"volume {args.size}^3 float32 ({4 * args.size ** 3 / 2 ** 30:.2f} GiB); "
          f"{os.cpu_count()} cores")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"memory", "stream"}:
        ap.error(f"--modes: memory and/or stream, got {args.modes!r}")
    if not args.no_warmup:
        for mode in modes:
            run_child(mode, folder, args.size, out)
    runs = []
    for _ in range(args.repeat):
        for mode in modes:
            runs.append(run_child(mode, folder, args.size, out))
            r = runs[-1]
            print(f"  ({r['mode']}: {r['seconds']:.1f} s, {r['peak_rss_gib']:.2f} GiB)",
                  flush=True)
    print(f"{'path':<12} {'seconds':>8} {'peak RSS GiB':>13}  detail")
    for r in runs:
        detail = (f"read {r['read_s']:.1f} s, FBP {r['fbp_s']:.1f} s"
                  if r["mode"] == "memory" else f"out={args.out_format}")
        print(f"{r['mode']:<12} {r['seconds']:8.2f} {r['peak_rss_gib']:13.2f}  {detail}")
    best = {m: min(r["seconds"] for r in runs if r["mode"] == m) for m in modes}
    means = {r["mode"]: r["centre_slice_mean"] for r in runs}
    if len(modes) == 2:
        print(f"out of core / in memory (best times): {best['stream'] / best['memory']:.2f}; "
              f"centre-slice means {means['memory']:.6g} / {means['stream']:.6g}; "
              f"max |difference| / max |volume|: {compare_volumes(folder, out, args.out_format):.2e}")
    if os.path.exists(_memory_volume_path(folder)):
        os.remove(_memory_volume_path(folder))
    if os.path.isdir(out):
        import shutil
        shutil.rmtree(out)
    elif os.path.exists(out):
        os.remove(out)
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
