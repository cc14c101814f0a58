// SDDMM on dense-ish S through register-tiled dense products (run 2026-11-26 on the H100; the FMA
// tiles became the library's GEMM tiles, src/cuda/cuda_sddmm_gemm.cuh): out[e] = (A·Bᵀ)[i, j] at S's entries, A (m x K) and B (n x K) row-major float32, K a
// multiple of 16. The library's dense tiles (src/cuda/cuda_sddmm_dense.cuh) compute a thread an
// entry from shared memory: 2·K shared-memory reads an entry, which is what keeps them at 1.0-1.7x
// cuSPARSE on 8K x 8K at 25% and on a band of 512 (README). Here a block computes the whole
// 128 x 128 product of a tile that holds entries, K in steps of 16 through shared memory, stages
// it in shared memory and writes the tile's entries from there: on the FMA pipes (256 threads of
// 8 x 8 outputs: 4·K/8 shared reads per 64 multiply-adds) and on the tensor cores (mma.sync
// m16n8k8 TF32; plain TF32 for its speed alone, and 3xTF32, each operand split into two TF32
// parts, for about float32's accuracy; the 10x cuSPARSE target at K = 512 needs more than the FMA
// pipes' 67 TFLOP/s). Every cell of a touched tile is computed, so this pays where tiles are well
// filled (a band, 25% uniform) and not at 5%; the question for the library is from what fill on,
// and by how much against cuSPARSE's SDDMM (run here, same process, float64 reference for errors).
// The tiles' entries come in tile order from the host (tile_ptr, the entry's index in S and its
// place in the tile), which the library would build once and keep with S as it keeps its panel
// order.
// H100, kernel medians (K = 32 / 128 / 512): 8K x 8K at 25% FMA 0.276 / 0.573 / 1.926 ms, TF32
// 0.243 / 0.373 / 0.956 (err 1.7-3e-4), 3xTF32 0.448 / 0.754 / 2.181, cuSPARSE 0.209 / 0.774 / 2.162;
// 16K at 5% FMA 0.616 / 1.913 / 7.349, cuSPARSE 0.201 / 0.800 / 3.297; band of 512 FMA 0.222 /
// 0.314 / 0.736, cuSPARSE 0.222 / 0.572 / 1.649 (this cuSPARSE call, CSR with its default algorithm
// on raw buffers, is faster than torch.sparse.sampled_addmm's, which bench_sddmm.py times).
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/sddmm_gemm bench/probes/sddmm_gemm_probe.cu -lcusparse
//   /tmp/sddmm_gemm
#include "probe_sddmm.cuh"

constexpr int BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, THREADS = 256;
constexpr int P = BM + 8;     // the operand tiles' row pitch (floats): fragment reads hit 32 banks
constexpr int CS_LD = BN + 4; // the staged tile's row pitch (floats): rows 16 bytes apart in banks

struct tile_args {
    const float *A, *B;
    int64_t m, n;
    int K;
    int64_t tiles_n, ntiles;
    const int64_t *tile_id, *tile_ptr, *ent_idx;
    const uint16_t *ent_row, *ent_col;
    float *out;
};

// Columns k0 .. k0 + 15 of the tile's 128 rows of A and of B into As and Bs ([BK][P], k-major:
// transposed), zeros past m and n: 512 float4s of each, two a thread.
__device__ __forceinline__ void load_tiles(const tile_args &g, int64_t i0, int64_t j0, int k0, float *As, float *Bs) {
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int f = threadIdx.x + h * THREADS, r = f / 4, q = f % 4 * 4;
        float4 va = make_float4(0.f, 0.f, 0.f, 0.f), vb = va;
        if (i0 + r < g.m)
            va = *reinterpret_cast<const float4 *>(g.A + (i0 + r) * (int64_t)g.K + k0 + q);
        if (j0 + r < g.n)
            vb = *reinterpret_cast<const float4 *>(g.B + (j0 + r) * (int64_t)g.K + k0 + q);
        As[(q + 0) * P + r] = va.x, As[(q + 1) * P + r] = va.y, As[(q + 2) * P + r] = va.z, As[(q + 3) * P + r] = va.w;
        Bs[(q + 0) * P + r] = vb.x, Bs[(q + 1) * P + r] = vb.y, Bs[(q + 2) * P + r] = vb.z, Bs[(q + 3) * P + r] = vb.w;
    }
}

// The staged tile's entries written out (Cs holds the tile's 128 x 128 products).
__device__ __forceinline__ void write_entries(const tile_args &g, int64_t w, const float *Cs) {
    for (int64_t k = g.tile_ptr[w] + threadIdx.x; k < g.tile_ptr[w + 1]; k += THREADS)
        g.out[g.ent_idx[k]] = Cs[g.ent_row[k] * CS_LD + g.ent_col[k]];
}

// A block per tile with entries, grid-strided over them, on the FMA pipes. Thread (ty, tx) of a
// 16 x 16 grid owns rows ty*4 + {0..3} and 64 + ty*4 + {0..3} and the same columns by tx, so that
// a warp's shared-memory reads of A's and B's fragments are float4s of consecutive addresses.
__global__ void __launch_bounds__(THREADS) gemm_tiles(tile_args g) {
    extern __shared__ __align__(16) float smem[];
    float *As = smem, *Bs = smem + BK * P; // [BK][P] each
    float *Cs = smem;                      // [BM][CS_LD] after the products (aliases As and Bs)
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    for (int64_t w = blockIdx.x; w < g.ntiles; w += gridDim.x) {
        const int64_t t = g.tile_id[w];
        const int64_t i0 = t / g.tiles_n * BM, j0 = t % g.tiles_n * BN;
        float acc[TM][TN];
#pragma unroll
        for (int a = 0; a < TM; a++)
#pragma unroll
            for (int b = 0; b < TN; b++)
                acc[a][b] = 0.f;
        for (int k0 = 0; k0 < g.K; k0 += BK) {
            load_tiles(g, i0, j0, k0, As, Bs);
            __syncthreads();
#pragma unroll
            for (int k = 0; k < BK; k++) {
                const float4 a0 = *reinterpret_cast<const float4 *>(As + k * P + ty * 4);
                const float4 a1 = *reinterpret_cast<const float4 *>(As + k * P + 64 + ty * 4);
                const float4 b0 = *reinterpret_cast<const float4 *>(Bs + k * P + tx * 4);
                const float4 b1 = *reinterpret_cast<const float4 *>(Bs + k * P + 64 + tx * 4);
                const float a[TM] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
                const float b[TN] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
                for (int x = 0; x < TM; x++)
#pragma unroll
                    for (int y = 0; y < TN; y++)
                        acc[x][y] = fmaf(a[x], b[y], acc[x][y]);
            }
            __syncthreads();
        }
#pragma unroll
        for (int x = 0; x < TM; x++) {
            const int r = (x < 4 ? 0 : 64) + ty * 4 + x % 4;
            float *row = Cs + r * CS_LD;
            *reinterpret_cast<float4 *>(row + tx * 4) = make_float4(acc[x][0], acc[x][1], acc[x][2], acc[x][3]);
            *reinterpret_cast<float4 *>(row + 64 + tx * 4) = make_float4(acc[x][4], acc[x][5], acc[x][6], acc[x][7]);
        }
        __syncthreads();
        write_entries(g, w, Cs);
        __syncthreads(); // the next tile's loads overwrite Cs
    }
}

__device__ __forceinline__ uint32_t to_tf32(float x) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// d += a·b for one m16n8k8 TF32 tile (PTX ISA fragment layouts: a_r at (lane/4 + 8·(r%2),
// lane%4 + 4·(r/2)), b_r at (k = lane%4 + 4·r, n = lane/4), d_r at (lane/4 + 8·(r/2), 2·(lane%4) + r%2)).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The same tiles on the tensor cores: 8 warps of 64 x 32 outputs (4 x 4 tiles of 16 x 8). PASSES 1:
// plain TF32 (10-bit mantissas: ~1e-3 relative, for the speed alone); 3: each operand split into
// a TF32 part and the TF32 of its remainder, big·big + big·small + small·big, about float32's
// accuracy (the products of two remainders, ~2^-22 relative, are left out).
template <int PASSES> __global__ void __launch_bounds__(THREADS) gemm_tiles_tf32(tile_args g) {
    extern __shared__ __align__(16) float smem[];
    float *As = smem, *Bs = smem + BK * P;
    float *Cs = smem;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gid = lane / 4, tid = lane % 4;
    const int wm = warp / 4 * 64, wn = warp % 4 * 32;
    for (int64_t w = blockIdx.x; w < g.ntiles; w += gridDim.x) {
        const int64_t t = g.tile_id[w];
        const int64_t i0 = t / g.tiles_n * BM, j0 = t % g.tiles_n * BN;
        float acc[4][4][4];
#pragma unroll
        for (int a = 0; a < 4; a++)
#pragma unroll
            for (int b = 0; b < 4; b++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    acc[a][b][c] = 0.f;
        for (int k0 = 0; k0 < g.K; k0 += BK) {
            load_tiles(g, i0, j0, k0, As, Bs);
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < BK; kk += 8) {
                uint32_t a_big[4][4], a_small[4][4], b_big[4][2], b_small[4][2];
#pragma unroll
                for (int mt = 0; mt < 4; mt++)
#pragma unroll
                    for (int r = 0; r < 4; r++) {
                        const float x = As[(kk + tid + 4 * (r / 2)) * P + wm + mt * 16 + gid + 8 * (r % 2)];
                        a_big[mt][r] = to_tf32(x);
                        a_small[mt][r] = PASSES == 3 ? to_tf32(x - __uint_as_float(a_big[mt][r])) : 0u;
                    }
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
#pragma unroll
                    for (int r = 0; r < 2; r++) {
                        const float x = Bs[(kk + tid + 4 * r) * P + wn + nt * 8 + gid];
                        b_big[nt][r] = to_tf32(x);
                        b_small[nt][r] = PASSES == 3 ? to_tf32(x - __uint_as_float(b_big[nt][r])) : 0u;
                    }
#pragma unroll
                for (int mt = 0; mt < 4; mt++)
#pragma unroll
                    for (int nt = 0; nt < 4; nt++) {
                        if constexpr (PASSES == 3) { // the small terms first
                            mma_tf32(acc[mt][nt], a_small[mt], b_big[nt]);
                            mma_tf32(acc[mt][nt], a_big[mt], b_small[nt]);
                        }
                        mma_tf32(acc[mt][nt], a_big[mt], b_big[nt]);
                    }
            }
            __syncthreads();
        }
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
#pragma unroll
            for (int nt = 0; nt < 4; nt++) {
                const int r = wm + mt * 16 + gid, c = wn + nt * 8 + 2 * tid;
                *reinterpret_cast<float2 *>(Cs + r * CS_LD + c) = make_float2(acc[mt][nt][0], acc[mt][nt][1]);
                *reinterpret_cast<float2 *>(Cs + (r + 8) * CS_LD + c) = make_float2(acc[mt][nt][2], acc[mt][nt][3]);
            }
        __syncthreads();
        write_entries(g, w, Cs);
        __syncthreads();
    }
}

// The library's dense-tile idea without its tiling, as a second reference point: a thread an
// entry, its row of A and of B through L1/L2 (float4 loads).
__global__ void thread_per_entry(const int64_t *rowptr, const int32_t *colind, int64_t m, const float *A,
                                 const float *B, int K, float *out) {
    for (int64_t i = blockIdx.x; i < m; i += gridDim.x)
        for (int64_t e = rowptr[i] + threadIdx.x; e < rowptr[i + 1]; e += blockDim.x) {
            const float4 *a = reinterpret_cast<const float4 *>(A + i * K);
            const float4 *b = reinterpret_cast<const float4 *>(B + (int64_t)colind[e] * K);
            float s = 0.f;
            for (int q = 0; q < K / 4; q++) {
                const float4 x = a[q], y = b[q];
                s += x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
            }
            out[e] = s;
        }
}

// The tiles with entries and their entries in tile order (row, then column, within a tile).
struct tile_order {
    std::vector<int64_t> tile_id, tile_ptr, ent_idx;
    std::vector<uint16_t> ent_row, ent_col;
    int64_t tiles_n;
};

static tile_order order_of(const csr &s) {
    tile_order o;
    o.tiles_n = (s.n + BN - 1) / BN;
    const int64_t tiles_m = (s.m + BM - 1) / BM;
    std::vector<int64_t> count((size_t)(tiles_m * o.tiles_n) + 1, 0);
    for (int64_t i = 0; i < s.m; i++)
        for (int64_t e = s.rowptr[i]; e < s.rowptr[i + 1]; e++)
            count[(size_t)(i / BM * o.tiles_n + s.colind[e] / BN)]++;
    std::vector<int64_t> at((size_t)(tiles_m * o.tiles_n), 0);
    o.tile_ptr.push_back(0);
    for (int64_t t = 0; t < tiles_m * o.tiles_n; t++)
        if (count[(size_t)t]) {
            at[(size_t)t] = o.tile_ptr.back();
            o.tile_id.push_back(t);
            o.tile_ptr.push_back(o.tile_ptr.back() + count[(size_t)t]);
        }
    const size_t nnz = s.colind.size();
    o.ent_idx.resize(nnz), o.ent_row.resize(nnz), o.ent_col.resize(nnz);
    for (int64_t i = 0; i < s.m; i++) // rows in order: a tile's entries come row by row
        for (int64_t e = s.rowptr[i]; e < s.rowptr[i + 1]; e++) {
            const int64_t t = i / BM * o.tiles_n + s.colind[e] / BN, k = at[(size_t)t]++;
            o.ent_idx[(size_t)k] = e, o.ent_row[(size_t)k] = (uint16_t)(i % BM),
            o.ent_col[(size_t)k] = (uint16_t)(s.colind[e] % BN);
        }
    return o;
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cusparseHandle_t handle;
    CS(cusparseCreate(&handle));
    const std::vector<named_csr> sets = dense_ish_sets();
    const size_t smem = std::max<size_t>(2 * BK * P * sizeof(float), BM * CS_LD * sizeof(float));
    CK(cudaFuncSetAttribute(gemm_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(gemm_tiles_tf32<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CK(cudaFuncSetAttribute(gemm_tiles_tf32<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gemm_tiles, THREADS, smem));
    printf("gemm_tiles: %d blocks a multiprocessor, %zu bytes of shared memory a block\n", per_sm, smem);
    for (auto &set : sets) {
        const csr &s = set.s;
        const size_t nnz = s.colind.size();
        const tile_order o = order_of(s);
        printf("%s: %zu entries, %zu tiles with entries, %.0f entries a tile (%.0f%% of its cells)\n", set.name, nnz,
               o.tile_id.size(), (double)nnz / (double)o.tile_id.size(),
               100.0 * (double)nnz / (double)o.tile_id.size() / (BM * BN));
        int64_t *rowptr = upload(s.rowptr), *tile_id = upload(o.tile_id), *tile_ptr = upload(o.tile_ptr),
                *ent_idx = upload(o.ent_idx);
        int32_t *colind = upload(s.colind);
        std::vector<int32_t> rowptr32_h(s.rowptr.begin(), s.rowptr.end()); // cuSPARSE: one index width
        int32_t *rowptr32 = upload(rowptr32_h);
        uint16_t *ent_row = upload(o.ent_row), *ent_col = upload(o.ent_col);
        float *out, *vals;
        double *ref;
        CK(cudaMalloc(&out, nnz * sizeof(float)));
        CK(cudaMalloc(&vals, nnz * sizeof(float)));
        CK(cudaMalloc(&ref, nnz * sizeof(double)));
        const int64_t ntiles = (int64_t)o.tile_id.size();
        for (int K : {32, 128, 512}) {
            float *A, *B;
            make_operands(sms, s, rowptr, colind, K, &A, &B, ref);
            const double flops = 2.0 * (double)nnz * K;
            const tile_args g{A, B, s.m, s.n, K, o.tiles_n, ntiles, tile_id, tile_ptr, ent_idx, ent_row, ent_col, out};
            const unsigned grid = (unsigned)std::min<int64_t>(ntiles, (int64_t)sms * per_sm * 8);
            const float t_gemm = median_ms([&] { gemm_tiles<<<grid, THREADS, smem>>>(g); });
            const double e_gemm = max_rel_err(out, ref, nnz);
            const float t_tf32 = median_ms([&] { gemm_tiles_tf32<1><<<grid, THREADS, smem>>>(g); });
            const double e_tf32 = max_rel_err(out, ref, nnz);
            const float t_3x = median_ms([&] { gemm_tiles_tf32<3><<<grid, THREADS, smem>>>(g); });
            const double e_3x = max_rel_err(out, ref, nnz);
            const float t_thread = median_ms([&] {
                thread_per_entry<<<(unsigned)std::min<int64_t>(s.m, (int64_t)sms * 64), 256>>>(rowptr, colind, s.m, A,
                                                                                              B, K, out);
            });
            const double e_thread = max_rel_err(out, ref, nnz);
            printf("  K %4d  FMA tiles %7.3f ms %6.0f GFLOP/s (err %.1e) | TF32 tiles %7.3f ms (err %.1e) | 3xTF32 "
                   "tiles %7.3f ms (err %.1e) | thread an entry %7.3f ms (err %.1e)",
                   K, t_gemm, flops / t_gemm / 1e6, e_gemm, t_tf32, e_tf32, t_3x, e_3x, t_thread, e_thread);
            fflush(stdout);
            float t_cs = NAN;
            double e_cs = NAN;
            cusparse_sddmm(handle, s.m, s.n, K, (int64_t)nnz, rowptr32, colind, A, B, vals, &t_cs);
            if (t_cs == t_cs)
                e_cs = max_rel_err(vals, ref, nnz);
            printf(" | cuSPARSE %7.3f ms (err %.1e) | best FMA/3xTF32 %5.2fx cuSPARSE\n", t_cs, e_cs,
                   t_cs / std::min(t_gemm, t_3x));
            fflush(stdout);
            CK(cudaFree(A));
            CK(cudaFree(B));
        }
        CK(cudaFree(rowptr));
        CK(cudaFree(rowptr32));
        CK(cudaFree(colind));
        CK(cudaFree(tile_id));
        CK(cudaFree(tile_ptr));
        CK(cudaFree(ent_idx));
        CK(cudaFree(ent_row));
        CK(cudaFree(ent_col));
        CK(cudaFree(out));
        CK(cudaFree(vals));
        CK(cudaFree(ref));
    }
    CS(cusparseDestroy(handle));
    return 0;
}
