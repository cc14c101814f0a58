// Row tiles for the fused pattern on short rows (included by cuda_fused.cu inside its namespace).
//
// With a vector of lanes a row, rows of ~10 entries leave most lanes' loads partial and re-read
// the entries past the first chunk for the scatter. Here a block takes tiles of whole rows that
// together hold at most kTileThreads·E entries: its threads load the tile's entries in order
// (every load coalesced), keep them in registers, put x·y of each in shared memory, one thread a
// row sums its row's products, and each thread then adds its own entries, times their row's
// scale, into w. Every entry of X is read from memory once, in full lines. A block works through
// a contiguous range of rows holding an equal share of the entries (found by a block-wide search
// of the row pointers), tile after tile; a row longer than a tile is done by the whole block
// (its dot product reduced across the block, its entries read twice).
#pragma once

constexpr int kTileThreads = 256;
// Rows of this mean length or shorter are short (tile_entries in cuda_fused.cu).
constexpr double kTileMaxMean = 32.0;
// Blocks an SM is meant to hold: while one waits at a barrier or on a load, the others run.
constexpr int kTileBlocksPerSM = 4;

// The first row i in [lo, hi] with rowptr[i] >= target (rowptr nondecreasing, target <= rowptr[hi]),
// found by the whole block: each round samples kTileThreads rows of the range, so 10^7 rows take
// three rounds of one load each instead of 24 dependent loads.
__device__ inline int64_t block_lower_bound(const int64_t *rowptr, int64_t lo, int64_t hi, int64_t target) {
    const int64_t n = kTileThreads;
    while (hi - lo > n) {
        const int64_t span = hi - lo;
        const int below = __syncthreads_count(rowptr[lo + span * threadIdx.x / n] < target);
        const int64_t new_lo = below == 0 ? lo : lo + span * (below - 1) / n + 1;
        hi = below == n ? hi : lo + span * below / n;
        lo = new_lo;
    }
    const int64_t i = lo + threadIdx.x;
    return lo + __syncthreads_count(i < hi && rowptr[i] < target);
}

// The shared memory a tile needs: each entry's product and row, each row's end and scale.
template <typename T> __host__ __device__ constexpr size_t tile_bytes(int E) {
    return (size_t)kTileThreads * E * (sizeof(T) + sizeof(int32_t) + sizeof(uint16_t) + sizeof(T));
}

// One row longer than a tile (row r, entries [b, e)), by the whole block: s = α·v(r)·(X(r,:)·y)
// reduced across the block, then the entries again, added into w by add (XY: w(r) written).
template <typename T, typename Add>
__device__ void tile_long_row(const fused_params<T> &p, int64_t r, int64_t b, int64_t e, T *scratch, Add add) {
    auto value = [&](int64_t k) { return p.values ? p.values[k] : T(1); };
    T d = 0;
    if (p.form != SR_FORM_XTY)
        for (int64_t k = b + threadIdx.x; k < e; k += kTileThreads)
            d += value(k) * p.y[p.colind[k]];
    d = vector_sum<32>(d);
    if (threadIdx.x % 32 == 0)
        scratch[threadIdx.x / 32] = d;
    __syncthreads();
    T dot = 0;
    for (int w = 0; w < kTileThreads / 32; w++)
        dot += scratch[w];
    __syncthreads(); // scratch is read by all before anyone reuses it
    const T s = p.alpha * (p.v ? p.v[r] : T(1)) * (p.form == SR_FORM_XTY ? p.y[r] : dot);
    if (p.form == SR_FORM_XY) {
        if (threadIdx.x == 0)
            p.w[r] = s + (p.z ? p.beta * p.z[r] : T(0));
        return;
    }
    if (s != T(0))
        for (int64_t k = b + threadIdx.x; k < e; k += kTileThreads)
            add(p.colind[k], value(k) * s);
}

// The block's rows [r0, r1) in tiles of at most C = kTileThreads·E entries and `window` rows.
// XY writes w(i) for its rows; XTVXY and XTY call add(column, α·s(i)·X(i,j)) for every entry.
template <int E, typename T, typename Add>
__device__ void tile_rows(const fused_params<T> &p, int64_t r0, int64_t r1, int window, unsigned char *smem,
                          Add add) {
    constexpr int C = kTileThreads * E;
    T *prod = reinterpret_cast<T *>(smem);                        // C: x·y of each entry
    T *scale = prod + C;                                           // window <= C: each row's s(i)
    int32_t *ends = reinterpret_cast<int32_t *>(scale + C);        // window: row ends in the tile
    uint16_t *row_of = reinterpret_cast<uint16_t *>(ends + C);     // C: each entry's row in the tile
    const int t = threadIdx.x;
    for (int64_t r = r0; r < r1;) {
        const int64_t base = p.rowptr[r];
        const int rows_here = r1 - r < window ? (int)(r1 - r) : window;
        // the rows whose entries end within C of base: a prefix, counted a round of the block at a time
        int rows = 0;
        // the first round's rows' v(i) (and y(i) for XTY) load beside their ends, off the critical path
        T first_factor = T(1);
        if (t < rows_here)
            first_factor = (p.v ? p.v[r + t] : T(1)) * (p.form == SR_FORM_XTY ? p.y[r + t] : T(1));
        for (int i0 = 0; i0 < rows_here; i0 += kTileThreads) {
            const int i = i0 + t;
            bool fits = false;
            if (i < rows_here) {
                const int64_t end = p.rowptr[r + 1 + i] - base;
                fits = end <= C;
                ends[i] = fits ? (int32_t)end : C + 1;
            }
            const int here = __syncthreads_count(fits);
            rows += here;
            if (here < kTileThreads)
                break;
        }
        if (rows == 0) { // row r alone holds more than C entries
            tile_long_row<T>(p, r, base, p.rowptr[r + 1], prod, add);
            r += 1;
            continue;
        }
        const int nnz = ends[rows - 1];
        int32_t col[E];
        T x[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const int k = t + e * kTileThreads;
            col[e] = k < nnz ? p.colind[base + k] : -1;
            x[e] = k < nnz ? (p.values ? p.values[base + k] : T(1)) : T(0);
        }
        if (p.form != SR_FORM_XTY) {
#pragma unroll
            for (int e = 0; e < E; e++)
                if (col[e] >= 0)
                    prod[t + e * kTileThreads] = x[e] * p.y[col[e]];
        }
        __syncthreads();
        for (int i = t; i < rows; i += kTileThreads) {
            const int b = i ? ends[i - 1] : 0, e = ends[i];
            T d = 0;
            for (int k = b; k < e; k++) {
                if (p.form != SR_FORM_XTY)
                    d += prod[k];
                row_of[k] = (uint16_t)i;
            }
            const int64_t row = r + i;
            const T factor = i == t ? first_factor : (p.v ? p.v[row] : T(1)) * (p.form == SR_FORM_XTY ? p.y[row] : T(1));
            const T s = p.alpha * factor * (p.form == SR_FORM_XTY ? T(1) : d);
            if (p.form == SR_FORM_XY)
                p.w[row] = s + (p.z ? p.beta * p.z[row] : T(0));
            else
                scale[i] = s;
        }
        __syncthreads();
        if (p.form != SR_FORM_XY) {
#pragma unroll
            for (int e = 0; e < E; e++) {
                if (col[e] < 0)
                    continue;
                const T s = scale[row_of[t + e * kTileThreads]];
                if (s != T(0))
                    add(col[e], x[e] * s);
            }
        }
        r += rows;
        // no barrier here: the next tile writes ends and prod (read before the last barrier) and
        // row_of and scale only after its own barrier, which every thread reaches after this scatter
    }
}

// The block's rows: an equal share of X's entries, the first block from row 0, the last to row m.
__device__ inline void tile_block_rows(const int64_t *rowptr, int64_t m, int64_t *r0, int64_t *r1) {
    const int64_t nnz = rowptr[m], blocks = gridDim.x;
    *r0 = blockIdx.x == 0 ? 0 : block_lower_bound(rowptr, 0, m, nnz * (int64_t)blockIdx.x / blocks);
    *r1 = blockIdx.x + 1 == gridDim.x ? m : block_lower_bound(rowptr, 0, m, nnz * ((int64_t)blockIdx.x + 1) / blocks);
}

// XY by row tiles: w(i) = α·v(i)·(X(i,:)·y) + β·z(i).
template <int E, typename T> __global__ void __launch_bounds__(kTileThreads) tiles_xy(fused_params<T> p, int window) {
    extern __shared__ unsigned char smem_raw[];
    int64_t r0, r1;
    tile_block_rows(p.rowptr, p.m, &r0, &r1);
    tile_rows<E, T>(p, r0, r1, window, smem_raw, [](int32_t, T) {});
}

// XTVXY / XTY by row tiles, w's partial sums in the block's shared memory after the tile's
// (sparse_blocks' modes less PRIVATE: `copies` copies of all of w, one a group of warps, or the
// hot columns' slots with the others added to global memory; slots = 0: all to global memory),
// added to w once at the end.
template <int E, bool MAPPED, typename T>
__global__ void __launch_bounds__(kTileThreads)
    tiles_sums(fused_params<T> p, int window, int slots, int copies, const int32_t *slot_of, const int32_t *column_of) {
    extern __shared__ unsigned char smem_raw[];
    T *part = reinterpret_cast<T *>(smem_raw + tile_bytes<T>(E));
    for (int j = threadIdx.x; j < slots * copies; j += kTileThreads)
        part[j] = 0;
    int64_t r0, r1;
    tile_block_rows(p.rowptr, p.m, &r0, &r1);
    __syncthreads(); // the zeroing before the adds
    T *mine = part + (copies ? threadIdx.x / 32 % copies : 0) * slots;
    tile_rows<E, T>(p, r0, r1, window, smem_raw, [&](int32_t c, T x) {
        const int32_t slot = slots == 0 ? -1 : MAPPED ? slot_of[c] : c;
        if (slot >= 0)
            atomicAdd(&mine[slot], x);
        else
            atomicAdd(&p.w[c], x);
    });
    __syncthreads();
    add_partials(part, slots, copies, p.w, MAPPED ? column_of : nullptr);
}
