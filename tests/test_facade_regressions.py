"""Regressions of issue 11 found by using the facade as a new user would: symmetric-volume
phantoms, fork safety, non-finite counts, NaN input to the filtering entry points."""
import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from leap import _threading
from leap.compat.model import tomographicModels
from leap.phantoms import ELLIPSOID, Phantom, PhantomObject, rotation_matrix


def _symmetric_model():
    ct = tomographicModels()
    ct.set_parallelbeam(1, 40, 40, 3.0, 3.0, 19.5, 19.5, ct.setAngleArray(1, 180.0))
    ct.set_axisOfSymmetry(0.0)
    ct.set_default_volume()
    return ct


# ------------------------------------------------------------- symmetric phantoms

def test_add_object_into_symmetric_volume_draws_x_along_y_and_y_along_z():
    ct = _symmetric_model()
    assert ct.get_volume_dim() == (40, 40, 1)
    f = ct.allocate_volume()
    ct.addObject(f, 0, [30.0, 0.0, 0.0], [10.0, 10.0, 10.0], 1.0)
    z, y, _ = np.nonzero(f)
    assert z.size == 32            # upstream LEAP sets 32 voxels of this disk
    assert ct.y_samples()[y].mean() == pytest.approx(30.0, abs=0.5)
    assert ct.z_samples()[z].mean() == pytest.approx(0.0, abs=0.5)
    f[:] = 0
    ct.addObject(f, 0, [0.0, -20.0, 0.0], [10.0, 5.0, 10.0], 1.0)
    z, y, _ = np.nonzero(f)
    assert ct.y_samples()[y].mean() == pytest.approx(0.0, abs=0.5)
    assert ct.z_samples()[z].mean() == pytest.approx(-20.0, abs=0.5)
    # the object's y semi-axis (5 mm) runs along z: the disk is twice as wide in y
    assert np.ptp(ct.y_samples()[y]) > 1.6 * np.ptp(ct.z_samples()[z])


def test_forbild_into_symmetric_volume_is_its_axial_slice():
    ct = _symmetric_model()
    f = ct.allocate_volume()
    ct.set_FORBILD(f)
    assert np.count_nonzero(f) > 0.5 * f.size * math.pi / 4 * 0.6
    # the head's axial cross-section (x, y at z = 0), voxelised directly
    v = ct.core_volume()
    from leap.phantoms import forbild_head
    ref = forbild_head().voxelize(v.y_samples(), v.z_samples(), [0.0], v.voxel_width,
                                  v.voxel_height)
    np.testing.assert_array_equal(f[:, :, 0], ref[0])


def test_permute_axes_moves_points_with_the_objects():
    obj = PhantomObject(kind=ELLIPSOID, centre=[5.0, -3.0, 2.0], radii=[4.0, 2.0, 1.0],
                        value=1.0, rotation=rotation_matrix("z", 30.0), clip=[0.0, 0.0, 2.5])
    ph = Phantom([obj])
    moved = ph.permute_axes((2, 0, 1))
    rng = np.random.default_rng(0)
    p = rng.uniform(-6, 6, size=(300, 3)) + obj.centre
    # single-point grids: the inside test agrees at p and at P p = (p_z, p_x, p_y)
    inside = []
    for q in p:
        a = ph.voxelize([q[0]], [q[1]], [q[2]], 0.01, 0.01)[0, 0, 0]
        b = moved.voxelize([q[2]], [q[0]], [q[1]], 0.01, 0.01)[0, 0, 0]
        assert a == b
        inside.append(a)
    assert 0 < sum(inside) < len(inside)       # both inside and outside points were probed
    with pytest.raises(ValueError, match="order"):
        ph.permute_axes((0, 0, 1))


# ------------------------------------------------------------------ fork safety

@pytest.mark.skipif(_threading._tbb_library() is None,
                    reason="no TBB runtime installed on this platform (tbb wheels are x86-64 only)")
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
                       timeout=300, env={k: v for k, v in __import__("os").environ.items()
                                         if k != "NUMBA_THREADING_LAYER"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "layer tbb" in r.stdout and "ok" in r.stdout


# ---------------------------------------------------------- non-finite counts

@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan"), np.float32("inf")])
@pytest.mark.parametrize("position,name", [(0, "numAngles"), (1, "numRows"), (2, "numCols")])
def test_non_finite_counts_name_the_parameter(bad, position, name):
    ct = tomographicModels()
    args = [4, 4, 4, 1.0, 1.0, 1.5, 1.5]
    args[position] = bad
    with pytest.raises(ValueError, match=name):
        ct.set_parallelbeam(*args, np.linspace(0, 180, 4, endpoint=False))


def test_non_finite_volume_counts_and_angle_counts_name_the_parameter():
    ct = tomographicModels()
    with pytest.raises(ValueError, match="numAngles"):
        ct.setAngleArray(float("inf"), 180.0)
    ct.set_parallelbeam(4, 4, 4, 1.0, 1.0, 1.5, 1.5, ct.setAngleArray(4, 180.0))
    with pytest.raises(ValueError, match="numX"):
        ct.set_volume(float("nan"), 4, 4)
    with pytest.raises(ValueError, match="numZ"):
        ct.set_volume(4, 4, float("inf"))


def test_counts_beyond_a_c_int_are_refused():
    from leap.geometry import Detector
    with pytest.raises(ValueError, match="num_cols must be at most"):
        Detector(num_rows=1, num_cols=2**31, pixel_height=1.0, pixel_width=1.0)
    ct = tomographicModels()
    ct.set_parallelbeam(4, 4, 4, 1.0, 1.0, 1.5, 1.5, ct.setAngleArray(4, 180.0))
    for scale in (1e-300, 1e-308):
        with pytest.raises(ValueError, match="scale .* too small"):
            ct.set_default_volume(scale)
    with pytest.raises(ValueError, match="numAngles must be at most"):
        ct.setAngleArray(2**40, 360.0)
    with pytest.raises(ValueError, match="(?i)voxel_?width must lie between"):
        ct.set_volume(4, 4, 4, 1e-308, 1.0)
    with pytest.raises(ValueError, match="(?i)center_?col must have magnitude at most"):
        ct.set_parallelbeam(4, 4, 4, 1.0, 1.0, 1.5, 1e300, ct.setAngleArray(4, 180.0))


# ------------------------------------------------------- NaN into the filters

@pytest.mark.parametrize("method", ["filterProjections", "rampFilterProjections",
                                    "HilbertFilterProjections", "preRampFiltering"])
def test_filtering_entry_points_refuse_nan(method):
    ct = tomographicModels()
    ct.set_fanbeam(6, 1, 16, 1.0, 1.0, 0.0, 7.5, ct.setAngleArray(6, 360.0), 100.0, 200.0)
    ct.set_default_volume()
    g = ct.allocate_projections(1.0)
    g[2, 0, 3] = np.nan
    before = g.copy()
    with pytest.raises(ValueError, match="NaN"):
        getattr(ct, method)(g)
    np.testing.assert_array_equal(g, before)
