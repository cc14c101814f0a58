// k-NN of the dot-product metrics on tensor cores (docs/tensor-cores.md). In a bag of words or a
// ratings matrix a few popular columns carry almost all of an all-vs-all's pair work (Σ over
// columns of the queries' count × the index's count): on NY Times-like data the top 2,048 of 102K
// columns carry 98.9%. Those columns become a dense panel, the index's once a call and each
// batch's queries', multiplied by cuBLAS on tensor cores into a block of batch × n dot products;
// a last pass takes the block a chunk of index rows at a time, sums the other columns' products for
// the chunk in shared memory by the sparse walk of the index's inverted form (as the tiles sum),
// finalizes each value with the metric and keeps each warp's k best (cuda_knn_candidates.cuh;
// pairs that surely cannot enter a full list skip the double-precision finalizer: cuda_knn_bound.cuh).
// (The cold products first went into the block by global atomics: 5.5e10 of them on NY Times-like
// data, most of a 3.4 s all-vs-all on an H200.)
//
// Precision (sr_precision): FP16 operands where every value the metric multiplies lies on a grid
// 2^-e (e the same for the whole matrix: whole counts e = 0, half-star ratings e = 1) with at most
// 2048 steps of it in magnitude, and |q||x|·2^(eq+ex) < 2^24 for every pair (then every partial
// sum is a multiple of 2^-(eq+ex) below 2^24 of them, exact in float32 in any order: the float32
// path's answer bit for bit); otherwise the
// TF32 split product (each operand v = hi + lo, hi rounded to TF32's 10 bits, and
// q·x ≈ hi·hi + hi·lo + lo·hi: float32 accuracy, as Ootomo & Yokota 2022), or one TF32 product
// when asked for.
//
// A cost model picks the panel's columns: a column is dense when its sparse work (its pairs at the
// tiles' measured rate) costs more than its share of the GEMM; the panel pays when its GEMM, the
// block's write and read and the cold columns' sparse work beat the tiles' time for all the work.
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "cuda_blas.cuh"
#include "cuda_common.cuh"
#include "cuda_distance_tile.cuh" // warp_lower_bound
#include "cuda_knn_bound.cuh"
#include "cuda_knn_candidates.cuh"
#include "cuda_knn_levels.cuh"
#include "cuda_knn_table.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "cuda.h"
}

enum panel_mode { kPanelFp16 = 0, kPanelTf32 = 1, kPanelTf32x3 = 2 };

struct sr_cuda_panel {
    sr_context_s *ctx;
    panel_mode mode;
    int64_t columns;       // the panel's width H (a multiple of 64; slots past the hot columns stay 0)
    level_code code;       // T levels a column (cuda_knn_levels.cuh), or 0: the values themselves
    int64_t depth;         // the GEMM's depth: H, or H times the levels' blocks
    int64_t ldx, ldq;      // elements a row of the index's and of the queries' panel
    size_t elt;            // bytes an element
    int32_t *slot_of;      // ncols: a column's place in the panel, -1 for the sparse rest
    size_t slot_bytes;
    void *xpanel;          // index rows × ldx
    size_t xbytes;
    double coverage;       // the share of the pair work in the panel's columns
    // With count or equality levels, or values off a table's classes: the cold walk's copies (cold
    // columns and the hot ones' excess or off-class entries), every column of which is cold to it
    sr_matrix_s *cold_q, *cold_xt;
    // With table levels: the table on the device (code.table), and whether its sums are exact
    __half *table;
    size_t table_bytes;
    bool table_exact;
};

namespace {

using namespace sr_cuda;

// The model's rates (H100, float32 distances): the tiles' pair updates a second (NY Times-like
// cosine: 2.9e12 pair updates in 13.1 s on an H200, scRNA-like 8.2e11 in 5.8 s), the block's
// pairs a second written by the GEMM and read by the selection (8 bytes at ~2.5 TB/s), and the
// tensor cores' multiply-adds a second as cuBLAS reaches them on such shapes.
constexpr double kSparseRate = 1.5e11;
constexpr double kPairRate = 2.5e12 / 8.0;
constexpr double kPlanFloor = 1e-3; // seconds: sparse work a call must possibly hold before the plan looks
double mac_rate(panel_mode mode) { return mode == kPanelFp16 ? 3.0e14 : mode == kPanelTf32 ? 1.5e14 : 5.0e13; }
constexpr int64_t kAlign = 64; // the panel's width: a multiple of the GEMM's K tile
constexpr int kSelThreads = 256;
constexpr int kUnroll = 4;
// Index rows a selection block takes: their cold sums fit its shared memory (32 KiB: 7 blocks a
// multiprocessor), and a batch of ~900 queries of 300K rows makes 33K blocks.
constexpr int kChunk = 8192;
constexpr int kRun = 4;       // chunks a block walks, its cursors kept from one to the next
constexpr int kCursors = 256; // a query's cold entries with a cursor (NY Times-like rows: 233 entries, ~40% cold)
static_assert(kChunk * sizeof(float) >= (kSelThreads / 32) * kMaxK * (sizeof(uint32_t) + sizeof(int64_t)),
              "the block's lists fit where its accumulators were");

const char *mode_name(panel_mode m) { return m == kPanelFp16 ? "FP16" : m == kPanelTf32 ? "TF32" : "3xTF32"; }

// What the panel holds for a stored value: the value, 1 for the set metrics, its square root for
// Hellinger (their dot products are the metrics' accumulators).
template <sr_metric_kind K> __device__ inline double panel_value(double v) {
    if constexpr (K == SR_MK_PAIR)
        return v != 0.0 ? 1.0 : 0.0;
    else if constexpr (K == SR_MK_SQRT)
        return sqrt(v);
    else
        return v;
}

// v rounded to TF32's 10 fraction bits (to nearest, ties away): exact as a TF32 operand.
__device__ inline float tf32_high(float v) { return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xffffe000u); }

// The grid a matrix's panel values lie on: grid[0] |= 1 where a value's panel form is not a
// float32 (a square root) or not finite; grid[1] = the most fraction bits a value needs (e: every
// value is a multiple of 2^-e); grid[2] = the largest magnitude's bits (non-negative floats order
// as their bits).
template <sr_metric_kind K> __global__ void check_grid(const float *val, int64_t nnz, unsigned *grid) {
    bool bad = false;
    unsigned bits_needed = 0, top = 0;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x) {
        const double t = panel_value<K>((double)val[e]);
        const float f = (float)t;
        if ((double)f != t || !isfinite(f)) {
            bad = true;
            continue;
        }
        const unsigned u = __float_as_uint(fabsf(f)), field = u >> 23;
        if (u == 0)
            continue;
        // |f| = significand · 2^(exponent), its lowest set bit at 2^(exponent + trailing zeros)
        const unsigned significand = field ? (u & 0x7fffffu) | 0x800000u : u;
        const int exponent = field ? (int)field - 150 : -149;
        const int lowest = exponent + __ffs((int)significand) - 1;
        bits_needed = max(bits_needed, (unsigned)max(0, -lowest));
        top = max(top, u);
    }
    for (int o = 16; o > 0; o /= 2) {
        bad |= __shfl_xor_sync(~0u, bad, o);
        bits_needed = max(bits_needed, __shfl_xor_sync(~0u, bits_needed, o));
        top = max(top, __shfl_xor_sync(~0u, top, o));
    }
    if ((threadIdx.x & 31) == 0) {
        if (bad)
            atomicOr(&grid[0], 1u);
        atomicMax(&grid[1], bits_needed);
        atomicMax(&grid[2], top);
    }
}

// *top = the largest first norm (non-negative doubles order as their bits).
__global__ void max_norm(const double *norms, int64_t rows, unsigned long long *top) {
    unsigned long long mine = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < rows; i += (int64_t)gridDim.x * blockDim.x)
        mine = max(mine, (unsigned long long)__double_as_longlong(fmax(norms[2 * i], 0.0)));
    for (int o = 16; o > 0; o /= 2)
        mine = max(mine, __shfl_xor_sync(~0u, mine, o));
    if ((threadIdx.x & 31) == 0 && mine)
        atomicMax(top, mine);
}

__global__ void count_columns(const int32_t *colind, int64_t nnz, int32_t *counts) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&counts[colind[e]], 1);
}

// Rows [r0, r0 + rows) of a matrix into a zeroed panel, a warp a row. The index's panel holds
// [hi | lo] for the split product, the queries' [hi | hi | lo]: one GEMM of depth 2H gives
// hi·hi + lo·hi (index lo), a second of depth H adds hi·lo (query lo).
template <sr_metric_kind K>
__global__ void fill_panel(const int64_t *rowptr, const int32_t *colind, const float *val, int64_t r0, int64_t rows,
                           const int32_t *slot_of, int64_t H, panel_mode mode, bool query, void *panel, int64_t ld) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < rows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        for (int64_t e = rowptr[r0 + r] + lane; e < rowptr[r0 + r + 1]; e += 32) {
            const int32_t s = slot_of[colind[e]];
            if (s < 0)
                continue;
            const float t = (float)panel_value<K>((double)val[e]);
            if (mode == kPanelFp16) {
                static_cast<__half *>(panel)[r * ld + s] = __float2half_rn(t);
            } else if (mode == kPanelTf32) {
                static_cast<float *>(panel)[r * ld + s] = t;
            } else {
                float *p = static_cast<float *>(panel) + r * ld;
                const float hi = tf32_high(t), lo = t - hi;
                p[s] = hi;
                p[H + s] = query ? hi : lo;
                if (query)
                    p[2 * H + s] = lo;
            }
        }
    }
}

// What the selection reads besides the block: the query rows (their cold entries) and the index's
// inverted form.
struct cold_args {
    const int64_t *qptr;
    const int32_t *qcol;
    const float *qval;
    int64_t q0;
    const int32_t *slot_of; // null where the walk reads copies, whose every column is cold
    const int64_t *xtptr;
    const int32_t *xtrow;
    const float *xtval;
    __device__ bool cold(int32_t c) const { return slot_of == nullptr || slot_of[c] < 0; }
};

// One cold term as the tiles add it: the metric's double term rounded to float.
template <sr_metric M> __device__ __forceinline__ float cold_term(double q, float x, double p) {
    double a0 = 0.0, a1 = 0.0;
    sr_metric_intersect(M, q, (double)x, p, &a0, &a1);
    return (float)a0;
}

// The cold terms of one query entry for index rows [lo_row, hi_row) into the chunk's sums (a warp,
// from *at in the entry's column of the inverted form, whose rows ascend; *at moves past them).
// A round's rows and values are requested together: one wait a round, not two.
template <sr_metric M>
__device__ inline void add_cold_run(const cold_args &cold, int64_t *at, int64_t stop, double q, double p,
                                    int64_t lo_row, int64_t hi_row, float *acc, int lane) {
    int64_t t = *at;
    while (t < stop) {
        const int64_t tt = t + lane;
        const int32_t row = tt < stop ? cold.xtrow[tt] : INT32_MAX;
        const float x = tt < stop ? cold.xtval[tt] : 0.0f;
        const bool in = row < hi_row;
        if (in)
            atomicAdd(&acc[row - lo_row], cold_term<M>(q, x, p));
        const int taken = __popc(__ballot_sync(~0u, in)); // a prefix: the rows ascend
        t += taken;
        if (taken < 32)
            break;
    }
    *at = t;
}

// The chunk's cold terms of the block's cold entries (cursors cur_at .. cur_end, values cur_q, n
// of them), kColdBatch entries a warp at once: their first rounds' loads are in flight together,
// so a warp waits once for its entries' short runs (a cold column holds a few rows of a chunk),
// not once an entry; a run longer than a round goes on alone.
constexpr int kColdBatch = 4;
template <sr_metric M>
__device__ inline void add_cold_chunk(const cold_args &cold, int64_t *cur_at, const int64_t *cur_end,
                                      const float *cur_q, int n, double p, int64_t lo_row, int64_t hi_row,
                                      float *acc, int lane, int warp, int warps) {
    for (int j0 = warp * kColdBatch; j0 < n; j0 += warps * kColdBatch) {
        int64_t at[kColdBatch], stop[kColdBatch];
        int32_t row[kColdBatch];
        float x[kColdBatch];
#pragma unroll
        for (int g = 0; g < kColdBatch; g++) {
            const bool valid = j0 + g < n;
            at[g] = valid ? cur_at[j0 + g] : 0;
            stop[g] = valid ? cur_end[j0 + g] : 0;
            const int64_t tt = at[g] + lane;
            row[g] = tt < stop[g] ? cold.xtrow[tt] : INT32_MAX;
            x[g] = tt < stop[g] ? cold.xtval[tt] : 0.0f;
        }
        __syncwarp(); // every lane has read the cursors before lane 0 moves them (racecheck: a
                      // write after reads ordered only by the ballots, not a warp barrier)
#pragma unroll
        for (int g = 0; g < kColdBatch; g++) {
            if (j0 + g >= n)
                break;
            const double q = cur_q[j0 + g];
            const bool in = row[g] < hi_row;
            if (in)
                atomicAdd(&acc[row[g] - lo_row], cold_term<M>(q, x[g], p));
            const int taken = __popc(__ballot_sync(~0u, in)); // a prefix: the rows ascend
            at[g] += taken;
            if (taken == 32)
                add_cold_run<M>(cold, &at[g], stop[g], q, p, lo_row, hi_row, acc, lane);
            if (lane == 0)
                cur_at[j0 + g] = at[g];
        }
    }
}

// Where each query's long entries begin: past its first kCursors cold entries (those whose column
// is not in the panel; the selection walks them with cursors), or at its end; *most = the most
// entries a query has from there on (add_long_rows's grid). A warp a query, 32 entries at a time.
__global__ void split_cold_entries(cold_args cold, int64_t nq, int64_t *long_from, unsigned long long *most) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < nq;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        const int64_t e0 = cold.qptr[cold.q0 + r], e1 = cold.qptr[cold.q0 + r + 1];
        int64_t from = e1;
        int seen = 0;
        for (int64_t b = e0; b < e1; b += 32) {
            const int64_t e = b + lane;
            unsigned m = __ballot_sync(~0u, e < e1 && cold.cold(cold.qcol[e]));
            if (seen + __popc(m) > kCursors) { // the first long entry is in these 32
                for (int keep = kCursors - seen; keep > 0; keep--)
                    m &= m - 1;
                from = b + __ffs(m) - 1;
                break;
            }
            seen += __popc(m);
        }
        if (lane == 0) {
            long_from[r] = from;
            if (from < e1)
                atomicMax(most, (unsigned long long)(e1 - from));
        }
    }
}

// The cold terms of a query's long entries (from long_from: past its first kCursors cold ones)
// straight into its row of the block, a warp an entry walking its whole column of the inverted
// form, four rounds of loads in flight, the blocks along y sharing a query's entries. (The
// selection once searched their columns each chunk in the query's own blocks: on MovieLens-like
// data, users of up to 24,000 ratings, every batch then waited on its longest row.)
constexpr int kLongSplitMax = 64;  // blocks along y: enough warps for the longest query, not more
constexpr int kLongPerWarp = 8;    // entries a warp at least
template <sr_metric M>
__global__ void __launch_bounds__(kSelThreads)
    add_long_rows(float *C, int64_t n, double p, cold_args cold, const int64_t *long_from) {
    const int64_t r = blockIdx.x;
    const int64_t e1 = cold.qptr[cold.q0 + r + 1];
    const int lane = threadIdx.x & 31, warps = kSelThreads / 32;
    float *row = C + r * n;
    for (int64_t e = long_from[r] + blockIdx.y * warps + threadIdx.x / 32; e < e1;
         e += (int64_t)gridDim.y * warps) {
        const int32_t c = cold.qcol[e];
        if (!cold.cold(c))
            continue;
        const double q = cold.qval[e];
        const int64_t t1 = cold.xtptr[c + 1];
        for (int64_t t = cold.xtptr[c] + lane; t < t1; t += 4 * 32) {
            int32_t x_row[4];
            float x[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t tt = t + u * 32;
                x_row[u] = tt < t1 ? cold.xtrow[tt] : -1;
                x[u] = tt < t1 ? cold.xtval[tt] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < 4; u++)
                if (x_row[u] >= 0)
                    atomicAdd(&row[x_row[u]], cold_term<M>(q, x[u], p));
        }
    }
}

// Block (query r of the batch, run y of kRun chunks of kChunk index rows), chunk by chunk: the
// query's cold terms for the chunk's rows summed in shared memory (a warp an entry walking its
// column of the inverted form from a cursor kept from chunk to chunk, found once a run; the same
// double term rounded to float as the tiles add), added to the block's dot products, each
// finalized with the metric as the tiles finalize theirs into the warps' k best; then the block's
// k best to its slots. A query's cold entries past its first kCursors are in the block already
// (add_long_rows).
template <sr_metric M>
__global__ void __launch_bounds__(kSelThreads)
    select_panel(const float *C, int64_t n, const double *qnorm, const double *xnorm, double d, double p,
                 cold_args cold, const int64_t *long_from, tiles_out<float> o, bool pretest) {
    __shared__ __align__(16) float acc[kChunk];
    __shared__ int64_t cur_at[kCursors], cur_end[kCursors]; // the cold entries' cursors, n_cold of them
    __shared__ float cur_q[kCursors];
    __shared__ int n_cold;
    const int64_t r = blockIdx.x, run_begin = (int64_t)blockIdx.y * kRun * kChunk;
    const int64_t run_end = run_begin + kRun * kChunk < n ? run_begin + kRun * kChunk : n;
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kSelThreads / 32;
    const int64_t e0 = cold.qptr[cold.q0 + r];
    const int64_t kept = long_from ? long_from[r] - e0 : 0; // the entries before the long ones
    if (threadIdx.x == 0)
        n_cold = 0;
    __syncthreads();
    for (int64_t b = (int64_t)warp * 32; b < kept; b += warps * 32) { // the cold entries' cursors at the run's first row
        const int64_t j = b + lane;
        const int32_t c = j < kept ? cold.qcol[e0 + j] : 0;
        const float qv = j < kept ? cold.qval[e0 + j] : 0.0f;
        unsigned m = __ballot_sync(~0u, j < kept && cold.cold(c));
        while (m) { // at most kCursors in all (split_cold_entries)
            const int src = __ffs(m) - 1;
            m &= m - 1;
            const int32_t cc = __shfl_sync(~0u, c, src);
            const float q = __shfl_sync(~0u, qv, src);
            const int64_t lo = warp_lower_bound(cold.xtrow, cold.xtptr[cc], cold.xtptr[cc + 1], run_begin, lane);
            if (lane == 0) {
                const int slot = atomicAdd(&n_cold, 1);
                cur_at[slot] = lo;
                cur_end[slot] = cold.xtptr[cc + 1];
                cur_q[slot] = q;
            }
        }
    }
    const float *row = C + r * n;
    const double qn0 = qnorm[2 * r], qn1 = qnorm[2 * r + 1];
    warp_best<uint32_t> best(o.k);
    const distance_floor<M> bound(qn0, qn1, d); // pairs surely past a full list skip the finalizer
    for (int64_t begin = run_begin; begin < run_end; begin += kChunk) {
        const int64_t end = begin + kChunk < run_end ? begin + kChunk : run_end;
        for (int i = threadIdx.x; i < kChunk; i += kSelThreads)
            acc[i] = 0.0f;
        __syncthreads(); // the sums zeroed (and, the first time, the cursors set)
        add_cold_chunk<M>(cold, cur_at, cur_end, cur_q, n_cold, p, begin, end, acc, lane, warp, warps);
        __syncthreads();
        for (int64_t i0 = begin + warp * 32 * kUnroll; i0 < end; i0 += kSelThreads * kUnroll) {
            float dot[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; u++) { // every load issued before any is used
                const int64_t i = i0 + u * 32 + lane;
                dot[u] = i < end ? row[i] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < kUnroll; u++) {
                const int64_t i = i0 + u * 32 + lane;
                const bool has = i < end;
                const float sum = has ? dot[u] + acc[i - begin] : 0.0f;
                const double x0 = has ? xnorm[2 * i] : 0.0, x1 = has ? xnorm[2 * i + 1] : 0.0;
                const bool may_enter =
                    has && !(pretest && best.full() && bound.past(sum, x0, x1, order_key<float>::value(best.wk, o.largest)));
                const float v = may_enter ? (float)sr_metric_finalize(M, (double)sum, 0.0, qn0, qn1, x0, x1, d, p) : 0.0f;
                best.offer_lanes(may_enter, order_key<float>::of(v, o.largest), i);
            }
        }
        __syncthreads(); // every warp is done with the sums before they are zeroed or reused
    }
    write_block_best<float, kSelThreads>(best, reinterpret_cast<unsigned char *>(acc), o);
}

// f(std::integral_constant<sr_metric, M>{}) for the panel's metrics.
template <typename F> sr_status with_panel_metric(sr_metric m, F &&f) {
    switch (m) {
    case SR_METRIC_L2: return f(std::integral_constant<sr_metric, SR_METRIC_L2>{});
    case SR_METRIC_SQEUCLIDEAN: return f(std::integral_constant<sr_metric, SR_METRIC_SQEUCLIDEAN>{});
    case SR_METRIC_COSINE: return f(std::integral_constant<sr_metric, SR_METRIC_COSINE>{});
    case SR_METRIC_CORRELATION: return f(std::integral_constant<sr_metric, SR_METRIC_CORRELATION>{});
    case SR_METRIC_INNER_PRODUCT: return f(std::integral_constant<sr_metric, SR_METRIC_INNER_PRODUCT>{});
    case SR_METRIC_JACCARD: return f(std::integral_constant<sr_metric, SR_METRIC_JACCARD>{});
    case SR_METRIC_DICE: return f(std::integral_constant<sr_metric, SR_METRIC_DICE>{});
    case SR_METRIC_RUSSELL_RAO: return f(std::integral_constant<sr_metric, SR_METRIC_RUSSELL_RAO>{});
    case SR_METRIC_HELLINGER: return f(std::integral_constant<sr_metric, SR_METRIC_HELLINGER>{});
    case SR_METRIC_L1: return f(std::integral_constant<sr_metric, SR_METRIC_L1>{});
    case SR_METRIC_BRAY_CURTIS: return f(std::integral_constant<sr_metric, SR_METRIC_BRAY_CURTIS>{});
    case SR_METRIC_HAMMING: return f(std::integral_constant<sr_metric, SR_METRIC_HAMMING>{});
    case SR_METRIC_CANBERRA: return f(std::integral_constant<sr_metric, SR_METRIC_CANBERRA>{});
    case SR_METRIC_MINKOWSKI: return f(std::integral_constant<sr_metric, SR_METRIC_MINKOWSKI>{});
    case SR_METRIC_JENSEN_SHANNON: return f(std::integral_constant<sr_metric, SR_METRIC_JENSEN_SHANNON>{});
    case SR_METRIC_KL_DIVERGENCE: return f(std::integral_constant<sr_metric, SR_METRIC_KL_DIVERGENCE>{});
    case SR_METRIC_L2_UNEXPANDED: return f(std::integral_constant<sr_metric, SR_METRIC_L2_UNEXPANDED>{});
    case SR_METRIC_SQEUCLIDEAN_UNEXPANDED:
        return f(std::integral_constant<sr_metric, SR_METRIC_SQEUCLIDEAN_UNEXPANDED>{});
    default: return sr_error(SR_ERROR_INTERNAL, "knn panel: metric %d has no dot-product form", (int)m);
    }
}

// f(std::integral_constant<sr_metric_kind, K>{}) for the metric's panel value (panel_value).
template <typename F> void with_value_kind(sr_metric m, F &&f) {
    const sr_metric_kind kind = sr_metric_kind_of(m);
    if (kind == SR_MK_PAIR)
        f(std::integral_constant<sr_metric_kind, SR_MK_PAIR>{});
    else if (kind == SR_MK_SQRT)
        f(std::integral_constant<sr_metric_kind, SR_MK_SQRT>{});
    else
        f(std::integral_constant<sr_metric_kind, SR_MK_PRODUCT>{});
}

// Manhattan and Bray-Curtis take the panel as count levels, Hamming as equality levels, where the
// values are counts.
bool level_metric(sr_metric m) {
    return m == SR_METRIC_L1 || m == SR_METRIC_BRAY_CURTIS || m == SR_METRIC_HAMMING;
}

bool panel_metric(sr_metric m) {
    const sr_metric_kind kind = sr_metric_kind_of(m);
    return kind == SR_MK_PRODUCT || kind == SR_MK_PAIR || kind == SR_MK_SQRT || level_metric(m) || table_metric(m);
}

// Each column's entries in M, on the host (from the inverted form's row pointers when given).
sr_status column_counts(const sr_matrix_s *M, const sr_matrix_s *MT, std::vector<double> &out) {
    sr_context_s *ctx = M->ctx;
    const int64_t ncols = M->ncols;
    out.assign((size_t)ncols, 0.0);
    if (MT) {
        std::vector<int64_t> ptr((size_t)ncols + 1);
        SR_TRY(sr_mem_copy(ctx, ptr.data(), SR_HOST, MT->rowptr, SR_DEVICE, ptr.size() * sizeof(int64_t)));
        for (int64_t c = 0; c < ncols; c++)
            out[(size_t)c] = (double)(ptr[(size_t)c + 1] - ptr[(size_t)c]);
        return SR_SUCCESS;
    }
    buffer<int32_t> counts(ctx);
    SR_TRY(counts.allocate((size_t)ncols));
    SR_CUDA_TRY(cudaMemsetAsync(counts.get(), 0, (size_t)ncols * sizeof(int32_t), stream_of(ctx)));
    if (M->nnz > 0) {
        count_columns<<<grid_for(M->nnz), 256, 0, stream_of(ctx)>>>(M->colind, M->nnz, counts.get());
        SR_CUDA_LAUNCHED();
    }
    std::vector<int32_t> host((size_t)ncols);
    SR_TRY(sr_mem_copy(ctx, host.data(), SR_HOST, counts.get(), SR_DEVICE, host.size() * sizeof(int32_t)));
    for (int64_t c = 0; c < ncols; c++)
        out[(size_t)c] = (double)host[(size_t)c];
    return SR_SUCCESS;
}

// The fraction bits e of the grid M's panel values lie on (-1: none, or more steps of it than
// FP16 holds exactly: 2048, and no step below FP16's smallest, 2^-24), and the largest row norm;
// *any_bits (when asked): e however large the values (-1: none).
sr_status grid_and_norm(const sr_matrix_s *M, sr_metric metric, const double *norms, int *grid_bits,
                        double *top_norm, int *any_bits = nullptr) {
    sr_context_s *ctx = M->ctx;
    buffer<unsigned long long> cells(ctx); // [0..1]: the grid (three unsigned), [2]: the norm's bits
    SR_TRY(cells.allocate(3));
    SR_CUDA_TRY(cudaMemsetAsync(cells.get(), 0, 3 * sizeof(unsigned long long), stream_of(ctx)));
    unsigned *grid = reinterpret_cast<unsigned *>(cells.get());
    const float *val = static_cast<const float *>(M->values);
    if (M->nnz > 0) {
        with_value_kind(metric, [&](auto kind) {
            check_grid<decltype(kind)::value><<<grid_for(M->nnz), 256, 0, stream_of(ctx)>>>(val, M->nnz, grid);
        });
        SR_CUDA_LAUNCHED();
    }
    if (M->nrows > 0) {
        max_norm<<<grid_for(M->nrows), 256, 0, stream_of(ctx)>>>(norms, M->nrows, cells.get() + 2);
        SR_CUDA_LAUNCHED();
    }
    unsigned long long host[3];
    SR_TRY(sr_mem_copy(ctx, host, SR_HOST, cells.get(), SR_DEVICE, sizeof host));
    unsigned g[4];
    memcpy(g, host, sizeof g);
    float top_value;
    memcpy(&top_value, &g[2], sizeof top_value);
    const int bits = (int)g[1];
    *grid_bits = g[0] == 0 && bits <= 24 && std::ldexp((double)top_value, bits) <= 2048.0 ? bits : -1;
    if (any_bits)
        *any_bits = g[0] == 0 && bits <= 24 ? bits : -1;
    double top;
    memcpy(&top, &host[2], sizeof top);
    *top_norm = top;
    return SR_SUCCESS;
}

// e of the grid 2^-e (e <= 4) both matrices' values lie on, or -1 (finer, or not finite): the levels'
// and the value classes' steps; and the queries' and the index's largest first row norms.
sr_status value_grid(const sr_distance_inputs *in, int *e, double *qtop, double *xtop) {
    constexpr int kFinestGrid = 4; // sixteenths: finer values would take too many levels anyway
    int qbits = -1, xbits = -1, unused = 0;
    SR_TRY(grid_and_norm(in->X, in->metric, in->xnorm, &unused, xtop, &xbits));
    if (in->Q == in->X) {
        qbits = xbits;
        *qtop = *xtop;
    } else {
        SR_TRY(grid_and_norm(in->Q, in->metric, in->qnorm, &unused, qtop, &qbits));
    }
    *e = qbits < 0 || xbits < 0 || std::max(qbits, xbits) > kFinestGrid ? -1 : std::max(qbits, xbits);
    return SR_SUCCESS;
}

// The panel's precision for "exact": FP16 where it is exact (see the top of the file), else the split.
sr_status choose_exact_mode(const sr_distance_inputs *in, panel_mode *mode) {
    int qbits = 0, xbits = 0;
    double qtop = 0.0, xtop = 0.0;
    SR_TRY(grid_and_norm(in->X, in->metric, in->xnorm, &xbits, &xtop));
    if (in->Q == in->X) {
        qbits = xbits;
        qtop = xtop;
    } else {
        SR_TRY(grid_and_norm(in->Q, in->metric, in->qnorm, &qbits, &qtop));
    }
    // |Σ partial q·x| <= Σ |q||x| <= |q||x| (Cauchy-Schwarz): every partial sum is a multiple of
    // 2^-(qbits + xbits) below 2^24 of them
    const bool exact = qbits >= 0 && xbits >= 0 &&
                       std::ldexp(std::sqrt(qtop) * std::sqrt(xtop), qbits + xbits) < 16777216.0;
    *mode = exact ? kPanelFp16 : kPanelTf32x3;
    return SR_SUCCESS;
}

void describe(const sr_cuda_panel *pl, int64_t ncols) {
    if (pl->code.kind == kTableLevels)
        sr_set_method("knn: tensor-core panel of %lld of %lld columns (%.1f%% of the pair work), %d value classes, "
                      "FP16 table%s",
                      (long long)pl->columns, (long long)ncols, 100.0 * pl->coverage, pl->code.levels,
                      pl->table_exact ? " (exact)" : " (float32 accuracy)");
    else if (pl->code.kind != kNoLevels)
        sr_set_method("knn: tensor-core panel of %lld of %lld columns (%.1f%% of the pair work), %d count levels%s, "
                      "FP16 (exact)",
                      (long long)pl->columns, (long long)ncols, 100.0 * pl->coverage, pl->code.levels,
                      pl->code.equality() ? " (equality)" : "");
    else
        sr_set_method("knn: tensor-core panel of %lld of %lld columns (%.1f%% of the pair work), %s%s",
                      (long long)pl->columns, (long long)ncols, 100.0 * pl->coverage, mode_name(pl->mode),
                      pl->mode == kPanelFp16 ? " (exact)" : "");
}

// Rows [r0, r0 + rows) of M into `panel` (zeroed first): the index's form or the queries'.
sr_status fill_rows(const sr_cuda_panel *pl, sr_metric metric, const sr_matrix_s *M, int64_t r0, int64_t rows,
                    bool query, void *panel) {
    const int64_t ld = query ? pl->ldq : pl->ldx;
    cudaStream_t stream = stream_of(pl->ctx);
    SR_CUDA_TRY(cudaMemsetAsync(panel, 0, (size_t)rows * (size_t)ld * pl->elt, stream));
    if (rows == 0)
        return SR_SUCCESS;
    const float *val = static_cast<const float *>(M->values);
    if (pl->code.kind == kTableLevels)
        fill_table<<<grid_for(rows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, r0, rows, pl->slot_of,
                                                            pl->columns, pl->code, query,
                                                            static_cast<__half *>(panel), ld);
    else if (pl->code.kind != kNoLevels)
        fill_levels<<<grid_for(rows * 32), 256, 0, stream>>>(M->rowptr, M->colind, val, r0, rows, pl->slot_of,
                                                             pl->columns, pl->code, query,
                                                             static_cast<__half *>(panel), ld);
    else
        with_value_kind(metric, [&](auto kind) {
            fill_panel<decltype(kind)::value><<<grid_for(rows * 32), 256, 0, stream>>>(
                M->rowptr, M->colind, val, r0, rows, pl->slot_of, pl->columns, pl->mode, query, panel, ld);
        });
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

sr_status build_index_panel(sr_cuda_panel *pl, const sr_distance_inputs *in) {
    SR_TRY(sr_mem_alloc(pl->ctx, SR_DEVICE, pl->xbytes, &pl->xpanel));
    return fill_rows(pl, in->metric, in->X, 0, in->X->nrows, false, pl->xpanel);
}

// The columns by decreasing pair work (queries' count × index's count), and the panel's width:
// the columns whose sparse work costs more than their GEMM share, rounded up to the alignment,
// within the memory budget (the index's panel at most half the workspace). 0: no panel.
// How many panel columns (a multiple of kAlign) of elt_per_column bytes an index row fit in half the
// workspace, with n index rows.
int64_t columns_that_fit(size_t budget, double n, size_t elt_per_column) {
    return (int64_t)(budget / 2 / ((size_t)std::max(n, 1.0) * elt_per_column)) / kAlign * kAlign;
}

int64_t choose_columns(const std::vector<double> &work, double m, double n, panel_mode mode, int depth, size_t budget,
                       size_t elt_per_column, std::vector<int32_t> &order, double *hot_work, double *all_work) {
    const double rate = mac_rate(mode) / depth, threshold = m * n * kSparseRate / rate;
    double total = 0.0;
    order.clear();
    for (size_t c = 0; c < work.size(); c++) {
        total += work[c];
        if (work[c] > threshold / 64.0) // the candidates: the width rounds up into these
            order.push_back((int32_t)c);
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return work[(size_t)a] > work[(size_t)b] || (work[(size_t)a] == work[(size_t)b] && a < b);
    });
    int64_t hot = 0;
    while (hot < (int64_t)order.size() && work[(size_t)order[(size_t)hot]] > threshold)
        hot++;
    const int64_t forced = sr_setting("SPARSERING_KNN_PANEL_COLUMNS", 0);
    if (forced > 0)
        hot = forced;
    int64_t width = (hot + kAlign - 1) / kAlign * kAlign;
    width = std::min(width, columns_that_fit(budget, n, elt_per_column));
    if (forced <= 0)
        width = std::min(width, ((int64_t)work.size() + kAlign - 1) / kAlign * kAlign);
    double in_panel = 0.0;
    for (int64_t s = 0; s < width && s < (int64_t)order.size(); s++)
        in_panel += work[(size_t)order[(size_t)s]];
    *hot_work = in_panel;
    *all_work = total;
    return width > 0 ? width : 0;
}

struct panel_choice {
    int64_t width = 0;          // the panel's columns
    std::vector<int32_t> order; // the columns by decreasing pair work
    double hot = 0.0, total = 0.0; // the pair work in the panel, and all of it
    double seconds = 0.0;          // the model's time with the panel
};

// Each of ncols columns' place in the choice's panel, -1 for the sparse rest.
std::vector<int32_t> slot_map(const panel_choice &choice, int64_t ncols) {
    std::vector<int32_t> slot_of((size_t)ncols, -1);
    for (int64_t s = 0; s < choice.width && s < (int64_t)choice.order.size(); s++)
        slot_of[(size_t)choice.order[(size_t)s]] = (int32_t)s;
    return slot_of;
}

// The panel's columns for `mode` and whether it pays: its GEMM, the block's write and read and
// the cold columns' sparse work under 3/4 of the sparse path's time for all the work (or forced).
// `depth`: the GEMM's depth a panel column (levels: their blocks), `extra`: sparse work besides the
// cold columns' (the levels' excess).
bool choose_panel(const std::vector<double> &work, double m, double n, panel_mode mode, int depth, size_t budget,
                  bool forced, panel_choice *c, double extra = 0.0) {
    const size_t elt_per_column =
        (mode == kPanelFp16 ? sizeof(__half) : sizeof(float)) * (mode == kPanelTf32x3 ? 2 : 1) * (size_t)depth;
    c->width = choose_columns(work, m, n, mode, depth, budget, elt_per_column, c->order, &c->hot, &c->total);
    if (c->width == 0 || c->total <= 0.0)
        return false;
    const double t_panel = m * n * (1.0 / kPairRate + (double)c->width * depth / mac_rate(mode)) +
                           (c->total - c->hot + extra) / kSparseRate;
    const double t_sparse = c->total / kSparseRate;
    c->seconds = t_panel;
    return forced || t_panel < 0.75 * t_sparse;
}

// Whether the selection pre-tests pairs before the finalizer (cuda_knn_bound.cuh): the metric's
// default, or SPARSERING_KNN_PRETEST=0 / 1 for every metric (A/B comparisons).
template <sr_metric M> bool pretest_for() {
    const int forced = sr_setting("SPARSERING_KNN_PRETEST", -1);
    return forced == 0 ? false : forced == 1 ? true : distance_floor<M>::kPays;
}

// A table's plan (cuda_knn_table.cuh): its parts, whether its sums are exact, and the hot columns'
// flags (kQueriesOff, kIndexOff), any_off where some are set.
struct table_plan {
    std::vector<__half> parts;
    bool exact = false;
    std::vector<unsigned char> flags;
    bool any_off = false;
};

// The panel of `choice`'s columns for `mode` (levels T, or 0), its index part filled; with levels
// (or values off a table's classes), the cold walk's copies too.
sr_status build_plan(const sr_distance_inputs *in, panel_mode mode, const panel_choice &choice, level_code code,
                     sr_cuda_panel **out, const table_plan *table = nullptr) {
    sr_context_s *ctx = in->Q->ctx;
    const sr_matrix_s *X = in->X;
    const int64_t width = choice.width;
    const size_t elt = mode == kPanelFp16 ? sizeof(__half) : sizeof(float);
    auto *pl = new (std::nothrow) sr_cuda_panel{};
    if (!pl)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "knn panel: out of host memory");
    pl->ctx = ctx;
    pl->mode = mode;
    pl->columns = width;
    pl->code = code;
    pl->table_exact = table && table->exact;
    const bool levels = code.kind != kNoLevels;
    pl->depth = width * code.blocks();
    pl->elt = elt;
    pl->ldx = levels ? pl->depth : width * (mode == kPanelTf32x3 ? 2 : 1);
    pl->ldq = levels ? pl->depth : width * (mode == kPanelTf32x3 ? 3 : 1);
    pl->coverage = choice.hot / choice.total;
    pl->xbytes = (size_t)X->nrows * (size_t)pl->ldx * elt;
    const std::vector<int32_t> slot_of = slot_map(choice, X->ncols);
    pl->slot_bytes = slot_of.size() * sizeof(int32_t);
    sr_status s = sr_mem_alloc(ctx, SR_DEVICE, pl->slot_bytes, (void **)&pl->slot_of);
    if (s == SR_SUCCESS)
        s = sr_mem_copy(ctx, pl->slot_of, SR_DEVICE, slot_of.data(), SR_HOST, pl->slot_bytes);
    if (s == SR_SUCCESS && table) { // before the index's panel, which reads it
        pl->table_bytes = table->parts.size() * sizeof(__half);
        s = sr_mem_alloc(ctx, SR_DEVICE, pl->table_bytes, (void **)&pl->table);
        if (s == SR_SUCCESS)
            s = sr_mem_copy(ctx, pl->table, SR_DEVICE, table->parts.data(), SR_HOST, pl->table_bytes);
        pl->code.table = pl->table;
    }
    if (s == SR_SUCCESS)
        s = build_index_panel(pl, in);
    const bool copies = code.walks_copies() || (table && table->any_off);
    if (s == SR_SUCCESS && code.walks_copies()) {
        s = cold_copy(in->Q, true, pl->slot_of, code, &pl->cold_q);
        if (s == SR_SUCCESS)
            s = cold_copy(in->XT, false, pl->slot_of, code, &pl->cold_xt);
    } else if (s == SR_SUCCESS && copies) {
        buffer<unsigned char> flags(ctx);
        s = flags.allocate(table->flags.size());
        if (s == SR_SUCCESS)
            s = sr_mem_copy(ctx, flags.get(), SR_DEVICE, table->flags.data(), SR_HOST, table->flags.size());
        const table_share share{pl->slot_of, flags.get(), pl->code, (int32_t)X->ncols};
        if (s == SR_SUCCESS)
            s = table_copy<false>(in->Q, share, &pl->cold_q);
        if (s == SR_SUCCESS)
            s = table_copy<true>(in->XT, share, &pl->cold_xt);
    }
    if (s != SR_SUCCESS) {
        sr_cuda_knn_panel_free(pl);
        return s;
    }
    describe(pl, X->ncols);
    *out = pl;
    return SR_SUCCESS;
}

// Whether every value of M is a count of steps 1/scale (a non-negative whole number of them).
sr_status all_counts(const sr_matrix_s *M, float scale, bool *counts) {
    sr_context_s *ctx = M->ctx;
    buffer<unsigned> flag(ctx);
    SR_TRY(flag.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(flag.get(), 0, sizeof(unsigned), stream_of(ctx)));
    if (M->nnz > 0) {
        check_counts<<<grid_for(M->nnz), 256, 0, stream_of(ctx)>>>(static_cast<const float *>(M->values), M->nnz,
                                                                    scale, flag.get());
        SR_CUDA_LAUNCHED();
    }
    unsigned host = 0;
    SR_TRY(sr_mem_copy(ctx, &host, SR_HOST, flag.get(), SR_DEVICE, sizeof host));
    *counts = (host & 1u) == 0;
    return SR_SUCCESS;
}

// For each level t = 1..kMaxLevels and panel slot s, the entries of M (by_row: rows; else an
// inverted form) in the slot's column above t, on the host.
sr_status levels_above(const sr_matrix_s *M, bool by_row, const int32_t *slot_of, int64_t H, float scale,
                       std::vector<unsigned long long> &out) {
    sr_context_s *ctx = M->ctx;
    buffer<unsigned long long> above(ctx);
    const size_t cells = (size_t)kMaxLevels * (size_t)H;
    SR_TRY(above.allocate(cells));
    SR_CUDA_TRY(cudaMemsetAsync(above.get(), 0, cells * sizeof(unsigned long long), stream_of(ctx)));
    if (M->nrows > 0) {
        count_above<<<grid_for(M->nrows * 32), 256, 0, stream_of(ctx)>>>(
            M->rowptr, M->colind, static_cast<const float *>(M->values), M->nrows, by_row, slot_of, H, scale,
            above.get());
        SR_CUDA_LAUNCHED();
    }
    out.resize(cells);
    return sr_mem_copy(ctx, out.data(), SR_HOST, above.get(), SR_DEVICE, cells * sizeof(unsigned long long));
}

// Manhattan and Bray-Curtis on count levels, Hamming on equality levels (cuda_knn_levels.cuh):
// where both matrices hold counts whose row norms keep every partial sum exact, the hot columns at
// a nominal 4 levels, then the levels T that minimize the GEMM (T, or T + 1, times the panel) plus
// the excess pairs' sparse work (the pairs of entries above T in a hot column), and whether that
// still pays.
sr_status make_level_plan(const sr_distance_inputs *in, const std::vector<double> &work, double m, double n,
                          size_t budget, bool forced, sr_cuda_panel **out) {
    int e = 0;
    double qtop = 0.0, xtop = 0.0;
    SR_TRY(value_grid(in, &e, &qtop, &xtop));
    if (e < 0)
        return SR_SUCCESS;
    const float scale = (float)std::ldexp(1.0, e);
    bool qcounts = true, xcounts = true;
    SR_TRY(all_counts(in->X, scale, &xcounts));
    if (in->Q == in->X)
        qcounts = xcounts;
    else
        SR_TRY(all_counts(in->Q, scale, &qcounts));
    // the GEMM's partial sums are -2 Σ min over some levels of some columns: multiples of 2s of at
    // most 2·min(row sums) in magnitude, and the cold sums too (Hamming's: integers of at most
    // twice the shared columns, and its norms count the rows' entries)
    if (!qcounts || !xcounts || 2.0 * std::min(qtop, xtop) * scale >= 16777216.0)
        return SR_SUCCESS;
    const bool equality = in->metric == SR_METRIC_HAMMING;
    const int extra_block = equality ? 1 : 0;
    constexpr int kNominal = 4;
    panel_choice choice;
    if (!choose_panel(work, m, n, kPanelFp16, kNominal + extra_block, budget, forced, &choice))
        return SR_SUCCESS;
    const int64_t H = choice.width;
    // the nominal panel's slots (the final one's width may differ: its depth is the levels chosen)
    const std::vector<int32_t> slot_of = slot_map(choice, in->X->ncols);
    buffer<int32_t> slots(in->Q->ctx);
    SR_TRY(slots.allocate(slot_of.size()));
    SR_TRY(sr_mem_copy(in->Q->ctx, slots.get(), SR_DEVICE, slot_of.data(), SR_HOST, slot_of.size() * sizeof(int32_t)));
    std::vector<unsigned long long> ax, aq;
    SR_TRY(levels_above(in->XT, false, slots.get(), H, scale, ax));
    if (in->Q == in->X)
        aq = ax;
    else
        SR_TRY(levels_above(in->Q, true, slots.get(), H, scale, aq));
    int levels = 1;
    double best = -1.0, best_excess = 0.0;
    for (int t = 1; t <= kMaxLevels; t++) {
        // levels whose panel cannot hold one tile of columns in the workspace are no choice: taken,
        // they left no panel at all (an H100, a 2 MiB workspace, Hamming's extra block)
        if (columns_that_fit(budget, n, sizeof(__half) * (size_t)(t + extra_block)) < kAlign)
            break;
        double excess = 0.0;
        for (int64_t s = 0; s < H; s++)
            excess += (double)aq[(size_t)(t - 1) * H + s] * (double)ax[(size_t)(t - 1) * H + s];
        const double cost = m * n * (double)H * (t + extra_block) / mac_rate(kPanelFp16) + excess / kSparseRate;
        if (best < 0.0 || cost < best) {
            best = cost;
            best_excess = excess;
            levels = t;
        }
    }
    const int64_t forced_levels = sr_setting("SPARSERING_KNN_PANEL_LEVELS", 0);
    if (forced_levels > 0)
        levels = (int)std::min<int64_t>(forced_levels, kMaxLevels);
    panel_choice final_choice;
    level_code code;
    code.kind = equality ? kEqualityLevels : kCountLevels;
    code.levels = levels;
    code.scale = scale;
    if (!choose_panel(work, m, n, kPanelFp16, code.blocks(), budget, forced, &final_choice, best_excess))
        return SR_SUCCESS;
    return build_plan(in, kPanelFp16, final_choice, code, out);
}

// Each column's values in Q (q) and in X (x) by bin (cuda_knn_table.cuh's class_bin), on the host:
// [c · kClassBins + bin].
sr_status class_histograms(const sr_distance_inputs *in, float scale, std::vector<unsigned> &q,
                           std::vector<unsigned> &x) {
    sr_context_s *ctx = in->Q->ctx;
    const size_t cells = (size_t)in->X->ncols * kClassBins;
    auto one = [&](const sr_matrix_s *M, std::vector<unsigned> &out) -> sr_status {
        buffer<unsigned> hist(ctx);
        SR_TRY(hist.allocate(cells));
        SR_CUDA_TRY(cudaMemsetAsync(hist.get(), 0, cells * sizeof(unsigned), stream_of(ctx)));
        if (M->nnz > 0) {
            class_histogram<<<grid_for(M->nnz), 256, 0, stream_of(ctx)>>>(
                M->colind, static_cast<const float *>(M->values), M->nnz, scale, hist.get());
            SR_CUDA_LAUNCHED();
        }
        out.resize(cells);
        return sr_mem_copy(ctx, out.data(), SR_HOST, hist.get(), SR_DEVICE, cells * sizeof(unsigned));
    };
    SR_TRY(one(in->X, x));
    if (in->Q == in->X) {
        q = x;
        return SR_SUCCESS;
    }
    return one(in->Q, q);
}

// The values of column c past class t (off the t classes) and all its stored values, from a histogram.
double values_off(const std::vector<unsigned> &hist, size_t c, int t) {
    double n = 0.0;
    for (int b = t + 1; b < kClassBins; b++)
        n += hist[c * kClassBins + (size_t)b];
    return n;
}

// Canberra, Minkowski, Jensen-Shannon, KL and the unexpanded Euclidean forms on table levels
// (cuda_knn_table.cuh): where the values lie on a grid of step s = 2^-e (e <= 4), for each T the
// panel whose columns save the most sparse work (a column's pairs less the pairs of its values off
// the T classes, which the walk still sums), the T whose model time is least, where it pays.
// "exact" takes a table only where it is exact (entries on a grid 2^-k the parts hold, and row
// norms that keep every partial sum below 2^23 steps of it: for these metrics
// |g(q, x)| <= f(q, 0) + f(0, x), so the norms bound the sums) or where float32 accuracy is the
// metric's (table_float32_is_exact_enough); "tf32" wherever it pays.
sr_status make_table_plan(const sr_distance_inputs *in, sr_precision precision, const std::vector<double> &work,
                          double m, double n, size_t budget, bool forced, sr_cuda_panel **out) {
    int e = 0;
    double qtop = 0.0, xtop = 0.0;
    SR_TRY(value_grid(in, &e, &qtop, &xtop));
    if (e < 0)
        return SR_SUCCESS;
    const double step = std::ldexp(1.0, -e);
    const float scale = (float)std::ldexp(1.0, e);
    std::vector<unsigned> hq, hx;
    SR_TRY(class_histograms(in, scale, hq, hx));
    double total = 0.0;
    for (double w : work)
        total += w;
    panel_choice best;
    int best_t = 0;
    bool best_exact = false;
    std::vector<double> saved(work.size());
    const int forced_t = (int)std::min<int64_t>(sr_setting("SPARSERING_KNN_PANEL_LEVELS", 0), kMaxLevels);
    for (int t = forced_t > 0 ? forced_t : 1; t <= (forced_t > 0 ? forced_t : kMaxLevels); t++) {
        std::vector<__half> parts;
        int grid = -1;
        if (!make_table(in->metric, in->p, t, step, parts, &grid))
            break; // a term past FP16, and more classes only add larger ones
        const bool exact = grid >= 0 && std::ldexp(qtop + xtop, grid) < 8388608.0;
        if (precision == SR_PRECISION_EXACT && !exact && !table_float32_is_exact_enough(in->metric))
            continue;
        double kept = 0.0; // the sparse work the panel could save
        for (size_t c = 0; c < work.size(); c++) {
            const double oq = values_off(hq, c, t), ox = values_off(hx, c, t);
            const double nq = values_off(hq, c, 0), nx = values_off(hx, c, 0);
            saved[c] = std::max(0.0, work[c] - (oq * nx + (nq - oq) * ox));
            kept += saved[c];
        }
        // with `extra` the rest, the model's sparse work is all of it less what the panel saves
        panel_choice choice;
        if (!choose_panel(saved, m, n, kPanelFp16, 2 * t, budget, forced, &choice, total - kept))
            continue;
        choice.total = total;
        if (best_t == 0 || choice.seconds < best.seconds) {
            best = std::move(choice);
            best_t = t;
            best_exact = exact;
        }
    }
    if (best_t == 0)
        return SR_SUCCESS;
    table_plan table;
    int grid = -1;
    make_table(in->metric, in->p, best_t, step, table.parts, &grid);
    table.exact = best_exact;
    table.flags.assign(work.size(), 0);
    for (int64_t s = 0; s < best.width && s < (int64_t)best.order.size(); s++) {
        const size_t c = (size_t)best.order[(size_t)s];
        table.flags[c] = (values_off(hq, c, best_t) > 0 ? kQueriesOff : 0) | (values_off(hx, c, best_t) > 0 ? kIndexOff : 0);
        table.any_off = table.any_off || table.flags[c] != 0;
    }
    level_code code;
    code.kind = kTableLevels;
    code.levels = best_t;
    code.scale = scale;
    return build_plan(in, kPanelFp16, best, code, out, &table);
}

sr_status make_plan(const sr_distance_inputs *in, sr_precision precision, sr_cuda_panel **out) {
    const sr_matrix_s *Q = in->Q, *X = in->X;
    const int forced = sr_setting("SPARSERING_KNN_PANEL", -1); // 0: never, 1: wherever it applies
    if (forced == 0 || X->nrows == 0 || Q->nrows == 0)
        return SR_SUCCESS;
    // A small call skips the plan (its copies back and checks cost a tenth of a millisecond or
    // more): the panel can save at most the sparse path's time, which every query entry against
    // every index row bounds.
    if (forced != 1 && (double)Q->nnz * (double)X->nrows < kPlanFloor * kSparseRate)
        return SR_SUCCESS;
    std::vector<double> cx, cq;
    SR_TRY(column_counts(X, in->XT, cx));
    if (Q == X)
        cq = cx;
    else
        SR_TRY(column_counts(Q, nullptr, cq));
    std::vector<double> work(cx.size());
    for (size_t c = 0; c < cx.size(); c++)
        work[c] = cq[c] * cx[c];
    const double m = (double)Q->nrows, n = (double)X->nrows;
    const size_t budget = sr_context_workspace(Q->ctx, SR_DEVICE);
    if (level_metric(in->metric))
        return make_level_plan(in, work, m, n, budget, forced == 1, out);
    if (table_metric(in->metric))
        return make_table_plan(in, precision, work, m, n, budget, forced == 1, out);
    // The model at the fastest rate the precision allows first: the FP16 check (a pass over both
    // matrices and a copy back) runs only where even that rate could pay.
    panel_mode mode = precision == SR_PRECISION_TF32 ? kPanelTf32 : kPanelFp16;
    panel_choice choice;
    if (!choose_panel(work, m, n, mode, 1, budget, forced == 1, &choice))
        return SR_SUCCESS;
    if (precision == SR_PRECISION_EXACT) {
        SR_TRY(choose_exact_mode(in, &mode));
        // Hellinger is the square root of a difference: float32-accurate sums of non-integer square
        // roots still move a distance near 0 by up to sqrt(2^-22 · Σv) (0.003 for a row with itself
        // at Σv = 2000, where the CUDA cores' sum of sqrt(v·v) = v is exact): "exact" keeps those rows
        // on the CUDA cores; "tf32" takes the panel
        if (sr_metric_kind_of(in->metric) == SR_MK_SQRT && mode != kPanelFp16)
            return SR_SUCCESS;
        if (mode != kPanelFp16 && !choose_panel(work, m, n, mode, 1, budget, forced == 1, &choice))
            return SR_SUCCESS;
    }
    return build_plan(in, mode, choice, level_code{}, out);
}

__device__ inline float panel_value(float v) { return v; }
__device__ inline float panel_value(__half v) { return __half2float(v); }

// C (nq × n, row-major) (+)= the product panel_gemm asks of cuBLAS, a thread an entry, float32
// sums in column order: SPARSERING_KNN_PANEL_CUBLAS=0 takes it so that compute-sanitizer can check
// the panel path's own kernels (racecheck's kernel filter fails beside cuBLAS's Hopper kernels,
// docs/install.md). The FP16 mode's sums are of integers below 2^24, the same bits in any order;
// the TF32 modes get float32's products, not TF32's.
template <typename T>
__global__ void plain_panel_product(int64_t n, int64_t nq, int depth, const T *x, int64_t ldx, const T *q,
                                    int64_t ldq, float *C, bool accumulate) {
    for (int64_t at = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; at < n * nq;
         at += (int64_t)gridDim.x * blockDim.x) {
        const T *xc = x + (at % n) * ldx, *qc = q + (at / n) * ldq;
        float sum = 0.0f;
        for (int c = 0; c < depth; c++)
            sum = fmaf(panel_value(xc[c]), panel_value(qc[c]), sum);
        C[at] = accumulate ? sum + C[at] : sum;
    }
}

static sr_status plain_panel_gemm(const sr_cuda_panel *pl, int64_t n, int64_t nq, const void *qpanel, float *C) {
    cudaStream_t stream = stream_of(pl->ctx);
    const int64_t H = pl->columns;
    if (pl->mode == kPanelFp16) {
        plain_panel_product<<<grid_for(n * nq), 256, 0, stream>>>(n, nq, (int)pl->depth,
                                                                  static_cast<const __half *>(pl->xpanel), pl->ldx,
                                                                  static_cast<const __half *>(qpanel), pl->ldq, C, false);
    } else {
        const float *x = static_cast<const float *>(pl->xpanel), *q = static_cast<const float *>(qpanel);
        const bool split = pl->mode != kPanelTf32;
        plain_panel_product<<<grid_for(n * nq), 256, 0, stream>>>(n, nq, (int)(split ? 2 * H : H), x, pl->ldx, q,
                                                                  pl->ldq, C, false);
        if (split)
            plain_panel_product<<<grid_for(n * nq), 256, 0, stream>>>(n, nq, (int)H, x, pl->ldx, q + 2 * H, pl->ldq,
                                                                      C, true);
    }
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// C (nq × n, row-major) = the queries' panel · the index's panelᵀ: in cuBLAS's column-major terms
// Cᵀ (n × nq) = Xpᵀ·Qp with both panels read as K × rows.
sr_status panel_gemm(const sr_cuda_panel *pl, int64_t n, int64_t nq, const void *qpanel, float *C) {
    if (sr_setting("SPARSERING_KNN_PANEL_CUBLAS", 1) == 0)
        return plain_panel_gemm(pl, n, nq, qpanel, C);
    cublasHandle_t h;
    SR_TRY(blas_handle(pl->ctx, &h));
    const float one = 1.0f, zero = 0.0f;
    const int N = (int)n, M = (int)nq, H = (int)pl->columns, K = (int)pl->depth;
    cublasStatus_t st;
    if (pl->mode == kPanelFp16) {
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, pl->xpanel, CUDA_R_16F, (int)pl->ldx, qpanel,
                          CUDA_R_16F, (int)pl->ldq, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    } else if (pl->mode == kPanelTf32) {
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, H, &one, pl->xpanel, CUDA_R_32F, (int)pl->ldx, qpanel,
                          CUDA_R_32F, (int)pl->ldq, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32,
                          CUBLAS_GEMM_DEFAULT);
    } else {
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, 2 * H, &one, pl->xpanel, CUDA_R_32F, (int)pl->ldx,
                          qpanel, CUDA_R_32F, (int)pl->ldq, &zero, C, CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32,
                          CUBLAS_GEMM_DEFAULT);
        if (st == CUBLAS_STATUS_SUCCESS)
            st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, H, &one, pl->xpanel, CUDA_R_32F, (int)pl->ldx,
                              static_cast<const float *>(qpanel) + 2 * H, CUDA_R_32F, (int)pl->ldq, &one, C,
                              CUDA_R_32F, N, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
    }
    return st == CUBLAS_STATUS_SUCCESS ? SR_SUCCESS : blas_fail(st, "cublasGemmEx (knn panel)");
}

sr_status panel_rows(sr_cuda_panel *pl, const sr_distance_inputs *in, int64_t q0, int64_t q1, int64_t k,
                     int64_t *idx, const sr_strided_out *dist) {
    sr_context_s *ctx = pl->ctx;
    const int64_t nq = q1 - q0, n = in->X->nrows;
    buffer<unsigned char> qpanel(ctx);
    buffer<float> block(ctx);
    SR_TRY(qpanel.allocate((size_t)nq * (size_t)pl->ldq * pl->elt));
    SR_TRY(block.allocate((size_t)nq * (size_t)n));
    SR_TRY(fill_rows(pl, in->metric, in->Q, q0, nq, true, qpanel.get()));
    // with count or equality levels, or values off the classes, the walk reads its copies, where
    // every column is cold
    const bool copies = pl->cold_q != nullptr;
    const sr_matrix_s *cq = copies ? pl->cold_q : in->Q, *cxt = copies ? pl->cold_xt : in->XT;
    const cold_args cold{cq->rowptr, cq->colind, static_cast<const float *>(cq->values), q0,
                         copies ? nullptr : pl->slot_of,
                         cxt->rowptr, cxt->colind, static_cast<const float *>(cxt->values)};
    buffer<int64_t> long_from(ctx); // where each query's long entries begin (none: every column in the panel)
    int64_t most_long = 0;          // the most long entries a query has
    if (pl->coverage < 1.0 || copies) {
        buffer<unsigned long long> most(ctx);
        SR_TRY(long_from.allocate((size_t)nq));
        SR_TRY(most.allocate(1));
        cudaStream_t stream = stream_of(ctx);
        SR_CUDA_TRY(cudaMemsetAsync(most.get(), 0, sizeof(unsigned long long), stream));
        split_cold_entries<<<grid_for(nq * 32), 256, 0, stream>>>(cold, nq, long_from.get(), most.get());
        SR_CUDA_LAUNCHED();
        unsigned long long m = 0;
        SR_CUDA_TRY(cudaMemcpyAsync(&m, most.get(), sizeof m, cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        most_long = (int64_t)m;
    }
    SR_TRY(panel_gemm(pl, n, nq, qpanel.get(), block.get()));
    const int64_t chunks = (n + kRun * kChunk - 1) / (kRun * kChunk); // a block's run of chunks
    if (chunks > 65535)
        return sr_error(SR_ERROR_INTERNAL, "knn panel: %lld index rows are past the grid", (long long)n);
    tiles_out<float> o{};
    o.k = (int)k;
    o.largest = sr_metric_is_similarity(in->metric);
    buffer<uint32_t> keys(ctx);
    buffer<int64_t> rows(ctx);
    SR_TRY(keys.allocate((size_t)(nq * chunks * k)));
    SR_TRY(rows.allocate((size_t)(nq * chunks * k)));
    o.key = keys.get();
    o.row = rows.get();
    const double d = (double)in->X->ncols;
    return with_panel_metric(in->metric, [&](auto metric) -> sr_status {
        constexpr sr_metric M = decltype(metric)::value;
        if (most_long > 0) {
            const int64_t warps = kSelThreads / 32, per_block = warps * kLongPerWarp;
            const int64_t split = std::min<int64_t>((most_long + per_block - 1) / per_block, kLongSplitMax);
            add_long_rows<M><<<dim3((unsigned)nq, (unsigned)split), kSelThreads, 0, stream_of(ctx)>>>(block.get(), n,
                                                                                                     in->p, cold,
                                                                                                     long_from.get());
            SR_CUDA_LAUNCHED();
        }
        select_panel<M><<<dim3((unsigned)nq, (unsigned)chunks), kSelThreads, 0, stream_of(ctx)>>>(
            block.get(), n, in->qnorm + 2 * q0, in->xnorm, d, in->p, cold, long_from.get(), o,
            pretest_for<M>());
        SR_CUDA_LAUNCHED();
        merge_blocks<float><<<grid_for(nq * 32), 256, 0, stream_of(ctx)>>>(
            o, nq, chunks * k, idx, static_cast<float *>(dist->data), dist->row_stride, dist->col_stride);
        SR_CUDA_LAUNCHED();
        // the scratch is freed in stream order; the caller's outputs are ready when it syncs
        SR_CUDA_TRY(sr_cuda::wait_stream(stream_of(ctx)));
        return SR_SUCCESS;
    });
}

} // namespace

extern "C" sr_status sr_cuda_knn_panel_plan(const sr_distance_inputs *in, int64_t k, sr_precision precision,
                                            sr_cuda_panel **panel) {
    *panel = nullptr;
    if (in->Q->type != SR_TYPE_FLOAT32 || !panel_metric(in->metric) || k > kMaxK || precision == SR_PRECISION_FLOAT32 ||
        !in->XT)
        return SR_SUCCESS;
    device_guard guard(in->Q->ctx->device);
    return make_plan(in, precision, panel);
}

extern "C" size_t sr_cuda_knn_panel_scratch_per_row(const sr_cuda_panel *pl, const sr_distance_inputs *in,
                                                    int64_t k) {
    const int64_t n = in->X->nrows, chunks = (n + kRun * kChunk - 1) / (kRun * kChunk);
    return (size_t)n * sizeof(float) + (size_t)pl->ldq * pl->elt + (size_t)(chunks * k) * (sizeof(uint32_t) + 8);
}

extern "C" sr_status sr_cuda_knn_panel_rows(sr_cuda_panel *pl, const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                            int64_t k, int64_t *idx, const sr_strided_out *dist) {
    device_guard guard(pl->ctx->device);
    if (q1 <= q0)
        return SR_SUCCESS;
    if (q1 - q0 > INT32_MAX)
        return sr_error(SR_ERROR_INTERNAL, "knn panel: a batch of %lld queries is past the grid", (long long)(q1 - q0));
    return panel_rows(pl, in, q0, q1, k, idx, dist);
}

extern "C" void sr_cuda_knn_panel_free(sr_cuda_panel *pl) {
    if (!pl)
        return;
    sr_mem_free(pl->ctx, SR_DEVICE, pl->xpanel, pl->xbytes);
    sr_mem_free(pl->ctx, SR_DEVICE, pl->slot_of, pl->slot_bytes);
    sr_mem_free(pl->ctx, SR_DEVICE, pl->table, pl->table_bytes);
    sr_matrix_destroy(pl->cold_q);
    sr_matrix_destroy(pl->cold_xt);
    delete pl;
}
