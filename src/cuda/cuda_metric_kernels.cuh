// The sum metrics' dense-path kernels, which both nvcc and NVRTC compile: the built-in metrics
// run them with builtin_metric<M> (cuda_distance_tile.cuh), and a user metric's program compiles
// them again with its terms (cuda_user_metric.cu), so a built-in written again sums the same terms
// in the same order. A metric is a type Mt with
//   accumulators (1 or 2), wide (float64 accumulators whatever the value type), maximum (reduced
//   by max: terms and norms folded by fmax from 0, as the CPU folds them), and the static device
//   functions intersect(q, x, p, &a0, &a1) (a shared column's terms, added to a0 = a1 = 0),
//   norm_add(v, p, &n0, &n1) (an entry's norm terms folded in) and
//   finalize(a0, a1, q0, q1, x0, x1, d, p) (the distance).
// A user metric reduced by max over the union also has pair(q, x), and runs union_max_kernel
// (with union_keys_kernel for its orders).
// No host code here: NVRTC has no system headers (cuda_device_base.cuh's prelude).
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

constexpr int kDistanceThreads = 256;

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
    bool ordered; // a deterministic context: accumulate_ordered_by instead of atomics
};

template <bool Wide, typename A, typename B> struct type_if { using type = A; };
template <typename A, typename B> struct type_if<false, A, B> { using type = B; };

// The accumulators' type: float64 for float64 values and for the wide metrics (the union sums).
template <typename T, class Mt> using metric_acc_t = typename type_if<sizeof(T) == 8 || Mt::wide, double, float>::type;

// An accumulator and a term folded as the metric reduces: a sum, or (Mt::maximum) fmax.
template <class Mt, typename Acc> __device__ inline Acc fold(Acc acc, Acc term) {
    return Mt::maximum ? fmax(acc, term) : acc + term;
}

// The tile's terms in a fixed order, for a deterministic context (tile_args.ordered): warp w owns
// rows [rows·w/warps, rows·(w+1)/warps) of the tile and adds every query entry's terms for them,
// entry after entry, without atomics, so each accumulator takes its terms in the query's entry
// order on every run (with atomics the warps' entries meet in any order). Each warp searches every
// entry's column for its rows: warps times the searches. Marks touched[r / touched_step] when
// touched_step > 0. The caller zeroes before and synchronizes after.
template <typename T, class Mt>
__device__ void accumulate_ordered_by(const tile_args<T> &a, metric_acc_t<T, Mt> *acc, unsigned char *touched,
                                      int touched_step, int64_t i0, int rows, int64_t qbegin, int64_t qend) {
    using Acc = metric_acc_t<T, Mt>;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kDistanceThreads / 32;
    const int64_t r_lo = i0 + (int64_t)rows * warp / warps, r_hi = i0 + (int64_t)rows * (warp + 1) / warps;
    for (int64_t e = qbegin; e < qend; e++) {
        const int32_t c = a.qcol[e];
        const double q = (double)a.qval[e];
        const int64_t lo = warp_lower_bound(a.xtrow, a.xtptr[c], a.xtptr[c + 1], r_lo, lane);
        const int64_t hi = warp_lower_bound(a.xtrow, lo, a.xtptr[c + 1], r_hi, lane);
        for (int64_t t = lo + lane; t < hi; t += 32) { // a column's rows are distinct: one lane a row
            const int r = a.xtrow[t] - (int)i0;
            double a0 = 0.0, a1 = 0.0;
            Mt::intersect(q, (double)a.xtval[t], a.p, &a0, &a1);
            acc[r] = fold<Mt>(acc[r], (Acc)a0);
            if (Mt::accumulators > 1)
                acc[a.tile_rows + r] = fold<Mt>(acc[a.tile_rows + r], (Acc)a1);
            if (touched_step > 0)
                touched[r / touched_step] = 1;
        }
        __syncwarp(); // the next entry's lane for a row may be another
    }
}

// The accumulators of index rows [i0, i0 + rows) against query entries [qbegin, qend): zeroed,
// then each warp takes one of the query's entries, finds the tile's slice of that column's list
// (a 32-way search) and adds the metric's intersection term for every row in it. The block calls
// it together; the accumulators are ready (and synchronized) on return. A metric reduced by max
// takes the fixed order (there is no float atomic max; its bits do not depend on the order).
template <typename T, class Mt>
__device__ void accumulate_tile_by(const tile_args<T> &a, metric_acc_t<T, Mt> *acc, int64_t i0, int rows,
                                   int64_t qbegin, int64_t qend) {
    using Acc = metric_acc_t<T, Mt>;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kDistanceThreads / 32;
    for (int r = threadIdx.x; r < rows; r += kDistanceThreads) {
        acc[r] = Acc(0);
        if (Mt::accumulators > 1)
            acc[a.tile_rows + r] = Acc(0);
    }
    __syncthreads();
    if (a.ordered || Mt::maximum) {
        accumulate_ordered_by<T, Mt>(a, acc, nullptr, 0, i0, rows, qbegin, qend);
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
            Mt::intersect(q, (double)a.xtval[t], a.p, &a0, &a1);
            atomicAdd(&acc[r], (Acc)a0);
            if (Mt::accumulators > 1)
                atomicAdd(&acc[a.tile_rows + r], (Acc)a1);
        }
    }
    __syncthreads();
}

// Every distance of a batch of queries (blockIdx.x) against the index, a tile of rows at a time
// (blockIdx.y and on): the tile's sums, then each row finalized into the output.
template <typename T, class Mt> __global__ void __launch_bounds__(kDistanceThreads) intersect_kernel(tile_args<T> a) {
    using Acc = metric_acc_t<T, Mt>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc *acc = reinterpret_cast<Acc *>(smem_raw);
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qend = a.qptr[j + 1];
    const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
    T *out_row = a.out + (int64_t)blockIdx.x * a.rs;

    for (int64_t i0 = (int64_t)blockIdx.y * a.tile_rows; i0 < a.nx; i0 += (int64_t)gridDim.y * a.tile_rows) {
        const int rows = (int)(a.nx - i0 < a.tile_rows ? a.nx - i0 : a.tile_rows);
        accumulate_tile_by<T, Mt>(a, acc, i0, rows, qbegin, qend);
        for (int r = threadIdx.x; r < rows; r += kDistanceThreads) {
            const int64_t i = i0 + r;
            const double a1 = Mt::accumulators > 1 ? (double)acc[a.tile_rows + r] : 0.0;
            out_row[i * a.cs] =
                (T)Mt::finalize((double)acc[r], a1, qn0, qn1, a.xnorm[2 * i], a.xnorm[2 * i + 1], a.d, a.p);
        }
        __syncthreads();
    }
}

// A metric reduced by max over the union (a user's; the built-in Chebyshev has its own tiles):
// the largest pair(q, x) over the columns either row holds, a missing value 0, from 0, finalized.
// That is the largest of A (pair(q, x) over the shared columns), B (pair(q, 0) over the columns
// only the query holds) and C (pair(0, x) over those only the index row holds), as the built-in
// Chebyshev splits |q - x|. The tile's A come as the sums' do, folded by fmax in the fixed order,
// marking the rows that share a column. Each row's entries are in order of decreasing pair(0, x)
// and the query's of decreasing pair(q, 0) (union_keys_kernel, then a sort: order_col, key), so
// B is the first of the query's order that the row lacks and C the first of the row's that the
// query lacks: for a row sharing nothing, the first of each; else a warp tests 32 entries a step
// (a search in the other row), and the first step mostly settles it. So a pair costs its shared
// columns and a short walk, not a merge of both rows.
template <typename T, class Mt>
__global__ void union_keys_kernel(const T *vals, int64_t nnz, double p, int query_side, double *keys) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x)
        keys[e] = query_side ? Mt::pair((double)vals[e], 0.0, p) : Mt::pair(0.0, (double)vals[e], p);
}

__device__ inline bool holds(const int32_t *cols, int64_t n, int32_t c) {
    const int64_t at = lower_bound(cols, n, c);
    return at < n && cols[at] == c;
}

// Along order_col[from, to) (columns by decreasing magnitude or key), the key of the first whose
// column `cols` (sorted, n long) lacks; 0 when it holds them all. All 32 lanes call it together
// and get the answer, 32 entries a step.
template <typename T> __device__ double warp_first_outside(const int32_t *order_col, const T *order_abs, int64_t from,
                                                           int64_t to, const int32_t *cols, int64_t n, int lane) {
    for (int64_t base = from; base < to; base += 32) {
        const int64_t t = base + lane;
        const unsigned outside = __ballot_sync(~0u, t < to && !holds(cols, n, order_col[t]));
        if (outside)
            return (double)order_abs[base + __ffs(outside) - 1];
    }
    return 0.0;
}

// Dynamic shared memory: a.tile_rows accumulators (float64: a sum over the union is wide) and as
// many bytes of `touched`. q_key and x_key are the orders' keys beside a.q_mag_col and a.x_mag_col.
template <typename T, class Mt>
__global__ void __launch_bounds__(kDistanceThreads)
    union_max_kernel(tile_args<T> a, const double *q_key, const double *x_key) {
    using Acc = metric_acc_t<T, Mt>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc *acc = reinterpret_cast<Acc *>(smem_raw);
    unsigned char *touched = smem_raw + sizeof(Acc) * (size_t)a.tile_rows;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kDistanceThreads / 32;
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qend = a.qptr[j + 1], qn = qend - qbegin;
    const double q_first = qn > 0 ? q_key[qbegin] : 0.0; // B of a row that shares nothing
    const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
    T *out_row = a.out + (int64_t)blockIdx.x * a.rs;
    for (int64_t i0 = (int64_t)blockIdx.y * a.tile_rows; i0 < a.nx; i0 += (int64_t)gridDim.y * a.tile_rows) {
        const int rows = (int)(a.nx - i0 < a.tile_rows ? a.nx - i0 : a.tile_rows);
        for (int r = threadIdx.x; r < rows; r += kDistanceThreads) {
            acc[r] = Acc(0);
            touched[r] = 0;
        }
        __syncthreads();
        accumulate_ordered_by<T, Mt>(a, acc, touched, 1, i0, rows, qbegin, qend);
        __syncthreads();
        for (int r = warp; r < rows; r += warps) {
            const int64_t i = i0 + r, xbegin = a.xptr[i], xn = a.xptr[i + 1] - xbegin;
            double m = (double)acc[r];
            if (!touched[r]) {
                m = fmax(m, q_first);
                if (xn > 0)
                    m = fmax(m, x_key[xbegin]);
            } else {
                m = fmax(m, warp_first_outside(a.q_mag_col, q_key, qbegin, qend, a.xcol + xbegin, xn, lane));
                m = fmax(m, warp_first_outside(a.x_mag_col, x_key, xbegin, xbegin + xn, a.qcol + qbegin, qn, lane));
            }
            if (lane == 0)
                out_row[i * a.cs] =
                    (T)Mt::finalize(m, 0.0, qn0, qn1, a.xnorm[2 * i], a.xnorm[2 * i + 1], a.d, a.p);
        }
        __syncthreads(); // the accumulators and marks are zeroed for the next tile
    }
}

// Each row's two norms (a warp a row): its entries' terms summed, or their maxima for Mt::maximum.
template <typename T, class Mt>
__global__ void norms_kernel(const int64_t *rowptr, const T *vals, int64_t nrows, double p, double *norms) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < nrows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        double n0 = 0.0, n1 = 0.0;
        for (int64_t e = rowptr[r] + lane; e < rowptr[r + 1]; e += 32)
            Mt::norm_add((double)vals[e], p, &n0, &n1);
        for (int o = 16; o > 0; o /= 2) {
            const double m0 = __shfl_down_sync(~0u, n0, o), m1 = __shfl_down_sync(~0u, n1, o);
            n0 = Mt::maximum ? fmax(n0, m0) : n0 + m0;
            n1 = Mt::maximum ? fmax(n1, m1) : n1 + m1;
        }
        if (lane == 0) {
            norms[2 * r] = n0;
            norms[2 * r + 1] = n1;
        }
    }
}

} // namespace sr_cuda
