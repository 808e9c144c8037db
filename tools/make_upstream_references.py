"""Regenerate ``tests/data/leap_upstream/*.npz`` with upstream LEAP.

Needs upstream LEAP's ``leapctype.py`` importable and its compiled library: build
LLNL/LEAP (CPU-only is enough: ``cp src/cpu_CMakeLists.txt src/CMakeLists.txt`` and
``cmake -B build . && cmake --build build``), then run, from this repository's root::

    PYTHONPATH=<LEAP>/src python tools/make_upstream_references.py <LEAP>/build/lib [case ...]

Every case of ``tests/upstream_cases.py`` is run with upstream's ``tomographicModels``
and its arrays are written, compressed, next to a JSON line of provenance. The stored
files are what ``tests/compat/test_upstream_cases.py`` compares leap against.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from upstream_cases import CASES  # noqa: E402


def main(lib_dir: str, names: list[str]) -> None:
    import leapctype  # upstream's, from PYTHONPATH
    if Path(leapctype.__file__).resolve().is_relative_to(ROOT):
        raise SystemExit("leapctype resolves to leap's own shim; put upstream LEAP's src "
                         "first on PYTHONPATH")
    out_dir = ROOT / "tests" / "data" / "leap_upstream"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names or list(CASES):
        arrays = CASES[name](lambda: leapctype.tomographicModels(lib_dir=lib_dir))
        arrays = {k: np.asarray(v) for k, v in arrays.items()}
        np.savez_compressed(out_dir / f"{name}.npz", **arrays)
        print(json.dumps({"case": name, "arrays": {k: list(v.shape) for k, v in arrays.items()}}))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
