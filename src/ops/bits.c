/* Public bit-packed Boolean blocks: views, owned blocks, conversion to and from sparse
 * matrices, OR and count, and the product Y = A or.and X. */
#include <string.h>

#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

sr_bits sr_bits_view(uint64_t *words, int64_t nrows, int64_t ncols, sr_location location)
{
    sr_bits b = {words, nrows, ncols, (ncols + 63) / 64, location};
    return b;
}

/* A view is usable: data present when not empty, sizes sane, ld wide enough. */
static sr_status check_bits(const char *fn, const char *what, const sr_bits *X)
{
    SR_CHECK_ARG(X != NULL, "%s: %s is NULL", fn, what);
    SR_CHECK_ARG(X->nrows >= 0 && X->ncols >= 0, "%s: %s has a negative size (%lld x %lld)", fn, what,
                 (long long)X->nrows, (long long)X->ncols);
    SR_CHECK_ARG(X->location == SR_HOST || X->location == SR_DEVICE, "%s: %s has an unknown location %d", fn, what,
                 (int)X->location);
    SR_CHECK_ARG(X->ld >= (X->ncols + 63) / 64, "%s: %s has %lld words a row, but %lld columns need %lld", fn, what,
                 (long long)X->ld, (long long)X->ncols, (long long)((X->ncols + 63) / 64));
    size_t words;
    if (!sr_checked_mul((size_t)X->nrows, (size_t)X->ld, &words) || words > SIZE_MAX / 8)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %s's %lld x %lld words overflow", fn, what, (long long)X->nrows,
                        (long long)X->ld);
    SR_CHECK_ARG(X->words != NULL || X->nrows == 0 || X->ncols == 0, "%s: %s has no data", fn, what);
    return SR_SUCCESS;
}

sr_status sr_bits_alloc(sr_context ctx, sr_bits *X, int64_t nrows, int64_t ncols, sr_location where)
{
    const char *fn = "sr_bits_alloc";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(X != NULL, "%s: the output view is NULL", fn);
    SR_TRY(sr_check_location(fn, where));
    SR_CHECK_ARG(nrows >= 0 && ncols >= 0, "%s: negative size %lld x %lld", fn, (long long)nrows, (long long)ncols);
    sr_bits b = sr_bits_view(NULL, nrows, ncols, where);
    void *words = NULL;
    SR_TRY(sr_mem_alloc_array(ctx, where, (size_t)nrows, (size_t)b.ld * sizeof(uint64_t), &words));
    b.words = words;
    sr_status st = SR_SUCCESS;
    if (where == SR_DEVICE)
        st = sr_cuda_bits_zero(ctx, &b);
    else if (words)
        memset(words, 0, (size_t)nrows * (size_t)b.ld * sizeof(uint64_t));
    if (st != SR_SUCCESS) {
        sr_mem_free(ctx, where, words, (size_t)nrows * (size_t)b.ld * sizeof(uint64_t));
        return st;
    }
    *X = b;
    return SR_SUCCESS;
}

sr_status sr_bits_free(sr_context ctx, sr_bits *X)
{
    SR_CHECK_ARG(ctx != NULL, "sr_bits_free: the context is NULL");
    if (X == NULL)
        return SR_SUCCESS;
    sr_mem_free(ctx, X->location, X->words, (size_t)X->nrows * (size_t)X->ld * sizeof(uint64_t));
    *X = sr_bits_view(NULL, 0, 0, X->location);
    return SR_SUCCESS;
}

sr_status sr_bits_from_matrix(sr_context ctx, const sr_bits *X, sr_matrix A)
{
    const char *fn = "sr_bits_from_matrix";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(check_bits(fn, "X", X));
    SR_CHECK_ARG(X->nrows == A->nrows && X->ncols == A->ncols, "%s: X is %lld x %lld but A is %lld x %lld", fn,
                 (long long)X->nrows, (long long)X->ncols, (long long)A->nrows, (long long)A->ncols);
    SR_CHECK_ARG(X->location == A->location, "%s: X lives on the %s but A on the %s", fn, sr_ops_place(X->location),
                 sr_ops_place(A->location));
    return A->location == SR_DEVICE ? sr_cuda_bits_from_matrix(ctx, A, X) : sr_cpu_bits_from_matrix(ctx, A, X);
}

sr_status sr_matrix_from_bits(sr_context ctx, sr_matrix *A, const sr_bits *X)
{
    const char *fn = "sr_matrix_from_bits";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(A != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(check_bits(fn, "X", X));
    if (X->ncols > INT32_MAX)
        return sr_error(SR_ERROR_OVERFLOW, "%s: %lld columns are beyond the 32-bit column limit", fn,
                        (long long)X->ncols);
    if (X->location == SR_DEVICE)
        SR_TRY(sr_context_require_device(ctx));
    return X->location == SR_DEVICE ? sr_cuda_matrix_from_bits(ctx, X, A) : sr_cpu_matrix_from_bits(ctx, X, A);
}

static sr_status check_same_block(const char *fn, const char *what, const sr_bits *Y, const sr_bits *X)
{
    SR_CHECK_ARG(X->nrows == Y->nrows && X->ncols == Y->ncols, "%s: %s is %lld x %lld but Y is %lld x %lld", fn, what,
                 (long long)X->nrows, (long long)X->ncols, (long long)Y->nrows, (long long)Y->ncols);
    SR_CHECK_ARG(X->location == Y->location, "%s: %s lives on the %s but Y on the %s", fn, what, sr_ops_place(X->location),
                 sr_ops_place(Y->location));
    return SR_SUCCESS;
}

sr_status sr_bits_or(sr_context ctx, const sr_bits *Y, const sr_bits *X, int64_t *count)
{
    const char *fn = "sr_bits_or";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_bits(fn, "Y", Y));
    SR_TRY(check_bits(fn, "X", X));
    SR_TRY(check_same_block(fn, "X", Y, X));
    if (Y->location == SR_DEVICE)
        SR_TRY(sr_context_require_device(ctx));
    return Y->location == SR_DEVICE ? sr_cuda_bits_or(ctx, Y, X, count) : sr_cpu_bits_or(ctx, Y, X, count);
}

sr_status sr_bits_count(sr_context ctx, const sr_bits *X, int64_t *count)
{
    const char *fn = "sr_bits_count";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(count != NULL, "%s: the output pointer is NULL", fn);
    SR_TRY(check_bits(fn, "X", X));
    if (X->location == SR_DEVICE)
        SR_TRY(sr_context_require_device(ctx));
    return X->location == SR_DEVICE ? sr_cuda_bits_or(ctx, X, NULL, count) : sr_cpu_bits_or(ctx, X, NULL, count);
}

/* Whether two views' words overlap in memory. */
static bool overlaps(const sr_bits *a, const sr_bits *b)
{
    if (!a->words || !b->words || a->location != b->location)
        return false;
    const char *a0 = (const char *)a->words, *a1 = a0 + (size_t)a->nrows * (size_t)a->ld * 8;
    const char *b0 = (const char *)b->words, *b1 = b0 + (size_t)b->nrows * (size_t)b->ld * 8;
    return a0 < b1 && b0 < a1;
}

sr_status sr_mxm_bits(sr_context ctx, const sr_bits *Y, const sr_bits *mask, sr_matrix A, const sr_bits *X,
                      const sr_descriptor *desc, int64_t *count)
{
    const char *fn = "sr_mxm_bits";
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(check_bits(fn, "Y", Y));
    SR_TRY(check_bits(fn, "X", X));
    SR_CHECK_ARG(A->type == SR_TYPE_BOOL, "%s: A must be bool, not %s (sr_matrix_cast makes a pattern)", fn,
                 sr_type_name(A->type));
    SR_CHECK_ARG(X->nrows == A->ncols, "%s: A is %lld x %lld but X has %lld rows", fn, (long long)A->nrows,
                 (long long)A->ncols, (long long)X->nrows);
    SR_CHECK_ARG(Y->nrows == A->nrows && Y->ncols == X->ncols, "%s: Y is %lld x %lld but A X is %lld x %lld", fn,
                 (long long)Y->nrows, (long long)Y->ncols, (long long)A->nrows, (long long)X->ncols);
    SR_CHECK_ARG(X->location == A->location && Y->location == A->location,
                 "%s: A lives on the %s but X on the %s and Y on the %s", fn, sr_ops_place(A->location), sr_ops_place(X->location),
                 sr_ops_place(Y->location));
    if (mask) {
        SR_TRY(check_bits(fn, "the mask", mask));
        SR_TRY(check_same_block(fn, "the mask", Y, mask));
        SR_CHECK_ARG(!overlaps(Y, mask), "%s: Y and the mask share memory", fn);
    }
    SR_CHECK_ARG(!overlaps(Y, X), "%s: Y and X share memory (write the product elsewhere, then sr_bits_or)", fn);
    sr_descriptor d = sr_ops_descriptor(desc);
    SR_CHECK_ARG(!d.transpose_b, "%s: transpose_b applies to sr_mxm only", fn);
    SR_CHECK_ARG(!d.sample_pattern, "%s: sample_pattern applies to the SDDMM calls only", fn);
    SR_CHECK_ARG(d.precision == SR_PRECISION_EXACT, "%s: precision applies to the SDDMM calls only", fn);
    sr_bits_update u = {d.mask_complement, d.replace, d.accumulate};
    return A->location == SR_DEVICE ? sr_cuda_mxm_bits(ctx, A, Y, mask, X, &u, count)
                                    : sr_cpu_mxm_bits(ctx, A, Y, mask, X, &u, count);
}
