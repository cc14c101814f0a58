"""Ridge by CG on the normal equations with and without the Jacobi preconditioner, on the PyPI
text sets (labels as bench_fused.py: the package name contains "py"), against scikit-learn's
Ridge(solver="sparse_cg") on the same cores: steps, seconds and the coefficients' difference.
usage: python3 bench/probes/ridge_jacobi_probe.py BUILD_DIR [--data ../shared/data] [--backend cpu|cuda]"""
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
ap.add_argument("--backend", default="cpu")
ap.add_argument("--lam", type=float, default=1.0)
args = ap.parse_args()
sr = sr_package.load(args.build)
ctx = sr.Context(args.backend)
from sklearn.linear_model import Ridge  # noqa: E402

for name, X, labels in text_sets(args.data):
    X = X.astype(np.float64).tocsr()
    t0 = time.perf_counter()
    sk = Ridge(alpha=args.lam, fit_intercept=False, solver="sparse_cg", tol=1e-10, max_iter=10_000).fit(X, labels).coef_
    t_sk = time.perf_counter() - t0
    print(f"{name}: scikit-learn sparse_cg {t_sk:.2f} s", flush=True)
    for pre in ("jacobi", None):
        t0 = time.perf_counter()
        r = sr.ridge(X, labels, args.lam, tol=1e-10, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        diff = float(np.abs(r.coef - sk).max() / np.abs(sk).max())
        print(f"  {args.backend} {pre or 'plain':7}: {r.history[-1][0]:5d} CG steps, {t:6.2f} s ({t_sk / t:5.1f}x), "
              f"max rel coef diff {diff:.1e}", flush=True)
