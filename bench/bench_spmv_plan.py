"""SpMV with a plan (sr.spmv_plan) against cuSPARSE (cupy), in one process on the GPU: per matrix,
cuSPARSE's SpMV, sparsering's plain SpMV, the plan's cost, the planned SpMV, the ratios per call
and with the plan's cost spread over 100 calls, the gather floor (bench_products.gather_floor) and
whether the planned result is bit-identical to the plain one. float32, x random.

    PYTHONPATH=BUILD/python python3 bench/bench_spmv_plan.py DATA_DIR [--json out.json] [--quick]"""
import json
import os
import sys
import warnings

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.io

sys.path.insert(0, os.path.dirname(__file__))
import sparsering as sr  # noqa: E402
import bench_products  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
from timing import median_time  # noqa: E402

bench_products.sr = sr
warnings.filterwarnings("ignore", category=DeprecationWarning)  # scipy.io.mmread's spmatrix notice
CALLS = 100  # the plan's cost is spread over this many calls


def matrices(data, quick):
    yield "debian-depends", lambda: scipy.io.mmread(f"{data}/graphs/debian-depends.mtx.gz").tocsr()
    yield "pushpull", lambda: scipy.io.mmread(f"{data}/graphs/pushpull.mtx.gz").tocsr()
    yield "rmat-18-16", lambda: rmat(18, 16)
    if not quick:
        yield "rmat-20-16", lambda: rmat(20, 16)
        yield "rmat-21-16", lambda: rmat(21, 16)
        yield "powerlaw-2M", lambda: powerlaw(2_000_000, 2_000_000, 16)


def main():
    data = sys.argv[1]
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    ctx = sr.Context("cuda")
    sync = cp.cuda.Device().synchronize
    rows = []
    warm = cp.ones(1 << 26, dtype=cp.float32)  # half a second of work first: the clocks are up for the small graphs
    for _ in range(300):
        warm *= 1.0
    sync()
    print(f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; float32; median of 20 after 2 warm-ups; "
          f"amortized = plan + {CALLS} planned calls against {CALLS} cuSPARSE calls", flush=True)
    for name, make in matrices(data, "--quick" in sys.argv):
        A = make().astype(np.float32)
        A.data = np.random.default_rng(1).random(A.nnz, dtype=np.float32) + 0.5
        x = cp.asarray(np.random.default_rng(2).random(A.shape[1], dtype=np.float32))
        o = bench_products.Ours(ctx, A)
        Ad = csp.csr_matrix(A)
        y = cp.zeros(A.shape[0], dtype=cp.float32)
        theirs = median_time(lambda: Ad @ x, reps=20, sync=sync)
        plain = median_time(lambda: sr.spmv(o.M, x, out=y, context=ctx), reps=20, sync=sync)
        y_plain = y.copy()
        floor = bench_products.gather_floor(o, x)
        info = sr.spmv_plan(o.M, context=ctx)
        planned = median_time(lambda: sr.spmv(o.M, x, out=y, context=ctx), reps=20, sync=sync)
        identical = bool(cp.all(y.view(cp.int32) == y_plain.view(cp.int32)))
        err = float(cp.linalg.norm(y - Ad @ x) / cp.linalg.norm(Ad @ x))
        amortized = CALLS * theirs / (info.seconds + CALLS * planned)
        row = dict(matrix=name, nrows=A.shape[0], nnz=A.nnz, cusparse_s=theirs, plain_s=plain, plan_s=info.seconds,
                   planned_s=planned, in_use=info.in_use, hot_columns=info.hot_columns, hot_share=info.hot_share,
                   plan_bytes=info.bytes, ratio_plain=theirs / plain, ratio_planned=theirs / planned,
                   ratio_amortized=amortized, gather_floor_s=floor, identical=identical, rel_err=err)
        rows.append(row)
        print(f"{name:15} nnz {A.nnz:9d} | cuSPARSE {theirs*1e3:7.3f} | plain {plain*1e3:7.3f} ({theirs/plain:4.2f}x, "
              f"{plain/floor:4.2f}x floor) | plan {info.seconds*1e3:7.2f} ms, {'in use' if info.in_use else 'unused'}, "
              f"{info.hot_columns} hot cols = {100*info.hot_share:4.1f}% | planned {planned*1e3:7.3f} "
              f"({theirs/planned:4.2f}x; over {CALLS} calls {amortized:4.2f}x) | gather floor {floor*1e3:6.3f} | "
              f"identical {identical} | err {err:.1e}", flush=True)
        del o, Ad
    if out:
        with open(out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
