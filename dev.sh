#!/usr/bin/env bash
# One entry point for developers and CI.
#   ./dev.sh demo   set up .venv and run the demo (a cone-beam scan of a 3-D phantom,
#                   reconstructed by FBP and OS-SART)
#   ./dev.sh test   set up .venv and run the test suite (what .ci/run calls)
#   ./dev.sh docs   set up .venv and build the documentation into docs/_build/html
#                   (warnings are errors, as in the test suite's docs build)
# Extra arguments after the verb go to the demo script, to pytest or to sphinx-build.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=.venv

setup() {
    if [ ! -x "$VENV/bin/python" ]; then
        "$PY" -m venv "$VENV"
    fi
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    # torch: development and CI use the CPU build (a local wheel here, seconds to
    # install). End users choose their own build through the `torch` extra; the pin
    # lives only in this script. LEAP_TORCH_SPEC overrides it, LEAP_TORCH_SPEC=none skips.
    local torch_spec=${LEAP_TORCH_SPEC:-torch==2.13.0}
    if [ "$torch_spec" != none ] && ! "$VENV/bin/python" -c "import torch" >/dev/null 2>&1; then
        "$VENV/bin/python" -m pip install -q "$torch_spec"
    fi
    "$VENV/bin/python" -m pip install -q -e ".[test]"
}

verb=${1:-}
shift || true
case "$verb" in
    demo)
        setup
        exec "$VENV/bin/python" examples/demo.py "$@"
        ;;
    test)
        setup
        exec "$VENV/bin/python" -m pytest "$@"
        ;;
    docs)
        setup
        exec "$VENV/bin/python" -m sphinx -W --keep-going -b html docs docs/_build/html "$@"
        ;;
    setup)
        setup
        ;;
    *)
        echo "usage: ./dev.sh {demo|test|docs|setup} [args...]" >&2
        exit 2
        ;;
esac
