"""SDDMM calls on one of bench_sddmm.py's dense-ish matrices, for a profiler to look into kernel by
kernel (the matrix and the factors are made first; each --settings group is one timed call, after
one warm-up call under the same settings). Under Nsight Compute:

    ncu --clock-control none --kernel-name regex:sddmm_gemm --set full \\
        python3 bench/probes/sddmm_tiles_profile.py BUILD --matrix uniform8k --K 32 \\
        [--settings 'SPARSERING_SDDMM_MATH=0;SPARSERING_SDDMM_MATH=1']
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from bench_sddmm import band, uniform  # noqa: E402

MATRICES = {"uniform8k": lambda: uniform(8_192, 8_192, 0.25, seed=6),
            "uniform16k": lambda: uniform(16_384, 16_384, 0.05, seed=5),
            "band": lambda: band(32_768, 256)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--matrix", choices=sorted(MATRICES), default="uniform8k")
    ap.add_argument("--K", type=int, default=32)
    ap.add_argument("--reps", type=int, default=1, help="timed calls a group (median printed)")
    ap.add_argument("--settings", default="", help="'NAME=V,NAME=V;NAME=V': a group of calls a ';'")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import cupy as cp
    import sparsering as sr
    ctx = sr.Context("cuda")
    S = MATRICES[args.matrix]().tocsr().astype(np.float32)
    S.sort_indices()
    print(f"{args.matrix}: {S.shape[0]} x {S.shape[1]}, {S.nnz} entries, K = {args.K}", flush=True)
    Sd = sr.Matrix(S, context=ctx, location="device")
    rng = cp.random.default_rng(1)
    A = rng.random((S.shape[0], args.K), dtype=cp.float32) - 0.5
    B = rng.random((S.shape[1], args.K), dtype=cp.float32) - 0.5
    out = cp.empty(S.nnz, dtype=cp.float32)
    sync = cp.cuda.Device().synchronize
    call = lambda: sr.sddmm_values(Sd, A, B, pattern=True, out=out, context=ctx)  # noqa: E731
    for group in args.settings.split(";"):
        pairs = [kv.split("=", 1) for kv in group.split(",") if kv]
        for name, value in pairs:
            os.environ[name] = value
        call()
        times = []
        for _ in range(args.reps):
            sync()
            t = time.perf_counter()
            call()
            sync()
            times.append(time.perf_counter() - t)
        print(f"[{group}] {1e3 * float(np.median(times)):.3f} ms; {sr.last_method()}", flush=True)
        for name, _ in pairs:
            del os.environ[name]


if __name__ == "__main__":
    main()
