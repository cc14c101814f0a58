// Manhattan, Bray-Curtis and Hamming of count data on the tensor-core panel (cuda_knn_panel.cu,
// docs/tensor-cores.md).
//
// Manhattan and Bray-Curtis ("count levels"): for non-negative values both metrics' accumulator,
// the sum over shared columns of |q - x| - q - x, is -2 Σ min(q, x); for non-negative integers
// min(q, x) = Σ_{t >= 1} [q >= t]·[x >= t]. So the panel holds, for each hot column and each level
// t = 1..T, the indicator [v >= t] (the index's as -2, the queries' as 1): one FP16 GEMM of depth
// T·H gives the accumulator's hot part, every partial sum an even integer below 2^24, so exact.
// A value above T leaves its excess v - T: min(q, x) - min(q, x, T) = min(q - T, x - T)⁺, which is
// the same metric term of the excess values. The cold walk adds it as it adds the cold columns'
// terms, from copies of the queries and of the inverted form that hold the cold entries and the
// hot entries' excess (every column cold to the walk).
//
// Values on a finer grid of step s = 2^-e (half stars: e = 1) take the same levels of their steps
// v/s: min(q, x) = s Σ_t [q/s >= t]·[x/s >= t], so the index's indicator is -2s (still exact in
// FP16 and in the sums, which are multiples of 2s); an excess is v - T·s.
//
// Hamming ("equality levels"): its accumulator is the sum over shared columns of
// [q != x] - 1 - 1 = -1 - [q = x]. A value falls in one of T + 1 classes: 1..T, or "above T". The
// queries' panel holds a column's class as a one (T + 1 blocks of H), the index's, in block j, the
// term h(j, class of x): -2 where j is x's class up to T, 0 where both are above T, -1 elsewhere.
// Their product is h(class of q, class of x): the shared column's -1, the equal classes' -1 more,
// and nothing where both values are above T: those pairs are the walk's, from copies that keep the
// values above T whole (equality needs the values themselves). Every partial sum is an integer of
// at most twice the shared columns in magnitude, so exact.
#pragma once

#include <cuda_fp16.h>

#include "cuda_common.cuh"
#include "cuda_scan.cuh"

namespace {

constexpr int kMaxLevels = 16; // T at most: the GEMM's depth is T (Hamming: T + 1) times the panel's columns

// How the panel codes a hot column's values: the values themselves, or T levels of one of three
// kinds (table levels: cuda_knn_table.cuh).
enum level_kind { kNoLevels = 0, kCountLevels, kEqualityLevels, kTableLevels };
struct level_code {
    level_kind kind = kNoLevels;
    int levels = 0;               // T
    float scale = 1.0f;           // a value's level or class is v · scale (1/s: whole numbers)
    const __half *table = nullptr; // table levels: the index's terms, [part][j][class] of 2 × T × T
    __host__ __device__ bool equality() const { return kind == kEqualityLevels; }
    // the GEMM's depth a panel column: T blocks of H columns, Hamming's T + 1, the table's two parts
    __host__ __device__ int blocks() const {
        return kind == kNoLevels ? 1 : kind == kEqualityLevels ? levels + 1 : kind == kTableLevels ? 2 * levels : levels;
    }
    // count and equality levels leave values above T to the cold walk, which reads copies
    __host__ __device__ bool walks_copies() const { return kind == kCountLevels || kind == kEqualityLevels; }
};

// flags[0] |= 1 where a value is not a non-negative whole number of steps 1/scale below 2^24 of them.
__global__ void check_counts(const float *val, int64_t nnz, float scale, unsigned *flags) {
    bool bad = false;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        const float v = val[e] * scale;
        bad |= !(v >= 0.0f && v < 16777216.0f && v == floorf(v));
    }
    if (__any_sync(~0u, bad) && (threadIdx.x & 31) == 0)
        atomicOr(flags, 1u);
}

// above[(t - 1)·H + s] += the entries of the panel's column s with a value above t steps 1/scale,
// t = 1..kMaxLevels.
// `by_row`: M's entries are columns of rows (colind gives the column); else M is an inverted form,
// whose row r is column r.
__global__ void count_above(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows, bool by_row,
                            const int32_t *slot_of, int64_t H, float scale, unsigned long long *above) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t e = rowptr[r] + (threadIdx.x & 31); e < rowptr[r + 1]; e += 32) {
            const int32_t s = slot_of[by_row ? colind[e] : (int32_t)r];
            if (s < 0)
                continue;
            const int v = (int)(val[e] * scale);
            for (int t = 1; t <= kMaxLevels && t < v; t++)
                atomicAdd(&above[(size_t)(t - 1) * H + s], 1ull);
        }
}

// Rows [r0, r0 + rows) of M into a zeroed panel, a warp a row, v in steps. Count levels: [v >= t] at
// (t - 1)·H + slot, as 1 (the queries') or -2s (the index's). Equality levels: the queries' class
// c of v as 1 at (c - 1)·H + slot; the index's h(j, c) at (j - 1)·H + slot for every block j.
__global__ void fill_levels(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t r0, int64_t rows,
                            const int32_t *slot_of, int64_t H, level_code code, bool query, __half *panel,
                            int64_t ld) {
    const int T = code.levels;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t e = rowptr[r0 + r] + (threadIdx.x & 31); e < rowptr[r0 + r + 1]; e += 32) {
            const int32_t s = slot_of[colind[e]];
            const int v = (int)(val[e] * code.scale); // in steps
            if (s < 0 || v <= 0) // an explicit zero adds to no metric's accumulator
                continue;
            __half *at = panel + r * ld + s;
            if (!code.equality()) {
                const __half one = __float2half_rn(query ? 1.0f : -2.0f / code.scale);
                for (int t = 1; t <= T && t <= v; t++)
                    at[(int64_t)(t - 1) * H] = one;
            } else if (query) {
                at[(int64_t)(min(v, T + 1) - 1) * H] = __float2half_rn(1.0f);
            } else {
                for (int j = 1; j <= T + 1; j++) {
                    const float h = j == v && v <= T ? -2.0f : j == T + 1 && v > T ? 0.0f : -1.0f;
                    at[(int64_t)(j - 1) * H] = __float2half_rn(h);
                }
            }
        }
}

// What the cold walk keeps of an entry of column c with value v: all of it in a cold column; in a
// hot one the excess over T (count levels) or a value above T whole (equality levels); nothing
// when that is not positive.
__device__ inline float cold_share(const int32_t *slot_of, int32_t c, float v, level_code code) {
    if (slot_of[c] < 0)
        return v;
    const float top = (float)code.levels / code.scale; // T steps
    return code.equality() ? (v > top ? v : 0.0f) : v - top;
}

__global__ void count_cold_share(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                                 bool by_row, const int32_t *slot_of, level_code code, int64_t *counts) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        int64_t n = 0;
        for (int64_t e = rowptr[r] + (threadIdx.x & 31); e < rowptr[r + 1]; e += 32)
            n += cold_share(slot_of, by_row ? colind[e] : (int32_t)r, val[e], code) > 0.0f;
        for (int o = 16; o > 0; o /= 2)
            n += __shfl_xor_sync(~0u, n, o);
        if ((threadIdx.x & 31) == 0)
            counts[r] = n;
    }
}

// A warp a row, 32 entries a step in order (a ballot and a prefix count place the kept ones).
__global__ void fill_cold_share(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                                bool by_row, const int32_t *slot_of, level_code code, const int64_t *out_ptr,
                                int32_t *out_col, float *out_val) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        int64_t o = out_ptr[r];
        for (int64_t b = rowptr[r]; b < rowptr[r + 1]; b += 32) {
            const int64_t e = b + lane;
            const bool has = e < rowptr[r + 1];
            const float v = has ? cold_share(slot_of, by_row ? colind[e] : (int32_t)r, val[e], code) : 0.0f;
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
sr_status cold_copy(const sr_matrix_s *M, bool by_row, const int32_t *slot_of, level_code code, sr_matrix_s **out) {
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
                                                                          slot_of, code, counts);
        },
        [&] {
            fill_cold_share<<<grid_for(M->nrows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, M->nrows, by_row,
                                                                         slot_of, code, C->rowptr, C->colind,
                                                                         static_cast<float *>(C->values));
        },
        "knn panel (cold copy)", out);
}

} // namespace
