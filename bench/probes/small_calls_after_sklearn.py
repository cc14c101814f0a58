"""Small CPU calls before and right after scikit-learn's brute-force k-NN in the same process
(issue 29 saw a 0.11 ms SpMV on debian-depends take 6.0 ms in two runs out of three after it):
200 SpMVs and 50 SpGEMMs on debian-depends, timed one by one, each block's median, 90th
percentile and maximum, alone and right after sklearn's k-NN; then the same in child processes
with OpenMP's idle threads told to sleep (OMP_WAIT_POLICY=passive) and with OpenBLAS on one
thread (OPENBLAS_NUM_THREADS=1): both are read at start-up.
usage: PYTHONPATH=BUILD/python python3 bench/probes/small_calls_after_sklearn.py [--data ../shared/data]"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np


def block(label, f, reps):
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    t = np.array(t) * 1e3
    print(f"  {label:34s} median {np.median(t):7.3f} ms  p90 {np.percentile(t, 90):7.3f}  max {t.max():7.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--child", default="")
    args = ap.parse_args()
    import scipy.io
    import scipy.sparse as sp
    from sklearn.neighbors import NearestNeighbors
    import sparsering as sr
    ctx = sr.Context("cpu")
    A = sp.csr_matrix(scipy.io.mmread(os.path.join(args.data, "graphs/debian-depends.mtx.gz")), dtype=np.float32)
    M = sr.Matrix(A, context=ctx)
    x = np.ones(A.shape[1], dtype=np.float32)
    spmv = lambda: sr.spmv(M, x, context=ctx)  # noqa: E731
    spgemm = lambda: sr.mxm(M, M, context=ctx)  # noqa: E731
    rng = np.random.default_rng(0)
    X = sp.random(20000, 5000, density=0.01, format="csr", random_state=rng, dtype=np.float32)
    knn = NearestNeighbors(n_neighbors=10, algorithm="brute", metric="cosine", n_jobs=-1).fit(X)
    print(f"{args.child or 'default environment'}: {os.cpu_count()} cores, sparsering {sr.library_version()}", flush=True)
    spmv(), spgemm()
    block("SpMV alone", spmv, 200)
    block("SpGEMM A·A alone", spgemm, 50)
    for rep in range(3):
        knn.kneighbors(X[:2000])
        block(f"SpMV right after sklearn k-NN ({rep + 1})", spmv, 200)
    knn.kneighbors(X[:2000])
    block("SpGEMM right after sklearn k-NN", spgemm, 50)
    if not args.child:
        for name, value in (("OMP_WAIT_POLICY", "passive"), ("OPENBLAS_NUM_THREADS", "1")):
            env = dict(os.environ, **{name: value})
            subprocess.run([sys.executable, __file__, "--data", args.data, "--child", f"{name}={value}"], env=env,
                           check=False)


if __name__ == "__main__":
    main()
