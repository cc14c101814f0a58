// Well-filled S (attention masks, bands, S at 20% and more; included by cuda_sddmm.cu inside its
// namespace): a block computes the whole 128 x 128 product of a tile of A's rows and B's rows as
// a register-tiled GEMM, stages it in shared memory and writes the tile's entries from there. The
// dense tiles (cuda_sddmm_dense.cuh) compute a thread an entry from shared memory, two
// shared-memory reads a multiply-add; here a tile costs the same whatever its fill and pays where
// a good share of its cells are entries. float32 plus_times, rows of A and B 16-byte aligned, K a
// multiple of 4 (gemm_tiles_pay in cuda_sddmm.cu).
//
// The product runs on the tensor cores (the descriptor's precision: EXACT splits each operand in
// two TF32 halves, float32's accuracy; TF32 multiplies once) or on the FMA pipes (FLOAT32: a
// thread 8 x 8 outputs, four 16-byte shared-memory reads for 64 multiply-adds). Either way an
// entry's value depends only on its row of A and of B, in k-order, never on the tiling (a row
// block on another GPU gets the same bits).
#pragma once

constexpr int kGemmRows = 128, kGemmCols = 128, kGemmDepth = 16, kGemmThreads = 256;
constexpr int kGemmPitch = kGemmRows + 8;    // A's and B's k-slices, [depth][pitch]: fragment reads hit 32 banks
constexpr int kGemmOutPitch = kGemmCols + 4; // the staged product, [rows][pitch]: rows 16 bytes apart in banks
constexpr size_t kGemmSmem = (size_t)kGemmRows * kGemmOutPitch * sizeof(float); // two stages of slices alias it
static_assert(4 * kGemmDepth * kGemmPitch * sizeof(float) <= kGemmSmem, "two stages of slices fit under the staged tile");

// When the GEMM tiles run (gemm_tiles_pay): a 128 x 128 tile touched by S holding at least this
// many entries (18% of its cells), sampled as the dense tiles' fill is. Measured on the H100
// (bench/probes/sddmm_gemm_probe.cu, kernel alone): a whole tile costs about what 1,600-2,600 of
// its entries cost through the entry kernels, so uniform S at 25% (4.1K a tile) ran 1.6-2.3x
// faster and at 5% (819) 1.5-2x slower; a band of 512 (13K) 2.5-3.8x faster.
// SPARSERING_SDDMM_GEMM=0 turns them off, =1 (or 2) uses them wherever they can run.
constexpr double kGemmFill = 3000;

inline int gemm_setting() {
    return sr_setting("SPARSERING_SDDMM_GEMM", -1);
}

// A slice: columns k0 .. k0 + 15 of rows i0 .. i0 + 127 of A and of rows c .. c + 127 of B, 512
// float4s of each, two a thread, zeros past the rows, the columns and K.
struct gemm_slice {
    float4 a[2], b[2];
};

// P: any parameters with float A and B (row-major, K columns) and K (the SDDMM's, the fused product's).
template <class P>
__device__ __forceinline__ gemm_slice gemm_fetch_slice(const P &p, int64_t i0, int64_t rows,
                                                       int64_t c, int64_t ncols, int k0) {
    gemm_slice g;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int f = threadIdx.x + h * kGemmThreads, r = f / 4, q = f % 4 * 4;
        g.a[h] = g.b[h] = make_float4(0.f, 0.f, 0.f, 0.f);
        if (k0 + q < p.K) { // K is a multiple of 4: a float4 is all in or all out
            if (r < rows)
                g.a[h] = *reinterpret_cast<const float4 *>(p.A + (i0 + r) * p.K + k0 + q);
            if (c + r < ncols)
                g.b[h] = *reinterpret_cast<const float4 *>(p.B + (c + r) * p.K + k0 + q);
        }
    }
    return g;
}

// The slice into As and Bs, k-major (transposed).
__device__ __forceinline__ void gemm_store_slice(const gemm_slice &g, float *As, float *Bs) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int f = threadIdx.x + h * kGemmThreads, r = f / 4, q = f % 4 * 4;
        As[(q + 0) * kGemmPitch + r] = g.a[h].x, As[(q + 1) * kGemmPitch + r] = g.a[h].y;
        As[(q + 2) * kGemmPitch + r] = g.a[h].z, As[(q + 3) * kGemmPitch + r] = g.a[h].w;
        Bs[(q + 0) * kGemmPitch + r] = g.b[h].x, Bs[(q + 1) * kGemmPitch + r] = g.b[h].y;
        Bs[(q + 2) * kGemmPitch + r] = g.b[h].z, Bs[(q + 3) * kGemmPitch + r] = g.b[h].w;
    }
}

// One k-slice of the tile product on the FMA pipes. Thread (ty, tx) of a 16 x 16 grid owns rows
// ty*4 + {0..3} and 64 + ty*4 + {0..3} and the same columns by tx, so a warp's fragment reads are
// float4s of consecutive addresses.
__device__ __forceinline__ void gemm_slice_fma(const float *As, const float *Bs, float (&acc)[8][8]) {
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int k = 0; k < kGemmDepth; k++) {
        const float4 a0 = *reinterpret_cast<const float4 *>(As + k * kGemmPitch + ty * 4);
        const float4 a1 = *reinterpret_cast<const float4 *>(As + k * kGemmPitch + 64 + ty * 4);
        const float4 b0 = *reinterpret_cast<const float4 *>(Bs + k * kGemmPitch + tx * 4);
        const float4 b1 = *reinterpret_cast<const float4 *>(Bs + k * kGemmPitch + 64 + tx * 4);
        const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
        const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
        for (int x = 0; x < 8; x++)
#pragma unroll
            for (int y = 0; y < 8; y++)
                acc[x][y] = fmaf(a[x], b[y], acc[x][y]);
    }
}

__device__ __forceinline__ void gemm_store_fma(const float (&acc)[8][8], float *Cs) {
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
    for (int x = 0; x < 8; x++) {
        float *row = Cs + ((x < 4 ? 0 : 64) + ty * 4 + x % 4) * kGemmOutPitch;
        *reinterpret_cast<float4 *>(row + tx * 4) = make_float4(acc[x][0], acc[x][1], acc[x][2], acc[x][3]);
        *reinterpret_cast<float4 *>(row + 64 + tx * 4) = make_float4(acc[x][4], acc[x][5], acc[x][6], acc[x][7]);
    }
}

// A 16-byte copy from global to shared memory that does not wait (sm_80+); valid = false writes zeros.
__device__ __forceinline__ void copy_async16(void *smem, const void *global, bool valid) {
    const unsigned to = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(to), "l"(global), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void copy_async_wait_group() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void copy_async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// The tensor cores' slices: A's and B's 128 rows of a k-slice row-major, [row][kMmaPitch], copied
// by cp.async as they lie in memory (no transpose through registers: the FMA path's k-major
// stores cost 4-way bank conflicts, more shared-memory time than the tensor cores' fragment
// reads); the pitch of 20 floats puts a fragment's 32 reads (row g, column t) in 32 banks.
// kMmaStages slices in flight, under the staged tile as the FMA path's two.
constexpr int kMmaPitch = kGemmDepth + 4, kMmaStages = 3;
constexpr int kMmaStage = 2 * kGemmRows * kMmaPitch; // A's slice, then B's
static_assert(kMmaStages * kMmaStage * sizeof(float) <= kGemmSmem, "the slices fit under the staged tile");

// Slice k0 of A's rows i0 .. and B's rows c .. into a stage: 512 16-byte copies each, two a
// thread; past the rows or K zero-filled (K is a multiple of 4: a copy is all in or all out).
template <class P>
__device__ __forceinline__ void mma_fetch_slice(const P &p, int64_t i0, int64_t rows, int64_t c, int64_t ncols, int k0,
                                                float *stage) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int f = threadIdx.x + h * kGemmThreads, r = f / 4, q = f % 4 * 4;
        const bool in_k = k0 + q < p.K;
        const bool a_ok = in_k && r < rows, b_ok = in_k && c + r < ncols;
        copy_async16(stage + r * kMmaPitch + q, a_ok ? p.A + (i0 + r) * p.K + k0 + q : p.A, a_ok);
        copy_async16(stage + kGemmRows * kMmaPitch + r * kMmaPitch + q, b_ok ? p.B + (c + r) * p.K + k0 + q : p.B, b_ok);
    }
}

// One k-slice on the tensor cores (cuda_tf32_mma.cuh): warp w owns rows (w / 4)·64 .. + 63 and
// columns (w % 4)·32 .. + 31 of the tile, 4 x 4 fragments of 16 x 8. The split is made in
// registers as the fragments are read (B's once a k-step, A's once a row fragment).
template <int Math> __device__ __forceinline__ void gemm_slice_mma(const float *stage, float (&acc)[4][4][4]) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const float *As = stage + (warp / 4 * 64 + g) * kMmaPitch + t;
    const float *Bs = stage + kGemmRows * kMmaPitch + (warp % 4 * 32 + g) * kMmaPitch + t;
#pragma unroll
    for (int ks = 0; ks < kGemmDepth; ks += 8) {
        uint32_t b_hi[4][2], b_lo[4][2];
#pragma unroll
        for (int ni = 0; ni < 4; ni++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                tf32_split<Math>(Bs[ni * 8 * kMmaPitch + ks + 4 * h], b_hi[ni][h], b_lo[ni][h]);
#pragma unroll
        for (int mi = 0; mi < 4; mi++) {
            const float *a = As + mi * 16 * kMmaPitch + ks;
            const float v[4] = {a[0], a[8 * kMmaPitch], a[4], a[8 * kMmaPitch + 4]};
            uint32_t a_hi[4], a_lo[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                tf32_split<Math>(v[j], a_hi[j], a_lo[j]);
#pragma unroll
            for (int ni = 0; ni < 4; ni++)
                mma_split<Math>(acc[mi][ni], a_hi, a_lo, b_hi[ni], b_lo[ni]);
        }
    }
}

__device__ __forceinline__ void gemm_store_mma(const float (&acc)[4][4][4], float *Cs) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int wr = warp / 4 * 64, wc = warp % 4 * 32;
#pragma unroll
    for (int mi = 0; mi < 4; mi++)
#pragma unroll
        for (int ni = 0; ni < 4; ni++) {
            float *at = Cs + (wr + mi * 16 + g) * kGemmOutPitch + wc + ni * 8 + 2 * t;
            *reinterpret_cast<float2 *>(at) = make_float2(acc[mi][ni][0], acc[mi][ni][1]);
            *reinterpret_cast<float2 *>(at + 8 * kGemmOutPitch) = make_float2(acc[mi][ni][2], acc[mi][ni][3]);
        }
}

// The 128 x 128 product of the panel's rows and B's rows c .. c + 127 into Cs on the FMA pipes.
// Two stages of k-major slices: the next slice's loads are in flight while the FMAs run on this
// one, one barrier a slice.
template <class P>
__device__ __forceinline__ void gemm_tile_product_fma(const P &p, int64_t i0, int64_t rows, int64_t c,
                                                      int64_t ncols, float *smem) {
    constexpr int kStage = 2 * kGemmDepth * kGemmPitch; // A's slice, then B's
    float acc[8][8] = {};
    gemm_store_slice(gemm_fetch_slice(p, i0, rows, c, ncols, 0), smem, smem + kGemmDepth * kGemmPitch);
    __syncthreads();
    for (int k0 = 0, stage = 0; k0 < p.K; k0 += kGemmDepth, stage ^= 1) {
        const bool more = k0 + kGemmDepth < p.K;
        gemm_slice next;
        if (more)
            next = gemm_fetch_slice(p, i0, rows, c, ncols, k0 + kGemmDepth);
        const float *As = smem + stage * kStage, *Bs = As + kGemmDepth * kGemmPitch;
        gemm_slice_fma(As, Bs, acc);
        if (more) // the other stage: its readers passed the last barrier
            gemm_store_slice(next, smem + (stage ^ 1) * kStage, smem + (stage ^ 1) * kStage + kGemmDepth * kGemmPitch);
        __syncthreads(); // the next stage is whole; this one's readers are done (Cs aliases both)
    }
    gemm_store_fma(acc, smem);
}

// The same on the tensor cores: kMmaStages slices in flight by cp.async, one barrier a slice (at
// slice s, every warp is past slice s - 1, whose stage the copy of slice s + kMmaStages - 1 takes).
template <int Math, class P>
__device__ __forceinline__ void gemm_tile_product_mma(const P &p, int64_t i0, int64_t rows, int64_t c,
                                                      int64_t ncols, float *smem) {
    float acc[4][4][4] = {};
    const int slices = (int)((p.K + kGemmDepth - 1) / kGemmDepth);
#pragma unroll
    for (int s = 0; s < kMmaStages - 1; s++) {
        if (s < slices)
            mma_fetch_slice(p, i0, rows, c, ncols, s * kGemmDepth, smem + s * kMmaStage);
        copy_async_commit(); // empty groups keep the count
    }
    for (int s = 0; s < slices; s++) {
        copy_async_wait_group<kMmaStages - 2>(); // slice s is in (this thread's copies)
        __syncthreads();                         // everyone's; slice s - 1's readers are done
        const int ahead = s + kMmaStages - 1;
        if (ahead < slices)
            mma_fetch_slice(p, i0, rows, c, ncols, ahead * kGemmDepth, smem + ahead % kMmaStages * kMmaStage);
        copy_async_commit();
        gemm_slice_mma<Math>(smem + s % kMmaStages * kMmaStage, acc);
    }
    copy_async_wait();
    __syncthreads(); // Cs aliases the stages
    gemm_store_mma(acc, smem);
}

// The 128 x 128 product of the panel's rows and B's rows c .. c + 127 into Cs, by Math (tile_math).
template <int Math, class P>
__device__ __forceinline__ void gemm_tile_product(const P &p, int64_t i0, int64_t rows, int64_t c,
                                                  int64_t ncols, float *smem) {
    if constexpr (Math == kMathFma)
        gemm_tile_product_fma(p, i0, rows, c, ncols, smem);
    else
        gemm_tile_product_mma<Math>(p, i0, rows, c, ncols, smem);
}

constexpr int kGemmWarpRows = kGemmRows / (kGemmThreads / 32); // the rows a warp walks

// Walks the tile's entries of warp w's rows w·16 .. w·16 + 15 (stop: the tile's end within the
// column range): visit(row, e, col, s) for each entry e of the row inside the tile (s: S's value,
// 1 without values), then done(row), the whole warp, once the row's entries are visited (rows in
// any order). Each row's entries inside the tile are the next run from its cursor (S's columns
// rise within a row), at most 128. Eight rows at a time: the first 64 entries of each, and their S
// values, are requested together, so the warp waits on one round of loads, not eight; the rows
// whose 64 all lie in the tile (bands, blocks) then have their other 64 and the column past them
// requested together, a second wait (the first version requested 32 a row, then the rest row by
// row: on the H100 the SDDMM of 8K at 25% took 0.41 ms at K = 32 against 0.34 now, the fused
// product at K = 128 1.56 against 1.44; the band's rows, which need both halves, the same). The
// first column past each run lowers next_col, the next tile's start.
template <class P, class Visit, class Done>
__device__ __forceinline__ void walk_tile_entries(const P &p, int64_t rows, int64_t stop, int64_t *cursor,
                                                  const int64_t *row_end, int32_t *next_col, Visit visit, Done done) {
    constexpr int kRounds = kGemmCols / 64, kBatch = 8; // rounds of 32 lanes in half a tile; rows at once
    const int lane = threadIdx.x % 32;
    auto finish = [&](int row, int64_t at, int32_t next) {
        done(row);
        __syncwarp(); // every lane has read the row's cursor (racecheck: a write after reads, no barrier)
        if (lane == 0) {
            cursor[row] = at;
            if (next != INT32_MAX)
                atomicMin(next_col, next);
        }
    };
#pragma unroll 1
    for (int first = threadIdx.x / 32 * kGemmWarpRows; first < (threadIdx.x / 32 + 1) * kGemmWarpRows; first += kBatch) {
        int32_t col[kBatch][kRounds], after[kBatch];
        float sv[kBatch][kRounds];
        const int valid = (int)min((int64_t)kBatch, max((int64_t)0, rows - first)); // the batch's rows in the panel
        unsigned more = 0;
        for (int half = 0; half < 2; half++) { // entries 0 .. 63 of the batch's rows, then 64 .. 127 of those that fill them
            const int skip = half * 64;
            const unsigned todo = half == 0 ? (1u << valid) - 1u : more; // the rows this half walks
#pragma unroll
            for (int rr = 0; rr < kBatch; rr++) {
                const bool wanted = (todo >> rr & 1u) != 0;
                const int64_t at = wanted ? cursor[first + rr] + skip : 0, end = wanted ? row_end[first + rr] : 0;
#pragma unroll
                for (int h = 0; h < kRounds; h++) {
                    const int64_t e = at + h * 32 + lane;
                    col[rr][h] = e < end ? p.colind[e] : INT32_MAX;
                    sv[rr][h] = e < end && p.svals ? p.svals[e] : 1.f;
                }
                after[rr] = half == 1 && at + 64 < end ? p.colind[at + 64] : INT32_MAX; // past the tile's 128
            }
#pragma unroll
            for (int rr = 0; rr < kBatch; rr++) {
                if ((todo >> rr & 1u) == 0)
                    continue;
                const int row = first + rr;
                const int64_t base = cursor[row] + skip;
                bool ended = false;
#pragma unroll
                for (int h = 0; h < kRounds; h++) {
                    if (ended)
                        continue;
                    const bool in = col[rr][h] < stop;
                    if (in)
                        visit(row, base + h * 32 + lane, col[rr][h], sv[rr][h]);
                    const int taken = __popc(__ballot_sync(0xffffffffu, in)); // a prefix: columns rise
                    if (taken < 32) {
                        finish(row, base + h * 32 + taken, __shfl_sync(0xffffffffu, col[rr][h], taken));
                        ended = true;
                    }
                }
                if (!ended && half == 1) // the tile's 128 columns all the row's: it goes on past them
                    finish(row, base + 64, after[rr]);
                else if (!ended)
                    more |= 1u << rr;
            }
            if (more == 0)
                break;
        }
    }
}

// The staged tile's entries written (c: the tile's first column), with S's and β's values.
template <class Ops>
__device__ __forceinline__ void gemm_write_entries(const sddmm_params<float> &p, int64_t rows, int64_t c, int64_t stop,
                                                   const float *Cs, int64_t *cursor, const int64_t *row_end,
                                                   int32_t *next_col) {
    const bool need_b = p.beta != 0.0 && p.beta_vals;
    walk_tile_entries(
        p, rows, stop, cursor, row_end, next_col,
        [&](int row, int64_t e, int32_t col, float s) {
            p.out[e] = finish_with<Ops>(p, Cs[row * kGemmOutPitch + col - c], s, need_b ? p.beta_vals[e] : 1.f);
        },
        [](int) {});
}

// The tiles a panel's rows touch in columns c_lo .. c_hi - 1, in order: each row keeps a cursor
// to its first entry not yet walked, and a tile begins at the least column any row has left (so
// a band or a block-structured S visits only the tiles it touches). tile(c, next) does the tile
// at column c, the whole block; its walk of the rows (walk_tile_entries) lowers *next, the next
// tile's start. next_col: three slots of block-shared memory, the one read by a tile, the one its
// walk lowers and the one the tile before read, reset meanwhile; so one barrier a tile.
template <class Tile>
__device__ __forceinline__ void panel_tiles(const int64_t *rowptr, const int32_t *colind, int64_t r0, int64_t rows,
                                            int64_t c_lo, int64_t c_hi, int64_t *cursor, int64_t *row_end,
                                            int32_t *next_col, Tile tile) {
    if (threadIdx.x == 0)
        next_col[0] = next_col[1] = next_col[2] = INT32_MAX;
    __syncthreads();
    if (threadIdx.x < rows)
        row_cursor(rowptr, colind, r0 + threadIdx.x, c_lo, &next_col[0], &cursor[threadIdx.x], &row_end[threadIdx.x]);
    for (int t = 0;; t++) {
        __syncthreads(); // the rows' next columns are in; the last tile's work is done
        const int64_t c = next_col[t % 3];
        if (c >= c_hi)
            break;
        if (threadIdx.x == 0)
            next_col[(t + 2) % 3] = INT32_MAX; // read by tile t - 1, lowered by tile t + 1
        tile(c, &next_col[(t + 1) % 3]);
    }
    __syncthreads(); // the next panel's cursors and next_col
}

// A block per (panel of 128 rows, column range), grid-strided. Each row keeps a cursor to its
// first entry not yet written; a tile begins at the least column any row has left, so a band or
// a block-structured S computes only the tiles it touches.
template <class Ops, int Math>
__global__ void __launch_bounds__(kGemmThreads, 2) sddmm_gemm_tiles(sddmm_params<float> p, int64_t ncols,
                                                                    int64_t splits, int64_t split_cols) {
    extern __shared__ __align__(16) float gemm_smem[];
    __shared__ int64_t cursor[kGemmRows], row_end[kGemmRows];
    __shared__ int32_t next_col[3];
    const int64_t panels = (p.nrows + kGemmRows - 1) / kGemmRows;
    for (int64_t w = blockIdx.x; w < panels * splits; w += gridDim.x) {
        const int64_t r0 = w / splits * kGemmRows, rows = min((int64_t)kGemmRows, p.nrows - r0);
        const int64_t c_lo = w % splits * split_cols, c_hi = min(ncols, c_lo + split_cols);
        panel_tiles(p.rowptr, p.colind, r0, rows, c_lo, c_hi, cursor, row_end, next_col, [&](int64_t c, int32_t *next) {
            gemm_tile_product<Math>(p, r0, rows, c, ncols, gemm_smem);
            __syncthreads(); // Cs is whole
            gemm_write_entries<Ops>(p, rows, c, min(c + kGemmCols, c_hi), gemm_smem, cursor, row_end, next);
        });
    }
}

// The launch, on panel_grid_for's grid.
template <class Ops, int Math>
sr_status launch_gemm_tiles_math(const sddmm_params<float> &p, int64_t ncols, cudaStream_t stream) {
    auto kernel = sddmm_gemm_tiles<Ops, Math>;
    panel_grid g;
    SR_TRY(panel_grid_for(kernel, kGemmThreads, kGemmSmem, (p.nrows + kGemmRows - 1) / kGemmRows, ncols, kGemmCols, &g));
    if (g.blocks == 0)
        return SR_SUCCESS;
    kernel<<<(unsigned)g.blocks, kGemmThreads, kGemmSmem, stream>>>(p, ncols, g.ranges, g.range_cols);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

template <class Ops>
sr_status launch_gemm_tiles(const sddmm_params<float> &p, int64_t ncols, tile_math math, cudaStream_t stream) {
    if (math == kMathTf32x3)
        return launch_gemm_tiles_math<Ops, kMathTf32x3>(p, ncols, stream);
    if (math == kMathTf32)
        return launch_gemm_tiles_math<Ops, kMathTf32>(p, ncols, stream);
    return launch_gemm_tiles_math<Ops, kMathFma>(p, ncols, stream);
}
