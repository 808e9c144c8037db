"""A library of named materials (composition and density) for X-ray physics.

``material("water")`` returns a frozen :class:`Material` with ``name``, ``density``
(g/cm^3), ``composition`` (elemental mass fractions) and methods for its attenuation,
electron density and effective Z (all in the units of
:mod:`leap.physics.cross_sections`: keV, mm^2/g, 1/mm by default). Names are case
insensitive, spaces and hyphens count as underscores, and common aliases are accepted
(``"H2O"``, ``"bone"``, ``"PMMA"``, ``"lucite"``, ``"Pb"``, ...); :func:`list_materials`
gives the canonical names.

New materials: :meth:`Material.from_formula` (formula + density),
:meth:`Material.from_mixture` (mass fractions + density) or the :class:`Material`
constructor (elemental mass fractions); :func:`register_material` adds one to the
library.

Sources of compositions and densities
-------------------------------------
* "NIST": J. H. Hubbell and S. M. Seltzer, Tables of X-Ray Mass Attenuation
  Coefficients ..., NISTIR 5632, Table 1 (element densities) and Table 2 (compositions by
  weight and densities of compounds and mixtures; human tissues from ICRU Report 44,
  1989). Water is given by its formula (NIST: H 0.111898, O 0.888102 by weight).
* LYSO: Lu1.8Y0.2SiO5, 7.1 g/cm^3 (Saint-Gobain PreLude 420 data sheet).
* BGO: Bi4Ge3O12, 7.13 g/cm^3; NaI: 3.67 g/cm^3; CZT: Cd0.9Zn0.1Te, 5.78 g/cm^3
  (manufacturer data sheets).
* Iodine contrast: iohexol (C19H26I3N3O9) in water at 350 mg iodine per mL, density
  1.406 g/mL (Omnipaque 350 label, GE Healthcare); :func:`iodine_contrast` dilutes it.

Where things live
-----------------
The data (the fields and validation of :class:`Material`, its constructors, the
definitions above and the name registry) live in ``leap.physics._material_library``,
which :mod:`leap.physics.cross_sections` also uses to resolve library names; this
module adds the methods that compute with :mod:`leap.physics.cross_sections` and
returns :class:`Material` objects from the library.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _material_library as _lib
from . import cross_sections as _cs

__all__ = ["Material", "material", "find_material", "list_materials",
           "register_material", "iodine_contrast"]


@dataclass(frozen=True)
class Material(_lib.MaterialData):
    """A material: name, mass density and elemental composition.

    Parameters
    ----------
    name : str
        Name (free text).
    density : float
        Mass density in g/cm^3 (finite, >= 0).
    composition : mapping or sequence of (str, float)
        Elemental mass fractions keyed by chemical symbol (or atomic number); they must
        be >= 0 and sum to 1 within 1e-6. Stored as a tuple of ``(symbol, fraction)``
        pairs sorted by atomic number, so the object is hashable.
    formula : str, optional
        Chemical formula the composition came from, if any.
    source : str
        Where the composition and density come from.
    """

    # constructors and accessors of the data class, documented here as Material's own
    from_formula = _lib.MaterialData.__dict__["from_formula"]
    from_mixture = _lib.MaterialData.__dict__["from_mixture"]
    mass_fractions = _lib.MaterialData.__dict__["mass_fractions"]

    def mass_attenuation(self, energy, kind: str = "total", *, coherent: bool = True,
                         units: str = "mm"):
        """Mass attenuation coefficient in mm^2/g (cm^2/g with ``units="cm"``).

        See :func:`leap.physics.cross_sections.mass_attenuation`.
        """
        return _cs.mass_attenuation(self, energy, kind, coherent=coherent, units=units)

    def mu(self, energy, kind: str = "total", *, coherent: bool = True,
           units: str = "mm", density=None):
        """Linear attenuation coefficient in 1/mm (1/cm with ``units="cm"``).

        Parameters
        ----------
        energy : array_like
            Photon energies in keV, 1-20000.
        kind, coherent : see :func:`leap.physics.cross_sections.mass_attenuation`
        units : {"mm", "cm"}
            Length unit.
        density : float, optional
            Override of the density in g/cm^3.

        Returns
        -------
        numpy.ndarray or numpy.float64
        """
        rho = self.density if density is None else density
        return _cs.linear_attenuation(self, energy, rho, kind, coherent=coherent,
                                      units=units)

    def electron_cross_section(self, energy, kind: str = "total", *,
                               coherent: bool = True, units: str = "barn"):
        """Cross section per electron (barn by default); see
        :func:`leap.physics.cross_sections.electron_cross_section`."""
        return _cs.electron_cross_section(self, energy, kind, coherent=coherent,
                                          units=units)

    def electron_density(self, *, units: str = "mm", relative_to_water: bool = False):
        """Electron density in electrons/mm^3 (``"cm"``: /cm^3, ``"mol"``: mol/cm^3),
        or relative to water; see :func:`leap.physics.cross_sections.electron_density`."""
        return _cs.electron_density(self, self.density, units=units,
                                    relative_to_water=relative_to_water)

    def z_eff(self, method: str = "power", **kwargs) -> float:
        """Effective atomic number; see :func:`leap.physics.cross_sections.effective_z`."""
        return _cs.effective_z(self, method, **kwargs)


# Library records as Materials: one object per registry entry, so that a name and its
# aliases give the same object (re-made only if the entry is replaced).
_WRAPPED: dict[str, tuple[_lib.MaterialData, Material]] = {}


def _as_material(key: str, data: _lib.MaterialData) -> Material:
    if isinstance(data, Material):
        return data
    cached = _WRAPPED.get(key)
    if cached is None or cached[0] is not data:
        cached = (data, data._as(Material))
        _WRAPPED[key] = cached
    return cached[1]


def iodine_contrast(mg_iodine_per_ml: float = 350.0, name: str | None = None) -> Material:
    """Iohexol contrast agent diluted in water.

    Composition: iohexol (C19H26I3N3O9, 46.4 % iodine by mass) and water. Density is
    interpolated linearly in iodine concentration between water (1.0 g/mL) and
    Omnipaque 350 (350 mg I/mL, 1.406 g/mL) - an approximation that neglects the
    non-ideal volume of mixing (< 1 %).

    Parameters
    ----------
    mg_iodine_per_ml : float
        Iodine concentration in mg/mL (0 < c <= 350).
    name : str, optional
        Material name; default ``"iodine_contrast_<c>mgI_per_ml"``.

    Returns
    -------
    Material
    """
    return _lib.iodine_contrast(mg_iodine_per_ml, name, cls=Material)


def register_material(mat: Material, aliases=(), *, overwrite: bool = False) -> Material:
    """Add a material to the library under its name (and aliases).

    Parameters
    ----------
    mat : Material
        The material.
    aliases : iterable of str
        Further names.
    overwrite : bool
        Replace an existing entry of the same name instead of raising ValueError.

    Returns
    -------
    Material
        ``mat``.
    """
    if not isinstance(mat, Material):
        raise ValueError(f"mat must be a Material, got {type(mat).__name__}")
    return _lib.register(mat, aliases, overwrite=overwrite)


def material(name) -> Material:
    """Look up a library material by name (case insensitive) or alias.

    Parameters
    ----------
    name : str or Material
        E.g. ``"water"``, ``"Cortical Bone"``, ``"PMMA"``, ``"pb"``; a Material is
        returned unchanged.

    Returns
    -------
    Material

    Raises
    ------
    ValueError
        Naming ``name`` and listing the known materials.
    """
    if isinstance(name, Material):
        return name
    data = _lib.lookup(name)  # raises ValueError for an unknown name
    return _as_material(_lib.canonical_name(name), data)


def find_material(name) -> Material | None:
    """Like :func:`material`, but return None for an unknown name.

    Parameters
    ----------
    name : str
        Name or alias (case insensitive).

    Returns
    -------
    Material or None
    """
    data = _lib.find(name)
    return None if data is None else _as_material(_lib.canonical_name(name), data)


def list_materials() -> list[str]:
    """Canonical names of the library materials, sorted.

    Returns
    -------
    list of str
    """
    return _lib.names()
