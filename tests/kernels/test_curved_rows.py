"""Curved-detector footprints a row at a time (leap.kernels.cpu.curved_rows): the
vectorisable arctangent is within 2 units in the last place of libm's, and a row of
footprints turned from flat to curved equals the shared footprint function's curved
model (the columns to the arctangent's rounding, weights and distances exactly)."""
import math

import numba
import numpy as np
import pytest

from leap.kernels.cpu._jit import axial_column_footprint, fbp_distance_weight
from leap.kernels.cpu.axial import row_footprints
from leap.kernels.cpu.curved_rows import ATAN_MAX, atan_small
from leap.kernels.footprints import CURVED


@numba.njit(cache=True)
def _atan_small(u):
    out = np.empty_like(u)
    for i in range(u.size):
        out[i] = atan_small(u[i])
    return out


@numba.njit(cache=True)
def _row(fp, lo, hi, x0, y, cx, cy, sx, sy, sdd, voxel_width, pixel_width, center_col,
         dist_sod):
    row_footprints(fp, lo, hi, x0, y, cx, cy, sx, sy, 0.0, 0.0, 0.0, 0.0, sdd, 0.0, 0.0,
                   np.int64(CURVED), voxel_width, pixel_width, center_col, 0.0, 0.0, dist_sod)


def test_atan_small_within_two_ulp_of_libm():
    u = np.concatenate([np.linspace(-ATAN_MAX, ATAN_MAX, 200001),
                        np.geomspace(1e-300, ATAN_MAX, 20001), [0.0, -0.0]])
    got = _atan_small(u)
    want = np.array([math.atan(v) for v in u])
    ulp = np.spacing(np.abs(want))
    assert np.all(np.abs(got - want) <= 2 * ulp)
    assert np.mean(got == want) > 0.75
    assert np.array_equal(_atan_small(-u), -got)         # odd, like atan
    assert np.isnan(_atan_small(np.array([np.nan]))[0])


def _shared(x0, y, n, cx, cy, sx, sy, sdd, voxel_width, pixel_width, center_col, dist_sod):
    """The general path's footprints (axial._footprint_row): the shared function, its
    weight times FBP's distance weight where dist_sod > 0."""
    rows = []
    for ix in range(n):
        x = x0 + ix * voxel_width
        c0, c1, w, d = axial_column_footprint(x, y, cx, cy, sx, sy, sdd, CURVED, voxel_width,
                                              pixel_width, center_col, 0.0, 0.0)
        if dist_sod > 0.0:
            w *= fbp_distance_weight(CURVED, dist_sod, x, y, cx, cy, d)
        rows.append((c0, c1, w, d))
    return np.array(rows)


@pytest.mark.parametrize("fbp", [False, True])
@pytest.mark.parametrize("sdd, sod", [(1000.0, 500.0), (60.0, 25.0)])
@pytest.mark.parametrize("angle", [0.0, 0.3, 1.2, 2.0, 3.9, 5.5])
def test_curved_row_footprints_equal_the_shared_curved_footprint(sdd, sod, angle, fbp):
    """Rows through a 40 mm field at two geometries: at sod 500 every slope is inside
    ATAN_MAX (the polynomial), at sod 25 some are not and the row takes libm's atan,
    equal bit for bit. With FBP's distance weight (``fbp``) and without."""
    dist_sod = sod if fbp else 0.0
    n, voxel_width, pixel_width, center_col = 81, 0.5, 0.7, 63.2
    x0 = -20.0
    cx, cy = math.cos(angle), math.sin(angle)
    sx, sy = sod * cy, -sod * cx                  # rays run along (−cy, cx)
    fronts = inside = 0
    for y in np.linspace(-20.0, 20.0, 9):
        want = _shared(x0, y, n, cx, cy, sx, sy, sdd, voxel_width, pixel_width, center_col,
                       dist_sod)
        fp = np.full((5, n + 3), np.nan)
        _row(fp, 0, n, x0, y, cx, cy, sx, sy, sdd, voxel_width, pixel_width, center_col,
             dist_sod)
        behind = want[:, 3] <= 0.0
        assert np.array_equal(fp[3, :n] <= 0.0, behind)
        front = ~behind
        fronts += front.sum()
        assert np.array_equal(fp[2, :n][front], want[front, 2])     # weights
        assert np.array_equal(fp[3, :n][front], want[front, 3])     # in-plane distances
        slopes = np.tan((want[front, :2] - center_col) * math.atan(pixel_width / sdd))
        slopes_inside = bool(np.all(np.abs(slopes) <= ATAN_MAX))
        for j in (0, 1):
            got, ref = fp[j, :n][front], want[front, j]
            inside += slopes_inside
            if slopes_inside:
                # 2 ulp of the angle, times the scale, plus the centre's rounding.
                assert np.all(np.abs(got - ref) <= 4 * np.spacing(np.abs(ref)) + 1e-12)
            else:
                assert np.array_equal(got, ref)
        assert np.isnan(fp[:, n:]).all()                             # nothing past hi
    assert fronts > 0
    # Both of the row's arctangents: the polynomial at sod 500, libm at sod 25 for rows
    # whose slopes reach past ATAN_MAX.
    assert inside == 18 if sod == 500.0 else inside < 18
