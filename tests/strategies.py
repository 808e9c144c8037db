"""Hypothesis strategies for random CT geometries (small, so tests stay fast)."""
import numpy as np
from hypothesis import strategies as st

from leap import ConeBeam, Detector, FanBeam, ModularBeam, ParallelBeam, Volume
from leap.geometry import ConeParallelBeam

sizes = st.integers(min_value=1, max_value=11)


@st.composite
def angles(draw, max_views=7):
    n = draw(st.integers(min_value=1, max_value=max_views))
    a = draw(st.lists(st.floats(-2 * np.pi, 2 * np.pi, allow_nan=False), min_size=n, max_size=n))
    return np.array(a)


@st.composite
def detectors(draw, curved=False, rows=None):
    nr = rows if rows is not None else draw(st.integers(1, 9))
    nc = draw(st.integers(2, 13))
    ph = draw(st.floats(0.3, 2.5))
    pw = draw(st.floats(0.3, 2.5))
    cr = (nr - 1) / 2 + draw(st.floats(-1.5, 1.5))
    cc = (nc - 1) / 2 + draw(st.floats(-2.0, 2.0))
    return Detector(num_rows=nr, num_cols=nc, pixel_height=ph, pixel_width=pw,
                    center_row=cr, center_col=cc, curved=curved)


@st.composite
def volumes(draw, z_from=None):
    nx, ny, nz = draw(sizes), draw(sizes), draw(st.integers(1, 9))
    vw = draw(st.floats(0.2, 3.0))
    vh = draw(st.floats(0.2, 3.0))
    ox, oy, oz = (draw(st.floats(-2, 2)) for _ in range(3))
    return Volume(num_x=nx, num_y=ny, num_z=nz, voxel_width=vw, voxel_height=vh,
                  offset_x=ox, offset_y=oy, offset_z=oz)


@st.composite
def parallel_cases(draw):
    return draw(st.builds(lambda d, a: ParallelBeam(detector=d, angles=a), detectors(), angles())), draw(volumes())


@st.composite
def fan_cases(draw):
    curved = draw(st.booleans())
    sod = draw(st.floats(60, 200))
    sdd = sod + draw(st.floats(10, 200))
    geo = FanBeam(detector=draw(detectors(curved=curved)), angles=draw(angles()), sod=sod, sdd=sdd,
                  tau=draw(st.floats(-5, 5)))
    return geo, draw(volumes())


@st.composite
def cone_cases(draw):
    curved = draw(st.booleans())
    sod = draw(st.floats(60, 200))
    sdd = sod + draw(st.floats(10, 200))
    pitch = draw(st.sampled_from([0.0, 0.0, 1.5, -2.0]))
    tilt = 0.0 if curved else draw(st.sampled_from([0.0, 0.0, 0.05]))
    geo = ConeBeam(detector=draw(detectors(curved=curved)), angles=draw(angles()), sod=sod, sdd=sdd,
                   tau=draw(st.floats(-5, 5)), helical_pitch=pitch, tilt=tilt)
    return geo, draw(volumes())


@st.composite
def cone_parallel_cases(draw):
    sod = draw(st.floats(60, 200))
    sdd = sod + draw(st.floats(10, 200))
    pitch = draw(st.sampled_from([0.0, 0.0, 1.5, -2.0]))
    geo = ConeParallelBeam(detector=draw(detectors()), angles=draw(angles()), sod=sod, sdd=sdd,
                           tau=draw(st.floats(-5, 5)), helical_pitch=pitch)
    return geo, draw(volumes())


def _unit(v):
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


@st.composite
def modular_cases(draw):
    """Random modules: sources on a sphere-ish shell, detectors facing them, tilted axes."""
    n = draw(st.integers(1, 6))
    seed = draw(st.integers(0, 2**31 - 1))
    r = np.random.default_rng(seed)
    sod = draw(st.floats(60, 200))
    sdd = sod + draw(st.floats(10, 200))
    phi = r.uniform(0, 2 * np.pi, n)
    elev = r.uniform(-0.3, 0.3, n)
    src_dir = np.stack([np.cos(phi) * np.cos(elev), np.sin(phi) * np.cos(elev), np.sin(elev)], 1)
    sources = sod * src_dir + r.normal(0, 2, (n, 3))
    centers = sources - sdd * src_dir + r.normal(0, 2, (n, 3))
    col = _unit(np.cross([0.0, 0.0, 1.0], src_dir) + r.normal(0, 0.1, (n, 3)))
    row = _unit(np.cross(src_dir, col))
    det = draw(detectors()).with_changes(center_row=None, center_col=None)
    geo = ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                      row_vectors=row, col_vectors=col)
    return geo, draw(volumes())


any_case = st.one_of(parallel_cases(), fan_cases(), cone_cases(), cone_parallel_cases(),
                     modular_cases())


@st.composite
def vertical_modular_cases(draw):
    """Modules standing vertically (rows along +z, columns horizontal, facing their
    sources), each view with its own source height, distance and lateral offset: the
    modular beams the CPU projects with the axial kernels."""
    n = draw(st.integers(1, 6))
    r = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    sod = draw(st.floats(60, 200))
    phi = r.uniform(0, 2 * np.pi, n)
    toward = np.stack([np.cos(phi), np.sin(phi), np.zeros(n)], 1)     # origin → source
    col = np.stack([-np.sin(phi), np.cos(phi), np.zeros(n)], 1)       # (−col_y, col_x) = −toward
    sources = (sod + r.uniform(-10, 10, (n, 1))) * toward + col * r.uniform(-5, 5, (n, 1))
    sources[:, 2] = r.uniform(-3, 3, n)
    sdd = sod + draw(st.floats(10, 200)) + r.uniform(-10, 10, n)
    centers = sources - sdd[:, None] * toward + col * r.uniform(-8, 8, (n, 1))
    centers[:, 2] = r.uniform(-4, 4, n)
    rows = np.tile([0.0, 0.0, 1.0], (n, 1))
    det = draw(detectors()).with_changes(center_row=None, center_col=None)
    geo = ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                      row_vectors=rows, col_vectors=col)
    return geo, draw(volumes())
