"""Heel effect: transfer functions chosen per ray by the anode take-off angle
(leap.physics.beam_hardening.take_off_angles / apply_heel_effect_table and the LEAP
facade's beam_hardening_heel_effect)."""
import numpy as np
import pytest

from leap.compat import tomographicModels
from leap.physics.beam_hardening import apply_heel_effect_table, take_off_angles


def _normal(deg):
    """An anode tilted so that the central ray leaves it at ``deg`` degrees, the heel
    towards −z (rows)."""
    t = np.radians(deg)
    return np.array([0.0, np.sin(t), np.cos(t)])


def test_take_off_angles():
    n = _normal(12.0)
    assert take_off_angles(0.0, 0.0, n) == pytest.approx(12.0)
    v = np.linspace(-0.1, 0.1, 5)
    a = take_off_angles(0.0, v, n)
    assert np.all(np.diff(a) > 0)                         # towards +z the angle opens
    assert a[4] == pytest.approx(12.0 + np.degrees(np.arctan(0.1)), abs=1e-9)
    assert take_off_angles(0.3, 0.0, n) < 12.0            # off-axis columns: a bit less
    with pytest.raises(ValueError, match="anode_normal"):
        take_off_angles(0.0, 0.0, [0.0, 0.0])


def test_apply_table_interpolates_angles_and_samples():
    angles = np.array([6.0, 10.0, 14.0])
    T = 0.5
    x = np.arange(9) * T
    table = np.stack([c * x for c in (1.0, 1.2, 1.6)])   # row a: p ↦ c_a·p
    p = np.array([0.0, 1.25, 3.0, 5.0, -0.2, 2.0, 2.0, 2.0], dtype=np.float32)
    a = np.array([10.0, 8.0, 12.0, 10.0, 10.0, 2.0, 20.0, 14.0])
    got = apply_heel_effect_table(p, a, table, angles, T)
    want = np.array([0.0, 1.25 * 1.1, 3.0 * 1.4, 5.0 * 1.2, 0.0, 2.0, 3.2, 3.2])
    np.testing.assert_allclose(got, want, rtol=1e-6)      # 5.0 > last sample: extrapolated
    assert got.dtype == np.float32
    assert np.isnan(apply_heel_effect_table(np.array([np.nan], np.float32), 10.0, table,
                                            angles, T))[0]
    with pytest.raises(ValueError, match="table_angles"):
        apply_heel_effect_table(p, a, table, angles[::-1], T)
    with pytest.raises(ValueError, match="sample_rate"):
        apply_heel_effect_table(p, a, table, angles, 0.0)


@pytest.mark.parametrize("curved", [False, True])
def test_facade_heel_effect_on_cone_beams(curved):
    ct = tomographicModels()
    ct.set_conebeam(4, 6, 8, 2.0, 2.0, 2.5, 3.5, ct.setAngleArray(4, 360.0), 400.0, 600.0)
    if curved:
        ct.set_curvedDetector()
    g = np.full(ct.get_projection_dim(), 2.0, dtype=np.float32)
    angles = np.array([8.0, 12.0, 16.0])
    x = np.arange(11) * 0.5
    table = np.stack([c * x for c in (1.0, 1.1, 1.3)]).astype(np.float32)
    out = ct.beam_hardening_heel_effect(g, _normal(12.0), table, angles, 0.5)
    assert out is g
    # Rows above the centre leave the anode at larger angles: a larger factor.
    col = g[0, :, 4]
    assert np.all(np.diff(col) > 0) and col[2] < 2.0 * 1.1 < col[3]
    v = (np.arange(6) - 2.5) * 2.0 / 600.0
    d = ct.get_centerCol()
    u0 = (4 - d) * 2.0
    if curved:
        u0 = 600.0 * np.tan((4 - d) * np.arctan(2.0 / 600.0))
    want = 2.0 * np.interp(take_off_angles(u0 / 600.0, v, _normal(12.0)), angles,
                           [1.0, 1.1, 1.3])
    np.testing.assert_allclose(col, want, rtol=1e-6)
    ct.set_fanbeam(4, 1, 8, 2.0, 2.0, 0.0, 3.5, ct.setAngleArray(4, 360.0), 400.0, 600.0)
    with pytest.raises(ValueError, match="cone- or modular-beam"):
        ct.beam_hardening_heel_effect(np.zeros((4, 1, 8), np.float32), _normal(12.0), table,
                                      angles, 0.5)
