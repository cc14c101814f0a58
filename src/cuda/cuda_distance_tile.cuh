// One query against one tile of index rows, for the sum metrics (all but Chebyshev): the
// accumulators of the tile's rows in shared memory, filled through the index's inverted form
// (XT: for each column, the index rows holding it). Shared by the kernel that writes every
// distance (cuda_distance.cu) and the kernels that decide each row as they score it
// (cuda_tile_select.cuh: k-NN and radius), so all sum the same terms the same way.
#pragma once

#include <type_traits>

#include "cuda_common.cuh"

extern "C" {
#include "../core/distance.h"
#include "../core/matrix.h"
#include "../semiring/metric.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = 256;
constexpr int kTileBytes = 48 * 1024; // shared accumulators per block: 4 blocks per SM
constexpr int kMaxGridY = 65535;

// The first t in [lo, hi) with a[t] >= key (hi when none); all 32 lanes call it together.
__device__ inline int64_t warp_lower_bound(const int32_t *a, int64_t lo, int64_t hi, int64_t key, int lane) {
    while (hi - lo > 32) { // the answer stays in [lo, hi]
        const int64_t step = (hi - lo + 31) / 32, probe = lo + lane * step;
        const int below = __popc(__ballot_sync(~0u, probe < hi && a[probe] < key));
        if (below == 0)
            return lo;
        const int64_t next_hi = lo + below * step;
        lo = lo + (below - 1) * step + 1;
        hi = next_hi < hi ? next_hi : hi;
    }
    const int64_t probe = lo + lane;
    return lo + __popc(__ballot_sync(~0u, probe < hi && a[probe] < key));
}

template <typename T> struct tile_args {
    const int64_t *qptr;
    const int32_t *qcol;
    const T *qval;
    int64_t q0;
    const int64_t *xptr, *xtptr; // X rows (Chebyshev), XT columns (the rest)
    const int32_t *xcol, *xtrow;
    const T *xval, *xtval;
    const double *qnorm, *xnorm;
    const int32_t *q_mag_col, *x_mag_col, *q_rank; // Chebyshev: rows by decreasing |value|
    const T *q_mag_abs, *x_mag_abs;
    int64_t nx;
    double d, p;
    T *out;
    int64_t rs, cs;
    int tile_rows;
    bool ordered; // a deterministic context: accumulate_ordered instead of atomics
};

template <typename T, sr_metric M>
using acc_t = typename std::conditional<std::is_same<T, double>::value || sr_metric_kind_of(M) == SR_MK_UNION, double,
                                        float>::type;

// The kernels' view of the inputs (out, rs and cs are the caller's to set).
template <typename T> tile_args<T> tile_args_of(const sr_distance_inputs *in) {
    const sr_matrix_s *Q = in->Q, *X = in->X, *XT = in->XT;
    tile_args<T> a{};
    a.qptr = Q->rowptr;
    a.qcol = Q->colind;
    a.qval = static_cast<const T *>(Q->values);
    a.xptr = X->rowptr;
    a.xcol = X->colind;
    a.xval = static_cast<const T *>(X->values);
    if (XT) {
        a.xtptr = XT->rowptr;
        a.xtrow = XT->colind;
        a.xtval = static_cast<const T *>(XT->values);
    }
    a.qnorm = in->qnorm;
    a.xnorm = in->xnorm;
    a.q_mag_col = in->q_mag_col;
    a.x_mag_col = in->x_mag_col;
    a.q_rank = in->q_rank;
    a.q_mag_abs = static_cast<const T *>(in->q_mag_abs);
    a.x_mag_abs = static_cast<const T *>(in->x_mag_abs);
    a.nx = X->nrows;
    a.d = (double)X->ncols;
    a.p = in->p;
    a.ordered = in->ordered;
    return a;
}

// f(std::integral_constant<sr_metric, M>{}) for the runtime metric m (M a template argument there).
template <int M = 0, typename F> sr_status with_metric(sr_metric m, F &&f) {
    if constexpr (M < SR_METRIC_COUNT) {
        if ((int)m == M)
            return f(std::integral_constant<sr_metric, (sr_metric)M>{});
        return with_metric<M + 1>(m, f);
    } else {
        return sr_error(SR_ERROR_INTERNAL, "distances: metric %d has no CUDA kernel", (int)m);
    }
}

// Rows of index a tile holds: its accumulators fill kTileBytes (Chebyshev's: a row's largest shared
// |q - x| as the bits of a T, and a mask of the query's largest entries it shares).
template <typename T, sr_metric M> __host__ __device__ constexpr int tile_rows_of() {
    if constexpr (sr_metric_kind_of(M) == SR_MK_MAX)
        return kTileBytes / (int)(sizeof(T) + sizeof(unsigned));
    else
        return kTileBytes / (int)(sizeof(acc_t<T, M>) * sr_metric_accumulators(M));
}

// The same for the runtime metric and value type (the host's batch sizing).
inline int tile_rows_for(sr_metric metric, sr_type type) {
    int rows = 0;
    (void)with_metric(metric, [&](auto m) {
        constexpr sr_metric M = decltype(m)::value;
        rows = type == SR_TYPE_FLOAT64 ? tile_rows_of<double, M>() : tile_rows_of<float, M>();
        return SR_SUCCESS;
    });
    return rows;
}

// The tile's terms in a fixed order, for a deterministic context (tile_args.ordered): warp w owns
// rows [rows·w/warps, rows·(w+1)/warps) of the tile and adds every query entry's terms for them,
// entry after entry, without atomics, so each accumulator takes its terms in the query's entry
// order on every run (with atomics the warps' entries meet in any order). Each warp searches every
// entry's column for its rows: warps times the searches. Marks touched[r / touched_step] when
// touched_step > 0. The caller zeroes before and synchronizes after.
template <typename T, sr_metric M>
__device__ void accumulate_ordered(const tile_args<T> &a, acc_t<T, M> *acc, unsigned char *touched, int touched_step,
                                   int64_t i0, int rows, int64_t qbegin, int64_t qend) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    const int64_t r_lo = i0 + (int64_t)rows * warp / warps, r_hi = i0 + (int64_t)rows * (warp + 1) / warps;
    for (int64_t e = qbegin; e < qend; e++) {
        const int32_t c = a.qcol[e];
        const double q = (double)a.qval[e];
        const int64_t lo = warp_lower_bound(a.xtrow, a.xtptr[c], a.xtptr[c + 1], r_lo, lane);
        const int64_t hi = warp_lower_bound(a.xtrow, lo, a.xtptr[c + 1], r_hi, lane);
        for (int64_t t = lo + lane; t < hi; t += 32) { // a column's rows are distinct: one lane a row
            const int r = a.xtrow[t] - (int)i0;
            double a0 = 0.0, a1 = 0.0;
            sr_metric_intersect(M, q, (double)a.xtval[t], a.p, &a0, &a1);
            acc[r] += (Acc)a0;
            if (nacc > 1)
                acc[a.tile_rows + r] += (Acc)a1;
            if (touched_step > 0)
                touched[r / touched_step] = 1;
        }
        __syncwarp(); // the next entry's lane for a row may be another
    }
}

// The accumulators of index rows [i0, i0 + rows) against query entries [qbegin, qend): zeroed,
// then each warp takes one of the query's entries, finds the tile's slice of that column's list
// (a 32-way search) and adds the metric's intersection term for every row in it. The block calls
// it together; the accumulators are ready (and synchronized) on return.
template <typename T, sr_metric M>
__device__ void accumulate_tile(const tile_args<T> &a, acc_t<T, M> *acc, int64_t i0, int rows, int64_t qbegin,
                                int64_t qend) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    for (int r = threadIdx.x; r < rows; r += kThreads) {
        acc[r] = Acc(0);
        if (nacc > 1)
            acc[a.tile_rows + r] = Acc(0);
    }
    __syncthreads();
    if (a.ordered) {
        accumulate_ordered<T, M>(a, acc, nullptr, 0, i0, rows, qbegin, qend);
        __syncthreads();
        return;
    }
    for (int64_t e = qbegin + warp; e < qend; e += warps) {
        const int32_t c = a.qcol[e];
        const double q = (double)a.qval[e];
        const int64_t lo = warp_lower_bound(a.xtrow, a.xtptr[c], a.xtptr[c + 1], i0, lane);
        const int64_t hi = warp_lower_bound(a.xtrow, lo, a.xtptr[c + 1], i0 + rows, lane);
        for (int64_t t = lo + lane; t < hi; t += 32) {
            const int r = a.xtrow[t] - (int)i0;
            double a0 = 0.0, a1 = 0.0;
            sr_metric_intersect(M, q, (double)a.xtval[t], a.p, &a0, &a1);
            atomicAdd(&acc[r], (Acc)a0);
            if (nacc > 1)
                atomicAdd(&acc[a.tile_rows + r], (Acc)a1);
        }
    }
    __syncthreads();
}

} // namespace
