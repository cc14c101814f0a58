"""Where a GPU solver step's time goes: the fused pattern in float64 (what the solvers call) against
float32, a device dot product's round trip, and ridge / logistic per CG step (two run lengths, so
that the set-up cancels).
usage: python3 bench/probes/solver_probe.py BUILD_DIR [--data ../shared/data]"""
import argparse
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from knn_data import bag_of_words, ngrams  # noqa: E402
from timing import median_time  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--data", default="../shared/data")
args = ap.parse_args()
sr = sr_package.load(args.build)
ctx = sr.Context("cuda")
sync = cp.cuda.Device().synchronize
rng = np.random.default_rng(0)
for name, X in (("BoW", bag_of_words(args.data)), ("3-grams", ngrams(args.data))):
    m, n = X.shape
    print(f"{name}: {m}x{n} nnz {X.nnz}", flush=True)
    for dt in (np.float32, np.float64):
        Xd = sr.Matrix(X.astype(dt), context=ctx, location="device")
        y, v = (cp.asarray(rng.standard_normal(k).astype(dt)) for k in (n, m))
        for form, nw in (("xtvxy", n), ("xy", m), ("xty", n)):
            out = cp.empty(nw, dtype=dt)
            yy = v if form == "xty" else y
            t = median_time(lambda: sr.fused_pattern(Xd, yy, v=v, form=form, out=out, z=None, context=ctx),
                            reps=20, sync=sync)
            print(f"  {np.dtype(dt).name:8} {form:6} {t * 1e3:8.3f} ms", flush=True)
    a = cp.asarray(rng.standard_normal(n))
    print(f"  cupy dot of {n} float64 with its round trip {median_time(lambda: float(a @ a), reps=50) * 1e6:7.1f} us")
    X64 = X.astype(np.float64)
    Xd = sr.Matrix(X64, context=ctx, location="device")
    labels = np.where(np.arange(m) % 3 == 0, 1.0, -1.0)
    for steps in (100, 300):
        t0 = time.perf_counter()
        r = sr.ridge(Xd, labels, 1.0, tol=0.0, max_iter=steps, context=ctx)
        t = time.perf_counter() - t0
        print(f"  ridge {steps} CG steps: {t * 1e3:8.1f} ms ({t / steps * 1e3:.3f} ms a step incl. set-up)", flush=True)
    t0 = time.perf_counter()
    r = sr.logistic_regression(Xd, labels, 1.0, context=ctx)
    t = time.perf_counter() - t0
    h = r.history[-1]
    print(f"  logistic: {t * 1e3:8.1f} ms, {h[0]} Newton / {h[1]} CG steps ({t / max(1, h[1]) * 1e3:.3f} ms a CG step)",
          flush=True)
