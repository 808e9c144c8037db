"""Distributed fbp/project/backproject equal the in-memory CTSystem maps (≤ 1e-6)."""
from pathlib import Path

import numpy as np
import pytest

import leap.distributed as ld
from leap.system import CTSystem

from dask_cases import GEOMETRIES, make_system, rel


@pytest.mark.parametrize("kind", GEOMETRIES)
def test_maps_equal_in_memory_on_a_cluster(dask_client, kind):
    s = make_system(kind)
    rng = np.random.default_rng(1)
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    nz = s.volume_shape[0]
    slabs = 5 if nz % 5 else 7
    assert nz % slabs, "the slab count must not divide the volume"
    P = ld.project(s, f, client=dask_client, slabs=slabs)
    B = ld.backproject(s, g, client=dask_client, slabs=slabs)
    F = ld.fbp(s, g, client=dask_client, slabs=slabs)
    assert 1 < len(B.chunks[0]) <= slabs and len(set(B.chunks[0])) == 2   # uneven last slab
    P, B, F = dask_client.compute([P, B, F], sync=True)
    assert rel(P, s.project(f)) <= 1e-6
    assert rel(B, s.backproject(g)) <= 1e-6
    assert rel(F, s.fbp(g)) <= 1e-6


@pytest.mark.parametrize("slabs", [1, 2, 9])
def test_slab_counts_and_chunked_inputs_without_a_cluster(slabs):
    """client=False runs in this process; inputs of any chunking give the same result."""
    da = pytest.importorskip("dask.array")
    s = make_system("cone")
    rng = np.random.default_rng(2)
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    gd = da.from_array(g, chunks=(7, 5, 32))
    fd = da.from_array(f, chunks=(4, 16, 16))
    assert rel(ld.fbp(s, gd, client=False, slabs=slabs).compute(), s.fbp(g)) <= 1e-6
    assert rel(ld.project(s, fd, client=False, slabs=slabs).compute(), s.project(f)) <= 1e-6
    assert rel(ld.backproject(s, gd, client=False, slabs=slabs).compute(),
               s.backproject(g)) <= 1e-6


def test_settings_reach_the_slabs():
    """Field of view, volume mask, attenuated model and FBP options travel with the system."""
    from leap.compat import tomographicModels
    ct = tomographicModels()
    ct.set_parallelbeam(30, 9, 24, 1, 1, 4, 11.5, ct.setAngleArray(30, 360))
    ct.set_default_volume()
    ct.set_diameterFOV(16)
    mask = np.ones(ct.get_volume_dim(), np.float32)
    mask[:, :5] = 0
    ct.set_volume_mask(mask)
    ct.set_cylindircalAttenuationMap(0.02, 9)
    ct.set_rampFilter(12)
    s = ct.system
    rng = np.random.default_rng(3)
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    assert rel(ld.project(s, f, client=False, slabs=4).compute(), s.project(f)) <= 1e-6
    assert rel(ld.backproject(s, g, client=False, slabs=4).compute(), s.backproject(g)) <= 1e-6
    assert rel(ld.fbp(s, g, client=False, slabs=4).compute(), s.fbp(g)) <= 1e-6


def _helical_ffs(curved=True):
    """The helical system on a curved (or flat) detector with a (large) flying focal spot
    (flat: FBP reconstructs each spot's views apart, leap.reconstruction.focal_spots)."""
    s = make_system("helical")
    geo = s.geometry
    k = np.arange(geo.num_angles)
    sign = np.where(k % 2, 1.0, -1.0)
    shifts = np.stack([0.004 * sign, 0.8 * np.where((k // 2) % 2, 1.0, -1.0), 1.0 * sign],
                      axis=1)
    geo = geo.with_changes(detector=geo.detector.with_changes(curved=curved),
                           source_shifts=shifts)
    return s.with_changes(geometry=geo)


@pytest.mark.parametrize("kind", ["helical", "helical_ffs", "helical_ffs_flat"])
def test_part_covers_what_each_slab_touches(kind):
    """CTSystem.part: the slabs' shares sum to the projection; their back-projections and
    FBPs are slices of the whole (helical: on view subsets, cropped rows; with a flying
    focal spot the shifted rays stay inside the views and rows a part keeps)."""
    s = make_system("helical") if kind == "helical" else _helical_ffs(kind == "helical_ffs")
    s = s.with_changes(volume=s.volume.with_changes(num_z=60))
    rng = np.random.default_rng(4)
    f = rng.random(s.volume_shape, dtype=np.float32)
    g = rng.random(s.projection_shape, dtype=np.float32)
    acc = np.zeros(s.projection_shape, np.float32)
    F = s.fbp(g)
    for z0, z1 in ld.slab_bounds(60, 6):
        part, v, r = s.part(z0, z1)
        assert v.stop - v.start < s.projection_shape[0]        # helical: fewer views
        acc[v, r] += part.project(np.ascontiguousarray(f[z0:z1]))
        pf, vf, rf = s.part(z0, z1, for_fbp=True)
        assert rel(pf.fbp(np.ascontiguousarray(g[vf, rf])), F[z0:z1]) <= 1e-6
    assert rel(acc, s.project(f)) <= 1e-6


def test_part_of_a_tilted_detector_keeps_the_rows_fbp_resamples():
    """FBP of a tilted detector resamples its views upright (leap.reconstruction.tilt_resampling): a
    part's FBP must still be the slice of the whole, so its rows reach the resampling's
    taps."""
    s = make_system("cone")
    s = s.with_changes(geometry=s.geometry.with_changes(tilt=np.deg2rad(4.0)),
                       volume=s.volume.with_changes(num_z=21))
    g = np.random.default_rng(5).random(s.projection_shape, dtype=np.float32)
    F = s.fbp(g)
    rows = []
    for z0, z1 in ld.slab_bounds(21, 4):
        pf, vf, rf = s.part(z0, z1, for_fbp=True)
        rows.append(rf.stop - rf.start)
        assert rel(pf.fbp(np.ascontiguousarray(g[vf, rf])), F[z0:z1]) <= 1e-6
    assert min(rows) < s.projection_shape[1]             # parts do crop the detector


def test_slab_bounds():
    assert ld.slab_bounds(10, 3) == [(0, 4), (4, 8), (8, 10)]
    assert ld.slab_bounds(5, 5) == [(i, i + 1) for i in range(5)]
    assert ld.slab_bounds(10, 6) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert ld.slab_bounds(7, 1) == [(0, 7)]


def test_bad_inputs_are_named_before_work(tmp_path):
    s = make_system("cone")
    g = np.zeros(s.projection_shape, np.float32)
    with pytest.raises(ValueError, match=r"g must have shape \(40, 23, 32\)"):
        ld.fbp(s, g[:, :5], client=False)
    with pytest.raises(TypeError, match="g must be float32.*astype"):
        ld.fbp(s, g.astype(np.float64), client=False)
    with pytest.raises(ValueError, match="f must have shape"):
        ld.project(s, np.zeros((3, 3, 3), np.float32), client=False)
    with pytest.raises(ValueError, match="slabs must be between 1 and"):
        ld.fbp(s, g, client=False, slabs=0)
    with pytest.raises(TypeError, match="slabs must be a whole number"):
        ld.fbp(s, g, client=False, slabs=2.5)
    with pytest.raises(TypeError, match="system must be a leap CTSystem"):
        ld.fbp("cone", g, client=False)
    with pytest.raises(TypeError, match="client must be"):
        ld.fbp(s, g, client=42)
    with pytest.raises(TypeError, match="g must be a dask array"):
        ld.fbp(s, object(), client=False)
    assert isinstance(s, CTSystem)


def test_unreachable_clients_fail_before_work(monkeypatch):
    distributed = pytest.importorskip("distributed")
    from leap.distributed import _cluster
    monkeypatch.setattr(_cluster, "CONNECT_TIMEOUT_S", 1.0)
    s = make_system("parallel")
    g = np.zeros(s.projection_shape, np.float32)
    with pytest.raises(ConnectionError, match="cannot reach a Dask scheduler"):
        ld.fbp(s, g, client="tcp://127.0.0.1:9", )
    with distributed.LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as lc:
        c = distributed.Client(lc, set_as_default=False)
        c.close()
        with pytest.raises(ConnectionError, match="not running"):
            ld.fbp(s, g, client=c)


def test_nan_in_a_slab_is_reported():
    s = make_system("parallel")
    g = np.zeros(s.projection_shape, np.float32)
    g[3, 2, 4] = np.nan
    with pytest.raises(ValueError, match="finite|NaN"):
        ld.fbp(s, g, client=False, slabs=3).compute()


@pytest.mark.slow
def test_no_client_makes_a_local_cluster(tmp_path):
    """client=None with no default client: leap starts its own LocalCluster (in a fresh
    process, so the session's client is not the default there)."""
    import subprocess
    import sys
    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np\n"
        "import leap.distributed as ld\n"
        "from leap.distributed import _cluster\n"
        "from dask_cases import make_system, rel\n"
        "if __name__ == '__main__':\n"
        "    s = make_system('fan')\n"
        "    g = np.random.default_rng(0).random(s.projection_shape, dtype=np.float32)\n"
        "    f = ld.fbp(s, g, slabs=3).compute()\n"
        "    assert rel(f, s.fbp(g)) <= 1e-6\n"
        "    c = _cluster._LOCAL['client']\n"
        "    print('workers', len(c.scheduler_info()['workers']))\n")
    env = dict(__import__("os").environ, PYTHONPATH=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "workers" in out.stdout
