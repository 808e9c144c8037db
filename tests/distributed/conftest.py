"""Shared pieces of the Dask tests: a two-worker LocalCluster and small systems of every
geometry (set up the LEAP way, taken over through ``tomographicModels().system``)."""
import numpy as np
import pytest

pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="package")
def client():
    """Two worker processes, one thread each (as CI has two cores)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0",
                                  env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
            distributed.Client(cluster) as c:
        yield c
