"""SpMV, SpMM (K = 32, row- and column-major) and SpGEMM A·A on the CPU backend, through the
package, against scipy (one thread) and SuiteSparse:GraphBLAS (python-graphblas, all cores) in
the same process, float32: the anchors' power-law generator, R-MAT scale 18 (edge factor 8,
Graph500 parameters) and the real graphs of ../shared/data.
usage: python3 bench/bench_products_cpu.py [--data ../shared/data] [--json OUT.json] [--quick]
       [--only NAME,...] [--no-scipy-spgemm]
(the package on PYTHONPATH: BUILD/python)"""
import argparse
import json
import os
import sys
import time

# OpenBLAS's idle threads spin after numpy's BLAS calls and take cores from sparsering's OpenMP
# threads (on 2 cores: 1.22 vs 0.79 ms for the same SpMM). scipy's sparse products use no BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import sparsering as sr  # noqa: E402
import timing  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from powerlaw import powerlaw  # noqa: E402


SETTLE_S = 0.2


def median_time(f, reps=7):
    """After SETTLE_S of sleep: the threads of the library timed before stop spinning (GraphBLAS's
    OpenMP threads spin for up to ~90 ms after a call and take every core meanwhile;
    bench/probes/small_calls_beside_graphblas.py measures what that does to the next calls)."""
    time.sleep(SETTLE_S)
    return timing.median_time(f, reps, warm=1)


def load_graphblas():
    try:
        import graphblas as gb
        gb.init("suitesparse", blocking=True)
        return gb
    except ImportError as e:
        print(f"no python-graphblas ({e}): GraphBLAS columns left empty")
        return None


def cases(data, quick):
    out = [("powerlaw 200Kx200K", powerlaw(200_000, 200_000, 16).astype(np.float32))]
    if not quick:
        out.append(("rmat-18-8", rmat(18, 8).astype(np.float32)))
    for g in ("debian-depends", "pushpull", "bcsstk13"):
        p = os.path.join(data, "graphs", g + ".mtx.gz") if data else ""
        if p and os.path.exists(p):
            A = scipy.io.mmread(p).tocsr().astype(np.float32)
            A.sum_duplicates()
            A.sort_indices()
            out.append((g, A))
    return out


def product_rows(name, A, ctx, gb, scipy_spgemm=True):
    """(product, ours, scipy, GraphBLAS or nan, relative error) for one matrix."""
    M = sr.Matrix(A, context=ctx)
    G = gb.io.from_scipy_sparse(A) if gb else None
    rows = []
    for K, order in ((1, "C"), (32, "C"), (32, "F")):  # F: B and C column-major
        B = np.asarray(np.random.default_rng(0).random((A.shape[1], K), dtype=np.float32), order=order)
        C = np.zeros((A.shape[0], K), dtype=np.float32, order=order)
        if K == 1:
            b, c = B[:, 0], C[:, 0]
            ours = median_time(lambda: sr.spmv(M, b, out=c, context=ctx))
            theirs = median_time(lambda: A @ b)
            gv = gb.Vector.from_dense(b) if gb else None
            t_gb = median_time(lambda: G.mxv(gv, gb.semiring.plus_times).new()) if gb else float("nan")
        else:
            ours = median_time(lambda: sr.spmm(M, B, out=C, context=ctx))
            theirs = median_time(lambda: A @ B)
            gB = gb.Matrix.from_dense(B) if gb else None
            t_gb = median_time(lambda: G.mxm(gB, gb.semiring.plus_times).new()) if gb else float("nan")
        ref = A @ B
        err = float(np.linalg.norm(C.reshape(-1) - ref.reshape(-1)) / max(np.linalg.norm(ref), 1e-30))
        label = "spmv" if K == 1 else "spmm K=32" + (" col" if order == "F" else "")
        rows.append(dict(product=label, matrix=name, ours_ms=ours * 1e3, scipy_ms=theirs * 1e3, graphblas_ms=t_gb * 1e3,
                         rel_err=err))
    ours = median_time(lambda: sr.mxm(M, M, context=ctx), reps=3)
    theirs = median_time(lambda: A @ A, reps=3) if scipy_spgemm else float("nan")
    t_gb = median_time(lambda: G.mxm(G, gb.semiring.plus_times).new(), reps=3) if gb else float("nan")
    rows.append(dict(product="spgemm A*A", matrix=name, ours_ms=ours * 1e3, scipy_ms=theirs * 1e3,
                     graphblas_ms=t_gb * 1e3, rel_err=0.0))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true", help="leave out R-MAT 18")
    ap.add_argument("--only", help="matrices to run, by name (comma-separated)")
    ap.add_argument("--no-scipy-spgemm", action="store_true",
                    help="leave out scipy's one-thread SpGEMM (minutes on R-MAT 18's 494M entries)")
    args = ap.parse_args()
    gb = load_graphblas()
    ctx = sr.Context("cpu")
    threads = gb.ss.config["nthreads"] if gb else "-"
    print(f"CPU backend, {os.cpu_count()} cores; scipy one thread, GraphBLAS {threads} threads; medians of 7 "
          "(SpGEMM 3)", flush=True)
    rows = []
    for name, A in cases(args.data, args.quick):
        if args.only and name not in args.only.split(","):
            continue
        for r in product_rows(name, A, ctx, gb, not args.no_scipy_spgemm):
            rows.append(r)
            print(f"{r['product']:13} {r['matrix']:20} ours {r['ours_ms']:9.3f} ms  scipy {r['scipy_ms']:9.3f} ms "
                  f"{r['scipy_ms'] / r['ours_ms']:6.2f}x  GraphBLAS {r['graphblas_ms']:9.3f} ms "
                  f"{r['graphblas_ms'] / r['ours_ms']:6.2f}x  (err {r['rel_err']:.1e})", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(cores=os.cpu_count(), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
