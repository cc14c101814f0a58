"""User semirings (sr.Semiring) against the built-ins they restate, on the CPU backend: SpMV, SpMM
(32 columns) and SpGEMM A·A under (min, +) in float64 on an R-MAT graph, median of 10 after 2
warm-ups, the library's own matrices (no conversions timed); the answers are checked bit for bit.
Also the definition's first compile (an empty cache folder) and its load from the cache in a new
process.

    python3 bench/bench_user_semirings.py BUILD [--scale 16] [--threads 0] [--knn-rows 5000]

and k-NN under cosine and chebyshev, built in and as user metrics (metrics()).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from timing import median_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--knn-rows", type=int, default=5000)
    args = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="sr-jit-bench-")
    os.environ["SPARSERING_JIT_CACHE"] = cache
    sr = sr_package.load(args.build)
    ctx = sr.Context("cpu", threads=args.threads)
    t = time.perf_counter()
    user = sr.Semiring("bench_min_plus", add="min", multiply="x + y")
    compile_s = time.perf_counter() - t
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); import sparsering as sr; t = time.perf_counter(); "
            "sr.Semiring('bench_min_plus', add='min', multiply='x + y'); print(time.perf_counter() - t)")
    load_s = float(subprocess.run([sys.executable, "-c", code, os.path.join(os.path.abspath(args.build), "python")],
                                  capture_output=True, text=True, check=True).stdout)
    print(f"definition: first compile {1e3 * compile_s:.0f} ms; from the cache in a new process {1e3 * load_s:.1f} ms")
    G = sp.csr_matrix(rmat(args.scale, 16), dtype=np.float64)
    G.data = np.random.default_rng(1).random(G.nnz) + 0.5
    A = sr.Matrix(G, context=ctx)
    print(f"R-MAT {args.scale}: {G.shape[0]} x {G.shape[1]}, {G.nnz} entries; --threads {args.threads} "
          f"(0: all {os.cpu_count()} cores)")
    x = np.random.default_rng(2).random(G.shape[0])
    X = np.random.default_rng(3).random((G.shape[0], 32))
    cases = [("SpMV", lambda s: sr.spmv(A, x, s)), ("SpMM, 32 columns", lambda s: sr.spmm(A, X, s)),
             ("SpGEMM A·A", lambda s: sr.mxm(A, A, s))]
    for name, call in cases:
        want, got = call("min_plus"), call(user)
        if hasattr(want, "to_scipy"):
            want, got = want.to_scipy(), got.to_scipy()
            same = (want != got).nnz == 0 and np.array_equal(want.data.view(np.uint8), got.data.view(np.uint8))
        else:
            same = np.array_equal(want.view(np.uint8), got.view(np.uint8))
        t_b = median_time(lambda: call("min_plus"))
        t_u = median_time(lambda: call(user))
        print(f"{name}: built-in min_plus {1e3 * t_b:.2f} ms, user semiring {1e3 * t_u:.2f} ms, "
              f"{t_u / t_b:.2f}x; same bits: {same}")
    metrics(sr, ctx, args.knn_rows)


def metrics(sr, ctx, rows):
    """k-NN (k = 10, all against all) of a NY Times-shaped set's first rows under cosine (a sum over
    the shared columns) and chebyshev (a maximum over the union), built in and written again as
    user metrics: the built-in's dense path (SPARSERING_KNN_OVERLAP=0, the path a user metric
    takes) and its default (which may take the overlap path)."""
    from knn_data import synthetic
    X = synthetic(rows, 102_000, int(round(69_679_427 * rows / 300_000)), 0, 2_000, degrees="lognormal")
    print(f"NY Times-shaped: {X.shape[0]} x {X.shape[1]}, {X.nnz} entries")
    written_again = {
        "cosine": sr.Metric("bench_cosine", pair="q * x", norm="v * v",
                            distance="sr_norm_product(nq, nx) > 0.0 ? sr_snap(sr_clamp(1.0 - acc / "
                                     "sr_norm_product(nq, nx), 0.0, 2.0), 1.0) : 1.0"),
        "chebyshev": sr.Metric("bench_chebyshev", pair="fabs(q - x)", over_union=True, reduce="max"),
    }
    A = sr.Matrix(X, context=ctx)
    for builtin, user in written_again.items():
        os.environ["SPARSERING_KNN_OVERLAP"] = "0"
        want = sr.kneighbors(A, A, 10, builtin)
        t_dense = median_time(lambda: sr.kneighbors(A, A, 10, builtin), reps=3, warm=1)
        del os.environ["SPARSERING_KNN_OVERLAP"]
        t_default = median_time(lambda: sr.kneighbors(A, A, 10, builtin), reps=3, warm=1)
        got = sr.kneighbors(A, A, 10, user)
        t_user = median_time(lambda: sr.kneighbors(A, A, 10, user), reps=3, warm=1)
        same = np.array_equal(got[1], want[1]) and np.array_equal(got[0].view(np.uint8), want[0].view(np.uint8))
        print(f"k-NN {builtin}, k = 10: built-in dense path {t_dense:.3f} s, built-in default {t_default:.3f} s, "
              f"user metric {t_user:.3f} s ({t_user / t_dense:.2f}x the dense path, {t_user / t_default:.2f}x the "
              f"default); same bits as the dense path: {same}")


if __name__ == "__main__":
    main()
