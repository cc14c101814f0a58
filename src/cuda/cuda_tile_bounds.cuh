// What rows sharing no column with a query can be, without reading them: the bounds that let the
// tile kernels that select as they score (cuda_tile_select.cuh: k-NN, radius) skip such rows, and
// the per-group statistics they read (docs/knn-overlap.md).
#pragma once

#include "cuda_common.cuh"

extern "C" {
#include "../semiring/metric.h"
}

namespace {

// Whether every row sharing nothing with the query has one distance (finalize(0, 0, ...) does not
// read the row's norms).
template <sr_metric M> __host__ __device__ constexpr bool constant_when_disjoint() {
    return M == SR_METRIC_COSINE || M == SR_METRIC_RUSSELL_RAO || M == SR_METRIC_KL_DIVERGENCE ||
           M == SR_METRIC_INNER_PRODUCT;
}

// Whether the distance of a row sharing nothing with the query never falls as the row's first norm
// x0 rises (docs/knn-overlap.md; correlation's key is another): a group of kFloorRows rows whose
// smallest x0 gives a distance that cannot count has no disjoint row that can. Chebyshev's is
// max(‖x‖∞, ‖q‖∞), so it is one of them.
template <sr_metric M> __host__ __device__ constexpr bool floor_bounds_disjoint() {
    return !constant_when_disjoint<M>() && M != SR_METRIC_CORRELATION;
}

// The smallest x0 of each group of kFloorRows index rows (a tile holds whole groups).
constexpr int kFloorRows = 128;
__global__ void group_floors(const double *xnorm, int64_t n, double *floor) {
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < (n + kFloorRows - 1) / kFloorRows;
         g += (int64_t)gridDim.x * blockDim.x) {
        double m = xnorm[2 * (kFloorRows * g)];
        for (int64_t i = kFloorRows * g + 1; i < kFloorRows * g + kFloorRows && i < n; i++)
            m = fmin(m, xnorm[2 * i]);
        floor[g] = m;
    }
}

// Correlation's distance for a row sharing nothing is 1 + q1·t / (d·√vq), t = x1 / √vx (1 where
// vx ≤ 0; docs/knn-overlap.md): per group of kFloorRows rows, the smallest and largest t over the
// rows with vx > 0 (+inf and -inf when none) and whether a row has vx ≤ 0.
__global__ void group_spreads(const double *xnorm, int64_t n, double d, double *spread) {
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < (n + kFloorRows - 1) / kFloorRows;
         g += (int64_t)gridDim.x * blockDim.x) {
        double lo = INFINITY, hi = -INFINITY, flat = 0.0;
        for (int64_t i = kFloorRows * g; i < kFloorRows * g + kFloorRows && i < n; i++) {
            const double x0 = xnorm[2 * i], x1 = xnorm[2 * i + 1], vx = x0 - x1 * x1 / d; // as the finalizer
            if (vx > 0.0) {
                const double t = x1 / sqrt(vx);
                lo = fmin(lo, t);
                hi = fmax(hi, t);
            } else {
                flat = 1.0;
            }
        }
        spread[3 * g] = lo;
        spread[3 * g + 1] = hi;
        spread[3 * g + 2] = flat;
    }
}

// The smallest correlation distance a row of the group sharing nothing with the query can have,
// lowered by far more than the finalizer's rounding (it computes the same value another way).
__device__ inline double correlation_floor(const double *spread, double q0, double q1, double d) {
    const double vq = q0 - q1 * q1 / d;
    if (!(vq > 0.0))
        return 1.0 - 1e-9;
    double low = spread[2] != 0.0 || q1 == 0.0 ? 1.0 : INFINITY;
    if (spread[0] <= spread[1] && q1 != 0.0)
        low = fmin(low, 1.0 + q1 * (q1 > 0.0 ? spread[0] : spread[1]) / (d * sqrt(vq)));
    low = fmin(fmax(low, 0.0), 2.0);
    return low - 1e-9 * (1.0 + low);
}

// The per-group statistics metric M's bounds read (none for the constant ones), filled in `stats`.
template <sr_metric M> sr_status disjoint_group_stats(sr_context_s *ctx, const double *xnorm, int64_t n, double d,
                                                      sr_cuda::buffer<double> &stats) {
    const int64_t groups = (n + kFloorRows - 1) / kFloorRows;
    cudaStream_t stream = sr_cuda::stream_of(ctx);
    if constexpr (floor_bounds_disjoint<M>()) {
        SR_TRY(stats.allocate((size_t)groups));
        group_floors<<<sr_cuda::grid_for(groups), 256, 0, stream>>>(xnorm, n, stats.get());
        SR_CUDA_LAUNCHED();
    } else if constexpr (M == SR_METRIC_CORRELATION) {
        SR_TRY(stats.allocate((size_t)(3 * groups)));
        group_spreads<<<sr_cuda::grid_for(groups), 256, 0, stream>>>(xnorm, n, d, stats.get());
        SR_CUDA_LAUNCHED();
    }
    (void)ctx;
    return SR_SUCCESS;
}

// A sink's memory of the groups ruled out by their floor: the rows come in index order and what a
// sink keeps only gets harder to enter, so a later group whose floor is at least one already ruled
// out is out too, without computing its bound.
struct floor_memo {
    const double *floors = nullptr; // per group of kFloorRows rows (disjoint_group_stats)
    double out = INFINITY;
    // Whether no row sharing nothing in the group of `row` can count: `cannot(f)` says whether the
    // value a disjoint row of floor f would have cannot.
    template <class Cannot> __device__ bool group_out(int64_t row, Cannot cannot) {
        const double f = floors[row / kFloorRows];
        if (f >= out)
            return true;
        if (cannot(f)) {
            out = f;
            return true;
        }
        return false;
    }
};

// Chebyshev's sinks: whether no row sharing nothing in the group of group_row can count once the
// sink is ready; such a row has max(‖x‖∞, ‖q‖∞), rising with its group's floor.
template <typename T, class Sink> __device__ bool chebyshev_disjoint_out(Sink &sink, int64_t group_row, double qmax) {
    return sink.ready() &&
           sink.memo.group_out(group_row, [&](double f) { return sink.cannot_count((T)fmax(f, qmax), group_row); });
}

} // namespace
