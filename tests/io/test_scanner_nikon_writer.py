"""nikon.write_scan, the inverse of the Nikon reader: a leap ConeBeam scan written as
Nikon files reads back as the same geometry and data."""
import numpy as np
import pytest

import leap
from leap.io import open_scan
from leap.io.scanners.nikon import write_scan

pytest.importorskip("tifffile")


@pytest.mark.parametrize("angles_file", ["ctdata", "ang", None])
def test_written_nikon_scan_reads_back(tmp_path, angles_file):
    det = leap.Detector(num_rows=6, num_cols=9, pixel_height=0.8, pixel_width=0.7,
                        center_row=3.3, center_col=4.1)
    geo = leap.ConeBeam(detector=det, angles=np.radians(np.arange(12) * 30.0 + 7.0),
                        sod=150.0, sdd=300.0, tau=0.7)
    rng = np.random.default_rng(0)
    L = rng.random(geo.num_angles * 6 * 9).reshape(12, 6, 9)
    write_scan(tmp_path, geo, 60000.0 * np.exp(-L), angles_file=angles_file)
    scan = open_scan(tmp_path)
    back = scan.system.geometry
    assert back.detector == det and back.sod == 150.0 and back.sdd == 300.0
    assert back.tau == pytest.approx(0.7)
    np.testing.assert_allclose(back.angles, geo.angles, atol=1e-8)
    np.testing.assert_allclose(np.asarray(scan.attenuation()), L, atol=2e-4)
    with pytest.raises(ValueError, match="counts must be"):
        write_scan(tmp_path / "x", geo, np.zeros((12, 6, 8)))
    with pytest.raises(ValueError, match="circular flat-detector"):
        write_scan(tmp_path / "x", geo.with_changes(helical_pitch=1.0), np.zeros((12, 6, 9)))
