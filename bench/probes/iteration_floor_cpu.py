"""Issue 60's floors on the CPU backend: PageRank's 100 iterations against 100 bare SpMVs of its
matrix (target: within 1.15×), and an ALS sweep (sr.factorize) against the fused SDDMM→SpMM and
SpMM kernels it calls (target: within 1.2×), in one process, all threads of the context.

    PYTHONPATH=BUILD/python python3 bench/probes/iteration_floor_cpu.py [--threads N] [--rmat 19]
        [--users 40000 --items 15000 --ratings 4000000 --rank 32]"""
import argparse
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from timing import median_time  # noqa: E402


def pagerank_floor(ctx, scale):
    A = sp.csr_matrix(rmat(scale, 16), dtype=np.float32)
    n = A.shape[0]
    out = np.asarray(A.sum(axis=1)).ravel()
    M = sr.Matrix((sp.diags(np.divide(1.0, out, out=np.zeros(n), where=out > 0)) @ A).T.tocsr().astype(np.float32),
                  context=ctx)
    x = np.full(n, 1.0 / n, dtype=np.float32)
    y = np.empty(n, dtype=np.float32)
    G = sr.Matrix(A, context=ctx)
    bare = median_time(lambda: [sr.spmv(M, x, out=y, context=ctx) for _ in range(100)], reps=5, warm=1)
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        _, info = sr.pagerank(G, tol=0.0, max_iter=100, dtype=np.float32, context=ctx)
        runs.append((time.perf_counter() - t0, info))
    whole = min(t for t, _ in runs)
    setup, plan, iterate = (min(getattr(i, k) for _, i in runs) for k in ("setup_seconds", "plan_seconds",
                                                                          "iterate_seconds"))
    print(f"PageRank, R-MAT {scale} ({n:,} x {n:,}, {A.nnz:,} entries), float32, 100 iterations (5 runs; medians of the bare SpMVs, best of the call): "
          f"the call {whole:.3f} s = {whole / bare:.2f}x 100 bare SpMVs ({bare:.3f} s); its set-up {setup:.3f} s, "
          f"plan {plan:.3f} s, iterations {iterate:.3f} s = {iterate / bare:.2f}x (target <= 1.15x)")


def als_floor(ctx, users, items, ratings, rank):
    rng = np.random.default_rng(3)
    u = rng.integers(0, users, ratings)
    i = np.minimum((rng.pareto(1.2, ratings) * items / 50).astype(np.int64), items - 1)
    R = sp.csr_matrix((rng.integers(1, 11, ratings) / 2.0, (u, i)), shape=(users, items), dtype=np.float32)
    R.sum_duplicates()
    R.data = np.minimum(R.data, 5.0).astype(np.float32)
    Rm = sr.Matrix(R, context=ctx)
    fit = sr.factorize(Rm, rank=rank, iterations=3, cg_steps=3, context=ctx)
    sweeps = np.diff([0.0] + [h[3] for h in fit.history])
    sweep = float(np.min(sweeps[1:])) if len(sweeps) > 1 else float(sweeps[0])
    # the kernels of one sweep: per side, b = S·Y (SpMM), 1 + cg_steps products (S ⊙ P·Yᵀ)·Y, and
    # the training RMSE's sampled dot products
    Rt = sr.Matrix(R.T.tocsr(), context=ctx)
    W = fit.W.astype(np.float32)
    H = fit.H.astype(np.float32)

    def kernels():
        for S, P, Y in ((Rm, W, H), (Rt, H, W)):
            sr.spmm(S, Y, context=ctx)
            for _ in range(4):
                sr.sddmm_spmm(S, P, Y, Y, pattern=True, context=ctx)
        sr.sddmm_values(Rm, W, H, pattern=True, context=ctx) if hasattr(sr, "sddmm_values") else None
    floor = median_time(kernels, reps=3, warm=1)
    print(f"ALS, {users:,} x {items:,}, {R.nnz:,} ratings, rank {rank}, float32: a sweep {sweep:.3f} s, "
          f"its kernels {floor:.3f} s: {sweep / floor:.2f}x (target <= 1.2x)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--rmat", type=int, default=19)
    ap.add_argument("--users", type=int, default=40000)
    ap.add_argument("--items", type=int, default=15000)
    ap.add_argument("--ratings", type=int, default=4000000)
    ap.add_argument("--rank", type=int, default=32)
    args = ap.parse_args()
    ctx = sr.Context(backend="cpu", threads=args.threads)
    print(f"{os.cpu_count()} cores here, {args.threads or 'all'} threads")
    pagerank_floor(ctx, args.rmat)
    als_floor(ctx, args.users, args.items, args.ratings, args.rank)


if __name__ == "__main__":
    main()
