// What the standalone SDDMM probes share (bench/probes/sddmm_*_probe.cu): dense-ish patterns made
// on the host, uploads, a float64 reference and its error, and cuSPARSE's SDDMM called directly.
#pragma once
#include <cusparse.h>

#include <cmath>

#include "probe_common.cuh"

#define CS(x)                                                                                                       \
    do {                                                                                                            \
        cusparseStatus_t s = (x);                                                                                   \
        if (s != CUSPARSE_STATUS_SUCCESS) {                                                                         \
            printf("%s line %d: cuSPARSE status %d\n", #x, __LINE__, (int)s);                                       \
            exit(1);                                                                                                \
        }                                                                                                           \
    } while (0)

// float64 reference: a warp an entry.
__global__ void reference(const int64_t *rowptr, const int32_t *colind, int64_t m, const float *A, const float *B,
                          int K, double *out) {
    const int lane = threadIdx.x % 32;
    for (int64_t i = blockIdx.x; i < m; i += gridDim.x)
        for (int64_t e = rowptr[i] + threadIdx.x / 32; e < rowptr[i + 1]; e += blockDim.x / 32) {
            double s = 0;
            for (int k = lane; k < K; k += 32)
                s += (double)A[i * K + k] * (double)B[(int64_t)colind[e] * K + k];
            for (int o = 16; o > 0; o /= 2)
                s += __shfl_xor_sync(0xffffffffu, s, o);
            if (lane == 0)
                out[e] = s;
        }
}

struct csr {
    int64_t m, n;
    std::vector<int64_t> rowptr;
    std::vector<int32_t> colind;
};

static csr uniform(int64_t m, int64_t n, double p, uint64_t seed) {
    csr s{m, n, {0}, {}};
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            if ((double)(x >> 11) / 9007199254740992.0 < p)
                s.colind.push_back((int32_t)j);
        }
        s.rowptr.push_back((int64_t)s.colind.size());
    }
    return s;
}

static csr band(int64_t m, int64_t half) { // row i holds i - half .. i + half - 1, clipped
    csr s{m, m, {0}, {}};
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = std::max<int64_t>(0, i - half); j < std::min<int64_t>(m, i + half); j++)
            s.colind.push_back((int32_t)j);
        s.rowptr.push_back((int64_t)s.colind.size());
    }
    return s;
}

struct named_csr {
    const char *name;
    csr s;
};

// The dense-ish patterns the SDDMM probes time (bench_sddmm.py's, made the same way here).
static std::vector<named_csr> dense_ish_sets() {
    std::vector<named_csr> sets;
    sets.push_back({"uniform 8K x 8K at 25%", uniform(8192, 8192, 0.25, 6)});
    sets.push_back({"uniform 16K x 16K at 5%", uniform(16384, 16384, 0.05, 5)});
    sets.push_back({"band 32K, 512 wide", band(32768, 256)});
    return sets;
}

template <typename T> static T *upload(const std::vector<T> &v) {
    T *d = nullptr;
    CK(cudaMalloc(&d, std::max<size_t>(1, v.size()) * sizeof(T)));
    CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

// A (m x K) and B (n x K) filled (the same on every run), and the float64 reference at S's entries.
static void make_operands(int sms, const csr &s, const int64_t *rowptr, const int32_t *colind, int K, float **A,
                          float **B, double *ref) {
    CK(cudaMalloc(A, s.m * K * sizeof(float)));
    CK(cudaMalloc(B, s.n * K * sizeof(float)));
    fill<<<1024, 256>>>(*A, s.m * K, 1);
    fill<<<1024, 256>>>(*B, s.n * K, 2);
    reference<<<4 * sms, 256>>>(rowptr, colind, s.m, *A, *B, K, ref);
    CK(cudaGetLastError());
}

static double max_rel_err(const float *d_out, const double *d_ref, size_t nnz) {
    std::vector<float> got(nnz);
    std::vector<double> want(nnz);
    CK(cudaMemcpy(got.data(), d_out, nnz * sizeof(float), cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(want.data(), d_ref, nnz * sizeof(double), cudaMemcpyDeviceToHost));
    double err = 0, scale = 0;
    for (size_t e = 0; e < nnz; e++)
        scale = std::max(scale, std::fabs(want[e]));
    for (size_t e = 0; e < nnz; e++)
        err = std::max(err, std::fabs((double)got[e] - want[e]) / (scale > 0 ? scale : 1));
    return err;
}

// cuSPARSE's SDDMM (vals = A · op(B) at S's pattern, B given as K x n column-major: our n x K
// rows), its median time in *ms; NaN there when cuSPARSE refuses the call (printed).
static void cusparse_sddmm(cusparseHandle_t handle, int64_t m, int64_t n, int K, int64_t nnz, int32_t *rowptr32,
                           int32_t *colind, float *A, float *B, float *vals, float *ms) {
    cusparseSpMatDescr_t C = nullptr;
    cusparseDnMatDescr_t dA = nullptr, dB = nullptr;
    const float alpha = 1.f, beta = 0.f;
    size_t bytes = 0;
    void *work = nullptr;
    const auto opn = CUSPARSE_OPERATION_NON_TRANSPOSE;
    cusparseStatus_t st = cusparseCreateCsr(&C, m, n, nnz, rowptr32, colind, vals, CUSPARSE_INDEX_32I,
                                            CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F);
    if (st == CUSPARSE_STATUS_SUCCESS)
        st = cusparseCreateDnMat(&dA, m, K, K, A, CUDA_R_32F, CUSPARSE_ORDER_ROW);
    if (st == CUSPARSE_STATUS_SUCCESS)
        st = cusparseCreateDnMat(&dB, K, n, K, B, CUDA_R_32F, CUSPARSE_ORDER_COL);
    if (st == CUSPARSE_STATUS_SUCCESS)
        st = cusparseSDDMM_bufferSize(handle, opn, opn, &alpha, dA, dB, &beta, C, CUDA_R_32F,
                                      CUSPARSE_SDDMM_ALG_DEFAULT, &bytes);
    if (st == CUSPARSE_STATUS_SUCCESS)
        CK(cudaMalloc(&work, std::max<size_t>(bytes, 1)));
    if (st == CUSPARSE_STATUS_SUCCESS)
        st = cusparseSDDMM_preprocess(handle, opn, opn, &alpha, dA, dB, &beta, C, CUDA_R_32F,
                                      CUSPARSE_SDDMM_ALG_DEFAULT, work);
    if (st == CUSPARSE_STATUS_SUCCESS)
        *ms = median_ms([&] {
            cusparseSDDMM(handle, opn, opn, &alpha, dA, dB, &beta, C, CUDA_R_32F, CUSPARSE_SDDMM_ALG_DEFAULT, work);
        });
    else
        printf(" [cuSPARSE status %d]", (int)st);
    if (work)
        CK(cudaFree(work));
    if (C)
        cusparseDestroySpMat(C);
    if (dA)
        cusparseDestroyDnMat(dA);
    if (dB)
        cusparseDestroyDnMat(dB);
}
