// The device SpGEMM's values in a fixed order, for a deterministic context (included by
// cuda_mxm.cu after cuda_mxm_rows.cuh). The hash and dense rows combine a row's products that meet
// in one column with atomics, whose order changes from run to run; where ⊕ is a float sum that
// moves the last bits. On a deterministic context those rows' fill pass writes the pattern alone
// (mxm_args::values_later), and this pass then fills their values: a team per row walks the row's
// A entries one after another, each lane adding its products of that entry's B row into C at the
// product's column (found by a binary search in C's sorted row). A B row holds a column once, so
// the lanes of one A entry never meet, and a team barrier between A entries keeps each value's
// terms in A-entry order. Products that the mask left out find no column and drop. The ESC rows
// are already in a fixed order (a stable sort, then each run combined in sorted order).
#pragma once

// Whether the order of a row's products changes the bits: float sums. min and max pick the same
// value in any order, and integer sums are exact.
template <class Ops> constexpr bool order_changes_bits() {
    return std::is_floating_point_v<typename Ops::value> && Ops::add_kind == SR_ADD_OP_PLUS;
}

// TEAM = 32: a warp a row (the hash bins of a warp); TEAM = kBlock: a block a row (the block
// hash bins and the dense rows, whose B rows are long).
template <class Ops, int TEAM>
__global__ void __launch_bounds__(kBlock) ordered_values(mxm_args<Ops> p, const int64_t *rows, int64_t n) {
    using T = typename Ops::value;
    constexpr int kTeams = kBlock / TEAM;
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
            const T a = p.a(ka);
            for (int64_t kb = p.b_rowptr[k] + lane; kb < p.b_rowptr[k + 1]; kb += TEAM) {
                const int32_t j = p.b_colind[kb];
                const int64_t at = lower_bound(cols, c_len, j);
                if (at < c_len && cols[at] == j)
                    vals[at] = Ops::add(vals[at], Ops::mul(a, p.b(kb)));
            }
            team_sync<TEAM>(); // this entry's sums are in before the next entry's lanes read them
        }
    }
}
