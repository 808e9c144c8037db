"""Checks shared by the scanner readers' tests: a phantom's exact line integrals along a
geometry's pixel rays (what a simulated scan stores), and the relative error of an FBP."""
import numpy as np

from leap.geometry.rays import pixel_rays


def line_integrals(geometry, phantom):
    """Exact line integrals of ``phantom`` along every pixel's ray, (views, rows, cols)."""
    org, dirs = pixel_rays(geometry)
    g = phantom.line_integrals(org.reshape(-1, 3), dirs.reshape(-1, 3))
    return g.reshape(geometry.projection_shape)


def voxelized(volume, phantom):
    """``phantom`` on ``volume``'s voxels (3 x 3 x 3 samples each)."""
    v = volume
    return phantom.voxelize(v.x_samples(), v.y_samples(), v.z_samples(), v.voxel_width,
                            v.voxel_height, oversampling=3)


def fbp_error(system, g, phantom):
    """Relative L2 error over the volume of ``system.fbp(g)`` against ``phantom``."""
    truth = voxelized(system.volume, phantom)
    rec = system.fbp(np.ascontiguousarray(g, dtype=np.float32))
    return float(np.linalg.norm(rec - truth) / np.linalg.norm(truth))


def fov_error(system, rec, phantom):
    """Relative L2 error of ``rec`` against the voxelised phantom (one sample per voxel)
    inside 0.9 of the field of view."""
    v = system.volume
    truth = phantom.voxelize(v.x_samples(), v.y_samples(), v.z_samples(), v.voxel_width,
                             v.voxel_height)
    x, y = np.meshgrid(v.x_samples(), v.y_samples())
    inside = np.broadcast_to(x ** 2 + y ** 2 <= (0.9 * system.geometry.fov_radius()) ** 2,
                             truth.shape)
    return float(np.linalg.norm((rec - truth)[inside]) / np.linalg.norm(truth[inside]))
