"""Compile leap's CPU kernels ahead of use: ``python -m leap.kernels.precompile``.

leap's kernels are Numba functions compiled on their first call and kept in Numba's
on-disk cache (next to the package, or in ``NUMBA_CACHE_DIR``). In a fresh environment
(a new Docker image, CI job or Colab runtime) the first projection and FBP of a geometry
family therefore wait for compilation (a cone beam's first projection and FBP about 16 s
on 2 cores, ``benchmarks/bench_cold_start.py``); later processes load the cache in a
fraction of a second. Nothing is compiled at import. Running this module once, where
the cache will persist (a ``RUN`` step of a Dockerfile, a CI cache, the first cell of a
notebook), moves that wait there::

    python -m leap.kernels.precompile            # every geometry family
    python -m leap.kernels.precompile cone fan   # some of them

Each family is compiled by projecting, back-projecting and reconstructing (FBP) a tiny
problem on the CPU, which compiles exactly the kernels that family's calls use for
float32 arrays (the dtype leap computes in). Prints each family's seconds; the calls'
results are discarded.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

# Absolute imports: ``python -m leap.precompile`` (the old name, leap._moved) runs this
# code as __main__ of package ``leap``, where relative ones would resolve wrongly.
from leap.geometry import ConeBeam, Detector, FanBeam, ParallelBeam, Volume
from leap.operators import backproject, project
from leap.reconstruction import fbp as _fbp


def _problems():
    """Tiny problems per kernel family: [(geometry, volume), …] by name."""
    angles = np.linspace(0.0, 2 * np.pi, 8, endpoint=False)
    det = Detector(num_rows=8, num_cols=12, pixel_height=1.0, pixel_width=1.0)
    vol = Volume(num_x=8, num_y=8, num_z=8, voxel_width=1.0, voxel_height=1.0)
    cone = ConeBeam(detector=det, angles=angles, sod=100.0, sdd=150.0)
    slice_det = Detector(num_rows=1, num_cols=12, pixel_height=1.0, pixel_width=1.0)
    one_slice = Volume(num_x=8, num_y=8, num_z=1, voxel_width=1.0, voxel_height=1.0)
    return {
        # Flat and curved cone beams, helical scans and vertical modular beams share the
        # cone family's kernels, compiled once without and once with weights within a
        # voxel column (vertical modules' stretch, helical FBP's slice weights).
        "cone": [(cone, vol), (cone.to_modular(), vol)],
        # Parallel and fan beams whose slices lie on detector rows: the direct-row kernels.
        "parallel": [(ParallelBeam(detector=det, angles=angles / 2), vol)],
        "fan": [(FanBeam(detector=det, angles=angles, sod=100.0, sdd=150.0), vol)],
        # One slice of a parallel or fan beam: the 2-D kernels.
        "parallel2d": [(ParallelBeam(detector=slice_det, angles=angles / 2), one_slice)],
        "fan2d": [(FanBeam(detector=slice_det, angles=angles, sod=100.0, sdd=150.0),
                   one_slice)],
        # Modules that are not vertical: the general modular kernels.
        "modular": [(_tilted(cone), vol)],
    }


def _tilted(cone):
    """The cone beam as a modular beam with its modules turned 1° in their plane."""
    m = cone.to_modular()
    t = np.deg2rad(1.0)
    rows = m.row_vectors * np.cos(t) + m.col_vectors * np.sin(t)
    cols = m.col_vectors * np.cos(t) - m.row_vectors * np.sin(t)
    return type(m)(detector=m.detector, source_positions=m.source_positions,
                   module_centers=m.module_centers, row_vectors=rows, col_vectors=cols)


#: The kernel families :func:`precompile` knows, by name.
FAMILIES = tuple(_problems())


def precompile(families=FAMILIES) -> dict[str, float]:
    """Compile (or load from Numba's cache) the CPU kernels of ``families`` (names from
    :data:`FAMILIES`) by running each one's projection, back-projection and FBP on a tiny
    problem. Returns the seconds each family took."""
    problems = _problems()
    unknown = [f for f in families if f not in problems]
    if unknown:
        raise ValueError(f"unknown families {unknown}; expected some of {list(FAMILIES)}")
    seconds = {}
    for name in families:
        t = time.perf_counter()
        for geo, vol in problems[name]:
            g = project(geo, vol, np.ones(vol.shape, np.float32))
            backproject(geo, vol, g)
            _fbp.fbp(geo, vol, g)
        seconds[name] = time.perf_counter() - t
    return seconds


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m leap.kernels.precompile",
                                 description="Compile leap's CPU kernels into Numba's cache.")
    # Names are checked here, not by argparse's choices: it checks what an empty nargs="*"
    # positional gives (its default, or []) against the choices as one value, so a bare
    # `python -m leap.kernels.precompile` failed.
    ap.add_argument("families", nargs="*", metavar="family",
                    help=f"some of {', '.join(FAMILIES)} (default: all)")
    args = ap.parse_args(argv)
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {unknown}; choose from {', '.join(FAMILIES)}")
    total = 0.0
    for name, s in precompile(args.families or FAMILIES).items():
        total += s
        print(f"{name:<12}{s:7.2f} s", flush=True)
    print(f"{'total':<12}{total:7.2f} s")


if __name__ == "__main__":
    main()
