"""Writes the SDDMM benchmark's matrices (bench/bench_sddmm.py) as files for sddmm_probe.cu, and
prints each one's floor (bench_sddmm.floor_bytes) at K = 32 and 128 for a bandwidth of 2.95 TB/s.
usage: python3 bench/probes/sddmm_probe.py DATA_DIR OUT_DIR"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_sddmm import floor_bytes  # noqa: E402
from knn_data import bag_of_words, ngrams  # noqa: E402
from powerlaw import powerlaw  # noqa: E402

data, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for name, S in (("bow", bag_of_words(data)), ("ngrams", ngrams(data)), ("powerlaw", powerlaw(500_000, 500_000, 20, seed=2))):
    S = S.tocsr()
    S.sort_indices()
    with open(os.path.join(out, name + ".csr"), "wb") as f:
        np.array([S.shape[0], S.shape[1], S.nnz], np.int64).tofile(f)
        S.indptr.astype(np.int64).tofile(f)
        S.indices.astype(np.int32).tofile(f)
    print(name, " ".join(f"K {K} floor {floor_bytes(S, K)[0] / 2.95e12 * 1e3:.3f} ms" for K in (32, 128)), flush=True)
