"""The geometry vector–Jacobian product of a modular beam given as tensors: the body of
``torch.ops.leap.modular_geometry_vjp`` (:mod:`leap.torch.ops`), and the tensor-to-array
helpers that the geometry-differentiable layers share."""
from __future__ import annotations

import numpy as np
import torch

from ..kernels.cpu import axial_geometry_vjp
from ..kernels.cpu.launch import uses_axial_kernels
from ..kernels.cpu.modular_geometry_vjp import geometry_vjp
from ..kernels.plan import make_plan


def _as_array(t):
    return np.ascontiguousarray(t.detach().to("cpu", torch.float64).numpy())


def _as_samples(x, shape):
    """float32 contiguous host array (batch, *shape) of the tensor x."""
    x = x.detach().to("cpu", torch.float32).contiguous()
    return x.reshape(-1, *shape).numpy()


def _normalisation_vjp(raw, grad):
    """Gradient with respect to the raw vectors v of a gradient with respect to
    v/|v|: (I − û ûᵀ) grad / |v|."""
    norm = np.linalg.norm(raw, axis=1, keepdims=True)
    u = raw / norm
    return (grad - u * np.sum(u * grad, axis=1, keepdims=True)) / norm


def _cuda_samples(x, shape):
    """float32 contiguous CUDA tensor (batch, *shape) of the CUDA tensor x."""
    return x.detach().to(torch.float32).contiguous().reshape(-1, *shape)


def geometry_grads(system, f, gbar, tensors):
    """The geometry VJP of the modular beam ``system`` built from the four ``tensors``
    (sources, centres, row and column vectors as given, before normalisation), with the
    volume ``f`` and upstream projections ``gbar`` (any batch, summed over): four
    tensors like ``tensors``. The CUDA kernel when f and gbar are CUDA tensors, else the
    CPU kernel, column-wise (:mod:`leap.kernels.cpu.axial_geometry_vjp`) where the CPU
    projectors run the geometry on the axial kernels (vertical modules), else per voxel.
    The body of ``torch.ops.leap.modular_geometry_vjp``."""
    geo, vol, det = system.geometry, system.volume, system.geometry.detector
    rest = (geo.source_positions, geo.module_centers, geo.row_vectors, geo.col_vectors,
            vol.x0, vol.y0, vol.z0, vol.voxel_width, vol.voxel_height, det.pixel_width,
            det.pixel_height)
    if f.is_cuda and gbar.is_cuda and f.device == gbar.device:
        from ..devices.arrays import as_numba, caller_stream, device_context, require_cuda
        require_cuda()
        from ..kernels.cuda.modular_geometry_vjp import geometry_vjp as cuda_geometry_vjp
        fs = _cuda_samples(f, vol.shape)
        gs = _cuda_samples(gbar, geo.projection_shape)
        with device_context(fs.device.index):
            grads = list(cuda_geometry_vjp(as_numba(fs), as_numba(gs), *rest,
                                           stream=caller_stream(fs)))
    else:
        # The projectors' own test: vertical modules run on the axial kernels, and so
        # does their gradient (same model, a voxel column at a time).
        vjp = (axial_geometry_vjp.geometry_vjp if uses_axial_kernels(make_plan(geo, vol))
               else geometry_vjp)
        grads = list(vjp(_as_samples(f, vol.shape), _as_samples(gbar, geo.projection_shape),
                         *rest))
    grads[2] = _normalisation_vjp(_as_array(tensors[2]), grads[2])
    grads[3] = _normalisation_vjp(_as_array(tensors[3]), grads[3])
    return tuple(torch.as_tensor(g, dtype=t.dtype, device=t.device)
                 for g, t in zip(grads, tensors))
