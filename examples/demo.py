"""leap demo: simulate a cone-beam CT scan of a 3-D phantom, project and back-project.

Run with ``./dev.sh demo`` (sets up .venv first). Writes ``demo_output/demo.png`` and
prints what was computed. Options: ``--size N`` (detector/volume size, default 128),
``--views N`` (default 180), ``--out DIR``.
"""
import argparse
import os
import time

import numpy as np

from leapctype import tomographicModels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--views", type=int, default=180)
    ap.add_argument("--out", default="demo_output")
    args = ap.parse_args()

    n = args.size
    leapct = tomographicModels()
    # A 360° circular scan, source 500 mm from the axis, detector 1000 mm from the source.
    leapct.set_conebeam(args.views, n, n, 1.0, 1.0, 0.5 * (n - 1), 0.5 * (n - 1),
                        leapct.setAngleArray(args.views, 360.0), 500.0, 1000.0)
    leapct.set_default_volume()
    leapct.print_parameters()

    f = leapct.allocate_volume()
    leapct.set_SheppLogan(f, oversampling=2)     # 3-D Shepp–Logan, attenuation per mm
    g = leapct.allocate_projections()

    t0 = time.perf_counter()
    leapct.project(g, f)                          # warm-up: compiles the kernels once
    t_first = time.perf_counter() - t0
    t0 = time.perf_counter()
    leapct.project(g, f)
    t_proj = time.perf_counter() - t0

    b = leapct.allocate_volume()
    leapct.backproject(g, b)
    t0 = time.perf_counter()
    leapct.backproject(g, b)
    t_back = time.perf_counter() - t0

    # The matched pair: <P f, g> equals <f, Pᵀ g>.
    r = np.random.default_rng(0).standard_normal(g.shape).astype(np.float32)
    Ptr = leapct.backproject(r, leapct.allocate_volume())
    lhs = float(np.vdot(g.astype(np.float64), r))
    rhs = float(np.vdot(f.astype(np.float64), Ptr))
    mismatch = abs(lhs - rhs) / (np.linalg.norm(g) * np.linalg.norm(r))

    updates = f.size * g.shape[0]
    print(f"volume {f.shape} (z, y, x), projections {g.shape} (views, rows, cols)")
    print(f"phantom: max {f.max():.4f} /mm, mean {f.mean():.5f} /mm")
    print(f"projections: max line integral {g.max():.4f}, mean {g.mean():.4f}")
    print(f"project:     {t_proj:.3f} s ({updates / t_proj:.3g} voxel-view updates/s; "
          f"first call incl. compilation {t_first:.1f} s)")
    print(f"backproject: {t_back:.3f} s ({updates / t_back:.3g} voxel-view updates/s)")
    print(f"adjoint test |<Pf,r> - <f,P^T r>| / (|Pf||r|) = {mismatch:.2e}")

    os.makedirs(args.out, exist_ok=True)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 4, figsize=(16, 4))
    ax[0].imshow(f[f.shape[0] // 2], cmap="gray")
    ax[0].set_title("phantom, central slice")
    ax[1].imshow(g[0], cmap="gray")
    ax[1].set_title("projection, view 0")
    ax[2].imshow(g[:, g.shape[1] // 2, :], cmap="gray", aspect="auto")
    ax[2].set_title("sinogram, central row")
    ax[3].imshow(b[b.shape[0] // 2], cmap="gray")
    ax[3].set_title("back-projection, central slice")
    for a in ax:
        a.axis("off")
    fig.tight_layout()
    path = os.path.join(args.out, "demo.png")
    fig.savefig(path, dpi=80)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
