"""Flying focal spot in FBP: a flat-detector scan's views grouped by focal spot, each group
an ordinary cone beam about its own source.

A flying focal spot (``source_shifts`` of :class:`leap.geometry.ConeBeam`, DICOM-CT-PD's
FFSXY/FFSZ/FFSXYZ) moves the X-ray source off the detector's focal centre from view to
view, cycling through a few positions (2 or 4). In each view's frame (θ, θ⊥, ẑ) the
offset of spot s is constant: ``lateral`` along θ⊥ (the column axis), ``depth`` along the
ray direction −θ and ``Δz`` along ẑ (:meth:`~leap.geometry.ConeBeam.focus_offsets`). A
flat detector is a plane, so the views of one spot are, exactly, the views of a cone beam
whose source *is* that spot::

    sod' = sod − depth,  sdd' = sdd − depth,  tau' = tau − lateral,
    center_col' = center_col + lateral / pixel_width,
    center_row' = center_row + Δz / pixel_height,
    helical_mid_angle' = helical_mid_angle − Δz / helical_pitch   (source z + Δz)

(the detector plane and its pixels stay where they are: checked against the rays of the
shifted geometry in ``tests/fbp/test_fbp_flying_focal_spot.py``). FBP of the scan is the
weighted mean of the groups' FBPs (:func:`group_weights`), each with its own cosine weights, ramp
spacing, helical window position (the spot's height and angle) and the axial
back-projector: all three shifts applied exactly, where the modular form leap projects
flat FFS scans with carries no helical weighting.

Curved detectors (cylinders about the focal centre) have no such equivalent: their FBP
applies the shifts in the back-projector's focus offsets (``leap.kernels.cpu.axial``),
and the helical window of each view follows its own source's angle and height
(:func:`leap.reconstruction.fbp.helical_slice_weights`), as it does here for each group.
"""
from __future__ import annotations

import numpy as np

#: Most focal-spot positions grouped (clinical scanners fly between 2 and 4).
MAX_SPOTS = 16

#: Offsets closer than this (mm) are one focal spot (DICOM-CT-PD stores float32).
SPOT_TOLERANCE = 1e-4


def groups_by_spot(geometry) -> list[tuple[np.ndarray, object]]:
    """The views of a flat-detector cone beam with ``source_shifts`` grouped by focal spot:
    ``[(indices, cone), ...]``, indices (n_s,) int64 into the views (ascending) and cone the
    unshifted :class:`~leap.geometry.ConeBeam` about that spot's source (see the module
    docstring). Raises ValueError for curved detectors, tilted ones, more than
    :data:`MAX_SPOTS` spots, or a spot seen in fewer than two views."""
    from ..geometry import ConeBeam
    if not isinstance(geometry, ConeBeam) or geometry.source_shifts is None:
        raise ValueError("groups_by_spot needs a ConeBeam with source_shifts")
    d = geometry.detector
    if d.curved or geometry.tilt != 0.0:
        raise ValueError("focal-spot groups are exact cone beams for flat, untilted detectors "
                         "only")
    off = geometry.focus_offsets()                        # (na, 3): lateral, depth, z
    keys = np.round(off / SPOT_TOLERANCE).astype(np.int64)
    spots, label = np.unique(keys, axis=0, return_inverse=True)
    label = label.ravel()
    if spots.shape[0] > MAX_SPOTS:
        raise ValueError(f"the flying focal spot takes {spots.shape[0]} positions, more than "
                         f"{MAX_SPOTS}: FBP groups the views of each spot (a scanner's spot "
                         "flies between a few fixed positions)")
    out = []
    for s in range(spots.shape[0]):
        idx = np.flatnonzero(label == s)
        if idx.size < 2:
            raise ValueError(f"focal spot {s} (offset {off[idx[0]].round(6).tolist()} mm) is "
                             "seen in one view only: FBP needs at least two views per spot")
        lateral, depth, dz = np.mean(off[idx], axis=0)
        changes = dict(angles=geometry.angles[idx], sod=geometry.sod - depth,
                       sdd=geometry.sdd - depth, tau=geometry.tau - lateral,
                       source_shifts=None,
                       detector=d.with_changes(center_col=d.center_col + lateral / d.pixel_width,
                                               center_row=d.center_row + dz / d.pixel_height))
        if geometry.is_helical:
            changes["helical_mid_angle"] = (geometry.helical_mid_angle
                                            - dz / geometry.helical_pitch)
        elif abs(dz) > SPOT_TOLERANCE:
            raise ValueError("a circular (non-helical) scan whose focal spot moves in z has no "
                             "cone-beam equivalent per spot (leap's circular source is at z = 0)")
        out.append((idx, geometry.with_changes(**changes)))
    return out


def group_weights(groups) -> np.ndarray:
    """The weights (n_groups,) of the groups' FBPs in the scan's FBP, summing to 1: each
    group's FBP is a whole reconstruction (its views weighted by their own angular step
    T_s), so group s counts with 1/T_s, the density of its views in angle (1/n_spots for
    spots interleaved evenly, also on any run of the views: a distributed part)."""
    density = []
    for idx, cone in groups:
        a = cone.view_angles()
        density.append((a.size - 1) / abs(a[-1] - a[0]))
    density = np.asarray(density)
    return density / np.sum(density)


def uses_spot_groups(geometry) -> bool:
    """Whether FBP reconstructs ``geometry`` by focal-spot groups: cone beams with a flat,
    untilted detector and ``source_shifts``, helical or with no z shift (a circular scan
    whose spot moves in z keeps the modular back-projection, weighted about the focal
    centre)."""
    from ..geometry import ConeBeam
    if not (isinstance(geometry, ConeBeam) and geometry.source_shifts is not None
            and not geometry.detector.curved and geometry.tilt == 0.0):
        return False
    return geometry.is_helical or bool(np.all(np.abs(geometry.source_shifts[:, 1])
                                              <= SPOT_TOLERANCE))
