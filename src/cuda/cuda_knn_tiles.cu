// k-NN on the GPU for the sum metrics (all but Chebyshev), selecting while it scores: the dense
// path's tiles (cuda_distance_tile.cuh: a block per query and tile of index rows, the tile's
// accumulators in shared memory), but instead of writing every distance to a block of batch × n
// values in device memory and selecting from it in a second pass, each warp keeps the k best of
// the rows it finalizes (cuda_topk.cuh), the block merges its warps' lists, and a last pass merges
// a query's blocks. On SEC-Edgar-like data (663K index rows) that block is 4.4·10¹¹ values written
// and read again all-vs-all; here it never exists, and the batches are no longer sized by it.
//
// Rows whose accumulators are zero (they share no column with the query) have, for cosine,
// Russell-Rao, KL divergence and the inner product, one distance whatever the row: they are
// offered at that value without reading their norms, and a full list rejects them at once.
//
// The neighbours and distances are the dense path's: the same sums (the same atomics) and
// finalizer rounded to the output type, compared as cuda_select.cu compares them (order_key),
// ties to the smaller index.
#include <algorithm>

#include "cuda_common.cuh"
#include "cuda_distance_tile.cuh"
#include "cuda_topk.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kMaxK = 32; // a warp's list: lane l holds place l

template <typename T> struct tiles_out {
    typename order_key<T>::type *key; // k candidates per (query of the batch, block along y)
    int64_t *row;                     // -1: an empty place
    int k;
    bool largest;
};

// Whether every row sharing nothing with the query has one distance (finalize(0, 0, ...) does not
// read the row's norms).
template <sr_metric M> __host__ __device__ constexpr bool constant_when_disjoint() {
    return M == SR_METRIC_COSINE || M == SR_METRIC_RUSSELL_RAO || M == SR_METRIC_KL_DIVERGENCE ||
           M == SR_METRIC_INNER_PRODUCT;
}

// Whether the distance of a row sharing nothing with the query never falls as the row's first norm
// x0 rises (docs/knn-overlap.md; correlation's key is another): a group of 32 rows whose smallest
// x0 gives a distance that cannot enter a full list has no disjoint row that can.
template <sr_metric M> __host__ __device__ constexpr bool floor_bounds_disjoint() {
    return !constant_when_disjoint<M>() && M != SR_METRIC_CORRELATION;
}

// The smallest x0 of each group of 32 index rows.
__global__ void group_floors(const double *xnorm, int64_t n, double *floor) {
    for (int64_t g = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; g < (n + 31) / 32;
         g += (int64_t)gridDim.x * blockDim.x) {
        double m = xnorm[2 * (32 * g)];
        for (int64_t i = 32 * g + 1; i < 32 * g + 32 && i < n; i++)
            m = fmin(m, xnorm[2 * i]);
        floor[g] = m;
    }
}

// Query entries whose place in their column of XT a block keeps from tile to tile (in shared
// memory, after the accumulators): a warp then reads on from there instead of searching the
// column for each tile. A query's entries past these search, as the dense kernel does.
constexpr int kCursors = 512;
// A column's run inside a tile longer than this is not left to the warp that found it but shared
// by the whole block after the others' runs: with a warp an entry, the warp holding a Zipf-popular
// column (SEC-Edgar-like: 129K rows, ~2.4K a tile) kept the block waiting at its barrier (ncu).
constexpr int64_t kShareRun = 64;
constexpr int kShared = 64; // runs a tile shares at most (more: their warps take them)
struct walk_space {
    int64_t base[kCursors]; // where the column starts in XT
    int32_t at[kCursors];   // the first of its rows not yet added, from base
    int32_t len[kCursors];  // the column's length
    int64_t run_lo[kShared], run_hi[kShared];
    double run_q[kShared];
    int runs;
};
constexpr size_t kTilesSmem = kTileBytes + sizeof(walk_space);

// The block's cursors at its first tile's first row (the warp that will walk each entry sets it).
template <typename T>
__device__ void start_cursors(const tile_args<T> &a, walk_space &w, int64_t qbegin, int64_t qend, int64_t i0) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    for (int64_t e = qbegin + warp; e < qend && e - qbegin < kCursors; e += warps) {
        const int32_t c = a.qcol[e];
        const int64_t base = a.xtptr[c], end = a.xtptr[c + 1];
        const int64_t at = warp_lower_bound(a.xtrow, base, end, i0, lane);
        if (lane == 0) {
            w.base[e - qbegin] = base;
            w.at[e - qbegin] = (int32_t)(at - base);
            w.len[e - qbegin] = (int32_t)(end - base);
        }
    }
}

// Adds the terms of XT entries [lo, hi) (rows inside the tile) for query value q, from `first`
// by `step`.
template <typename T, sr_metric M>
__device__ __forceinline__ void add_run(const tile_args<T> &a, acc_t<T, M> *acc, int64_t i0, double q, int64_t lo,
                                        int64_t hi, int first, int step) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    for (int64_t t = lo + first; t < hi; t += step) {
        const int r = (int)(a.xtrow[t] - i0);
        double a0 = 0.0, a1 = 0.0;
        sr_metric_intersect(M, q, (double)a.xtval[t], a.p, &a0, &a1);
        atomicAdd(&acc[r], (Acc)a0);
        if (nacc > 1)
            atomicAdd(&acc[a.tile_rows + r], (Acc)a1);
    }
}

// accumulate_tile with the cursors and shared long runs. An entry's warp finds its column's run
// inside the tile: from the cursor (a column with nothing left costs no read; one with at most 32
// left, one read), else by a search; short runs it adds itself, long ones go to the list the
// whole block adds after a barrier.
template <typename T, sr_metric M>
__device__ void accumulate_walk(const tile_args<T> &a, acc_t<T, M> *acc, walk_space &w, int64_t i0, int rows,
                                int64_t qbegin, int64_t qend) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    for (int r = threadIdx.x; r < rows; r += kThreads) {
        acc[r] = Acc(0);
        if (nacc > 1)
            acc[a.tile_rows + r] = Acc(0);
    }
    if (threadIdx.x == 0)
        w.runs = 0;
    __syncthreads();
    const int64_t limit = i0 + rows;
    for (int64_t e = qbegin + warp; e < qend; e += warps) {
        const double q = (double)a.qval[e];
        const int u = (int)(e - qbegin);
        int64_t lo, hi;
        if (u < kCursors) {
            const int at = w.at[u], len = w.len[u];
            const int64_t base = w.base[u];
            if (at >= len)
                continue;
            if (len - at <= 32) { // one read: the rows left inside the tile come first
                const int t = at + lane;
                const bool inside = t < len && a.xtrow[base + t] < limit;
                const int taken = __popc(__ballot_sync(~0u, inside));
                if (inside)
                    add_run<T, M>(a, acc, i0, q, base + t, base + t + 1, 0, 1);
                __syncwarp();
                if (lane == 0)
                    w.at[u] = at + taken;
                continue;
            }
            lo = base + at;
            hi = warp_lower_bound(a.xtrow, lo, base + len, limit, lane);
            __syncwarp();
            if (lane == 0)
                w.at[u] = (int32_t)(hi - base);
        } else {
            const int32_t c = a.qcol[e];
            lo = warp_lower_bound(a.xtrow, a.xtptr[c], a.xtptr[c + 1], i0, lane);
            hi = warp_lower_bound(a.xtrow, lo, a.xtptr[c + 1], limit, lane);
        }
        if (hi - lo > kShareRun) {
            int slot = 0;
            if (lane == 0)
                slot = atomicAdd(&w.runs, 1);
            slot = __shfl_sync(~0u, slot, 0);
            if (slot < kShared) {
                if (lane == 0) {
                    w.run_lo[slot] = lo;
                    w.run_hi[slot] = hi;
                    w.run_q[slot] = q;
                }
                continue;
            }
        }
        add_run<T, M>(a, acc, i0, q, lo, hi, lane, 32);
    }
    __syncthreads();
    const int runs = min(w.runs, kShared);
    for (int s = 0; s < runs; s++)
        add_run<T, M>(a, acc, i0, w.run_q[s], w.run_lo[s], w.run_hi[s], threadIdx.x, kThreads);
    __syncthreads();
}

// A block per (query, run of tiles_per_block consecutive tiles): the k best of its rows.
template <typename T, sr_metric M>
__global__ void __launch_bounds__(kThreads) knn_tiles(tile_args<T> a, tiles_out<T> o, const double *floors,
                                                      int64_t tiles_per_block) {
    using Acc = acc_t<T, M>;
    using Key = typename order_key<T>::type;
    constexpr int nacc = sr_metric_accumulators(M);
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc *acc = reinterpret_cast<Acc *>(smem_raw);
    walk_space &cur = *reinterpret_cast<walk_space *>(smem_raw + kTileBytes);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qend = a.qptr[j + 1];
    const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
    Key zero_key = 0;
    if constexpr (constant_when_disjoint<M>())
        zero_key = order_key<T>::of((T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, 1.0, 1.0, a.d, a.p), o.largest);
    warp_best<Key> best(o.k);
    const int64_t first = (int64_t)blockIdx.y * tiles_per_block * a.tile_rows;
    const int64_t stop = min(a.nx, first + tiles_per_block * a.tile_rows);
    start_cursors<T>(a, cur, qbegin, qend, first);
    for (int64_t i0 = first; i0 < stop; i0 += a.tile_rows) {
        const int rows = (int)(stop - i0 < a.tile_rows ? stop - i0 : a.tile_rows);
        accumulate_walk<T, M>(a, acc, cur, i0, rows, qbegin, qend);
        for (int r0 = warp * 32; r0 < rows; r0 += kThreads) { // warp-uniform: every lane offers together
            // whether this group's rows that share nothing with the query can enter at all
            bool disjoint_out = false;
            if (best.full()) {
                if constexpr (constant_when_disjoint<M>())
                    disjoint_out = !(zero_key < best.wk);
                if constexpr (floor_bounds_disjoint<M>()) {
                    const double f = floors[(i0 + r0) / 32];
                    disjoint_out =
                        !(order_key<T>::of((T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, f, f, a.d, a.p), o.largest) <
                          best.wk);
                }
            }
            const int r = r0 + lane;
            const int64_t i = i0 + r;
            bool has = r < rows;
            Key key = 0;
            if (has) {
                const Acc x0 = acc[r], x1 = nacc > 1 ? acc[a.tile_rows + r] : Acc(0);
                const bool disjoint = x0 == Acc(0) && x1 == Acc(0);
                if (disjoint && disjoint_out)
                    has = false;
                else if (constant_when_disjoint<M>() && disjoint)
                    key = zero_key;
                else
                    key = order_key<T>::of(
                        (T)sr_metric_finalize(M, (double)x0, (double)x1, qn0, qn1, a.xnorm[2 * i], a.xnorm[2 * i + 1],
                                              a.d, a.p),
                        o.largest);
            }
            best.offer_lanes(has, key, i);
        }
        __syncthreads(); // the next tile zeroes the accumulators; at the end, their space is reused
    }
    // the warps' lists through shared memory (the accumulators' space) into warp 0's
    constexpr int warps = kThreads / 32;
    Key *keys = reinterpret_cast<Key *>(smem_raw);
    int64_t *rows_of = reinterpret_cast<int64_t *>(keys + warps * kMaxK);
    rows_of[warp * kMaxK + lane] = lane < best.count ? best.row : -1;
    keys[warp * kMaxK + lane] = best.key;
    __syncthreads();
    if (warp != 0)
        return;
    for (int w = 1; w < warps; w++) {
        const int64_t rr = rows_of[w * kMaxK + lane];
        best.offer_lanes(rr >= 0, keys[w * kMaxK + lane], rr);
    }
    if (lane < o.k) {
        const int64_t slot = ((int64_t)blockIdx.x * gridDim.y + blockIdx.y) * o.k + lane;
        o.key[slot] = best.key;
        o.row[slot] = lane < best.count ? best.row : -1;
    }
}

// A warp a query: the k best of its blocks' candidates, written best first.
template <typename T>
__global__ void merge_blocks(tiles_out<T> o, int64_t nq, int64_t per_query, int64_t *idx, T *dist, int64_t rs,
                             int64_t cs) {
    const int lane = threadIdx.x & 31;
    for (int64_t q = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; q < nq;
         q += (int64_t)gridDim.x * blockDim.x / 32) {
        warp_best<typename order_key<T>::type> best(o.k);
        for (int64_t c0 = q * per_query; c0 < (q + 1) * per_query; c0 += 32) {
            const int64_t c = c0 + lane;
            const bool inside = c < (q + 1) * per_query;
            const int64_t rr = inside ? o.row[c] : -1;
            best.offer_lanes(rr >= 0, inside ? o.key[c] : 0, rr);
        }
        if (lane < o.k) {
            idx[q * o.k + lane] = best.row;
            dist[q * rs + lane * cs] = order_key<T>::value(best.key, o.largest);
        }
    }
}

// The most entries a query of rows [q0, q1) has.
__global__ void longest_row(const int64_t *rowptr, int64_t q0, int64_t q1, unsigned long long *longest) {
    unsigned long long m = 0;
    for (int64_t r = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < q1; r += (int64_t)gridDim.x * blockDim.x)
        m = max(m, (unsigned long long)(rowptr[r + 1] - rowptr[r]));
    atomicMax(longest, m);
}

int tiles_setting();

// Consecutive tiles a block takes. One when a query of the batch has entries past the cursors:
// such a query's entries search every tile anyway, and a block of many tiles of it would run
// long after the rest (MovieLens-like rows of 24K entries). Else all of them when the batch's
// queries alone fill the device (a block keeps its cursors across its tiles), or fewer, so that
// blocks still fill it.
int64_t tiles_per_block(int64_t nq, int64_t tiles, int64_t longest) {
    if (tiles_setting() >= 2) // forced (tests: cursors carried across tiles on small inputs)
        return tiles_setting();
    if (longest > kCursors)
        return 1;
    const int64_t wanted = (int64_t)sm_count() * 32; // blocks: several waves of 4 a multiprocessor
    const int64_t along = std::clamp<int64_t>((wanted + nq - 1) / nq, 1, std::min<int64_t>(tiles, kMaxGridY));
    return (tiles + along - 1) / along;
}

template <typename T>
sr_status knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k, int64_t *idx,
                         const sr_strided_out *dist) {
    sr_context_s *ctx = in->Q->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t nq = q1 - q0;
    tile_args<T> a = tile_args_of<T>(in);
    a.q0 = q0;
    tiles_out<T> o{};
    o.k = (int)k;
    o.largest = sr_metric_is_similarity(in->metric);
    return with_metric(in->metric, [&](auto metric) -> sr_status {
        constexpr sr_metric M = decltype(metric)::value;
        if constexpr (sr_metric_kind_of(M) == SR_MK_MAX) {
            return sr_error(SR_ERROR_INTERNAL, "knn tiles: Chebyshev has no tile kernel");
        } else {
            a.tile_rows = tile_rows_of<T, M>();
            const int64_t tiles = (a.nx + a.tile_rows - 1) / a.tile_rows;
            buffer<unsigned long long> longest(ctx);
            SR_TRY(longest.allocate(1));
            SR_CUDA_TRY(cudaMemsetAsync(longest.get(), 0, sizeof(unsigned long long), stream));
            longest_row<<<grid_for(nq), 256, 0, stream>>>(a.qptr, q0, q1, longest.get());
            SR_CUDA_LAUNCHED();
            unsigned long long most = 0;
            SR_CUDA_TRY(cudaMemcpyAsync(&most, longest.get(), sizeof most, cudaMemcpyDeviceToHost, stream));
            SR_CUDA_TRY(cudaStreamSynchronize(stream));
            const int64_t per = tiles_per_block(nq, tiles, (int64_t)most), ys = (tiles + per - 1) / per;
            buffer<typename order_key<T>::type> keys(ctx);
            buffer<int64_t> rows(ctx);
            buffer<double> floors(ctx);
            SR_TRY(keys.allocate((size_t)(nq * ys * k)));
            SR_TRY(rows.allocate((size_t)(nq * ys * k)));
            if (floor_bounds_disjoint<M>()) {
                SR_TRY(floors.allocate((size_t)((a.nx + 31) / 32)));
                group_floors<<<grid_for((a.nx + 31) / 32), 256, 0, stream>>>(a.xnorm, a.nx, floors.get());
                SR_CUDA_LAUNCHED();
            }
            o.key = keys.get();
            o.row = rows.get();
            auto kernel = knn_tiles<T, M>;
            SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kTilesSmem));
            dim3 grid((unsigned)nq, (unsigned)ys);
            kernel<<<grid, kThreads, kTilesSmem, stream>>>(a, o, floors.get(), per);
            SR_CUDA_LAUNCHED();
            merge_blocks<T><<<grid_for(nq * 32), 256, 0, stream>>>(o, nq, ys * k, idx, static_cast<T *>(dist->data),
                                                                   dist->row_stride, dist->col_stride);
            SR_CUDA_LAUNCHED();
            SR_CUDA_TRY(cudaStreamSynchronize(stream)); // before the candidates go
            return SR_SUCCESS;
        }
    });
}

// SPARSERING_KNN_TILES: 0 keeps the dense path; 2 or more forces the tiles a block takes.
int tiles_setting() {
    const char *env = getenv("SPARSERING_KNN_TILES");
    return env && *env ? atoi(env) : 1;
}

} // namespace

extern "C" bool sr_cuda_knn_tiles_apply(const sr_distance_inputs *in, int64_t k) {
    return tiles_setting() != 0 && k <= kMaxK && in->XT != nullptr &&
           sr_metric_kind_of(in->metric) != SR_MK_MAX && in->Q->nrows > 0;
}

extern "C" size_t sr_cuda_knn_tiles_scratch_per_row(const sr_distance_inputs *in, int64_t k) {
    const bool wide = in->Q->type == SR_TYPE_FLOAT64;
    int64_t ys = 1;
    (void)with_metric(in->metric, [&](auto metric) {
        constexpr sr_metric M = decltype(metric)::value;
        const int64_t rows = wide ? tile_rows_of<double, M>() : tile_rows_of<float, M>();
        ys = std::min<int64_t>((in->X->nrows + rows - 1) / rows, kMaxGridY);
        return SR_SUCCESS;
    });
    return (size_t)(std::max<int64_t>(ys, 1) * k) * (sizeof(int64_t) + (wide ? 8 : 4));
}

extern "C" sr_status sr_cuda_knn_tiles_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k,
                                            int64_t *idx, const sr_strided_out *dist) {
    device_guard guard(in->Q->ctx->device);
    if (q1 <= q0)
        return SR_SUCCESS;
    if (q1 - q0 > ((int64_t)1 << 30))
        return sr_error(SR_ERROR_INTERNAL, "knn tiles: a batch of %lld queries is past the grid", (long long)(q1 - q0));
    return in->Q->type == SR_TYPE_FLOAT32 ? knn_tiles_rows<float>(in, q0, q1, k, idx, dist)
                                          : knn_tiles_rows<double>(in, q0, q1, k, idx, dist);
}
