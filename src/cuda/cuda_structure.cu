// Structural operations on the device: Kronecker product, submatrix extraction, row reduction.
// Each sizes its rows, scans them into row pointers, then fills.
#include "cuda_scan.cuh"
#include "cuda_semiring.cuh"
#include "cuda_structure_kernels.cuh"
#include "cuda_user.cuh"

extern "C" {
#include "../core/types.h"
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

// ----------------------------------------------------------------- Kronecker

__global__ void kron_count(const sr_matrix_s a, const sr_matrix_s b, int64_t *counts) {
    const int64_t n = a.nrows * b.nrows;
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < n; r += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = r / b.nrows, k = r % b.nrows;
        counts[r] = (a.rowptr[i + 1] - a.rowptr[i]) * (b.rowptr[k + 1] - b.rowptr[k]);
    }
}

template <class Ops> struct kron_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        const int64_t nrows = A->nrows * B->nrows;
        user_fill_kernel user_fill;
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, nrows, A->ncols * B->ncols, 0, A->type, SR_DEVICE, &C));
        return build_rows(
            ctx, C, [&](int64_t *counts) { kron_count<<<grid_for(nrows), 256, 0, stream>>>(*A, *B, counts); },
            [&] {
                const csr_ref a = csr_ref_of(A), b = csr_ref_of(B);
                const int64_t *rowptr = C->rowptr;
                int32_t *colind = C->colind;
                T *values = static_cast<T *>(C->values);
                if constexpr (is_user_ops<Ops>)
                    user_fill.launch(grid_for(nrows * 32), 256, stream, a, b, rowptr, colind, values);
                else
                    kron_fill<Ops><<<grid_for(nrows * 32), 256, 0, stream>>>(a, b, rowptr, colind, values);
            },
            "sr_kronecker", out);
    }
};

// ----------------------------------------------------------------- extraction

__device__ int64_t first_at_or_after(const sr_matrix_s &a, int64_t i, int64_t col) {
    const int64_t start = a.rowptr[i];
    return start + lower_bound(a.colind + start, a.rowptr[i + 1] - start, (int32_t)col);
}

struct extract_box {
    int64_t row0, col0, nrows, ncols;
};

__global__ void extract_count(const sr_matrix_s a, const extract_box box, int64_t *counts) {
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < box.nrows; r += (int64_t)gridDim.x * blockDim.x)
        counts[r] = first_at_or_after(a, box.row0 + r, box.col0 + box.ncols) - first_at_or_after(a, box.row0 + r, box.col0);
}

// A warp per row: the row's kept entries are one contiguous run of A's row.
__global__ void extract_fill(const sr_matrix_s a, const extract_box box, const int64_t *c_rowptr, int32_t *c_colind,
                             void *c_values, int value_bytes) {
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < box.nrows; r += warps) {
        const int64_t from = first_at_or_after(a, box.row0 + r, box.col0), o = c_rowptr[r], n = c_rowptr[r + 1] - o;
        for (int64_t t = lane; t < n; t += 32) {
            c_colind[o + t] = (int32_t)(a.colind[from + t] - box.col0);
            if (value_bytes == 4)
                static_cast<uint32_t *>(c_values)[o + t] = static_cast<const uint32_t *>(a.values)[from + t];
            else if (value_bytes == 8)
                static_cast<uint64_t *>(c_values)[o + t] = static_cast<const uint64_t *>(a.values)[from + t];
        }
    }
}

// ----------------------------------------------------------------- row reduction

__global__ void reduce_count(const sr_matrix_s a, int64_t *counts) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.nrows; i += (int64_t)gridDim.x * blockDim.x)
        counts[i] = a.rowptr[i + 1] > a.rowptr[i];
}

template <class Ops> struct reduce_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        user_fill_kernel user_fill;
        sr_matrix_s *v = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, A->nrows, 1, 0, A->type, SR_DEVICE, &v));
        return build_rows(
            ctx, v, [&](int64_t *counts) { reduce_count<<<grid_for(A->nrows), 256, 0, stream>>>(*A, counts); },
            [&] {
                const csr_ref a = csr_ref_of(A);
                const int64_t *rowptr = v->rowptr;
                int32_t *colind = v->colind;
                T *values = static_cast<T *>(v->values);
                if constexpr (is_user_ops<Ops>)
                    user_fill.launch(grid_for(A->nrows * 32), 256, stream, a, rowptr, colind, values);
                else
                    reduce_fill<Ops><<<grid_for(A->nrows * 32), 256, 0, stream>>>(a, rowptr, colind, values);
            },
            "sr_reduce_rows", out);
    }
};

} // namespace

extern "C" sr_status sr_cuda_kronecker(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, sr_semiring s,
                                       sr_matrix_s **C) {
    device_guard guard(ctx->device);
    if (const sr_user_semiring *u = sr_user_semiring_of((int)s))
        return run_user<kron_launcher>(u, user_kernel_name("kron_fill", {}), ctx, A, B, C);
    return dispatch_semiring<kron_launcher>(s, A->type, ctx, A, B, C);
}

extern "C" sr_status sr_cuda_extract(sr_context_s *ctx, const sr_matrix_s *A, int64_t row0, int64_t col0,
                                     int64_t nrows, int64_t ncols, sr_matrix_s **out) {
    device_guard guard(ctx->device);
    cudaStream_t stream = stream_of(ctx);
    const extract_box box{row0, col0, nrows, ncols};
    sr_matrix_s *C = nullptr;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, 0, A->type, SR_DEVICE, &C));
    return build_rows(
        ctx, C, [&](int64_t *counts) { extract_count<<<grid_for(nrows), 256, 0, stream>>>(*A, box, counts); },
        [&] {
            extract_fill<<<grid_for(nrows * 32), 256, 0, stream>>>(*A, box, C->rowptr, C->colind, C->values,
                                                                   (int)sr_value_size(A->type));
        },
        "sr_extract", out);
}

extern "C" sr_status sr_cuda_reduce_rows(sr_context_s *ctx, const sr_matrix_s *A, sr_semiring s, sr_matrix_s **v) {
    device_guard guard(ctx->device);
    if (const sr_user_semiring *u = sr_user_semiring_of((int)s))
        return run_user<reduce_launcher>(u, user_kernel_name("reduce_fill", {}), ctx, A, v);
    return dispatch_semiring<reduce_launcher>(s, A->type, ctx, A, v);
}
