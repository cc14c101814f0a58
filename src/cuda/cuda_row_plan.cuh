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

// Rows of at most short_max entries are short; above long_min, long; in between, mid.
struct row_classes {
    int64_t short_max, long_min, chunk;
    bool operator==(const row_classes &o) const {
        return short_max == o.short_max && long_min == o.long_min && chunk == o.chunk;
    }
};

// Device arrays of the mid and long rows (short rows are the rest, found by their length).
struct row_plan {
    row_classes classes;
    int64_t n_mid, n_long, n_chunks;
    const int64_t *mid_rows;    // n_mid rows, ascending
    const int64_t *long_rows;   // n_long rows, ascending
    const int64_t *chunk_first; // n_long + 1: long row l has chunks chunk_first[l] .. chunk_first[l + 1] - 1
    const int64_t *chunk_owner; // n_chunks: the long row l (index into long_rows) of each chunk

    // The row and entry range of chunk c.
    __device__ void chunk_range(const int64_t *rowptr, int64_t c, int64_t *row, int64_t *start, int64_t *end) const {
        const int64_t l = chunk_owner[c], r = long_rows[l];
        const int64_t s = rowptr[r] + (c - chunk_first[l]) * classes.chunk;
        *row = r;
        *start = s;
        *end = min(rowptr[r + 1], s + classes.chunk);
    }
};

// A's plan for these classes, built on first use (a scan, a fill kernel and one synchronization;
// memory: 8 bytes per mid row, 16 per long row and 8 per chunk) and cached on A. Queued work on
// A's stream may read the plan's arrays; it stays valid until A is freed.
sr_status row_plan_of(const sr_matrix_s *A, row_classes classes, row_plan *plan);

} // namespace sr_cuda
