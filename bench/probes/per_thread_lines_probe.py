"""Per-thread state sharing cache lines on the CPU backend, one build against another: the fused
pattern on tall X with narrow w (each thread sums into its own copy of w; copies of 100 floats
end mid-line), the fused SDDMM->SpMM (each thread's p accumulators) and SpGEMM with narrow B
(each thread's stamps and sums are n long). Each build runs
in its own process, alternating, twice.

    python3 bench/probes/per_thread_lines_probe.py BUILD_BEFORE BUILD_AFTER [--quick]

--quick: 10^6 rows for the fused pattern instead of 10^7."""
import os
import subprocess
import sys

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from timing import median_time  # noqa: E402


def measure(build, quick):
    import sr_package
    sr = sr_package.load(build)
    ctx = sr.Context("cpu")
    rng = np.random.default_rng(3)
    rows = 1_000_000 if quick else 10_000_000
    for m, n, per in ((rows, 100, 10), (1_000_000, 1000, 10), (1_000_000, 16, 8)):
        X = sp.csr_matrix((rng.standard_normal(m * per).astype(np.float32), rng.integers(0, n, m * per),
                           np.arange(0, m * per + 1, per)), shape=(m, n))
        X.sum_duplicates()
        M = sr.Matrix(X, context=ctx)
        y, v, z = (rng.standard_normal(k).astype(np.float32) for k in (n, m, n))
        t = median_time(lambda: sr.fused_pattern(M, y, v=v, z=z, beta=0.5, context=ctx), reps=15)
        print(f"{build:24} fused {m}x{n:<5} {t * 1e3:8.2f} ms", flush=True)
    S = sp.random(200_000, 50_000, density=16 / 50_000, format="csr", random_state=rng, dtype=np.float32)
    Sm = sr.Matrix(S, context=ctx)
    for p in (8, 32):
        Af, Bf, Vf = (rng.standard_normal((r, p)).astype(np.float32) for r in (200_000, 50_000, 50_000))
        t = median_time(lambda: sr.sddmm_spmm(Sm, Af, Bf, Vf, context=ctx), reps=9)
        print(f"{build:24} SDDMM->SpMM 200K x 50K (3.2M), K = p = {p:2} {t * 1e3:8.2f} ms", flush=True)
    m = 200_000
    A = sr.Matrix(sp.random(m, m, density=20 / m, format="csr", random_state=rng, dtype=np.float64), context=ctx)
    for ncols in (4, 16, 64):
        B = sr.Matrix(sp.random(m, ncols, density=0.5, format="csr", random_state=rng, dtype=np.float64), context=ctx)
        t = median_time(lambda: sr.mxm(A, B, context=ctx), reps=9)
        print(f"{build:24} SpGEMM A (200K^2, 4M) x B (200K x {ncols:2}) {t * 1e3:8.2f} ms", flush=True)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if len(args) == 1:  # a child: one build
        measure(args[0], "--quick" in sys.argv)
    else:
        for _ in range(2):
            for build in args:
                subprocess.run([sys.executable, __file__, build] + [a for a in sys.argv[1:] if a == "--quick"],
                               check=True)
