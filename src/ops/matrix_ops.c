/* Public whole-matrix operations: dup, copy between locations, transpose, cast, equal. */
#include <math.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../opencl/opencl.h"
#include "ops_common.h"

/* A new matrix in `where` with A's shape and pattern, and values converted to `type`. */
static sr_status copy_matrix(struct sr_context_s *ctx, const struct sr_matrix_s *A, sr_location where, sr_type type,
                             struct sr_matrix_s **out)
{
    struct sr_matrix_s *B;
    SR_TRY(sr_matrix_alloc(ctx, A->nrows, A->ncols, A->nnz, type, where, &B));
    sr_status s = sr_mem_copy(ctx, B->rowptr, where, A->rowptr, A->location, sr_matrix_rowptr_bytes(A));
    if (s == SR_SUCCESS)
        s = sr_mem_copy(ctx, B->colind, where, A->colind, A->location, (size_t)A->nnz * sizeof(int32_t));
    if (s == SR_SUCCESS && type == A->type && type != SR_TYPE_BOOL)
        s = sr_mem_copy(ctx, B->values, where, A->values, A->location, sr_matrix_values_bytes(B));
    if (s == SR_SUCCESS && type != A->type)
        s = where == SR_DEVICE ? sr_cuda_cast_values(A, B) : sr_cpu_cast_values(A, B, sr_context_threads(ctx));
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(B);
        return s;
    }
    *out = B;
    return SR_SUCCESS;
}

sr_status sr_matrix_dup(sr_context ctx, sr_matrix A, sr_matrix *B)
{
    SR_TRY(sr_ops_check_matrix("sr_matrix_dup", ctx, A));
    SR_CHECK_ARG(B != NULL, "sr_matrix_dup: the output pointer is NULL");
    return copy_matrix(ctx, A, A->location, A->type, B);
}

sr_status sr_matrix_copy_to(sr_context ctx, sr_matrix A, sr_location where, sr_matrix *B)
{
    SR_TRY(sr_ops_check_matrix("sr_matrix_copy_to", ctx, A));
    SR_TRY(sr_check_location("sr_matrix_copy_to", where));
    SR_CHECK_ARG(B != NULL, "sr_matrix_copy_to: the output pointer is NULL");
    return copy_matrix(ctx, A, where, A->type, B);
}

sr_status sr_matrix_cast(sr_context ctx, sr_matrix A, sr_type type, sr_matrix *B)
{
    SR_TRY(sr_ops_check_matrix("sr_matrix_cast", ctx, A));
    SR_CHECK_ARG(sr_type_valid(type), "sr_matrix_cast: unknown type %d", (int)type);
    SR_CHECK_ARG(B != NULL, "sr_matrix_cast: the output pointer is NULL");
    return copy_matrix(ctx, A, A->location, type, B);
}

sr_status sr_matrix_transpose(sr_context ctx, sr_matrix A, sr_matrix *out)
{
    const char *fn = "sr_matrix_transpose";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_CHECK_ARG(out != NULL, "%s: the output pointer is NULL", fn);
    if (A->nrows > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld rows would become columns, beyond the 32-bit column limit", fn,
                        (long long)A->nrows);
    struct sr_matrix_s *AT;
    SR_TRY(sr_matrix_alloc(ctx, A->ncols, A->nrows, A->nnz, A->type, A->location, &AT));
    sr_status s;
    if (A->location == SR_DEVICE)
        s = sr_cuda_transpose(A, AT);
    else
        s = sr_ops_on_opencl(ctx, A) ? sr_ocl_transpose_bool(ctx, A, AT) : sr_cpu_transpose(A, AT);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(AT);
        return s;
    }
    *out = AT;
    return SR_SUCCESS;
}

static bool same_value(const struct sr_matrix_s *A, const struct sr_matrix_s *B, int64_t k)
{
    double a = sr_value_get(A->values, A->type, k), b = sr_value_get(B->values, B->type, k);
    return a == b || (isnan(a) && isnan(b));
}

sr_status sr_matrix_equal(sr_context ctx, sr_matrix A, sr_matrix B, bool *equal)
{
    SR_TRY(sr_ops_check_matrix("sr_matrix_equal", ctx, A));
    SR_TRY(sr_ops_check_matrix("sr_matrix_equal", ctx, B));
    SR_CHECK_ARG(equal != NULL, "sr_matrix_equal: the output pointer is NULL");
    if (A->nrows != B->nrows || A->ncols != B->ncols || A->nnz != B->nnz || A->type != B->type) {
        *equal = false;
        return SR_SUCCESS;
    }
    /* Compare on the host; device matrices are copied down first. */
    struct sr_matrix_s *host[2] = {A, B};
    struct sr_matrix_s *copies[2] = {NULL, NULL};
    sr_status s = SR_SUCCESS;
    for (int m = 0; m < 2 && s == SR_SUCCESS; m++)
        if (host[m]->location == SR_DEVICE && (s = copy_matrix(ctx, host[m], SR_HOST, host[m]->type, &copies[m])) ==
                                                  SR_SUCCESS)
            host[m] = copies[m];
    if (s == SR_SUCCESS) {
        bool same = memcmp(host[0]->rowptr, host[1]->rowptr, sr_matrix_rowptr_bytes(A)) == 0 &&
                    (A->nnz == 0 || memcmp(host[0]->colind, host[1]->colind, (size_t)A->nnz * sizeof(int32_t)) == 0);
        for (int64_t k = 0; same && A->type != SR_TYPE_BOOL && k < A->nnz; k++)
            same = same_value(host[0], host[1], k);
        *equal = same;
    }
    sr_matrix_destroy(copies[0]);
    sr_matrix_destroy(copies[1]);
    return s;
}
