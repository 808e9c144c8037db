r"""Dual-energy CT: basis-material decomposition, PCA bases, and electron density and
effective atomic number (SIRZ).

**Decomposition.** Two scans with system spectral responses :math:`s_L, s_H` (per
energy bin, detector response folded in, as in :mod:`leap.physics.beam_hardening`)
measure, for each ray,

.. math:: p_k = -\log \sum_E w_k(E)\, e^{-c_1 b_1(E) - c_2 b_2(E)}, \qquad
          w_k = s_k / \textstyle\sum_E s_k,

with basis functions :math:`b_i(E)`: the linear attenuation (1/mm) of two materials
(then :math:`c_i` are path lengths, mm), mass attenuations (mm²/g; :math:`c_i` are area
densities, g/mm²), :func:`pca_bases`, or :func:`photoelectric_basis` and
:func:`compton_basis` (Alvarez and Macovski 1976). :func:`decompose` solves the 2×2
nonlinear system per ray by Newton's method with the analytic Jacobian
:math:`J_{ki} = \sum_E \tilde w_k b_i` (:math:`\tilde w_k` the attenuated, normalised
spectrum), started from the monochromatic (thin-object) approximation
:math:`p_k \approx \sum_i c_i \sum_E w_k b_i`; :class:`DualEnergyTable` tabulates the
solution on a (p_L, p_H) grid for speed. :func:`virtual_monochromatic` turns the
coefficients into attenuation at an energy (LEAP/XrayPhysics' DED output).

**SIRZ.** From the attenuation of a voxel at a low and a high energy (virtual
monochromatic reconstructions, or plain reconstructions with spectrum-averaged cross
sections), the effective atomic number :math:`Z_e` is where the ratio of per-electron
cross sections :math:`\sigma_e(Z, E_L)/\sigma_e(Z, E_H)` (interpolated linearly in Z)
equals :math:`\mu_L/\mu_H`, and the electron density is the least-squares
:math:`\rho_e = (\sigma_L\mu_L + \sigma_H\mu_H)/(\sigma_L^2 + \sigma_H^2)` at
:math:`Z_e` (Azevedo et al. 2016; LEAP's ``convertToRhoeZe``). The caller supplies the
per-electron cross sections ``sigma_e_table (num_Z, E)`` on a ``Z_grid``.

Units: energies keV, lengths mm, attenuation 1/mm. ρe has the units of μ / σ_e (1/mm
over mm²/electron gives electrons/mm³).

References
----------
* R. E. Alvarez and A. Macovski, "Energy-selective reconstructions in X-ray
  computerized tomography", Phys. Med. Biol. 21(5), 733–744, 1976.
* S. G. Azevedo, H. E. Martz, M. B. Aufderheide, W. D. Brown, K. M. Champley,
  J. S. Kallman, G. P. Roberson, D. Schneberk, I. M. Seetho and J. A. Smith,
  "System-independent characterization of materials using dual-energy computed
  tomography", IEEE Trans. Nucl. Sci. 63(1), 341–350, 2016.
* K. M. Champley, S. G. Azevedo, I. M. Seetho, S. M. Glenn, L. D. McMichael,
  J. A. Smith, J. S. Kallman, W. D. Brown and H. E. Martz, "Method to extract
  system-independent material properties from dual-energy X-ray CT", IEEE Trans.
  Nucl. Sci. 66(3), 674–686, 2019 (LEAP demo d19; XrayPhysics ``setDEDlookupTable``).
"""
from __future__ import annotations

import numpy as np

from ..preprocessing._common import array_module
from ._bh_common import (CHUNK, bilerp, check_energies, curve, float_data,
                         interp_energy, log_transmission, log_weights, map_dask,
                         positive_number, spectrum_weights)

__all__ = ["decompose", "DualEnergyTable", "virtual_monochromatic", "basis_values",
           "pca_bases", "photoelectric_basis", "compton_basis", "sigma_e_at",
           "sigma_e_spectral", "rhoe_ze", "sirz"]

#: Classical electron radius (mm) and electron rest energy (keV), CODATA 2018.
ELECTRON_RADIUS_MM = 2.8179403262e-12
ELECTRON_REST_KEV = 510.99895


def _basis(basis, n=None):
    b = np.asarray(basis, dtype=np.float64)
    if b.ndim != 2 or b.shape[0] != 2 or (n is not None and b.shape[1] != n):
        want = "(2, E)" if n is None else f"(2, {n})"
        raise ValueError(f"basis must be {want}: two basis functions on the spectra's "
                         f"energy grid, got shape {b.shape}")
    if not np.all(np.isfinite(b)):
        raise ValueError("basis holds non-finite values")
    return b


class _Model:
    """Spectra and basis of a decomposition, checked, with the thin-object matrix."""

    def __init__(self, spectrum_low, spectrum_high, basis):
        s_l = np.asarray(spectrum_low, dtype=np.float64)
        n = s_l.size if s_l.ndim == 1 else None
        self.w = np.stack([spectrum_weights("spectrum_low", spectrum_low, n),
                           spectrum_weights("spectrum_high", spectrum_high, n)])
        self.B = _basis(basis, n)
        self.logw = np.stack([log_weights(w) for w in self.w])
        self.M = self.w @ self.B.T                      # (spectrum, basis), p ≈ M c
        det = np.linalg.det(self.M)                     # vs. the columns' scales:
        if not abs(det) > 1e-9 * np.prod(np.linalg.norm(self.M, axis=0)):
            raise ValueError("the two basis functions are (nearly) proportional under these "
                             "spectra: the decomposition is singular")
        self.Minv = np.linalg.inv(self.M)

    def solve(self, p, xp, max_iterations, tol, initial=None):
        """Coefficients (2, n), residual norm (n,) and convergence flags (n,) for
        measurements ``p`` (2, n) float64."""
        B, logw, Minv = xp.asarray(self.B), xp.asarray(self.logw), xp.asarray(self.Minv)
        n = p.shape[1]
        c = Minv @ p if initial is None else initial.copy()
        res = xp.full(n, np.inf)
        ok = xp.zeros(n, dtype=bool)
        for s in range(0, n, CHUNK):
            sl = slice(s, min(n, s + CHUNK))
            c[:, sl], res[sl], ok[sl] = self._newton(p[:, sl], c[:, sl], B, logw,
                                                     max_iterations, tol, xp)
        return c, res, ok

    @staticmethod
    def _newton(p, c, B, logw, max_iterations, tol, xp):
        P, J = log_transmission(c, B, logw, xp)
        F = P - p
        r2 = (F * F).sum(axis=0)
        active = xp.sqrt(r2) > tol
        for _ in range(max_iterations):
            idx = xp.flatnonzero(active)
            if idx.size == 0:
                break
            Fa, Ja, ca = F[:, idx], J[:, :, idx], c[:, idx]
            det = Ja[0, 0] * Ja[1, 1] - Ja[0, 1] * Ja[1, 0]
            det = xp.where(det == 0, 1e-300, det)
            step = -xp.stack([Ja[1, 1] * Fa[0] - Ja[0, 1] * Fa[1],
                              -Ja[1, 0] * Fa[0] + Ja[0, 0] * Fa[1]]) / det
            lam = xp.ones(idx.size)
            r2a = r2[idx]
            todo = xp.ones(idx.size, dtype=bool)
            newc, newP, newJ, newr2 = ca.copy(), P[:, idx].copy(), Ja.copy(), r2a.copy()
            for _ in range(12):                         # backtracking on |F|²
                k = xp.flatnonzero(todo)
                if k.size == 0:
                    break
                trial = ca[:, k] + lam[k] * step[:, k]
                Pt, Jt = log_transmission(trial, B, logw, xp)
                Ft = Pt - p[:, idx[k]]
                rt = (Ft * Ft).sum(axis=0)
                good = xp.isfinite(rt) & (rt < r2a[k])
                g = k[good]
                newc[:, g], newP[:, g], newJ[:, :, g], newr2[g] = (
                    trial[:, good], Pt[:, good], Jt[:, :, good], rt[good])
                todo[g] = False
                lam[k[~good]] *= 0.5
            stuck = todo                                # no decrease: stop those rays
            c[:, idx], P[:, idx], J[:, :, idx], r2[idx] = newc, newP, newJ, newr2
            F[:, idx] = P[:, idx] - p[:, idx]
            active[idx] = (xp.sqrt(newr2) > tol) & ~stuck
        res = xp.sqrt(r2)
        return c, res, res <= tol


def _pair(name_a, a, name_b, b, xp, finite):
    x = float_data(name_a, a, xp, finite=finite)
    y = float_data(name_b, b, xp, finite=finite)
    if x.shape != y.shape:
        raise ValueError(f"{name_a} and {name_b} must have the same shape, got {x.shape} "
                         f"and {y.shape}")
    return x, y, np.result_type(x.dtype, y.dtype)


def decompose(p_low, p_high, spectrum_low, spectrum_high, basis, *, max_iterations=30,
              tol=1e-7, nonconverged="nan"):
    """Basis-material decomposition of two polychromatic projection sets.

    Parameters
    ----------
    p_low, p_high : arrays (...) of the same shape
        Polychromatic attenuation (−log transmission) of the low- and high-energy scans
        (a block of views, or any set of rays); must be finite.
    spectrum_low, spectrum_high : (E,)
        System spectral responses per energy bin, on one energy grid.
    basis : (2, E)
        The basis functions on that grid: μ of two materials (1/mm → path lengths, mm),
        mass attenuations (mm²/g → g/mm²), :func:`pca_bases`, ….
    max_iterations : int
        Newton iterations per ray (each with a backtracking line search).
    tol : float
        Convergence: Euclidean norm of the residual (p_model − p) in attenuation units.
    nonconverged : {"nan", "raise", "keep"}
        What to do with rays that did not converge (e.g. pairs no combination of the
        bases can produce): NaN, a ValueError, or the last iterate.

    Returns
    -------
    c1, c2 : arrays (...) float32 (float64 for float64 input), the coefficients.
    """
    if nonconverged not in ("nan", "raise", "keep"):
        raise ValueError(f"nonconverged must be 'nan', 'raise' or 'keep', got {nonconverged!r}")
    model = _Model(spectrum_low, spectrum_high, basis)
    n_it = int(max_iterations)
    if n_it < 1:
        raise ValueError(f"max_iterations must be >= 1, got {max_iterations}")
    tol = positive_number("tol", tol)
    res = map_dask(lambda a, b: decompose(a, b, spectrum_low, spectrum_high, basis,
                                          max_iterations=n_it, tol=tol,
                                          nonconverged=nonconverged), p_low, p_high, n_out=2)
    if res is not None:
        return res
    xp = array_module(p_low, p_high)
    x, y, dt = _pair("p_low", p_low, "p_high", p_high, xp, True)
    p = xp.stack([x.reshape(-1), y.reshape(-1)]).astype(np.float64)
    c, _, ok = model.solve(p, xp, n_it, tol)
    if not bool(ok.all()):
        if nonconverged == "raise":
            raise ValueError(f"the decomposition did not converge for "
                             f"{int((~ok).sum())} of {ok.size} rays (p_low, p_high)")
        if nonconverged == "nan":
            c[:, ~ok] = np.nan
    return c[0].reshape(x.shape).astype(dt), c[1].reshape(x.shape).astype(dt)


class DualEnergyTable:
    """:func:`decompose` tabulated on a uniform (p_low, p_high) grid and applied by
    bilinear interpolation (fast, elementwise, NaN-safe; XrayPhysics'
    ``setDEDlookupTable`` with LEAP's ``applyDualTransferFunction``, in coefficients).

    Parameters
    ----------
    spectrum_low, spectrum_high, basis : as for :func:`decompose`.
    max_attenuation : float
        Both grids span [0, max_attenuation].
    num_samples : int
        Samples per axis (the table has 2 × num_samples² entries).

    Notes
    -----
    Grid points no combination of the bases reproduces (far from any physical pair,
    e.g. ``p_high > p_low`` for a low-Z basis) hold NaN, which propagates to rays
    interpolated from them. Beyond the grid the table is extrapolated linearly from the
    edge cells. The interpolation error falls with the grid step squared: check it
    against :func:`decompose` for the accuracy needed.
    """

    def __init__(self, spectrum_low, spectrum_high, basis, *, max_attenuation=8.0,
                 num_samples=257, max_iterations=30, tol=1e-9):
        self._model = _Model(spectrum_low, spectrum_high, basis)
        self.max_attenuation = positive_number("max_attenuation", max_attenuation)
        n = int(num_samples)
        if n < 2:
            raise ValueError(f"num_samples must be >= 2, got {num_samples}")
        g = np.linspace(0.0, self.max_attenuation, n)
        PL, PH = np.meshgrid(g, g, indexing="ij")
        p = np.stack([PL.ravel(), PH.ravel()])
        c, _, ok = self._model.solve(p, np, int(max_iterations), tol)
        c[:, ~ok] = np.nan
        self._step = g[1]
        self.table = c.reshape(2, n, n)
        """The coefficients, (2, N, N) float64, at ``p_low = i·step``, ``p_high = j·step``."""

    def __call__(self, p_low, p_high, *, refine=1):
        """Coefficients (c1, c2) of rays (p_low, p_high): float32 (float64 for float64
        input), NaN where an input is NaN or the table has no solution.

        ``refine`` Newton steps of the exact model follow the interpolation (each costs
        about one spectral sum per ray and spectrum, a fraction of a full
        :func:`decompose`): the bilinear table alone has errors of order
        ``step² · |∂²c/∂p²| / 8``, large for nearly parallel bases (water/aluminium:
        ~0.01 mm Al and ~0.04 mm water at the default grid); one step brings them to
        the model's accuracy. ``refine=0``: the table only."""
        res = map_dask(lambda a, b: self(a, b, refine=refine), p_low, p_high, n_out=2)
        if res is not None:
            return res
        xp = array_module(p_low, p_high)
        x, y, dt = _pair("p_low", p_low, "p_high", p_high, xp, False)
        t = xp.asarray(self.table)
        h = self._step
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        c = xp.stack([bilerp(x64, y64, 0.0, h, 0.0, h, t[0], xp).reshape(-1),
                      bilerp(x64, y64, 0.0, h, 0.0, h, t[1], xp).reshape(-1)])
        if int(refine) > 0:
            p = xp.stack([x64.reshape(-1), y64.reshape(-1)])
            idx = xp.flatnonzero(xp.isfinite(c).all(axis=0) & xp.isfinite(p).all(axis=0))
            c[:, idx] = self._model.solve(p[:, idx], xp, int(refine), 1e-300,
                                          initial=c[:, idx])[0]
        return c[0].reshape(x.shape).astype(dt), c[1].reshape(x.shape).astype(dt)

    apply = __call__

    def _warm_start(self, g, step=8):
        """Initial coefficients (2, N·N) for the grid ``g`` × ``g``: the solutions on every
        ``step``-th point, interpolated bilinearly (Newton then needs a step or two
        instead of starting from the thin-object guess); the thin-object guess where a
        coarse neighbour has no solution."""
        n = g.size
        idx = np.unique(np.r_[np.arange(0, n, step), n - 1])
        GL, GH = np.meshgrid(g[idx], g[idx], indexing="ij")
        pc = np.stack([GL.ravel(), GH.ravel()])
        cc, _, okc = self._model.solve(pc, np, 30, 1e-9)
        cc = np.where(okc, cc, np.nan).reshape(2, idx.size, idx.size)
        # Bilinear interpolation of the coarse solutions at every fine index.
        k = np.clip(np.searchsorted(idx, np.arange(n), side="right") - 1, 0, idx.size - 2)
        w = (np.arange(n) - idx[k]) / (idx[k + 1] - idx[k])
        c = ((1 - w)[None, :, None] * (1 - w)[None, None, :] * cc[:, k][:, :, k]
             + (1 - w)[None, :, None] * w[None, None, :] * cc[:, k][:, :, k + 1]
             + w[None, :, None] * (1 - w)[None, None, :] * cc[:, k + 1][:, :, k]
             + w[None, :, None] * w[None, None, :] * cc[:, k + 1][:, :, k + 1])
        c = c.reshape(2, n * n)
        PL, PH = np.meshgrid(g, g, indexing="ij")
        thin = self._model.Minv @ np.stack([PL.ravel(), PH.ravel()])
        return np.where(np.isfinite(c).all(axis=0), c, thin)

    def leap_lut(self, basis_low, basis_high, sample_rate=0.01, num_samples=None):
        """XrayPhysics' ``setDEDlookupTable`` output: ``(lut float32 (3, N, N),
        sample_rate)`` with ``lut[0]``/``lut[1]`` the virtual monochromatic attenuation
        ``b(E)·c`` at the low/high reference energies (``basis_low``/``basis_high``:
        the two basis values there, :func:`basis_values`) and ``lut[2]`` the residual
        norm, at ``p_low = i·sample_rate``, ``p_high = j·sample_rate`` (default N covers
        p <= 12); unsolvable points hold 0 as in XrayPhysics."""
        T = positive_number("sample_rate", sample_rate)
        N = int(num_samples) if num_samples else int(np.ceil(12.0 / T)) + 1
        bl = np.asarray(basis_low, dtype=np.float64).ravel()
        bh = np.asarray(basis_high, dtype=np.float64).ravel()
        if bl.size != 2 or bh.size != 2:
            raise ValueError("basis_low and basis_high must hold the two basis values")
        g = np.arange(N) * T
        PL, PH = np.meshgrid(g, g, indexing="ij")
        p = np.stack([PL.ravel(), PH.ravel()])
        c, r, ok = self._model.solve(p, np, 30, 1e-9, initial=self._warm_start(g))
        lut = np.stack([bl @ c, bh @ c, r])
        lut[:, ~ok | ~np.isfinite(lut).all(axis=0)] = 0.0
        return lut.reshape(3, N, N).astype(np.float32), T


def basis_values(energies, basis, energy):
    """Basis functions (K, E) (or one curve (E,)) at ``energy`` keV, linear
    interpolation (bases may be negative)."""
    e = check_energies(energies)
    b = np.asarray(basis, dtype=np.float64)
    if b.shape[-1] != e.size:
        raise ValueError(f"basis must have one value per energy ({e.size}) along its last "
                         f"axis, got shape {b.shape}")
    return interp_energy("energy", e, b, energy, log=False)


def virtual_monochromatic(c1, c2, values):
    """Attenuation ``c1·b1(E) + c2·b2(E)`` at an energy where the bases take ``values``
    (b1(E), b2(E)) (:func:`basis_values`); elementwise, float32 (float64 in)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size != 2 or not np.all(np.isfinite(v)):
        raise ValueError(f"values must be the two finite basis values, got {values!r}")
    res = map_dask(lambda a, b: virtual_monochromatic(a, b, v), c1, c2)
    if res is not None:
        return res
    xp = array_module(c1, c2)
    x, y, dt = _pair("c1", c1, "c2", c2, xp, False)
    return (x * dt.type(v[0]) + y * dt.type(v[1])).astype(dt)


# ------------------------------------------------------------------ bases

def pca_bases(curves, num_bases=2):
    """Principal components of a set of materials' attenuation curves (XrayPhysics'
    ``PCAbases``, after the SIRZ paper's choice of C, N, O and Al).

    ``curves`` (M, E): e.g. the mass attenuation (mm²/g) of M >= 2 materials on the
    spectra's energy grid. Returns ``num_bases`` right singular vectors of the
    (uncentred) matrix, (num_bases, E), each scaled to unit Euclidean norm and signed to
    be positive at the first energy. Being orthonormal combinations of the curves, they
    span every one of them to the accuracy of the dropped singular values.
    """
    X = np.asarray(curves, dtype=np.float64)
    k = int(num_bases)
    if X.ndim != 2 or X.shape[0] < 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"curves must be a finite (materials >= 2, E) array, got shape "
                         f"{X.shape}")
    if not 1 <= k <= min(X.shape):
        raise ValueError(f"num_bases must be 1 ... {min(X.shape)}, got {num_bases}")
    _, _, vt = np.linalg.svd(X, full_matrices=False)
    b = vt[:k].copy()
    sign = np.where(b[:, :1] < 0, -1.0, 1.0)
    return b * sign / np.linalg.norm(b, axis=1, keepdims=True)


def photoelectric_basis(energies):
    """The photoelectric energy dependence ``(E / 1 keV)⁻³`` (E,), dimensionless
    (XrayPhysics' ``PhotoelectricBasis``, up to its unit scale)."""
    return check_energies(energies) ** -3.0


def compton_basis(energies):
    """The Klein–Nishina total cross section per electron σ_KN(E) (E,), mm²
    (XrayPhysics' ``ComptonBasis``, up to its unit scale)."""
    a = check_energies(energies) / ELECTRON_REST_KEV
    q = 1.0 + 2.0 * a
    lg = np.log(q)
    kn = ((1 + a) / a ** 2 * (2 * (1 + a) / q - lg / a) + lg / (2 * a)
          - (1 + 3 * a) / q ** 2)
    return 2.0 * np.pi * ELECTRON_RADIUS_MM ** 2 * kn


# ------------------------------------------------------------------ SIRZ

def _sigma_table(sigma_e_table, n=None):
    t = np.asarray(sigma_e_table, dtype=np.float64)
    if t.ndim != 2 or t.shape[0] < 2 or (n is not None and t.shape[1] != n):
        raise ValueError(f"sigma_e_table must be (num_Z >= 2, E{'' if n is None else '=' + str(n)})"
                         f", got shape {t.shape}")
    if not np.all(np.isfinite(t)) or np.any(t <= 0):
        raise ValueError("sigma_e_table must be finite and > 0")
    return t


def sigma_e_at(sigma_e_table, energies, energy):
    """Per-electron cross sections (num_Z,) at ``energy`` keV, log-log interpolated
    from ``sigma_e_table`` (num_Z, E) on ``energies`` (E,)."""
    e = check_energies(energies)
    return interp_energy("energy", e, _sigma_table(sigma_e_table, e.size), energy)


def sigma_e_spectral(sigma_e_table, spectrum):
    """Spectrum-weighted mean per-electron cross sections ``Σ_E w σ_e(Z, E)`` (num_Z,):
    the zero-thickness effective values for reconstructions of polychromatic data
    (first-order; virtual monochromatic inputs are more accurate)."""
    t = _sigma_table(sigma_e_table)
    return t @ spectrum_weights("spectrum", spectrum, t.shape[1])


def rhoe_ze(mu_low, mu_high, sigma_e_low, sigma_e_high, z_grid=None, *, empty_ze=np.nan):
    """Effective atomic number and electron density from attenuation at two energies
    (LEAP's ``convertToRhoeZe``; Azevedo et al. 2016).

    Parameters
    ----------
    mu_low, mu_high : arrays (...) 1/mm, same shape
        Attenuation at the low and high energy (e.g. virtual monochromatic
        reconstructions).
    sigma_e_low, sigma_e_high : (num_Z,)
        Per-electron cross sections at the two energies (:func:`sigma_e_at` or
        :func:`sigma_e_spectral`), e.g. mm²/electron.
    z_grid : (num_Z,), optional
        Atomic numbers of the table rows, increasing (default 1, 2, …, num_Z).
    empty_ze : float
        Ze where ``mu_low <= 0`` or ``mu_high <= 0`` (air; LEAP writes 7.31); ρe is 0
        there.

    Returns
    -------
    ze, rho_e : arrays (...) float32 (float64 for float64 input); ρe in units of μ/σ_e.

    Ze is sought where the ratio σ_e(Z, E_L)/σ_e(Z, E_H) increases with Z from the first
    grid point (below the first absorption edge between the energies); ratios outside
    that range are clamped to its ends. Between grid points Ze is interpolated as LEAP
    does: linearly in the ratio where the ratio curve is convex (and in the first
    interval), else where both cross sections are linear in Z. NaN stays NaN.
    """
    sl = np.asarray(sigma_e_low, dtype=np.float64).ravel()
    sh = np.asarray(sigma_e_high, dtype=np.float64).ravel()
    if sl.size < 2 or sh.size != sl.size:
        raise ValueError(f"sigma_e_low and sigma_e_high must have one value per Z (>= 2), "
                         f"got {sl.size} and {sh.size}")
    if not (np.all(np.isfinite(sl)) and np.all(np.isfinite(sh)) and np.all(sl > 0)
            and np.all(sh > 0)):
        raise ValueError("sigma_e_low and sigma_e_high must be finite and > 0")
    z = (np.arange(1.0, sl.size + 1) if z_grid is None
         else np.asarray(z_grid, dtype=np.float64).ravel())
    if z.size != sl.size or not np.all(np.diff(z) > 0):
        raise ValueError(f"z_grid must increase strictly and match sigma_e ({sl.size}), got "
                         f"{z.size} values")
    R = sl / sh
    if not R[1] > R[0]:
        raise ValueError("sigma_e_low/sigma_e_high must increase with Z: pass the low "
                         "energy's cross sections as sigma_e_low")
    k_end = int(np.argmax(np.append(np.diff(R) <= 0, True)))   # last increasing index
    R, sl, sh, z = R[:k_end + 1], sl[:k_end + 1], sh[:k_end + 1], z[:k_end + 1]
    res = map_dask(lambda a, b: rhoe_ze(a, b, sl, sh, z, empty_ze=empty_ze),
                   mu_low, mu_high, n_out=2)
    if res is not None:
        return res
    xp = array_module(mu_low, mu_high)
    x, y, dt = _pair("mu_low", mu_low, "mu_high", mu_high, xp, False)
    a, b = x.astype(np.float64), y.astype(np.float64)
    empty = (a <= 0) | (b <= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = a / xp.where(empty, 1.0, b)
    Rx, slx, shx, zx = (xp.asarray(v) for v in (R, sl, sh, z))
    k = xp.clip(xp.searchsorted(Rx, xp.nan_to_num(r), side="right") - 1, 0, R.size - 2)
    la, lb, ha, hb = slx[k], slx[k + 1], shx[k], shx[k + 1]
    # LEAP's two interpolations between grid points k and k + 1: linear in the ratio
    # where the ratio curve is convex there (and in the first interval), else the root
    # of r = σ_L(Z)/σ_H(Z) with both cross sections linear in Z.
    convex = xp.asarray(np.r_[True, 0.5 * (R[:-2] + R[2:]) > R[1:-1], True])[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        d_ratio = (r - Rx[k]) / (Rx[k + 1] - Rx[k])
        d_cross = (la - r * ha) / ((la - lb) - r * (ha - hb))
        d = xp.clip(xp.where(convex, d_ratio, d_cross), 0.0, 1.0)
    ze = zx[k] + d * (zx[k + 1] - zx[k])
    s_l, s_h = la + d * (lb - la), ha + d * (hb - ha)
    rho = (s_l * a + s_h * b) / (s_l * s_l + s_h * s_h)
    ze = xp.where(empty, empty_ze, ze)
    rho = xp.where(empty, 0.0, rho)
    nan = xp.isnan(a) | xp.isnan(b)
    ze = xp.where(nan, np.nan, ze)
    rho = xp.where(nan, np.nan, rho)
    return ze.astype(dt), rho.astype(dt)


def sirz(mu_low, mu_high, sigma_e_table, z_grid, energies, *, energy_low=None,
         energy_high=None, spectrum_low=None, spectrum_high=None, empty_ze=np.nan):
    """SIRZ (Azevedo et al. 2016): :func:`rhoe_ze` with the cross sections taken from
    ``sigma_e_table`` (num_Z, E) on ``energies`` (E,) keV for atomic numbers ``z_grid``
    (num_Z,) (or None for 1 … num_Z): at the energies ``energy_low``/``energy_high``
    keV of virtual monochromatic inputs, or averaged over ``spectrum_low``/
    ``spectrum_high`` (per bin) for reconstructions of polychromatic data. Returns
    (ze, rho_e)."""
    e = check_energies(energies)
    table = _sigma_table(sigma_e_table, e.size)
    if energy_low is not None and energy_high is not None:
        if spectrum_low is not None or spectrum_high is not None:
            raise ValueError("give energy_low/energy_high or spectrum_low/spectrum_high, "
                             "not both")
        sl, sh = sigma_e_at(table, e, energy_low), sigma_e_at(table, e, energy_high)
    elif spectrum_low is not None and spectrum_high is not None:
        curve("spectrum_low", spectrum_low, e.size)
        curve("spectrum_high", spectrum_high, e.size)
        sl, sh = sigma_e_spectral(table, spectrum_low), sigma_e_spectral(table, spectrum_high)
    else:
        raise ValueError("give both energy_low and energy_high (keV), or both spectrum_low "
                         "and spectrum_high")
    return rhoe_ze(mu_low, mu_high, sl, sh, z_grid, empty_ze=empty_ze)
