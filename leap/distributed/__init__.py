"""Beyond one machine: projection, FBP and iterative reconstruction on Dask.

Volumes are cut into z-slabs (:mod:`leap.distributed.slabs`); each slab is an independent
task that reads only the detector rows (and, for helical scans, the views) it touches,
from the geometry's own range queries (:meth:`leap.system.CTSystem.part`). Inputs and
outputs are ``dask.array`` s: data in Zarr, HDF5 or TIFF stacks are read lazily
(:mod:`leap.distributed.sources`), results can be written to Zarr all or nothing.

Maps (lazy dask arrays, equal to the in-memory :class:`~leap.system.CTSystem` results
to float rounding): :func:`fbp`, :func:`project`, :func:`backproject`.

Iterative methods (the iterate stays on the workers between iterations, as slabs):
:func:`sirt`, :func:`sart` (OS-SART), :func:`ls` (conjugate gradients), :func:`rwls`
(weighted least squares with a total-variation term), with the arguments, progress
bar and callback of :mod:`leap.algorithms`.

Where the work runs (``client=``): a :class:`distributed.Client` of any cluster (e.g.
SLURM through ``dask_jobqueue.SLURMCluster``), a scheduler address, None (the default
client, else a LocalCluster made once) or False (this process: out of core on one
machine when the result is written to a file: FBP, SIRT, OS-SART, LS and WLS then stream
in passes that read each frame once, :mod:`leap.distributed.stream`,
:mod:`leap.distributed.stream_sirt` and :mod:`leap.distributed.stream_ls`, whose module
docstrings give the cost per iteration against memory; the other maps run on Dask's
threaded scheduler, RWLS with a regulariser on a cluster or in memory).

Example::

    from leapctype import tomographicModels
    import leap.distributed as ld

    leapct = tomographicModels()
    leapct.set_conebeam(...); leapct.set_default_volume()
    f = ld.fbp(leapct.system, "scan.h5:/entry/data/data", out="recon.zarr")
"""
from .iterative import ls, rwls, sart, sirt
from .maps import backproject, fbp, project
from .slabs import SlabPlan, default_slabs, slab_bounds
from .sources import (HDF5Source, Source, TiffStack, ZarrSource, as_dask, is_source, open_hdf5,
                      open_tiff_stack, open_zarr, write_zarr)

__all__ = ["fbp", "project", "backproject", "sirt", "sart", "ls", "rwls", "as_dask",
           "is_source", "open_zarr", "open_hdf5", "open_tiff_stack", "write_zarr", "Source",
           "ZarrSource", "HDF5Source", "TiffStack",
           "SlabPlan", "default_slabs", "slab_bounds"]
