"""PageRank on the GPU, 100 iterations (tol = 0), float32: sparsering (sr.pagerank) without and
with the SpMV plan, against the same iteration in cupy on cuSPARSE's SpMV and against 100 bare
cuSPARSE SpMVs (the floor issue 60 holds PageRank to: within 1.15×), in one process; the ranks
compared (Σ|ours − cupy's|). DATA_DIR may be "-" to run the generated R-MAT graphs only.

    PYTHONPATH=BUILD/python python3 bench/bench_pagerank.py DATA_DIR [--json out.json]"""
import json
import os
import sys
import time
import warnings

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import sparsering as sr  # noqa: E402
from generated_graphs import rmat  # noqa: E402

warnings.filterwarnings("ignore", category=DeprecationWarning)  # scipy.io.mmread's spmatrix notice
ITERATIONS = 100
DAMPING = 0.85


def cupy_pagerank(A):
    """networkx's iteration on cuSPARSE (cupy): M = (D⁻¹A)ᵀ built on the host, then ITERATIONS
    SpMVs with the dangling mass and the teleport term; seconds of the iterations."""
    n = A.shape[0]
    out = np.asarray(A.sum(axis=1)).ravel()
    M = csp.csr_matrix((sp.diags(np.divide(1.0, out, out=np.zeros(n), where=out > 0)) @ A).T.tocsr().astype(np.float32))
    r = cp.full(n, 1.0 / n, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(ITERATIONS):
        y = M @ r
        y = DAMPING * y + ((1 - DAMPING) + DAMPING * (1 - y.sum())) / n
        cp.abs(y - r).sum()  # the change, as sparsering computes it each iteration
        r = y
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0, r.get()


def bare_spmvs(A):
    """Seconds of ITERATIONS cuSPARSE SpMVs (cupy) on M, back to back: the iteration's floor."""
    n = A.shape[0]
    M = csp.csr_matrix(A.T.tocsr().astype(np.float32))
    r = cp.full(n, 1.0 / n, dtype=cp.float32)
    y = M @ r
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(ITERATIONS):
        y = M @ r
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0


def main():
    data = sys.argv[1]
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    ctx = sr.Context("cuda")
    graphs = [("debian-depends", lambda: scipy.io.mmread(f"{data}/graphs/debian-depends.mtx.gz").tocsr())] * (data != "-")
    graphs += [("rmat-20-16", lambda: rmat(20, 16)), ("rmat-21-16", lambda: rmat(21, 16))]
    rows = []
    print(f"PageRank, {ITERATIONS} iterations, float32, d = {DAMPING}; ms per iteration", flush=True)
    for name, make in graphs:
        A = make().astype(np.float64)
        cupy_pagerank(A)  # warm-up
        theirs, r_theirs = cupy_pagerank(A)
        bare = bare_spmvs(A)
        M = sr.Matrix(A, context=ctx, location="device")
        result = {}
        for plan in (False, True):
            sr.pagerank(M, DAMPING, tol=0, max_iter=3, plan=plan, dtype=np.float32, context=ctx)  # warm-up
            r, info = sr.pagerank(M, DAMPING, tol=0, max_iter=ITERATIONS, plan=plan, dtype=np.float32, context=ctx)
            result[plan] = (r, info)
        (r0, i0), (r1, i1) = result[False], result[True]
        row = dict(graph=name, n=A.shape[0], nnz=A.nnz, cupy_s=theirs, bare_spmv_s=bare, plain_s=i0.iterate_seconds,
                   planned_s=i1.iterate_seconds, plan_s=i1.plan_seconds, setup_s=i1.setup_seconds,
                   plan_in_use=i1.plan.in_use, hot_share=i1.plan.hot_share,
                   identical=bool(np.array_equal(r0, r1)), l1_vs_cupy=float(np.abs(r1 - r_theirs).sum()))
        rows.append(row)
        per = lambda s: 1e3 * s / ITERATIONS  # noqa: E731
        print(f"{name:15} n {A.shape[0]:8d} nnz {A.nnz:9d} | cupy/cuSPARSE {per(theirs):6.3f} | ours {per(i0.iterate_seconds):6.3f}"
              f" ({theirs / i0.iterate_seconds:4.2f}x) | planned {per(i1.iterate_seconds):6.3f} "
              f"({theirs / i1.iterate_seconds:4.2f}x; plan {1e3 * i1.plan_seconds:6.2f} ms, "
              f"{'in use' if i1.plan.in_use else 'unused'}, hot {100 * i1.plan.hot_share:4.1f}%; with its cost "
              f"{theirs / (i1.iterate_seconds + i1.plan_seconds):4.2f}x) | set-up {1e3 * i1.setup_seconds:7.1f} ms | "
              f"identical {row['identical']} | Σ|ours − cupy| {row['l1_vs_cupy']:.1e} | bare SpMVs {per(bare):6.3f} "
              f"(planned / bare {i1.iterate_seconds / bare:4.2f})", flush=True)
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
