"""Geometric calibration of an axial cone-beam scanner from a scan of a ball phantom
(LEAP's ``ball_phantom_calibration``).

The phantom is a straight stack of small dense balls, ``ballSpacing`` mm apart along
z, off the rotation axis. Every projection must show every ball. The balls are
segmented in each projection (threshold + connected components), their
attenuation-weighted centroids are the measurements, and a 10-parameter model of the
scanner and phantom is fitted to them by non-linear least squares.

The model, LEAP's, for parameters ``x = [centerRow, centerCol, sod, odd, psi, theta,
phi, r, z_0, phase]`` (odd = sdd − sod; angles in degrees):

* source at (0, sod, 0); detector centre at (u_c, −odd, v_c), where u_c, v_c are the
  centre column / row offsets in mm from the middle of the detector;
* detector axes from the x-y-z Euler rotation (psi, theta, phi): the columns of the
  rotation matrix are the column direction, the detector normal and the row direction;
* ball k in view φ at (r·cos(φ − phase), r·sin(φ − phase), z_0 + k·ballSpacing);
* its projection: the ray from the source through the ball meets the detector plane
  at h; the predicted position is (h·u + u_c, h·v + v_c), in mm from the detector middle.
"""
from __future__ import annotations

import numpy as np

from ._arrays import check_data as _check_data

#: Connected components smaller than this many pixels are noise, not balls.
MIN_BALL_PIXELS = 10


class ball_phantom_calibration:  # noqa: N801 - LEAP's name
    """Fit the cone-beam geometry of ``leapct`` to a ball-phantom scan ``g``.

    Parameters
    ----------
    leapct : tomographicModels
        An initial guess of the geometry (cone beam: pixel sizes, sod, sdd, angles).
    ballSpacing : float
        Distance between neighbouring balls, mm.
    g : (numAngles, numRows, numCols) float32
        Attenuation radiographs (flat-fielded, −log) of the phantom.
    segmentation_threshold : float, optional
        Pixels above it belong to balls; default ``max(g)/4``.
    """

    def __init__(self, leapct, ballSpacing, g, segmentation_threshold=None):
        if not leapct.ct_geometry_defined():
            raise RuntimeError("ball_phantom_calibration needs an initial guess of the CT "
                               "geometry: set it on leapct first")
        spacing = float(ballSpacing) if ballSpacing is not None else float("nan")
        if not spacing > 0.0 or not np.isfinite(spacing):
            raise ValueError(f"ballSpacing must be a positive distance in mm, got {ballSpacing!r}")
        g = _check_data("g", g, ndims=(3,))
        if g.shape[1:] != (leapct.get_numRows(), leapct.get_numCols()):
            raise ValueError(f"g has detector shape {g.shape[1:]}, expected "
                             f"({leapct.get_numRows()}, {leapct.get_numCols()})")
        self.leapct = leapct
        self.T_u, self.T_v = leapct.get_pixelWidth(), leapct.get_pixelHeight()
        self.numRows, self.numCols = leapct.get_numRows(), leapct.get_numCols()
        self.numAngles = g.shape[0]
        self.T_z = spacing
        self.projectionAngles = np.asarray(leapct.get_angles(), dtype=np.float64)
        labels = self.connected_components(g, segmentation_threshold)
        self.N_z = int(labels.max())
        # (numAngles, numBalls, 2): attenuation-weighted centroid (u, v) of each ball, mm
        # from the detector middle.
        us = self.T_u * (np.arange(self.numCols) - 0.5 * (self.numCols - 1))
        vs = self.T_v * (np.arange(self.numRows) - 0.5 * (self.numRows - 1))
        loc = np.zeros((self.numAngles, self.N_z, 2), dtype=np.float32)
        for i in range(self.numAngles):
            idx = np.arange(1, self.N_z + 1)
            w = np.bincount(labels[i].ravel(), g[i].ravel(), self.N_z + 1)[idx]
            wu = np.bincount(labels[i].ravel(), (g[i] * us[None, :]).ravel(), self.N_z + 1)[idx]
            wv = np.bincount(labels[i].ravel(), (g[i] * vs[:, None]).ravel(), self.N_z + 1)[idx]
            loc[i, :, 0] = wu / w
            loc[i, :, 1] = wv / w
        self.ball_projection_locations = loc

    # ---------------------------------------------------------------- segmentation
    def connected_components(self, g, threshold=None, FWHM=0.0, connectivity=2):
        """Label the balls in every projection: (numAngles, numRows, numCols) int array,
        0 = background, 1..N = balls numbered in raster order. ``connectivity`` 2 joins
        diagonal neighbours; ``FWHM`` > 1 blurs each projection first. Raises when a
        projection has no ball or a different number of balls than the others."""
        from scipy import ndimage
        g = np.asarray(g, dtype=np.float32)
        threshold = float(np.max(g)) / 4.0 if threshold is None else float(threshold)
        if not np.isfinite(threshold):
            raise ValueError(f"segmentation threshold must be finite, got {threshold}")
        if connectivity not in (1, 2):
            raise ValueError(f"connectivity must be 1 (edges) or 2 (edges and corners), got {connectivity!r}")
        structure = ndimage.generate_binary_structure(2, connectivity)
        out = np.zeros(g.shape, dtype=np.int32)
        counts = []
        for i in range(g.shape[0]):
            img = g[i].copy()
            if FWHM > 1.0:
                self.leapct.BlurFilter2D(img[None], FWHM)
            lab, n = ndimage.label(img > threshold, structure=structure)
            sizes = np.bincount(lab.ravel(), minlength=n + 1)
            keep = np.flatnonzero(sizes[1:] >= MIN_BALL_PIXELS) + 1
            renumber = np.zeros(n + 1, dtype=np.int32)
            renumber[keep] = np.arange(1, keep.size + 1)
            out[i] = renumber[lab]
            counts.append(keep.size)
        if counts[0] == 0 or any(c != counts[0] for c in counts):
            raise ValueError(f"found {sorted(set(counts))} balls per projection; every "
                             "projection must show the same (non-zero) number of balls — "
                             "try another segmentation_threshold or inspect the data")
        return out

    # ---------------------------------------------------------------- the model
    def initial_guess(self, g=None):
        """A starting ``x`` from the current geometry: centre row from the ball whose
        projection moves least vertically (with ≥ 3 balls), centre column from
        ``find_centerCol`` on the row-summed data when ``g`` is given, radius from the
        horizontal spread of the projections, no detector rotation."""
        ct = self.leapct
        sod, sdd = ct.get_sod(), ct.get_sdd()
        loc = self.ball_projection_locations
        if self.N_z >= 3:
            k = int(np.argmin(np.ptp(loc[:, :, 1], axis=0)))
            ct.set_centerRow(float(np.mean(loc[:, k, 1])) / self.T_v + 0.5 * (self.numRows - 1))
        r = 0.5 * float(np.ptp(loc[:, :, 0])) * sod / sdd
        if g is not None:
            g = np.asarray(g, dtype=np.float32)
            ct.find_centerCol(np.ascontiguousarray(np.broadcast_to(g.sum(axis=1, keepdims=True), g.shape)))
        z_0 = -0.5 * self.T_z * (self.N_z - 1)
        return [ct.get_centerRow(), ct.get_centerCol(), ct.get_sod(),
                ct.get_sdd() - ct.get_sod(), 0.0, 0.0, 0.0, r, z_0, 0.0]

    def estimate_locations(self, x):
        """Predicted ball positions for parameters ``x``: (numAngles, numBalls, 2), mm."""
        from scipy.spatial.transform import Rotation
        x = np.asarray(x, dtype=np.float64)
        if x.shape != (10,):
            raise ValueError(f"x must have 10 parameters [centerRow, centerCol, sod, odd, psi, "
                             f"theta, phi, r, z_0, phase], got shape {x.shape}")
        v_c = self.T_v * (x[0] - 0.5 * (self.numRows - 1))
        u_c = self.T_u * (x[1] - 0.5 * (self.numCols - 1))
        A = Rotation.from_euler("xyz", x[4:7], degrees=True).as_matrix()
        u_vec, normal, v_vec = A[:, 0], A[:, 1], A[:, 2]
        source = np.array([0.0, x[2], 0.0])
        centre = np.array([u_c, -x[3], v_c])
        phi = np.deg2rad(self.projectionAngles - x[9])[:, None]
        z = x[8] + self.T_z * np.arange(self.N_z)[None, :]
        balls = np.stack(np.broadcast_arrays(x[7] * np.cos(phi), x[7] * np.sin(phi), z), axis=-1)
        rays = balls - source                                  # (numAngles, numBalls, 3)
        t = np.dot(centre - source, normal) / (rays @ normal)
        hit = source + t[..., None] * rays
        return np.stack([hit @ u_vec + u_c, hit @ v_vec + v_c], axis=-1).astype(np.float32)

    def residuals(self, x):
        """Predicted minus measured ball positions, flattened (mm)."""
        return (self.estimate_locations(x) - self.ball_projection_locations).ravel()

    def cost(self, x):
        """Sum of squared residuals, mm²."""
        return float(np.sum(self.residuals(x).astype(np.float64) ** 2))

    def optimize(self, x=None, set_parameters=False):
        """Least-squares fit (``scipy.optimize.least_squares``) from ``x`` (default:
        :meth:`initial_guess`). With ``set_parameters`` the fitted centre row/column,
        sod, sdd and (clipped to ±5°) the detector tilt psi are written to ``leapct``.
        Returns scipy's result (``res.x`` the parameters)."""
        from scipy.optimize import least_squares
        x0 = self.initial_guess() if x is None else np.asarray(x, dtype=np.float64)
        res = least_squares(self.residuals, x0)
        if set_parameters:
            ct = self.leapct
            ct.set_centerRow(res.x[0])
            ct.set_centerCol(res.x[1])
            ct.set_sod(abs(res.x[2]))
            ct.set_sdd(abs(res.x[2] + res.x[3]))
            if np.any(res.x[4:7] != 0.0):
                ct.set_tiltAngle(float(np.clip(res.x[4], -5.0, 5.0)))
        return res

    def do_plot(self, x):
        """Measured (black) and predicted (red) ball positions on the detector."""
        import matplotlib.pyplot as plt
        est = self.estimate_locations(x)
        loc = self.ball_projection_locations
        plt.plot(loc[:, :, 0], loc[:, :, 1], "ko")
        plt.plot(est[:, :, 0], est[:, :, 1], "ro")
        plt.title("Ball centre locations (black: data, red: model)")
        plt.xlabel("detector column dimension (mm)")
        plt.ylabel("detector row dimension (mm)")
        plt.show()
