"""Where same-generation CFPQ's time goes on a backend: the semi-naive rounds written out with the
Python API (S = Aᵀ·A; then H = ΔS·A and ΔS = Aᵀ·H, each only where nothing is known yet, and the
unions into the known pairs), each step timed after a synchronize, summed over the rounds.
usage: python3 bench/probes/cfpq_probe.py [--data ../shared/data] [--backend cuda]"""
import argparse
import collections
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sparsering as sr  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--data", default="../shared/data")
ap.add_argument("--backend", default="cuda")
args = ap.parse_args()
ctx = sr.Context(args.backend)
A = sr.read_mm(os.path.join(args.data, "graphs/debian-depends.mtx.gz"), dtype=np.bool_, context=ctx)
if args.backend == "cuda":
    A = A.to("device") if hasattr(A, "to") else sr.Matrix(A.to_scipy(), context=ctx, location="device")
At = A.T
spent = collections.Counter()


def timed(what, f):
    ctx.synchronize()
    t0 = time.perf_counter()
    out = f()
    ctx.synchronize()
    spent[what] += time.perf_counter() - t0
    return out


for rep in range(2):  # the first run warms up
    spent.clear()
    t_all = time.perf_counter()
    S = timed("first product", lambda: sr.mxm(At, A, "or_and"))
    H = None
    dS, rounds = S, 0
    while dS.nnz:
        rounds += 1
        dH = timed("ΔS·A masked", lambda: sr.mxm(dS, A, "or_and", mask=H, complement=True) if H is not None
                   else sr.mxm(dS, A, "or_and"))
        H = dH if H is None else timed("H |= ΔH", lambda: sr.ewise_add(H, dH, "or_and"))
        dS = timed("Aᵀ·ΔH masked", lambda: sr.mxm(At, dH, "or_and", mask=S, complement=True))
        if dS.nnz:
            S = timed("S |= ΔS", lambda: sr.ewise_add(S, dS, "or_and"))
    ctx.synchronize()
    total = time.perf_counter() - t_all
print(f"{args.backend}: {S.nnz} pairs in {rounds} rounds, {1e3 * total:.1f} ms")
for what, t in spent.most_common():
    print(f"  {what:16} {1e3 * t:8.1f} ms")
