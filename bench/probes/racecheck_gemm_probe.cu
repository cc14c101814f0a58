// One cuBLAS FP16 GEMM of the k-NN panel's form (cuda_knn_panel.cu: Xpanelᵀ·Qpanel, FP16 in,
// FP32 out, tensor ops), then one small kernel of our own that uses shared memory, so that
// compute-sanitizer's racecheck can be told apart on Hopper: does the tool fail on cuBLAS's
// kernels (TMA loads, wgmma) whatever it is asked to check, as it fails on test_knn_panel?
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/racecheck_gemm_probe bench/probes/racecheck_gemm_probe.cu -lcublas
//   compute-sanitizer --tool racecheck /tmp/racecheck_gemm_probe [N M H]          (default 4096 2048 1024)
//   compute-sanitizer --tool racecheck --kernel-name kns=block_sum /tmp/racecheck_gemm_probe
// Prints "ok" and the product's checksum when every call succeeded.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s line %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)
#define CB(x) do { cublasStatus_t s = (x); if (s != CUBLAS_STATUS_SUCCESS) { printf("%s line %d: %s\n", #x, __LINE__, cublasGetStatusName(s)); return 1; } } while (0)

// Each block sums its 256 values through shared memory (a tree with barriers: racecheck-clean).
__global__ void block_sum(const float *in, int64_t n, float *out) {
    __shared__ float s[256];
    const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (int o = 128; o > 0; o /= 2) {
        if (threadIdx.x < o)
            s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(out, s[0]);
}

int main(int argc, char **argv) {
    const int N = argc > 1 ? atoi(argv[1]) : 4096, M = argc > 2 ? atoi(argv[2]) : 2048, H = argc > 3 ? atoi(argv[3]) : 1024;
    std::vector<__half> x((size_t)H * N), q((size_t)H * M);
    for (size_t e = 0; e < x.size(); e++) x[e] = __float2half((float)((e * 7919) % 13) / 13.0f);
    for (size_t e = 0; e < q.size(); e++) q[e] = __float2half((float)((e * 104729) % 11) / 11.0f);
    __half *dx, *dq;
    float *dc, *dsum;
    CK(cudaMalloc(&dx, x.size() * sizeof(__half)));
    CK(cudaMalloc(&dq, q.size() * sizeof(__half)));
    CK(cudaMalloc(&dc, (size_t)N * M * sizeof(float)));
    CK(cudaMalloc(&dsum, sizeof(float)));
    CK(cudaMemcpy(dx, x.data(), x.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dq, q.data(), q.size() * sizeof(__half), cudaMemcpyHostToDevice));
    CK(cudaMemset(dsum, 0, sizeof(float)));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    const float one = 1.0f, zero = 0.0f;
    // C (N x M, column-major) = Xᵀ (N x H) · Q (H x M): the panel's call, X and Q stored H-major
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, H, &one, dx, CUDA_R_16F, H, dq, CUDA_R_16F, H, &zero, dc,
                    CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    CK(cudaDeviceSynchronize());
    printf("gemm done\n");
    const int64_t n = (int64_t)N * M;
    block_sum<<<(unsigned)((n + 255) / 256), 256>>>(dc, n, dsum);
    CK(cudaGetLastError());
    float sum = 0;
    CK(cudaMemcpy(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost));
    printf("ok: %d x %d x %d, checksum %.6g\n", N, M, H, sum);
    cublasDestroy(h);
    return 0;
}
