"""LEAP's geometry-calibration sweeps and image metrics (part of upstream
``leap_preprocessing_algorithms``): :func:`~leap.compat.preprocessing.parameter_sweep`,
:func:`~leap.compat.preprocessing.geometric_calibration`, the bowtie centre search,
:func:`~leap.compat.preprocessing.entropy` and :func:`~leap.compat.preprocessing.MTF`.

These call other facade methods through ``leapct`` as LEAP does (``FBP``,
``inconsistencyReconstruction``, ``rebin_parallel_sinogram``, ``get_diameterFOV_min``,
``shift_detector``, ``rotate_detector``), so they work as far as the facade provides those.
"""
from __future__ import annotations

import numbers

import numpy as np

__all__ = ["quadratic_extrema", "find_centerCol_and_tiltAngle", "find_tau_and_tiltAngle",
           "geometric_calibration", "find_centerCol_or_tau_bowtie", "bowtie_alignment_metric",
           "parameter_sweep", "entropy", "MTF"]

_DEFAULT = []


def default_model():
    """The tomographicModels used when a function gets ``leapct=None`` (LEAP's module-level
    ``leapct_sweep``); created on first use so importing this module stays cheap."""
    if not _DEFAULT:
        from ..model import tomographicModels
        _DEFAULT.append(tomographicModels())
    return _DEFAULT[0]


def _new_model():
    from ..model import tomographicModels
    return tomographicModels()


def _numpy(x, name):
    if isinstance(x, np.ndarray):
        return x
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().cpu().numpy()
    if type(x).__module__.split(".")[0] == "cupy":
        return x.get()
    raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")


def quadratic_extrema(x_0, x_1, x_2, y_0, y_1, y_2):
    """Vertex of the parabola through (x_0, y_0), (x_1, y_1), (x_2, y_2) (x_0 < x_1 < x_2).

    Returns ``(x, y)``: the vertex when it lies in [x_0, x_2], else x_1 (with the
    parabola's value there); ``(x_1, y_1)`` when the points are collinear.
    """
    x = np.array([x_0, x_1, x_2], dtype=np.float64)
    y = np.array([y_0, y_1, y_2], dtype=np.float64)
    if len(set(x.tolist())) < 3:
        raise ValueError(f"quadratic_extrema needs three distinct abscissas, got {x.tolist()}")
    a, b, c = np.polyfit(x, y, 2)
    # polyfit leaves round-off where LEAP's Lagrange form gives exactly 0 for a line.
    if abs(a) <= 1e-12 * max(abs(b), abs(c), 1e-300):
        return x_1, y_1
    opt = -b / (2.0 * a)
    if not (x_0 <= opt <= x_2):
        opt = x_1
    return opt, a * opt * opt + b * opt + c


def _valid_param(param):
    if param not in ("centerCol", "tau"):
        raise ValueError(f"param must be 'centerCol' or 'tau', got {param!r}")


def _set(leapct, param, value):
    (leapct.set_centerCol if param == "centerCol" else leapct.set_tau)(float(value))


def _get(leapct, param):
    return leapct.get_centerCol() if param == "centerCol" else leapct.get_tau()


def find_centerCol_and_tiltAngle(leapct, g, centerCols, tilts, method=None, iz=None):
    """:func:`geometric_calibration` of centerCol and tiltAngle."""
    return geometric_calibration(leapct, g, centerCols, tilts, "centerCol", method, iz)


def find_tau_and_tiltAngle(leapct, g, taus, tilts, method=None, iz=None):
    """:func:`geometric_calibration` of tau and tiltAngle."""
    return geometric_calibration(leapct, g, taus, tilts, "tau", method, iz)


def geometric_calibration(leapct, g, shifts, tilts, param="centerCol", method=None, iz=None):
    """Estimate tiltAngle (degrees) and centerCol or tau (``param``): for every tilt in
    ``tilts`` find the best shift in ``shifts`` (by the inconsistency metric of
    :func:`parameter_sweep`, or the bowtie metric), then refine the tilt by a parabola
    through the best three and redo the shift search there. Sets the results in
    ``leapct`` (cone beam: its tilt is set by ``set_tiltAngle``) and returns the
    metric at the optimum.

    ``method``: 'inconsistency' or 'bowtie'; None picks bowtie when the minimum field
    of view is under 10 % of the nominal one (a strongly offset detector).
    """
    _valid_param(param)
    tilts = np.asarray(tilts, dtype=np.float64).ravel()
    if tilts.size == 0:
        raise ValueError("tilts must hold at least one tilt angle")
    if method is None:
        s_max = leapct.get_pixelWidth() * 0.5 * (leapct.get_numCols() - 1)
        sdd = leapct.get_sdd()
        dfov_nominal = 2.0 * leapct.get_sod() / sdd * s_max / np.sqrt(1.0 + (s_max / sdd) ** 2)
        method = "bowtie" if leapct.get_diameterFOV_min() <= 0.1 * dfov_nominal else "inconsistency"
    if method not in ("inconsistency", "bowtie"):
        raise ValueError(f"method must be 'inconsistency' or 'bowtie', got {method!r}")

    def best_shift():
        if method == "inconsistency":
            return parameter_sweep(leapct, g, shifts, param, iz, algorithmName="inconsistency",
                                   set_optimal=True)[1]
        return find_centerCol_or_tau_bowtie(leapct, g, shifts, param, iRow=iz)

    metrics = np.zeros(tilts.size)
    shift_est = np.zeros(tilts.size)
    for m, tilt in enumerate(tilts):
        leapct.set_tiltAngle(float(tilt))
        metrics[m] = best_shift()
        shift_est[m] = _get(leapct, param)

    k = int(np.argmin(metrics))
    if 0 < k < tilts.size - 1:
        best_tilt, _ = quadratic_extrema(*tilts[k - 1:k + 2], *metrics[k - 1:k + 2])
        leapct.set_tiltAngle(float(best_tilt))
        return best_shift()
    _set(leapct, param, shift_est[k])
    leapct.set_tiltAngle(float(tilts[k]))
    return metrics[k]


def find_centerCol_or_tau_bowtie(leapct, g, values, param="centerCol", iRow=-1):
    """Pick centerCol or tau among ``values`` minimising :func:`bowtie_alignment_metric`
    (refined by a parabola through the best three); sets it in ``leapct`` and returns
    the metric there. ``iRow`` None: the row nearest centerRow."""
    _valid_param(param)
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("values must hold at least one candidate")
    if iRow is None:
        iRow = max(0, min(leapct.get_numRows() - 1, int(leapct.get_centerRow() + 0.5)))
    metrics = np.zeros(values.size)
    for i, v in enumerate(values):
        _set(leapct, param, v)
        metrics[i] = bowtie_alignment_metric(leapct, g, iRow)
    k = int(np.argmin(metrics))
    opt, metric = values[k], metrics[k]
    if 0 < k < values.size - 1:
        opt, metric = quadratic_extrema(*values[k - 1:k + 2], *metrics[k - 1:k + 2])
    _set(leapct, param, opt)
    return metric


def bowtie_alignment_metric(leapct, g, iRow=-1, doPlot=False):
    """Mean magnitude of the 2-D Fourier transform of a (parallel-beam) sinogram inside
    the "bowtie" region where a centred object's sinogram has no energy
    (``|ν_s| < 0.9·(numAngles/(π·numCols))·|ν_φ|`` in normalised frequencies,
    ``|ν_φ| > 0.05``): a mis-set centre leaks energy into it. Fan and cone data are
    first rebinned to parallel beam (``leapct.rebin_parallel_sinogram``); ``iRow`` < 0: the middle row."""
    geom = leapct.get_geometry()
    if geom in ("CONE", "FAN"):
        sino = _numpy(leapct.rebin_parallel_sinogram(g, 6, iRow), "sinogram")
        if leapct.get_offsetScan():
            sino = np.concatenate((sino, np.flip(sino, axis=1)))
    else:
        g = _numpy(g, "g")
        if iRow is None or iRow < 0:
            iRow = leapct.get_numRows() // 2
        sino = g[:, iRow, :]
    bowtie = np.abs(np.fft.fftshift(np.fft.fft2(sino)))
    nu = 0.05
    slope = sino.shape[0] / (np.pi * sino.shape[1])
    phi = np.arange(sino.shape[0], dtype=np.float64)
    s = np.arange(sino.shape[1], dtype=np.float64)
    phi = (phi - phi.mean()) / np.max(phi - phi.mean())
    s = (s - s.mean()) / np.max(s - s.mean())
    s, phi = np.meshgrid(s, phi)
    mask = (np.abs(phi) > nu) & ((1.0 - 2.0 * nu) * slope * np.abs(phi) > np.abs(s))
    if not mask.any():
        raise ValueError(f"the sinogram ({sino.shape}) is too small for the bowtie metric")
    if doPlot:
        import matplotlib.pyplot as plt
        plt.imshow(sino, cmap="gray")
        plt.show()
    return float(np.sum(bowtie[mask]) / np.count_nonzero(mask))


_VALID_SWEEP = ("centerCol", "centerRow", "tau", "sod", "sdd", "tilt", "vertical_shift",
                "horizontal_shift")


def parameter_sweep(leapct, g, values, param="centerCol", iz=None, algorithmName="FBP",
                    set_optimal=False, isFiltered=False):
    """Reconstruct one z-slice for each value of one geometry parameter.

    ``param``: 'centerCol', 'centerRow', 'tau', 'sod', 'sdd', 'tilt' (or 'tiltAngle';
    degrees, detector rotation about the optical axis — the data are not resampled),
    'vertical_shift' or 'horizontal_shift' (mm, detector shifts). ``values`` are sorted
    and made unique. ``iz``: the slice index (default: the slice nearest z = 0).
    ``algorithmName``: 'FBP' (metric: :func:`entropy`) or 'inconsistency' /
    'inconsistencyReconstruction' (FBP with a derivative in place of the ramp filter;
    metric: Σf², which is least for a consistent geometry). ``isFiltered``: ``g`` is
    already filtered; only backproject.

    Returns the (len(values), numY, numX) stack of slices; with ``set_optimal`` also
    sets the value minimising the metric (parabola-refined) in ``leapct`` and returns
    ``(stack, metric_at_optimum)``. With ``set_optimal`` the slices cover the field of
    view common to all values (numX, numY shrink).
    """
    if param == "tiltAngle":
        param = "tilt"
    if param is None:
        param = "centerCol"
    if param not in _VALID_SWEEP:
        raise ValueError(f"param must be one of {_VALID_SWEEP}, got {param!r}")
    if algorithmName not in ("FBP", "inconsistency", "inconsistencyReconstruction"):
        raise ValueError(f"algorithmName must be 'FBP' or 'inconsistency', got {algorithmName!r}")
    values = np.unique(np.asarray(values, dtype=np.float64).ravel())
    if values.size == 0:
        raise ValueError("values must hold at least one parameter value")
    if not (leapct.ct_geometry_defined() and leapct.ct_volume_defined()):
        raise ValueError("set the CT geometry and volume before parameter_sweep")
    geom = leapct.get_geometry()
    if iz is None:
        iz = int(np.argmin(np.abs(leapct.z_samples())))
    if isinstance(iz, bool) or not isinstance(iz, numbers.Integral) or not 0 <= iz < leapct.get_numZ():
        raise ValueError(f"iz must be a slice index in [0, {leapct.get_numZ() - 1}], got {iz!r}")
    iz = int(iz)
    if param == "tilt" and geom == "FAN":
        raise ValueError("a detector tilt cannot be applied to fan-beam data")
    if param == "tau" and geom == "PARALLEL":
        raise ValueError("tau does not apply to parallel-beam data")
    if geom == "MODULAR" and param in ("tau", "centerCol", "centerRow"):
        raise ValueError("centerCol, centerRow and tau do not apply to modular-beam data")
    g = _numpy(g, "g")
    if g.shape != tuple(leapct.get_projection_dim()):
        raise ValueError(f"g must have shape {tuple(leapct.get_projection_dim())}, got {g.shape}")

    sweep = _new_model()
    sweep.copy_parameters(leapct)
    if set_optimal:
        # Reconstruct only the part of the slice every swept geometry sees.
        sweep.set_offsetScan(False)
        dfov = sweep.get_diameterFOV_min()
        if param in ("centerCol", "tau"):
            for v in (values[0], values[-1]):
                _set(sweep, param, v)
                dfov = min(dfov, sweep.get_diameterFOV_min())
            _set(sweep, param, _get(leapct, param))
        dfov -= leapct.get_voxelWidth()
        n = int(dfov / sweep.get_voxelWidth())
        if n < 1:
            raise ValueError("the common field of view of the swept geometries is empty")
        sweep.set_diameterFOV(dfov)
        sweep.set_offsetX(0.0)
        sweep.set_offsetY(0.0)
        sweep.set_numX(n)
        sweep.set_numY(n)

    z = sweep.z_samples()
    g_sweep = g
    if param == "tilt":
        if geom == "CONE":
            sweep.set_tiltAngle(0.0)
        else:
            sweep.convert_to_modularbeam()
    if geom in ("FAN", "PARALLEL") and param != "tilt":
        # Slices map 1:1 to rows: keep detector row iz and volume slice iz only.
        g_sweep = sweep.crop_projections([iz, iz], None, g)
        sweep.set_numZ(1)
    else:
        sweep.set_numZ(1)
        sweep.set_offsetZ(float(z[iz]))
        if param in ("tau", "centerCol") and geom == "CONE":
            rows = sweep.rowRangeNeededForBackprojection()
            if rows[0] > 0 or rows[1] < sweep.get_numRows() - 1:
                g_sweep = sweep.crop_projections(rows, None, g)

    f_stack = np.zeros((values.size, sweep.get_numY(), sweep.get_numX()), dtype=np.float32)
    f = sweep.allocate_volume()
    metrics = np.zeros(values.size)
    inconsistency = algorithmName != "FBP"
    last = 0.0
    for n, v in enumerate(values):
        v = float(v)
        if param == "centerCol":
            sweep.set_centerCol(v)
        elif param == "centerRow":
            if geom == "CONE":
                # Move the slice with the detector so it stays at the same detector row.
                dz = (sweep.get_centerRow() - v) * sweep.get_pixelHeight() * sweep.get_sod() / sweep.get_sdd()
                sweep.set_offsetZ(sweep.get_offsetZ() + dz)
            sweep.set_centerRow(v)
        elif param == "tau":
            sweep.set_tau(v)
        elif param == "sod":
            sweep.set_sod(v)
        elif param == "sdd":
            sweep.set_sdd(v)
        elif param == "vertical_shift":
            sweep.shift_detector(v - last, 0.0)
        elif param == "horizontal_shift":
            sweep.shift_detector(0.0, v - last)
        elif param == "tilt":
            if geom == "CONE":
                sweep.set_tiltAngle(v)
            else:
                sweep.rotate_detector(v - last)
        f[...] = 0.0
        if isFiltered:
            sweep.weightedBackproject(g_sweep, f)
        elif inconsistency:
            sweep.inconsistencyReconstruction(g_sweep, f)
        else:
            sweep.FBP(g_sweep, f)
        metrics[n] = float(np.sum(f.astype(np.float64) ** 2)) if inconsistency else entropy(f)
        f_stack[n] = f[0]
        last = v

    if not set_optimal:
        return f_stack
    # LEAP minimises both metrics (sharper FBP slices have lower entropy).
    k = int(np.argmin(metrics))
    opt, metric = values[k], metrics[k]
    if 0 < k < values.size - 1:
        opt, metric = quadratic_extrema(*values[k - 1:k + 2], *metrics[k - 1:k + 2])
    opt = float(opt)
    if param in ("centerCol", "tau"):
        _set(leapct, param, opt)
    elif param == "centerRow":
        leapct.set_centerRow(opt)
    elif param == "sod":
        leapct.set_sod(opt)
    elif param == "sdd":
        leapct.set_sdd(opt)
    elif param == "vertical_shift":
        leapct.shift_detector(opt, 0.0)
    elif param == "horizontal_shift":
        leapct.shift_detector(0.0, opt)
    elif param == "tilt":
        if geom == "CONE":
            leapct.set_tiltAngle(opt)
        elif geom == "MODULAR":
            leapct.rotate_detector(opt - last)
    return f_stack, metric


def entropy(x):
    r"""Shannon entropy (bits) of the values of ``x``: :math:`-\sum_b p_b\log_2 p_b` over a
    histogram of ⌊√size⌋ equal bins between min and max."""
    x = _numpy(x, "x")
    if x.size == 0:
        raise ValueError("entropy of an empty array")
    counts, _ = np.histogram(np.ravel(x), bins=max(1, int(np.sqrt(x.size))))
    p = counts[counts > 0] / x.size
    return float(-np.sum(p * np.log2(p)))


def MTF(leapct, f, r, center=None, getEdgeResponse=False, oversamplingRate=4):
    r"""Modulation transfer function from the reconstruction of a uniform disk or cylinder
    of radius ``r`` (mm), centred at ``center`` = (x, y, z) mm (default the origin).

    On the slice nearest z, voxel values within 2r of the centre are binned by distance
    into bins of width T = voxelWidth/``oversamplingRate`` covering (r_0, r_0 + N·T] around
    the edge r (the edge-spread function; an empty bin takes the next bin's value). The
    line-spread function is its central difference; the MTF is
    :math:`|\mathcal F[LSF]|/|\mathcal F[LSF]|_0 / \mathrm{sinc}(\omega)` (undoing the
    difference's own response), first N/8 samples, i.e. frequencies up to the voxel
    Nyquist frequency: sample k is at k/(N·T) cycles/mm.

    f : (numZ, numY, numX). Returns the MTF (N/8,), or the edge response (N,) when
    ``getEdgeResponse``.
    """
    if not leapct.ct_volume_defined():
        raise ValueError("set the CT volume before MTF")
    f = _numpy(f, "f")
    if f.shape != tuple(leapct.get_volume_dim()):
        raise ValueError(f"f must have the volume shape {tuple(leapct.get_volume_dim())}, got {f.shape}")
    r = float(r)
    if not r > 0:
        raise ValueError(f"r must be a positive radius (mm), got {r}")
    M = int(oversamplingRate)
    if M < 1:
        raise ValueError(f"oversamplingRate must be a positive integer, got {oversamplingRate!r}")
    xc, yc, zc = (0.0, 0.0, 0.0) if center is None else (float(c) for c in center)
    x, y, z = leapct.x_samples(), leapct.y_samples(), leapct.z_samples()
    iz = int(np.clip(np.argmin(np.abs(z - zc)), 0, leapct.get_numZ() - 1))
    yy, xx = np.meshgrid(y, x, indexing="ij")
    dist = np.sqrt((xx - xc) ** 2 + (yy - yc) ** 2)
    inside = dist < 2.0 * r
    mus, dist = f[iz][inside].astype(np.float64), dist[inside]

    T = leapct.get_voxelWidth() / M
    N = 2 * M * int(r / (2 * M * T))
    if N < 8:
        raise ValueError(f"r = {r} mm is too small for an MTF at voxel width {leapct.get_voxelWidth()} mm")
    r0 = r - 0.5 * N * T
    # Bin i holds distances in ((i − ½)T + r0, (i + ½)T + r0].
    idx = np.ceil((dist - r0) / T - 0.5).astype(np.int64)
    keep = (idx >= 0) & (idx < N)
    sums = np.bincount(idx[keep], weights=mus[keep], minlength=N)
    counts = np.bincount(idx[keep], minlength=N)
    esf = np.zeros(N)
    nxt = 0.0
    for i in range(N - 1, -1, -1):          # empty bins copy the next one outwards
        esf[i] = sums[i] / counts[i] if counts[i] else nxt
        nxt = esf[i]
    if getEdgeResponse:
        return esf
    lsf = (np.roll(esf, -1) - np.roll(esf, 1)) / (2.0 * T)
    lsf[0] = lsf[-1] = 0.0
    spec = np.abs(np.fft.fft(lsf))
    if spec[0] == 0:
        raise ValueError("the edge response is flat: no disk edge at radius r in f")
    omega = np.arange(N // 2) * 2.0 / N
    mtf = spec[: N // 2] / spec[0] / np.sinc(omega)
    return mtf[: N // 8]
