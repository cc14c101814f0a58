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

// A tall X of m rows, L entries a row, over n columns on the device, with y (n), v (m), w (m: room
// for X·y), want (n: a reference w) and a sink; made, announced and its read timed on creation.
struct tall_x {
    int64_t m;
    int n;
    int64_t *rowptr;
    int32_t *col;
    float *val, *y, *v, *w, *want, *sink;
    tall_x(int sms, int64_t rows, int cols) : m(rows), n(cols) {
        CK(cudaMalloc(&rowptr, (m + 2) * sizeof(int64_t)));
        CK(cudaMalloc(&col, m * L * sizeof(int32_t)));
        CK(cudaMalloc(&val, m * L * sizeof(float)));
        CK(cudaMalloc(&y, n * sizeof(float)));
        CK(cudaMalloc(&v, m * sizeof(float)));
        CK(cudaMalloc(&w, m * sizeof(float)));
        CK(cudaMalloc(&want, n * sizeof(float)));
        CK(cudaMalloc(&sink, sizeof(float)));
        make_x<<<4 * sms, 256>>>(rowptr, col, val, m, n);
        fill<<<1024, 256>>>(y, n, 3);
        fill<<<1024, 256>>>(v, m, 4);
        CK(cudaDeviceSynchronize());
        printf("X %lld x %d, %d entries a row (%.0f MB)\n", (long long)m, n, L, (m * L * 8.0 + m * 8.0) / 1e6);
        const float t_read = median_ms([&] { read_x<<<4 * sms, 256>>>(rowptr, col, val, m, sink); });
        printf("  %-34s %7.3f ms\n", "read X once", t_read);
    }
    ~tall_x() {
        for (void *p : {(void *)rowptr, (void *)col, (void *)val, (void *)y, (void *)v, (void *)w, (void *)want,
                        (void *)sink})
            cudaFree(p);
    }
};
