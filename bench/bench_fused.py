"""The fused pattern w = α·Xᵀ(v ⊙ X·y) + β·z and the solvers on it, in one process.

GPU (float32, X and vectors on the device): sr_fused_pattern against the unfused cupy/cuSPARSE
sequence (X @ y, * v, X.T @ t, + β·z), the floor (the time to read X, y, v and z once and write
w once at the larger of the measured copy and read bandwidths) and "read X" (the measured time of
one kernel that reads X's arrays once, 16 bytes a load) and the same call on a deterministic
context (fixed-order sums: docs/c-library.md#reproducible-results). CPU (this host's cores): against scipy's same sequence (one thread). Solvers
(float64): sr.ridge and sr.logistic_regression end to end against scikit-learn's Ridge
(sparse_cg) and LogisticRegression (liblinear), with the objectives reached.

usage: python3 bench/bench_fused.py [BUILD_DIR] [--data ../shared/data] [--json OUT] [--quick] [--no-gpu] [--no-cpu] [--no-solvers] [--only NAME]

Data: PyPI summaries bag of words (248,814 x 115,570) and PyPI names 3-grams (886,323 x 38,227)
from ../shared/data/text, labelled +1 when the package's name contains "py" (the label is part of
the name, not of the summary; for the 3-grams it is in the features, an easy problem); generated
tall-skinny (10^7 x 100, 10 entries a row), ultra-wide (10^4 x 10^7, 1,000 a row) and dense
(2·10^6 x 100) sets as in the paper's evaluation (--quick: a tenth of each)."""
import argparse
import itertools
import json
import lzma
import os
import re
import sys
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
from timing import median_time  # noqa: E402
import plots  # noqa: E402


def text_sets(data):
    out = []
    path = os.path.join(data, "text/pypi-summaries.tsv.xz")
    if os.path.exists(path):
        from knn_data import bag_of_words, ngrams
        with lzma.open(path, "rt", encoding="utf-8") as f:
            names = [line.split("\t", 1)[0].lower() for line in f]
        X = bag_of_words(data)
        out.append(("PyPI summaries BoW", X, np.where([("py" in s) for s in names], 1.0, -1.0)))
        with lzma.open(os.path.join(data, "text/pypi-names.txt.xz"), "rt", encoding="utf-8") as f:
            names = [line.strip().lower() for line in f]
        X = ngrams(data)
        out.append(("PyPI names 3-grams", X, np.where([("py" in s) for s in names], 1.0, -1.0)))
    return out


def generated(quick, seed=3):
    rng = np.random.default_rng(seed)
    scale = 10 if quick else 1
    out = []
    for name, m, n, per_row in (("tall-skinny", 10_000_000 // scale, 100, 10),
                                ("ultra-wide", 10_000, 10_000_000 // scale, 1000 // scale)):
        cols = rng.integers(0, n, m * per_row)
        indptr = np.arange(0, m * per_row + 1, per_row)
        X = sp.csr_matrix((rng.standard_normal(m * per_row).astype(np.float32), cols, indptr), shape=(m, n))
        X.sum_duplicates()
        out.append((f"{name} {m}x{n}", X, None))
    m = 2_000_000 // scale
    out.append((f"dense {m}x100", rng.standard_normal((m, 100)).astype(np.float32), None))
    return out


# Reads arrays once, 16 bytes a load, in one launch: the measured time to read X once (what the
# bandwidth floor leaves out: the launch, the ramp up and the tail of a short read).
READ_ONCE = r'''
extern "C" __global__ void read_once(const uint4 *a, long long na, const uint4 *b, long long nb,
                                     const uint4 *c, long long nc, unsigned *out) {
    unsigned acc = 0;
    const long long all = na + nb + nc, stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < all; i += stride) {
        const uint4 v = i < na ? a[i] : i < na + nb ? b[i - na] : c[i - na - nb];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x9e3779b9u)
        *out = acc; // keeps the loads
}'''


def read_once_time(cp, arrays, reps):
    """The median time of one kernel reading the (16-byte aligned) arrays once."""
    kernel = cp.RawKernel(READ_ONCE, "read_once")
    parts = [(a, a.nbytes // 16) for a in arrays] + [(arrays[0], 0)] * (3 - len(arrays))
    out = cp.zeros(1, dtype=cp.uint32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    args = tuple(x for a, n in parts for x in (a, np.int64(n))) + (out,)
    return median_time(lambda: kernel((sms * 8,), (256,), args), reps=reps, sync=cp.cuda.Device().synchronize)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build", nargs="?", default=None)
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "../../shared/data"))
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--no-cpu", action="store_true", help="leave out the CPU columns (GPU measurements only)")
    ap.add_argument("--no-solvers", action="store_true")
    ap.add_argument("--only", help="run the sets whose name contains this text")
    ap.add_argument("--solvers", default="ridge,logistic", help="which solvers to run on the text sets")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    if args.build:
        import sr_package
        sr = sr_package.load(args.build)
    else:
        import sparsering as sr
    rows = []
    sets = text_sets(args.data) + ([] if args.only and "PyPI" in args.only else generated(args.quick))
    sets = [s for s in sets if not args.only or args.only in s[0]]
    gpu = None
    if not args.no_gpu and args.build:
        import cupy as cp
        import cupyx.scipy.sparse as cps
        gpu = (cp, cps, sr.Context("cuda"))
        x = cp.ones(1 << 28, dtype=cp.float32)
        sync = cp.cuda.Device().synchronize
        copy_bw = 2 * x.nbytes / median_time(lambda: x.copy(), sync=sync)
        read_bw = x.nbytes / median_time(lambda: x.sum(), sync=sync)
        bw = max(copy_bw, read_bw)  # reading alone runs faster than a copy's read and write
        del x
        print(f"device bandwidth: copy {copy_bw / 1e9:.0f} GB/s, read (a sum) {read_bw / 1e9:.0f} GB/s")
    cpu = sr.Context("cpu")
    print(f"{'set':34} {'nnz':>7} | {'CPU ours':>9} {'scipy':>9} {'ratio':>6} | {'GPU ours':>9} {'unfused':>9} "
          f"{'ratio':>6} {'floor':>8} {'x floor':>7} {'read X':>9} {'x read':>6} {'determ.':>9} {'x':>5}")
    for name, X, labels in sets:
        dense = isinstance(X, np.ndarray)
        X = X.astype(np.float32) if dense else X.astype(np.float32).tocsr()
        m, n = X.shape
        nnz = m * n if dense else X.nnz
        rng = np.random.default_rng(1)
        y, v, z = (rng.standard_normal(k).astype(np.float32) for k in (n, m, n))
        M = X if dense else sr.Matrix(X, context=cpu)  # converted once, as a solver would
        if args.no_cpu:
            t_cpu = t_scipy = float("nan")
        else:
            t_cpu = median_time(lambda: sr.fused_pattern(M, y, v=v, z=z, beta=0.5, context=cpu), reps=args.reps)
            t_scipy = median_time(lambda: X.T @ (v * (X @ y)) + 0.5 * z, reps=max(3, args.reps // 3))
        row = dict(set=name, m=m, n=n, nnz=nnz, cpu_ms=t_cpu * 1e3, scipy_ms=t_scipy * 1e3)
        line = f"{name:34} {nnz / 1e6:6.1f}M | {t_cpu * 1e3:7.2f}ms {t_scipy * 1e3:7.2f}ms {t_scipy / t_cpu:6.1f} |"
        if gpu:
            cp, cps, ctx = gpu
            yd, vd, zd = cp.asarray(y), cp.asarray(v), cp.asarray(z)
            wd = cp.empty(n, dtype=cp.float32)
            sync = cp.cuda.Device().synchronize
            if dense:  # cuBLAS gemv twice is the unfused sequence
                Xc = cp.asarray(X)
                Xd = Xc  # read in place by the package
            else:
                Xd = sr.Matrix(X, context=ctx, location="device")
                Xc = cps.csr_matrix(X)
            call = lambda: sr.fused_pattern(Xd, yd, v=vd, z=zd, beta=0.5, out=wd, context=ctx)  # noqa: E731
            t_ours = median_time(call, reps=args.reps, sync=sync)
            XcT = Xc.T
            t_unf = median_time(lambda: XcT @ (vd * (Xc @ yd)) + 0.5 * zd, reps=args.reps, sync=sync)
            ref = XcT @ (vd * (Xc @ yd)) + 0.5 * zd
            err = float(cp.abs(ref - wd).max() / (cp.abs(ref).max() + 1e-30))
            # the same call summed in a fixed order (a deterministic context; Xᵀ built by the first call)
            ctx.set_deterministic(True)
            call()
            t_det = median_time(call, reps=args.reps, sync=sync)
            det_err = float(cp.abs(ref - wd).max() / (cp.abs(ref).max() + 1e-30))
            ctx.set_deterministic(False)
            # the floor: X read once, y, v and z read once and w written once
            floor = ((nnz * 4 if dense else X.nnz * 8 + (m + 1) * 8) + 4 * (2 * n + m + n)) / bw
            t_read = read_once_time(cp, [Xc] if dense else [Xc.data, Xc.indices, Xc.indptr.astype(cp.int64)],
                                    args.reps)  # int64 row pointers, as sparsering keeps them
            row.update(gpu_ms=t_ours * 1e3, unfused_ms=t_unf * 1e3, floor_ms=floor * 1e3, read_once_ms=t_read * 1e3,
                       max_rel_diff=err, deterministic_ms=t_det * 1e3, deterministic_max_rel_diff=det_err)
            line += (f" {t_ours * 1e3:7.3f}ms {t_unf * 1e3:7.3f}ms {t_unf / t_ours:6.1f} {floor * 1e3:6.3f}ms "
                     f"{t_ours / floor:7.2f} {t_read * 1e3:7.3f}ms {t_ours / t_read:6.2f} {t_det * 1e3:7.3f}ms "
                     f"{t_det / t_ours:5.2f}  (max rel diff {err:.1e}, deterministic {det_err:.1e})")
            del Xd, Xc, XcT, yd, vd, zd, wd
        print(line, flush=True)
        rows.append(row)
        if labels is not None and not args.no_solvers:
            rows += solvers(sr, name, X.astype(np.float64), labels, gpu is not None, args.solvers.split(","))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
        plots.plot("fused", rows, plots.beside(args.json))


# ours with its default preconditioner, then plain CG (scikit-learn's sparse_cg step for step)
PRECONDITIONERS = ("jacobi", None)


def solvers(sr, name, X, labels, with_gpu, which):
    """Ridge (λ = 1) and logistic (C = 1) end to end, ours against scikit-learn on all cores."""
    out = []
    contexts = [("cpu", sr.Context("cpu"))] + ([("cuda", sr.Context("cuda"))] if with_gpu else [])
    if "ridge" in which:
        out += ridge(sr, name, X, labels, contexts)
    if "logistic" in which:
        out += logistic(sr, name, X, labels, contexts)
    return out


def ridge(sr, name, X, labels, contexts):
    from sklearn.linear_model import Ridge
    out = []
    t0 = time.perf_counter()
    sk = Ridge(alpha=1.0, fit_intercept=False, solver="sparse_cg", tol=1e-10, max_iter=10_000).fit(X, labels).coef_
    t_sk = time.perf_counter() - t0
    for (backend, ctx), pre in itertools.product(contexts, PRECONDITIONERS):
        t0 = time.perf_counter()
        r = sr.ridge(X, labels, 1.0, tol=1e-10, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        diff = float(np.abs(r.coef - sk).max() / np.abs(sk).max())
        out.append(dict(set=name, solver="ridge", backend=backend, preconditioner=str(pre), seconds=t,
                        sklearn_seconds=t_sk, iterations=r.history[-1][0], max_rel_diff=diff))
        print(f"  ridge    {backend:4} {str(pre):6}: {t:7.2f} s, {r.history[-1][0]} CG steps | scikit-learn sparse_cg "
              f"{t_sk:7.2f} s ({t_sk / t:5.1f}x) | max rel coef diff {diff:.1e}", flush=True)
    return out


def logistic(sr, name, X, labels, contexts):
    """Ours to its default tolerance (‖∇‖ <= 1e-10 of its start) against liblinear at tol 1e-6 (it
    stops near there whatever tol asks): the objectives show which reached the lower point."""
    from sklearn.linear_model import LogisticRegression
    out = []
    t0 = time.perf_counter()
    lr = LogisticRegression(C=1.0, fit_intercept=False, solver="liblinear", tol=1e-6).fit(X, labels).coef_.ravel()
    t_sk = time.perf_counter() - t0
    objective = lambda w: 0.5 * w @ w + np.logaddexp(0, -labels * (X @ w)).sum()  # noqa: E731
    for (backend, ctx), pre in itertools.product(contexts, PRECONDITIONERS):
        t0 = time.perf_counter()
        r = sr.logistic_regression(X, labels, 1.0, context=ctx, preconditioner=pre)
        t = time.perf_counter() - t0
        out.append(dict(set=name, solver="logistic", backend=backend, preconditioner=str(pre), seconds=t,
                        sklearn_seconds=t_sk, newton=r.history[-1][0], cg=r.history[-1][1],
                        objective=objective(r.coef), sklearn_objective=objective(lr)))
        print(f"  logistic {backend:4} {str(pre):6}: {t:7.2f} s, {r.history[-1][0]} Newton / {r.history[-1][1]} CG steps, "
              f"objective {objective(r.coef):.6f} | scikit-learn liblinear {t_sk:7.2f} s ({t_sk / t:5.1f}x), "
              f"objective {objective(lr):.6f}", flush=True)
    return out


if __name__ == "__main__":
    main()
