"""Display methods of the LEAP facade: volume viewer and geometry sketch (matplotlib)."""
from __future__ import annotations

import numpy as np

from ..geometry import ConeBeam, ModularBeam, ParallelBeam


class DisplayMixin:
    """``display`` and ``sketch_system`` of :class:`leap.compat.model.tomographicModels`."""

    def display(self, vol):
        """Show a 3-D array: napari when installed, otherwise the three central
        orthogonal slices with matplotlib."""
        x = vol.detach().cpu().numpy() if hasattr(vol, "detach") else np.asarray(vol)
        try:
            import napari
        except ImportError:
            napari = None
        if napari is not None:
            napari.view_image(np.squeeze(x), rgb=False)
            napari.run()
            return
        import matplotlib.pyplot as plt
        x = np.atleast_3d(x) if x.ndim < 3 else x
        fig, ax = plt.subplots(1, 3, figsize=(12, 4))
        for a, (img, title) in zip(ax, ((x[x.shape[0] // 2], "axis 0 centre"),
                                        (x[:, x.shape[1] // 2], "axis 1 centre"),
                                        (x[:, :, x.shape[2] // 2], "axis 2 centre"))):
            a.imshow(img, cmap="gray")
            a.set_title(title)
            a.axis("off")
        fig.tight_layout()
        plt.show()
        return fig

    display_volume = display
    displayVolume = display

    def sketch_system(self, whichView=None):
        """Draw the geometry with matplotlib: the source path, the detector of the chosen
        view(s) (default: the first) and the volume box. Returns the figure."""
        import matplotlib.pyplot as plt
        from ..geometry.rays import pixel_rays
        geo = self.core_geometry()
        views = [0] if whichView is None else list(np.atleast_1d(whichView))
        fig = plt.figure()
        ax = fig.add_subplot(111, projection="3d")
        for a in views:
            if not 0 <= int(a) < geo.num_angles:
                raise ValueError(f"whichView must be in [0, {geo.num_angles}), got {a}")
            org, dirs = pixel_rays(geo[int(a)])
            # Detector outline: parallel beams at a distance beyond the volume, divergent
            # beams at the pixel centres.
            if isinstance(geo, ParallelBeam):
                corners = org[0, [0, 0, -1, -1, 0], [0, -1, -1, 0, 0], 0] + 2 * self._extent() * dirs[0, 0, 0, 0]
                ax.plot(*corners.T, "b-")
            else:
                pts = self._pixel_positions(geo[int(a)])
                corners = pts[[0, 0, -1, -1, 0], [0, -1, -1, 0, 0]]
                ax.plot(*corners.T, "b-")
                ax.scatter(*org[0, 0, 0, 0], color="r")
        if not isinstance(geo, ParallelBeam):
            src = np.array([pixel_rays(geo[i])[0][0, 0, 0, 0] for i in range(geo.num_angles)])
            ax.plot(*src.T, "r:", linewidth=0.8)
        if self._vol is not None:
            v = self.core_volume()
            lo = np.array([v.x0, v.y0, v.z0]) - 0.5 * np.array([v.voxel_width] * 2 + [v.voxel_height])
            hi = lo + np.array([v.num_x * v.voxel_width, v.num_y * v.voxel_width, v.num_z * v.voxel_height])
            for i in range(8):
                p = np.where([(i >> k) & 1 for k in range(3)], hi, lo)
                for k in range(3):
                    if not (i >> k) & 1:
                        q = p.copy()
                        q[k] = hi[k]
                        ax.plot(*np.stack([p, q]).T, "k-", linewidth=0.8)
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
        ax.set_zlabel("z (mm)")
        plt.show()
        return fig

    sketchSystem = sketch_system

    def _extent(self):
        d = self._need_geometry()
        return 0.5 * max(d["numCols"] * d["pixelWidth"], d["numRows"] * d["pixelHeight"])

    @staticmethod
    def _pixel_positions(geo):
        """Pixel centres (num_rows, num_cols, 3) of a one-view divergent geometry, mm."""
        from ..geometry.rays import pixel_rays
        if isinstance(geo, ConeBeam) and geo.tilt != 0.0:
            geo = geo.to_modular()
        org, dirs = pixel_rays(geo)
        if isinstance(geo, ModularBeam):
            normal = np.cross(geo.col_vectors[0], geo.row_vectors[0])
            dist = np.dot(geo.module_centers[0] - geo.source_positions[0], normal)
            t = dist / (dirs[0, :, :, 0] @ normal)
        else:
            # Curved: in-plane distance sdd from the source; flat: depth sdd along the
            # central ray (−cy, cx) of the view.
            if geo.detector.curved:
                t = geo.sdd / np.linalg.norm(dirs[0, :, :, 0, :2], axis=-1)
            else:
                cx, cy = geo.axial_views().col_dir[0]
                t = geo.sdd / (dirs[0, :, :, 0] @ np.array([-cy, cx, 0.0]))
        return org[0, :, :, 0] + t[..., None] * dirs[0, :, :, 0]
