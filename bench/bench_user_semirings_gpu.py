"""User semirings on the GPU (NVRTC) against the built-ins they restate: SpMV and SpMM (8 and 32
columns, row-major) under (min, +) and (+, ×) in float32 and float64 on R-MAT graphs, cupy operands
read in place, median of 10 after 2 warm-ups; the answers are checked bit for bit. Also the first
use's NVRTC compile (an empty cache folder) and the first use in a new process, whose program
comes from the disk cache. Then user metrics against the built-ins they restate (cosine,
manhattan, braycurtis) on a NY Times-shaped bag of words (float32): pairwise distances (the same
kernels) and k-NN (the user's on the distance block, the built-in's on its own path). With
--spgemm, SpGEMM A·A on R-MAT graphs (the user's: the built-in structural product, then the
ordered values pass) on a default and a deterministic context.

    python3 bench/bench_user_semirings_gpu.py BUILD [--scales 18,21] [--rows 20000] [--spgemm 14,16]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from knn_data import synthetic  # noqa: E402
from timing import median_time  # noqa: E402

NEW_PROCESS = """
import sys, time
sys.path.insert(0, sys.argv[1])
import cupy as cp, cupyx.scipy.sparse as csp, scipy.sparse as sp, sparsering as sr
ctx = sr.Context("cuda")
A = sr.Matrix(csp.csr_matrix(sp.random(1000, 1000, density=0.01, format="csr", random_state=1)), context=ctx)
x = cp.ones(1000)
sr.spmv(A, x, "min_plus", context=ctx)  # CUDA is up
user = sr.Semiring("bench_min_plus", add="min", multiply="x + y")
t = time.perf_counter(); sr.spmv(A, x, user, context=ctx); first = time.perf_counter() - t
t = time.perf_counter(); sr.spmv(A, x, user, context=ctx); second = time.perf_counter() - t
print(first - second)
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--scales", default="18,21")
    ap.add_argument("--rows", type=int, default=20000, help="rows of the metrics' bag of words (0: none)")
    ap.add_argument("--spgemm", default="", help="R-MAT scales of SpGEMM A·A (none by default)")
    args = ap.parse_args()
    os.environ["SPARSERING_JIT_CACHE"] = tempfile.mkdtemp(prefix="sr-jit-gpu-bench-")
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    small = sr.Matrix(csp.csr_matrix(sp.random(1000, 1000, density=0.01, format="csr", random_state=1)), context=ctx)
    sr.spmv(small, cp.ones(1000), "min_plus", context=ctx)
    users = {"min_plus": sr.Semiring("bench_min_plus", add="min", multiply="x + y"),
             "plus_times": sr.Semiring("bench_plus_times", add="plus", multiply="x * y")}
    t = time.perf_counter()
    sr.spmv(small, cp.ones(1000), users["min_plus"], context=ctx)
    t_spmv = time.perf_counter() - t
    t = time.perf_counter()
    sr.spmm(small, cp.ones((1000, 8)), users["min_plus"], context=ctx)
    t_spmm = time.perf_counter() - t
    load = float(subprocess.run([sys.executable, "-c", NEW_PROCESS, os.path.join(os.path.abspath(args.build), "python")],
                                capture_output=True, text=True, check=True).stdout)
    print(f"first use (NVRTC compile, empty cache): SpMV program {1e3 * t_spmv:.0f} ms, SpMM program "
          f"{1e3 * t_spmm:.0f} ms; first SpMV in a new process (program from the disk cache) {1e3 * load:.1f} ms")
    for scale in (int(s) for s in args.scales.split(",") if s):
        G = sp.csr_matrix(rmat(scale, 16), dtype=np.float64)
        print(f"R-MAT {scale}: {G.shape[0]} x {G.shape[1]}, {G.nnz} entries")
        for dtype in (np.float32, np.float64):
            A = sr.Matrix(weighted(G, dtype), context=ctx)
            for builtin, semiring in users_of(sr, users, dtype):
                for K in (1, 8, 32):
                    B = cp.asarray(np.random.default_rng(K).random((G.shape[0], K)).astype(dtype))
                    B = B[:, 0] if K == 1 else B
                    C1 = cp.zeros((G.shape[0],) if K == 1 else (G.shape[0], K), dtype=dtype)
                    C2 = cp.zeros_like(C1)
                    call = (lambda s, C: sr.spmv(A, B, s, out=C, context=ctx)) if K == 1 else \
                        (lambda s, C: sr.spmm(A, B, s, out=C, context=ctx))
                    call(builtin, C1)
                    call(semiring, C2)
                    same = bool(cp.array_equal(C1.view(cp.uint8), C2.view(cp.uint8)))
                    sync = cp.cuda.Device().synchronize
                    t_b = median_time(lambda: call(builtin, C1), sync=sync)
                    t_u = median_time(lambda: call(semiring, C2), sync=sync)
                    print(f"  {np.dtype(dtype).name} {builtin} {'SpMV' if K == 1 else f'SpMM K = {K}'}: built-in "
                          f"{1e3 * t_b:.3f} ms, user {1e3 * t_u:.3f} ms, {t_u / t_b:.2f}x; same bits: {same}")

    if args.rows:
        metrics(sr, ctx, args.rows)
    for scale in (int(s) for s in args.spgemm.split(",") if s):
        spgemm(sr, scale, users)


def weighted(G, dtype):
    """G's pattern on the GPU with values in [0.5, 1.5) of dtype."""
    Gd = csp.csr_matrix(G.astype(dtype))
    Gd.data = cp.asarray(np.random.default_rng(1).random(G.nnz).astype(dtype) + dtype(0.5))
    return Gd


def users_of(sr, users, dtype):
    """(built-in, user semiring) pairs with the user semirings of dtype."""
    for builtin, semiring in users.items():
        if np.dtype(dtype) != np.float64:
            semiring = sr.Semiring(f"bench_{builtin}_f32", add=semiring.add, multiply=semiring.multiply, dtype=dtype)
        yield builtin, semiring


def spgemm(sr, scale, users):
    G = sp.csr_matrix(rmat(scale, 16), dtype=np.float64)
    print(f"SpGEMM A·A, R-MAT {scale}: {G.shape[0]} x {G.shape[1]}, {G.nnz} entries")
    sync = cp.cuda.Device().synchronize
    for deterministic in (False, True):
        ctx = sr.Context("cuda", deterministic=deterministic)
        for dtype in (np.float32, np.float64):
            A = sr.Matrix(weighted(G, dtype), context=ctx)
            for builtin, semiring in users_of(sr, users, dtype):
                C1, C2 = (sr.mxm(A, A, s) for s in (builtin, semiring))
                w, g = (sp.csr_matrix(C.to_scipy()) for C in (C1, C2))
                same = bool(np.array_equal(w.indices, g.indices) and np.array_equal(w.data.view(np.uint8),
                                                                                    g.data.view(np.uint8)))
                t_b = median_time(lambda: sr.mxm(A, A, builtin), sync=sync, reps=5)
                t_u = median_time(lambda: sr.mxm(A, A, semiring), sync=sync, reps=5)
                print(f"  {'deterministic' if deterministic else 'default'} context, {np.dtype(dtype).name} {builtin}: "
                      f"{w.nnz} entries; built-in {1e3 * t_b:.2f} ms, user {1e3 * t_u:.2f} ms, {t_u / t_b:.2f}x; "
                      f"same bits: {same}")


# the built-ins written again (tests/test_user_metrics.c's definitions)
METRICS = {
    "cosine": dict(pair="q * x", norm="v * v", distance="sr_norm_product(nq, nx) > 0.0 ? "
                   "sr_snap(sr_clamp(1.0 - acc / sr_norm_product(nq, nx), 0.0, 2.0), 1.0) : 1.0"),
    "manhattan": dict(pair="fabs(q - x)", distance="fmax(0.0, nq + nx + acc)", over_union=True),
    "braycurtis": dict(pair="fabs(q - x)", pair2="fabs(q + x)", over_union=True,
                       distance="nq2 + nx2 + acc2 > 0.0 ? fmax(0.0, nq + nx + acc) / (nq2 + nx2 + acc2) : 0.0"),
    "chebyshev": dict(pair="fabs(q - x)", over_union=True, reduce="max"),  # a warp a pair, not the built-in's walks
}


def metrics(sr, ctx, rows):
    X = synthetic(rows, rows // 2, 50 * rows, 1, 500, degrees="lognormal")
    Xd = sr.Matrix(csp.csr_matrix(X), context=ctx)
    nq = min(2000, rows)
    Qd = csp.csr_matrix(X[:nq])  # a cupy matrix: the answers stay on the GPU (the index keeps its transpose)
    print(f"bag of words: {X.shape[0]} x {X.shape[1]}, {X.nnz} entries (float32); {nq} queries, k = 10")
    sync = cp.cuda.Device().synchronize
    for builtin, definition in METRICS.items():
        user = sr.Metric(f"bench_{builtin}", **definition)
        t = time.perf_counter()
        sr.pairwise_distances(Qd, Xd, user, context=ctx)
        sync()
        first = time.perf_counter() - t
        t_b = median_time(lambda: sr.pairwise_distances(Qd, Xd, builtin, context=ctx), sync=sync, reps=5)
        t_u = median_time(lambda: sr.pairwise_distances(Qd, Xd, user, context=ctx), sync=sync, reps=5)
        k_b = median_time(lambda: sr.kneighbors(Xd, Qd, 10, builtin, context=ctx), sync=sync, reps=5)
        k_u = median_time(lambda: sr.kneighbors(Xd, Qd, 10, user, context=ctx), sync=sync, reps=5)
        D_b = sr.pairwise_distances(Qd, Xd, builtin, context=ctx)
        D_u = sr.pairwise_distances(Qd, Xd, user, context=ctx)
        diff = float(cp.max(cp.abs(D_b.astype(cp.float64) - D_u.astype(cp.float64))))
        print(f"  {builtin}: first use {1e3 * first:.0f} ms (NVRTC and the call); pairwise distances built-in "
              f"{1e3 * t_b:.1f} ms, user {1e3 * t_u:.1f} ms, {t_u / t_b:.2f}x (largest difference {diff:.1e}); "
              f"k-NN built-in {1e3 * k_b:.1f} ms, user {1e3 * k_u:.1f} ms, {k_u / k_b:.2f}x")


if __name__ == "__main__":
    main()
