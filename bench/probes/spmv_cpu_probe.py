"""CPU SpMV variants (bench/probes/spmv_cpu_probe.c) against the library's sr.spmv and
SuiteSparse:GraphBLAS's mxv in one process, float32, medians of 51 calls: which of them a host's
cores reward, and how far the library is from the bytes' and the gathers' floors. Runs itself
again in child processes with OMP_PROC_BIND=close and spread (read by OpenMP at start-up).

    PYTHONPATH=BUILD/python[:GRAPHBLAS] python3 bench/probes/spmv_cpu_probe.py [--data ../shared/data] [--threads N]"""
import argparse
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from generated_graphs import rmat  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
from timing import median_time  # noqa: E402

VARIANTS = ["library loop", "two rows", "AVX2 gathers", "prefetch 32", "stream floor", "gather floor", "prefetch 16",
            "prefetch 64"]
EXACT = {0, 1, 2, 3, 6, 7}  # variants that compute y


def median(f):
    return median_time(f, reps=51, warm=3)


def build_probe():
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "spmv_cpu_probe.c")
    lib = os.path.join(tempfile.gettempdir(), f"spmv_cpu_probe_{os.getpid()}.so")
    subprocess.run(["gcc", "-O3", "-march=x86-64-v2", "-fopenmp", "-shared", "-fPIC", src, "-o", lib], check=True)
    probe = ctypes.CDLL(lib)
    probe.probe_spmv.restype = None
    return probe


def run(args):
    probe = build_probe()
    try:
        import sparsering as sr
    except ImportError:
        sr = None
    try:
        import graphblas as gb
        gb.init("suitesparse", blocking=True)
    except Exception:  # noqa: BLE001 - any failure leaves the column empty
        gb = None
    mats = [("powerlaw 200K", lambda: powerlaw(200_000, 200_000, 16)), ("rmat-18-8", lambda: rmat(18, 8))]
    path = os.path.join(args.data, "graphs", "debian-depends.mtx.gz")
    if os.path.exists(path):
        mats.append(("debian-depends", lambda: scipy.io.mmread(path).tocsr()))
    threads = args.threads or os.cpu_count()
    ctx = sr.Context("cpu") if sr else None
    print(f"threads {threads}, OMP_PROC_BIND={os.environ.get('OMP_PROC_BIND', '(unset)')}", flush=True)
    for name, make in mats:
        A = make().astype(np.float32)
        A.sort_indices()
        A.data = np.random.default_rng(1).random(A.nnz, dtype=np.float32) + 0.5
        x = np.random.default_rng(2).random(A.shape[1], dtype=np.float32)
        rowptr = A.indptr.astype(np.int64)
        col = A.indices.astype(np.int32)
        y = np.zeros(A.shape[0], np.float32)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        P = ctypes.c_void_p
        cols = []
        for v in range(len(VARIANTS)):
            def f(v=v):
                probe.probe_spmv(v, threads, ctypes.c_int64(A.shape[0]), P(rowptr.ctypes.data), P(col.ctypes.data),
                                 P(A.data.ctypes.data), P(x.ctypes.data), P(y.ctypes.data))
            t = median(f)
            err = np.abs(y - ref).max() / np.abs(ref).max() if v in EXACT else float("nan")
            cols.append(f"{VARIANTS[v]} {t * 1e3:.3f}" + (f" (err {err:.0e})" if v in EXACT else ""))
        if sr:
            M = sr.Matrix(A, context=ctx)
            cols.append(f"sr.spmv {median(lambda: sr.spmv(M, x, out=y, context=ctx)) * 1e3:.3f}")
        if gb:
            G, gv = gb.io.from_scipy_sparse(A), gb.Vector.from_dense(x)
            cols.append(f"GraphBLAS {median(lambda: G.mxv(gv, gb.semiring.plus_times).new()) * 1e3:.3f}")
        print(f"{name:15s} nnz {A.nnz:8d} | " + " | ".join(cols), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    run(args)
    if not args.child:
        for bind in ("close", "spread"):
            env = dict(os.environ, OMP_PROC_BIND=bind, OMP_PLACES="cores")
            subprocess.run([sys.executable, __file__, "--data", args.data, "--threads", str(args.threads), "--child"],
                           env=env, check=True)


if __name__ == "__main__":
    main()
