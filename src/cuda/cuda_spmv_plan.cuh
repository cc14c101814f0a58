// An SpMV plan on the device, kept with the matrix (cuda_spmv_plan.cu). Every SpMV the split
// kernel serves has one: the first call caches the tiles' first rows. sr_spmv_plan may add slots:
// A's most frequent columns get slots in shared memory, so that the kernel gathers their x values
// from there instead of from L2; the plan then keeps a copy of A's column indices with those
// entries pointing at their slot (~slot).
#pragma once

#include "cuda_common.cuh"
#include "../core/matrix.h"

namespace sr_cuda {

struct spmv_plan {
    const int32_t *colind;    // A's columns, a hot entry's as ~slot (nnz); nullptr with no slots
    const int32_t *column_of; // the column each slot holds (slots)
    const int64_t *first_row; // the split kernel's first row of each tile (tiles + 1)
    const int64_t *long_spans; // (row, first tile) of the rows the fix-up sums with a block each
    int64_t n_long_spans;
    int64_t slots;            // 0: the plain kernel
};

// The plan an SpMV on A runs with: sr_spmv_plan's, or else the tiles alone, built by the first
// SpMV on A (the split kernel's first row of each tile: a pass over the rows a call saves).
sr_status spmv_plan_for_call(const sr_matrix_s *A, const spmv_plan **plan);

// From cuda_spmm.cu, for the analysis:
// the split kernel's tiles for A: first_row (tiles + 1 values) and the long spans, in `spans`
// (room for spmv_long_spans_room(A) pairs), *n_spans of them
sr_status spmv_split_tiles(const sr_matrix_s *A, int64_t *first_row, int64_t *spans, int64_t *n_spans);
int64_t spmv_long_spans_room(const sr_matrix_s *A);
int64_t spmv_split_tile_count(const sr_matrix_s *A);
// whether an SpMV on A runs the split kernel (the one a plan serves)
bool spmv_runs_split(const sr_matrix_s *A);
// shared memory bytes the hot kernel can give its slots (A's type)
size_t spmv_hot_slot_bytes(sr_type type);
// y = A·x (plus_times) by the split kernel with the given plan, waiting for the result
sr_status spmv_with_plan(const sr_matrix_s *A, const sr_dense *x, const sr_dense *y, const spmv_plan *plan);

// From cuda_hot_columns.cu: the first `slots` columns by entry count (ties to the smaller column)
// get slots 0..slots-1 in slot_of (ncols, -1 for the rest) and column_of; *hot counts their entries.
sr_status rank_hot_columns(const sr_matrix_s *A, int64_t slots, int32_t *slot_of, int32_t *column_of,
                           unsigned long long *hot);

} // namespace sr_cuda
