"""CT systems by name: how a :class:`~leap.system.CTSystem` reaches ``torch.ops.leap.*``.

A custom op's arguments are tensors and plain values, so the linear ops take the system
as a *key*, a short string naming it in this process's registry::

    key = register_system(system)          # 'cts-3f9c…'
    g = torch.ops.leap.project(f, key)

The key is a digest of the system's content (its pickle, arrays included), so equal
systems get one key, in this process and in any other: a program exported with
``torch.export`` (which stores the key as a constant) runs wherever the same system has
been registered again, e.g. by building the module that made it. The registry holds
systems weakly: an entry lives as long as something holds its system (a module's
facade caches it; an autograd graph's context holds the system it ran on), so a
registry of many passing geometries does not grow.

``facade_key`` is the torch modules' way in. It is called by ``torch.compile``'s
Dynamo *at trace time*, not traced (``torch.compiler.assume_constant_result``), with the
facade's version number as an argument on which Dynamo guards: a change made through
``module.leapct.set_*`` bumps the version and so recompiles with the new key, and
nothing of the facade's Python is traced.
"""
from __future__ import annotations

import hashlib
import pickle
import threading
import weakref

import torch

__all__ = ["register_system", "system_for", "facade_key"]

# Re-entrant: a weak reference's callback (_forget) may run, through the garbage
# collector, while this thread holds the lock in register_system.
_lock = threading.RLock()
#: key → weak references to the live systems with that content.
_by_key: dict[str, list] = {}
#: id(system) → (weak reference, key): a system's key, computed once.
_key_of: dict[int, tuple] = {}


def _digest(system) -> str:
    """A digest of the system's content: its pickle. Protocol 4, whose arrays carry no
    read-only flag (protocol 5's out-of-band buffers do, and a system's frozen arrays
    come back writeable from a copy, which would give equal systems two keys)."""
    return "cts-" + hashlib.blake2b(pickle.dumps(system, protocol=4),
                                    digest_size=12).hexdigest()


def _forget(key, ident, ref):
    with _lock:
        refs = [r for r in _by_key.get(key, ()) if r is not ref]
        if refs:
            _by_key[key] = refs
        else:
            _by_key.pop(key, None)
        entry = _key_of.get(ident)
        if entry is not None and entry[0] is ref:
            del _key_of[ident]


def register_system(system) -> str:
    """Enter ``system`` (a :class:`~leap.system.CTSystem`) in the registry; returns its key.

    Cheap after the first call for the same object (the key is remembered); equal
    systems share a key. The entry lasts while ``system`` is alive."""
    from ..system import CTSystem
    if not isinstance(system, CTSystem):
        raise TypeError(f"system must be a leap CTSystem, got {type(system).__name__}")
    ident = id(system)
    entry = _key_of.get(ident)
    if entry is not None and entry[0]() is system:
        return entry[1]
    key = _digest(system)
    with _lock:
        ref = weakref.ref(system, lambda r, k=key, i=ident: _forget(k, i, r))
        _by_key.setdefault(key, []).append(ref)
        _key_of[ident] = (ref, key)
    return key


def system_for(key: str):
    """The live system registered under ``key``; raises a RuntimeError naming the key if
    none is (e.g. an exported program run in a process that never built its system)."""
    if not isinstance(key, str):
        raise TypeError(f"a CT system key must be a str (from leap.torch.register_system), "
                        f"got {type(key).__name__}")
    for ref in _by_key.get(key, ()):
        system = ref()
        if system is not None:
            return system
    raise RuntimeError(f"no CT system {key!r} is registered in this process: build the "
                       "module (or call leap.torch.register_system(system)) that defines it "
                       "before running a graph or exported program that uses it")


@torch.compiler.assume_constant_result
def _facade_key(leapct, version):
    # Run, not traced, by Dynamo; ``version`` is only there to be guarded on.
    # .system raises naming the set_* call that is missing; the facade caches it, which
    # keeps the registry entry alive while the facade is unchanged.
    return register_system(leapct.system)


def facade_key(leapct) -> str:
    """The key of a ``tomographicModels`` facade's current system (registered)."""
    return _facade_key(leapct, leapct._version)
