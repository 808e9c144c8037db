"""Bounded-memory calibration of a scan read lazily (issue 51): Scan.find_center_col reads
a band of rows, Scan.find_tilt the views its conjugate projections need, with the
estimates of the whole scan in memory."""
import numpy as np
import pytest

import leap
from leap.preprocessing.geometric_calibration import find_center_col, find_tilt
from leap.io import open_scan
from leap.io.lazy import Source
from leap.io.scanners.nikon import write_scan

pytest.importorskip("tifffile")


class Counting(Source):
    """A source recording the number of elements of each read."""

    def __init__(self, src):
        self.src, self.shape, self.dtype, self.chunks = src, src.shape, src.dtype, src.chunks
        self.reads = []

    def read(self, key):
        x = self.src.read(key)
        self.reads.append(np.size(x))
        return x


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scan")
    det = leap.Detector(num_rows=48, num_cols=64, pixel_height=0.2, pixel_width=0.2,
                        center_row=23.5, center_col=31.5 + 2.6)
    geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 2 * np.pi, 90, endpoint=False),
                        sod=100.0, sdd=200.0)
    vol = leap.Volume(num_x=40, num_y=40, num_z=40, voxel_width=0.12, voxel_height=0.12)
    f = np.zeros(vol.shape, np.float32)
    x, y = np.meshgrid(vol.x_samples(), vol.y_samples())
    f[5:35, (x - 0.8) ** 2 + (y - 0.3) ** 2 < 1.1 ** 2] = 0.3
    f[10:30, (x + 1.0) ** 2 + (y + 0.6) ** 2 < 0.5 ** 2] = 0.6
    write_scan(folder, geo, 60000.0 * np.exp(-leap.project(geo, vol, f)), name="s")
    s = open_scan(folder)
    # The files record the true centre: search from a wrong one.
    return s.with_center_col(31.5), 31.5 + 2.6


def test_center_col_from_a_band_of_rows(scan, monkeypatch):
    s, truth = scan
    whole = np.asarray(s.attenuation())
    full = find_center_col(s.system.geometry, whole)[0]
    att = Counting(s.attenuation())
    monkeypatch.setattr(type(s), "attenuation", lambda self, **kw: att)
    lazy = s.find_center_col()
    assert lazy == pytest.approx(full, abs=1e-9)
    assert abs(lazy - truth) <= abs(full - truth) + 1e-9 and abs(lazy - truth) < 0.5
    assert sum(att.reads) <= 7 * whole.shape[0] * whole.shape[2]      # 7 of 48 rows


def test_tilt_from_the_views_it_needs(scan, monkeypatch):
    s, _ = scan
    s = s.with_center_col(31.5 + 2.6)
    whole = np.asarray(s.attenuation())
    full = find_tilt(s.system.geometry, whole)
    att = Counting(s.attenuation())
    monkeypatch.setattr(type(s), "attenuation", lambda self, **kw: att)
    assert s.find_tilt() == full
    assert sum(att.reads) < whole.size / 2
    assert abs(full) < 0.3          # degrees: the scan has no tilt


def test_margin_checked(scan):
    with pytest.raises(ValueError, match="margin"):
        scan[0].find_center_col(margin=-1)
