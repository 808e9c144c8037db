"""The curved-detector cone-beam geometry VJP (``leap.kernels.cpu.curved_cone_vjp``)
against central differences of a float64 evaluation of the same model (issue 35).

``curved_model_loss`` evaluates ``L = Σ ḡ·P(θ) f`` in float64 with the plain-Python
footprint functions (``leap.kernels.footprints``: the curved column footprint, the
magnified row mapping, the per-row ray stretch), column by column; its agreement with
``leap.project`` (float32) is checked first. The differences use a step of 1e-6 on random
non-round geometries, where the model is smooth, and must agree to 1e-6 relative.
"""
import numpy as np
import pytest
from conftest import with_numba_threads

import leap
from leap.kernels import footprints as fp
from leap.kernels.cpu import curved_cone_vjp as cvjp
from leap.kernels.plan import make_plan

TOL = 1e-6
H = 1e-6
NAMES = ("col_dir", "source_xy", "source_z", "sdd", "center_col", "center_row")

pytestmark = pytest.mark.usefixtures("one_numba_thread")


def curved_model_loss(f, gbar, st, vol, det):
    """float64 ``Σ ḡ·P f`` of the curved cone model; st holds the per-view quantities
    (``NAMES``) and ``fov_r2``."""
    f = np.asarray(f, dtype=np.float64)
    gbar = np.asarray(gbar, dtype=np.float64)
    nb, na, nrows, ncols = gbar.shape
    jj = np.arange(nrows)
    kk = np.arange(vol.num_z)
    total = 0.0
    for a in range(na):
        sdd, cr = st["sdd"][a], st["center_row"][a]
        v = (jj - cr) * det.pixel_height / sdd
        g = gbar[:, a] * np.sqrt(1.0 + v * v)[None, :, None]
        for iy in range(vol.num_y):
            y = vol.y0 + iy * vol.voxel_width
            for ix in range(vol.num_x):
                x = vol.x0 + ix * vol.voxel_width
                if x * x + y * y > st["fov_r2"]:
                    continue
                c_lo, c_hi, w, dist = fp.axial_column_footprint(
                    x, y, st["col_dir"][a, 0], st["col_dir"][a, 1], st["source_xy"][a, 0],
                    st["source_xy"][a, 1], sdd, fp.CURVED, vol.voxel_width, det.pixel_width,
                    st["center_col"][a], 0.0, 0.0)
                if not dist > 0:
                    continue
                A, B, _ = fp.row_mapping(vol.z0, vol.voxel_height, st["source_z"][a], dist,
                                         sdd, True, det.pixel_height, cr)
                lo = A + kk * B
                W = np.clip(np.minimum(lo + B, jj[:, None] + 0.5)
                            - np.maximum(lo, jj[:, None] - 0.5), 0.0, None)   # (nrows, nz)
                i0, i1 = fp.column_range(c_lo, c_hi, ncols)
                for i in range(i0, i1 + 1):
                    o = fp.overlap(c_lo, c_hi, i - 0.5, i + 0.5)
                    if o:
                        total += w * o * np.einsum("bj,jk,bk->", g[:, :, i], W,
                                                   f[:, :, iy, ix])
    return total


def case(rng, helical=False, nb=2, nrows=7, pixel_scale=1.0):
    """(geometry, volume, f, ḡ) of a random curved cone scan; ``pixel_scale`` < 1 makes
    the column footprints several pixels wide."""
    na = 5
    angles = rng.uniform(0.2, 0.55, na) + np.arange(na) * np.pi / 2 * 1.03
    det = leap.Detector(num_rows=nrows, num_cols=23, pixel_height=rng.uniform(0.8, 1.0),
                        pixel_width=rng.uniform(0.9, 1.1) * pixel_scale, curved=True,
                        center_col=11 + rng.uniform(-0.8, 0.8),
                        center_row=0.5 * (nrows - 1) + rng.uniform(-0.4, 0.4))
    vol = leap.Volume(num_x=9, num_y=8, num_z=4, voxel_width=rng.uniform(0.45, 0.6),
                      voxel_height=rng.uniform(0.45, 0.6), offset_x=rng.uniform(-0.3, 0.3),
                      offset_y=rng.uniform(-0.3, 0.3))
    geo = leap.ConeBeam(detector=det, angles=angles, sod=rng.uniform(12, 16),
                        sdd=rng.uniform(22, 28), tau=rng.uniform(-0.8, 0.8),
                        helical_pitch=rng.uniform(0.3, 0.5) if helical else 0.0)
    f = rng.uniform(0.0, 1.0, (nb,) + vol.shape).astype(np.float32)
    f[:, :, 0, :] = 0.0                           # a row of empty columns
    f[:, 0, 2, :] = 0.0                           # columns with a zero end voxel
    gbar = rng.standard_normal((nb,) + geo.projection_shape).astype(np.float32)
    return geo, vol, f, gbar


def state(geo, vol):
    plan = make_plan(geo, vol)
    v, s = plan.views, plan.scalars()
    na = v.col_dir.shape[0]
    return dict(col_dir=v.col_dir.copy(), source_xy=v.source_xy.copy(),
                source_z=v.source_z.copy(), sdd=np.full(na, float(v.sdd)),
                center_col=np.full(na, s.center_col), center_row=np.full(na, s.center_row),
                fov_r2=plan.fov_r2)


def analytic(st, f, gbar, vol, det):
    return cvjp.geometry_vjp(f, gbar, *(st[n] for n in NAMES), st["fov_r2"], vol.x0, vol.y0,
                             vol.z0, vol.voxel_width, vol.voxel_height, det.pixel_width,
                             det.pixel_height)


@pytest.mark.parametrize("helical", [False, True])
def test_reference_model_is_the_projector(helical):
    rng = np.random.default_rng(int(helical))
    geo, vol, f, gbar = case(rng, helical)
    want = sum(float(np.sum(leap.project(geo, vol, f[b]).astype(np.float64) * gbar[b]))
               for b in range(f.shape[0]))
    got = curved_model_loss(f, gbar, state(geo, vol), vol, geo.detector)
    assert abs(got - want) <= 1e-5 * abs(want)


@pytest.mark.parametrize("helical", [False, True])
@pytest.mark.parametrize("nb,nrows,pixel_scale", [(2, 7, 1.0), (1, 4, 1.0), (1, 7, 0.3)])
def test_vjp_matches_float64_differences(helical, nb, nrows, pixel_scale):
    """Every per-view quantity, along a random direction: circular and helical scans, a
    batch of two on a tall detector, one sample on a short one (ends off the detector's
    rows), and footprints three pixels wide (interior columns)."""
    rng = np.random.default_rng(20 + 2 * int(helical) + nb + 7 * int(pixel_scale < 1))
    geo, vol, f, gbar = case(rng, helical, nb, nrows, pixel_scale)
    det = geo.detector
    st = state(geo, vol)
    grads = dict(zip(NAMES, analytic(st, f, gbar, vol, det)))
    for name in NAMES:
        d = rng.standard_normal(st[name].shape)
        up = {**st, name: st[name] + H * d}
        down = {**st, name: st[name] - H * d}
        num = (curved_model_loss(f, gbar, up, vol, det)
               - curved_model_loss(f, gbar, down, vol, det)) / (2 * H)
        a = float(np.sum(grads[name] * d))
        assert abs(num) > 1e-3, name
        assert abs(a - num) <= TOL * max(abs(num), 1.0), (name, a, num)


def test_the_comparison_sees_a_wrong_term():
    """A slightly wrong pixel height (the rows' scale) must fail the comparison."""
    rng = np.random.default_rng(3)
    geo, vol, f, gbar = case(rng)
    st = state(geo, vol)
    det = geo.detector
    good = analytic(st, f, gbar, vol, det)
    bad = cvjp.geometry_vjp(f, gbar, *(st[n] for n in NAMES), st["fov_r2"], vol.x0, vol.y0,
                            vol.z0, vol.voxel_width, vol.voxel_height, det.pixel_width,
                            det.pixel_height * 1.001)
    assert np.linalg.norm(bad[5] - good[5]) > 1e-4 * np.linalg.norm(good[5])


def test_batch_and_threads_do_not_change_the_result():
    rng = np.random.default_rng(5)
    geo, vol, f, gbar = case(rng, helical=True)
    st = state(geo, vol)
    det = geo.detector
    both = analytic(st, f, gbar, vol, det)
    one = [analytic(st, f[b:b + 1], gbar[b:b + 1], vol, det) for b in range(2)]
    for x, y0, y1 in zip(both, *one):
        np.testing.assert_allclose(x, y0 + y1, rtol=1e-12, atol=1e-12)
    two = with_numba_threads(2, lambda: analytic(st, f, gbar, vol, det))
    for x, y in zip(both, two):
        np.testing.assert_array_equal(x, y)


def test_plan_geometry_vjp_checks_the_plan():
    rng = np.random.default_rng(7)
    geo, vol, f, gbar = case(rng)
    got = cvjp.plan_geometry_vjp(make_plan(geo, vol), f, gbar)
    for x, y in zip(got, analytic(state(geo, vol), f, gbar, vol, geo.detector)):
        np.testing.assert_array_equal(x, y)
    flat = geo.with_changes(detector=geo.detector.with_changes(curved=False))
    with pytest.raises(ValueError, match="curved"):
        cvjp.plan_geometry_vjp(make_plan(flat, vol), f, gbar)
    shifts = np.zeros((geo.num_angles, 3))
    shifts[:, 2] = 0.3
    ffs = geo.with_changes(source_shifts=shifts)
    with pytest.raises(ValueError, match="focal spot"):
        cvjp.plan_geometry_vjp(make_plan(ffs, vol), f, gbar)


def test_a_given_projection_replaces_the_vjps_own():
    """``projection=P f`` (the forward's output) gives the row factor's terms as the
    VJP's own projection does, to float32 rounding; a wrong shape is refused."""
    rng = np.random.default_rng(9)
    geo, vol, f, gbar = case(rng, helical=True)
    plan = make_plan(geo, vol)
    own = cvjp.plan_geometry_vjp(plan, f, gbar)
    g = np.stack([leap.project(geo, vol, f[b]) for b in range(f.shape[0])])
    given = cvjp.plan_geometry_vjp(plan, f, gbar, projection=g)
    for x, y in zip(given, own):
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6 * np.abs(y).max())
    with pytest.raises(ValueError, match="projection must have"):
        cvjp.plan_geometry_vjp(plan, f, gbar, projection=g[:, 1:])
