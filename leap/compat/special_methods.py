"""Special forward models of the LEAP facade: the attenuated Radon transform
(``set_attenuationMap``) and rotationally symmetric objects (``set_axisOfSymmetry``);
and two special-purpose methods, back-projection filtration (``BPF``,
:mod:`leap.reconstruction.bpf`)
and dictionary denoising (``DictionaryDenoising``, :mod:`leap.algorithms.dictionary_denoising`).

While one is set, ``project``/``backproject``/``FBP`` route to
:mod:`leap.reconstruction.special_models`.
State (set in ``reset``): ``_mu_map`` (a voxelised map or None), ``_mu_coeff`` and
``_mu_radius`` (the cylinder), ``_axis_of_symmetry`` (degrees, or None).
"""
from __future__ import annotations

import numpy as np

from ..geometry._checks import finite_float as _as_float

#: what LEAP reports as the axis of symmetry when none is set
_NO_AXIS = 90.0


def _host_view(x, name):
    """``(a, write_back)``: a NumPy array with the contents of ``x`` (the same memory for
    NumPy arrays and CPU torch tensors) and a function copying ``a`` back into ``x``
    (a no-op when they share memory). CUDA tensors and CuPy arrays go through the host."""
    if isinstance(x, np.ndarray):
        return x, lambda: None
    if type(x).__module__.startswith("torch"):
        if not x.is_cuda:
            return x.detach().numpy(), lambda: None
        import torch
        a = x.detach().cpu().numpy()
        return a, lambda: x.copy_(torch.from_numpy(a))
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy
        a = cupy.asnumpy(x)
        return a, lambda: x.__setitem__(Ellipsis, cupy.asarray(a))
    raise TypeError(f"{name} must be a NumPy array, a torch tensor or a CuPy array, got "
                    f"{type(x).__name__}")


class SpecialModelsMixin:
    """Attenuated-Radon and symmetric-object methods of :class:`leap.compat.model.tomographicModels`."""

    # ----------------------------------------------------- attenuated Radon transform
    def set_attenuationMap(self, mu):
        """Voxelised attenuation map for the attenuated Radon transform (parallel beam).

        mu : (numZ, numY, numX) float32 array, attenuation in 1/mm. As in LEAP the array
        is kept by reference (not copied) when it is already float32 C-contiguous, so
        later changes to it are seen. Replaces a cylindrical map.
        """
        from ..devices import arrays
        if arrays.is_cuda_array(mu) or hasattr(mu, "detach"):
            if hasattr(mu, "detach") and not arrays.is_cuda_array(mu):
                mu = mu.detach().numpy()
            else:
                raise NotImplementedError("the attenuated Radon transform runs on the CPU only: "
                                          "pass the attenuation map as a NumPy array")
        mu = np.ascontiguousarray(mu, dtype=np.float32)
        shape = self.get_volume_dim()
        if mu.shape != tuple(shape):
            raise ValueError(f"the attenuation map must have the volume's shape {tuple(shape)} "
                             f"(numZ, numY, numX), got {mu.shape}")
        if not np.all(np.isfinite(mu)):
            raise ValueError("the attenuation map must be finite (found NaN or inf)")
        self._mu_map, self._mu_coeff, self._mu_radius = mu, 0.0, 0.0
        return True

    def set_cylindircalAttenuationMap(self, c, R):
        """Uniform cylinder of attenuation ``c`` (1/mm) and radius ``R`` (mm) about the z axis.

        As in LEAP, c = 0 or R ≤ 0 clears the map (and returns False); the object must lie
        inside the cylinder (voxels outside it get weight 0).
        """
        c, R = _as_float("c", c), _as_float("R", R)
        if c == 0.0 or R <= 0.0:
            self.clear_attenuationMap()
            return False
        self._mu_map, self._mu_coeff, self._mu_radius = None, c, R
        return True

    set_cylindricalAttenuationMap = set_cylindircalAttenuationMap

    def clear_attenuationMap(self):
        """Forget the attenuation map: back to the ordinary X-ray transform."""
        self._mu_map, self._mu_coeff, self._mu_radius = None, 0.0, 0.0
        return True

    def muSpecified(self):
        """True if a voxelised map or a cylinder (c ≠ 0, R > 0) is set."""
        return self._mu_map is not None or (self._mu_coeff != 0.0 and self._mu_radius > 0.0)

    def flipAttenuationMapSign(self):
        """μ → −μ. As in LEAP a voxelised map is negated in place (the caller's array)."""
        if self._mu_map is not None:
            np.negative(self._mu_map, out=self._mu_map)
        self._mu_coeff = -self._mu_coeff
        return True

    def _attenuation(self):
        from ..reconstruction.special_models import AttenuationMap
        if self._mu_map is not None:
            return AttenuationMap(mu=self._mu_map)
        return AttenuationMap(coeff=self._mu_coeff, radius=self._mu_radius)

    # ------------------------------------------------------ symmetric objects
    def set_axisOfSymmetry(self, val):
        """Model the object as rotationally symmetric about an axis rotated ``val`` degrees
        (``|val| ≤ 30``) from +z about the detector-row (column-coordinate) direction, its
        top towards the detector for val > 0.

        Needs one projection angle and a parallel or cone beam. The volume is then a
        (numZ, numY, 1) array: y is the signed radius (numY even; y < 0 is the half of
        the object left of the axis). Call :meth:`set_default_volume` after this.
        """
        val = _as_float("val", val)
        if abs(val) > 30.0:
            raise ValueError(f"the axis of symmetry must be within ±30 degrees of +z, got {val}; "
                             "use clear_axisOfSymmetry to turn the model off")
        if self._geom is not None:
            g = self._geom
            if g["geometry"] not in ("parallel", "cone") or g["numAngles"] != 1:
                raise ValueError("symmetric objects need a parallel- or cone-beam geometry with "
                                 f"exactly one angle, got {g['geometry']} with "
                                 f"numAngles = {g['numAngles']}")
        self._axis_of_symmetry = val
        return True

    def clear_axisOfSymmetry(self):
        """Back to voxelised (non-symmetric) volumes."""
        self._axis_of_symmetry = None
        return True

    def get_axisOfSymmetry(self):
        """The axis tilt in degrees (90 when none is set, as in LEAP)."""
        return _NO_AXIS if self._axis_of_symmetry is None else self._axis_of_symmetry

    def _symmetric(self):
        return self._axis_of_symmetry is not None

    def _symmetric_default_volume(self):
        """LEAP's default volume for symmetric objects: numX = 1, numY even, no x/y offsets."""
        v = self._need_volume()
        numY = v["numY"] + v["numY"] % 2
        return self.set_volume(1, numY, v["numZ"], v["voxelWidth"], v["voxelHeight"],
                               0.0, 0.0, v["offsetZ"])

    def synthesize_symmetry(self, f_radial):
        """The 3-D volume (numZ, numY, numY) float32 of the symmetric object ``f_radial``
        (numZ, numY, 1); x and y samples are the volume's y samples."""
        from ..reconstruction.special_models import synthesize_symmetry
        if not self._symmetric():
            raise RuntimeError("synthesize_symmetry needs a symmetric-object model: call "
                               "set_axisOfSymmetry (and set_default_volume) first")
        return synthesize_symmetry(self.core_volume(), f_radial, self._axis_of_symmetry)

    # ------------------------------------------------------ routing (project/FBP)
    def _special_model(self):
        """'symmetric', 'attenuated' or None: which special model project/FBP use."""
        if self._symmetric():
            if self.muSpecified():
                raise ValueError("an attenuation map and an axis of symmetry are both set; "
                                 "clear one (clear_attenuationMap or clear_axisOfSymmetry)")
            return "symmetric"
        return "attenuated" if self.muSpecified() else None

    # ------------------------------------------------- back-projection filtration
    def BPF(self, g, f=None):
        """Back-projection filtration reconstruction of parallel-beam data ``g`` into ``f``
        (allocated when None); returns ``f``.

        g : (numAngles, numRows, numCols) projections; f : (numZ, numY, numX), filled
        with attenuation values (1/mm), zero outside the field of view, as FBP.
        The projections are back-projected (each line counted once) and every z-slice
        is then ramp filtered in 2-D (see :mod:`leap.reconstruction.bpf`: the
        back-projection is taken
        on a grid wider than the volume so that the filter sees its tails). As in LEAP,
        only parallel-beam geometries are supported (other geometries raise ValueError);
        offset-detector scans (``set_offsetScan(True)``) are weighted as FBP weights them.
        NumPy arrays or torch tensors (CUDA ones go through the host).
        """
        from ..reconstruction.bpf import bpf
        if self._need_geometry()["geometry"] != "parallel":
            raise ValueError("BPF reconstructs parallel-beam data only (as in LEAP), the "
                             f"geometry is {self.get_geometry()}; use FBP")
        if self._special_model():
            raise ValueError("BPF does not model an attenuation map or a symmetric object: "
                             "clear it (clear_attenuationMap / clear_axisOfSymmetry) or use FBP")
        if f is None:
            f = self.allocate_volume(astensor=type(g).__module__.startswith("torch"))
            if type(g).__module__.startswith("torch") and g.is_cuda:
                f = f.to(g.device)
        g_host, _ = _host_view(g, "g")
        f_host, write_back = _host_view(f, "f")
        bpf(self.core_geometry(), self.core_volume(), g_host, out=f_host,
            fov_radius=self._fov_radius(), offset_scan=bool(self._offset_scan))
        write_back()
        return f

    # ---------------------------------------------------------- dictionary denoising
    def DictionaryDenoising(self, f, dictionary, sparsityThreshold=8, epsilon=0.0):
        """Denoise ``f`` in place by a sparse representation of its patches over a
        dictionary (orthogonal matching pursuit on every overlapping patch, averaged);
        returns ``f``.

        f : any 3-D (or 2-D) float32 array, e.g. a volume (numZ, numY, numX); NumPy or
            torch (CUDA tensors go through the host). It need not match the geometry.
        dictionary : (numElements, N_1, N_2, N_3) array of patches, axes in ``f``'s order
            (N_1 = 1: 2-D patches within each slice); see :mod:`leap.compat.dictionaries`
            (upstream's ``generateDictionary``) for ready-made ones.
        sparsityThreshold : int, the most dictionary elements used per patch
            (1..numElements).
        epsilon : float ≥ 0, relative residual: a patch x is represented once
            ‖x − approximation‖² < epsilon·‖x‖² (larger denoises more; 0: always
            sparsityThreshold elements).

        See :func:`leap.algorithms.dictionary_denoising.dictionary_denoise` for the algorithm.
        """
        from ..algorithms.dictionary_denoising import dictionary_denoise
        host, write_back = _host_view(f, "f")
        dictionary_denoise(host, dictionary, sparsityThreshold, epsilon)
        write_back()
        return f
