"""Per-phase device times (SPARSERING_PROFILE=1, on stderr) of the Boolean products the benchmarks
found slow: R-MAT M·M at scales 16 and 17, and same-generation CFPQ's largest masked product
(Aᵀ·ΔH under S's complement, round 2 on debian-depends). Each product runs twice; read the second.
usage: SPARSERING_PROFILE=1 python3 bench/probes/mxm_phases.py [--data ../shared/data] [--skip-rmat]"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402
from bench_boolean import rmat  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--data", default="../shared/data")
ap.add_argument("--skip-rmat", action="store_true")
args = ap.parse_args()
ctx = sr.Context("cuda")


def run(name, f):
    for rep in range(2):
        print(f"=== {name} (run {rep + 1})", file=sys.stderr, flush=True)
        out = f()
        ctx.synchronize()
    print(f"=== {name}: {out.nnz} entries", file=sys.stderr, flush=True)


A = sr.read_mm(os.path.join(args.data, "graphs/debian-depends.mtx.gz"), dtype=np.bool_, context=ctx).to("device")
At = A.T
S = sr.mxm(At, A, "or_and")
dH = sr.mxm(S, A, "or_and")
dS = sr.mxm(At, dH, "or_and", mask=S, complement=True)  # round 1
S = sr.ewise_add(S, dS, "or_and")
H = dH
dH = sr.mxm(dS, A, "or_and", mask=H, complement=True)    # round 2
run("CFPQ round 2: At x dH, mask = complement of S", lambda: sr.mxm(At, dH, "or_and", mask=S, complement=True))
run("CFPQ round 2: At x dH, no mask", lambda: sr.mxm(At, dH, "or_and"))
if not args.skip_rmat:
    for scale in (16, 17):
        M = sr.Matrix(rmat(scale, 8), context=ctx, location="device")
        run(f"R-MAT {scale} M x M", lambda: sr.mxm(M, M, "or_and"))
