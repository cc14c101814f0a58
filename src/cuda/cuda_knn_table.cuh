// The metrics whose column term is no product (Canberra, Minkowski, Jensen-Shannon, KL divergence,
// the unexpanded Euclidean forms) on the tensor-core panel, where a hot column's values fall in a
// few classes (docs/tensor-cores.md, "Value classes").
//
// A metric's accumulator is a sum over the shared columns of a term g(q, x) (metric.h's
// sr_metric_intersect). Where every value of a column is a whole number of steps s (counts: s = 1,
// half stars: s = 1/2) from 1 to T steps, g takes at most T × T values: the table
// G[a][b] = g(a·s, b·s). The queries' panel holds a value's class a as a one in block a; the
// index's, in block j, G[j][class of x]. Their product sums G[class q][class x] over the hot
// columns: the accumulator's hot part, with no sparse intersection at all.
//
// A value off the classes (negative, between steps, past T: a long document's count of a common
// word) stays out of the panel, and the cold walk sums every pair it is in: the walk reads copies
// of the queries and of the index's inverted form whose columns are doubled. A query's cold
// entries and its entries off the classes keep their column c, whose row in the index's copy is
// the whole column (where it is cold, or where some query has a value off the classes in it); a
// query's entries on the classes, in a hot column where some index row is off them, go to column
// ncols + c, whose row in the index's copy holds only the index's entries off the classes. So
// each pair with a value off the classes is summed once, and the panel sums the rest.
//
// G is a real number: the panel holds it as two FP16 parts, hi = G rounded and lo = G - hi
// rounded (about 22 bits; the queries' one meets both), summed by the GEMM in float32. Where every
// G is a multiple of some 2^-k that the two parts hold exactly (counts under Minkowski of whole p
// or the unexpanded Euclidean forms: k = 0; half stars: k = 2) and the row norms keep every
// partial sum below 2^23 steps of 2^-k, the sum is exact: the float32 path's answer bit for bit.
// Otherwise it has float32 accuracy, as the split product of the dot-product metrics.
#pragma once

#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda_knn_levels.cuh"
#include "cuda_scan.cuh"

extern "C" {
#include "../semiring/metric.h"
}

namespace {

constexpr int kClassBins = kMaxLevels + 2; // a column's values: explicit zeros, classes 1..16, off them

// The metrics the table takes (Manhattan, Bray-Curtis and Hamming take count or equality levels,
// exact and shallower; Chebyshev's max is no sum).
bool table_metric(sr_metric m) {
    return m == SR_METRIC_CANBERRA || m == SR_METRIC_MINKOWSKI || m == SR_METRIC_JENSEN_SHANNON ||
           m == SR_METRIC_KL_DIVERGENCE || m == SR_METRIC_L2_UNEXPANDED || m == SR_METRIC_SQEUCLIDEAN_UNEXPANDED;
}

// Whether "exact" takes the table where G is not whole: the metrics whose distance is the sum
// itself or a ratio of it, so float32 accuracy of the sum is float32 accuracy of the distance (a
// root of a sum near 0 would magnify its rounding, as for Hellinger: tf32 only).
bool table_float32_is_exact_enough(sr_metric m) { return m == SR_METRIC_CANBERRA || m == SR_METRIC_KL_DIVERGENCE; }

// The bin of a value: 0 for an explicit zero, its class v · scale from 1 to kMaxLevels, or
// kMaxLevels + 1 off the classes.
__device__ inline int class_bin(float v, float scale) {
    const float c = v * scale;
    return c == 0.0f ? 0 : c >= 1.0f && c <= (float)kMaxLevels && c == floorf(c) ? (int)c : kMaxLevels + 1;
}

// Whether a value is off the T classes (and not an explicit zero).
__device__ inline bool off_classes(float v, const level_code &code) {
    const int b = class_bin(v, code.scale);
    return b > code.levels;
}

// hist[c · kClassBins + bin] += the values of column c in M in each bin.
__global__ void class_histogram(const int32_t *colind, const float *val, int64_t nnz, float scale, unsigned *hist) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&hist[(int64_t)colind[e] * kClassBins + class_bin(val[e], scale)], 1u);
}

// Rows [r0, r0 + rows) of M into a zeroed panel of table levels, a warp a row: the queries' class
// a as a one at (a - 1)·H + slot and (T + a - 1)·H + slot; the index's class b as G[j][b]'s two
// parts at (j - 1)·H + slot and (T + j - 1)·H + slot for every j.
__global__ void fill_table(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t r0, int64_t rows,
                           const int32_t *slot_of, int64_t H, level_code code, bool query, __half *panel, int64_t ld) {
    const int T = code.levels;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t e = rowptr[r0 + r] + (threadIdx.x & 31); e < rowptr[r0 + r + 1]; e += 32) {
            const int32_t s = slot_of[colind[e]];
            const int a = class_bin(val[e], code.scale);
            if (s < 0 || a == 0 || a > T) // an explicit zero adds to no metric's accumulator; values
                continue;                 // off the classes are the walk's

            __half *at = panel + r * ld + s;
            if (query) {
                at[(int64_t)(a - 1) * H] = __float2half_rn(1.0f);
                at[(int64_t)(T + a - 1) * H] = __float2half_rn(1.0f);
            } else {
                for (int j = 1; j <= T; j++) {
                    at[(int64_t)(j - 1) * H] = code.table[(j - 1) * T + a - 1];
                    at[(int64_t)(T + j - 1) * H] = code.table[T * T + (j - 1) * T + a - 1];
                }
            }
        }
}

// The table of `metric` (Minkowski's p) for T classes of `step`, its two FP16 parts as fill_table
// reads them; *grid_bits: the k of the finest grid 2^-k (k <= 10) every entry lies on and splits
// into the parts exactly, or -1. False where an entry is past FP16.
bool make_table(sr_metric metric, double p, int T, double step, std::vector<__half> &parts, int *grid_bits) {
    parts.assign((size_t)2 * T * T, __float2half_rn(0.0f));
    int bits = 0;
    bool exact = true;
    for (int j = 1; j <= T; j++)
        for (int b = 1; b <= T; b++) {
            double g = 0.0, unused = 0.0;
            sr_metric_intersect(metric, j * step, b * step, p, &g, &unused);
            if (!(std::fabs(g) < 32768.0))
                return false;
            const __half hi = __float2half_rn((float)g);
            const double rest = g - (double)__half2float(hi);
            const __half lo = __float2half_rn((float)rest);
            int k = 0;
            while (k <= 10 && std::ldexp(g, k) != std::floor(std::ldexp(g, k)))
                k++;
            bits = std::max(bits, k);
            exact = exact && k <= 10 && (double)__half2float(lo) == rest;
            parts[(size_t)(j - 1) * T + (b - 1)] = hi;
            parts[(size_t)T * T + (size_t)(j - 1) * T + (b - 1)] = lo;
        }
    *grid_bits = exact ? bits : -1;
    return true;
}

// Where the walk's copies put an entry (see the top): its column there, or -1 to leave it out.
// flags[c]: kQueriesOff / kIndexOff where the queries / the index have a value off the classes in
// hot column c.
constexpr unsigned char kQueriesOff = 1, kIndexOff = 2;
struct table_share {
    const int32_t *slot_of;
    const unsigned char *flags;
    level_code code;
    int32_t ncols;
    // a query's entry of column c
    __device__ int32_t query(int64_t, int32_t c, float v) const {
        if (slot_of[c] < 0 || off_classes(v, code))
            return c;
        return v != 0.0f && (flags[c] & kIndexOff) ? ncols + c : -1;
    }
    // an entry (index row `row`) of row r of the index's copy, which reads column r % ncols
    __device__ int32_t index(int64_t r, int32_t row, float v) const {
        if (r < ncols)
            return slot_of[r] < 0 || (flags[r] & kQueriesOff) ? row : -1;
        return slot_of[r - ncols] >= 0 && off_classes(v, code) ? row : -1;
    }
    template <bool kIndex> __device__ int32_t place(int64_t r, int32_t col, float v) const {
        return kIndex ? index(r, col, v) : query(r, col, v);
    }
};

// Row r of a copy reads row r % src_rows of M (a warp a row): its kept entries' count, and then
// the entries, in order (a ballot and a prefix count place them).
template <bool kIndex>
__global__ void count_shared(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                             int64_t src_rows, table_share share, int64_t *counts) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        const int64_t src = r % src_rows;
        int64_t n = 0;
        for (int64_t e = rowptr[src] + (threadIdx.x & 31); e < rowptr[src + 1]; e += 32)
            n += share.place<kIndex>(r, colind[e], val[e]) >= 0;
        for (int o = 16; o > 0; o /= 2)
            n += __shfl_xor_sync(~0u, n, o);
        if ((threadIdx.x & 31) == 0)
            counts[r] = n;
    }
}

template <bool kIndex>
__global__ void fill_shared(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t rows,
                            int64_t src_rows, table_share share, const int64_t *out_ptr, int32_t *out_col,
                            float *out_val) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x / 32 + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        const int64_t src = r % src_rows;
        int64_t o = out_ptr[r];
        for (int64_t b = rowptr[src]; b < rowptr[src + 1]; b += 32) {
            const int64_t e = b + lane;
            const int32_t at = e < rowptr[src + 1] ? share.place<kIndex>(r, colind[e], val[e]) : -1;
            const unsigned kept = __ballot_sync(~0u, at >= 0);
            if (at >= 0) {
                const int64_t to = o + __popc(kept & ((1u << lane) - 1u));
                out_col[to] = at;
                out_val[to] = val[e];
            }
            o += __popc(kept);
        }
    }
}

// The walk's copy of the queries (kIndex false: Q's rows, 2·ncols columns) or of the index's
// inverted form (kIndex true: 2·ncols rows read from XT's).
template <bool kIndex>
sr_status table_copy(const sr_matrix_s *M, const table_share &share, sr_matrix_s **out) {
    using namespace sr_cuda;
    sr_context_s *ctx = M->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t rows = kIndex ? 2 * M->nrows : M->nrows, cols = kIndex ? M->ncols : 2 * M->ncols;
    sr_matrix_s *C = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, rows, cols, 0, SR_TYPE_FLOAT32, SR_DEVICE, &C));
    const float *val = static_cast<const float *>(M->values);
    return build_rows(
        ctx, C,
        [&](int64_t *counts) {
            count_shared<kIndex><<<grid_for(rows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, rows, M->nrows,
                                                                          share, counts);
        },
        [&] {
            fill_shared<kIndex><<<grid_for(rows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, rows, M->nrows,
                                                                         share, C->rowptr, C->colind,
                                                                         static_cast<float *>(C->values));
        },
        "knn panel (value classes' copy)", out);
}

} // namespace
