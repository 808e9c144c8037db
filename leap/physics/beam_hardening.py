r"""Beam hardening: the polychromatic forward model, single-material look-up tables,
polynomial and empirical (ECC) precorrection, and two-material correction.

An energy-integrating detector behind an object of path lengths :math:`L_m` through
materials of linear attenuation :math:`\mu_m(E)` measures the polychromatic attenuation

.. math:: p = -\log \frac{\sum_E s(E)\, e^{-\sum_m \mu_m(E) L_m}}{\sum_E s(E)},

where ``spectrum`` :math:`s(E)` is the *system* spectral response per energy bin: the
tube's photons per bin times the filters' transmission times the detector response. The
caller folds the detector response in (an energy-integrating detector weights each
photon by its absorbed energy, :math:`E\,\eta(E)`; a photon counter by :math:`\eta(E)`);
for a spectral density on a non-uniform grid, multiply by the bin widths first. ``p``
grows slower than linearly with :math:`L` (the beam hardens), which FBP shows as cupping
and as dark streaks between dense objects.

Beam-hardening correction (BHC) maps ``p`` to the *monochromatic* attenuation
:math:`a = \mu(E_\text{ref}) L` at a reference energy (or to the thickness :math:`L`):

* :class:`BeamHardeningTable` — single material (usually water): tabulates
  :math:`p(L)` and inverts it (Herman 1979's linearisation; the "water precorrection" of
  clinical scanners); applied elementwise to projections, a block of views at a time;
* :func:`polynomial_bhc` / :func:`apply_polynomial` — the same as a polynomial
  :math:`a = \sum_n c_n p^n` fitted to the table (Herman 1979; Hsieh, *Computed
  Tomography*, ch. 7); :func:`ecc_coefficients` — the polynomial found from the image
  alone, without the spectrum: the empirical cupping correction (ECC) of Kachelrieß,
  Sourbelle and Kalender 2006;
* :class:`TwoMaterialTable` / :func:`two_material_bhc` — water plus a dense material
  (bone, titanium, iron): reconstruct, segment the dense material, forward project its
  monochromatic attenuation :math:`a_2`, and invert :math:`p(a_1, a_2)` for the water
  part :math:`a_1`, iterated (Joseph and Spital 1978; Kyriakou et al. 2010; LEAP's
  demo d18 and Champley's XrayPhysics ``setTwoMaterialBHClookupTable``).

Units: energies keV, lengths mm, attenuation coefficients 1/mm (mass attenuation
[mm²/g] times density [g/mm³], or [cm²/g] × [g/cm³] / 10). Arrays of projections are
NumPy or CuPy; dask arrays are corrected block by block (``map_blocks``).

References
----------
* G. T. Herman, "Correction for beam hardening in computed tomography", Phys. Med.
  Biol. 24(1), 81–106, 1979.
* P. M. Joseph and R. D. Spital, "A method for correcting bone induced artifacts in
  computed tomography scanners", J. Comput. Assist. Tomogr. 2(1), 100–108, 1978.
* M. Kachelrieß, K. Sourbelle and W. A. Kalender, "Empirical cupping correction: a
  first-order raw data precorrection for cone-beam computed tomography", Med. Phys.
  33(5), 1269–1274, 2006.
* Y. Kyriakou, E. Meyer, D. Prell and M. Kachelrieß, "Empirical beam hardening
  correction (EBHC) for CT", Med. Phys. 37(10), 5179–5187, 2010.
* K. M. Champley et al., LEAP and XrayPhysics (LLNL), https://github.com/LLNL/LEAP,
  https://github.com/kylechampley/XrayPhysics.
"""
from __future__ import annotations

import numpy as np

from ..preprocessing._common import array_module
from ._bh_common import (check_energies, curve, energy_where, float_data,
                         interp_energy, invert_monotone, lerp, log_transmission, log_weights,
                         map_dask, poly_attenuation, positive_number, spectrum_weights)
from ._bh_two_material import TwoMaterialTable, segment_threshold, two_material_bhc

__all__ = ["polychromatic_attenuation", "effective_energy",
           "BeamHardeningTable", "polynomial_bhc", "apply_polynomial", "ecc_coefficients",
           "TwoMaterialTable", "two_material_bhc", "segment_threshold", "take_off_angles",
           "apply_heel_effect_table"]

#: Default largest polychromatic attenuation a table covers: −log 2⁻¹⁶ ≈ 11.09 rounded up
#: (a 16-bit detector; LEAP/XrayPhysics use the same bound).
MAX_ATTENUATION = 12.0


def _materials(mu, n):
    """``mu`` (E,) or (M, E) as float64 (M, E), checked."""
    m = np.asarray(mu, dtype=np.float64)
    if m.ndim == 1:
        m = m[None]
    if m.ndim != 2:
        raise ValueError(f"mu must be (E,) or (materials, E), got shape {m.shape}")
    return np.stack([curve(f"mu[{i}]" if m.shape[0] > 1 else "mu", row, n)
                     for i, row in enumerate(m)])


def polychromatic_attenuation(lengths, mu, spectrum):
    r"""The polychromatic attenuation :math:`-\log \sum_E w(E) e^{-\sum_m \mu_m(E) L_m}`
    (the forward model; XrayPhysics' ``transmission`` is its exponential).

    Parameters
    ----------
    lengths : array (...) mm, or a sequence of M such arrays (broadcast together)
        Path lengths through each material; finite and >= 0.
    mu : (E,) or (M, E) 1/mm
        Linear attenuation of each material on the spectrum's energy grid.
    spectrum : (E,)
        System spectral response per energy bin (detector response folded in).

    Returns
    -------
    (...) float64 array (of the lengths' array module; dask arrays block by block).
    """
    mus = np.asarray(mu, dtype=np.float64)
    n_mat = 1 if mus.ndim == 1 else mus.shape[0]
    single = n_mat == 1 and not isinstance(lengths, (list, tuple))
    ls = [lengths] if single else list(lengths)
    if len(ls) != n_mat:
        raise ValueError(f"lengths gives {len(ls)} material(s) but mu has {n_mat}")
    res = map_dask(lambda *b: polychromatic_attenuation(b[0] if single else list(b), mu,
                                                        spectrum), *ls)
    if res is not None:
        return res
    w = spectrum_weights("spectrum", spectrum, np.shape(mus)[-1])
    basis = _materials(mus, w.size)
    xp = array_module(*ls)
    arrs = xp.broadcast_arrays(*[float_data("lengths", a, xp, finite=True, nonneg=True)
                                 for a in ls])
    shape = arrs[0].shape
    stack = xp.stack([a.reshape(-1).astype(np.float64) for a in arrs])
    return poly_attenuation(stack, basis, w, xp).reshape(shape)


def effective_energy(energies, spectrum, mu, thickness=0.0) -> float:
    r"""The energy (keV) whose monochromatic attenuation equals the effective attenuation
    :math:`\mu_\text{eff}(L) = p(L)/L` of the spectrum through ``thickness`` mm of the
    material (:math:`\sum_E w \mu` at zero thickness): XrayPhysics' ``effectiveEnergy``.

    ``mu`` (E,) 1/mm on ``energies`` (E,) keV; ``spectrum`` (E,) per bin. Where the curve
    crosses the value more than once (absorption edges) the crossing nearest the
    spectrum's mean energy is taken. ValueError when the value is never reached.
    """
    e = check_energies(energies)
    w = spectrum_weights("spectrum", spectrum, e.size)
    m = curve("mu", mu, e.size)
    t = float(thickness)
    if not (np.isfinite(t) and t >= 0):
        raise ValueError(f"thickness must be a finite number >= 0 (mm), got {thickness!r}")
    if t == 0:
        mu_eff = float(w @ m)
    else:
        mu_eff = float(poly_attenuation(np.array([[t]]), m[None], w)[0]) / t
    hit = energy_where(e, m, mu_eff, float(w @ e))
    if hit is None:
        raise ValueError(f"mu never equals the effective attenuation {mu_eff:.6g}/mm on "
                         "the energy grid")
    return hit


def _reference(e, w, m, reference_energy, mu_ref, name="mu"):
    """(mu_ref, reference energy or None) of one material: the given ``mu_ref``, or
    ``mu`` at ``reference_energy``, or by default the spectral mean Σ w μ (the
    zero-thickness effective attenuation) and its effective energy."""
    if mu_ref is not None:
        ref = None if reference_energy is None else positive_number("reference_energy",
                                                                    reference_energy)
        return positive_number("mu_ref", mu_ref), ref
    if reference_energy is not None:
        v = float(interp_energy("reference_energy", e, m, reference_energy))
        if not v > 0:
            raise ValueError(f"{name} is 0 at the reference energy")
        return v, float(reference_energy)
    mu_bar = float(w @ m)
    return mu_bar, energy_where(e, m, mu_bar, float(w @ e))


def _max_length(m, logw, target):
    """A length L with p(L) >= target for attenuation ``m`` (E,) (doubling search)."""
    L = target / float(np.exp(logw) @ m)
    for _ in range(200):
        p = log_transmission(np.array([[L]]), m[None], logw[None])[0][0, 0]
        if p >= target:
            return L
        L *= 2.0
    raise ValueError("the spectrum's attenuation never reaches max_attenuation")


class BeamHardeningTable:
    r"""Single-material beam hardening: ``p(L)`` and its inverse as uniform look-up tables.

    Parameters
    ----------
    energies : (E,) keV
    spectrum : (E,)
        System spectral response per energy bin (detector response folded in).
    mu : (E,) 1/mm
        Linear attenuation of the material (e.g. water), > 0 where the spectrum is.
    reference_energy : float, optional
        keV of the monochromatic output ``a = μ(E_ref) L`` (``mu`` interpolated log-log).
    mu_ref : float, optional
        μ(E_ref) in 1/mm given directly (overrides ``reference_energy``'s lookup).
        Default (neither): the spectral mean :math:`\bar\mu = \sum_E w\mu`, so that
        ``a ≈ p`` for thin objects; ``reference_energy`` is then the effective energy.
    max_attenuation : float
        Largest polychromatic attenuation tabulated (default 12 ≈ −log 2⁻¹⁶).
    num_samples : int
        Samples of each table (uniform in thickness for :meth:`poly`, uniform in ``p``
        for :meth:`correct`); the inverse is refined by Newton steps at its samples.

    Notes
    -----
    Both maps interpolate linearly between samples; beyond the table (``p < 0`` from
    noise, ``p > max_attenuation``) they extrapolate linearly from the end cells: below
    zero with the initial slope (``L ≈ p / μ̄``), above with the final slope. NaN gives
    NaN. The spectral sums use ``w = s / Σ s`` (XrayPhysics weights by bin widths,
    identical on a uniform energy grid).
    """

    def __init__(self, energies, spectrum, mu, *, reference_energy=None, mu_ref=None,
                 max_attenuation=MAX_ATTENUATION, num_samples=4097):
        e = check_energies(energies)
        w = spectrum_weights("spectrum", spectrum, e.size)
        m = curve("mu", mu, e.size)
        if np.any(m[w > 0] <= 0):
            raise ValueError("mu must be > 0 at every energy where the spectrum is")
        self.max_attenuation = positive_number("max_attenuation", max_attenuation)
        n = int(num_samples)
        if n < 3:
            raise ValueError(f"num_samples must be >= 3, got {num_samples}")
        self.mu_ref, self.reference_energy = _reference(e, w, m, reference_energy, mu_ref)
        self.mean_attenuation = float(w @ m)
        lw = log_weights(w)
        self._m, self._lw = m, lw
        L_max = _max_length(m, lw, self.max_attenuation)
        L = np.linspace(0.0, L_max, n)
        P = log_transmission(L[None], m[None], lw[None])[0][0]
        self._dL, self._poly = L[1], P
        pg = np.linspace(0.0, self.max_attenuation, n)
        Lp = invert_monotone(L, P, pg)
        for _ in range(2):                      # Newton: p(L) = pg at every sample
            P1, dP = log_transmission(Lp[None], m[None], lw[None])
            Lp = Lp - (P1[0] - pg) / dP[0, 0]
        self._dp, self._length = pg[1], Lp

    def __repr__(self):
        ref = "" if self.reference_energy is None else f", E_ref={self.reference_energy:.4g} keV"
        return (f"BeamHardeningTable(mu_ref={self.mu_ref:.6g}/mm{ref}, "
                f"p <= {self.max_attenuation:g}, {self._poly.size} samples)")

    def _apply(self, name, x, step, table, scale_in, scale_out, out):
        res = map_dask(lambda b: self._apply(name, b, step, table, scale_in, scale_out, None),
                       x)
        if res is not None:
            return res
        xp = array_module(x, out)
        a = float_data(name, x, xp)
        t = xp.asarray(table, dtype=a.dtype)
        r = lerp(a * a.dtype.type(scale_in), 0.0, step, t, xp) * a.dtype.type(scale_out)
        if out is None:
            return r
        out[...] = r
        return out

    def poly(self, x, *, of="mono", out=None):
        """Polychromatic attenuation of monochromatic attenuation ``x`` = μ_ref·L
        (``of="mono"``, XrayPhysics' ``setBHlookupTable``) or of thickness ``x`` mm
        (``of="thickness"``): simulates beam hardening. Arrays of any shape."""
        if of not in ("mono", "thickness"):
            raise ValueError(f"of must be 'mono' or 'thickness', got {of!r}")
        return self._apply("x", x, self._dL, self._poly,
                           1.0 / self.mu_ref if of == "mono" else 1.0, 1.0, out)

    def correct(self, p, *, to="mono", out=None):
        """Beam-hardening correction of polychromatic attenuation ``p`` (any shape):
        monochromatic attenuation μ_ref·L (``to="mono"``, XrayPhysics'
        ``setBHClookupTable`` applied) or the thickness L mm (``to="thickness"``).
        Float32 (float64 for float64 input); NaN stays NaN."""
        if to not in ("mono", "thickness"):
            raise ValueError(f"to must be 'mono' or 'thickness', got {to!r}")
        return self._apply("p", p, self._dp, self._length, 1.0,
                           self.mu_ref if to == "mono" else 1.0, out)

    __call__ = correct

    def leap_lut(self, kind="bhc", sample_rate=1.0e-3, num_samples=None):
        """The table in LEAP's ``applyTransferFunction`` form: ``(lut float32 (N,),
        sample_rate)`` sampled at ``k·sample_rate``. ``kind="bhc"`` maps poly → mono
        (XrayPhysics' ``setBHClookupTable``; default N covers p <= 12), ``"bh"`` mono
        → poly (``setBHlookupTable``; default N covers mono <= 48)."""
        T = positive_number("sample_rate", sample_rate)
        if kind not in ("bhc", "bh"):
            raise ValueError(f"kind must be 'bhc' or 'bh', got {kind!r}")
        N = int(num_samples) if num_samples else int(np.ceil((12.0 if kind == "bhc" else 48.0)
                                                             / T)) + 1
        x = np.arange(N, dtype=np.float64) * T
        if kind == "bhc":
            lut = self.correct(x)
        else:
            # Exact, not the table: mono values reach beyond what max_attenuation covers.
            lut = log_transmission((x / self.mu_ref)[None], self._m[None], self._lw[None])[0][0]
        return np.asarray(lut, dtype=np.float32), T


# ------------------------------------------------------------------ polynomials

def polynomial_bhc(energies, spectrum, mu, *, order=2, reference_energy=None, mu_ref=None,
                   max_thickness=100.0, num_samples=100):
    r"""Coefficients ``c`` (order + 1,) of the polynomial BHC :math:`a = \sum_{n\ge1} c_n
    p^n` (``c[0] = 0``), least-squares fitted to the exact ``(p(L), μ_ref L)`` pairs at
    ``L = k·max_thickness/num_samples``, k = 1…num_samples (XrayPhysics'
    ``polynomialBHC``; Herman 1979). ``max_thickness`` mm should cover the longest path
    through the material. Other arguments as for :class:`BeamHardeningTable`."""
    e = check_energies(energies)
    w = spectrum_weights("spectrum", spectrum, e.size)
    m = curve("mu", mu, e.size)
    order = int(order)
    if not 1 <= order <= 10:
        raise ValueError(f"order must be 1 ... 10, got {order}")
    L_max = positive_number("max_thickness", max_thickness)
    mref, _ = _reference(e, w, m, reference_energy, mu_ref)
    L = np.arange(1, int(num_samples) + 1) * (L_max / int(num_samples))
    p = poly_attenuation(L[None], m[None], w)
    A = p[:, None] ** np.arange(1, order + 1)[None, :]
    c, *_ = np.linalg.lstsq(A, mref * L, rcond=None)
    return np.concatenate([[0.0], c])


def apply_polynomial(p, coefficients, *, out=None):
    """``Σ_n c_n p^n`` elementwise (Horner), ``coefficients`` (n + 1,) in increasing
    powers; float32 (float64 for float64 input); NaN stays NaN."""
    c = np.asarray(coefficients, dtype=np.float64).ravel()
    if c.size == 0 or not np.all(np.isfinite(c)):
        raise ValueError("coefficients must be a non-empty array of finite numbers")
    res = map_dask(lambda b: apply_polynomial(b, c), p)
    if res is not None:
        return res
    xp = array_module(p, out)
    a = float_data("p", p, xp)
    r = xp.full(a.shape, c[-1], dtype=a.dtype)
    for cn in c[-2::-1]:
        r *= a
        r += a.dtype.type(cn)
    if out is None:
        return r
    out[...] = r
    return out


def _host(x):
    return x.get() if hasattr(x, "get") and not isinstance(x, np.ndarray) else np.asarray(x)


def ecc_coefficients(poly, fbp, *, order=3, mask=None, threshold=None, template_value=None,
                     erosion=2):
    r"""Empirical cupping correction (Kachelrieß, Sourbelle and Kalender 2006): the
    polynomial :math:`a = \sum_{n=1}^{N} c_n p^n` whose reconstruction is flattest
    over a homogeneous (water-like) object, found from the data alone.

    By linearity of FBP, :math:`f = \sum c_n\,\mathrm{FBP}(p^n)`; the ``c_n`` minimise
    :math:`\| f - t \|^2` over the object, with the template :math:`t` equal to
    ``template_value`` inside it.

    Parameters
    ----------
    poly : projections (any shape ``fbp`` takes)
        Polychromatic attenuation.
    fbp : callable
        Projections → volume (e.g. ``CTSystem.fbp`` or
        ``lambda g: leap.reconstruction.fbp.fbp(geo, vol, g)``); called ``order`` times.
    order : int
        Polynomial order N (the paper uses 3–4).
    mask : bool volume, optional
        The object; default ``FBP(p) > threshold``, with ``threshold`` default half its
        99th percentile. The fit uses the mask eroded by ``erosion`` voxels in-plane
        (edges are blurred in the reconstruction).
    template_value : float, optional
        Value of the corrected object, 1/mm; default the mean of ``FBP(p)`` over it
        (keeps the uncorrected scale). Pass μ_water(E_ref) for calibrated values.

    Returns
    -------
    (order + 1,) coefficients in increasing powers (``c[0] = 0``), for
    :func:`apply_polynomial`.
    """
    import scipy.ndimage as ndi
    xp = array_module(poly)
    p = float_data("poly", poly, xp).astype(np.float32, copy=False)
    order = int(order)
    if not 1 <= order <= 8:
        raise ValueError(f"order must be 1 ... 8, got {order}")
    basis = [_host(fbp(xp.ascontiguousarray(p ** n))).astype(np.float64)
             for n in range(1, order + 1)]
    f1 = basis[0]
    if mask is None:
        thr = 0.5 * np.percentile(f1, 99) if threshold is None else float(threshold)
        mask = f1 > thr
    mask = np.asarray(_host(mask), dtype=bool)
    if mask.shape != f1.shape:
        raise ValueError(f"mask must have the volume's shape {f1.shape}, got {mask.shape}")
    if erosion:
        st = np.zeros((3, 3, 3), bool) if f1.ndim == 3 else None
        if st is not None:
            st[1] = ndi.generate_binary_structure(2, 1)
        mask = ndi.binary_erosion(mask, structure=st, iterations=int(erosion))
    if mask.sum() < order:
        raise ValueError("the object mask is (almost) empty: give mask= or threshold=")
    t = float(f1[mask].mean()) if template_value is None else positive_number(
        "template_value", template_value)
    A = np.stack([b[mask] for b in basis], axis=1)
    c, *_ = np.linalg.lstsq(A, np.full(A.shape[0], t), rcond=None)
    return np.concatenate([[0.0], c])


# ------------------------------------------------------------------ heel effect
def take_off_angles(u, v, anode_normal):
    """Anode take-off angle (degrees) of rays with normalised detector coordinates.

    ``u, v`` (broadcastable arrays): the ray's direction is ``(u, 1, v)`` in a frame whose
    y axis is the detector normal (u along the columns, v along the rows, both divided
    by the source-to-detector distance); ``anode_normal`` (3,) the unit normal of the
    anode in that frame. The take-off angle is 90° minus the angle between the ray and
    the anode normal (LEAP's ``beam_hardening_heel_effect``)."""
    n = np.asarray(anode_normal, dtype=np.float64).ravel()
    if n.size != 3 or not np.all(np.isfinite(n)) or not np.linalg.norm(n) > 0:
        raise ValueError(f"anode_normal must be a non-zero 3-vector, got {anode_normal!r}")
    n = n / np.linalg.norm(n)
    u = np.asarray(u, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    c = (u * n[0] + n[1] + v * n[2]) / np.sqrt(1.0 + u * u + v * v)
    return 90.0 - np.degrees(np.arccos(np.clip(c, -1.0, 1.0)))


def apply_heel_effect_table(p, angles, table, table_angles, sample_rate, first_sample=0.0, *,
                            out=None):
    """Apply a transfer function that depends on the anode take-off angle (heel effect):
    LEAP's ``beam_hardening_heel_effect`` on given per-ray angles.

    Parameters
    ----------
    p : array (...), attenuation (float32; float64 kept)
    angles : array broadcastable to ``p``, the rays' take-off angles, degrees
        (:func:`take_off_angles`).
    table : (num_angles, num_samples)
        Row a is the transfer function (e.g. a BHC table, ``BeamHardeningTable.leap_lut``
        of that take-off angle's spectrum) at ``first_sample + i·sample_rate``.
    table_angles : (num_angles,) increasing, equally spaced, degrees.
    sample_rate, first_sample : the table's sample grid.

    Rows are interpolated linearly in angle (clamped to the table's angles); samples
    linearly, extrapolated with each row's last slope above the table, and
    ``first_sample`` at or below it (as LEAP). Returns the corrected array (``out`` if
    given).
    """
    t = np.asarray(table, dtype=np.float64)
    a = np.asarray(table_angles, dtype=np.float64).ravel()
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 2 or not np.all(np.isfinite(t)):
        raise ValueError(f"table must be a finite (num_angles >= 2, num_samples >= 2) array, "
                         f"got shape {t.shape}")
    if a.size != t.shape[0] or not np.all(np.diff(a) > 0):
        raise ValueError(f"table_angles must increase and have one angle per table row "
                         f"({t.shape[0]}), got {a.size}")
    T = positive_number("sample_rate", sample_rate)
    x0 = float(first_sample)
    x = np.asarray(p)
    if x.dtype not in (np.float32, np.float64):
        raise TypeError(f"p must be float32 or float64, got {x.dtype}")
    x = x.astype(np.float64)
    ang = np.broadcast_to(np.asarray(angles, dtype=np.float64), x.shape)
    n = t.shape[1]
    s = np.clip((ang - a[0]) / (a[1] - a[0]), 0.0, a.size - 1.0)
    lo = np.minimum(np.floor(s).astype(np.int64), a.size - 2)
    da = s - lo
    q = (x - x0) / T
    i = np.clip(np.floor(np.nan_to_num(q, nan=0.0, posinf=n, neginf=0.0)), 0, n - 2).astype(
        np.int64)
    d = q - i

    def row(r):
        return t[r, i] + d * (t[r, i + 1] - t[r, i])

    r = (1.0 - da) * row(lo) + da * row(lo + 1)
    r = np.where(q <= 0.0, x0, r)
    r = np.where(np.isnan(x), np.nan, r)
    res = r.astype(np.asarray(p).dtype)
    if out is None:
        return res
    out[...] = res
    return out
