// The split SpMV's kernels (cuda_spmv_split.cuh launches them), over an Ops as
// cuda_spmm_kernels.cuh's: compiled by nvcc for the built-ins and by NVRTC for user semirings.
// Device code only.
#pragma once

#include "cuda_spmm_kernels.cuh"

namespace sr_cuda {

constexpr int kSplitPerThread = 8;
constexpr int64_t kSplitTile = 32 * kSplitPerThread; // entries per tile: a warp's
constexpr int64_t kSplitLongSegment = 32;             // longer segments of a row in a tile go to the whole warp

// first_row[t], t in [0, tiles]: the first row starting at or after entry t * kSplitTile (nrows
// when none). Row r takes the tiles whose start lies in (rowptr[r - 1], rowptr[r]].
__global__ void split_first_rows(const int64_t *rowptr, int64_t nrows, int64_t tiles, int64_t *first_row) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r <= nrows; r += stride) {
        const int64_t t_begin = r == 0 ? 0 : rowptr[r - 1] / kSplitTile + 1;
        const int64_t t_end = r == nrows ? tiles : rowptr[r] / kSplitTile; // inclusive
        for (int64_t t = t_begin; t <= t_end && t <= tiles; t++)
            first_row[t] = r;
    }
}

template <class Ops> struct split_args {
    using T = typename Ops::value;
    product_args<Ops> p;
    int64_t nnz, tiles;
    const int64_t *first_row;
    T *heads, *tails;  // per tile: the partial of the row it started inside / of the row that leaves it
    int64_t *tail_row; // per tile: the row that leaves it, or -1
};

// The tile's rows: the head (the row holding its first entry, started in an earlier tile) if
// any, then the rows starting in it; rp[j] (lane j's) is rowptr[s0 - 1 + j], the bounds of the
// first 31 rows from s0 - 1 on, loaded together (coalesced) before the gathers.
struct tile_rows {
    int64_t begin, end; // entries
    int64_t s0, s1;     // rows starting in [begin, end) (the last tile: every row after)
    int64_t rp;         // this lane's rowptr[s0 - 1 + lane] (clamped to [0, nrows])
    bool head;
    __device__ int64_t count() const { return s1 - s0 + (head ? 1 : 0); }
    __device__ int64_t row(int64_t j) const { return head ? s0 - 1 + j : s0 + j; }
};

template <class Ops> __device__ tile_rows rows_of_tile(const split_args<Ops> &a, int64_t b, int lane) {
    tile_rows t;
    t.begin = b * kSplitTile;
    t.end = min(a.nnz, t.begin + kSplitTile);
    t.s0 = a.first_row[b];
    t.s1 = b + 1 < a.tiles ? a.first_row[b + 1] : a.p.nrows;
    t.rp = a.p.rowptr[min(max(t.s0 - 1 + lane, (int64_t)0), a.p.nrows)];
    return t;
}

// Row r's segment of tile b summed (the row spans row_lo..row_hi): its head partial when it
// started in an earlier tile, its tail partial when it goes on past this one, else its result.
template <class Ops>
__device__ void segment_done(const split_args<Ops> &a, int64_t b, const tile_rows &t, int64_t r, int64_t row_lo,
                             int64_t row_hi, typename Ops::value acc) {
    if (row_lo < t.begin) {
        a.heads[b] = acc;
    } else if (row_hi > t.end) {
        a.tails[b] = acc;
        a.tail_row[b] = r;
    } else {
        a.p.write(r, 0, acc);
    }
}

// Tile b by one warp: the column and value loads, the tile's first rows and their bounds first,
// then the gathers (x_of maps a stored column to its x value), all in flight together; the
// products go to the warp's own shared tile. Then the lanes take the tile's rows, one each, and
// sum their segments from there in entry order; a segment longer than kSplitLongSegment is
// summed by the whole warp (lane-strided, then a butterfly). No block barrier: warps run through
// their tiles independently, so their loads overlap. The sums depend on the tile's entries only,
// not on where x comes from, so the plain and the planned kernel agree bit for bit.
template <class Ops, class X>
__device__ void split_tile(const split_args<Ops> &a, int64_t b, int lane, typename Ops::value *prod, const X &x_of) {
    using T = typename Ops::value;
    const product_args<Ops> &p = a.p;
    const int64_t begin = b * kSplitTile, end = min(a.nnz, begin + kSplitTile);
    int32_t col[kSplitPerThread];
    T val[kSplitPerThread];
#pragma unroll
    for (int u = 0; u < kSplitPerThread; u++) {
        const int64_t k = begin + u * 32 + lane;
        col[u] = k < end ? __ldg(p.colind + k) : 0;
        val[u] = k < end ? p.a_value(k) : T(0);
    }
    tile_rows t = rows_of_tile(a, b, lane);
    if (lane == 0)
        a.tail_row[b] = -1;
#pragma unroll
    for (int u = 0; u < kSplitPerThread; u++) {
        const bool in = begin + u * 32 + lane < end;
        prod[u * 32 + lane] = in ? Ops::mul(val[u], x_of(col[u])) : Ops::identity();
    }
    // rowptr[s0] is lane 1's bound: the head row (s0 - 1) reaches into this tile when it passes begin
    t.head = t.s0 > 0 && __shfl_sync(0xffffffffu, t.rp, 1) > t.begin;
    __syncwarp();
    const int64_t rows = t.count();
    for (int64_t j0 = 0; j0 < rows; j0 += 32) {
        const int64_t j = j0 + lane, r = t.row(min(j, rows - 1));
        // row r's bounds: from the lanes' window while it lasts (r - (s0 - 1) + 1 < 32), else loaded
        const int64_t w = r - (t.s0 - 1);
        const int64_t lo = __shfl_sync(0xffffffffu, t.rp, (int)min(w, (int64_t)31));
        const int64_t hi = __shfl_sync(0xffffffffu, t.rp, (int)min(w + 1, (int64_t)31));
        const int64_t row_lo = w < 32 ? lo : p.rowptr[r], row_hi = w + 1 < 32 ? hi : p.rowptr[r + 1];
        const int64_t from = max(row_lo, t.begin), to = min(row_hi, t.end);
        const bool mine = j < rows, long_segment = mine && to - from > kSplitLongSegment;
        if (mine && !long_segment) {
            T acc = Ops::identity();
            for (int64_t k = from; k < to; k++)
                acc = Ops::add(acc, prod[k - t.begin]);
            segment_done(a, b, t, r, row_lo, row_hi, acc);
        }
        for (unsigned longs = __ballot_sync(0xffffffffu, long_segment); longs; longs &= longs - 1) {
            const int owner = __ffs(longs) - 1;
            const int64_t lr = __shfl_sync(0xffffffffu, r, owner);
            const int64_t llo = __shfl_sync(0xffffffffu, row_lo, owner), lhi = __shfl_sync(0xffffffffu, row_hi, owner);
            T acc = Ops::identity();
            for (int64_t k = max(llo, t.begin) + lane; k < min(lhi, t.end); k += 32)
                acc = Ops::add(acc, prod[k - t.begin]);
#pragma unroll
            for (int offset = 16; offset > 0; offset /= 2)
                acc = Ops::add(acc, shuffle_xor(acc, offset, 32));
            if (lane == 0)
                segment_done(a, b, t, lr, llo, lhi, acc);
        }
    }
    __syncwarp(); // the tile's products are read before the next tile's overwrite them
}

constexpr int kSplitBlock = 256; // the plain kernel's blocks: 8 warps

template <class Ops> __global__ void __launch_bounds__(kSplitBlock) spmv_split(split_args<Ops> a) {
    using T = typename Ops::value;
    __shared__ T prod[kSplitBlock / 32][kSplitTile];
    const product_args<Ops> &p = a.p;
    const auto x_of = [&p](int32_t c) { return p.b_value(c, 0); };
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = kSplitBlock / 32;
    for (int64_t b = blockIdx.x * (int64_t)warps + warp; b < a.tiles; b += (int64_t)gridDim.x * warps)
        split_tile(a, b, lane, prod[warp], x_of);
}

// The planned kernel (sr_spmv_plan): A's most frequent columns have slots in shared memory, and
// their entries store ~slot in place of the column (a.p.colind is the plan's copy). One block of
// kHotBlock threads stays on each SM, copies the slots' x values (gathered once a call into
// x_hot) into shared memory, then its warps take tiles as the plain kernel's do.
constexpr int kHotBlock = 1024;

// Dynamic shared memory: the warps' tiles, then the slots.
template <class T> constexpr size_t kHotTileBytes = (size_t)(kHotBlock / 32) * kSplitTile * sizeof(T);

template <class Ops>
__global__ void __launch_bounds__(kHotBlock) spmv_split_hot(split_args<Ops> a, const typename Ops::value *x_hot,
                                                            int64_t slots) {
    using T = typename Ops::value;
    extern __shared__ unsigned char hot_memory[];
    T *tiles = reinterpret_cast<T *>(hot_memory), *hot = tiles + kHotTileBytes<T> / sizeof(T);
    for (int64_t i = threadIdx.x; i < slots; i += blockDim.x)
        hot[i] = x_hot[i];
    __syncthreads();
    const product_args<Ops> &p = a.p;
    const auto x_of = [&p, hot](int32_t c) { return c < 0 ? hot[~c] : p.b_value(c, 0); };
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = kHotBlock / 32;
    for (int64_t b = blockIdx.x * (int64_t)warps + warp; b < a.tiles; b += (int64_t)gridDim.x * warps)
        split_tile(a, b, lane, tiles + warp * kSplitTile, x_of);
}

// x_hot[s] = x[column_of[s]]: the slots' values, gathered once a call for every block to copy.
template <class Ops>
__global__ void gather_hot_x(product_args<Ops> p, const int32_t *column_of, int64_t slots, typename Ops::value *x_hot) {
    for (int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; s < slots; s += (int64_t)gridDim.x * blockDim.x)
        x_hot[s] = p.b_value(column_of[s], 0);
}

// A row that leaves tile b (tail_row[b]) gets b's tail and the heads of the tiles it runs
// through: a thread each for rows through at most kSerialFixup more tiles, in order; a block each
// for the longer ones (the plan's long spans, found once per matrix), a fixed tree over their
// heads. Either way the order is fixed: results are deterministic for every semiring.
constexpr int64_t kSerialFixup = 16;

__device__ __forceinline__ int64_t last_tile_of(int64_t row_end) { return (row_end - 1) / kSplitTile; }

template <class Ops> __global__ void spmv_split_fixup(split_args<Ops> a, const int64_t *long_spans, int64_t tile_blocks) {
    using T = typename Ops::value;
    if (blockIdx.x < tile_blocks) {
        const int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
        const int64_t r = b < a.tiles ? a.tail_row[b] : -1;
        if (r < 0)
            return;
        const int64_t last = last_tile_of(a.p.rowptr[r + 1]);
        if (last - b > kSerialFixup)
            return; // a long span: its block sums it
        T acc = a.tails[b];
        for (int64_t b2 = b + 1; b2 <= last; b2++)
            acc = Ops::add(acc, a.heads[b2]);
        a.p.write(r, 0, acc);
        return;
    }
    __shared__ T part[kBlock];
    const int64_t r = long_spans[2 * (blockIdx.x - tile_blocks)], b = long_spans[2 * (blockIdx.x - tile_blocks) + 1];
    const int64_t last = last_tile_of(a.p.rowptr[r + 1]);
    T acc = Ops::identity();
    for (int64_t b2 = b + 1 + threadIdx.x; b2 <= last; b2 += blockDim.x)
        acc = Ops::add(acc, a.heads[b2]);
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kBlock / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] = Ops::add(part[threadIdx.x], part[threadIdx.x + half]);
        __syncthreads();
    }
    if (threadIdx.x == 0)
        a.p.write(r, 0, Ops::add(a.tails[b], part[0]));
}

// The rows whose entries run through more than kSerialFixup tiles past their first: (row, first
// tile) pairs, in any order (each is summed on its own), counted in *count.
__global__ void find_long_spans(const int64_t *rowptr, int64_t nrows, int64_t *spans, unsigned long long *count) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < nrows; r += (int64_t)gridDim.x * blockDim.x) {
        const int64_t lo = rowptr[r], hi = rowptr[r + 1];
        if (hi > lo && last_tile_of(hi) - lo / kSplitTile > kSerialFixup) {
            const unsigned long long i = atomicAdd(count, 1ull);
            spans[2 * i] = r;
            spans[2 * i + 1] = lo / kSplitTile;
        }
    }
}

} // namespace sr_cuda
