// The longest query of a batch, for the kernels that give a long query's entries other work
// (cuda_tile_select.cuh: a block a tile). (The tensor-core panel counts its queries' cold entries
// instead: split_cold_entries in cuda_knn_panel.cu.)
#pragma once

#include "cuda_common.cuh"

namespace {

using namespace sr_cuda;

// The most entries a query of rows [q0, q1) has.
__global__ void longest_row(const int64_t *rowptr, int64_t q0, int64_t q1, unsigned long long *longest) {
    unsigned long long m = 0;
    for (int64_t r = q0 + blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < q1; r += (int64_t)gridDim.x * blockDim.x)
        m = max(m, (unsigned long long)(rowptr[r + 1] - rowptr[r]));
    atomicMax(longest, m);
}

// The batch's longest query, on the host.
inline sr_status longest_query(sr_context_s *ctx, const int64_t *qptr, int64_t q0, int64_t q1, int64_t *most) {
    cudaStream_t stream = stream_of(ctx);
    buffer<unsigned long long> longest(ctx);
    SR_TRY(longest.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(longest.get(), 0, sizeof(unsigned long long), stream));
    longest_row<<<grid_for(q1 - q0), 256, 0, stream>>>(qptr, q0, q1, longest.get());
    SR_CUDA_LAUNCHED();
    unsigned long long m = 0;
    SR_CUDA_TRY(cudaMemcpyAsync(&m, longest.get(), sizeof m, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    *most = (int64_t)m;
    return SR_SUCCESS;
}

} // namespace
