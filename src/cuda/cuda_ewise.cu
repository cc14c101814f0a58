// Element-wise merges on the device: the union (⊕ where both rows have an entry), the
// intersection (⊗), or the left operand alone (to apply a mask), under an optional structural
// mask.
//
// Work is split by merge path, not by row: row i's entries of A and B, merged by column (A's
// first on a tie), sit at [start(i), start(i + 1)) of one sequence with start(i) = A.rowptr[i] +
// B.rowptr[i]. A block takes a tile of kTile consecutive items of that sequence whatever rows
// they belong to, each thread kItems of them: its row by binary search, its place inside the
// row by a merge-path search. So a row of a million entries (a hub's row of M·M) is spread over
// the whole chip and a thousand short rows share a tile. Whether an item is kept is decided
// from it and its neighbours alone: in a union a B item is dropped when the A item before it
// has its column; in an intersection an A item is kept when the B item after it has its
// column. A count pass adds each row's kept items to its row count and each tile's to its tile
// count; a fill pass places a tile's items from the scanned tile counts (a block scan inside)
// through shared memory, so C is written in order and coalesced.
#include "cuda_scan.cuh"
#include "cuda_semiring.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = 256;
constexpr int kItems = 8;
constexpr int64_t kTile = kThreads * kItems;

struct ewise_args {
    sr_matrix_s a, b; // b's rowptr is nullptr for SR_MERGE_LEFT: B then has no entries
    mask_view mask;
    sr_merge merge;
    int64_t items, tiles; // A's entries + B's; tiles of kTile items
    __device__ int64_t start(int64_t i) const { return a.rowptr[i] + (b.rowptr ? b.rowptr[i] : 0); }
    // The row holding item k (< items): the last row in [lo, hi] that starts at or before k.
    __device__ int64_t row_of(int64_t k, int64_t lo, int64_t hi) const {
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (start(mid) <= k)
                lo = mid;
            else
                hi = mid - 1;
        }
        return lo;
    }
};

// Mask row i, walked forward as the columns asked about rise; a binary search places it first.
struct mask_cursor {
    mask_view m;
    int64_t at = 0, end = 0;
    bool placed = false;
    __device__ explicit mask_cursor(const mask_view &mask) : m(mask) {}
    __device__ bool allows(int64_t i, int32_t j) {
        if (m.rowptr == nullptr)
            return true;
        if (!placed) {
            const int64_t s = m.rowptr[i];
            end = m.rowptr[i + 1];
            at = s + lower_bound(m.colind + s, end - s, j);
            placed = true;
        }
        while (at < end && m.colind[at] < j)
            at++;
        return (at < end && m.colind[at] == j) != m.complement;
    }
};

// One item of the merged sequence: its column, whether C keeps it, and where its value comes
// from (A's entry x, B's entry y, or both).
struct item {
    int64_t row, x, y;
    int32_t col;
    bool keep, from_a, from_b;
};

// A thread's walk along the merged sequence from item k on, row after row.
struct merge_walk {
    const ewise_args &p;
    int64_t i, xs, x, xe, ys, y, ye;
    mask_cursor mask;

    __device__ merge_walk(const ewise_args &args, int64_t k, int64_t row) : p(args), i(row), mask(args.mask) {
        load_row();
        // merge path: how many of the row's first d items are A's (A first on equal columns)
        const int64_t d = k - p.start(i), la = xe - xs, lb = ye - ys;
        int64_t lo = d > lb ? d - lb : 0, hi = d < la ? d : la;
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo) / 2;
            if (p.a.colind[xs + mid] <= p.b.colind[ys + d - 1 - mid])
                lo = mid + 1;
            else
                hi = mid;
        }
        x = xs + lo;
        y = ys + d - lo;
    }
    __device__ void load_row() {
        xs = x = p.a.rowptr[i];
        xe = p.a.rowptr[i + 1];
        ys = y = ye = 0;
        if (p.b.rowptr) {
            ys = y = p.b.rowptr[i];
            ye = p.b.rowptr[i + 1];
        }
        mask.placed = false;
    }
    // The next item; there must be one.
    __device__ item next() {
        while (x == xe && y == ye) { // the row is done: on to the next with entries
            i++;
            load_row();
        }
        item t;
        t.row = i;
        t.x = x;
        t.y = y;
        const int32_t cb = y < ye ? p.b.colind[y] : INT32_MAX;
        if (x < xe && p.a.colind[x] <= cb) {
            t.col = p.a.colind[x];
            t.from_a = true;
            t.from_b = cb == t.col && p.merge != SR_MERGE_LEFT;
            t.keep = p.merge != SR_MERGE_INTERSECT || t.from_b;
            x++;
        } else {
            t.col = cb;
            t.from_a = false;
            t.from_b = true;
            t.keep = p.merge == SR_MERGE_UNION && !(x > xs && p.a.colind[x - 1] == cb); // else A's item had it
            y++;
        }
        t.keep = t.keep && mask.allows(i, t.col);
        return t;
    }
};

template <class Ops> __device__ typename Ops::value value_of(const ewise_args &p, const item &t) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(p.a.values), *bv = static_cast<const T *>(p.b.values);
    if (t.from_a && t.from_b)
        return p.merge == SR_MERGE_INTERSECT ? Ops::mul(av[t.x], bv[t.y]) : Ops::add(av[t.x], bv[t.y]);
    return t.from_a ? av[t.x] : bv[t.y];
}

// The rows of tile `tile`'s first and last items, found by one thread each.
__device__ void tile_rows(const ewise_args &p, int64_t k0, int64_t k1, int64_t *rows) {
    if (threadIdx.x < 2)
        rows[threadIdx.x] = p.row_of(threadIdx.x == 0 ? k0 : k1 - 1, 0, p.a.nrows - 1);
    __syncthreads();
}

// Count pass: row_counts[i] += row i's kept items (zeroed before), tile_counts[t] = tile t's.
__global__ void __launch_bounds__(kThreads)
    count_tiles(const __grid_constant__ ewise_args p, int64_t *row_counts, int64_t *tile_counts) {
    using reduce = cub::BlockReduce<int, kThreads>;
    __shared__ typename reduce::TempStorage reduce_storage;
    __shared__ int64_t rows[2];
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const int64_t k0 = tile * kTile, k1 = min(p.items, k0 + kTile), k = k0 + threadIdx.x * kItems;
        tile_rows(p, k0, k1, rows);
        int kept = 0;
        if (k < k1) {
            merge_walk walk(p, k, p.row_of(k, rows[0], rows[1]));
            int64_t row = walk.i;
            int in_row = 0;
            for (int j = 0; j < kItems && k + j < k1; j++) {
                const item t = walk.next();
                if (!t.keep)
                    continue;
                if (t.row != row) {
                    if (in_row)
                        atomicAdd(reinterpret_cast<unsigned long long *>(row_counts + row), in_row);
                    row = t.row;
                    in_row = 0;
                }
                in_row++;
                kept++;
            }
            if (in_row)
                atomicAdd(reinterpret_cast<unsigned long long *>(row_counts + row), in_row);
        }
        const int total = reduce(reduce_storage).Sum(kept);
        if (threadIdx.x == 0)
            tile_counts[tile] = total;
        __syncthreads(); // rows[] and the reduction's storage are reused by the next tile
    }
}

// Fill pass: tile t's kept items go to C from tile_base[t] on, in merged order.
template <class Ops>
__global__ void __launch_bounds__(kThreads)
    fill_tiles(const __grid_constant__ ewise_args p, const int64_t *tile_base, int32_t *c_colind, typename Ops::value *c_values) {
    using T = typename Ops::value;
    using scan = cub::BlockScan<int, kThreads>;
    __shared__ typename scan::TempStorage scan_storage;
    __shared__ int64_t rows[2];
    __shared__ int32_t cols[kTile];
    __shared__ T vals[kTile];
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const int64_t k0 = tile * kTile, k1 = min(p.items, k0 + kTile), k = k0 + threadIdx.x * kItems;
        tile_rows(p, k0, k1, rows);
        int32_t col[kItems];
        T val[kItems];
        unsigned kept_bits = 0;
        int kept = 0;
        if (k < k1) {
            merge_walk walk(p, k, p.row_of(k, rows[0], rows[1]));
#pragma unroll
            for (int j = 0; j < kItems; j++) {
                if (k + j >= k1)
                    break;
                const item t = walk.next();
                if (!t.keep)
                    continue;
                col[j] = t.col;
                if (c_values)
                    val[j] = value_of<Ops>(p, t);
                kept_bits |= 1u << j;
                kept++;
            }
        }
        int rank = 0, total = 0;
        scan(scan_storage).ExclusiveSum(kept, rank, total);
#pragma unroll
        for (int j = 0; j < kItems; j++)
            if (kept_bits >> j & 1) {
                cols[rank] = col[j];
                if (c_values)
                    vals[rank] = val[j];
                rank++;
            }
        __syncthreads();
        const int64_t base = tile_base[tile];
        for (int o = threadIdx.x; o < total; o += kThreads) {
            c_colind[base + o] = cols[o];
            if (c_values)
                c_values[base + o] = vals[o];
        }
        __syncthreads(); // the staging arrays, rows[] and the scan's storage are reused
    }
}

template <class Ops> struct merge_launcher {
    static sr_status run(sr_context_s *ctx, const ewise_args &p, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        const unsigned grid = grid_for(p.tiles * kThreads, kThreads);
        buffer<int64_t> tile_counts(ctx);
        buffer<unsigned char> scan_temp(ctx);
        size_t scan_bytes = 0;
        if (p.tiles > 0) {
            SR_TRY(tile_counts.allocate((size_t)p.tiles));
            SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, tile_counts.get(), tile_counts.get(),
                                                      p.tiles, stream));
            SR_TRY(scan_temp.allocate(scan_bytes));
        }
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, p.a.nrows, p.a.ncols, 0, p.a.type, SR_DEVICE, &C));
        return build_rows(
            ctx, C,
            [&](int64_t *counts) {
                cudaError_t err = cudaMemsetAsync(counts, 0, sizeof(int64_t) * p.a.nrows, stream);
                if (err == cudaSuccess && p.tiles > 0) {
                    count_tiles<<<grid, kThreads, 0, stream>>>(p, counts, tile_counts.get());
                    err = cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, tile_counts.get(),
                                                        tile_counts.get(), p.tiles, stream);
                }
                return err;
            },
            [&] {
                fill_tiles<Ops><<<grid, kThreads, 0, stream>>>(p, tile_counts.get(), C->colind,
                                                               static_cast<T *>(C->values));
            },
            "element-wise", out);
    }
};

} // namespace

extern "C" sr_status sr_cuda_ewise(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B,
                                   const sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                                   sr_matrix_s **C) {
    device_guard guard(ctx->device);
    ewise_args p{};
    p.a = *A;
    p.items = A->nnz;
    if (merge != SR_MERGE_LEFT) {
        p.b = *B;
        p.items += B->nnz;
    }
    if (mask) {
        p.mask.rowptr = mask->rowptr;
        p.mask.colind = mask->colind;
        p.mask.complement = complement;
    }
    p.merge = merge;
    p.tiles = (p.items + kTile - 1) / kTile;
    return dispatch_semiring<merge_launcher>(s, A->type, ctx, p, C);
}
