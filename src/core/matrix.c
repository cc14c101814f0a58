#include "matrix.h"

#include <stdlib.h>

#include "error.h"
#include "memory.h"
#include "types.h"

size_t sr_matrix_rowptr_bytes(const struct sr_matrix_s *A) { return (size_t)(A->nrows + 1) * sizeof(int64_t); }
size_t sr_matrix_colind_bytes(const struct sr_matrix_s *A) { return (size_t)A->capacity * sizeof(int32_t); }
size_t sr_matrix_values_bytes(const struct sr_matrix_s *A)
{
    return (size_t)A->capacity * sr_value_size(A->type);
}

sr_status sr_matrix_alloc(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, int64_t capacity,
                          sr_type type, sr_location where, struct sr_matrix_s **out)
{
    struct sr_matrix_s *A = sr_calloc(1, sizeof *A);
    if (A == NULL)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "out of host memory for a matrix handle");
    A->ctx = ctx;
    sr_context_retain(ctx);
    A->nrows = nrows;
    A->ncols = ncols;
    A->type = type;
    A->location = where;
    sr_status s = sr_mem_alloc_array(ctx, where, (size_t)nrows + 1, sizeof(int64_t), (void **)&A->rowptr);
    if (s == SR_SUCCESS)
        s = sr_matrix_alloc_entries(A, capacity);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return s;
    }
    *out = A;
    return SR_SUCCESS;
}

sr_status sr_matrix_alloc_entries(struct sr_matrix_s *A, int64_t capacity)
{
    A->capacity = capacity;
    A->nnz = capacity;
    SR_TRY(sr_mem_alloc_array(A->ctx, A->location, (size_t)capacity, sizeof(int32_t), (void **)&A->colind));
    return sr_mem_alloc_array(A->ctx, A->location, (size_t)capacity, sr_value_size(A->type), &A->values);
}

void sr_matrix_destroy(struct sr_matrix_s *A)
{
    if (A == NULL)
        return;
    if (A->free_row_plans)
        A->free_row_plans(A);
    if (A->free_tile_orders)
        A->free_tile_orders(A);
    if (A->free_hot_columns)
        A->free_hot_columns(A);
    if (A->free_column_ranges)
        A->free_column_ranges(A);
    if (A->free_fused_transpose)
        A->free_fused_transpose(A);
    if (A->free_distance_cache)
        A->free_distance_cache(A);
    if (A->free_spmv_plan)
        A->free_spmv_plan(A);
    if (A->free_shards)
        A->free_shards(A);
    sr_mem_free(A->ctx, A->location, A->rowptr, sr_matrix_rowptr_bytes(A));
    sr_mem_free(A->ctx, A->location, A->colind, sr_matrix_colind_bytes(A));
    sr_mem_free(A->ctx, A->location, A->values, sr_matrix_values_bytes(A));
    sr_context_release(A->ctx);
    free(A);
}

sr_status sr_matrix_free(sr_matrix A)
{
    sr_matrix_destroy(A);
    return SR_SUCCESS;
}

sr_status sr_matrix_get_info(sr_matrix A, sr_matrix_info *info)
{
    SR_CHECK_ARG(A != NULL && info != NULL, "sr_matrix_get_info: NULL argument");
    info->nrows = A->nrows;
    info->ncols = A->ncols;
    info->nnz = A->nnz;
    info->type = A->type;
    info->location = A->location;
    info->device = A->location == SR_DEVICE ? A->ctx->device : -1;
    return SR_SUCCESS;
}

sr_status sr_matrix_csr_arrays(sr_matrix A, const int64_t **rowptr, const int32_t **colind, const void **values)
{
    SR_CHECK_ARG(A != NULL, "sr_matrix_csr_arrays: the matrix is NULL");
    if (rowptr)
        *rowptr = A->rowptr;
    if (colind)
        *colind = A->colind;
    if (values)
        *values = A->values;
    return SR_SUCCESS;
}
