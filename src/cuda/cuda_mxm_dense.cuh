// The device SpGEMM's dense rows (included by cuda_mxm.cu after cuda_mxm_rows.cuh): rows whose
// products overflow the largest hash table accumulate into a column bitmap and a value array, and
// the bitmap, walked in column order, gives the row sorted without a sort. Two kernels:
//   tiled   the row's columns a tile at a time, the tile's bitmap and values in shared memory
//           (shared atomics); every tile costs each A entry a binary search in its B row, so it
//           suits rows of few A entries whose B rows are long (Debian's A·Aᵀ: 19.4 ms against
//           31.9 ms global, measured on the H100)
//   global  a bitmap and value row of all the columns in device memory per row of a wave, the
//           row's A entries split over several blocks (L2 atomics); each product is visited once (power-law A·A, whose dense rows have
//           thousands of A entries: 0.51 ms against 0.93 ms tiled)
// bound_and_bin picks between them per row (tiled_is_cheaper). Uses kBlock and kDenseThreads.
#pragma once

__host__ __device__ inline int64_t bitmap_words(int64_t ncols) { return (ncols + 31) / 32; }

// Columns per tile of a tiled dense row: 128 KiB of values (at least 4 bytes a column, which
// keeps narrow types' tiles within the same shared memory) plus the tile's bitmap.
template <typename T> constexpr int dense_tile() { return (int)(128 * 1024 / (sizeof(T) < 4 ? 4 : sizeof(T))); }

// A row whose tiles cost little next to its products goes to the tiled kernel: a binary search
// per A entry and tile against its ub products (the factor leaves room for the searches' latency).
__device__ inline bool tiled_is_cheaper(int64_t ub, int64_t a_len, int64_t tiles) { return tiles * a_len * 8 <= ub; }

// Calls visit(j, a_ik * b_kj) for the row's products with j in [c0, c1) that the mask allows.
// B's rows are sorted, so each entry's part in the range is found by a binary search.
template <int TEAM, class Ops, class Visit>
__device__ void for_each_product_in(const mxm_args<Ops> &p, int64_t row, int64_t ub, int lane, int64_t c0, int64_t c1,
                                    Visit visit) {
    const int64_t a_start = p.a_rowptr[row], a_end = p.a_rowptr[row + 1];
    const int width = lanes_per_entry<TEAM>(ub, a_end - a_start), sub = lane % width;
    for (int64_t ka = a_start + lane / width; ka < a_end; ka += TEAM / width) {
        const int32_t k = p.a_colind[ka];
        const typename Ops::value a = p.a(ka);
        const int64_t b0 = p.b_rowptr[k], bn = p.b_rowptr[k + 1] - b0;
        for (int64_t kb = b0 + lower_bound(p.b_colind + b0, bn, (int32_t)c0) + sub; kb < b0 + bn; kb += width) {
            const int32_t j = p.b_colind[kb];
            if (j >= c1)
                break;
            if (p.mask.allows(row, j))
                visit(j, Ops::mul(a, p.b(kb)));
        }
    }
}

// Drains words [0, words) of a bitmap in column order with a block scan: the fill pass writes
// column c0 + bit and its value at the row's running position; each word read is cleared and
// each value reset to the identity, so the next row (or tile) starts clean. running (shared)
// advances by the entries drained.
template <class Ops, int THREADS, bool FILL>
__device__ void drain_bitmap(const mxm_args<Ops> &p, uint32_t *bits, typename Ops::value *vals, int64_t words,
                             int64_t c0, bool with_values, int64_t &running,
                             typename cub::BlockScan<int, THREADS>::TempStorage &scan_storage) {
    for (int64_t w0 = 0; w0 < words; w0 += THREADS) {
        const int64_t w = w0 + threadIdx.x;
        uint32_t word = w < words ? bits[w] : 0u;
        if (word)
            bits[w] = 0u;
        int offset, total;
        cub::BlockScan<int, THREADS>(scan_storage).ExclusiveSum(__popc(word), offset, total);
        if constexpr (FILL)
            for (; word; word &= word - 1) {
                const int64_t t = w * 32 + __ffs(word) - 1;
                p.c_colind[running + offset] = (int32_t)(c0 + t);
                if (with_values) {
                    p.c_values[running + offset] = vals[t];
                    vals[t] = Ops::identity();
                }
                offset++;
            }
        __syncthreads();
        if (threadIdx.x == 0)
            running += total;
        __syncthreads();
    }
}

// Global dense rows, a wave at a time: row r of the wave owns bitmap and value row r (the values
// at the identity between rows, set once when allocated). Each row's A entries are split over
// gridDim.y blocks (blockIdx.x the row), which combine through L2 atomics: a power-law hub row has
// thousands of A entries, and a block per row left those few rows running long after the rest
// of the pass (0.52 ms for 21 rows of the 300K power-law A·A, ncu).
template <class Ops, bool FILL>
__global__ void dense_global_scatter(mxm_args<Ops> p, const int64_t *rows, uint32_t *bitmaps,
                                     typename Ops::value *vals_all) {
    using T = typename Ops::value;
    const int64_t words = bitmap_words(p.ncols);
    uint32_t *bits = bitmaps + (size_t)blockIdx.x * (size_t)words;
    T *vals = vals_all ? vals_all + (size_t)blockIdx.x * (size_t)p.ncols : nullptr;
    const bool with_values = FILL && p.c_values != nullptr;
    // A capped bound (2^31 - 1) splits the lanes as the true one would.
    const int64_t entry = rows[blockIdx.x], row = packed_row(entry), ub = packed_bound(entry);
    const int64_t a_start = p.a_rowptr[row], a_len = p.a_rowptr[row + 1] - a_start;
    const int64_t share = (a_len + gridDim.y - 1) / gridDim.y;
    const int64_t from = share * blockIdx.y, to = from + share;
    const int64_t ka0 = a_start + (from < a_len ? from : a_len), ka1 = a_start + (to < a_len ? to : a_len);
    for_each_product_of<kBlock>(p, row, ka0, ka1, lanes_per_entry<kBlock>(ub, a_len), threadIdx.x,
                                [&](int32_t j, T product) {
                                    atomicOr(&bits[j >> 5], 1u << (j & 31));
                                    if (with_values)
                                        atomic_combine<Ops>(&vals[j], product);
                                });
}

// Then a block per row of the wave drains its bitmap: the row's count, or its entries.
template <class Ops, bool FILL>
__global__ void __launch_bounds__(kDenseThreads) dense_global_drain(mxm_args<Ops> p, const int64_t *rows,
                                                                    uint32_t *bitmaps, typename Ops::value *vals_all) {
    using T = typename Ops::value;
    __shared__ typename cub::BlockScan<int, kDenseThreads>::TempStorage scan_storage;
    __shared__ int64_t running;
    const int64_t words = bitmap_words(p.ncols);
    uint32_t *bits = bitmaps + (size_t)blockIdx.x * (size_t)words;
    T *vals = vals_all ? vals_all + (size_t)blockIdx.x * (size_t)p.ncols : nullptr;
    const int64_t row = packed_row(rows[blockIdx.x]);
    if (threadIdx.x == 0)
        running = FILL ? p.c_rowptr[row] : 0;
    __syncthreads();
    drain_bitmap<Ops, kDenseThreads, FILL>(p, bits, vals, words, 0, FILL && p.c_values != nullptr, running,
                                           scan_storage);
    if (!FILL && threadIdx.x == 0)
        p.counts[row] = running;
}

// Tiled dense rows: a block of kDenseThreads per row (one per multiprocessor: its tile fills the
// shared memory), the row's columns taken TILE at a time.
template <class Ops, bool FILL, int TILE>
__global__ void __launch_bounds__(kDenseThreads) dense_rows_tiled(mxm_args<Ops> p, const int64_t *rows,
                                                                  const unsigned long long *row_count) {
    using T = typename Ops::value;
    constexpr int kWords = TILE / 32;
    extern __shared__ __align__(16) unsigned char dense_smem[];
    T *vals = reinterpret_cast<T *>(dense_smem);
    uint32_t *bits = reinterpret_cast<uint32_t *>(dense_smem + sizeof(T) * TILE);
    __shared__ typename cub::BlockScan<int, kDenseThreads>::TempStorage scan_storage;
    __shared__ int64_t running;
    const bool with_values = FILL && p.c_values != nullptr;
    for (int t = threadIdx.x; t < TILE; t += kDenseThreads)
        vals[t] = Ops::identity();
    for (int w = threadIdx.x; w < kWords; w += kDenseThreads)
        bits[w] = 0u;
    const int64_t n = (int64_t)*row_count;
    for (int64_t idx = blockIdx.x; idx < n; idx += gridDim.x) {
        const int64_t entry = rows[idx], row = packed_row(entry), ub = packed_bound(entry);
        if (threadIdx.x == 0)
            running = FILL ? p.c_rowptr[row] : 0;
        __syncthreads(); // also orders the setup above and the previous row's last read of running
        for (int64_t c0 = 0; c0 < p.ncols; c0 += TILE) {
            const int64_t c1 = c0 + TILE < p.ncols ? c0 + TILE : p.ncols;
            for_each_product_in<kDenseThreads>(p, row, ub, threadIdx.x, c0, c1, [&](int32_t j, T product) {
                const int t = (int)(j - c0);
                atomicOr(&bits[t >> 5], 1u << (t & 31));
                if (with_values)
                    atomic_combine<Ops>(&vals[t], product);
            });
            __syncthreads();
            drain_bitmap<Ops, kDenseThreads, FILL>(p, bits, vals, kWords, c0, with_values, running, scan_storage);
        }
        if (!FILL && threadIdx.x == 0)
            p.counts[row] = running;
    }
}
