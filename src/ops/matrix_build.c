/* Public constructors: from CSR, COO and dense input, validated before anything is made. */
#include <string.h>

#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

static sr_status copy_csr_arrays(struct sr_context_s *ctx, struct sr_matrix_s *A, const int64_t *rowptr,
                                 const int32_t *colind, const void *values, sr_location where)
{
    SR_TRY(sr_mem_copy(ctx, A->rowptr, A->location, rowptr, where, sr_matrix_rowptr_bytes(A)));
    SR_TRY(sr_mem_copy(ctx, A->colind, A->location, colind, where, sr_matrix_colind_bytes(A)));
    if (A->type != SR_TYPE_BOOL)
        SR_TRY(sr_mem_copy(ctx, A->values, A->location, values, where, sr_matrix_values_bytes(A)));
    return SR_SUCCESS;
}

sr_status sr_matrix_from_csr(sr_context ctx, sr_matrix *out, int64_t nrows, int64_t ncols, sr_type type,
                             const int64_t *rowptr, const int32_t *colind, const void *values, sr_location where)
{
    const char *fn = "sr_matrix_from_csr";
    SR_CHECK_ARG(ctx != NULL && out != NULL, "%s: the context or output pointer is NULL", fn);
    SR_TRY(sr_check_location(fn, where));
    SR_TRY(sr_check_shape(fn, nrows, ncols, 0, type));
    SR_CHECK_ARG(rowptr != NULL, "%s: rowptr is NULL", fn);
    if (where == SR_DEVICE)
        SR_TRY(sr_context_require_device(ctx));

    int64_t nnz = 0;
    SR_TRY(sr_mem_copy(ctx, &nnz, SR_HOST, rowptr + nrows, where, sizeof nnz));
    SR_CHECK_ARG(nnz >= 0, "%s: rowptr[%lld] = %lld is negative", fn, (long long)nrows, (long long)nnz);
    SR_TRY(sr_check_shape(fn, nrows, ncols, nnz, type));
    SR_CHECK_ARG(colind != NULL || nnz == 0, "%s: colind is NULL but the matrix has %lld entries", fn, (long long)nnz);
    SR_CHECK_ARG(values != NULL || nnz == 0 || type == SR_TYPE_BOOL,
                 "%s: values is NULL for a %s matrix with %lld entries", fn, sr_type_name(type), (long long)nnz);
    if (where == SR_HOST)
        SR_TRY(sr_check_csr_host(rowptr, colind, nrows, ncols, nnz, sr_context_threads_for(ctx, nrows + nnz)));
    else
        SR_TRY(sr_cuda_check_csr(ctx, rowptr, colind, nrows, ncols, nnz));

    struct sr_matrix_s *A;
    SR_TRY(sr_matrix_alloc(ctx, nrows, ncols, nnz, type, where, &A));
    sr_status s = copy_csr_arrays(ctx, A, rowptr, colind, values, where);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return s;
    }
    *out = A;
    return SR_SUCCESS;
}

sr_status sr_matrix_from_coo(sr_context ctx, sr_matrix *out, int64_t nrows, int64_t ncols, sr_type type, int64_t nnz,
                             const int64_t *rows, const int32_t *cols, const void *values, sr_duplicates dup,
                             sr_location where)
{
    const char *fn = "sr_matrix_from_coo";
    SR_CHECK_ARG(ctx != NULL && out != NULL, "%s: the context or output pointer is NULL", fn);
    SR_TRY(sr_check_location(fn, where));
    SR_TRY(sr_check_shape(fn, nrows, ncols, nnz, type));
    SR_CHECK_ARG(dup == SR_DUPLICATES_ERROR || dup == SR_DUPLICATES_SUM, "%s: unknown duplicates policy %d", fn,
                 (int)dup);
    SR_CHECK_ARG((rows != NULL && cols != NULL) || nnz == 0, "%s: rows or cols is NULL with %lld triplets", fn,
                 (long long)nnz);
    SR_CHECK_ARG(values != NULL || nnz == 0 || type == SR_TYPE_BOOL,
                 "%s: values is NULL for a %s matrix with %lld triplets", fn, sr_type_name(type), (long long)nnz);
    struct sr_matrix_s *A;
    if (where == SR_HOST) {
        SR_TRY(sr_cpu_coo_to_csr(ctx, nrows, ncols, type, nnz, rows, cols, values, dup, &A, NULL));
    } else {
        SR_TRY(sr_context_require_device(ctx));
        SR_TRY(sr_cuda_coo_to_csr(ctx, nrows, ncols, type, nnz, rows, cols, values, dup, &A));
    }
    *out = A;
    return SR_SUCCESS;
}

sr_status sr_ops_dense_to_csr(struct sr_context_s *ctx, const sr_dense *dense, const sr_keep_rule *rule,
                              struct sr_matrix_s **out)
{
    if (dense->location == SR_DEVICE)
        return sr_cuda_dense_to_csr(ctx, dense, rule, out);
    int threads = sr_context_threads(ctx);
    struct sr_matrix_s *A;
    SR_TRY(sr_matrix_alloc(ctx, dense->nrows, dense->ncols, 0, dense->type, SR_HOST, &A));
    sr_cpu_dense_rowptr(dense, rule, A->rowptr, threads);
    sr_status s = sr_matrix_alloc_entries(A, A->rowptr[dense->nrows]);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(A);
        return s;
    }
    sr_cpu_dense_fill(dense, rule, A, threads);
    *out = A;
    return SR_SUCCESS;
}

sr_status sr_matrix_from_dense(sr_context ctx, sr_matrix *out, const sr_dense *dense)
{
    const char *fn = "sr_matrix_from_dense";
    SR_CHECK_ARG(ctx != NULL && out != NULL, "%s: the context or output pointer is NULL", fn);
    SR_TRY(sr_check_dense(fn, dense));
    if (dense->location == SR_DEVICE)
        SR_TRY(sr_context_require_device(ctx));
    const sr_keep_rule nonzeros = sr_keep_nonzeros();
    return sr_ops_dense_to_csr(ctx, dense, &nonzeros, out);
}
