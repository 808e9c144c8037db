"""Sample calls of every ``torch.ops.leap.*`` op, for :func:`torch.library.opcheck`.

:func:`opcheck_samples` returns ``(op, args, kwargs)`` triples on small CPU problems in
float32 and float64, with and without ``requires_grad`` and with a batch dimension,
so that one loop checks every registration (schema, fake implementation, autograd,
AOT dispatch with dynamic shapes)::

    for op, args, kwargs in leap.torch.opcheck_samples():
        torch.library.opcheck(op, args, kwargs)
"""
from __future__ import annotations

import numpy as np
import torch

from ..geometry import ConeBeam, Detector, ParallelBeam, Volume
from ..system import CTSystem
from ._systems import register_system
from .ops import LINEAR_OPS, MODULAR_OPS, MODULAR_VJP, volume_list

__all__ = ["opcheck_samples"]

#: The sample systems, held so that their registry keys stay valid.
_SYSTEMS: list = []


def _systems():
    if not _SYSTEMS:
        det = Detector(num_rows=3, num_cols=7, pixel_height=1.0, pixel_width=1.0,
                       center_row=1.2, center_col=3.3)
        angles = np.linspace(0.0, np.pi, 5, endpoint=False)
        vol = Volume(num_x=6, num_y=6, num_z=3, voxel_width=1.0, voxel_height=1.0)
        _SYSTEMS.append(CTSystem(geometry=ParallelBeam(detector=det, angles=angles),
                                 volume=vol))
        cone = ConeBeam(detector=det, angles=2 * angles, sod=30.0, sdd=50.0)
        _SYSTEMS.append(CTSystem(geometry=cone, volume=vol.with_changes(voxel_width=0.6,
                                                                        voxel_height=0.6)))
    return _SYSTEMS


def _modular_args(dtype):
    """A small tilted modular beam (not vertical modules: the general kernels)."""
    system = _systems()[1]
    geo = system.geometry.to_modular()
    t = np.deg2rad(4.0)
    rot = np.array([[1, 0, 0], [0, np.cos(t), -np.sin(t)], [0, np.sin(t), np.cos(t)]])
    tensors = [torch.tensor(a @ rot.T if i >= 2 else a, dtype=dtype)
               for i, a in enumerate((geo.source_positions, geo.module_centers,
                                      geo.row_vectors, geo.col_vectors))]
    d = geo.detector
    detector = [float(d.num_rows), float(d.num_cols), d.pixel_height, d.pixel_width]
    return system, tensors, detector, volume_list(system.volume)


def opcheck_samples():
    """``[(op, args, kwargs), ...]`` covering every registered ``torch.ops.leap`` op on
    the CPU: the four linear ops on a parallel and a cone beam, the modular ops and their
    geometry VJP, and the polychromatic log-transmission; float32 and float64, with and
    without gradients, with and without a batch dimension. Deterministic (seeded)."""
    gen = torch.Generator().manual_seed(0)

    def rand(shape, dtype, grad=False):
        return torch.rand(shape, generator=gen, dtype=torch.float64).to(dtype) \
            .requires_grad_(grad)

    samples = []
    for system in _systems():
        key = register_system(system)
        for kind, op in LINEAR_OPS.items():
            shape = system.volume_shape if kind in ("project", "fbp_adjoint") \
                else system.projection_shape
            for dtype, batch, grad in ((torch.float32, (), False),
                                       (torch.float64, (2,), True)):
                samples.append((op, (rand((*batch, *shape), dtype, grad), key), {}))
    for dtype in (torch.float32, torch.float64):
        system, tensors, detector, volume = _modular_args(dtype)
        grad = dtype == torch.float64
        geometry = [t.clone().requires_grad_(grad) for t in tensors]
        f = rand((2, *system.volume_shape), dtype, grad)
        g = rand((2, len(tensors[0]), *system.projection_shape[1:]), dtype, grad)
        samples.append((MODULAR_OPS["project"], (f, *geometry, detector, volume), {}))
        samples.append((MODULAR_OPS["backproject"], (g, *geometry, detector, volume), {}))
        samples.append((MODULAR_VJP, (f.detach(), g.detach(), *tensors, detector, volume),
                        {}))
    log_transmission = torch.ops.leap.log_transmission.default
    for dtype, log_mode in ((torch.float32, False), (torch.float64, True)):
        grad = dtype == torch.float64
        L = rand((2, 2, 9), dtype, grad) * 3
        mu = rand((2, 4), dtype, grad)
        theta = rand((4,), dtype) + 0.5
        theta = (torch.log(theta) if log_mode else theta).requires_grad_(grad)
        samples.append((log_transmission, (L, mu, theta, log_mode), {}))
    # OpOverloads throughout (``torch.ops.leap.<name>.default``), as opcheck reports them
    return [(getattr(op, "_opoverload", op), args, kwargs) for op, args, kwargs in samples]
