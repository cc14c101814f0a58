"""One k-NN call of the tensor-core panel on a generated paper-scale set, for a profiler to time
kernel by kernel (the set and the matrices are made before the call; one warm-up call first when
asked). Under Nsight Compute:

    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python3 bench/probes/knn_panel_profile.py BUILD --set nytimes-like --queries 2000 \
        [--settings 'SPARSERING_KNN_PANEL_COLUMNS=2048;SPARSERING_KNN_PANEL=0']
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import knn_data  # noqa: E402
import sr_package  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--set", default="nytimes-like")
    ap.add_argument("--metric", default="cosine")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--warm", action="store_true", help="one call before the one timed")
    ap.add_argument("--settings", default="", help="calls under these settings, one after another: "
                    "'NAME=V,NAME=V;NAME=V' (a call a group)")
    args = ap.parse_args()
    import cupy as cp
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    X = knn_data.paper_set(args.set)
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], min(args.queries, X.shape[0]), replace=False))
    Xd = sr.Matrix(X, context=ctx, location="device")
    Qd = sr.Matrix(X[rows], context=ctx, location="device")
    call = lambda: sr.kneighbors(Xd, Qd, args.k, args.metric, dtype=np.float32, output_type="cupy", context=ctx)
    if args.warm:
        call()
    for group in args.settings.split(";"):
        pairs = [kv.split("=", 1) for kv in group.split(",") if kv]
        for name, value in pairs:
            os.environ[name] = value
        cp.cuda.Device().synchronize()
        t = time.perf_counter()
        call()
        cp.cuda.Device().synchronize()
        print(f"{args.set} {args.metric} [{group}]: {len(rows)} queries {1e3 * (time.perf_counter() - t):.1f} ms; "
              f"{sr.last_method()}", flush=True)
        for name, _ in pairs:
            os.environ.pop(name)


if __name__ == "__main__":
    main()
