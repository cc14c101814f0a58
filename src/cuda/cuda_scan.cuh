// The two passes of an operation whose output rows are sized first: count each row, turn the
// counts into row pointers, allocate the entries, fill them.
#pragma once

#include "cuda_common.cuh"

extern "C" {
#include "../core/matrix.h"
}

#include <cub/cub.cuh>

#include <cstdio>
#include <type_traits>

namespace sr_cuda {

// C is a new device matrix with no entries yet. count(counts) queues a kernel that writes each
// row's length to counts[0 .. C->nrows) (called only when C has rows; it may return a cudaError_t
// for the work it queues besides kernels); fill() queues the kernel
// that writes C's entries once they are allocated (called only when there are some). Waits for
// both. On success *out = C; on failure C is freed and the message names `what`.
template <class Count, class Fill>
sr_status build_rows(sr_context_s *ctx, sr_matrix_s *C, Count count, Fill fill, const char *what, sr_matrix_s **out) {
    cudaStream_t stream = stream_of(ctx);
    const int64_t nrows = C->nrows;
    int64_t nnz = 0;
    auto fail = [&](sr_status s) {
        sr_matrix_destroy(C);
        return s;
    };
    auto cuda_fail = [&](cudaError_t err, const char *pass) {
        char where[96];
        snprintf(where, sizeof where, "%s (%s)", what, pass);
        return fail(sr_cuda_fail(err, where, __FILE__, __LINE__));
    };
    cudaError_t err = cudaMemsetAsync(C->rowptr, 0, sizeof(int64_t), stream);
    buffer<unsigned char> temp(ctx); // the scan's scratch, freed in stream order after it
    if (err == cudaSuccess && nrows > 0) {
        if constexpr (std::is_same_v<decltype(count(C->rowptr + 1)), cudaError_t>)
            err = count(C->rowptr + 1);
        else
            count(C->rowptr + 1);
        size_t temp_bytes = 0;
        if (err == cudaSuccess && (err = cudaGetLastError()) == cudaSuccess)
            err = cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, C->rowptr + 1, C->rowptr + 1, nrows, stream);
        if (err == cudaSuccess) {
            if (sr_status st = temp.allocate(temp_bytes); st != SR_SUCCESS)
                return fail(st);
            err = cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, C->rowptr + 1, C->rowptr + 1, nrows, stream);
        }
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(&nnz, C->rowptr + nrows, sizeof nnz, cudaMemcpyDeviceToHost, stream);
    }
    if (err == cudaSuccess)
        err = sr_cuda::wait_stream(stream);
    if (err != cudaSuccess)
        return cuda_fail(err, "count");
    if (sr_status st = sr_matrix_alloc_entries(C, nnz); st != SR_SUCCESS)
        return fail(st);
    if (nnz > 0) {
        fill();
        if ((err = cudaGetLastError()) == cudaSuccess)
            err = sr_cuda::wait_stream(stream);
        if (err != cudaSuccess)
            return cuda_fail(err, "fill");
    }
    *out = C;
    return SR_SUCCESS;
}

} // namespace sr_cuda
