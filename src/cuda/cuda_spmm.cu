// Dense-output semiring products on the device: C = A ⊕.⊗ B (SpMV is the one-column case).
//
// Load balance over skewed rows: short rows are handled by a group of G lanes each; SpMM rows
// above kMidRow entries take a block each; rows above kLongRow are cut into kChunk-entry chunks
// that write partial results, which a combine pass reduces in chunk order. Every reduction has a
// fixed order (deterministic for every semiring, no atomics). The mid and long rows come from the
// matrix's cached row plan, so a call launches only the kernels its rows need and waits once.
#include "cuda_row_plan.cuh"
#include "cuda_semiring.cuh"
#include "cuda_spmv_plan.cuh"

#include <algorithm>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int64_t kLongRow = 2048;
constexpr int64_t kChunk = 1024;
// An SpMM row's group of lanes walks its entries one after another, so one long row held up the
// whole kernel: debian-depends' row of 332 entries made the K = 32 product 70 us (ncu), where
// cuSPARSE took 37 us.
constexpr int64_t kMidRow = 64;
constexpr int kBlock = 256;

// Element (i, j) of a dense matrix at base[i * row_stride + j * col_stride].
template <typename T> struct dense_ref {
    T *base;
    int64_t row_stride, col_stride;
    __device__ T &at(int64_t i, int64_t j) const { return base[i * row_stride + j * col_stride]; }
};

template <typename T> dense_ref<T> ref_of(const sr_dense *d) {
    const bool row_major = d->layout == SR_ROW_MAJOR;
    return {static_cast<T *>(d->data), row_major ? d->ld : 1, row_major ? 1 : d->ld};
}

// 16-byte vectors of T (4 floats or int32s, 2 doubles); 1 for narrower types (no vector kernel).
template <typename T> constexpr int kVec = sizeof(T) >= 4 ? 16 / (int)sizeof(T) : 1;
template <typename T, int V> struct alignas(16) vec_of {
    T v[V];
};
static_assert(sizeof(vec_of<float, 4>) == 16 && sizeof(vec_of<double, 2>) == 16, "a vector is 16 bytes");

template <class Ops> struct product_args {
    using T = typename Ops::value;
    const int64_t *rowptr;
    const int32_t *colind;
    const T *values; // nullptr for bool: every entry is 1
    int64_t nrows, ncols_out;
    dense_ref<const T> B;
    dense_ref<T> C;
    mask_view mask;
    bool accumulate;
    row_plan plan; // the mid and long rows; rows up to plan.classes.short_max are short
    T *partials;   // chunk x ncols_out

    __device__ T a_value(int64_t k) const { return values != nullptr ? __ldg(values + k) : T(1); }
    __device__ T b_value(int64_t k, int64_t j) const {
        if constexpr (Ops::reads_values)
            return B.at(k, j);
        else
            return T(1);
    }
    __device__ void write(int64_t i, int64_t j, T acc) const {
        if (!mask.allows(i, j))
            return;
        T &c = C.at(i, j);
        c = accumulate ? Ops::add(c, acc) : acc;
    }
    // ⊕ of a_ik ⊗ b_kj over the entries k = first, first + step, .. below end (column j of B).
    __device__ T sum_products(int64_t first, int64_t end, int64_t step, int64_t j) const {
        T acc = Ops::identity();
#pragma unroll 4
        for (int64_t k = first; k < end; k += step)
            acc = Ops::add(acc, Ops::mul(a_value(k), b_value(colind[k], j)));
        return acc;
    }
    // ⊕ of a_ik ⊗ b_kj over the same entries for V consecutive columns j0.., each entry's B elements
    // read as one 16-byte vector (B row-major with aligned rows: rows_of_vectors).
    template <int V> __device__ vec_of<T, V> sum_vec_products(int64_t first, int64_t end, int64_t step, int64_t j0) const {
        vec_of<T, V> acc;
#pragma unroll
        for (int v = 0; v < V; v++)
            acc.v[v] = Ops::identity();
#pragma unroll 4
        for (int64_t k = first; k < end; k += step) {
            const T a = a_value(k);
            vec_of<T, V> b;
            if constexpr (Ops::reads_values) {
                const uint4 raw = __ldg(reinterpret_cast<const uint4 *>(&B.at(colind[k], j0)));
                memcpy(&b, &raw, sizeof b);
            } else
#pragma unroll
                for (int v = 0; v < V; v++)
                    b.v[v] = T(1);
#pragma unroll
            for (int v = 0; v < V; v++)
                acc.v[v] = Ops::add(acc.v[v], Ops::mul(a, b.v[v]));
        }
        return acc;
    }
    __device__ void chunk_range(int64_t c, int64_t *row, int64_t *start, int64_t *end) const {
        plan.chunk_range(rowptr, c, row, start, end);
    }
};

template <typename T> __device__ T shuffle_xor(T v, int offset, int width) {
    if constexpr (sizeof(T) == 1)
        return (T)__shfl_xor_sync(0xffffffffu, (int)v, offset, width);
    else
        return __shfl_xor_sync(0xffffffffu, v, offset, width);
}

#include "cuda_spmv_split.cuh"

// SpMV, short rows: G lanes per row stride over its entries, then reduce by shuffles. The
// loop bound is uniform per warp so every lane reaches the shuffles.
template <class Ops, int G> __global__ void spmv_rows(product_args<Ops> p) {
    using T = typename Ops::value;
    const int lane = threadIdx.x % G;
    const int64_t rows_per_warp = 32 / G;
    const int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t base = warp * rows_per_warp; base < p.nrows; base += warps * rows_per_warp) {
        const int64_t row = base + (threadIdx.x % 32) / G;
        int64_t start = 0, end = 0;
        if (row < p.nrows) {
            start = p.rowptr[row];
            end = p.rowptr[row + 1];
        }
        const bool active = row < p.nrows && end - start <= p.plan.classes.short_max;
        T acc = Ops::identity();
        // Four entries per lane per step: their column and x loads are independent, so they are
        // in flight together (the gathers, not the arithmetic, bound SpMV).
        constexpr int U = 4;
        for (int64_t k = active ? start + lane : end; k < end; k += G * U) {
            int32_t col[U];
            T a[U];
#pragma unroll
            for (int u = 0; u < U; u++) {
                const int64_t kk = k + u * G;
                col[u] = kk < end ? __ldg(p.colind + kk) : -1;
                a[u] = kk < end ? p.a_value(kk) : T(0);
            }
#pragma unroll
            for (int u = 0; u < U; u++)
                if (col[u] >= 0)
                    acc = Ops::add(acc, Ops::mul(a[u], p.b_value(col[u], 0)));
        }
#pragma unroll
        for (int offset = G / 2; offset > 0; offset /= 2)
            acc = Ops::add(acc, shuffle_xor(acc, offset, G));
        if (active && lane == 0)
            p.write(row, 0, acc);
    }
}

// SpMV, chunks of long rows: a warp per chunk.
template <class Ops> __global__ void spmv_chunks(product_args<Ops> p) {
    using T = typename Ops::value;
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; c < p.plan.n_chunks; c += warps) {
        int64_t row, start, end;
        p.chunk_range(c, &row, &start, &end);
        T acc = p.sum_products(start + lane, end, 32, 0);
#pragma unroll
        for (int offset = 16; offset > 0; offset /= 2)
            acc = Ops::add(acc, shuffle_xor(acc, offset, 32));
        if (lane == 0)
            p.partials[c] = acc;
    }
}

// Calls body(row, start, end, lane) for each row of at most p.short_max entries (longer ones go
// to the mid-row and chunk kernels), G lanes per row.
template <int G, class Ops, class Body> __device__ void for_each_short_row(const product_args<Ops> &p, Body body) {
    const int lane = threadIdx.x % G;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / G;
    for (int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / G; row < p.nrows; row += groups) {
        const int64_t start = p.rowptr[row], end = p.rowptr[row + 1];
        if (end - start <= p.plan.classes.short_max)
            body(row, start, end, lane);
    }
}

// SpMM, short rows: G lanes per row, each lane one output column of a G-wide tile.
template <class Ops, int G> __global__ void spmm_rows(product_args<Ops> p) {
    for_each_short_row<G>(p, [&](int64_t row, int64_t start, int64_t end, int lane) {
        for (int64_t j = lane; j < p.ncols_out; j += G)
            p.write(row, j, p.sum_products(start, end, 1, j));
    });
}

// SpMM, short rows, B row-major with 16-byte aligned rows (rows_of_vectors): G lanes per row, each
// lane V consecutive output columns, so a lane reads a 16-byte vector of a B row per entry (a
// warp reads a whole 512-byte row of a K = 128 float B in one load, where the scalar kernel took
// four passes over the row's entries). store_vec: C takes vector stores too (row-major, aligned,
// no mask); else each element goes through write().
template <class Ops, int G> __global__ void spmm_rows_vec(product_args<Ops> p, bool store_vec) {
    using T = typename Ops::value;
    constexpr int V = kVec<T>;
    using vec = vec_of<T, V>;
    for_each_short_row<G>(p, [&](int64_t row, int64_t start, int64_t end, int lane) {
        for (int64_t j0 = (int64_t)lane * V; j0 < p.ncols_out; j0 += (int64_t)G * V) {
            const vec acc = p.template sum_vec_products<V>(start, end, 1, j0);
            if (store_vec) {
                vec *c = reinterpret_cast<vec *>(&p.C.at(row, j0));
                vec out;
                const vec old = p.accumulate ? *c : vec{};
#pragma unroll
                for (int v = 0; v < V; v++)
                    out.v[v] = p.accumulate ? Ops::add(old.v[v], acc.v[v]) : acc.v[v];
                *c = out;
            } else {
#pragma unroll
                for (int v = 0; v < V; v++)
                    p.write(row, j0 + v, acc.v[v]);
            }
        }
    });
}

// Whether a dense operand is row-major with 16-byte aligned rows of whole vectors.
template <typename T> bool rows_of_vectors(const dense_ref<const T> &d, int64_t K) {
    constexpr int V = kVec<T>;
    return V > 1 && K > 16 && d.col_stride == 1 && K % V == 0 && d.row_stride % V == 0 &&
           reinterpret_cast<uintptr_t>(d.base) % 16 == 0;
}

// SpMM, chunks of long rows: G lanes per chunk over the output columns.
template <class Ops, int G> __global__ void spmm_chunks(product_args<Ops> p) {
    const int lane = threadIdx.x % G;
    const int64_t groups = (int64_t)gridDim.x * blockDim.x / G;
    for (int64_t c = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / G; c < p.plan.n_chunks; c += groups) {
        int64_t row, start, end;
        p.chunk_range(c, &row, &start, &end);
        for (int64_t j = lane; j < p.ncols_out; j += G)
            p.partials[c * p.ncols_out + j] = p.sum_products(start, end, 1, j);
    }
}

// SpMM, mid rows (above kMidRow entries, up to kLongRow): a block per row. Its groups of G lanes
// take every (kBlock / G)-th entry for a tile of G * V output columns, and the groups' sums meet in
// shared memory, where they are added in group order. V > 1 (B as rows of vectors, see
// rows_of_vectors): a lane reads V consecutive columns of a B row in one 16-byte load, so a group
// covers all 128 floats of K = 128 in one pass over the row, where V = 1 makes K / G passes
// (pushpull, 97% of whose entries are in mid rows, took 4 passes at K = 128).
template <class Ops, int G, int V = 1> __global__ void spmm_mid_rows(product_args<Ops> p) {
    using T = typename Ops::value;
    constexpr int kGroups = kBlock / G, kTile = G * V;
    __shared__ T partial[kGroups][kTile];
    const int lane = threadIdx.x % G, group = threadIdx.x / G;
    for (int64_t m = blockIdx.x; m < p.plan.n_mid; m += gridDim.x) {
        const int64_t row = p.plan.mid_rows[m], start = p.rowptr[row], end = p.rowptr[row + 1];
        for (int64_t j0 = 0; j0 < p.ncols_out; j0 += kTile) {
            const int64_t j = j0 + (int64_t)lane * V; // with V > 1, ncols_out is a multiple of V
            if (j < p.ncols_out) {
                if constexpr (V == 1) {
                    partial[group][lane] = p.sum_products(start + group, end, kGroups, j);
                } else {
                    const vec_of<T, V> acc = p.template sum_vec_products<V>(start + group, end, kGroups, j);
#pragma unroll
                    for (int v = 0; v < V; v++)
                        partial[group][lane * V + v] = acc.v[v];
                }
            }
            __syncthreads();
            for (int t = threadIdx.x; t < kTile && j0 + t < p.ncols_out; t += kBlock) {
                T sum = partial[0][t];
                for (int g = 1; g < kGroups; g++)
                    sum = Ops::add(sum, partial[g][t]);
                p.write(row, j0 + t, sum);
            }
            __syncthreads();
        }
    }
}

// Long rows: a thread per (long row, output column) reduces the row's chunks' partials in chunk order.
template <class Ops> __global__ void combine_chunks(product_args<Ops> p) {
    using T = typename Ops::value;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x, pairs = p.plan.n_long * p.ncols_out;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < pairs; t += threads) {
        const int64_t l = t / p.ncols_out, j = t % p.ncols_out;
        T acc = Ops::identity();
        for (int64_t c = p.plan.chunk_first[l]; c < p.plan.chunk_first[l + 1]; c++)
            acc = Ops::add(acc, p.partials[c * p.ncols_out + j]);
        p.write(p.plan.long_rows[l], j, acc);
    }
}

// SPARSERING_SPMV_LANES (2..32) overrides the choice, for tuning.
int64_t spmv_lanes(int64_t mean_row) {
    const int64_t forced = sr_setting("SPARSERING_SPMV_LANES", 0);
    if (forced >= 2 && forced <= 32)
        return forced;
    return mean_row; // a group reads a whole typical row: full 32-byte sectors (measured best on H100)
}

template <class Ops, int G> void launch_spmv_rows(const product_args<Ops> &p, cudaStream_t s) {
    spmv_rows<Ops, G><<<grid_for(p.nrows * G), kBlock, 0, s>>>(p);
}

// dst (cols x rows, leading dimension dst_ld) = src (rows x cols, leading dimension src_ld)^T,
// through 32 x 33 shared-memory tiles (the padding column avoids bank conflicts).
template <typename T>
__global__ void transpose_tiles(const T *src, int64_t rows, int64_t cols, int64_t src_ld, T *dst, int64_t dst_ld) {
    __shared__ T tile[32][33];
    const int64_t tiles_c = (cols + 31) / 32, tiles = ((rows + 31) / 32) * tiles_c;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int64_t r0 = (t / tiles_c) * 32, c0 = (t % tiles_c) * 32;
        for (int y = threadIdx.y; y < 32; y += blockDim.y)
            if (r0 + y < rows && c0 + threadIdx.x < cols)
                tile[y][threadIdx.x] = src[(r0 + y) * src_ld + c0 + threadIdx.x];
        __syncthreads();
        for (int y = threadIdx.y; y < 32; y += blockDim.y)
            if (c0 + y < cols && r0 + threadIdx.x < rows)
                dst[(c0 + y) * dst_ld + r0 + threadIdx.x] = tile[threadIdx.x][y];
        __syncthreads();
    }
}

template <typename T>
sr_status transpose_dense(const T *src, int64_t rows, int64_t cols, int64_t src_ld, T *dst, int64_t dst_ld,
                          cudaStream_t stream) {
    if (rows == 0 || cols == 0)
        return SR_SUCCESS;
    const int64_t tiles = ((rows + 31) / 32) * ((cols + 31) / 32);
    const unsigned grid = (unsigned)(tiles < 65535 * 16 ? tiles : 65535 * 16);
    transpose_tiles<T><<<grid, dim3(32, 8), 0, stream>>>(src, rows, cols, src_ld, dst, dst_ld);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// The same for elements of `type`, whatever the kernel's value type: B is bool under plus_pair and
// any_pair while the output is int32 or float (read as the output's type, a bool B was read 4-8
// times past its end: compute-sanitizer memcheck on test_products, H200).
sr_status transpose_typed(sr_type type, const void *src, int64_t rows, int64_t cols, int64_t src_ld, void *dst,
                          int64_t dst_ld, cudaStream_t stream) {
    switch (sr_type_size(type)) {
    case 1:
        return transpose_dense(static_cast<const uint8_t *>(src), rows, cols, src_ld, static_cast<uint8_t *>(dst),
                               dst_ld, stream);
    case 4:
        return transpose_dense(static_cast<const uint32_t *>(src), rows, cols, src_ld, static_cast<uint32_t *>(dst),
                               dst_ld, stream);
    case 8:
        return transpose_dense(static_cast<const uint64_t *>(src), rows, cols, src_ld, static_cast<uint64_t *>(dst),
                               dst_ld, stream);
    default:
        return sr_error(SR_ERROR_INTERNAL, "transpose: elements of %zu bytes", sr_type_size(type));
    }
}

template <class Ops> struct spmm_launcher {
    using T = typename Ops::value;
    // Column-major B or C (more than one column): the kernels read B rows and write C rows, so
    // large such operands go through row-major scratch (B transposed in; C transposed out, and in
    // when its old values matter); small ones are read and written in place, strided.
    static sr_status run(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                         bool complement, bool accumulate, const spmv_plan *plan, bool queued = false) {
        sr_context_s *ctx = A->ctx;
        cudaStream_t stream = stream_of(ctx);
        const int64_t K = C->ncols;
        const bool b_cols = K > 1 && B->layout == SR_COL_MAJOR, c_cols = K > 1 && C->layout == SR_COL_MAJOR;
        // For a few columns (K <= 16) held in L2 (50 MB on an H100), strided access costs less than
        // the two transposes; from K = 32 on, the transposes win even on small graphs (measured with
        // bench_products.py on debian-depends and pushpull, 2026-11-23).
        const size_t dense_bytes = ((size_t)B->nrows + (size_t)C->nrows) * (size_t)K * sizeof(T);
        if ((!b_cols && !c_cols) || (K <= 16 && dense_bytes <= ((size_t)24 << 20))) {
            SR_TRY(run_row_major(A, B, C, mask, complement, accumulate, plan));
            if (!queued) // queued (a solver's step): the next call on the stream reads C in order
                SR_CUDA_TRY(sr_cuda::wait_stream(stream));
            return SR_SUCCESS;
        }
        buffer<unsigned char> b_rows(ctx); // B's own type: bool under the pair semirings
        buffer<T> c_rows(ctx);
        sr_dense b = *B, c = *C;
        if (b_cols) {
            SR_TRY(b_rows.allocate((size_t)B->nrows * (size_t)K * sr_type_size(B->type)));
            SR_TRY(transpose_typed(B->type, B->data, K, B->nrows, B->ld, b_rows.get(), K, stream));
            b = sr_dense_view(b_rows.get(), B->nrows, K, B->type, SR_ROW_MAJOR, SR_DEVICE);
        }
        if (c_cols) {
            SR_TRY(c_rows.allocate((size_t)C->nrows * (size_t)K));
            if (accumulate || mask)
                SR_TRY(transpose_dense<T>(static_cast<const T *>(C->data), K, C->nrows, C->ld, c_rows.get(), K, stream));
            c = sr_dense_view(c_rows.get(), C->nrows, K, C->type, SR_ROW_MAJOR, SR_DEVICE);
        }
        SR_TRY(run_row_major(A, &b, &c, mask, complement, accumulate, nullptr));
        if (c_cols)
            SR_TRY(transpose_dense<T>(c_rows.get(), C->nrows, K, K, static_cast<T *>(C->data), C->ld, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // once, after the last kernel: C is ready on return
        return SR_SUCCESS;
    }

    // The chunk kernel (G lanes a chunk) and the mid-row kernel (groups of M lanes, reading B as
    // vectors when kVectors), when A has such rows.
    template <int G, int M = G, bool kVectors = false>
    static sr_status launch_mid_and_long(const product_args<Ops> &p, cudaStream_t stream) {
        SR_CUDA_LAUNCHED(); // the short-row kernel before
        if (p.plan.n_chunks > 0) {
            // G lanes walk a chunk's 1024 entries once for G columns (vectors would give fewer lanes
            // the same walk: no shorter)
            spmm_chunks<Ops, G><<<grid_for(p.plan.n_chunks * G), kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        if (p.plan.n_mid > 0) {
            // a block per mid row, a few waves' worth at most
            const int64_t blocks = std::min<int64_t>(p.plan.n_mid, 8 * sm_count());
            spmm_mid_rows<Ops, M, kVectors ? kVec<T> : 1><<<(unsigned)blocks, kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        return SR_SUCCESS;
    }

    static sr_status run_row_major(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                                   bool complement, bool accumulate, const spmv_plan *plan) {
        sr_context_s *ctx = A->ctx;
        cudaStream_t stream = stream_of(ctx);
        const int64_t K = C->ncols, nrows = A->nrows;
        product_args<Ops> p{};
        p.rowptr = A->rowptr;
        p.colind = A->colind;
        p.values = Ops::reads_values ? static_cast<const T *>(A->values) : nullptr;
        p.nrows = nrows;
        p.ncols_out = K;
        dense_ref<T> b = ref_of<T>(B);
        p.B = {b.base, b.row_stride, b.col_stride};
        p.C = ref_of<T>(C);
        p.mask = mask ? mask_view{mask->rowptr, mask->colind, complement} : mask_view{};
        p.accumulate = accumulate;
        if (nrows == 0 || K == 0)
            return SR_SUCCESS;
        if (K == 1 && plan)
            return run_spmv_split(p, A->nnz, ctx, stream, *plan);

        // Which rows are mid (SpMM only) and long comes from A's cached plan: no scan, no round trip,
        // and only the kernels these rows need.
        SR_TRY(row_plan_of(A, row_classes{K == 1 ? kLongRow : kMidRow, kLongRow, kChunk}, &p.plan));
        buffer<T> partials(ctx);
        if (p.plan.n_chunks > 0)
            SR_TRY(partials.allocate((size_t)p.plan.n_chunks * (size_t)K));
        p.partials = partials.get();

        if (K == 1) {
            // Lanes per row: about the mean row length, 2 to 32.
            const int64_t lanes = spmv_lanes(A->nnz / nrows);
            if (lanes <= 2) launch_spmv_rows<Ops, 2>(p, stream);
            else if (lanes <= 4) launch_spmv_rows<Ops, 4>(p, stream);
            else if (lanes <= 8) launch_spmv_rows<Ops, 8>(p, stream);
            else if (lanes <= 16) launch_spmv_rows<Ops, 16>(p, stream);
            else launch_spmv_rows<Ops, 32>(p, stream);
            SR_CUDA_LAUNCHED();
            if (p.plan.n_chunks > 0)
                spmv_chunks<Ops><<<grid_for(p.plan.n_chunks * 32), kBlock, 0, stream>>>(p);
        } else if (K <= 8) {
            spmm_rows<Ops, 8><<<grid_for(nrows * 8), kBlock, 0, stream>>>(p);
            SR_TRY(launch_mid_and_long<8>(p, stream));
        } else if (K <= 16) {
            spmm_rows<Ops, 16><<<grid_for(nrows * 16), kBlock, 0, stream>>>(p);
            SR_TRY(launch_mid_and_long<16>(p, stream));
        } else if (rows_of_vectors<T>(p.B, K)) {
            if constexpr (kVec<T> > 1) {
                const dense_ref<const T> c{p.C.base, p.C.row_stride, p.C.col_stride};
                const bool store_vec = !mask && rows_of_vectors<T>(c, K);
                const int64_t lanes = K / kVec<T>; // > 4: K > 16
                if (lanes <= 8) {
                    spmm_rows_vec<Ops, 8><<<grid_for(nrows * 8), kBlock, 0, stream>>>(p, store_vec);
                    SR_TRY((launch_mid_and_long<32, 8, true>(p, stream)));
                } else if (lanes <= 16) {
                    spmm_rows_vec<Ops, 16><<<grid_for(nrows * 16), kBlock, 0, stream>>>(p, store_vec);
                    SR_TRY((launch_mid_and_long<32, 16, true>(p, stream)));
                } else {
                    spmm_rows_vec<Ops, 32><<<grid_for(nrows * 32), kBlock, 0, stream>>>(p, store_vec);
                    SR_TRY((launch_mid_and_long<32, 32, true>(p, stream)));
                }
            }
        } else {
            spmm_rows<Ops, 32><<<grid_for(nrows * 32), kBlock, 0, stream>>>(p);
            SR_TRY(launch_mid_and_long<32>(p, stream));
        }
        SR_CUDA_LAUNCHED();
        if (p.plan.n_chunks > 0) {
            combine_chunks<Ops><<<grid_for(p.plan.n_long * K), kBlock, 0, stream>>>(p);
            SR_CUDA_LAUNCHED();
        }
        return SR_SUCCESS; // queued on the stream; run() waits once for everything

    }
};

// The hot kernel's room for slots, for the plan's analysis (plus_times on A's type).
template <class Ops> struct hot_room {
    static sr_status run(size_t *bytes) {
        *bytes = hot_slot_bytes<Ops>();
        return SR_SUCCESS;
    }
};

} // namespace

namespace sr_cuda {

int64_t spmv_split_tile_count(const sr_matrix_s *A) { return (A->nnz + kSplitTile - 1) / kSplitTile; }

// a long span has more than kSerialFixup * kSplitTile entries
int64_t spmv_long_spans_room(const sr_matrix_s *A) { return A->nnz / (kSerialFixup * kSplitTile) + 1; }

sr_status spmv_split_tiles(const sr_matrix_s *A, int64_t *first_row, int64_t *spans, int64_t *n_spans) {
    cudaStream_t stream = stream_of(A->ctx);
    split_first_rows<<<grid_for(A->nrows + 1), kBlock, 0, stream>>>(A->rowptr, A->nrows, spmv_split_tile_count(A),
                                                                    first_row);
    SR_CUDA_LAUNCHED();
    buffer<unsigned long long> count(A->ctx);
    SR_TRY(count.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(count.get(), 0, sizeof(unsigned long long), stream));
    find_long_spans<<<grid_for(A->nrows), kBlock, 0, stream>>>(A->rowptr, A->nrows, spans, count.get());
    SR_CUDA_LAUNCHED();
    unsigned long long found = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&found, count.get(), sizeof found, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    *n_spans = (int64_t)found;
    return SR_SUCCESS;
}

bool spmv_runs_split(const sr_matrix_s *A) { return A->nrows > 0 && spmv_use_split(A->nrows, A->nnz); }

size_t spmv_hot_slot_bytes(sr_type type) {
    size_t bytes = 0;
    return dispatch_semiring<hot_room>(SR_PLUS_TIMES, type, &bytes) == SR_SUCCESS ? bytes : 0;
}

sr_status spmv_with_plan(const sr_matrix_s *A, const sr_dense *x, const sr_dense *y, const spmv_plan *plan) {
    return dispatch_semiring<spmm_launcher>(SR_PLUS_TIMES, y->type, A, x, y, nullptr, false, false, plan);
}

} // namespace sr_cuda

extern "C" sr_status sr_cuda_spmm(const sr_matrix_s *A, const sr_dense *B, const sr_dense *C, const sr_matrix_s *mask,
                                  sr_semiring s, bool complement, bool accumulate, bool queued) {
    device_guard guard(A->ctx->device);
    // a plan serves SpMV's split kernel only
    const spmv_plan *plan = nullptr;
    if (C->ncols == 1 && spmv_runs_split(A))
        SR_TRY(spmv_plan_for_call(A, &plan));
    return dispatch_semiring<spmm_launcher>(s, C->type, A, B, C, mask, complement, accumulate, plan, queued);
}

extern "C" sr_status sr_cuda_dense_row_major(sr_context_s *ctx, const sr_dense *d, void *out) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    // a column-major view is its transpose stored row-major: ncols rows of nrows, ld apart
    SR_TRY(transpose_typed(d->type, d->data, d->ncols, d->nrows, d->ld, out, d->ncols, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}
