"""Small systems of every geometry for the Dask tests (set up the LEAP way, taken over
through ``tomographicModels().system``)."""
import contextlib
import time

import numpy as np


def _model():
    from leap.compat import tomographicModels
    return tomographicModels()


def make_system(kind):
    """A small CTSystem of geometry ``kind``, its volume's slice count odd/prime so that
    slab counts rarely divide it."""
    ct = _model()
    A = ct.setAngleArray
    if kind == "parallel":
        ct.set_parallelbeam(40, 13, 32, 1, 1, 6.2, 15.5, A(40, 180))
    elif kind == "fan":
        ct.set_fanbeam(40, 11, 32, 1, 1, 5, 15.5, A(40, 360), 200, 300)
    elif kind == "cone":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 360), 100, 160)
    elif kind == "cone_curved":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 200), 100, 160)
        ct.set_curvedDetector()
    elif kind == "helical":
        ct.set_conebeam(240, 16, 32, 1, 1, 7.5, 15.5, A(240, 3 * 360), 100, 160)
        ct.set_helicalPitch(1.2)
    elif kind == "modular":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 360), 100, 160)
    elif kind == "cone_offset":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 9.5, A(40, 360), 100, 160)
        ct.set_offsetScan(True)
    else:
        raise ValueError(kind)
    ct.set_default_volume()
    if kind == "modular":
        ct.convert_to_modularbeam()
    return ct.system


GEOMETRIES = ("parallel", "fan", "cone", "cone_curved", "helical", "modular", "cone_offset")


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))


# --------------------------------------------------------- memory-bounded clusters
@contextlib.contextmanager
def memory_limited_client(limit, n_workers=2):
    """A Client on a LocalCluster of ``n_workers`` single-threaded worker processes with
    ``memory_limit=limit`` bytes each. The memory limit is the per-worker budget the
    tests measure against; the spill/pause/terminate thresholds are off because a worker
    process with Numba and NumPy loaded already exceeds such budgets in RSS."""
    import dask
    import distributed
    with dask.config.set({"distributed.worker.memory.target": False,
                          "distributed.worker.memory.spill": False,
                          "distributed.worker.memory.pause": False,
                          "distributed.worker.memory.terminate": False}), \
            distributed.LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                     memory_limit=limit, dashboard_address=":0",
                                     env={"NUMBA_NUM_THREADS": "1"}) as lc, \
            distributed.Client(lc, set_as_default=False) as client:
        yield client


def start_rss_sampler(dask_worker):
    """On a worker: sample its RSS every 2 ms in a thread; returns the current RSS (MB)."""
    import threading
    import psutil
    proc = psutil.Process()
    state = {"peak": 0, "run": True}

    def sample():
        while state["run"]:
            state["peak"] = max(state["peak"], proc.memory_info().rss)
            time.sleep(0.002)

    dask_worker._leap_sampler = state
    threading.Thread(target=sample, daemon=True).start()
    return proc.memory_info().rss / 2 ** 20


def stop_rss_sampler(dask_worker):
    state = dask_worker._leap_sampler
    state["run"] = False
    return state["peak"] / 2 ** 20


# ------------------------------------------------------------- out-of-core runs
def stream_problem(kind):
    """A small system of geometry ``kind`` and the projections of two nested boxes."""
    system = make_system(kind)
    f = np.zeros(system.volume_shape, np.float32)
    f[2:-2, 8:-8, 8:-8] = 1.0
    f[4:-4, 12:-14, 10:-12] = 2.0
    return system, system.project(f)


def close_to(out, ref):
    """Equal to float rounding: within 1e-4 of the largest value."""
    out = np.asarray(out)
    assert np.abs(out - ref).max() <= 1e-4 * np.abs(ref).max()


def counted(x, reads):
    """``x`` as an in-memory source that appends every key it is read with to ``reads``."""
    from leap.io.lazy import InMemory

    class Counted(InMemory):
        def read(self, key):
            reads.append(key)
            return super().read(key)

    return Counted(x)


def views_read(reads, num_views):
    """How many views the keys in ``reads`` covered, all reads together."""
    return sum(len(range(*k[0].indices(num_views))) for k in reads)
