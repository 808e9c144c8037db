"""Geometries of other CT toolkits in and out of leap: ASTRA (:mod:`leap.interop.astra`),
TIGRE (:mod:`leap.interop.tigre`) and CIL (:mod:`leap.interop.cil`).

Each peer's geometry becomes a :class:`~leap.system.CTSystem` in leap's conventions
(standard leap geometry classes where they hold it exactly, the modular beam
otherwise) and goes back. No peer is imported: the functions read and write the
peers' plain values (ASTRA's dicts, TIGRE's and CIL's attributes), so they work
without the peer installed. Each function's docstring gives the convention chain and
the public document or code it follows.
"""
from .astra import from_astra, from_astra_data, to_astra, to_astra_data
from .cil import from_cil, to_cil
from .tigre import from_tigre, to_tigre

__all__ = ["from_astra", "to_astra", "from_astra_data", "to_astra_data", "from_tigre",
           "to_tigre", "from_cil", "to_cil"]
