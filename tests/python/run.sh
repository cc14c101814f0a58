#!/bin/sh
# Runs the Python comparison tests under ctest; exits 77 (skipped) when numpy, scipy or pytest is missing.
# usage: run.sh BUILD_DIR
if ! python3 -c "import numpy, scipy, pytest" 2>/dev/null; then
    echo "SKIP python tests: numpy, scipy and pytest are needed (python3 -m pip install numpy scipy pytest)"
    exit 77
fi
SPARSERING_BUILD="$1" exec python3 -m pytest -q -p no:cacheprovider "$(dirname "$0")"
