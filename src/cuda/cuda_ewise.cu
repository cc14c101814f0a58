// Element-wise merges on the device: the union (⊕ where both rows have an entry), the
// intersection (⊗), or the left operand alone (to apply a mask), under an optional structural
// mask. A thread merges one row, in a count pass (writing rowptr[i + 1]) and a fill pass.
#include "cuda_scan.cuh"
#include "cuda_semiring.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

// The mask's row i, walked forward as the merge's columns rise.
struct mask_cursor {
    const int32_t *col = nullptr; // may be nullptr for a mask with no entries: `active` tells
    int64_t at = 0, end = 0;
    bool active = false, complement = false;
    __device__ bool allows(int32_t j) {
        if (!active)
            return true;
        while (at < end && col[at] < j)
            at++;
        return (at < end && col[at] == j) != complement;
    }
};

struct ewise_args {
    sr_matrix_s a, b; // b unused for SR_MERGE_LEFT (its rowptr is then nullptr)
    const int64_t *mask_rowptr;
    const int32_t *mask_colind;
    bool complement;
    sr_merge merge;
};

template <class Ops, bool FILL>
__global__ void merge_rows(const ewise_args p, int64_t *c_rowptr, int32_t *c_colind, typename Ops::value *c_values) {
    using T = typename Ops::value;
    const T *av = static_cast<const T *>(p.a.values), *bv = static_cast<const T *>(p.b.values);
    const bool intersect = p.merge == SR_MERGE_INTERSECT, left = p.merge == SR_MERGE_LEFT;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < p.a.nrows; i += threads) {
        int64_t x = p.a.rowptr[i], xe = p.a.rowptr[i + 1], y = 0, ye = 0;
        if (!left) {
            y = p.b.rowptr[i];
            ye = p.b.rowptr[i + 1];
        }
        mask_cursor m;
        if (p.mask_rowptr) {
            m.col = p.mask_colind;
            m.at = p.mask_rowptr[i];
            m.end = p.mask_rowptr[i + 1];
            m.complement = p.complement;
            m.active = true;
        }
        int64_t o = FILL ? c_rowptr[i] : 0;
        while (intersect ? (x < xe && y < ye) : (x < xe || y < ye)) {
            const int32_t cx = x < xe ? p.a.colind[x] : INT32_MAX, cy = y < ye ? p.b.colind[y] : INT32_MAX;
            const int32_t j = cx < cy ? cx : cy;
            const bool both = cx == cy, keep = intersect ? both : (!left || cx == j);
            if (keep && m.allows(j)) {
                if (FILL) {
                    c_colind[o] = j;
                    if (c_values)
                        c_values[o] = both && !left ? (intersect ? Ops::mul(av[x], bv[y]) : Ops::add(av[x], bv[y]))
                                      : cx == j     ? av[x]
                                                    : bv[y];
                }
                o++;
            }
            x += intersect && !both ? cx < cy : cx == j;
            y += intersect && !both ? cy < cx : cy == j;
        }
        if (!FILL)
            c_rowptr[i + 1] = o;
    }
}

template <class Ops> struct merge_launcher {
    static sr_status run(sr_context_s *ctx, const ewise_args &p, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        const unsigned grid = grid_for(p.a.nrows);
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, p.a.nrows, p.a.ncols, 0, p.a.type, SR_DEVICE, &C));
        return build_rows(
            ctx, C,
            [&](int64_t *) { merge_rows<Ops, false><<<grid, 256, 0, stream>>>(p, C->rowptr, nullptr, nullptr); },
            [&] { merge_rows<Ops, true><<<grid, 256, 0, stream>>>(p, C->rowptr, C->colind, static_cast<T *>(C->values)); },
            "element-wise", out);
    }
};

} // namespace

extern "C" sr_status sr_cuda_ewise(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B,
                                   const sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                                   sr_matrix_s **C) {
    device_guard guard(ctx->device);
    ewise_args p{};
    p.a = *A;
    if (merge != SR_MERGE_LEFT)
        p.b = *B;
    p.mask_rowptr = mask ? mask->rowptr : nullptr;
    p.mask_colind = mask ? mask->colind : nullptr;
    p.complement = complement;
    p.merge = merge;
    return dispatch_semiring<merge_launcher>(s, A->type, ctx, p, C);
}
