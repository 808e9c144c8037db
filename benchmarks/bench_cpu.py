"""CPU projector benchmarks for the axial family.

Run: ``PYTHONPATH=. python benchmarks/bench_cpu.py``

Problems
--------
cone     : 128³ volume of 0.5 mm voxels, 180 views over 360°, 128×128 flat detector
           of 1 mm pixels, sod 500 mm, sdd 1000 mm.
parallel : 512×512×1 volume of 1 mm voxels, 720 views over 180°, 512 columns × 1 row
           of 1 mm pixels.

For each problem the projector, back-projector and FBP are run once to compile (and warm
caches), then timed three times; the best time is reported together with the rate of
voxel-view updates (num_voxels × num_views / time) and the process's peak RSS.
"""
from __future__ import annotations

import resource
import sys
import time

import numpy as np

import leap
from leap.fbp import fbp


def problems():
    cone = (leap.ConeBeam(detector=leap.Detector(num_rows=128, num_cols=128, pixel_height=1.0,
                                                 pixel_width=1.0),
                          angles=np.linspace(0, 2 * np.pi, 180, endpoint=False),
                          sod=500.0, sdd=1000.0),
            leap.Volume(num_x=128, num_y=128, num_z=128, voxel_width=0.5, voxel_height=0.5))
    par = (leap.ParallelBeam(detector=leap.Detector(num_rows=1, num_cols=512, pixel_height=1.0,
                                                    pixel_width=1.0),
                             angles=np.linspace(0, np.pi, 720, endpoint=False)),
           leap.Volume(num_x=512, num_y=512, num_z=1, voxel_width=1.0, voxel_height=1.0))
    return {"cone": cone, "parallel": par}


def best_of(fn, repeats=3):
    fn()  # compile / warm up
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def peak_rss_mib():
    kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kb / (1024.0 * 1024.0) if sys.platform == "darwin" else kb / 1024.0


def main(names=None):
    rng = np.random.default_rng(0)
    print(f"{'problem':<10}{'op':<13}{'best s':>9}{'Gvox-view/s':>13}{'peak RSS MiB':>14}")
    for name, (geo, vol) in problems().items():
        if names and name not in names:
            continue
        f = rng.random(vol.shape, dtype=np.float32)
        g = rng.random(geo.projection_shape, dtype=np.float32)
        fout = np.empty(vol.shape, dtype=np.float32)
        gout = np.empty(geo.projection_shape, dtype=np.float32)
        updates = vol.num_x * vol.num_y * vol.num_z * geo.num_angles
        for op, fn in (("project", lambda: leap.project(geo, vol, f, out=gout)),
                       ("backproject", lambda: leap.backproject(geo, vol, g, out=fout)),
                       ("fbp", lambda: fbp(geo, vol, g, out=fout))):
            t = best_of(fn)
            print(f"{name:<10}{op:<13}{t:9.3f}{updates / t / 1e9:13.3f}{peak_rss_mib():14.1f}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
