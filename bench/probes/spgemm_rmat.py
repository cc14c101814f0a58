"""SpGEMM A·A (plus_times, float32) on Graph500 R-MAT matrices against cuSPARSE (cupy), in one
process: times, peak device memory, and sparsering's per-phase device times (SPARSERING_PROFILE=1,
printed on stderr for one product of each matrix).

    PYTHONPATH=BUILD/python python3 bench/probes/spgemm_rmat.py [16:8 17:8 ...]"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from timing import median_time  # noqa: E402


def main():
    import cupy as cp
    import cupyx.scipy.sparse as csp
    cases = [tuple(int(x) for x in a.split(":")) for a in sys.argv[1:]] or [(16, 8), (17, 8), (16, 16)]
    ctx = sr.Context("cuda")
    sync = cp.cuda.Device().synchronize
    pool = cp.get_default_memory_pool()
    for scale, ef in cases:
        A = rmat(scale, ef).astype(np.float32)
        A.data = np.random.default_rng(1).random(A.nnz, dtype=np.float32) + 0.5
        M = sr.Matrix(A, context=ctx, location="device")
        Ad = csp.csr_matrix(A)
        fresh = cp.cuda.MemoryPool()
        cp.cuda.set_allocator(fresh.malloc)
        try:
            ref = Ad @ Ad
            theirs_peak = fresh.total_bytes()
            ref_nnz = int(ref.nnz)
            del ref
            cp.cuda.set_allocator(pool.malloc)
            theirs = median_time(lambda: Ad @ Ad, reps=3, sync=sync)
        except Exception as e:  # cuSPARSE's failures are recorded, not fatal
            cp.cuda.set_allocator(pool.malloc)
            theirs, theirs_peak, ref_nnz = float("nan"), 0, -1
            print(f"  cuSPARSE failed: {type(e).__name__}: {e}", flush=True)
        fresh.free_all_blocks()
        pool.free_all_blocks()
        ctx.reset_peak_memory()
        base = ctx.device_memory()[0]
        C = sr.mxm(M, M, context=ctx)
        peak = ctx.device_memory()[1] - base
        nnz = C.nnz
        del C
        ours = median_time(lambda: sr.mxm(M, M, context=ctx), reps=3, sync=sync)
        os.environ["SPARSERING_PROFILE"] = "1"
        print(f"=== profile R-MAT {scale} ef {ef}", file=sys.stderr, flush=True)
        sr.mxm(M, M, context=ctx)
        ctx.synchronize()
        del os.environ["SPARSERING_PROFILE"]
        wrong = "" if ref_nnz in (-1, nnz) else f" cuSPARSE WRONG ({ref_nnz} entries)"
        print(f"R-MAT {scale} ef {ef}: nnz {A.nnz} -> {nnz} (cuSPARSE {ref_nnz}{wrong}) | ours {ours * 1e3:8.2f} ms, "
              f"{peak / 1e6:8.1f} MB | cuSPARSE {theirs * 1e3:8.2f} ms, {theirs_peak / 1e6:8.1f} MB | "
              f"ratio {theirs / ours:5.2f}x", flush=True)
        del M, Ad
    return 0


if __name__ == "__main__":
    sys.exit(main())
