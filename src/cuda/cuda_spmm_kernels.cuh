// The dense-output product kernels (SpMV, SpMM: cuda_spmm.cu launches them) over an Ops of the
// semiring: compiled by nvcc for the built-ins and by NVRTC for a user semiring's operators
// (cuda_nvrtc.cu), one source for both, so a built-in written again as a user semiring runs the
// same code and gives the same bits. Device code only (cuda_device_base.cuh).
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

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

} // namespace sr_cuda
