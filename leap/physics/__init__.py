"""X-ray physics in the core: cross sections and materials, tube spectra and detector
responses, beam-hardening and dual-energy correction, scatter. NumPy arrays in and out;
lengths in mm and energies in keV unless a function says otherwise.

Modules (import them directly; nothing is loaded at ``import leap``):

* :mod:`leap.physics.cross_sections` — elements, compounds, mixtures: mass attenuation
  and its components, per-electron cross sections, electron density, effective Z;
* :mod:`leap.physics.materials` — a library of named materials with densities;
* :mod:`leap.physics.spectra` — X-ray tube spectra, filters, beam qualities (mean and
  effective energy, half-value layers, air kerma);
* :mod:`leap.physics.detectors` — energy-integrating and photon-counting responses;
* :mod:`leap.physics.beam_hardening` — look-up tables and polynomial, single- and
  two-material beam-hardening correction;
* :mod:`leap.physics.dual_energy` — basis-material decomposition, PCA bases, SIRZ;
* :mod:`leap.physics.scatter` — scatter cross sections and angular distributions, and
  first-order scatter simulation and correction (LEAP's ``scatter_model``).

LEAP's companion package XrayPhysics keeps its names in the shim ``xrayphysics.py`` at
the top of the repository.
"""
