"""Elements, chemical formulas and mixtures -> elemental mass fractions.

Private helper of :mod:`leap.physics.cross_sections` (which re-exports
:func:`atomic_number`, :func:`element_symbol` and :func:`parse_formula`, and wraps
:func:`mass_fractions` so that names of the material library are resolved); see that
module's docstring for the accepted material forms.

Parsing only: this module knows nothing of the material library
(``leap.physics._material_library``, which imports it). Names are resolved by the
caller's ``lookup`` (see :func:`mass_fractions`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping

import numpy as np
import xraylib as _xl

from ._cs_atomic import atomic_weight as _atomic_weight

_SYMBOLS = tuple(_xl.AtomicNumberToSymbol(z) for z in range(1, 101))
_SYMBOL_TO_Z = {s: z for z, s in enumerate(_SYMBOLS, start=1)}


# ----------------------------------------------------------------------------- elements
def atomic_number(element) -> int:
    """Atomic number of an element.

    Parameters
    ----------
    element : int or str
        Atomic number 1-100 or chemical symbol (``"Pb"``; a case-insensitive match such
        as ``"pb"`` is accepted too).

    Returns
    -------
    int
        The atomic number.
    """
    if isinstance(element, (bool, np.bool_)):
        raise ValueError(f"element must be an atomic number or a symbol, got {element!r}")
    if isinstance(element, (int, np.integer)):
        if 1 <= int(element) <= 100:
            return int(element)
        raise ValueError(f"element: atomic number must be 1..100, got {element}")
    if isinstance(element, str):
        s = element.strip()
        if s in _SYMBOL_TO_Z:
            return _SYMBOL_TO_Z[s]
        s = s.capitalize()
        if s in _SYMBOL_TO_Z:
            return _SYMBOL_TO_Z[s]
        raise ValueError(f"element: unknown chemical symbol {element!r}")
    raise ValueError(f"element must be an atomic number or a symbol, got {element!r}")


def element_symbol(z) -> str:
    """Chemical symbol of an element given by atomic number (or symbol).

    Parameters
    ----------
    z : int or str
        Atomic number 1-100 or symbol.

    Returns
    -------
    str
        The symbol, e.g. ``"Pb"``.
    """
    return _SYMBOLS[atomic_number(z) - 1]


# ------------------------------------------------------------------- formula / material
_TOKEN = re.compile(r"([A-Z][a-z]?)|(\(|\[)|(\)|\])|(\d+(?:\.\d*)?|\.\d+)")


def parse_formula(formula: str) -> dict[int, float]:
    """Parse a chemical formula into atom counts.

    Parameters
    ----------
    formula : str
        E.g. ``"H2O"``, ``"Lu1.8Y0.2SiO5"``, ``"Ca5(PO4)3OH"``, ``"K4[Fe(CN)6]"``.
        Symbols are case sensitive; counts may be fractional; groups in ``()`` or ``[]``
        may nest and take a count.

    Returns
    -------
    dict of int to float
        Atom count per formula unit, keyed by atomic number.

    Raises
    ------
    ValueError
        Naming ``formula``, for unknown symbols, unbalanced brackets, zero counts or
        stray characters.
    """
    if not isinstance(formula, str) or not formula.strip():
        raise ValueError(f"formula must be a non-empty string, got {formula!r}")
    text = formula.strip()
    stack: list[dict[int, float]] = [{}]
    opener: list[str] = []
    pending: dict[int, float] | None = None  # last element or group, awaiting a count

    def flush(count: float = 1.0) -> None:
        for z, n in (pending or {}).items():
            stack[-1][z] = stack[-1].get(z, 0.0) + n * count

    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ValueError(f"formula {formula!r}: unexpected character "
                             f"{text[pos]!r} at position {pos}")
        sym, opn, cls, num = m.groups()
        if num is not None:
            count = float(num)
            if pending is None:
                raise ValueError(f"formula {formula!r}: count {num!r} at position {pos} "
                                 "does not follow an element or a group")
            if not count > 0.0:
                raise ValueError(f"formula {formula!r}: count must be > 0, got {num!r}")
            flush(count)
            pending = None
        else:
            flush()
            pending = None
            if sym is not None:
                if sym not in _SYMBOL_TO_Z:
                    raise ValueError(f"formula {formula!r}: unknown element {sym!r} at "
                                     f"position {pos}")
                pending = {_SYMBOL_TO_Z[sym]: 1.0}
            elif opn is not None:
                stack.append({})
                opener.append(opn)
            else:
                if not opener or {"(": ")", "[": "]"}[opener[-1]] != cls:
                    raise ValueError(f"formula {formula!r}: unbalanced {cls!r} at "
                                     f"position {pos}")
                opener.pop()
                pending = stack.pop()
                if not pending:
                    raise ValueError(f"formula {formula!r}: empty group at position "
                                     f"{pos}")
        pos = m.end()
    flush()
    if opener:
        raise ValueError(f"formula {formula!r}: unclosed {opener[-1]!r}")
    return dict(sorted(stack[0].items()))


def _formula_mass_fractions(formula: str) -> dict[int, float]:
    counts = parse_formula(formula)
    masses = {z: n * _atomic_weight(z) for z, n in counts.items()}
    total = sum(masses.values())
    return {z: m / total for z, m in masses.items()}


def _check_fraction(value, what: str) -> float:
    try:
        w = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"material: mass fraction of {what!r} must be a number, "
                         f"got {value!r}") from None
    if not math.isfinite(w) or w < 0.0:
        raise ValueError(f"material: mass fraction of {what!r} must be finite and >= 0, "
                         f"got {value!r}")
    return w


def _combine(pairs, normalise: bool, lookup=None) -> dict[int, float]:
    pairs = [(comp, _check_fraction(w, comp)) for comp, w in pairs]
    if not pairs:
        raise ValueError("material: a mixture needs at least one component")
    total = sum(w for _, w in pairs)
    if normalise:
        if not total > 0.0:
            raise ValueError("material: mixture weights must not all be zero")
    elif abs(total - 1.0) > 1e-6:
        raise ValueError(f"material: mass fractions must sum to 1 (within 1e-6), "
                         f"they sum to {total!r}")
    out: dict[int, float] = {}
    for comp, w in pairs:
        for z, f in _component_fractions(comp, lookup).items():
            out[z] = out.get(z, 0.0) + f * w / total
    return dict(sorted(out.items()))


def _component_fractions(comp, lookup=None) -> dict[int, float]:
    if isinstance(comp, (int, np.integer)) and not isinstance(comp, bool):
        return {atomic_number(comp): 1.0}
    if isinstance(comp, str) and comp.strip() in _SYMBOL_TO_Z:  # element symbols as is
        return {_SYMBOL_TO_Z[comp.strip()]: 1.0}
    return mass_fractions(comp, lookup)


@functools.lru_cache(maxsize=512)
def _string_fractions(text: str, lookup=None) -> tuple[tuple[int, float], ...]:
    s = text.strip()
    if "*" in s or "+" in s:  # XrayPhysics mixture syntax, relative mass weights
        pairs = []
        for term in s.split("+"):
            weight, star, comp = term.partition("*")
            if not star:
                raise ValueError(f"material {text!r}: mixture terms must read "
                                 f"'weight*formula', got {term.strip()!r}")
            pairs.append((comp.strip(), weight.strip()))
        return tuple(_combine(pairs, normalise=True, lookup=lookup).items())
    return tuple(_formula_mass_fractions(s).items())


def _str_fractions(text: str, lookup=None) -> dict[int, float]:
    if lookup is not None and "*" not in text and "+" not in text:
        mat = lookup(text)  # names before formulas
        if mat is not None:
            return mass_fractions(mat, lookup)
    try:
        return dict(_string_fractions(text, lookup))
    except ValueError as exc:
        if "*" in text or "+" in text:
            raise
        raise ValueError(f"material {text!r} is neither a library material name nor a "
                         f"chemical formula ({exc})") from None


def mass_fractions(material, lookup=None) -> dict[int, float]:
    """Elemental mass fractions of a material.

    Parameters
    ----------
    material : int, str, mapping, sequence of pairs or Material
        See the docstring of :mod:`leap.physics.cross_sections`.
    lookup : callable, optional
        ``lookup(name)`` -> an object with ``composition`` and ``density`` (a
        material), or None for an unknown name. A string without ``*`` or ``+``
        (also as a mixture component) is first looked up with it, then read as a
        formula. Without it, strings are formulas or mixture strings only.

    Returns
    -------
    dict of int to float
        Mass fraction per atomic number; the values sum to 1.
    """
    if hasattr(material, "composition") and hasattr(material, "density"):
        comp = material.composition
        items = comp.items() if isinstance(comp, Mapping) else comp
        return _combine(list(items), normalise=False, lookup=lookup)
    if isinstance(material, (bool, np.bool_)):
        raise ValueError(f"material must describe a material, got {material!r}")
    if isinstance(material, (int, np.integer)):
        return {atomic_number(material): 1.0}
    if isinstance(material, str):
        return _str_fractions(material, lookup)
    if isinstance(material, Mapping):
        return _combine(list(material.items()), normalise=False, lookup=lookup)
    if isinstance(material, (list, tuple)):
        try:
            pairs = [(c, w) for c, w in material]
        except (TypeError, ValueError):
            raise ValueError("material: a mixture list must hold (component, "
                             "mass_fraction) pairs") from None
        return _combine(pairs, normalise=False, lookup=lookup)
    raise ValueError(f"material must be an element, formula, mixture or Material, "
                     f"got {type(material).__name__}")


