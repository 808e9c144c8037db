"""Differentiable polychromatic (beam-hardening) forward model.

A polychromatic X-ray beam through materials of density maps ``ρ_m`` is attenuated
energy by energy; the detector integrates the spectrum. The expected log transmission
of each detector pixel is

.. math::

    p = -\\log \\frac{\\sum_E s_E \\exp\\big(-\\sum_m \\mu_m(E)\\, (P\\rho_m)\\big)}
                     {\\sum_E s_E}

where ``P`` is the (monochromatic) CT projector, ``μ_m(E)`` the attenuation of material
``m`` per unit of its map at energy bin ``E`` and ``s_E`` the spectrum weights.
:class:`PolychromaticProjector` applies it to batches of density maps, with exact
gradients (the matched back-projector) with respect to the maps, the spectrum and the
attenuation coefficients; :func:`polychromatic_log_transmission` applies the spectral part
to line integrals that are already computed.

The log-sum-exp is computed in chunks of energies, with its own backward, so memory
grows with the number of materials, not with the number of energy bins: neither pass
keeps a ``(batch, energies, angles, rows, cols)`` tensor. Bins of zero weight contribute
nothing and have finite gradients.
"""
from __future__ import annotations

import numpy as np
import torch

from ..compat import tomographicModels
from ..system import CTSystem
from ._operator import CTOperator, check_input
from ._systems import facade_key, register_system, system_for
from .modules import Projector
from .ops import linear, log_transmission

__all__ = ["PolychromaticProjector", "polychromatic_log_transmission"]

_FLOATS = (torch.float32, torch.float64)


# ------------------------------------------------------------------ validation
def _as_tensor(x, name):
    if isinstance(x, torch.Tensor):
        t = x
    elif isinstance(x, (np.ndarray, list, tuple)) or np.isscalar(x):
        t = torch.as_tensor(np.asarray(x))
    else:
        raise TypeError(f"{name} must be a torch.Tensor or an array, got {type(x).__name__}")
    if t.dtype == torch.bool or t.is_complex():
        raise TypeError(f"{name} must be real numbers, got {t.dtype}")
    if not t.dtype.is_floating_point:
        t = t.to(torch.get_default_dtype())
    return t


def _check_mu(mu, num_energies=None, num_materials=None, name="mu", materials_of="rho"):
    """``mu`` as a floating (M, E) tensor, finite and non-negative."""
    mu = _as_tensor(mu, name)
    if mu.ndim != 2 or 0 in mu.shape:
        raise ValueError(f"{name} must have shape (materials, energies), got {tuple(mu.shape)}")
    if num_materials is not None and mu.shape[0] != num_materials:
        raise ValueError(f"{name} has {mu.shape[0]} materials (shape {tuple(mu.shape)}) but "
                         f"{materials_of} has {num_materials}")
    if num_energies is not None and mu.shape[1] != num_energies:
        raise ValueError(f"{name} has {mu.shape[1]} energies (shape {tuple(mu.shape)}) but "
                         f"the spectrum has {num_energies}")
    v = mu.detach()
    if not bool(torch.isfinite(v).all()):
        raise ValueError(f"{name} has NaN or infinite entries")
    if bool((v < 0).any()):
        raise ValueError(f"{name} has negative entries: attenuation coefficients are >= 0")
    return mu


def _check_spectrum(s, name="spectrum"):
    """``s`` as a floating (E,) tensor: finite, non-negative, not all zero."""
    s = _as_tensor(s, name)
    if s.ndim != 1 or s.shape[0] == 0:
        raise ValueError(f"{name} must have shape (energies,), got {tuple(s.shape)}")
    v = s.detach()
    if not bool(torch.isfinite(v).all()):
        raise ValueError(f"{name} has NaN or infinite weights")
    if bool((v < 0).any()):
        raise ValueError(f"{name} has negative weights")
    if not bool((v > 0).any()):
        raise ValueError(f"{name} has no positive weight: the spectrum is empty")
    return s


def _check_dtype(x, name):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in _FLOATS:
        raise TypeError(f"{name} must be float32 or float64, got {x.dtype}")


# ---------------------------------------------------------------------- numerics
def _transmission(L, mu, theta, log_mode):
    """Line integrals (B, M, A, R, C) → p (B, A, R, C), all of one dtype and device,
    through the custom op ``torch.ops.leap.log_transmission`` (:mod:`leap.torch.ops`)."""
    B, M = L.shape[:2]
    det = L.shape[2:]
    p = log_transmission(L.reshape(B, M, -1), mu, theta, log_mode)
    return p.reshape(B, *det)


def polychromatic_log_transmission(line_integrals, mu, spectrum):
    """Expected log transmission of a polychromatic beam from per-material line integrals.

    ``p = −log( Σ_E s_E exp(−Σ_m μ_m(E) L_m) / Σ_E s_E )``, computed stably (a chunked
    log-sum-exp); differentiable with respect to all three arguments, also for
    spectrum bins of zero weight.

    Parameters
    ----------
    line_integrals : torch.Tensor
        ``L``, shape (batch, materials, numAngles, numRows, numCols) or, for one sample,
        (materials, numAngles, numRows, numCols); float32 or float64. The projections of
        the density maps: mm × (map units), e.g. mm·g/cm³.
    mu : torch.Tensor or array
        (materials, energies): ``mu[m, E]`` times a value of map ``m`` is an attenuation
        in 1/mm (e.g. the mass attenuation coefficient in cm²/g divided by 10 for maps
        in g/cm³). Finite and non-negative.
    spectrum : torch.Tensor or array
        (energies,) weights ``s_E`` ≥ 0, not all zero: photons per energy bin times the
        detector response. Normalised here, so any scale gives the same result.

    Returns
    -------
    torch.Tensor
        (batch, numAngles, numRows, numCols) (no batch dimension for one sample), in
        ``line_integrals``' dtype and on its device: ``-log`` of the expected
        transmission, dimensionless.

    Raises
    ------
    ValueError
        Shapes that do not match, or NaN, infinite or negative ``mu`` or ``spectrum``
        entries (the message names the argument).
    """
    _check_dtype(line_integrals, "line_integrals")
    if line_integrals.ndim not in (4, 5):
        raise ValueError("line_integrals must have shape (batch, materials, numAngles, numRows, "
                         f"numCols) or (materials, numAngles, numRows, numCols), got "
                         f"{tuple(line_integrals.shape)}")
    s = _check_spectrum(spectrum)
    mu = _check_mu(mu, num_energies=s.shape[0], num_materials=line_integrals.shape[-4],
                   materials_of="line_integrals")
    L = line_integrals if line_integrals.ndim == 5 else line_integrals[None]
    kw = dict(dtype=L.dtype, device=L.device)
    p = _transmission(L, mu.to(**kw), s.to(**kw), False)
    return p if line_integrals.ndim == 5 else p[0]


# ----------------------------------------------------------------------- modules
@torch.compiler.assume_constant_result
def _system_shapes(key):
    # A key names one system's content, so torch.compile may take its shapes as
    # constants (evaluated, not traced).
    s = system_for(key)
    return s.volume_shape, s.projection_shape


class _SystemProjector(torch.nn.Module):
    """The monochromatic projector of a fixed :class:`~leap.system.CTSystem`: volumes
    (batch, numZ, numY, numX) → projections (batch, numAngles, numRows, numCols), with
    the matched back-projector as gradient (as :class:`~leap.torch.Projector`)."""

    def __init__(self, system: CTSystem):
        super().__init__()
        self.system = system
        self.system_key = register_system(system)   # a str: torch.compile guards on it

    def __setstate__(self, state):
        # A copy (pickle, deepcopy) holds its own system object: register it, so that
        # the key stays valid when the original is gone.
        super().__setstate__(state)
        self.system_key = register_system(self.system)

    def forward(self, input):
        if not isinstance(input, torch.Tensor):
            check_input(input, CTOperator(kind="project", system=self.system))
        return linear(input, "project", self.system_key)

    def get_volume_dim(self):
        return self.system.volume_shape

    def get_projection_dim(self):
        return self.system.projection_shape

    def extra_repr(self) -> str:
        return repr(self.system)


class PolychromaticProjector(torch.nn.Module):
    """Differentiable polychromatic projector: material density maps → expected log
    transmission, with beam hardening.

    ``forward(rho)`` maps density maps ``rho`` (batch, materials, numZ, numY, numX) to

    ``p = −log( Σ_E s_E exp(−Σ_m μ_m(E) · (P ρ_m)) / Σ_E s_E )``,

    shape (batch, numAngles, numRows, numCols), where ``P`` is the monochromatic
    projector (``projector``; all batch × materials maps are projected in one
    call), ``μ`` is ``mu`` and ``s`` the spectrum. With a one-bin spectrum this is the
    monochromatic projection ``Σ_m μ_m P ρ_m``; otherwise ``p`` is concave in the
    path lengths and below ``Σ_m μ̄_m P ρ_m``, with ``μ̄`` the spectrum-weighted mean
    attenuation (:attr:`mean_mu`), its slope at zero thickness.

    Gradients are exact with respect to ``rho`` (the matched back-projector of ``P``),
    the spectrum and ``mu`` (a chunked log-sum-exp with its own backward, stable for
    any thickness and for spectrum bins of zero weight). The output has ``rho``'s
    dtype (float32 or float64) and device; ``mu`` and the spectrum are converted to
    them at each call (``P`` itself computes in float32).

    Parameters
    ----------
    projector : Projector or CTSystem
        The monochromatic projector: a :class:`~leap.torch.Projector` with
        ``forward_project=True`` (used as it is, so later changes to its ``leapct``
        reach this module), or a :class:`~leap.system.CTSystem` (e.g.
        ``tomographicModels().system``), projected as fixed. Lengths in mm.
    mu : torch.Tensor or array
        (materials, energies): ``mu[m, E]`` times a value of density map ``m`` is an
        attenuation coefficient in 1/mm; e.g. mass attenuation coefficients in cm²/g
        divided by 10 for maps in g/cm³ (1 cm²/g · 1 g/cm³ = 0.1/mm). Any per-material
        scale of the maps works if ``mu`` is scaled inversely. Finite, non-negative.
    spectrum : torch.Tensor or array
        (energies,) weights ``s_E`` ≥ 0, not all zero: photons per energy bin times the
        detector response (e.g. energy-integrating detectors: times E). Normalised
        internally, so only the relative weights matter.
    mu_learnable : bool
        Make ``mu`` a ``torch.nn.Parameter`` (e.g. to calibrate basis materials);
        otherwise a buffer. Nothing keeps a learnt ``mu`` non-negative.
    spectrum_learnable : bool
        Make the spectrum learnable for spectral calibration: the parameter is
        ``log_spectrum`` = ``log s`` (any real number; the weights stay positive).
        Bins of zero weight get ``−inf`` there and stay empty (their gradient is 0;
        avoid optimisers that add weight decay to ``−inf``, or drop such bins).
        Otherwise the weights are a buffer, ``spectrum_weights``.

    Attributes
    ----------
    projector : torch.nn.Module
        The monochromatic projector ``P``, volumes (batch, numZ, numY, numX) →
        projections (batch, numAngles, numRows, numCols): the given
        :class:`~leap.torch.Projector`, or one for the given :class:`~leap.system.CTSystem`.
    mu : torch.Tensor
        (materials, energies), buffer or parameter.
    spectrum_weights : torch.Tensor
        (energies,) buffer, the weights as given (``spectrum_learnable=False``).
    log_spectrum : torch.nn.Parameter
        (energies,) ``log s`` (``spectrum_learnable=True``).

    Examples
    --------
    Water and bone maps in g/cm³, 3 energy bins::

        proj = Projector(forward_project=True)
        proj.set_conebeam(...); proj.set_default_volume()
        # mass attenuation (cm^2/g) at 30, 50, 100 keV, / 10: 1/mm per g/cm^3
        mu = torch.tensor([[0.3756, 0.2269, 0.1707],     # water
                           [1.331, 0.4242, 0.1855]]) / 10  # cortical bone
        poly = PolychromaticProjector(proj, mu, torch.tensor([1.0, 2.0, 1.0]))
        p = poly(rho)      # rho: (batch, 2, numZ, numY, numX) -> (batch, angles, rows, cols)
    """

    def __init__(self, projector, mu, spectrum, *, mu_learnable=False, spectrum_learnable=False):
        super().__init__()
        if isinstance(projector, CTSystem):
            projector = _SystemProjector(projector)
        elif isinstance(projector, Projector):
            if not projector.forward_project:
                raise ValueError("projector must project (forward_project=True); this one "
                                 "back-projects")
        elif isinstance(projector, tomographicModels):
            raise TypeError("projector must be a leap.torch.Projector or a CTSystem; for a "
                            "tomographicModels pass its .system")
        else:
            raise TypeError("projector must be a leap.torch.Projector or a leap CTSystem, got "
                            f"{type(projector).__name__}")
        self.projector = projector
        s = _check_spectrum(spectrum)
        mu = _check_mu(mu, num_energies=s.shape[0])
        mu = mu.detach().clone()
        if mu_learnable:
            self.mu = torch.nn.Parameter(mu)
        else:
            self.register_buffer("mu", mu)
        s = s.detach().clone()
        if spectrum_learnable:
            self.log_spectrum = torch.nn.Parameter(torch.log(s))
        else:
            self.register_buffer("spectrum_weights", s)

    # -------------------------------------------------------------- properties
    @property
    def num_materials(self) -> int:
        """The number of materials M (density maps per sample)."""
        return int(self.mu.shape[0])

    @property
    def num_energies(self) -> int:
        """The number of energy bins E."""
        return int(self.mu.shape[1])

    @property
    def spectrum_learnable(self) -> bool:
        """Whether the spectrum is a parameter (``log_spectrum``)."""
        return "log_spectrum" in self._parameters

    @property
    def mu_learnable(self) -> bool:
        """Whether ``mu`` is a parameter."""
        return "mu" in self._parameters

    @property
    def spectrum(self) -> torch.Tensor:
        """The normalised spectrum ``s / Σ s``, (energies,), summing to 1
        (differentiable with respect to ``log_spectrum`` when learnable)."""
        if self.spectrum_learnable:
            return torch.softmax(self.log_spectrum, 0)
        return self.spectrum_weights / self.spectrum_weights.sum()

    @property
    def mean_mu(self) -> torch.Tensor:
        """The spectrum-weighted mean attenuation ``μ̄_m = Σ_E w_E μ_m(E)``, (materials,):
        the slope of ``p`` at zero thickness, and ``Σ_m μ̄_m P ρ_m ≥ p`` (Jensen)."""
        return self.mu @ self.spectrum.to(self.mu.dtype)

    def _shapes(self):
        if isinstance(self.projector, _SystemProjector):
            key = self.projector.system_key
        else:
            key = facade_key(self.projector.leapct)   # says which set_* call is missing
        return _system_shapes(key)

    # ----------------------------------------------------------------- calls
    def line_integrals(self, rho):
        """Project every density map: ``(P ρ_m)``.

        Parameters
        ----------
        rho : torch.Tensor
            (batch, materials, numZ, numY, numX) or (materials, numZ, numY, numX),
            float32 or float64, any strides.

        Returns
        -------
        torch.Tensor
            (batch, materials, numAngles, numRows, numCols) (no batch dimension for one
            sample), mm × (map units), differentiable (matched back-projector).
        """
        _check_dtype(rho, "rho")
        vol, _ = self._shapes()
        M = self.num_materials
        if rho.ndim not in (4, 5) or tuple(rho.shape[-3:]) != tuple(vol) or rho.shape[-4] != M:
            raise ValueError(f"rho must have shape (batch, materials, numZ, numY, numX) = "
                             f"(batch, {M}, {', '.join(map(str, vol))}) (or without batch), "
                             f"got {tuple(rho.shape)}")
        return self.projector(rho.contiguous())

    def forward(self, rho, mu=None, spectrum=None):
        """Expected log transmission of density maps.

        Parameters
        ----------
        rho : torch.Tensor
            Density maps (batch, materials, numZ, numY, numX) or, for one sample,
            (materials, numZ, numY, numX); float32 or float64, units of ``mu``'s maps.
        mu : torch.Tensor, optional
            (materials, energies) to use for this call instead of the module's (it may
            require grad).
        spectrum : torch.Tensor, optional
            (energies,) weights to use for this call instead of the module's (it may
            require grad).

        Returns
        -------
        torch.Tensor
            ``p``, (batch, numAngles, numRows, numCols) (no batch dimension for one
            sample), in ``rho``'s dtype and on its device; dimensionless.

        Raises
        ------
        ValueError
            ``rho``, ``mu`` or ``spectrum`` of the wrong shape, or ``mu`` or
            ``spectrum`` with NaN, infinite or negative entries.
        """
        L = self.line_integrals(rho)
        return self.transmission(L, mu=mu, spectrum=spectrum)

    def transmission(self, line_integrals, mu=None, spectrum=None):
        """The spectral part alone: ``p`` from line integrals ``(P ρ_m)`` (e.g. from
        :meth:`line_integrals`), with the module's ``mu`` and spectrum unless given.

        Parameters
        ----------
        line_integrals : torch.Tensor
            (batch, materials, numAngles, numRows, numCols) or without batch; float32 or
            float64, mm × (map units).
        mu, spectrum : torch.Tensor, optional
            As in :meth:`forward`.

        Returns
        -------
        torch.Tensor
            (batch, numAngles, numRows, numCols) (no batch dimension for one sample).
        """
        _check_dtype(line_integrals, "line_integrals")
        L = line_integrals
        if L.ndim not in (4, 5) or L.shape[-4] != self.num_materials:
            raise ValueError(f"line_integrals must have shape (batch, {self.num_materials}, "
                             f"numAngles, numRows, numCols) (or without batch), got "
                             f"{tuple(L.shape)}")
        kw = dict(dtype=L.dtype, device=L.device)
        if spectrum is not None:
            theta, log_mode = _check_spectrum(spectrum), False
        elif self.spectrum_learnable:
            theta, log_mode = self.log_spectrum, True
        else:
            theta, log_mode = self.spectrum_weights, False
        E = theta.shape[0]
        if mu is not None:
            mu = _check_mu(mu, num_energies=E, num_materials=self.num_materials,
                           materials_of="the module")
        elif self.mu.shape[1] != E:
            raise ValueError(f"spectrum has {E} energies but the module's mu has "
                             f"{self.mu.shape[1]}")
        else:
            mu = self.mu
        one = L.ndim == 4
        p = _transmission(L[None] if one else L, mu.to(**kw), theta.to(**kw), log_mode)
        return p[0] if one else p

    def extra_repr(self) -> str:
        return (f"materials={self.num_materials}, energies={self.num_energies}, "
                f"mu_learnable={self.mu_learnable}, spectrum_learnable={self.spectrum_learnable}")
