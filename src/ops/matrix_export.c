/* Public exports: a matrix's CSR, COO or dense form into caller memory, in either location. */
#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

sr_status sr_matrix_export_csr(sr_context ctx, sr_matrix A, int64_t *rowptr, int32_t *colind, void *values,
                               sr_location where)
{
    const char *fn = "sr_matrix_export_csr";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_check_location(fn, where));
    SR_CHECK_ARG(rowptr != NULL && (colind != NULL || A->nnz == 0), "%s: rowptr or colind is NULL", fn);
    SR_TRY(sr_mem_copy(ctx, rowptr, where, A->rowptr, A->location, sr_matrix_rowptr_bytes(A)));
    SR_TRY(sr_mem_copy(ctx, colind, where, A->colind, A->location, (size_t)A->nnz * sizeof(int32_t)));
    if (values != NULL && A->type != SR_TYPE_BOOL)
        SR_TRY(sr_mem_copy(ctx, values, where, A->values, A->location, (size_t)A->nnz * sr_value_size(A->type)));
    return SR_SUCCESS;
}

static sr_status expand_rows(const struct sr_matrix_s *A, int64_t *rows)
{
    if (A->location == SR_DEVICE)
        return sr_cuda_expand_rows(A, rows);
    sr_cpu_expand_rows(A->rowptr, A->nrows, rows, sr_context_threads(A->ctx));
    return SR_SUCCESS;
}

sr_status sr_matrix_export_coo(sr_context ctx, sr_matrix A, int64_t *rows, int32_t *cols, void *values,
                               sr_location where)
{
    const char *fn = "sr_matrix_export_coo";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_check_location(fn, where));
    SR_CHECK_ARG((rows != NULL && cols != NULL) || A->nnz == 0, "%s: rows or cols is NULL", fn);
    size_t row_bytes = (size_t)A->nnz * sizeof(int64_t);
    if (where == A->location) {
        SR_TRY(expand_rows(A, rows));
    } else {
        int64_t *staged;
        SR_TRY(sr_mem_alloc(ctx, A->location, row_bytes, (void **)&staged));
        sr_status s = expand_rows(A, staged);
        if (s == SR_SUCCESS)
            s = sr_mem_copy(ctx, rows, where, staged, A->location, row_bytes);
        sr_mem_free(ctx, A->location, staged, row_bytes);
        SR_TRY(s);
    }
    SR_TRY(sr_mem_copy(ctx, cols, where, A->colind, A->location, (size_t)A->nnz * sizeof(int32_t)));
    if (values != NULL && A->type != SR_TYPE_BOOL)
        SR_TRY(sr_mem_copy(ctx, values, where, A->values, A->location, (size_t)A->nnz * sr_value_size(A->type)));
    return SR_SUCCESS;
}

static sr_status csr_to_dense(const struct sr_matrix_s *A, const sr_dense *d)
{
    if (A->location == SR_DEVICE)
        return sr_cuda_csr_to_dense(A, d);
    sr_cpu_csr_to_dense(A, d, sr_context_threads(A->ctx));
    return SR_SUCCESS;
}

sr_status sr_matrix_export_dense(sr_context ctx, sr_matrix A, const sr_dense *dense)
{
    const char *fn = "sr_matrix_export_dense";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_check_dense(fn, dense));
    SR_CHECK_ARG(dense->nrows == A->nrows && dense->ncols == A->ncols,
                 "%s: the dense view is %lld x %lld but the matrix is %lld x %lld", fn, (long long)dense->nrows,
                 (long long)dense->ncols, (long long)A->nrows, (long long)A->ncols);
    SR_CHECK_ARG(dense->type == A->type, "%s: the dense view has type %s but the matrix has type %s", fn,
                 sr_type_name(dense->type), sr_type_name(A->type));
    if (dense->location == A->location)
        return csr_to_dense(A, dense);

    /* Fill a packed copy where the matrix lives, then move it into the caller's (maybe strided) view. */
    sr_dense staged = sr_dense_view(NULL, A->nrows, A->ncols, A->type, dense->layout, A->location);
    int64_t outer = dense->layout == SR_ROW_MAJOR ? A->nrows : A->ncols;
    int64_t inner = dense->layout == SR_ROW_MAJOR ? A->ncols : A->nrows;
    size_t esize = sr_type_size(A->type);
    size_t bytes = (size_t)outer * (size_t)staged.ld * esize;
    SR_TRY(sr_mem_alloc(ctx, A->location, bytes, &staged.data));
    sr_status s = csr_to_dense(A, &staged);
    if (s == SR_SUCCESS)
        s = sr_mem_copy2d(ctx, dense->data, (size_t)dense->ld * esize, dense->location, staged.data,
                          (size_t)staged.ld * esize, A->location, (size_t)inner * esize, (size_t)outer);
    sr_mem_free(ctx, A->location, staged.data, bytes);
    return s;
}
