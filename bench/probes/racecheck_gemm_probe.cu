// cuBLAS GEMMs of the k-NN panel's forms (cuda_knn_panel.cu: Xpanelᵀ·Qpanel, FP16 in and FP32 out,
// or TF32 on float32), on a non-blocking stream of the probe's own as the library's contexts use,
// each followed by one small kernel of our own that uses shared memory, so that compute-sanitizer's
// racecheck can be told apart on Hopper: does the tool fail on cuBLAS's kernels (TMA loads, wgmma)
// whatever it is asked to check, as it fails on test_knn_panel?
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/racecheck_gemm_probe bench/probes/racecheck_gemm_probe.cu -lcublas
//   compute-sanitizer --tool racecheck /tmp/racecheck_gemm_probe [N M H]   (one FP16 shape)
//   compute-sanitizer --tool racecheck /tmp/racecheck_gemm_probe suite     (the shapes test_knn_panel
//       makes: K = 64-2048, narrow query batches, FP16 and TF32)
//   compute-sanitizer --tool racecheck --kernel-name kns=block_sum /tmp/racecheck_gemm_probe
// Prints "ok" and each product's checksum when every call succeeded.
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <string>
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

struct Shape { int n, m, h; bool tf32; };

// One product C (N x M, column-major) = Xᵀ (N x H) · Q (H x M), the panel's call with X and Q stored
// H-major, then block_sum over C; returns 0 when every call succeeded.
static int one_shape(cublasHandle_t h, cudaStream_t stream, Shape sh) {
    const int N = sh.n, M = sh.m, H = sh.h;
    const size_t esize = sh.tf32 ? sizeof(float) : sizeof(__half);
    std::vector<char> x((size_t)H * N * esize), q((size_t)H * M * esize);
    for (size_t e = 0; e < (size_t)H * N; e++) {
        const float v = (float)((e * 7919) % 13) / 13.0f;
        if (sh.tf32) ((float *)x.data())[e] = v; else ((__half *)x.data())[e] = __float2half(v);
    }
    for (size_t e = 0; e < (size_t)H * M; e++) {
        const float v = (float)((e * 104729) % 11) / 11.0f;
        if (sh.tf32) ((float *)q.data())[e] = v; else ((__half *)q.data())[e] = __float2half(v);
    }
    void *dx, *dq;
    float *dc, *dsum;
    CK(cudaMalloc(&dx, x.size()));
    CK(cudaMalloc(&dq, q.size()));
    CK(cudaMalloc(&dc, (size_t)N * M * sizeof(float)));
    CK(cudaMalloc(&dsum, sizeof(float)));
    CK(cudaMemcpyAsync(dx, x.data(), x.size(), cudaMemcpyHostToDevice, stream));
    CK(cudaMemcpyAsync(dq, q.data(), q.size(), cudaMemcpyHostToDevice, stream));
    CK(cudaMemsetAsync(dsum, 0, sizeof(float), stream));
    const float one = 1.0f, zero = 0.0f;
    const cudaDataType in = sh.tf32 ? CUDA_R_32F : CUDA_R_16F;
    const cublasComputeType_t compute = sh.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, H, &one, dx, in, H, dq, in, H, &zero, dc, CUDA_R_32F, N,
                    compute, CUBLAS_GEMM_DEFAULT));
    const int64_t n = (int64_t)N * M;
    block_sum<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(dc, n, dsum);
    CK(cudaGetLastError());
    float sum = 0;
    CK(cudaMemcpyAsync(&sum, dsum, sizeof sum, cudaMemcpyDeviceToHost, stream));
    CK(cudaStreamSynchronize(stream));
    printf("ok: %d x %d x %d %s, checksum %.6g\n", N, M, H, sh.tf32 ? "tf32" : "fp16", sum);
    CK(cudaFree(dx));
    CK(cudaFree(dq));
    CK(cudaFree(dc));
    CK(cudaFree(dsum));
    return 0;
}

int main(int argc, char **argv) {
    std::vector<Shape> shapes;
    if (argc > 1 && std::string(argv[1]) == "suite") {
        // index rows x query batch x panel columns, as test_knn_panel's cases make them
        const int ns[] = {1500, 4096}, ms[] = {1, 7, 64, 512}, hs[] = {64, 192, 640, 2048};
        for (int n : ns)
            for (int m : ms)
                for (int hh : hs)
                    for (int tf : {0, 1})
                        shapes.push_back({n, m, hh, tf == 1});
    } else {
        shapes.push_back({argc > 1 ? atoi(argv[1]) : 4096, argc > 2 ? atoi(argv[2]) : 2048,
                          argc > 3 ? atoi(argv[3]) : 1024, false});
    }
    cudaStream_t stream;
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, stream));
    for (const Shape &sh : shapes)
        if (one_shape(h, stream, sh) != 0)
            return 1;
    printf("ok: %zu products\n", shapes.size());
    cublasDestroy(h);
    CK(cudaStreamDestroy(stream));
    return 0;
}
