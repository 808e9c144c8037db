"""Display methods of the LEAP facade: volume viewer and geometry sketch (matplotlib)."""
from __future__ import annotations

import numpy as np


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
        view(s) (default: the first) and the volume box (the lines of
        :func:`leap.geometry.sketch.sketch`). Returns the figure."""
        import matplotlib.pyplot as plt
        from ..geometry.sketch import sketch
        volume = self.core_volume() if self.ct_volume_defined() else None
        lines = sketch(self.core_geometry(), volume, [0] if whichView is None else whichView)
        fig = plt.figure()
        ax = fig.add_subplot(111, projection="3d")
        for k, outline in enumerate(lines.detectors):
            ax.plot(*outline.T, "b-")
            if lines.sources is not None:
                ax.scatter(*lines.sources[k], color="r")
        if lines.source_path is not None:
            ax.plot(*lines.source_path.T, "r:", linewidth=0.8)
        for edge in lines.volume_edges:
            ax.plot(*edge.T, "k-", linewidth=0.8)
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
        ax.set_zlabel("z (mm)")
        plt.show()
        return fig

    sketchSystem = sketch_system
