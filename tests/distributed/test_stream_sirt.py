"""SIRT out of core (leap.distributed.stream_sirt, issue 51): equal to the in-memory SIRT,
the data read once, nothing left on disk but the output."""
import os

import numpy as np
import pytest

import leap.distributed as ld
from dask_cases import make_system, rel
from leap.algorithms import sirt
from leap.distributed import stream
from leap.io.lazy import InMemory

pytest.importorskip("zarr")


def _problem(kind):
    system = make_system(kind)
    f = np.zeros(system.volume_shape, np.float32)
    f[2:-2, 8:-8, 8:-8] = 1.0
    f[4:-4, 12:-14, 10:-12] = 2.0
    return system, system.project(f)


@pytest.mark.parametrize("kind", ["parallel", "cone", "helical", "modular"])
def test_equals_in_memory_sirt(kind, tmp_path):
    system, g = _problem(kind)
    ref = sirt(system.operator(), g, np.zeros(system.volume_shape, np.float32), 4)
    out = ld.sirt(system, g, 4, client=False, out=tmp_path / "r.zarr", slabs=4)
    assert rel(np.asarray(out), ref) <= 1e-5
    assert os.listdir(tmp_path) == ["r.zarr"]


def test_start_mask_and_signed_values(tmp_path, monkeypatch):
    """A starting volume, a projection mask, no nonnegativity, scratch row blocks of one
    row; the data read once (a block of views at a time)."""
    monkeypatch.setattr(stream, "ROW_BLOCK_BYTES", 1)
    system, g = _problem("cone")
    rng = np.random.default_rng(0)
    f0 = rng.random(system.volume_shape, dtype=np.float32)
    mask = (rng.random(g.shape) > 0.2).astype(np.float32)
    ref = sirt(system.operator(), g, f0.copy(), 3, mask=mask, nonnegative=False,
               relaxation=1.2)
    reads = []

    class Counted(InMemory):
        def read(self, key):
            reads.append(key)
            return super().read(key)

    out = ld.sirt(system, Counted(g), 3, f0, mask=mask, nonnegative=False, relaxation=1.2,
                  client=False, out=str(tmp_path / "r.h5"), slabs=5)
    assert rel(np.asarray(out), ref) <= 1e-5
    assert sum(len(range(*k[0].indices(g.shape[0]))) for k in reads) == g.shape[0]


def test_refusals(tmp_path):
    system, g = _problem("fan")
    with pytest.raises(ValueError, match="no callback"):
        ld.sirt(system, g, 2, client=False, out=tmp_path / "r.zarr", callback=print)
    with pytest.raises(ValueError, match="client=False"):
        ld.sirt(system, g, 2, out=tmp_path / "r.zarr", client=None)
    with pytest.raises(ValueError, match="shape"):
        ld.sirt(system, g[1:], 2, client=False, out=tmp_path / "r.zarr")
    assert os.listdir(tmp_path) == []
