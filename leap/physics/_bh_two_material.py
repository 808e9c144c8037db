r"""Two-material beam-hardening correction (re-exported by
:mod:`leap.physics.beam_hardening`).

With :math:`a_i = \mu_i(E_\text{ref}) L_i` the monochromatic attenuation of material i
at the reference energy and :math:`\hat\sigma_i(E) = \mu_i(E)/\mu_i(E_\text{ref})`,

.. math:: p(a_1, a_2) = -\log \sum_E w(E)\, e^{-a_1\hat\sigma_1(E) - a_2\hat\sigma_2(E)}.

:class:`TwoMaterialTable` inverts it for :math:`a_1` given the measured ``p`` and
:math:`a_2` (the forward projection of the dense material's map), on a uniform
(:math:`a_2`, p) grid; :func:`two_material_bhc` iterates reconstruct → segment →
project → correct (Joseph and Spital 1978; Kyriakou et al. 2010; LEAP demo d18). LEAP's
own table (``setTwoMaterialBHClookupTable``) is indexed by the fraction
:math:`a_2/(a_1+a_2)` instead: :meth:`TwoMaterialTable.leap_lut`.
"""
from __future__ import annotations

import numpy as np

from ..preprocessing._common import array_module
from ._bh_common import (CHUNK, bilerp, check_energies, curve, energy_where,
                         float_data, interp_energy, invert_monotone, log_transmission,
                         log_weights, map_dask, poly_attenuation, positive_number,
                         spectrum_weights)


def _invert_rows(u, logw, s_lo, p_grid, dense):
    """For each row r, samples at ``p_grid`` of the inverse of the increasing
    ``s ↦ −log Σ_E exp(logw[r] − s u[r])`` on s >= s_lo[r]; (R, len(p_grid))."""
    p_max = p_grid[-1]
    out = np.empty((u.shape[0], p_grid.size))
    for r in range(u.shape[0]):
        ur, lw = u[r][None], logw[r][None]

        def P(s):
            return log_transmission(s[None], ur, lw)

        q = np.exp(lw[0] - lw[0].max())
        step = p_max / float((q / q.sum()) @ u[r])
        for _ in range(200):
            if P(np.array([s_lo[r] + step]))[0][0, 0] >= p_max:
                break
            step *= 2.0
        s = np.linspace(s_lo[r], s_lo[r] + step, dense)
        row = invert_monotone(s, P(s)[0][0], p_grid)
        for _ in range(2):                      # Newton steps at the samples
            p1, dp = P(row)
            row = row - (p1[0] - p_grid) / dp[0, 0]
        out[r] = row
    return out


class TwoMaterialTable:
    r"""Two-material (e.g. water + titanium) beam-hardening correction table.

    Parameters
    ----------
    energies : (E,) keV
    spectrum : (E,)
        System spectral response per energy bin (detector response folded in).
    mu_1, mu_2 : (E,) 1/mm
        Linear attenuation of the base (low-Z, e.g. water) and the dense material; > 0
        where the spectrum is.
    reference_energy : float, optional
        keV of the monochromatic output. Default: the effective energy of material 1 at
        zero thickness (the energy where μ₁ equals its spectral mean), so that with
        ``a2 = 0`` the table is the single-material water correction.
    mu_ref : (float, float), optional
        (μ₁(E_ref), μ₂(E_ref)) in 1/mm given directly.
    max_attenuation : float
        Largest polychromatic attenuation tabulated (default 12).
    max_second : float, optional
        Largest ``a2`` tabulated (default ``max_attenuation``).
    num_samples, num_second : int
        Grid sizes along p and along a2.

    Notes
    -----
    :meth:`correct` interpolates bilinearly in (√a2, p) (rows uniform in √a2, denser
    near a2 = 0 where the dense material hardens the beam fastest); beyond the grid
    (``p`` outside [0, max_attenuation], ``a2`` above max_second) it extrapolates
    linearly from the edge cells; ``a2 < 0`` is taken as 0. Where the dense-material estimate exceeds what ``p`` allows, ``a1``
    comes out negative (tabulated down to ``a1 = −a2``). NaN gives NaN.
    """

    def __init__(self, energies, spectrum, mu_1, mu_2, *, reference_energy=None, mu_ref=None,
                 max_attenuation=12.0, max_second=None, num_samples=1025, num_second=129,
                 _dense=2049):
        e = check_energies(energies)
        w = spectrum_weights("spectrum", spectrum, e.size)
        m1 = curve("mu_1", mu_1, e.size)
        m2 = curve("mu_2", mu_2, e.size)
        for name, m in (("mu_1", m1), ("mu_2", m2)):
            if np.any(m[w > 0] <= 0):
                raise ValueError(f"{name} must be > 0 at every energy where the spectrum is")
        self.max_attenuation = positive_number("max_attenuation", max_attenuation)
        self.max_second = (self.max_attenuation if max_second is None
                           else positive_number("max_second", max_second))
        if mu_ref is not None:
            r = np.asarray(mu_ref, dtype=np.float64).ravel()
            if r.size != 2:
                raise ValueError(f"mu_ref must be a pair (mu_1, mu_2) in 1/mm, got {mu_ref!r}")
            self.mu_ref = (positive_number("mu_ref[0]", r[0]), positive_number("mu_ref[1]", r[1]))
            self.reference_energy = (None if reference_energy is None else
                                     positive_number("reference_energy", reference_energy))
        else:
            if reference_energy is None:
                reference_energy = energy_where(e, m1, float(w @ m1), float(w @ e))
                if reference_energy is None:
                    reference_energy = float(w @ e)
            self.reference_energy = float(reference_energy)
            self.mu_ref = tuple(float(interp_energy("reference_energy", e, m, reference_energy))
                                for m in (m1, m2))
        self._w = w
        self._sigma = np.stack([m1 / self.mu_ref[0], m2 / self.mu_ref[1]])
        ns, n2 = int(num_samples), int(num_second)
        if ns < 3 or n2 < 2:
            raise ValueError("num_samples must be >= 3 and num_second >= 2")
        self._dense = int(_dense)
        lw = log_weights(w)
        # Rows uniform in sqrt(a2): the dense material removes the soft part of the
        # spectrum within its first fraction of a mm, so a1(p, a2) bends most near a2 = 0.
        root = np.linspace(0.0, np.sqrt(self.max_second), n2)
        a2 = root * root
        pg = np.linspace(0.0, self.max_attenuation, ns)
        rows_lw = lw[None, :] - a2[:, None] * self._sigma[1][None, :]
        u = np.broadcast_to(self._sigma[0], rows_lw.shape)
        self._du, self._dp = root[1], pg[1]
        self._a1 = _invert_rows(u, rows_lw, -a2, pg, self._dense)

    def __repr__(self):
        return (f"TwoMaterialTable(mu_ref=({self.mu_ref[0]:.6g}, {self.mu_ref[1]:.6g})/mm, "
                f"E_ref={self.reference_energy}, grid {self._a1.shape})")

    def poly(self, a1, a2):
        """Polychromatic attenuation of monochromatic attenuations ``a1``, ``a2``
        (μᵢ(E_ref)·Lᵢ, arrays broadcast together; exact spectral sum, not the table):
        simulates two-material beam hardening. Float64."""
        res = map_dask(lambda x, y: self.poly(x, y), a1, a2)
        if res is not None:
            return res
        xp = array_module(a1, a2)
        x, y = xp.broadcast_arrays(float_data("a1", a1, xp, finite=True),
                                   float_data("a2", a2, xp, finite=True))
        stack = xp.stack([x.reshape(-1), y.reshape(-1)]).astype(np.float64)
        return poly_attenuation(stack, self._sigma, self._w, xp).reshape(x.shape)

    def correct(self, p, a2=0.0, *, refine=0, out=None):
        """Monochromatic attenuation ``a1 + a2`` at the reference energy of rays with
        polychromatic attenuation ``p`` whose dense-material part is ``a2`` (μ₂(E_ref)·L₂,
        e.g. the forward projection of the segmented dense material in 1/mm); ``a2 = 0``
        is single-material (water) BHC. Float32 (float64 for float64 ``p``).

        The table's error is below ~2e-3 (absolute, in attenuation) at the default grid,
        largest for traces of the dense material (a2 ≲ 0.05, where it bends the curves
        most); ``refine`` Newton steps of the exact model (each about one spectral sum
        per ray) bring it to ~1e-7."""
        res = map_dask(lambda x, y: self.correct(x, y, refine=refine), p, a2)
        if res is not None:
            return res
        xp = array_module(p, a2, out)
        x = float_data("p", p, xp)
        y = float_data("a2", a2, xp).astype(x.dtype, copy=False)
        tab = xp.asarray(self._a1, dtype=x.dtype)
        y = xp.maximum(y, 0)                     # negative a2 (ringing) taken as 0; NaN stays
        a1 = bilerp(xp.sqrt(y), x, 0.0, self._du, 0.0, self._dp, tab, xp)
        if int(refine) > 0:
            a1 = self._refine(x, y, a1, int(refine), xp)
        r = a1 + y
        if out is None:
            return r
        out[...] = r
        return out

    def _refine(self, p, a2, a1, steps, xp):
        """Newton steps on a1 for p(a1, a2) = p, chunk by chunk (finite rays only)."""
        shape, dt = a1.shape, a1.dtype
        pf, yf = xp.broadcast_arrays(p, a2)
        pf, yf = pf.reshape(-1).astype(np.float64), yf.reshape(-1).astype(np.float64)
        a = a1.reshape(-1).astype(np.float64)
        ok = xp.flatnonzero(xp.isfinite(a) & xp.isfinite(pf) & xp.isfinite(yf))
        B = xp.asarray(self._sigma)
        lw = xp.asarray(log_weights(self._w)[None])
        for s in range(0, ok.size, CHUNK):
            k = ok[s:s + CHUNK]
            ak = a[k]
            for _ in range(steps):
                P, G = log_transmission(xp.stack([ak, yf[k]]), B, lw, xp)
                ak = ak - (P[0] - pf[k]) / G[0, 0]
            a[k] = ak
        return a.reshape(shape).astype(dt)

    __call__ = correct

    def leap_lut(self, sample_rate=0.01, num_samples=None):
        """LEAP's two-material table (XrayPhysics' ``setTwoMaterialBHClookupTable``):
        ``(lut float32 (N, N), sample_rate)``, ``lut[i, j]`` = monochromatic attenuation
        of rays with dense-material fraction ``a2/(a1+a2) = i/(N−1)`` and polychromatic
        attenuation ``j·sample_rate``; default N covers p <= 12. Apply with
        :func:`leap.preprocessing.filters.dual_transfer_function` as in LEAP's demo d18."""
        T = positive_number("sample_rate", sample_rate)
        N = int(num_samples) if num_samples else int(np.ceil(12.0 / T)) + 1
        frac = np.linspace(0.0, 1.0, N)
        u = (1 - frac)[:, None] * self._sigma[0] + frac[:, None] * self._sigma[1]
        lw = np.broadcast_to(log_weights(self._w), u.shape)
        lut = _invert_rows(u, lw, np.zeros(N), np.arange(N) * T, min(self._dense, 1025))
        return lut.astype(np.float32), T


def segment_threshold(f, mu_1, mu_2, threshold=None, low=None):
    """Map of the dense material in monochromatic attenuation (1/mm), after LEAP's demo
    d18: voxels at or above ``threshold`` (default ``mu_1 + 0.1 (mu_2 − mu_1)``) keep
    their value, voxels between ``low`` and it are ramped as mixtures ``f (f − low) /
    (threshold − low)``, the rest are 0.

    ``f``: a reconstruction at the reference energy (1/mm). ``low`` defaults to
    ``mu_1 + 0.02 (mu_2 − mu_1)``, a margin above the base material so that its noise
    and residual cupping are not read as traces of the dense material (which biases the
    whole image); ``low = mu_1`` is LEAP's choice.
    """
    xp = array_module(f)
    m1 = positive_number("mu_1", mu_1)
    m2 = positive_number("mu_2", mu_2)
    if not m2 > m1:
        raise ValueError(f"mu_2 ({m2}) must exceed mu_1 ({m1}): material 2 is the dense one")
    thr = m1 + 0.1 * (m2 - m1) if threshold is None else float(threshold)
    lo = m1 + 0.02 * (m2 - m1) if low is None else float(low)
    if not thr > lo:
        raise ValueError(f"threshold ({thr}) must exceed low ({lo})")
    a = float_data("f", f, xp).astype(np.float32, copy=False)
    ramp = a * (a - np.float32(lo)) / np.float32(thr - lo)
    return xp.where(a >= thr, a, xp.where(a > lo, ramp, np.float32(0))).astype(np.float32)


def two_material_bhc(poly, table, project, fbp, *, num_iterations=3, threshold=None,
                     segment=None, refine=0, return_volume=False):
    """Iterative two-material beam-hardening correction, independent of the geometry.

    1. water-only BHC: ``g = table.correct(poly)``;
    2. ``num_iterations`` times: ``f = fbp(g)``; dense-material map ``f2 = segment(f)``
       (default :func:`segment_threshold` with ``table.mu_ref`` and ``threshold``);
       ``a2 = project(f2)``; ``g = table.correct(poly, a2)``.

    Parameters
    ----------
    poly : projections (float32, the shape ``project`` returns and ``fbp`` takes)
        Polychromatic attenuation; must be finite.
    table : TwoMaterialTable
    project : callable volume → projections
        Line integrals of a volume in 1/mm (``CTSystem.project``, or ``lambda f:
        leap.operators.project(geometry, volume, f)``).
    fbp : callable projections → volume
        A reconstruction in 1/mm (``CTSystem.fbp``; any algorithm will do).
    num_iterations : int
        Reconstruct–segment–project passes (LEAP's demo uses 4; 2–3 remove most streaks).
    threshold : float, optional
        1/mm, for the default segmentation (:func:`segment_threshold`).
    segment : callable volume → volume, optional
        Custom map of the dense material in monochromatic attenuation (1/mm).
    refine : int
        Newton refinements in :meth:`TwoMaterialTable.correct`.
    return_volume : bool
        Also return ``fbp`` of the corrected projections.

    Returns
    -------
    Corrected projections (monochromatic attenuation at ``table.reference_energy``),
    float32, and the reconstruction when ``return_volume``.
    """
    if not isinstance(table, TwoMaterialTable):
        raise TypeError(f"table must be a TwoMaterialTable, got {type(table).__name__}")
    if not (callable(project) and callable(fbp)):
        raise TypeError("project and fbp must be callables (e.g. CTSystem.project, .fbp)")
    n_it = int(num_iterations)
    if n_it < 0:
        raise ValueError(f"num_iterations must be >= 0, got {num_iterations}")
    xp = array_module(poly)
    p = float_data("poly", poly, xp, finite=True).astype(np.float32, copy=False)
    g = table.correct(p, refine=refine)
    for _ in range(n_it):
        f = fbp(g)
        f2 = segment(f) if segment is not None else segment_threshold(f, *table.mu_ref,
                                                                      threshold)
        a2 = project(xp.ascontiguousarray(xp.asarray(f2, dtype=np.float32)))
        if tuple(a2.shape) != tuple(p.shape):
            raise ValueError(f"project returned shape {tuple(a2.shape)}, but poly has shape "
                             f"{tuple(p.shape)}")
        g = xp.ascontiguousarray(table.correct(p, a2, refine=refine))
    return (g, fbp(g)) if return_volume else g
