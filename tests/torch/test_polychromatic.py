"""leap.torch.PolychromaticProjector: exact gradients, the monochromatic limit, beam
hardening (Jensen, concavity, slope at zero thickness), batches, validation.

Gradient checks. The spectral part (:func:`polychromatic_log_transmission`) is pure
float64, so it is checked with gradcheck's default, tight tolerances (and
gradgradcheck). The whole module also goes through leap's projector, which computes in
float32 even for float64 input: its rounding (~|L|·6e-8) divided by the finite-difference
step must stay small, so those checks use eps = 1e-2 (rounding error ~1e-5, truncation
error of the central difference ~eps²·|p'''| ≲ 1e-5 here) and atol = rtol = 1e-3,
which any wrong gradient (a missing energy, material or chain factor) exceeds by far.
"""
import copy

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import leap.torch.ops as leap_ops  # noqa: E402
from leap.torch import PolychromaticProjector, Projector  # noqa: E402
from leap.torch.polychromatic import polychromatic_log_transmission  # noqa: E402

MODULE_GRADCHECK = dict(eps=1e-2, atol=1e-3, rtol=1e-3)

# Illustrative mass attenuation / 10 (1/mm per g/cm³) of water and cortical bone at
# 30, 40, 50, 70, 100 keV, and a tube-like spectrum over those bins.
MU = [[0.3756, 0.2683, 0.2269, 0.1929, 0.1707],
      [1.331, 0.6655, 0.4242, 0.2450, 0.1855]]
SPECTRUM = [0.6, 1.0, 0.9, 0.5, 0.2]


pytestmark = pytest.mark.usefixtures("one_numba_thread")


def make_projector(kind="cone"):
    """A tiny geometry: volume (numZ, numY, numX) = (4, 5, 6), 3 views of 4 × 7 pixels."""
    m = Projector(forward_project=True)
    ct = m.leapct
    if kind == "parallel":
        m.set_parallelbeam(3, 4, 7, 1.0, 1.0, 1.5, 3.2, ct.setAngleArray(3, 180.0))
    else:
        m.set_conebeam(3, 4, 7, 1.0, 1.0, 1.2, 3.2, ct.setAngleArray(3, 360.0), 20.0, 40.0)
    m.set_volume(6, 5, 4, voxelWidth=1.0)
    return m


def tensors(dtype=torch.float64, n_energies=5):
    mu = torch.tensor(MU, dtype=dtype)[:, :n_energies]
    s = torch.tensor(SPECTRUM, dtype=dtype)[:n_energies]
    return mu, s


def densities(batch=2, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    rho = torch.rand(batch, 2, 4, 5, 6, generator=g, dtype=dtype)
    rho[:, 0] += 0.5          # water-like
    rho[:, 1] *= 1.9          # bone-like
    return rho


# --------------------------------------------------------------- gradients
def test_gradcheck_spectral_part_float64():
    """The custom backward of the chunked log-sum-exp against finite differences, tight."""
    mu, s = tensors()
    g = torch.Generator().manual_seed(1)
    L = (8.0 * torch.rand(2, 2, 3, 2, 3, generator=g, dtype=torch.float64)).requires_grad_()
    mu.requires_grad_()
    s.requires_grad_()
    assert torch.autograd.gradcheck(polychromatic_log_transmission, (L, mu, s))
    assert torch.autograd.gradgradcheck(polychromatic_log_transmission, (L, mu, s))


@pytest.mark.parametrize("kind", ["parallel", "cone"])
def test_gradcheck_module_rho_spectrum_mu(kind):
    proj = make_projector(kind)
    mu, s = tensors()
    poly = PolychromaticProjector(proj, mu, s)
    rho = densities(batch=2).requires_grad_()
    mu.requires_grad_()
    s.requires_grad_()
    assert torch.autograd.gradcheck(lambda r, m, w: poly(r, mu=m, spectrum=w), (rho, mu, s),
                                     **MODULE_GRADCHECK)


def test_learnable_parameter_gradients():
    """Learnable log-spectrum and mu: their .grad equals the finite differences of the
    loss (gradcheck on a function of the parameters' values)."""
    proj = make_projector()
    mu, s = tensors(n_energies=4)
    poly = PolychromaticProjector(proj, mu, s, mu_learnable=True, spectrum_learnable=True)
    assert {n for n, _ in poly.named_parameters()} == {"mu", "log_spectrum"}
    rho = densities(batch=1)
    L = poly.line_integrals(rho).detach()

    def f(mu_v, logs_v):
        with torch.no_grad():
            poly.mu.copy_(mu_v)
            poly.log_spectrum.copy_(logs_v)
        return poly.transmission(L)

    # analytic gradient through the parameters, vs finite differences of f
    poly.zero_grad()
    w = torch.randn(*L.shape[:1], *L.shape[2:], dtype=torch.float64,
                    generator=torch.Generator().manual_seed(3))
    (poly(rho) * w).sum().backward()
    grads = poly.mu.grad.clone(), poly.log_spectrum.grad.clone()
    base = poly.mu.detach().clone(), poly.log_spectrum.detach().clone()
    for which, g in enumerate(grads):
        num = torch.zeros_like(g)
        for i in range(g.numel()):
            for sign in (1, -1):
                v = [base[0].clone(), base[1].clone()]
                v[which].view(-1)[i] += sign * 1e-6
                num.view(-1)[i] += sign * (f(*v) * w).sum() / 2e-6
        torch.testing.assert_close(g, num, rtol=1e-6, atol=1e-7)
    # softmax normalisation: a constant shift of the log weights changes nothing
    assert abs(float(grads[1].sum())) < 1e-12


# --------------------------------------------------------- monochromatic limit
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_one_energy_equals_monochromatic_projection(dtype):
    proj = make_projector()
    mu, s = tensors(dtype, n_energies=5)
    mu1, s1 = mu[:, 2:3].contiguous(), s[2:3] * 7.0
    poly = PolychromaticProjector(proj, mu1, s1)
    rho = densities(batch=3, dtype=dtype)
    p = poly(rho)
    L = proj(rho)                                       # (3, 2, angles, rows, cols)
    mono = torch.einsum("m,bmarc->barc", mu1[:, 0], L)
    assert p.dtype == dtype and p.shape == (3, *proj.get_projection_dim())
    assert float(mono.max()) > 1.0          # a non-trivial projection (some rays miss)
    rtol = 1e-6 if dtype == torch.float32 else 1e-14
    torch.testing.assert_close(p, mono, rtol=rtol, atol=0)
    # and per material, as P applied to each map alone
    mono_sum = sum(mu1[m, 0] * proj(rho[:, m].contiguous()) for m in range(2))
    torch.testing.assert_close(p, mono_sum, rtol=4 * rtol, atol=0)


# -------------------------------------------------------------------- physics
def test_beam_hardening_jensen_concavity_and_slope():
    """One material: p(t) for path lengths t is concave, increasing, below μ̄ t (Jensen)
    and its slope at t → 0 is μ̄, the spectrum-weighted mean μ."""
    mu, s = tensors()
    mu_w = mu[:1]                                        # water
    mean = float(mu_w[0] @ (s / s.sum()))
    t = torch.linspace(0.0, 300.0, 301, dtype=torch.float64).reshape(1, 1, 1, 1, -1)
    p = polychromatic_log_transmission(t, mu_w, s).flatten()
    tt = t.flatten()
    assert p[0] == 0
    assert torch.all(p[1:] < mean * tt[1:])                      # beam hardening
    assert torch.all(torch.diff(p) > 0)                           # monotone
    assert torch.all(torch.diff(p, 2) < 0)                        # strictly concave
    assert float(p[-1]) > float(mu_w.min()) * 300 * 0.999         # bounded by the hardest μ
    # slope at zero: autograd and finite difference
    t0 = torch.zeros(1, 1, 1, 1, 1, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(polychromatic_log_transmission(t0, mu_w, s).sum(), t0)
    assert float(slope) == pytest.approx(mean, rel=1e-14)
    h = torch.full_like(t0, 1e-7)
    fd = float(polychromatic_log_transmission(h, mu_w, s)) / 1e-7
    assert fd == pytest.approx(mean, rel=1e-6)


def test_beam_hardening_through_the_projector():
    """The same on density maps: p(c·ρ) ≤ c · Σ μ̄_m P ρ_m, concave in c, slope μ̄ P ρ at 0."""
    proj = make_projector()
    mu, s = tensors()
    poly = PolychromaticProjector(proj, mu, s)
    rho = densities(batch=1)
    bound = torch.einsum("m,bmarc->barc", poly.mean_mu, proj(rho))
    cs = [0.5, 1.0, 1.5, 2.0, 2.5]
    ps = torch.stack([poly(c * rho) for c in cs])
    hit = bound > 0.05
    for c, p in zip(cs, ps):
        assert torch.all(p[hit] < c * bound[hit])
    assert torch.all(torch.diff(ps, 2, dim=0)[:, hit] < 0)
    # gradient at ρ = 0 is μ̄_m Pᵀ w for each material: the monochromatic one at mean μ
    zero = torch.zeros_like(rho, requires_grad=True)
    w = torch.rand(1, *proj.get_projection_dim(), dtype=torch.float64,
                   generator=torch.Generator().manual_seed(5))
    (g,) = torch.autograd.grad((poly(zero) * w).sum(), zero)
    vol = torch.zeros_like(rho[:, 0], requires_grad=True)
    (bp,) = torch.autograd.grad((proj(vol) * w).sum(), vol)
    # (P computes in float32: μ̄·w is rounded before the back-projection, w alone here)
    torch.testing.assert_close(g, poly.mean_mu[None, :, None, None, None] * bp[:, None],
                               rtol=1e-6, atol=1e-12)


def test_thick_objects_are_finite_and_stable():
    """Transmission far below float range: the log-sum-exp stays finite and exact."""
    mu, s = tensors(torch.float32)
    L = torch.tensor([0.0, 1e3, 1e4, 1e5], dtype=torch.float32).reshape(1, 1, 1, 1, 4)
    L = torch.cat([L, torch.zeros_like(L)], 1).requires_grad_()
    p = polychromatic_log_transmission(L, mu, s)
    # at huge thickness only the least attenuating bin survives: p ≈ μ_min L − log w_min
    w = s / s.sum()
    k = int(torch.argmin(mu[0]))
    expected = float(mu[0, k]) * 1e5 - float(torch.log(w[k]))
    assert torch.isfinite(p).all()
    assert float(p.detach().flatten()[-1]) == pytest.approx(expected, rel=1e-6)
    p.sum().backward()
    assert torch.isfinite(L.grad).all()
    assert float(L.grad.flatten()[3]) == pytest.approx(float(mu[0, k]), rel=1e-5)


def test_zero_weight_bins():
    """An empty bin changes nothing, and its gradient is finite and correct."""
    mu, s = tensors()
    L = (5.0 * torch.rand(1, 2, 2, 2, 3, dtype=torch.float64,
                          generator=torch.Generator().manual_seed(2)))
    s0 = s.clone()
    s0[1] = 0.0
    keep = [0, 2, 3, 4]
    p0 = polychromatic_log_transmission(L, mu, s0)
    torch.testing.assert_close(p0, polychromatic_log_transmission(L, mu[:, keep], s[keep]),
                               rtol=1e-14, atol=0)
    s0.requires_grad_()
    p0 = polychromatic_log_transmission(L, mu, s0)
    (g,) = torch.autograd.grad(p0.sum(), s0)
    assert torch.isfinite(g).all()
    # one-sided difference at the boundary s_1 = 0 (p is smooth in s_1 ≥ 0)
    h = 1e-7
    s1 = s0.detach().clone()
    s1[1] = h
    fd = (polychromatic_log_transmission(L, mu, s1).sum() - p0.detach().sum()) / h
    assert float(g[1]) == pytest.approx(float(fd), rel=1e-5)
    # the learnable form keeps an empty bin empty: −inf log weight, zero gradient
    poly = PolychromaticProjector(make_projector(), mu, s0.detach(), spectrum_learnable=True)
    assert poly.log_spectrum[1] == -float("inf") and poly.spectrum[1] == 0
    pl = poly.transmission(L)
    torch.testing.assert_close(pl, p0.detach(), rtol=1e-14, atol=0)
    pl.sum().backward()
    assert torch.isfinite(poly.log_spectrum.grad).all() and poly.log_spectrum.grad[1] == 0


def test_chunked_energies_match_one_chunk(monkeypatch):
    """Energies processed one at a time give the same values and gradients."""
    mu, s = tensors()
    L = 3.0 * torch.rand(2, 2, 2, 3, 3, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(4))

    def run():
        args = [t.clone().requires_grad_() for t in (L, mu, s)]
        p = polychromatic_log_transmission(*args)
        grads = torch.autograd.grad((p * p).sum(), args)
        return (p, *grads)

    whole = run()
    monkeypatch.setattr(leap_ops, "CHUNK_ELEMENTS", 1)
    chunked = run()
    for a, b in zip(whole, chunked):
        torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-15)


# ------------------------------------------------------- batches, construction
def test_batch_materials_and_single_sample():
    proj = make_projector()
    mu, s = tensors(torch.float32)
    poly = PolychromaticProjector(proj, mu, s)
    rho = densities(batch=3, dtype=torch.float32)
    p = poly(rho)
    assert p.shape == (3, 3, 4, 7) and p.dtype == torch.float32
    for b in range(3):
        torch.testing.assert_close(poly(rho[b]), p[b], rtol=1e-6, atol=1e-7)
    # materials matter: swapping water and bone changes the result
    assert not torch.allclose(poly(rho.flip(1)), p)
    # float64 input gives float64 output, close to the float32 one
    p64 = poly(rho.double())
    assert p64.dtype == torch.float64
    torch.testing.assert_close(p64.float(), p, rtol=1e-5, atol=1e-6)
    # non-contiguous input is accepted
    torch.testing.assert_close(poly(rho.transpose(3, 4).contiguous().transpose(3, 4)), p)


def test_from_ctsystem_equals_from_projector():
    proj = make_projector("parallel")
    mu, s = tensors()
    a = PolychromaticProjector(proj, mu, s)
    b = PolychromaticProjector(proj.leapct.system, mu, s)
    assert a.projector is proj
    rho = densities(batch=2).requires_grad_()
    pa, pb = a(rho), b(rho)
    torch.testing.assert_close(pa, pb, rtol=0, atol=0)
    ga = torch.autograd.grad(pa.sum(), rho)[0]
    gb = torch.autograd.grad(pb.sum(), rho)[0]
    torch.testing.assert_close(ga, gb, rtol=0, atol=0)
    # the exposed monochromatic projector of the CTSystem form projects
    torch.testing.assert_close(b.projector(rho[:, 0].contiguous()), proj(rho[:, 0].contiguous()), rtol=0, atol=0)
    # a Projector is used live: later geometry changes reach the module
    proj.set_volume(6, 5, 4, voxelWidth=0.5)
    assert not torch.allclose(a(rho), pa)
    # copies and state
    c = copy.deepcopy(b)
    torch.testing.assert_close(c(rho), pb)
    assert set(b.state_dict()) == {"mu", "spectrum_weights"}


def test_learnable_spectrum_calibration_step():
    """A few Adam steps on the log-spectrum reduce a spectral mismatch."""
    proj = make_projector()
    mu, s_true = tensors()
    rho = densities(batch=1)
    target = PolychromaticProjector(proj, mu, s_true)(rho).detach()
    poly = PolychromaticProjector(proj, mu, torch.ones(5, dtype=torch.float64),
                                  spectrum_learnable=True)
    L = poly.line_integrals(rho).detach()
    opt = torch.optim.Adam(poly.parameters(), lr=0.1)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((poly.transmission(L) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.2 * losses[0]
    torch.testing.assert_close(poly.spectrum.sum(), torch.tensor(1.0, dtype=torch.float64))


# ------------------------------------------------------------------ validation
@pytest.mark.parametrize("kwargs, match", [
    (dict(mu=[[0.1, 0.2]]), "mu has 2 energies"),
    (dict(mu=[0.1, 0.2, 0.3]), "mu must have shape"),
    (dict(mu=[[0.1, float("nan"), 0.3]]), "mu has NaN"),
    (dict(mu=[[0.1, -0.2, 0.3]]), "mu has negative"),
    (dict(spectrum=[1.0, -1.0, 1.0]), "spectrum has negative"),
    (dict(spectrum=[1.0, float("nan"), 1.0]), "spectrum has NaN"),
    (dict(spectrum=[0.0, 0.0, 0.0]), "spectrum has no positive"),
    (dict(spectrum=[[1.0, 1.0, 1.0]]), "spectrum must have shape"),
])
def test_bad_construction_arguments(kwargs, match):
    args = dict(mu=[[0.1, 0.2, 0.3]], spectrum=[1.0, 1.0, 1.0])
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        PolychromaticProjector(make_projector(), **args)


def test_bad_call_arguments():
    proj = make_projector()
    mu, s = tensors()
    poly = PolychromaticProjector(proj, mu, s)
    rho = densities(batch=1)
    with pytest.raises(ValueError, match="rho must have shape"):
        poly(rho[:, :1])                                  # one material, module has two
    with pytest.raises(ValueError, match="rho must have shape"):
        poly(rho[..., :5])
    with pytest.raises(ValueError, match="rho must have shape"):
        poly(rho[0, 0])
    with pytest.raises(TypeError, match="rho must be float32 or float64"):
        poly(rho.to(torch.float16))
    with pytest.raises(TypeError, match="rho must be a torch.Tensor"):
        poly(rho.numpy())
    with pytest.raises(ValueError, match="mu has 3 materials"):
        poly(rho, mu=torch.ones(3, 5, dtype=torch.float64))
    with pytest.raises(ValueError, match="mu has 4 energies"):
        poly(rho, mu=torch.ones(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="spectrum has 4 energies"):
        poly(rho, spectrum=torch.ones(4, dtype=torch.float64))
    with pytest.raises(ValueError, match="spectrum has negative"):
        poly(rho, spectrum=-s)
    with pytest.raises(ValueError, match="mu has NaN"):
        poly(rho, mu=mu * float("nan"))
    with pytest.raises(ValueError, match="line_integrals has 2"):
        polychromatic_log_transmission(torch.ones(1, 2, 1, 1, 1, dtype=torch.float64),
                                       mu[:1], s)
    with pytest.raises(ValueError, match="line_integrals must have shape"):
        polychromatic_log_transmission(torch.ones(2, 3, dtype=torch.float64), mu, s)


def test_bad_projector():
    mu, s = tensors()
    with pytest.raises(ValueError, match="projector must project"):
        PolychromaticProjector(Projector(forward_project=False), mu, s)
    with pytest.raises(TypeError, match="projector must be"):
        PolychromaticProjector(make_projector().leapct, mu, s)
    with pytest.raises(TypeError, match="projector must be"):
        PolychromaticProjector(np.eye(3), mu, s)
