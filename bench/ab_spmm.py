"""A/B of two builds' SpMV and row-major SpMM in one process, alternating (best of 3 medians of 20),
with cuSPARSE beside, on the anchors' 2M power-law matrix and the real graphs; asserts both builds'
results against cuSPARSE's.
usage: python3 bench/ab_spmm.py OLD_BUILD_DIR NEW_BUILD_DIR [DATA_DIR]"""
import os
import sys

import cupy as cp
import cupyx.scipy.sparse as csp

sys.path.insert(0, os.path.dirname(__file__))
import bench_products as bp  # noqa: E402
import sr_ctypes as sr  # noqa: E402
from powerlaw import powerlaw  # noqa: E402


def matrices(data):
    yield "powerlaw 2M", powerlaw(2_000_000, 2_000_000, 16)
    for g in ("debian-depends", "pushpull"):
        path = os.path.join(data, "graphs", g + ".mtx.gz")
        if os.path.exists(path):
            yield g, bp.read_graph(path)


def main():
    builds = sys.argv[1:3]
    data = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data")
    libs = [sr.load(b) for b in builds]
    ctxs = [lib.context() for lib in libs]
    for name, A in matrices(data):
        mats = [bp.Ours(lib, ctx, A) for lib, ctx in zip(libs, ctxs)]
        Ad = csp.csr_matrix(A)
        m, k = A.shape
        for K in (1, 8, 32, 128):
            layout = sr.ROW_MAJOR if K > 1 else sr.COL_MAJOR
            B = cp.random.random((k, K), dtype=cp.float32)
            C = cp.zeros((m, K), dtype=cp.float32)
            Bd = sr.dense(B.data.ptr, k, K, sr.FLOAT32, layout)
            Cd = sr.dense(C.data.ptr, m, K, sr.FLOAT32, layout)
            Bv = B[:, 0] if K == 1 else B
            ref = (Ad @ Bv).get()
            times = [[] for _ in builds]
            for _ in range(3):
                for t, lib, ctx, o, build in zip(times, libs, ctxs, mats, builds):
                    t.append(bp.median_time(lambda: lib.spmm(ctx, Cd, 0, o.M, Bd), reps=20))
                    err = bp.rel_err(C.get().reshape(ref.shape), ref)
                    assert err < 1e-5, (build, name, K, err)
            theirs = bp.median_time(lambda: Ad @ Bv, reps=20)
            cells = [f"{os.path.basename(b.rstrip('/'))} {min(t)*1e3:7.3f} ms ({theirs/min(t):5.2f}x)"
                     for b, t in zip(builds, times)]
            print(f"{name:15} K={K:<4} " + "  ".join(cells) + f"  cuSPARSE {theirs*1e3:7.3f} ms", flush=True)
        for lib, o in zip(libs, mats):
            lib.free(o.M)


if __name__ == "__main__":
    main()
