"""SpMV, SpMM (K = 8, 32, 128; B row- and column-major) and SpGEMM (A·A, A·Aᵀ) on the GPU:
sparsering against cuSPARSE (through cupy) in the same process, on the anchors' power-law
matrices (../shared/anchors, same generator and seeds) and on real graphs.
usage: python3 bench/bench_products.py BUILD_DIR [DATA_DIR] [--json out.json] [--quick] [--spmv-only | --spgemm-only | --spgemm-1m]"""
import json
import os
import sys

import cupy as cp
import cupyx.scipy.sparse as csp
import numpy as np
import scipy.io
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(__file__))
import sr_package  # noqa: E402
import plots  # noqa: E402
from powerlaw import powerlaw  # noqa: E402
import timing  # noqa: E402

REPS = 10


def median_time(f, reps=REPS, warm=2):
    return timing.median_time(f, reps, warm, sync=cp.cuda.Device().synchronize)


def copy_ceiling():
    x = cp.empty(2 * 1024**3 // 4, dtype=cp.float32)
    y = cp.empty_like(x)
    t = median_time(lambda: y.__setitem__(slice(None), x))
    return 2 * 2 * 1024**3 / t


_GATHER = cp.RawKernel(r"""
extern "C" __global__ void gather(const int *col, const float *val, long long nnz, const float *x, float *out) {
    float acc = 0.f;
    const long long stride = (long long)gridDim.x * blockDim.x * 4;
    for (long long k0 = blockIdx.x * (long long)blockDim.x * 4 + threadIdx.x; k0 < nnz; k0 += stride) {
        int c[4]; float v[4];
        for (int u = 0; u < 4; u++) {
            const long long k = k0 + u * blockDim.x;
            c[u] = k < nnz ? __ldg(col + k) : 0;
            v[u] = k < nnz ? __ldg(val + k) : 0.f;
        }
        for (int u = 0; u < 4; u++) acc += v[u] * __ldg(x + c[u]);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}""", "gather")


def gather_floor(o, x):
    """Seconds for a kernel that only streams A's columns and values and gathers x at them (no rows,
    no output): the floor of any CSR SpMV on this matrix when the gathers, not DRAM, bound it."""
    blocks = cp.cuda.runtime.getDeviceProperties(0)['multiProcessorCount'] * 8
    out = cp.empty(blocks * 256, dtype=cp.float32)
    return median_time(lambda: _GATHER((blocks,), (256,), (o.ci, o.v, cp.int64(o.nnz), x, out)))


class Ours:
    """A host CSR as a sparsering device matrix, made through the package from a cupyx matrix
    (built on the device); the cupy column and value arrays stay for the gather floor."""

    def __init__(self, ctx, A):
        self.shape, self.nnz = A.shape, A.nnz
        self.ci = cp.asarray(A.indices.astype(np.int32))
        self.v = cp.asarray(A.data.astype(np.float32))
        self.M = sr.Matrix(csp.csr_matrix(A.astype(np.float32)), context=ctx)


def rel_err(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def bench_dense(ctx, name, A, rows, ceiling, semirings, Ks=(1, 8, 32, 128)):
    o = Ours(ctx, A)
    Ad = csp.csr_matrix(A)
    m, k = A.shape
    for K in Ks:
        for order in (("C", "F") if K > 1 else ("F",)):
            B = cp.asarray(cp.random.random((k, K), dtype=cp.float32), order=order)
            Cm = cp.zeros((m, K), dtype=cp.float32, order=order)
            Bv = B[:, 0] if K == 1 else B
            theirs = median_time(lambda: Ad @ Bv)
            ref = (Ad @ Bv).get()
            times = {}
            for s in semirings:
                ctx.reset_peak_memory()
                base = ctx.device_memory()[0]
                times[s] = median_time(lambda: sr.spmm(o.M, B, s, out=Cm, context=ctx))  # B, C read in place
                peak = ctx.device_memory()[1] - base
                if s == "plus_times":
                    err = rel_err(Cm.get().reshape(ref.shape), ref)
            gather = gather_floor(o, cp.ascontiguousarray(Bv)) if K == 1 else None
            flops = 2.0 * A.nnz * K
            bytes_ = A.nnz * 8 + (m + 1) * 8 + (k * K + m * K) * 4  # A once, B and C once (the floor)
            t = times["plus_times"]
            others = max(times[s] / t for s in semirings)
            row = dict(operation="spmv" if K == 1 else "spmm", input=name, K=K,
                       layout="row" if order == "C" else "col", nnz=A.nnz, backend="cuda",
                       median_s=t, baseline="cuSPARSE (cupy)", baseline_s=theirs, ratio=theirs / t,
                       gflops=flops / t / 1e9, gbps=bytes_ / t / 1e9, floor_s=bytes_ / ceiling,
                       peak_device_bytes=peak, rel_err=err, worst_semiring_ratio=others, gather_floor_s=gather,
                       semiring_s={s: times[s] for s in semirings})
            rows.append(row)
            print(f"{row['operation']:5} {name:18} K={K:<4} {row['layout']:3} | ours {t*1e3:8.3f} ms  cuSPARSE "
                  f"{theirs*1e3:8.3f} ms  {theirs/t:5.2f}x | {row['gflops']:7.1f} GFLOP/s {row['gbps']:7.1f} GB/s "
                  f"({100*bytes_/ceiling/t:4.1f}% of floor) | other semirings <= {others:4.2f}x | err {err:.1e}"
                  + (f" | gather floor {gather*1e3:.3f} ms" if gather else ""), flush=True)
            del B, Cm
    del o


def bench_spgemm(ctx, name, A, rows):
    o = Ours(ctx, A)
    Ad = csp.csr_matrix(A)
    pool = cp.get_default_memory_pool()
    for transpose in (False, True):
        label = "A*A^T" if transpose else "A*A"
        if transpose:
            f_theirs = lambda: Ad @ Ad.T.tocsr()  # noqa: E731
        else:
            f_theirs = lambda: Ad @ Ad  # noqa: E731
        # cuSPARSE's peak: a fresh pool that never returns memory, so its size after one product is the peak
        fresh = cp.cuda.MemoryPool()
        cp.cuda.set_allocator(fresh.malloc)
        ref = f_theirs()
        theirs_peak = fresh.total_bytes()  # output and scratch (and A^T's copy), as ours counts them
        cp.cuda.set_allocator(pool.malloc)
        theirs = median_time(f_theirs, reps=5)
        ref = ref.get()
        ctx.reset_peak_memory()
        base = ctx.device_memory()[0]
        C = sr.mxm(o.M, o.M, transpose_b=transpose, context=ctx)  # a device Matrix
        peak = ctx.device_memory()[1] - base
        got = C.to_scipy()
        del C
        same_pattern = got.nnz == ref.nnz and (abs(got - ref) > 1e-3 * abs(ref).max()).nnz == 0
        if not same_pattern:
            diff = abs(got - ref)
            print(f"  mismatch: nnz ours {got.nnz} theirs {ref.nnz}; entries differing by > 1e-3 max: "
                  f"{(diff > 1e-3 * abs(ref).max()).nnz}; max |diff| {diff.max():.3g}, max |ref| {abs(ref).max():.3g}",
                  flush=True)
            third = (A @ (A.T if transpose else A)).tocsr()  # scipy on the host: who is right?
            third.sort_indices()
            for who, M in (("sparsering", got), ("cuSPARSE", ref)):
                d = abs(M - third)
                print(f"  {who} vs scipy: entries off by > 1e-3 max: {(d > 1e-3 * abs(third).max()).nnz}", flush=True)

        t = median_time(lambda: sr.mxm(o.M, o.M, transpose_b=transpose, context=ctx), reps=5)
        times = {"plus_times": t}
        for s in ("min_plus", "max_times", "plus_pair"):
            times[s] = median_time(lambda: sr.mxm(o.M, o.M, s, transpose_b=transpose, context=ctx), reps=3)
        others = max(times[s] / t for s in times)
        row = dict(operation="spgemm", input=name, product=label, nnz=A.nnz, nnz_out=ref.nnz, backend="cuda",
                   median_s=t, baseline="cuSPARSE SpGEMM (cupy)", baseline_s=theirs, ratio=theirs / t,
                   peak_device_bytes=peak, baseline_peak_device_bytes=theirs_peak, matches=bool(same_pattern),
                   worst_semiring_ratio=others, semiring_s=times)
        rows.append(row)
        print(f"spgemm {name:18} {label:6} nnz {A.nnz:>9} -> {ref.nnz:>10} | ours {t*1e3:8.2f} ms  cuSPARSE "
              f"{theirs*1e3:8.2f} ms  {theirs/t:5.2f}x | memory ours {peak/1e6:8.1f} MB  cuSPARSE "
              f"{theirs_peak/1e6:8.1f} MB | other semirings <= {others:4.2f}x | matches {same_pattern}", flush=True)
    del o


def read_graph(path):
    A = scipy.io.mmread(path).tocsr().astype(np.float32)
    A.sum_duplicates()
    A.sort_indices()
    A.data[:] = np.random.default_rng(0).random(A.nnz, dtype=np.float32) + 0.1
    return A


def main():
    build = sys.argv[1]
    data = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("--") else None
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else "bench_products.json"
    quick = "--quick" in sys.argv
    global sr
    sr = sr_package.load(build)
    ctx = sr.Context("cuda")
    ceiling = copy_ceiling()
    print(f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, copy ceiling {ceiling/1e12:.2f} TB/s; "
          f"median of {REPS} runs after 2 warm-ups (5 for SpGEMM)", flush=True)
    rows = []
    if "--spgemm-1m" in sys.argv:
        bench_spgemm(ctx, "powerlaw 1Mx1M", powerlaw(1_000_000, 1_000_000, 12, seed=4), rows)
        return
    if "--spmv-only" in sys.argv:
        bench_dense(ctx, "powerlaw 2Mx2M", powerlaw(2_000_000, 2_000_000, 16), rows, ceiling, ["plus_times"], Ks=(1,))
        return
    semirings = ["plus_times", "min_plus", "max_times", "max_min"] if not quick else ["plus_times"]
    spgemm_only = "--spgemm-only" in sys.argv
    if not spgemm_only:
        bench_dense(ctx, "powerlaw 2Mx2M", powerlaw(2_000_000, 2_000_000, 16), rows, ceiling, semirings)
    if data and not spgemm_only:
        for g in ("debian-depends", "pushpull"):
            p = os.path.join(data, "graphs", g + ".mtx.gz")
            if os.path.exists(p):
                bench_dense(ctx, g, read_graph(p), rows, ceiling, ["plus_times"])
    bench_spgemm(ctx, "powerlaw 300Kx300K", powerlaw(300_000, 300_000, 10, seed=1), rows)
    if not quick:
        bench_spgemm(ctx, "powerlaw 1Mx1M", powerlaw(1_000_000, 1_000_000, 12, seed=4), rows)
    if data:
        for g in ("debian-depends", "pushpull", "bcsstk13"):
            p = os.path.join(data, "graphs", g + ".mtx.gz")
            if os.path.exists(p):
                bench_spgemm(ctx, g, read_graph(p), rows)
    with open(out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    plots.plot("products", rows, plots.beside(out))


if __name__ == "__main__":
    main()
