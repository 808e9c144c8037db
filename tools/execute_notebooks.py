"""Execute the notebooks and store their outputs in them, for the documentation.

The documentation (docs/, ``./dev.sh docs``) renders the notebooks' stored outputs and
never runs them, so that the docs build stays fast; the test suite executes them
separately (tests/notebooks). Run this after changing a notebook or the code it shows:

    .venv/bin/python tools/execute_notebooks.py                    # every notebook
    .venv/bin/python tools/execute_notebooks.py notebooks/fbp_geometries.ipynb

Per-cell execution metadata (timestamps) is dropped so that a re-run changes only
what the notebook shows.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import nbclient
import nbformat

REPO_ROOT = Path(__file__).resolve().parent.parent


def execute(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as cwd:      # files a notebook writes go nowhere
        nbclient.NotebookClient(nb, timeout=1200, kernel_name="python3",
                                resources={"metadata": {"path": cwd}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to execute (default: notebooks/*.ipynb)")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((REPO_ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        print(f"executing {path} ...", flush=True)
        execute(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
