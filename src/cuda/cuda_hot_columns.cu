// The hot-column plan of a sparse matrix (cuda_hot_columns.cuh): count each column's entries,
// sort the columns by count, give the first `slots` a slot. Cached with the matrix.
#include "cuda_hot_columns.cuh"
#include "cuda_spmv_plan.cuh"

#include <cub/cub.cuh>

#include <mutex>
#include <new>

namespace sr_cuda {

namespace {

__global__ void count_columns(const int32_t *colind, int64_t nnz, int32_t *counts, int32_t *ids, int64_t ncols) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz; e += stride)
        atomicAdd(&counts[colind[e]], 1);
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < ncols; j += stride)
        ids[j] = (int32_t)j;
}

// slot_of = -1 everywhere before the hot columns take theirs.
__global__ void clear_slots(int32_t *slot_of, int64_t ncols) {
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < ncols; j += (int64_t)gridDim.x * blockDim.x)
        slot_of[j] = -1;
}

// The first `slots` sorted columns get slots 0..slots-1; the entries they hold are summed into
// *hot (one atomic a warp).
__global__ void assign_slots(const int32_t *sorted_ids, const int32_t *sorted_counts, int64_t slots, int32_t *slot_of,
                             int32_t *column_of, unsigned long long *hot) {
    unsigned long long mine = 0;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < slots; r += (int64_t)gridDim.x * blockDim.x) {
        slot_of[sorted_ids[r]] = (int32_t)r;
        column_of[r] = sorted_ids[r];
        mine += (unsigned long long)sorted_counts[r];
    }
    for (int o = 16; o > 0; o /= 2)
        mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if (threadIdx.x % 32 == 0 && mine)
        atomicAdd(hot, mine);
}

struct plan_memory {
    hot_columns plan;
    void *memory;
    size_t bytes;
};
std::mutex plan_mutex;

void free_plan(sr_matrix_s *A) {
    auto *p = static_cast<plan_memory *>(A->hot_columns);
    if (p) {
        sr_mem_free(A->ctx, SR_DEVICE, p->memory, p->bytes);
        delete p;
    }
    A->hot_columns = nullptr;
}

} // namespace

// Fills slot_of (ncols) and column_of (slots) and returns the hot entries' count.
sr_status rank_hot_columns(const sr_matrix_s *A, int64_t slots, int32_t *slot_of, int32_t *column_of, unsigned long long *hot) {
    sr_context_s *ctx = A->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t n = A->ncols;
    buffer<int32_t> counts(ctx), ids(ctx), sorted_counts(ctx), sorted_ids(ctx);
    buffer<unsigned long long> hot_cell(ctx);
    SR_TRY(counts.allocate((size_t)n));
    SR_TRY(ids.allocate((size_t)n));
    SR_TRY(sorted_counts.allocate((size_t)n));
    SR_TRY(sorted_ids.allocate((size_t)n));
    SR_TRY(hot_cell.allocate(1));
    SR_CUDA_TRY(cudaMemsetAsync(counts.get(), 0, (size_t)n * sizeof(int32_t), stream));
    SR_CUDA_TRY(cudaMemsetAsync(hot_cell.get(), 0, sizeof(unsigned long long), stream));
    count_columns<<<grid_for(std::max<int64_t>(A->nnz, n)), 256, 0, stream>>>(A->colind, A->nnz, counts.get(),
                                                                               ids.get(), n);
    SR_CUDA_LAUNCHED();
    size_t temp_bytes = 0;
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(nullptr, temp_bytes, counts.get(), sorted_counts.get(),
                                                          ids.get(), sorted_ids.get(), n, 0, 32, stream));
    buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(temp.get(), temp_bytes, counts.get(), sorted_counts.get(),
                                                          ids.get(), sorted_ids.get(), n, 0, 32, stream));
    clear_slots<<<grid_for(n), 256, 0, stream>>>(slot_of, n);
    SR_CUDA_LAUNCHED();
    assign_slots<<<grid_for(slots), 256, 0, stream>>>(sorted_ids.get(), sorted_counts.get(), slots, slot_of, column_of,
                                                      hot_cell.get());
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(cudaMemcpyAsync(hot, hot_cell.get(), sizeof *hot, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    return SR_SUCCESS;
}

sr_status hot_columns_of(const sr_matrix_s *A, int64_t slots, hot_columns *plan) {
    std::lock_guard<std::mutex> lock(plan_mutex);
    auto *matrix = const_cast<sr_matrix_s *>(A); // the cache is not part of the matrix's value
    slots = std::min<int64_t>(slots, A->ncols);
    auto *p = static_cast<plan_memory *>(matrix->hot_columns);
    if (p && p->plan.slots == slots) {
        *plan = p->plan;
        return SR_SUCCESS;
    }
    free_plan(matrix); // another slot count: the element size changed
    const size_t bytes = (size_t)(A->ncols + slots) * sizeof(int32_t);
    void *memory = nullptr;
    SR_TRY(sr_mem_alloc(A->ctx, SR_DEVICE, bytes, &memory));
    int32_t *slot_of = static_cast<int32_t *>(memory), *column_of = slot_of + A->ncols;
    unsigned long long hot = 0;
    sr_status st = rank_hot_columns(A, slots, slot_of, column_of, &hot);
    p = st == SR_SUCCESS ? new (std::nothrow) plan_memory{} : nullptr;
    if (!p) {
        sr_mem_free(A->ctx, SR_DEVICE, memory, bytes);
        return st != SR_SUCCESS ? st : sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a column plan");
    }
    p->plan = hot_columns{slots, slot_of, column_of, A->nnz > 0 ? (double)hot / (double)A->nnz : 0.0};
    p->memory = memory;
    p->bytes = bytes;
    matrix->hot_columns = p;
    matrix->free_hot_columns = free_plan;
    *plan = p->plan;
    return SR_SUCCESS;
}

} // namespace sr_cuda
