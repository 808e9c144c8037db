"""leap.torch's Projector takes tomographicModels' keyword names (and upstream
leaptorch's) and then computes what the facade computes. Issue 11, item 15."""
import inspect

import numpy as np
import pytest

from leap.compat.model import tomographicModels


def _torch():
    return pytest.importorskip("torch")


def _modular_arrays(n=4):
    ct = tomographicModels()
    ct.set_conebeam(n, 3, 6, 1.0, 1.0, 1.0, 2.5, ct.setAngleArray(n, 360.0), 50.0, 100.0)
    ct.convert_to_modularbeam()
    return (ct.get_sourcePositions(), ct.get_moduleCenters(), ct.get_rowVectors(),
            ct.get_colVectors())


def test_projector_setters_take_tomographicModels_keyword_names():
    """Every Projector.set_* that tomographicModels also has accepts all of
    tomographicModels' parameter names."""
    _torch()
    from leap.torch import Projector
    checked = []
    for name, meth in inspect.getmembers(Projector, inspect.isfunction):
        if not name.startswith("set_") or not hasattr(tomographicModels, name):
            continue
        theirs = list(inspect.signature(getattr(tomographicModels, name)).parameters)[1:]
        ours = inspect.signature(meth).parameters
        missing = [p for p in theirs if p not in ours]
        assert not missing, f"Projector.{name} lacks tomographicModels' keyword(s) {missing}"
        checked.append(name)
    for name in ("set_parallelbeam", "set_fanbeam", "set_conebeam", "set_coneparallel",
                 "set_modularbeam", "set_volume", "set_default_volume", "set_gpu", "set_gpus"):
        assert name in checked


def test_projector_setters_called_with_keywords_match_the_facade(tmp_path):
    _torch()
    from leap.torch import Projector
    phis = np.array([0.0, 60.0, 120.0], dtype=np.float32)
    common = dict(numAngles=3, numRows=2, numCols=8, pixelHeight=1.0, pixelWidth=1.0,
                  centerRow=0.5, centerCol=3.5, phis=phis)
    cases = [
        ("set_parallelbeam", common),
        ("set_fanbeam", dict(common, sod=100.0, sdd=200.0, tau=1.5)),
        ("set_conebeam", dict(common, sod=100.0, sdd=200.0, tau=1.5, helicalPitch=0.5,
                              tiltAngle=2.0)),
        ("set_coneparallel", dict(common, sod=100.0, sdd=200.0, tau=0.0, helicalPitch=0.0)),
    ]
    src, mc, rv, cv = _modular_arrays(3)
    cases.append(("set_modularbeam", dict(numAngles=3, numRows=3, numCols=6, pixelHeight=1.0,
                                          pixelWidth=1.0, sourcePositions=src,
                                          moduleCenters=mc, rowVectors=rv, colVectors=cv)))
    for name, kw in cases:
        p, ref = Projector(), tomographicModels()
        getattr(p, name)(**kw)
        getattr(ref, name)(**kw)
        assert p.leapct._parameters_text() == ref._parameters_text(), name
        p.set_volume(numX=6, numY=5, numZ=3, voxelWidth=0.5, voxelHeight=0.75, offsetX=0.25,
                     offsetY=-0.5, offsetZ=0.125)
        ref.set_volume(numX=6, numY=5, numZ=3, voxelWidth=0.5, voxelHeight=0.75,
                       offsetX=0.25, offsetY=-0.5, offsetZ=0.125)
        assert p.leapct._parameters_text() == ref._parameters_text(), name
        p.set_default_volume(scale=2.0)
        ref.set_default_volume(scale=2.0)
        assert p.get_volume_dim() == ref.get_volume_dim(), name
    # conebeam's tilt really arrives
    p = Projector()
    p.set_conebeam(**dict(common, sod=100.0, sdd=200.0, tiltAngle=2.0))
    assert p.leapct.get_tiltAngle() == 2.0
    # set_volume's sizes default to the nominal ones, as tomographicModels'
    p.set_volume(numX=4, numY=4, numZ=2)
    assert p.leapct.get_voxelWidth() == pytest.approx(0.5)
    p.set_gpu(which=-1)
    p.set_gpus(listOfGPUs=[-1])
    p.set_gpus(listofgpus=[-1])        # upstream leaptorch's name still works
    p.set_GPUs(listOfGPUs=[-1])
    fn = tmp_path / "g.param"
    p.save_param(fileName=str(fn))
    q = Projector()
    q.load_param(fileName=str(fn))
    assert q.leapct.get_tiltAngle() == 2.0 and q.get_volume_dim() == p.get_volume_dim()
    q2 = Projector()
    q2.load_param(param_fn=str(fn))
    assert q2.get_projection_dim() == p.get_projection_dim()


def test_projector_set_modularbeam_keywords_project_like_the_facade():
    torch = _torch()
    from leap.torch import Projector
    src, mc, rv, cv = _modular_arrays(4)
    ref = tomographicModels()
    ref.set_modularbeam(4, 3, 6, 1.0, 1.0, src, mc, rv, cv)
    ref.set_default_volume()
    f = np.random.default_rng(3).random(ref.get_volume_dim(), dtype=np.float32)
    g_ref = ref.project(ref.allocate_projections(), f)
    for kw in (dict(moduleCenters=mc, rowVectors=rv, colVectors=cv),
               dict(detectorCenters=mc, rowVec=rv, colVec=cv)):     # upstream leaptorch's
        p = Projector()
        p.set_modularbeam(numAngles=4, numRows=3, numCols=6, pixelHeight=1.0, pixelWidth=1.0,
                          sourcePositions=torch.from_numpy(src),
                          **{k: torch.from_numpy(v) for k, v in kw.items()})
        p.set_default_volume()
        g = p(torch.from_numpy(f)[None])[0].numpy()
        np.testing.assert_allclose(g, g_ref, rtol=1e-6, atol=1e-6)
    p = Projector()
    with pytest.raises(TypeError, match="moduleCenters.*detectorCenters"):
        p.set_modularbeam(4, 3, 6, 1.0, 1.0, src, mc, rv, cv, detectorCenters=mc)
    with pytest.raises(TypeError, match="missing argument 'rowVectors'"):
        p.set_modularbeam(4, 3, 6, 1.0, 1.0, src, moduleCenters=mc, colVectors=cv)
