// Value conversion between types on the device (same rules as src/cpu/cpu_cast.c).
#include "cuda_common.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

template <typename S>
__global__ void first_not_int32(const S *in, int64_t n, unsigned long long *first) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
        const double v = (double)in[k];
        if (!(v > -2147483649.0 && v < 2147483648.0)) // NaN fails too
            atomicMin(first, (unsigned long long)k);
    }
}

template <typename S, typename D> __global__ void convert(const S *in, int64_t n, D *out) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
        out[k] = in != nullptr ? (D)in[k] : D(1);
}

template <typename S> sr_status check_int32(const sr_matrix_s *A) {
    sr_cuda::first_index flag(A->ctx);
    SR_TRY(flag.reset());
    first_not_int32<S><<<sr_cuda::blocks_for(A->nnz, 256), 256, 0, sr_cuda::stream_of(A->ctx)>>>(
        static_cast<const S *>(A->values), A->nnz, flag.get());
    SR_CUDA_LAUNCHED();
    unsigned long long first = sr_cuda::kNoIndex;
    SR_TRY(flag.read(&first));
    if (first == sr_cuda::kNoIndex)
        return SR_SUCCESS;
    S bad;
    SR_CUDA_TRY(cudaMemcpy(&bad, static_cast<const S *>(A->values) + first, sizeof bad, cudaMemcpyDeviceToHost));
    return sr_error(SR_ERROR_INVALID_ARGUMENT, "cannot cast entry %llu (value %g) to int32: %s", first, (double)bad,
                    bad != bad ? "NaN" : "out of range");
}

template <typename S, typename D> sr_status run(const sr_matrix_s *A, sr_matrix_s *B) {
    convert<S, D><<<sr_cuda::blocks_for(A->nnz, 256), 256, 0, sr_cuda::stream_of(A->ctx)>>>(
        static_cast<const S *>(A->values), A->nnz, static_cast<D *>(B->values));
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(sr_cuda::stream_of(A->ctx)));
    return SR_SUCCESS;
}

template <typename S> sr_status from(const sr_matrix_s *A, sr_matrix_s *B) {
    switch (B->type) {
    case SR_TYPE_INT32: return run<S, int32_t>(A, B);
    case SR_TYPE_FLOAT32: return run<S, float>(A, B);
    case SR_TYPE_FLOAT64: return run<S, double>(A, B);
    case SR_TYPE_BOOL: return SR_SUCCESS; // pattern only
    }
    return sr_error(SR_ERROR_INTERNAL, "unknown type %d", (int)B->type);
}

} // namespace

extern "C" sr_status sr_cuda_cast_values(const sr_matrix_s *A, sr_matrix_s *B) {
    sr_cuda::device_guard guard(A->ctx->device);
    if (B->type == SR_TYPE_INT32 && A->type == SR_TYPE_FLOAT32)
        SR_TRY(check_int32<float>(A));
    if (B->type == SR_TYPE_INT32 && A->type == SR_TYPE_FLOAT64)
        SR_TRY(check_int32<double>(A));
    switch (A->type) {
    case SR_TYPE_BOOL: return from<uint8_t>(A, B); // values are NULL: every entry converts to 1
    case SR_TYPE_INT32: return from<int32_t>(A, B);
    case SR_TYPE_FLOAT32: return from<float>(A, B);
    case SR_TYPE_FLOAT64: return from<double>(A, B);
    }
    return sr_error(SR_ERROR_INTERNAL, "unknown type %d", (int)A->type);
}
