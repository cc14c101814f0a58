// The device SpGEMM's dense rows (included by cuda_mxm.cu after cuda_mxm_rows.cuh): rows whose
// products overflow the largest hash table accumulate into a column bitmap and a value array, and
// the bitmap, walked in column order, gives the row sorted without a sort. Two kernels:
//   tiled   the row's columns a tile at a time, the tile's bitmap and values in shared memory
//           (shared atomics); every tile costs each A entry two binary searches in its B row, so it
//           suits rows of few A entries whose B rows are long (Debian's A·Aᵀ: 19.4 ms against
//           31.9 ms global, measured on the H100)
//   global  a bitmap and value row of all the columns in device memory per row of a wave, the
//           row's A entries split over several blocks (L2 atomics); each product is visited once (power-law A·A, whose dense rows have
//           thousands of A entries: 0.51 ms against 0.93 ms tiled)
// bound_and_bin picks between them per row (tiled_is_cheaper). Uses kBlock and kDenseThreads.
#pragma once

__host__ __device__ inline int64_t bitmap_words(int64_t ncols) { return (ncols + 31) / 32; }

// Columns per tile of a tiled dense row: 128 KiB of values (at least 4 bytes a column, which
// keeps narrow types' tiles within the same shared memory) plus the tile's bitmap. A Boolean
// product has no values: its tile is a bitmap alone, 64 KiB for 512K columns, so most rows are
// one tile. No tile is wider than the product (rounded up to a word): a narrow product clears
// and drains only the words it has and leaves the rest of the multiprocessor's shared memory to
// L1. (A block of kDenseThreads at its register count is alone on its multiprocessor whatever
// the tile.)
// The count pass needs no values: its tiles are bitmaps alone (`values` false), so a product of
// up to 512K columns is counted in one tile (R-MAT 18 A·A: 8 tiles of 32K float columns before).
template <class Ops> __host__ __device__ constexpr bool tile_has_values(bool fill) { return Ops::type != SR_TYPE_BOOL && fill; }
template <class Ops> constexpr int64_t dense_tile_max(bool values) {
    using T = typename Ops::value;
    return values ? 128 * 1024 / (sizeof(T) < 4 ? 4 : sizeof(T)) : 512 * 1024;
}
template <class Ops> inline int64_t dense_tile(int64_t ncols, bool values = tile_has_values<Ops>(true)) {
    return std::min<int64_t>(dense_tile_max<Ops>(values), bitmap_words(ncols > 0 ? ncols : 1) * 32);
}
template <class Ops> inline size_t dense_tile_bytes(int64_t tile, bool values) {
    return (values ? sizeof(typename Ops::value) * (size_t)tile : 0) + (size_t)tile / 8;
}

// A row whose tiles cost little next to its products goes to the tiled kernel: a binary search
// per A entry and tile against its ub products (the factor leaves room for the searches' latency).
__device__ inline bool tiled_is_cheaper(int64_t ub, int64_t a_len, int64_t tiles) { return tiles * a_len * 8 <= ub; }

// Calls visit(j, a_ik * b_kj) for the row's products with j in [c0, c1) (that the mask allows,
// with check_mask), the block's threads dealt them out evenly: the row's A entries are taken
// kDenseThreads at a time, each thread finding its entry's part of its B row in [c0, c1) (two
// binary searches), a block scan placing the parts end to end, and then thread t takes products
// t, t + kDenseThreads, ... of the chunk, each found in the placed parts by a search in shared
// memory. Consecutive threads read consecutive B entries, and a long B row (a hub's) is shared by
// the whole block: with a group of lanes an A entry, sized from the mean B row, R-MAT's skewed B
// rows left most lanes idle behind the few walking a hub's row. Contains barriers: the whole
// block calls it.
struct balanced_scratch {
    int64_t start[kDenseThreads];  // the part's first B entry
    int64_t offset[kDenseThreads]; // the part's first product in the chunk
    cub::BlockScan<int64_t, kDenseThreads>::TempStorage scan;
};
template <class Ops, class Visit>
__device__ void for_each_product_balanced(const mxm_args<Ops> &p, int64_t row, int64_t c0, int64_t c1, bool check_mask,
                                          balanced_scratch &s, Visit visit) {
    using T = typename Ops::value;
    const int64_t a_start = p.a_rowptr[row], a_end = p.a_rowptr[row + 1];
    for (int64_t chunk = a_start; chunk < a_end; chunk += kDenseThreads) {
        const int count = (int)(a_end - chunk < kDenseThreads ? a_end - chunk : kDenseThreads);
        int64_t first = 0, len = 0;
        if (threadIdx.x < count) {
            const int32_t k = p.a_colind[chunk + threadIdx.x];
            const int64_t b0 = p.b_rowptr[k], bn = p.b_rowptr[k + 1] - b0;
            const int64_t lo = c0 > 0 ? lower_bound(p.b_colind + b0, bn, (int32_t)c0) : 0;
            const int64_t hi = c1 < p.ncols ? lo + lower_bound(p.b_colind + b0 + lo, bn - lo, (int32_t)c1) : bn;
            first = b0 + lo;
            len = hi - lo;
        }
        int64_t offset = 0, total = 0;
        cub::BlockScan<int64_t, kDenseThreads>(s.scan).ExclusiveSum(len, offset, total);
        s.start[threadIdx.x] = first;
        s.offset[threadIdx.x] = offset;
        __syncthreads();
        for (int64_t q = threadIdx.x; q < total; q += kDenseThreads) {
            int lo = 0, hi = count; // the last part starting at or before q (it holds q: q < total)
            while (hi - lo > 1) {
                const int mid = (lo + hi) / 2;
                if (s.offset[mid] <= q)
                    lo = mid;
                else
                    hi = mid;
            }
            const int64_t kb = s.start[lo] + (q - s.offset[lo]);
            const int32_t j = p.b_colind[kb];
            if (!check_mask || p.mask.allows(row, j))
                visit(j, Ops::mul(p.a(chunk + lo), p.b(kb)));
        }
        __syncthreads(); // the scratch is rewritten by the next chunk
    }
}

// A complemented mask is applied to a dense row once its products are in: the mask row's columns
// in [c0, c1) are cleared from the bitmap (their values reset to the identity), one walk over the
// mask row where a binary search per product cost more than the products (same-generation CFPQ:
// 14.4 ms against 6.4 ms unmasked, its known pairs' rows thousands long). The products skip the
// mask (skips_mask). Ends with a barrier.
template <class Ops> __device__ inline bool skips_mask(const mxm_args<Ops> &p) {
    return p.mask.rowptr != nullptr && p.mask.complement;
}
template <class Ops>
__device__ void clear_complement(const mxm_args<Ops> &p, int64_t row, uint32_t *bits, typename Ops::value *vals,
                                 int64_t c0, int64_t c1) {
    if (skips_mask(p)) {
        const int64_t s = p.mask.rowptr[row], e = p.mask.rowptr[row + 1];
        for (int64_t k = s + lower_bound(p.mask.colind + s, e - s, (int32_t)c0) + threadIdx.x; k < e; k += blockDim.x) {
            const int64_t t = p.mask.colind[k] - c0;
            if (t >= c1 - c0)
                break;
            const uint32_t bit = 1u << (t & 31);
            if (bits[t >> 5] & bit) {
                atomicAnd(&bits[t >> 5], ~bit);
                if (vals)
                    vals[t] = Ops::identity();
            }
        }
    }
    __syncthreads();
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
    const bool with_values = FILL && p.fills_values();
    // A capped bound (2^31 - 1) splits the lanes as the true one would.
    const int64_t entry = rows[blockIdx.x], row = packed_row(entry), ub = packed_bound(entry);
    const int64_t a_start = p.a_rowptr[row], a_len = p.a_rowptr[row + 1] - a_start;
    const int64_t share = (a_len + gridDim.y - 1) / gridDim.y;
    const int64_t from = share * blockIdx.y, to = from + share;
    const int64_t ka0 = a_start + (from < a_len ? from : a_len), ka1 = a_start + (to < a_len ? to : a_len);
    for_each_product_of<kBlock>(p, row, ka0, ka1, lanes_per_entry<kBlock>(ub, a_len), threadIdx.x, !skips_mask(p),
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
    clear_complement(p, row, bits, vals, 0, p.ncols);
    drain_bitmap<Ops, kDenseThreads, FILL>(p, bits, vals, words, 0, FILL && p.fills_values(), running,
                                           scan_storage);
    if (!FILL && threadIdx.x == 0)
        p.counts[row] = running;
}

// Tiled dense rows: a block of kDenseThreads per row, the row's columns taken `tile` at a time
// (dense_tile: the tile's values, when the type has them, then its bitmap, in shared memory).
template <class Ops, bool FILL>
__global__ void __launch_bounds__(kDenseThreads)
    dense_rows_tiled(mxm_args<Ops> p, const int64_t *rows, const unsigned long long *row_count, int64_t tile) {
    using T = typename Ops::value;
    constexpr bool has_values = tile_has_values<Ops>(FILL);
    const int64_t words = tile / 32;
    extern __shared__ __align__(16) unsigned char dense_smem[];
    T *vals = has_values ? reinterpret_cast<T *>(dense_smem) : nullptr;
    uint32_t *bits = reinterpret_cast<uint32_t *>(dense_smem + (has_values ? sizeof(T) * tile : 0));
    __shared__ typename cub::BlockScan<int, kDenseThreads>::TempStorage scan_storage;
    __shared__ balanced_scratch walk;
    __shared__ int64_t running;
    const bool with_values = FILL && p.fills_values();
    for (int64_t t = threadIdx.x; has_values && t < tile; t += kDenseThreads)
        vals[t] = Ops::identity();
    for (int64_t w = threadIdx.x; w < words; w += kDenseThreads)
        bits[w] = 0u;
    const int64_t n = (int64_t)*row_count;
    for (int64_t idx = blockIdx.x; idx < n; idx += gridDim.x) {
        const int64_t row = packed_row(rows[idx]);
        if (threadIdx.x == 0)
            running = FILL ? p.c_rowptr[row] : 0;
        __syncthreads(); // also orders the setup above and the previous row's last read of running
        for (int64_t c0 = 0; c0 < p.ncols; c0 += tile) {
            const int64_t c1 = c0 + tile < p.ncols ? c0 + tile : p.ncols;
            for_each_product_balanced(p, row, c0, c1, !skips_mask(p), walk, [&](int32_t j, T product) {
                const int t = (int)(j - c0);
                atomicOr(&bits[t >> 5], 1u << (t & 31));
                if (with_values)
                    atomic_combine<Ops>(&vals[t], product);
            });
            clear_complement(p, row, bits, with_values ? vals : nullptr, c0, c1);
            drain_bitmap<Ops, kDenseThreads, FILL>(p, bits, vals, words, c0, with_values, running, scan_storage);
        }
        if (!FILL && threadIdx.x == 0)
            p.counts[row] = running;
    }
}
