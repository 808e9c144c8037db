"""Standard cone-beam parameters → modular-beam tensors, differentiable (issue 35, part 2).

:func:`cone_beam_modular` builds the four ``(num_views, 3)`` tensors that
:func:`leap.torch.modular_project` takes from cone-beam parameters given as tensors, with
exactly the formulas of :meth:`leap.geometry.ConeBeam.to_modular` (flat detector), in
float64, so that autograd carries the gradient of the projection with respect to the
geometry (:mod:`leap.torch.geometry`) back to the standard parameters: view angles,
detector offsets, tau, tilt, sod, sdd, helical pitch, and per-view rigid shifts of the
object.
"""
from __future__ import annotations

import torch

__all__ = ["cone_beam_modular"]


def _scalar(name, value, like):
    """``value`` as a float64 0-d tensor on ``like``'s device (tensors keep their graph)."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"{name} must be a scalar, got shape {tuple(value.shape)}")
        return value.reshape(()).to(dtype=torch.float64, device=like.device)
    return torch.tensor(float(value), dtype=torch.float64, device=like.device)


def cone_beam_modular(angles, *, num_rows, num_cols, pixel_height, pixel_width, center_row,
                      center_col, sod, sdd, tau=0.0, tilt=0.0, helical_pitch=0.0,
                      helical_mid_angle=None, shifts=None):
    """The modular form of a flat-detector cone beam, differentiable in its parameters.

    The formulas are those of :meth:`leap.geometry.ConeBeam.to_modular`: with
    θ = (sin ψ, −cos ψ, 0), θ⊥ = (cos ψ, sin ψ, 0) and the source height
    ``z_s = helical_pitch·(ψ − ψ_mid)``, per view

    * source ``sod·θ − tau·θ⊥ + z_s ẑ``;
    * column vector ``cos(t)·θ⊥ + sin(t)·ẑ`` and row vector ``−sin(t)·θ⊥ + cos(t)·ẑ``
      (t the tilt);
    * module centre ``(sod − sdd)·θ − tau·θ⊥ + z_s ẑ``, moved by
      ``((num_cols − 1)/2 − center_col)·pixel_width`` along the column vector and
      ``((num_rows − 1)/2 − center_row)·pixel_height`` along the row vector.

    A per-view rigid translation ``shifts[v]`` of the object is the same as translating
    that view's source and module centre by ``−shifts[v]``.

    Parameters
    ----------
    angles : torch.Tensor, (num_views,)
        View angles ψ, radians.
    num_rows, num_cols : int
        Detector size, pixels.
    pixel_height, pixel_width : float
        Pixel pitch, mm.
    center_row, center_col : float or torch.Tensor
        Detector position of the central ray, pixels (LEAP's centerRow, centerCol).
    sod, sdd : float or torch.Tensor
        Source-to-object and source-to-detector distances, mm.
    tau : float or torch.Tensor
        Rotation-axis offset, mm.
    tilt : float or torch.Tensor
        Detector rotation about the central ray, radians.
    helical_pitch : float or torch.Tensor
        Source advance along z per radian, mm/rad.
    helical_mid_angle : float or torch.Tensor, optional
        ψ_mid; None: the mean of the first and last angle (as ``ConeBeam``).
    shifts : torch.Tensor, (num_views, 3), optional
        Per-view translation of the object, mm.

    Returns
    -------
    tuple of torch.Tensor
        ``(sources, centers, row_vectors, col_vectors)``, each ``(num_views, 3)``
        float64, on ``angles``' device; the argument order of
        :func:`leap.torch.modular_project`.
    """
    if not isinstance(angles, torch.Tensor):
        angles = torch.as_tensor(angles, dtype=torch.float64)
    if angles.ndim != 1 or angles.shape[0] == 0:
        raise ValueError(f"angles must have shape (num_views,), got {tuple(angles.shape)}")
    psi = angles.to(torch.float64)
    n = psi.shape[0]
    center_row, center_col, sod, sdd, tau, tilt, pitch = (
        _scalar(name, v, psi) for name, v in (
            ("center_row", center_row), ("center_col", center_col), ("sod", sod),
            ("sdd", sdd), ("tau", tau), ("tilt", tilt), ("helical_pitch", helical_pitch)))
    cos, sin = torch.cos(psi), torch.sin(psi)
    zero = torch.zeros_like(psi)
    perp = torch.stack([cos, sin, zero], dim=1)
    theta = torch.stack([sin, -cos, zero], dim=1)
    zhat = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64, device=psi.device).expand(n, 3)
    c, s = torch.cos(tilt), torch.sin(tilt)
    cols = c * perp + s * zhat
    rows = -s * perp + c * zhat
    if helical_mid_angle is None:
        mid = 0.5 * (psi[0] + psi[-1])
    else:
        mid = _scalar("helical_mid_angle", helical_mid_angle, psi)
    zs = (pitch * (psi - mid))[:, None] * zhat
    focal = sod * theta - tau * perp + zs
    h_shift = (0.5 * (num_cols - 1) - center_col) * pixel_width
    v_shift = (0.5 * (num_rows - 1) - center_row) * pixel_height
    centers = (sod - sdd) * theta - tau * perp + zs + h_shift * cols + v_shift * rows
    sources = focal
    if shifts is not None:
        if not isinstance(shifts, torch.Tensor):
            shifts = torch.as_tensor(shifts, dtype=torch.float64)
        if tuple(shifts.shape) != (n, 3):
            raise ValueError(f"shifts must have shape (num_views, 3) = ({n}, 3), got "
                             f"{tuple(shifts.shape)}")
        shifts = shifts.to(dtype=torch.float64, device=psi.device)
        sources = sources - shifts
        centers = centers - shifts
    return sources, centers, rows, cols


#: The names of :meth:`~leap.torch._trainable.TrainableGeometry.geometry_parameters`, in order.
PARAMETER_NAMES = ("phis", "centerRow", "centerCol", "tau", "tiltAngle", "sod", "sdd",
                   "helicalPitch", "shifts")


def facade_parameters(leapct):
    """{name: float64 tensor} of a facade's flat cone-beam geometry, in LEAP's units
    (``phis`` and ``tiltAngle`` in degrees); ``shifts`` zeros (num_views, 3)."""
    if not leapct.ct_geometry_defined() or leapct.get_geometry() != "CONE":
        kind = leapct.get_geometry() if leapct.ct_geometry_defined() else "no geometry"
        raise ValueError("geometry parameters are defined for cone-beam geometries only "
                         f"(set_conebeam), this module has {kind}")
    if leapct.core_geometry().detector.curved:
        raise ValueError("geometry parameters need a flat detector; this cone beam's is curved")
    return facade_values(leapct, PARAMETER_NAMES, 3)


def facade_values(leapct, names, shift_components):
    """{name: float64 tensor} for ``names`` (``phis`` first, ``shifts`` last): the
    facade's ``phis`` (numAngles,) and ``get_<name>()`` of the others, in its units;
    ``shifts`` zeros (numAngles, shift_components)."""
    f64 = torch.float64
    phis = torch.tensor(leapct._need_geometry()["phis"], dtype=f64).reshape(-1)
    values = {"phis": phis}
    for name in names[1:-1]:
        values[name] = torch.tensor(float(getattr(leapct, f"get_{name}")()), dtype=f64)
    values["shifts"] = torch.zeros(phis.shape[0], shift_components, dtype=f64)
    return values


def modular_from_parameters(params, leapct):
    """The modular tensors of :func:`cone_beam_modular` from parameters named as
    :data:`PARAMETER_NAMES` (LEAP's units) and the facade's detector."""
    g = leapct._need_geometry()
    deg = torch.pi / 180.0
    return cone_beam_modular(
        params["phis"] * deg, num_rows=g["numRows"], num_cols=g["numCols"],
        pixel_height=g["pixelHeight"], pixel_width=g["pixelWidth"],
        center_row=params["centerRow"], center_col=params["centerCol"], sod=params["sod"],
        sdd=params["sdd"], tau=params["tau"], tilt=params["tiltAngle"] * deg,
        helical_pitch=params["helicalPitch"], shifts=params["shifts"])
