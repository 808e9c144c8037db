"""A measured scan larger than a worker's memory: Nikon files → lazy attenuation → FBP on
leap.distributed, each worker reading only the detector rows of its slabs (issue 32)."""
import numpy as np
import pytest

import leap
import leap.distributed as ld
from dask_cases import memory_limited_client, rel, start_rss_sampler, stop_rss_sampler
from leap.io import open_scan
from leap.io.scanners.nikon import write_scan

distributed = pytest.importorskip("distributed")
pytest.importorskip("tifffile")


@pytest.mark.slow
def test_nikon_scan_four_times_a_workers_memory(tmp_path):
    """128 MiB of raw uint16 projections, two workers of 32 MiB memory_limit: no worker's
    peak memory grows by more than the budget, and the result equals the in-memory
    reconstruction of the same attenuation data."""
    # A tall, narrow detector: a slab of slices needs few of its rows (a slab task's peak
    # memory is about three times its rows' float32 data: the rows, G, filter blocks).
    det = leap.Detector(num_rows=1024, num_cols=256, pixel_height=0.1, pixel_width=0.1,
                        center_row=511.5, center_col=127.5 + 3.2)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 256, endpoint=False),
                        sod=500.0, sdd=1000.0)
    vol = leap.Volume(num_x=64, num_y=64, num_z=1024, voxel_width=0.2, voxel_height=0.05)
    f = np.zeros(vol.shape, np.float32)
    x, y = np.meshgrid(vol.x_samples(), vol.y_samples())
    f[:, (x - 1) ** 2 + (y + 0.5) ** 2 < 4 ** 2] = 0.02
    f[:, (x + 1.5) ** 2 + y ** 2 < 1 ** 2] = 0.05
    g = leap.project(geo, vol, f)
    limit = 32 << 20
    raw_bytes = 2 * g.size
    assert raw_bytes >= 4 * limit
    write_scan(tmp_path, geo, 60000.0 * np.exp(-g), name="big")
    del g
    scan = open_scan(tmp_path)
    scan = scan.with_system(scan.system.with_changes(volume=vol))
    att = scan.attenuation()
    with memory_limited_client(limit) as client:
        # Warm up each worker on the whole pipeline (imports of tifffile and zarr, the
        # kernels' compilation), on a two-slice system, so the growth measured below is
        # what the data cost.
        small = scan.system.slab(0, 2)
        warm = str(tmp_path / "warm")
        client.run(lambda dask_worker: ld.fbp(small, att, client=False, out=f"{warm}-"
                                              f"{dask_worker.name}.zarr").compute())
        before = client.run(start_rss_sampler)
        out = ld.fbp(scan.system, att, client=client, slabs=128,
                     out=tmp_path / "recon.zarr")
        after = client.run(stop_rss_sampler)
    growth = {w: after[w] - before[w] for w in after}
    print("per-worker peak RSS growth (MB):", growth, "raw MB:", raw_bytes / 2 ** 20)
    assert max(growth.values()) < limit / 2 ** 20, growth
    reference = scan.system.fbp(np.asarray(att))
    # float32 rounding: a slab's back-projector sums the rows of its crop, the whole's
    # all rows (the cone family's cumulative row sums)
    assert rel(out[500:516].compute(scheduler="threads"), reference[500:516]) <= 1e-5
    inside = ((x - 1) ** 2 + (y + 0.5) ** 2 < 3 ** 2) & ((x + 1.5) ** 2 + y ** 2 > 1.6 ** 2)
    assert abs(float(np.mean(reference[512][inside])) - 0.02) < 2e-3
