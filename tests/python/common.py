"""What every Python comparison test needs: the C API by ctypes (c_api.py), the build and data folders, a
printed seed, and the backends to run on (CPU always, CUDA where a GPU is usable)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench"))  # knn_data: the real sets
sys.path.insert(0, os.path.dirname(__file__))
import c_api as sr  # noqa: E402

BUILD = os.environ.get("SPARSERING_BUILD", "build")
DATA = os.environ.get("SPARSERING_TEST_DATA", "")
SEED = int(os.environ.get("SR_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
print(f"python tests: seed {SEED} (rerun with SR_TEST_SEED={SEED})")

lib = sr.load(BUILD)
BACKENDS = [("cpu", lib.context(backend=1), sr.HOST)]
_gpu = lib.context_or_none(2)
if _gpu is not None:
    BACKENDS.append(("cuda", _gpu, sr.DEVICE))
