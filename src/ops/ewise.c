/* Public element-wise and structural operations: union and intersection, Kronecker product,
 * submatrix extraction, row reduction. Checks, then one backend kernel, then mask and accumulate. */
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../opencl/opencl.h"
#include "ops_common.h"

/* A and B can be combined element-wise or by Kronecker under s: one type, one place, and s keeps
 * that type. */
static sr_status check_pair(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *A,
                            const struct sr_matrix_s *B, sr_semiring s)
{
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_ops_check_matrix(fn, ctx, B));
    SR_CHECK_ARG(B->type == A->type, "%s: B has type %s but A has type %s", fn, sr_type_name(B->type),
                 sr_type_name(A->type));
    SR_CHECK_ARG(B->location == A->location, "%s: A lives on the %s but B on the %s (sr_matrix_copy_to moves one)", fn,
                 sr_ops_place(A->location), sr_ops_place(B->location));
    sr_type out;
    SR_TRY(sr_semiring_output_type(s, A->type, &out));
    SR_CHECK_ARG(out == A->type, "%s: %s turns %s into %s; element-wise operations keep the type (for bool use "
                 "or_and or any_pair)", fn, sr_semiring_name(s), sr_type_name(A->type), sr_type_name(out));
    return SR_SUCCESS;
}

static sr_status ewise(const char *fn, sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A,
                       sr_matrix B, const sr_descriptor *desc, sr_merge merge)
{
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(check_pair(fn, ctx, A, B, s));
    SR_CHECK_ARG(A->nrows == B->nrows && A->ncols == B->ncols, "%s: A is %lld x %lld but B is %lld x %lld", fn,
                 (long long)A->nrows, (long long)A->ncols, (long long)B->nrows, (long long)B->ncols);
    sr_descriptor d;
    SR_TRY(sr_ops_plain_descriptor(fn, desc, &d));
    SR_CHECK_ARG(!d.transpose_b, "%s: transpose_b applies to sr_mxm only", fn);
    SR_TRY(sr_ops_check_mask(fn, ctx, mask, A, A->nrows, A->ncols));
    struct sr_matrix_s *old, *T = NULL;
    SR_TRY(sr_ops_accumulator(fn, ctx, C, d.accumulate, A->nrows, A->ncols, A->type, A->location, &old));
    SR_TRY(sr_ops_ewise(ctx, A, B, mask, d.mask_complement, merge, s, &T));
    return sr_ops_finish(ctx, C, T, old, s);
}

sr_status sr_ewise_add(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                       const sr_descriptor *desc)
{
    return ewise("sr_ewise_add", ctx, C, mask, s, A, B, desc, SR_MERGE_UNION);
}

sr_status sr_ewise_mult(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                        const sr_descriptor *desc)
{
    return ewise("sr_ewise_mult", ctx, C, mask, s, A, B, desc, SR_MERGE_INTERSECT);
}

sr_status sr_kronecker(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                       const sr_descriptor *desc)
{
    const char *fn = "sr_kronecker";
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(check_pair(fn, ctx, A, B, s));
    sr_descriptor d;
    SR_TRY(sr_ops_plain_descriptor(fn, desc, &d));
    SR_CHECK_ARG(!d.transpose_b, "%s: transpose_b applies to sr_mxm only", fn);
    size_t nrows, ncols, nnz;
    if (!sr_checked_mul((size_t)A->nrows, (size_t)B->nrows, &nrows) || nrows > (size_t)INT64_MAX / 2)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld x %lld rows overflow", fn, (long long)A->nrows, (long long)B->nrows);
    if (!sr_checked_mul((size_t)A->ncols, (size_t)B->ncols, &ncols) || ncols > (size_t)INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: the product has %lld x %lld columns, beyond the 32-bit column limit", fn,
                        (long long)A->ncols, (long long)B->ncols);
    if (!sr_checked_mul((size_t)A->nnz, (size_t)B->nnz, &nnz) || nnz > (size_t)INT64_MAX / 8)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld x %lld entries overflow", fn, (long long)A->nnz, (long long)B->nnz);
    SR_TRY(sr_ops_check_mask(fn, ctx, mask, A, (int64_t)nrows, (int64_t)ncols));
    struct sr_matrix_s *old, *T = NULL, *M = NULL;
    SR_TRY(sr_ops_accumulator(fn, ctx, C, d.accumulate, (int64_t)nrows, (int64_t)ncols, A->type, A->location, &old));
    if (A->location == SR_DEVICE)
        SR_TRY(sr_cuda_kronecker(ctx, A, B, s, &T));
    else
        SR_TRY(sr_ops_on_opencl(ctx, A) ? sr_ocl_kronecker_bool(ctx, A, B, &T) : sr_cpu_kronecker(ctx, A, B, s, &T));
    if (mask) { /* the product's entries the mask allows */
        sr_status st = sr_ops_ewise(ctx, T, NULL, mask, d.mask_complement, SR_MERGE_LEFT, s, &M);
        sr_matrix_destroy(T);
        SR_TRY(st);
        T = M;
    }
    return sr_ops_finish(ctx, C, T, old, s);
}

sr_status sr_extract(sr_context ctx, sr_matrix *C, sr_matrix A, int64_t row0, int64_t col0, int64_t nrows,
                     int64_t ncols)
{
    const char *fn = "sr_extract";
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_CHECK_ARG(row0 >= 0 && nrows >= 0 && row0 <= A->nrows && nrows <= A->nrows - row0,
                 "%s: rows [%lld, %lld + %lld) are outside A's %lld rows", fn, (long long)row0, (long long)row0,
                 (long long)nrows, (long long)A->nrows);
    SR_CHECK_ARG(col0 >= 0 && ncols >= 0 && col0 <= A->ncols && ncols <= A->ncols - col0,
                 "%s: columns [%lld, %lld + %lld) are outside A's %lld columns", fn, (long long)col0, (long long)col0,
                 (long long)ncols, (long long)A->ncols);
    if (A->location == SR_DEVICE)
        return sr_cuda_extract(ctx, A, row0, col0, nrows, ncols, C);
    return sr_ops_on_opencl(ctx, A) ? sr_ocl_extract_bool(ctx, A, row0, col0, nrows, ncols, C)
                                    : sr_cpu_extract(ctx, A, row0, col0, nrows, ncols, C);
}

sr_status sr_reduce_rows(sr_context ctx, sr_matrix *v, sr_semiring s, sr_matrix A)
{
    const char *fn = "sr_reduce_rows";
    SR_CHECK_ARG(v != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    sr_type out;
    SR_TRY(sr_semiring_output_type(s, A->type, &out));
    SR_CHECK_ARG(out == A->type, "%s: %s turns %s into %s; the reduction keeps the type (for bool use or_and)", fn,
                 sr_semiring_name(s), sr_type_name(A->type), sr_type_name(out));
    if (A->location == SR_DEVICE)
        return sr_cuda_reduce_rows(ctx, A, s, v);
    return sr_ops_on_opencl(ctx, A) ? sr_ocl_reduce_rows_bool(ctx, A, v) : sr_cpu_reduce_rows(ctx, A, s, v);
}
