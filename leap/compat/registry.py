"""The facade's numbered models: LEAP's ``param_id``.

LEAP's C++ library keeps a list of models (geometry, volume, options) and every
``tomographicModels`` object works on one of them, named by its ``param_id``: two Python
objects built with the same id share one model, and ``leaptorch``'s autograd Functions
find a module's geometry by its id. Here a model is the dict of settings of a
:class:`~leap.compat.model.tomographicModels` object (its ``__dict__``); this registry
maps ids to those dicts weakly, so a model lives as long as an object works on it, or,
made by ``create_new_model``, for the life of the process, as LEAP's list keeps it.
"""
from __future__ import annotations

import itertools
import numbers
import threading
import weakref


class Parameters(dict):
    """The settings of one model; a dict subclass so that the registry can hold it
    weakly."""


_registry: "weakref.WeakValueDictionary[int, Parameters]" = weakref.WeakValueDictionary()
#: Models made by ``create_new_model``: held for the life of the process.
library_models: list = []
_ids = itertools.count()
_lock = threading.Lock()


def model_id(param_id) -> int:
    """``param_id`` as a model id: an integer >= 0, or a one-element integer array or
    tensor (as ``leaptorch`` passes it). Raises TypeError otherwise."""
    if not isinstance(param_id, numbers.Integral) and hasattr(param_id, "item"):
        try:
            param_id = param_id.item()
        except (ValueError, RuntimeError):       # more than one element
            pass
    if isinstance(param_id, bool) or not isinstance(param_id, numbers.Integral) or param_id < 0:
        raise TypeError(f"param_id must be an integer >= 0 (a model id), got {param_id!r}")
    return int(param_id)


def register(params: Parameters, pid: int | None) -> int:
    """Enter ``params`` under ``pid`` (None: the next unused id); returns the id."""
    with _lock:
        if pid is None:
            pid = next(_ids)
            while pid in _registry:
                pid = next(_ids)
        _registry[pid] = params
    return pid


def registered(pid: int) -> Parameters | None:
    """The settings of the live model ``pid``, or None."""
    return _registry.get(pid)
