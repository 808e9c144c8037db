"""LS / WLS by conjugate gradients out of core (leap.distributed.stream_ls, issue 51):
equal to leap.algorithms.rwls, the data read once, nothing left on disk but the output."""
import os

import numpy as np
import pytest

import leap.distributed as ld
from dask_cases import close_to as _close, counted, stream_problem as _problem, views_read
from leap.algorithms import least_squares, ls, rwls, wls
from leap.distributed import stream
from leap.regularization import TotalVariation

pytest.importorskip("zarr")


@pytest.mark.parametrize("kind, preconditioner, nonnegative", [
    ("parallel", None, True), ("cone", None, False), ("cone", "SQS", True),
    ("helical", "SQS", False), ("cone", "RAMP", True)])
def test_ls_equals_in_memory(kind, preconditioner, nonnegative, tmp_path):
    system, g = _problem(kind)
    ref = ls(system.operator(), g, np.zeros(system.volume_shape, np.float32), 4,
             preconditioner=preconditioner, nonnegative=nonnegative)
    out = ld.ls(system, g, 4, preconditioner=preconditioner, nonnegative=nonnegative,
                client=False, out=tmp_path / "r.zarr", slabs=4)
    _close(out, ref)
    assert os.listdir(tmp_path) == ["r.zarr"]


def test_wls_start_restarts_and_one_read(tmp_path, monkeypatch):
    """Array weights, a non-zero start (scaled as in memory), CG restarted every 2
    iterations, row blocks of one row; g and the weights each read once."""
    monkeypatch.setattr(stream, "ROW_BLOCK_BYTES", 1)
    monkeypatch.setattr(least_squares, "CG_RESTART", 2)
    system, g = _problem("cone")
    rng = np.random.default_rng(2)
    f0 = rng.random(system.volume_shape, dtype=np.float32) - 0.2
    W = np.exp(-0.3 * g).astype(np.float32)
    ref = wls(system.operator(), g, f0.copy(), 5, weights=W, preconditioner="SQS")
    reads = []
    out = ld.rwls(system, counted(g, reads), 5, f0, weights=counted(W, reads), preconditioner="SQS",
                  client=False, out=str(tmp_path / "r.h5"), slabs=5)
    _close(out, ref)
    assert views_read(reads, g.shape[0]) == 2 * g.shape[0]
    assert os.listdir(tmp_path) == ["r.h5"]


def test_scalar_weights_and_the_early_stop(tmp_path):
    system, g = _problem("parallel")
    zero = np.zeros(system.volume_shape, np.float32)
    ref = rwls(system.operator(), g, zero.copy(), 3, weights=2.5, nonnegative=False)
    _close(ld.rwls(system, g, 3, weights=2.5, nonnegative=False, client=False,
                   out=tmp_path / "a.zarr"), ref)
    # g = 0 from f = 0: no gradient, CG stops at once (the volume stays zero).
    out = ld.ls(system, np.zeros_like(g), 3, client=False, out=tmp_path / "b.zarr")
    assert not np.asarray(out).any()


def test_ls_refusals(tmp_path):
    system, g = _problem("cone")
    out = tmp_path / "r.zarr"
    with pytest.raises(NotImplementedError, match="takes no regularizer"):
        ld.rwls(system, g, 2, regularizer=TotalVariation(0.01, 10.0), client=False, out=out)
    with pytest.raises(ValueError, match="preconditioner None or 'SQS' or 'RAMP', got 'SARR'"):
        ld.ls(system, g, 2, preconditioner="sarr", client=False, out=out)
    with pytest.raises(TypeError, match="not a callable"):
        ld.rwls(system, g, 2, weights=lambda r: r, client=False, out=out)
    with pytest.raises(ValueError, match="takes no callback"):
        ld.ls(system, g, 2, client=False, out=out, callback=print)
    with pytest.raises(ValueError, match=r"weights \(W\) must have shape \(40, 23, 32\)"):
        ld.rwls(system, g, 2, weights=g[:-1], client=False, out=out)
    with pytest.raises(ValueError, match=r"f must have shape"):
        ld.ls(system, g, 2, np.zeros((3, 3, 3), np.float32), client=False, out=out)
    with pytest.raises(ValueError, match="num_iter must be >= 0"):
        ld.ls(system, g, -2, client=False, out=out)
    # Found while streaming, after the output and the scratch files were made.
    W = np.ones_like(g)
    W[-1, -1, -1] = np.inf
    with pytest.raises(ValueError, match=r"weights \(W\) holds NaN or infinite values"):
        ld.rwls(system, g, 2, weights=W, client=False, out=out)
    assert os.listdir(tmp_path) == []


def test_data_and_weights_from_zarr_stores(tmp_path):
    """g and W given as paths of Zarr stores, opened like the Dask path opens them."""
    import zarr
    system, g = _problem("parallel")
    W = np.exp(-0.2 * g).astype(np.float32)
    for name, x in (("g.zarr", g), ("w.zarr", W)):
        zarr.open_array(str(tmp_path / name), mode="w", shape=x.shape, chunks=(8,) + x.shape[1:],
                        dtype="float32")[:] = x
    ref = wls(system.operator(), g, np.zeros(system.volume_shape, np.float32), 3, weights=W)
    out = ld.rwls(system, str(tmp_path / "g.zarr"), 3, weights=str(tmp_path / "w.zarr"),
                  client=False, out=tmp_path / "r.zarr")
    _close(out, ref)
    assert sorted(os.listdir(tmp_path)) == ["g.zarr", "r.zarr", "w.zarr"]
