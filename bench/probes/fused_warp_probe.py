"""The fused pattern w = α·Xᵀ(v ⊙ X·y) on tall-skinny X without block barriers (run 2026-11-26 on
the H100: 10^7 x 100 warp rows 1.420 ms, 4.45x the floor, against the library's row tiles 0.491 ms,
1.54x, and reading X once 0.319 ms; rows of 0-100 entries 0.063 ms, 3.81x, against 0.067 ms: the
shuffles a row costs exceed the barriers they save, so the row tiles stay). The library's row tiles (src/cuda/cuda_fused_tiles.cuh) run 10^7 x 100 at
1.61x the time to read X once (README: their load, product, row-sum and scatter phases wait on
each other at block barriers). Here each warp takes a range of whole rows holding an equal share
of the entries and walks it 32 entries at a time, every load coalesced: a lane's entry finds its
row among the next 32 row starts (shuffles), the products are summed per row by a segmented
suffix sum (shuffles), and each lane adds its entry times its row's scale into the block's w in
shared memory as soon as the row is complete; a row cut by the chunk's end carries its partial
sum and keeps the lanes' entries in registers for the next chunk (rows longer than 32 entries
re-read their older entries when they complete). No barrier between the first and the last
chunk. The warp loop was checked on the CPU by bench/probes/fused_warp_emulate.py (a lane-by-lane
emulation: rows of 0 to 100 entries agree with scipy to 1.5e-15). Against, in one process: the library's call (sr.fused_pattern, X and vectors on the
device), a kernel that only reads X once (the floor), and a float64 reference on the host.

    PYTHONPATH=BUILD/python python3 bench/probes/fused_warp_probe.py BUILD [--rows 10000000]
"""
import argparse
import os
import sys

import cupy as cp
import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import sr_package  # noqa: E402
from timing import median_time  # noqa: E402

_SRC = r"""
#define FULL 0xffffffffu

// The rows of entries k (one a lane): r + the number of the next 32 row starts (rs, lane j holds
// rowptr[r + 1 + j]) at or before k; past that window (empty rows) a search of rowptr.
__device__ long long row_of(long long k, long long r, long long rs, const long long *rowptr, long long m) {
    int cnt = 0;
#pragma unroll
    for (int step = 16; step >= 1; step >>= 1) {
        const long long t = __shfl_sync(FULL, rs, cnt + step - 1);
        if (t <= k)
            cnt += step;
    }
    const long long last = __shfl_sync(FULL, rs, 31);
    if (last > k)
        return r + cnt;
    long long lo = r, hi = m; // rowptr[lo] <= k < rowptr[hi]
    while (hi - lo > 1) {
        const long long mid = lo + (hi - lo) / 2;
        if (rowptr[mid] <= k)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

extern "C" __global__ void __launch_bounds__(256)
warp_rows(const long long *rowptr, const int *col, const float *val, long long m, int n, const float *y,
          const float *v, float alpha, const long long *warp_row0, long long nwarps, float *w) {
    extern __shared__ float sm[];
    float *ys = sm, *ws = sm + n;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        ys[i] = y[i];
        ws[i] = 0.f;
    }
    __syncthreads();
    const int lane = threadIdx.x & 31;
    const long long gw = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (gw < nwarps) {
        const long long r_end = warp_row0[gw + 1];
        const long long e_end = rowptr[r_end];
        long long e = rowptr[warp_row0[gw]];
        long long r = warp_row0[gw];
        while (r < r_end && rowptr[r + 1] <= e) // empty rows first
            r++;
        float carry = 0.f;          // row r's sum over the entries before e
        long long open_start = e;   // row r's first entry
        bool kept = false;          // row r began in the previous chunk, whose entries of it the lanes keep
        bool pending = false;       // (pc, px): this lane's entry of row r in the previous chunk
        int pc = 0;
        float px = 0.f;
        while (e < e_end) {
            const long long k = e + lane;
            const bool in = k < e_end;
            const long long rs = r + 1 + lane <= m ? rowptr[r + 1 + lane] : 0x7fffffffffffffffLL;
            const long long rk = row_of(in ? k : e, r, rs, rowptr, m); // every lane: it shuffles
            const long long row = in ? rk : -1 - lane;
            const int c = in ? col[k] : 0;
            const float x = in ? val[k] : 0.f;
            float acc = in ? x * ys[c] : 0.f;
#pragma unroll
            for (int off = 1; off < 32; off <<= 1) { // each lane: its row's sum from it to the chunk's end
                const float t = __shfl_down_sync(FULL, acc, off);
                const long long tr = __shfl_down_sync(FULL, row, off);
                if (lane + off < 32 && tr == row)
                    acc += t;
            }
            const long long prev_row = __shfl_up_sync(FULL, row, 1);
            const unsigned heads = __ballot_sync(FULL, in && (lane == 0 || prev_row != row));
            const unsigned upto = lane == 31 ? FULL : ((2u << lane) - 1);
            const int head = 31 - __clz(heads & upto);
            const float seg = __shfl_sync(FULL, acc, head);
            const float dot = seg + (row == r ? carry : 0.f);
            const long long row_end = in ? rowptr[row + 1] : 0;
            const bool complete = in && row_end <= e + 32;
            const float s = complete ? alpha * v[row] * dot : 0.f;
            if (complete)
                atomicAdd(&ws[c], x * s);
            // row r's older entries, once it is complete here
            const bool r_done = __shfl_sync(FULL, complete && row == r, 0);
            const float s_r = __shfl_sync(FULL, s, 0);
            if (r_done) {
                if (kept && pending)
                    atomicAdd(&ws[pc], px * s_r);
                for (long long q = open_start + lane; q < (kept ? e - 32 : e); q += 32) // not kept: read again
                    atomicAdd(&ws[col[q]], val[q] * s_r);
            }
            // the row cut by the chunk's end (lane 31 is in it) stays open
            const bool cut = __shfl_sync(FULL, in && !complete, 31);
            const long long last_row = __shfl_sync(FULL, row, 31);
            if (cut) {
                carry = __shfl_sync(FULL, dot, 31);
                if (last_row != r) { // begun in this chunk: its lanes keep their entries
                    open_start = e + __shfl_sync(FULL, (long long)head, 31);
                    kept = true;
                    pending = row == last_row;
                } else { // row r fills the chunk: its entries so far are read again when it ends
                    kept = false;
                    pending = false;
                }
                pc = c;
                px = x;
                r = last_row;
            } else {
                carry = 0.f;
                kept = pending = false;
                r = __shfl_sync(FULL, row, 31) + 1;
            }
            e += 32;
            if (!cut && e < e_end) {
                while (r < r_end && rowptr[r + 1] <= e) // empty rows
                    r++;
                open_start = e;
            }
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        if (ws[i] != 0.f)
            atomicAdd(&w[i], ws[i]);
}

// The floor: every entry's column and value, the row pointers and v read once.
extern "C" __global__ void read_once(const long long *rowptr, const int *col, const float *val, long long m,
                                    long long nnz, const float *v, float *sink) {
    float acc = 0.f;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    for (long long k = t; k < nnz; k += stride)
        acc += val[k] + (float)col[k];
    for (long long i = t; i <= m; i += stride)
        acc += (float)rowptr[i] + (i < m ? v[i] : 0.f);
    if (acc == 1.2345f)
        sink[0] = acc;
}
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rows", type=int, default=10_000_000)
    args = ap.parse_args()
    sr = sr_package.load(args.build)
    mod = cp.RawModule(code=_SRC, options=("-std=c++17",))
    warp_rows, read_once = mod.get_function("warp_rows"), mod.get_function("read_once")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    sync = cp.cuda.Device().synchronize
    rng = np.random.default_rng(3)
    cases = []
    m, n = args.rows, 100  # bench_fused.py's tall-skinny set
    X = sp.csr_matrix((rng.standard_normal(m * 10).astype(np.float32), rng.integers(0, n, m * 10),
                       np.arange(0, m * 10 + 1, 10)), shape=(m, n))
    X.sum_duplicates()
    cases.append(("tall-skinny", X))
    lengths = rng.choice([0, 1, 3, 40, 100], size=200_000, p=[0.2, 0.3, 0.3, 0.15, 0.05])  # empty and long rows
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    Y = sp.csr_matrix((rng.standard_normal(indptr[-1]).astype(np.float32), rng.integers(0, 3000, indptr[-1]), indptr),
                      shape=(len(lengths), 3000))
    Y.sum_duplicates()
    cases.append(("mixed rows (empty, 1-100 entries)", Y))
    ctx = sr.Context("cuda")
    for name, X in cases:
        m, n = X.shape
        rowptr = cp.asarray(X.indptr.astype(np.int64))
        col = cp.asarray(X.indices.astype(np.int32))
        val = cp.asarray(X.data)
        y = rng.standard_normal(n).astype(np.float32)
        v = rng.standard_normal(m).astype(np.float32)
        alpha = 0.75
        want = alpha * (X.T.astype(np.float64) @ (v.astype(np.float64) * (X.astype(np.float64) @ y.astype(np.float64))))
        dy, dv = cp.asarray(y), cp.asarray(v)
        warps = sms * 64
        targets = np.linspace(0, X.nnz, warps + 1)
        row0 = np.searchsorted(X.indptr, targets, side="left").astype(np.int64)
        row0[0], row0[-1] = 0, m
        row0 = np.maximum.accumulate(row0)
        drow0 = cp.asarray(row0)
        w = cp.zeros(n, dtype=cp.float32)
        blocks = (warps * 32 + 255) // 256

        def probe():
            w.fill(0)
            warp_rows((blocks,), (256,), (rowptr, col, val, np.int64(m), np.int32(n), dy, dv, np.float32(alpha), drow0,
                                          np.int64(warps), w), shared_mem=2 * n * 4)
        t_probe = median_time(probe, reps=20, sync=sync)
        err = np.abs(cp.asnumpy(w) - want).max() / max(np.abs(want).max(), 1e-30)
        sink = cp.zeros(1, dtype=cp.float32)
        t_floor = median_time(lambda: read_once((sms * 8,), (256,), (rowptr, col, val, np.int64(m), np.int64(X.nnz), dv,
                                                                     sink)), reps=20, sync=sync)
        Xd = sr.Matrix(X, context=ctx, location="device")
        out = cp.empty(n, dtype=cp.float32)
        t_lib = median_time(lambda: sr.fused_pattern(Xd, dy, v=dv, alpha=alpha, form="xtvxy", out=out, context=ctx),
                            reps=20, sync=sync)
        err_lib = np.abs(cp.asnumpy(out) - want).max() / max(np.abs(want).max(), 1e-30)
        print(f"{name}: {m} x {n}, {X.nnz} entries | warp rows {t_probe * 1e3:7.3f} ms ({t_probe / t_floor:4.2f}x the "
              f"floor, err {err:.1e}) | library {t_lib * 1e3:7.3f} ms ({t_lib / t_floor:4.2f}x, err {err_lib:.1e}) | "
              f"read X once {t_floor * 1e3:7.3f} ms", flush=True)


if __name__ == "__main__":
    main()
