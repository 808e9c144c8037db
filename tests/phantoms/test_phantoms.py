"""Tests for leap.phantoms (analytic phantoms, voxelisation, line integrals)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.ndimage import map_coordinates

from leap.phantoms import (
    CONE_X,
    CONE_Y,
    CONE_Z,
    CYLINDER_X,
    CYLINDER_Y,
    CYLINDER_Z,
    ELLIPSOID,
    PARALLELEPIPED,
    Phantom,
    PhantomObject,
    forbild_head,
    rotation_matrix,
    shepp_logan_3d,
)

HYP = settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])

ALL_KINDS = [ELLIPSOID, PARALLELEPIPED, CYLINDER_X, CYLINDER_Y, CYLINDER_Z, CONE_X, CONE_Y, CONE_Z]


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------
def quat_rotation(q):
    q = np.asarray(q, dtype=float)
    a, b, c, d = q / np.linalg.norm(q)
    return np.array(
        [
            [a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c)],
            [2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b)],
            [2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d],
        ]
    )


def random_rotation(rng):
    return quat_rotation(rng.normal(size=4))


def centred_grid(half, step):
    """Voxel centres covering [-half, half) with spacing ``step``."""
    return np.arange(-half, half, step) + step / 2


def radii_for(kind, rng=None, big=(3.0, 4.0, 5.0)):
    r = np.array(big, dtype=float)
    if kind in (CONE_X, CONE_Y, CONE_Z):
        axis = kind - CONE_X
        others = [i for i in range(3) if i != axis]
        r[axis] = 5.0
        r[others[0]] = 1.5
        r[others[1]] = 4.0
    return r


def line_sum_1d(ph, axis, a, b, half=30.0, dx=0.002):
    """Riemann sum of the voxelised phantom along a coordinate axis.

    The line is {x_axis = s, other two coordinates = (a, b)}; we voxelise onto
    a 1 x 1 x n grid whose voxel centres lie on the line.
    """
    s = centred_grid(half, dx)
    if axis == 0:
        f = ph.voxelize(s, [a], [b], dx, dx)
    elif axis == 1:
        f = ph.voxelize([a], s, [b], dx, dx)
    else:
        f = ph.voxelize([a], [b], s, dx, dx)
    return float(f.sum(dtype=np.float64)) * dx


def point_on_axis_line(axis, a, b):
    p = np.zeros(3)
    others = [i for i in range(3) if i != axis]
    p[others[0]] = a
    p[others[1]] = b
    return p


# ---------------------------------------------------------------------------
# PhantomObject
# ---------------------------------------------------------------------------
def test_kind_constants_match_leap_codes():
    assert (ELLIPSOID, PARALLELEPIPED, CYLINDER_X, CYLINDER_Y, CYLINDER_Z, CONE_X, CONE_Y, CONE_Z) == tuple(range(8))


def test_object_defaults_readonly_and_copied():
    c = np.array([1.0, 2.0, 3.0])
    r = [4, 5, 6]
    obj = PhantomObject(kind=ELLIPSOID, centre=c, radii=r, value=0.5)
    c[0] = 99.0
    assert obj.centre.tolist() == [1.0, 2.0, 3.0]
    assert obj.radii.dtype == np.float64
    np.testing.assert_array_equal(obj.rotation, np.eye(3))
    np.testing.assert_array_equal(obj.clip, np.zeros(3))
    for arr in (obj.centre, obj.radii, obj.rotation, obj.clip):
        assert not arr.flags.writeable
        with pytest.raises(ValueError):
            arr[0] = 1.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        obj.value = 2.0
    with pytest.raises(TypeError):
        PhantomObject(ELLIPSOID, c, r, 0.5)  # keyword-only
    same = PhantomObject(kind=0, centre=[1, 2, 3], radii=[4, 5, 6], value=0.5)
    assert obj == same and hash(obj) == hash(same)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(kind=8), "kind"),
        (dict(kind=-1), "kind"),
        (dict(kind=1.0), "kind"),
        (dict(kind=True), "kind"),
        (dict(centre=[0, 0]), r"centre.*\(3,\)"),
        (dict(centre=[0, np.nan, 0]), "centre.*finite"),
        (dict(radii=[1, 0, 1]), "radii.*positive"),
        (dict(radii=[1, -2, 1]), "radii.*positive"),
        (dict(radii=[[1, 1, 1]]), "radii"),
        (dict(radii=["a", "b", "c"]), "radii"),
        (dict(value=np.nan), "value.*finite"),
        (dict(value="1"), "value"),
        (dict(rotation=np.eye(2)), "rotation.*3x3"),
        (dict(rotation=np.zeros((3, 3))), "rotation.*singular"),
        (dict(rotation=np.full((3, 3), np.inf)), "rotation.*finite"),
        (dict(clip=[0, 0, np.nan]), "clip.*finite"),
        (dict(clip=[0, 0]), "clip"),
        (dict(kind=CONE_Z, radii=[1, 1, 0]), "half-length"),
        (dict(kind=CONE_Z, radii=[0, 0, 1]), "end radii"),
        (dict(kind=CONE_X, radii=[1, -1, 2]), "end radii"),
    ],
)
def test_object_validation(kwargs, match):
    base = dict(kind=ELLIPSOID, centre=[0, 0, 0], radii=[1, 1, 1], value=1.0)
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        PhantomObject(**base)


def test_cone_with_a_tip_is_allowed():
    obj = PhantomObject(kind=CONE_Y, centre=[0, 0, 0], radii=[0.0, 2.0, 1.0], value=1.0)
    assert obj.volume() == pytest.approx(math.pi / 3 * 4.0 * 1.0)


# ---------------------------------------------------------------------------
# Phantom container
# ---------------------------------------------------------------------------
def test_container_protocol():
    ph = Phantom()
    assert len(ph) == 0
    a = PhantomObject(kind=ELLIPSOID, centre=[0, 0, 0], radii=[1, 1, 1], value=1.0)
    b = PhantomObject(kind=PARALLELEPIPED, centre=[1, 0, 0], radii=[1, 1, 1], value=2.0)
    ph.add(a).add(b)
    assert len(ph) == 2 and list(ph) == [a, b] and ph[1] is b and ph.objects == (a, b)
    with pytest.raises(TypeError):
        ph.add("not an object")
    ph.clear()
    assert len(ph) == 0
    # empty phantom: zeros everywhere
    out = ph.voxelize([0.0, 1.0], [0.0], [0.0, 1.0, 2.0], 1.0, 1.0)
    assert out.shape == (3, 1, 2) and out.dtype == np.float32 and not out.any()
    np.testing.assert_array_equal(ph.line_integrals(np.zeros((4, 3)), np.ones((4, 3))), np.zeros(4))


# ---------------------------------------------------------------------------
# line integrals: closed forms
# ---------------------------------------------------------------------------
finite = st.floats(-50, 50, allow_nan=False)
unit3 = st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(lambda v: np.linalg.norm(v) > 0.1)


@HYP
@given(
    centre=st.tuples(finite, finite, finite),
    radius=st.floats(0.5, 40.0),
    value=st.floats(-2.0, 2.0),
    offset=st.tuples(st.floats(-1.2, 1.2), st.floats(-1.2, 1.2), st.floats(-1.2, 1.2)),
    direction=unit3,
    along=st.floats(-1e4, 1e4),
)
def test_ball_chord_closed_form(centre, radius, value, offset, direction, along):
    c = np.array(centre)
    d = np.array(direction)
    u = d / np.linalg.norm(d)
    # a point on the line: near the ball, then moved far along the line
    q = c + radius * np.array(offset)
    p = q + along * u
    ph = Phantom([PhantomObject(kind=ELLIPSOID, centre=c, radii=[radius] * 3, value=value)])
    v = q - c
    dist2 = max(float(v @ v - (v @ u) ** 2), 0.0)
    expected = value * 2.0 * math.sqrt(max(radius**2 - dist2, 0.0))
    got = ph.line_integrals(p[None], (7.5 * d)[None])
    assert got.shape == (1,) and got.dtype == np.float64
    # near-tangent rays: the chord is a square root, so a position error e
    # (from rounding) changes it by up to ~sqrt(2 R e)
    pos_err = 1e-14 * (1 + radius + abs(along) + float(np.abs(c).max()))
    tol = 1e-9 * (1 + radius + abs(along)) + 4.0 * abs(value) * math.sqrt(pos_err * radius)
    assert got[0] == pytest.approx(expected, abs=tol)


@HYP
@given(
    semi=st.tuples(st.floats(0.5, 30), st.floats(0.5, 30), st.floats(0.5, 30)),
    quat=st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(
        lambda v: np.linalg.norm(v) > 0.2
    ),
    p=st.tuples(finite, finite, finite),
    direction=unit3,
)
def test_rotated_ellipsoid_chord_closed_form(semi, quat, p, direction):
    A = quat_rotation(quat)
    c = np.array([1.0, -2.0, 3.0])
    semi = np.array(semi)
    ph = Phantom([PhantomObject(kind=ELLIPSOID, centre=c, radii=semi, value=1.0, rotation=A)])
    p = np.array(p)
    d = np.array(direction) / np.linalg.norm(direction)
    # affine map to the unit ball: u = diag(1/semi) A (x - c); line u0 + t w
    u0 = (A @ (p - c)) / semi
    w = (A @ d) / semi
    wn = np.linalg.norm(w)
    e = w / wn
    delta2 = max(float(u0 @ u0 - (u0 @ e) ** 2), 0.0)
    expected = 2.0 * math.sqrt(max(1.0 - delta2, 0.0)) / wn
    got = ph.line_integrals(p, d)[0]
    assert got == pytest.approx(expected, abs=1e-8 * (1 + semi.max()))


def test_ray_parametrisation_invariance():
    ph = forbild_head(include_ear=False)
    rng = np.random.default_rng(3)
    p = rng.uniform(-60, 60, size=(50, 3))
    d = rng.normal(size=(50, 3))
    base = ph.line_integrals(p, d)
    np.testing.assert_allclose(ph.line_integrals(p + 123.0 * d, 5.0 * d), base, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(ph.line_integrals(p - 1e4 * d / np.linalg.norm(d, axis=1)[:, None], -d), base, rtol=1e-9, atol=1e-9)
    # a single source broadcasts against many directions
    one = ph.line_integrals(p[0], d)
    np.testing.assert_allclose(one, ph.line_integrals(np.repeat(p[:1], 50, axis=0), d))


# ---------------------------------------------------------------------------
# line integrals vs. the voxelised function
# ---------------------------------------------------------------------------
object_st = st.builds(
    lambda kind, centre, size, val, quat, clip_axis, clip_off: (kind, centre, size, val, quat, clip_axis, clip_off),
    st.sampled_from(ALL_KINDS),
    st.tuples(st.floats(-4, 4), st.floats(-4, 4), st.floats(-4, 4)),
    st.tuples(st.floats(1.0, 8.0), st.floats(1.0, 8.0), st.floats(0.0, 8.0)),
    st.floats(-1.0, 2.0),
    st.tuples(st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1), st.floats(-1, 1)).filter(
        lambda v: np.linalg.norm(v) > 0.2
    ),
    st.sampled_from([None, 0, 1, 2]),
    st.floats(-3.0, 3.0).filter(lambda v: abs(v) > 1e-3),
)


def make_object(spec):
    kind, centre, size, val, quat, clip_axis, clip_off = spec
    r = np.array(size, dtype=float)
    if kind in (CONE_X, CONE_Y, CONE_Z):
        axis = kind - CONE_X
        others = [i for i in range(3) if i != axis]
        r = np.array([0.0, 0.0, 0.0])
        r[axis] = size[0]
        r[others[0]] = size[1]
        r[others[1]] = size[2]  # may be 0: a true cone
    else:
        r[2] = max(r[2], 0.5)
    clip = np.zeros(3)
    if clip_axis is not None:
        clip[clip_axis] = centre[clip_axis] + clip_off
    return PhantomObject(kind=kind, centre=centre, radii=r, value=val, rotation=quat_rotation(quat), clip=clip)


@HYP
@given(
    specs=st.lists(object_st, min_size=1, max_size=4),
    axis=st.sampled_from([0, 1, 2]),
    a=st.floats(-6, 6),
    b=st.floats(-6, 6),
)
def test_line_integrals_match_voxelised_function_axis_rays(specs, axis, a, b):
    """Overlapping objects of every kind: exact integral == limit of the voxel sum."""
    ph = Phantom([make_object(s) for s in specs])
    dx = 0.002
    numeric = line_sum_1d(ph, axis, a, b, dx=dx)
    p = point_on_axis_line(axis, a, b)
    d = np.zeros(3)
    d[axis] = -1.0
    exact = ph.line_integrals(p + 40.0 * d, d)[0]
    vmax = max(abs(o.value) for o in ph)
    # each object boundary crossing costs at most one sample of width dx and
    # a jump of at most 2*vmax (overrides can jump between two values)
    tol = 4.0 * len(ph) * dx * vmax + 1e-9
    assert abs(numeric - exact) <= tol


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_line_integrals_match_fine_voxels_oblique_rays(kind):
    """Integrate the (trilinearly interpolated) fine voxel volume along oblique rays."""
    rng = np.random.default_rng(100 + kind)
    v = 0.1
    grid = centred_grid(8.0, v)
    c = np.array([0.3, -0.2, 0.1])
    obj = PhantomObject(
        kind=kind,
        centre=c,
        radii=radii_for(kind),
        value=2.0,
        rotation=random_rotation(rng),
        clip=[0.0, c[1] + 1.0, 0.0],
    )
    ph = Phantom([obj])
    f = ph.voxelize(grid, grid, grid, v, v, oversampling=2)
    n = 25
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    p = c + rng.uniform(-0.5, 0.5, size=(n, 3))  # rays through the object's core
    exact = ph.line_integrals(p, d)
    step = v / 2
    ts = np.arange(-14.0, 14.0, step)
    for i in range(n):
        pts = p[i][None, :] + ts[:, None] * d[i][None, :]
        idx = (pts - grid[0]) / v
        samples = map_coordinates(f, [idx[:, 2], idx[:, 1], idx[:, 0]], order=1, mode="constant", cval=0.0)
        numeric = samples.sum() * step
        assert exact[i] > 0.5
        assert abs(numeric - exact[i]) <= 1.5 * v * obj.value, (i, numeric, exact[i])


# ---------------------------------------------------------------------------
# voxelisation
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("oversampling", [1, 3])
def test_voxelised_mass_matches_volume(kind, oversampling):
    rng = np.random.default_rng(kind)
    v = 0.2
    grid = centred_grid(8.0, v)
    obj = PhantomObject(
        kind=kind, centre=[0.13, -0.27, 0.31], radii=radii_for(kind), value=0.7, rotation=random_rotation(rng)
    )
    f = Phantom([obj]).voxelize(grid, grid, grid, v, v, oversampling=oversampling)
    mass = float(f.sum(dtype=np.float64)) * v**3
    assert mass == pytest.approx(obj.volume() * obj.value, rel=0.01)
    vals = np.unique(f)
    if oversampling == 1:
        assert set(vals.tolist()) <= {0.0, np.float32(0.7)}
    else:
        assert vals.min() >= 0.0 and vals.max() <= np.float32(0.7) and vals.size > 2


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_oversampling_equals_mean_of_shifted_point_samples(kind):
    """os = n is exactly the mean of n**3 centre-sampled grids at LEAP's sub-sample offsets."""
    rng = np.random.default_rng(50 + kind)
    obj = PhantomObject(
        kind=kind,
        centre=[0.1, 0.2, -0.3],
        radii=radii_for(kind),
        value=1.25,
        rotation=random_rotation(rng),
        clip=[0.0, 0.0, 1.5],
    )
    ph = Phantom([obj])
    vw, vh = 0.7, 0.9
    x = centred_grid(6.5, vw)
    z = centred_grid(6.5, vh)
    for n in (2, 3):
        got = ph.voxelize(x, x, z, vw, vh, oversampling=n)
        offs = np.arange(n) - 0.5 * (n - 1)
        ref = np.zeros(got.shape)
        for oz in offs * vh / (n + 1):
            for oy in offs * vw / (n + 1):
                for ox in offs * vw / (n + 1):
                    ref += ph.voxelize(x + ox, x + oy, z + oz, vw, vh)
        ref /= n**3
        np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-7)
        assert 0 < np.count_nonzero((got > 0) & (got < 1.25))


def test_voxel_height_and_anisotropic_grid():
    obj = PhantomObject(kind=ELLIPSOID, centre=[0, 0, 0], radii=[5, 6, 7], value=1.0)
    x = centred_grid(8, 0.2)
    z = centred_grid(8, 0.5)
    f = Phantom([obj]).voxelize(x, x, z, 0.2, 0.5, oversampling=3)
    assert f.shape == (z.size, x.size, x.size)
    assert f.flags.c_contiguous
    assert float(f.sum(dtype=np.float64)) * 0.2 * 0.2 * 0.5 == pytest.approx(obj.volume(), rel=0.01)


def test_axes_orientation():
    """Array axis 0 is z, 1 is y, 2 is x."""
    obj = PhantomObject(kind=PARALLELEPIPED, centre=[3.0, -2.0, 1.0], radii=[0.4, 0.4, 0.4], value=1.0)
    x = np.arange(-5.0, 6.0)
    f = Phantom([obj]).voxelize(x, x, x, 1.0, 1.0)
    (iz, iy, ix) = np.argwhere(f)[0]
    assert np.count_nonzero(f) == 1
    assert (x[ix], x[iy], x[iz]) == (3.0, -2.0, 1.0)


def test_override_semantics_small_inside_large():
    big = PhantomObject(kind=ELLIPSOID, centre=[0, 0, 0], radii=[10, 10, 10], value=1.0)
    small = PhantomObject(kind=ELLIPSOID, centre=[2, 0, 0], radii=[3, 3, 3], value=5.0)
    hole = PhantomObject(kind=PARALLELEPIPED, centre=[-5, 0, 0], radii=[1, 1, 1], value=0.0)
    grid = centred_grid(12, 0.5)
    i0 = np.argmin(np.abs(grid - 0.25))  # voxel centred at 0.25

    ph = Phantom([big, small, hole])
    f = ph.voxelize(grid, grid, grid, 0.5, 0.5)
    assert f[i0, i0, np.argmin(np.abs(grid - 2.25))] == 5.0  # small wins (not 6)
    assert f[i0, i0, np.argmin(np.abs(grid + 4.75))] == 0.0  # hole carved out
    assert f[i0, i0, np.argmin(np.abs(grid - 7.25))] == 1.0
    li = ph.line_integrals([[0, 0, 0]], [[1, 0, 0]])[0]
    assert li == pytest.approx(20.0 * 1.0 + 6.0 * (5.0 - 1.0) + 2.0 * (0.0 - 1.0))

    rev = Phantom([small, big])  # the big object hides the small one
    f2 = rev.voxelize(grid, grid, grid, 0.5, 0.5)
    assert set(np.unique(f2).tolist()) == {0.0, 1.0}
    assert rev.line_integrals([[0, 0, 0]], [[1, 0, 0]])[0] == pytest.approx(20.0)


def test_voxelize_overrides_existing_out_and_blends_partial_voxels():
    obj = PhantomObject(kind=PARALLELEPIPED, centre=[-5.0, 0, 0], radii=[5.0, 5.0, 5.0], value=3.0)
    ph = Phantom([obj])
    x = np.array([-2.0, 0.0, 2.0])  # the box face x = 0 passes through the middle voxel centre
    out = np.full((1, 1, 3), 1.0, dtype=np.float32)
    res = ph.voxelize(x, [0.0], [0.0], 1.0, 1.0, out=out)
    assert res is out
    np.testing.assert_array_equal(out[0, 0], [3.0, 3.0, 1.0])  # closed object, replaced not added
    out[...] = 1.0
    ph.voxelize(x, [0.0], [0.0], 1.0, 1.0, oversampling=2, out=out)
    # LEAP's rule: sub-samples at +-T/6; half of them inside -> (1-p)*old + p*val
    np.testing.assert_allclose(out[0, 0], [3.0, 2.0, 1.0])
    out[...] = 1.0
    ph.voxelize(x, [0.0], [0.0], 1.0, 1.0, oversampling=3, out=out)
    np.testing.assert_allclose(out[0, 0], [3.0, 1.0 + 2.0 * 2.0 / 3.0, 1.0], rtol=1e-6)


def test_clip_keeps_the_part_below_the_world_plane():
    obj = PhantomObject(kind=ELLIPSOID, centre=[1, 0, 0], radii=[10, 10, 10], value=1.0, clip=[4.0, 0, 0])
    ph = Phantom([obj])
    grid = centred_grid(12, 0.25)
    f = ph.voxelize(grid, grid, grid, 0.25, 0.25)
    xs = np.broadcast_to(grid[None, None, :], f.shape)
    assert f[xs > 4.0].max() == 0.0
    assert f[xs <= 4.0].max() == 1.0
    assert ph.line_integrals([0, 0, 0], [1, 0, 0])[0] == pytest.approx(4.0 - (-9.0))
    assert ph.line_integrals([5, 0, 0], [0, 1, 0])[0] == 0.0
    # voxelised mass of a cap: pi*h^2*(3R-h)/3 with h = 10 - 3 removed
    h = 7.0
    cap = math.pi * h * h * (3 * 10 - h) / 3
    fo = ph.voxelize(grid, grid, grid, 0.25, 0.25, oversampling=2)
    assert float(fo.sum(dtype=np.float64)) * 0.25**3 == pytest.approx(obj.volume() - cap, rel=0.01)


def test_scale():
    ph = forbild_head(include_ear=False)
    p = np.array([[0.0, 0.0, 0.0], [10.0, 20.0, 5.0]])
    d = np.array([[1.0, 0.2, 0.1], [0.0, 1.0, 0.3]])
    base = ph.line_integrals(p, d)
    ph.scale(2.0)
    np.testing.assert_allclose(ph.line_integrals(2 * p, d), 2 * base, rtol=1e-9)
    with pytest.raises(ValueError):
        ph.scale(-1.0)


# ---------------------------------------------------------------------------
# FORBILD and Shepp-Logan
# ---------------------------------------------------------------------------
FORBILD_DENSITIES = {0.0, 1.045, 1.0475, 1.05, 1.0525, 1.055, 1.06, 1.8}


def value_at(ph, x, y, z):
    return float(ph.voxelize([x], [y], [z], 0.1, 0.1)[0, 0, 0])


def test_forbild_head_objects_and_voxels():
    ph = forbild_head()
    assert len(ph) == 18 + 317
    assert len(forbild_head(include_ear=False)) == 18
    x = centred_grid(100, 4.0)
    y = centred_grid(128, 4.0)
    z = centred_grid(128, 4.0)
    f = ph.voxelize(x, y, z, 4.0, 4.0)
    assert f.shape == (z.size, y.size, x.size) and f.dtype == np.float32
    assert f.min() == 0.0 and f.max() == pytest.approx(0.036)
    assert set(np.round(np.unique(f).astype(np.float64) / 0.02, 5).tolist()) <= FORBILD_DENSITIES
    # nothing outside the documented FOV
    assert not f[:, :, np.abs(x) > 96].any() and not f[:, np.abs(y) > 120, :].any() and not f[np.abs(z) > 125].any()
    # some landmark points (mm, 1/mm)
    assert value_at(ph, 0, 0, -50) == pytest.approx(1.05 * 0.02)  # brain
    assert value_at(ph, -47, 43, 8.72) == pytest.approx(1.06 * 0.02)  # eye
    assert value_at(ph, 0, 84, 0) == 0.0  # frontal sinus
    assert value_at(ph, 0, -30, 0) == pytest.approx(1.045 * 0.02)  # ventricle
    assert value_at(ph, 0, 118, 0) == pytest.approx(1.8 * 0.02)  # skull
    assert value_at(ph, 88, 0, 0) == 0.0  # ear air cell
    assert value_at(ph, 90.5, 0, 0) == pytest.approx(1.8 * 0.02)  # ear bone, x <= 91
    assert value_at(ph, 99, 0, 0) == 0.0  # clipped part of the ear


@pytest.mark.slow
def test_forbild_line_integrals_sane_and_consistent():
    ph = forbild_head()
    li = ph.line_integrals([[0, -500, 0], [0, 0, -500], [500, 0, 0], [0, 200, 200]], [[0, 1, 0], [0, 0, 1], [-1, 0, 0], [1, 0, 0]])
    assert 4.0 < li[0] < 6.0 and 4.0 < li[1] < 6.5 and 3.0 < li[2] < 5.0 and li[3] == 0.0
    for axis, a, b in [(1, 0.0, 0.0), (0, 0.0, 0.0), (0, 1.3, -0.7), (2, -47.0, 43.0)]:
        numeric = line_sum_1d(ph, axis, a, b, half=130.0, dx=0.005)
        p = point_on_axis_line(axis, a, b)
        d = np.zeros(3)
        d[axis] = 1.0
        assert abs(ph.line_integrals(p, d)[0] - numeric) < 40 * 0.005 * 0.036


@pytest.mark.parametrize("modified, values", [(True, {0.0, 0.2, 0.3, 1.0}), (False, {0.0, 1.0, 1.02, 1.03, 2.0})])
def test_shepp_logan(modified, values):
    R = 120.0
    ph = shepp_logan_3d(radius_mm=R, modified=modified)
    assert len(ph) == 10 and all(o.kind == ELLIPSOID for o in ph)
    np.testing.assert_allclose(ph[0].radii, R * np.array([0.69, 0.92, 0.81]))
    g = centred_grid(R, R / 32)
    f = ph.voxelize(g, g, g, R / 32, R / 32)
    assert set(np.round(np.unique(f).astype(np.float64), 4).tolist()) <= values
    assert f.max() == max(values)
    assert value_at(ph, 0, 0.9 * R, 0) == max(values)  # skull
    assert value_at(ph, 0, 0, 0) == pytest.approx(sorted(values)[1 if modified else 2])  # brain
    # scaling of values and lengths
    li = ph.line_integrals([0, 0, 0], [1, 0.3, 0.1])
    li2 = shepp_logan_3d(radius_mm=2 * R, modified=modified, value_scale=0.02).line_integrals([0, 0, 0], [1, 0.3, 0.1])
    assert li2[0] == pytest.approx(2 * 0.02 * li[0])
    # rotation about z: the two dark ellipsoids mirror each other with +-18 degrees
    A3, A4 = ph[2].rotation, ph[3].rotation
    np.testing.assert_allclose(A3, rotation_matrix("z", -18.0).T, atol=1e-15)
    np.testing.assert_allclose(A4, rotation_matrix("z", 18.0).T, atol=1e-15)


def test_rotation_matrix():
    np.testing.assert_allclose(rotation_matrix("z", 90) @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(rotation_matrix("x", 90) @ [0, 1, 0], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(rotation_matrix("y", 90) @ [0, 0, 1], [1, 0, 0], atol=1e-15)
    with pytest.raises(ValueError):
        rotation_matrix("w", 1.0)


def test_rotation_convention_matches_leap():
    """u = A (x - c): a box long in its own x-axis, with A = Rz(90), is long along world y."""
    obj = PhantomObject(
        kind=PARALLELEPIPED, centre=[0, 0, 0], radii=[5, 1, 1], value=1.0, rotation=rotation_matrix("z", 90)
    )
    ph = Phantom([obj])
    assert ph.line_integrals([0, 0, 0], [0, 1, 0])[0] == pytest.approx(10.0)
    assert ph.line_integrals([0, 0, 0], [1, 0, 0])[0] == pytest.approx(2.0)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ball():
    return Phantom([PhantomObject(kind=ELLIPSOID, centre=[0, 0, 0], radii=[2, 2, 2], value=1.0)])


GOOD = dict(x=np.arange(4.0), y=np.arange(3.0), z=np.arange(2.0), voxel_width=1.0, voxel_height=1.0)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(x=np.zeros((2, 2))), "x.*1-D"),
        (dict(y=np.array([])), "y.*non-empty"),
        (dict(z=[0.0, np.nan]), "z.*finite"),
        (dict(x=["a"]), "x"),
        (dict(voxel_width=0.0), "voxel_width"),
        (dict(voxel_height=-1.0), "voxel_height"),
        (dict(voxel_width=np.nan), "voxel_width"),
        (dict(oversampling=0), "oversampling"),
        (dict(oversampling=-2), "oversampling"),
        (dict(oversampling=1.5), "oversampling"),
        (dict(oversampling=True), "oversampling"),
        (dict(out=np.zeros((2, 3, 4), dtype=np.float64)), "out.*float32"),
        (dict(out=np.zeros((4, 3, 2), dtype=np.float32)), r"out.*shape"),
        (dict(out=np.zeros((2, 3, 8), dtype=np.float32)[:, :, ::2]), "out.*contiguous"),
        (dict(out=np.zeros((2, 3, 4), dtype=np.float32).tolist()), "out.*ndarray"),
    ],
)
def test_voxelize_bad_input(ball, kwargs, match):
    args = dict(GOOD)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        ball.voxelize(**args)


def test_voxelize_readonly_out(ball):
    out = np.zeros((2, 3, 4), dtype=np.float32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        ball.voxelize(**GOOD, out=out)


@pytest.mark.parametrize(
    "sources, directions, match",
    [
        (np.zeros((3, 2)), np.ones((3, 3)), r"sources.*\(N, 3\)"),
        (np.zeros((3, 3)), np.ones((3, 3, 1)), r"directions.*\(N, 3\)"),
        (np.zeros((3, 3)), np.ones((2, 3)), "same number"),
        (np.full((1, 3), np.nan), np.ones((1, 3)), "sources.*finite"),
        (np.zeros((2, 3)), np.array([[1.0, 0, 0], [0, 0, 0]]), "directions.*zero.*row 1"),
        (np.zeros((1, 3), dtype=complex), np.ones((1, 3)), "sources.*real"),
    ],
)
def test_line_integrals_bad_input(ball, sources, directions, match):
    with pytest.raises(ValueError, match=match):
        ball.line_integrals(sources, directions)


def test_inputs_not_modified(ball):
    x = np.linspace(-3, 3, 7)
    y = x.astype(np.float32)
    z = np.arange(-3, 4)  # integers are fine
    copies = [a.copy() for a in (x, y, z)]
    f = ball.voxelize(x, y, z, 1.0, 1.0, oversampling=2)
    assert f.shape == (7, 7, 7)
    for a, b in zip((x, y, z), copies):
        np.testing.assert_array_equal(a, b)
    s = np.array([[0.0, 0.0, -10.0], [1.0, 0.0, 0.0]], dtype=np.float32)
    d = np.array([[0.0, 0.0, 3.0], [0.0, 1.0, 0.0]])
    s0, d0 = s.copy(), d.copy()
    li = ball.line_integrals(s, d)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(d, d0)
    np.testing.assert_allclose(li, [4.0, 2 * math.sqrt(3.0)])


def test_voxelize_paints_the_analytic_phantom():
    """voxelize(f) of the ray-tracing phantom equals building it voxel by voxel."""
    from leapctype import tomographicModels
    ct = tomographicModels()
    ct.set_conebeam(20, 32, 32, 1.0, 1.0, 15.5, 15.5, ct.setAngleArray(20, 360.0), 500.0, 1000.0)
    ct.set_default_volume()
    with pytest.raises(RuntimeError, match="no analytic phantom"):
        ct.voxelize(ct.allocate_volume())
    f = ct.allocate_volume()
    ct.set_FORBILD(f, True)
    ct.set_FORBILD(None, True)
    h = ct.voxelize(ct.allocate_volume())
    np.testing.assert_array_equal(h, f)
    assert h.max() > 0
    with pytest.raises(ValueError, match="shape"):
        ct.voxelize(np.zeros((3, 3, 3), np.float32))
