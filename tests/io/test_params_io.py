"""Tests for leap.io.params: LEAP's plain-text parameter files."""
from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REFERENCE_DIR
from leap.io import LeapParamWarning, read_param_file, write_param_file
from leap.io.param_writer import format_params

REF_DIR = REFERENCE_DIR
REF_FILES = sorted(REF_DIR.glob("*.param"))

VOLUME = dict(numX=80, numY=80, numZ=40, voxelWidth=0.5, voxelHeight=0.5,
              offsetX=0.0, offsetY=0.0, offsetZ=0.0)

EXPECTED = {
    "cone.param": dict(
        VOLUME, geometry="cone", numAngles=72, numRows=40, numCols=80,
        pixelHeight=1.0, pixelWidth=1.0, centerRow=19.5, centerCol=39.5,
        angularRange=360.0, sod=300.0, sdd=600.0, tau=0.0, tiltAngle=0.0, helicalPitch=0.0),
    "cone_curved.param": dict(
        VOLUME, geometry="cone", detectorType="curved", numAngles=72, numRows=40, numCols=80,
        pixelHeight=1.0, pixelWidth=1.0, centerRow=19.5, centerCol=39.5,
        angularRange=360.0, sod=300.0, sdd=600.0, tau=0.0, tiltAngle=0.0, helicalPitch=0.0),
    "fan2d.param": dict(
        numX=128, numY=128, numZ=1, voxelWidth=0.5, voxelHeight=1.0,
        offsetX=0.0, offsetY=0.0, offsetZ=0.0, geometry="fan", numAngles=120, numRows=1,
        numCols=128, pixelHeight=1.0, pixelWidth=1.0, centerRow=0.0, centerCol=63.5,
        angularRange=360.0, sod=500.0, sdd=1000.0, tau=0.0, tiltAngle=0.0),
    "parallel2d.param": dict(
        numX=96, numY=96, numZ=1, voxelWidth=1.0, voxelHeight=1.0,
        offsetX=0.0, offsetY=0.0, offsetZ=0.0, geometry="parallel", numAngles=90, numRows=1,
        numCols=96, pixelHeight=1.0, pixelWidth=1.0, centerRow=0.0, centerCol=47.5,
        angularRange=180.0, sod=0.0, sdd=0.0, tiltAngle=0.0),
}

INT_KEYS = {"numX", "numY", "numZ", "numAngles", "numRows", "numCols"}

# LEAP's demo file demo_leapctype/sample_data/conebeam_geometry.txt (written by
# an older LEAP: no tiltAngle line).
DEMO_CONE = """\
# CT volume parameters
numX = 512
numY = 512
numZ = 512
voxelWidth = 5.107142e-01
voxelHeight = 5.107142e-01
offsetX = 0.000000e+00
offsetY = 0.000000e+00
offsetZ = 0.000000e+00

# CT geometry parameters
geometry = cone
numAngles = 720
numRows = 512
numCols = 512
pixelHeight = 6.500000e-01
pixelWidth = 6.500000e-01
centerRow = 2.555000e+02
centerCol = 2.555000e+02
angularRange = 3.600000e+02
sod = 1.100000e+03
sdd = 1.400000e+03
tau = 0.000000e+00
helicalPitch = 0.000000e+00
"""


def _read_quiet(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeapParamWarning)
        return read_param_file(path)


def _write(tmp_path, text, name="p.param"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _upstream_style_parse(text):
    """What LEAP's Python loader does with a file: '#' only in column 0, split
    at '=', everything but the list/geometry keys through float()."""
    as_text = {"geometry", "phis", "sourcePositions", "moduleCenters", "rowVectors", "colVectors",
               "proj_geometry", "proj_phis", "proj_srcpos", "proj_modcenter", "proj_rowvec",
               "proj_colvec"}
    out = {}
    for line in text.splitlines(keepends=True):
        if not line.strip() or line[0] == "#":
            continue
        key, value = line.split("=")[0].strip(), line.split("=")[1].strip()
        out[key] = value if key in as_text else float(value)
    return out


def _assert_same(got: dict, want: dict, *, exact=True):
    for key, value in want.items():
        assert key in got, key
        if isinstance(value, np.ndarray):
            g = np.asarray(got[key])
            assert g.dtype == np.float64
            assert g.shape == np.shape(value), key
            if exact:
                assert np.array_equal(g, value), key
            else:
                np.testing.assert_allclose(g, value, rtol=1e-6, atol=1e-6, err_msg=key)
        elif isinstance(value, float):
            assert type(got[key]) is float, key
            assert got[key] == value if exact else math.isclose(got[key], value, rel_tol=1e-6), key
        else:
            assert type(got[key]) is type(value), key
            assert got[key] == value, key


# ---------------------------------------------------------------------------
# reference files
# ---------------------------------------------------------------------------

def test_reference_files_present():
    assert {p.name for p in REF_FILES} == set(EXPECTED)


@pytest.mark.parametrize("path", REF_FILES, ids=lambda p: p.name)
def test_reference_file_loads_with_expected_values(path):
    d = _read_quiet(path)
    want = EXPECTED[path.name]
    _assert_same(d, want)
    for key in INT_KEYS:
        assert type(d[key]) is int
    n = want["numAngles"]
    assert d["phis"].dtype == np.float64 and d["phis"].shape == (n,)
    np.testing.assert_array_equal(d["phis"], np.arange(n) * want["angularRange"] / n)
    assert d["phis"][1] == want["angularRange"] / n
    assert set(d) == set(want) | {"phis"}


@pytest.mark.parametrize("path", REF_FILES, ids=lambda p: p.name)
def test_reference_file_rewritten_byte_for_byte(path, tmp_path):
    d = _read_quiet(path)
    out = tmp_path / path.name
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeapParamWarning)
        write_param_file(out, d)
    assert out.read_bytes() == path.read_bytes()
    # also without the derived phis, and from plain Python scalars
    d2 = {k: v for k, v in d.items() if k != "phis"}
    assert format_params(d2).encode() == path.read_bytes()


def test_demo_file_without_tilt_angle(tmp_path):
    d = _read_quiet(_write(tmp_path, DEMO_CONE))
    assert d["voxelWidth"] == 0.5107142 and d["numAngles"] == 720
    assert "tiltAngle" not in d
    np.testing.assert_array_equal(d["phis"], np.arange(720) * 0.5)
    # the writer adds the tiltAngle line that current LEAP always writes
    assert format_params(d) == DEMO_CONE.replace(
        "tau = 0.000000e+00\n", "tau = 0.000000e+00\ntiltAngle = 0.000000e+00\n")


# ---------------------------------------------------------------------------
# format details
# ---------------------------------------------------------------------------

def _cone(**kw):
    d = dict(VOLUME, geometry="cone", numAngles=4, numRows=40, numCols=80, pixelHeight=1.0,
             pixelWidth=1.0, centerRow=19.5, centerCol=39.5, sod=300.0, sdd=600.0)
    if "phis" not in kw:
        d["angularRange"] = 360.0
    d.update(kw)
    return d


def test_explicit_phis_written_as_list_with_upstream_spacing(tmp_path):
    phis = np.array([0.0, 10.0, 25.0, 90.5])
    text = format_params(_cone(phis=phis))
    assert "\nphis =  0.000000e+00, 1.000000e+01, 2.500000e+01, 9.050000e+01\n" in text
    assert "angularRange" not in text
    d = read_param_file(_write(tmp_path, text))
    np.testing.assert_array_equal(d["phis"], phis)
    # LEAP's rule for the range of explicit angles: span plus half the end steps
    assert d["angularRange"] == 90.5 + 0.5 * 65.5 + 0.5 * 10.0


def test_equispaced_with_offset_kept_as_phis(tmp_path):
    # LEAP would write angularRange here and lose the 30-degree start
    phis = 30.0 + np.arange(4) * 90.0
    text = format_params(_cone(phis=phis))
    assert "phis =  3.000000e+01, 1.200000e+02, 2.100000e+02, 3.000000e+02\n" in text
    np.testing.assert_array_equal(read_param_file(_write(tmp_path, text))["phis"], phis)


def test_equispaced_from_zero_written_as_angular_range(tmp_path):
    text = format_params(_cone(phis=np.linspace(0.0, 360.0, 4, endpoint=False)))
    assert "\nangularRange = 3.600000e+02\n" in text and "phis" not in text
    # decreasing angles: negative range, as LEAP writes them
    text = format_params(_cone(phis=-np.arange(4) * 45.0))
    assert "\nangularRange = -1.800000e+02\n" in text
    d = read_param_file(_write(tmp_path, text))
    np.testing.assert_array_equal(d["phis"], [0.0, -45.0, -90.0, -135.0])
    # float32 angles as LEAP's setAngleArray makes them
    phis32 = np.arange(4, dtype=np.float32) * np.float32(360.0) / np.float32(4)
    assert "\nangularRange = 3.600000e+02\n" in format_params(_cone(phis=phis32))


def test_float_formatting():
    text = format_params(_cone(offsetX=-1.25, tau=1e-20, helicalPitch=1e-17, centerRow=0.1))
    assert "\noffsetX = -1.250000e+00\n" in text
    assert "\ntau = 1.000000e-20\n" in text
    assert "\nhelicalPitch = 0.000000e+00\n" in text  # LEAP zeroes |pitch| < 1e-16
    assert "\ncenterRow = 1.000000e-01\n" in text
    # more digits only when 7 significant digits would not round-trip
    assert "\ncenterCol = 3.950000000001e+01\n" in format_params(_cone(centerCol=39.50000000001))
    # float32 values are written with float32 precision
    assert "\nvoxelWidth = 1.000000e-01\n" in format_params(_cone(voxelWidth=np.float32(0.1)))
    # numbers of the integer keys may come as integral floats
    assert "\nnumX = 80\n" in format_params(_cone(numX=80.0))


def test_geometry_specific_lines():
    par = dict(VOLUME, geometry="parallel", numAngles=1, numRows=40, numCols=80, pixelHeight=0.5,
               pixelWidth=1.0, centerRow=19.5, centerCol=39.5, angularRange=180.0,
               axisOfSymmetry=0.0, muCoeff=0.02, muRadius=40.0)
    lines = format_params(par).splitlines()
    assert lines[lines.index("geometry = parallel") + 9:] == [
        "sod = 0.000000e+00", "sdd = 0.000000e+00", "tiltAngle = 0.000000e+00",
        "axisOfSymmetry = 0.000000e+00", "muCoeff = 2.000000e-02", "muRadius = 4.000000e+01"]
    fan = dict(par, geometry="fan", sod=100.0, sdd=200.0, tau=2.0)
    del fan["muCoeff"], fan["muRadius"], fan["axisOfSymmetry"]
    assert format_params(fan).splitlines()[-3:] == [
        "sdd = 2.000000e+02", "tau = 2.000000e+00", "tiltAngle = 0.000000e+00"]
    cp = dict(fan, geometry="cone_parallel", helicalPitch=1.5)
    assert format_params(cp).splitlines()[-3:] == [
        "tau = 2.000000e+00", "tiltAngle = 0.000000e+00", "helicalPitch = 1.500000e+00"]
    curved = _cone(detectorType="curved", angularRange=360.0)
    lines = format_params(curved).splitlines()
    assert lines[11:13] == ["geometry = cone", "detectorType = curved"]
    flat = _cone(detectorType="FLAT", angularRange=360.0, tiltAngle=2.5, offsetScan=True)
    text = format_params(flat)
    assert "detectorType" not in text
    assert text.endswith("tiltAngle = 2.500000e+00\nhelicalPitch = 0.000000e+00\noffsetScan = 1\n")


def _modular_dict(n=3):
    a = np.deg2rad(np.array([0.0, 45.0, 100.0])[:n])
    src = np.stack([300 * np.cos(a), 300 * np.sin(a), np.full(n, 1.5)], axis=1)
    mod = np.stack([-300 * np.cos(a), -300 * np.sin(a), np.zeros(n)], axis=1)
    col = np.stack([-np.sin(a), np.cos(a), np.zeros(n)], axis=1)
    row = np.tile([0.0, 0.0, 1.0], (n, 1))
    return dict(VOLUME, geometry="modular", numAngles=n, numRows=4, numCols=6, pixelHeight=1.0,
                pixelWidth=1.0, sourcePositions=src, moduleCenters=mod, rowVectors=row, colVectors=col)


def test_modular_vectors_format_and_defaults(tmp_path):
    d = _modular_dict()
    text = format_params(d)
    assert "\nrowVectors = 0.000000e+00, 0.000000e+00, 1.000000e+00, 0.000000e+00, 0.000000e+00, " \
           "1.000000e+00, 0.000000e+00, 0.000000e+00, 1.000000e+00\n" in text
    # LEAP's defaults for modular: centre of the detector, 0 range, mean distances, no tau
    for line in ("centerRow = 1.500000e+00", "centerCol = 2.500000e+00", "angularRange = 0.000000e+00",
                 "sod = 3.000000e+02", "sdd = 6.000000e+02", "tiltAngle = 0.000000e+00"):
        assert "\n" + line + "\n" in text
    assert "tau" not in text and "helicalPitch" not in text
    r = read_param_file(_write(tmp_path, text))
    for key in ("sourcePositions", "moduleCenters", "rowVectors", "colVectors"):
        assert r[key].shape == (3, 3) and r[key].dtype == np.float64
        np.testing.assert_array_equal(r[key], d[key])
    assert "phis" not in r and r["angularRange"] == 0.0
    # explicit modular angles stay explicit (even a single 0), a given range is kept
    for phis in ([0.0, 10.0, 20.0], [0.0]):
        m = _modular_dict(len(phis))
        r = read_param_file(_write(tmp_path, format_params(dict(m, phis=np.array(phis)))))
        np.testing.assert_array_equal(r["phis"], phis)
        assert "angularRange" not in r
    assert "\nangularRange = 2.000000e+02\n" in format_params(dict(d, angularRange=200.0))
    # a flat list of 3*N numbers is accepted by the writer too
    flat = dict(d, sourcePositions=d["sourcePositions"].ravel().tolist())
    assert format_params(flat) == text
    # LEAP's own loader can read it
    up = _upstream_style_parse(text)
    assert len(up["sourcePositions"].split(",")) == 9


# ---------------------------------------------------------------------------
# variants that load
# ---------------------------------------------------------------------------

LEGACY_CONE = """\
# CT volume parameters
img_dimx = 80
img_dimy = 80
img_dimz = 40
img_pwidth = 5.000000e-01
img_pheight = 5.000000e-01
img_offsetx = 0.000000e+00
img_offsety = 0.000000e+00
img_offsetz = 0.000000e+00

# CT geometry parameters
proj_geometry = cone
proj_nangles = 72
proj_nrows = 40
proj_ncols = 80
proj_pheight = 1.000000e+00
proj_pwidth = 1.000000e+00
proj_crow = 1.950000e+01
proj_ccol = 3.950000e+01
proj_arange = 3.600000e+02
proj_sod = 3.000000e+02
proj_sdd = 6.000000e+02
proj_tau = 0.000000e+00
proj_tiltAngle = 0.000000e+00
proj_helicalpitch = 0.000000e+00
"""


def test_legacy_names_read_and_written(tmp_path):
    d = _read_quiet(_write(tmp_path, LEGACY_CONE))
    ref = _read_quiet(REF_DIR / "cone.param")
    assert d.keys() == ref.keys()
    _assert_same(d, ref)
    assert format_params(d, legacy=True) == LEGACY_CONE
    out = tmp_path / "legacy_out.param"
    write_param_file(out, d, legacy=True)
    assert out.read_text() == LEGACY_CONE
    # the writer accepts legacy keys in the dict as well
    assert format_params({"proj_geometry": "cone", **{k: v for k, v in ref.items() if k != "geometry"}}) \
        == (REF_DIR / "cone.param").read_text()


def test_legacy_modular_and_phis(tmp_path):
    text = format_params(_modular_dict(2), legacy=True)
    assert "\nproj_srcpos = " in text and "\nproj_colvec = " in text
    d = read_param_file(_write(tmp_path, text))
    np.testing.assert_array_equal(d["colVectors"], _modular_dict(2)["colVectors"])
    text = format_params(_cone(phis=np.array([1.0, 2.0, 4.0, 8.0])), legacy=True)
    assert "\nproj_phis =  1.000000e+00, 2.000000e+00, 4.000000e+00, 8.000000e+00\n" in text
    np.testing.assert_array_equal(read_param_file(_write(tmp_path, text))["phis"], [1, 2, 4, 8])


def test_whitespace_comments_case_and_crlf(tmp_path):
    text = ("\ufeff  # leading comment\r\n\r\n"
            "   NUMX=80\r\n numY   =\t80  # trailing comment\r\n numZ = 4.0e1\r\n"
            "voxelwidth = .5\r\nvoxelHeight = 5E-1\r\n"
            "Geometry = CONE\r\nnumAngles = 3\r\nnumRows = 40\r\nnumCols = 80\r\n"
            "pixelHeight = 1\r\npixelWidth = +1.\r\ncenterRow = 19.5\r\ncenterCol = 39.5\r\n"
            "phis = 0 , 1.5,3\r\nsod = 300\r\nsdd = 600\r\ndetectorType = Curved\r\n")
    d = _read_quiet(_write(tmp_path, text))
    assert d["numX"] == 80 and d["numY"] == 80 and d["numZ"] == 40
    assert d["voxelWidth"] == 0.5 and d["voxelHeight"] == 0.5
    assert d["geometry"] == "cone" and d["detectorType"] == "curved"
    np.testing.assert_array_equal(d["phis"], [0.0, 1.5, 3.0])
    assert d["angularRange"] == 4.5
    assert "offsetX" not in d  # optional keys are not invented


def test_empty_phis_falls_back_to_angular_range(tmp_path):
    text = (REF_DIR / "fan2d.param").read_text().replace("angularRange", "phis = \nangularRange")
    d = _read_quiet(_write(tmp_path, text))
    np.testing.assert_array_equal(d["phis"], np.arange(120) * 3.0)


def test_unknown_key_kept_as_string_with_warning(tmp_path):
    text = (REF_DIR / "cone.param").read_text() + "whichGPU = 0\nnote = hello world\n"
    with pytest.warns(LeapParamWarning) as record:
        d = read_param_file(_write(tmp_path, text))
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert re.search(r"p\.param:26: unknown key 'whichGPU' kept as a string$", messages[0])
    assert re.search(r"p\.param:27: unknown key 'note'", messages[1])
    assert d["whichGPU"] == "0" and d["note"] == "hello world"
    with pytest.warns(LeapParamWarning, match="not written"):
        assert format_params(d) == (REF_DIR / "cone.param").read_text()


def test_duplicate_key_last_wins_with_warning(tmp_path):
    text = (REF_DIR / "cone.param").read_text() + "sod = 2.500000e+02\n"
    with pytest.warns(LeapParamWarning, match=r"'sod' given again \(first on line 21\)"):
        d = read_param_file(_write(tmp_path, text))
    assert d["sod"] == 250.0


def test_offset_scan_and_ignored_values(tmp_path):
    text = (REF_DIR / "parallel2d.param").read_text() + "offsetScan = true\ntau = 3\n"
    with pytest.warns(LeapParamWarning, match="tau only applies"):
        d = read_param_file(_write(tmp_path, text))
    assert d["offsetScan"] is True and d["tau"] == 3.0
    with pytest.warns(LeapParamWarning, match="tau only applies"):
        out = format_params(d)
    assert "tau" not in out and out.endswith("offsetScan = 1\n")


def test_written_files_are_readable_by_upstream_loader():
    for path in REF_FILES:
        if "curved" in path.name:
            continue  # LEAP's Python loader float()s detectorType and fails on 'curved'
        up = _upstream_style_parse(path.read_text())
        assert up["numX"] == EXPECTED[path.name]["numX"]
    text = format_params(_cone(phis=np.array([0.0, 10.0, 25.0, 90.5]), tau=1.0))
    up = _upstream_style_parse(text)
    assert [float(x) for x in up["phis"].split(",")] == [0.0, 10.0, 25.0, 90.5]
    assert up["tau"] == 1.0


# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------

BASE = (REF_DIR / "cone.param").read_text()


@pytest.mark.parametrize("text, pattern", [
    (BASE + "this line has no equals sign\n", r"p\.param:26: expected 'key = value'"),
    (BASE + "sod = 1 = 2\n", r"p\.param:26: more than one '='"),
    (BASE + " = 5\n", r"p\.param:26: missing key"),
    (BASE + "bad key = 5\n", r"p\.param:26: invalid key name 'bad key'"),
    (BASE.replace("sod = 3.000000e+02", "sod = 3.0 mm"), r"p\.param:21: cannot parse '3\.0 mm'"),
    (BASE.replace("sod = 3.000000e+02", "sod = nan"), r"p\.param:21: 'sod' must be finite"),
    (BASE.replace("tau = 0.000000e+00", "tau = -inf"), r"p\.param:23: 'tau' must be finite"),
    (BASE.replace("tau = 0.000000e+00", "tau = 1e999"), r"p\.param:23: 'tau' must be finite"),
    (BASE.replace("sod = 3.000000e+02", "sod ="), r"p\.param:21: empty value for 'sod'"),
    (BASE.replace("numX = 80", "numX = 80.5"), r"p\.param:2: 'numX' must be an integer"),
    (BASE.replace("numX = 80", "numX = 0"), r"p\.param:2: 'numX' must be positive"),
    (BASE.replace("geometry = cone", "geometry = helix"), r"p\.param:12: unknown geometry 'helix'"),
    (BASE.replace("geometry = cone\n", ""), r"p\.param: missing required key 'geometry'"),
    (BASE.replace("sod = 3.000000e+02\n", ""), r"p\.param: missing required key 'sod'"),
    (BASE.replace("sdd = 6.000000e+02", "sdd = 2.0e2"), r"p\.param:22: .*0 < sod < sdd"),
    (BASE.replace("angularRange = 3.600000e+02", "phis = 1, 2, 3"),
     r"p\.param:20: 'phis' has 3 values but numAngles = 72"),
    (BASE.replace("angularRange = 3.600000e+02", "phis = 1, , 3"), r"p\.param:20: empty entry #2"),
    (BASE.replace("angularRange = 3.600000e+02", "phis = 1, x, 3"), r"p\.param:20: cannot parse 'x'"),
    (BASE.replace("angularRange = 3.600000e+02\n", ""), r"p\.param: missing projection angles"),
    (BASE.replace("angularRange = 3.600000e+02", "angularRange = 0"), r"p\.param:20: angularRange = 0"),
    (BASE.replace("geometry = cone", "geometry = fan\ndetectorType = curved"),
     r"p\.param:13: a curved detector is only defined for cone-beam"),
    (BASE.replace("geometry = cone", "geometry = cone\ndetectorType = bent"),
     r"p\.param:13: unknown detectorType 'bent'"),
    (BASE.replace("tiltAngle = 0.000000e+00", "tiltAngle = 7"), r"p\.param:24: .*exceed 5 degrees"),
    (BASE + "offsetScan = maybe\n", r"p\.param:26: 'offsetScan' must be 0/1 or true/false"),
])
def test_malformed_file_raises(tmp_path, text, pattern):
    p = _write(tmp_path, text)
    with pytest.raises(ValueError, match=pattern):
        read_param_file(p)


def _modular_text(**replace):
    text = format_params(_modular_dict(3))
    for key, value in replace.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    return text


@pytest.mark.parametrize("replace, pattern", [
    (dict(sourcePositions="1, 2, 3, 4, 5, 6, 7, 8"), r"p\.param:\d+: 'sourcePositions' needs 3 values per view"),
    (dict(colVectors="0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0"), r"'colVectors' needs 3 values per view \(3 \* numAngles = 9\)"),
    (dict(rowVectors="0, 0, 0, 0, 0, 1, 0, 0, 1"), r"'rowVectors' has a zero vector for view 0"),
    (dict(rowVectors="0, 1, 0, 0, 0, 1, 0, 0, 1"), r"must be orthogonal \(view 0"),
    (dict(moduleCenters="1, 2, inf, 4, 5, 6, 7, 8, 9"), r"'moduleCenters\[2\]' must be finite"),
])
def test_malformed_modular_raises(tmp_path, replace, pattern):
    with pytest.raises(ValueError, match=pattern):
        read_param_file(_write(tmp_path, _modular_text(**replace)))
    d = _modular_dict(3)
    with pytest.raises(ValueError, match=r"missing required key 'colVectors'"):
        format_params({k: v for k, v in d.items() if k != "colVectors"})


def test_writer_rejects_bad_dicts(tmp_path):
    out = tmp_path / "never.param"
    with pytest.raises(ValueError, match=r"never\.param: missing required key 'sdd'"):
        write_param_file(out, {k: v for k, v in _cone(angularRange=360.0).items() if k != "sdd"})
    assert not out.exists()
    with pytest.raises(ValueError, match=r"params\['phis'\]: 'phis' has 3 values but numAngles = 4"):
        write_param_file(out, _cone(phis=[0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"'sod' must be finite"):
        write_param_file(out, _cone(angularRange=360.0, sod=float("nan")))
    with pytest.raises(ValueError, match=r"'phis' contains non-finite values"):
        write_param_file(out, _cone(phis=[0.0, 1.0, np.inf, 2.0]))
    with pytest.raises(ValueError, match=r"unknown geometry 'spiral'"):
        write_param_file(out, _cone(angularRange=360.0, geometry="spiral"))
    with pytest.raises(ValueError, match=r"'numRows' must be an integer"):
        write_param_file(out, _cone(angularRange=360.0, numRows=2.5))
    with pytest.raises(ValueError, match=r"given twice"):
        write_param_file(out, {**_cone(angularRange=360.0), "proj_sod": 300.0})
    assert not out.exists()


# ---------------------------------------------------------------------------
# round trip (hypothesis)
# ---------------------------------------------------------------------------

def _f(lo, hi):
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


@st.composite
def _angles(draw, n):
    kind = draw(st.sampled_from(["range", "phis", "both"]))
    out = {}
    if kind in ("range", "both"):
        out["angularRange"] = draw(_f(-720, 720).filter(lambda x: abs(x) > 1e-3 or n == 1))
    if kind == "phis":
        out["phis"] = np.array(draw(st.lists(_f(-1000, 1000), min_size=n, max_size=n)))
    if kind == "both":
        out["phis"] = np.arange(n) * out["angularRange"] / n
    return out


@st.composite
def param_dicts(draw, geometry):
    n = draw(st.integers(1, 8))
    d = dict(numX=draw(st.integers(1, 2048)), numY=draw(st.integers(1, 2048)),
             numZ=draw(st.integers(1, 2048)), voxelWidth=draw(_f(1e-4, 10)),
             voxelHeight=draw(_f(1e-4, 10)), geometry=geometry, numAngles=n,
             numRows=draw(st.integers(1, 4096)), numCols=draw(st.integers(1, 4096)),
             pixelHeight=draw(_f(1e-4, 10)), pixelWidth=draw(_f(1e-4, 10)))
    for key in ("offsetX", "offsetY", "offsetZ"):
        if draw(st.booleans()):
            d[key] = draw(_f(-500, 500))
    if geometry != "modular":
        d["centerRow"] = draw(_f(-1e4, 1e4))
        d["centerCol"] = draw(_f(-1e4, 1e4))
        d.update(draw(_angles(n)))
    if geometry in ("fan", "cone"):
        d["sod"] = draw(_f(1, 1e4))
        d["sdd"] = d["sod"] + draw(_f(1e-3, 1e4))
        d["tau"] = draw(_f(-50, 50))
    if geometry == "cone":
        if draw(st.booleans()):
            d["detectorType"] = "curved"
            d["tiltAngle"] = 0.0
        else:
            d["tiltAngle"] = draw(_f(-5, 5))
        d["helicalPitch"] = draw(st.one_of(st.just(0.0), _f(-100, 100).filter(lambda x: abs(x) > 1e-12)))
    if geometry == "parallel" and draw(st.booleans()):
        d["muCoeff"] = draw(_f(1e-6, 1).filter(lambda x: x != 0))
        d["muRadius"] = draw(_f(1e-3, 500))
    if geometry in ("parallel", "cone") and n == 1 and draw(st.booleans()):
        d["axisOfSymmetry"] = draw(_f(-30, 30))
    if geometry == "modular":
        a = np.array(draw(st.lists(_f(-10, 10), min_size=n, max_size=n)))
        r = np.array(draw(st.lists(_f(10, 1000), min_size=n, max_size=n)))
        det = r + np.array(draw(st.lists(_f(1, 1000), min_size=n, max_size=n)))
        z = np.array(draw(st.lists(_f(-100, 100), min_size=n, max_size=n)))
        psi = draw(_f(-0.08, 0.08))  # in-plane detector rotation (keeps u, v orthogonal)
        scale = draw(_f(0.5, 2.0))
        c, s = np.cos(a), np.sin(a)
        u0 = np.stack([-s, c, np.zeros(n)], axis=1)
        v0 = np.tile([0.0, 0.0, 1.0], (n, 1))
        d["sourcePositions"] = np.stack([r * c, r * s, z], axis=1)
        d["moduleCenters"] = np.stack([(r - det) * c, (r - det) * s, z], axis=1)
        d["colVectors"] = scale * (np.cos(psi) * u0 + np.sin(psi) * v0)
        d["rowVectors"] = -np.sin(psi) * u0 + np.cos(psi) * v0
        if draw(st.booleans()):
            d["sod"], d["sdd"] = draw(_f(1, 1e3)), draw(_f(1, 1e3))
        if draw(st.booleans()):
            d["phis"] = np.array(draw(st.lists(_f(-360, 360), min_size=n, max_size=n)))
    if draw(st.booleans()):
        d["offsetScan"] = True
    return d


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("roundtrip") / "rt.param"


@pytest.mark.parametrize("geometry", ["parallel", "fan", "cone", "modular"])
@settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_round_trip(scratch, geometry, data):
    d = data.draw(param_dicts(geometry))
    with warnings.catch_warnings():
        warnings.simplefilter("error", LeapParamWarning)
        write_param_file(scratch, d)
        text = scratch.read_text()
        r = read_param_file(scratch)
    _assert_same(r, d)
    n = d["numAngles"]
    if geometry != "modular":
        assert r["phis"].shape == (n,) and r["phis"].dtype == np.float64
        if "phis" not in d:
            np.testing.assert_array_equal(r["phis"], np.arange(n) * d["angularRange"] / n)
        if "angularRange" not in d:
            p = d["phis"]
            span = abs(p[-1] - p[0]) + 0.5 * abs(p[-1] - p[max(n - 2, 0)]) + 0.5 * abs(p[min(1, n - 1)] - p[0])
            assert r["angularRange"] == (-span if p[-1] < p[0] else span)
    else:
        for key in ("sourcePositions", "moduleCenters", "rowVectors", "colVectors"):
            assert r[key].shape == (n, 3)
    # the written text is a fixed point and parses the way LEAP's loader parses it
    assert format_params(r) == text
    if d.get("detectorType") != "curved":
        up = _upstream_style_parse(text)
        assert up["numAngles"] == n


@settings(deadline=None, max_examples=40)
@given(st.lists(st.floats(-1e4, 1e4, width=32, allow_nan=False, allow_infinity=False), min_size=2, max_size=10))
def test_float32_values_written_with_float32_precision(phis):
    phis = np.array(phis, dtype=np.float32)
    text = format_params(_cone(numAngles=phis.size, phis=phis, sod=np.float32(300.1)))
    assert "\nsod = 3.001000e+02\n" in text
    line = next(ln for ln in text.splitlines() if ln.startswith(("phis", "angularRange")))
    if line.startswith("phis"):
        values = np.array([float(x) for x in line.split("=", 1)[1].split(",")])
        np.testing.assert_array_equal(values.astype(np.float32), phis)
        assert all(len(x.strip().lstrip("-").split("e")[0]) <= 10 for x in line.split("=", 1)[1].split(","))
