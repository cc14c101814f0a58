"""k-NN benchmark: sparsering against scikit-learn (brute force, all cores) and a cuSPARSE
SpGEMM-then-densify baseline (cupy), in the same process, on real and paper-scale data.

    python3 bench/bench_knn.py BUILD_DIR DATA_DIR [--cache .device/data/knn] [--queries 1000]
        [--k 10] [--metrics cosine,euclidean,...] [--sets ratings,bow,ngrams,scrna-like,...]
        [--precision exact,float32] [--sklearn-queries 100] [--all-vs-all] [--avv-limit 300]
        [--json out.json]

Each case times a fixed random subset of query rows (seed 0) against the whole index (the work
is linear in the queries) and prints the measured time and the time scaled to all rows as
queries (the papers' all-vs-all figure; --all-vs-all also times one real run with every row as
a query, which is what RAFT's tables measure, where the scaled figure is under --avv-limit seconds).
Every cell runs in each --precision (tensor cores: "exact", "tf32"; none: "float32") and prints the
path the library took (sparsering.last_method()) and, for the paper-scale sets, × RAFT's V100. Results are checked: the sorted neighbour distances
must match the baseline's (or scikit-learn's) to 1e-3 relative.
Peak device memory is sparsering's context peak (inputs included) and the cupy pool's high
water mark for the baseline (inputs included)."""
import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import knn_data  # noqa: E402
import plots  # noqa: E402
import sr_package  # noqa: E402
from timing import median_time  # noqa: E402

ALL_METRICS = ["euclidean", "sqeuclidean", "euclidean_unexpanded", "cosine", "inner_product", "correlation",
               "jaccard", "dice", "russellrao", "hellinger", "kl_divergence", "manhattan", "minkowski", "canberra",
               "hamming", "jensenshannon", "braycurtis", "chebyshev"]
SKLEARN_SPARSE = {"euclidean", "cosine", "manhattan"}  # scikit-learn's brute force takes sparse input for these
BASELINE = {"euclidean", "sqeuclidean", "cosine", "inner_product", "correlation", "jaccard", "dice", "russellrao",
            "hellinger"}  # expressible as one SpGEMM plus norms


def baseline_knn(cp, cpx, X, Q, metric, k):
    """cuSPARSE SpGEMM (cupyx) -> dense -> expansion -> top-k, as the papers' baseline."""
    d = X.shape[1]
    if metric in ("jaccard", "dice", "russellrao"):
        X, Q = X.copy(), Q.copy()
        X.data[:] = 1
        Q.data[:] = 1
    if metric == "hellinger":
        X, Q = X.sqrt(), Q.sqrt()
    dot = (Q @ X.T).toarray()
    xs = cp.asarray(X.multiply(X).sum(axis=1)).ravel()
    qs = cp.asarray(Q.multiply(Q).sum(axis=1)).ravel()
    if metric in ("euclidean", "sqeuclidean"):
        D = cp.maximum(qs[:, None] + xs[None, :] - 2 * dot, 0)
        if metric == "euclidean":
            D = cp.sqrt(D)
    elif metric == "cosine":
        D = 1 - dot / cp.maximum(cp.sqrt(qs)[:, None] * cp.sqrt(xs)[None, :], 1e-30)
    elif metric == "inner_product":
        D = -dot
    elif metric == "correlation":
        xm = cp.asarray(X.sum(axis=1)).ravel()
        qm = cp.asarray(Q.sum(axis=1)).ravel()
        cov = dot - qm[:, None] * xm[None, :] / d
        den = cp.sqrt(cp.maximum((qs - qm * qm / d)[:, None] * (xs - xm * xm / d)[None, :], 0))
        D = cp.where(den > 0, 1 - cov / cp.where(den > 0, den, 1), 1)  # constant rows: 1, as sparsering
    elif metric == "jaccard":
        union = qs[:, None] + xs[None, :] - dot
        D = cp.where(union > 0, 1 - dot / cp.where(union > 0, union, 1), 0)  # two empty rows: 0
    elif metric == "dice":
        tot = qs[:, None] + xs[None, :]
        D = cp.where(tot > 0, 1 - 2 * dot / cp.where(tot > 0, tot, 1), 0)
    elif metric == "russellrao":
        D = (d - dot) / d
    elif metric == "hellinger":  # X, Q hold square roots: qs, xs are the plain sums
        D = cp.sqrt(cp.maximum(0.5 * (qs[:, None] + xs[None, :]) - dot, 0))
    part = cp.argpartition(D, k - 1, axis=1)[:, :k]
    vals = cp.take_along_axis(D, part, axis=1)
    order = cp.argsort(vals, axis=1)
    out = cp.take_along_axis(vals, order, axis=1)
    return -out if metric == "inner_product" else out


def third_opinion(X, Q, metric, k, ours, base, rows=20):
    """scipy in float64 on the host for the first rows: which side is right?"""
    Q = Q[:rows].astype(np.float64)
    X = X.astype(np.float64)
    dot = (Q @ X.T).toarray()
    qs = np.asarray(Q.multiply(Q).sum(1)).ravel()
    xs = np.asarray(X.multiply(X).sum(1)).ravel()
    if metric == "cosine":
        D = 1 - dot / np.maximum(np.sqrt(qs)[:, None] * np.sqrt(xs)[None, :], 1e-300)
    else:
        D = np.sqrt(np.maximum(qs[:, None] + xs[None, :] - 2 * dot, 0))
    exact = np.sort(D, axis=1)[:, :k]
    err = lambda got: float(np.max(np.abs(got[:rows] - exact) / (1 + exact)))  # noqa: E731
    return {"sparsering_vs_scipy": err(ours), "baseline_vs_scipy": err(base)}


def time_all_vs_all(sr, ctx, cp, Xd, k, metric, p, precision):
    """One real all-vs-all run (every row a query; the papers' figure, measured rather than
    scaled), after the subset's warm-up: (seconds, peak device bytes)."""
    ctx.reset_peak_memory()
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    sr.kneighbors(Xd, Xd, k, metric, p=p, dtype=np.float32, output_type="cupy", context=ctx, precision=precision)
    cp.cuda.Device().synchronize()
    return time.perf_counter() - t0, ctx.device_memory()[1]


def panel_shape(method):
    """(panel columns H, the GEMM's depth) of an FP16 tensor-core panel as the method string
    reports it, or None (no panel, or a TF32 one): H for the dot products, T·H for count levels,
    (T + 1)·H for equality levels, 2·T·H for value classes (docs/tensor-cores.md)."""
    m = re.search(r"panel of (\d+) of", method)
    if not m or "FP16" not in method:
        return None
    H = int(m.group(1))
    lv = re.search(r"(\d+) (count levels|value classes)", method)
    if not lv:
        return H, H
    T = int(lv.group(1))
    blocks = 2 * T if lv.group(2) == "value classes" else T + 1 if "(equality)" in method else T
    return H, H * blocks


def panel_gemm_seconds(cp, n, depth, batch):
    """cuBLAS FP16 (cupy.matmul: FP16 out, FP32 sums) of `batch` query rows of a dense panel of
    `depth` columns against n index rows, median of 3, scaled to all n rows as queries: the
    arithmetic the panel path's all-vs-all cannot go below (its block is FP32, twice these output
    bytes)."""
    x = cp.ones((n, depth), dtype=cp.float16)
    q = cp.ones((batch, depth), dtype=cp.float16)
    t = median_time(lambda: cp.matmul(q, x.T), reps=3, warm=1, sync=cp.cuda.Device().synchronize)
    del x, q
    cp.get_default_memory_pool().free_all_blocks()
    return t * n / batch


def run_case(sr, ctx, cp, cpx, name, X, qrows, metric, k, args, rows_out, precision="exact"):
    """The package's k-NN on device matrices (the index and queries uploaded once), its results
    on the device as cupy arrays."""
    n, nq = X.shape[0], len(qrows)
    Q = X[qrows]
    p = 3.0 if metric == "minkowski" else None
    Xd, Qd = sr.Matrix(X, context=ctx, location="device"), sr.Matrix(Q, context=ctx, location="device")
    ctx.reset_peak_memory()
    reps = args.reps
    result = []
    t_ours = median_time(lambda: result.append(sr.kneighbors(Xd, Qd, k, metric, p=p, dtype=np.float32,
                                                              output_type="cupy", context=ctx, precision=precision)),
                         reps=reps, warm=1, sync=cp.cuda.Device().synchronize)
    method = sr.last_method()
    peak_ours = ctx.device_memory()[1]
    ours = cp.asnumpy(result[-1][0])
    del result, Qd
    scaled = t_ours * n / nq
    measured = None
    if args.all_vs_all and scaled < args.avv_limit:
        measured = time_all_vs_all(sr, ctx, cp, Xd, k, metric, p, precision)
    del Xd
    ours_avv = measured[0] if measured is not None else scaled  # what the comparisons below divide

    row = {"operation": "knn", "input": name, "metric": metric, "backend": "cuda", "index_rows": n, "queries": nq,
           "k": k, "precision": precision, "method": method, "seconds": t_ours, "all_vs_all_seconds": scaled,
           "peak_device_bytes": peak_ours, "nnz": int(X.nnz)}
    if measured is not None:
        row.update(all_vs_all_measured_seconds=measured[0], all_vs_all_peak_device_bytes=measured[1])
    shape = panel_shape(method)
    if shape and not args.no_panel_gemm:
        row.update(panel_columns=shape[0], panel_depth=shape[1],
                   panel_gemm_seconds=panel_gemm_seconds(cp, n, shape[1], min(nq, 2000)))
    raft = plots.RAFT_V100.get(name, {}).get(metric)
    if raft:
        row.update(raft_v100_seconds=raft, x_raft=raft / ours_avv)
    check = None
    if metric in BASELINE and not args.no_baseline and precision == args.precision.split(",")[0]:
        pool = cp.get_default_memory_pool()
        pool.free_all_blocks()
        Xc = cpx.csr_matrix(X)
        Qc = cpx.csr_matrix(Q)
        try:
            t_base = median_time(lambda: baseline_knn(cp, cpx, Xc, Qc, metric, k), reps=max(3, reps // 2), warm=1,
                                 sync=cp.cuda.Device().synchronize)
            ref = cp.asnumpy(baseline_knn(cp, cpx, Xc, Qc, metric, k))
            row.update(baseline_seconds=t_base, baseline_peak_device_bytes=pool.total_bytes(),
                       ratio=t_base / t_ours)
            check = float(np.max(np.abs(ref - ours) / (1 + np.abs(ref))))
            if check > 1e-3 and metric in ("cosine", "euclidean"):
                row["third_opinion"] = third_opinion(X, Q, metric, k, ours, ref)
        except Exception as e:  # out of memory at the largest sizes is a result too
            row.update(baseline_error=str(e)[:80])
        del Xc, Qc
        pool.free_all_blocks()
    if metric in SKLEARN_SPARSE and args.sklearn_queries > 0 and precision == args.precision.split(",")[0]:
        from sklearn.neighbors import NearestNeighbors
        ns = min(args.sklearn_queries, nq)
        nn = NearestNeighbors(n_neighbors=k, metric=metric, algorithm="brute", n_jobs=-1).fit(X)
        t0 = time.perf_counter()
        dsk, _ = nn.kneighbors(Q[:ns])
        t_sk = (time.perf_counter() - t0) * nq / ns
        row.update(sklearn_seconds=t_sk, sklearn_queries_timed=ns, sklearn_ratio=t_sk / t_ours)
        c = float(np.max(np.abs(dsk - ours[:ns]) / (1 + np.abs(dsk))))
        check = c if check is None else max(check, c)
    row["max_rel_diff"] = check
    if check is not None and check > 1e-3:
        row["MISMATCH"] = True
    rows_out.append(row)
    fmt = lambda v: "-" if v is None else f"{v:.4g}"  # noqa: E731
    print(f"{name:22s} {metric:14s} {precision:8s} {t_ours * 1e3:10.2f} {t_ours * n / nq:10.2f} {peak_ours / 2**20:8.0f}"
          f" {fmt(row.get('baseline_seconds', None) and row['baseline_seconds'] * 1e3):>10s}"
          f" {fmt(row.get('ratio')):>7s} {fmt(row.get('baseline_peak_device_bytes', None) and row['baseline_peak_device_bytes'] / 2**20):>8s}"
          f" {fmt(row.get('sklearn_seconds', None) and row['sklearn_seconds'] * 1e3):>10s} {fmt(row.get('sklearn_ratio')):>8s}"
          f" {fmt(check):>9s}{'  MISMATCH' if row.get('MISMATCH') else ''}"
          f"{'  ' + str(row['third_opinion']) if 'third_opinion' in row else ''}"
          f"{'  x RAFT %.0f' % row['x_raft'] if 'x_raft' in row else ''}  [{method}]", flush=True)
    if measured is not None:
        print(f"{name:22s} {metric:14s} {precision:8s} all-vs-all measured: {measured[0]:.2f} s, "
              f"peak {measured[1] / 2**20:.0f} MiB", flush=True)
    if "panel_gemm_seconds" in row:
        print(f"{name:22s} {metric:14s} {precision:8s} cuBLAS FP16 on the same panel ({n} x {row['panel_depth']}),"
              f" all-vs-all scaled: {row['panel_gemm_seconds']:.2f} s; ours {ours_avv / row['panel_gemm_seconds']:.2f}x it",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("data")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--metrics", default=",".join(ALL_METRICS))
    ap.add_argument("--sets", default="ratings,bow,ngrams")
    ap.add_argument("--sklearn-queries", type=int, default=100)
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--all-vs-all", action="store_true", help="also time one run with every row as a query")
    ap.add_argument("--avv-limit", type=float, default=300.0, help="measure all-vs-all only where scaled under this")
    ap.add_argument("--precision", default="exact", help="comma-separated: exact, tf32, float32")
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-panel-gemm", action="store_true",
                    help="skip cuBLAS FP16 on each panel cell's panel shape (the arithmetic floor beside it)")
    args = ap.parse_args()
    import cupy as cp
    import cupyx.scipy.sparse as cpx
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    rows = []
    print(f"{'data set':22s} {'metric':14s} {'precis.':8s} {'ours ms':>10s} {'all-vs-all s':>10s} {'peak MiB':>8s} {'cuSP ms':>10s}"
          f" {'ratio':>7s} {'cuSP MiB':>8s} {'sklearn ms':>10s} {'vs skl':>8s} {'max diff':>9s}")
    for name in args.sets.split(","):
        if name in knn_data.PAPER_SETS:
            X = knn_data.paper_set(name)
        else:
            X = knn_data.load_real(name, args.data, args.cache)
        X = X.astype(np.float32).tocsr()
        rng = np.random.default_rng(0)
        qrows = np.sort(rng.choice(X.shape[0], min(args.queries, X.shape[0]), replace=False))
        print(f"# {name}: {X.shape[0]} x {X.shape[1]}, {X.nnz} nnz, {len(qrows)} queries, k {args.k}", flush=True)
        for metric in args.metrics.split(","):
            for precision in args.precision.split(","):
                run_case(sr, ctx, cp, cpx, name, X, qrows, metric, args.k, args, rows, precision)
            if args.json:  # after every case: a run cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(rows, f, indent=1)
    if args.json and rows:
        paper = any(r["input"] in plots.RAFT_V100 for r in rows)
        plots.plot("knn-paper" if paper else "knn-real", rows, plots.beside(args.json))


if __name__ == "__main__":
    main()
