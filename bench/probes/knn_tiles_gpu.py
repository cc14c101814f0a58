"""The device k-NN's tile path (src/cuda/cuda_knn_tiles.cu: selects while it scores) against the
dense path it replaced (SPARSERING_KNN_TILES=0: a block of n distances per query, then the
selection kernel), in one process: a batch of queries per set and metric, optionally one
all-vs-all run, with how far the two disagree (real values: the dense kernels' atomics sum in an
order of their own, so distances may differ in the last bit and near-ties swap).

    python3 bench/probes/knn_tiles_gpu.py BUILD --data DATA [--sets sec-edgar-like] [--metrics cosine]
        [--queries 2000] [--all-vs-all]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
import knn_overlap_gpu as overlap_probe  # noqa: E402
from knn_overlap_gpu import device_set  # noqa: E402


def run(sr, cp, ctx, Xd, Qd, k, metric, tiles, reps):
    return overlap_probe.run(sr, cp, ctx, Xd, Qd, k, metric, tiles, reps, setting="SPARSERING_KNN_TILES")


def referee(sr, ctx, X, rows, k, metric, wrong_rows, got):
    """For queries where the paths disagree: the k best distances in float64 (sr.pairwise_distances),
    and whether each path's k distances are those to 1e-5 relative (float32 sums may swap near-ties)."""
    verdict = []
    for q in wrong_rows[:5]:
        D = np.asarray(sr.pairwise_distances(X[rows[q]:rows[q] + 1], X, metric, dtype=np.float64, context=ctx))[0]
        best = np.sort(-D if metric == "inner_product" else D)[:k]
        best = -best if metric == "inner_product" else best
        verdict.append(tuple(bool(np.allclose(g[q], best, rtol=1e-5, atol=1e-6)) for g in got))
    return verdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--sets", default="sec-edgar-like")
    ap.add_argument("--metrics", default="cosine,euclidean")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--all-vs-all", action="store_true", help="also every row as a query, once, tiles only")
    args = ap.parse_args()
    import cupy as cp
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    print(f"{'set':22} {'metric':22} {'queries':>8} {'dense s':>9} {'tiles s':>9} {'speedup':>8} {'scaled all s':>12} "
          f"{'idx differ':>10} {'max dist diff':>13}", flush=True)
    for name in args.sets.split(","):
        X, Xd, rows, Qd = device_set(sr, ctx, name, args.data, args.queries)
        for metric in args.metrics.split(","):
            td, di, dd = run(sr, cp, ctx, Xd, Qd, args.k, metric, "0", args.reps)
            tt, ti, tdist = run(sr, cp, ctx, Xd, Qd, args.k, metric, "1", args.reps)
            diff = float(np.abs(dd.astype(np.float64) - tdist).max()) if dd.size else 0.0
            wrong = np.nonzero((di != ti).any(axis=1))[0]
            print(f"{name:22} {metric:22} {len(rows):8d} {td:9.4f} {tt:9.4f} {td / tt:8.2f} "
                  f"{tt * X.shape[0] / len(rows):12.2f} {int((di != ti).sum()):10d} {diff:13.2e}", flush=True)
            if len(wrong):
                print(f"    {len(wrong)} queries differ; (dense right, tiles right) against the full distance row "
                      f"of the first five: {referee(sr, ctx, X, rows, args.k, metric, wrong, (dd, tdist))}", flush=True)
            if args.all_vs_all:
                t0 = time.perf_counter()
                os.environ["SPARSERING_KNN_TILES"] = "1"
                sr.kneighbors(Xd, Xd, args.k, metric, dtype=np.float32, output_type="cupy", context=ctx)
                cp.cuda.Device().synchronize()
                os.environ.pop("SPARSERING_KNN_TILES")
                print(f"{name:22} {metric:22} {'all':>8} {'':9} {time.perf_counter() - t0:9.3f}  (all-vs-all, measured)",
                      flush=True)


if __name__ == "__main__":
    main()
