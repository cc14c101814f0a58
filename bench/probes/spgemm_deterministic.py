"""The cost of a deterministic context's SpGEMM (docs/c-library.md#reproducible-results): plus_times
A·B with A and B on the device, on a default and a deterministic CUDA context; prints each
input's shape, entries, products and output entries, the median call time of each context, and
whether the deterministic calls gave the same bits twice and on a second context.

usage: python3 bench/probes/spgemm_deterministic.py BUILD_DIR"""
import os
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
import timing  # noqa: E402
from powerlaw import powerlaw  # noqa: E402

sr = sr_package.load(sys.argv[1] if len(sys.argv) > 1 else "build")


def products(A, B):
    """Multiplications of A·B: each A entry (i, k) meets B's row k."""
    return int(np.diff(B.indptr)[A.indices].sum())


def meeting(m, k, n, a_per_row, b_per_row, dtype, seed):
    """Uniform rows whose products meet in each output column many times."""
    rng = np.random.default_rng(seed)
    A = sp.random(m, k, density=a_per_row / k, format="csr", random_state=rng, dtype=np.float64)
    B = sp.random(k, n, density=b_per_row / n, format="csr", random_state=rng, dtype=np.float64)
    A.data, B.data = rng.random(A.nnz) + 0.1, rng.random(B.nnz) + 0.1
    return A.astype(dtype), B.astype(dtype)


cases = {}
G = powerlaw(300_000, 300_000, 10, seed=1)  # the anchors' SpGEMM matrix (PERFORMANCE.md)
cases["power-law 300K A·A float32"] = (G, G)
cases["power-law 300K A·A float64"] = (G.astype(np.float64), G.astype(np.float64))
cases["uniform 10K x 2K · 2K x 1K float32"] = meeting(10_000, 2_000, 1_000, 30, 50, np.float32, 3)
cases["uniform 10K x 2K · 2K x 1K float64"] = meeting(10_000, 2_000, 1_000, 30, 50, np.float64, 3)

default, determ, other = (sr.Context("cuda"), sr.Context("cuda", deterministic=True),
                          sr.Context("cuda", deterministic=True))
print(f"{'case':36} {'A':>22} {'products':>11} {'C nnz':>11} {'default ms':>11} {'determ. ms':>11} "
      f"{'ratio':>6} {'same bits':>9}")
for name, (A, B) in cases.items():
    on = {c: (sr.Matrix(A, context=c), sr.Matrix(B, context=c)) for c in (default, determ, other)}
    ms = {}
    for c in (default, determ):
        dA, dB = on[c]
        ms[c] = 1e3 * timing.median_time(lambda: sr.mxm(dA, dB, context=c), reps=5, warm=1)
    first = sr.mxm(*on[determ], context=determ).to_scipy()
    again = sr.mxm(*on[determ], context=determ).to_scipy()
    second = sr.mxm(*on[other], context=other).to_scipy()
    base = sr.mxm(*on[default], context=default).to_scipy()
    same = all((first.indptr == x.indptr).all() and (first.indices == x.indices).all() and
               first.data.tobytes() == x.data.tobytes() for x in (again, second))
    diff = float(np.abs(first.data.astype(np.float64) - base.data).max() / np.abs(base.data).max())
    shape = f"{A.shape[0]}x{A.shape[1]}, {A.nnz}"
    print(f"{name:36} {shape:>22} {products(A, B):>11} {first.nnz:>11} {ms[default]:11.2f} {ms[determ]:11.2f} "
          f"{ms[determ] / ms[default]:6.2f} {str(same):>9}  (max rel diff to default {diff:.1e})", flush=True)
