"""The CPU backend's SDDMM on dense-ish S: dot products an entry against whole tile products
(src/cpu/cpu_sddmm_tiles.c), the same call with SPARSERING_SDDMM_GEMM=0 and =1 alternating (best
of two medians of 5), and the automatic choice; float32 and float64, K = 32, 128, 512.
--fused: the fused SDDMM->SpMM instead (p = K, pattern S, plain and softmax, float32, K = 32 and
128, also uniform 4K at 50%), with the largest difference between the two paths' results.

    OMP_NUM_THREADS=2 PYTHONPATH=BUILD/python python3 bench/probes/sddmm_cpu_tiles.py BUILD [--fused]
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


def fused(sr, ctx, cases):
    for name, S in cases:
        S = S.astype(np.float32)
        M = sr.Matrix(S, context=ctx)
        for K in (32, 128):
            rng = np.random.default_rng(0)
            A, B, V = (rng.random((k, K), dtype=np.float32) - 0.5 for k in (S.shape[0], S.shape[1], S.shape[1]))
            line = f"{name:22s} K = p = {K:3d}"
            for softmax in (False, True):
                best, got = {}, {}
                for mode in ("0", "1", "0", "1"):
                    os.environ["SPARSERING_SDDMM_GEMM"] = mode
                    call = lambda: sr.sddmm_spmm(M, A, B, V, alpha=1 / np.sqrt(K), softmax=softmax,  # noqa: E731
                                                 pattern=True, context=ctx)
                    best[mode] = min(best.get(mode, float("inf")), median(call, reps=3))
                    got[mode] = np.asarray(call())
                del os.environ["SPARSERING_SDDMM_GEMM"]
                auto = median(lambda: sr.sddmm_spmm(M, A, B, V, alpha=1 / np.sqrt(K), softmax=softmax,
                                                    pattern=True, context=ctx), reps=3)
                diff = np.abs(got["1"] - got["0"]).max() / np.abs(got["0"]).max()
                line += (f" | {'softmax' if softmax else 'plain'}: rows {best['0'] * 1e3:7.1f} ms, tiles "
                         f"{best['1'] * 1e3:7.1f} ms ({best['0'] / best['1']:.2f}x), automatic {auto * 1e3:7.1f} ms,"
                         f" diff {diff:.0e}")
            print(line, flush=True)


def main():
    sr = sr_package.load(next((a for a in sys.argv[1:] if not a.startswith("--")), "build-cpu"))
    ctx = sr.Context("cpu")
    cases = [("uniform 8K at 12%", uniform(8192, 8192, 0.12, seed=7)),
             ("uniform 8K at 25%", uniform(8192, 8192, 0.25, seed=6)),
             ("band of 512, 16K rows", band(16384, 256))]
    if "--fused" in sys.argv:
        return fused(sr, ctx, cases + [("uniform 4K at 50%", uniform(4096, 4096, 0.5, seed=7))])
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
