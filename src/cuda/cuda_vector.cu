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

// α and β scaled by device scalars a and b where given (NULL: 1), read by every thread (one
// cached line), so a solver's step sizes never visit the host.
template <typename T>
__global__ void axpby_kernel(double alpha, const double *a, const T *x, double beta, const double *b, T *y, int64_t n) {
    if (a)
        alpha *= *a;
    if (b)
        beta *= *b;
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        y[i] = (T)((alpha == 0.0 ? 0.0 : alpha * (double)x[i]) + (beta == 0.0 ? 0.0 : beta * (double)y[i]));
}

template <typename T> __global__ void divide_kernel(T *z, const T *x, const T *y, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        z[i] = x[i] / y[i];
}

template <typename T> __global__ void and_greater_kernel(T *flag, const T *x, double threshold, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)kThreads + threadIdx.x; i < n; i += (int64_t)gridDim.x * kThreads)
        flag[i] = flag[i] != T(0) && (double)x[i] > threshold ? T(1) : T(0);
}

// Σ x·y (Σ|x| with y NULL) of n > 0 elements into the device double *sum, in the stream's order:
// block sums, then their sum in block order.
sr_status dot_into(sr_context_s *ctx, const sr_dense *x, const sr_dense *y, double *sum) {
    cudaStream_t stream = stream_of(ctx);
    const unsigned grid = grid_for(x->nrows, kThreads);
    buffer<double> parts(ctx); // freed in stream order, after sum_parts has read it
    SR_TRY(parts.allocate((size_t)grid));
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
    return SR_SUCCESS;
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
    SR_TRY(dot_into(ctx, x, y, sum.get()));
    SR_CUDA_TRY(cudaMemcpyAsync(result, sum.get(), sizeof(double), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_vector_dot_s(sr_context_s *ctx, const sr_dense *x, const sr_dense *y, const sr_dense *s) {
    device_guard guard(ctx->device);
    if (x->nrows == 0) {
        SR_CUDA_TRY(cudaMemsetAsync(s->data, 0, sizeof(double), stream_of(ctx))); // all-zero bits: +0.0
        return SR_SUCCESS;
    }
    return dot_into(ctx, x, y, static_cast<double *>(s->data));
}

extern "C" sr_status sr_cuda_vector_axpby_s(sr_context_s *ctx, double alpha, const void *a, const sr_dense *x,
                                            double beta, const void *b, const sr_dense *y) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const unsigned grid = grid_for(x->nrows, kThreads);
    const double *as = static_cast<const double *>(a), *bs = static_cast<const double *>(b);
    if (x->type == SR_TYPE_FLOAT32)
        axpby_kernel<<<grid, kThreads, 0, stream>>>(alpha, as, static_cast<const float *>(x->data), beta, bs,
                                                    static_cast<float *>(y->data), x->nrows);
    else
        axpby_kernel<<<grid, kThreads, 0, stream>>>(alpha, as, static_cast<const double *>(x->data), beta, bs,
                                                    static_cast<double *>(y->data), x->nrows);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_vector_axpby(sr_context_s *ctx, double alpha, const sr_dense *x, double beta,
                                          const sr_dense *y) {
    return sr_cuda_vector_axpby_s(ctx, alpha, nullptr, x, beta, nullptr, y);
}

extern "C" sr_status sr_cuda_vector_divide(sr_context_s *ctx, const sr_dense *z, const sr_dense *x, const sr_dense *y) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const unsigned grid = grid_for(x->nrows, kThreads);
    if (x->type == SR_TYPE_FLOAT32)
        divide_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float *>(z->data), static_cast<const float *>(x->data),
                                                     static_cast<const float *>(y->data), x->nrows);
    else
        divide_kernel<<<grid, kThreads, 0, stream>>>(static_cast<double *>(z->data),
                                                     static_cast<const double *>(x->data),
                                                     static_cast<const double *>(y->data), x->nrows);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_vector_and_greater(sr_context_s *ctx, const sr_dense *flag, const sr_dense *x,
                                                double threshold) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const unsigned grid = grid_for(x->nrows, kThreads);
    if (x->type == SR_TYPE_FLOAT32)
        and_greater_kernel<<<grid, kThreads, 0, stream>>>(static_cast<float *>(flag->data),
                                                          static_cast<const float *>(x->data), threshold, x->nrows);
    else
        and_greater_kernel<<<grid, kThreads, 0, stream>>>(static_cast<double *>(flag->data),
                                                          static_cast<const double *>(x->data), threshold, x->nrows);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}
