"""How fast can an SpMV's gathers go when a plan moves the popular columns' x values into shared
memory? Kernels that only stream a matrix's columns and values and gather x (the gather floor of
bench_products), on R-MAT: x from L2 as given; columns renumbered by degree; the first S columns
by degree gathered from shared memory (one or two blocks an SM, 4 or 8 entries a thread in
flight), the rest from L2 as given or renumbered. Seconds, median of 20.

    python3 bench/probes/hot_gather_probe.py [SCALE:EDGE_FACTOR ...]"""
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from generated_graphs import rmat  # noqa: E402
from timing import median_time  # noqa: E402

_SRC = r"""
template <int U>
__device__ void run(const int *col, const float *val, long long nnz, const float *x, const float *hot, float *out) {
    float acc = 0.f;
    const long long stride = (long long)gridDim.x * blockDim.x * U;
    for (long long k0 = blockIdx.x * (long long)blockDim.x * U + threadIdx.x; k0 < nnz; k0 += stride) {
        int c[U]; float v[U];
        for (int u = 0; u < U; u++) {
            const long long k = k0 + u * blockDim.x;
            c[u] = k < nnz ? __ldg(col + k) : 0;
            v[u] = k < nnz ? __ldg(val + k) : 0.f;
        }
        for (int u = 0; u < U; u++) acc += v[u] * (c[u] < 0 ? hot[~c[u]] : __ldg(x + c[u]));
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
extern "C" __global__ void plain4(const int *col, const float *val, long long nnz, const float *x, float *out) {
    run<4>(col, val, nnz, x, nullptr, out);
}
extern "C" __global__ void hot4(const int *col, const float *val, long long nnz, const float *x, const float *x_hot,
                                int slots, float *out) {
    extern __shared__ float hot[];
    for (int i = threadIdx.x; i < slots; i += blockDim.x) hot[i] = x_hot[i];
    __syncthreads();
    run<4>(col, val, nnz, x, hot, out);
}
extern "C" __global__ void hot8(const int *col, const float *val, long long nnz, const float *x, const float *x_hot,
                                int slots, float *out) {
    extern __shared__ float hot[];
    for (int i = threadIdx.x; i < slots; i += blockDim.x) hot[i] = x_hot[i];
    __syncthreads();
    run<8>(col, val, nnz, x, hot, out);
}
"""
_MOD = cp.RawModule(code=_SRC, options=("-std=c++17",))
SMS = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]


def main():
    sync = cp.cuda.Device().synchronize
    cases = [tuple(int(v) for v in a.split(":")) for a in sys.argv[1:]] or [(21, 16), (20, 16)]
    for scale, ef in cases:
        A = rmat(scale, ef)
        n, nnz = A.shape[1], A.nnz
        deg = np.bincount(A.indices, minlength=n)
        order = np.argsort(-deg, kind="stable")
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        val = cp.asarray(np.random.default_rng(1).random(nnz, dtype=np.float32))
        x = cp.asarray(np.random.default_rng(2).random(n, dtype=np.float32))
        x_ranked = x[cp.asarray(order)]
        col_given = cp.asarray(A.indices.astype(np.int32))
        col_ranked = cp.asarray(rank[A.indices].astype(np.int32))
        out = cp.empty(SMS * 8 * 1024, dtype=cp.float32)
        plain = _MOD.get_function("plain4")
        t = lambda c, xx: median_time(lambda: plain((SMS * 8,), (256,), (c, val, cp.int64(nnz), xx, out)),  # noqa: E731
                                      reps=20, sync=sync)
        print(f"R-MAT {scale} ef {ef}: {nnz} entries, {n} columns", flush=True)
        print(f"  L2 gathers, columns as given      {t(col_given, x)*1e3:7.3f} ms", flush=True)
        print(f"  L2 gathers, columns by degree     {t(col_ranked, x_ranked)*1e3:7.3f} ms", flush=True)
        for per_sm, threads in ((1, 1024), (2, 1024), (2, 512), (4, 512)):
            room = (227 * 1024 if per_sm == 1 else (228 * 1024) // per_sm - 1024) - 64
            slots = room // 4 // 32 * 32
            hot_cols = rank < slots
            share = deg[order[:slots]].sum() / nnz
            for cold in ("given", "degree"):
                base = col_given if cold == "given" else col_ranked
                enc = cp.where(cp.asarray(hot_cols[A.indices]), ~col_ranked, base).astype(cp.int32)
                xx = x if cold == "given" else x_ranked
                x_hot = x_ranked[:slots].copy()
                for name in ("hot4", "hot8"):
                    k = _MOD.get_function(name)
                    k.max_dynamic_shared_size_bytes = slots * 4
                    s = median_time(lambda: k((SMS * per_sm,), (threads,), (enc, val, cp.int64(nnz), xx, x_hot,
                                                                            np.int32(slots), out), shared_mem=slots * 4),
                                    reps=20, sync=sync)
                    print(f"  {slots:6d} slots ({100*share:4.1f}%), {per_sm} x {threads} an SM, {name}, cold {cold:6}"
                          f" {s*1e3:7.3f} ms", flush=True)


if __name__ == "__main__":
    main()
