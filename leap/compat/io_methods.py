"""``DataIOMixin``: LEAP's data-file methods for the ``tomographicModels`` facade.

The methods keep LEAP's names, argument names, order and defaults; the work is done by
:mod:`leap.io.data`. Differences from LEAP:

* errors raise ``FileNotFoundError`` / ``ValueError`` / ``TypeError`` instead of printing a
  message and returning ``None`` or ``False``;
* ``set_fileIO_parameters`` returns ``True`` on success;
* ``wmax=None`` (and ``wmin=None``) window with the max (min) of the whole array saved,
  as LEAP documents, rather than of each tif slice;
* ``save_volume`` writes the NRRD spacing/origin per numpy axis ``(z, y, x)``.

The mixin expects the facade's geometry/volume getters (``ct_geometry_defined``,
``get_pixelWidth`` …, ``ct_volume_defined``, ``x_samples`` …).
"""
from __future__ import annotations

import numpy as np

from ..io import data as _data


def _fill(x, load):
    """Call ``load(out)`` with a numpy ``out`` for ``x`` (None, numpy, torch or CuPy) and
    return ``x`` filled (or the new array when ``x`` is None)."""
    if x is None or isinstance(x, np.ndarray):
        return load(x)
    if hasattr(x, "copy_") and hasattr(x, "detach"):          # torch.Tensor
        import torch

        arr = load(None)
        if tuple(arr.shape) != tuple(x.shape):
            raise ValueError(f"x has shape {tuple(x.shape)} but the data in the file(s) has "
                             f"shape {tuple(arr.shape)}")
        with torch.no_grad():
            x.copy_(torch.from_numpy(np.ascontiguousarray(arr)))
        return x
    if hasattr(x, "__cuda_array_interface__") and hasattr(x, "set"):   # cupy.ndarray
        arr = load(None)
        if tuple(arr.shape) != tuple(x.shape):
            raise ValueError(f"x has shape {tuple(x.shape)} but the data in the file(s) has "
                             f"shape {tuple(arr.shape)}")
        x.set(np.ascontiguousarray(arr, dtype=x.dtype))
        return x
    raise TypeError(f"x must be None, a numpy array or a torch tensor, got {type(x).__name__}")


class DataIOMixin:
    """LEAP's ``save_*`` / ``load_*`` data-file methods (npy, nrrd, tif sequences)."""

    # tif sample type and window, as set by set_fileIO_parameters (LEAP's defaults)
    file_dtype = np.float32
    wmin = 0.0
    wmax = None

    def set_fileIO_parameters(self, dtype=np.float32, wmin=0.0, wmax=None):
        r"""Set how tif files are written by ``save_data`` and friends.

        Args:
            dtype: ``np.float32`` (values stored unclipped), ``np.uint8`` or ``np.uint16``
            wmin (float): value stored as 0 for integer types (default 0.0; ``None``: the
                minimum of the data)
            wmax (float): value stored as the largest integer (default ``None``: the
                maximum of the data)

        Returns:
            True (an invalid dtype raises ``ValueError``)
        """
        dt = _data.check_file_dtype(dtype)
        for name, w in (("wmin", wmin), ("wmax", wmax)):
            if w is not None and not np.isfinite(float(w)):
                raise ValueError(f"{name} must be a finite number or None, got {w!r}")
        self.file_dtype = dt.type
        self.wmin = None if wmin is None else float(wmin)
        self.wmax = None if wmax is None else float(wmax)
        return True

    # ------------------------------------------------------------------ save
    def save_data(self, fileName, x, T=1.0, offset_0=0.0, offset_1=0.0, offset_2=0.0,
                  sequence_offset=0, axis_split=0):
        """Save 3D data to file (tif sequence, nrrd, or npy)

        Args:
            fileName (string): file name; .npy, .nrrd, or .tif/.tiff (a 3D array is saved
                as the sequence fileName_<i + sequence_offset>.tif)
            x (numpy array or torch tensor): the data
            T (float or 3 floats): sample spacing (mm) written to nrrd / tif headers
            offset_0, offset_1, offset_2 (float): coordinate of the first sample along
                axes 0, 1 and 2 (nrrd ``axismins``)
            sequence_offset (int): number of the first file of a tif sequence
            axis_split (int): 0 or 1, the axis along which the tif files are cut

        Returns:
            True
        """
        _data.save_data(fileName, x, spacing=T, origin=(offset_0, offset_1, offset_2),
                        sequence_offset=sequence_offset, axis_split=axis_split,
                        dtype=self.file_dtype, window=(self.wmin, self.wmax))
        return True

    def save_projections(self, fileName, g, sequence_offset=0, axis_split=0):
        """Save projection data to file (tif sequence, nrrd, or npy)

        Args:
            fileName (string): the file name to save the projection data to
            g (numpy array or torch tensor): projection data
            sequence_offset (int): if saving as a tif/tiff sequence, this specifies the
                index of the first file
            axis_split (int): 0 saves one tif per projection, 1 one tif per detector row
        """
        return self.saveProjections(fileName, g, sequence_offset, axis_split=axis_split)

    def saveProjections(self, fileName, g, sequence_offset=0, axis_split=0):
        """Save projection data to file (tif sequence, nrrd, or npy)"""
        if self.ct_geometry_defined():
            pixelWidth = float(self.get_pixelWidth())
            pixelHeight = float(self.get_pixelHeight())
            phi_0 = float(np.asarray(self.get_angles()).ravel()[0])
            row_0 = -float(self.get_centerRow()) * pixelHeight
            col_0 = -float(self.get_centerCol()) * pixelWidth
            T = (pixelWidth, pixelHeight, pixelWidth)
        else:
            phi_0 = row_0 = col_0 = 0.0
            T = 1.0
        return self.save_data(fileName, g, T, phi_0, row_0, col_0, sequence_offset,
                              axis_split=axis_split)

    def save_volume(self, fileName, f, sequence_offset=0):
        """Save volume data to file (tif sequence, nrrd, or npy)

        Args:
            fileName (string): the file name to save the volume data to
            f (numpy array or torch tensor): volume data (numZ, numY, numX)
            sequence_offset (int): if saving as a tif/tiff sequence, this specifies the
                index of the first file
        """
        return self.saveVolume(fileName, f, sequence_offset)

    def saveVolume(self, fileName, f, sequence_offset=0):
        """Save volume data to file (tif sequence, nrrd, or npy)"""
        if self.ct_volume_defined():
            z_0 = float(self.z_samples()[0])
            y_0 = float(self.y_samples()[0])
            x_0 = float(self.x_samples()[0])
            T = (float(self.get_voxelHeight()), float(self.get_voxelWidth()),
                 float(self.get_voxelWidth()))
        else:
            x_0 = y_0 = z_0 = 0.0
            T = 1.0
        return self.save_data(fileName, f, T, z_0, y_0, x_0, sequence_offset)

    def save_tif(self, fileName, x, T=(1.0, 1.0)):
        """Save a 2D array as one tif file, with the file_dtype / window of
        set_fileIO_parameters; T is the (row, column) pixel size in mm."""
        _data.write_tif(fileName, x, spacing=T, dtype=self.file_dtype,
                        window=(self.wmin, self.wmax))
        return True

    # ------------------------------------------------------------------ load
    def load_data(self, fileName, x=None, fileRange=None, rowRange=None, colRange=None,
                  axis_split=0):
        """Load 3D data from file (tif sequence, nrrd, or npy)

        A tif sequence is named basename_XXXX.tif (or .tiff), XXXX being its sequence
        numbers, zero-padded or not; give basename.tif (or the name of any file of the
        sequence, or a pattern with one ``*``). Files are ordered by their numbers.

        Args:
            fileName (string): full path to npy or nrrd file or sequence of tif files.
            x (numpy array or torch tensor): place to store the data (optional); its
                shape must match the data read
            fileRange (list with two integers): the first and last file numbers to read
                of a tif sequence (npy/nrrd: indices along the split axis)
            rowRange (list with two integers): the first and last rows to read
            colRange (list with two integers): the first and last columns to read
            axis_split (int): 0 stacks the tif files along axis 0, 1 along axis 1

        Returns:
            numpy array of the data in the file(s) (float32 for tif); if x is given, x
        """
        return _fill(x, lambda out: _data.load_data(
            fileName, out, file_range=fileRange, row_range=rowRange, col_range=colRange,
            axis_split=axis_split))

    def loadData(self, fileName, x=None, fileRange=None, rowRange=None, colRange=None,
                 axis_split=0):
        """Load 3D data from the given file name provided (tif sequence, nrrd, or npy)"""
        return self.load_data(fileName, x, fileRange, rowRange, colRange, axis_split)

    def load_volume(self, fileName, x=None, fileRange=None, rowRange=None, colRange=None):
        """Load 3D volume data from the given file name provided (tif sequence, nrrd, or npy)

        See load_data for more information
        """
        return self.load_data(fileName, x, fileRange, rowRange, colRange)

    def loadVolume(self, fileName, x=None, fileRange=None, rowRange=None, colRange=None):
        """Load 3D volume data from file (tif sequence, nrrd, or npy)"""
        return self.load_data(fileName, x, fileRange, rowRange, colRange)

    def load_projections(self, fileName, x=None, fileRange=None, rowRange=None,
                         colRange=None, axis_split=0):
        """Load 3D projection data from the given file name provided (tif sequence, nrrd,
        or npy)

        See load_data for more information
        """
        return self.load_data(fileName, x, fileRange, rowRange, colRange, axis_split)

    def loadProjections(self, fileName, x=None, fileRange=None, rowRange=None,
                        colRange=None, axis_split=0):
        """Load 3D projection data from file (tif sequence, nrrd, or npy)"""
        return self.load_data(fileName, x, fileRange, rowRange, colRange, axis_split)

    def load_tif(self, fileName, x=None, rowRange=None, colRange=None):
        """Load one 2D tif image (float32), optionally rows/columns [first, last] of it"""
        return _fill(x, lambda out: _data.read_tif(fileName, out, row_range=rowRange,
                                                   col_range=colRange))

    load_tif_python = load_tif

    def get_file_list(self, fileName, fileRange=None):
        """The files of a tif sequence (see load_data), sorted by sequence number"""
        return _data.get_file_list(fileName, fileRange)
