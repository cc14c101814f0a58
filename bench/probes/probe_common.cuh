// What the standalone CUDA probes share (bench/probes/*.cu): the error check, deterministic fill
// of dense operands, and the median kernel time of a launch.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                                       \
    do {                                                                                                            \
        cudaError_t e = (x);                                                                                        \
        if (e != cudaSuccess) {                                                                                     \
            printf("%s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e));                                       \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)

// x[i] in [-0.5, 0.5) from a hash of i and seed: the same operands on every run.
__global__ void fill(float *x, int64_t n, uint32_t seed) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 16, h *= 0x85ebca6bu, h ^= h >> 13;
        x[i] = (float)(h & 0xffff) / 65536.0f - 0.5f;
    }
}

// The median of 15 timed launches (cudaEvents, ms) after one checked warm-up launch.
template <typename F> static float median_ms(F launch) {
    cudaEvent_t t0, t1;
    CK(cudaEventCreate(&t0));
    CK(cudaEventCreate(&t1));
    launch();
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int rep = 0; rep < 15; rep++) {
        CK(cudaEventRecord(t0));
        launch();
        CK(cudaEventRecord(t1));
        CK(cudaEventSynchronize(t1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, t0, t1));
        ts.push_back(ms);
    }
    CK(cudaEventDestroy(t0));
    CK(cudaEventDestroy(t1));
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}
