"""leap.kernels.cpu.threads.run: every share of the work runs once, on its own thread,
and a failure in any thread reaches the caller; and each geometry family compiles only
its own kernels (the direct-row kernels of parallel and fan beams are not part of a cone
beam's first call, nor the cone family's of a parallel beam's)."""
import os
import subprocess
import sys
import threading

import numba
import pytest
from conftest import with_numba_threads

from leap.kernels.cpu import threads

TWO = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two Numba threads")


@TWO
@pytest.mark.parametrize("items, expected", [(None, 2), (5, 2), (1, 1)])
def test_each_share_runs_once_on_its_own_thread(items, expected):
    calls = []

    def kernel(tag, start, step):
        calls.append((tag, start, step, threading.get_ident()))

    with_numba_threads(2, lambda: threads.run(kernel, "x", items=items))
    assert sorted(c[1] for c in calls) == list(range(expected))
    assert {c[2] for c in calls} == {expected} and {c[0] for c in calls} == {"x"}
    assert len({c[3] for c in calls}) == expected
    # The calling thread takes share 0.
    assert [c[3] for c in calls if c[1] == 0] == [threading.get_ident()]


@TWO
@pytest.mark.parametrize("failing", [0, 1])
def test_a_failure_in_any_thread_is_raised_after_all_finish(failing):
    done = []

    def kernel(start, step):
        if start == failing:
            raise ValueError(f"share {start} failed")
        done.append(start)

    with pytest.raises(ValueError, match=f"share {failing} failed"):
        with_numba_threads(2, lambda: threads.run(kernel))
    assert done == [1 - failing]


CHILD = r"""
import numpy as np, leap
from leap.reconstruction.fbp import fbp
from leap.kernels.cpu import axial, axial_direct
det = leap.Detector(num_rows=8, num_cols=12, pixel_height=1.0, pixel_width=1.0)
angles = np.linspace(0, np.pi, 6, endpoint=False)
vol = leap.Volume(num_x=8, num_y=8, num_z=8, voxel_width=1.0, voxel_height=1.0)
geo = {"cone": leap.ConeBeam(detector=det, angles=2 * angles, sod=100.0, sdd=150.0),
       "parallel": leap.ParallelBeam(detector=det, angles=angles)}[GEOMETRY]
f = np.ones(vol.shape, np.float32)
fbp(geo, vol, leap.project(geo, vol, f))
leap.backproject(geo, vol, leap.project(geo, vol, f))
kernels = {"cone": [axial.project, axial.backproject],
           "direct": [axial_direct._project_groups, axial_direct._backproject_tiles]}
print({k: sum(len(d.signatures) for d in v) for k, v in kernels.items()})
"""


@pytest.mark.parametrize("geometry, used, unused", [("cone", "cone", "direct"),
                                                    ("parallel", "direct", "cone")])
def test_a_geometry_compiles_only_its_own_family(geometry, used, unused):
    """In a fresh process (kernels loaded from the cache the test run has written, so
    this takes seconds), a projection, back-projection and FBP of one family leave the
    other family's kernels uncompiled."""
    code = CHILD.replace("GEOMETRY", repr(geometry))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), timeout=600)
    assert out.returncode == 0, out.stderr
    counts = eval(out.stdout.strip().splitlines()[-1])
    assert counts[used] >= 2 and counts[unused] == 0
