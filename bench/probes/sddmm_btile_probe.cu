// SDDMM on dense-ish S against cuSPARSE called directly (written 2026-11-26, not yet run). On the
// H100 cuSPARSE's SDDMM (int32 CSR, its analysis done once) took 0.21-0.23 ms at K = 32 on uniform
// 16K x 16K at 5%, 8K x 8K at 25% and a band of 512, where the library took 0.29-0.46 ms (its GEMM
// tiles at 25% and on the band compute every cell of a touched 128 x 128 tile; at 5% its L2
// kernels read a row of B from L2 for every entry, 128 bytes at K = 32). The floor there is
// ~0.06-0.07 ms (S's columns read and the values written once). Here a block takes a panel of PR
// rows and a range of columns, walked in tiles of TC columns whose rows of B it copies into shared
// memory once; each warp walks its PR / 8 rows' entries in the tile, a group of 4 lanes an entry
// (8 entries a step): lane q holds K / 16 float4s of A's row in registers and reads the same
// chunks of B's row from shared memory, chunk q + 4·((h + g) % H) in read h for group g, so the two
// groups served by one quarter-warp read different halves of the banks. Per entry: 4 bytes of S
// and 4 of output from memory, K·4 bytes from shared memory, no cell off the pattern computed.
// Tiles no row of the panel touches are skipped (the next tile starts at the least column any
// row has left). PREFETCH: the first step's columns of all the warp's rows are requested when
// the tile starts, not row by row.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/sddmm_btile bench/probes/sddmm_btile_probe.cu -lcusparse
//   /tmp/sddmm_btile
#include <climits>

#include "probe_sddmm.cuh"

constexpr int THREADS = 256, WARPS = THREADS / 32;

template <int K, int TC, int PR, bool PREFETCH>
__global__ void __launch_bounds__(THREADS) btile(const int64_t *rowptr, const int32_t *colind, int64_t m, int64_t n,
                                                 const float *A, const float *B, float *out, int64_t ranges,
                                                 int64_t range_cols) {
    constexpr int H = K / 16, RW = PR / WARPS; // float4s a lane holds; rows a warp walks
    static_assert(K % 16 == 0 && RW <= 32, "K a multiple of 16, at most 32 rows a warp");
    extern __shared__ __align__(16) float Bs[]; // [TC][K]
    __shared__ int next_col[3];                 // as the library's panel_tiles: read, lowered, reset
    const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4, warp = threadIdx.x / 32;
    const int64_t panels = (m + PR - 1) / PR;
    for (int64_t w = blockIdx.x; w < panels * ranges; w += gridDim.x) {
        const int64_t r0 = w / ranges * PR + warp * RW;
        const int64_t c_lo = w % ranges * range_cols, c_hi = min(n, c_lo + range_cols);
        if (threadIdx.x == 0)
            next_col[0] = next_col[1] = next_col[2] = INT_MAX;
        __syncthreads();
        // lane rr < RW keeps row r0 + rr's cursor (its first entry at or past the tile) and end
        int64_t cur = 0, end = 0;
        int first = INT_MAX;
        if (lane < RW && r0 + lane < m) {
            int64_t lo = rowptr[r0 + lane], hi = rowptr[r0 + lane + 1];
            end = hi;
            while (lo < hi) {
                const int64_t mid = (lo + hi) / 2;
                if (colind[mid] < c_lo)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            cur = lo;
            first = cur < end ? colind[cur] : INT_MAX;
        }
        for (int o = 16; o > 0; o /= 2)
            first = min(first, __shfl_xor_sync(0xffffffffu, first, o));
        if (lane == 0)
            atomicMin(&next_col[0], first);
        __syncthreads();
        for (int t = 0;; t++) {
            const int nc = next_col[t % 3];
            if (nc >= c_hi)
                break;
            const int64_t c = c_lo + (nc - c_lo) / TC * TC, stop = min(c + TC, c_hi);
            for (int f = threadIdx.x; f < TC * K / 4; f += THREADS) {
                const int64_t j = c + f / (K / 4);
                reinterpret_cast<float4 *>(Bs)[f] =
                    j < n ? reinterpret_cast<const float4 *>(B + j * K)[f % (K / 4)] : make_float4(0.f, 0.f, 0.f, 0.f);
            }
            __syncthreads(); // Bs is whole; every thread has read next_col[t % 3]
            if (threadIdx.x == 0)
                next_col[(t + 2) % 3] = INT_MAX; // read by tile t - 1, lowered by tile t + 1
            int nmin = INT_MAX;
            [[maybe_unused]] int pre[PREFETCH ? RW : 1];
            if constexpr (PREFETCH) {
#pragma unroll
                for (int rr = 0; rr < RW; rr++) {
                    const int64_t e = __shfl_sync(0xffffffffu, cur, rr) + g, e_end = __shfl_sync(0xffffffffu, end, rr);
                    pre[rr] = e < e_end ? colind[e] : INT_MAX;
                }
            }
#pragma unroll
            for (int rr = 0; rr < RW; rr++) {
                const int64_t row = r0 + rr;
                int64_t e = __shfl_sync(0xffffffffu, cur, rr);
                const int64_t e_end = __shfl_sync(0xffffffffu, end, rr);
                if (row >= m || e >= e_end)
                    continue;
                float4 a[H];
#pragma unroll
                for (int h = 0; h < H; h++)
                    a[h] = reinterpret_cast<const float4 *>(A + row * K)[q + 4 * ((h + g) % H)];
                for (int step = 0;; step++) {
                    const int64_t ee = e + g;
                    int col;
                    if constexpr (PREFETCH)
                        col = step == 0 ? pre[rr] : ee < e_end ? colind[ee] : INT_MAX;
                    else
                        col = ee < e_end ? colind[ee] : INT_MAX;
                    const bool in = col < stop;
                    const float4 *b = reinterpret_cast<const float4 *>(Bs + (in ? col - c : 0) * K);
                    float s = 0.f;
#pragma unroll
                    for (int h = 0; h < H; h++) {
                        const float4 x = b[q + 4 * ((h + g) % H)];
                        s = fmaf(a[h].x, x.x, s), s = fmaf(a[h].y, x.y, s);
                        s = fmaf(a[h].z, x.z, s), s = fmaf(a[h].w, x.w, s);
                    }
                    s += __shfl_xor_sync(0xffffffffu, s, 1);
                    s += __shfl_xor_sync(0xffffffffu, s, 2);
                    if (in && q == 0)
                        out[ee] = s;
                    const int taken = __popc(__ballot_sync(0xffffffffu, in)) / 4; // a prefix: columns rise
                    if (taken < 8) {
                        nmin = min(nmin, __shfl_sync(0xffffffffu, col, taken * 4)); // the row's next column
                        e += taken;
                        break;
                    }
                    e += 8;
                }
                if (lane == rr)
                    cur = e;
            }
            if (lane == 0 && nmin != INT_MAX)
                atomicMin(&next_col[(t + 1) % 3], nmin);
            __syncthreads(); // the walks are done with Bs and have lowered next_col[(t + 1) % 3]
        }
        __syncthreads(); // next_col read by all before the next panel resets it
    }
}

struct launch {
    unsigned blocks;
    int64_t ranges, range_cols;
    size_t smem;
};

// Four blocks' worth of work for each block the chip holds: panels cut into column ranges.
template <int K, int TC, int PR, bool PREFETCH> static launch plan(int sms, int64_t m, int64_t n) {
    launch l{};
    l.smem = (size_t)TC * K * sizeof(float);
    auto kernel = btile<K, TC, PR, PREFETCH>;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)l.smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, l.smem));
    const int64_t panels = (m + PR - 1) / PR, tiles = (n + TC - 1) / TC, resident = (int64_t)sms * per_sm;
    const int64_t splits = std::min<int64_t>(tiles, std::max<int64_t>(1, (4 * resident + panels - 1) / panels));
    l.range_cols = (tiles + splits - 1) / splits * TC;
    l.ranges = (n + l.range_cols - 1) / l.range_cols;
    l.blocks = (unsigned)std::min<int64_t>(panels * l.ranges, resident * 8);
    return l;
}

template <int K, int TC, int PR, bool PREFETCH>
static void time_btile(int sms, const csr &s, const int64_t *rowptr, const int32_t *colind, const float *A,
                       const float *B, float *out, const double *ref, float t_cs) {
    const launch l = plan<K, TC, PR, PREFETCH>(sms, s.m, s.n);
    CK(cudaMemset(out, 0, s.colind.size() * sizeof(float)));
    const float t = median_ms([&] {
        btile<K, TC, PR, PREFETCH><<<l.blocks, THREADS, l.smem>>>(rowptr, colind, s.m, s.n, A, B, out, l.ranges,
                                                                  l.range_cols);
    });
    printf("    tiles of %3d columns, %3d rows a panel%s: %7.3f ms (%5.2fx cuSPARSE, err %.1e; %lld ranges)\n", TC, PR,
           PREFETCH ? ", first step prefetched" : "", t, t_cs / t, max_rel_err(out, ref, s.colind.size()),
           (long long)l.ranges);
    fflush(stdout);
}

template <int K>
static void run_k(int sms, cusparseHandle_t handle, const csr &s, const int64_t *rowptr, int32_t *rowptr32,
                  int32_t *colind, float *out, float *vals, double *ref) {
    const size_t nnz = s.colind.size();
    float *A, *B;
    make_operands(sms, s, rowptr, colind, K, &A, &B, ref);
    float t_cs = NAN;
    cusparse_sddmm(handle, s.m, s.n, K, (int64_t)nnz, rowptr32, colind, A, B, vals, &t_cs);
    printf("  K %d: cuSPARSE %.3f ms (err %.1e)\n", K, t_cs, t_cs == t_cs ? max_rel_err(vals, ref, nnz) : NAN);
    time_btile<K, 128, 128, false>(sms, s, rowptr, colind, A, B, out, ref, t_cs);
    time_btile<K, 128, 128, true>(sms, s, rowptr, colind, A, B, out, ref, t_cs);
    time_btile<K, 256, 128, true>(sms, s, rowptr, colind, A, B, out, ref, t_cs);
    time_btile<K, 256, 64, true>(sms, s, rowptr, colind, A, B, out, ref, t_cs);
    if (K <= 32)
        time_btile<K, 512, 128, true>(sms, s, rowptr, colind, A, B, out, ref, t_cs);
    CK(cudaFree(A));
    CK(cudaFree(B));
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cusparseHandle_t handle;
    CS(cusparseCreate(&handle));
    const std::vector<named_csr> sets = dense_ish_sets();
    for (auto &set : sets) {
        const csr &s = set.s;
        const size_t nnz = s.colind.size();
        printf("%s: %zu entries\n", set.name, nnz);
        int64_t *rowptr = upload(s.rowptr);
        int32_t *colind = upload(s.colind);
        std::vector<int32_t> rowptr32_h(s.rowptr.begin(), s.rowptr.end()); // cuSPARSE: one index width
        int32_t *rowptr32 = upload(rowptr32_h);
        float *out, *vals;
        double *ref;
        CK(cudaMalloc(&out, nnz * sizeof(float)));
        CK(cudaMalloc(&vals, nnz * sizeof(float)));
        CK(cudaMalloc(&ref, nnz * sizeof(double)));
        run_k<32>(sms, handle, s, rowptr, rowptr32, colind, out, vals, ref);
        run_k<128>(sms, handle, s, rowptr, rowptr32, colind, out, vals, ref);
        CK(cudaFree(rowptr));
        CK(cudaFree(rowptr32));
        CK(cudaFree(colind));
        CK(cudaFree(out));
        CK(cudaFree(vals));
        CK(cudaFree(ref));
    }
    CS(cusparseDestroy(handle));
    return 0;
}
