// The context's cuBLAS handle (cuda_blas.cu).
#pragma once

#include <cublas_v2.h>

#include "cuda_common.cuh"

namespace sr_cuda {

// The context's handle, made on first use, bound to the context's stream; the caller has the
// context's device current.
sr_status blas_handle(sr_context_s *ctx, cublasHandle_t *handle);
// A status for a failed cuBLAS call (out of memory as SR_ERROR_DEVICE_OUT_OF_MEMORY).
sr_status blas_fail(int status, const char *what);

} // namespace sr_cuda
