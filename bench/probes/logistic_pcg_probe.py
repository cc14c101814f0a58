"""Logistic regression (C = 1) with and without the preconditioned truncated CG on the PyPI text
sets (labels as bench_fused.py), on the CPU backend: Newton and CG steps, seconds, objective.
usage: python3 bench/probes/logistic_pcg_probe.py BUILD_DIR [--data ../shared/data]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from bench_fused import text_sets  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--data", default="../shared/data")
args = ap.parse_args()
sr = sr_package.load(args.build)
ctx = sr.Context("cpu")
for name, X, y in text_sets(args.data):
    X = X.astype(np.float64).tocsr()
    obj = lambda w: 0.5 * w @ w + np.logaddexp(0, -y * (X @ w)).sum()  # noqa: E731
    res = {}
    for pre in ("jacobi", None):
        t0 = time.perf_counter()
        r = sr.logistic_regression(X, y, 1.0, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        h = r.history[-1]
        res[pre] = r.coef
        print(f"{name} {pre or 'plain':7}: {h[0]} Newton, {h[1]} CG, {t:.2f} s, objective {obj(r.coef):.6f}, "
              f"|grad| {h[3]:.2e}", flush=True)
    print(f"  max rel coef diff {np.abs(res['jacobi'] - res[None]).max() / np.abs(res[None]).max():.1e}")
