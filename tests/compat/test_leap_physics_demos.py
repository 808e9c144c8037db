"""LEAP's beam-hardening and dual-energy demo scripts, run unchanged on the shims.

The scripts (``demo_leapctype/d17_beam_hardening.py``, ``d18_multi-materialBHC.py``,
``d19_dual_energy_decomposition_and_SIRZ.py``, ``d37_spectral_calibration.py`` of
https://github.com/LLNL/LEAP) are not part of this repository: point the environment
variable ``LEAP_DEMOS`` at a folder holding them (e.g. a checkout's ``demo_leapctype``)
to run them; without it the tests skip.

Each runs in a subprocess with the repository root on ``sys.path`` (so ``from leapctype
import *`` and ``from xrayphysics import *`` find the shims), matplotlib's Agg backend,
and ``plt.show`` / ``tomographicModels.display`` replaced by no-ops; it must exit with
status 0 within ``LEAP_DEMOS_TIMEOUT`` seconds (default 1800). On two CPU cores they take
about 40 s (d17), 20 s (d18), 60 s (d19; 50 s of it the dual-energy table) and 2 min (d37;
one minute of it the script's own 10^7-iteration NumPy loop).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMOS = ("d17_beam_hardening.py", "d18_multi-materialBHC.py",
         "d19_dual_energy_decomposition_and_SIRZ.py",
         "d37_spectral_calibration.py")
TIMEOUT = float(os.environ.get("LEAP_DEMOS_TIMEOUT", "1800"))

# Runs the script given as argv[1] as __main__ with the viewers switched off.
RUNNER = """
import runpy, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
plt.show = lambda *args, **kwargs: None
from leap.compat.model import tomographicModels
tomographicModels.display = lambda self, *args, **kwargs: None
path = sys.argv[1]
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
"""


def _demo(name):
    folder = os.environ.get("LEAP_DEMOS")
    if not folder:
        pytest.skip("set LEAP_DEMOS to a folder holding LEAP's demo_leapctype scripts")
    path = Path(folder) / name
    if not path.is_file():
        pytest.skip(f"{name} not found in LEAP_DEMOS={folder}")
    return path


@pytest.mark.slow
@pytest.mark.timeout(TIMEOUT + 60)
@pytest.mark.parametrize("name", DEMOS)
def test_demo_runs(name, tmp_path):
    path = _demo(name)
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(REPO_ROOT)]
                                          + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, (f"{name} exited with {proc.returncode}\n--- stdout\n"
                                  f"{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-4000:]}")
