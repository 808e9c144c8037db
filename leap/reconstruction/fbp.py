"""Filtered back-projection (FBP / FDK) for every geometry, in attenuation units.

Steps, with LEAP's conventions (see :mod:`leap.reconstruction.weights` and
:mod:`leap.reconstruction.filters`):

1. pre-weights: cosine weights (fan/cone, flat/curved, with τ) × view weights
   (Parker for short scans, ½ redundancy for ≥ 360°, non-equispaced steps) —
   offset-detector scans are zero-padded to a symmetric detector with half-fan weights;
   modular beams (axially aligned) are weighted view by view as the cone beam each
   view is (:meth:`leap.geometry.ModularBeam.axial_terms`);
2. ramp filter along detector rows (linear convolution, FFT), scaled by
   :func:`leap.reconstruction.weights.fbp_scale`;
3. post-weights (the inverse cone weight);
4. back-projection with the matched back-projector (fan beams: extra distance weight
   sod/(sod − x·θ); cone-parallel: D/sod, undoing the footprint's 1/D row magnification); helical cone scans weight each voxel's views with a window
   centred where the source passes the voxel (see :func:`helical_slice_weights`).

Tilted cone beams (``tilt``, LEAP's ``tiltAngle``) are reconstructed as their upright
form, the views resampled onto it by two shears
(:mod:`leap.reconstruction.tilt_resampling`): filtering
along the tilted rows themselves mixes heights and fails with measured (non-uniform)
angles. Flat-detector scans with a flying focal spot (``source_shifts``; helical, or
without z shifts) are reconstructed spot by spot, each spot's views an ordinary cone beam
about its own source (:mod:`leap.reconstruction.focal_spots`).

A uniform object of value μ (1/mm) reconstructs to μ.

GPU: CUDA arrays (CuPy, torch CUDA, ``__cuda_array_interface__``) run every step on
their device (weights and back-projection as Numba CUDA kernels, the ramp filter with
CuPy's FFT; :mod:`leap.kernels.cuda.filters`); NumPy arrays with GPUs selected
(``devices=`` or :func:`leap.devices.gpu.set_devices`) run on the GPU(s) from host memory in
volume slabs and view chunks (:mod:`leap.devices.gpu`). Weights come from the geometry alone,
so only geometry-sized arrays travel to the device.
"""
from __future__ import annotations

import math

import numpy as np

from .. import _validate, operators
from ..devices import arrays as _arrays
from .filters import ROWS, filter_rows, filter_views, ramp_response
from ..geometry import ConeBeam, ConeParallelBeam, FanBeam, ModularBeam, ParallelBeam, Volume
from ..devices.gpu import resolve as resolve_devices
from ..kernels.cpu import launch as _cpu
from .focal_spots import group_weights, groups_by_spot, uses_spot_groups
from ..kernels.plan import make_plan
from .tilt_resampling import is_tilted, to_upright, to_upright_transpose, upright_form
from .weights import (angular_step, cosine_weights, fbp_scale, offset_scan_layout,
                      offset_scan_padding, offset_scan_weights, parker_weights, view_weights)


def _sample_spacing(geometry) -> float:
    d = geometry.detector
    if isinstance(geometry, (ParallelBeam, ConeParallelBeam)):
        return d.pixel_width
    if isinstance(geometry, ModularBeam):
        sod, sdd = geometry.mean_distances()
        return d.pixel_width * sod / sdd
    return d.pixel_width * geometry.sod / geometry.sdd


def helical_window(geometry: ConeBeam) -> float:
    """δ, the half-width (radians) of the cos² taper of :func:`helical_slice_weights`, as
    wide as the detector allows: voxels near the axis stay on the detector for
    ``|Δ| ≤ π/p̂`` (p̂ the normalised pitch), and δ = min(π/2, 0.85·π/p̂ − π/2)."""
    pitch = abs(geometry.normalized_helical_pitch())
    delta = min(0.5 * math.pi, 0.85 * math.pi / pitch - 0.5 * math.pi)
    if delta <= 0.05:
        raise ValueError(f"helical FBP needs a normalised pitch below about 1.6, got {pitch:.3g}: "
                         "the detector does not cover half a turn of the helix")
    return delta


def helical_slice_weights(geometry: ConeBeam, volume: Volume, window: float | None = None
                          ) -> np.ndarray:
    """Per-(view, slice) weights of helical FBP, shape (num_angles, num_z).

    For a slice at height z the source passes it at ψ_c(z) = ψ_mid + z/h. Views are
    weighted by w(ψ − ψ_c(z)): 1 within π/2 − δ of ψ_c, a cos² taper to 0 at π/2 + δ.
    With a flying focal spot (``source_shifts``) view k's source sits at angle
    ψ_k + Δψ_k and at the height the helix reaches at ψ_k + Δz_k/h, and its weight is
    w(ψ_k + Δψ_k + Δz_k/h − ψ_c(z)). Since w(Δ) + w(Δ − π) = 1, every line measured
    twice (at Δ and Δ ± π) gets total weight 1, as the ½ weights do for a circular full
    scan. δ = ``window`` (radians), by default :func:`helical_window` of this geometry (pinned by a front end that
    reconstructs from a crop of the detector rows, whose own δ would be narrower).
    Slices near the ends of the helix, where part of the window was not scanned, are
    renormalised so their weights still integrate to π over the angles.
    """
    h = geometry.helical_pitch
    delta = helical_window(geometry) if window is None else float(window)
    psi = geometry.angles
    psi_mid = geometry.helical_mid_angle
    z = volume.z_samples()
    src = np.zeros((psi.size, 1))
    if geometry.source_shifts is not None:
        # A flying focal spot: each view's window is centred where its own source, at
        # angle ψ + Δψ and height z_s + Δz, passes the slice (as each spot's views
        # reconstructed about their own source would be; leap.reconstruction.focal_spots).
        src = (geometry.source_shifts[:, 0] + geometry.source_shifts[:, 1] / h)[:, None]
    d = np.abs(psi[:, None] + src - (psi_mid + z[None, :] / h))
    lo, hi = 0.5 * math.pi - delta, 0.5 * math.pi + delta
    w = np.where(d <= lo, 1.0,
                 np.where(d >= hi, 0.0, np.cos(0.25 * math.pi * (d - lo) / delta) ** 2))
    T = abs(angular_step(geometry))
    steps = np.abs(np.gradient(psi)) if psi.size > 1 else np.array([T])
    total = np.sum(w * steps[:, None], axis=0)
    scale = np.where(total > 1e-6, math.pi / np.maximum(total, 1e-12), 0.0)
    return w * scale[None, :]


def _check_fbp_geometry(geometry):
    if isinstance(geometry, ConeParallelBeam) and geometry.is_helical:
        raise ValueError("FBP of helical cone-parallel data is not implemented in leap (upstream "
                         "LEAP has it on the GPU only); reconstruct with an iterative method "
                         "(e.g. SART, RWLS) or FBP the cone-beam data before rebinning")


def _distance_weighted(geometry) -> bool:
    """Whether FBP's back-projection carries the distance weight (fan, cone-parallel)."""
    return isinstance(geometry, (FanBeam, ConeParallelBeam))


def _filter_factors(geometry, volume, ramp_filter, lowpass, window):
    """The filtering stage's pieces: the pre-weight factors (float64 arrays broadcasting
    against (num_angles, num_rows, num_cols): view weights, Parker weights, cosine
    weights), the scaled ramp response and the float32 post-weights (None where absent)."""
    _check_fbp_geometry(geometry)
    helical = isinstance(geometry, ConeBeam) and geometry.is_helical
    if isinstance(geometry, ModularBeam):
        pre, post = _modular_cosine_weights(geometry)
    else:
        pre, post = cosine_weights(geometry)
        post = None if post is None else post.astype(np.float32)
    factors = [view_weights(geometry, helical=helical)]
    parker = None if helical else parker_weights(geometry)
    if parker is not None:
        factors.append(parker)
    if pre is not None:
        factors.append(pre)
    H = geometry_ramp_response(geometry, ramp_filter, lowpass, window)
    H *= fbp_scale(geometry, volume)
    return factors, H, post


def _modular_cosine_weights(geometry):
    """Modular beams' cosine weights (:func:`leap.reconstruction.weights.cosine_weights`)
    as functions
    ``(vs, ve) → weights of views vs:ve``: they differ per view and pixel, so whole
    arrays would be (num_angles, num_rows, num_cols) float64 twice over; the filtering
    computes them a block of views at a time (bit for bit the same values)."""
    t = geometry.axial_terms()
    k = t.tau / t.sod

    def common(vs, ve):
        u, v = t.u[vs:ve, None, :], t.v[vs:ve, :, None]
        return u, 1.0 / np.sqrt(1.0 + u * u + v * v)

    def pre(vs, ve):
        u, w = common(vs, ve)
        return w * (1.0 + k[vs:ve, None, None] * u)

    def post(vs, ve):
        return common(vs, ve)[1].astype(np.float32)

    return pre, post


def _pre_weights(factors, vs=0, ve=None):
    """The float32 product of the pre-weight factors for views vs:ve."""
    w = _views_of(factors[0], vs, ve)
    for f in factors[1:]:
        w = w * _views_of(f, vs, ve)
    return w.astype(np.float32)


def _scale_views(q, factors):
    """``q *= pre-weights``, a block of views at a time, so the weights never take more
    than a few MB however large q is (bit for bit the product of the whole arrays)."""
    na = q.shape[0]
    step = max(1, (1 << 19) // max(1, q[0].size))
    for vs in range(0, na, step):
        ve = min(na, vs + step)
        q[vs:ve] *= _pre_weights(factors, vs, ve)
    return q


def _filter_steps(geometry, volume, ramp_filter, lowpass, window):
    """:func:`_filter_factors` with the pre-weights multiplied out (float32, the GPU's
    form)."""
    factors, H, post = _filter_factors(geometry, volume, ramp_filter, lowpass, window)
    return _pre_weights(factors), H, post(0, None) if callable(post) else post


def geometry_ramp_response(geometry, ramp_filter=2, lowpass=1.0, window="none") -> np.ndarray:
    """The ramp filter's response (:func:`leap.reconstruction.filters.ramp_response`) for
    this geometry's
    detector: samples spaced as the columns are at the axis, the fan-beam form for curved
    detectors. Unscaled (FBP multiplies it by :func:`leap.reconstruction.weights.fbp_scale`)."""
    d = geometry.detector
    curved = getattr(d, "curved", False)
    return ramp_response(d.num_cols, _sample_spacing(geometry), ramp_filter, lowpass=lowpass,
                         window=window,
                         curved_pixel_angle=(d.pixel_width / geometry.sdd) if curved else None)


def ramp_filter_rows(geometry, g, *, ramp_filter=2, lowpass=1.0, window="none", scale=1.0,
                     truncated_scan=False):
    """``g`` (num_angles, num_rows, num_cols) ramp filtered along its rows in place, times
    ``scale`` (no geometric weights: LEAP's ``rampFilterProjections``); returns ``g``."""
    filter_rows(g, geometry_ramp_response(geometry, ramp_filter, lowpass, window) * scale,
                extrapolate=truncated_scan)
    return g


def filter_projections(geometry, volume, g, *, ramp_filter=2, lowpass=1.0, window="none",
                       truncated_scan=False, offset_scan=False, row_filter=None):
    """Weighted, ramp-filtered projections ready for back-projection, and the geometry
    they belong to (wider than ``geometry`` for offset scans).

    ``row_filter(q, geometry)``, when given, replaces the (scaled) ramp filter: it must
    filter the weighted projections q in place (lambda tomography, inconsistency
    reconstruction).

    Returns ``(q, geometry)`` with q a new float32 array.
    """
    helical = isinstance(geometry, ConeBeam) and geometry.is_helical
    if row_filter is None:
        stage = FilterStage(geometry, volume, ramp_filter=ramp_filter, lowpass=lowpass,
                            window=window, truncated_scan=truncated_scan,
                            offset_scan=offset_scan)
        q = np.empty(stage.geometry.projection_shape, dtype=np.float32)
        return stage(g, q), stage.geometry
    q = np.array(g, dtype=np.float32, copy=True)
    if offset_scan and not helical:
        q, geometry = offset_scan_padding(geometry, q)
    factors, H, post = _filter_factors(geometry, volume, ramp_filter, lowpass, window)
    _scale_views(q, factors)
    row_filter(q, geometry)
    if post is not None:
        q *= _views_of(post, 0, None)
    return q, geometry


def weighted_backproject(geometry, volume, q, out=None, *, fov_radius=None, helical_window=None):
    """The back-projection step of FBP: fan beams weight by sod/(sod − x·θ), cone-parallel
    beams by D/sod; helical cone beams by :func:`helical_slice_weights` (taper
    ``helical_window``); otherwise the plain matched back-projection."""
    slice_weights = None
    if isinstance(geometry, ConeBeam) and geometry.is_helical:
        slice_weights = helical_slice_weights(geometry, volume, helical_window)
    _check_fbp_geometry(geometry)
    return operators.backproject(geometry, volume, q, out=out, fov_radius=fov_radius,
                                 fan_distance_weight=_distance_weighted(geometry),
                                 slice_weights=slice_weights)


def fbp(geometry, volume, g, out=None, *, ramp_filter=2, lowpass=1.0, window="none",
        offset_scan=False, truncated_scan=False, fov_radius=None, helical_window=None,
        devices=None, max_slices=None, tilt_resampling=True):
    """Filtered back-projection of ``g`` (num_angles, num_rows, num_cols) float32.

    ``g`` is never modified. Returns (or fills ``out``) a (num_z, num_y, num_x) float32
    volume in attenuation units (1/mm). ``helical_window``: see
    :func:`helical_slice_weights`. ``devices`` and ``max_slices``: as for
    :func:`leap.operators.project` (GPU selection for NumPy inputs).
    ``tilt_resampling``: tilted cone beams are reconstructed as their upright form
    (:mod:`leap.reconstruction.tilt_resampling`); False filters along the tilted detector
    rows instead,
    as upstream LEAP's GPU FBP and leap's trainable-geometry FBP
    (:mod:`leap.torch`) do (less accurate, worst with non-uniform angles).
    """
    _validate.check_geometry(geometry, volume)
    if is_tilted(geometry) and tilt_resampling:
        return _fbp_tilted(geometry, volume, g, out, ramp_filter=ramp_filter, lowpass=lowpass,
                           window=window, offset_scan=offset_scan,
                           truncated_scan=truncated_scan, fov_radius=fov_radius,
                           helical_window=helical_window, devices=devices,
                           max_slices=max_slices)
    if uses_spot_groups(geometry):
        return _fbp_by_spot(geometry, volume, g, out, ramp_filter=ramp_filter, lowpass=lowpass,
                            window=window, offset_scan=offset_scan,
                            truncated_scan=truncated_scan, fov_radius=fov_radius,
                            helical_window=helical_window, devices=devices,
                            max_slices=max_slices)
    opts = dict(ramp_filter=ramp_filter, lowpass=lowpass, window=window,
                offset_scan=offset_scan, truncated_scan=truncated_scan, fov_radius=fov_radius,
                helical_window=helical_window)
    if _arrays.is_cuda_array(g) or _arrays.is_cuda_array(out):
        return _fbp_gpu(geometry, volume, g, out, **opts)
    _validate.check_array("g", g, geometry.projection_shape)
    _validate.check_finite("g", g)
    devs, cap = resolve_devices(devices, max_slices)
    if devs:
        f = _validate.check_out("out", out, volume.shape, g)
        return _fbp_gpu(geometry, volume, g, f, host=(devs, cap), **opts)
    if isinstance(geometry, ModularBeam):
        _check_axial_modular(geometry)
    fgeo, fov_radius, plan = _kernel_plan(geometry, volume, offset_scan, fov_radius,
                                          helical_window)
    if not _cpu.uses_axial_kernels(plan):
        q, fgeo = filter_projections(geometry, volume, g, ramp_filter=ramp_filter,
                                     lowpass=lowpass, window=window,
                                     truncated_scan=truncated_scan, offset_scan=offset_scan)
        return weighted_backproject(fgeo, volume, q, out=out, fov_radius=fov_radius,
                                    helical_window=helical_window)
    f = _validate.check_out("out", out, volume.shape, g)
    # What the CPU back-projector reads (launch.prepare_projections of the filtered
    # views), written by the filter itself: FBP's one projection-sized temporary.
    G = np.empty(_cpu.prepared_shape(plan), dtype=np.float32)
    FilterStage(geometry, volume, ramp_filter=ramp_filter, lowpass=lowpass, window=window,
                truncated_scan=truncated_scan, offset_scan=offset_scan)(
        g, G, layout=_cpu.prepared_layout(plan), row_factor=plan.row_factor)
    return _cpu.backproject_prepared(plan, G, f)


def _fbp_tilted(geometry, volume, g, out, *, fov_radius, **opts):
    """FBP of a tilted cone beam: FBP of its upright form, the views resampled onto it
    (:mod:`leap.reconstruction.tilt_resampling`), within the tilted scan's own field of view. CUDA
    arrays are resampled on the host (the resampling is a NumPy gather; the
    reconstruction itself runs on their device)."""
    upright, rs = upright_form(geometry)
    if fov_radius is None:
        fov_radius = geometry.fov_radius()
    if _arrays.is_cuda_array(g):
        _validate.check_cuda_pair("g", g, out, geometry.projection_shape, volume.shape)
        from numba import cuda
        host = _arrays.as_numba(g).copy_to_host()
        _validate.check_finite("g", host)
        gu = _arrays.empty_like_kind(g, upright.projection_shape)
        _arrays.as_numba(gu).copy_to_device(to_upright(host, rs))
        cuda.synchronize()
        return fbp(upright, volume, gu, out, fov_radius=fov_radius, **opts)
    _validate.check_array("g", g, geometry.projection_shape)
    _validate.check_finite("g", g)
    return fbp(upright, volume, to_upright(g, rs), out, fov_radius=fov_radius, **opts)


def _spot_settings(geometry, fov_radius, taper):
    """The field of view and helical window (``taper``) every focal-spot group shares:
    the scan's own unless given."""
    if fov_radius is None:
        fov_radius = geometry.fov_radius()
    if taper is None and geometry.is_helical:
        taper = helical_window(geometry)
    return fov_radius, taper


def _fbp_by_spot(geometry, volume, g, out, *, fov_radius, helical_window, **opts):
    """FBP of a flat-detector scan with a flying focal spot: the weighted mean of the
    FBPs of its focal-spot groups, each a cone beam about its own source
    (:mod:`leap.reconstruction.focal_spots`,
    :func:`~leap.reconstruction.focal_spots.group_weights`)."""
    if _arrays.is_cuda_array(g) or _arrays.is_cuda_array(out):
        raise NotImplementedError("FBP of a flat-detector scan with a flying focal spot groups "
                                  "its views by spot on the host: pass NumPy arrays (GPUs "
                                  "through devices=)")
    _validate.check_array("g", g, geometry.projection_shape)
    _validate.check_finite("g", g)
    f = _validate.check_out("out", out, volume.shape, g)
    fov_radius, helical_window = _spot_settings(geometry, fov_radius, helical_window)
    total = np.zeros(volume.shape, dtype=np.float64)
    groups = groups_by_spot(geometry)
    for (idx, cone), w in zip(groups, group_weights(groups)):
        rec = fbp(cone, volume, np.ascontiguousarray(g[idx]), fov_radius=fov_radius,
                  helical_window=helical_window, **opts)
        total += w * rec
    f[...] = total
    return f


class FilterStage:
    """FBP's filtering stage of one problem, its geometry-sized pieces computed once, to
    be applied to the whole projections or to any block of views and rows of them: the
    one implementation that the in-memory :func:`fbp` and the out-of-core FBP
    (:mod:`leap.distributed.stream`) both run.

    Attributes: ``geometry`` (what the filtered projections belong to: the input's
    geometry, wider for offset scans), ``first`` (the column of that wider detector
    where the data start).

    ``stage(g, out, views=(vs, ve), rows=(rs, re))`` writes the filtered block: ``g`` the
    measured views vs:ve and rows rs:re (nv, nr, num_cols) float32, ``out`` (nv, nr,
    geometry's columns) float32 (or the back-projector's layout, see
    :func:`leap.reconstruction.filters.filter_views`). Filtering runs along rows and every
    weight is a
    function of (view, row, column), so a block filters as it does inside the whole,
    bit for bit.
    """

    def __init__(self, geometry, volume, *, ramp_filter=2, lowpass=1.0, window="none",
                 truncated_scan=False, offset_scan=False):
        helical = isinstance(geometry, ConeBeam) and geometry.is_helical
        fgeo, first, n_add = geometry, 0, 0
        if offset_scan and not helical:
            fgeo, first, n_add = offset_scan_layout(geometry)
        self.input_geometry, self.geometry, self.first = geometry, fgeo, first
        self.truncated_scan = bool(truncated_scan)
        self.factors, self.H, self.post = _filter_factors(fgeo, volume, ramp_filter, lowpass,
                                                          window)
        self.w2 = 2.0 * offset_scan_weights(geometry) if n_add else None

    def __call__(self, g, out, *, views=None, rows=None, layout=ROWS, row_factor=None):
        na, nr = g.shape[:2]
        v0 = 0 if views is None else int(views[0])
        r0 = 0 if rows is None else int(rows[0])
        r1 = r0 + nr
        step = na
        # Weights the geometry gives as functions of the views (modular beams') are
        # computed a block of about 2**20 pixels at a time.
        if any(callable(w) for w in self.factors + [self.post]):
            step = max(1, (1 << 20) // g[0].size)
        for vs in range(0, na, step):
            ve = min(na, vs + step)
            a, b = v0 + vs, v0 + ve
            filter_views(g[vs:ve], self.H, out[vs:ve], layout=layout, first=self.first,
                         scale=_block_of(self.w2, a, b, r0, r1),
                         pre=[_block_of(w, a, b, r0, r1) for w in self.factors],
                         post=_block_of(self.post, a, b, r0, r1), row_factor=row_factor,
                         extrapolate=self.truncated_scan)
        return out


def backprojection_plan(geometry, volume, *, offset_scan=False, fov_radius=None,
                        helical_window=None):
    """The CPU kernel plan FBP back-projects ``geometry``'s filtered views through (its
    weights included), or None where the axial kernels do not run it (modular beams
    off the axial form): what out-of-core FBP hands
    ``leap.kernels.cpu.launch.backproject_prepared`` with views filtered straight into
    its layout (a :class:`FilterStage` called with ``layout`` and ``row_factor``)."""
    plan = _kernel_plan(geometry, volume, offset_scan, fov_radius, helical_window)[2]
    return plan if _cpu.uses_axial_kernels(plan) else None


def _kernel_plan(geometry, volume, offset_scan, fov_radius, helical_window):
    """``(fgeo, fov_radius, plan)``: :func:`_backprojection_layout`'s geometry and field
    of view, and the kernel plan of FBP's back-projection through them."""
    fgeo, _, _, fov_radius, slice_weights = _backprojection_layout(
        geometry, volume, offset_scan, fov_radius, helical_window)
    return fgeo, fov_radius, make_plan(fgeo, volume, fov_radius=fov_radius,
                                       fan_distance_weight=_distance_weighted(fgeo),
                                       slice_weights=slice_weights)


def backproject_filtered(geometry, volume, q, out=None, *, offset_scan=False, fov_radius=None,
                         helical_window=None):
    """FBP's back-projection of already filtered projections: ``fbp(g)`` is
    ``backproject_filtered(geometry, volume, filter_projections(geometry, volume, g)[0])``
    with the same options (to float rounding; :func:`fbp` lays the filtered views out for
    the back-projector as it filters, saving a copy).

    ``q`` (num_angles, num_rows, columns) float32: the filtered projections of
    :class:`FilterStage` / :func:`filter_projections` (columns: those of the geometry
    they belong to, wider than ``geometry``'s for offset scans). ``geometry`` may be a
    crop of the filtered rows (:meth:`leap.system.CTSystem.part`): the back-projector
    reads only the rows its volume needs. Returns (or fills ``out``) the (num_z, num_y,
    num_x) float32 volume in attenuation units.
    """
    _validate.check_geometry(geometry, volume)
    fgeo, fov_radius, plan = _kernel_plan(geometry, volume, offset_scan, fov_radius,
                                          helical_window)
    _validate.check_array("q", q, fgeo.projection_shape)
    if not _cpu.uses_axial_kernels(plan):
        return weighted_backproject(fgeo, volume, q, out=out, fov_radius=fov_radius,
                                    helical_window=helical_window)
    f = _validate.check_out("out", out, volume.shape, q)
    return _cpu.backproject_prepared(plan, _cpu.prepare_projections(plan, q), f)


def fbp_adjoint(geometry, volume, f, out=None, *, ramp_filter=2, lowpass=1.0, window="none",
                offset_scan=False, truncated_scan=False, fov_radius=None, helical_window=None,
                devices=None, max_slices=None, tilt_resampling=True):
    """The exact adjoint (transpose) of :func:`fbp`: volume (num_z, num_y, num_x) →
    projections (num_angles, num_rows, num_cols), float32.

    ``<fbp(g), f> = <g, fbp_adjoint(f)>`` to float rounding, with the same options. It is
    the weighted forward projection followed by the transposed filtering stage (post-
    weights, the ramp filter's transpose, pre- and view weights, offset-scan cropping).
    CUDA arrays run on their GPU; NumPy arrays with GPUs selected (``devices``) project
    on the GPU(s) and filter on the CPU.
    """
    _validate.check_geometry(geometry, volume)
    if is_tilted(geometry) and tilt_resampling:
        if _arrays.is_cuda_array(f) or _arrays.is_cuda_array(out):
            raise NotImplementedError("fbp_adjoint of a tilted cone beam runs on NumPy arrays "
                                      "(its resampling transpose is a host operation); pass "
                                      "f as a NumPy array")
        upright, rs = upright_form(geometry)
        q = fbp_adjoint(upright, volume, f, ramp_filter=ramp_filter, lowpass=lowpass,
                        window=window, offset_scan=offset_scan, truncated_scan=truncated_scan,
                        fov_radius=geometry.fov_radius() if fov_radius is None else fov_radius,
                        helical_window=helical_window, devices=devices, max_slices=max_slices)
        if out is not None:
            _validate.check_array("out", out, geometry.projection_shape)
        return to_upright_transpose(q, rs, out)
    if uses_spot_groups(geometry):
        if _arrays.is_cuda_array(f) or _arrays.is_cuda_array(out):
            raise NotImplementedError("fbp_adjoint of a flat-detector scan with a flying focal "
                                      "spot runs on NumPy arrays")
        _validate.check_array("f", f, volume.shape)
        fov, taper = _spot_settings(geometry, fov_radius, helical_window)
        q = np.empty(geometry.projection_shape, dtype=np.float32)
        groups = groups_by_spot(geometry)
        for (idx, cone), w in zip(groups, group_weights(groups)):
            q[idx] = w * fbp_adjoint(
                cone, volume, f, ramp_filter=ramp_filter, lowpass=lowpass, window=window,
                offset_scan=offset_scan, truncated_scan=truncated_scan, fov_radius=fov,
                helical_window=taper, devices=devices, max_slices=max_slices)
        if out is None:
            return q
        _validate.check_array("out", out, geometry.projection_shape)
        out[...] = q
        return out
    if _arrays.is_cuda_array(f) or _arrays.is_cuda_array(out):
        return _fbp_adjoint_cuda(geometry, volume, f, out, ramp_filter=ramp_filter,
                                 lowpass=lowpass, window=window, offset_scan=offset_scan,
                                 truncated_scan=truncated_scan, fov_radius=fov_radius,
                                 helical_window=helical_window)
    _validate.check_array("f", f, volume.shape)
    _validate.check_finite("f", f)
    fgeo, first, n_add, fov_radius, slice_weights = _backprojection_layout(
        geometry, volume, offset_scan, fov_radius, helical_window)
    q = operators.project(fgeo, volume, f, fov_radius=fov_radius,
                          fan_distance_weight=_distance_weighted(fgeo),
                          slice_weights=slice_weights, devices=devices, max_slices=max_slices)
    factors, H, post = _filter_factors(fgeo, volume, ramp_filter, lowpass, window)
    if post is not None:
        q *= _views_of(post, 0, None)
    filter_rows(q, H, extrapolate=truncated_scan, transpose=True)
    _scale_views(q, factors)
    if n_add:
        nc = geometry.detector.num_cols
        q = q[:, :, first:first + nc] * (2.0 * offset_scan_weights(geometry)).astype(np.float32)
    if out is None:
        return np.ascontiguousarray(q, dtype=np.float32)
    _validate.check_array("out", out, geometry.projection_shape)
    out[...] = q
    return out


def _backprojection_layout(geometry, volume, offset_scan, fov_radius, helical_window=None):
    """The geometry FBP back-projects through and its settings, shared by the CPU FBP
    adjoint and the GPU plan: ``(fgeo, first, n_add, fov_radius, slice_weights)`` —
    fgeo widened by ``n_add`` columns (the data starting at column ``first``) for offset
    scans, the field of view of that wider detector, and helical slice weights."""
    if isinstance(geometry, ModularBeam):
        _check_axial_modular(geometry)
    helical = isinstance(geometry, ConeBeam) and geometry.is_helical
    fgeo, first, n_add = geometry, 0, 0
    if offset_scan and not helical:
        fgeo, first, n_add = offset_scan_layout(geometry)
    if fov_radius is None and offset_scan and fgeo is not geometry:
        fov_radius = fgeo.fov_radius()
    slice_weights = helical_slice_weights(fgeo, volume, helical_window) if helical else None
    return fgeo, first, n_add, fov_radius, slice_weights


def _check_axial_modular(geometry: ModularBeam):
    """FBP of modular beams is defined for axially aligned modules (rows along z)."""
    if np.any(geometry.row_vectors[:, 2] < 0.9961):
        raise ValueError("FBP of a modular-beam geometry needs axially aligned modules "
                         "(row vectors within 5 degrees of +z); use an iterative method instead")
    a = geometry.view_angles()
    if a.size > 1 and np.min(np.abs(np.diff(a))) < 1e-12:
        raise ValueError("FBP of a modular-beam geometry needs distinct view angles")
    t = geometry.axial_terms()
    if np.any(t.sod <= 1e-9 * t.sdd):
        k = int(np.argmin(t.sod))
        raise ValueError(f"FBP of a modular-beam geometry needs every source away from the z "
                         f"axis; view {k}'s source lies in the plane through the axis parallel "
                         "to its module")


# ---------------------------------------------------------------------------- GPU

def _gpu_plan(geometry, volume, offset_scan, fov_radius, ramp_filter, lowpass, window,
              helical_window):
    """Geometry-only pieces of GPU FBP and its adjoint (the same ones the CPU uses)."""
    fgeo, first, n_add, fov_radius, slice_weights = _backprojection_layout(
        geometry, volume, offset_scan, fov_radius, helical_window)
    pre, H, post = _filter_steps(fgeo, volume, ramp_filter, lowpass, window)
    w2 = 2.0 * offset_scan_weights(geometry).ravel() if n_add else None
    plan = make_plan(fgeo, volume, fov_radius=fov_radius,
                     fan_distance_weight=_distance_weighted(fgeo), slice_weights=slice_weights)
    return fgeo, first, n_add, w2, pre, H, post, plan


def _views_of(w, vs, ve):
    """Views vs:ve of a weight array broadcasting against (na, nr, nc), or of a function
    ``(vs, ve) → those views' weights`` (:func:`_modular_cosine_weights`)."""
    if w is None:
        return None
    if callable(w):
        return w(vs, ve)
    w = np.asarray(w)
    w = w.reshape((1,) * (3 - w.ndim) + w.shape)
    return w if w.shape[0] == 1 else w[vs:ve]


def _block_of(w, vs, ve, rs, re):
    """Views vs:ve and rows rs:re of a weight (:func:`_views_of`); axes of length 1
    broadcast and stay."""
    w = _views_of(w, vs, ve)
    if w is None or w.shape[1] == 1:
        return w
    return w[:, rs:re]


def _filter_device(g, q, vs, ve, first, n_add, w2, pre, H, post, truncated_scan, stream,
                   alloc):
    """q ← the filtered views vs:ve on the GPU (g: those views of the measured data)."""
    from ..kernels.cuda import filters as cf
    if n_add:
        cf.pad_columns(g, w2, first, q, stream)
    else:
        cf.copy(g, q, stream)
    cf.scale(q, _views_of(pre, vs, ve), stream)
    cf.filter_rows(q, H, stream, extrapolate=truncated_scan, alloc=alloc)
    if post is not None:
        cf.scale(q, _views_of(post, vs, ve), stream)


def _fbp_gpu(geometry, volume, g, out, *, ramp_filter, lowpass, window, offset_scan,
             truncated_scan, fov_radius, helical_window, host=None):
    """FBP on the GPU: CUDA arrays (host=None) or NumPy arrays (host=(devices, cap))."""
    from ..devices import gpu
    fgeo, first, n_add, w2, pre, H, post, plan = _gpu_plan(
        geometry, volume, offset_scan, fov_radius, ramp_filter, lowpass, window, helical_window)
    na, nr, nc = fgeo.projection_shape
    if host is not None:
        from numba import cuda
        devs, cap = host

        def load(vs, ve, stream):
            gd = cuda.to_device(g[vs:ve], stream=stream)
            q = cuda.device_array((ve - vs, nr, nc), dtype=np.float32)
            _filter_device(gd, q, vs, ve, first, n_add, w2, pre, H, post, truncated_scan,
                           stream, None)
            return gpu.prepare_projections(plan, q, stream)

        return gpu.slab_driver(plan, out, (na, nr, nc), devs, cap, load)
    dev = _validate.check_cuda_pair("g", g, out, geometry.projection_shape, volume.shape)
    with _arrays.device_context(dev):
        stream = _arrays.caller_stream(g)

        def alloc(shape):
            return _arrays.as_numba(_arrays.empty_like_kind(g, shape))

        q = alloc((na, nr, nc))
        _filter_device(_arrays.as_numba(g), q, 0, na, first, n_add, w2, pre, H, post,
                       truncated_scan, stream, alloc)
        y = out if out is not None else _arrays.empty_like_kind(g, volume.shape)
        gpu.backproject_device(plan, q, _arrays.as_numba(y), stream, alloc)
    return y


def _fbp_adjoint_cuda(geometry, volume, f, out, *, ramp_filter, lowpass, window, offset_scan,
                      truncated_scan, fov_radius, helical_window):
    """:func:`fbp_adjoint` on CUDA arrays, every step on f's device."""
    from ..devices import gpu
    from ..kernels.cuda import filters as cf
    dev = _validate.check_cuda_pair("f", f, out, volume.shape, geometry.projection_shape)
    fgeo, first, n_add, w2, pre, H, post, plan = _gpu_plan(
        geometry, volume, offset_scan, fov_radius, ramp_filter, lowpass, window, helical_window)
    with _arrays.device_context(dev):
        stream = _arrays.caller_stream(f)

        def alloc(shape):
            return _arrays.as_numba(_arrays.empty_like_kind(f, shape))

        q = alloc(fgeo.projection_shape)
        gpu.project_device(plan, _arrays.as_numba(f), q, stream, alloc)
        if post is not None:
            cf.scale(q, post, stream)
        cf.filter_rows(q, H, stream, extrapolate=truncated_scan, transpose=True, alloc=alloc)
        cf.scale(q, pre, stream)
        y = out if out is not None else _arrays.empty_like_kind(f, geometry.projection_shape)
        if n_add:
            cf.crop_columns(q, (2.0 * offset_scan_weights(geometry)).astype(np.float32),
                            first, _arrays.as_numba(y), stream)
        else:
            cf.copy(q, _arrays.as_numba(y), stream)
    return y
