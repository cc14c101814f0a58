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
import sr_package  # noqa: E402
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
    pkgs = [sr_package.load_as(b, f"sparsering_{i}") for i, b in enumerate(builds)]  # side by side
    ctxs = [pkg.Context("cuda") for pkg in pkgs]
    for name, A in matrices(data):
        mats = [pkg.Matrix(csp.csr_matrix(A), context=ctx) for pkg, ctx in zip(pkgs, ctxs)]
        Ad = csp.csr_matrix(A)
        m, k = A.shape
        for K in (1, 8, 32, 128):
            order = "C" if K > 1 else "F"
            B = cp.asarray(cp.random.random((k, K), dtype=cp.float32), order=order)
            C = cp.zeros((m, K), dtype=cp.float32, order=order)
            Bv = B[:, 0] if K == 1 else B
            ref = (Ad @ Bv).get()
            times = [[] for _ in builds]
            for _ in range(3):
                for t, pkg, ctx, M, build in zip(times, pkgs, ctxs, mats, builds):
                    t.append(bp.median_time(lambda: pkg.spmm(M, B, out=C, context=ctx), reps=20))
                    err = bp.rel_err(C.get().reshape(ref.shape), ref)
                    assert err < 1e-5, (build, name, K, err)
            theirs = bp.median_time(lambda: Ad @ Bv, reps=20)
            cells = [f"{os.path.basename(b.rstrip('/'))} {min(t)*1e3:7.3f} ms ({theirs/min(t):5.2f}x)"
                     for b, t in zip(builds, times)]
            print(f"{name:15} K={K:<4} " + "  ".join(cells) + f"  cuSPARSE {theirs*1e3:7.3f} ms", flush=True)
        del mats


if __name__ == "__main__":
    main()
