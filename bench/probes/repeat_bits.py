"""Which GPU calls give other bits when repeated: each call 5 times on one context and once on a
second, default and deterministic contexts, on generated inputs; prints, for each, how many of
the repeats differ from the first call's bits, the largest difference relative to the output's
largest magnitude (k-NN's output holds its indices too) and a repeat's time (end to end from
scipy arrays: uploads included). A probe for
docs/c-library.md#reproducible-results (the tests assert the calls that are reproducible).

usage: python3 bench/probes/repeat_bits.py BUILD_DIR"""
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402

sr = sr_package.load(sys.argv[1] if len(sys.argv) > 1 else "build")
rng = np.random.default_rng(7)


def bag(m, n, per_row, dtype):
    """Real-valued positive entries: whole numbers would sum exactly in any order and hide it."""
    X = sp.random(m, n, density=per_row / n, format="csr", random_state=rng, dtype=np.float64)
    X.data = (rng.random(X.nnz) + 0.1).astype(dtype)
    return X


def flat(out):
    if isinstance(out, tuple):
        return np.concatenate([flat(o) for o in out])
    if sp.issparse(out):
        out = out.tocsr()
        out.sort_indices()
        return np.concatenate([out.indptr.astype(np.float64), out.indices.astype(np.float64), out.data.astype(np.float64)])
    return np.asarray(out, dtype=np.float64).ravel()


X64, X32 = bag(20000, 5000, 40, np.float64), bag(20000, 5000, 40, np.float32)
A, B = rng.standard_normal((20000, 32)), rng.standard_normal((5000, 32))
G = bag(3000, 3000, 8, np.float64)
calls = {
    "knn cosine float64": lambda c: sr.kneighbors(X64, k=10, metric="cosine", dtype=np.float64, context=c),
    "knn manhattan float64": lambda c: sr.kneighbors(X64, k=10, metric="manhattan", dtype=np.float64, context=c),
    "knn jensenshannon float64": lambda c: sr.kneighbors(X64, k=10, metric="jensenshannon", dtype=np.float64,
                                                         context=c),
    "knn cosine exact (fp32)": lambda c: sr.kneighbors(X32, k=10, metric="cosine", context=c),
    "knn manhattan float32": lambda c: sr.kneighbors(X32, k=10, metric="manhattan", context=c),
    "pairwise euclidean float64": lambda c: sr.pairwise_distances(X64[:500], X64[:700], metric="euclidean", context=c),
    "spmv float64": lambda c: sr.spmv(G, rng_vec, context=c),
    "mxm float64": lambda c: sr.mxm(G, G, context=c),
    "sddmm float64": lambda c: sr.sddmm(X64, A, B, context=c),
    "fused xtvxy float64": lambda c: sr.fused_pattern(X64, rng_y, v=rng_v, context=c),
    "ridge float64": lambda c: sr.ridge(X64, rng_v, 0.5, context=c)[0],
    "pagerank float64": lambda c: sr.pagerank(G, context=c)[0],
}
rng_vec, rng_y, rng_v = rng.standard_normal(3000), rng.standard_normal(5000), rng.standard_normal(20000)
print(f"{'call':30} {'deterministic':>13} {'repeats differ':>15} {'2nd context':>12} {'max rel diff':>13} {'ms (call)':>9}")
for det in (False, True):
    ctx, other = sr.Context("cuda", deterministic=det), sr.Context("cuda", deterministic=det)
    for name, call in calls.items():
        try:
            first = flat(call(ctx))
            runs, seconds = [], []
            for _ in range(4):
                t0 = time.perf_counter()
                runs.append(flat(call(ctx)))
                seconds.append(time.perf_counter() - t0)
            second = flat(call(other))
        except Exception as e:  # noqa: BLE001 (a probe: report and go on)
            print(f"{name:30} {str(det):>13} error: {e}")
            continue
        differ = sum(not np.array_equal(first, r, equal_nan=True) for r in runs)
        scale = np.abs(first).max() + 1e-300
        worst = max(float(np.abs(r - first).max()) for r in runs + [second]) / scale
        print(f"{name:30} {str(det):>13} {differ:>12} of 4 {str(not np.array_equal(first, second, equal_nan=True)):>12} "
              f"{worst:13.1e} {1e3 * sorted(seconds)[1]:9.2f}", flush=True)
