"""The package's GPU-array path against cuSPARSE and the host path, in one process: SpMM with a
device Matrix and a cupy/torch dense operand (read in place, result on the device) against
cupyx.scipy.sparse's A @ B and torch.sparse.mm (both cuSPARSE), and against the same call on
numpy data (copied to the device and back). Times are medians of --reps calls, each ending with
the device synchronized.

usage: PYTHONPATH=build/python python3 bench/bench_zero_copy.py [--reps 20]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from powerlaw import powerlaw  # noqa: E402
from timing import median_time  # noqa: E402

import sparsering as sr  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import torch
    ctx = sr.Context("cuda")
    sync = cp.cuda.Device().synchronize
    print(f"{'matrix':24} {'K':>4} | {'sr cupy':>9} {'sr torch':>9} {'sr numpy':>9} | {'cupyx @':>9} "
          f"{'torch.mm':>9} | speedup vs the faster cuSPARSE call")
    for n, deg in ((500_000, 20), (2_000_000, 8)):
        A = powerlaw(n, n, deg, seed=3).astype(np.float32)
        M = sr.Matrix(A, context=ctx, location="device")
        Ac = csp.csr_matrix(A)
        At = torch.sparse_csr_tensor(  # torch warns that its sparse CSR support is beta
                                     torch.as_tensor(A.indptr.astype(np.int64)),
                                     torch.as_tensor(A.indices.astype(np.int64)), torch.as_tensor(A.data),
                                     size=A.shape).cuda()
        for K in (16, 64):
            B = np.random.default_rng(1).standard_normal((n, K)).astype(np.float32)
            Bc, Bt = cp.asarray(B), torch.as_tensor(B, device="cuda")
            ref = Ac @ Bc
            got = sr.spmm(M, Bc, context=ctx)
            err = float(cp.abs(got - ref).max() / cp.abs(ref).max())
            t_c = median_time(lambda: sr.spmm(M, Bc, context=ctx), reps=args.reps, sync=sync)
            t_t = median_time(lambda: sr.spmm(M, Bt, context=ctx), reps=args.reps, sync=sync)
            t_n = median_time(lambda: sr.spmm(M, B, context=ctx), reps=max(3, args.reps // 4), sync=sync)
            t_cs = median_time(lambda: Ac @ Bc, reps=args.reps, sync=sync)
            t_tm = median_time(lambda: torch.sparse.mm(At, Bt), reps=args.reps, sync=sync)
            name = f"power-law {n // 1000}K avg {deg}"
            print(f"{name:24} {K:4} | {t_c * 1e3:7.2f}ms {t_t * 1e3:7.2f}ms {t_n * 1e3:7.2f}ms | {t_cs * 1e3:7.2f}ms "
                  f"{t_tm * 1e3:7.2f}ms | {min(t_cs, t_tm) / t_c:5.2f}x (max rel diff {err:.1e})", flush=True)


if __name__ == "__main__":
    main()
