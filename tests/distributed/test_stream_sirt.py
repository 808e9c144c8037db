"""SIRT and OS-SART out of core (leap.distributed.stream_sirt, issue 51): equal to the
in-memory methods, the data read once, nothing left on disk but the output."""
import os

import numpy as np
import pytest

import leap.distributed as ld
from dask_cases import close_to as _close, counted, rel, stream_problem as _problem, views_read
from leap.algorithms import sart, sirt
from leap.distributed import slabs, stream, stream_scratch

pytest.importorskip("zarr")


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
    out = ld.sirt(system, counted(g, reads), 3, f0, mask=mask, nonnegative=False, relaxation=1.2,
                  client=False, out=str(tmp_path / "r.h5"), slabs=5)
    assert rel(np.asarray(out), ref) <= 1e-5
    assert views_read(reads, g.shape[0]) == g.shape[0]


def test_refusals(tmp_path):
    system, g = _problem("fan")
    with pytest.raises(ValueError, match="no callback"):
        ld.sirt(system, g, 2, client=False, out=tmp_path / "r.zarr", callback=print)
    with pytest.raises(ValueError, match="client=False"):
        ld.sirt(system, g, 2, out=tmp_path / "r.zarr", client=None)
    with pytest.raises(ValueError, match="shape"):
        ld.sirt(system, g[1:], 2, client=False, out=tmp_path / "r.zarr")
    assert os.listdir(tmp_path) == []


# ------------------------------------------------------------------------ OS-SART
@pytest.mark.parametrize("kind", ["parallel", "cone", "helical"])
def test_os_sart_equals_in_memory(kind, tmp_path):
    system, g = _problem(kind)
    zero = np.zeros(system.volume_shape, np.float32)
    ref = sart(system.operator(), g, zero.copy(), 2, 5)
    assert rel(ref, sart(system.operator(), g, zero.copy(), 2, 1)) > 1e-3   # subsets matter
    out = ld.sart(system, g, 2, 5, client=False, out=tmp_path / "r.zarr", slabs=4)
    _close(out, ref)
    assert os.listdir(tmp_path) == ["r.zarr"]


def test_os_sart_start_mask_and_one_read(tmp_path, monkeypatch):
    """A start, a mask, no nonnegativity, row blocks of one row and view blocks that
    do not line up with the subsets: each view read once, grouped by subset right."""
    monkeypatch.setattr(stream, "ROW_BLOCK_BYTES", 1)
    system, g = _problem("cone")
    monkeypatch.setattr(stream, "VIEW_BLOCK_BYTES", 3 * 4 * g.shape[1] * g.shape[2])
    rng = np.random.default_rng(1)
    f0 = rng.random(system.volume_shape, dtype=np.float32)
    mask = (rng.random(g.shape) > 0.2).astype(np.float32)
    ref = sart(system.operator(), g, f0.copy(), 2, 4, mask=mask, nonnegative=False,
               relaxation=1.1)
    reads = []
    out = ld.sart(system, counted(g, reads), 2, 4, f0, mask=mask, nonnegative=False,
                  relaxation=1.1, client=False, out=str(tmp_path / "r.h5"), slabs=5)
    _close(out, ref)
    assert views_read(reads, g.shape[0]) == g.shape[0]
    assert os.listdir(tmp_path) == ["r.h5"]


def test_os_sart_sensitivities_made_again(tmp_path, monkeypatch):
    """Sensitivities past SENSITIVITY_DISK_BYTES are made again in each pass, not
    stored: the same result."""
    from leap.distributed import stream_sirt
    monkeypatch.setattr(stream_sirt, "SENSITIVITY_DISK_BYTES", 0)
    made = []
    monkeypatch.setattr(stream_scratch.Workspace, "volume",
                        lambda self, key, copies=1, _v=stream_scratch.Workspace.volume:
                        made.append(key) or _v(self, key, copies))
    system, g = _problem("cone")
    ref = sart(system.operator(), g, np.zeros(system.volume_shape, np.float32), 2, 4)
    _close(ld.sart(system, g, 2, 4, client=False, out=tmp_path / "r.zarr", slabs=3), ref)
    assert made == ["f"]


def test_os_sart_subsets_as_in_memory(tmp_path):
    """More subsets than views: one per view, as leap.algorithms.sart."""
    system, g = _problem("parallel")
    system, g = system.views(slice(0, 6)), np.ascontiguousarray(g[:6])
    ref = sart(system.operator(), g, np.zeros(system.volume_shape, np.float32), 2, 9)
    _close(ld.sart(system, g, 2, 9, client=False, out=tmp_path / "r.zarr", slabs=3), ref)


def test_os_sart_refusals(tmp_path):
    system, g = _problem("cone")
    out = tmp_path / "r.zarr"
    with pytest.raises(ValueError, match="num_subsets must be >= 0"):
        ld.sart(system, g, 2, -1, client=False, out=out)
    with pytest.raises(TypeError, match="num_subsets must be an integer"):
        ld.sart(system, g, 2, 2.5, client=False, out=out)
    with pytest.raises(ValueError, match="relaxation"):
        ld.sart(system, g, 2, 4, relaxation=2.0, client=False, out=out)
    with pytest.raises(ValueError, match=r"mask must have shape \(40, 23, 32\)"):
        ld.sart(system, g, 2, 4, mask=g[:, 1:], client=False, out=out)
    with pytest.raises(ValueError, match="out-of-core SART .* takes no callback"):
        ld.sart(system, g, 2, 4, client=False, out=out, callback=print)
    bad = g.copy()
    bad[17, 3, 4] = np.nan
    with pytest.raises(ValueError, match="g holds NaN .* view 17, row 3, column 4"):
        ld.sart(system, bad, 2, 4, client=False, out=out)
    assert os.listdir(tmp_path) == []


def test_failure_leaves_nothing(tmp_path, monkeypatch):
    """A write that fails in the middle of the iterations: no output, no scratch."""
    system, g = _problem("cone")
    calls = []
    write = stream_scratch.ScratchVolume.write

    def failing(self, z0, f):
        calls.append(z0)
        if len(calls) == 40:
            raise OSError("No space left on device")
        return write(self, z0, f)

    monkeypatch.setattr(stream_scratch.ScratchVolume, "write", failing)
    with pytest.raises(OSError, match="No space left"):
        ld.sart(system, g, 5, 3, client=False, out=tmp_path / "r.h5", slabs=4)
    assert len(calls) == 40 and os.listdir(tmp_path) == []


def test_default_slabs_bound_the_rows(tmp_path, monkeypatch):
    """Without ``slabs``: one slab for a volume under SLAB_BYTES (no Dask minimum of
    two), thinned while the slabs' rows exceed SLAB_ROWS_BYTES (as the out-of-core
    FBP's): memory stays bounded when the projections dwarf the volume."""
    system, g = _problem("parallel")
    ref = sart(system.operator(), g, np.zeros(system.volume_shape, np.float32), 2, 3)
    assert len(stream_scratch.stream_bounds(system, None)) == 1
    monkeypatch.setattr(slabs, "SLAB_BYTES", 4 * 32 * 32 * 4)       # 4 slices a slab
    assert len(stream_scratch.stream_bounds(system, None)) == 4
    monkeypatch.setattr(stream, "SLAB_ROWS_BYTES", 1)
    assert len(stream_scratch.stream_bounds(system, None)) == 13     # one slice each
    _close(ld.sart(system, g, 2, 3, client=False, out=tmp_path / "r.zarr"), ref)
