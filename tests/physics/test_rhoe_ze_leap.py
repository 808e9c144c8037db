"""The LEAP facade's convertToRhoeZe against LEAP's per-voxel algorithm (its
``tomographicModels::convertToRhoeZe``: bracket the ratio μ_L/μ_H between the ratios
σ_e(Z, E_L)/σ_e(Z, E_H) of consecutive elements, interpolate Ze linearly in the ratio
where that curve is convex and else where both cross sections are linear in Z, then
ρe = (σ_L μ_L + σ_H μ_H)/(σ_L² + σ_H²) with σ at Ze), written out here as a scalar loop."""
import math

import numpy as np
import pytest

xraylib = pytest.importorskip("xraylib")

from leap.compat import tomographicModels  # noqa: E402

AVOGADRO = 6.02214076e23


def _sigma_e(energy_kev):
    """Per-electron cross sections (mm²) of Z = 1…100 at one energy (xraylib stops at
    Z = 98: the last two repeat it, 1 % and 2 % larger)."""
    s = [xraylib.CS_Total(z, energy_kev) * xraylib.AtomicWeight(z) / (z * AVOGADRO) * 100.0
         for z in range(1, 99)]
    return np.array(s + [s[-1] * 1.01, s[-1] * 1.02])


def _leap_voxel(mu_l, mu_h, sl, sh):
    if mu_l <= 0 or mu_h <= 0:
        return 7.31231243248, 0.0
    r = mu_l / mu_h
    prev = r - sl[0] / sh[0]
    z = 2
    while z <= 100:
        cur = r - sl[z - 1] / sh[z - 1]
        if prev * cur <= 0 or abs(prev) < abs(cur):
            break
        prev = cur
        z += 1
    z = min(98, max(1, z - 1))
    R = sl / sh
    if z == 1 or 0.5 * (R[z - 2] + R[z]) > R[z - 1]:
        d = (r - R[z]) / (R[z - 1] - R[z])
    else:
        d = (r * sh[z] - sl[z]) / (sl[z - 1] - sl[z] - r * (sh[z - 1] - sh[z]))
    ze = z + 1 - min(1.0, max(0.0, d))
    lo = int(math.floor(ze))
    w = ze - lo
    s_l = (1 - w) * sl[lo - 1] + w * sl[min(lo, 99)]
    s_h = (1 - w) * sh[lo - 1] + w * sh[min(lo, 99)]
    return ze, (s_l * mu_l + s_h * mu_h) / (s_l * s_l + s_h * s_h)


def test_convert_to_rhoe_ze_follows_leap():
    sl, sh = _sigma_e(60.0), _sigma_e(100.0)
    rng = np.random.default_rng(0)
    # Ratios of light to medium elements (water 7.4 … calcium 20), plus air and zeros.
    z_true = rng.uniform(1.5, 20.0, size=(3, 5, 7))
    rho = rng.uniform(0.1, 2.0, size=z_true.shape)
    k = np.floor(z_true).astype(int) - 1
    w = z_true - np.floor(z_true)
    f_l = (rho * ((1 - w) * sl[k] + w * sl[k + 1])).astype(np.float32)
    f_h = (rho * ((1 - w) * sh[k] + w * sh[k + 1])).astype(np.float32)
    f_l[0, 0, :2] = 0.0
    f_h[0, 1, 0] = -1.0
    want = np.array([_leap_voxel(float(a), float(b), sl, sh)
                     for a, b in zip(f_l.ravel(), f_h.ravel())])
    ct = tomographicModels()
    a, b = f_l.copy(), f_h.copy()
    ze, rhoe = ct.convertToRhoeZe(a, b, sl.astype(np.float32), sh.astype(np.float32))
    assert ze is a and rhoe is b                      # in place, as LEAP
    np.testing.assert_allclose(ze.ravel(), want[:, 0], rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(rhoe.ravel(), want[:, 1], rtol=1e-4, atol=1e-30)
    assert ze[0, 0, 0] == np.float32(7.31231243248) and rhoe[0, 0, 0] == 0.0
    with pytest.raises(ValueError, match="f_H must end in shape"):
        ct.convertToRhoeZe(f_l, f_h[:, :2], sl, sh)
