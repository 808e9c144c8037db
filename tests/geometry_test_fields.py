"""Smooth test fields for the geometry-gradient tests of the torch layer (parallel, fan
and curved-cone parameters): a tapered object off the axis and an upstream-gradient ramp.
Finite differences of the float32 projector need both smooth: kinks of the footprint
model (ends crossing pixel edges) then weigh little within a step. And the facade's own
output, which the parameters' forward must reproduce."""
import numpy as np
import torch


def smooth_volume(proj, centre, radius, taper_z=False):
    """(1, nz, ny, nx) float32: a smooth object of ``radius`` (mm) about ``centre`` (x, y mm)
    in ``proj``'s volume, tapered to 0 at its rim; ``taper_z``: tapered along z as well
    (a column's end voxels near 0, for magnified rows whose ends cross pixel edges)."""
    nz, ny, nx = proj.get_volume_dim()
    vol = proj.leapct.core_volume()
    z, y, x = np.meshgrid(np.arange(nz), vol.y0 + np.arange(ny) * vol.voxel_width,
                          vol.x0 + np.arange(nx) * vol.voxel_width, indexing="ij")
    r2 = (x - centre[0]) ** 2 + (y - centre[1]) ** 2
    taper = np.clip(1.0 - r2 / radius ** 2, 0.0, None) ** 2
    if taper_z:
        taper = taper * np.sin(np.pi * (z + 0.5) / nz) ** 2
    f = taper * (1 + 0.5 * np.sin(0.7 * x + 0.3) * np.cos(0.5 * y) + 0.3 * np.sin(0.9 * z))
    return torch.tensor(f[None], dtype=torch.float32)


def ramp(shape, phis_deg, centre, rotation=False, row_slope_per_view=0.0):
    """ḡ (1, *shape) float64: a ramp along the columns and rows. ``rotation``: the column
    slope's sign follows how fast the object's centre moves across the rays as the scan
    rotates (with the same slope in every view the first-order effect of rotating the scan
    cancels, leaving a derivative below the float32 differences' noise);
    ``row_slope_per_view``: a row slope that changes sign across the views (helical pitch:
    the views below and above the middle angle move the other way)."""
    a, j, i = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    slope = 0.3
    if rotation:
        psi = np.deg2rad(phis_deg)[a]
        speed = -centre[0] * np.sin(psi) + centre[1] * np.cos(psi)
        slope = 0.3 * (np.sign(speed) + 0.3 * np.sin(1.3 * a))
    rows = 0.2 + row_slope_per_view * (a - 0.5 * (shape[0] - 1))
    g = 1 + slope * (i - 0.5 * (shape[2] - 1)) + rows * j + 0.1 * a
    return torch.tensor(g[None], dtype=torch.float64)


def facade_output(proj, x):
    """The facade's (``proj.leapct``) own answer for the module's input x (a batch of
    one): its projection of the volume x[0] for a projector, its back-projection of the
    projections x[0] otherwise; numpy float32."""
    lc = proj.leapct
    if proj.forward_project:
        return lc.project(lc.allocate_projections(), x[0].numpy().copy())
    return lc.backproject(x[0].numpy().copy(), lc.allocate_volume())
