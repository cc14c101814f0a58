// SpMV split by entries, for large matrices with skewed rows (included by cuda_spmm.cu inside its
// anonymous namespace, so the headers it needs are included there, at file scope).
//
// The row kernel gives each row a fixed group of lanes, so on a power-law matrix most lanes of a
// group idle on the many short rows while its warp waits for the long ones. Here a block takes a
// tile of kSplitTile consecutive entries whatever rows they belong to: every lane loads the same
// number of entries, coalesced, and their products go to shared memory. Then the tile's rows are
// reduced from there, a thread per short segment and a warp per long one. A row that crosses
// tiles leaves a partial in each (its head in a tile it started before, its tail in the tile it
// started in); a fix-up pass adds them in tile order, so results are deterministic for every
// semiring, as in the row kernel.
#pragma once

constexpr int kSplitThreads = 256;
constexpr int kSplitPerThread = 4;
constexpr int64_t kSplitTile = kSplitThreads * kSplitPerThread; // entries per tile
constexpr int64_t kSplitLongSegment = 32; // longer segments of a row in a tile go to a warp

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
    T *heads, *tails; // per tile: the partial of the row it started inside / of the row that leaves it
};

// The tile's rows: the head (the row holding its first entry, started in an earlier tile) if
// any, then the rows starting in it. Row j of the tile, and whether there is a head.
struct tile_rows {
    int64_t begin, end; // entries
    int64_t s0, s1;     // rows starting in [begin, end) (the last tile: every row after)
    bool head;
    __device__ int64_t count() const { return s1 - s0 + (head ? 1 : 0); }
    __device__ int64_t row(int64_t j) const { return head ? s0 - 1 + j : s0 + j; }
};

template <class Ops> __device__ tile_rows rows_of_tile(const split_args<Ops> &a, int64_t b) {
    tile_rows t;
    t.begin = b * kSplitTile;
    t.end = min(a.nnz, t.begin + kSplitTile);
    t.s0 = a.first_row[b];
    t.s1 = b + 1 < a.tiles ? a.first_row[b + 1] : a.p.nrows;
    t.head = t.s0 > 0 && a.p.rowptr[t.s0] > t.begin;
    return t;
}

template <class Ops>
__device__ void finish_segment(const split_args<Ops> &a, int64_t b, const tile_rows &t, int64_t r,
                               typename Ops::value acc) {
    if (a.p.rowptr[r] < t.begin)
        a.heads[b] = acc;
    else if (a.p.rowptr[r + 1] > t.end)
        a.tails[b] = acc;
    else
        a.p.write(r, 0, acc);
}

template <class Ops> __global__ void __launch_bounds__(kSplitThreads) spmv_split(split_args<Ops> a) {
    using T = typename Ops::value;
    __shared__ T prod[kSplitTile];
    __shared__ int64_t long_rows[kSplitTile / kSplitLongSegment];
    __shared__ int n_long;
    const product_args<Ops> &p = a.p;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    for (int64_t b = blockIdx.x; b < a.tiles; b += gridDim.x) {
        const tile_rows t = rows_of_tile(a, b);
        if (tid == 0)
            n_long = 0;
        // every lane's column and value loads first, then the gathers: all in flight together
        int32_t col[kSplitPerThread];
        T val[kSplitPerThread];
#pragma unroll
        for (int u = 0; u < kSplitPerThread; u++) {
            const int64_t k = t.begin + u * kSplitThreads + tid;
            col[u] = k < t.end ? __ldg(p.colind + k) : -1;
            val[u] = k < t.end ? p.a_value(k) : T(0);
        }
#pragma unroll
        for (int u = 0; u < kSplitPerThread; u++)
            prod[u * kSplitThreads + tid] = col[u] >= 0 ? Ops::mul(val[u], p.b_value(col[u], 0)) : Ops::identity();
        __syncthreads();
        const int64_t rows = t.count();
        for (int64_t j = tid; j < rows; j += kSplitThreads) {
            const int64_t r = t.row(j);
            const int64_t from = max(p.rowptr[r], t.begin), to = min(p.rowptr[r + 1], t.end);
            if (to - from > kSplitLongSegment) {
                long_rows[atomicAdd(&n_long, 1)] = r;
                continue;
            }
            T acc = Ops::identity();
            for (int64_t k = from; k < to; k++)
                acc = Ops::add(acc, prod[k - t.begin]);
            finish_segment(a, b, t, r, acc);
        }
        __syncthreads();
        for (int w = warp; w < n_long; w += kSplitThreads / 32) {
            const int64_t r = long_rows[w];
            const int64_t from = max(p.rowptr[r], t.begin), to = min(p.rowptr[r + 1], t.end);
            T acc = Ops::identity();
            for (int64_t k = from + lane; k < to; k += 32)
                acc = Ops::add(acc, prod[k - t.begin]);
#pragma unroll
            for (int offset = 16; offset > 0; offset /= 2)
                acc = Ops::add(acc, shuffle_xor(acc, offset, 32));
            if (lane == 0)
                finish_segment(a, b, t, r, acc);
        }
        __syncthreads();
    }
}

// A row that leaves tile b (its last starting row) gets b's tail and the heads of the tiles it
// runs through, in order.
template <class Ops> __global__ void spmv_split_fixup(split_args<Ops> a) {
    using T = typename Ops::value;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t b = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; b < a.tiles; b += stride) {
        const tile_rows t = rows_of_tile(a, b);
        if (t.s1 == t.s0 || a.p.rowptr[t.s1] <= t.end)
            continue;
        const int64_t r = t.s1 - 1, row_end = a.p.rowptr[r + 1];
        T acc = a.tails[b];
        for (int64_t b2 = b + 1; b2 < a.tiles && b2 * kSplitTile < row_end; b2++)
            acc = Ops::add(acc, a.heads[b2]);
        a.p.write(r, 0, acc);
    }
}

// Which SpMV kernel: SPARSERING_SPMV_KERNEL=rows|split forces one, for tuning and tests. The
// split kernel won on every matrix measured on the H100 (power-law 2M rows 0.43 -> 0.35 ms,
// Debian's dependency graph 0.054 -> 0.035, pushpull 0.052 -> 0.036); the row kernel stays for
// matrices with more rows than entries, where a tile would loop over thousands of empty rows.
inline bool spmv_use_split(int64_t nrows, int64_t nnz) {
    // read each call (a getenv is ~0.1 us), so that a test can force one kernel for a while
    const char *env = getenv("SPARSERING_SPMV_KERNEL");
    const int forced = env && strcmp(env, "split") == 0 ? 1 : env && strcmp(env, "rows") == 0 ? 0 : 2; // 2: choose
    if (nnz == 0 || forced == 0)
        return false;
    return forced == 1 || nnz >= nrows;
}

template <class Ops> sr_status run_spmv_split(const product_args<Ops> &p, int64_t nnz, sr_context_s *ctx,
                                              cudaStream_t stream) {
    using T = typename Ops::value;
    split_args<Ops> a;
    a.p = p;
    a.nnz = nnz;
    a.tiles = (nnz + kSplitTile - 1) / kSplitTile;
    buffer<int64_t> first_row(ctx);
    buffer<T> heads(ctx), tails(ctx);
    SR_TRY(first_row.allocate((size_t)a.tiles + 1));
    SR_TRY(heads.allocate((size_t)a.tiles));
    SR_TRY(tails.allocate((size_t)a.tiles));
    a.first_row = first_row.get();
    a.heads = heads.get();
    a.tails = tails.get();
    split_first_rows<<<grid_for(p.nrows + 1), kBlock, 0, stream>>>(p.rowptr, p.nrows, a.tiles, first_row.get());
    SR_CUDA_LAUNCHED();
    spmv_split<Ops><<<grid_for(a.tiles * kSplitThreads, kSplitThreads), kSplitThreads, 0, stream>>>(a);
    SR_CUDA_LAUNCHED();
    spmv_split_fixup<Ops><<<grid_for(a.tiles), kBlock, 0, stream>>>(a);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(cudaStreamSynchronize(stream));
    return SR_SUCCESS;
}
