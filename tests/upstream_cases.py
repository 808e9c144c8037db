"""LEAP scripts run unchanged by upstream LEAP and by leap, for the upstream comparison.

Each case is a function ``case(new_model) -> dict`` that builds a geometry with the LEAP
API only (``new_model()`` returns a fresh ``tomographicModels``), runs it and returns
the arrays to compare. ``tools/make_upstream_references.py`` runs them with upstream
LEAP's ``leapctype`` (a CPU build) and stores the results in
``tests/data/leap_upstream/<case>.npz``; ``tests/compat/test_upstream_cases.py`` runs them with
leap and compares. Only settings that upstream's CPU build computes are used (upstream
CPU ignores ``tiltAngle``, refuses voxels far from nominal size and has no helical FBP).

Sizes are small (24–32 pixels) so the stored references stay a few hundred kB.
"""
from __future__ import annotations

import numpy as np

N = 32                 # detector columns and rows
NA = 36                # views
PS = 4.0               # detector pixel size, mm
SOD, SDD = 1100.0, 1400.0
CENTER = 0.5 * (N - 1)


def _noise(shape, seed=0):
    return np.random.default_rng(seed).random(shape).astype(np.float32)


def _run(m, fbp=True, setup_fbp=None):
    """Project the FORBILD head, back-project uniform noise, FBP the projections."""
    f = m.allocate_volume()
    m.set_FORBILD(f, True)
    g = m.allocate_projections()
    m.project(g, f)
    out = {"f": f, "P": g.copy()}
    b = m.allocate_volume()
    m.backproject(_noise(g.shape), b)
    out["BT"] = b
    if fbp:
        if setup_fbp is not None:
            setup_fbp(m)
        h = m.allocate_volume()
        m.FBP(g.copy(), h)
        out["FBP"] = h
    return out


def parallel_offsets(new):
    m = new()
    m.set_parallelbeam(NA, N, N, PS, PS, CENTER + 2.3, CENTER - 3.7, m.setAngleArray(NA, 180.0))
    m.set_volume(N, N - 6, N, PS, PS, 3.1, -5.3, 0.0)
    return _run(m)


def parallel_nonuniform_angles(new):
    m = new()
    phis = np.sort(np.random.default_rng(3).uniform(0.0, 180.0, NA)).astype(np.float32)
    m.set_parallelbeam(NA, N, N, PS, PS, CENTER, CENTER, phis)
    m.set_default_volume()
    return _run(m)


def fan_tau_short_scan(new):
    m = new()
    m.set_fanbeam(NA, N, N, PS, PS, CENTER, CENTER + 1.5, m.setAngleArray(NA, 220.0),
                  SOD, SDD, 6.0)
    m.set_default_volume()
    return _run(m)


def cone_offsets(new):
    m = new()
    m.set_conebeam(NA, N, N, PS, PS, CENTER - 4.2, CENTER + 2.6, m.setAngleArray(NA, 360.0),
                   SOD, SDD)
    vw = PS * SOD / SDD
    m.set_volume(N, N, N - 6, vw, 1.2 * vw, 0.0, 4.0, -5.0)
    return _run(m)


def cone_short_scan_tau(new):
    m = new()
    m.set_conebeam(NA, N, N, PS, PS, CENTER, CENTER - 1.2, m.setAngleArray(NA, 210.0),
                   SOD, SDD, -4.0)
    m.set_default_volume()
    return _run(m)


def cone_curved_short_scan(new):
    m = new()
    m.set_conebeam(NA, N, N, PS, PS, CENTER + 1.0, CENTER, m.setAngleArray(NA, 200.0), SOD, SDD)
    m.set_curvedDetector()
    m.set_default_volume()
    return _run(m)


def cone_truncated(new):
    m = new()
    nc = N - 8
    m.set_conebeam(NA, N, nc, PS, PS, CENTER, 0.5 * (nc - 1), m.setAngleArray(NA, 360.0),
                   SOD, SDD)
    m.set_truncatedScan(True)
    m.set_volume(N, N, N, PS * SOD / SDD, PS * SOD / SDD)
    return _run(m)


def cone_ramp_filters(new):
    m = new()
    m.set_conebeam(NA, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(NA, 360.0), SOD, SDD)
    m.set_default_volume()
    out = _run(m, setup_fbp=lambda m: (m.set_rampFilter(10), m.set_FBPlowpass(2.5)))
    m.set_rampFilter(0)
    m.set_FBPlowpass(1.0)
    h = m.allocate_volume()
    m.FBP(out["P"].copy(), h)
    out["FBP_ramp0"] = h
    return out


def cone_helical(new):
    m = new()
    m.set_conebeam(2 * NA, N // 2, N, PS, PS, 0.5 * (N // 2 - 1), CENTER,
                   m.setAngleArray(2 * NA, 720.0), SOD, SDD)
    m.set_normalizedHelicalPitch(0.8)
    m.set_default_volume()
    return _run(m, fbp=False)      # upstream has no CPU helical FBP


def symmetric_objects(new):
    out = {}
    for kind in ("parallel", "cone"):
        m = new()
        if kind == "parallel":
            m.set_parallelbeam(1, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(1, 180.0))
        else:
            m.set_conebeam(1, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(1, 360.0), SOD, SDD)
        m.set_axisOfSymmetry(0.0)
        m.set_default_volume()
        f = m.allocate_volume()
        z, y = np.meshgrid(np.arange(f.shape[0]) - 0.5 * f.shape[0],
                           np.arange(f.shape[1]) - 0.5 * f.shape[1], indexing="ij")
        f[:, :, 0] = ((z / (0.4 * f.shape[0])) ** 2 + (y / (0.35 * f.shape[1])) ** 2 < 1)
        g = m.allocate_projections()
        m.project(g, f)
        h = m.allocate_volume()
        m.FBP(g.copy(), h)
        out[f"{kind}_P"], out[f"{kind}_FBP"] = g, h
        if kind == "parallel":  # upstream's cone back-projector is not P's transpose
            b = m.allocate_volume()
            m.backproject(_noise(g.shape), b)
            out[f"{kind}_BT"] = b
    return out


def attenuated_cylinder(new):
    m = new()
    m.set_parallelbeam(NA, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(NA, 360.0))
    m.set_default_volume()
    m.set_cylindircalAttenuationMap(0.01, 0.5 * N * PS)
    return _run(m)


def iterative(new):
    m = new()
    m.set_parallelbeam(NA, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(NA, 180.0))
    m.set_default_volume()
    f = m.allocate_volume()
    m.set_FORBILD(f, True)
    g = m.allocate_projections()
    m.project(g, f)
    out = {}
    for name, run in (("SART", lambda x: m.SART(g, x, 3, 6)),
                      ("SIRT", lambda x: m.SIRT(g, x, 4)),
                      ("OSEM", lambda x: m.OSEM(g, x, 3, 6)),
                      ("MLEM", lambda x: m.MLEM(g, x, 4)),
                      ("LS", lambda x: m.LS(g, x, 5)),
                      ("LS_SQS", lambda x: m.LS(g, x, 5, "SQS"))):
        x = m.allocate_volume()
        run(x)
        out[name] = x
    return out


def center_column(new):
    m = new()
    m.set_parallelbeam(NA, N, N, PS, PS, CENTER, CENTER - 2.2, m.setAngleArray(NA, 360.0))
    m.set_default_volume()
    f = m.allocate_volume()
    m.set_FORBILD(f, True)
    g = m.allocate_projections()
    m.project(g, f)
    m.set_centerCol(CENTER)
    m.find_centerCol(g)
    return {"centerCol": np.array([m.get_centerCol()])}


def _smooth_data(m):
    """Smooth deterministic projections (the same on both sides: no projector involved)."""
    na, nr, nc = m.get_projection_dim()
    a, r, c = np.meshgrid(np.arange(na), np.arange(nr), np.arange(nc), indexing="ij")
    g = 2.0 + np.sin(0.21 * a + 0.37 * c) * np.cos(0.29 * r) + 0.01 * (c - nc / 2) ** 2
    return np.ascontiguousarray(g, dtype=np.float32)


def rebinning(new):
    """rebin_parallel (fan → parallel, cone flat / curved / helical → cone-parallel) and
    rebin_curved; the rebinned data and the geometry LEAP sets."""
    out = {}
    setups = {
        "fan": lambda m: m.set_fanbeam(NA, 3, N, PS, PS, 1.0, CENTER + 1.3,
                                       m.setAngleArray(NA, 360.0), SOD, SDD),
        "fan_short_tau": lambda m: m.set_fanbeam(NA, 3, N, PS, PS, 1.0, CENTER,
                                                 m.setAngleArray(NA, 220.0), SOD, SDD, 5.0),
        "cone": lambda m: m.set_conebeam(NA, N // 2, N, PS, PS, 0.5 * (N // 2 - 1) - 2.0,
                                         CENTER + 0.7, m.setAngleArray(NA, 360.0), SOD, SDD),
        "cone_curved_short": lambda m: (m.set_conebeam(NA, N // 2, N, PS, PS, 0.5 * (N // 2 - 1),
                                                       CENTER, m.setAngleArray(NA, 240.0),
                                                       SOD, SDD, -3.0), m.set_curvedDetector()),
        "cone_helical": lambda m: (m.set_conebeam(2 * NA, N // 4, N, PS, PS, 0.5 * (N // 4 - 1),
                                                  CENTER, m.setAngleArray(2 * NA, 720.0), SOD, SDD),
                                   m.set_normalizedHelicalPitch(0.5)),
    }
    for name, setup in setups.items():
        m = new()
        setup(m)
        g = _smooth_data(m)
        m.rebin_parallel(g, 4 if name == "fan" else 6)
        out[f"{name}_g"] = g
        out[f"{name}_geometry"] = np.array(
            [m.get_numAngles(), m.get_pixelWidth(), m.get_centerCol(), m.get_sod(), m.get_tau(),
             m.get_angles()[0], m.get_angles()[-1]], dtype=np.float64)
    m = new()
    m.set_conebeam(8, 5, N, PS, PS, 2.0, CENTER, m.setAngleArray(8, 360.0), SOD, SDD)
    m.set_curvedDetector()
    da = np.degrees(np.arctan(PS / SDD))
    fan = ((np.arange(N) - CENTER) * da * 1.01 + 0.05 * da * np.sin(np.arange(N))).astype(np.float32)
    for order in (6, 3):
        g = _smooth_data(m)
        m.rebin_curved(g, fan, order)
        out[f"curved_order{order}"] = g
    return out


def cone_parallel_ray_trace(new):
    """Analytic projections of a cone-parallel scan (circular and helical, tau): checks
    the geometry's rays (upstream's CPU build has no cone-parallel projector)."""
    out = {}
    for name, pitch in (("circular", 0.0), ("helical", 8.0)):
        m = new()
        m.set_coneparallel(12, N // 2, N, PS, 3.0, 0.5 * (N // 2 - 1) + 1.3, CENTER - 1.7,
                           m.setAngleArray(12, 360.0), SOD, SDD, 2.0, pitch)
        m.set_FORBILD(None, True)
        g = m.allocate_projections()
        m.rayTrace(g, 1)
        out[name] = g
    return out


def fbp_building_blocks(new):
    """FBP's pieces and FBP variants: pre/post weights, Hilbert filter, lambda
    tomography, inconsistency reconstruction, slice FBP and the volume ramp filter."""
    out = {}
    for kind in ("fan", "cone_curved"):
        m = new()
        if kind == "fan":
            m.set_fanbeam(NA, 4, N, PS, PS, 1.5, CENTER + 1.3, m.setAngleArray(NA, 360.0),
                          SOD, SDD, 3.0)
        else:
            m.set_conebeam(NA, N, N, PS, PS, CENTER, CENTER - 0.7, m.setAngleArray(NA, 360.0),
                           SOD, SDD)
            m.set_curvedDetector()
        m.set_default_volume()
        f = m.allocate_volume()
        m.set_FORBILD(f, True)
        g = m.allocate_projections()
        m.project(g, f)
        out[f"{kind}_pre"] = m.preRampFiltering(g.copy())
        out[f"{kind}_post"] = m.postRampFiltering(g.copy())
        out[f"{kind}_hilbert"] = m.HilbertFilterProjections(g.copy())
        out[f"{kind}_LT"] = m.LT(g.copy())
        out[f"{kind}_inconsistency"] = m.inconsistencyReconstruction(g.copy())
        out[f"{kind}_slice"] = np.asarray(m.FBP_slice(g.copy(), 1, "z"))
        out[f"{kind}_rampvol"] = m.rampFilterVolume(f.copy())
    return out


CASES = {fn.__name__: fn for fn in (
    parallel_offsets, parallel_nonuniform_angles, fan_tau_short_scan, cone_offsets,
    cone_short_scan_tau, cone_curved_short_scan, cone_truncated, cone_ramp_filters,
    cone_helical, symmetric_objects, attenuated_cylinder, iterative, center_column,
    fbp_building_blocks, rebinning, cone_parallel_ray_trace)}


# --------------------------------------------------------------------------- utilities
def _objects(m, f=None, oversampling=1, clip=True):
    """One object of every type (0 … 7), rotated where upstream rotates about the centre
    (not cones: upstream turns those about their apex), one clipped by a plane (ray
    tracing only: upstream's voxelisers clip differently, see leap.phantoms)."""
    from scipy.spatial.transform import Rotation
    A = Rotation.from_euler("xyz", [20, -30, 50], degrees=True).as_matrix()
    m.addObject(f, 0, [0, 0, 0], [50, 40, 30], 0.02, None, None, oversampling)
    m.addObject(f, 1, [10, -5, 3], [20, 10, 15], 0.03, A, None, oversampling)
    m.addObject(f, 2, [-20, 10, -4], [20, 8, 12], 0.04, A, None, oversampling)
    m.addObject(f, 3, [15, 15, 5], [6, 14, 9], 0.05, A, None, oversampling)
    m.addObject(f, 4, [-10, -20, 0], [9, 7, 20], 0.01, None if clip else A,
                [0, 0, 1.0] if clip else None, oversampling)
    m.addObject(f, 5, [0, 25, 0], [10, 6, 7], 0.06, None, None, oversampling)
    m.addObject(f, 6, [25, -10, -6], [5, 12, 7], 0.07, None, None, oversampling)
    m.addObject(f, 7, [-25, -5, 8], [7, 9, 14], 0.08, None, None, oversampling)
    m.addObject(f, 0, [5, 5, -10], [15, 12, 10], 0.09, A, [1.0, -1.0, 0] if clip else None,
                oversampling)


def _modular_circle(m, na, nr, nc, z_det=0.0, first=0.0, last=345.0):
    phis = np.radians(np.linspace(first, last, na))
    zero = 0.0 * phis
    src = np.stack([SOD * np.cos(phis), SOD * np.sin(phis), zero], 1)
    det = np.stack([-(SDD - SOD) * np.cos(phis), -(SDD - SOD) * np.sin(phis), zero + z_det], 1)
    cols = np.stack([-np.sin(phis), np.cos(phis), zero], 1)
    rows = np.stack([zero, zero, zero + 1.0], 1)
    m.set_modularbeam(na, nr, nc, PS, PS, *(a.astype(np.float32) for a in (src, det, rows, cols)))


def ray_trace_objects(new):
    """rayTrace of every object type (rotations, clipping planes) for parallel, cone (τ),
    curved, helical and modular scans, with oversampling 1 and 3. Views start at 7° so
    no ray runs exactly along an object axis (upstream's CONE_X chord is wrong there)."""
    na = 8
    setups = {
        "parallel": lambda m: m.set_parallelbeam(na, N, N, PS / 2, PS / 2, CENTER + 1.3,
                                                 CENTER - 2.1, m.setAngleArray(na, 180.0) + 7.0),
        "cone": lambda m: m.set_conebeam(na, N, N, PS, PS, CENTER - 1.1, CENTER + 2.3,
                                         m.setAngleArray(na, 360.0) + 7.0, SOD, SDD, 3.0),
        "curved": lambda m: (m.set_conebeam(na, N, N, PS, PS, CENTER + 0.7, CENTER - 1.4,
                                            m.setAngleArray(na, 360.0) + 7.0, SOD, SDD),
                             m.set_curvedDetector()),
        "helical": lambda m: (m.set_conebeam(na, N // 2, N, PS, PS, 0.5 * (N // 2 - 1), CENTER,
                                             m.setAngleArray(na, 720.0) + 7.0, SOD, SDD),
                              m.set_helicalPitch(30.0)),
        "modular": lambda m: _modular_circle(m, na, N, N, -4.0, 7.0, 322.0),
    }
    out = {}
    for name, setup in setups.items():
        m = new()
        setup(m)
        _objects(m)
        for os in ((1, 3) if name in ("parallel", "cone") else (1,)):
            g = m.allocate_projections()
            m.rayTrace(g, os)
            out[f"{name}_os{os}"] = g
    return out


def voxelized_objects(new):
    """addObject into a volume (every type, rotations) with oversampling 1, 2, 3 and
    voxelize() of the analytic phantom over a non-zero background."""
    m = new()
    n = 24
    m.set_conebeam(4, n, n, PS, PS, 0.5 * (n - 1), 0.5 * (n - 1), m.setAngleArray(4, 360.0),
                   SOD, SDD)
    m.set_default_volume()
    out = {}
    for os in (1, 2, 3):
        f = m.allocate_volume()
        _objects(m, f, os, clip=False)
        out[f"f_os{os}"] = f
    _objects(m, None, 1, clip=False)
    f = m.allocate_volume() + np.float32(0.5)
    m.voxelize(f, 2)
    out["voxelize_os2"] = f
    return out


def geometry_utilities(new):
    """windowFOV, sensitivity (inside the field of view: upstream's analytic sensitivity
    is not zero outside it, while its back-projector is), slice/view ranges, the minimum
    FOV diameter, the offset-scan padding and crop_projections (data and geometry)."""
    na = 12
    setups = {
        "parallel": lambda m: m.set_parallelbeam(na, N, N, PS, PS, CENTER + 1.5, CENTER - 2.5,
                                                 m.setAngleArray(na, 180.0)),
        "fan": lambda m: m.set_fanbeam(na, N, N, PS, PS, CENTER, CENTER + 2.0,
                                       m.setAngleArray(na, 360.0), SOD, SDD, 5.0),
        "cone": lambda m: m.set_conebeam(na, N, N, PS, PS, CENTER - 3.0, CENTER + 1.7,
                                         m.setAngleArray(na, 360.0), SOD, SDD, -4.0),
        "curved": lambda m: (m.set_conebeam(na, N, N, PS, PS, CENTER + 2.0, CENTER - 1.3,
                                            m.setAngleArray(na, 360.0), SOD, SDD),
                             m.set_curvedDetector()),
        "helical": lambda m: (m.set_conebeam(na, N // 2, N, PS, PS, 0.5 * (N // 2 - 1) + 1,
                                             CENTER, m.setAngleArray(na, 720.0), SOD, SDD),
                              m.set_normalizedHelicalPitch(0.7)),
    }

    def volume(m, name):
        m.set_default_volume()
        if name in ("parallel", "fan"):
            m.set_offsetX(3.0)
            m.set_offsetY(-2.0)
        elif name == "helical":
            m.set_numZ(40)
        else:
            m.set_offsetZ(5.0)
            m.set_numZ(24)
            m.set_offsetX(4.0)

    out = {}
    for name, setup in setups.items():
        m = new()
        setup(m)
        volume(m, name)
        f = m.allocate_volume() + np.float32(1.0)
        m.windowFOV(f)
        out[f"{name}_windowFOV"] = f
        if name in ("parallel", "fan", "cone"):
            b = m.allocate_volume()
            m.backproject(np.ones(m.get_projection_dim(), np.float32), b)
            out[f"{name}_sensitivity"] = m.sensitivity() * (b > 0)
        ranges = [m.viewRangeNeededForBackprojection(), [m.get_diameterFOV_min()]]
        if name != "helical":   # upstream's ignores the helical source travel
            ranges += [m.sliceRangeNeededForProjection(), m.sliceRangeNeededForProjection(False)]
        m.set_offsetScan(True)
        ranges.append([m.extraColumnsForOffsetScan()])
        out[f"{name}_ranges"] = np.concatenate([np.asarray(r, np.float64) for r in ranges])
        if name in ("cone", "curved", "helical"):
            m = new()
            setup(m)
            volume(m, name)
            dims = m.get_projection_dim()
            g = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
            out[f"{name}_crop"] = m.crop_projections([2, dims[1] - 4], [3, N - 2], g)
            out[f"{name}_crop_geometry"] = np.array(
                [m.get_numRows(), m.get_numCols(), m.get_centerRow(), m.get_centerCol(),
                 m.get_numZ(), m.get_offsetZ()], dtype=np.float64)
    return out


def resampling(new):
    """down/up_sample_projections and down_sample_volume (data and geometry),
    up_sample_volume's geometry and up_sample (upstream's up_sample_volume fails when
    given data: it reads an undefined variable)."""
    out = {}
    for fac in ([1, 2, 2], [1, 3, 2], [1, 1, 3]):
        m = new()
        m.set_conebeam(4, N, N - 2, PS, PS, CENTER + 1.2, CENTER - 2.3,
                       m.setAngleArray(4, 360.0), SOD, SDD)
        k = "x".join(map(str, fac))
        g = _smooth_data(m)
        d = m.down_sample_projections(fac, g)
        out[f"down_proj_{k}"] = d
        out[f"down_proj_{k}_geometry"] = np.array(
            [m.get_numRows(), m.get_numCols(), m.get_pixelHeight(), m.get_pixelWidth(),
             m.get_centerRow(), m.get_centerCol()], dtype=np.float64)
        out[f"up_proj_{k}"] = m.up_sample_projections(fac, d.copy())
        out[f"up_proj_{k}_geometry"] = np.array(
            [m.get_numRows(), m.get_numCols(), m.get_pixelHeight(), m.get_pixelWidth(),
             m.get_centerRow(), m.get_centerCol()], dtype=np.float64)
    for fac in ([2, 2, 2], [3, 2, 2], [1, 3, 3]):
        m = new()
        m.set_conebeam(8, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(8, 360.0), SOD, SDD)
        m.set_volume(N - 2, N, N - 4, 3.0, 3.5, 2.0, -3.0, 5.0)
        k = "x".join(map(str, fac))
        nz, ny, nx = m.get_volume_dim()
        z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
        f = (2.0 + np.sin(0.3 * x + 0.2 * z) * np.cos(0.25 * y)).astype(np.float32)
        d = m.down_sample_volume(fac, f)
        out[f"down_vol_{k}"] = d
        out[f"up_vol_{k}"] = m.up_sample(fac, d.copy(), f.shape)
        m.up_sample_volume(fac)
        out[f"vol_{k}_geometry"] = np.array(
            [m.get_numX(), m.get_numY(), m.get_numZ(), m.get_voxelWidth(), m.get_voxelHeight(),
             m.get_offsetX(), m.get_offsetY(), m.get_offsetZ()], dtype=np.float64)
    return out


def data_processing(new):
    """sinogram_replacement, space_carving, the conjugate difference (α = 0) and
    find_centerCol for parallel, fan and cone data."""
    out = {}
    m = new()
    m.set_parallelbeam(NA, 4, N, PS, PS, 1.5, CENTER, m.setAngleArray(NA, 180.0))
    g = _smooth_data(m)
    prior = np.ascontiguousarray(0.8 * g + 0.3 + 0.05 * np.cos(np.arange(N)), dtype=np.float32)
    trace = np.zeros_like(g)
    trace[:, :, 12:17] = 1.0
    trace[5:9, 1:3, 3:6] = 1.0
    for name, ws in (("default", None), ("window", np.array([2, 1, 6], np.int32))):
        h = g.copy()
        m.sinogram_replacement(h, prior.copy(), trace.copy(), ws)
        out[f"sinogram_replacement_{name}"] = h
    for name in ("parallel", "cone"):
        m = new()
        if name == "parallel":
            m.set_parallelbeam(12, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(12, 180.0))
        else:
            m.set_conebeam(12, N, N, PS, PS, CENTER, CENTER, m.setAngleArray(12, 360.0), SOD, SDD)
        m.set_default_volume()
        f = m.allocate_volume()
        m.set_FORBILD(f, True)
        g = m.allocate_projections()
        m.project(g, f)
        mask = np.ascontiguousarray((g > 0.05).astype(np.float32))
        v = m.allocate_volume()
        m.space_carving(mask, v)
        out[f"{name}_space_carving"] = v
    setups = {
        "parallel": lambda m, cc: m.set_parallelbeam(NA, 3, N, PS, PS, 1.0, cc,
                                                     m.setAngleArray(NA, 360.0)),
        "fan": lambda m, cc: m.set_fanbeam(NA, 3, N, PS, PS, 1.0, cc, m.setAngleArray(NA, 360.0),
                                           SOD, SDD),
        "cone": lambda m, cc: m.set_conebeam(NA, 8, N, PS, PS, 3.5, cc,
                                             m.setAngleArray(NA, 360.0), SOD, SDD),
    }
    for name, setup in setups.items():
        m = new()
        setup(m, CENTER - 2.2)
        m.set_default_volume()
        m.set_numZ(m.get_numRows())
        f = m.allocate_volume()
        m.set_FORBILD(f, True)
        g = m.allocate_projections()
        m.project(g, f)
        m.set_centerCol(CENTER)
        out[f"{name}_conjugate_difference"] = np.asarray(m.conjugate_difference(g.copy(), 0.0))
        m.find_centerCol(g)
        out[f"{name}_centerCol"] = np.array([m.get_centerCol()])
    return out


CASES.update({fn.__name__: fn for fn in (
    ray_trace_objects, voxelized_objects, geometry_utilities, resampling, data_processing)})
