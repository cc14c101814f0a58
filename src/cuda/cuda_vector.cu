// The vector arithmetic of iterative methods on the device (sr_vector_dot, sr_vector_axpby):
// what keeps a solver's vectors on the GPU between its products.
#include "cuda_common.cuh"

#include <cub/cub.cuh>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = 256;

// Block sums of x·y in float64, added into *sum.
template <typename T> __global__ void dot_kernel(const T *x, const T *y, int64_t n, double *sum) {
    using reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename reduce::TempStorage storage;
    double part = 0.0;
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        part += (double)x[i] * (double)y[i];
    const double block = reduce(storage).Sum(part);
    if (threadIdx.x == 0)
        atomicAdd(sum, block);
}

template <typename T> __global__ void axpby_kernel(double alpha, const T *x, double beta, T *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        y[i] = (T)((alpha == 0.0 ? 0.0 : alpha * (double)x[i]) + (beta == 0.0 ? 0.0 : beta * (double)y[i]));
}

} // namespace

extern "C" sr_status sr_cuda_zero(sr_context_s *ctx, void *data, size_t bytes) {
    device_guard guard(ctx->device);
    SR_CUDA_TRY(cudaMemsetAsync(data, 0, bytes, stream_of(ctx)));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_vector_dot(sr_context_s *ctx, const sr_dense *x, const sr_dense *y, double *result) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    buffer<double> sum(ctx);
    SR_TRY(sum.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(sum.get(), 0, sizeof(double), stream));
    const unsigned grid = grid_for(x->nrows, kThreads);
    if (x->type == SR_TYPE_FLOAT32)
        dot_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float *>(x->data),
                                                  static_cast<const float *>(y->data), x->nrows, sum.get());
    else
        dot_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const double *>(x->data),
                                                  static_cast<const double *>(y->data), x->nrows, sum.get());
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(cudaMemcpyAsync(result, sum.get(), sizeof(double), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(cudaStreamSynchronize(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_vector_axpby(sr_context_s *ctx, double alpha, const sr_dense *x, double beta,
                                          const sr_dense *y) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const unsigned grid = grid_for(x->nrows, kThreads);
    if (x->type == SR_TYPE_FLOAT32)
        axpby_kernel<<<grid, kThreads, 0, stream>>>(alpha, static_cast<const float *>(x->data), beta,
                                                    static_cast<float *>(y->data), x->nrows);
    else
        axpby_kernel<<<grid, kThreads, 0, stream>>>(alpha, static_cast<const double *>(x->data), beta,
                                                    static_cast<double *>(y->data), x->nrows);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}
