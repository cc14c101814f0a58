// The device SpGEMM's values in a fixed order. The hash and dense rows combine a row's products
// that meet in one column with atomics, whose order changes from run to run; where ⊕ is a float sum
// that moves the last bits. On a deterministic context the fill pass writes the pattern alone
// (mxm_args::values_later), and this pass then fills the values: a team per row walks the row's A
// entries one after another, each lane adding its products of that entry's B row into C at the
// product's column (found by a binary search in C's sorted row). A B row holds a column once, so
// the lanes of one A entry never meet, and a team barrier between A entries keeps each value's
// terms in A-entry order. Products that the mask left out find no column and drop. The ESC rows
// take this pass too: their own fill sums runs of products that were rounded before the sort, where
// this pass lets the compiler fuse a product into its sum (an FMA), so the two gave different last
// bits for the same order (seen on an H100: user semirings' products, which run this pass on every
// row, against the built-ins').
//
// A user semiring's product (cuda_mxm.cu's user_mxm) fills every row's values here, with the user's
// ⊕ and ⊗: so this header is device code alone, compiled by nvcc for the built-ins and by NVRTC
// for user semirings (cuda_user.cu), which is also why the row packing and team barrier that the
// other SpGEMM kernels share live here.
#pragma once

#include "cuda_device_base.cuh"

namespace sr_cuda {

constexpr int kMxmBlock = 256; // the SpGEMM kernels' block (cuda_mxm.cu's kBlock)

// A bin entry: the row (below 2^32) in the low half and its product bound, capped at 2^31 - 1,
// in the high half, so the row kernels need not sum the B-row lengths again. A plain row number
// is an entry with bound 0.
__device__ inline int64_t pack_row(int64_t row, int64_t ub) {
    return row | ((ub < INT32_MAX ? ub : (int64_t)INT32_MAX) << 32);
}
__device__ inline int64_t packed_row(int64_t entry) { return entry & 0xffffffffll; }
__device__ inline int64_t packed_bound(int64_t entry) { return entry >> 32; }

// A team is a warp (TEAM == 32) or the whole block.
template <int TEAM> __device__ inline void team_sync() {
    if constexpr (TEAM == 32)
        __syncwarp();
    else
        __syncthreads();
}

// What the ordered pass reads: A and B, and C's sorted pattern, whose values it writes.
template <typename T> struct ordered_args {
    const int64_t *a_rowptr;
    const int32_t *a_colind;
    const T *a_values; // read only where Ops::reads_values
    const int64_t *b_rowptr;
    const int32_t *b_colind;
    const T *b_values;
    const int64_t *c_rowptr;
    const int32_t *c_colind;
    T *c_values;
};

// TEAM = 32: a warp a row (the hash bins of a warp); TEAM = kMxmBlock: a block a row (the block
// hash bins and the dense rows, whose B rows are long). rows: bin entries (pack_row).
template <class Ops, int TEAM>
__global__ void __launch_bounds__(kMxmBlock)
    ordered_values(ordered_args<typename Ops::value> p, const int64_t *rows, int64_t n) {
    using T = typename Ops::value;
    constexpr int kTeams = kMxmBlock / TEAM;
    const int team = threadIdx.x / TEAM, lane = threadIdx.x % TEAM;
    for (int64_t idx = (int64_t)blockIdx.x * kTeams + team; idx < n; idx += (int64_t)gridDim.x * kTeams) {
        const int64_t row = packed_row(rows[idx]);
        const int64_t c0 = p.c_rowptr[row], c_len = p.c_rowptr[row + 1] - c0;
        const int32_t *cols = p.c_colind + c0;
        T *vals = p.c_values + c0;
        for (int64_t t = lane; t < c_len; t += TEAM)
            vals[t] = Ops::identity();
        team_sync<TEAM>();
        for (int64_t ka = p.a_rowptr[row]; ka < p.a_rowptr[row + 1]; ka++) {
            const int32_t k = p.a_colind[ka];
            const T a = Ops::reads_values && p.a_values ? p.a_values[ka] : T(1);
            for (int64_t kb = p.b_rowptr[k] + lane; kb < p.b_rowptr[k + 1]; kb += TEAM) {
                const int32_t j = p.b_colind[kb];
                const int64_t at = lower_bound(cols, c_len, j);
                if (at < c_len && cols[at] == j)
                    vals[at] = Ops::add(vals[at], Ops::mul(a, Ops::reads_values && p.b_values ? p.b_values[kb] : T(1)));
            }
            team_sync<TEAM>(); // this entry's sums are in before the next entry's lanes read them
        }
    }
}

} // namespace sr_cuda
