"""A forked child process can run the (TBB-threaded) Numba kernels after its parent
did. Regression of issue 11."""
import os
import subprocess
import sys
import textwrap

import pytest

from leap import _threading


# ------------------------------------------------------------------ fork safety

@pytest.mark.skipif(_threading._tbb_library() is None,
                    reason="no TBB runtime installed on this platform (tbb wheels are x86-64 only)")
@pytest.mark.slow
def test_forked_child_can_project_after_the_parent_did():
    script = textwrap.dedent("""
        import multiprocessing as mp
        import numba
        import numpy as np
        from leapctype import tomographicModels

        def model():
            ct = tomographicModels()
            ct.set_conebeam(12, 8, 16, 2.0, 2.0, 3.5, 7.5, ct.setAngleArray(12, 360.0), 100.0, 200.0)
            ct.set_default_volume()
            return ct

        def child(q):
            ct = model()
            f = ct.allocate_volume(1.0)
            q.put(float(ct.project(ct.allocate_projections(), f).sum()))

        ct = model()
        parent = float(ct.project(ct.allocate_projections(), ct.allocate_volume(1.0)).sum())
        print("layer", numba.threading_layer())
        ctx = mp.get_context("fork")
        q = ctx.Queue()
        p = ctx.Process(target=child, args=(q,))
        p.start()
        p.join(60)
        assert p.exitcode == 0, f"forked child exited with {p.exitcode}"
        assert abs(q.get(timeout=5) - parent) <= 1e-6 * abs(parent)
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, env={k: v for k, v in os.environ.items()
                                         if k != "NUMBA_THREADING_LAYER"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "layer tbb" in r.stdout and "ok" in r.stdout
