"""The device radius search's tile path (src/cuda/cuda_radius_tiles.cu: keeps pairs as it scores)
against the dense path it replaced (SPARSERING_KNN_TILES=0: a block of n distances per query, then
the rows within the radius), in one process: a batch of queries per set and metric at a radius
keeping about k rows a query (the median of the queries' k-th neighbour distances), with whether
the two results agree (the same pairs; values to the last bit but for the dense kernels' atomics).

    python3 bench/probes/radius_tiles_gpu.py BUILD --data DATA [--sets sec-edgar-like] [--metrics cosine]
        [--queries 2000] [--k 5]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
from knn_overlap_gpu import device_set  # noqa: E402


def radius_run(sr, cp, ctx, Xd, Qd, radius, metric, tiles, reps):
    """(median seconds, the result as scipy CSR) with SPARSERING_KNN_TILES at `tiles`."""
    from sparsering import _ops
    os.environ["SPARSERING_KNN_TILES"] = tiles
    times, R = [], None
    for _ in range(reps + 1):  # the first warms up
        t0 = time.perf_counter()
        R = _ops._radius_matrix(Xd, Qd, radius, "distance", metric, None, False, np.float32, None, ctx)
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    os.environ.pop("SPARSERING_KNN_TILES")
    return float(np.median(times[1:])), R.to_scipy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--sets", default="sec-edgar-like")
    ap.add_argument("--metrics", default="cosine,euclidean")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    import cupy as cp
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    print(f"{'set':22} {'metric':22} {'queries':>8} {'radius':>10} {'pairs':>9} {'dense s':>9} {'tiles s':>9} "
          f"{'speedup':>8} {'same pairs':>10} {'max value diff':>14}", flush=True)
    for name in args.sets.split(","):
        X, Xd, rows, Qd = device_set(sr, ctx, name, args.data, args.queries)
        for metric in args.metrics.split(","):
            dist, _ = sr.kneighbors(Xd, Qd, args.k, metric, dtype=np.float32, output_type="cupy", context=ctx)
            kth = cp.asnumpy(dist)[:, -1]
            radius = float(np.median(kth))
            td, Rd = radius_run(sr, cp, ctx, Xd, Qd, radius, metric, "0", args.reps)
            tt, Rt = radius_run(sr, cp, ctx, Xd, Qd, radius, metric, "1", args.reps)
            same = (Rd.indptr.shape == Rt.indptr.shape and np.array_equal(Rd.indptr, Rt.indptr)
                    and np.array_equal(Rd.indices, Rt.indices))
            diff = float(np.abs(Rd.data.astype(np.float64) - Rt.data).max()) if same and Rd.nnz else 0.0
            print(f"{name:22} {metric:22} {len(rows):8d} {radius:10.4g} {Rt.nnz:9d} {td:9.4f} {tt:9.4f} "
                  f"{td / tt:8.2f} {str(same):>10} {diff:14.2e}", flush=True)
            if not same:  # pairs in one result only: are they all at the radius, to rounding?
                off = []
                for A, B in ((Rd, Rt), (Rt, Rd)):
                    ka = np.repeat(np.arange(A.shape[0], dtype=np.int64), np.diff(A.indptr)) * A.shape[1] + A.indices
                    kb = np.repeat(np.arange(B.shape[0], dtype=np.int64), np.diff(B.indptr)) * B.shape[1] + B.indices
                    off.append(A.data[~np.isin(ka, kb)].astype(np.float64))
                vals = np.concatenate(off)
                near = np.abs(vals - radius) <= 1e-5 * max(1.0, abs(radius))
                print(f"    {len(vals)} pairs in one result only ({len(off[0])} dense, {len(off[1])} tiles); "
                      f"at the radius to 1e-5: {int(near.sum())}", flush=True)


if __name__ == "__main__":
    main()
