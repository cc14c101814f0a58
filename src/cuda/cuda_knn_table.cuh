// The metrics whose column term is no product (Canberra, Minkowski, Jensen-Shannon, KL divergence,
// the unexpanded Euclidean forms) on the tensor-core panel, where a hot column's values fall in a
// few classes (docs/tensor-cores.md, "Value classes").
//
// A metric's accumulator is a sum over the shared columns of a term g(q, x) (metric.h's
// sr_metric_intersect). Where every value of a column is a whole number of steps s (counts: s = 1,
// half stars: s = 1/2) from 1 to T steps, g takes at most T × T values: the table
// G[a][b] = g(a·s, b·s). The queries' panel holds a value's class a as a one in block a; the
// index's, in block j, G[j][class of x]. Their product sums G[class q][class x] over the hot
// columns: the accumulator's hot part, with no sparse intersection at all. A column with a value
// off the classes (negative, between steps, past T) stays with the cold walk.
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

extern "C" {
#include "../semiring/metric.h"
}

namespace {

constexpr unsigned kNoClass = 255; // a column with a value off the classes

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

// classes[c] = the largest class v · scale of column c's values in M (explicit zeros: 0), or
// kNoClass where a value is not a whole class from 1 to kMaxLevels.
__global__ void column_classes(const int32_t *colind, const float *val, int64_t nnz, float scale, unsigned *classes) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        const float c = val[e] * scale;
        const unsigned cls = c == 0.0f                                              ? 0u
                             : c >= 1.0f && c <= (float)kMaxLevels && c == floorf(c) ? (unsigned)c
                                                                                     : kNoClass;
        unsigned *at = &classes[colind[e]];
        if (cls > *at) // most values are below their column's largest: a read spares the atomic
            atomicMax(at, cls);
    }
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
            const float c = val[e] * code.scale; // a whole class in a panel column (column_classes)
            if (s < 0 || c < 1.0f)               // an explicit zero adds to no metric's accumulator
                continue;
            const int a = (int)c;
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

} // namespace
