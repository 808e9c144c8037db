"""The README's main job, ``./dev.sh demo`` (examples/demo.py), on a small problem: it
prints each step's time and both reconstructions' errors and writes its picture."""
import re
import runpy
import sys

from conftest import REPO_ROOT


def test_demo_runs_and_reports_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(sys, "argv", ["demo.py", "--size", "24", "--views", "30",
                                      "--iterations", "4", "--photons", "0",
                                      "--out", str(tmp_path)])
    runpy.run_path(str(REPO_ROOT / "examples" / "demo.py"), run_name="__main__")
    out = capsys.readouterr().out
    for step in ("phantom", "project", "FBP", "OS-SART"):
        assert re.search(rf"{step}.* \d+\.\d\d s", out), step
    errors = re.search(r"FBP (\d\.\d+)\s+OS-SART (\d\.\d+)", out)
    assert errors, out
    e_fbp, e_sart = map(float, errors.groups())
    assert 0 < e_fbp < 0.5 and 0 < e_sart < 0.5
    assert (tmp_path / "demo.png").stat().st_size > 10_000
