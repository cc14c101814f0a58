"""SpMV, SpMM and SpGEMM on the CPU backend against scipy (single-threaded) in the same process,
on the anchors' power-law generator (smaller sizes) and the real graphs.
usage: python3 bench/bench_products_cpu.py BUILD_DIR [DATA_DIR]"""
import os
import sys

# OpenBLAS's idle threads spin after numpy's BLAS calls and take cores from sparsering's OpenMP
# threads (on 2 cores: 1.22 vs 0.79 ms for the same SpMM). scipy's sparse products use no BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402
import scipy.io  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import sr_ctypes as sr  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
import timing  # noqa: E402


def median_time(f, reps=7):
    return timing.median_time(f, reps, warm=1)


def host_matrix(lib, ctx, A):
    keep = (np.ascontiguousarray(A.indptr, dtype=np.int64), np.ascontiguousarray(A.indices, dtype=np.int32),
            np.ascontiguousarray(A.data, dtype=np.float32))
    M = lib.matrix_from_csr(ctx, A.shape[0], A.shape[1], sr.FLOAT32, keep[0].ctypes.data, keep[1].ctypes.data,
                            keep[2].ctypes.data, sr.HOST)
    return M, keep


def main():
    build = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 else None
    lib = sr.load(build)
    ctx = lib.context(backend=1)
    print(f"CPU backend, {os.cpu_count()} cores; scipy is single-threaded; median of 7 runs", flush=True)
    cases = [("powerlaw 200Kx200K", powerlaw(200_000, 200_000, 16).astype(np.float32))]
    if data:
        for g in ("debian-depends", "pushpull", "bcsstk13"):
            p = os.path.join(data, "graphs", g + ".mtx.gz")
            if os.path.exists(p):
                A = scipy.io.mmread(p).tocsr().astype(np.float32)
                A.sum_duplicates()
                A.sort_indices()
                cases.append((g, A))
    for name, A in cases:
        M, keep = host_matrix(lib, ctx, A)
        for K, order in ((1, "C"), (32, "C"), (32, "F")):  # F: B and C column-major
            B = np.asarray(np.random.default_rng(0).random((A.shape[1], K), dtype=np.float32), order=order)
            C = np.zeros((A.shape[0], K), dtype=np.float32, order=order)
            layout = sr.ROW_MAJOR if order == "C" else sr.COL_MAJOR
            Bd = sr.dense(B.ctypes.data, A.shape[1], K, sr.FLOAT32, layout, sr.HOST)
            Cd = sr.dense(C.ctypes.data, A.shape[0], K, sr.FLOAT32, layout, sr.HOST)
            Bv = B[:, 0] if K == 1 else B
            theirs = median_time(lambda: A @ Bv)
            ours = median_time(lambda: lib.spmm(ctx, Cd, 0, M, Bd))
            err = np.linalg.norm(C.reshape(-1) - (A @ B).reshape(-1)) / np.linalg.norm(A @ B)
            label = "spmv" if K == 1 else "spmm K=32" + (" col" if order == "F" else "")
            print(f"{label:13} {name:20} ours {ours*1e3:9.2f} ms  scipy {theirs*1e3:9.2f} ms"
                  f"  {theirs/ours:6.2f}x  (err {err:.1e})", flush=True)
        theirs = median_time(lambda: A @ A, reps=3)
        ours = median_time(lambda: lib.free(lib.mxm(ctx, 0, M, M)), reps=3)
        print(f"{'spgemm A*A':13} {name:20} ours {ours*1e3:9.2f} ms  scipy {theirs*1e3:9.2f} ms  {theirs/ours:6.2f}x",
              flush=True)
        lib.free(M)


if __name__ == "__main__":
    main()
