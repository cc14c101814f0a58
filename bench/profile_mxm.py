"""Per-phase device times of sr_mxm (SPARSERING_PROFILE=1), three runs of one product.
usage: SPARSERING_PROFILE=1 python3 bench/profile_mxm.py BUILD_DIR [MATRIX.mtx[.gz]] [--transpose]
Without a matrix: the benchmarks' 300K x 300K power-law matrix, A*A."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import bench_products as bp  # noqa: E402
import sr_package  # noqa: E402

args = [a for a in sys.argv[1:] if not a.startswith("--")]
transpose = "--transpose" in sys.argv
sr = sr_package.load(args[0])
ctx = sr.Context("cuda")
A = bp.read_graph(args[1]) if len(args) > 1 else bp.powerlaw(300_000, 300_000, 10, seed=1)
M = sr.Matrix(A, context=ctx, location="device")
for _ in range(3):
    print("--- A*A^T" if transpose else "--- A*A", file=sys.stderr, flush=True)
    sr.mxm(M, M, transpose_b=transpose, context=ctx)
