"""Small CPU calls right after another OpenMP runtime's work in the same process (issue 29: SpMV on
a small graph took 6-8 ms instead of 0.1 ms inside bench_products_cpu.py, right after
SuiteSparse:GraphBLAS's SpGEMM; GraphBLAS's wheel brings its own libgomp, so two thread pools
share the cores). Per phase: the calls' median, 90th percentile and maximum, and the threads that
burn CPU while the process sleeps 100 ms (spinning pools: their CPU seconds over the sleep).

    PYTHONPATH=BUILD/python:GRAPHBLAS python3 bench/probes/small_calls_beside_graphblas.py [--data ../shared/data]"""
import argparse
import os
import subprocess
import sys
import time

import numpy as np


def thread_cpu():
    """CPU ticks of each thread of this process, by thread id."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            out[tid] = int(fields[11]) + int(fields[12])  # utime + stime
        except OSError:
            pass
    return out


def spinners(after):
    """Run `after`, then sleep 100 ms: how many threads burned CPU meanwhile, and how much."""
    after()
    before = thread_cpu()
    time.sleep(0.1)
    now = thread_cpu()
    ticks = os.sysconf("SC_CLK_TCK")
    busy = [(now[t] - before.get(t, 0)) / ticks for t in now if now[t] - before.get(t, 0) > 0]
    return f"{len(busy)} of {len(now)} threads busy during the sleep, {sum(busy):.2f} CPU s in 0.1 s"


def calls(label, f, reps=50, before=None):
    t = []
    for _ in range(reps):
        if before:
            before()
        t0 = time.perf_counter()
        f()
        t.append(time.perf_counter() - t0)
    t = np.array(t) * 1e3
    print(f"  {label:48s} median {np.median(t):7.3f} ms  p90 {np.percentile(t, 90):7.3f}  max {t.max():7.3f}",
          flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--child", default="")
    args = ap.parse_args()
    import scipy.io
    import scipy.sparse as sp
    import graphblas as gb
    import sparsering as sr
    gb.init("suitesparse", blocking=True)
    ctx = sr.Context("cpu")
    load = lambda g: sp.csr_matrix(scipy.io.mmread(os.path.join(args.data, f"graphs/{g}.mtx.gz")), dtype=np.float32)  # noqa: E731
    small, big = load("pushpull"), load("debian-depends")
    M = sr.Matrix(small, context=ctx)
    x = np.ones(small.shape[1], dtype=np.float32)
    y = np.zeros(small.shape[0], dtype=np.float32)
    spmv = lambda: sr.spmv(M, x, out=y, context=ctx)  # noqa: E731
    G = gb.io.from_scipy_sparse(big)
    gb_mxm = lambda: G.mxm(G, gb.semiring.plus_times).new()  # noqa: E731
    Mb = sr.Matrix(big, context=ctx)
    sr_mxm = lambda: sr.mxm(Mb, Mb, context=ctx)  # noqa: E731
    print(f"{args.child or 'default environment'}: {os.cpu_count()} cores, GraphBLAS {gb.ss.config['nthreads']} threads",
          flush=True)
    spmv()
    calls("SpMV on pushpull alone", spmv)
    calls("SpMV right after GraphBLAS's A·A (each call)", spmv, reps=20, before=gb_mxm)
    gb_mxm()
    t = []
    for _ in range(50):
        t0 = time.perf_counter()
        spmv()
        t.append(time.perf_counter() - t0)
    print("  SpMV, 50 in a row after GraphBLAS's A·A, each (ms): " + " ".join(f"{v * 1e3:.2f}" for v in t), flush=True)
    calls("SpMV right after sparsering's A·A (each call)", spmv, reps=20, before=sr_mxm)
    print("  after GraphBLAS's A·A:   " + spinners(gb_mxm), flush=True)
    print("  after sparsering's A·A:  " + spinners(sr_mxm), flush=True)
    print("  after sparsering's SpMV: " + spinners(spmv), flush=True)
    if not args.child:
        for name, value in (("OMP_WAIT_POLICY", "passive"), ("GOMP_SPINCOUNT", "10000")):
            env = dict(os.environ, **{name: value})
            subprocess.run([sys.executable, __file__, "--data", args.data, "--child", f"{name}={value}"], env=env,
                           check=False)


if __name__ == "__main__":
    main()
