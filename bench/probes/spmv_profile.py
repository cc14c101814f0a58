"""One SpMV on R-MAT (plain, then with a plan) and the gather floor kernel, for ncu:

    ncu --kernel-name regex:"spmv_split|gather" --section SpeedOfLight --section Occupancy \
        --section WarpStateStats python3 bench/probes/spmv_profile.py DATA_DIR [SCALE:EF]"""
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402
import bench_products  # noqa: E402
from generated_graphs import rmat  # noqa: E402

bench_products.sr = sr


def main():
    scale, ef = (int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "21:16").split(":"))
    ctx = sr.Context("cuda")
    A = rmat(scale, ef).astype(np.float32)
    A.data = np.random.default_rng(1).random(A.nnz, dtype=np.float32) + 0.5
    x = cp.asarray(np.random.default_rng(2).random(A.shape[1], dtype=np.float32))
    o = bench_products.Ours(ctx, A)
    y = cp.zeros(A.shape[0], dtype=cp.float32)
    bench_products.gather_floor(o, x)
    sr.spmv(o.M, x, out=y, context=ctx)
    print(sr.spmv_plan(o.M, context=ctx), flush=True)
    sr.spmv(o.M, x, out=y, context=ctx)
    cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
