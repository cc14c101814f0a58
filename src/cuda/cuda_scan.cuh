// Row counts to row pointers: the step between a count pass and a fill pass.
#pragma once

#include "cuda_common.cuh"

extern "C" {
#include "../core/matrix.h"
}

#include <cub/cub.cuh>

namespace sr_cuda {

// C->rowptr[1..nrows] hold each row's count (queued on the context's stream): turns them into
// row pointers (rowptr[0] = 0), waits, and sets *nnz to the total.
inline sr_status scan_counts(sr_context_s *ctx, sr_matrix_s *C, int64_t *nnz, const char *what) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t nrows = C->nrows;
    *nnz = 0;
    cudaError_t err = cudaMemsetAsync(C->rowptr, 0, sizeof(int64_t), stream);
    if (err == cudaSuccess && nrows > 0) {
        size_t temp_bytes = 0;
        err = cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, C->rowptr + 1, C->rowptr + 1, nrows, stream);
        buffer<unsigned char> temp(ctx);
        if (err == cudaSuccess)
            SR_TRY(temp.allocate(temp_bytes));
        if (err == cudaSuccess)
            err = cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, C->rowptr + 1, C->rowptr + 1, nrows, stream);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(nnz, C->rowptr + nrows, sizeof *nnz, cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess) // temp is freed (stream-ordered) only after the scan has used it
            err = cudaStreamSynchronize(stream);
    }
    if (err == cudaSuccess)
        err = cudaStreamSynchronize(stream);
    return err == cudaSuccess ? SR_SUCCESS : sr_cuda_fail(err, what, __FILE__, __LINE__);
}

} // namespace sr_cuda
