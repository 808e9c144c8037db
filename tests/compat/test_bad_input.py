"""Bad input raises a clear exception and leaves the arrays passed in untouched."""
import numpy as np
import pytest

import leap
from leapctype import tomographicModels


def _cone():
    leapct = tomographicModels()
    leapct.set_conebeam(6, 8, 10, 1.0, 1.0, 3.5, 4.5, leapct.setAngleArray(6, 360.0), 100.0, 200.0)
    leapct.set_default_volume()
    return leapct


def _snapshot(*arrays):
    return [a.copy() for a in arrays]


@pytest.mark.parametrize("bad", ["dtype", "shape", "noncontig", "list", "readonly_out", "nan",
                                 "inf"])
@pytest.mark.parametrize("op", ["project", "backproject"])
def test_bad_arrays_raise_and_leave_inputs_untouched(op, bad):
    leapct = _cone()
    g = np.full(leapct.get_projection_dim(), 7.0, np.float32)
    f = np.full(leapct.get_volume_dim(), 3.0, np.float32)
    # Corrupt the array the operation reads (f for project, g for backproject) or its output.
    if bad == "dtype":
        if op == "project":
            f = f.astype(np.float64)
        else:
            g = g.astype(np.float64)
        err = TypeError
    elif bad == "shape":
        if op == "project":
            f = f[:, :-1].copy()
        else:
            g = g[:-1].copy()
        err = ValueError
    elif bad == "noncontig":
        if op == "project":
            f = np.asfortranarray(f)
        else:
            g = np.asfortranarray(g)
        err = ValueError
    elif bad == "list":
        if op == "project":
            f = f.tolist()
        else:
            g = g.tolist()
        err = TypeError
    elif bad in ("nan", "inf"):
        (f if op == "project" else g).flat[5] = np.nan if bad == "nan" else -np.inf
        err = ValueError
    else:
        if op == "project":
            g.setflags(write=False)
        else:
            f.setflags(write=False)
        err = ValueError
    before = _snapshot(np.asarray(g), np.asarray(f))
    with pytest.raises(err) as info:
        getattr(leapct, op)(g, f)
    assert str(info.value)            # a message, naming what was expected
    for a, b in zip(before, (np.asarray(g), np.asarray(f))):
        np.testing.assert_array_equal(a, b)


def test_error_messages_name_the_problem():
    leapct = _cone()
    g = leapct.allocate_projections()
    with pytest.raises(TypeError, match="float32"):
        leapct.project(g, np.zeros(leapct.get_volume_dim(), np.float64))
    with pytest.raises(ValueError, match=r"shape \(8, 5, 5\)|shape"):
        leapct.project(g, np.zeros((1, 2, 3), np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        leapct.project(g, np.asfortranarray(leapct.allocate_volume()))
    bad = leapct.allocate_projections()
    bad[1, 2, 3] = np.nan
    for call in (leapct.FBP, lambda x: leapct.backproject(x, leapct.allocate_volume()),
                 lambda x: leapct.SART(x, leapct.allocate_volume(), 1, progress=False)):
        with pytest.raises(ValueError, match="NaN"):
            call(bad)


def test_operations_before_geometry_is_set():
    leapct = tomographicModels()
    with pytest.raises(RuntimeError, match="geometry"):
        leapct.project(np.zeros((1, 1, 1), np.float32), np.zeros((1, 1, 1), np.float32))
    with pytest.raises(RuntimeError, match="geometry"):
        leapct.set_default_volume()
    leapct.set_parallelbeam(4, 1, 8, 1.0, 1.0, 0.0, 3.5, leapct.setAngleArray(4, 180.0))
    with pytest.raises(RuntimeError, match="volume"):
        leapct.allocate_volume()
    with pytest.raises(RuntimeError, match="volume"):
        leapct.backproject(leapct.allocate_projections(), np.zeros((1, 8, 8), np.float32))


@pytest.mark.parametrize("field,value,err", [
    ("sod", float("nan"), ValueError), ("sdd", float("inf"), ValueError),
    ("sod", -100.0, ValueError), ("sdd", 50.0, ValueError),          # sdd < sod
    ("pixelWidth", 0.0, ValueError), ("pixelHeight", -1.0, ValueError),
    ("numRows", 0, ValueError), ("numCols", -3, ValueError), ("numAngles", 2.5, TypeError),
    ("centerCol", float("nan"), ValueError), ("tau", float("inf"), ValueError),
    ("tiltAngle", 30.0, ValueError), ("helicalPitch", float("nan"), ValueError),
])
def test_bad_cone_parameters(field, value, err):
    args = dict(numAngles=6, numRows=8, numCols=10, pixelHeight=1.0, pixelWidth=1.0, centerRow=3.5,
                centerCol=4.5, phis=np.arange(6) * 60.0, sod=100.0, sdd=200.0)
    args[field] = value
    leapct = tomographicModels()
    with pytest.raises(err):
        leapct.set_conebeam(**args)
    assert not leapct.ct_geometry_defined()       # nothing half-set


def test_bad_angles():
    leapct = tomographicModels()
    with pytest.raises(ValueError, match="numAngles"):
        leapct.set_parallelbeam(4, 1, 8, 1.0, 1.0, 0.0, 3.5, np.arange(5.0))
    with pytest.raises(ValueError, match="finite"):
        leapct.set_parallelbeam(2, 1, 8, 1.0, 1.0, 0.0, 3.5, np.array([0.0, np.nan]))


@pytest.mark.parametrize("field,value", [("numX", 0), ("numZ", -1), ("voxelWidth", -0.5),
                                         ("voxelHeight", float("nan")), ("offsetX", float("inf"))])
def test_bad_volume(field, value):
    leapct = _cone()
    old = leapct.get_volume_dim()
    args = dict(numX=4, numY=4, numZ=4, voxelWidth=0.5, voxelHeight=0.5)
    args[field] = value
    with pytest.raises((ValueError, TypeError)):
        leapct.set_volume(**args)
    assert leapct.get_volume_dim() == old         # the old volume is kept


def test_modular_vectors_validated():
    n = 2
    src = np.array([[0, -100, 0], [100, 0, 0]], float)
    mod = np.array([[0, 100, 0], [-100, 0, 0]], float)
    col = np.array([[1, 0, 0], [0, 1, 0]], float)
    row = np.array([[0, 0, 1], [0, 0, 1]], float)
    leapct = tomographicModels()
    leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, src, mod, row, col)
    with pytest.raises(ValueError, match="orthogonal"):
        leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, src, mod, row + [[0.2, 0, 0]], col)
    with pytest.raises(ValueError, match="shape"):
        leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, src[:1], mod, row, col)
    with pytest.raises(ValueError, match="finite"):
        leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, src * np.nan, mod, row, col)
    with pytest.raises(ValueError, match="non-zero"):
        leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, src, mod, row * 0, col)
    with pytest.raises(ValueError, match="plane"):
        leapct.set_modularbeam(n, 4, 4, 1.0, 1.0, mod, mod, row, col)


def test_core_geometry_validation():
    det = leap.Detector(num_rows=2, num_cols=4, pixel_height=1.0, pixel_width=1.0)
    with pytest.raises(ValueError, match="curved"):
        leap.ParallelBeam(detector=det.with_changes(curved=True), angles=[0.0])
    with pytest.raises(ValueError, match="at least one"):
        leap.ParallelBeam(detector=det, angles=[])
    with pytest.raises(TypeError, match="Detector"):
        leap.ConeBeam(detector=None, angles=[0.0], sod=1.0, sdd=2.0)
    with pytest.raises(ValueError, match="centred"):
        leap.ModularBeam(detector=det.with_changes(center_col=0.0), source_positions=[[0, -1, 0]],
                         module_centers=[[0, 1, 0]], row_vectors=[[0, 0, 1]], col_vectors=[[1, 0, 0]])
    with pytest.raises(ValueError, match="flat"):
        leap.ConeBeam(detector=det.with_changes(curved=True), angles=[0.0], sod=1.0, sdd=2.0, tilt=0.01)


def test_gpu_arrays_are_refused_clearly():
    class FakeCuda:
        __cuda_array_interface__ = {"shape": (1,), "typestr": "<f4", "data": (0, False), "version": 3}

    leapct = _cone()
    if leapct.number_of_gpus() == 0:
        with pytest.raises(NotImplementedError, match="CUDA"):
            leapct.project(leapct.allocate_projections(), FakeCuda())
    else:   # with a GPU the fake array reaches the CUDA checks and is refused there
        with pytest.raises((TypeError, ValueError)):
            leapct.project(leapct.allocate_projections(), FakeCuda())
