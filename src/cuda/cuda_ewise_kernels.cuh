// The element-wise merges' kernels (cuda_ewise.cu says how the work is split and launches them),
// over an Ops as cuda_spmm_kernels.cuh's: compiled by nvcc for the built-ins and by NVRTC for user
// semirings (cuda_user.cu). Device code only: under NVRTC there is no CUB, so the fill pass scans
// its block's counts itself (block_exclusive_sum).
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

constexpr int kEwiseThreads = 256;
constexpr int kEwiseItems = 8;
constexpr int64_t kEwiseTile = kEwiseThreads * kEwiseItems;

// semiring.h's sr_merge, which NVRTC does not see (cuda_ewise.cu checks that they agree).
enum ewise_merge : int { kMergeUnion = 0, kMergeIntersect = 1, kMergeLeft = 2 };

struct ewise_args {
    csr_ref a, b; // b.rowptr is nullptr under kMergeLeft: B then has no entries
    mask_view mask;
    int merge; // an ewise_merge
    int64_t items, tiles; // A's entries + B's; tiles of kEwiseTile items
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
struct merge_item {
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
    __device__ merge_item next() {
        while (x == xe && y == ye) { // the row is done: on to the next with entries
            i++;
            load_row();
        }
        merge_item t;
        t.row = i;
        t.x = x;
        t.y = y;
        const int32_t cb = y < ye ? p.b.colind[y] : INT32_MAX;
        if (x < xe && p.a.colind[x] <= cb) {
            t.col = p.a.colind[x];
            t.from_a = true;
            t.from_b = cb == t.col && p.merge != kMergeLeft;
            t.keep = p.merge != kMergeIntersect || t.from_b;
            x++;
        } else {
            t.col = cb;
            t.from_a = false;
            t.from_b = true;
            t.keep = p.merge == kMergeUnion && !(x > xs && p.a.colind[x - 1] == cb); // else A's item had it
            y++;
        }
        t.keep = t.keep && mask.allows(i, t.col);
        return t;
    }
};

template <class Ops> __device__ typename Ops::value value_of(const ewise_args &p, const merge_item &t) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(p.a.values), *bv = static_cast<const T *>(p.b.values);
    if (t.from_a && t.from_b)
        return p.merge == kMergeIntersect ? Ops::mul(av[t.x], bv[t.y]) : Ops::add(av[t.x], bv[t.y]);
    return t.from_a ? av[t.x] : bv[t.y];
}

// The rows of a tile's first and last items (k0, k1 - 1), found by one thread each.
__device__ inline void ewise_tile_rows(const ewise_args &p, int64_t k0, int64_t k1, int64_t *rows) {
    if (threadIdx.x < 2)
        rows[threadIdx.x] = p.row_of(threadIdx.x == 0 ? k0 : k1 - 1, 0, p.a.nrows - 1);
    __syncthreads();
}

// The block's exclusive prefix sum of v (every thread calls it), and the block's total; `warp_sums`
// holds a value a warp. Shuffles within each warp, then the first warp scans the warps' totals.
__device__ inline int block_exclusive_sum(int v, int *total, int *warp_sums) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32, warps = kEwiseThreads / 32;
    int inclusive = v;
    for (int o = 1; o < 32; o *= 2) {
        const int up = __shfl_up_sync(~0u, inclusive, o);
        if (lane >= o)
            inclusive += up;
    }
    if (lane == 31)
        warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        int w = lane < warps ? warp_sums[lane] : 0;
        for (int o = 1; o < 32; o *= 2) {
            const int up = __shfl_up_sync(~0u, w, o);
            if (lane >= o)
                w += up;
        }
        if (lane < warps)
            warp_sums[lane] = w; // inclusive over the warps
    }
    __syncthreads();
    const int before = (warp > 0 ? warp_sums[warp - 1] : 0) + inclusive - v;
    *total = warp_sums[warps - 1];
    __syncthreads(); // warp_sums is free again when the caller next scans
    return before;
}

// Fill pass: tile t's kept items go to C from tile_base[t] on, in merged order.
template <class Ops>
__global__ void __launch_bounds__(kEwiseThreads)
    fill_tiles(const __grid_constant__ ewise_args p, const int64_t *tile_base, int32_t *c_colind,
               typename Ops::value *c_values) {
    using T = typename Ops::value;
    __shared__ int warp_sums[kEwiseThreads / 32];
    __shared__ int64_t rows[2];
    __shared__ int32_t cols[kEwiseTile];
    __shared__ T vals[kEwiseTile];
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const int64_t k0 = tile * kEwiseTile, k1 = min(p.items, k0 + kEwiseTile), k = k0 + threadIdx.x * kEwiseItems;
        ewise_tile_rows(p, k0, k1, rows);
        int32_t col[kEwiseItems];
        T val[kEwiseItems];
        unsigned kept_bits = 0;
        int kept = 0;
        if (k < k1) {
            merge_walk walk(p, k, p.row_of(k, rows[0], rows[1]));
#pragma unroll
            for (int j = 0; j < kEwiseItems; j++) {
                if (k + j >= k1)
                    break;
                const merge_item t = walk.next();
                if (!t.keep)
                    continue;
                col[j] = t.col;
                if (c_values)
                    val[j] = value_of<Ops>(p, t);
                kept_bits |= 1u << j;
                kept++;
            }
        }
        int total = 0;
        int rank = block_exclusive_sum(kept, &total, warp_sums);
#pragma unroll
        for (int j = 0; j < kEwiseItems; j++)
            if (kept_bits >> j & 1) {
                cols[rank] = col[j];
                if (c_values)
                    vals[rank] = val[j];
                rank++;
            }
        __syncthreads();
        const int64_t base = tile_base[tile];
        for (int o = threadIdx.x; o < total; o += kEwiseThreads) {
            c_colind[base + o] = cols[o];
            if (c_values)
                c_values[base + o] = vals[o];
        }
        __syncthreads(); // the staging arrays and rows[] are reused
    }
}

} // namespace sr_cuda
