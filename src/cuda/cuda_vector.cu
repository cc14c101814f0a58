// The vector arithmetic of iterative methods on the device (sr_vector_dot, _asum, _axpby):
// what keeps a solver's vectors on the GPU between its products.
#include "cuda_common.cuh"

#include <cub/cub.cuh>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

constexpr int kThreads = 256;

// Block sums of x·y (of |x| with y NULL) in float64, one per block in parts: summed by
// sum_parts in a fixed order, so that a sum is the same on every call (no atomics), which
// iterative methods need to repeat themselves bit for bit.
template <typename T> __global__ void dot_kernel(const T *x, const T *y, int64_t n, double *parts) {
    using reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename reduce::TempStorage storage;
    double part = 0.0;
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        part += y ? (double)x[i] * (double)y[i] : fabs((double)x[i]);
    const double block = reduce(storage).Sum(part);
    if (threadIdx.x == 0)
        parts[blockIdx.x] = block;
}

__global__ void sum_parts(const double *parts, int n, double *sum) {
    using reduce = cub::BlockReduce<double, kThreads>;
    __shared__ typename reduce::TempStorage storage;
    double part = 0.0;
    for (int i = threadIdx.x; i < n; i += kThreads)
        part += parts[i];
    const double total = reduce(storage).Sum(part);
    if (threadIdx.x == 0)
        *sum = total;
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
    const unsigned grid = grid_for(x->nrows, kThreads);
    buffer<double> parts(ctx); // the block sums, then the total
    SR_TRY(parts.allocate((size_t)grid + 1));
    double *sum = parts.get() + grid;
    if (x->type == SR_TYPE_FLOAT32)
        dot_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float *>(x->data),
                                                  y ? static_cast<const float *>(y->data) : nullptr, x->nrows,
                                                  parts.get());
    else
        dot_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const double *>(x->data),
                                                  y ? static_cast<const double *>(y->data) : nullptr, x->nrows,
                                                  parts.get());
    SR_CUDA_LAUNCHED();
    sum_parts<<<1, kThreads, 0, stream>>>(parts.get(), (int)grid, sum);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(cudaMemcpyAsync(result, sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
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
