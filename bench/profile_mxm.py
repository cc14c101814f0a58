"""Per-phase device times of sr_mxm (SPARSERING_PROFILE=1), three runs of one product.
usage: SPARSERING_PROFILE=1 python3 bench/profile_mxm.py BUILD_DIR [MATRIX.mtx[.gz]] [--transpose]
Without a matrix: the benchmarks' 300K x 300K power-law matrix, A*A."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bench_products as bp  # noqa: E402
import sr_ctypes as sr  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
transpose = "--transpose" in sys.argv
lib = sr.load(args[0])
ctx = lib.context()
A = bp.read_graph(args[1]) if len(args) > 1 else bp.powerlaw(300_000, 300_000, 10, seed=1)
o = bp.Ours(lib, ctx, A)
for _ in range(3):
    print("--- A*A^T" if transpose else "--- A*A", file=sys.stderr, flush=True)
    lib.free(lib.mxm(ctx, 0, o.M, o.M, transpose))
