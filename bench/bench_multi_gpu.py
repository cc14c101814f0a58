"""Scaling over the GPUs of one host: the same calls on a one-GPU context and on contexts over 2
(and 4, where the host has them) GPUs, balanced (equal nonzeros; equal multiply-adds for SpGEMM)
and by equal rows (the cuSDDMM paper's symmetric split), in one process.

  k-NN all-vs-all (cosine, k = 10) on the paper-scale NYTimes-like and scRNA-like sets: the
  first call (it cuts the index into blocks, copies it to every GPU and builds each block's
  transpose) and a second one, every query against every row;
  SDDMM (K = 128, float32) on the PyPI names 3-grams (the largest bag of words: 886K x 38K,
  11.7M entries) with A and B in the first GPU's memory (cupy) and in host memory (numpy:
  each GPU reads its rows of A and all of B over its own link);
  SpGEMM A·A (plus_times, float32) on R-MAT (Graph500's a = 0.57, b = c = 0.19) of scale 18
  and 20, edge factor 8, the product put together on the first GPU.

Every multi-GPU answer is compared with the one-GPU answer (k-NN indices and distances and SDDMM
values bit for bit; SpGEMM entry counts and values).

  python3 bench/bench_multi_gpu.py BUILD --data DIR [--only knn,sddmm,spgemm] [--json OUT]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sr_package  # noqa: E402
from generated_graphs import rmat  # noqa: E402
from knn_data import PAPER_SETS, ngrams, paper_set  # noqa: E402
from timing import median_time  # noqa: E402


def contexts(sr, ngpu):
    out = [("1 GPU", sr.Context("cuda"))]
    for n in (2, 4):
        if ngpu >= n:
            out.append((f"{n} GPUs balanced", sr.Context("cuda", devices=list(range(n)))))
            out.append((f"{n} GPUs rows", sr.Context("cuda", devices=list(range(n)), partition="rows")))
    return out


def gpus_of(label):
    return int(label.split()[0])


def row(rows, op, data, label, first, steady, base, same, extra=None):
    speedup = base / steady if steady else float("nan")
    r = {"operation": op, "input": data, "context": label, "gpus": gpus_of(label), "first_s": first,
         "median_s": steady, "speedup": speedup, "efficiency": speedup / gpus_of(label), "same_as_one_gpu": same}
    r.update(extra or {})
    rows.append(r)
    print(f"{op:8s} {data:34s} {label:18s} first {first:9.4f} s  steady {steady:9.4f} s  "
          f"speedup {speedup:5.2f}x  efficiency {r['efficiency']:5.2f}  same: {same}", flush=True)


def bench_knn(sr, ctxs, rows, sets):
    for name in sets:
        X = paper_set(name)
        X.sort_indices()
        data = f"{name} {X.shape[0]}x{X.shape[1]} {X.nnz / 1e6:.1f}M"
        want = None
        base = None
        for label, ctx in ctxs:
            M = sr.Matrix(X, context=ctx)
            ctx.synchronize()
            t0 = time.perf_counter()
            d, i = sr.kneighbors(M, None, k=10, metric="cosine", context=ctx)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            d, i = sr.kneighbors(M, None, k=10, metric="cosine", context=ctx)
            steady = time.perf_counter() - t0
            if want is None:
                want, base = (d, i), steady
            same = bool(np.array_equal(i, want[1]) and np.array_equal(d, want[0]))
            row(rows, "knn", data, label, first, steady, base, same)
            del M


def bench_sddmm(sr, ctxs, rows, data_dir, reps):
    import cupy as cp
    S = ngrams(data_dir).astype(np.float32)
    S.sort_indices()
    K = 128
    rng = np.random.default_rng(3)
    A = rng.standard_normal((S.shape[0], K)).astype(np.float32)
    B = rng.standard_normal((S.shape[1], K)).astype(np.float32)
    dA, dB = cp.asarray(A), cp.asarray(B)
    data = f"pypi-names 3-grams {S.shape[0]}x{S.shape[1]} {S.nnz / 1e6:.1f}M, K {K}"
    runs = [(label, ctx, None) for label, ctx in ctxs]
    # operands on the first GPU: the byte model keeps the work there (moving A costs more than it
    # saves); "spread" forces the GPUs (SPARSERING_MULTI_SDDMM=1) to show why
    runs += [(label.replace("GPUs", "GPUs spread"), ctx, "1") for label, ctx in ctxs if gpus_of(label) > 1]
    for where in ("device", "host"):
        want = base = None
        for label, ctx, force in runs:
            if force and where == "host":
                continue
            if force:
                os.environ["SPARSERING_MULTI_SDDMM"] = force
            else:
                os.environ.pop("SPARSERING_MULTI_SDDMM", None)
            Sm = sr.Matrix(S, context=ctx)
            if where == "device":
                out = cp.empty(S.nnz, dtype=cp.float32)
                f = lambda: sr.sddmm_values(Sm, dA, dB, out=out, context=ctx)  # noqa: E731
                sync = cp.cuda.runtime.deviceSynchronize
            else:
                out = np.empty(S.nnz, dtype=np.float32)
                f = lambda: sr.sddmm_values(Sm, A, B, out=out, context=ctx)  # noqa: E731
                sync = None
            t0 = time.perf_counter()
            f()
            ctx.synchronize()
            first = time.perf_counter() - t0
            steady = median_time(f, reps=reps, warm=1, sync=sync)
            got = cp.asnumpy(out) if where == "device" else out.copy()
            if want is None:
                want, base = got, steady
            gflops = 2 * K * S.nnz / steady / 1e9
            row(rows, "sddmm", f"{data}, A B on {where}", label, first, steady, base,
                bool(np.array_equal(got, want)), {"gflops": gflops})
            del Sm
    os.environ.pop("SPARSERING_MULTI_SDDMM", None)


def timed_call(make, ctx, reps):
    """(the last result, the first call's seconds, the median of `reps` more): each call ends with
    the context synchronized, and drops the previous result first, so two never coexist."""
    out = [None]

    def f():
        out[0] = None
        out[0] = make()
        ctx.synchronize()
    t0 = time.perf_counter()
    f()
    first = time.perf_counter() - t0
    steady = median_time(f, reps=reps, warm=0)
    return out.pop(), first, steady


def bench_spgemm(sr, ctxs, rows, scales, reps):
    for scale in scales:
        G = rmat(scale, 8).astype(np.float32)
        data = f"R-MAT {scale} ef 8, {G.nnz / 1e6:.1f}M"
        want = base = None
        for label, ctx in ctxs:
            M = sr.Matrix(G, context=ctx)
            C, first, steady = timed_call(lambda: sr.mxm(M, M, context=ctx), ctx, reps)
            nnz = C.nnz
            check = C.to_scipy() if nnz < 50_000_000 else None
            if want is None:
                want, base = (nnz, check), steady
            same = nnz == want[0] and (check is None or (abs(check - want[1]) > 1e-4 * abs(want[1]).max()).nnz == 0)
            row(rows, "spgemm", f"{data} -> {nnz / 1e6:.0f}M", label, first, steady, base, bool(same))
            C = None
            if len(ctx.devices) > 1:  # the product left in row blocks (sr.mxm_row_blocks): no gather
                R, first, steady = timed_call(lambda: sr.mxm_row_blocks(M, M, context=ctx), ctx, reps)
                row(rows, "spgemm", f"{data}, left in row blocks", label, first, steady, base, R.nnz == want[0])
                R = None
            del M


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build")
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    ap.add_argument("--only", default="knn,sddmm,spgemm")
    ap.add_argument("--knn-sets", default="nytimes-like,scrna-like")
    ap.add_argument("--scales", default="18,20")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    sr = sr_package.load(args.build)
    import cupy as cp
    ngpu = cp.cuda.runtime.getDeviceCount()
    print(f"{ngpu} GPUs: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}", flush=True)
    ctxs = contexts(sr, ngpu)
    rows = []
    only = args.only.split(",")
    if "knn" in only:
        bench_knn(sr, ctxs, rows, args.knn_sets.split(","))
    if "sddmm" in only:
        bench_sddmm(sr, ctxs, rows, args.data, args.reps)
    if "spgemm" in only:
        bench_spgemm(sr, ctxs, rows, [int(s) for s in args.scales.split(",")], max(1, args.reps // 2))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
