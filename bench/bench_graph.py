"""Neighbour-graph benchmark: sparsering's kneighbors_graph (plain and symmetrized) and
radius_neighbors_graph of a whole data set, against scikit-learn (brute force, all cores) and a
cuSPARSE SpGEMM-then-densify baseline (cupy), in the same process, on the real data sets.

    python3 bench/bench_graph.py BUILD_DIR DATA_DIR [--cache .device/data/knn] [--sets ratings,bow,ngrams]
        [--metrics cosine,euclidean] [--k 15] [--baseline-queries 2000] [--sklearn-queries 100] [--backend cuda]
        [--json out.json]

Ours is one run over every row (after a warm-up on a few rows), with the context's peak device
memory (inputs included). The baselines are timed on the first rows as queries and scaled to
all rows (the work is linear in the queries): scikit-learn's NearestNeighbors.kneighbors_graph /
radius_neighbors_graph, and cupy's SpGEMM -> dense -> top-k (or threshold) per batch, with the
cupy pool's high-water mark. The radius is just below the median distance to the k-th neighbour,
so most rows keep about k pairs. Checks: the graph's distances against scikit-learn's on the timed
rows (1e-3 relative), and the radius graph's pair count against scikit-learn's."""
import argparse
import json
import os
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import knn_data  # noqa: E402
from bench_knn import baseline_knn  # noqa: E402


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return time.perf_counter() - t0, out


def baseline_radius(cp, cpx, X, Q, metric, r):
    """cuSPARSE SpGEMM -> dense distances -> the pairs within r, as a cupy CSR."""
    dot = (Q @ X.T).toarray()
    xs = cp.asarray(X.multiply(X).sum(axis=1)).ravel()
    qs = cp.asarray(Q.multiply(Q).sum(axis=1)).ravel()
    if metric == "cosine":
        D = 1 - dot / cp.maximum(cp.sqrt(qs)[:, None] * cp.sqrt(xs)[None, :], 1e-30)
    else:
        D = cp.sqrt(cp.maximum(qs[:, None] + xs[None, :] - 2 * dot, 0))
    return cpx.csr_matrix(cp.where(D <= r, D, 0))  # (drops exact zeros: a baseline, not a reference)


def run_baseline(cp, f, Xc, rows, batch):
    """Times f(Xc, Xc[q0:q1]) over the first `rows` rows in batches; (seconds, pool peak)."""
    pool = cp.get_default_memory_pool()
    pool.free_all_blocks()
    f(Xc, Xc[:min(batch, rows)])  # warm-up
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for q0 in range(0, rows, batch):
        f(Xc, Xc[q0:min(rows, q0 + batch)])
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0, pool.total_bytes()


def run_set(sr, cp, cpx, name, X, metric, args, out):
    from sklearn.neighbors import NearestNeighbors
    ctx = sr.Context(args.backend)
    m = X.shape[0]
    M = sr.Matrix(X, context=ctx)
    sr.kneighbors(M, sr.Matrix(X[:64], context=ctx), k=args.k, metric=metric, context=ctx)  # warm-up
    row = {"input": name, "rows": m, "cols": X.shape[1], "nnz": X.nnz, "metric": metric, "k": args.k}

    def ours(f):
        ctx.synchronize()
        ctx.reset_peak_memory()
        t, g = timed(lambda: f())
        return t, ctx.device_memory()[1], g

    t, peak, G = ours(lambda: sr.kneighbors_graph(M, args.k, mode="distance", metric=metric, context=ctx))
    row.update(knn_graph_seconds=t, knn_graph_peak_bytes=peak, knn_graph_nnz=G.nnz)
    t, peak, S = ours(lambda: sr.kneighbors_graph(M, args.k, mode="distance", metric=metric, symmetrize=True,
                                                  context=ctx))
    row.update(knn_graph_sym_seconds=t, knn_graph_sym_peak_bytes=peak, knn_graph_sym_nnz=S.nnz)
    kth = np.array([G.data[G.indptr[i]:G.indptr[i + 1]].max() for i in range(m)])
    # just below the median: on count data many pairs lie exactly at it (bag of words: sqrt(7)), and a
    # float32 distance and scikit-learn's float64 one fall either side of such a radius
    r = float(np.median(kth)) * (1 - 1e-4)
    t, peak, R = ours(lambda: sr.radius_neighbors_graph(M, r, mode="distance", metric=metric, context=ctx))
    row.update(radius=r, radius_seconds=t, radius_peak_bytes=peak, radius_nnz=R.nnz)

    nb = min(args.baseline_queries, m)
    Xc = cpx.csr_matrix(X) if cp else None
    try:
        tb, pb = run_baseline(cp, lambda A, Q: baseline_knn(cp, cpx, A, Q, metric, args.k + 1), Xc, nb, 1000)
        row.update(cusparse_knn_seconds=tb * m / nb, cusparse_knn_peak_bytes=pb)
        tb, pb = run_baseline(cp, lambda A, Q: baseline_radius(cp, cpx, A, Q, metric, r), Xc, nb, 1000)
        row.update(cusparse_radius_seconds=tb * m / nb, cusparse_radius_peak_bytes=pb)
    except Exception as e:  # out of memory is a result too (or no cupy)
        row.update(cusparse_error=str(e)[:80])
    del Xc
    if cp:
        cp.get_default_memory_pool().free_all_blocks()

    ns = min(args.sklearn_queries, m)
    if ns > 0:
        nn = NearestNeighbors(n_neighbors=args.k, radius=r, metric=metric, algorithm="brute", n_jobs=-1).fit(X)
        ts, ref = timed(lambda: nn.kneighbors_graph(X[:ns], args.k + 1, mode="distance"))
        row.update(sklearn_knn_seconds=ts * m / ns)
        ours_d = np.sort(sr.kneighbors(M, sr.Matrix(X[:ns], context=ctx), k=args.k + 1, metric=metric,
                                       context=ctx)[0], axis=1)
        ref_d = np.stack([np.sort(ref.data[ref.indptr[i]:ref.indptr[i + 1]]) for i in range(ns)])
        row["max_rel_diff"] = float(np.max(np.abs(ref_d - ours_d) / (1 + np.abs(ours_d))))
        ts, refr = timed(lambda: nn.radius_neighbors_graph(X[:ns], r, mode="distance"))
        # scikit-learn's queries find themselves (given as X, not None); ours left each row out
        row.update(sklearn_radius_seconds=ts * m / ns, radius_pairs_sklearn=int(refr.nnz),
                   radius_pairs_ours=int(R[:ns].nnz) + ns)
    out.append(row)
    f = lambda v: "-" if v is None else f"{v:.3g}"  # noqa: E731
    mib = lambda v: "-" if v is None else f"{v / 2**20:.0f}"  # noqa: E731
    print(f"{name:8s} {metric:10s} knn-graph {f(row['knn_graph_seconds'])} s ({mib(row['knn_graph_peak_bytes'])} MiB)"
          f", symmetrized {f(row['knn_graph_sym_seconds'])} s; radius {r:.4g}: {f(row['radius_seconds'])} s "
          f"({mib(row['radius_peak_bytes'])} MiB, {R.nnz} pairs) | cuSPARSE knn {f(row.get('cusparse_knn_seconds'))} s "
          f"({mib(row.get('cusparse_knn_peak_bytes'))} MiB), radius {f(row.get('cusparse_radius_seconds'))} s | "
          f"sklearn knn {f(row.get('sklearn_knn_seconds'))} s, radius {f(row.get('sklearn_radius_seconds'))} s | "
          f"diff {f(row.get('max_rel_diff'))}, radius pairs on {ns} rows: ours {row.get('radius_pairs_ours')} "
          f"sklearn {row.get('radius_pairs_sklearn')}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("data")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--sets", default="ratings,bow,ngrams")
    ap.add_argument("--metrics", default="cosine,euclidean")
    ap.add_argument("--k", type=int, default=15)
    ap.add_argument("--baseline-queries", type=int, default=2000)
    ap.add_argument("--sklearn-queries", type=int, default=100)
    ap.add_argument("--backend", default="cuda", help="cuda, or cpu (no cuSPARSE baseline then)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    cp = cpx = None
    if args.backend == "cuda":
        import cupy as cp
        import cupyx.scipy.sparse as cpx

    import sparsering as sr
    rows = []
    for name in args.sets.split(","):
        X = knn_data.load_real(name, args.data, args.cache).astype(np.float32).tocsr()
        X = sp.csr_matrix(X)
        for metric in args.metrics.split(","):
            run_set(sr, cp, cpx, name, X, metric, args, rows)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
