// The fused pattern's row tiles on tall, narrow X: the library's tile protocol (rows of any
// length: each tile counts the rows that fit from the row pointers, then loads their entries)
// against the fixed-row tiles of fused_scatter_probe.cu, which on the H100 took 0.407 ms where
// the library's tiles take 0.49 (10^7 x 100, 10 entries a row, one read of X 0.288). Variants:
//   spec   the tile's entries requested before its rows are counted (up to C past the tile's
//          start, within the block's rows), so the two loads overlap instead of chaining
//   sprod  each row's scale written over its entries' products, so the scatter reads it
//          directly (no row_of[], no scale[])
//   S      w's copies spread over S slots a column, lane l adding to slot l % S
// Written 2026-11-27.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/fused_rowtile bench/probes/fused_rowtile_probe.cu && /tmp/fused_rowtile
#include "probe_fused.cuh" // L entries a row (the kernels do not know it)

constexpr int T = 256;

template <int E> __host__ __device__ constexpr size_t tile_smem(int window, bool sprod) {
    return sprod ? (size_t)T * E * 4 + (size_t)window * 4 : (size_t)T * E * (4 + 2) + (size_t)window * (4 + 4);
}

// w += Xᵀ(v ⊙ X·y), the block's rows [m·b/B, m·(b+1)/B) in tiles of at most C entries and
// `window` rows, as cuda_fused_tiles.cuh's tile_rows.
template <int E, bool SPEC, bool SPROD, int S, bool ONE = false, int MINB = 1>
__global__ void __launch_bounds__(T, MINB) lib_tiles(const int64_t *rowptr, const int32_t *colind, const float *val,
                                               const float *y, const float *v, int64_t m, int n, float *w, int window) {
    constexpr int C = T * E;
    extern __shared__ __align__(16) unsigned char smem[];
    float *prod = reinterpret_cast<float *>(smem);
    int32_t *ends = reinterpret_cast<int32_t *>(prod + C);
    float *scale = reinterpret_cast<float *>(ends + window);
    uint16_t *row_of = reinterpret_cast<uint16_t *>(scale + window);
    float *part = reinterpret_cast<float *>(smem + tile_smem<E>(window, SPROD));
    const int t = threadIdx.x, lane = t % 32;
    for (int k = t; k < (T / 32) * n * S; k += T)
        part[k] = 0.f;
    float *mine = part + (t / 32) * n * S;
    const int64_t r0 = m * blockIdx.x / gridDim.x, r1 = m * (blockIdx.x + 1) / gridDim.x;
    const int64_t block_end = rowptr[r1];
    __syncthreads();
    for (int64_t r = r0; r < r1;) {
        const int64_t base = rowptr[r];
        const int rows_here = r1 - r < window ? (int)(r1 - r) : window;
        int32_t col[E];
        float x[E];
        if (SPEC) {
            const int64_t avail = block_end - base;
#pragma unroll
            for (int e = 0; e < E; e++) {
                const int k = t + e * T;
                col[e] = k < avail ? colind[base + k] : -1;
                x[e] = k < avail ? val[base + k] : 0.f;
            }
        }
        const float first_v = t < rows_here ? v[r + t] : 0.f;
        int rows = 0;
        if (ONE) { // each thread its rows t, t + T, ...: one count (the rows that fit are a prefix)
            int mine_fit = 0;
            for (int i = t; i < rows_here; i += T) {
                const int64_t end = rowptr[r + 1 + i] - base;
                const bool fits = end <= C;
                ends[i] = fits ? (int32_t)end : C + 1;
                mine_fit += fits;
            }
            rows = __syncthreads_count(mine_fit >= 1) + __syncthreads_count(mine_fit >= 2); // window <= 2T
        }
        for (int i0 = 0; !ONE && i0 < rows_here; i0 += T) {
            const int i = i0 + t;
            bool fits = false;
            if (i < rows_here) {
                const int64_t end = rowptr[r + 1 + i] - base;
                fits = end <= C;
                ends[i] = fits ? (int32_t)end : C + 1;
            }
            const int here = __syncthreads_count(fits);
            rows += here;
            if (here < T)
                break;
        }
        const int nnz = ends[rows - 1]; // the probe's rows never exceed a tile
#pragma unroll
        for (int e = 0; e < E; e++) {
            const int k = t + e * T;
            if (!SPEC) {
                col[e] = k < nnz ? colind[base + k] : -1;
                x[e] = k < nnz ? val[base + k] : 0.f;
            } else if (k >= nnz) {
                col[e] = -1;
            }
            if (col[e] >= 0)
                prod[k] = x[e] * y[col[e]];
        }
        __syncthreads();
        for (int i = t; i < rows; i += T) {
            const int b = i ? ends[i - 1] : 0, e = ends[i];
            float d = 0.f;
            for (int k = b; k < e; k++) {
                d += prod[k];
                if (!SPROD)
                    row_of[k] = (uint16_t)i;
            }
            const float s = (i == t ? first_v : v[r + i]) * d;
            if (SPROD)
                for (int k = b; k < e; k++)
                    prod[k] = s;
            else
                scale[i] = s;
        }
        __syncthreads();
#pragma unroll
        for (int e = 0; e < E; e++) {
            if (col[e] < 0)
                continue;
            const int k = t + e * T;
            const float s = SPROD ? prod[k] : scale[row_of[k]];
            atomicAdd(&mine[col[e] * S + lane % S], x[e] * s);
        }
        r += rows; // the next tile writes prod only after its first barrier
    }
    __syncthreads();
    for (int j = t; j < n; j += T) {
        float sum = 0.f;
        for (int k = 0; k < (T / 32) * S; k++)
            sum += part[(k / S) * n * S + j * S + k % S];
        atomicAdd(&w[j], sum);
    }
}

template <int E, bool SPEC, bool SPROD, int S, bool ONE = false, int MINB = 1>
static void time_lib(int sms, const tall_x &X, const char *name, bool check) {
    const int n = X.n;
    auto kernel = lib_tiles<E, SPEC, SPROD, S, ONE, MINB>;
    const int window = (int)std::min<int64_t>(T * E, ((int64_t)(2.0 * T * E / L) + 63) / 32 * 32);
    const size_t smem = tile_smem<E>(window, SPROD) + (size_t)(T / 32) * n * S * 4;
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, T, smem));
    const unsigned grid = (unsigned)(sms * per_sm);
    const float ms = median_ms([&] {
        CK(cudaMemsetAsync(X.w, 0, n * sizeof(float)));
        kernel<<<grid, T, smem>>>(X.rowptr, X.col, X.val, X.y, X.v, X.m, n, X.w, window);
    });
    printf("  %-34s %7.3f ms  (%d blocks an SM, %zu bytes of shared memory; diff %.1e)\n", name, ms, per_sm, smem,
           rel_diff(X.w, check ? X.want : nullptr, n));
    fflush(stdout);
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int64_t m = 10000000;
    for (int n : {100, 32}) {
        tall_x X(sms, m, n);
        time_lib<8, false, false, 1>(sms, X, "library protocol", false);
        CK(cudaMemcpy(X.want, X.w, n * sizeof(float), cudaMemcpyDeviceToDevice));
        time_lib<8, true, false, 1>(sms, X, "spec", true);
        time_lib<8, false, true, 1>(sms, X, "sprod", true);
        time_lib<8, true, true, 1>(sms, X, "spec + sprod", true);
        time_lib<8, true, true, 4>(sms, X, "spec + sprod, S 4", true);
        time_lib<8, false, false, 4>(sms, X, "library protocol, S 4", true);
        time_lib<4, true, true, 1>(sms, X, "spec + sprod, E 4", true);
        time_lib<8, false, false, 1, true>(sms, X, "one count", true);
        time_lib<8, true, false, 1, true>(sms, X, "spec, one count", true);
        time_lib<8, true, true, 1, true>(sms, X, "spec + sprod, one count", true);
        time_lib<8, false, false, 1, false, 6>(sms, X, "library, 6 blocks", true);
        time_lib<8, true, false, 1, true, 6>(sms, X, "spec, one count, 6 blocks", true);
        time_lib<8, true, true, 1, true, 6>(sms, X, "spec+sprod, one, 6 blocks", true);
        time_lib<8, true, true, 4, true, 6>(sms, X, "spec+sprod, one, 6 bl, S 4", true);
        time_lib<4, true, true, 1, true, 8>(sms, X, "spec+sprod, one, E 4, 8 bl", true);
    }
    return 0;
}
