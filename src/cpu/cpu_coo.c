/* COO <-> CSR on the host. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "cpu.h"

void sr_cpu_expand_rows(const int64_t *rowptr, int64_t nrows, int64_t *rows, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < nrows; i++)
        for (int64_t k = rowptr[i]; k < rowptr[i + 1]; k++)
            rows[k] = i;
}

void sr_cpu_prefix_sum(int64_t *rowptr, int64_t nrows)
{
    rowptr[0] = 0;
    for (int64_t i = 0; i < nrows; i++)
        rowptr[i + 1] += rowptr[i];
}

typedef struct {
    int32_t col;
    int64_t source; /* the triplet's position in the input: ties keep input order */
} col_source;

static int compare_col_source(const void *a, const void *b)
{
    const col_source *x = a, *y = b;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return (x->source > y->source) - (x->source < y->source);
}

static sr_status check_triplet_ranges(int64_t nrows, int64_t ncols, int64_t nnz, const int64_t *rows,
                                      const int32_t *cols, int threads)
{
    int64_t first_bad = nnz;
#pragma omp parallel for num_threads(threads) reduction(min : first_bad)
    for (int64_t k = 0; k < nnz; k++)
        if ((rows[k] < 0 || rows[k] >= nrows || cols[k] < 0 || cols[k] >= ncols) && k < first_bad)
            first_bad = k;
    if (first_bad == nnz)
        return SR_SUCCESS;
    int64_t k = first_bad;
    if (rows[k] < 0 || rows[k] >= nrows)
        return sr_error(SR_ERROR_INVALID_MATRIX, "row index %lld of triplet %lld is out of range [0, %lld)",
                        (long long)rows[k], (long long)k, (long long)nrows);
    return sr_error(SR_ERROR_INVALID_MATRIX, "column index %d of triplet %lld is out of range [0, %lld)",
                    (int)cols[k], (long long)k, (long long)ncols);
}

/* out[at] += in[from] (bool stores no values: nothing to do); false when an int32 sum overflows. */
static bool add_value(void *out, int64_t at, const void *in, int64_t from, sr_type type)
{
    switch (type) {
    case SR_TYPE_BOOL: break;
    case SR_TYPE_INT32: {
        int32_t *cell = &((int32_t *)out)[at];
        return !__builtin_add_overflow(*cell, ((const int32_t *)in)[from], cell);
    }
    case SR_TYPE_FLOAT32: ((float *)out)[at] += ((const float *)in)[from]; break;
    case SR_TYPE_FLOAT64: ((double *)out)[at] += ((const double *)in)[from]; break;
    }
    return true;
}

sr_status sr_cpu_coo_to_csr(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                            const int64_t *rows, const int32_t *cols, const void *vals, sr_duplicates dup,
                            struct sr_matrix_s **out, int64_t *duplicate_pair)
{
    const int threads = sr_context_threads_for(ctx, nrows + nnz);
    SR_TRY(check_triplet_ranges(nrows, ncols, nnz, rows, cols, threads));
    char what[96]; /* the row pointers and the fill cursors, against the triplets' own bytes */
    snprintf(what, sizeof what, "a matrix of %lld rows and %lld entr%s", (long long)nrows, (long long)nnz,
             nnz == 1 ? "y" : "ies");
    SR_TRY(sr_mem_check_proportion(ctx, 2.0 * 8.0 * ((double)nrows + 1), (double)nnz * (16.0 + (double)sr_value_size(type)),
                                   what));

    struct sr_matrix_s *A;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, nnz, type, SR_HOST, &A));
    col_source *order = NULL;
    int64_t *unique = NULL;
    sr_status s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)nnz, sizeof *order, (void **)&order);
    if (s == SR_SUCCESS)
        s = sr_mem_alloc_array(ctx, SR_HOST, (size_t)nrows + 1, sizeof *unique, (void **)&unique);
    if (s != SR_SUCCESS)
        goto fail;

    /* Counting sort by row (stable), then sort each row by column. */
    memset(A->rowptr, 0, sr_matrix_rowptr_bytes(A));
    for (int64_t k = 0; k < nnz; k++)
        A->rowptr[rows[k] + 1]++;
    sr_cpu_prefix_sum(A->rowptr, nrows);
    memcpy(unique, A->rowptr, sr_matrix_rowptr_bytes(A)); /* as fill cursors */
    for (int64_t k = 0; k < nnz; k++) {
        int64_t at = unique[rows[k]]++;
        order[at].col = cols[k];
        order[at].source = k;
    }

    int64_t first_duplicate_row = nrows;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256) reduction(min : first_duplicate_row)
    for (int64_t i = 0; i < nrows; i++) {
        col_source *row = order ? order + A->rowptr[i] : NULL; /* no triplets: no array, every row empty */
        int64_t n = A->rowptr[i + 1] - A->rowptr[i];
        bool sorted = true;
        for (int64_t k = 1; k < n && sorted; k++)
            sorted = row[k].col > row[k - 1].col;
        if (!sorted)
            qsort(row, (size_t)n, sizeof *row, compare_col_source);
        int64_t distinct = n > 0;
        for (int64_t k = 1; k < n; k++)
            distinct += row[k].col != row[k - 1].col;
        unique[i + 1] = distinct;
        if (distinct != n && i < first_duplicate_row)
            first_duplicate_row = i;
    }
    if (first_duplicate_row < nrows && dup == SR_DUPLICATES_ERROR) {
        col_source *row = order + A->rowptr[first_duplicate_row];
        int64_t k = 1;
        while (row[k].col != row[k - 1].col)
            k++;
        if (duplicate_pair) {
            duplicate_pair[0] = row[k - 1].source;
            duplicate_pair[1] = row[k].source;
        }
        s = sr_error(SR_ERROR_INVALID_MATRIX, "duplicate entry (%lld, %d): triplets %lld and %lld",
                     (long long)first_duplicate_row, (int)row[k].col, (long long)row[k - 1].source,
                     (long long)row[k].source);
        goto fail;
    }
    sr_cpu_prefix_sum(unique, nrows);

    /* Write the distinct entries; repeats add into the first of their run. */
    size_t vsize = sr_value_size(type);
    int64_t overflow_row = nrows; /* the first row whose summed duplicates pass int32 */
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256) reduction(min : overflow_row)
    for (int64_t i = 0; i < nrows; i++) {
        const col_source *row = order ? order + A->rowptr[i] : NULL;
        int64_t n = A->rowptr[i + 1] - A->rowptr[i];
        int64_t at = unique[i] - 1;
        for (int64_t k = 0; k < n; k++) {
            if (k > 0 && row[k].col == row[k - 1].col) {
                if (!add_value(A->values, at, vals, row[k].source, type) && i < overflow_row)
                    overflow_row = i;
                continue;
            }
            at++;
            A->colind[at] = row[k].col;
            if (vsize)
                memcpy((char *)A->values + at * vsize, (const char *)vals + row[k].source * vsize, vsize);
        }
    }
    if (overflow_row < nrows) {
        s = sr_error(SR_ERROR_OVERFLOW, "the duplicates summed in row %lld pass the int32 range", (long long)overflow_row);
        goto fail;
    }
    memcpy(A->rowptr, unique, sr_matrix_rowptr_bytes(A));
    A->nnz = unique[nrows];

fail:
    sr_mem_free(ctx, SR_HOST, order, 0);
    sr_mem_free(ctx, SR_HOST, unique, 0);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return s;
    }
    *out = A;
    return SR_SUCCESS;
}
