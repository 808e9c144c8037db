"""The material library's data: material records, their definitions and the registry.

Private helper of :mod:`leap.physics.materials` (the public module, whose ``Material``
adds the physics methods to :class:`MaterialData`, and whose docstring lists the
sources of the compositions and densities) and of :mod:`leap.physics.cross_sections`
(which resolves library names through :func:`find` before reading a string as a
formula). It imports only the parsing helpers of ``leap.physics._cs_composition``,
so imports run one way: ``_cs_composition`` <- ``_material_library`` <-
``cross_sections`` <- ``materials``.

The registry maps canonical names (:func:`_key`: lower case, spaces and hyphens as
underscores) to records and aliases to canonical names; it is filled from ``_DEFS``
(plus the iodine contrast agent) at import time, and :func:`register` adds to it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, fields

from ._cs_composition import _formula_mass_fractions, element_symbol
from ._cs_composition import mass_fractions as _parse_fractions


def _fractions(material) -> dict[int, float]:
    """Mass fractions with library names resolved (names before formulas)."""
    return _parse_fractions(material, find)


@dataclass(frozen=True)
class MaterialData:
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

    name: str
    density: float
    composition: tuple
    formula: str | None = None
    source: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        try:
            rho = float(self.density)
        except (TypeError, ValueError):
            raise ValueError(f"density must be a number in g/cm^3, got "
                             f"{self.density!r}") from None
        if not math.isfinite(rho) or rho < 0.0:
            raise ValueError(f"density must be finite and >= 0 g/cm^3, got "
                             f"{self.density!r}")
        comp = self.composition
        items = tuple(comp.items()) if hasattr(comp, "items") else tuple(comp)
        try:
            fr = _fractions(items)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"composition: {exc}") from None
        pairs = tuple((element_symbol(z), float(w)) for z, w in sorted(fr.items()))
        object.__setattr__(self, "density", rho)
        object.__setattr__(self, "composition", pairs)

    def _as(self, cls):
        """This record as an instance of the subclass ``cls``: the fields are copied
        as they are (already validated and normalised), not parsed again."""
        if type(self) is cls:
            return self
        new = object.__new__(cls)
        for f in fields(self):
            object.__setattr__(new, f.name, getattr(self, f.name))
        return new

    # ---------------------------------------------------------------- constructors
    @classmethod
    def from_formula(cls, name: str, formula: str, density: float,
                     source: str = "user") -> "MaterialData":
        """A material from a chemical formula and a density.

        Parameters
        ----------
        name : str
            Name.
        formula : str
            Chemical formula, e.g. ``"Gd2O2S"`` or ``"Lu1.8Y0.2SiO5"``.
        density : float
            Mass density in g/cm^3.
        source : str
            Provenance note.

        Returns
        -------
        Material
        """
        try:
            fr = _formula_mass_fractions(formula)
        except ValueError as exc:
            raise ValueError(f"formula: {exc}") from None
        return cls(name, density, tuple(fr.items()), formula=formula, source=source)

    @classmethod
    def from_mixture(cls, name: str, components, density: float,
                     source: str = "user") -> "MaterialData":
        """A material from a mixture by mass fraction and a density.

        Parameters
        ----------
        name : str
            Name.
        components : mapping or sequence of pairs
            ``{"H2O": 0.9, "NaCl": 0.1}`` or ``[("H2O", 0.9), ("NaCl", 0.1)]``;
            components may be formulas, symbols, atomic numbers, library names or
            Materials; fractions must sum to 1 within 1e-6.
        density : float
            Mass density of the mixture in g/cm^3.
        source : str
            Provenance note.

        Returns
        -------
        Material
        """
        fr = _fractions(components)
        return cls(name, density, tuple(fr.items()), source=source)

    # ------------------------------------------------------------------- accessors
    @property
    def mass_fractions(self) -> dict[str, float]:
        """Elemental mass fractions keyed by symbol (dict copy)."""
        return dict(self.composition)


# --------------------------------------------------------------------------- library
_NIST = "NIST NISTIR 5632 Table 2"
_NIST_EL = "NIST NISTIR 5632 Table 1"
_ICRU44 = "NIST NISTIR 5632 Table 2 (ICRU Report 44)"

# name: (density g/cm^3, formula or {symbol: mass fraction}, source, aliases)
_DEFS = {
    "water": (1.0, "H2O", "formula; NIST density", ("h2o", "water_liquid")),
    "air": (1.20479e-3, {"C": 0.000124, "N": 0.755268, "O": 0.231781, "Ar": 0.012827},
            _NIST + " (Air, Dry, near sea level)", ("dry_air",)),
    "soft_tissue": (1.06, {"H": 0.102, "C": 0.143, "N": 0.034, "O": 0.708, "Na": 0.002,
                           "P": 0.003, "S": 0.003, "Cl": 0.002, "K": 0.003},
                    _ICRU44 + " (Tissue, Soft)", ("tissue", "soft_tissue_icru44")),
    "muscle": (1.05, {"H": 0.102, "C": 0.143, "N": 0.034, "O": 0.710, "Na": 0.001,
                      "P": 0.002, "S": 0.003, "Cl": 0.001, "K": 0.004},
               _ICRU44 + " (Muscle, Skeletal)", ("skeletal_muscle",)),
    "adipose": (0.95, {"H": 0.114, "C": 0.598, "N": 0.007, "O": 0.278, "Na": 0.001,
                       "S": 0.001, "Cl": 0.001},
                _ICRU44 + " (Adipose Tissue)", ("adipose_tissue", "fat")),
    "breast": (1.02, {"H": 0.106, "C": 0.332, "N": 0.030, "O": 0.527, "Na": 0.001,
                      "P": 0.001, "S": 0.002, "Cl": 0.001},
               _ICRU44 + " (Breast Tissue)", ("breast_tissue",)),
    "lung": (1.05, {"H": 0.103, "C": 0.105, "N": 0.031, "O": 0.749, "Na": 0.002,
                    "P": 0.002, "S": 0.003, "Cl": 0.003, "K": 0.002},
             _ICRU44 + " (Lung Tissue; tissue density, not inflated lung)",
             ("lung_tissue",)),
    "cortical_bone": (1.92, {"H": 0.034, "C": 0.155, "N": 0.042, "O": 0.435, "Na": 0.001,
                             "Mg": 0.002, "P": 0.103, "S": 0.003, "Ca": 0.225},
                      _ICRU44 + " (Bone, Cortical)",
                      ("bone", "bone_cortical", "cortical_bone_icru44")),
    "pmma": (1.19, "C5H8O2", _NIST + " (Polymethyl Methacrylate)",
             ("acrylic", "lucite", "perspex", "plexiglas")),
    "polyethylene": (0.93, "C2H4", _NIST + " (Polyethylene)", ("pe", "ldpe", "hdpe")),
    "polystyrene": (1.06, "C8H8", _NIST + " (Polystyrene)", ()),
    "teflon": (2.25, "C2F4", _NIST + " (Polytetrafluoroethylene)", ("ptfe",)),
    "pvc": (1.406, "C2H3Cl", _NIST + " (Polyvinyl Chloride)", ()),
    "graphite": (1.7, "C", _NIST_EL + " (Carbon, Graphite)", ("carbon",)),
    "aluminium": (2.699, "Al", _NIST_EL, ("aluminum", "al")),
    "silicon": (2.33, "Si", _NIST_EL, ("si",)),
    "titanium": (4.54, "Ti", _NIST_EL, ("ti",)),
    "iron": (7.874, "Fe", _NIST_EL, ("fe",)),
    "copper": (8.96, "Cu", _NIST_EL, ("cu",)),
    "germanium": (5.323, "Ge", _NIST_EL, ("ge",)),
    "molybdenum": (10.22, "Mo", _NIST_EL, ("mo",)),
    "tin": (7.31, "Sn", _NIST_EL, ("sn",)),
    "iodine": (4.93, "I", _NIST_EL + " (solid iodine)", ()),
    "gadolinium": (7.9004, "Gd", _NIST_EL, ("gd",)),
    "tungsten": (19.3, "W", _NIST_EL, ("w", "wolfram")),
    "gold": (19.32, "Au", _NIST_EL, ("au",)),
    "lead": (11.35, "Pb", _NIST_EL, ("pb",)),
    "gos": (7.44, "Gd2O2S", _NIST + " (Gadolinium Oxysulfide)",
            ("gadox", "gd2o2s", "gadolinium_oxysulfide")),
    "csi": (4.51, "CsI", _NIST + " (Cesium Iodide)", ("cesium_iodide",)),
    "nai": (3.67, "NaI", "manufacturer data sheets", ("sodium_iodide",)),
    "lyso": (7.1, "Lu1.8Y0.2SiO5", "Saint-Gobain PreLude 420 data sheet", ()),
    "bgo": (7.13, "Bi4Ge3O12", "manufacturer data sheets", ()),
    "cdte": (6.2, "CdTe", _NIST + " (Cadmium Telluride)", ("cadmium_telluride",)),
    "czt": (5.78, "Cd0.9Zn0.1Te", "manufacturer data sheets", ()),
    "gaas": (5.31, "GaAs", _NIST + " (Gallium Arsenide)", ("gallium_arsenide",)),
    "delrin": (1.425, "CH2O", "polyoxymethylene; NIST compound density",
               ("pom", "polyoxymethylene", "acetal")),
    "polypropylene": (0.90, "C3H6", "NIST compound density", ("pp",)),
    "pet": (1.40, "C10H8O4", "polyethylene terephthalate; NIST (Mylar) density",
            ("mylar", "polyethylene_terephthalate")),
    "polycarbonate": (1.20, "C16H14O3", "NIST (Makrolon, Lexan) density",
                      ("lexan", "makrolon")),
    "kapton": (1.42, "C22H10N2O5", "NIST (Kapton polyimide film) density", ("polyimide",)),
    "peek": (1.30, "C19H12O3", "Victrex PEEK 450G data sheet", ()),
    "ethanol": (0.7893, "C2H6O", "NIST (ethyl alcohol) density", ("ethyl_alcohol",)),
    "diamond": (3.51, "C", "CRC Handbook", ()),
    "aluminum_oxide": (3.97, "Al2O3", "NIST compound density",
                       ("aluminumoxide", "aluminium_oxide", "alumina")),
    "titanium_dioxide": (4.26, "TiO2", "NIST compound density", ("titaniumdioxide",)),
    "gso": (6.71, "Gd2SiO5", "scintillator data sheets", ()),
    "lso": (7.4, "Lu2SiO5", "scintillator data sheets", ()),
    "ti64": (4.43, {"Ti": 0.90, "Al": 0.06, "V": 0.04},
             "Ti-6Al-4V (grade 5) nominal composition and density", ("ti-6al-4v",)),
    "stainless_steel_316l": (8.0, {"Fe": 0.685, "Cr": 0.17, "Ni": 0.12, "Mo": 0.025},
                             "AISI 316L nominal composition and density",
                             ("316l", "stainlesssteel", "stainless_steel")),
}

_LIBRARY: dict[str, MaterialData] = {}
_ALIASES: dict[str, str] = {}


def _key(name) -> str:
    if not isinstance(name, str):
        raise ValueError(f"name must be a string, got {name!r}")
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


_IOHEXOL = "C19H26I3N3O9"
_OMNIPAQUE350_DENSITY = 1.406   # g/mL
_OMNIPAQUE350_IODINE = 350.0    # mg iodine per mL


def iodine_contrast(mg_iodine_per_ml: float = 350.0, name: str | None = None,
                    cls=MaterialData):
    """Iohexol contrast agent diluted in water, as an instance of ``cls``.

    See ``leap.physics.materials.iodine_contrast`` for the model.
    """
    c = float(mg_iodine_per_ml)
    if not math.isfinite(c) or not 0.0 < c <= _OMNIPAQUE350_IODINE:
        raise ValueError(f"mg_iodine_per_ml must be in (0, 350], got {mg_iodine_per_ml!r}")
    iodine_in_iohexol = _formula_mass_fractions(_IOHEXOL)[53]
    rho = 1.0 + (_OMNIPAQUE350_DENSITY - 1.0) * c / _OMNIPAQUE350_IODINE   # g/mL
    w_iohexol = c / 1000.0 / iodine_in_iohexol / rho
    return cls.from_mixture(
        name or f"iodine_contrast_{c:g}mgI_per_ml",
        [(_IOHEXOL, w_iohexol), ("H2O", 1.0 - w_iohexol)], rho,
        source="iohexol in water; Omnipaque 350 label density")


def register(mat: MaterialData, aliases=(), *, overwrite: bool = False) -> MaterialData:
    """Add ``mat`` to the registry under its name (and ``aliases``); returns ``mat``.

    Raises ValueError for a taken name unless ``overwrite``.
    """
    if not isinstance(mat, MaterialData):
        raise ValueError(f"mat must be a Material, got {type(mat).__name__}")
    keys = [_key(mat.name)] + [_key(a) for a in aliases]
    if not overwrite:
        taken = [k for k in keys if k in _LIBRARY or k in _ALIASES]
        if taken:
            raise ValueError(f"name {taken[0]!r} is already in the material library "
                             "(pass overwrite=True)")
    _LIBRARY[keys[0]] = mat
    _ALIASES.pop(keys[0], None)
    for k in keys[1:]:
        _ALIASES[k] = keys[0]
    return mat


def canonical_name(name) -> str | None:
    """The registry key of a name or alias (case insensitive), or None if unknown."""
    if not isinstance(name, str):
        return None
    key = _key(name)
    key = _ALIASES.get(key, key)
    return key if key in _LIBRARY else None


def find(name) -> MaterialData | None:
    """The record of a name or alias (case insensitive), or None (also for non-strings)."""
    key = canonical_name(name)
    return None if key is None else _LIBRARY[key]


def lookup(name) -> MaterialData:
    """Like :func:`find`, but raise ValueError, naming ``name`` and listing the known
    materials, for an unknown name."""
    _key(name)  # a non-string name raises here
    found = find(name)
    if found is None:
        raise ValueError(f"name: unknown material {name!r}; known: "
                         f"{', '.join(names())}")
    return found


def names() -> list[str]:
    """Canonical names of the library materials, sorted."""
    return sorted(_LIBRARY)


def _build() -> None:
    for name, (rho, comp, source, aliases) in _DEFS.items():
        if isinstance(comp, str):
            mat = MaterialData.from_formula(name, comp, rho, source=source)
        else:
            mat = MaterialData(name, rho, tuple(comp.items()), source=source)
        register(mat, aliases)
    register(iodine_contrast(350.0, "iodine_contrast"), ("omnipaque350", "iohexol_350"))


_build()
