"""A measured scan as read from a scanner's files: its CT system, its raw data (lazy) and
the vendor's metadata.

Readers (:mod:`leap.io.scanners`) build a :class:`Scan`; nothing of the projections,
flats or darks is read until asked for (they are :class:`~leap.io.lazy.Source` objects:
index them, ``np.asarray`` them, or hand them to :mod:`leap.distributed`).
:meth:`Scan.attenuation` chains the flat-field normalisation and −log
(:mod:`leap.preprocessing`) and is itself lazy.
"""
from __future__ import annotations

import collections
import dataclasses
import threading
import uuid
from dataclasses import dataclass, field

import numpy as np

from ...preprocessing.bad_pixels import bad_pixel_map, replace_bad_pixels
from ...preprocessing.flat_field import MIN_TRANSMISSION, _region, flat_field, neg_log
from ...preprocessing.rings import remove_stripes_sorting
from ...system import CTSystem
from ..lazy import InMemory, Mapped, Source, drop_int_axes, normalize_key


@dataclass(frozen=True, eq=False)
class Scan:
    """A scan: geometry and data as the scanner wrote them.

    Attributes
    ----------
    system : CTSystem
        The scan in leap's conventions (mm, radians, LEAP's axes and angle direction) with
        the default volume for its detector (``system.with_changes(volume=...)`` for
        another).
    projections : Source
        (num_views, num_rows, num_cols) as stored, in leap's detector orientation (row 0
        at the bottom, columns as LEAP numbers them; where a format stores them the other
        way round, the reader flips them lazily): raw counts, or line integrals where
        ``is_attenuation`` (formats that store them, e.g. DICOM-CT-PD).
    flats, darks : Source or None
        (k, num_rows, num_cols) open-beam and no-beam frames, None where the scan has
        none.
    angles : (num_views,) float64
        The view angles as the vendor measured them (its unit and direction, see
        ``angle_unit`` and the reader's docstring); ``system.geometry`` holds leap's.
    metadata : dict
        The vendor's keys and values as read (strings or numbers).
    format : str
        The reader's name ('nikon', 'skyscan', 'nxtomo', 'dxchange', 'zeiss').
    path : str
        The file or directory the scan was opened from.
    flat_positions, dark_positions : (k,) float64 or None
        The view positions at which each flat/dark frame was taken, where the format
        says (flats before and after a scan are then interpolated per view).
    is_attenuation : bool
        ``projections`` already hold line integrals (no flat-field step).
    angle_unit : str
        'degree' or 'radian': the unit of ``angles``.
    """

    system: CTSystem
    projections: Source
    flats: Source | None = None
    darks: Source | None = None
    angles: np.ndarray = field(default_factory=lambda: np.zeros(0))
    metadata: dict = field(default_factory=dict)
    format: str = ""
    path: str = ""
    flat_positions: np.ndarray | None = None
    dark_positions: np.ndarray | None = None
    is_attenuation: bool = False
    angle_unit: str = "degree"

    def __post_init__(self):
        for name in ("projections", "flats", "darks"):
            x = getattr(self, name)
            if x is not None and not isinstance(x, Source):
                object.__setattr__(self, name, InMemory(x))
        p = self.projections
        expected = tuple(self.system.projection_shape)
        if tuple(p.shape) != expected:
            raise ValueError(f"{self.path or 'scan'}: the projections hold {tuple(p.shape)} "
                             f"but the geometry says {expected} (views, rows, cols)")
        for name in ("flats", "darks"):
            x = getattr(self, name)
            if x is not None and tuple(x.shape[1:]) != expected[1:]:
                raise ValueError(f"{self.path or 'scan'}: the {name} are "
                                 f"{tuple(x.shape[1:])} pixels, the projections {expected[1:]}")
        object.__setattr__(self, "angles", np.asarray(self.angles, dtype=np.float64))

    # ------------------------------------------------------------ derived
    def with_system(self, system: CTSystem) -> "Scan":
        """The same data with another system (e.g. a corrected centre of rotation or a
        chosen volume); the projection shape must stay the same."""
        return dataclasses.replace(self, system=system)

    def with_geometry(self, geometry) -> "Scan":
        """The same data and volume with another geometry (same projection shape)."""
        return self.with_system(self.system.with_changes(geometry=geometry))

    def attenuation(self, *, air_region=None, min_transmission: float = MIN_TRANSMISSION,
                    interpolate_flats: bool = True, bad_pixels=None, rings: int = 0) -> Source:
        """The line integrals ``−log((raw − dark)/(flat − dark))``, lazy: a
        :class:`~leap.io.lazy.Source` of float32 (views, rows, cols) that computes each
        region as it is read (``np.asarray(scan.attenuation())`` for all of it in memory;
        :mod:`leap.distributed` reads it slab by slab).

        Flats are averaged, or interpolated per view between the positions they were
        taken at (``interpolate_flats`` and the format records them); darks averaged.
        ``air_region`` (row slice, col slice) or [r0, r1, c0, c1]: dose normalisation of
        each view over a region the object never shadows. ``min_transmission``: the
        floor before −log. Then, on the line integrals: ``bad_pixels`` a (rows, cols) map
        (True = bad) or ``'auto'`` (:func:`leap.preprocessing.bad_pixels.bad_pixel_map` of the flats
        and darks), replaced by the median of good neighbours (3×3); ``rings`` > 0:
        stripe removal by sorting with that window (columns,
        :func:`leap.preprocessing.rings.remove_stripes_sorting`; a region is then computed from
        all views). Regions read with the margins these need, so any slab gives the
        values of the whole. Scans that store line integrals return them as float32.
        """
        if self.is_attenuation:
            return Mapped(_as_is, self.projections)
        return _Attenuation(self, air_region, float(min_transmission),
                            bool(interpolate_flats), bad_pixels, rings)

    # ---------------------------------------------------------- reporting
    def summary(self) -> str:
        """A few lines: format, detector, source and detector distances, angles as
        measured, the volume, and what raw data there is."""
        s, g = self.system, self.system.geometry
        d = g.detector
        lines = [f"{self.format or 'scan'} scan: {self.path}",
                 f"  geometry: {type(g).__name__}, {g.num_angles} views, detector "
                 f"{d.num_rows} x {d.num_cols} pixels of {d.pixel_height:g} x "
                 f"{d.pixel_width:g} mm (centre row {d.center_row:g}, col "
                 f"{d.center_col:g}){', curved' if d.curved else ''}"]
        sod, sdd = getattr(g, "sod", None), getattr(g, "sdd", None)
        if sod is None and hasattr(g, "mean_distances"):
            sod, sdd = g.mean_distances()
        if sod is not None:
            lines.append(f"  source to axis {sod:g} mm, source to detector {sdd:g} mm, "
                         f"magnification {sdd / sod:.4g}")
        if self.angles.size:
            span = float(self.angles.max() - self.angles.min())
            lines.append(f"  angles as measured: {self.angles[0]:g} to {self.angles[-1]:g} "
                         f"{self.angle_unit}s ({self.angles.size} views, span {span:g})")
        if getattr(g, "is_helical", False):
            lines.append(f"  helical pitch {g.helical_pitch:g} mm per radian "
                         f"(normalised {g.normalized_helical_pitch():.3g})")
        shifts = getattr(g, "source_shifts", None)
        if shifts is not None:
            big = np.abs(shifts).max(axis=0)
            lines.append(f"  flying focal spot: source shifts up to {big[0]:.3g} rad, "
                         f"{big[1]:.3g} mm in z, {big[2]:.3g} mm radially")
        v = s.volume
        lines.append(f"  volume: {v.num_x} x {v.num_y} x {v.num_z} voxels of "
                     f"{v.voxel_width:g} x {v.voxel_width:g} x {v.voxel_height:g} mm")
        raw = f"  data: projections {self.projections.shape} {self.projections.dtype}"
        raw += ", line integrals" if self.is_attenuation else ", raw counts"
        for name in ("flats", "darks"):
            x = getattr(self, name)
            raw += f", {x.shape[0]} {name}" if x is not None else f", no {name}"
        lines.append(raw)
        return "\n".join(lines)

    def __repr__(self):
        return f"<Scan {self.format} {self.path!r}: {self.system.projection_shape}>"

    def sketch(self, views=(0,)):
        """Draw the system (source path, the detector of ``views``, the volume's box) with
        matplotlib; returns the figure (see :func:`leap.geometry.sketch.sketch`)."""
        import matplotlib.pyplot as plt

        from ...geometry.sketch import sketch
        lines = sketch(self.system.geometry, self.system.volume, views)
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
        ax.set_title(f"{self.format}: {self.path}", fontsize=8)
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
        ax.set_zlabel("z (mm)")
        return fig

    # ---------------------------------------------------- geometry checks
    def find_center_col(self, data=None, *, i_row=None, margin: int | None = None,
                        **kwargs) -> float:
        """The detector column of the rotation axis estimated from the data (conjugate
        rays, :func:`leap.preprocessing.geometric_calibration.find_center_col`): ``data`` the line
        integrals (default: :meth:`attenuation`). Returns the column; use
        :meth:`with_center_col` to apply it.

        Memory stays bounded: the search compares conjugate rays along one detector row
        (``i_row``, default the row nearest the central ray), so only a band of rows
        around it is read (``margin`` rows each side, default 3 plus the rows a tilted
        detector's row crosses), and the search runs on the geometry cropped to that
        band: the same estimate as from the whole scan, from views × band × columns of
        data. (Parallel scans shorter than 225° compare all rows in LEAP; here those of
        the band.) ``data`` given as an array is searched whole, as before."""
        from ...preprocessing.geometric_calibration import find_center_col
        geo = self.system.geometry
        if data is not None:
            g = np.ascontiguousarray(np.asarray(data, dtype=np.float32))
            return float(find_center_col(geo, g, i_row=i_row, **kwargs)[0])
        first, stop, row = self._row_band(i_row, margin)
        band = np.ascontiguousarray(self.attenuation()[:, first:stop, :], dtype=np.float32)
        cropped = geo.cropped(first, stop, 0, geo.detector.num_cols)
        return float(find_center_col(cropped, band, i_row=row - first, **kwargs)[0])

    def _row_band(self, i_row, margin):
        """(first, stop, row): the rows a one-row conjugate-ray search reads."""
        d = self.system.geometry.detector
        nr = d.num_rows
        row = max(0, min(nr - 1, int(np.floor(0.5 + d.center_row)))) \
            if i_row is None or not 0 <= i_row <= nr - 1 else int(i_row)
        if margin is None:
            tilt = float(getattr(self.system.geometry, "tilt", 0.0) or 0.0)
            margin = 3 + int(np.ceil(abs(np.tan(tilt)) * d.num_cols))
        if isinstance(margin, bool) or int(margin) != margin or margin < 0:
            raise ValueError(f"margin must be a whole number of rows >= 0, got {margin!r}")
        return max(0, row - int(margin)), min(nr, row + int(margin) + 1), row

    def with_center_col(self, center_col: float) -> "Scan":
        """The scan with the detector's centre column set to ``center_col``."""
        g = self.system.geometry
        return self.with_geometry(g.with_changes(
            detector=g.detector.with_changes(center_col=float(center_col))))

    def find_tilt(self, data=None) -> float:
        """The detector's tilt about the optical axis (degrees, as
        :func:`leap.preprocessing.geometric_calibration.find_tilt` returns it) estimated
        from two views
        180° apart: ``data`` the line integrals, default :meth:`attenuation` of which only
        the views those two projections need are read
        (:func:`~leap.preprocessing.geometric_calibration.tilt_from_views`)."""
        from ...preprocessing.geometric_calibration import find_tilt, tilt_from_views
        if data is None:
            # Reads only the views the two conjugate projections need (lazily).
            return float(tilt_from_views(self.system.geometry, self.attenuation()))
        g = np.ascontiguousarray(np.asarray(data, dtype=np.float32))
        return float(find_tilt(self.system.geometry, g))


def _as_is(p, key):
    """The projections as stored (a module-level function: sources must pickle)."""
    return p


_PREPARED: "collections.OrderedDict[str, tuple]" = collections.OrderedDict()
_PREPARED_LOCK = threading.Lock()


class _Attenuation(Source):
    """:meth:`Scan.attenuation`: line integrals of a scan's raw projections, computed
    region by region as read. Flats and darks are read once (they are small); a dose
    normalisation reads the air region of the views asked for, whatever rows and
    columns are asked, so slabs of rows get the same values as whole views."""

    def __init__(self, scan: Scan, air_region, min_transmission: float, interpolate: bool,
                 bad_pixels=None, rings: int = 0):
        raw = scan.projections
        self.raw, self.shape, self.dtype = raw, tuple(raw.shape), np.dtype(np.float32)
        self.chunks = tuple(raw.chunks)
        # Flats and darks stay lazy sources here and are averaged on first use in each
        # process: the pickle a Dask task carries stays small (no frames in it).
        self.flat_src, self.dark_src = scan.flats, scan.darks
        self.positions = scan.flat_positions if interpolate else None
        if isinstance(bad_pixels, str):
            if bad_pixels != "auto":
                raise ValueError(f"bad_pixels must be None, a (rows, cols) map or 'auto', got "
                                 f"{bad_pixels!r}")
            if scan.flats is None:
                raise ValueError("bad_pixels='auto' needs flat frames; the scan has none")
        elif bad_pixels is not None:
            bad_pixels = np.asarray(bad_pixels)
            if bad_pixels.shape != self.shape[1:]:
                raise ValueError(f"bad_pixels must be a (rows, cols) = {self.shape[1:]} map, "
                                 f"got shape {bad_pixels.shape}")
            bad_pixels = np.packbits(bad_pixels.astype(bool) if bad_pixels.dtype.kind == "b"
                                     else bad_pixels == 1)
        self.bad_spec = bad_pixels
        if isinstance(rings, bool) or int(rings) != rings or rings < 0 or rings in (1, 2):
            raise ValueError(f"rings must be 0 (off) or a window of >= 3 columns, got {rings!r}")
        self.rings = int(rings)
        self.air = None if air_region is None else _region(air_region, self.shape[1:])
        self.min_transmission = min_transmission
        neg_log(np.ones(1, np.float32), min_transmission=min_transmission)   # checks it
        # Copies unpickled by Dask tasks share one per-process cache entry by this token.
        self._token = uuid.uuid4().hex

    def _prepared(self):
        """(flats, darks, bad map): the frames averaged (flats kept per frame when they
        are interpolated) and the bad-pixel map, once per process (a small LRU shared by
        every copy of this source: a worker running many of its tasks holds them once)."""
        with _PREPARED_LOCK:
            hit = _PREPARED.get(self._token)
            if hit is not None:
                _PREPARED.move_to_end(self._token)
                return hit
        flats = None if self.flat_src is None else np.asarray(self.flat_src, np.float32)
        darks = None if self.dark_src is None else np.asarray(self.dark_src, np.float32)
        bad = self.bad_spec
        if isinstance(bad, str):
            bad = bad_pixel_map(flats, darks)
        elif bad is not None:
            bad = np.unpackbits(bad, count=int(np.prod(self.shape[1:]))).astype(bool)
            bad = bad.reshape(self.shape[1:])
        if flats is not None and self.positions is None:
            flats = flats.mean(axis=0, keepdims=True)
        if darks is not None:
            darks = darks.mean(axis=0, keepdims=True)
        prepared = (flats, darks, bad if bad is not None and bad.any() else None)
        with _PREPARED_LOCK:
            _PREPARED[self._token] = prepared
            while len(_PREPARED) > 4:
                _PREPARED.popitem(last=False)
        return prepared

    @property
    def bad(self):
        return self._prepared()[2]

    def _transmission(self, views, rows, cols):
        raw = self.raw.read((views, rows, cols))
        flats, darks, _ = self._prepared()
        fl = None if flats is None else flats[:, rows, cols]
        dk = None if darks is None else darks[:, rows, cols]
        return flat_field(raw, fl, dk, flat_positions=self.positions,
                          views=np.arange(self.shape[0])[views])

    def _lines(self, views, rows, cols):
        """Line integrals of the views, rows and columns given as slices."""
        t = self._transmission(views, rows, cols)
        if self.air is not None:
            level = self._transmission(views, *self.air).mean(axis=(1, 2), dtype=np.float64)
            if np.any(level <= 0):
                v = int(np.arange(self.shape[0])[views][np.argmax(level <= 0)])
                raise ValueError(f"the air region has mean transmission <= 0 in view {v}: it "
                                 "must be a region the object never shadows")
            t /= level.astype(np.float32)[:, None, None]
        return neg_log(t, min_transmission=self.min_transmission, out=t)

    def read(self, key):
        key = normalize_key(key, self.shape)
        # Each axis as indices, read as one slice with the margins the corrections need
        # (a 3×3 median for bad pixels, half the stripe window along the columns).
        idx = [np.atleast_1d(np.arange(n)[k]) for k, n in zip(key, self.shape)]
        margin = (0, 1 if self.bad is not None else 0,
                  max(1 if self.bad is not None else 0, self.rings // 2))
        spans = []
        for ax, (i, n) in enumerate(zip(idx, self.shape)):
            if i.size == 0:
                return drop_int_axes(np.empty(tuple(len(j) for j in idx), np.float32), key)
            lo, hi = (0, n) if ax == 0 and self.rings else \
                (max(int(i.min()) - margin[ax], 0), min(int(i.max()) + 1 + margin[ax], n))
            spans.append((lo, hi))
        block = self._lines(*(slice(lo, hi) for lo, hi in spans))
        if self.bad is not None:
            (r0, r1), (c0, c1) = spans[1], spans[2]
            block = replace_bad_pixels(block, self.bad[r0:r1, c0:c1], 3, out=block)
        if self.rings:
            block = remove_stripes_sorting(block, self.rings, out=block)
        take = []
        for i, (lo, hi) in zip(idx, spans):
            i = i - lo
            whole = i.size == hi - lo and i[0] == 0 and np.all(np.diff(i) == 1)
            take.append(slice(None) if whole else i)
        if any(isinstance(t, np.ndarray) for t in take):      # (no copy when all is kept)
            block = block[np.ix_(*(np.arange(n)[t] for t, n in zip(take, block.shape)))]
        return drop_int_axes(block, key)
