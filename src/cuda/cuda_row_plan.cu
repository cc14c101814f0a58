// Building and caching row plans (cuda_row_plan.cuh).
#include "cuda_row_plan.cuh"

#include <cub/cub.cuh>

#include <mutex>
#include <new>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <vector>

namespace sr_cuda {
namespace {

struct class_counts {
    int64_t mids, longs, chunks;
};

struct add_counts {
    __host__ __device__ class_counts operator()(const class_counts &a, const class_counts &b) const {
        return {a.mids + b.mids, a.longs + b.longs, a.chunks + b.chunks};
    }
};

// Row i's contribution to the counts (none past the last row, so the scan's last slot is the total).
struct classify_row {
    const int64_t *rowptr;
    int64_t nrows;
    row_classes k;
    __host__ __device__ class_counts operator()(int64_t i) const {
        if (i >= nrows)
            return {0, 0, 0};
        const int64_t len = rowptr[i + 1] - rowptr[i];
        if (len > k.long_min)
            return {0, 1, (len + k.chunk - 1) / k.chunk};
        return {len > k.short_max ? 1 : 0, 0, 0};
    }
};

// Writes each mid and long row, and each long row's chunks, at the places the scan gave them.
__global__ void fill_plan(classify_row classify, const class_counts *before, class_counts total, int64_t *mid_rows,
                          int64_t *long_rows, int64_t *chunk_first, int64_t *chunk_owner) {
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    for (int64_t row = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; row < classify.nrows; row += threads) {
        const class_counts mine = classify(row);
        if (mine.mids == 0 && mine.longs == 0)
            continue;
        const class_counts b = before[row];
        if (mine.mids)
            mid_rows[b.mids] = row;
        if (mine.longs) {
            long_rows[b.longs] = row;
            chunk_first[b.longs] = b.chunks;
            for (int64_t c = 0; c < mine.chunks; c++)
                chunk_owner[b.chunks + c] = b.longs;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0)
        chunk_first[total.longs] = total.chunks;
}

struct cached_plan {
    row_plan plan;
    const int64_t *rowptr; // the key besides the classes (a defence: rowptr never changes)
    int64_t nnz;
    void *memory;
    size_t bytes;
};

struct plan_cache {
    std::vector<cached_plan> plans;
};

std::mutex cache_mutex; // plans are built rarely; lookups hold it for a few compares

void free_row_plans(sr_matrix_s *A) {
    auto *cache = static_cast<plan_cache *>(A->row_plans);
    if (cache == nullptr)
        return;
    for (const cached_plan &c : cache->plans)
        sr_mem_free(A->ctx, SR_DEVICE, c.memory, c.bytes);
    delete cache;
    A->row_plans = nullptr;
}

sr_status build_plan(const sr_matrix_s *A, row_classes k, cached_plan *out) {
    sr_context_s *ctx = A->ctx;
    cudaStream_t stream = stream_of(ctx);
    const int64_t nrows = A->nrows;
    const classify_row classify{A->rowptr, nrows, k};
    buffer<class_counts> before(ctx);
    SR_TRY(before.allocate(nrows + 1));
    auto counts = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), classify);
    size_t temp_bytes = 0;
    const class_counts zero{0, 0, 0};
    SR_CUDA_TRY(cub::DeviceScan::ExclusiveScan(nullptr, temp_bytes, counts, before.get(), add_counts{}, zero, nrows + 1,
                                               stream));
    buffer<unsigned char> temp(ctx);
    SR_TRY(temp.allocate(temp_bytes));
    SR_CUDA_TRY(cub::DeviceScan::ExclusiveScan(temp.get(), temp_bytes, counts, before.get(), add_counts{}, zero,
                                               nrows + 1, stream));
    class_counts total;
    SR_CUDA_TRY(cudaMemcpyAsync(&total, before.get() + nrows, sizeof total, cudaMemcpyDeviceToHost, stream));
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));

    const size_t words = (size_t)(total.mids + 2 * total.longs + 1 + total.chunks);
    void *memory = nullptr;
    SR_TRY(sr_mem_alloc_array(ctx, SR_DEVICE, words, sizeof(int64_t), &memory));
    int64_t *mid_rows = static_cast<int64_t *>(memory), *long_rows = mid_rows + total.mids;
    int64_t *chunk_first = long_rows + total.longs, *chunk_owner = chunk_first + total.longs + 1;
    fill_plan<<<grid_for(nrows), 256, 0, stream>>>(classify, before.get(), total, mid_rows, long_rows, chunk_first,
                                                   chunk_owner);
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) {
        sr_mem_free(ctx, SR_DEVICE, memory, words * sizeof(int64_t));
        return sr_cuda_fail(launched, "fill_plan", __FILE__, __LINE__);
    }
    out->plan = {k, total.mids, total.longs, total.chunks, mid_rows, long_rows, chunk_first, chunk_owner};
    out->rowptr = A->rowptr;
    out->nnz = A->nnz;
    out->memory = memory;
    out->bytes = words * sizeof(int64_t);
    return SR_SUCCESS; // the scratch is freed in stream order, after fill_plan has read it
}

} // namespace

sr_status row_plan_of(const sr_matrix_s *A, row_classes classes, row_plan *plan) {
    std::lock_guard<std::mutex> lock(cache_mutex);
    // The cache is not part of the matrix's value; the library allocated A, so writing it is defined.
    auto *matrix = const_cast<sr_matrix_s *>(A);
    auto *cache = static_cast<plan_cache *>(matrix->row_plans);
    if (cache != nullptr)
        for (const cached_plan &c : cache->plans)
            if (c.plan.classes == classes && c.rowptr == A->rowptr && c.nnz == A->nnz) {
                *plan = c.plan;
                return SR_SUCCESS;
            }
    cached_plan built;
    SR_TRY(build_plan(A, classes, &built));
    try {
        if (cache == nullptr) {
            cache = new plan_cache;
            matrix->row_plans = cache;
            matrix->free_row_plans = free_row_plans;
        }
        cache->plans.push_back(built);
    } catch (const std::bad_alloc &) {
        sr_mem_free(A->ctx, SR_DEVICE, built.memory, built.bytes);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a row plan");
    }
    *plan = built.plan;
    return SR_SUCCESS;
}

} // namespace sr_cuda
