"""Single-slice fan beams (leap.kernels.cpu.fan_slice): the 2-D fan case gets a projector
and back-projector of its own (three branch-free taps per voxel, wider footprints by the
general loop). They must be the operator the direct-row kernels compute, its exact
transpose, and independent of the number of threads."""
import numba
import numpy as np
import pytest
from conftest import with_numba_threads

import leap
from leap.reconstruction.fbp import fbp
from leap.kernels import footprints as fp
from leap.kernels.cpu import columns, fan_slice, launch
from leap.kernels.plan import make_plan

ANGLES = np.linspace(0.2, 2 * np.pi, 13, endpoint=False)
DET = leap.Detector(num_rows=1, num_cols=41, pixel_height=1.0, pixel_width=0.8,
                    center_col=19.3)
VOLUME = leap.Volume(num_x=23, num_y=19, num_z=1, voxel_width=1.0, voxel_height=1.0)


def _geometries():
    return {
        # Magnification 1.5 to 2.6 with voxels 1.25 pixels wide: footprints of two, three
        # and more pixels.
        "fan": leap.FanBeam(detector=DET, angles=ANGLES, sod=30.0, sdd=60.0),
        # The source passes through the volume: voxels behind it get no weight.
        "fan_close": leap.FanBeam(detector=DET, angles=ANGLES, sod=8.0, sdd=20.0),
        # Footprints under a pixel, a volume off the axis.
        "fan_small_voxels": (leap.FanBeam(detector=DET, angles=ANGLES, sod=200.0, sdd=260.0),
                             VOLUME.with_changes(voxel_width=0.4, offset_x=1.1,
                                                 offset_y=-0.7)),
        # Three rows, the one slice on the middle one.
        "fan_three_rows": leap.FanBeam(detector=DET.with_changes(num_rows=3, center_row=1.0),
                                       angles=ANGLES, sod=30.0, sdd=60.0),
    }


def _case(name):
    case = _geometries()[name]
    return case if isinstance(case, tuple) else (case, VOLUME)


@pytest.mark.parametrize("name", sorted(_geometries()))
def test_single_slice_fans_run_on_the_fan_slice_kernels(name, monkeypatch):
    geo, vol = _case(name)
    calls = []
    for fn in ("project", "backproject"):
        monkeypatch.setattr(fan_slice, fn, lambda *a, _f=getattr(fan_slice, fn), _n=fn, **k:
                            (calls.append(_n), _f(*a, **k))[1])
    leap.project(geo, vol, np.ones(vol.shape, np.float32))
    leap.backproject(geo, vol, np.ones(geo.projection_shape, np.float32))
    assert calls == ["project", "backproject"]


@pytest.mark.parametrize("name", sorted(_geometries()))
def test_the_operator_of_the_direct_row_kernels(name, rng, monkeypatch):
    """Projection, back-projection and FBP (with its distance weights) equal those of
    the direct-row kernels to float32 rounding."""
    geo, vol = _case(name)
    f = rng.random(vol.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    ours = leap.project(geo, vol, f), leap.backproject(geo, vol, g), fbp(geo, vol, g)
    monkeypatch.setattr(launch, "_single_slice", lambda *a: (False, 0, 0))
    direct = leap.project(geo, vol, f), leap.backproject(geo, vol, g), fbp(geo, vol, g)
    for a, b in zip(ours, direct):
        assert np.abs(b).max() > 0
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6 * np.abs(b).max())


@pytest.mark.parametrize("name", sorted(_geometries()))
def test_exact_transposes(name, rng):
    geo, vol = _case(name)
    f = rng.random(vol.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    lhs = np.dot(leap.project(geo, vol, f).ravel().astype(np.float64), g.ravel())
    rhs = np.dot(f.ravel().astype(np.float64), leap.backproject(geo, vol, g).ravel())
    assert lhs == pytest.approx(rhs, rel=1e-6)


def test_results_do_not_depend_on_the_number_of_threads(rng):
    geo, vol = _case("fan")
    f = rng.random(vol.shape, dtype=np.float32)
    g = rng.random(geo.projection_shape, dtype=np.float32)
    def run():
        return leap.project(geo, vol, f), leap.backproject(geo, vol, g)
    one = with_numba_threads(1, run)
    two = with_numba_threads(min(2, numba.config.NUMBA_NUM_THREADS), run)
    for a, b in zip(one, two):
        assert np.array_equal(a, b)


def test_wide_footprints_occur_in_the_test_scan():
    """The "fan" case reaches the general loop: some footprints meet four pixels."""
    geo, vol = _case("fan")
    plan = make_plan(geo, vol)
    v = plan.views
    widths = []
    for a in range(ANGLES.size):
        for y in vol.y_samples():
            for x in vol.x_samples():
                c_lo, c_hi, w, dist = fp.axial_column_footprint(
                    x, y, v.col_dir[a, 0], v.col_dir[a, 1], v.source_xy[a, 0],
                    v.source_xy[a, 1], float(v.sdd), fp.FLAT, vol.voxel_width,
                    DET.pixel_width, DET.center_col, 0.0, 0.0)
                if dist > 0:
                    widths.append(not fan_slice.three_pixels.py_func(c_lo, c_hi, DET.num_cols))
    assert 0 < np.mean(widths) < 0.5


def test_three_taps_weigh_the_intervals_three_pixels_hold_exactly(rng):
    """three_pixels accepts exactly the intervals whose three taps (three_tap) are their
    overlaps with every pixel, and the wider ones are left to the general loop."""
    ncols = 12
    three_tap = columns.three_tap.py_func
    lo = rng.uniform(-3.0, ncols + 2.0, 4000)
    hi = lo + rng.uniform(0.0, 3.0, lo.size)
    fits = np.array([fan_slice.three_pixels.py_func(a, b, ncols) for a, b in zip(lo, hi)])
    assert fits.any() and not fits.all()
    for a, b, ok in zip(lo, hi, fits):
        fl, *taps = three_tap(a, b, ncols)
        exact = [max(0.0, min(b, i + 0.5) - max(a, i - 0.5)) for i in range(-1, ncols + 3)]
        got = np.zeros(len(exact))
        got[int(fl) + 1:int(fl) + 4] = taps
        # Off the detector (pixels -1 and from ncols on) only guard columns get weight.
        inside = slice(1, ncols + 1)
        if ok:
            np.testing.assert_allclose(got[inside], exact[inside], rtol=0, atol=1e-12)
        else:
            # Wider than two pixels, or clamped: starting left of pixel -1 or right of
            # the detector's last pixel.
            assert b - a > 2.0 or a < -1.5 or a >= ncols + 0.5
