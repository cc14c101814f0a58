"""The CPU backend's SDDMM on dense-ish S: dot products an entry against whole tile products
(src/cpu/cpu_sddmm_tiles.c), the same call with SPARSERING_SDDMM_GEMM=0 and =1 alternating (best
of two medians of 5), and the automatic choice; float32 and float64, K = 32, 128, 512.

    OMP_NUM_THREADS=2 PYTHONPATH=BUILD/python python3 bench/probes/sddmm_cpu_tiles.py BUILD
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from bench_sddmm import band, uniform  # noqa: E402


def median(f, reps=5):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


def main():
    sr = sr_package.load(sys.argv[1] if len(sys.argv) > 1 else "build-cpu")
    ctx = sr.Context("cpu")
    cases = [("uniform 8K at 12%", uniform(8192, 8192, 0.12, seed=7)),
             ("uniform 8K at 25%", uniform(8192, 8192, 0.25, seed=6)),
             ("band of 512, 16K rows", band(16384, 256))]
    for name, S in cases:
        S.sort_indices()
        for K in (32, 128, 512):
            for dt in (np.float32, np.float64):
                rng = np.random.default_rng(0)
                A = rng.random((S.shape[0], K)).astype(dt)
                B = rng.random((S.shape[1], K)).astype(dt)
                M = sr.Matrix(S.astype(dt), context=ctx)
                out = np.empty(S.nnz, dt)
                best = {}
                for mode in ("0", "1", "0", "1"):
                    os.environ["SPARSERING_SDDMM_GEMM"] = mode
                    t = median(lambda: sr.sddmm_values(M, A, B, out=out, context=ctx))
                    best[mode] = min(best.get(mode, float("inf")), t)
                del os.environ["SPARSERING_SDDMM_GEMM"]
                auto = median(lambda: sr.sddmm_values(M, A, B, out=out, context=ctx))
                print(f"{name:22s} K={K:3d} {np.dtype(dt).name:7s}: dot products {best['0'] * 1e3:7.1f} ms  tiles "
                      f"{best['1'] * 1e3:7.1f} ms ({best['0'] / best['1']:.2f}x)  automatic {auto * 1e3:7.1f} ms",
                      flush=True)


if __name__ == "__main__":
    main()
