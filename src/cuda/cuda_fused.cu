// The fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z on the device (the kernel-fusion paper,
// ../shared/papers/kernel-fusion-xtvxy.txt), X read once.
//
// Sparse X (Algorithm 2): a vector of VS lanes per row (VS from the mean row length, a revision
// of the paper's Equation 4, see vector_size), each vector taking rows a grid apart (coarsening:
// the grid is what the chip holds at once, so each vector does C = m / (vectors) rows), two rows
// at a time; the row's dot with y is reduced by shuffles, scaled by v, and spread back over the
// row's columns into shared memory (inter-vector aggregation: a private copy of w a vector for
// narrow X, a block-wide copy when w fits, the hot columns of cuda_hot_columns.cu for wide text),
// which the block adds to w in global memory once at the end (inter-block); X with evenly spread
// columns past shared memory adds to global memory directly. Dense X (Algorithm 3): a warp per
// row, each lane holding TL of the row's elements and TL of y in registers, its partial w in
// registers until the end. Short rows, for the sums into w, go by row tiles instead
// (cuda_fused_tiles.cuh; tile_entries says when).
// β·z is written first by a separate kernel (no inter-block barrier exists), then the fused
// kernel adds α·Xᵀ(...) atomically. A deterministic context sums in a fixed order instead
// (cuda_fused_ordered.cuh).
#include "cuda_blas.cuh"
#include "cuda_common.cuh"
#include "cuda_hot_columns.cuh"

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <new>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

template <typename T> struct fused_params {
    sr_pattern_form form;
    const int64_t *rowptr;
    const int32_t *colind;
    const T *values; // nullptr: bool X, entries count 1
    const T *Xd;     // dense X (row-major, ld), when rowptr is nullptr
    int64_t ld, m, n;
    const T *y, *v, *z;
    T *w;
    T alpha, beta;
};

// The lanes of this thread's vector of VS.
template <int VS> __device__ __forceinline__ unsigned vector_mask() {
    return VS == 32 ? 0xffffffffu : (((1u << VS) - 1u) << (threadIdx.x % 32 / VS * VS));
}

template <int VS, typename T> __device__ __forceinline__ T vector_sum(T x) {
#pragma unroll
    for (int o = VS / 2; o > 0; o /= 2)
        x += __shfl_xor_sync(vector_mask<VS>(), x, o, VS);
    return x;
}

// A block's partial sums of w, `copies` copies of `slots` slots (slot r holding column
// column_of[r], or column r without column_of), added to w in global memory once.
template <typename T> __device__ void add_partials(const T *part, int slots, int copies, T *w, const int32_t *column_of) {
    for (int r = threadIdx.x; r < slots; r += blockDim.x) {
        T sum = 0;
        for (int c = 0; c < copies; c++)
            sum += part[c * slots + r];
        if (sum != T(0))
            atomicAdd(&w[column_of ? column_of[r] : r], sum);
    }
}

#include "cuda_fused_tiles.cuh"

// w = β·z (or 0), before the atomic sums.
template <typename T> __global__ void start_w(T *w, const T *z, T beta, int64_t n) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < n; j += (int64_t)gridDim.x * blockDim.x)
        w[j] = z ? beta * z[j] : T(0);
}

// w = β·z before a kernel adds its sums into w (every sums launcher but the column ranges', which
// write w whole).
template <typename T> sr_status start_sums(const fused_params<T> &p, cudaStream_t stream) {
    start_w<T><<<grid_for(p.n), 256, 0, stream>>>(p.w, p.z, p.beta, p.n);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// Calls add(column, α·s(i)·X(i,j)) for every entry of this vector's rows, s(i) = v(i)·(X(i,:)·y)
// for XTVXY and v(i)·y(i) for XTY. R rows at a time: their bounds and first VS-entry chunks are
// loaded together (R independent chains of memory reads in flight instead of one), and the first
// chunk stays in registers from the dot product to the scatter, so most rows (up to VS entries)
// are read from memory once.
template <int VS, int R, typename T, typename Add>
__device__ __forceinline__ void scatter_rows(const fused_params<T> &p, Add add) {
    const int lane = threadIdx.x % VS;
    const int64_t vector = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / VS;
    const int64_t vectors = (int64_t)gridDim.x * blockDim.x / VS;
    auto value = [&](int64_t k) { return p.values ? p.values[k] : T(1); };
    for (int64_t first = vector; first < p.m; first += R * vectors) {
        int64_t begin[R], end[R];
        int32_t col[R];
        T x[R], s[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int64_t i = first + r * vectors;
            begin[r] = i < p.m ? p.rowptr[i] : 0;
            end[r] = i < p.m ? p.rowptr[i + 1] : 0;
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int64_t k = begin[r] + lane;
            col[r] = k < end[r] ? p.colind[k] : -1;
            x[r] = k < end[r] ? value(k) : T(0);
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int64_t i = first + r * vectors;
            T d = 0;
            if (p.form == SR_FORM_XTY) {
                d = i < p.m ? p.y[i] : T(0);
            } else {
                d = col[r] >= 0 ? x[r] * p.y[col[r]] : T(0);
                for (int64_t k = begin[r] + lane + VS; k < end[r]; k += VS)
                    d += value(k) * p.y[p.colind[k]];
                d = vector_sum<VS>(d);
            }
            s[r] = i < p.m ? p.alpha * (p.v ? p.v[i] : T(1)) * d : T(0);
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (s[r] == T(0))
                continue;
            if (col[r] >= 0)
                add(col[r], x[r] * s[r]);
            for (int64_t k = begin[r] + lane + VS; k < end[r]; k += VS)
                add(p.colind[k], value(k) * s[r]);
            __syncwarp(vector_mask<VS>()); // a row's additions land before the next row's
        }
    }
}

// Rows a vector takes at once (scatter_rows).
constexpr int kRowsAtOnce = 2;

// Sparse XTVXY / XTY with w's partial sums in a block's shared memory, one of three ways:
// PRIVATE: a copy of w for each vector, added to without atomics (a row's columns are distinct,
// and __syncwarp orders a vector's rows), when they all fit (narrow X: the paper's main case);
// else all of w in `copies` copies, one a group of warps, added to atomically; else (MAPPED) the
// slots of the hot columns, the others added to global memory directly. Each block adds its
// partial sums to w once, at the end, so a column that most rows hold (a common word) takes one
// global atomic a block instead of one an entry.
template <int VS, bool MAPPED, bool PRIVATE, typename T>
__global__ void __launch_bounds__(1024, 1)
    sparse_blocks(fused_params<T> p, int slots, int copies, const int32_t *slot_of, const int32_t *column_of) {
    extern __shared__ unsigned char smem_raw[];
    T *part = reinterpret_cast<T *>(smem_raw);
    for (int j = threadIdx.x; j < slots * copies; j += blockDim.x)
        part[j] = 0;
    __syncthreads();
    T *mine = part + (PRIVATE ? threadIdx.x / VS : threadIdx.x / 32 % copies) * slots;
    scatter_rows<VS, kRowsAtOnce>(p, [&](int32_t c, T x) {
        const int32_t slot = MAPPED ? slot_of[c] : c;
        if (PRIVATE)
            mine[slot] += x;
        else if (slot >= 0)
            atomicAdd(&mine[slot], x);
        else
            atomicAdd(&p.w[c], x);
    });
    __syncthreads();
    add_partials(part, slots, copies, p.w, MAPPED ? column_of : nullptr);
}

// The same for wide X with evenly spread columns: the vectors add to w in global memory.
template <int VS, typename T> __global__ void __launch_bounds__(256) sparse_global(fused_params<T> p) {
    scatter_rows<VS, kRowsAtOnce>(p, [&](int32_t c, T x) { atomicAdd(&p.w[c], x); });
}

// XY: w(i) = α·v(i)·(X(i,:)·y) + β·z(i), a vector a row (sparse) or a warp a row (dense).
template <int VS, typename T> __global__ void __launch_bounds__(256) rows_xy(fused_params<T> p) {
    const int lane = threadIdx.x % VS;
    const int64_t vector = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / VS;
    const int64_t vectors = (int64_t)gridDim.x * blockDim.x / VS;
    for (int64_t i = vector; i < p.m; i += vectors) {
        T d = 0;
        if (p.rowptr) {
            for (int64_t k = p.rowptr[i] + lane; k < p.rowptr[i + 1]; k += VS)
                d += (p.values ? p.values[k] : T(1)) * p.y[p.colind[k]];
        } else {
            const T *x = p.Xd + (size_t)i * (size_t)p.ld;
            for (int64_t k = lane; k < p.n; k += VS)
                d += x[k] * p.y[k];
        }
        d = vector_sum<VS>(d);
        if (lane == 0)
            p.w[i] = p.alpha * (p.v ? p.v[i] : T(1)) * d + (p.z ? p.beta * p.z[i] : T(0));
    }
}

// Dense XTVXY / XTY, n <= 32·TL: a warp a row, lane l holding X(i, l + 32t) and y(l + 32t) for
// t < TL in registers (the paper's generated kernel, by templates instead of code generation),
// and its columns' partial w in registers until the end.
template <int TL, typename T> __global__ void __launch_bounds__(256) dense_rows(fused_params<T> p) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    T ly[TL], lw[TL];
#pragma unroll
    for (int t = 0; t < TL; t++) {
        const int64_t j = lane + 32 * t;
        ly[t] = p.form == SR_FORM_XTY || j >= p.n ? T(0) : p.y[j];
        lw[t] = 0;
    }
    for (int64_t i = warp; i < p.m; i += warps) {
        const T *x = p.Xd + (size_t)i * (size_t)p.ld;
        T lx[TL], d = 0;
#pragma unroll
        for (int t = 0; t < TL; t++) {
            const int64_t j = lane + 32 * t;
            lx[t] = j < p.n ? x[j] : T(0);
            d += lx[t] * ly[t];
        }
        const T s = (p.v ? p.v[i] : T(1)) * (p.form == SR_FORM_XTY ? p.y[i] : vector_sum<32>(d));
#pragma unroll
        for (int t = 0; t < TL; t++)
            lw[t] += lx[t] * s;
    }
#pragma unroll
    for (int t = 0; t < TL; t++) {
        const int64_t j = lane + 32 * t;
        if (j < p.n && lw[t] != T(0))
            atomicAdd(&p.w[j], p.alpha * lw[t]);
    }
}

// Dense X wider than the register tiles: a warp a row reads it twice (the second time from L1).
template <typename T> __global__ void __launch_bounds__(256) dense_wide(fused_params<T> p) {
    const int lane = threadIdx.x % 32;
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t i = warp; i < p.m; i += warps) {
        const T *x = p.Xd + (size_t)i * (size_t)p.ld;
        T d = 0;
        if (p.form != SR_FORM_XTY)
            for (int64_t j = lane; j < p.n; j += 32)
                d += x[j] * p.y[j];
        const T s = p.alpha * (p.v ? p.v[i] : T(1)) * (p.form == SR_FORM_XTY ? p.y[i] : vector_sum<32>(d));
        if (s != T(0))
            for (int64_t j = lane; j < p.n; j += 32)
                atomicAdd(&p.w[j], x[j] * s);
    }
}

// Blocks that fill the chip (the paper's coarsening: each vector then takes m / vectors rows, so
// blocks add their shared copies of w to global memory once each).
template <typename K> unsigned resident_blocks(K kernel, size_t smem, int threads = 256) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem) != cudaSuccess || per_sm < 1)
        per_sm = 1;
    return (unsigned)(per_sm * sm_count());
}

// Blocks for row tiles: what the chip holds, but no more than there are tiles of entries.
unsigned tile_blocks(unsigned resident, int E, int64_t nnz) {
    const int64_t tiles = (nnz + (int64_t)kTileThreads * E - 1) / ((int64_t)kTileThreads * E);
    return (unsigned)std::max<int64_t>(1, std::min<int64_t>(resident, tiles));
}

// Lanes a row from the mean row length μ. The paper's Equation 4 takes the power of two 2^i with
// 2^i < μ <= 2^(i+1), 32 past 32. Here a vector keeps kRowsAtOnce rows in flight and their first
// chunks in registers, which shifts the best width down: on the H100 (bench/probes/fused_probe.py)
// 4 lanes beat Equation 4's 8 by 1.5x at μ = 10 (10^7 x 100) and tied it at μ = 9 and 13 (text),
// and 16 lanes beat its 32 by 1.4x at μ = 1000 (10^4 x 10^7). So: the power of two at or below
// μ / 2, from 1 to 16.
int vector_size(double mu) {
    int vs = 1;
    while (vs < 16 && 2.0 * vs <= mu / 2)
        vs *= 2;
    return vs;
}

// Shared memory for one block of 1024 threads an SM: all of the SM's, less the 1 KB the runtime
// reserves a block, within the opt-in limit. One block, not two: a 1024-thread block then has 64
// registers a thread, room for kRowsAtOnce rows in flight a vector (as much memory parallelism
// as two blocks of one row each), and twice the slots (56K float columns on an H100), so the
// columns of most text sets fit whole and fewer blocks add their copies to w.
size_t shared_per_block() {
    int device = 0, per_sm = 0, optin = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
    cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
    return std::min<size_t>((size_t)optin, (size_t)std::max(per_sm - 1024, 0));
}

#include "cuda_fused_columns.cuh"

// Copies of w (n entries of `size` bytes) a block keeps in `room` bytes of shared memory, one a
// group of warps: at most `limit`, and few enough that they take at most 8192 slots in all (their
// final sum stays short), at least one.
int shared_copies(int64_t limit, size_t room, int64_t n, size_t size) {
    const int64_t fit = (int64_t)(room / ((size_t)std::max<int64_t>(1, n) * size));
    return (int)std::max<int64_t>(1, std::min<int64_t>({limit, fit, 8192 / std::max<int64_t>(1, n)}));
}

template <int VS, bool MAPPED, bool PRIVATE, typename T>
sr_status launch_blocks(const fused_params<T> &p, int slots, int copies, const int32_t *slot_of,
                        const int32_t *column_of, cudaStream_t stream) {
    auto kernel = sparse_blocks<VS, MAPPED, PRIVATE, T>;
    const size_t smem = (size_t)slots * (size_t)copies * sizeof(T);
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const unsigned blocks = std::min<unsigned>(resident_blocks(kernel, smem, 1024),
                                               (unsigned)std::max<int64_t>(1, (p.m * VS + 1023) / 1024));
    kernel<<<blocks, 1024, smem, stream>>>(p, slots, copies, slot_of, column_of);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// The sums into w (XTVXY, XTY), by the width of X: a private copy of w for each vector when they
// fit in a block's shared memory; else all of w in each block's shared memory when it fits (in
// up to 32 copies while they stay small, one a warp); else, when the columns that fit there hold
// at least half the entries (text: common words), those columns in shared memory and the rest in
// global memory; else, for long rows, column ranges (cuda_fused_columns.cuh); else (wide X with
// evenly spread columns and short rows, where a block would rarely hit a slot twice) everything in
// global memory.
template <int VS, typename T>
sr_status launch_sums(sr_context_s *ctx, const fused_params<T> &p, const sr_matrix_s *X, cudaStream_t stream) {
    const size_t per_block = shared_per_block(), row_bytes = (size_t)p.n * sizeof(T);
    hot_columns plan{};
    if (row_bytes > per_block) {
        SR_TRY(hot_columns_of(X, (int64_t)(per_block / sizeof(T)), &plan));
        if (column_ranges_pay<T>(X, plan.coverage))
            return launch_column_ranges<VS, T>(ctx, p, X, stream);
    }
    SR_TRY(start_sums(p, stream));
    if (row_bytes * (1024 / VS) <= per_block)
        return launch_blocks<VS, false, true, T>(p, (int)p.n, 1024 / VS, nullptr, nullptr, stream);
    if (row_bytes <= per_block)
        return launch_blocks<VS, false, false, T>(p, (int)p.n, shared_copies(32, per_block, p.n, sizeof(T)), nullptr,
                                                  nullptr, stream);
    if (plan.coverage >= 0.5)
        return launch_blocks<VS, true, false, T>(p, (int)plan.slots, 1, plan.slot_of, plan.column_of, stream);
    sparse_global<VS, T><<<resident_blocks(sparse_global<VS, T>, 0), 256, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// Row tiles (cuda_fused_tiles.cuh) for short rows: tiles of E entries a thread, `window` rows at
// most (twice the rows a tile holds on average, so the row pointers loaded are mostly used).
template <int E, bool MAPPED, typename T>
sr_status launch_tile_sums(const fused_params<T> &p, const sr_matrix_s *X, int window, int slots, int copies,
                           const int32_t *slot_of, const int32_t *column_of, cudaStream_t stream) {
    auto kernel = tiles_sums<E, MAPPED, T>;
    const size_t smem = tile_bytes<T>(E) + (size_t)slots * (size_t)copies * sizeof(T);
    SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const unsigned blocks = tile_blocks(resident_blocks(kernel, smem, kTileThreads), E, X->nnz);
    kernel<<<blocks, kTileThreads, smem, stream>>>(p, window, slots, copies, slot_of, column_of);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// The sums into w by row tiles, w's partial sums in shared memory as launch_sums decides, with the
// room a tile leaves when kTileBlocksPerSM blocks share an SM.
template <int E, typename T>
sr_status launch_tiles(const fused_params<T> &p, const sr_matrix_s *X, double mu, cudaStream_t stream) {
    constexpr int C = kTileThreads * E;
    const int window = (int)std::min<int64_t>(C, ((int64_t)(2.0 * C / std::max(mu, 1.0)) + 63) / 32 * 32);
    if (p.form == SR_FORM_XY) {
        auto kernel = tiles_xy<E, T>;
        const size_t smem = tile_bytes<T>(E);
        SR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
        kernel<<<tile_blocks(resident_blocks(kernel, smem, kTileThreads), E, X->nnz), kTileThreads, smem, stream>>>(
            p, window);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    }
    SR_TRY(start_sums(p, stream));
    // tile_entries checked that the tile fits
    const size_t room = shared_per_block() / kTileBlocksPerSM - tile_bytes<T>(E), row_bytes = (size_t)p.n * sizeof(T);
    if (row_bytes <= room)
        return launch_tile_sums<E, false, T>(p, X, window, (int)p.n, shared_copies(kTileThreads / 32, room, p.n, sizeof(T)),
                                             nullptr, nullptr, stream);
    hot_columns plan;
    SR_TRY(hot_columns_of(X, (int64_t)(room / sizeof(T)), &plan));
    if (plan.coverage >= 0.5)
        return launch_tile_sums<E, true, T>(p, X, window, (int)plan.slots, 1, plan.slot_of, plan.column_of, stream);
    return launch_tile_sums<E, false, T>(p, X, window, 0, 0, nullptr, nullptr, stream);
}

// Row tiles or the vector kernel, by the class of X (bench/probes/fused_probe.py --tiles, H100):
// tiles keep every entry in registers from the dot product to the scatter, the vector kernel
// re-reads the entries past a row's first chunk but runs one 1024-thread block an SM with all
// its shared memory. Tiles win the sums into w on short rows (mean length up to kTileMaxMean)
// when w fits their copies (10^7 x 100: 1.2x in float32, 1.26x in float64) or fits neither
// kernel's (PyPI summaries, 3-grams in float64: 1.1-1.2x); the vector kernel wins where only it
// holds w whole (3-grams in float32: 1.25x), on long rows (10^4 x 10^7: 1.8x) and for X·y alone
// (1.07x). Entries a thread: 8 of 4 bytes, 4 of 8. SPARSERING_FUSED_TILES=0, 4 or 8 forces.
template <typename T> int tile_entries(sr_pattern_form form, double mu, int64_t n) {
    const size_t per_block = shared_per_block(), row_bytes = (size_t)n * sizeof(T);
    const int forced = sr_setting("SPARSERING_FUSED_TILES", -1);
    const int E = forced < 0 ? (sizeof(T) == 4 ? 8 : 4) : forced == 8 || forced == 4 ? forced : 0;
    if (E == 0 || tile_bytes<T>(E) > per_block / kTileBlocksPerSM) // a GPU with little shared memory
        return 0;
    if (forced >= 0)
        return E;
    const bool tiles_hold_w = row_bytes <= per_block / kTileBlocksPerSM - tile_bytes<T>(E);
    if (form == SR_FORM_XY || mu > kTileMaxMean || (!tiles_hold_w && row_bytes <= per_block))
        return 0;
    return E;
}

template <int VS, typename T> sr_status launch_rows_xy(const fused_params<T> &p, cudaStream_t stream) {
    rows_xy<VS, T><<<resident_blocks(rows_xy<VS, T>, 0), 256, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <int VS, typename T>
sr_status launch_sparse(sr_context_s *ctx, const fused_params<T> &p, const sr_matrix_s *X, cudaStream_t stream) {
    if (p.form != SR_FORM_XY)
        return launch_sums<VS, T>(ctx, p, X, stream);
    return launch_rows_xy<VS, T>(p, stream);
}

template <typename T> sr_status launch_dense(const fused_params<T> &p, cudaStream_t stream) {
    if (p.form == SR_FORM_XY)
        return launch_rows_xy<32, T>(p, stream);
    SR_TRY(start_sums(p, stream));
    const int64_t tl = (p.n + 31) / 32;
#define SR_DENSE_TL(TL)                                                                                  \
    if (tl <= TL) {                                                                                      \
        dense_rows<TL, T><<<resident_blocks(dense_rows<TL, T>, 0), 256, 0, stream>>>(p);                 \
        SR_CUDA_LAUNCHED();                                                                              \
        return SR_SUCCESS;                                                                               \
    }
    SR_DENSE_TL(1)
    SR_DENSE_TL(2)
    SR_DENSE_TL(4)
    SR_DENSE_TL(8)
    SR_DENSE_TL(16)
#undef SR_DENSE_TL
    dense_wide<T><<<resident_blocks(dense_wide<T>, 0), 256, 0, stream>>>(p);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// vector_size's choice, or SPARSERING_FUSED_VECTOR (1, 2, 4, ..., 32) to measure another.
int vector_size_for(double mu) {
    const int forced = sr_setting("SPARSERING_FUSED_VECTOR", 0);
    return forced >= 1 && forced <= 32 && (forced & (forced - 1)) == 0 ? forced : vector_size(mu);
}

// X·y a row a vector (the XY form without the row tiles), for the ordered sums.
template <typename T> sr_status launch_xy_rows(const fused_params<T> &p, double mu, cudaStream_t stream) {
    switch (p.rowptr ? vector_size_for(mu) : 32) {
    case 1: return launch_rows_xy<1, T>(p, stream);
    case 2: return launch_rows_xy<2, T>(p, stream);
    case 4: return launch_rows_xy<4, T>(p, stream);
    case 8: return launch_rows_xy<8, T>(p, stream);
    case 16: return launch_rows_xy<16, T>(p, stream);
    default: return launch_rows_xy<32, T>(p, stream);
    }
}

#include "cuda_fused_ordered.cuh"

template <typename T> sr_status run(sr_context_s *ctx, const sr_fused_args *a) {
    cudaStream_t stream = stream_of(ctx);
    fused_params<T> p{};
    p.form = a->form;
    if (a->X) {
        p.rowptr = a->X->rowptr;
        p.colind = a->X->colind;
        p.values = a->X->type == SR_TYPE_BOOL ? nullptr : static_cast<const T *>(a->X->values);
    }
    p.Xd = static_cast<const T *>(a->Xd);
    p.ld = a->ld;
    p.m = a->m;
    p.n = a->n;
    p.y = static_cast<const T *>(a->y);
    p.v = static_cast<const T *>(a->v);
    p.z = static_cast<const T *>(a->z);
    p.w = static_cast<T *>(a->w);
    p.alpha = (T)a->alpha;
    p.beta = (T)a->beta;
    const int64_t out = a->form == SR_FORM_XY ? a->m : a->n;
    if (a->form != SR_FORM_XY && out > 0 && a->m == 0)
        SR_TRY(start_sums(p, stream)); // no rows: w = β·z (else each sums launcher starts w)
    const double mu = a->X ? (double)a->X->nnz / (double)std::max<int64_t>(1, a->m) : (double)a->n;
    if (a->m > 0 && out > 0 && ctx->deterministic && a->form != SR_FORM_XY) {
        SR_TRY(run_ordered<T>(ctx, a, p, stream,
                              [&](const fused_params<T> &q) { return launch_xy_rows<T>(q, mu, stream); }));
    } else if (a->m > 0 && out > 0) {
        if (a->X) {
            const int entries = tile_entries<T>(a->form, mu, a->n);
            if (entries == 8)
                SR_TRY((launch_tiles<8, T>(p, a->X, mu, stream)));
            else if (entries == 4)
                SR_TRY((launch_tiles<4, T>(p, a->X, mu, stream)));
            else switch (vector_size_for(mu)) {
            case 1: SR_TRY((launch_sparse<1, T>(ctx, p, a->X, stream))); break;
            case 2: SR_TRY((launch_sparse<2, T>(ctx, p, a->X, stream))); break;
            case 4: SR_TRY((launch_sparse<4, T>(ctx, p, a->X, stream))); break;
            case 8: SR_TRY((launch_sparse<8, T>(ctx, p, a->X, stream))); break;
            case 16: SR_TRY((launch_sparse<16, T>(ctx, p, a->X, stream))); break;
            default: SR_TRY((launch_sparse<32, T>(ctx, p, a->X, stream))); break;
            }
        } else {
            SR_TRY(launch_dense<T>(p, stream));
        }
    }
    if (!a->queued) // queued (the solvers' steps): the next call on the stream reads w in order
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_fused(sr_context_s *ctx, const sr_fused_args *a) {
    device_guard guard(ctx->device);
    return a->type == SR_TYPE_FLOAT32 ? run<float>(ctx, a) : run<double>(ctx, a);
}
