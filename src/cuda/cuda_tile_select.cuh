// The tile kernels that decide each index row's fate as they score it, without a block of
// distances in device memory: the dense path's tiles (cuda_distance_tile.cuh and, for Chebyshev,
// cuda_chebyshev_tile.cuh: a block per query and run of tiles of index rows, the tile's
// accumulators in shared memory) handing each row's value to a Sink. The k-NN's sink keeps each
// warp's k best (cuda_knn_tiles.cu), the radius search's appends the rows within the radius
// (cuda_radius_tiles.cu).
//
// A Sink has, for the sum metrics (offer_tile) and Chebyshev (chebyshev_kernel) alike:
//   Sink(const tile_args<T> &, params, int64_t query_of_block)
//   bool ready()                    whether its bounds may rule rows out yet (k-NN: a full list)
//   bool cannot_count(T v, row)     whether a value v, or one worse, at this row or later is of no use
//   floor_memo memo                 the groups ruled out by their floor (cuda_tile_bounds.cuh)
//   void lanes(a, has, T v, row)    each lane's value where `has` (the warp calls it together)
//   void one(a, T v, row)           one value, the same in every lane
//   void finish(unsigned char *)    at the end, with the block's shared memory free
// and params has a `floors` member the runner fills (the groups' statistics).
//
// Rows that share no column with the query are decided without their norms where they can be
// (cuda_tile_bounds.cuh); a step of rows none of which shares a column, when such rows cannot
// count, is skipped without reading its accumulators, and only the steps a tile touched are
// zeroed for the next: on sparse data (SEC-Edgar-like, at most 51 entries a row) almost all.
#pragma once

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_chebyshev_tile.cuh"
#include "cuda_distance_tile.cuh"
#include "cuda_longest_row.cuh"
#include "cuda_tile_bounds.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "../semiring/user.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

// Query entries whose place in their column of XT a block keeps from tile to tile (in shared
// memory, after the accumulators): a warp then reads on from there instead of searching the
// column for each tile. A query's entries past these search, as the dense kernel does.
constexpr int kCursors = 256;
// A column's run inside a tile longer than this is not left to the warp that found it but shared
// by the whole block after the others' runs: with a warp an entry, the warp holding a Zipf-popular
// column (SEC-Edgar-like: 129K rows, ~2.4K a tile) kept the block waiting at its barrier (ncu).
constexpr int64_t kShareRun = 64;
constexpr int kShared = 64; // runs a tile shares at most (more: their warps take them)
// A warp's step through a tile's accumulators: a 16-byte load a lane.
template <typename Acc> __host__ __device__ constexpr int step_rows() { return 32 * 16 / (int)sizeof(Acc); }
constexpr int kMaxSteps = kTileBytes / (32 * 16); // steps of a tile of one accumulator a row
struct walk_space {
    int64_t base[kCursors]; // where the column starts in XT
    int32_t at[kCursors];   // the first of its rows not yet added, from base
    int32_t len[kCursors];  // the column's length
    int64_t run_lo[kShared], run_hi[kShared];
    double run_q[kShared];
    int runs;
    int32_t queue[kThreads / 32][64]; // each warp's rows waiting to be finalized (offer_tile)
    unsigned char touched[kMaxSteps]; // whether a step's accumulators were added to since zeroed
};
constexpr size_t kTilesSmem = kTileBytes + sizeof(walk_space);
// four blocks a multiprocessor, as the dense kernel (228 KiB, 1 KiB of it reserved a block)
static_assert(4 * (kTilesSmem + 1024) <= 228 * 1024, "the tiles' shared memory takes a fifth of a multiprocessor");

// The block's cursors at its first tile's first row (the warp that will walk each entry sets it),
// and every step marked touched, so that the first tile zeroes them all.
template <typename T>
__device__ void start_walk(const tile_args<T> &a, walk_space &w, int64_t qbegin, int64_t qend, int64_t i0) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    for (int s = threadIdx.x; s < kMaxSteps; s += kThreads)
        w.touched[s] = 1;
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
    __syncthreads();
}

// Zeroes the accumulators of the steps touched since they were last zeroed (a warp a step, one
// 16-byte store a lane and accumulator).
template <typename Acc, int nacc> __device__ void zero_touched(Acc *acc, walk_space &w, int tile_rows) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    constexpr int step = step_rows<Acc>();
    for (int s = warp; s < tile_rows / step; s += warps) {
        if (!w.touched[s]) // warp-uniform
            continue;
        reinterpret_cast<float4 *>(acc + s * step)[lane] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (nacc > 1)
            reinterpret_cast<float4 *>(acc + tile_rows + s * step)[lane] = make_float4(0.f, 0.f, 0.f, 0.f);
        __syncwarp();
        if (lane == 0)
            w.touched[s] = 0;
    }
}

// Adds the terms of XT entries [lo, hi) (rows inside the tile) for query value q, from `first`
// by `step`, marking their steps touched.
template <typename T, sr_metric M>
__device__ __forceinline__ void add_run(const tile_args<T> &a, acc_t<T, M> *acc, unsigned char *touched, int64_t i0,
                                        double q, int64_t lo, int64_t hi, int first, int step) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    for (int64_t t = lo + first; t < hi; t += step) {
        const int r = (int)(a.xtrow[t] - i0);
        double a0 = 0.0, a1 = 0.0;
        sr_metric_intersect(M, q, (double)a.xtval[t], a.p, &a0, &a1);
        atomicAdd(&acc[r], (Acc)a0);
        if (nacc > 1)
            atomicAdd(&acc[a.tile_rows + r], (Acc)a1);
        touched[r / step_rows<Acc>()] = 1; // any writer writes 1
    }
}

// accumulate_tile with the cursors, the shared long runs and the touched steps. An entry's warp
// finds its column's run inside the tile: from the cursor (a column with nothing left costs no
// read; one with at most 32 left, one read), else by a search; short runs it adds itself, long
// ones go to the list the whole block adds after a barrier.
template <typename T, sr_metric M>
__device__ void accumulate_walk(const tile_args<T> &a, acc_t<T, M> *acc, walk_space &w, int64_t i0, int rows,
                                int64_t qbegin, int64_t qend) {
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kThreads / 32;
    zero_touched<acc_t<T, M>, nacc>(acc, w, a.tile_rows);
    if (threadIdx.x == 0)
        w.runs = 0;
    __syncthreads();
    if (a.ordered) { // no cursors or shared runs: every warp walks every entry for its rows
        accumulate_ordered<T, M>(a, acc, w.touched, step_rows<acc_t<T, M>>(), i0, rows, qbegin, qend);
        __syncthreads();
        return;
    }
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
                    add_run<T, M>(a, acc, w.touched, i0, q, base + t, base + t + 1, 0, 1);
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
        add_run<T, M>(a, acc, w.touched, i0, q, lo, hi, lane, 32);
    }
    __syncthreads();
    const int runs = min(w.runs, kShared);
    for (int s = 0; s < runs; s++)
        add_run<T, M>(a, acc, w.touched, i0, w.run_q[s], w.run_lo[s], w.run_hi[s], threadIdx.x, kThreads);
    __syncthreads();
}

// The tile's rows handed to the sink (warp w takes steps w, w + 8, ... of step_rows rows). A row
// sharing nothing with the query is decided at once where that is cheap: at the constant, or
// dropped when its group's smallest x0 already gives a value that cannot count; a step with no
// row sharing anything is then not read at all. The rest (the rows that share columns, and
// disjoint rows of the monotone metrics that might count) wait in the warp's queue and are
// finalized 32 at a time, every lane busy: finalizing where they lie ran the double-precision
// finalizer (square roots, divisions) for nearly every group, most lanes idle (ncu:
// instruction-bound). A bound is tested as the sink tests a row, with the step's first row
// (k-NN: ties go by index, and no row of the step can enter if its first cannot).
template <typename T, sr_metric M, class Sink>
__device__ void offer_tile(const tile_args<T> &a, const acc_t<T, M> *acc, walk_space &w, int32_t *queue, int64_t i0,
                           int rows, double qn0, double qn1, T zero_value, Sink &sink) {
    using Acc = acc_t<T, M>;
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    int waiting = 0; // queue[0, waiting), warp-uniform
    auto finalize_waiting = [&](int count) {
        const bool has = lane < count;
        const int r = has ? queue[lane] : 0;
        T value = 0;
        if (has) {
            const int64_t i = i0 + r;
            const Acc x0 = acc[r], x1 = nacc > 1 ? acc[a.tile_rows + r] : Acc(0);
            value = (T)sr_metric_finalize(M, (double)x0, (double)x1, qn0, qn1, a.xnorm[2 * i], a.xnorm[2 * i + 1],
                                          a.d, a.p);
        }
        sink.lanes(a, has, value, i0 + r);
    };
    constexpr int R = 16 / (int)sizeof(Acc), step = step_rows<Acc>();
    using Vec = typename std::conditional<R == 4, float4, double2>::type;
    for (int r0 = warp * step; r0 < rows; r0 += kThreads * R) { // warp-uniform
        bool disjoint_out = false; // whether no row of this step that shares nothing can count
        if (sink.ready()) {
            const int64_t first_row = i0 + r0;
            if constexpr (constant_when_disjoint<M>())
                disjoint_out = sink.cannot_count(zero_value, first_row);
            if constexpr (M == SR_METRIC_CORRELATION)
                disjoint_out = sink.cannot_count(
                    (T)correlation_floor(sink.memo.floors + 3 * (first_row / kFloorRows), qn0, qn1, a.d), first_row);
            if constexpr (floor_bounds_disjoint<M>())
                disjoint_out = sink.memo.group_out(first_row, [&](double f) {
                    return sink.cannot_count((T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, f, f, a.d, a.p), first_row);
                });
        }
        if (disjoint_out && !w.touched[r0 / step])
            continue; // every row of the step shares nothing, and none can count
        const int first = r0 + lane * R;
        Acc x0[R], x1[R];
        if (first + R <= rows) {
            const Vec v0 = *reinterpret_cast<const Vec *>(acc + first);
            memcpy(x0, &v0, sizeof v0);
            if (nacc > 1) {
                const Vec v1 = *reinterpret_cast<const Vec *>(acc + a.tile_rows + first);
                memcpy(x1, &v1, sizeof v1);
            }
        } else {
#pragma unroll
            for (int u = 0; u < R; u++) {
                x0[u] = first + u < rows ? acc[first + u] : Acc(0);
                x1[u] = nacc > 1 && first + u < rows ? acc[a.tile_rows + first + u] : Acc(0);
            }
        }
#pragma unroll
        for (int u = 0; u < R; u++) {
            const int r = first + u;
            const bool has = r < rows;
            const bool disjoint = x0[u] == Acc(0) && (nacc == 1 || x1[u] == Acc(0));
            if constexpr (constant_when_disjoint<M>())
                if (!disjoint_out)
                    sink.lanes(a, has && disjoint, zero_value, i0 + r);
            const bool wait = has && !(disjoint && (disjoint_out || constant_when_disjoint<M>()));
            const unsigned waits = __ballot_sync(~0u, wait);
            if (wait)
                queue[waiting + __popc(waits & ((1u << lane) - 1))] = r;
            waiting += __popc(waits);
            __syncwarp();
            if (waiting >= 32) {
                finalize_waiting(32);
                const int rest = waiting - 32;
                const int moved = lane < rest ? queue[32 + lane] : 0;
                __syncwarp();
                if (lane < rest)
                    queue[lane] = moved;
                __syncwarp();
                waiting = rest;
            }
        }
    }
    if (waiting > 0)
        finalize_waiting(waiting);
}

// A block per (query, run of tiles_per_block consecutive tiles), its rows handed to a Sink.
template <typename T, sr_metric M, class Sink>
__global__ void __launch_bounds__(kThreads) select_tiles(tile_args<T> a, typename Sink::params sp,
                                                         int64_t tiles_per_block) {
    using Acc = acc_t<T, M>;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    Acc *acc = reinterpret_cast<Acc *>(smem_raw);
    walk_space &w = *reinterpret_cast<walk_space *>(smem_raw + kTileBytes);
    const int warp = threadIdx.x / 32;
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qend = a.qptr[j + 1];
    const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
    T zero_value = 0; // the distance of every row sharing nothing, where it is one
    if constexpr (constant_when_disjoint<M>())
        zero_value = (T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, 1.0, 1.0, a.d, a.p);
    Sink sink(a, sp, blockIdx.x);
    const int64_t first = (int64_t)blockIdx.y * tiles_per_block * a.tile_rows;
    const int64_t stop = min(a.nx, first + tiles_per_block * a.tile_rows);
    start_walk<T>(a, w, qbegin, qend, first);
    for (int64_t i0 = first; i0 < stop; i0 += a.tile_rows) {
        const int rows = (int)(stop - i0 < a.tile_rows ? stop - i0 : a.tile_rows);
        accumulate_walk<T, M>(a, acc, w, i0, rows, qbegin, qend);
        offer_tile<T, M>(a, acc, w, w.queue[warp], i0, rows, qn0, qn1, zero_value, sink);
        __syncthreads(); // the next tile zeroes the accumulators; at the end, their space is reused
    }
    sink.finish(smem_raw);
}

// SPARSERING_KNN_TILES: 0 keeps the dense path (k-NN and radius); 2 or more forces the tiles a block takes.
inline int tiles_setting() {
    return sr_setting("SPARSERING_KNN_TILES", 1);
}

// Whether the tiles take a k-NN or radius search of these inputs (Chebyshev also walks the rows'
// magnitude orders).
// (not a user metric: its program holds the dense path's kernels, and the tiles' bounds are the
// built-ins')
inline bool tiles_apply(const sr_distance_inputs *in) {
    const bool chebyshev = sr_metric_kind_of(in->metric) == SR_MK_MAX;
    return tiles_setting() != 0 && in->Q->nrows > 0 && in->XT != nullptr && !sr_metric_is_user((int)in->metric) &&
           (!chebyshev || (in->x_mag_col != nullptr && in->q_mag_col != nullptr));
}

// Consecutive tiles a block takes, at least enough that the blocks along y fit the grid (an index
// past 65,535 tiles). One when a query of the batch has entries past the cursors: such a query's
// entries search every tile anyway, and a block of many tiles of it would run long after the rest
// (MovieLens-like rows of 24K entries). Else all of them when the batch's queries alone fill the
// device (a block keeps its cursors across its tiles), or fewer, so that blocks still fill it.
inline int64_t tiles_per_block(int64_t nq, int64_t tiles, int64_t longest) {
    const int64_t fewest = (tiles + kMaxGridY - 1) / kMaxGridY; // the grid's y holds at most kMaxGridY blocks
    if (tiles_setting() >= 2) // forced (tests: cursors carried across tiles on small inputs)
        return std::max<int64_t>(tiles_setting(), fewest);
    if (longest > kCursors)
        return fewest;
    const int64_t wanted = (int64_t)sm_count() * 32; // blocks: several waves of 4 a multiprocessor
    const int64_t along = std::clamp<int64_t>((wanted + nq - 1) / nq, 1, std::min<int64_t>(tiles, kMaxGridY));
    return std::max<int64_t>((tiles + along - 1) / along, fewest);
}

// Blocks along y for queries [q0, q1) (Chebyshev: a block a tile, strided past the grid's limit),
// without a launch (the sinks' scratch is sized by it).
inline int64_t tile_blocks_along(const sr_distance_inputs *in, int64_t tiles_per_block_) {
    const int64_t rows = tile_rows_for(in->metric, in->Q->type);
    const int64_t tiles = (in->X->nrows + rows - 1) / rows;
    if (sr_metric_kind_of(in->metric) == SR_MK_MAX)
        return std::max<int64_t>(std::min<int64_t>(tiles, kMaxGridY), 1);
    return std::max<int64_t>((tiles + tiles_per_block_ - 1) / tiles_per_block_, 1);
}

// Queries [q0, q1) through the tiles into Sink: `before(ys, params)` gets the blocks along y and
// sets up the sink's params (its outputs), the runner fills in the groups' statistics and
// launches, `after(ys)` queues what follows on the stream, and the stream is synchronized before
// the statistics go.
template <typename T, class Sink, class Before, class After>
sr_status run_tiles(const sr_distance_inputs *in, int64_t q0, int64_t q1, Before before, After after) {
    sr_context_s *ctx = in->Q->ctx;
    cudaStream_t stream = stream_of(ctx);
    tile_args<T> a = tile_args_of<T>(in);
    a.q0 = q0;
    return with_metric(in->metric, [&](auto metric) -> sr_status {
        constexpr sr_metric M = decltype(metric)::value;
        a.tile_rows = tile_rows_of<T, M>();
        int64_t per = 1;
        if constexpr (sr_metric_kind_of(M) != SR_MK_MAX) {
            int64_t most = 0;
            SR_TRY(longest_query(ctx, a.qptr, q0, q1, &most));
            per = tiles_per_block(q1 - q0, (a.nx + a.tile_rows - 1) / a.tile_rows, most);
        }
        const int64_t ys = tile_blocks_along(in, per);
        typename Sink::params sp{};
        SR_TRY(before(ys, sp));
        buffer<double> stats(ctx);
        SR_TRY(disjoint_group_stats<M>(ctx, a.xnorm, a.nx, a.d, stats));
        sp.floors = stats.get();
        const dim3 grid((unsigned)(q1 - q0), (unsigned)ys);
        if constexpr (sr_metric_kind_of(M) == SR_MK_MAX) {
            SR_TRY((launch_chebyshev<T, Sink>(a, sp, grid, stream)));
        } else {
            auto kernel = select_tiles<T, M, Sink>;
            SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kTilesSmem));
            kernel<<<grid, kThreads, kTilesSmem, stream>>>(a, sp, per);
            SR_CUDA_LAUNCHED();
        }
        SR_TRY(after(ys));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the statistics go
        return SR_SUCCESS;
    });
}

} // namespace
