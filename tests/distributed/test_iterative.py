"""Distributed SIRT / OS-SART / LS / RWLS+TV equal leap.algorithms after k iterations."""
import numpy as np
import pytest

import leap.distributed as ld
from leap import algorithms as alg
from leap.algorithms.regularization import TotalVariation

from dask_cases import make_system, rel


def _problem(kind):
    s = make_system(kind)
    f = np.zeros(s.volume_shape, np.float32)
    f[3:-3, 8:-8, 6:-10] = 0.02
    f[5:-5, 12:-12, 12:-12] = 0.035
    return s, f, s.project(f)


CASES = {
    "sirt": (lambda s, g, **kw: ld.sirt(s, g, 4, **kw),
             lambda op, g, f: alg.sirt(op, g, f, 4)),
    "os-sart": (lambda s, g, **kw: ld.sart(s, g, 2, 4, **kw),
                lambda op, g, f: alg.sart(op, g, f, 2, 4)),
    "ls": (lambda s, g, **kw: ld.ls(s, g, 5, **kw),
           lambda op, g, f: alg.ls(op, g, f, 5)),
    "rwls-tv-sqs": (
        lambda s, g, **kw: ld.rwls(s, g, 4, regularizer=TotalVariation(0.005, 20.0),
                                   weights=np.exp(-g), preconditioner="SQS", **kw),
        lambda op, g, f: alg.rwls(op, g, f, 4, regularizer=TotalVariation(0.005, 20.0),
                                  weights=np.exp(-g), preconditioner="SQS")),
}


@pytest.mark.parametrize("method", list(CASES))
def test_iterations_equal_in_memory_on_a_cluster(dask_client, method):
    s, _, g = _problem("cone")
    dist, mem = CASES[method]
    fd = dist(s, g, client=dask_client, slabs=4)
    assert len(fd.chunks[0]) == 4
    fm = mem(s.operator(), g, np.zeros(s.volume_shape, np.float32))
    assert rel(fd.compute(), fm) <= 1e-5


@pytest.mark.parametrize("kind", ["helical", "parallel"])
def test_rwls_tv_without_nonnegativity_and_a_start(kind):
    """TV's gradient and sums across slab boundaries, a non-zero start (scaled as in
    memory), no positivity: on helical and parallel systems, in this process."""
    s, ftrue, g = _problem(kind)
    f0 = (0.5 * ftrue + 0.001).astype(np.float32)
    reg = TotalVariation(0.01, 30.0)
    fd = ld.rwls(s, g, 4, f0, regularizer=reg, nonnegative=False, client=False, slabs=5)
    fm = alg.rwls(s.operator(), g, f0.copy(), 4, regularizer=reg, nonnegative=False)
    assert rel(fd.compute(), fm) <= 1e-5


def test_tv_pieces_match_in_memory():
    from leap.distributed import tv
    from leap import regularization as R
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(5)
    f = rng.random((11, 9, 8), dtype=np.float32)
    d = rng.random((11, 9, 8), dtype=np.float32)
    reg = TotalVariation(0.1, 2.0)
    fd = da.from_array(f, chunks=(3, 9, 8))
    dd = da.from_array(d, chunks=(4, 9, 8))
    assert np.allclose(tv.gradient(reg, fd).compute(scheduler="sync"),
                       R.tv_gradient(f, 0.1, 2.0), rtol=1e-6, atol=1e-7)
    assert tv.cost(reg, fd).compute() == pytest.approx(R.tv_cost(f, 0.1, 2.0), rel=1e-12)
    assert tv.quad_form(reg, fd, dd).compute() == pytest.approx(
        R.tv_quad_form(f, d, 0.1, 2.0), rel=1e-12)


def test_callback_progress_and_stop():
    s, _, g = _problem("parallel")
    seen = []

    def callback(it, f, fit):
        seen.append((it, fit, float(f.mean().compute())))
        return it == 3

    f = ld.sirt(s, g, 10, client=False, slabs=3, callback=callback, progress=True)
    assert [it for it, _, _ in seen] == [1, 2, 3]
    fits = [fit for _, fit, _ in seen]
    assert fits[0] > fits[1] > fits[2] > 0
    ref = alg.sirt(s.operator(), g, np.zeros(s.volume_shape, np.float32), 3)
    assert rel(f.compute(), ref) <= 1e-5


def test_facade_scales_out_without_rewriting(dask_client, tmp_path):
    """A LEAP script: FBP, project, backproject and SIRT of a dataset with client=."""
    h5py = pytest.importorskip("h5py")
    from leap.compat import tomographicModels
    ct = tomographicModels()
    ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, ct.setAngleArray(40, 360), 100, 160)
    ct.set_default_volume()
    f = ct.allocate_volume()
    ct.set_FORBILD(f)
    g = ct.allocate_projections()
    ct.project(g, f)
    with h5py.File(tmp_path / "scan.h5", "w") as h:
        h.create_dataset("/entry/data/data", data=g, chunks=(8, 23, 32))
    src = f"{tmp_path / 'scan.h5'}:/entry/data/data"
    lazy = ct.FBP(src, client=dask_client)
    assert rel(lazy.compute(), ct.FBP(g)) <= 1e-6
    out = ct.allocate_volume()
    assert ct.FBP(src, out, client=dask_client) is out
    assert rel(out, ct.FBP(g)) <= 1e-6
    g2 = ct.allocate_projections()
    ct.project(g2, f, client=dask_client)
    assert rel(g2, g) <= 1e-6
    b = ct.backproject(src, None, client=dask_client)
    assert rel(b.compute(), ct.backproject(g, ct.allocate_volume())) <= 1e-6
    fs = ct.allocate_volume()
    ct.SIRT(src, fs, 3, client=dask_client, progress=False)
    fm = ct.allocate_volume()
    ct.SIRT(g, fm, 3, progress=False)
    assert rel(fs, fm) <= 1e-5


def test_iterative_bad_inputs():
    s, _, g = _problem("parallel")
    with pytest.raises(ValueError, match="preconditioner None or 'SQS'"):
        ld.rwls(s, g, 2, preconditioner="RAMP", client=False)
    with pytest.raises(TypeError, match="TotalVariation"):
        ld.rwls(s, g, 2, regularizer=object(), client=False)
    with pytest.raises(ValueError, match="mask must have shape"):
        ld.sirt(s, g, 2, mask=np.ones((2, 2, 2), np.float32), client=False)
    with pytest.raises(ValueError, match="num_iter"):
        ld.sirt(s, g, -1, client=False)
    with pytest.raises(ValueError, match="f must have shape"):
        ld.sirt(s, g, 1, np.zeros((2, 2, 2), np.float32), client=False)
