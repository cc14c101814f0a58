// A sparse matrix's most frequent columns, for kernels that sum into a column-indexed vector
// (w = Xᵀ·t): the top `slots` columns by entry count get slots in a block's shared memory, the
// rest go to global memory. On text data a few columns (common words) hold most entries, and
// summing them with global atomics serializes on a handful of addresses.
#pragma once

#include "cuda_common.cuh"
#include "../core/matrix.h"

namespace sr_cuda {

struct hot_columns {
    int64_t slots;            // the slots asked for (the plan is rebuilt for another count)
    const int32_t *slot_of;   // ncols: a column's slot, or -1 when it is not hot
    const int32_t *column_of; // slots: the column a slot holds
    double coverage;          // the share of the entries that fall in hot columns
};

// The plan of A for `slots` slots, built on first use (a count, a sort of the columns by count)
// and kept with the matrix while its pattern lives.
sr_status hot_columns_of(const sr_matrix_s *A, int64_t slots, hot_columns *plan);

} // namespace sr_cuda
