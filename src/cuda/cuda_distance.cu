// Distances on the GPU.
//
// Sum metrics (all but Chebyshev): the index is inverted (XT: for each column, the index rows
// holding it). A block takes one query row and one tile of index rows, keeps one accumulator per
// tile row in shared memory, and lets each warp take one of the query's entries: the warp finds
// the tile's slice of that column's list (a 32-way search) and adds the metric's intersection
// term for every row in it. Only pairs of entries that share a column are ever touched; rows
// sharing nothing with the query still get their norms-only distance when the block finalizes
// the tile. Blocks of one tile run side by side (queries vary fastest), so the tile's slice of
// XT stays in L2 while many queries sweep it.
//
// Chebyshev, max over the union of |q - x|, is max(A, B, C): A over the shared columns, B = the
// largest |q| off x, C = the largest |x| off q. The same tiles and sweep keep A (an atomic max)
// and a bit mask of which of the query's 32 largest-|q| entries the row shares: B is the
// magnitude at the first clear bit. C walks the row's entries by decreasing |x| until one falls
// outside the query (a search in the query's columns); rows sharing nothing take max(|q|, |x|)
// at once. So Chebyshev also touches only pairs of shared entries plus a short walk per
// intersecting pair, where a merge of the two rows would touch every entry of both. Walks that
// run long (rows sharing most of their largest entries, a row against itself) go to whole warps.
#include <cub/device/device_segmented_sort.cuh>

#include "cuda_common.cuh"
#include "cuda_chebyshev_tile.cuh"
#include "cuda_distance_tile.cuh"
#include "cuda_user_metric.cuh"

extern "C" {
#include "../semiring/metric.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

template <typename T> __global__ void bad_row_kernel(const int64_t *rowptr, const T *vals, int64_t nrows,
                                                     bool nonnegative, unsigned long long *first) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < nrows;
         r += (int64_t)gridDim.x * blockDim.x / 32) {
        bool bad = false;
        for (int64_t e = rowptr[r] + lane; e < rowptr[r + 1]; e += 32) {
            double v = (double)vals[e];
            bad = bad || !isfinite(v) || (nonnegative && v < 0.0);
        }
        if (__any_sync(~0u, bad) && lane == 0)
            atomicMin(first, (unsigned long long)r);
    }
}

template <typename T, sr_metric M> sr_status launch(tile_args<T> a, int64_t nq, cudaStream_t stream) {
    a.tile_rows = tile_rows_of<T, M>();
    const int64_t tiles = (a.nx + a.tile_rows - 1) / a.tile_rows;
    const dim3 grid((unsigned)nq, (unsigned)(tiles < kMaxGridY ? tiles : kMaxGridY));
    if constexpr (sr_metric_kind_of(M) == SR_MK_MAX)
        SR_TRY((launch_chebyshev<T, store_sink<T>>(a, {}, grid, stream)));
    else
        intersect_kernel<T, builtin_metric<M>><<<grid, kThreads, kTileBytes, stream>>>(a);
    SR_CUDA_LAUNCHED();
    return SR_SUCCESS;
}

// A user metric's tiles: the same kernel from its program (cuda_user_metric.cu), or, for a maximum
// over the union, union_max_kernel (its accumulators and a byte a row marking those that share a
// column, the rows' orders' keys beside).
template <typename T> sr_status launch_user_metric(const sr_user_metric *u, tile_args<T> a, const sr_distance_inputs *in,
                                                   int64_t nq, cudaStream_t stream) {
    jit_program *program = nullptr;
    SR_TRY(user_metric_program(u, &program));
    const char *tiles_kernel = user_metric_tile_kernel(&u->def);
    const bool union_max = sr_user_metric_terms_of(&u->def).walks_union;
    const int acc_bytes = user_metric_accumulator_bytes(&u->def, sizeof(T) == 8 ? SR_TYPE_FLOAT64 : SR_TYPE_FLOAT32);
    a.tile_rows = kTileBytes / (acc_bytes + (union_max ? 1 : 0));
    const int64_t tiles = (a.nx + a.tile_rows - 1) / a.tile_rows;
    const dim3 grid((unsigned)nq, (unsigned)(tiles < kMaxGridY ? tiles : kMaxGridY));
    cudaKernel_t kernel = nullptr;
    SR_TRY(jit_kernel(program, user_metric_kernel(tiles_kernel, sizeof(T) == 8).c_str(), &kernel));
    const double *q_key = in->q_union_key, *x_key = in->x_union_key;
    void *args[] = {&a, &q_key, &x_key}; // union_max_kernel's three; intersect_kernel reads the first
    return jit_launch(kernel, grid, dim3(kThreads), kTileBytes, stream, args);
}

template <typename T> sr_status distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                              const sr_strided_out *out) {
    const sr_matrix_s *Q = in->Q;
    tile_args<T> a = tile_args_of<T>(in);
    a.rs = out->row_stride;
    a.cs = out->col_stride;
    cudaStream_t stream = stream_of(Q->ctx);
    const int64_t kMaxGridX = 1 << 30;
    for (int64_t s = q0; s < q1; s += kMaxGridX) { // gridDim.x holds the queries
        int64_t nq = q1 - s < kMaxGridX ? q1 - s : kMaxGridX;
        a.q0 = s;
        a.out = static_cast<T *>(out->data) + (s - q0) * out->row_stride;
        if (const sr_user_metric *u = sr_user_metric_of((int)in->metric))
            SR_TRY(launch_user_metric<T>(u, a, in, nq, stream));
        else
            SR_TRY(with_metric(in->metric, [&](auto metric) { return launch<T, decltype(metric)::value>(a, nq, stream); }));
    }
    SR_CUDA_TRY(sr_cuda::wait_stream(stream));
    return SR_SUCCESS;
}

template <typename T> __global__ void absolute_kernel(const T *vals, int64_t n, T *abs_out, int64_t *position) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        abs_out[e] = fabs(vals[e]);
        position[e] = e;
    }
}

__global__ void iota_kernel(int64_t *position, int64_t n) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        position[e] = e;
}

// From the sorted positions: the columns in magnitude order and each entry's rank (a warp a row).
__global__ void magnitude_columns_kernel(const int64_t *rowptr, const int32_t *colind, int64_t nrows,
                                         const int64_t *sorted_position, int32_t *col, int32_t *rank) {
    const int lane = threadIdx.x & 31;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < nrows;
         r += (int64_t)gridDim.x * blockDim.x / 32)
        for (int64_t t = rowptr[r] + lane; t < rowptr[r + 1]; t += 32) {
            const int64_t e = sorted_position[t];
            col[t] = colind[e];
            if (rank)
                rank[e] = (int32_t)(t - rowptr[r]);
        }
}

// Each row of A by decreasing key: keys[e] and position[e] (= e) for A's entries, sorted into
// sorted_key, then col (and rank, when asked) in that order. Stable, so equal keys keep column order.
template <typename K>
sr_status sort_rows_descending(const sr_matrix_s *A, buffer<K> &keys, buffer<int64_t> &position, K *sorted_key,
                               int32_t *col, int32_t *rank) {
    cudaStream_t stream = stream_of(A->ctx);
    buffer<int64_t> sorted(A->ctx);
    buffer<unsigned char> temp(A->ctx);
    SR_TRY(sorted.allocate((size_t)A->nnz));
    size_t bytes = 0;
    SR_CUDA_TRY(cub::DeviceSegmentedSort::StableSortPairsDescending(nullptr, bytes, keys.get(), sorted_key,
                                                                    position.get(), sorted.get(), A->nnz, A->nrows,
                                                                    A->rowptr, A->rowptr + 1, stream));
    SR_TRY(temp.allocate(bytes));
    SR_CUDA_TRY(cub::DeviceSegmentedSort::StableSortPairsDescending(temp.get(), bytes, keys.get(), sorted_key,
                                                                    position.get(), sorted.get(), A->nnz, A->nrows,
                                                                    A->rowptr, A->rowptr + 1, stream));
    magnitude_columns_kernel<<<grid_for(A->nrows * 32), 256, 0, stream>>>(A->rowptr, A->colind, A->nrows,
                                                                          sorted.get(), col, rank);
    SR_CUDA_LAUNCHED();
    SR_CUDA_TRY(sr_cuda::wait_stream(stream)); // before the scratch goes
    return SR_SUCCESS;
}

template <typename T> sr_status magnitude_order(const sr_matrix_s *A, int32_t *col, T *abs, int32_t *rank) {
    buffer<T> keys(A->ctx);
    buffer<int64_t> position(A->ctx);
    SR_TRY(keys.allocate((size_t)A->nnz));
    SR_TRY(position.allocate((size_t)A->nnz));
    absolute_kernel<T><<<grid_for(A->nnz), 256, 0, stream_of(A->ctx)>>>(static_cast<const T *>(A->values), A->nnz,
                                                                        keys.get(), position.get());
    SR_CUDA_LAUNCHED();
    return sort_rows_descending<T>(A, keys, position, abs, col, rank);
}

} // namespace

extern "C" sr_status sr_cuda_magnitude_order(const sr_matrix_s *A, int32_t *col, void *abs, int32_t *rank) {
    device_guard guard(A->ctx->device);
    if (A->nnz == 0)
        return SR_SUCCESS;
    return A->type == SR_TYPE_FLOAT32 ? magnitude_order<float>(A, col, static_cast<float *>(abs), rank)
                                      : magnitude_order<double>(A, col, static_cast<double *>(abs), rank);
}

// Each row of A by decreasing key (union_keys_kernel, from u's program), as magnitude_order sorts
// by |value|.
template <typename T>
static sr_status user_union_order(const sr_matrix_s *A, const sr_user_metric *u, double p, bool query_side, int32_t *col,
                                  double *key) {
    cudaStream_t stream = stream_of(A->ctx);
    jit_program *program = nullptr;
    SR_TRY(user_metric_program(u, &program));
    cudaKernel_t kernel = nullptr;
    SR_TRY(jit_kernel(program, user_metric_kernel("union_keys_kernel", sizeof(T) == 8).c_str(), &kernel));
    buffer<double> keys(A->ctx);
    buffer<int64_t> position(A->ctx);
    SR_TRY(keys.allocate((size_t)A->nnz));
    SR_TRY(position.allocate((size_t)A->nnz));
    const T *vals = static_cast<const T *>(A->values);
    int64_t nnz = A->nnz;
    int side = query_side ? 1 : 0;
    double *k = keys.get();
    void *args[] = {&vals, &nnz, &p, &side, &k};
    SR_TRY(jit_launch(kernel, dim3(grid_for(A->nnz)), dim3(256), 0, stream, args));
    iota_kernel<<<grid_for(A->nnz), 256, 0, stream>>>(position.get(), A->nnz);
    SR_CUDA_LAUNCHED();
    return sort_rows_descending<double>(A, keys, position, key, col, nullptr);
}

extern "C" sr_status sr_cuda_user_union_order(const sr_matrix_s *A, sr_metric metric, double p, bool query_side,
                                              int32_t *col, double *key) {
    const sr_user_metric *u = sr_user_metric_of((int)metric);
    if (!u)
        return sr_error(SR_ERROR_INTERNAL, "sr_cuda_user_union_order: %d is not a user metric", (int)metric);
    device_guard guard(A->ctx->device);
    if (A->nnz == 0)
        return SR_SUCCESS;
    return A->type == SR_TYPE_FLOAT32 ? user_union_order<float>(A, u, p, query_side, col, key)
                                      : user_union_order<double>(A, u, p, query_side, col, key);
}

extern "C" sr_status sr_cuda_distance_norms(const sr_matrix_s *A, sr_metric metric, double p, double *norms) {
    device_guard guard(A->ctx->device);
    if (A->nrows == 0)
        return SR_SUCCESS;
    cudaStream_t stream = stream_of(A->ctx);
    const unsigned grid = grid_for(A->nrows * 32);
    const bool single = A->type == SR_TYPE_FLOAT32;
    if (const sr_user_metric *u = sr_user_metric_of((int)metric)) {
        jit_program *program = nullptr;
        SR_TRY(user_metric_program(u, &program));
        cudaKernel_t kernel = nullptr;
        SR_TRY(jit_kernel(program, user_metric_kernel("norms_kernel", !single).c_str(), &kernel));
        const int64_t *rowptr = A->rowptr;
        const void *values = A->values;
        int64_t nrows = A->nrows;
        void *args[] = {&rowptr, &values, &nrows, &p, &norms};
        return jit_launch(kernel, dim3(grid), dim3(256), 0, stream, args);
    }
    return with_metric(metric, [&](auto m) -> sr_status {
        constexpr sr_metric M = decltype(m)::value;
        if (single)
            norms_kernel<float, builtin_metric<M>><<<grid, 256, 0, stream>>>(A->rowptr, (const float *)A->values,
                                                                             A->nrows, p, norms);
        else
            norms_kernel<double, builtin_metric<M>><<<grid, 256, 0, stream>>>(A->rowptr, (const double *)A->values,
                                                                              A->nrows, p, norms);
        SR_CUDA_LAUNCHED();
        return SR_SUCCESS;
    });
}

extern "C" sr_status sr_cuda_first_bad_row(const sr_matrix_s *A, bool nonnegative, int64_t *row) {
    device_guard guard(A->ctx->device);
    *row = -1;
    if (A->nrows == 0 || (A->type != SR_TYPE_FLOAT32 && A->type != SR_TYPE_FLOAT64))
        return SR_SUCCESS;
    first_index first(A->ctx);
    SR_TRY(first.reset());
    cudaStream_t stream = stream_of(A->ctx);
    unsigned grid = grid_for(A->nrows * 32);
    if (A->type == SR_TYPE_FLOAT32)
        bad_row_kernel<float><<<grid, 256, 0, stream>>>(A->rowptr, (const float *)A->values, A->nrows, nonnegative,
                                                        first.get());
    else
        bad_row_kernel<double><<<grid, 256, 0, stream>>>(A->rowptr, (const double *)A->values, A->nrows, nonnegative,
                                                         first.get());
    SR_CUDA_LAUNCHED();
    unsigned long long found;
    SR_TRY(first.read(&found));
    if (found != kNoIndex)
        *row = (int64_t)found;
    return SR_SUCCESS;
}

extern "C" sr_status sr_cuda_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1,
                                           const sr_strided_out *out) {
    device_guard guard(in->Q->ctx->device);
    if (q1 <= q0 || in->X->nrows == 0)
        return SR_SUCCESS;
    return in->Q->type == SR_TYPE_FLOAT32 ? distance_rows<float>(in, q0, q1, out)
                                          : distance_rows<double>(in, q0, q1, out);
}
