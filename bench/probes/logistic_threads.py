"""How the CPU logistic regression scales with threads (issue 60: every step on all cores): the
fit end to end and its kernel alone (the fused Xᵀ(d ⊙ X·s) + s of a Hessian product) on 1, 2, ...
threads, on the PyPI text sets, beside scikit-learn's liblinear (one core). A fit that scales
worse than its kernel has serial work between the kernels.

    python3 bench/probes/logistic_threads.py BUILD [--data ../shared/data] [--threads 1,2,4]"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from bench_fused import text_sets  # noqa: E402
from timing import median_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    sr = sr_package.load(args.build)
    from sklearn.linear_model import LogisticRegression
    for name, X, labels in text_sets(args.data):
        X = X.astype(np.float64).tocsr()
        t = time.perf_counter()
        LogisticRegression(C=1.0, fit_intercept=False, solver="liblinear", tol=1e-6).fit(X, labels)
        t_sk = time.perf_counter() - t
        print(f"{name}: {X.shape[0]} x {X.shape[1]}, {X.nnz} entries; liblinear {t_sk:.2f} s", flush=True)
        base_fit = base_kernel = None
        rng = np.random.default_rng(0)
        s, d = rng.standard_normal(X.shape[1]), rng.random(X.shape[0])
        for threads in (int(v) for v in args.threads.split(",")):
            ctx = sr.Context("cpu", threads=threads)
            M = sr.Matrix(X, context=ctx)
            t_kernel = median_time(lambda: sr.fused_pattern(M, s, v=d, z=s, beta=1.0, context=ctx), reps=10)
            result = []
            t_fit = median_time(lambda: result.append(sr.logistic_regression(M, labels, 1.0, context=ctx)),
                                reps=args.reps)
            steps = result[-1].history[-1][:2]
            base_fit, base_kernel = base_fit or t_fit, base_kernel or t_kernel
            print(f"  {threads} thread(s): fit {t_fit:.3f} s ({base_fit / t_fit:.2f}x one thread; "
                  f"{t_sk / t_fit:.1f}x liblinear; {steps[0]} Newton / {steps[1]} CG steps), "
                  f"Hessian-product kernel {1e3 * t_kernel:.2f} ms ({base_kernel / t_kernel:.2f}x); "
                  f"kernel share of the fit {t_kernel * (steps[1] + 2 * steps[0]) / t_fit:.0%}", flush=True)


if __name__ == "__main__":
    main()
