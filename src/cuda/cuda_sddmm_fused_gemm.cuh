// Well-filled S, the fused SDDMM→SpMM O = N(α·S ⊙ A·Bᵀ)·V by whole tiles (included by
// cuda_sddmm.cu inside its namespace, after fused_params). A block takes a panel of 128 rows and a
// range of columns and, for each 128 x 128 tile its rows touch, computes the tile's scores as the
// SDDMM's GEMM tiles do (cuda_sddmm_gemm.cuh), turns them into the tile's weights in shared memory
// (α·s·score at S's entries, exp(w - top) for the softmax, 0 at the other cells), and multiplies
// that 128 x 128 block by the tile's 128 rows of V, copied into shared memory with cp.async while
// the scores are computed, into the panel's 128 x p sums (shared memory). Per entry the gathered-row
// kernels (fused_chunks) read a row of B and a row of V and spend 2·K + 2·p memory operations on
// K + p multiply-adds; here both products are register-tiled, so a tile costs the same whatever its
// fill and pays where a good share of its cells are entries (FlashAttention's scheme, with S's
// pattern as the mask). float32, rows 16-byte aligned, K and p multiples of 4, p <= 128.
//
// The softmax is online: each tile's row maximum rescales the row's sums (scale[r]) before the
// tile's weights are added. A panel cut into column ranges leaves each range's (top, sum, sums)
// in scratch, merged in range order by merge_ranges.
#pragma once

// The P·V product's thread layout for p <= PW: thread (ty, tx) of a (256 / CG) x CG grid owns rows
// ty + RG·i (i < RM) and the QN4 float4s of columns at tx·4 + CG·4·h, so a warp's reads of the
// weights are float4s of 4 (CG = 8) or 2 (CG = 16) rows, conflict-free at pitch 132.
template <int PW> struct pv_layout;
template <> struct pv_layout<32> {
    static constexpr int CG = 8, QN4 = 1, RM = 4;
};
template <> struct pv_layout<64> {
    static constexpr int CG = 8, QN4 = 2, RM = 4;
};
template <> struct pv_layout<128> {
    static constexpr int CG = 16, QN4 = 2, RM = 8;
};

// Dynamic shared memory: the staged scores (the score GEMM's slices alias them), V's tile and the
// panel's sums, [128][PW + 4] each (rows 16 bytes apart in banks).
constexpr size_t fused_gemm_smem(int pw) {
    return ((size_t)kGemmRows * kGemmOutPitch + 2 * (size_t)kGemmRows * (size_t)(pw + 4)) * sizeof(float);
}

// V's rows c .. c + 127 into Vs (zeros past V's rows and p).
template <int PW> __device__ __forceinline__ void fused_copy_v(const fused_params<float> &p, int64_t c, int64_t ncols, float *Vs) {
    constexpr int chunks = PW / 4;
    for (int f = threadIdx.x; f < kGemmRows * chunks; f += kGemmThreads) {
        const int j = f / chunks, q = f % chunks * 4;
        const bool valid = c + j < ncols && q < p.p;
        copy_async16(Vs + j * (PW + 4) + q, valid ? p.V + (c + j) * p.p + q : p.V, valid);
    }
}

// Sums[r][:] = Sums[r][:]·scale[r] + Σ_j W[r][j]·V[j][:], W the tile's weights (in Cs).
template <int PW> __device__ __forceinline__ void fused_tile_pv(const float *Cs, const float *Vs, float *Sums, const float *scale) {
    using L = pv_layout<PW>;
    constexpr int RG = kGemmThreads / L::CG, pitch = PW + 4;
    const int tx = threadIdx.x % L::CG, ty = threadIdx.x / L::CG;
    float acc[L::RM][4 * L::QN4];
#pragma unroll
    for (int i = 0; i < L::RM; i++) {
        const float s = scale[ty + RG * i];
#pragma unroll
        for (int h = 0; h < L::QN4; h++) {
            const float4 o = *reinterpret_cast<const float4 *>(Sums + (ty + RG * i) * pitch + h * L::CG * 4 + tx * 4);
            acc[i][4 * h + 0] = o.x * s, acc[i][4 * h + 1] = o.y * s;
            acc[i][4 * h + 2] = o.z * s, acc[i][4 * h + 3] = o.w * s;
        }
    }
#pragma unroll 2
    for (int j = 0; j < kGemmCols; j += 4) {
        float4 w[L::RM];
#pragma unroll
        for (int i = 0; i < L::RM; i++)
            w[i] = *reinterpret_cast<const float4 *>(Cs + (ty + RG * i) * kGemmOutPitch + j);
#pragma unroll
        for (int jj = 0; jj < 4; jj++) {
            float4 v[L::QN4];
#pragma unroll
            for (int h = 0; h < L::QN4; h++)
                v[h] = *reinterpret_cast<const float4 *>(Vs + (j + jj) * pitch + h * L::CG * 4 + tx * 4);
#pragma unroll
            for (int i = 0; i < L::RM; i++) {
                const float x = jj == 0 ? w[i].x : jj == 1 ? w[i].y : jj == 2 ? w[i].z : w[i].w;
#pragma unroll
                for (int h = 0; h < L::QN4; h++) {
                    acc[i][4 * h + 0] = fmaf(x, v[h].x, acc[i][4 * h + 0]);
                    acc[i][4 * h + 1] = fmaf(x, v[h].y, acc[i][4 * h + 1]);
                    acc[i][4 * h + 2] = fmaf(x, v[h].z, acc[i][4 * h + 2]);
                    acc[i][4 * h + 3] = fmaf(x, v[h].w, acc[i][4 * h + 3]);
                }
            }
        }
    }
#pragma unroll
    for (int i = 0; i < L::RM; i++)
#pragma unroll
        for (int h = 0; h < L::QN4; h++)
            *reinterpret_cast<float4 *>(Sums + (ty + RG * i) * pitch + h * L::CG * 4 + tx * 4) =
                make_float4(acc[i][4 * h + 0], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
}

// The row state of a panel: the softmax's running maximum and sum, the scale of the row's sums
// for the current tile, and a bit a cell of the tile saying which cells are S's entries.
struct fused_rows_state {
    float top[kGemmRows], sum[kGemmRows], scale[kGemmRows];
    unsigned entry_bits[kGemmRows][kGemmCols / 32];
};

// The staged scores of the tile at column c become its weights: each warp walks its rows' entries
// (walk_tile_entries), writing w = α·s·score in place and marking the cell; then, row by row, the
// softmax's new maximum sets the row's scale and every cell of the row becomes exp(w - top) at an
// entry and 0 elsewhere (w and 0 without the softmax).
__device__ __forceinline__ void fused_tile_weights(const fused_params<float> &p, int64_t rows, int64_t c, int64_t stop,
                                                   float *Cs, int64_t *cursor, const int64_t *row_end,
                                                   int32_t *next_col, fused_rows_state &st) {
    constexpr int kWords = kGemmCols / 32;
    const int lane = threadIdx.x % 32;
    walk_tile_entries(
        p, rows, stop, cursor, row_end, next_col,
        [&](int row, int64_t, int32_t col, float s) {
            const int x = (int)(col - c);
            float *cell = Cs + row * kGemmOutPitch + x;
            *cell = p.alpha * (s * *cell);
            atomicOr(&st.entry_bits[row][x / 32], 1u << (x % 32));
        },
        [&](int row) {
            __syncwarp(); // the row's marks and weights are in
            float *cells = Cs + row * kGemmOutPitch;
            float w[kWords];
            float high = -INFINITY;
#pragma unroll
            for (int q = 0; q < kWords; q++) {
                const bool entry = st.entry_bits[row][q] >> lane & 1u;
                w[q] = entry ? cells[q * 32 + lane] : -INFINITY;
                high = fmaxf(high, w[q]);
            }
            __syncwarp(); // every lane has read the marks
            if (lane < kWords)
                st.entry_bits[row][lane] = 0;
            float scale = 1.f, top = 0.f, part = 0.f;
            if (p.softmax) {
#pragma unroll
                for (int o = 16; o > 0; o /= 2)
                    high = fmaxf(high, __shfl_xor_sync(0xffffffffu, high, o));
                const float old = __shfl_sync(0xffffffffu, lane == 0 ? st.top[row] : 0.f, 0); // lane 0 alone reads
                top = fmaxf(old, high);                                                         // what it writes below
                scale = old == top ? 1.f : fast_exp(old - top); // 0 at the row's first entries
            }
#pragma unroll
            for (int q = 0; q < kWords; q++) {
                const float x = w[q] == -INFINITY ? 0.f : p.softmax ? fast_exp(w[q] - top) : w[q];
                cells[q * 32 + lane] = x;
                part += x;
            }
            if (p.softmax) {
#pragma unroll
                for (int o = 16; o > 0; o /= 2)
                    part += __shfl_xor_sync(0xffffffffu, part, o);
                if (lane == 0) {
                    st.sum[row] = st.sum[row] * scale + part;
                    st.top[row] = top;
                }
            }
            if (lane == 0)
                st.scale[row] = scale;
        });
}

// A block per (panel of 128 rows, column range), grid-strided, as sddmm_gemm_tiles. With one
// range the block writes O (normalized, added when accumulating); with several it leaves the
// range's (top, sum, sums) for merge_ranges in p.partials, (range·nrows + row)·(p + 2).
template <int PW, int Math>
__global__ void __launch_bounds__(kGemmThreads, PW == 32 ? 2 : 1)
    fused_gemm_tiles(fused_params<float> p, int64_t ncols, int64_t ranges, int64_t range_cols) {
    extern __shared__ __align__(16) float fused_smem[];
    float *Cs = fused_smem, *Vs = Cs + kGemmRows * kGemmOutPitch, *Sums = Vs + kGemmRows * (PW + 4);
    __shared__ int64_t cursor[kGemmRows], row_end[kGemmRows];
    __shared__ int32_t next_col[3];
    __shared__ fused_rows_state st;
    for (int i = threadIdx.x; i < kGemmRows * (kGemmCols / 32); i += kGemmThreads)
        st.entry_bits[i / (kGemmCols / 32)][i % (kGemmCols / 32)] = 0;
    const int64_t panels = (p.nrows + kGemmRows - 1) / kGemmRows;
    for (int64_t w = blockIdx.x; w < panels * ranges; w += gridDim.x) {
        const int64_t r0 = w / ranges * kGemmRows, rows = min((int64_t)kGemmRows, p.nrows - r0);
        const int64_t range = w % ranges, c_lo = range * range_cols, c_hi = min(ncols, c_lo + range_cols);
        for (int i = threadIdx.x; i < kGemmRows * (PW + 4); i += kGemmThreads)
            Sums[i] = 0.f;
        if (threadIdx.x < kGemmRows) {
            st.top[threadIdx.x] = -INFINITY;
            st.sum[threadIdx.x] = 0.f;
            st.scale[threadIdx.x] = 1.f; // rows past the panel's end too
        }
        panel_tiles(p.rowptr, p.colind, r0, rows, c_lo, c_hi, cursor, row_end, next_col, [&](int64_t c, int32_t *next) {
            fused_copy_v<PW>(p, c, ncols, Vs); // in flight during the scores
            gemm_tile_product<Math>(p, r0, rows, c, ncols, Cs);
            __syncthreads(); // the scores are whole
            fused_tile_weights(p, rows, c, min(c + kGemmCols, c_hi), Cs, cursor, row_end, next, st);
            copy_async_wait();
            __syncthreads(); // the weights, the scales and V's tile are in
            fused_tile_pv<PW>(Cs, Vs, Sums, st.scale);
        });
        // panel_tiles' last barrier ordered the sums
        for (int i = threadIdx.x; i < rows * PW; i += kGemmThreads) {
            const int r = i / PW, q = i % PW;
            if (q >= p.p)
                continue;
            const float x = Sums[r * (PW + 4) + q];
            if (ranges == 1) {
                put_output(p, r0 + r, q, p.softmax && st.sum[r] > 0.f ? x / st.sum[r] : x);
            } else {
                float *part = p.partials + (range * p.nrows + r0 + r) * (p.p + 2);
                part[2 + q] = x;
                if (q == 0)
                    part[0] = st.top[r], part[1] = st.sum[r];
            }
        }
        __syncthreads(); // the next panel's sums and rows
    }
}

// A warp a row: the ranges' states merged in range order and written.
__global__ void merge_ranges(fused_params<float> p, int64_t ranges) {
    const int64_t warp = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    const int64_t stride = p.nrows * (p.p + 2);
    for (int64_t row = warp; row < p.nrows; row += warps)
        merge_row_states(p, row, ranges, [&](int64_t r) { return p.partials + r * stride + row * (p.p + 2); });
}

template <int PW, int Math>
sr_status launch_fused_gemm_pw(fused_params<float> p, int64_t ncols, sr_context_s *ctx, cudaStream_t stream) {
    auto kernel = fused_gemm_tiles<PW, Math>;
    constexpr size_t smem = fused_gemm_smem(PW);
    panel_grid g;
    SR_TRY(panel_grid_for(kernel, kGemmThreads, smem, (p.nrows + kGemmRows - 1) / kGemmRows, ncols, kGemmCols, &g));
    if (g.blocks == 0)
        return SR_SUCCESS;
    // The ranges' states, (top, sum, p sums) a row a range. Where they do not fit, fewer and
    // wider ranges: down to one a panel, which needs none (slower, the same sums to rounding).
    buffer<float> partials(ctx);
    const int64_t panels = (p.nrows + kGemmRows - 1) / kGemmRows;
    while (g.ranges > 1) {
        const sr_status st = partials.allocate((size_t)g.ranges * (size_t)p.nrows * (size_t)(p.p + 2));
        if (st == SR_SUCCESS)
            break;
        if (st != SR_ERROR_DEVICE_OUT_OF_MEMORY)
            return st;
        panel_grid_split(&g, panels, ncols, kGemmCols, (g.ranges + 1) / 2);
    }
    p.partials = partials.get();
    kernel<<<(unsigned)g.blocks, kGemmThreads, smem, stream>>>(p, ncols, g.ranges, g.range_cols);
    SR_CUDA_LAUNCHED();
    if (g.ranges > 1) {
        merge_ranges<<<grid_for(p.nrows * 32), 256, 0, stream>>>(p, g.ranges);
        SR_CUDA_LAUNCHED();
    }
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    return SR_SUCCESS;
}

template <int Math>
sr_status launch_fused_gemm_math(const fused_params<float> &p, int64_t ncols, sr_context_s *ctx, cudaStream_t stream) {
    if (p.p <= 32)
        return launch_fused_gemm_pw<32, Math>(p, ncols, ctx, stream);
    if (p.p <= 64)
        return launch_fused_gemm_pw<64, Math>(p, ncols, ctx, stream);
    return launch_fused_gemm_pw<128, Math>(p, ncols, ctx, stream);
}

// The fused product by whole tiles, p padded to 32, 64 or 128 columns; the scores by `math`.
sr_status launch_fused_gemm(const fused_params<float> &p, int64_t ncols, tile_math math, sr_context_s *ctx,
                            cudaStream_t stream) {
    if (math == kMathTf32x3)
        return launch_fused_gemm_math<kMathTf32x3>(p, ncols, ctx, stream);
    if (math == kMathTf32)
        return launch_fused_gemm_math<kMathTf32>(p, ncols, ctx, stream);
    return launch_fused_gemm_math<kMathFma>(p, ncols, ctx, stream);
}
