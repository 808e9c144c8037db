"""Dask inputs through the LEAP facade: ``FBP``, ``project``, ``backproject``, ``SIRT``
and ``LS`` of :class:`leap.compat.model.tomographicModels` accept a ``client=`` keyword
and inputs that are ``dask.array`` s or lazy sources (Zarr, ``'file.h5:/dataset'``, TIFF
stacks); they then run on :mod:`leap.distributed` with the facade's
:class:`~leap.system.CTSystem`, so a LEAP script scales out without rewriting.

The output argument keeps LEAP's meaning: a NumPy array is filled and returned; None (or
a lazy output) returns the dask array of the result.
"""
from __future__ import annotations


def wants_dask(client, *arrays) -> bool:
    """Whether a facade call goes to :mod:`leap.distributed`: a client was given or an
    input is a dask array or a lazy source."""
    if client is not None:
        return True
    from ..distributed.sources import is_source
    return any(a is not None and is_source(a) for a in arrays)


def deliver(result, out, client):
    """``result`` (a dask array) into the NumPy array ``out`` (returned), or ``result``
    itself when ``out`` is None or not a NumPy array."""
    import numpy as np
    if not isinstance(out, np.ndarray):
        return result
    from ..distributed import _cluster
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"the output array must have shape {tuple(result.shape)}, "
                         f"got {tuple(out.shape)}")
    out[...] = _cluster.compute(_cluster.resolve_client(client), result)[0]
    return out


def run(name, system, x, out, client, *args, **kwargs):
    """``leap.distributed.<name>(system, x, *args, client=…, **kwargs)`` delivered into
    ``out``."""
    from .. import distributed
    result = getattr(distributed, name)(system, x, *args, client=client, **kwargs)
    return deliver(result, out, client)
