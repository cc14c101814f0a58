// Element-wise merges on the device: the union (⊕ where both rows have an entry), the
// intersection (⊗), or the left operand alone (to apply a mask), under an optional structural
// mask.
//
// Work is split by merge path, not by row: row i's entries of A and B, merged by column (A's
// first on a tie), sit at [start(i), start(i + 1)) of one sequence with start(i) = A.rowptr[i] +
// B.rowptr[i]. A block takes a tile of kTile consecutive items of that sequence whatever rows
// they belong to, each thread kItems of them: its row by binary search, its place inside the
// row by a merge-path search. So a row of a million entries (a hub's row of M·M) is spread over
// the whole chip and a thousand short rows share a tile. Whether an item is kept is decided
// from it and its neighbours alone: in a union a B item is dropped when the A item before it
// has its column; in an intersection an A item is kept when the B item after it has its
// column. A count pass adds each row's kept items to its row count and each tile's to its tile
// count; a fill pass places a tile's items from the scanned tile counts (a block scan inside)
// through shared memory, so C is written in order and coalesced.
#include "cuda_ewise_kernels.cuh"
#include "cuda_scan.cuh"
#include "cuda_semiring.cuh"
#include "cuda_user.cuh"

extern "C" {
#include "cuda.h"
}

namespace {

using namespace sr_cuda;

static_assert(kMergeUnion == (int)SR_MERGE_UNION && kMergeIntersect == (int)SR_MERGE_INTERSECT &&
                  kMergeLeft == (int)SR_MERGE_LEFT,
              "cuda_ewise_kernels.cuh's merges are semiring.h's");

constexpr int kThreads = kEwiseThreads;
constexpr int kItems = kEwiseItems;
constexpr int64_t kTile = kEwiseTile;

// Count pass: row_counts[i] += row i's kept items (zeroed before), tile_counts[t] = tile t's.
__global__ void __launch_bounds__(kThreads)
    count_tiles(const __grid_constant__ ewise_args p, int64_t *row_counts, int64_t *tile_counts) {
    using reduce = cub::BlockReduce<int, kThreads>;
    __shared__ typename reduce::TempStorage reduce_storage;
    __shared__ int64_t rows[2];
    for (int64_t tile = blockIdx.x; tile < p.tiles; tile += gridDim.x) {
        const int64_t k0 = tile * kTile, k1 = min(p.items, k0 + kTile), k = k0 + threadIdx.x * kItems;
        ewise_tile_rows(p, k0, k1, rows);
        int kept = 0;
        if (k < k1) {
            merge_walk walk(p, k, p.row_of(k, rows[0], rows[1]));
            int64_t row = walk.i;
            int in_row = 0;
            for (int j = 0; j < kItems && k + j < k1; j++) {
                const merge_item t = walk.next();
                if (!t.keep)
                    continue;
                if (t.row != row) {
                    if (in_row)
                        atomicAdd(reinterpret_cast<unsigned long long *>(row_counts + row), in_row);
                    row = t.row;
                    in_row = 0;
                }
                in_row++;
                kept++;
            }
            if (in_row)
                atomicAdd(reinterpret_cast<unsigned long long *>(row_counts + row), in_row);
        }
        const int total = reduce(reduce_storage).Sum(kept);
        if (threadIdx.x == 0)
            tile_counts[tile] = total;
        __syncthreads(); // rows[] and the reduction's storage are reused by the next tile
    }
}

// The count pass, the scan of the tiles' counts, the fill pass. For a user semiring (user_ops) the
// fill kernel is the current user program's (cuda_user.cuh).
template <class Ops> struct merge_launcher {
    static sr_status run(sr_context_s *ctx, const sr_matrix_s *A, const ewise_args &p, sr_matrix_s **out) {
        using T = typename Ops::value;
        cudaStream_t stream = stream_of(ctx);
        user_fill_kernel user_fill;
        const unsigned grid = grid_for(p.tiles * kThreads, kThreads);
        buffer<int64_t> tile_counts(ctx);
        buffer<unsigned char> scan_temp(ctx);
        size_t scan_bytes = 0;
        if (p.tiles > 0) {
            SR_TRY(tile_counts.allocate((size_t)p.tiles));
            SR_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, tile_counts.get(), tile_counts.get(),
                                                      p.tiles, stream));
            SR_TRY(scan_temp.allocate(scan_bytes));
        }
        sr_matrix_s *C = nullptr;
        SR_TRY(sr_matrix_alloc(ctx, A->nrows, A->ncols, 0, A->type, SR_DEVICE, &C));
        return build_rows(
            ctx, C,
            [&](int64_t *counts) {
                cudaError_t err = cudaMemsetAsync(counts, 0, sizeof(int64_t) * p.a.nrows, stream);
                if (err == cudaSuccess && p.tiles > 0) {
                    count_tiles<<<grid, kThreads, 0, stream>>>(p, counts, tile_counts.get());
                    err = cub::DeviceScan::ExclusiveSum(scan_temp.get(), scan_bytes, tile_counts.get(),
                                                        tile_counts.get(), p.tiles, stream);
                }
                return err;
            },
            [&] {
                const int64_t *base = tile_counts.get();
                int32_t *colind = C->colind;
                T *values = static_cast<T *>(C->values);
                if constexpr (is_user_ops<Ops>)
                    user_fill.launch(grid, kThreads, stream, p, base, colind, values);
                else
                    fill_tiles<Ops><<<grid, kThreads, 0, stream>>>(p, base, colind, values);
            },
            "element-wise", out);
    }
};

} // namespace

extern "C" sr_status sr_cuda_ewise(sr_context_s *ctx, const sr_matrix_s *A, const sr_matrix_s *B,
                                   const sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                                   sr_matrix_s **C) {
    device_guard guard(ctx->device);
    ewise_args p{};
    p.a = csr_ref_of(A);
    p.items = A->nnz;
    if (merge != SR_MERGE_LEFT) {
        p.b = csr_ref_of(B);
        p.items += B->nnz;
    }
    if (mask) {
        p.mask.rowptr = mask->rowptr;
        p.mask.colind = mask->colind;
        p.mask.complement = complement;
    }
    p.merge = (int)merge;
    p.tiles = (p.items + kTile - 1) / kTile;
    if (const sr_user_semiring *u = sr_user_semiring_of((int)s)) // the fill pass from its program
        return run_user<merge_launcher>(u, user_kernel_name("fill_tiles", {}), ctx, A, p, C);
    return dispatch_semiring<merge_launcher>(s, A->type, ctx, A, p, C);
}
