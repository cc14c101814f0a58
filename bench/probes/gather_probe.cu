// Random 4-byte gathers, as SpMV does them (one index and one value streamed per gather): from an
// 8 MB array through L2, from distributed shared memory across a thread-block cluster, and from a
// block's own shared memory (cluster 1). Prints gathers per second for each: the ceiling of any
// SpMV whose columns are uniformly random, whatever layout holds x.
//   nvcc -O3 -arch=sm_90 -std=c++17 -o gather_probe bench/probes/gather_probe.cu && ./gather_probe
// H100 (2026-11-23): L2 118 G/s; clusters of 2 / 4 / 8 / 16 blocks 150 / 87 / 78 / 67 G/s; a block's
// own shared memory 287 G/s. Grouping each warp's 32 gathers into one block of the cluster changes nothing.
#include <cooperative_groups.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <random>
namespace cg = cooperative_groups;
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

constexpr int kSlice = 32768; // floats of x per block (128 KB)
constexpr int U = 4;

// Sums val[k] * fetch(idx[k]) over this thread's share of k < n, U independent gathers in flight.
template <class Fetch> __device__ float gather_sum(const uint32_t *idx, const float *val, int64_t n, Fetch fetch) {
    float acc = 0; const int64_t stride = (int64_t)gridDim.x * blockDim.x * U;
    for (int64_t k0 = blockIdx.x * (int64_t)blockDim.x * U + threadIdx.x; k0 < n; k0 += stride) {
        uint32_t c[U]; float v[U];
#pragma unroll
        for (int u = 0; u < U; u++) { int64_t k = k0 + u * blockDim.x; c[u] = k < n ? __ldg(idx + k) : 0; v[u] = k < n ? __ldg(val + k) : 0.f; }
#pragma unroll
        for (int u = 0; u < U; u++) acc += v[u] * fetch(c[u]);
    }
    return acc;
}

__global__ void l2_gather(const uint32_t *idx, const float *val, int64_t n, const float *x, float *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = gather_sum(idx, val, n, [&](uint32_t c) { return __ldg(x + c); });
}

// idx[k] in [0, cluster size * kSlice): block rank idx / kSlice, offset idx % kSlice.
__global__ void cluster_gather(const uint32_t *idx, const float *val, int64_t n, const float *x, float *out) {
    extern __shared__ float xs[];
    cg::cluster_group cluster = cg::this_cluster();
    const unsigned rank = cluster.block_rank();
    for (int i = threadIdx.x; i < kSlice; i += blockDim.x) xs[i] = x[rank * kSlice + i];
    cluster.sync();
    const float acc = gather_sum(idx, val, n, [&](uint32_t c) { return cluster.map_shared_rank(xs, c / kSlice)[c % kSlice]; });
    cluster.sync();
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

int main() {
    const int64_t n = 32 << 20;
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    float *x, *val, *out; uint32_t *idx;
    CK(cudaMalloc(&x, (2 << 20) * 4)); CK(cudaMalloc(&val, n * 4)); CK(cudaMalloc(&idx, n * 4)); CK(cudaMalloc(&out, 1 << 26));
    std::vector<float> hv(n, 1.0f), hx(2 << 20);
    for (size_t i = 0; i < hx.size(); i++) hx[i] = (float)(i % 1000) * 0.001f;
    CK(cudaMemcpy(val, hv.data(), n * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(x, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice));
    std::vector<uint32_t> hi(n);
    std::mt19937_64 rng(1);
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    auto fill = [&](uint32_t range) { for (auto &c : hi) c = (uint32_t)(rng() % range); CK(cudaMemcpy(idx, hi.data(), n * 4, cudaMemcpyHostToDevice)); };
    // each warp's 32 consecutive gathers in one random block of the cluster
    auto fill_grouped = [&](uint32_t ranks) { uint32_t r = 0; for (int64_t k = 0; k < n; k++) { if (k % 32 == 0) r = (uint32_t)(rng() % ranks); hi[k] = r * kSlice + (uint32_t)(rng() % kSlice); } CK(cudaMemcpy(idx, hi.data(), n * 4, cudaMemcpyHostToDevice)); };
    auto timeit = [&](auto launch) { float best = 1e9; for (int r = 0; r < 7; r++) { CK(cudaEventRecord(a)); launch(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (r > 1 && ms < best) best = ms; } CK(cudaGetLastError()); return best; };

    fill(2 << 20);
    for (int threads : {256, 1024}) {
        float ms = timeit([&] { l2_gather<<<sms * (2048 / threads), threads>>>(idx, val, n, x, out); });
        printf("L2 gather, 8 MB x, %4d threads/block: %.3f ms, %.1f G gathers/s\n", threads, ms, n / ms / 1e6);
    }
    CK(cudaFuncSetAttribute(cluster_gather, cudaFuncAttributeMaxDynamicSharedMemorySize, kSlice * 4));
    CK(cudaFuncSetAttribute(cluster_gather, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    for (int mode = 0; mode < 2; mode++)
    for (int cs : {1, 2, 4, 8, 16}) {
        if (mode == 1 && cs == 1) continue;
        if (mode == 0) fill((uint32_t)cs * kSlice); else fill_grouped((uint32_t)cs);
        for (int threads : {1024}) {
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute attr[1];
            attr[0].id = cudaLaunchAttributeClusterDimension; attr[0].val.clusterDim.x = cs; attr[0].val.clusterDim.y = 1; attr[0].val.clusterDim.z = 1;
            cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = kSlice * 4; cfg.attrs = attr; cfg.numAttrs = 1;
            cfg.gridDim = dim3(cs);
            int clusters = 0; CK(cudaOccupancyMaxActiveClusters(&clusters, (void *)cluster_gather, &cfg));
            cfg.gridDim = dim3(clusters * cs);
            float ms = timeit([&] { CK(cudaLaunchKernelEx(&cfg, cluster_gather, (const uint32_t *)idx, (const float *)val, n, (const float *)x, out)); });
            printf("%s cluster %2d (%3d clusters, %3d SMs), %4d threads: %.3f ms, %.1f G gathers/s\n", mode ? "warp-grouped" : "random      ", cs, clusters, clusters * cs, threads, ms, n / ms / 1e6);
        }
    }
    return 0;
}
