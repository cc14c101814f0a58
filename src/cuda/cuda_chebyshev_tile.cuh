// Chebyshev on the GPU, max over the union of |q - x| (the method is in cuda_distance.cu's opening
// comment): the tile kernel shared by the distances (cuda_distance.cu, every value stored) and the
// k-NN and radius search that decide as they score (cuda_tile_select.cuh). What happens to a row's
// value is the Sink's: store_sink below, best_sink (cuda_knn_tiles.cu, each warp keeping its k
// best) and radius_sink (cuda_radius_tiles.cu), which may say that a row whose value has a lower
// bound already cannot count, and skip its walks.
#pragma once

#include "cuda_distance_tile.cuh"

namespace {

// Every value stored in the caller's block of distances.
template <typename T> struct store_sink {
    struct params {};
    T *out_row;
    int64_t cs;
    __device__ store_sink(const tile_args<T> &a, params, int64_t query_of_block)
        : out_row(a.out + query_of_block * a.rs), cs(a.cs) {}
    // Whether the rows of a group that share nothing need no value (never: every one is stored).
    __device__ bool disjoint_out(const tile_args<T> &, int64_t, double) const { return false; }
    // Whether row i, whose value is at least `low`, needs no value (never).
    __device__ bool cannot_count(T, int64_t) const { return false; }
    // Each lane's value where `has` (the warp calls it together).
    __device__ void lanes(const tile_args<T> &, bool has, T value, int64_t i) const {
        if (has)
            out_row[i * cs] = value;
    }
    // One row's value, the same in every lane (the warp calls it together).
    __device__ void one(const tile_args<T> &, T value, int64_t i) const {
        if ((threadIdx.x & 31) == 0)
            out_row[i * cs] = value;
    }
    __device__ void finish(unsigned char *) const {}
};

template <typename T> struct ordered_bits; // nonnegative floats order as their bits
template <> struct ordered_bits<float> {
    using type = unsigned;
    __device__ static type of(float v) { return __float_as_uint(v); }
    __device__ static float value(type b) { return __uint_as_float(b); }
};
template <> struct ordered_bits<double> {
    using type = unsigned long long;
    __device__ static type of(double v) { return (type)__double_as_longlong(v); }
    __device__ static double value(type b) { return __longlong_as_double((long long)b); }
};

constexpr int kRankBits = 32; // the query's largest entries tracked per row

constexpr int kShortWalk = 4; // a thread's steps through a row's order before a warp takes over

template <typename T> __host__ __device__ constexpr int chebyshev_tile_rows() {
    static_assert(sizeof(typename ordered_bits<T>::type) == sizeof(T), "tile_rows_of counts a T a row");
    return tile_rows_of<T, SR_METRIC_CHEBYSHEV>();
}

// Along order_col[from, to) (columns by decreasing magnitude), the magnitude of the first whose
// column `cols` (sorted, n long) lacks; 0 when there is none. A thread takes at most `steps`
// entries and says in *done whether it got an answer (warp_first_outside, cuda_metric_kernels.cuh,
// is the same for a whole warp).
template <typename T> __device__ double first_outside(const int32_t *order_col, const T *order_abs, int64_t from,
                                                      int64_t to, const int32_t *cols, int64_t n, int steps,
                                                      bool *done) {
    for (int64_t t = from; t < to; t++) {
        if (steps-- == 0) {
            *done = false;
            return 0.0;
        }
        if (!holds(cols, n, order_col[t]))
            return (double)order_abs[t];
    }
    return 0.0;
}

// B, the largest |q| whose column row i lacks, from the shared-rank mask: valid when the row lacks
// one of the query's tracked entries (ranks != ~0u); otherwise a warp walks the rest of the order.
template <typename T> __device__ double query_off_row_from_mask(const tile_args<T> &a, int64_t qbegin, int64_t qn,
                                                                unsigned ranks) {
    const int first_off = __ffs(~ranks) - 1;
    return first_off < qn ? (double)a.q_mag_abs[qbegin + first_off] : 0.0;
}

template <typename T, class Sink>
__global__ void __launch_bounds__(kThreads) chebyshev_kernel(tile_args<T> a, typename Sink::params sp) {
    using Bits = typename ordered_bits<T>::type;
    constexpr int tile_rows = chebyshev_tile_rows<T>();
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Bits *shared_max = reinterpret_cast<Bits *>(smem_raw); // A's bits + 1; 0: nothing shared
    unsigned *shared_ranks = reinterpret_cast<unsigned *>(shared_max + tile_rows);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qn = a.qptr[j + 1] - qbegin;
    const int32_t *qcols = a.qcol + qbegin;
    const double qmax = qn > 0 ? (double)a.q_mag_abs[qbegin] : 0.0;
    Sink sink(a, sp, blockIdx.x);
    // a column's run inside a tile longer than kLongRun rows is added by the whole block (a
    // Zipf-popular column's warp otherwise kept the others waiting at the barrier)
    constexpr int64_t kLongRun = 64;
    constexpr int kLongRuns = 64;
    __shared__ int64_t run_lo[kLongRuns], run_hi[kLongRuns];
    __shared__ T run_q[kLongRuns];
    __shared__ unsigned run_bit[kLongRuns];
    __shared__ int long_runs;

    for (int64_t i0 = (int64_t)blockIdx.y * tile_rows; i0 < a.nx; i0 += (int64_t)gridDim.y * tile_rows) {
        const int rows = (int)(a.nx - i0 < tile_rows ? a.nx - i0 : tile_rows);
        for (int r = threadIdx.x; r < rows; r += kThreads) {
            shared_max[r] = 0;
            shared_ranks[r] = 0;
        }
        if (threadIdx.x == 0)
            long_runs = 0;
        __syncthreads();
        // a column's rows inside the tile, from XT entry `first` by `step`
        auto add = [&](T q, unsigned bit, int64_t lo, int64_t hi, int first, int step) {
            for (int64_t t = lo + first; t < hi; t += step) {
                const int r = a.xtrow[t] - (int)i0;
                atomicMax(&shared_max[r], ordered_bits<T>::of(fabs(q - a.xtval[t])) + 1);
                if (bit)
                    atomicOr(&shared_ranks[r], bit);
            }
        };
        for (int64_t e = qbegin + warp; e < qbegin + qn; e += warps) {
            const int32_t c = a.qcol[e];
            const T q = a.qval[e];
            const int rank = a.q_rank[e];
            const unsigned bit = rank < kRankBits ? 1u << rank : 0u;
            const int64_t lo = warp_lower_bound(a.xtrow, a.xtptr[c], a.xtptr[c + 1], i0, lane);
            const int64_t hi = warp_lower_bound(a.xtrow, lo, a.xtptr[c + 1], i0 + rows, lane);
            if (hi - lo > kLongRun) { // shared by the block below, so that no warp holds the barrier
                int slot = 0;
                if (lane == 0)
                    slot = atomicAdd(&long_runs, 1);
                slot = __shfl_sync(~0u, slot, 0);
                if (slot < kLongRuns) {
                    if (lane == 0) {
                        run_lo[slot] = lo;
                        run_hi[slot] = hi;
                        run_q[slot] = q;
                        run_bit[slot] = bit;
                    }
                    continue;
                }
            }
            add(q, bit, lo, hi, lane, 32);
        }
        __syncthreads();
        for (int s = 0; s < min(long_runs, kLongRuns); s++)
            add(run_q[s], run_bit[s], run_lo[s], run_hi[s], threadIdx.x, kThreads);
        __syncthreads();
        // A lane a row for the short walks. A row whose walk runs long (a self pair, or rows sharing
        // most of their largest entries) is taken over by its whole warp: one lane walking a long
        // row would hold up the block.
        for (int r0 = warp * 32; r0 < rows; r0 += kThreads) {
            const int r = r0 + lane;
            const bool skip_disjoint = sink.disjoint_out(a, i0 + r0, qmax); // warp-uniform
            bool long_walk = false, has = false;
            T value = 0;
            if (r < rows) {
                const int64_t i = i0 + r;
                const Bits m = shared_max[r];
                if (m == 0) { // nothing shared
                    if (!skip_disjoint) {
                        const double x = a.xptr[i + 1] > a.xptr[i] ? (double)a.x_mag_abs[a.xptr[i]] : 0.0;
                        value = (T)fmax(x, qmax);
                        has = true;
                    }
                } else if (shared_ranks[r] == ~0u) {
                    // B needs a walk of the query's order: the warp does both walks, unless A alone
                    // (the shared columns' largest |q - x|, a lower bound) already cannot count
                    long_walk = !sink.cannot_count((T)ordered_bits<T>::value(m - 1), i);
                } else if (sink.cannot_count((T)fmax((double)ordered_bits<T>::value(m - 1),
                                                     query_off_row_from_mask(a, qbegin, qn, shared_ranks[r])),
                                             i)) {
                    // max(A, B) bounds the value from below: C's walk would not change the outcome
                } else {
                    bool done = true;
                    const double c = first_outside(a.x_mag_col, a.x_mag_abs, a.xptr[i], a.xptr[i + 1], qcols, qn,
                                                   kShortWalk, &done);
                    if (done) {
                        value = (T)fmax((double)ordered_bits<T>::value(m - 1),
                                        fmax(query_off_row_from_mask(a, qbegin, qn, shared_ranks[r]), c));
                        has = true;
                    }
                    long_walk = !done;
                }
            }
            sink.lanes(a, has, value, i0 + r);
            for (unsigned pending = __ballot_sync(~0u, long_walk); pending; pending &= pending - 1) {
                const int rl = r0 + __ffs(pending) - 1;
                const int64_t i = i0 + rl;
                const int32_t *xcols = a.xcol + a.xptr[i];
                const int64_t xn = a.xptr[i + 1] - a.xptr[i];
                const unsigned ranks = shared_ranks[rl];
                const double b = ranks != ~0u ? query_off_row_from_mask(a, qbegin, qn, ranks)
                                              : warp_first_outside(a.q_mag_col, a.q_mag_abs, qbegin + kRankBits,
                                                                   qbegin + qn, xcols, xn, lane);
                const double c =
                    warp_first_outside(a.x_mag_col, a.x_mag_abs, a.xptr[i], a.xptr[i + 1], qcols, qn, lane);
                sink.one(a, (T)fmax((double)ordered_bits<T>::value(shared_max[rl] - 1), fmax(b, c)), i);
            }
        }
        __syncthreads();
    }
    sink.finish(smem_raw);
}

// The launch: the tile's dynamic shared memory is kTileBytes, with the long runs' static arrays
// beside it past the default 48 KiB a block, so the kernel opts in.
template <typename T, class Sink>
sr_status launch_chebyshev(const tile_args<T> &a, typename Sink::params sp, dim3 grid, cudaStream_t stream) {
    auto kernel = chebyshev_kernel<T, Sink>;
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kTileBytes));
    kernel<<<grid, kThreads, kTileBytes, stream>>>(a, sp);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

} // namespace
