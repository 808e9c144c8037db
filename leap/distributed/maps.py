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


def _finish(result, out, client, overwrite, out_format=None):
    if out is None:
        return result
    from .outputs import infer_format, open_output
    fmt = infer_format(out) if out_format is None else out_format
    if fmt == "zarr":
        return store_zarr(result, out, client, overwrite)
    writer = open_output(out, result.shape, result.chunks[0], out_format=fmt,
                         overwrite=overwrite)
    try:
        _write_slabs(result, writer, client)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    return writer.result()


def _write_slabs(result, writer, client):
    """Compute the slabs of ``result`` (chunks along z) and write each as it arrives."""
    starts = np.cumsum((0,) + result.chunks[0][:-1])
    blocks = [result[z0:z0 + n] for z0, n in zip(starts, result.chunks[0])]
    if client is None:
        for z0, b in zip(starts, blocks):
            writer.write(int(z0), b.compute(scheduler="threads"))
        return
    import distributed
    futures = {client.compute(b): int(z0) for z0, b in zip(starts, blocks)}
    for fut in distributed.as_completed(list(futures)):
        writer.write(futures[fut], fut.result())
        fut.release()


def _streams(system) -> bool:
    """Whether the streamed FBP (filter pass, then slabs) serves ``system``: not with a
    special model, and not for the geometries whose FBP is another one's (a tilted cone
    beam's upright form, a flying focal spot's groups), which go by slabs of
    :meth:`~leap.system.CTSystem.part` instead."""
    from ..reconstruction.focal_spots import uses_spot_groups
    from ..reconstruction.tilt_resampling import is_tilted
    geometry = getattr(system, "geometry", None)
    return (getattr(system, "model", 0) is None and not is_tilted(geometry)
            and not uses_spot_groups(geometry))


def fbp(system, g, client=None, slabs=None, *, out=None, overwrite=False, out_format=None,
        progress=None, scratch_dir=None, retries=2):
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
        Where to write the volume (:mod:`leap.distributed.outputs`): a Zarr store (all or
        nothing; ``*.zarr`` or any path without another suffix), an HDF5 file
        (``recon.h5`` or ``'recon.h5:/entry/volume'``, all or nothing) or a TIFF stack
        (``recon/slice.tif`` → ``recon/slice_00000.tif``…, one slice per file written as
        slabs finish); the result then reads from it.
    out_format : {'zarr', 'hdf5', 'tiff'}, optional
        The output format when the path's suffix does not say it.
    progress, scratch_dir, retries
        The out-of-core pass (``client=False`` with ``out``, a system without a special
        model, not tilted, no flying focal spot): see :func:`leap.distributed.stream.stream_fbp` (progress bars, where the
        scratch file of filtered rows goes, how often a failed slab is redone).

    With ``client=False`` and ``out`` given, the work streams in two passes on this
    machine (:mod:`leap.distributed.stream`): each frame is read, flat-fielded and
    filtered once into a scratch file of filtered rows, then slabs are back-projected
    from their rows, reading, computing and writing overlapped, memory bounded.

    Returns
    -------
    dask.array.Array
        The volume (num_z, num_y, num_x) float32, chunked by slabs, equal to
        ``system.fbp(g)`` to float rounding. Lazy unless ``out`` is given: compute it
        (``.compute()``, ``.persist()``) or store it.
    """
    if client is False and out is not None and _streams(system):
        from .stream import stream_fbp
        check_system(system)
        from .sources import Source
        if isinstance(g, (Source, np.ndarray)):      # read as they are: no dask needed
            check_input("g", g, system.projection_shape)
            x = g
        else:
            x = open_input(g, "g", system.projection_shape)
        return stream_fbp(system, x, out, slabs=slabs, overwrite=overwrite,
                          out_format=out_format, progress=progress, scratch_dir=scratch_dir,
                          retries=retries)
    cl, plan, g = prepare(system, g, "g", "projection_shape", client, slabs)
    return _finish(plan.fbp(g), out, cl, overwrite, out_format)


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
