// The fused pattern's sums into w on tall, narrow X: where the row tiles' extra time goes (written
// 2026-11-26, not yet run). On the H100 the library's row tiles took 10^7 x 100 (~10 entries a
// row) in 0.49-0.51 ms against 0.315 ms for one kernel reading X; X·y alone on the same tiles
// 0.39-0.41 ms. The ~0.09 ms between is the scatter: each entry adds α·s(i)·X(i,j) into a warp's
// copy of w in shared memory, and on sm_90 a float atomicAdd there is a compare-and-store loop
// (ATOMS.CAST.SPIN) in which one lane a bank succeeds a round. This probe times the same tiles
// (fixed rows of L entries, so a tile's rows need no search) with the scatter done four ways:
//   xy      no scatter (X·y only: the tiles' load, product and row-sum phases)
//   warp    a copy of w a warp, atomicAdd (the library's way)
//   spread  a copy a warp, each column S slots wide, lane l adding to slot l % S: lanes of
//           different l % S never share a bank
//   private a copy a warp, each column 32 slots wide, lane l owning slot l: plain loads and stores,
//           no atomics (32x the shared memory: fewer blocks an SM)
// and one kernel reading X's arrays once (16-byte loads) for the floor. Results are compared with
// the warp scatter's w.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/fused_scatter bench/probes/fused_scatter_probe.cu
//   /tmp/fused_scatter
#include "probe_fused.cuh"

enum scatter { XY, WARP, SPREAD, PRIVATE };

// Tiles of T·E entries (T·E / L whole rows): load, x·y into shared memory, a thread a row sums its
// row into s(i) = v(i)·(X(i,:)·y), then the scatter of s(i)·X(i,j) into w's copies (S slots a
// column, S = 1, SPREAD's, or 32), added to w at the end.
template <int T, int E, scatter MODE, int S>
__global__ void __launch_bounds__(T) tiles(const int64_t *rowptr, const int32_t *col, const float *val, const float *y,
                                           const float *v, int64_t m, int n, float *w) {
    constexpr int C = T * E, R = C / L, WARPS = T / 32;
    extern __shared__ __align__(16) float smem[];
    float *prod = smem, *scale = prod + C, *part = scale + R; // part: WARPS copies of n columns x S slots
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    for (int k = t; k < WARPS * n * S; k += T)
        part[k] = 0.f;
    __syncthreads();
    float *mine = part + warp * n * S;
    const int64_t ntiles = (m + R - 1) / R;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int64_t r0 = tile * R, base = rowptr[r0];
        const int rows = (int)min((int64_t)R, m - r0), nnz = (int)(rowptr[r0 + rows] - base);
        int32_t c[E];
        float x[E];
#pragma unroll
        for (int e = 0; e < E; e++) {
            const int k = t + e * T;
            c[e] = k < nnz ? col[base + k] : -1;
            x[e] = k < nnz ? val[base + k] : 0.f;
            if (k < nnz)
                prod[k] = x[e] * y[c[e]];
        }
        __syncthreads();
        for (int i = t; i < rows; i += T) {
            float d = 0.f;
            for (int k = i * L; k < (i + 1) * L; k++)
                d += prod[k];
            scale[i] = v[r0 + i] * d;
            if (MODE == XY)
                w[r0 + i] = scale[i];
        }
        __syncthreads();
        if (MODE != XY) {
#pragma unroll
            for (int e = 0; e < E; e++) {
                if (c[e] < 0)
                    continue;
                const float add = x[e] * scale[(t + e * T) / L];
                if (MODE == PRIVATE)
                    mine[c[e] * 32 + lane] += add;
                else
                    atomicAdd(&mine[c[e] * S + lane % S], add);
            }
        }
        // the next tile writes prod and scale only after its own first barrier
    }
    if (MODE == XY)
        return;
    __syncthreads();
    for (int j = t; j < n; j += T) {
        float sum = 0.f;
        for (int k = 0; k < WARPS * S; k++)
            sum += part[(k / S) * n * S + j * S + k % S];
        atomicAdd(&w[j], sum);
    }
}

template <int T, int E, scatter MODE, int S>
static float time_tiles(int sms, const tall_x &X, const char *name, bool check) {
    const int n = X.n;
    auto kernel = tiles<T, E, MODE, S>;
    constexpr int C = T * E, R = C / L;
    const size_t smem = (size_t)(C + R + (T / 32) * n * S) * sizeof(float);
    if (smem > 227 * 1024) {
        printf("  %-34s needs %zu bytes of shared memory: skipped\n", name, smem);
        return NAN;
    }
    CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    int per_sm = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, T, smem));
    const unsigned grid = (unsigned)(sms * per_sm);
    const int64_t nw = MODE == XY ? 0 : n; // X·y writes all of w
    const float ms = median_ms([&] {
        CK(cudaMemsetAsync(X.w, 0, nw * sizeof(float)));
        kernel<<<grid, T, smem>>>(X.rowptr, X.col, X.val, X.y, X.v, X.m, n, X.w);
    });
    printf("  %-34s %7.3f ms  (%d blocks of %d an SM, %zu bytes of shared memory a block; diff %.1e)\n", name, ms,
           per_sm, T, smem, rel_diff(X.w, check ? X.want : nullptr, n));
    fflush(stdout);
    return ms;
}

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int64_t m = 10000000;
    for (int n : {100, 32}) {
        tall_x X(sms, m, n);
        time_tiles<256, 8, XY, 1>(sms, X, "X.y alone (no scatter)", false);
        time_tiles<256, 8, WARP, 1>(sms, X, "warp copies, atomicAdd", false);
        CK(cudaMemcpy(X.want, X.w, n * sizeof(float), cudaMemcpyDeviceToDevice));
        time_tiles<256, 8, SPREAD, 4>(sms, X, "spread over 4 slots, atomicAdd", true);
        time_tiles<256, 8, SPREAD, 8>(sms, X, "spread over 8 slots, atomicAdd", true);
        time_tiles<256, 8, SPREAD, 32>(sms, X, "spread over 32 slots, atomicAdd", true);
        time_tiles<256, 8, PRIVATE, 32>(sms, X, "lane-private, T 256", true);
        time_tiles<128, 8, PRIVATE, 32>(sms, X, "lane-private, T 128", true);
        time_tiles<128, 16, PRIVATE, 32>(sms, X, "lane-private, T 128, E 16", true);
    }
    return 0;
}
