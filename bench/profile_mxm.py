"""One A*A product with SPARSERING_PROFILE=1: per-phase device times of sr_mxm.
usage: SPARSERING_PROFILE=1 python3 bench/profile_mxm.py BUILD_DIR"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bench_products as bp  # noqa: E402
import sr_ctypes as sr  # noqa: E402

lib = sr.load(sys.argv[1])
ctx = lib.context()
A = bp.powerlaw(300_000, 300_000, 10, seed=1)
o = bp.Ours(lib, ctx, A)
for _ in range(3):
    print("--- A*A", file=sys.stderr, flush=True)
    lib.free(lib.mxm(ctx, 0, o.M, o.M))
