// Manhattan and Bray-Curtis of count data on the tensor-core panel (cuda_knn_panel.cu,
// docs/tensor-cores.md). For non-negative values both metrics' accumulator, the sum over shared
// columns of |q - x| - q - x, is -2 Σ min(q, x); for non-negative integers
// min(q, x) = Σ_{t >= 1} [q >= t]·[x >= t]. So the panel holds, for each hot column and each level
// t = 1..T, the indicator [v >= t] (the index's as -2, the queries' as 1): one FP16 GEMM of depth
// T·H gives the accumulator's hot part, every partial sum an even integer below 2^24, so exact.
// A value above T leaves its excess v - T: min(q, x) - min(q, x, T) = min(q - T, x - T)⁺, which is
// the same metric term of the excess values. The cold walk adds it as it adds the cold columns'
// terms, from copies of the queries and of the inverted form that hold the cold entries and the
// hot entries' excess (every column cold to the walk).
#pragma once

#include <cuda_fp16.h>

#include "cuda_common.cuh"
#include "cuda_scan.cuh"

namespace {

constexpr int kMaxLevels = 16; // T at most: the GEMM's depth is T times the panel's columns

// flags[0] |= 1 where a value is not a non-negative whole number below 2^24.
__global__ void check_counts(const float *val, int64_t nnz, unsigned *flags) {
    bool bad = false;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        const float v = val[e];
        bad |= !(v >= 0.0f && v < 16777216.0f && v == floorf(v));
    }
    if (__any_sync(~0u, bad) && (threadIdx.x & 31) == 0)
        atomicOr(flags, 1u);
}

// above[(t - 1)·H + s] += the entries of the panel's column s with a value above t, t = 1..kMaxLevels.
// `by_row`: M's entries are columns of rows (colind gives the column); else M is an inverted form,
// whose row r is column r.
__global__ void count_above(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows, bool by_row,
                            const int32_t *slot_of, int64_t H, unsigned long long *above) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t e = rowptr[r] + (threadIdx.x & 31); e < rowptr[r + 1]; e += 32) {
            const int32_t s = slot_of[by_row ? colind[e] : (int32_t)r];
            if (s < 0)
                continue;
            const int v = (int)val[e];
            for (int t = 1; t <= kMaxLevels && t < v; t++)
                atomicAdd(&above[(size_t)(t - 1) * H + s], 1ull);
        }
}

// Rows [r0, r0 + rows) of M into a zeroed panel of T levels, a warp a row: [v >= t] at
// (t - 1)·H + slot, as `one` (the index's -2, the queries' 1).
__global__ void fill_levels(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t r0, int64_t rows,
                            const int32_t *slot_of, int64_t H, int levels, float one, __half *panel, int64_t ld) {
    const __half h = __float2half_rn(one);
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t e = rowptr[r0 + r] + (threadIdx.x & 31); e < rowptr[r0 + r + 1]; e += 32) {
            const int32_t s = slot_of[colind[e]];
            if (s < 0)
                continue;
            const int v = (int)val[e];
            for (int t = 1; t <= levels && t <= v; t++)
                panel[r * ld + (int64_t)(t - 1) * H + s] = h;
        }
}

// What the cold walk keeps of an entry of column c with value v: all of it in a cold column, the
// excess over T in a hot one (nothing when there is none).
__device__ inline float cold_share(const int32_t *slot_of, int32_t c, float v, int levels) {
    return slot_of[c] < 0 ? v : v - (float)levels;
}

__global__ void count_cold_share(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                                 bool by_row, const int32_t *slot_of, int levels, int64_t *counts) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        int64_t n = 0;
        for (int64_t e = rowptr[r] + (threadIdx.x & 31); e < rowptr[r + 1]; e += 32)
            n += cold_share(slot_of, by_row ? colind[e] : (int32_t)r, val[e], levels) > 0.0f;
        for (int o = 16; o > 0; o /= 2)
            n += __shfl_xor_sync(~0u, n, o);
        if ((threadIdx.x & 31) == 0)
            counts[r] = n;
    }
}

// A warp a row, 32 entries a step in order (a ballot and a prefix count place the kept ones).
__global__ void fill_cold_share(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                                bool by_row, const int32_t *slot_of, int levels, const int64_t *out_ptr,
                                int32_t *out_col, float *out_val) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        int64_t o = out_ptr[r];
        for (int64_t b = rowptr[r]; b < rowptr[r + 1]; b += 32) {
            const int64_t e = b + lane;
            const bool has = e < rowptr[r + 1];
            const float v = has ? cold_share(slot_of, by_row ? colind[e] : (int32_t)r, val[e], levels) : 0.0f;
            const unsigned kept = __ballot_sync(~0u, v > 0.0f);
            if (v > 0.0f) {
                const int64_t at = o + __popc(kept & ((1u << lane) - 1u));
                out_col[at] = colind[e];
                out_val[at] = v;
            }
            o += __popc(kept);
        }
    }
}

// The cold walk's copy of M (a matrix of queries, or the index's inverted form): M's entries that
// cold_share keeps, with those values.
sr_status cold_copy(const sr_matrix_s *M, bool by_row, const int32_t *slot_of, int levels, sr_matrix_s **out) {
    using namespace sr_cuda;
    sr_context_s *ctx = M->ctx;
    cudaStream_t stream = stream_of(ctx);
    sr_matrix_s *C = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, M->nrows, M->ncols, 0, SR_TYPE_FLOAT32, SR_DEVICE, &C));
    const float *val = static_cast<const float *>(M->values);
    return build_rows(
        ctx, C,
        [&](int64_t *counts) {
            count_cold_share<<<grid_for(M->nrows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, M->nrows, by_row,
                                                                          slot_of, levels, counts);
        },
        [&] {
            fill_cold_share<<<grid_for(M->nrows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, M->nrows, by_row,
                                                                         slot_of, levels, C->rowptr, C->colind,
                                                                         static_cast<float *>(C->values));
        },
        "knn panel (cold copy)", out);
}

} // namespace
