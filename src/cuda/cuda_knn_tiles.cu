// k-NN on the GPU selecting while it scores: the dense path's tiles (cuda_distance_tile.cuh and,
// for Chebyshev, cuda_chebyshev_tile.cuh: a block per query and tile of index rows, the tile's
// accumulators in shared memory), but instead of writing every distance to a block of batch × n
// values in device memory and selecting from it in a second pass, each warp keeps the k best of
// the rows it finalizes (cuda_topk.cuh), the block merges its warps' lists, and a last pass merges
// a query's blocks. On SEC-Edgar-like data (663K index rows) that block is 4.4·10¹¹ values written
// and read again all-vs-all; here it never exists, and the batches are no longer sized by it.
//
// Rows that share no column with the query are decided without their norms where they can be:
// cosine, Russell-Rao, KL divergence and the inner product give them one constant; the other
// metrics a value that never falls as the row's first norm rises (correlation: as its t, up or
// down by the query's sum), so a group of rows whose bound cannot enter a full list is skipped
// whole. The rows left are finalized 32 at a time from a warp's queue (every lane busy on the
// double-precision finalizer).
//
// The neighbours and distances are the dense path's: the same sums (the same atomics) and
// finalizer rounded to the output type, compared as cuda_select.cu compares them (order_key),
// ties to the smaller index.
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "cuda_common.cuh"
#include "cuda_chebyshev_tile.cuh"
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
// x0 rises (docs/knn-overlap.md; correlation's key is another): a group of kFloorRows rows whose
// smallest x0 gives a distance that cannot enter a full list has no disjoint row that can.
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

// Query entries whose place in their column of XT a block keeps from tile to tile (in shared
// memory, after the accumulators): a warp then reads on from there instead of searching the
// column for each tile. A query's entries past these search, as the dense kernel does.
constexpr int kCursors = 256;
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
    int32_t queue[kThreads / 32][64]; // each warp's rows waiting to be finalized (offer_tile)
};
constexpr size_t kTilesSmem = kTileBytes + sizeof(walk_space);
// four blocks a multiprocessor, as the dense kernel (228 KiB, 1 KiB of it reserved a block)
static_assert(4 * (kTilesSmem + 1024) <= 228 * 1024, "the tiles' shared memory takes a fifth of a multiprocessor");

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
    float4 *all = reinterpret_cast<float4 *>(acc); // the whole accumulator space, 16 bytes a store
    for (int v = threadIdx.x; v < kTileBytes / (int)sizeof(float4); v += kThreads)
        all[v] = make_float4(0.f, 0.f, 0.f, 0.f);
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

// The block's k best: the warps' lists through shared memory (`space`, free by now: the block has
// passed its last barrier over it) into warp 0's, written to the block's slots.
template <typename T>
__device__ void write_block_best(warp_best<typename order_key<T>::type> &best, unsigned char *space,
                                 const tiles_out<T> &o) {
    using Key = typename order_key<T>::type;
    constexpr int warps = kThreads / 32;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    Key *keys = reinterpret_cast<Key *>(space);
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

// Chebyshev's values (cuda_chebyshev_tile.cuh) into the warps' lists. A row sharing nothing with
// the query has max(‖x‖∞, ‖q‖∞), rising with x0 = ‖x‖∞: a group whose smallest x0 gives a value
// past a full list's worst has no such row that can enter, and is not read.
template <typename T> struct best_sink {
    using Key = typename order_key<T>::type;
    struct params {
        tiles_out<T> o;
        const double *floors;
    };
    params p;
    warp_best<Key> best;
    double out_floor = INFINITY;
    __device__ best_sink(const tile_args<T> &, params p_, int64_t) : p(p_), best(p_.o.k) {}
    __device__ bool disjoint_out(const tile_args<T> &, int64_t group_row, double qmax) {
        if (!best.full())
            return false;
        const double f = p.floors[group_row / kFloorRows];
        if (f >= out_floor)
            return true;
        if (!best.enters(order_key<T>::of((T)fmax(f, qmax), p.o.largest), group_row)) {
            out_floor = f;
            return true;
        }
        return false;
    }
    __device__ bool cannot_count(T low, int64_t i) const {
        return !best.enters(order_key<T>::of(low, p.o.largest), i);
    }
    __device__ void lanes(const tile_args<T> &, bool has, T value, int64_t i) {
        best.offer_lanes(has, order_key<T>::of(value, p.o.largest), i);
    }
    __device__ void one(const tile_args<T> &, T value, int64_t i) {
        best.insert(order_key<T>::of(value, p.o.largest), i);
    }
    __device__ void finish(unsigned char *space) { write_block_best<T>(best, space, p.o); }
};

// The tile's rows offered to the warp's list (warp w takes steps of 32·R rows w, w + 8, ...). A row
// sharing nothing with the query is decided at once where that is cheap: at the constant, or
// dropped when its group's smallest x0 already gives a distance past the list's worst. The rest
// (the rows that share columns, and disjoint rows of the monotone metrics that might enter) wait
// in the warp's queue and are finalized 32 at a time, every lane busy: finalizing where they lie
// ran the double-precision finalizer (square roots, divisions) for nearly every group, most
// lanes idle (ncu: instruction-bound). A bound is tested as the list tests a pair, with the
// step's first row: (bound, first row) not entering means no row of the step can, in any order
// of offers, as the list only improves.
template <typename T, sr_metric M>
__device__ void offer_tile(const tile_args<T> &a, const acc_t<T, M> *acc, int32_t *queue, int64_t i0, int rows,
                           const double *floors, double qn0, double qn1, typename order_key<T>::type zero_key,
                           bool largest, warp_best<typename order_key<T>::type> &best, double &out_floor) {
    using Acc = acc_t<T, M>;
    using Key = typename order_key<T>::type;
    constexpr int nacc = sr_metric_accumulators(M);
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    int waiting = 0; // queue[0, waiting), warp-uniform
    auto finalize_waiting = [&](int count) {
        const bool has = lane < count;
        const int r = has ? queue[lane] : 0;
        Key key = 0;
        if (has) {
            const int64_t i = i0 + r;
            const Acc x0 = acc[r], x1 = nacc > 1 ? acc[a.tile_rows + r] : Acc(0);
            key = order_key<T>::of((T)sr_metric_finalize(M, (double)x0, (double)x1, qn0, qn1, a.xnorm[2 * i],
                                                         a.xnorm[2 * i + 1], a.d, a.p),
                                   largest);
        }
        best.offer_lanes(has, key, i0 + r);
    };
    // a lane reads R consecutive rows' accumulators in one 16-byte load: a warp takes 32·R rows a step
    constexpr int R = 16 / (int)sizeof(Acc);
    using Vec = typename std::conditional<R == 4, float4, double2>::type;
    for (int r0 = warp * 32 * R; r0 < rows; r0 += kThreads * R) { // warp-uniform
        bool disjoint_out = false; // whether no row of this step that shares nothing can enter
        if (best.full()) { // a bound and the step's first row, against the list's worst (ties by index)
            const int64_t first_row = i0 + r0;
            if constexpr (constant_when_disjoint<M>())
                disjoint_out = !best.enters(zero_key, first_row);
            if constexpr (M == SR_METRIC_CORRELATION)
                disjoint_out = !best.enters(
                    order_key<T>::of((T)correlation_floor(floors + 3 * ((i0 + r0) / kFloorRows), qn0, qn1, a.d),
                                     largest),
                    first_row);
            if constexpr (floor_bounds_disjoint<M>()) {
                const double f = floors[(i0 + r0) / kFloorRows];
                if (f >= out_floor) {
                    disjoint_out = true;
                } else if (!best.enters(order_key<T>::of((T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, f, f, a.d, a.p),
                                                         largest),
                                        first_row)) {
                    // and every later step with a floor as large: its rows come after, the list only improves
                    disjoint_out = true;
                    out_floor = f;
                }
            }
        }
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
                    best.offer_lanes(has && disjoint, zero_key, i0 + r);
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
    const int warp = threadIdx.x / 32;
    const int64_t j = a.q0 + blockIdx.x;
    const int64_t qbegin = a.qptr[j], qend = a.qptr[j + 1];
    const double qn0 = a.qnorm[2 * j], qn1 = a.qnorm[2 * j + 1];
    Key zero_key = 0;
    if constexpr (constant_when_disjoint<M>())
        zero_key = order_key<T>::of((T)sr_metric_finalize(M, 0.0, 0.0, qn0, qn1, 1.0, 1.0, a.d, a.p), o.largest);
    warp_best<Key> best(o.k);
    double out_floor = INFINITY; // a group whose smallest x0 is at least this has no disjoint row that can enter
    const int64_t first = (int64_t)blockIdx.y * tiles_per_block * a.tile_rows;
    const int64_t stop = min(a.nx, first + tiles_per_block * a.tile_rows);
    start_cursors<T>(a, cur, qbegin, qend, first);
    for (int64_t i0 = first; i0 < stop; i0 += a.tile_rows) {
        const int rows = (int)(stop - i0 < a.tile_rows ? stop - i0 : a.tile_rows);
        accumulate_walk<T, M>(a, acc, cur, i0, rows, qbegin, qend);
        offer_tile<T, M>(a, acc, cur.queue[warp], i0, rows, floors, qn0, qn1, zero_key, o.largest, best, out_floor);
        __syncthreads(); // the next tile zeroes the accumulators; at the end, their space is reused
    }
    write_block_best<T>(best, smem_raw, o);
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

// Consecutive tiles a block takes, at least enough that the blocks along y fit the grid (an index
// past 65,535 tiles). One when a query of the batch has entries past the cursors: such a query's
// entries search every tile anyway, and a block of many tiles of it would run long after the rest
// (MovieLens-like rows of 24K entries). Else all of them when the batch's queries alone fill the
// device (a block keeps its cursors across its tiles), or fewer, so that blocks still fill it.
int64_t tiles_per_block(int64_t nq, int64_t tiles, int64_t longest) {
    const int64_t fewest = (tiles + kMaxGridY - 1) / kMaxGridY; // the grid's y holds at most kMaxGridY blocks
    if (tiles_setting() >= 2) // forced (tests: cursors carried across tiles on small inputs)
        return std::max<int64_t>(tiles_setting(), fewest);
    if (longest > kCursors)
        return fewest;
    const int64_t wanted = (int64_t)sm_count() * 32; // blocks: several waves of 4 a multiprocessor
    const int64_t along = std::clamp<int64_t>((wanted + nq - 1) / nq, 1, std::min<int64_t>(tiles, kMaxGridY));
    return std::max<int64_t>((tiles + along - 1) / along, fewest);
}

// The batch's longest query (tiles_per_block's rule).
sr_status longest_query(sr_context_s *ctx, const int64_t *qptr, int64_t q0, int64_t q1, int64_t *most) {
    cudaStream_t stream = stream_of(ctx);
    buffer<unsigned long long> longest(ctx);
    SR_TRY(longest.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(longest.get(), 0, sizeof(unsigned long long), stream));
    longest_row<<<grid_for(q1 - q0), 256, 0, stream>>>(qptr, q0, q1, longest.get());
    SR_CUDA_LAUNCHED();
    unsigned long long m = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&m, longest.get(), sizeof m, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(cudaStreamSynchronize(stream));
    *most = (int64_t)m;
    return SR_SUCCESS;
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
    // candidates of (query, block along y), the groups' smallest x0, then the launch and the merge
    buffer<typename order_key<T>::type> keys(ctx);
    buffer<int64_t> rows(ctx);
    buffer<double> floors(ctx);
    auto run = [&](int64_t ys, bool with_floors, auto launch) -> sr_status {
        SR_TRY(keys.allocate((size_t)(nq * ys * k)));
        SR_TRY(rows.allocate((size_t)(nq * ys * k)));
        o.key = keys.get();
        o.row = rows.get();
        const int64_t groups = (a.nx + kFloorRows - 1) / kFloorRows;
        if (with_floors) {
            SR_TRY(floors.allocate((size_t)groups));
            group_floors<<<grid_for(groups), 256, 0, stream>>>(a.xnorm, a.nx, floors.get());
            SR_CUDA_LAUNCHED();
        } else if (in->metric == SR_METRIC_CORRELATION) {
            SR_TRY(floors.allocate((size_t)(3 * groups)));
            group_spreads<<<grid_for(groups), 256, 0, stream>>>(a.xnorm, a.nx, a.d, floors.get());
            SR_CUDA_LAUNCHED();
        }
        SR_TRY(launch(dim3((unsigned)nq, (unsigned)ys)));
        merge_blocks<T><<<grid_for(nq * 32), 256, 0, stream>>>(o, nq, ys * k, idx, static_cast<T *>(dist->data),
                                                               dist->row_stride, dist->col_stride);
        SR_CUDA_LAUNCHED();
        SR_CUDA_TRY(cudaStreamSynchronize(stream)); // before the candidates go
        return SR_SUCCESS;
    };
    return with_metric(in->metric, [&](auto metric) -> sr_status {
        constexpr sr_metric M = decltype(metric)::value;
        if constexpr (sr_metric_kind_of(M) == SR_MK_MAX) { // a block per (query, tile), tiles strided
            a.tile_rows = chebyshev_tile_rows<T>();
            const int64_t tiles = (a.nx + a.tile_rows - 1) / a.tile_rows;
            return run(std::min<int64_t>(tiles, kMaxGridY), true, [&](dim3 grid) -> sr_status {
                return launch_chebyshev<T, best_sink<T>>(a, {o, floors.get()}, grid, stream);
            });
        } else {
            a.tile_rows = tile_rows_of<T, M>();
            const int64_t tiles = (a.nx + a.tile_rows - 1) / a.tile_rows;
            int64_t most = 0;
            SR_TRY(longest_query(ctx, a.qptr, q0, q1, &most));
            const int64_t per = tiles_per_block(nq, tiles, most);
            return run((tiles + per - 1) / per, floor_bounds_disjoint<M>(), [&](dim3 grid) -> sr_status {
                auto kernel = knn_tiles<T, M>;
                SR_CUDA_TRY(
                    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)kTilesSmem));
                kernel<<<grid, kThreads, kTilesSmem, stream>>>(a, o, floors.get(), per);
                SR_CUDA_LAUNCHED();
                return SR_SUCCESS;
            });
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
    const bool chebyshev = sr_metric_kind_of(in->metric) == SR_MK_MAX; // also walks the rows' magnitude orders
    return tiles_setting() != 0 && k <= kMaxK && in->Q->nrows > 0 && in->XT != nullptr &&
           (!chebyshev || (in->x_mag_col != nullptr && in->q_mag_col != nullptr));
}

extern "C" size_t sr_cuda_knn_tiles_scratch_per_row(const sr_distance_inputs *in, int64_t k) {
    const bool wide = in->Q->type == SR_TYPE_FLOAT64;
    int64_t ys = 1;
    (void)with_metric(in->metric, [&](auto metric) {
        constexpr sr_metric M = decltype(metric)::value;
        int64_t rows = wide ? tile_rows_of<double, M>() : tile_rows_of<float, M>();
        if constexpr (sr_metric_kind_of(M) == SR_MK_MAX)
            rows = wide ? chebyshev_tile_rows<double>() : chebyshev_tile_rows<float>();
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
