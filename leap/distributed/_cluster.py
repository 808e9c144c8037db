"""Which Dask scheduler runs the work, checked before any work starts.

``client`` arguments of :mod:`leap.distributed` take

* a :class:`distributed.Client` (any cluster: local, SLURM through ``dask-jobqueue``, …);
* a scheduler address string (``'tcp://host:8786'``), connected to once;
* ``None``: the current default client when there is one, else a
  :class:`distributed.LocalCluster` made once per process (one worker process per two
  cores, each worker's Numba kernels using its share of the cores);
* ``False``: no cluster, Dask's threaded scheduler in this process (out-of-core on one
  machine: results written to Zarr stream slab by slab with bounded memory).
"""
from __future__ import annotations

import atexit
import os

_LOCAL = {}

#: Seconds to wait for a scheduler (and one of its workers) to answer.
CONNECT_TIMEOUT_S = 10.0


def _import_distributed():
    try:
        import distributed
    except ImportError as e:      # pragma: no cover - the extra is installed in CI
        raise ImportError("leap.distributed needs Dask's distributed scheduler: "
                          "pip install 'leap-ct[distributed]'") from e
    return distributed


def local_client():
    """The process's own LocalCluster client (made on first use, closed at exit)."""
    if "client" not in _LOCAL:
        distributed = _import_distributed()
        cores = os.cpu_count() or 1
        workers = max(1, cores // 2)
        threads = max(1, cores // workers)
        # One task per worker at a time, its Numba kernels on the worker's cores: the
        # slabs are coarse, so task parallelism inside a worker would only oversubscribe.
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True,
            env={"NUMBA_NUM_THREADS": str(threads)}, dashboard_address=":0")
        _LOCAL["cluster"] = cluster
        _LOCAL["client"] = distributed.Client(cluster)
        atexit.register(_close_local)
    return _LOCAL["client"]


def _close_local():
    client, cluster = _LOCAL.pop("client", None), _LOCAL.pop("cluster", None)
    for c in (client, cluster):
        if c is not None:
            try:
                c.close()
            except Exception:       # pragma: no cover - best effort at interpreter exit
                pass


def resolve_client(client, *, timeout: float | None = None):
    """The :class:`distributed.Client` to run on (None for ``client=False``), checked to
    reach a running scheduler with at least one worker: a clear ``ConnectionError``
    otherwise, before any work starts."""
    if client is False:
        return None
    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    distributed = _import_distributed()
    if client is None:
        try:
            client = distributed.default_client()
        except ValueError:
            return local_client()
    elif isinstance(client, str):
        address = client
        try:
            client = distributed.Client(address, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as e:
            raise ConnectionError(f"cannot reach a Dask scheduler at {address!r} within "
                                  f"{timeout:g} s: {e}") from e
    elif not isinstance(client, distributed.Client):
        raise TypeError("client must be a distributed.Client, a scheduler address, None "
                        f"(default client or a LocalCluster) or False (no cluster), got "
                        f"{type(client).__name__}")
    check_client(client, timeout)
    return client


def check_client(client, timeout: float = CONNECT_TIMEOUT_S):
    """Raise ``ConnectionError`` unless ``client`` reaches its scheduler and a worker."""
    if client.status != "running":
        raise ConnectionError(f"the Dask client is {client.status!r}, not running: its "
                              "scheduler cannot be reached (was it closed?)")
    try:
        client.wait_for_workers(1, timeout=timeout)
    except Exception as e:
        raise ConnectionError(f"the Dask scheduler of {client!r} has no worker that answers "
                              f"within {timeout:g} s ({type(e).__name__}: {e})") from e


def compute(client, *collections):
    """Compute dask collections on ``client`` (or in this process when None); returns a
    tuple of results."""
    if client is None:
        import dask
        return dask.compute(*collections, scheduler="threads")
    return tuple(client.compute(list(collections), sync=True))


def persist(client, *collections):
    """Persist dask collections (their chunks stay on the workers), waiting until they
    are computed so that memory stays bounded iteration by iteration."""
    if client is None:
        import dask
        return dask.persist(*collections, scheduler="threads")
    out = client.persist(list(collections))
    _import_distributed().wait(out)
    return tuple(out)
