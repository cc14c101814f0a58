// One query against one tile of index rows, for the sum metrics (all but Chebyshev): the
// accumulators of the tile's rows in shared memory, filled through the index's inverted form
// (XT: for each column, the index rows holding it). Shared by the kernel that writes every
// distance (cuda_distance.cu) and the kernels that decide each row as they score it
// (cuda_tile_select.cuh: k-NN and radius), so all sum the same terms the same way.
#pragma once

#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_metric_kernels.cuh"

extern "C" {
#include "../core/distance.h"
#include "../core/matrix.h"
#include "../semiring/metric.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = kDistanceThreads; // cuda_metric_kernels.cuh
constexpr int kTileBytes = 48 * 1024; // shared accumulators per block: 4 blocks per SM
constexpr int kMaxGridY = 65535;

// A built-in metric as the shared kernels take it (cuda_metric_kernels.cuh): metric.h's terms with
// M a constant, so every switch folds away.
template <sr_metric M> struct builtin_metric {
    static constexpr int accumulators = sr_metric_accumulators(M);
    static constexpr bool wide = sr_metric_kind_of(M) == SR_MK_UNION;
    static constexpr bool maximum = sr_metric_kind_of(M) == SR_MK_MAX; // Chebyshev's norm is the largest |v|
    __device__ static void intersect(double q, double x, double p, double *a0, double *a1) {
        sr_metric_intersect(M, q, x, p, a0, a1);
    }
    __device__ static void norm_add(double v, double p, double *n0, double *n1) { sr_metric_norm_add(M, v, p, n0, n1); }
    __device__ static double finalize(double a0, double a1, double q0, double q1, double x0, double x1, double d,
                                      double p) {
        return sr_metric_finalize(M, a0, a1, q0, q1, x0, x1, d, p);
    }
};

template <typename T, sr_metric M> using acc_t = metric_acc_t<T, builtin_metric<M>>;

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

// The tile's terms in a fixed order (accumulate_ordered_by) for a built-in metric.
template <typename T, sr_metric M>
__device__ void accumulate_ordered(const tile_args<T> &a, acc_t<T, M> *acc, unsigned char *touched, int touched_step,
                                   int64_t i0, int rows, int64_t qbegin, int64_t qend) {
    accumulate_ordered_by<T, builtin_metric<M>>(a, acc, touched, touched_step, i0, rows, qbegin, qend);
}

} // namespace
