"""The host k-NN's overlap path against its dense path (SPARSERING_KNN_OVERLAP=0), on the real
bags of words: 1,000 queries at once, and single queries against a fitted index (the median of
100), per metric.

    PYTHONPATH=BUILD/python python3 bench/probes/knn_overlap_cpu.py DATA_DIR [--sets bow,ngrams]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import knn_data  # noqa: E402
import sparsering as sr  # noqa: E402


def timed(f, reps):
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("--sets", default="bow,ngrams")
    ap.add_argument("--metrics", default="euclidean,cosine,manhattan,jaccard,correlation")
    ap.add_argument("--queries", type=int, default=1000)
    args = ap.parse_args()
    ctx = sr.Context("cpu")
    print(f"threads: {ctx.threads}" if hasattr(ctx, "threads") else "")
    print(f"{'set':8} {'metric':12} {'batch dense s':>14} {'batch overlap s':>16} {'speedup':>8} "
          f"{'1 query dense ms':>17} {'1 query overlap ms':>19} {'speedup':>8}")
    for name in args.sets.split(","):
        X = knn_data.load_real(name, args.data).astype(np.float32)
        Xm = sr.Matrix(X, context=ctx)
        rows = np.random.default_rng(0).choice(X.shape[0], args.queries, replace=False)
        Q = sr.Matrix(X[rows], context=ctx)
        q1 = [sr.Matrix(X[r:r + 1], context=ctx) for r in rows[:100]]
        for metric in args.metrics.split(","):
            res = {}
            for mode in ("0", ""):
                os.environ["SPARSERING_KNN_OVERLAP"] = mode
                batch = timed(lambda: sr.kneighbors(Xm, Q, 10, metric, context=ctx), 1)
                single = float(np.median([timed(lambda: sr.kneighbors(Xm, q, 10, metric, context=ctx), 1)
                                          for q in q1]))  # the median query: robust to a busy machine
                res[mode] = (batch, single, sr.kneighbors(Xm, Q, 10, metric, context=ctx))
            del os.environ["SPARSERING_KNN_OVERLAP"]
            same = np.array_equal(res["0"][2][1], res[""][2][1]) and np.array_equal(res["0"][2][0], res[""][2][0])
            print(f"{name:8} {metric:12} {res['0'][0]:14.3f} {res[''][0]:16.3f} {res['0'][0] / res[''][0]:8.2f} "
                  f"{res['0'][1] * 1e3:17.2f} {res[''][1] * 1e3:19.2f} {res['0'][1] / res[''][1]:8.2f}"
                  f"  identical {same}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
