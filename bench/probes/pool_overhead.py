"""Back-to-back small CPU calls on the pool (src/cpu/cpu_pool.c) and as OpenMP loops
(SPARSERING_POOL=0), each in its own process, alternating: SpMV, SpMM K=32 and SpGEMM A·A on the
small real graphs; medians of 2,000 calls (200 for SpMM, 50 for SpGEMM).

    PYTHONPATH=BUILD/python python3 bench/probes/pool_overhead.py [--data ../shared/data] [--rounds 2]"""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from timing import median_time  # noqa: E402


def child(data):
    import scipy.io
    import scipy.sparse as sp
    import sparsering as sr
    ctx = sr.Context("cpu")
    rows = []
    for g in ("pushpull", "debian-depends", "bcsstk13"):
        A = sp.csr_matrix(scipy.io.mmread(os.path.join(data, f"graphs/{g}.mtx.gz")), dtype=np.float32)
        M = sr.Matrix(A, context=ctx)
        x, y = np.ones(A.shape[1], np.float32), np.zeros(A.shape[0], np.float32)
        B, C = np.ones((A.shape[1], 32), np.float32), np.zeros((A.shape[0], 32), np.float32)
        rows.append((f"spmv {g}", lambda M=M, x=x, y=y: sr.spmv(M, x, out=y, context=ctx), 2000))
        rows.append((f"spmm K=32 {g}", lambda M=M, B=B, C=C: sr.spmm(M, B, out=C, context=ctx), 200))
        rows.append((f"mxm {g}", lambda M=M: sr.mxm(M, M, context=ctx), 50))
    out = [f"{name}={median_time(f, reps, warm=20) * 1e6:.1f}" for name, f, reps in rows]
    print(" ".join(out), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", action="store_true")
    args = ap.parse_args()
    if args.child:
        child(args.data)
        return
    print(f"{os.cpu_count()} cores; medians in us of back-to-back calls", flush=True)
    for r in range(args.rounds):
        for label, pool in (("pool", "1"), ("OpenMP", "0")):
            env = dict(os.environ, SPARSERING_POOL=pool, OPENBLAS_NUM_THREADS="1")
            res = subprocess.run([sys.executable, __file__, "--data", args.data, "--child"], env=env,
                                 capture_output=True, text=True, check=True).stdout.strip()
            print(f"round {r + 1} {label:6s} {res}", flush=True)


if __name__ == "__main__":
    main()
