// The context's cuBLAS handle for the tensor-core paths: made on a context's first use (loading
// cuBLAS costs tens of milliseconds, which a call that never multiplies dense panels must not
// pay), set to the context's stream on every use, freed with the context.
#include <cublas_v2.h>

#include "cuda_blas.cuh"

namespace sr_cuda {

namespace {

void free_blas(sr_context_s *ctx) {
    if (ctx->blas) {
        device_guard guard(ctx->device);
        cublasDestroy(static_cast<cublasHandle_t>(ctx->blas));
    }
    ctx->blas = nullptr;
}

} // namespace

sr_status blas_fail(int status, const char *what) {
    const cublasStatus_t s = static_cast<cublasStatus_t>(status);
    if (s == CUBLAS_STATUS_ALLOC_FAILED)
        return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY, "device out of memory in %s (cuBLAS)", what);
    return sr_error(SR_ERROR_DEVICE, "cuBLAS error %s in %s", cublasGetStatusName(s), what);
}

sr_status blas_handle(sr_context_s *ctx, cublasHandle_t *handle) {
    pthread_mutex_lock(&ctx->blas_lock);
    sr_status s = SR_SUCCESS;
    if (!ctx->blas) {
        cublasHandle_t h = nullptr;
        const cublasStatus_t made = cublasCreate(&h);
        if (made != CUBLAS_STATUS_SUCCESS) {
            s = blas_fail(made, "cublasCreate");
        } else {
            ctx->blas = h;
            ctx->free_blas = free_blas;
        }
    }
    pthread_mutex_unlock(&ctx->blas_lock);
    SR_TRY(s);
    *handle = static_cast<cublasHandle_t>(ctx->blas);
    const cublasStatus_t set = cublasSetStream(*handle, stream_of(ctx));
    return set == CUBLAS_STATUS_SUCCESS ? SR_SUCCESS : blas_fail(set, "cublasSetStream");
}

} // namespace sr_cuda
