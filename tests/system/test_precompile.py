"""``python -m leap.kernels.precompile`` fills Numba's cache with what a geometry family's calls
compile: a later process projects, back-projects and reconstructs another problem of the
family without compiling anything (every leap dispatcher it uses loads from the cache)."""
import json
import os
import subprocess
import sys

import pytest

import leap.kernels.precompile as precompile_module
from leap.kernels.precompile import FAMILIES, precompile

LATER = r"""
import json, sys
import numpy as np
import leap
from leap.reconstruction.fbp import fbp
from numba.core.registry import CPUDispatcher
det = leap.Detector(num_rows=10, num_cols=14, pixel_height=0.8, pixel_width=0.9)
geo = leap.ConeBeam(detector=det, angles=np.linspace(0, 6, 11), sod=90.0, sdd=160.0)
vol = leap.Volume(num_x=9, num_y=10, num_z=7, voxel_width=0.7, voxel_height=0.6)
g = leap.project(geo, vol, np.random.default_rng(0).random(vol.shape, dtype=np.float32))
leap.backproject(geo, vol, g)
fbp(geo, vol, g)
# The cone family's other members: vertical modules (the stretch) and a helical FBP (slice
# weights) run the kernels' weighted form.
mod = geo.to_modular()
leap.backproject(mod, vol, leap.project(mod, vol, np.ones(vol.shape, np.float32)))
hel = leap.ConeBeam(detector=det, angles=np.linspace(0, 12, 21), sod=90.0, sdd=160.0,
                    helical_pitch=0.5)
fbp(hel, vol, leap.project(hel, vol, np.ones(vol.shape, np.float32)))
hits = misses = 0
for name, mod in list(sys.modules.items()):
    if name == "leap" or name.startswith("leap."):
        for obj in vars(mod).values():
            if isinstance(obj, CPUDispatcher):
                hits += sum(obj._cache_hits.values())
                misses += sum(obj._cache_misses.values())
print(json.dumps({"hits": hits, "misses": misses}))
"""


def test_a_precompiled_family_compiles_nothing_later(tmp_path):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    run = subprocess.run([sys.executable, "-m", "leap.kernels.precompile", "cone"], env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0].startswith("cone")
    later = subprocess.run([sys.executable, "-c", LATER], env=env, capture_output=True,
                           text=True, timeout=900)
    assert later.returncode == 0, later.stderr
    counts = json.loads(later.stdout.strip().splitlines()[-1])
    assert counts["hits"] > 5 and counts["misses"] == 0, counts


def test_families_and_bad_names():
    assert set(precompile(["fan", "cone"])) == {"fan", "cone"}
    assert set(FAMILIES) >= {"cone", "parallel", "fan", "parallel2d", "fan2d", "modular"}
    with pytest.raises(ValueError, match="unknown families.*'helix'"):
        precompile(["helix"])


def test_the_command_line_defaults_to_every_family(monkeypatch, capsys):
    """``python -m leap.kernels.precompile`` with no names compiles every family (argparse checked
    a default list against the choices as one value, and a bare call failed)."""
    seen = []

    def record(families):
        seen.append(tuple(families))
        return dict.fromkeys(families, 0.0)

    monkeypatch.setattr(precompile_module, "precompile", record)
    precompile_module.main([])
    precompile_module.main(["fan", "cone"])
    assert seen == [tuple(FAMILIES), ("fan", "cone")]
    assert capsys.readouterr().out.splitlines()[-1].startswith("total")
    with pytest.raises(SystemExit):
        precompile_module.main(["helix"])
