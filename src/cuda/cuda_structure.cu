// Structural operations on the device: Kronecker product, submatrix extraction, row reduction.
// Each sizes its rows, scans them into row pointers, then fills.
#include "cuda_scan.cuh"
#include "cuda_semiring.cuh"

#include <type_traits>

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

// A warp per output row: its lanes walk the row's (A entry, B entry) pairs in order.
template <class Ops>
__global__ void kron_fill(const sr_matrix_s a, const sr_matrix_s b, const int64_t *c_rowptr, int32_t *c_colind,
                          typename Ops::value *c_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(a.values), *bv = static_cast<const T *>(b.values);
    const int lane = threadIdx.x % 32;
    const int64_t n = a.nrows * b.nrows, warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t r = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; r < n; r += warps) {
        const int64_t i = r / b.nrows, k = r % b.nrows;
        const int64_t b0 = b.rowptr[k], bn = b.rowptr[k + 1] - b0, a0 = a.rowptr[i];
        const int64_t total = c_rowptr[r + 1] - c_rowptr[r];
        for (int64_t t = lane; t < total; t += 32) {
            const int64_t x = a0 + t / bn, y = b0 + t % bn, o = c_rowptr[r] + t;
            c_colind[o] = (int32_t)((int64_t)a.colind[x] * b.ncols + b.colind[y]);
            if (c_values)
                c_values[o] = Ops::mul(av[x], bv[y]);
        }
    }
}

template <class Ops> struct kron_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        const int64_t nrows = A->nrows * B->nrows;
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, nrows, A->ncols * B->ncols, 0, A->type, SR_DEVICE, &C));
        return build_rows(
            ctx, C, [&](int64_t *counts) { kron_count<<<grid_for(nrows), 256, 0, stream>>>(*A, *B, counts); },
            [&] {
                kron_fill<Ops><<<grid_for(nrows * 32), 256, 0, stream>>>(*A, *B, C->rowptr, C->colind,
                                                                         static_cast<T *>(C->values));
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

template <class Ops>
__global__ void reduce_fill(const sr_matrix_s a, const int64_t *v_rowptr, int32_t *v_colind, typename Ops::value *v_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(a.values);
    const int lane = threadIdx.x % 32;
    const int64_t warps = (int64_t)gridDim.x * blockDim.x / 32;
    for (int64_t i = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32; i < a.nrows; i += warps) {
        const int64_t k0 = a.rowptr[i], k1 = a.rowptr[i + 1];
        if (k0 == k1)
            continue;
        T acc = Ops::identity();
        if (v_values) // lanes take entries in a fixed pattern and combine in a fixed tree: deterministic
            for (int64_t k = k0 + lane; k < k1; k += 32)
                acc = Ops::add(acc, av[k]);
        using W = std::conditional_t<(sizeof(T) < 4), int, T>; // shuffles move 4 or 8 bytes
        for (int off = 16; off > 0; off /= 2)
            acc = Ops::add(acc, (T)__shfl_down_sync(0xffffffffu, (W)acc, off));
        if (lane == 0) {
            v_colind[v_rowptr[i]] = 0;
            if (v_values)
                v_values[v_rowptr[i]] = acc;
        }
    }
}

__global__ void reduce_count(const sr_matrix_s a, int64_t *counts) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.nrows; i += (int64_t)gridDim.x * blockDim.x)
        counts[i] = a.rowptr[i + 1] > a.rowptr[i];
}

template <class Ops> struct reduce_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        sr_matrix_s *v = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, A->nrows, 1, 0, A->type, SR_DEVICE, &v));
        return build_rows(
            ctx, v, [&](int64_t *counts) { reduce_count<<<grid_for(A->nrows), 256, 0, stream>>>(*A, counts); },
            [&] {
                reduce_fill<Ops><<<grid_for(A->nrows * 32), 256, 0, stream>>>(*A, v->rowptr, v->colind,
                                                                              static_cast<T *>(v->values));
            },
            "sr_reduce_rows", out);
    }
};

} // namespace

extern "C" sr_status sr_cuda_kronecker(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, sr_semiring s,
                                       sr_matrix_s **C) {
    device_guard guard(ctx->device);
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
    return dispatch_semiring<reduce_launcher>(s, A->type, ctx, A, v);
}
