"""The parallel/fan geometry VJP (``leap.kernels.cpu.axial_view_vjp``) against central
differences of a float64 evaluation of the same model (issue 35).

The reference ``conftest.axial_model_loss`` evaluates ``L = Σ ḡ·P(θ) f`` in float64 with the
plain-Python footprint functions (``leap.kernels.footprints``), column by column, exactly
the model the kernels compute; its agreement with ``leap.project`` (float32) is checked
first. The differences use a step of 1e-6 (mm, or pixels for the detector centre) on
geometries whose footprint ends stay clear of pixel edges (random non-round sizes and
angles away from the diagonals), so the model is smooth there and the comparison holds to
1e-6 relative; a deliberately wrong derivative (``test_the_comparison_sees_a_wrong_term``)
fails it by orders of magnitude.
"""
import numpy as np
import pytest
from conftest import axial_model_loss

import leap
from leap.kernels.cpu import axial_view_vjp as avjp
from leap.kernels.plan import make_plan

TOL = 1e-6
H = 1e-6


def case(kind, rng, nz=3, nrows=None, nb=2):
    """(geometry, volume, f (nb, nz, ny, nx) float32, ḡ float32) for a random scan."""
    na = 5
    angles = rng.uniform(0.2, 0.55, na) + np.arange(na) * np.pi / 2 * 1.03
    nrows = nz if nrows is None else nrows
    det = leap.Detector(num_rows=nrows, num_cols=23, pixel_height=0.5,
                        pixel_width=rng.uniform(0.55, 0.7),
                        center_col=11 + rng.uniform(-0.8, 0.8))
    vol = leap.Volume(num_x=9, num_y=8, num_z=nz, voxel_width=rng.uniform(0.45, 0.6),
                      voxel_height=0.5, offset_x=rng.uniform(-0.3, 0.3),
                      offset_y=rng.uniform(-0.3, 0.3))
    if kind == "parallel":
        geo = leap.ParallelBeam(detector=det, angles=angles)
    else:
        det = det.with_changes(curved=kind == "curved")
        geo = leap.FanBeam(detector=det, angles=angles, sod=rng.uniform(12, 16),
                           sdd=rng.uniform(22, 28), tau=rng.uniform(-0.8, 0.8))
    f = rng.uniform(0.0, 1.0, (nb,) + vol.shape).astype(np.float32)
    f[:, :, 0, :] = 0.0                           # a row of empty columns
    gbar = rng.standard_normal((nb,) + geo.projection_shape).astype(np.float32)
    return geo, vol, f, gbar


def state(geo, vol):
    plan = make_plan(geo, vol)
    v, s = plan.views, plan.scalars()
    na = v.col_dir.shape[0]
    return dict(col_dir=v.col_dir.copy(), source_xy=v.source_xy.copy(),
                center_col=np.full(na, s.center_col), sdd=np.full(na, float(v.sdd)),
                model=v.column_model, fov_r2=plan.fov_r2)


def loss_of(st, f, gbar, vol, det):
    return axial_model_loss(f, gbar, st["col_dir"], st["source_xy"], st["center_col"],
                            st["sdd"], st["model"], st["fov_r2"], vol, det)


def analytic(st, f, gbar, vol, det):
    return avjp.geometry_vjp(f, gbar, st["col_dir"], st["source_xy"], st["center_col"],
                             st["sdd"], st["model"], st["fov_r2"], vol.x0, vol.y0, vol.z0,
                             vol.voxel_width, vol.voxel_height, det.pixel_width,
                             det.pixel_height, det.center_row)


KINDS = ["parallel", "flat", "curved"]


@pytest.mark.parametrize("kind", KINDS)
def test_reference_model_is_the_projector(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    geo, vol, f, gbar = case(kind, rng)
    st = state(geo, vol)
    want = sum(float(np.sum(leap.project(geo, vol, f[b]).astype(np.float64) * gbar[b]))
               for b in range(f.shape[0]))
    got = loss_of(st, f, gbar, vol, geo.detector)
    assert abs(got - want) <= 1e-5 * abs(want)


def fd_check(kind, seed, nz=3, nrows=None, nb=2):
    rng = np.random.default_rng(seed)
    geo, vol, f, gbar = case(kind, rng, nz, nrows, nb)
    det = geo.detector
    st = state(geo, vol)
    grads = dict(zip(("col_dir", "source_xy", "center_col", "sdd"),
                     analytic(st, f, gbar, vol, det)))
    names = ["col_dir", "center_col"] + ([] if kind == "parallel" else ["source_xy", "sdd"])
    out = {}
    for name in names:
        d = rng.standard_normal(st[name].shape)
        up = {**st, name: st[name] + H * d}
        down = {**st, name: st[name] - H * d}
        num = (loss_of(up, f, gbar, vol, det) - loss_of(down, f, gbar, vol, det)) / (2 * H)
        out[name] = (float(np.sum(grads[name] * d)), num)
    if kind == "parallel":
        assert not grads["source_xy"].any() and not grads["sdd"].any()
    return out


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rows", ["direct", "general", "slice", "one_slice"])
def test_vjp_matches_float64_differences(kind, rows):
    """Direct rows (voxel k on row k + shift), general row overlaps (voxels half a pixel
    off the rows and fewer rows than slices), one slice on one row (a batch of two, and
    one sample: the vectorised single-slice pass)."""
    nz, nrows, nb = {"direct": (3, 3, 2), "general": (3, 2, 2), "slice": (1, 1, 2),
                     "one_slice": (1, 1, 1)}[rows]
    seed = 10 * KINDS.index(kind) + ["direct", "general", "slice", "one_slice"].index(rows)
    for name, (a, num) in fd_check(kind, seed, nz, nrows, nb).items():
        assert abs(num) > 1e-3, name
        assert abs(a - num) <= TOL * max(abs(num), 1.0), (name, a, num)


def test_the_comparison_sees_a_wrong_term(monkeypatch):
    """Halving the weight's derivative (through a wrong voxel width in the kernel's
    ``w`` term) must fail the check: the test can fail."""
    rng = np.random.default_rng(3)
    geo, vol, f, gbar = case("flat", rng)
    st = state(geo, vol)
    det = geo.detector
    good = analytic(st, f, gbar, vol, det)
    bad = avjp.geometry_vjp(f, gbar, st["col_dir"], st["source_xy"], st["center_col"],
                            st["sdd"], st["model"], st["fov_r2"], vol.x0, vol.y0, vol.z0,
                            vol.voxel_width, vol.voxel_height, det.pixel_width * 1.001,
                            det.pixel_height, det.center_row)
    assert np.linalg.norm(bad[0] - good[0]) > 1e-4 * np.linalg.norm(good[0])


def test_batch_and_threads_do_not_change_the_result():
    import numba
    rng = np.random.default_rng(5)
    geo, vol, f, gbar = case("flat", rng)
    st = state(geo, vol)
    det = geo.detector
    both = analytic(st, f, gbar, vol, det)
    one = [analytic(st, f[b:b + 1], gbar[b:b + 1], vol, det) for b in range(2)]
    for x, y0, y1 in zip(both, *one):
        np.testing.assert_allclose(x, y0 + y1, rtol=1e-12, atol=1e-12)
    n = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        single = analytic(st, f, gbar, vol, det)
    finally:
        numba.set_num_threads(n)
    for x, y in zip(both, single):
        np.testing.assert_array_equal(x, y)


def test_plan_geometry_vjp_refuses_cone_beams():
    det = leap.Detector(num_rows=4, num_cols=5, pixel_height=1.0, pixel_width=1.0)
    cone = leap.ConeBeam(detector=det, angles=np.arange(3.0), sod=20.0, sdd=30.0)
    vol = leap.Volume(num_x=3, num_y=3, num_z=3, voxel_width=0.5, voxel_height=0.5)
    f = np.ones(vol.shape, np.float32)
    g = np.ones(cone.projection_shape, np.float32)
    with pytest.raises(ValueError, match="parallel and fan"):
        avjp.plan_geometry_vjp(make_plan(cone, vol), f, g)


# ------------------------------------------- FBP's distance-weighted back-projection
def weighted_loss_of(st, f, gbar, vol, det, sod):
    """float64 ``Σ ḡ·P_w(θ) f`` of FBP's distance-weighted model: the weight
    sod/(sod − x·θ) multiplies a whole voxel column, so view a is the plain model of the
    volume f·D_a (``conftest.axial_model_loss`` one view at a time)."""
    x = vol.x0 + np.arange(vol.num_x) * vol.voxel_width
    y = vol.y0 + np.arange(vol.num_y) * vol.voxel_width
    total = 0.0
    for a in range(gbar.shape[1]):
        cx, cy = st["col_dir"][a]
        D = sod / (sod - (x[None, :] * cy - y[:, None] * cx))
        one = {k: (v[a:a + 1] if isinstance(v, np.ndarray) else v) for k, v in st.items()}
        total += loss_of(one, f * D, gbar[:, a:a + 1], vol, det)
    return total


@pytest.mark.parametrize("kind,rows", [("flat", "direct"), ("flat", "one_slice"),
                                       ("curved", "general"), ("flat", "slice")])
def test_distance_weighted_vjp_matches_float64_differences(kind, rows):
    nz, nrows, nb = {"direct": (3, 3, 2), "general": (3, 2, 2), "slice": (1, 1, 2),
                     "one_slice": (1, 1, 1)}[rows]
    rng = np.random.default_rng(40 + KINDS.index(kind) * 4 + len(rows))
    geo, vol, f, gbar = case(kind, rng, nz, nrows, nb)
    det, sod = geo.detector, geo.sod
    st = state(geo, vol)
    # The reference is the weighted projector (float32).
    want = sum(float(np.sum(leap.operators.project(geo, vol, f[b], fan_distance_weight=True)
                            .astype(np.float64) * gbar[b])) for b in range(nb))
    assert abs(weighted_loss_of(st, f, gbar, vol, det, sod) - want) <= 1e-5 * abs(want)
    plan = make_plan(geo, vol, fan_distance_weight=True)
    got = avjp.plan_geometry_vjp(plan, f, gbar)
    direct = avjp.geometry_vjp(f, gbar, st["col_dir"], st["source_xy"], st["center_col"],
                               st["sdd"], st["model"], st["fov_r2"], vol.x0, vol.y0, vol.z0,
                               vol.voxel_width, vol.voxel_height, det.pixel_width,
                               det.pixel_height, det.center_row, dist_sod=sod)
    for a, b in zip(got, direct):
        np.testing.assert_array_equal(a, b)
    grads = dict(zip(("col_dir", "source_xy", "center_col", "sdd", "sod"), got))
    for name in ("col_dir", "source_xy", "center_col", "sdd", "sod"):
        base = sod if name == "sod" else st[name]
        d = rng.standard_normal(np.shape(base))
        if name == "sod":
            up = weighted_loss_of(st, f, gbar, vol, det, sod + H * d)
            down = weighted_loss_of(st, f, gbar, vol, det, sod - H * d)
        else:
            up = weighted_loss_of({**st, name: base + H * d}, f, gbar, vol, det, sod)
            down = weighted_loss_of({**st, name: base - H * d}, f, gbar, vol, det, sod)
        num = (up - down) / (2 * H)
        a = float(np.sum(grads[name] * d))
        assert abs(num) > 1e-3, name
        assert abs(a - num) <= TOL * max(abs(num), 1.0), (name, a, num)


def test_distance_weight_is_for_fan_beams():
    rng = np.random.default_rng(0)
    geo, vol, f, gbar = case("parallel", rng)
    st = state(geo, vol)
    det = geo.detector
    with pytest.raises(ValueError, match="dist_sod"):
        avjp.geometry_vjp(f, gbar, st["col_dir"], st["source_xy"], st["center_col"],
                          st["sdd"], st["model"], st["fov_r2"], vol.x0, vol.y0, vol.z0,
                          vol.voxel_width, vol.voxel_height, det.pixel_width,
                          det.pixel_height, det.center_row, dist_sod=10.0)
