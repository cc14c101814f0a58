// Rows of a device CSR matrix grouped by length, for kernels that give each class of row its own
// share of the chip: short rows (a few lanes each), mid rows (a block each) and long rows (cut into
// chunks whose partial results a combine pass reduces). Built once per matrix and set of classes,
// then cached on the matrix, so a product pays no scan and no host round trip to find its work.
#pragma once

#include "cuda_common.cuh"

extern "C" {
#include "../core/matrix.h"
}

namespace sr_cuda {

// A's plan for these classes, built on first use (a scan, a fill kernel and one synchronization;
// memory: 8 bytes per mid row, 16 per long row and 8 per chunk) and cached on A. Queued work on
// A's stream may read the plan's arrays; it stays valid until A is freed.
sr_status row_plan_of(const sr_matrix_s *A, row_classes classes, row_plan *plan);

} // namespace sr_cuda
