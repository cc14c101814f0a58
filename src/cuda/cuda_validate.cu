// Validation of device CSR arrays: kernels find the first bad row, the host describes it.
#include "cuda_common.cuh"

extern "C" {
#include "../core/validate.h"
#include "cuda.h"
}

#include <vector>

namespace {

__global__ void first_rowptr_decrease(const int64_t *rowptr, int64_t nrows, unsigned long long *first) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nrows; i += (int64_t)gridDim.x * blockDim.x)
        if (rowptr[i + 1] < rowptr[i])
            atomicMin(first, (unsigned long long)i);
}

// A warp a row, lanes strided over its entries: long rows do not stall one thread.
__global__ void first_bad_row(const int64_t *rowptr, const int32_t *colind, int64_t nrows, int64_t ncols,
                              unsigned long long *first) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < nrows; i += warps) {
        const int64_t start = rowptr[i], end = rowptr[i + 1];
        bool bad = false;
        for (int64_t k = start + lane; k < end && !bad; k += 32) {
            const int32_t c = colind[k];
            bad = c < 0 || c >= ncols || (k > start && c <= colind[k - 1]);
        }
        if (__any_sync(0xffffffffu, bad) && lane == 0)
            atomicMin(first, (unsigned long long)i);
    }
}

} // namespace

extern "C" sr_status sr_cuda_check_csr(sr_context_s *ctx, const int64_t *rowptr, const int32_t *colind, int64_t nrows,
                                       int64_t ncols, int64_t nnz) {
    sr_cuda::device_guard guard(ctx->device);
    cudaStream_t stream = sr_cuda::stream_of(ctx);
    int64_t ends[2];
    SR_CUDA_TRY(cudaMemcpyAsync(&ends[0], rowptr, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(cudaMemcpyAsync(&ends[1], rowptr + nrows, sizeof(int64_t), cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    if (ends[0] != 0)
        return sr_check_rowptr_ends(ends[0], ends[1], nrows, nnz);

    sr_cuda::first_index flag(ctx);
    unsigned long long first = sr_cuda::kNoIndex;
    SR_TRY(flag.reset());
    first_rowptr_decrease<<<sr_cuda::blocks_for(nrows, 256), 256, 0, stream>>>(rowptr, nrows, flag.get());
    SR_CUDA_LAUNCHED();
    SR_TRY(flag.read(&first));
    if (first != sr_cuda::kNoIndex) {
        int64_t pair[2];
        SR_CUDA_TRY(cudaMemcpy(pair, rowptr + first, sizeof pair, cudaMemcpyDeviceToHost));
        return sr_rowptr_decrease_error((int64_t)first, pair[0], pair[1]);
    }
    SR_TRY(sr_check_rowptr_ends(ends[0], ends[1], nrows, nnz));

    SR_TRY(flag.reset());
    first_bad_row<<<sr_cuda::blocks_for(nrows * 32, 256), 256, 0, stream>>>(rowptr, colind, nrows, ncols, flag.get());
    SR_CUDA_LAUNCHED();
    SR_TRY(flag.read(&first));
    if (first == sr_cuda::kNoIndex)
        return SR_SUCCESS;
    int64_t span[2];
    SR_CUDA_TRY(cudaMemcpy(span, rowptr + first, sizeof span, cudaMemcpyDeviceToHost));
    std::vector<int32_t> cols((size_t)(span[1] - span[0]));
    SR_CUDA_TRY(cudaMemcpy(cols.data(), colind + span[0], cols.size() * sizeof(int32_t), cudaMemcpyDeviceToHost));
    sr_status s = sr_check_csr_row((int64_t)first, cols.data(), (int64_t)cols.size(), span[0], ncols);
    if (s == SR_SUCCESS)
        return sr_error(SR_ERROR_INTERNAL, "device validation flagged row %llu, which the host check accepts", first);
    return s;
}
