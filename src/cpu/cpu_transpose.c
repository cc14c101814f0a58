/* Transpose on the host: a stable counting sort by column, parallel over row blocks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "cpu.h"

/* A's value k to AT's slot `at` (vsize bytes: 0 for bool patterns): a typed copy, as a memcpy of
 * a size known only at run time is a call per entry. */
static inline void copy_value(void *to, int64_t at, const void *from, int64_t k, size_t vsize)
{
    switch (vsize) {
    case 8: ((uint64_t *)to)[at] = ((const uint64_t *)from)[k]; break;
    case 4: ((uint32_t *)to)[at] = ((const uint32_t *)from)[k]; break;
    case 0: break;
    default: memcpy((char *)to + at * vsize, (const char *)from + k * vsize, vsize);
    }
}

/* Wide matrices: thread t owns the columns [lo_t, hi_t) (about nnz/T entries each). Every thread
 * reads all column indices, but counts and places only its own, so no count table is needed and
 * rows stay in order within each column. */
static sr_status transpose_by_column_ranges(const struct sr_matrix_s *A, struct sr_matrix_s *AT, int threads)
{
    const int64_t ncols = A->ncols;
    size_t vsize = sr_value_size(A->type);
    int64_t *cursor; /* next free slot of each output row; threads touch disjoint column ranges */
    SR_TRY(sr_mem_alloc_array(A->ctx, SR_HOST, (size_t)ncols + 1, sizeof(int64_t), (void **)&cursor));
    memset(AT->rowptr, 0, (size_t)(ncols + 1) * sizeof(int64_t));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        const int64_t lo = ncols * t / threads, hi = ncols * (t + 1) / threads;
        for (int64_t k = 0; k < A->nnz; k++)
            if (A->colind[k] >= lo && A->colind[k] < hi)
                AT->rowptr[A->colind[k] + 1]++;
    }
    sr_cpu_prefix_sum(AT->rowptr, ncols);
    memcpy(cursor, AT->rowptr, (size_t)(ncols + 1) * sizeof(int64_t));
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int t = 0; t < threads; t++) {
        const int64_t lo = ncols * t / threads, hi = ncols * (t + 1) / threads;
        for (int64_t i = 0; i < A->nrows; i++)
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                const int32_t c = A->colind[k];
                if (c < lo || c >= hi)
                    continue;
                const int64_t at = cursor[c]++;
                AT->colind[at] = (int32_t)i;
                copy_value(AT->values, at, A->values, k, vsize);
            }
    }
    sr_mem_free(A->ctx, SR_HOST, cursor, 0);
    return SR_SUCCESS;
}

sr_status sr_cpu_transpose(const struct sr_matrix_s *A, struct sr_matrix_s *AT)
{
    int64_t ncols = A->ncols;
    int blocks = sr_context_threads(A->ctx);
    /* Each of T threads counts the columns of its block of rows in a T x ncols table; when that
     * table would exceed a quarter of the host workspace, threads split the columns instead. */
    size_t table_limit = sr_context_workspace(A->ctx, SR_HOST) / 4;
    if (A->nnz < 65536)
        blocks = 1;
    else if (blocks > 1 && (size_t)blocks * (size_t)(ncols + 1) * sizeof(int64_t) > table_limit) {
        return transpose_by_column_ranges(A, AT, blocks);
    }

    int64_t *offsets; /* offsets[b*ncols + c]: where block b writes its first entry of column c */
    SR_TRY(sr_mem_alloc_array(A->ctx, SR_HOST, (size_t)blocks * (size_t)ncols + 1, sizeof(int64_t),
                              (void **)&offsets));
    memset(offsets, 0, ((size_t)blocks * (size_t)ncols + 1) * sizeof(int64_t));
    size_t vsize = sr_value_size(A->type);

    /* Loops run over blocks, not threads, so every block is done whatever OpenMP grants. */
#pragma omp parallel for num_threads(blocks) schedule(static, 1)
    for (int b = 0; b < blocks; b++) {
        int64_t *mine = offsets + (size_t)b * (size_t)ncols;
        for (int64_t k = A->rowptr[A->nrows * b / blocks]; k < A->rowptr[A->nrows * (b + 1) / blocks]; k++)
            mine[A->colind[k]]++;
    }
    /* Scan over (column, block): block b's run of column c follows block b-1's, keeping order. */
    int64_t running = 0;
    for (int64_t c = 0; c < ncols; c++) {
        AT->rowptr[c] = running;
        for (int b = 0; b < blocks; b++) {
            int64_t n = offsets[(size_t)b * (size_t)ncols + c];
            offsets[(size_t)b * (size_t)ncols + c] = running;
            running += n;
        }
    }
    AT->rowptr[ncols] = running;
#pragma omp parallel for num_threads(blocks) schedule(static, 1)
    for (int b = 0; b < blocks; b++) {
        int64_t *mine = offsets + (size_t)b * (size_t)ncols;
        for (int64_t i = A->nrows * b / blocks; i < A->nrows * (b + 1) / blocks; i++)
            for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++) {
                int64_t at = mine[A->colind[k]]++;
                AT->colind[at] = (int32_t)i;
                copy_value(AT->values, at, A->values, k, vsize);
            }
    }
    sr_mem_free(A->ctx, SR_HOST, offsets, 0);
    return SR_SUCCESS;
}
