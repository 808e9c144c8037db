"""TIGRE's cone-beam frame in leap's terms, for the readers whose public source is a TIGRE
loader (:mod:`leap.io.scanners.yxlon`, :mod:`leap.io.scanners.diondo`).

TIGRE (CERN/TIGRE, ``Common/CUDA/Siddon_projection.cu``, ``computeDeltas_Siddon`` and
``eulerZYZ``) places, for the view angle α (radians), the source at ``Rz(α)·(DSO, 0, 0)``
and the pixel (row v, column u) of a projection ``(nV, nU)`` at
``Rz(α)·(−(DSD − DSO), (u − (nU − 1)/2)·dU + offU, ((nV − 1)/2 − v)·dV + offV)``
(row 0 at the top, columns along the detector's +y), then moves source and detector by
``COR`` along ``Rz(α)·ŷ``; ``Rz`` turns counter-clockwise about z. With leap's frame
equal to TIGRE's (x, y, z), LEAP's source ``sod·(sin ψ, −cos ψ, 0)`` is TIGRE's for
ψ = α + π/2, leap's column axis θ⊥ is TIGRE's ``Rz(α)·ŷ`` (columns as TIGRE numbers them)
and leap's rows run up (TIGRE's reversed)::

    =====================  ==========================================================
    TIGRE                  leap
    =====================  ==========================================================
    α                      ψ = α + π/2
    DSO, DSD               sod, sdd
    COR                    tau = −COR
    nU, dU, offU           num_cols, pixel_width, center_col = (nU − 1)/2 − offU/dU
    nV, dV, offV           num_rows, pixel_height, center_row = (nV − 1)/2 − offV/dV
    row v (from the top)   leap row nV − 1 − v
    =====================  ==========================================================
"""
from __future__ import annotations

import math

import numpy as np

from ...geometry import ConeBeam, Detector


def tigre_cone(*, n_u: int, n_v: int, d_u: float, d_v: float, dso: float, dsd: float,
               alpha, cor: float = 0.0, off_u: float = 0.0, off_v: float = 0.0,
               binning=(1, 1)) -> ConeBeam:
    """The leap ConeBeam of a TIGRE cone geometry (lengths in mm, ``alpha`` radians,
    shape (views,)); ``binning`` (rows, cols): pixels averaged from index 0 of leap's
    (flipped-row) grid, trailing ones dropped, as :class:`~leap.io.lazy.Oriented` does."""
    br, bc = binning
    cc = 0.5 * (n_u - 1) - off_u / d_u
    cr = 0.5 * (n_v - 1) - off_v / d_v
    det = Detector(num_rows=n_v // br, num_cols=n_u // bc, pixel_height=d_v * br,
                   pixel_width=d_u * bc, center_row=(cr - 0.5 * (br - 1)) / br,
                   center_col=(cc - 0.5 * (bc - 1)) / bc)
    psi = np.asarray(alpha, dtype=np.float64) + 0.5 * math.pi
    return ConeBeam(detector=det, angles=psi, sod=float(dso), sdd=float(dsd), tau=-float(cor))


def tigre_terms(geometry: ConeBeam) -> dict:
    """The inverse of :func:`tigre_cone` (no binning): TIGRE's ``alpha`` (radians),
    ``dso``, ``dsd``, ``cor``, ``off_u``, ``off_v`` (mm) of a leap cone beam."""
    d = geometry.detector
    return dict(alpha=np.asarray(geometry.angles, dtype=np.float64) - 0.5 * math.pi,
                dso=geometry.sod, dsd=geometry.sdd, cor=-geometry.tau,
                off_u=(0.5 * (d.num_cols - 1) - d.center_col) * d.pixel_width,
                off_v=(0.5 * (d.num_rows - 1) - d.center_row) * d.pixel_height)


def check_writable(geometry, who: str) -> None:
    """Writers of TIGRE-read formats take circular flat-detector cone beams without tilt,
    focal-spot shifts or helical pitch, at equally spaced angles."""
    g = geometry
    if not isinstance(g, ConeBeam) or g.detector.curved or g.tilt != 0.0 or g.is_helical \
            or g.source_shifts is not None:
        raise ValueError(f"{who} writes circular flat-detector ConeBeam scans without tilt, "
                         f"got {type(g).__name__}")
    a = np.asarray(g.angles, dtype=np.float64)
    if a.size > 1 and np.ptp(np.diff(a)) > 1e-9 * max(1.0, abs(a[-1] - a[0])):
        raise ValueError(f"{who}: the format holds a start angle and a step, the geometry's "
                         "angles are not equally spaced")
