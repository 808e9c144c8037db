"""Per-view vector geometries, the form ASTRA's ``*_vec`` geometries, TIGRE's and CIL's
configurations all reduce to, and how they map onto leap's geometry classes.

A view is described by (all mm, world coordinates x, y, z):

* ``sources`` (n, 3): the source position (divergent beams), or ``rays`` (n, 3): the ray
  direction (parallel beams);
* ``centers`` (n, 3): the centre of the detector's pixel grid;
* ``u`` (n, 3): the step from one detector column to the next (its length is the pixel
  width); ``v`` (n, 3): the step from one row to the next (pixel height).

Pixel ``[row j, col i]`` of a view is centred at
``centers + (i − (num_cols−1)/2)·u + (j − (num_rows−1)/2)·v``: the definition of ASTRA's
vector geometries, and of leap's :class:`~leap.geometry.ModularBeam` with
``col_vectors = u/|u|`` and ``row_vectors = v/|v|``. leap has one pixel size per
detector, so the lengths of ``u`` (and of ``v``) must agree across the views.

The fitting helpers recognise vectors that are exactly a leap standard geometry (a
parallel beam or a circular fan beam with detector and axis offsets) so converted scans
keep leap's fast axial kernels and their FBP weights.
"""
from __future__ import annotations

import numpy as np

from ..geometry import Detector, FanBeam, ModularBeam, ParallelBeam
from ..geometry.axial import column_axes

#: Relative agreement asked of per-view lengths (pixel sizes, distances) for them to
#: count as one value: float32 vector files carry ~1e-7, text files 6+ digits.
RTOL = 1e-6


def as_vectors(name: str, value, width: int) -> np.ndarray:
    """``value`` as a finite float64 (n, width) array; ValueError naming ``name``."""
    try:
        a = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric (num_views, {width}) array, got "
                         f"{type(value).__name__}") from None
    if a.ndim == 1 and a.size == width:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != width or a.shape[0] == 0:
        raise ValueError(f"{name} must have shape (num_views, {width}), got {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = int(np.argmax(~np.all(np.isfinite(a), axis=1)))
        raise ValueError(f"{name} holds a value that is not finite (view {bad})")
    return a


def common_length(name: str, vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """Unit vectors and the one length of ``vectors`` (n, k); ValueError when the views'
    lengths differ by more than :data:`RTOL` (leap has one pixel size per detector) or a
    vector is zero."""
    lengths = np.linalg.norm(vectors, axis=1)
    if not np.all(lengths > 0):
        raise ValueError(f"{name} must be non-zero (view {int(np.argmin(lengths))} is zero)")
    mean = float(np.mean(lengths))
    worst = float(np.max(np.abs(lengths - mean)))
    if worst > RTOL * mean:
        raise ValueError(f"the lengths of {name} (the pixel size) differ between views "
                         f"({lengths.min():.9g} to {lengths.max():.9g}); leap's detectors "
                         "have one pixel size for every view")
    return vectors / lengths[:, None], mean


def same(values: np.ndarray, scale: float) -> bool:
    """Whether per-view ``values`` agree to :data:`RTOL` relative to ``scale``."""
    values = np.asarray(values, dtype=np.float64)
    return bool(np.max(values) - np.min(values) <= RTOL * max(scale, 1e-300))


def modular_from_vectors(sources, centers, u, v, num_rows: int, num_cols: int) -> ModularBeam:
    """The :class:`ModularBeam` of divergent-beam vectors (see the module docstring):
    exact, pixel sizes ``|u|`` and ``|v|``."""
    u_hat, pw = common_length("the detector column steps u", u)
    v_hat, ph = common_length("the detector row steps v", v)
    det = Detector(num_rows=num_rows, num_cols=num_cols, pixel_height=ph, pixel_width=pw)
    return ModularBeam(detector=det, source_positions=sources, module_centers=centers,
                       row_vectors=v_hat, col_vectors=u_hat)


def modular_vectors(geometry: ModularBeam) -> tuple[np.ndarray, ...]:
    """``(sources, centers, u, v)`` of a modular beam, u and v scaled to the pixel size."""
    d = geometry.detector
    return (np.array(geometry.source_positions), np.array(geometry.module_centers),
            geometry.col_vectors * d.pixel_width, geometry.row_vectors * d.pixel_height)


def fan_from_vectors(sources, centers, u, num_cols: int, pixel_height: float) -> FanBeam | None:
    """A one-row :class:`FanBeam` with exactly these in-plane vectors, or None.

    ``sources``, ``centers``, ``u``: (n, 2). In leap's fan beam (LEAP_CONVENTIONS.md) view
    ψ has column axis θ⊥ = (cos ψ, sin ψ), rays along (−sin ψ, cos ψ) from the source,
    the source at ``sod·θ − tau·θ⊥`` (θ = (sin ψ, −cos ψ)) and pixel i at column
    coordinate ``(i − center_col)·pixel_width`` from the central ray's foot. So
    ψ = atan2(u_y, u_x), ``sod = −src·ray``, ``sdd = (centre − src)·ray``,
    ``tau = −src·θ⊥`` and ``center_col = (n−1)/2 + (src − centre)·θ⊥/|u|``; these must be
    the same in every view, with the detector beyond the axis (sdd > sod > 0). The
    angles are unwrapped from the first one's value in (−π, π].
    """
    u_hat, pw = common_length("the detector column steps u", u)
    psi = np.unwrap(np.arctan2(u_hat[:, 1], u_hat[:, 0]))
    ray = np.stack([-u_hat[:, 1], u_hat[:, 0]], axis=1)
    sod = -np.sum(sources * ray, axis=1)
    sdd = np.sum((centers - sources) * ray, axis=1)
    tau = -np.sum(sources * u_hat, axis=1)
    cc = 0.5 * (num_cols - 1) + np.sum((sources - centers) * u_hat, axis=1) / pw
    scale = float(np.max(np.abs(sdd)))
    if not (same(sod, scale) and same(sdd, scale) and same(tau, scale)
            and same(cc * pw, scale)):
        return None
    if not (np.min(sod) > 0 and np.min(sdd - sod) > 0):
        return None
    det = Detector(num_rows=1, num_cols=num_cols, pixel_height=pixel_height, pixel_width=pw,
                   center_row=0.0, center_col=float(np.mean(cc)))
    return FanBeam(detector=det, angles=psi, sod=float(np.mean(sod)),
                   sdd=float(np.mean(sdd)), tau=float(np.mean(tau)))


def parallel_from_vectors(rays, centers, u, v, num_rows: int,
                          num_cols: int) -> ParallelBeam | None:
    """The :class:`ParallelBeam` with exactly these rays, or None.

    ``rays``, ``centers``, ``u``, ``v``: (n, 3) (2-D geometries: z = 0 and v = (0, 0, h)).
    A parallel beam's line integrals depend only on the lines, so a detector at an
    oblique angle to the rays samples the same lines as the perpendicular one whose
    column step is u's component across the rays, ``u⊥ = u − (u·r̂)r̂``. leap's parallel
    beam has rays in the xy plane, rows along +z and columns along θ⊥ = u⊥/|u⊥|
    (ψ = atan2), pixel i at ``(i − center_col)·|u⊥|`` from the ray through the z axis:
    ``center_col = (n−1)/2 − centre·θ⊥/|u⊥|``, ``center_row = (m−1)/2 − centre_z/|v|``.
    The angles are unwrapped from the first one's value in (−π, π].
    """
    r_hat = rays / np.linalg.norm(rays, axis=1, keepdims=True)
    v_hat, ph = common_length("the detector row steps v", v)
    if np.max(np.abs(r_hat[:, 2])) > RTOL or np.max(np.abs(v_hat[:, :2])) > RTOL \
            or np.min(v_hat[:, 2]) <= 0:
        return None
    u_perp = u - np.sum(u * r_hat, axis=1, keepdims=True) * r_hat
    if np.max(np.abs(u_perp[:, 2])) > RTOL * np.max(np.linalg.norm(u_perp, axis=1)):
        return None
    lengths = np.linalg.norm(u_perp[:, :2], axis=1)
    if not np.all(lengths > 0) or not same(lengths, float(np.max(lengths))):
        return None
    pw = float(np.mean(lengths))
    col = u_perp[:, :2] / lengths[:, None]
    psi = np.unwrap(np.arctan2(col[:, 1], col[:, 0]))
    cc = 0.5 * (num_cols - 1) - np.sum(centers[:, :2] * col, axis=1) / pw
    cr = 0.5 * (num_rows - 1) - centers[:, 2] / ph
    if not (same(cc * pw, pw * num_cols) and same(cr * ph, ph * num_rows)):
        return None
    det = Detector(num_rows=num_rows, num_cols=num_cols, pixel_height=ph, pixel_width=pw,
                   center_row=float(np.mean(cr)), center_col=float(np.mean(cc)))
    return ParallelBeam(detector=det, angles=psi)


def parallel_vectors(geometry: ParallelBeam) -> tuple[np.ndarray, ...]:
    """``(rays, centers, u, v)`` of a parallel beam. The rays point along
    θ = (sin ψ, −cos ψ, 0), as ASTRA's ``geom_2vec`` writes them (leap's rays travel the
    other way along the same lines, which is all a parallel beam's integrals see)."""
    d = geometry.detector
    col = np.zeros((geometry.num_angles, 3))
    col[:, :2] = column_axes(geometry.angles)
    rays = np.stack([col[:, 1], -col[:, 0], np.zeros(geometry.num_angles)], axis=1)
    zhat = np.broadcast_to([0.0, 0.0, 1.0], col.shape)
    centers = (((0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width) * col
               + ((0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height) * zhat)
    return rays, centers, d.pixel_width * col, d.pixel_height * np.array(zhat)


def cone_from_vectors(sources, centers, u, v, num_rows: int, num_cols: int):
    """A circular :class:`~leap.geometry.ConeBeam` with exactly these vectors, or None.

    Needs rows along +z (``v = (0, 0, |v|)``), the sources in the plane z = 0 and every
    module centre at one height: then the in-plane vectors are a fan beam
    (:func:`fan_from_vectors`) and ``center_row = (m−1)/2 − centre_z/|v|``.
    """
    v_hat, ph = common_length("the detector row steps v", v)
    if np.max(np.abs(v_hat - (0.0, 0.0, 1.0))) > RTOL or np.max(np.abs(sources[:, 2])) > \
            RTOL * float(np.max(np.abs(sources))):
        return None
    if np.max(np.abs(u[:, 2])) > RTOL * float(np.max(np.linalg.norm(u, axis=1))):
        return None
    if not same(centers[:, 2], ph * num_rows):
        return None
    fan = fan_from_vectors(sources[:, :2], centers[:, :2], u[:, :2], num_cols, ph)
    if fan is None:
        return None
    from ..geometry import ConeBeam
    center_row = 0.5 * (num_rows - 1) - float(np.mean(centers[:, 2])) / ph
    det = fan.detector.with_changes(num_rows=num_rows, center_row=center_row)
    return ConeBeam(detector=det, angles=fan.angles, sod=fan.sod, sdd=fan.sdd, tau=fan.tau)
