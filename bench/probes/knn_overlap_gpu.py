"""The device k-NN's overlap path (src/cuda/cuda_knn_overlap.cu) against its dense path
(SPARSERING_KNN_OVERLAP=0) in one process (the metrics it takes: cosine, inner_product, kl_divergence, russellrao): a batch of queries and one all-vs-all run per set and
metric, with how far the two disagree (real values: the dense kernel's atomics sum in an order of
their own, so distances may differ in the last bit and near-ties swap).

    python3 bench/probes/knn_overlap_gpu.py BUILD --data DATA [--sets sec-edgar-like,bow] [--all-vs-all]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import knn_data  # noqa: E402
import sr_package  # noqa: E402


def load(name, data):
    if name in knn_data.PAPER_SETS:
        return knn_data.paper_set(name)
    return knn_data.load_real(name, data).astype(np.float32).tocsr()


def device_set(sr, ctx, name, data, queries):
    """The set (indices sorted) on the host and the device, `queries` of its rows drawn at random
    (seed 0, in index order), and those rows on the device: (X, Xd, rows, Qd)."""
    X = load(name, data)
    X.sort_indices()
    Xd = sr.Matrix(X, context=ctx, location="device")
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], min(queries, X.shape[0]), replace=False))
    return X, Xd, rows, sr.Matrix(X[rows], context=ctx, location="device")


def run(sr, cp, ctx, Xd, Qd, k, metric, mode, reps, setting="SPARSERING_KNN_OVERLAP"):
    """k-NN with the environment `setting` at `mode`: (median seconds, indices, distances)."""
    os.environ[setting] = mode
    out = sr.kneighbors(Xd, Qd, k, metric, dtype=np.float32, output_type="cupy", context=ctx)  # warm-up
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        out = sr.kneighbors(Xd, Qd, k, metric, dtype=np.float32, output_type="cupy", context=ctx)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    os.environ.pop(setting)
    return float(np.median(times)), cp.asnumpy(out[1]), cp.asnumpy(out[0])  # (seconds, indices, distances)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--sets", default="sec-edgar-like,bow,ngrams")
    ap.add_argument("--metrics", default="cosine,inner_product")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--all-vs-all", action="store_true", help="also every row as a query, once a path")
    args = ap.parse_args()
    import cupy as cp
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    print(f"{'set':16} {'metric':14} {'queries':>8} {'dense s':>9} {'auto s':>9} {'forced s':>9} {'speedup':>8} "
          f"{'idx differ':>10} {'max dist diff':>13}  (auto: the cost rule; forced: SPARSERING_KNN_OVERLAP=1;"
          f" differences: forced against dense)", flush=True)
    for name in args.sets.split(","):
        X = load(name, args.data)
        X.sort_indices()
        Xd = sr.Matrix(X, context=ctx, location="device")
        rows = np.random.default_rng(0).choice(X.shape[0], min(args.queries, X.shape[0]), replace=False)
        batches = [(str(len(rows)), sr.Matrix(X[rows], context=ctx, location="device"), args.reps)]
        if args.all_vs_all:
            batches.append(("all", Xd, 1))
        for metric in args.metrics.split(","):
            for label, Qd, reps in batches:
                td, di, dd = run(sr, cp, ctx, Xd, Qd, args.k, metric, "0", reps)
                ta, _, _ = run(sr, cp, ctx, Xd, Qd, args.k, metric, "", reps)
                tf, oi, od = run(sr, cp, ctx, Xd, Qd, args.k, metric, "1", reps)
                diff = np.abs(dd.astype(np.float64) - od).max() if dd.size else 0.0
                print(f"{name:16} {metric:14} {label:>8} {td:9.4f} {ta:9.4f} {tf:9.4f} {td / min(ta, tf):8.1f} "
                      f"{int((di != oi).sum()):10d} {diff:13.2e}", flush=True)


if __name__ == "__main__":
    main()
