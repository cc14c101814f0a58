"""The tensor-core panel's width against time, on a generated paper-scale set: k-NN of a fixed
subset of queries against the whole index at the cost model's width and at forced widths
(SPARSERING_KNN_PANEL_COLUMNS), and without the panel; scaled to all rows as queries.

    python3 bench/probes/knn_panel_widths.py BUILD [--set nytimes-like] [--metric cosine]
        [--queries 2000] [--widths 0,1024,2048,4096] [--precision exact]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import knn_data  # noqa: E402
import sr_package  # noqa: E402
from timing import median_time  # noqa: E402


def probe_parser():
    """The options every panel probe takes (knn_panel_profile.py too)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--set", default="nytimes-like")
    ap.add_argument("--metric", default="cosine")
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--k", type=int, default=5)
    return ap


def probe_inputs(args):
    """The package, a CUDA context, the generated set, the chosen query rows (a fixed random
    subset) and both on the device."""
    sr = sr_package.load(args.build)
    ctx = sr.Context("cuda")
    X = knn_data.paper_set(args.set)
    rows = np.sort(np.random.default_rng(0).choice(X.shape[0], min(args.queries, X.shape[0]), replace=False))
    Xd = sr.Matrix(X, context=ctx, location="device")
    Qd = sr.Matrix(X[rows], context=ctx, location="device")
    return sr, ctx, X, rows, Xd, Qd


def main():
    ap = probe_parser()
    ap.add_argument("--widths", default="0,1024,2048,4096")
    ap.add_argument("--precision", default="exact")
    args = ap.parse_args()
    import cupy as cp
    sr, ctx, X, rows, Xd, Qd = probe_inputs(args)
    scale = X.shape[0] / len(rows)
    ref = None
    for w in [int(v) for v in args.widths.split(",")] + [-1]:
        os.environ.pop("SPARSERING_KNN_PANEL_COLUMNS", None)
        os.environ["SPARSERING_KNN_PANEL"] = "0" if w < 0 else ("1" if w > 0 else "")
        if w > 0:
            os.environ["SPARSERING_KNN_PANEL_COLUMNS"] = str(w)
        out = []
        t = median_time(lambda: out.append(sr.kneighbors(Xd, Qd, args.k, args.metric, dtype=np.float32,
                                                         output_type="cupy", context=ctx,
                                                         precision=args.precision)),
                        reps=3, warm=1, sync=cp.cuda.Device().synchronize)
        d = cp.asnumpy(out[-1][0])
        ref = d if ref is None else ref
        print(f"{args.set} {args.metric} width {w if w >= 0 else 'none':>5}: {t * 1e3:8.1f} ms for {len(rows)} "
              f"queries, {t * scale:6.2f} s scaled; max |d - first| {np.max(np.abs(d - ref)):.2e}; "
              f"{sr.last_method()}", flush=True)
    os.environ.pop("SPARSERING_KNN_PANEL", None)
    os.environ.pop("SPARSERING_KNN_PANEL_COLUMNS", None)
    # the parts' floors at the default width: the FP16 product alone (cupy, cuBLAS) and one write
    # plus one read of the block of dot products, for the same queries
    sr.kneighbors(Xd, Qd, args.k, args.metric, dtype=np.float32, output_type="cupy", context=ctx)
    width = int(sr.last_method().split("panel of ")[1].split()[0]) if "panel of" in sr.last_method() else 0
    if width:
        a = cp.ones((len(rows), width), cp.float16)
        b = cp.ones((width, X.shape[0]), cp.float16)
        t_gemm = median_time(lambda: cp.matmul(a, b, out=None).astype(cp.float32, copy=False), reps=3, warm=1,
                             sync=cp.cuda.Device().synchronize)
        blk = cp.empty((len(rows), X.shape[0]), cp.float32)
        t_copy = median_time(lambda: blk.copy(), reps=3, warm=1, sync=cp.cuda.Device().synchronize)
        print(f"width {width}: FP16 product of the queries' panel {t_gemm * 1e3:.1f} ms ({t_gemm * scale:.2f} s "
              f"scaled); the block copied once {t_copy * 1e3:.1f} ms ({t_copy * scale:.2f} s scaled)", flush=True)


if __name__ == "__main__":
    main()
