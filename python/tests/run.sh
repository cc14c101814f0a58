#!/bin/sh
# Runs the package tests under ctest on the package assembled in the build tree; exits 77
# (skipped) when numpy, scipy, scikit-learn or pytest is missing.
# usage: run.sh PACKAGE_PARENT_DIR [PYTHON] (the interpreter the extension was built for)
PY="${2:-python3}"
if ! "$PY" -c "import numpy, scipy, sklearn, pytest" 2>/dev/null; then
    echo "SKIP python package tests: numpy, scipy, scikit-learn and pytest are needed"
    exit 77
fi
PYTHONPATH="$1" exec "$PY" -m pytest -q -p no:cacheprovider "$(dirname "$0")"
