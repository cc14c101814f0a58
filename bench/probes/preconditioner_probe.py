"""The solvers with and without their diagonal preconditioners on the PyPI text sets (labels as
bench_fused.py: the package name contains "py"): ridge (λ = --lam, tol 1e-10) against scikit-learn's
Ridge(solver="sparse_cg") on the same cores (steps, seconds, the coefficients' difference), and
logistic regression (C = 1, default tolerance): Newton and CG steps, seconds, objective.
usage: python3 bench/probes/preconditioner_probe.py BUILD_DIR [--data ../shared/data]
           [--backend cpu|cuda] [--solvers ridge,logistic] [--lam 1.0]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from bench_fused import text_sets  # noqa: E402


def ridge(sr, ctx, backend, X, labels, lam):
    from sklearn.linear_model import Ridge
    t0 = time.perf_counter()
    sk = Ridge(alpha=lam, fit_intercept=False, solver="sparse_cg", tol=1e-10, max_iter=10_000).fit(X, labels).coef_
    t_sk = time.perf_counter() - t0
    print(f"  ridge: scikit-learn sparse_cg {t_sk:.2f} s", flush=True)
    for pre in ("jacobi", None):
        t0 = time.perf_counter()
        r = sr.ridge(X, labels, lam, tol=1e-10, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        diff = float(np.abs(r.coef - sk).max() / np.abs(sk).max())
        print(f"  ridge {backend} {pre or 'plain':7}: {r.history[-1][0]:5d} CG steps, {t:6.2f} s ({t_sk / t:5.1f}x), "
              f"max rel coef diff {diff:.1e}", flush=True)


def logistic(sr, ctx, backend, X, labels):
    objective = lambda w: 0.5 * w @ w + np.logaddexp(0, -labels * (X @ w)).sum()  # noqa: E731
    coef = {}
    for pre in ("jacobi", None):
        t0 = time.perf_counter()
        r = sr.logistic_regression(X, labels, 1.0, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        h = r.history[-1]
        coef[pre] = r.coef
        print(f"  logistic {backend} {pre or 'plain':7}: {h[0]} Newton, {h[1]} CG, {t:.2f} s, "
              f"objective {objective(r.coef):.6f}, |grad| {h[3]:.2e}", flush=True)
    print(f"  max rel coef diff {np.abs(coef['jacobi'] - coef[None]).max() / np.abs(coef[None]).max():.1e}")


ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--data", default="../shared/data")
ap.add_argument("--backend", default="cpu")
ap.add_argument("--solvers", default="ridge,logistic")
ap.add_argument("--lam", type=float, default=1.0)
args = ap.parse_args()
sr = sr_package.load(args.build)
ctx = sr.Context(args.backend)
for name, X, labels in text_sets(args.data):
    X = X.astype(np.float64).tocsr()
    print(name, flush=True)
    if "ridge" in args.solvers:
        ridge(sr, ctx, args.backend, X, labels, args.lam)
    if "logistic" in args.solvers:
        logistic(sr, ctx, args.backend, X, labels)
