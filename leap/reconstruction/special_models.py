"""Special forward models of LEAP: rotationally symmetric objects and the attenuated
Radon transform, with matched back-projectors and their FBP inversions.

Core functions (arrays in, arrays out, radians and mm); the facade methods are in
:mod:`leap.compat.special_methods`. CPU (NumPy) only: CUDA arrays raise NotImplementedError.

Symmetric objects (LEAP ``set_axisOfSymmetry``, one view, parallel or cone beam):
the volume is a (num_z, num_y, 1) array f(z′, r) of the signed radius r = y (num_y
even, offsets 0); see ``leap.kernels.cpu.symmetric`` for the model.

Attenuated Radon transform (parallel beam): per view,
``g(θ, s) = ∫ f(sθ⊥ + tθ) exp(−Dμ(sθ⊥ + tθ, θ)) dt``, ``Dμ(x, θ) = ∫_0^∞ μ(x + τθ) dτ``,
discretised as the ordinary (separable-footprint) projection of f·exp(−Dμ) at voxel
centres, so the back-projection Σ_views exp(−Dμ)·Pᵀ is its exact transpose. μ is a
voxelised map (``leap.kernels.cpu.attenuated.exponent_map``) or LEAP's cylinder of
value c and radius R, where exp(−Dμ) = exp(−c(√(R² − s²) − x·θ)) inside the cylinder
and 0 outside (LEAP's CPU model: the object must lie inside the cylinder).
"""
from __future__ import annotations

import math

import numpy as np

from .. import _validate, operators
from ..devices import arrays as _arrays
from .filters import _spatial_kernel, fft_length, filter_rows, ramp_response
from ..geometry import ConeBeam, ParallelBeam, Volume
from ..kernels.cpu import attenuated as _att
from ..kernels.cpu import symmetric as _sym
from .weights import (FULL_SCAN_DEGREES, angular_range_degrees, angular_step, fbp_scale,
                      view_weights)


def _numpy_only(what, *arrays):
    for a in arrays:
        if a is not None and _arrays.is_cuda_array(a):
            raise NotImplementedError(f"{what} runs on the CPU only: pass NumPy arrays "
                                      "(e.g. cupy.asnumpy(x) or x.cpu().numpy())")


# ------------------------------------------------------------------ symmetric objects
def _symmetric_args(geometry, volume, axis_deg):
    """Kernel arguments of the symmetric-object model; validates geometry and volume."""
    if not isinstance(geometry, (ParallelBeam, ConeBeam)):
        raise ValueError("symmetric objects (set_axisOfSymmetry) need a parallel- or cone-beam "
                         f"geometry, got {type(geometry).__name__}")
    if geometry.num_angles != 1:
        raise ValueError("symmetric objects (set_axisOfSymmetry) need exactly one projection "
                         f"angle, got numAngles = {geometry.num_angles}")
    if volume.num_x != 1 or volume.num_y % 2 or volume.offset_x != 0.0 or volume.offset_y != 0.0:
        raise ValueError("symmetric objects need a volume with numX = 1, an even numY and "
                         f"offsetX = offsetY = 0, got numX = {volume.num_x}, numY = {volume.num_y}, "
                         f"offsets ({volume.offset_x}, {volume.offset_y}); call set_default_volume "
                         "after set_axisOfSymmetry")
    if not -30.0 <= axis_deg <= 30.0:
        raise ValueError(f"the axis of symmetry must be within ±30 degrees, got {axis_deg}")
    d = geometry.detector
    beta = math.radians(axis_deg)
    cb, sb = math.cos(beta), math.sin(beta)
    if abs(sb) < 1e-4:     # as LEAP: treat tiny tilts as none
        cb, sb = 1.0, 0.0
    if isinstance(geometry, ConeBeam):
        if (d.curved or geometry.tilt != 0.0 or geometry.is_helical
                or geometry.source_shifts is not None):
            raise ValueError("symmetric objects need a flat, untilted, non-helical cone beam "
                             "without flying-focal-spot source shifts")
        m = 1.0 / geometry.sdd
        kind, sod, tau = _sym.CONE, geometry.sod, geometry.tau
    else:
        m, kind, sod, tau = 1.0, _sym.PARALLEL, 0.0, 0.0
    u0, Tu = -d.center_col * d.pixel_width * m, d.pixel_width * m
    v0, Tv = -d.center_row * d.pixel_height * m, d.pixel_height * m
    return (kind, u0, Tu, v0, Tv, cb, sb, float(sod), float(tau), volume.voxel_width,
            volume.z0, volume.voxel_height)


def symmetric_project(geometry, volume: Volume, f, axis_deg: float, out=None):
    """Projection (1, num_rows, num_cols) of the symmetric object f (num_z, num_y, 1),
    axis tilted by ``axis_deg`` degrees. Returns (or fills) ``out``."""
    _numpy_only("the symmetric-object projector", f, out)
    args = _symmetric_args(geometry, volume, axis_deg)
    _validate.check_array("f", f, volume.shape)
    g = _validate.check_out("g", out, geometry.projection_shape, f)
    _sym.project(f.reshape(volume.num_z, volume.num_y), g[0], *args)
    return g


def symmetric_backproject(geometry, volume: Volume, g, axis_deg: float, out=None):
    """Exact transpose of :func:`symmetric_project`: (1, num_rows, num_cols) → (num_z, num_y, 1)."""
    _numpy_only("the symmetric-object back-projector", g, out)
    args = _symmetric_args(geometry, volume, axis_deg)
    _validate.check_array("g", g, geometry.projection_shape)
    f = _validate.check_out("f", out, volume.shape, g)
    _sym.backproject(g[0], f.reshape(volume.num_z, volume.num_y), *args)
    return f


def symmetric_fbp(geometry, volume: Volume, g, axis_deg: float, out=None, *, ramp_filter=2,
                  lowpass=1.0, window="none"):
    """FBP of a symmetric object from its single projection (LEAP's approach).

    The object looks the same from every direction around its axis, so the one
    projection stands for a full 360° scan: each detector half (u < 0, u > 0) is
    mirrored into an even row and ramp filtered (cone beams after the cosine weight
    1/√(1+u²+v²)); the result is back-projected from n_φ = num_cols (made odd)
    directions, (1/(2 n_φ)) Σ_φ (sod/U)² q, each point reading the half of its radius's
    sign. Returns (num_z, num_y, 1) float32 in attenuation units.
    """
    _numpy_only("the symmetric-object FBP", g, out)
    args = _symmetric_args(geometry, volume, axis_deg)
    _validate.check_array("g", g, geometry.projection_shape)
    f = _validate.check_out("f", out, volume.shape, g)
    kind, u0, Tu, v0, Tv = args[:5]
    d = geometry.detector
    nr, nc = d.num_rows, d.num_cols
    u = u0 + Tu * np.arange(nc)
    q = g[0].astype(np.float64)
    if kind == _sym.CONE:
        v = v0 + Tv * np.arange(nr)
        q /= np.sqrt(1.0 + u[None, :] ** 2 + v[:, None] ** 2)
    # Even extension of each half: the mirrored sample is interpolated (0 off the detector).
    mirror = np.stack([np.interp(-u, u, row, left=0.0, right=0.0) for row in q])
    right = np.where(u[None, :] >= 0.0, q, mirror)
    left = np.where(u[None, :] <= 0.0, q, mirror)
    spacing = d.pixel_width * (geometry.sod / geometry.sdd if kind == _sym.CONE else 1.0)
    H = ramp_response(nc, spacing, ramp_filter, lowpass=lowpass, window=window)
    both = np.stack([left, right])
    filter_rows(both, H)
    q = np.where(u[None, :] >= 0.0, both[1], both[0])
    n_phi = nc + (nc + 1) % 2
    res = np.empty((volume.num_z, volume.num_y))
    _sym.inverse(q, res, *args[:9], volume.y0, *args[9:], n_phi, 1.0 / (2.0 * n_phi))
    f[...] = res[:, :, None]
    return f


def synthesize_symmetry(volume: Volume, f_radial, axis_deg: float) -> np.ndarray:
    """The 3-D volume (num_z, num_y, num_y) float32 of the symmetric object f_radial
    (num_z, num_y, 1): voxel (x, y, z) gets f at signed radius ±√(x′² + y²) (sign of y)
    and axial coordinate z′, with (x′, z′) = (x, z) rotated by the axis tilt; linear
    interpolation, clamped at the edges (x and y samples are the volume's y samples)."""
    _numpy_only("synthesize_symmetry", f_radial)
    fr = np.asarray(f_radial, dtype=np.float32)
    if fr.shape not in ((volume.num_z, volume.num_y, 1), (volume.num_z, volume.num_y)):
        raise ValueError(f"f_radial must have shape {(volume.num_z, volume.num_y, 1)}, got {fr.shape}")
    fr = fr.reshape(volume.num_z, volume.num_y).astype(np.float64)
    ny, nz = volume.num_y, volume.num_z
    T, Tz = volume.voxel_width, volume.voxel_height
    y = volume.y_samples()
    z = volume.z_samples()
    b = -math.radians(axis_deg)
    cb, sb = math.cos(b), math.sin(b)
    Z, Y, X = np.meshgrid(z, y, y, indexing="ij")
    xr, zr = X * cb - Z * sb, X * sb + Z * cb
    r = np.sqrt(xr * xr + Y * Y)
    r = np.where(Y < 0.0, -r, r)

    def taps(a, n):
        a = np.clip(a, 0.0, n - 1.0)
        i0 = np.minimum(a.astype(np.int64), n - 1)
        return i0, np.minimum(i0 + 1, n - 1), a - i0

    r0, r1, dr = taps((r - volume.y0) / T, ny)
    if axis_deg == 0.0:
        iz = np.arange(nz)[:, None, None]
        out = (1.0 - dr) * fr[iz, r0] + dr * fr[iz, r1]
    else:
        z0i, z1i, dz = taps((zr - volume.z0) / Tz, nz)
        out = ((1.0 - dr) * ((1.0 - dz) * fr[z0i, r0] + dz * fr[z1i, r0])
               + dr * ((1.0 - dz) * fr[z0i, r1] + dz * fr[z1i, r1]))
    return np.ascontiguousarray(out, dtype=np.float32)


# ------------------------------------------------------- attenuated Radon transform
class AttenuationMap:
    """μ for the attenuated Radon transform: a voxelised map ``mu`` (num_z, num_y, num_x,
    1/mm) or a uniform cylinder about the z axis (``coeff`` 1/mm, ``radius`` mm)."""

    def __init__(self, mu=None, coeff=0.0, radius=0.0):
        self.mu, self.coeff, self.radius = mu, float(coeff), float(radius)

    @property
    def is_cylinder(self):
        return self.mu is None

    def factors(self, volume: Volume, psi: float, sign: float = 1.0) -> np.ndarray:
        """exp(−sign·Dμ(x, θ)) at the voxel centres for view angle ψ (radians), shaped to
        broadcast against (num_z, num_y, num_x)."""
        phi = psi - 0.5 * math.pi
        c, s = math.cos(phi), math.sin(phi)
        if self.is_cylinder:
            x = volume.x_samples()[None, :]
            y = volume.y_samples()[:, None]
            R2 = self.radius ** 2
            sp, t = -s * x + c * y, c * x + s * y
            inside = x * x + y * y < R2
            D = self.coeff * (np.sqrt(np.maximum(R2 - sp * sp, 0.0)) - t)
            return np.where(inside, np.exp(-sign * D), 0.0)[None]
        if self.mu.shape != volume.shape:
            raise ValueError(f"the attenuation map has shape {self.mu.shape} but the volume is "
                             f"{volume.shape}; set a matching map with set_attenuationMap")
        return np.exp(-sign * _att.exponent_map(self.mu, c, s, volume.voxel_width))


def _check_parallel(geometry, what):
    if not isinstance(geometry, ParallelBeam):
        raise ValueError(f"{what} is implemented for parallel-beam geometries only (as in LEAP), "
                         f"got {type(geometry).__name__}")


def attenuated_project(geometry, volume: Volume, f, atten: AttenuationMap, out=None, *,
                       fov_radius=None):
    """Attenuated projection (num_angles, num_rows, num_cols) of f (num_z, num_y, num_x)."""
    _numpy_only("the attenuated projector", f, out)
    _check_parallel(geometry, "the attenuated Radon transform")
    _validate.check_array("f", f, volume.shape)
    g = _validate.check_out("g", out, geometry.projection_shape, f)
    for k in range(geometry.num_angles):
        fa = (f * atten.factors(volume, geometry.angles[k])).astype(np.float32)
        operators.project(geometry[k:k + 1], volume, fa, out=g[k:k + 1], fov_radius=fov_radius)
    return g


def attenuated_backproject(geometry, volume: Volume, g, atten: AttenuationMap, out=None, *,
                           fov_radius=None, sign=1.0):
    """Exact transpose of :func:`attenuated_project` (``sign=-1`` flips μ's sign)."""
    _numpy_only("the attenuated back-projector", g, out)
    _check_parallel(geometry, "the attenuated Radon transform")
    _validate.check_array("g", g, geometry.projection_shape)
    f = _validate.check_out("f", out, volume.shape, g)
    acc = np.zeros(volume.shape)
    tmp = np.empty(volume.shape, dtype=np.float32)
    for k in range(geometry.num_angles):
        operators.backproject(geometry[k:k + 1], volume, g[k:k + 1], out=tmp, fov_radius=fov_radius)
        acc += tmp * atten.factors(volume, geometry.angles[k], sign)
    f[...] = acc
    return f


def _check_full_scan(geometry):
    if angular_range_degrees(geometry.angles) < FULL_SCAN_DEGREES:
        raise ValueError("FBP of the attenuated Radon transform needs an angular range of at "
                         f"least 360 degrees, got {angular_range_degrees(geometry.angles):.4g}")


def attenuated_fbp(geometry, volume: Volume, g, atten: AttenuationMap, out=None, *,
                   fov_radius=None):
    """FBP inversion of the attenuated Radon transform (parallel beam, ≥ 360°).

    Cylinder (Tretiak–Metz, as LEAP): the data become the exponential Radon transform
    by the factor exp(c√(R² − s²)), are ramp filtered with the band ``|ω| < |c|`` removed
    (Shepp–Logan ramp minus the band-limited ramp), converted back, and back-projected
    with μ → −μ. Voxelised μ: Novikov's formula
    ``f = (1/4π) Re div ∫ θ⊥ e^{Dμ(x,θ)} (e^{−h} H e^{h} g)(θ, x·θ⊥) dθ``,
    h = ½(I + iH)Rμ, H the Hilbert transform along detector rows.
    """
    _numpy_only("the attenuated FBP", g, out)
    _check_parallel(geometry, "FBP of the attenuated Radon transform")
    _check_full_scan(geometry)
    _validate.check_array("g", g, geometry.projection_shape)
    f = _validate.check_out("f", out, volume.shape, g)
    d = geometry.detector
    nc = d.num_cols
    u = (np.arange(nc) - d.center_col) * d.pixel_width
    w = view_weights(geometry).astype(np.float64)
    if atten.is_cylinder:
        c, R = atten.coeff, atten.radius
        n = fft_length(nc)
        k = np.arange(n)
        s = np.where(k < n // 2, k, k - n).astype(np.float64)
        b = abs(c) * d.pixel_width / (2.0 * math.pi)       # removed band, cycles per sample
        arg = 2.0 * math.pi * b * s
        with np.errstate(divide="ignore", invalid="ignore"):
            band = np.where(s != 0, (arg * np.sin(arg) + np.cos(arg) - 1.0) / (math.pi * s * s),
                            2.0 * math.pi * b * b)
        h = (_spatial_kernel(2, s) - band) / d.pixel_width
        H = np.fft.rfft(h.astype(np.float32).astype(np.float64)).real * fbp_scale(geometry, volume)
        E = np.where(np.abs(u) < R, np.exp(c * np.sqrt(np.maximum(R * R - u * u, 0.0))), 1.0)
        q = g.astype(np.float64) * w * E
        filter_rows(q, H)
        q /= E
        return attenuated_backproject(geometry, volume, q.astype(np.float32), atten, out=f,
                                      fov_radius=fov_radius, sign=-1.0)
    return _novikov(geometry, volume, g, atten, f, u, w, fov_radius)


def _hilbert(x):
    """Hilbert transform along the last axis (response −i·sgn ω), linear convolution."""
    nc = x.shape[-1]
    n = fft_length(nc)
    X = np.fft.rfft(x, n=n, axis=-1)
    X *= -1j
    X[..., 0] = 0.0
    X[..., -1] = 0.0
    return np.fft.irfft(X, n=n, axis=-1)[..., :nc]


def _novikov(geometry, volume, g, atten, f, u, w, fov_radius):
    d = geometry.detector
    mu = atten.mu
    if mu.shape != volume.shape:
        raise ValueError(f"the attenuation map has shape {mu.shape} but the volume is {volume.shape}")
    h1 = 0.5 * operators.project(geometry, volume, mu, fov_radius=fov_radius).astype(np.float64)
    h2 = _hilbert(h1)
    ge = g.astype(np.float64) * np.exp(h1)
    a1 = _hilbert(ge * np.cos(h2))
    a2 = _hilbert(ge * np.sin(h2))
    qa = (a1 * np.cos(h2) + a2 * np.sin(h2)) * np.exp(-h1)
    # rows of the slices (parallel beams: slices sit on rows)
    rows = np.rint((volume.z_samples() / d.pixel_height) + d.center_row).astype(np.int64)
    rows[(rows < 0) | (rows >= d.num_rows)] = -1
    rfov = geometry.fov_radius() if fov_radius is None else fov_radius
    # Δφ per view (view_weights carries ½ for a 360° scan: the integral here is over 2π)
    weights = 2.0 * w.ravel() * abs(angular_step(geometry)) / (4.0 * math.pi)
    acc = np.zeros(volume.shape)
    for k in range(geometry.num_angles):
        phi = geometry.angles[k] - 0.5 * math.pi
        E = np.exp(_att.exponent_map(mu, math.cos(phi), math.sin(phi), volume.voxel_width))
        _att.novikov_view(qa[k], E, acc, volume.x0, volume.y0, volume.voxel_width, rows,
                          math.cos(phi), math.sin(phi), u[0], d.pixel_width, rfov * rfov,
                          weights[k])
    f[...] = acc
    return f
