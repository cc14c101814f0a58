"""Does a column order change SpMV's speed? For each matrix and column order (as given, by
descending degree, by first touch in row order), cuSPARSE's SpMV, sparsering's and the gather
floor (bench_products.gather_floor) on the same device, in one process.

    PYTHONPATH=BUILD/python python3 bench/probes/spmv_order.py DATA_DIR"""
import os
import sys

import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import cupy as cp  # noqa: E402
import cupyx.scipy.sparse as csp  # noqa: E402
import sparsering as sr  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
from timing import median_time  # noqa: E402
import bench_products  # noqa: E402
from bench_products import Ours, gather_floor  # noqa: E402

bench_products.sr = sr


def orders(A):
    deg = np.bincount(A.indices, minlength=A.shape[1])
    yield "given", np.arange(A.shape[1])
    yield "degree", np.argsort(-deg, kind="stable")
    first = np.full(A.shape[1], A.nnz, dtype=np.int64)
    np.minimum.at(first, A.indices, np.arange(A.nnz))
    yield "first-touch", np.argsort(first, kind="stable")


def main():
    data = sys.argv[1]
    ctx = sr.Context("cuda")
    mats = [("rmat-21-16", lambda: rmat(21, 16)), ("rmat-19-16", lambda: rmat(19, 16)),
            ("powerlaw-2M", lambda: powerlaw(2_000_000, 2_000_000, 16)),
            ("debian-depends", lambda: scipy.io.mmread(f"{data}/graphs/debian-depends.mtx.gz").tocsr())]
    for name, make in mats:
        A0 = make().astype(np.float32)
        A0.data = np.random.default_rng(1).random(A0.nnz, dtype=np.float32) + 0.5
        x0 = np.random.default_rng(2).random(A0.shape[1], dtype=np.float32)
        for oname, order in orders(A0):
            new_of_old = np.empty_like(order)
            new_of_old[order] = np.arange(order.size)
            A = sp.csr_matrix((A0.data, new_of_old[A0.indices], A0.indptr), shape=A0.shape)  # entry order kept
            xd = cp.asarray(x0[order])
            o = Ours(ctx, A)
            Ad = csp.csr_matrix(A)
            y = cp.zeros(A.shape[0], dtype=cp.float32)
            theirs = median_time(lambda: Ad @ xd, reps=20)
            ours = median_time(lambda: sr.spmv(o.M, xd, out=y, context=ctx), reps=20)
            floor = gather_floor(o, xd)
            print(f"{name:15} {oname:12} nnz {A.nnz:9d} | cuSPARSE {theirs*1e3:7.3f} ms | ours {ours*1e3:7.3f} ms "
                  f"({theirs/ours:4.2f}x) | gather floor {floor*1e3:7.3f} ms", flush=True)
            del o, Ad, xd


if __name__ == "__main__":
    main()
