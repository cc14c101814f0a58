"""The anchors' power-law generator (shared/anchors/anchor_bench.py), unchanged, for the benchmarks."""
import numpy as np
import scipy.sparse as sp


def powerlaw(m, n, avg, alpha=1.8, seed=0):
    """The anchors' generator (shared/anchors/anchor_bench.py), unchanged."""
    rng = np.random.default_rng(seed)
    deg = np.minimum((rng.pareto(alpha, m) + 1) * avg / 2.2, n).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(deg)])
    cols = rng.integers(0, n, indptr[-1])
    vals = rng.random(indptr[-1], dtype=np.float32) + 0.1
    A = sp.csr_matrix((vals, cols, indptr), shape=(m, n))
    A.sum_duplicates()
    A.sort_indices()
    return A
