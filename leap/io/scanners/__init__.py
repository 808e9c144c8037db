"""Scanner formats: :func:`open_scan` reads a measured scan into a :class:`Scan` (its
:class:`~leap.system.CTSystem` in leap's conventions, lazy raw data, the vendor's
metadata).

One module per format, each a small, documented mapping from the vendor's keys and sign
conventions to leap's geometry, naming the document or public reader its conventions
come from. Each has ``detect(path) -> bool`` (cheap: a file name, a header, a group in
an HDF5 file) and ``open_scan(path, **options) -> Scan``. Optional dependencies
(``olefile``, ``h5py``, ``tifffile``, ``pydicom``; the ``io`` extra) are imported only by
the reader that needs them.
"""
from __future__ import annotations

import importlib
import os

from ._common import MissingWhiteLevelWarning
from .scan import Scan

#: Reader modules, in the order :func:`open_scan` tries them.
READERS = ("nikon", "skyscan", "nxtomo", "dxchange", "zeiss", "elekta", "yxlon", "diondo",
           "varian", "raw_hdf5", "astra_vectors", "dicom_ct_pd")
#: Format names accepted by ``open_scan(..., format=)``, and their modules.
FORMATS = {"nikon": "nikon", "skyscan": "skyscan", "bruker": "skyscan", "nxtomo": "nxtomo",
           "nexus": "nxtomo", "dxchange": "dxchange", "zeiss": "zeiss", "xradia": "zeiss",
           "dicom-ct-pd": "dicom_ct_pd", "dicom_ct_pd": "dicom_ct_pd",
           "dicomctpd": "dicom_ct_pd",
           "elekta": "elekta", "xvi": "elekta", "yxlon": "yxlon",
           "diondo": "diondo", "varian": "varian", "truebeam": "varian",
           "halcyon": "varian", "obi": "varian", "hdf5": "raw_hdf5",
           "astra": "astra_vectors", "walnut": "astra_vectors"}


def _reader(name):
    return importlib.import_module(f"{__name__}.{name}")


def open_scan(path, format: str | None = None, **options) -> Scan:
    """Read the scan at ``path`` (a file or a directory, as the format keeps it).

    The format is detected from the path (``format=`` names it instead: 'nikon',
    'skyscan', 'nxtomo', 'dxchange', 'zeiss', 'elekta', 'yxlon', 'diondo', 'varian',
    'dicom-ct-pd', 'hdf5', 'astra', 'walnut'); ``options`` go to the reader (see each
    reader's ``open_scan``). ``format='astra'`` reads a folder of projections with a
    per-view ASTRA vectors file (:mod:`leap.io.scanners.astra_vectors`); the CWI walnut
    layout is detected. ``format='hdf5'`` reads a raw NeXus / HDF5
    file by paths inside it (:mod:`leap.io.scanners.raw_hdf5`: ``data=``, ``image_key=``,
    ``angles=``, ``flats=``, ``darks=``, ``pixel_size=``, ``angle_unit=``; external links
    are followed when the data are read); a file with no NXtomo entry but an NXdata
    group of frames with an image key (Diamond's layout) is detected without them.
    Nothing of the projections is read: the returned :class:`Scan` holds lazy sources.
    Raises FileNotFoundError for a path that does not exist and ValueError naming the
    formats tried when none recognises it.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no scan at {path!r}: the path does not exist")
    if format is not None:
        key = str(format).lower()
        if key not in FORMATS:
            raise ValueError(f"unknown scan format {format!r}; known: "
                             f"{', '.join(sorted(set(FORMATS)))}")
        return _reader(FORMATS[key]).open_scan(path, **options)
    tried = []
    for name in READERS:
        reader = _reader(name)
        tried.append(name)
        if reader.detect(path):
            return reader.open_scan(path, **options)
    raise ValueError(f"{path!r} is not a scan leap can read (tried: {', '.join(tried)}); "
                     "name the format with format= if it is one of them")


__all__ = ["Scan", "open_scan", "READERS", "FORMATS", "MissingWhiteLevelWarning"]
