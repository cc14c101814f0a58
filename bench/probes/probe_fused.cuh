// What the fused-pattern probes share (fused_scatter_probe.cu, fused_rowtile_probe.cu): a tall X of
// L entries a row from a hash, the kernel that reads X once (the floor), and the relative
// difference of two device vectors of w.
#pragma once
#include <cmath>

#include "probe_common.cuh"

constexpr int L = 10; // entries a row

// Column j of row i's k-th entry, from a hash: X's pattern, the same on every run.
__global__ void make_x(int64_t *rowptr, int32_t *col, float *val, int64_t m, int n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * L; e += (int64_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)e * 2654435761u ^ 0x9e3779b9u;
        h ^= h >> 15, h *= 0x2c1b3c6du, h ^= h >> 12;
        col[e] = (int32_t)(h % (uint32_t)n);
        val[e] = (float)(h >> 16 & 0xff) / 256.0f - 0.5f;
        if (e % L == 0)
            rowptr[e / L] = e;
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        rowptr[m] = m * L;
}

// The floor: every byte of X read once, 16 bytes a load.
__global__ void read_x(const int64_t *rowptr, const int32_t *col, const float *val, int64_t m, float *sink) {
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x, stride = (int64_t)gridDim.x * blockDim.x;
    float s = 0.f;
    for (int64_t k = i; k < m * L / 4; k += stride) {
        const int4 c = reinterpret_cast<const int4 *>(col)[k];
        const float4 x = reinterpret_cast<const float4 *>(val)[k];
        s += x.x + x.y + x.z + x.w + (float)(c.x ^ c.y ^ c.z ^ c.w);
    }
    for (int64_t k = i; k < (m + 1) / 2; k += stride) {
        const longlong2 r = reinterpret_cast<const longlong2 *>(rowptr)[k];
        s += (float)(r.x ^ r.y);
    }
    if (s == 12345.f)
        *sink = s;
}

// max |got - want| / max |want| over n floats on the device; 0 when want is null.
static double rel_diff(const float *got_d, const float *want_d, int n) {
    if (!want_d)
        return 0.0;
    std::vector<float> got((size_t)n), ref((size_t)n);
    CK(cudaMemcpy(got.data(), got_d, n * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(ref.data(), want_d, n * sizeof(float), cudaMemcpyDeviceToHost));
    double diff = 0, scale = 0;
    for (int j = 0; j < n; j++)
        diff = std::max(diff, (double)std::fabs(got[j] - ref[j])), scale = std::max(scale, (double)std::fabs(ref[j]));
    return scale > 0 ? diff / scale : 0.0;
}
