#include "ops_common.h"

#include <stdio.h>

#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "../opencl/opencl.h"

const char *sr_ops_place(sr_location where) { return where == SR_DEVICE ? "device" : "host"; }

bool sr_ops_batch_shrinks(sr_status s, int64_t *rows)
{
    if (s != SR_ERROR_DEVICE_OUT_OF_MEMORY || *rows <= 1)
        return false;
    *rows = (*rows + 1) / 2;
    return true;
}

bool sr_ops_on_opencl(const struct sr_context_s *ctx, const struct sr_matrix_s *A)
{
    return ctx->backend == SR_BACKEND_OPENCL && A->location == SR_HOST && A->type == SR_TYPE_BOOL;
}

sr_status sr_ops_check_matrix(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *A)
{
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_CHECK_ARG(A != NULL, "%s: the matrix is NULL", fn);
    SR_CHECK_ARG(A->location == SR_HOST || A->ctx->device == ctx->device,
                 "%s: the matrix lives on CUDA device %d, but the context uses device %d", fn, A->ctx->device,
                 ctx->device);
    return SR_SUCCESS;
}

sr_status sr_ops_check_graph_output(const char *fn, sr_graph_mode mode, sr_type type)
{
    SR_CHECK_ARG(mode == SR_GRAPH_CONNECTIVITY || mode == SR_GRAPH_DISTANCE, "%s: unknown mode %d", fn, (int)mode);
    SR_CHECK_ARG(type == SR_TYPE_FLOAT32 || type == SR_TYPE_FLOAT64,
                 "%s: the distance type must be float32 or float64, not %s", fn, sr_type_name(type));
    return SR_SUCCESS;
}

sr_status sr_ops_accumulator(const char *fn, const struct sr_context_s *ctx, struct sr_matrix_s *const *C,
                             bool accumulate, int64_t nrows, int64_t ncols, sr_type type, sr_location where,
                             struct sr_matrix_s **old)
{
    *old = NULL;
    if (!accumulate)
        return SR_SUCCESS;
    SR_TRY(sr_ops_check_matrix(fn, ctx, *C));
    SR_CHECK_ARG((*C)->nrows == nrows && (*C)->ncols == ncols && (*C)->type == type && (*C)->location == where,
                 "%s: to accumulate, C must be a %lld x %lld %s matrix on the %s (it is %lld x %lld %s on the %s)", fn,
                 (long long)nrows, (long long)ncols, sr_type_name(type), sr_ops_place(where),
                 (long long)(*C)->nrows, (long long)(*C)->ncols, sr_type_name((*C)->type),
                 sr_ops_place((*C)->location));
    *old = *C;
    return SR_SUCCESS;
}

sr_status sr_ops_ewise(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                       const struct sr_matrix_s *mask, bool complement, sr_merge merge, sr_semiring s,
                       struct sr_matrix_s **C)
{
    if (A->location == SR_DEVICE)
        return sr_cuda_ewise(ctx, A, B, mask, complement, merge, s, C);
    return sr_ops_on_opencl(ctx, A) ? sr_ocl_ewise_bool(ctx, A, B, mask, complement, merge, C)
                                    : sr_cpu_ewise(ctx, A, B, mask, complement, merge, s, C);
}

sr_status sr_ops_finish(struct sr_context_s *ctx, struct sr_matrix_s **C, struct sr_matrix_s *T,
                        struct sr_matrix_s *old, sr_semiring s)
{
    if (!old) {
        *C = T;
        return SR_SUCCESS;
    }
    struct sr_matrix_s *U = NULL;
    sr_status st = sr_ops_ewise(ctx, old, T, NULL, false, SR_MERGE_UNION, s, &U);
    sr_matrix_destroy(T);
    SR_TRY(st);
    sr_matrix_destroy(old);
    *C = U;
    return SR_SUCCESS;
}

sr_status sr_ops_check_vector(const char *fn, const char *name, const sr_dense *d, int64_t n)
{
    SR_CHECK_ARG(d != NULL, "%s: %s is NULL", fn, name);
    SR_TRY(sr_check_dense(fn, d));
    char rows[24] = "n"; /* any length */
    if (n >= 0)
        snprintf(rows, sizeof rows, "%lld", (long long)n);
    SR_CHECK_ARG(d->ncols == 1 && (n < 0 || d->nrows == n) && (d->layout == SR_COL_MAJOR || d->ld == 1),
                 "%s: %s must be a contiguous %s x 1 vector (sr_vector_view), not %lld x %lld", fn, name, rows,
                 (long long)d->nrows, (long long)d->ncols);
    return SR_SUCCESS;
}

sr_status sr_ops_check_mask(const char *fn, const struct sr_context_s *ctx, const struct sr_matrix_s *mask,
                            const struct sr_matrix_s *A, int64_t nrows, int64_t ncols)
{
    if (mask == NULL)
        return SR_SUCCESS;
    SR_TRY(sr_ops_check_matrix(fn, ctx, mask));
    SR_CHECK_ARG(mask->nrows == nrows && mask->ncols == ncols, "%s: the mask is %lld x %lld but the output is %lld x %lld",
                 fn, (long long)mask->nrows, (long long)mask->ncols, (long long)nrows, (long long)ncols);
    SR_CHECK_ARG(mask->location == A->location, "%s: the mask lives on the %s but A on the %s (sr_matrix_copy_to moves it)",
                 fn, sr_ops_place(mask->location), sr_ops_place(A->location));
    return SR_SUCCESS;
}


sr_descriptor sr_ops_descriptor(const sr_descriptor *desc)
{
    const sr_descriptor none = {0};
    return desc ? *desc : none;
}

sr_status sr_ops_plain_descriptor(const char *fn, const sr_descriptor *desc, sr_descriptor *d)
{
    *d = sr_ops_descriptor(desc);
    SR_CHECK_ARG(!d->replace, "%s: the descriptor's replace applies to sr_mxm_bits only", fn);
    SR_CHECK_ARG(!d->sample_pattern, "%s: the descriptor's sample_pattern applies to the SDDMM calls only", fn);
    SR_CHECK_ARG(d->precision == SR_PRECISION_EXACT, "%s: the descriptor's precision applies to the SDDMM calls only",
                 fn);
    return SR_SUCCESS;
}

/* A dense view in `where`: the caller's own if it is there already, else a packed copy (copied in
 * when `copy_in`). *owned is what to free afterwards (NULL for the caller's own). */
sr_status sr_ops_stage_dense(struct sr_context_s *ctx, const sr_dense *v, sr_location where, bool copy_in,
                             sr_dense *staged, void **owned, size_t *owned_bytes)
{
    *staged = *v;
    *owned = NULL;
    *owned_bytes = 0;
    if (v->location == where)
        return SR_SUCCESS;
    *staged = sr_dense_view(NULL, v->nrows, v->ncols, v->type, v->layout, where);
    size_t es = sr_type_size(v->type);
    int64_t outer = v->layout == SR_ROW_MAJOR ? v->nrows : v->ncols, inner = v->layout == SR_ROW_MAJOR ? v->ncols : v->nrows;
    *owned_bytes = (size_t)outer * (size_t)staged->ld * es;
    SR_TRY(sr_mem_alloc(ctx, where, *owned_bytes, owned));
    staged->data = *owned;
    if (!copy_in)
        return SR_SUCCESS;
    sr_status s = sr_mem_copy2d(ctx, staged->data, (size_t)staged->ld * es, where, v->data, (size_t)v->ld * es,
                                v->location, (size_t)inner * es, (size_t)outer);
    if (s != SR_SUCCESS) {
        sr_mem_free(ctx, where, *owned, *owned_bytes);
        *owned = NULL;
    }
    return s;
}

void sr_ops_release_rows(struct sr_context_s *ctx, sr_staged_rows *r)
{
    sr_mem_free(ctx, r->where, r->owned, r->bytes);
    r->owned = NULL;
}

sr_status sr_ops_stage_rows(struct sr_context_s *ctx, const sr_dense *v, sr_location where, sr_staged_rows *r)
{
    r->where = where;
    r->owned = NULL;
    r->bytes = 0;
    r->data = v->data;
    if (v->nrows == 0 || v->ncols == 0) /* nothing to read (K = 0 or no rows) */
        return SR_SUCCESS;
    const bool packed_rows = v->layout == SR_ROW_MAJOR && (v->ld == v->ncols || v->nrows <= 1);
    if (v->location == where && packed_rows)
        return SR_SUCCESS;
    sr_dense here;
    void *owned;
    size_t bytes;
    SR_TRY(sr_ops_stage_dense(ctx, v, where, true, &here, &owned, &bytes));
    if (here.layout == SR_ROW_MAJOR && (here.ld == here.ncols || here.nrows <= 1)) {
        r->data = here.data;
        r->owned = owned;
        r->bytes = bytes;
        return SR_SUCCESS;
    }
    /* column-major (or padded rows): one copy into a packed row-major array */
    size_t rows_bytes = (size_t)v->nrows * (size_t)v->ncols * sr_type_size(v->type);
    void *rows = NULL;
    sr_status st = sr_mem_alloc(ctx, where, rows_bytes ? rows_bytes : 1, &rows);
    const size_t es = sr_type_size(v->type);
    if (st == SR_SUCCESS && here.layout == SR_ROW_MAJOR) /* padded rows: packed by a strided copy */
        st = sr_mem_copy2d(ctx, rows, (size_t)v->ncols * es, where, here.data, (size_t)here.ld * es, where,
                           (size_t)v->ncols * es, (size_t)v->nrows);
    else if (st == SR_SUCCESS && where == SR_DEVICE)
        st = sr_cuda_dense_row_major(ctx, &here, rows);
    else if (st == SR_SUCCESS)
        sr_cpu_dense_row_major(&here, rows, sr_context_threads(ctx));
    sr_mem_free(ctx, where, owned, bytes);
    if (st != SR_SUCCESS) {
        sr_mem_free(ctx, where, rows, rows_bytes ? rows_bytes : 1);
        return st;
    }
    r->data = rows;
    r->owned = rows;
    r->bytes = rows_bytes ? rows_bytes : 1;
    return SR_SUCCESS;
}
