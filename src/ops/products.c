/* Public semiring products: argument checks, staging of operands that live elsewhere, dispatch. */
#include <string.h>

#include "../core/memory.h"
#include "../core/queued.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../opencl/opencl.h"
#include "../semiring/semiring.h"
#include "../semiring/user.h"
#include "multi_gpu.h"
#include "ops_common.h"

sr_dense sr_vector_view(void *data, int64_t n, sr_type type, sr_location location)
{
    return sr_dense_view(data, n, 1, type, SR_COL_MAJOR, location);
}

static sr_status spmm(const char *fn, sr_context ctx, const sr_dense *C, sr_matrix mask, sr_semiring s, sr_matrix A,
                      const sr_dense *B, const sr_descriptor *desc, bool queued)
{
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_check_dense(fn, B));
    SR_TRY(sr_check_dense(fn, C));
    sr_type out;
    SR_TRY(sr_semiring_output_type(s, A->type, &out));
    SR_CHECK_ARG(B->type == A->type, "%s: B has type %s but A has type %s", fn, sr_type_name(B->type),
                 sr_type_name(A->type));
    SR_CHECK_ARG(C->type == out, "%s: C has type %s but %s on %s gives %s", fn, sr_type_name(C->type),
                 sr_semiring_name(s), sr_type_name(A->type), sr_type_name(out));
    SR_CHECK_ARG(B->nrows == A->ncols, "%s: A is %lld x %lld but B has %lld rows", fn, (long long)A->nrows,
                 (long long)A->ncols, (long long)B->nrows);
    SR_CHECK_ARG(C->nrows == A->nrows && C->ncols == B->ncols, "%s: C is %lld x %lld but A B is %lld x %lld", fn,
                 (long long)C->nrows, (long long)C->ncols, (long long)A->nrows, (long long)B->ncols);
    SR_TRY(sr_ops_check_mask(fn, ctx, mask, A, C->nrows, C->ncols));
    sr_descriptor d;
    SR_TRY(sr_ops_plain_descriptor(fn, desc, &d));

    sr_dense b, c;
    void *b_owned, *c_owned;
    size_t b_bytes, c_bytes;
    SR_TRY(sr_ops_stage_dense(ctx, B, A->location, true, &b, &b_owned, &b_bytes));
    /* C is read too when accumulating or when a mask keeps old values */
    sr_status st = sr_ops_stage_dense(ctx, C, A->location, d.accumulate || mask != NULL, &c, &c_owned, &c_bytes);
    if (st == SR_SUCCESS) {
        queued = queued && !b_owned && !c_owned; /* staged: wait, then copy back and free */
        st = A->location == SR_DEVICE ? sr_cuda_spmm(A, &b, &c, mask, s, d.mask_complement, d.accumulate, queued)
             : sr_semiring_is_user((int)s) ? sr_cpu_user_spmm(A, &b, &c, mask, s, d.mask_complement, d.accumulate)
                                           : sr_cpu_spmm(A, &b, &c, mask, s, d.mask_complement, d.accumulate);
        if (st == SR_SUCCESS && c_owned) {
            size_t es = sr_type_size(C->type);
            int64_t outer = C->layout == SR_ROW_MAJOR ? C->nrows : C->ncols;
            int64_t inner = C->layout == SR_ROW_MAJOR ? C->ncols : C->nrows;
            st = sr_mem_copy2d(ctx, C->data, (size_t)C->ld * es, C->location, c.data, (size_t)c.ld * es, c.location,
                               (size_t)inner * es, (size_t)outer);
        }
        sr_mem_free(ctx, A->location, c_owned, c_bytes);
    }
    sr_mem_free(ctx, A->location, b_owned, b_bytes);
    return st;
}

sr_status sr_spmm(sr_context ctx, const sr_dense *C, sr_matrix mask, sr_semiring s, sr_matrix A, const sr_dense *B,
                  const sr_descriptor *desc)
{
    return spmm("sr_spmm", ctx, C, mask, s, A, B, desc, sr_context_queues(ctx));
}

static sr_status check_vectors(const sr_dense *x, const sr_dense *y)
{
    SR_CHECK_ARG(x != NULL && y != NULL, "sr_spmv: x or y is NULL");
    SR_CHECK_ARG(x->ncols == 1 && y->ncols == 1, "sr_spmv: x and y must be vectors (n x 1 views; see sr_vector_view), "
                 "not %lld and %lld columns", (long long)x->ncols, (long long)y->ncols);
    return SR_SUCCESS;
}

sr_status sr_spmv(sr_context ctx, const sr_dense *y, sr_matrix mask, sr_semiring s, sr_matrix A, const sr_dense *x,
                  const sr_descriptor *desc)
{
    SR_TRY(check_vectors(x, y));
    return spmm("sr_spmm", ctx, y, mask, s, A, x, desc, sr_context_queues(ctx));
}

sr_status sr_spmv_queued(sr_context ctx, const sr_dense *y, sr_matrix A, const sr_dense *x)
{
    SR_TRY(check_vectors(x, y));
    return spmm("sr_spmv", ctx, y, NULL, SR_PLUS_TIMES, A, x, NULL, true);
}

sr_status sr_ops_check_mxm_operands(const char *fn, sr_semiring s, const struct sr_matrix_s *A,
                                    const struct sr_matrix_s *B, bool transpose_b, sr_type *out)
{
    SR_TRY(sr_semiring_output_type(s, A->type, out));
    SR_CHECK_ARG(B->type == A->type, "%s: B has type %s but A has type %s", fn, sr_type_name(B->type),
                 sr_type_name(A->type));
    SR_CHECK_ARG(B->location == A->location, "%s: A lives on the %s but B on the %s (sr_matrix_copy_to moves one)", fn,
                 sr_ops_place(A->location), sr_ops_place(B->location));
    const int64_t inner = transpose_b ? B->ncols : B->nrows;
    SR_CHECK_ARG(inner == A->ncols, "%s: A is %lld x %lld but B%s has %lld rows", fn, (long long)A->nrows,
                 (long long)A->ncols, transpose_b ? "^T" : "", (long long)inner);
    return SR_SUCCESS;
}

sr_status sr_mxm(sr_context ctx, sr_matrix *C, sr_matrix mask, sr_semiring s, sr_matrix A, sr_matrix B,
                 const sr_descriptor *desc)
{
    const char *fn = "sr_mxm";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_ops_check_matrix(fn, ctx, B));
    SR_CHECK_ARG(C != NULL, "%s: the output pointer is NULL", fn);
    sr_descriptor d;
    SR_TRY(sr_ops_plain_descriptor(fn, desc, &d));
    sr_type out;
    SR_TRY(sr_ops_check_mxm_operands(fn, s, A, B, d.transpose_b, &out));
    const int64_t ncols = d.transpose_b ? B->nrows : B->ncols;
    SR_TRY(sr_ops_check_mask(fn, ctx, mask, A, A->nrows, ncols));
    struct sr_matrix_s *old;
    SR_TRY(sr_ops_accumulator(fn, ctx, C, d.accumulate, A->nrows, ncols, out, A->location, &old));
    if (ncols > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: the product has %lld columns, beyond the 32-bit limit", fn, (long long)ncols);

    struct sr_matrix_s *Bt = NULL, *T = NULL;
    if (d.transpose_b)
        SR_TRY(sr_matrix_transpose(ctx, B, &Bt));
    const struct sr_matrix_s *right = Bt ? Bt : B;
    sr_status st;
    if (A->location == SR_DEVICE && mask == NULL && sr_multi_applies(ctx, A))
        st = sr_multi_mxm(ctx, A, right, s, &T);
    else if (A->location == SR_DEVICE)
        st = sr_cuda_mxm(ctx, A, right, mask, d.mask_complement, s, out, &T);
    else if (sr_ops_on_opencl(ctx, A) && out == SR_TYPE_BOOL)
        st = sr_ocl_mxm_bool(ctx, A, right, mask, d.mask_complement, &T);
    else
        st = sr_cpu_mxm(ctx, A, right, mask, d.mask_complement, s, out, &T);
    sr_matrix_destroy(Bt);
    SR_TRY(st);
    return sr_ops_finish(ctx, C, T, old, s);
}
