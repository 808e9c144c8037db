"""Random leap geometries through ASTRA's, TIGRE's and CIL's forms and back: the same
rays to float rounding (compared as per-view vectors, so angles that come back
unwrapped from another turn still count as the same view)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from leap.geometry import ConeBeam, FanBeam, ModularBeam, ParallelBeam
from leap.interop import from_astra, from_cil, from_tigre, to_astra, to_cil, to_tigre
from leap.interop._vectors import parallel_vectors
from leap.system import CTSystem
from strategies import angles, cone_cases, detectors, modular_cases, parallel_cases, volumes

SETTINGS = settings(max_examples=25, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def vectors(g):
    """(first, centers, u, v) per view: source (divergent) or ray direction (parallel)."""
    if isinstance(g, ParallelBeam):
        return parallel_vectors(g)
    if isinstance(g, FanBeam):
        g = ConeBeam(detector=g.detector, angles=g.angles, sod=g.sod, sdd=g.sdd, tau=g.tau)
    m = g.to_modular()
    d = m.detector
    return (m.source_positions, m.module_centers, m.col_vectors * d.pixel_width,
            m.row_vectors * d.pixel_height)


def assert_same_rays(a, b, vol_a, vol_b, in_plane=False):
    """The same rays relative to each geometry's volume (a peer may move the volume and
    the scan together, e.g. TIGRE's helix as a moving image)."""
    assert a.num_angles == b.num_angles
    assert (a.detector.num_rows, a.detector.num_cols) == (b.detector.num_rows, b.detector.num_cols)
    va, vb = list(vectors(a)), list(vectors(b))
    for vv, vol in ((va, vol_a), (vb, vol_b)):
        centre = np.array([vol.offset_x, vol.offset_y, vol.offset_z])
        vv[1] = vv[1] - centre
        if not isinstance(a, ParallelBeam):
            vv[0] = vv[0] - centre
    if in_plane:                                  # 2-D forms keep no row height
        va, vb = va[:3], vb[:3]
    scale = max(1.0, max(float(np.max(np.abs(x))) for x in va))
    for x, y in zip(va, vb):
        k = 2 if in_plane else 3
        np.testing.assert_allclose(y[:, :k], x[:, :k], atol=1e-9 * scale)


@st.composite
def fan_2d_cases(draw):
    det = draw(detectors(rows=1))
    sod = draw(st.floats(60, 200))
    geo = FanBeam(detector=det, angles=draw(angles()), sod=sod, sdd=sod + draw(st.floats(10, 200)),
                  tau=draw(st.floats(-5, 5)))
    vol = draw(volumes()).with_changes(num_z=1, offset_z=-det.center_row * det.pixel_height)
    return geo, vol


@st.composite
def flat_cone_cases(draw):
    geo, vol = draw(cone_cases())
    return (geo.with_changes(detector=geo.detector.with_changes(curved=False)), vol)


CASES = {"parallel": parallel_cases(), "fan": fan_2d_cases(), "cone": flat_cone_cases(),
         "modular": modular_cases()}


@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.parametrize("peer", ["astra", "tigre", "cil"])
def test_round_trip_keeps_the_rays(kind, peer):
    if peer == "tigre" and kind == "fan":
        pytest.skip("TIGRE has no fan beam")

    @SETTINGS
    @given(CASES[kind])
    def run(case):
        geo, vol = case
        system = CTSystem(geometry=geo, volume=vol)
        if peer == "astra":
            back = from_astra(*to_astra(system, dims=2 if kind == "fan" else 3))
        elif peer == "tigre":
            back = from_tigre(*to_tigre(system))
        else:
            c = to_cil(system)
            back = from_cil(c, c.image)
        two_d = kind == "fan" or (kind == "parallel" and peer == "cil"
                                  and geo.detector.num_rows == 1 and vol.num_z == 1)
        assert_same_rays(geo, back.geometry, vol, back.volume, in_plane=two_d)
        v = back.volume
        assert np.allclose([v.num_x, v.num_y, v.voxel_width, v.offset_x, v.offset_y],
                           [vol.num_x, vol.num_y, vol.voxel_width, vol.offset_x, vol.offset_y],
                           rtol=1e-12, atol=1e-12)
        if not two_d:
            assert np.allclose([v.num_z, v.voxel_height],
                               [vol.num_z, vol.voxel_height], rtol=1e-12)
        if isinstance(geo, ModularBeam):
            assert isinstance(back.geometry, ModularBeam)

    run()
