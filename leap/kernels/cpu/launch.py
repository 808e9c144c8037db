"""CPU launchers: ``project(plan, f, g)`` and ``backproject(plan, g, f)``.

The one place where a :class:`~leap.kernels.plan.Plan` is unpacked into the Numba CPU
kernels' arguments (:mod:`leap.kernels.cpu.axial`; for parallel and fan beams whose
slices lie on detector rows, :mod:`leap.kernels.cpu.axial_direct`;
:mod:`leap.kernels.cpu.axial_slice`; :mod:`leap.kernels.cpu.modular`). Each is a kernel
of its own, so that a geometry compiles only what it runs (a cone beam's first call
does not compile the direct-row passes, and the other way round).
Arrays are float32, C-contiguous and already validated; the outputs are overwritten.

The projectors read the volume as z-contiguous columns (cumulative sums, or the values
for direct rows, :mod:`leap.kernels.cpu.columns`): a copy, made for the whole volume up to
:data:`WHOLE_VOLUME_BYTES` and beyond that a slab of rows at a time
(:func:`projection_slabs`), so that projecting a 2048³ volume needs an eighth of it
more, not a second 32 GiB. The back-projectors read the projections prepared once
(:func:`prepare_projections`: one projection set).

Modular beams whose modules are all vertical run on the axial kernels (view by view a
flat cone beam with its own distance and detector centre, each voxel weighted by its
own ray stretch: the modular model, column by column); other modular beams on the
general modular kernels.
"""
from __future__ import annotations

import numba
import numpy as np

from . import axial, axial_direct, axial_slice, columns, fan_slice, modular, threads
from . import filters as _filters
from ..footprints import PARALLEL

_NO_SLICE_WEIGHTS = np.zeros((0, 0))


def _column_weights(plan, stretch):
    """The ``slice_w`` argument of the cone family's kernels: None when nothing weights
    voxels within a column (the kernels are then compiled without that code: Numba drops
    a branch on ``slice_w is None`` before typing, 0.7 to 1.5 s less for a fresh
    environment's first cone projection and back-projection), the plan's slice weights,
    or an empty (0, 0) array with the modular stretch alone."""
    if plan.slice_weights is not None:
        return plan.slice_weights
    return _NO_SLICE_WEIGHTS if stretch else None


def _axial_form(plan):
    """(views, sdd, center_col, center_row, fov_r2, stretch) for the axial kernels, the
    three middle ones per view, (num_angles,) float64. A flying focal spot's z offsets
    (``views.focus``) move each view's detector centre: its rows are counted from the
    focal centre, ``oz`` below the source."""
    if plan.vertical is not None:
        vm = plan.vertical
        return vm.views, vm.sdd, vm.center_col, vm.center_row, np.inf, True
    views, d = plan.views, plan.geometry.detector
    n = views.source_z.shape[0]
    center_row = np.full(n, float(d.center_row))
    if views.focus is not None:
        center_row += views.focus[:, 2] / d.pixel_height
    center_col = (np.full(n, float(d.center_col)) if plan.center_cols is None
                  else plan.center_cols)
    return (views, np.full(n, float(views.sdd)), center_col, center_row, plan.fov_r2, False)


def _focus(views) -> np.ndarray:
    """The views' in-plane focus offsets (num_angles, 2) float64 (zeros without)."""
    if views.focus is None:
        return np.zeros((views.source_z.shape[0], 2))
    return np.ascontiguousarray(views.focus[:, :2])


def uses_axial_kernels(plan) -> bool:
    """Whether the plan runs on the axial kernels (whose back-projector reads the
    :func:`prepare_projections` of the projections) rather than the general modular
    ones."""
    return not (plan.modular and plan.vertical is None)


def direct_rows(plan) -> bool:
    """Whether the axial kernels run the plan on values rather than cumulative sums:
    every view has direct rows (voxel k covers exactly detector row k + shift,
    :func:`leap.kernels.cpu.axial_direct.all_direct`: parallel and fan beams with voxels as
    high as pixels and slices centred on rows) and nothing weights voxels within a
    column (slice weights, the modular stretch)."""
    views, sdd, _, center_row, _, stretch = _axial_form(plan)
    s = plan.scalars()
    return (plan.slice_weights is None and not stretch
            and axial_direct.all_direct(views.source_z, sdd, center_row, views.magnify_z,
                                        s.z0, s.voxel_height, s.pixel_height))


def _single_slice(plan, views, center_row, num_rows):
    """(ok, ks, js) of :func:`leap.kernels.cpu.axial_slice.slice_mode` for the plan."""
    v, s = plan.volume, plan.scalars()
    return axial_slice.slice_mode(views.col_dir, views.source_z, views.column_model,
                                  views.magnify_z, v.num_z, num_rows, s.z0, s.voxel_height,
                                  s.pixel_height, center_row, s.voxel_width, s.pixel_width)


def project(plan, f: np.ndarray, g: np.ndarray) -> np.ndarray:
    """g (num_angles, num_rows, num_cols) ← P f, f (num_z, num_y, num_x)."""
    v, s = plan.volume, plan.scalars()
    if not uses_axial_kernels(plan):
        geo = plan.geometry
        modular.project(f, g, geo.source_positions, geo.module_centers, geo.row_vectors,
                        geo.col_vectors, v.x0, v.y0, v.z0, v.voxel_width, v.voxel_height,
                        s.pixel_width, s.pixel_height)
        return g
    views, sdd, center_col, center_row, fov_r2, stretch = _axial_form(plan)
    ok, ks, js = _single_slice(plan, views, center_row, g.shape[1])
    if ok and views.column_model == PARALLEL:
        axial_slice.project(f, g, views.col_dir, ks, js, s.x0, s.y0, s.voxel_width,
                            s.pixel_width, center_col, fov_r2, plan.row_factor[js])
        return g
    direct = direct_rows(plan)
    if ok and direct:
        fan_slice.project(f, g, views.col_dir, views.source_xy, sdd, views.sod,
                          views.helical_pitch, views.column_model, ks, js, s.x0, s.y0,
                          s.voxel_width, s.pixel_width, center_col, fov_r2, plan.row_factor,
                          s.dist_sod)
        return g
    slabs = projection_slabs(f.shape)
    if direct:
        for iy0, iy1 in slabs:
            axial_direct.project(*columns.volume_z_columns(f, iy0, iy1), g, views.col_dir,
                                 views.source_xy, views.source_z, sdd, views.sod,
                                 views.helical_pitch, views.column_model, fov_r2, s.x0, s.y0,
                                 s.z0, s.voxel_width, s.voxel_height, s.pixel_width,
                                 s.pixel_height, center_col, center_row, plan.row_factor,
                                 s.dist_sod, iy0, iy0 > 0)
        return g
    sw = _column_weights(plan, stretch)
    for iy0, iy1 in slabs:
        threads.run(axial.project, *columns.volume_z_cumsum(f, iy0, iy1), g, views.col_dir,
                    views.source_xy, views.source_z, _focus(views), sdd, views.sod,
                    views.helical_pitch, views.column_model, views.magnify_z, fov_r2, s.x0,
                    s.y0, s.z0, s.voxel_width, s.voxel_height, s.pixel_width,
                    s.pixel_height, center_col, center_row, plan.row_factor, s.dist_sod, sw,
                    stretch, iy0, iy0 > 0, items=g.shape[0])
    return g


#: Volumes up to this size (bytes of float32) are projected from one z-contiguous copy;
#: larger ones a slab of rows at a time (:func:`projection_slabs`).
WHOLE_VOLUME_BYTES = 32 << 20
#: Slabs of rows a larger volume is projected in: the projector's copy of the volume
#: (cumulative sums or z-contiguous values, :mod:`leap.kernels.cpu.columns`) is then an
#: eighth of it (512³: 64 MiB instead of 512 MiB).
PROJECTION_SLABS = 8


def projection_slabs(shape) -> list[tuple[int, int]]:
    """Row ranges ``(iy0, iy1)`` of a volume of ``shape`` (nz, ny, nx) that
    :func:`project` takes in turn: the whole volume up to :data:`WHOLE_VOLUME_BYTES`,
    else :data:`PROJECTION_SLABS` slabs. After the first slab each view's sums are added
    to the float32 projections (one rounding per slab: within 1e-6 of the whole-volume
    result, not bit for bit)."""
    nz, ny, nx = shape
    if 4 * nz * ny * nx <= WHOLE_VOLUME_BYTES or ny < 2:
        return [(0, ny)]
    step = -(-ny // PROJECTION_SLABS)
    return [(iy0, min(ny, iy0 + step)) for iy0 in range(0, ny, step)]


def prepare_projections(plan, g: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """What the axial back-projector reads: g (a block of views or all) times the plan's
    row factor, rows contiguous and guard columns added, ``(n,) +
    prepared_shape(plan)[1:]`` float32; the values themselves where the plan has
    :func:`direct_rows` (:func:`leap.kernels.cpu.columns.projection_row_values`), else
    their row-cumulative sums (:func:`leap.kernels.cpu.columns.projection_row_cumsum`).
    Written into ``out`` if given."""
    if out is None:
        out = np.empty((g.shape[0],) + prepared_shape(plan)[1:], dtype=np.float32)
    if direct_rows(plan):
        return columns.projection_row_values(g, plan.row_factor, out)
    return columns.projection_row_cumsum(g, plan.row_factor, out)


def prepared_layout(plan) -> int:
    """How :func:`prepare_projections` lays out the plan's views, as
    :func:`leap.reconstruction.filters.filter_views` names it: ``VALUES`` (:func:`direct_rows`) or
    ``CUMSUM``."""
    return _filters.VALUES if direct_rows(plan) else _filters.CUMSUM


def prepared_shape(plan) -> tuple[int, int, int]:
    """Shape of :func:`prepare_projections` of all the plan's views."""
    na, nr, nc = plan.geometry.projection_shape
    rows = columns.column_length(nr, 4) if direct_rows(plan) else nr + 1
    return na, columns.GUARD_LO + nc + columns.GUARD_HI, rows


def backproject(plan, g: np.ndarray, f: np.ndarray) -> np.ndarray:
    """f (num_z, num_y, num_x) ← Pᵀ g (with FBP's weights when the plan has them)."""
    v, s = plan.volume, plan.scalars()
    if not uses_axial_kernels(plan):
        geo = plan.geometry
        modular.backproject(g, f, geo.source_positions, geo.module_centers, geo.row_vectors,
                            geo.col_vectors, v.x0, v.y0, v.z0, v.voxel_width, v.voxel_height,
                            s.pixel_width, s.pixel_height)
        return f
    return backproject_prepared(plan, prepare_projections(plan, g), f)


def backproject_prepared(plan, G: np.ndarray, f: np.ndarray, accumulate: bool = False
                         ) -> np.ndarray:
    """f ← Pᵀ g from G = :func:`prepare_projections` (g) (plans that
    :func:`uses_axial_kernels`); f ← f + Pᵀ g with ``accumulate`` (the cone family's
    kernel adds in place, the others through a temporary)."""
    expected = prepared_shape(plan)
    if G.shape != expected:
        raise ValueError(f"G must be prepare_projections(plan, g), shape {expected}; "
                         f"got {G.shape}")
    if accumulate and direct_rows(plan):
        f += backproject_prepared(plan, G, np.empty_like(f))
        return f
    s = plan.scalars()
    views, sdd, center_col, center_row, fov_r2, stretch = _axial_form(plan)
    ok, ks, js = _single_slice(plan, views, center_row, plan.geometry.projection_shape[1])
    # Single-slice plans have direct rows: G holds values.
    if ok and views.column_model == PARALLEL:
        axial_slice.backproject_slice(G, f, views.col_dir, ks, js, s.x0, s.y0, s.voxel_width,
                                      s.pixel_width, center_col, fov_r2)
        return f
    direct = direct_rows(plan)
    if ok and direct:
        fan_slice.backproject(G, f, views.col_dir, views.source_xy, sdd, views.sod,
                              views.helical_pitch, views.column_model, ks, js, s.x0, s.y0,
                              s.voxel_width, s.pixel_width, center_col, fov_r2, s.dist_sod)
        return f
    if direct:
        axial_direct.backproject(G, f, views.col_dir, views.source_xy, views.source_z, sdd,
                                 views.sod, views.helical_pitch, views.column_model, fov_r2,
                                 s.x0, s.y0, s.z0, s.voxel_width, s.voxel_height,
                                 s.pixel_width, s.pixel_height, center_col, center_row,
                                 s.dist_sod)
        return f
    sw = _column_weights(plan, stretch)
    threads.run(axial.backproject, G, f, views.col_dir, views.source_xy, views.source_z,
                _focus(views), sdd, views.sod, views.helical_pitch, views.column_model,
                views.magnify_z, fov_r2, s.x0, s.y0, s.z0, s.voxel_width, s.voxel_height,
                s.pixel_width, s.pixel_height, center_col, center_row, s.dist_sod, sw,
                stretch, bool(accumulate), numba.get_num_threads())
    return f
