// CSR <-> dense on the device.
#include "cuda_common.cuh"

#include <cub/cub.cuh>

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

struct dense_shape {
    int64_t nrows, ncols, ld;
    bool row_major;
    __device__ size_t offset(int64_t i, int64_t j) const {
        return row_major ? (size_t)i * (size_t)ld + (size_t)j : (size_t)j * (size_t)ld + (size_t)i;
    }
};

dense_shape shape_of(const sr_dense *d) { return {d->nrows, d->ncols, d->ld, d->layout == SR_ROW_MAJOR}; }

template <typename T>
__global__ void scatter_entries(const int64_t *rowptr, const int32_t *colind, const T *values, int64_t nrows,
                                int64_t nnz, dense_shape shape, T *data) {
    for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < nnz; k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = sr_cuda::row_of_entry(rowptr, nrows, k);
        data[shape.offset(i, colind[k])] = values != nullptr ? values[k] : T(1);
    }
}

template <typename T> __device__ inline bool keeps(T v, int64_t i, int64_t j, const sr_keep_rule &rule) {
    if (rule.self_offset != SR_KEEP_NO_SELF && j == i + rule.self_offset)
        return false;
    switch (rule.kind) {
    case SR_KEEP_NONZERO: return v != T(0); // NaN != 0: kept
    case SR_KEEP_AT_MOST: return (double)v <= rule.bound;
    case SR_KEEP_AT_LEAST: return (double)v >= rule.bound;
    }
    return false;
}

// Row-major: a warp per (row, segment of kSegment columns), lanes over columns (coalesced), so a
// short batch of very long rows (radius neighbours: a few hundred rows of a million distances)
// still spreads over every SM. Each writes its kept count to counts[row * segments + segment].
// Column-major: a thread a row (neighbouring threads read neighbouring elements), counts[row].
constexpr int64_t kSegment = 2048;

__host__ __device__ inline int64_t segments_of(int64_t ncols) { return ncols > 0 ? (ncols + kSegment - 1) / kSegment : 1; }

// Segment w of a row-major matrix: row i, columns [j0, j1).
struct segment {
    int64_t i, j0, j1;
    __device__ segment(int64_t w, int64_t segments, int64_t ncols)
        : i(w / segments), j0((w % segments) * kSegment), j1(j0 + kSegment < ncols ? j0 + kSegment : ncols) {}
};

template <typename T>
__global__ void count_row_major(const T *data, dense_shape shape, sr_keep_rule rule, int64_t *counts) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32, segments = segments_of(shape.ncols);
    for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; w < shape.nrows * segments; w += warps) {
        const segment g(w, segments, shape.ncols);
        int64_t n = 0;
        for (int64_t j = g.j0 + lane; j < g.j1; j += 32)
            n += keeps(data[shape.offset(g.i, j)], g.i, j, rule);
        for (int o = 16; o > 0; o /= 2)
            n += __shfl_down_sync(0xffffffffu, n, o);
        if (lane == 0)
            counts[w] = n;
    }
}

// rowptr[i] = where row i's first segment starts (the scanned counts), for i in [0, nrows].
__global__ void rowptr_from_segments(const int64_t *starts, int64_t nrows, int64_t segments, int64_t *rowptr) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= nrows; i += (int64_t)gridDim.x * blockDim.x)
        rowptr[i] = starts[i * segments];
}

template <typename T>
__global__ void count_col_major(const T *data, dense_shape shape, sr_keep_rule rule, int64_t *counts) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < shape.nrows; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t n = 0;
        for (int64_t j = 0; j < shape.ncols; j++)
            n += keeps(data[shape.offset(i, j)], i, j, rule);
        counts[i] = n;
    }
}

// Row-major fill: each warp compacts its segment 32 columns at a time with a ballot, keeping
// column order, from where the scanned counts say the segment starts.
template <typename T>
__global__ void fill_row_major(const T *data, dense_shape shape, sr_keep_rule rule, const int64_t *starts,
                               int32_t *colind, T *values) {
    const int lane = threadIdx.x & 31;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32, segments = segments_of(shape.ncols);
    for (int64_t w = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; w < shape.nrows * segments; w += warps) {
        const segment g(w, segments, shape.ncols);
        int64_t at = starts[w];
        for (int64_t jb = g.j0; jb < g.j1; jb += 32) {
            const int64_t j = jb + lane;
            const T v = j < g.j1 ? data[shape.offset(g.i, j)] : T(0);
            const bool keep = j < g.j1 && keeps(v, g.i, j, rule);
            const unsigned mask = __ballot_sync(0xffffffffu, keep);
            if (keep) {
                const int64_t slot = at + __popc(mask & ((1u << lane) - 1));
                colind[slot] = (int32_t)j;
                if (values != nullptr)
                    values[slot] = v;
            }
            at += __popc(mask);
        }
    }
}

template <typename T>
__global__ void fill_col_major(const T *data, dense_shape shape, sr_keep_rule rule, const int64_t *rowptr,
                               int32_t *colind, T *values) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < shape.nrows; i += (int64_t)gridDim.x * blockDim.x) {
        int64_t at = rowptr[i];
        for (int64_t j = 0; j < shape.ncols; j++) {
            const T v = data[shape.offset(i, j)];
            if (keeps(v, i, j, rule)) {
                colind[at] = (int32_t)j;
                if (values != nullptr)
                    values[at] = v;
                at++;
            }
        }
    }
}

template <typename T> sr_status to_dense(const sr_matrix_s *A, const sr_dense *d) {
    cudaStream_t stream = sr_cuda::stream_of(A->ctx);
    const size_t esize = sizeof(T);
    const int64_t inner = d->layout == SR_ROW_MAJOR ? d->ncols : d->nrows;
    const int64_t outer = d->layout == SR_ROW_MAJOR ? d->nrows : d->ncols;
    if (inner > 0 && outer > 0)
        SR_CUDA_TRY(cudaMemset2DAsync(d->data, (size_t)d->ld * esize, 0, (size_t)inner * esize, (size_t)outer, stream));
    scatter_entries<T><<<sr_cuda::blocks_for(A->nnz, 256), 256, 0, stream>>>(
        A->rowptr, A->colind, static_cast<const T *>(A->values), A->nrows, A->nnz, shape_of(d), static_cast<T *>(d->data));
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

template <typename T>
sr_status from_dense(sr_context_s *ctx, const sr_dense *d, const sr_keep_rule &rule, sr_matrix_s **out) {
    cudaStream_t stream = sr_cuda::stream_of(ctx);
    const dense_shape shape = shape_of(d);
    const T *data = static_cast<const T *>(d->data);
    sr_matrix_s *A = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, d->nrows, d->ncols, 0, d->type, SR_DEVICE, &A));
    auto fail = [&](sr_status s) {
        sr_matrix_destroy(A);
        return s;
    };
    // Counts per row (column-major) or per (row, segment) (row-major), then an exclusive scan
    // in place: where each starts. Row pointers are the starts of each row's first segment.
    const int64_t segments = shape.row_major ? segments_of(d->ncols) : 1, items = d->nrows * segments;
    sr_cuda::buffer<int64_t> starts(ctx);
    sr_status s = starts.allocate((size_t)items + 1);
    if (s != SR_SUCCESS)
        return fail(s);
    cudaError_t err = cudaMemsetAsync(starts.get() + items, 0, sizeof(int64_t), stream);
    if (shape.row_major)
        count_row_major<T><<<sr_cuda::blocks_for(items * 32, 256), 256, 0, stream>>>(data, shape, rule, starts.get());
    else
        count_col_major<T><<<sr_cuda::blocks_for(d->nrows, 256), 256, 0, stream>>>(data, shape, rule, starts.get());
    if (err == cudaSuccess)
        err = cudaGetLastError();
    if (err != cudaSuccess)
        return fail(sr_cuda_fail(err, "counting dense nonzeros", __FILE__, __LINE__));
    size_t temp_bytes = 0;
    cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, starts.get(), starts.get(), items + 1, stream);
    sr_cuda::buffer<unsigned char> temp(ctx);
    s = temp.allocate(temp_bytes);
    if (s != SR_SUCCESS)
        return fail(s);
    err = cub::DeviceScan::ExclusiveSum(temp.get(), temp_bytes, starts.get(), starts.get(), items + 1, stream);
    if (err == cudaSuccess) {
        rowptr_from_segments<<<sr_cuda::blocks_for(d->nrows + 1, 256), 256, 0, stream>>>(starts.get(), d->nrows,
                                                                                       segments, A->rowptr);
        err = cudaGetLastError();
    }
    int64_t nnz = 0;
    if (err == cudaSuccess)
        err = cudaMemcpyAsync(&nnz, A->rowptr + d->nrows, sizeof nnz, cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
        err = sr_cuda::wait_stream(stream);
    if (err != cudaSuccess)
        return fail(sr_cuda_fail(err, "scanning dense row counts", __FILE__, __LINE__));
    s = sr_matrix_alloc_entries(A, nnz);
    if (s != SR_SUCCESS)
        return fail(s);
    T *values = static_cast<T *>(A->values);
    if (shape.row_major)
        fill_row_major<T><<<sr_cuda::blocks_for(items * 32, 256), 256, 0, stream>>>(data, shape, rule, starts.get(),
                                                                                    A->colind, values);
    else
        fill_col_major<T><<<sr_cuda::blocks_for(d->nrows, 256), 256, 0, stream>>>(data, shape, rule, A->rowptr,
                                                                                  A->colind, values);
    err = cudaGetLastError();
    if (err == cudaSuccess)
        err = sr_cuda::wait_stream(stream);
    if (err != cudaSuccess)
        return fail(sr_cuda_fail(err, "filling CSR from dense", __FILE__, __LINE__));
    *out = A;
    return SR_SUCCESS;
}

} // namespace

extern "C" sr_status sr_cuda_csr_to_dense(const sr_matrix_s *A, const sr_dense *d) {
    sr_cuda::device_guard guard(A->ctx->device);
    switch (A->type) {
    case SR_TYPE_BOOL: return to_dense<uint8_t>(A, d);
    case SR_TYPE_INT32: return to_dense<int32_t>(A, d);
    case SR_TYPE_FLOAT32: return to_dense<float>(A, d);
    case SR_TYPE_FLOAT64: return to_dense<double>(A, d);
    }
    return sr_error(SR_ERROR_INTERNAL, "unknown type %d", (int)A->type);
}

extern "C" sr_status sr_cuda_dense_to_csr(sr_context_s *ctx, const sr_dense *d, const sr_keep_rule *rule,
                                          sr_matrix_s **out) {
    sr_cuda::device_guard guard(ctx->device);
    switch (d->type) {
    case SR_TYPE_BOOL: return from_dense<uint8_t>(ctx, d, *rule, out);
    case SR_TYPE_INT32: return from_dense<int32_t>(ctx, d, *rule, out);
    case SR_TYPE_FLOAT32: return from_dense<float>(ctx, d, *rule, out);
    case SR_TYPE_FLOAT64: return from_dense<double>(ctx, d, *rule, out);
    }
    return sr_error(SR_ERROR_INTERNAL, "unknown type %d", (int)d->type);
}
