"""The facade refuses non-finite and out-of-range counts and NaN input to the filtering
entry points, naming the parameter. Regressions of issue 11 found by using the facade as
a new user would."""
import numpy as np
import pytest

from leap.compat.model import tomographicModels


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
