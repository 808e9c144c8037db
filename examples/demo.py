"""leap demo: simulate a noisy cone-beam CT scan of the FORBILD head and reconstruct it
with FBP and with an iterative method (OS-SART), side by side.

Run with ``./dev.sh demo`` (sets up .venv first). Prints the time of each step and each
reconstruction's error against the phantom, and writes ``demo_output/demo.png`` (the
phantom, a sinogram, the FBP and the iterative reconstruction). Options: ``--size N``
(detector and volume edge, default 128), ``--views N`` (default 180), ``--photons I0``
(unattenuated counts per detector pixel, default 1e5; 0: noise-free data),
``--iterations N`` (OS-SART iterations, default 10), ``--out DIR``.

The first call of each kernel compiles it (Numba, cached on disk for later runs); the
demo times the projector's first and second call to show the difference.
"""
import argparse
import os
import time

import numpy as np

from leapctype import tomographicModels

SUBSETS = 10                      # OS-SART's ordered subsets of views
WINDOW = (0.015, 0.027)           # grey window of the slices, 1/mm (brain ≈ 0.021)


class Steps:
    """Times named steps and prints each as it ends."""

    def __init__(self):
        self.rows = []

    def run(self, name, fn, *args, **kwargs):
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        dt = time.perf_counter() - t0
        self.rows.append((name, dt))
        print(f"  {name:<44s} {dt:8.2f} s", flush=True)
        return out


def relative_error(x, truth):
    """‖x − truth‖ / ‖truth‖ over the volume (float64)."""
    d = x.astype(np.float64) - truth
    return float(np.linalg.norm(d) / np.linalg.norm(truth.astype(np.float64)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--views", type=int, default=180)
    ap.add_argument("--photons", type=float, default=1e5)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--out", default="demo_output")
    args = ap.parse_args()
    if args.size < 8 or args.views < 2 or args.iterations < 1 or args.photons < 0:
        ap.error("need --size >= 8, --views >= 2, --iterations >= 1 and --photons >= 0")

    n, steps = args.size, Steps()
    leapct = tomographicModels()
    # A 360° circular scan, source 500 mm from the axis and 1000 mm from the detector;
    # the pixels are sized so that the default volume (pixels / 2 at the axis) spans
    # 256 mm, the FORBILD head's extent.
    pixel = 512.0 / n
    leapct.set_conebeam(args.views, n, n, pixel, pixel, 0.5 * (n - 1), 0.5 * (n - 1),
                        leapct.setAngleArray(args.views, 360.0), 500.0, 1000.0)
    leapct.set_default_volume()
    leapct.print_parameters()
    print()

    f = leapct.allocate_volume()
    steps.run("phantom (FORBILD head, voxelised)", leapct.set_FORBILD, f, True, oversampling=2)
    g = leapct.allocate_projections()
    steps.run("project, first call (compiles)", leapct.project, g, f)
    steps.run("project", leapct.project, g, f)
    if args.photons > 0:
        # Transmission noise: Poisson counts of I0·exp(−g), back to line integrals.
        rng = np.random.default_rng(0)
        counts = rng.poisson(args.photons * np.exp(-g.astype(np.float64)))
        g = (-np.log(np.maximum(counts, 1) / args.photons)).astype(np.float32)
        print(f"  noise: Poisson counts, I0 = {args.photons:.3g} photons per pixel")

    fbp = steps.run("FBP, first call (compiles)", leapct.FBP, g)
    fbp = steps.run("FBP", leapct.FBP, g)
    sart = leapct.allocate_volume()
    steps.run(f"OS-SART, {args.iterations} iterations x {SUBSETS} subsets", leapct.SART, g,
              sart, args.iterations, SUBSETS, progress=False)

    e_fbp, e_sart = relative_error(fbp, f), relative_error(sart, f)
    updates = f.size * g.shape[0]
    t_proj = dict(steps.rows)["project"]
    print()
    print(f"volume {f.shape} (z, y, x) of {leapct.get_voxelWidth():.2f} mm voxels, "
          f"projections {g.shape} (views, rows, cols)")
    print(f"projector: {updates / t_proj:.3g} voxel-view updates/s")
    print(f"relative error |x - f| / |f|:  FBP {e_fbp:.4f}   OS-SART {e_sart:.4f}")

    os.makedirs(args.out, exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    k = f.shape[0] // 2
    fig, ax = plt.subplots(1, 4, figsize=(16, 4.4))
    ax[0].imshow(f[k], cmap="gray", vmin=WINDOW[0], vmax=WINDOW[1])
    ax[0].set_title("phantom, central slice")
    ax[1].imshow(g[:, g.shape[1] // 2, :], cmap="gray", aspect="auto")
    ax[1].set_title("sinogram, central row")
    ax[2].imshow(fbp[k], cmap="gray", vmin=WINDOW[0], vmax=WINDOW[1])
    ax[2].set_title(f"FBP, error {e_fbp:.3f}")
    ax[3].imshow(sart[k], cmap="gray", vmin=WINDOW[0], vmax=WINDOW[1])
    ax[3].set_title(f"OS-SART ({args.iterations} it.), error {e_sart:.3f}")
    for a in ax:
        a.axis("off")
    fig.tight_layout()
    path = os.path.join(args.out, "demo.png")
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
