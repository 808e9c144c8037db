"""``fbp``, ``project`` and ``backproject`` of a :class:`~leap.system.CTSystem` on Dask."""
from __future__ import annotations

import numpy as np

from . import _cluster
from .slabs import SlabPlan, check_system
from .sources import open_source, store_zarr


def check_input(name: str, x, shape: tuple):
    """Raise a clear error unless the dask array ``x`` is float32 of ``shape``."""
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} for this system, "
                         f"got {tuple(x.shape)}")
    if x.dtype != np.float32:
        raise TypeError(f"{name} must be float32, got {x.dtype}; convert it lazily with "
                        f"{name}.astype('float32') (after any flat-field correction)")


def prepare(system, x, name: str, shape_of: str, client, slabs):
    """Resolve the client, plan the slabs and open ``x`` as a checked dask array."""
    check_system(system)
    cl = _cluster.resolve_client(client)
    plan = SlabPlan(system, slabs, cl)
    return cl, plan, open_input(x, name, getattr(system, shape_of), cl)


def open_input(x, name: str, shape: tuple, client=None):
    """``x`` checked, as a :class:`~leap.distributed.sources.Source` (files: each slab
    task reads its own region) or a dask array. A NumPy array travels inside the task
    graph, so the scheduler can redo any task after a worker is lost; data of many GB
    belong in a Zarr/HDF5/TIFF source, read by the workers themselves."""
    arr = open_source(x, name)
    check_input(name, arr, shape)
    return arr


def _finish(result, out, client, overwrite):
    if out is None:
        return result
    return store_zarr(result, out, client, overwrite)


def fbp(system, g, client=None, slabs=None, *, out=None, overwrite=False):
    """Filtered back-projection of ``g`` on a Dask cluster, slab by slab.

    Parameters
    ----------
    system : CTSystem
        The problem (e.g. ``tomographicModels().system``), any geometry FBP supports.
    g : dask array, NumPy array or source
        Projections (num_angles, num_rows, num_cols) float32: a ``dask.array``, a NumPy
        array, a Zarr array or path, an HDF5 dataset (``'scan.h5:/entry/data/data'``) or
        TIFF files (see :func:`leap.distributed.as_dask`), read lazily.
    client : distributed.Client, address, None or False
        Where to run (see :mod:`leap.distributed`); None: the default client or a
        LocalCluster; False: this process, no cluster.
    slabs : int, optional
        Number of z-slabs (default :func:`leap.distributed.slabs.default_slabs`).
    out : path, optional
        A Zarr store to write the volume into (all or nothing); the result then reads
        from it.

    Returns
    -------
    dask.array.Array
        The volume (num_z, num_y, num_x) float32, chunked by slabs, equal to
        ``system.fbp(g)`` to float rounding. Lazy unless ``out`` is given: compute it
        (``.compute()``, ``.persist()``) or store it.
    """
    cl, plan, g = prepare(system, g, "g", "projection_shape", client, slabs)
    return _finish(plan.fbp(g), out, cl, overwrite)


def backproject(system, g, client=None, slabs=None, *, out=None, overwrite=False):
    """Back-projection (``system.backproject``) of ``g`` on a Dask cluster, slab by slab;
    arguments and result as for :func:`fbp`."""
    cl, plan, g = prepare(system, g, "g", "projection_shape", client, slabs)
    return _finish(plan.backproject(g), out, cl, overwrite)


def project(system, f, client=None, slabs=None, *, out=None, overwrite=False):
    """Forward projection (``system.project``) of the volume ``f`` (num_z, num_y, num_x)
    float32 on a Dask cluster: each slab projects into the rows (helical: views) it
    reaches and the shares are summed pairwise. Returns a dask array (num_angles,
    num_rows, num_cols) float32; other arguments as for :func:`fbp`."""
    cl, plan, f = prepare(system, f, "f", "volume_shape", client, slabs)
    return _finish(plan.project(f), out, cl, overwrite)
