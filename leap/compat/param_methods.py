"""Parameter printing and LEAP parameter files: ``print_parameters``, ``save_param``,
``load_param``, ``parse_param_dic``.
"""
from __future__ import annotations

import os

import numpy as np



class ParameterMixin:
    """Parameter printing and parameter-file methods of
    :class:`leap.compat.model.tomographicModels`."""

    # ------------------------------------------------------------ printing
    def print_parameters(self):
        """Print the geometry and volume, in LEAP's layout."""
        print(self._parameters_text())

    printParameters = print_parameters
    print_param = print_parameters

    def _parameters_text(self):
        lines = [""]
        g = self._geom
        if g is not None:
            kind = g["geometry"]
            title = {"parallel": "Parallel-Beam", "fan": "Fan-Beam", "cone": "Cone-Beam",
                     "modular": "Modular-Beam", "cone_parallel": "Cone-Parallel"}[kind]
            curved = " (curved detector)" if g["detectorType"] == "curved" else ""
            lines.append(f"======== CT {title} Geometry{curved} ========")
            lines.append(f"number of angles: {g['numAngles']}")
            lines.append(f"number of detector elements (rows, cols): {g['numRows']} x {g['numCols']}")
            if g["numAngles"] >= 2 and kind != "modular":
                a = np.asarray(g["phis"], dtype=np.float64)
                sign = "-" if a[-1] < a[0] else ""
                lines.append(f"angular range: {sign}{self.get_angularRange():f} degrees")
            lines.append(f"detector pixel size: {g['pixelHeight']:f} mm x {g['pixelWidth']:f} mm")
            if self._axis_of_symmetry is not None:
                lines.append(f"axis of symmetry = {self._axis_of_symmetry:f} degrees")
            if kind != "modular":
                lines.append(f"center detector pixel: {g['centerRow']:f}, {g['centerCol']:f}")
            if kind in ("fan", "cone", "cone_parallel"):
                lines.append(f"sod = {g['sod']:f} mm")
                lines.append(f"sdd = {g['sdd']:f} mm")
                if g["tau"] != 0.0:
                    lines.append(f"tau = {g['tau']:f} mm")
            if kind == "modular":
                sod, sdd = self.core_geometry().mean_distances()
                lines.append(f"mean sod = {sod:f} mm")
                lines.append(f"mean sdd = {sdd:f} mm")
            if kind == "cone":
                lines.append(f"tiltAngle = {g['tiltAngle']:f} degrees")
            if kind in ("cone", "cone_parallel"):
                if g["helicalPitch"] != 0.0:
                    lines.append(f"helicalPitch = {g['helicalPitch']:f} (mm/radian)")
                    lines.append(f"normalized helicalPitch = {self.get_normalizedHelicalPitch():f}")
            lines.append("")
        if self._vol is not None:
            v = self._vol
            lines.append("======== CT Volume ========")
            lines.append(f"number of voxels (x, y, z): {v['numX']} x {v['numY']} x {v['numZ']}")
            lines.append(f"voxel size: {v['voxelWidth']:f} mm x {v['voxelWidth']:f} mm x "
                         f"{v['voxelHeight']:f} mm")
            if any(v[k] != 0.0 for k in ("offsetX", "offsetY", "offsetZ")):
                lines.append(f"volume offset: {v['offsetX']:f} mm, {v['offsetY']:f} mm, "
                             f"{v['offsetZ']:f} mm")
            if g is not None:
                cv = self.core_volume()
                ext = []
                for c0, n, d in ((cv.x0, cv.num_x, cv.voxel_width), (cv.y0, cv.num_y, cv.voxel_width),
                                 (cv.z0, cv.num_z, cv.voxel_height)):
                    ext.append(f"[{c0 - 0.5 * d:f}, {c0 + (n - 0.5) * d:f}]")
                lines.append("FOV: " + " x ".join(ext))
            lines.append("")
        lines.append("======== Processing Settings ========")
        if self._gpus == [-1]:
            lines.append(f"{os.cpu_count()}-core CPU processing")
        else:
            lines.append(f"GPU processing on device(s) {self._gpus}")
        lines.append("")
        return "\n".join(lines)

    # ------------------------------------------------------------ param files
    def save_param(self, fileName):
        """Write the geometry and volume to a LEAP parameter file."""
        from ..io import write_param_file
        d = {}
        if self._vol is not None:
            d.update(self._vol)
        g = self._need_geometry()
        d.update({k: v for k, v in g.items() if k not in ("phis",)})
        if g["geometry"] != "modular":
            d["phis"] = np.asarray(g["phis"], dtype=np.float64)
            d["angularRange"] = self.get_angularRange() * (1 if g["phis"][-1] >= g["phis"][0] else -1)
            d.setdefault("tau", 0.0)
            d.setdefault("tiltAngle", 0.0)
            d.setdefault("helicalPitch", 0.0)
            d.setdefault("sod", 0.0)
            d.setdefault("sdd", 0.0)
        else:
            d["sod"], d["sdd"] = self.core_geometry().mean_distances()
        if self._offset_scan:
            d["offsetScan"] = True
        if self._axis_of_symmetry is not None:
            d["axisOfSymmetry"] = self._axis_of_symmetry
        if self._mu_coeff != 0.0 and self._mu_radius > 0.0:   # a voxelised map is not saved
            d["muCoeff"], d["muRadius"] = self._mu_coeff, self._mu_radius
        write_param_file(fileName, d)
        return True

    save_parameters = save_param

    def load_param(self, fileName, param_type=0):
        """Read LEAP parameters (geometry and, when present, volume): from a parameter
        file (``param_type`` 0; current or legacy key names) or, with ``param_type`` 1,
        from a dict of a file's keys and values (:meth:`parse_param_dic`)."""
        from ..io import read_param_dict, read_param_file
        if param_type not in (0, 1):
            raise ValueError(f"param_type must be 0 (a parameter file) or 1 (a dict of its "
                             f"keys and values), got {param_type!r}")
        d = read_param_file(fileName) if param_type == 0 else read_param_dict(fileName)
        # All or nothing: a value a setter refuses (an offset out of range, say) leaves
        # the object as it was, not with the file's geometry and the former volume.
        with self._all_or_nothing():
            kind = d["geometry"]
            common = (d["numAngles"], d["numRows"], d["numCols"], d["pixelHeight"], d["pixelWidth"])
            if kind == "modular":
                self.set_modularbeam(*common, d["sourcePositions"], d["moduleCenters"],
                                     d["rowVectors"], d["colVectors"])
            else:
                centers = (d["centerRow"], d["centerCol"], d["phis"])
                if kind == "parallel":
                    self.set_parallelbeam(*common, *centers)
                elif kind == "fan":
                    self.set_fanbeam(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0))
                elif kind == "cone":
                    self.set_conebeam(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0),
                                      d.get("helicalPitch", 0.0), d.get("tiltAngle", 0.0))
                    if d.get("detectorType", "flat") == "curved":
                        self.set_curvedDetector()
                elif kind == "cone_parallel":
                    self.set_coneparallel(*common, *centers, d["sod"], d["sdd"], d.get("tau", 0.0),
                                          d.get("helicalPitch", 0.0))
                else:
                    raise ValueError(f"{fileName}: geometry '{kind}' is not supported by leap "
                                     "(supported: parallel, fan, cone, cone_parallel, modular)")
            self._offset_scan = bool(d.get("offsetScan", False))
            if "axisOfSymmetry" in d:
                self.set_axisOfSymmetry(d["axisOfSymmetry"])
            if d.get("muCoeff", 0.0) != 0.0 and d.get("muRadius", 0.0) > 0.0:
                self.set_cylindircalAttenuationMap(d["muCoeff"], d["muRadius"])
            if all(k in d for k in ("numX", "numY", "numZ", "voxelWidth", "voxelHeight")):
                self.set_volume(d["numX"], d["numY"], d["numZ"], d["voxelWidth"], d["voxelHeight"],
                                d.get("offsetX", 0.0), d.get("offsetY", 0.0), d.get("offsetZ", 0.0))
        return True

    load_parameters = load_param
    load_param_legacy = load_param   # the reader takes LEAP's legacy key names too

    def parse_param_dic(self, param_fn):
        """A parameter file's ``key = value`` lines as a dict (numbers as floats, lists
        and names as strings), LEAP's format for ``load_param(d, param_type=1)``."""
        from ..io.params import read_param_entries
        return read_param_entries(param_fn)
