// Dense-ish S (the cuSDDMM paper's SM-SM scheme; included by cuda_sddmm.cu inside its namespace):
// a block takes a panel of Ti consecutive rows and a range of columns, copies the panel's rows of
// A into shared memory once, then walks the range a tile of Tj columns at a time, copying that
// tile's rows of B into shared memory, and computes every entry of the panel inside the tile from
// shared memory, a thread an entry. A B row then comes from L2 (or DRAM) once per panel rather
// than once per entry, and the per-entry bookkeeping (index, column, row) is a thread's own
// rather than repeated by the lanes of a group, which is what bounds the L2 kernels on dense-ish
// S at small K (ncu, 16K x 16K at 5%, K = 32: sddmm_interleaved issues at 87% of the SM's rate).
// Each row keeps a cursor to its first entry past the tiles done (S's columns are sorted within
// a row), so the entries of a (row, tile) are a run.
#pragma once

struct dense_tiling {
    int64_t panel_rows;  // Ti
    int64_t tile_cols;   // Tj
    int64_t split_cols;  // the columns a block walks
    int64_t splits;      // column ranges a panel is cut into (blocks a panel)
};

// The tile sizes for rows of K elements: A's panel takes at most 16 KiB, a tile of B at most
// 32 KiB, so four blocks fit on an H100 multiprocessor: with 96 KiB a block (two a multiprocessor)
// the kernel ran at 25% occupancy and waited on its loads (ncu, 16K x 16K at 5%, K = 32).
constexpr size_t kDensePanelBytes = 16 * 1024, kDenseTileBytes = 32 * 1024;

inline dense_tiling dense_tiles_for(int64_t K, size_t es) {
    const size_t row_bytes = (size_t)std::max<int64_t>(K, 1) * es;
    dense_tiling t{};
    t.panel_rows = std::clamp<int64_t>((int64_t)(kDensePanelBytes / row_bytes), 8, 256);
    t.tile_cols = std::clamp<int64_t>((int64_t)(kDenseTileBytes / row_bytes), 8, 1024);
    return t;
}

// When the tiles run: K of at most 32 vectors (128 floats, 64 doubles) and a block's tile holding
// at least kDenseFill entries of its panel (4 a thread), as sampled on a few panels of S
// (sample_tile_fill): measured on the H100 (docs/sddmm.md), the tiles won with 1.6K to 18K
// entries a tile (uniform 5% and 25% at K = 32, a band of 512 at K = 32 and 128: 1.17-1.49x the
// L2 kernels) and lost with 6 to 512 (uniform 5% and 25% at K = 128 and 512: 0.14-0.95x), where
// per-tile costs (the runs' searches, the scan, two barriers, the copy of B's rows) outweigh the
// entries. Past 32 vectors a thread's dot product reads 2·K/VEC vectors of shared memory an entry
// (the band at K = 512, 124 entries a tile, gained 4% forced).
// SPARSERING_SDDMM_DENSE=0 turns the tiles off, =1 uses them wherever they can run.
constexpr double kDenseFill = 1024;
constexpr int64_t kDenseMaxVectors = 32;

inline int dense_setting() {
    return sr_setting("SPARSERING_SDDMM_DENSE", -1);
}

// Entries per (panel, tile of Tj columns it touches) over up to 8 panels spread over S (the tiles
// counted on at most a panel's first 64K entries, their columns copied to the host): a banded or
// clustered S fills its tiles far beyond what its overall density says.
inline sr_status sample_tile_fill(sr_context_s *ctx, const sr_matrix_s *S, const dense_tiling &t, double *fill) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t panels = (S->nrows + t.panel_rows - 1) / t.panel_rows;
    const int samples = (int)std::min<int64_t>(panels, 8);
    int64_t entries = 0, tiles = 0;
    std::vector<int32_t> cols;
    for (int k = 0; k < samples; k++) {
        const int64_t r0 = panels * k / samples * t.panel_rows, rows = std::min(t.panel_rows, S->nrows - r0);
        int64_t first = 0, last = 0;
        SR_CUDA_TRY(cudaMemcpyAsync(&first, S->rowptr + r0, sizeof first, cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(cudaMemcpyAsync(&last, S->rowptr + r0 + rows, sizeof last, cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        const int64_t n = std::min<int64_t>(last - first, 1 << 16);
        cols.resize((size_t)n);
        SR_CUDA_TRY(cudaMemcpyAsync(cols.data(), S->colind + first, (size_t)n * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, stream));
        SR_CUDA_TRY(sr_cuda::wait_stream(stream));
        for (auto &c : cols)
            c = (int32_t)(c / t.tile_cols);
        std::sort(cols.begin(), cols.end());
        entries += last - first; // the tiles of a panel's first 64K entries stand for all of its
        tiles += std::unique(cols.begin(), cols.end()) - cols.begin();
    }
    *fill = tiles ? (double)entries / (double)tiles : 0.0;
    return SR_SUCCESS;
}

// The swizzle of a row's vectors in shared memory: vector q of tile row r sits at q ^ (r & mask),
// so that lanes reading the same vector of different rows hit different banks (mask 7 when a
// row is a multiple of 8 vectors (128 bytes), n - 1 for a power of two n < 8, else 0).
inline int dense_swizzle_mask(int64_t nvec) {
    if (nvec % 8 == 0)
        return 7;
    return (nvec & (nvec - 1)) == 0 ? (int)nvec - 1 : 0;
}

// A block per (panel, column range), grid-strided: per tile, each panel row's run of entries
// inside the tile is found (a binary search from the row's cursor), the runs' lengths are scanned
// across the block,
// and the block's threads take the tile's entries in that flat order, 32 consecutive ones a warp
// (a warp's column reads and output writes coalesce). A thread sums its entry's whole dot product
// from shared memory (A's row and B's, both swizzled): no shuffles, and every lane busy however
// short the runs are.
template <class Ops, int VEC>
__global__ void __launch_bounds__(kThreads) sddmm_dense_tiles(sddmm_params<typename Ops::value> p, int64_t ncols,
                                                             dense_tiling t, int swizzle) {
    using T = typename Ops::value;
    using F = frag<T, VEC>;
    using scan = cub::BlockScan<int, kThreads>;
    extern __shared__ __align__(16) unsigned char dense_smem[];
    __shared__ typename scan::TempStorage scan_space;
    __shared__ int32_t next_col[2];
    __shared__ int64_t run_start[kThreads];
    __shared__ int run_offset[kThreads + 1];
    const int64_t nvec = p.K / VEC;
    F *As = reinterpret_cast<F *>(dense_smem);
    F *Bs = As + t.panel_rows * nvec;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int64_t panels = (p.nrows + t.panel_rows - 1) / t.panel_rows;
    for (int64_t w = blockIdx.x; w < panels * t.splits; w += gridDim.x) {
        const int64_t r0 = w / t.splits * t.panel_rows, rows = min(t.panel_rows, p.nrows - r0);
        const int64_t c_lo = w % t.splits * t.split_cols, c_hi = min(ncols, c_lo + t.split_cols);
        if (threadIdx.x == 0)
            next_col[0] = next_col[1] = INT32_MAX;
        __syncthreads();
        const F *Ag = reinterpret_cast<const F *>(p.A + (size_t)r0 * (size_t)p.K);
        for (int i = threadIdx.x; i < (int)(rows * nvec); i += kThreads) { // 32-bit: at most 4K vectors
            const int r = i / (int)nvec, q = i - r * (int)nvec;
            As[r * nvec + (q ^ (r & swizzle))] = Ag[i];
        }
        // thread i < rows owns row i: its cursor (first entry not yet done) and its end
        int64_t cursor = 0, end = 0;
        if (threadIdx.x < rows)
            row_cursor(p.rowptr, p.colind, r0 + threadIdx.x, c_lo, &next_col[0], &cursor, &end);
        for (int tile = 0;; tile++) {
            __syncthreads(); // the last tile's readers are done; next_col is in
            const int64_t c = next_col[tile & 1];
            if (c >= c_hi)
                break;
            const int64_t width = min(t.tile_cols, c_hi - c);
            const F *Bg = reinterpret_cast<const F *>(p.B + (size_t)c * (size_t)p.K);
            for (int i = threadIdx.x; i < (int)(width * nvec); i += kThreads) {
                const int r = i / (int)nvec, q = i - r * (int)nvec;
                Bs[r * nvec + (q ^ (r & swizzle))] = Bg[i];
            }
            int run = 0;
            if (threadIdx.x < rows) {
                const int64_t stop = cursor + lower_bound(p.colind + cursor, end - cursor, (int32_t)(c + width));
                run_start[threadIdx.x] = cursor;
                run = (int)(stop - cursor);
                cursor = stop;
                if (cursor < end)
                    atomicMin(&next_col[(tile + 1) & 1], p.colind[cursor]);
            }
            int offset = 0, total = 0;
            scan(scan_space).ExclusiveSum(run, offset, total);
            run_offset[threadIdx.x] = offset;
            if (threadIdx.x == 0)
                run_offset[kThreads] = total;
            __syncthreads();
            if (threadIdx.x == 0) // read by all above; the next tile's rows lower it
                next_col[tile & 1] = INT32_MAX;
            for (int64_t base = (int64_t)warp * 32; base < total; base += kThreads) {
                // the row of the warp's first entry by a binary search, then each lane steps on
                int row = 0;
                if (lane == 0) {
                    int lo = 0, hi = (int)rows; // run_offset[lo] <= base < run_offset[hi]
                    while (hi - lo > 1) {
                        const int mid = (lo + hi) / 2;
                        if (run_offset[mid] <= base)
                            lo = mid;
                        else
                            hi = mid;
                    }
                    row = lo;
                }
                row = __shfl_sync(0xffffffffu, row, 0);
                const int64_t k = base + lane;
                if (k >= total)
                    continue;
                while (run_offset[row + 1] <= k)
                    row++;
                const int64_t e = run_start[row] + (k - run_offset[row]);
                const int64_t bt = p.colind[e] - c;
                const F *arow = As + row * nvec, *brow = Bs + bt * nvec;
                T sum = Ops::identity();
#pragma unroll 4
                for (int64_t q = 0; q < nvec; q++) {
                    const F x = arow[q ^ (row & swizzle)], y = brow[q ^ (bt & swizzle)];
#pragma unroll
                    for (int v = 0; v < VEC; v++)
                        sum = Ops::add(sum, Ops::mul(x.v[v], y.v[v]));
                }
                p.out[e] = finish<Ops>(p, sum, e);
            }
        }
        __syncthreads(); // the next panel overwrites A's rows and next_col
    }
}

// The launch, on panel_grid_for's grid.
template <typename T, int VEC, class Ops>
sr_status launch_dense_tiles(const sddmm_params<T> &p, int64_t ncols, dense_tiling t, cudaStream_t stream) {
    const size_t smem = (size_t)(t.panel_rows + t.tile_cols) * (size_t)p.K * sizeof(T);
    auto kernel = sddmm_dense_tiles<Ops, VEC>;
    panel_grid g;
    SR_TRY(panel_grid_for(kernel, kThreads, smem, (p.nrows + t.panel_rows - 1) / t.panel_rows, ncols, t.tile_cols, &g));
    if (g.blocks == 0)
        return SR_SUCCESS;
    t.split_cols = g.range_cols;
    t.splits = g.ranges;
    kernel<<<(unsigned)g.blocks, kThreads, smem, stream>>>(p, ncols, t, dense_swizzle_mask(p.K / VEC));
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <typename T, int VEC, class Ops>
sr_status launch_dense(const sddmm_params<T> &p, int64_t ncols, cudaStream_t stream) {
    return launch_dense_tiles<T, VEC, Ops>(p, ncols, dense_tiles_for(p.K, sizeof(T)), stream);
}
