// Element-wise union on the device: C = A ∪ B, combined by a ⊕ monoid where both have an entry.
// A thread merges one row, in a count pass and a fill pass.
#include "cuda_semiring.cuh"

#include <cub/cub.cuh>

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

template <class Ops, bool FILL>
__global__ void union_rows(const sr_matrix_s a, const sr_matrix_s b, int64_t *c_rowptr, int32_t *c_colind,
                           typename Ops::value *c_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(a.values), *bv = static_cast<const T *>(b.values);
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < a.nrows; i += threads) {
        int64_t x = a.rowptr[i], xe = a.rowptr[i + 1], y = b.rowptr[i], ye = b.rowptr[i + 1];
        int64_t o = FILL ? c_rowptr[i] : 0;
        while (x < xe || y < ye) {
            const int32_t cx = x < xe ? a.colind[x] : INT32_MAX, cy = y < ye ? b.colind[y] : INT32_MAX;
            if (FILL) {
                c_colind[o] = cx < cy ? cx : cy;
                if (c_values)
                    c_values[o] = cx < cy ? av[x] : cy < cx ? bv[y] : Ops::add(av[x], bv[y]);
            }
            x += cx <= cy;
            y += cy <= cx;
            o++;
        }
        if (!FILL)
            c_rowptr[i + 1] = o;
    }
}

template <class Ops> struct union_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, A->nrows, A->ncols, 0, A->type, SR_DEVICE, &C));
        auto fail = [&](sr_status s) {
            sr_matrix_destroy(C);
            return s;
        };
        cudaError_t err = cudaMemsetAsync(C->rowptr, 0, sizeof(int64_t), stream);
        union_rows<Ops, false><<<grid_for(A->nrows), 256, 0, stream>>>(*A, *B, C->rowptr, nullptr, nullptr);
        if (err == cudaSuccess)
            err = cudaGetLastError();
        size_t temp_bytes = 0;
        if (err == cudaSuccess)
            err = cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, C->rowptr + 1, C->rowptr + 1, A->nrows, stream);
        buffer<unsigned char> temp(ctx);
        sr_status st = temp.allocate(temp_bytes);
        if (st != SR_SUCCESS)
            return fail(st);
        int64_t nnz = 0;
        if (err == cudaSuccess)
            err = cub::DeviceScan::InclusiveSum(temp.get(), temp_bytes, C->rowptr + 1, C->rowptr + 1, A->nrows, stream);
        if (err == cudaSuccess)
            err = cudaMemcpyAsync(&nnz, C->rowptr + A->nrows, sizeof nnz, cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess)
            return fail(sr_cuda_fail(err, "ewise union count", __FILE__, __LINE__));
        if ((st = sr_matrix_alloc_entries(C, nnz)) != SR_SUCCESS)
            return fail(st);
        union_rows<Ops, true><<<grid_for(A->nrows), 256, 0, stream>>>(*A, *B, C->rowptr, C->colind,
                                                                      static_cast<T *>(C->values));
        err = cudaGetLastError();
        if (err == cudaSuccess)
            err = cudaStreamSynchronize(stream);
        if (err != cudaSuccess)
            return fail(sr_cuda_fail(err, "ewise union fill", __FILE__, __LINE__));
        *out = C;
        return SR_SUCCESS;
    }
};

// A semiring whose ⊕ is the monoid asked for (its ⊗ is not used here).
sr_semiring semiring_with_add(int add_op, sr_type type) {
    switch (add_op) {
    case SR_ADD_OP_MIN: return SR_MIN_PLUS;
    case SR_ADD_OP_MAX: return SR_MAX_PLUS;
    case SR_ADD_OP_OR: return SR_OR_AND;
    default: return type == SR_TYPE_BOOL ? SR_OR_AND : SR_PLUS_TIMES;
    }
}

} // namespace

extern "C" sr_status sr_cuda_ewise_union(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B, int add_op,
                                         sr_matrix_s **C) {
    device_guard guard(ctx->device);
    return dispatch_semiring<union_launcher>(semiring_with_add(add_op, A->type), A->type, ctx, A, B, C);
}
