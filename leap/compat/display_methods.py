"""Display methods of the LEAP facade: volume viewer and geometry sketch (matplotlib)."""
from __future__ import annotations

import numpy as np

from ..geometry import ModularBeam


class DisplayMixin:
    """``display``, ``sketch_system``, ``drawCT`` and ``drawVolume`` of
    :class:`leap.compat.model.tomographicModels`."""

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
        """Draw the geometry with matplotlib: :meth:`drawCT` (the detector of the chosen
        view(s), default the first, its rays and the source path) and :meth:`drawVolume`
        (the volume's box) in a new 3-D figure, which is returned."""
        import matplotlib.pyplot as plt
        fig = plt.figure()
        ax = fig.add_subplot(111, projection="3d")
        self.drawCT(ax, [0] if whichView is None else whichView)
        self.drawVolume(ax)
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
        ax.set_zlabel("z (mm)")
        plt.show()
        return fig

    def drawCT(self, ax, whichView=None):
        """Draw the scan into the matplotlib 3-D axes ``ax`` (as LEAP's ``drawCT``): the
        outline of the detector of view ``whichView`` (an index or a list; None: the
        first view, or every module of a modular beam), the rays from its source to the
        detector's corners and the source path (lines of
        :func:`leap.geometry.sketch.sketch`, mm). Returns ``ax``."""
        from ..geometry.sketch import sketch
        geo = self.core_geometry()
        if whichView is None:
            whichView = range(geo.num_angles) if isinstance(geo, ModularBeam) else [0]
        lines = sketch(geo, None, list(np.atleast_1d(whichView)))
        for k, outline in enumerate(lines.detectors):
            ax.plot(*outline.T, "b-")
            if lines.sources is not None:
                src = lines.sources[k]
                ax.scatter(*src, color="r")
                for corner in outline[:4]:
                    ax.plot(*np.stack([src, corner]).T, color="0.6", linewidth=0.6)
        if lines.source_path is not None:
            ax.plot(*lines.source_path.T, "r:", linewidth=0.8)
        return ax

    def drawVolume(self, ax):
        """Draw the volume's box (its outer voxel faces, mm) into the matplotlib 3-D axes
        ``ax`` (as LEAP's ``drawVolume``); nothing without a volume. Returns ``ax``."""
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        from ..geometry.sketch import volume_edges
        if not self.ct_volume_defined():
            return ax
        edges = volume_edges(self.core_volume())
        for edge in edges:
            ax.plot(*edge.T, "k-", linewidth=0.8)
        pts = np.vstack(edges)
        lo, hi = pts.min(axis=0), pts.max(axis=0)
        faces = []
        for axis in range(3):
            for side in (lo[axis], hi[axis]):
                u, v = [k for k in range(3) if k != axis]
                quad = np.empty((4, 3))
                quad[:, axis] = side
                quad[:, u] = [lo[u], hi[u], hi[u], lo[u]]
                quad[:, v] = [lo[v], lo[v], hi[v], hi[v]]
                faces.append(quad)
        ax.add_collection3d(Poly3DCollection(faces, facecolors="magenta", alpha=0.2))
        return ax

    sketchSystem = sketch_system
