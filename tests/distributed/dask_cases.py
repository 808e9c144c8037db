"""Small systems of every geometry for the Dask tests (set up the LEAP way, taken over
through ``tomographicModels().system``)."""
import numpy as np


def _model():
    from leap.compat import tomographicModels
    return tomographicModels()


def make_system(kind):
    """A small CTSystem of geometry ``kind``, its volume's slice count odd/prime so that
    slab counts rarely divide it."""
    ct = _model()
    A = ct.setAngleArray
    if kind == "parallel":
        ct.set_parallelbeam(40, 13, 32, 1, 1, 6.2, 15.5, A(40, 180))
    elif kind == "fan":
        ct.set_fanbeam(40, 11, 32, 1, 1, 5, 15.5, A(40, 360), 200, 300)
    elif kind == "cone":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 360), 100, 160)
    elif kind == "cone_curved":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 200), 100, 160)
        ct.set_curvedDetector()
    elif kind == "helical":
        ct.set_conebeam(240, 16, 32, 1, 1, 7.5, 15.5, A(240, 3 * 360), 100, 160)
        ct.set_helicalPitch(1.2)
    elif kind == "modular":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 15.5, A(40, 360), 100, 160)
    elif kind == "cone_offset":
        ct.set_conebeam(40, 23, 32, 1, 1, 11.3, 9.5, A(40, 360), 100, 160)
        ct.set_offsetScan(True)
    else:
        raise ValueError(kind)
    ct.set_default_volume()
    if kind == "modular":
        ct.convert_to_modularbeam()
    return ct.system


GEOMETRIES = ("parallel", "fan", "cone", "cone_curved", "helical", "modular", "cone_offset")


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - b) / np.linalg.norm(b))
