/* The Boolean operations of the OpenCL backend (kernels/bool.cl): operands are copied to the
 * device, each output row is counted, the host scans the counts into row pointers, and the rows
 * are filled in batches that fit one device buffer and copied back into the result. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/memory.h"
#include "../cpu/cpu.h" /* sr_cpu_prefix_sum: the host scans the row counts */
#include "ocl_runtime.h"
#include "opencl.h"

/* A matrix's pattern on the device. */
typedef struct {
    cl_mem rowptr, colind;
} ocl_pattern;

static sr_status pattern_upload(sr_ocl *o, const struct sr_matrix_s *A, ocl_pattern *p)
{
    p->rowptr = p->colind = NULL;
    if (!A) { /* an absent operand (no mask): placeholders the kernels never read */
        SR_TRY(sr_ocl_upload(o, NULL, 0, &p->rowptr));
        return sr_ocl_upload(o, NULL, 0, &p->colind);
    }
    SR_TRY(sr_ocl_upload(o, A->rowptr, sr_matrix_rowptr_bytes(A), &p->rowptr));
    return sr_ocl_upload(o, A->colind, (size_t)A->nnz * sizeof(int32_t), &p->colind);
}

static void pattern_release(ocl_pattern *p)
{
    sr_ocl_release(p->rowptr);
    sr_ocl_release(p->colind);
}

/* The kernels' mask mode: 0 none, 1 the mask, 2 its complement. */
static cl_int mask_mode_of(const struct sr_matrix_s *mask, bool complement) { return mask ? (complement ? 2 : 1) : 0; }

/* One pass of a row kernel over rows [r_begin, r_end): counting (fill 0, into counts) or filling
 * (c_colind holds the batch's entries, the first at C's entry c_base). The buffers a pass does not
 * use name one it does: every kernel argument is a valid buffer. */
typedef struct {
    cl_long r_begin, r_end;
    cl_int fill;
    cl_mem counts, c_rowptr, c_colind;
    cl_long c_base;
} row_pass;
typedef sr_status (*row_launch)(sr_ocl *o, const void *op, const row_pass *pass);

/* Builds C (nrows set, rowptr allocated) by `launch`: a count pass unless C->rowptr already holds
 * the row pointers (`counted`), then fill passes in batches of whole rows that fit one buffer. */
static sr_status build_rows(sr_ocl *o, struct sr_context_s *ctx, struct sr_matrix_s *C, bool counted,
                            row_launch launch, const void *op)
{
    const int64_t n = C->nrows;
    row_pass pass = {0, n, 0, NULL, NULL, NULL, 0};
    sr_status s = SR_SUCCESS;
    if (!counted) {
        s = sr_ocl_alloc(o, (size_t)n * sizeof(int64_t), true, &pass.counts); /* rows not visited count 0 */
        pass.c_rowptr = pass.c_colind = pass.counts;
        if (s == SR_SUCCESS)
            s = launch(o, op, &pass);
        if (s == SR_SUCCESS)
            s = sr_ocl_download(o, pass.counts, C->rowptr + 1, (size_t)n * sizeof(int64_t));
        sr_ocl_release(pass.counts);
        SR_TRY(s);
        sr_cpu_prefix_sum(C->rowptr, n);
    }
    SR_TRY(sr_matrix_alloc_entries(C, C->rowptr[n]));
    if (C->rowptr[n] == 0)
        return SR_SUCCESS;
    SR_TRY(sr_ocl_upload(o, C->rowptr, sr_matrix_rowptr_bytes(C), &pass.c_rowptr));
    pass.counts = pass.c_rowptr;
    /* a batch's entries fit one buffer and the workspace limit (a longer row goes alone) */
    size_t limit = sr_context_workspace(ctx, SR_HOST);
    if (limit > o->dev->max_alloc)
        limit = o->dev->max_alloc;
    const int64_t most = (int64_t)(limit / sizeof(int32_t)) > 0 ? (int64_t)(limit / sizeof(int32_t)) : 1;
    for (int64_t r0 = 0; r0 < n && s == SR_SUCCESS;) {
        int64_t lo = r0 + 1, hi = n; /* the last row end whose entries fit, found by bisection */
        while (lo < hi) {
            const int64_t mid = lo + (hi - lo + 1) / 2;
            if (C->rowptr[mid] - C->rowptr[r0] <= most)
                lo = mid;
            else
                hi = mid - 1;
        }
        const int64_t r1 = lo, entries = C->rowptr[r1] - C->rowptr[r0]; /* one row at least */
        if ((size_t)entries > o->dev->max_alloc / sizeof(int32_t)) {
            s = sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY, "OpenCL: row %lld of the result has %lld entries, more than "
                         "one device buffer holds (%zu bytes)", (long long)r0, (long long)entries, o->dev->max_alloc);
            break;
        }
        pass.r_begin = r0;
        pass.r_end = r1;
        pass.fill = 1;
        pass.c_base = C->rowptr[r0];
        s = sr_ocl_alloc(o, (size_t)entries * sizeof(int32_t), false, &pass.c_colind);
        if (s == SR_SUCCESS)
            s = launch(o, op, &pass);
        if (s == SR_SUCCESS)
            s = sr_ocl_download(o, pass.c_colind, C->colind + C->rowptr[r0], (size_t)entries * sizeof(int32_t));
        sr_ocl_release(pass.c_colind);
        pass.c_colind = NULL;
        r0 = r1;
    }
    sr_ocl_release(pass.c_rowptr);
    return s;
}

/* A new host bool matrix of nrows x ncols whose entries build_rows fills. */
static sr_status new_result(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    return sr_matrix_alloc(ctx, nrows, ncols, 0, SR_TYPE_BOOL, SR_HOST, C);
}

/* Builds *out by build_rows; on failure nothing is left behind. */
static sr_status build_result(struct sr_context_s *ctx, int64_t nrows, int64_t ncols, bool (*counts_on_host)(
                                  struct sr_matrix_s *, const void *), row_launch launch, const void *op,
                              struct sr_matrix_s **out)
{
    struct sr_matrix_s *C;
    SR_TRY(new_result(ctx, nrows, ncols, &C));
    const bool counted = counts_on_host && counts_on_host(C, op);
    sr_status s = build_rows(sr_ocl_of(ctx), ctx, C, counted, launch, op);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return s;
    }
    *out = C;
    return SR_SUCCESS;
}

/* ------------------------------------------------------------------ mxm */

typedef struct {
    ocl_pattern a, b, m;
    cl_int mask_mode, ncols;
    cl_mem bounds;             /* each row's product bound */
    cl_mem short_rows, rows;   /* rows of 1 to 32 products (a work-item each), of more (a group each) */
    cl_long n_short, n_rows;
} mxm_op;

/* Work-groups of one group launch: each takes rows in turn, so a few thousand keep any device
 * busy without a launch too large for small devices. */
static size_t row_groups(int64_t rows) { return (size_t)(rows < 16384 ? (rows > 0 ? rows : 1) : 16384); }

#define SHORT_ROW 32 /* as in bool.cl */

/* A long row's scale: its bound's power of two. */
static int scale_of(int64_t bound) { return 63 - __builtin_clzll((unsigned long long)bound); }

/* The rows' product bounds (on the device, then here) and the two row lists: rows of at most
 * SHORT_ROW products, and the rest, heaviest first (by powers of two of their bounds) so the
 * groups that take them in turn do not end on a hub. Rows of no products are in neither. */
static sr_status mxm_plan(sr_ocl *o, const struct sr_matrix_s *A, mxm_op *op)
{
    const cl_long nrows = A->nrows;
    SR_TRY(sr_ocl_alloc(o, (size_t)nrows * sizeof(int64_t), false, &op->bounds));
    const sr_ocl_arg args[] = {SR_OCL_ARG(op->a.rowptr), SR_OCL_ARG(op->a.colind), SR_OCL_ARG(op->b.rowptr),
                               SR_OCL_ARG(nrows), SR_OCL_ARG(op->bounds)};
    SR_TRY(sr_ocl_run(o, "mxm_bounds", (size_t)nrows, 0, 5, args));
    int64_t *bounds = sr_malloc((size_t)(nrows + 1) * sizeof(int64_t)), *lists = sr_malloc((size_t)(nrows + 1) * sizeof(int64_t));
    if (!bounds || !lists) {
        free(bounds), free(lists);
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "sr_mxm (OpenCL): out of host memory for %lld row bounds",
                        (long long)nrows);
    }
    sr_status s = sr_ocl_download(o, op->bounds, bounds, (size_t)nrows * sizeof(int64_t));
    int64_t per_scale[64] = {0}, n_short = 0;
    for (int64_t i = 0; s == SR_SUCCESS && i < nrows; i++) {
        if (bounds[i] > SHORT_ROW)
            per_scale[scale_of(bounds[i])]++;
        else if (bounds[i] > 0)
            lists[n_short++] = i;
    }
    int64_t next[64], at = n_short; /* the long rows after the short ones, largest scale first */
    for (int b = 63; b >= 0; b--) {
        next[b] = at;
        at += per_scale[b];
    }
    for (int64_t i = 0; s == SR_SUCCESS && i < nrows; i++)
        if (bounds[i] > SHORT_ROW)
            lists[next[scale_of(bounds[i])]++] = i;
    op->n_short = n_short;
    op->n_rows = at - n_short;
    if (s == SR_SUCCESS)
        s = sr_ocl_upload(o, lists, (size_t)n_short * sizeof(int64_t), &op->short_rows);
    if (s == SR_SUCCESS)
        s = sr_ocl_upload(o, lists + n_short, (size_t)op->n_rows * sizeof(int64_t), &op->rows);
    free(bounds);
    free(lists);
    return s;
}

static sr_status mxm_launch(sr_ocl *o, const void *opaque, const row_pass *p)
{
    const mxm_op *op = opaque;
    const size_t g = o->dev->group;
    const sr_ocl_arg short_args[] = {
        SR_OCL_ARG(op->short_rows), SR_OCL_ARG(op->n_short),  SR_OCL_ARG(op->a.rowptr), SR_OCL_ARG(op->a.colind),
        SR_OCL_ARG(op->b.rowptr),   SR_OCL_ARG(op->b.colind), SR_OCL_ARG(op->m.rowptr), SR_OCL_ARG(op->m.colind),
        SR_OCL_ARG(op->mask_mode),  SR_OCL_ARG(p->r_begin),   SR_OCL_ARG(p->r_end),     SR_OCL_ARG(p->fill),
        SR_OCL_ARG(p->counts),         SR_OCL_ARG(p->c_rowptr),     SR_OCL_ARG(p->c_colind),     SR_OCL_ARG(p->c_base)};
    SR_TRY(sr_ocl_run(o, "mxm_short_rows", (size_t)op->n_short, 0, 16, short_args));
    const sr_ocl_arg args[] = {SR_OCL_ARG(op->rows),      SR_OCL_ARG(op->n_rows),    SR_OCL_ARG(op->bounds),
                               SR_OCL_ARG(op->a.rowptr),  SR_OCL_ARG(op->a.colind),  SR_OCL_ARG(op->b.rowptr),
                               SR_OCL_ARG(op->b.colind),  SR_OCL_ARG(op->m.rowptr),  SR_OCL_ARG(op->m.colind),
                               SR_OCL_ARG(op->mask_mode), SR_OCL_ARG(op->ncols),     SR_OCL_ARG(p->r_begin),
                               SR_OCL_ARG(p->r_end),      SR_OCL_ARG(p->fill),       SR_OCL_ARG(p->counts),
                               SR_OCL_ARG(p->c_rowptr),      SR_OCL_ARG(p->c_colind),      SR_OCL_ARG(p->c_base)};
    return op->n_rows ? sr_ocl_run(o, "mxm_rows", row_groups(op->n_rows) * g, g, 18, args) : SR_SUCCESS;
}

sr_status sr_ocl_mxm_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                          const struct sr_matrix_s *mask, bool complement, struct sr_matrix_s **C)
{
    sr_ocl *o = sr_ocl_of(ctx);
    mxm_op op;
    memset(&op, 0, sizeof op);
    op.mask_mode = mask_mode_of(mask, complement);
    op.ncols = (cl_int)B->ncols;
    sr_status s = pattern_upload(o, A, &op.a);
    if (s == SR_SUCCESS)
        s = pattern_upload(o, B, &op.b);
    if (s == SR_SUCCESS)
        s = pattern_upload(o, mask, &op.m);
    if (s == SR_SUCCESS)
        s = mxm_plan(o, A, &op);
    if (s == SR_SUCCESS)
        s = build_result(ctx, A->nrows, B->ncols, NULL, mxm_launch, &op, C);
    pattern_release(&op.a);
    pattern_release(&op.b);
    pattern_release(&op.m);
    sr_ocl_release(op.bounds);
    sr_ocl_release(op.short_rows);
    sr_ocl_release(op.rows);
    return s;
}

/* ------------------------------------------------------------------ element-wise */

typedef struct {
    ocl_pattern a, b, m;
    cl_int mask_mode, merge;
} ewise_op;

static sr_status ewise_launch(sr_ocl *o, const void *opaque, const row_pass *p)
{
    const ewise_op *op = opaque;
    const sr_ocl_arg args[] = {SR_OCL_ARG(op->a.rowptr), SR_OCL_ARG(op->a.colind), SR_OCL_ARG(op->b.rowptr),
                               SR_OCL_ARG(op->b.colind), SR_OCL_ARG(op->m.rowptr), SR_OCL_ARG(op->m.colind),
                               SR_OCL_ARG(op->mask_mode), SR_OCL_ARG(op->merge), SR_OCL_ARG(p->r_begin),
                               SR_OCL_ARG(p->r_end), SR_OCL_ARG(p->fill), SR_OCL_ARG(p->counts),
                               SR_OCL_ARG(p->c_rowptr), SR_OCL_ARG(p->c_colind), SR_OCL_ARG(p->c_base)};
    return sr_ocl_run(o, "ewise_bool", (size_t)(p->r_end - p->r_begin), 0, 15, args);
}

sr_status sr_ocl_ewise_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                            const struct sr_matrix_s *mask, bool complement, sr_merge merge, struct sr_matrix_s **C)
{
    sr_ocl *o = sr_ocl_of(ctx);
    ewise_op op = {{NULL, NULL}, {NULL, NULL}, {NULL, NULL}, mask_mode_of(mask, complement), (cl_int)merge};
    sr_status s = pattern_upload(o, A, &op.a);
    if (s == SR_SUCCESS)
        s = pattern_upload(o, merge == SR_MERGE_LEFT ? NULL : B, &op.b);
    if (s == SR_SUCCESS)
        s = pattern_upload(o, mask, &op.m);
    if (s == SR_SUCCESS)
        s = build_result(ctx, A->nrows, A->ncols, NULL, ewise_launch, &op, C);
    pattern_release(&op.a);
    pattern_release(&op.b);
    pattern_release(&op.m);
    return s;
}

/* ------------------------------------------------------------------ Kronecker */

typedef struct {
    const struct sr_matrix_s *A, *B;
    ocl_pattern a, b;
} kron_op;

/* Row i·p + k of A ⊗ B has len_A(i)·len_B(k) entries: the row pointers need no pass. */
static bool kron_rows(struct sr_matrix_s *C, const void *opaque)
{
    const kron_op *op = opaque;
    const int64_t p = op->B->nrows;
    C->rowptr[0] = 0;
    for (int64_t r = 0; r < C->nrows; r++) {
        const int64_t i = r / p, k = r % p;
        C->rowptr[r + 1] = C->rowptr[r] + (op->A->rowptr[i + 1] - op->A->rowptr[i]) *
                                              (op->B->rowptr[k + 1] - op->B->rowptr[k]);
    }
    return true;
}

static sr_status kron_launch(sr_ocl *o, const void *opaque, const row_pass *p)
{
    const kron_op *op = opaque;
    const cl_long rows_b = op->B->nrows;
    const cl_int cols_b = (cl_int)op->B->ncols;
    const sr_ocl_arg args[] = {SR_OCL_ARG(op->a.rowptr), SR_OCL_ARG(op->a.colind), SR_OCL_ARG(op->b.rowptr),
                               SR_OCL_ARG(op->b.colind), SR_OCL_ARG(rows_b),       SR_OCL_ARG(cols_b),
                               SR_OCL_ARG(p->r_begin),   SR_OCL_ARG(p->r_end),     SR_OCL_ARG(p->c_rowptr),
                               SR_OCL_ARG(p->c_colind),  SR_OCL_ARG(p->c_base)};
    return sr_ocl_run(o, "kronecker_bool", (size_t)(p->r_end - p->r_begin), 0, 11, args);
}

sr_status sr_ocl_kronecker_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                                struct sr_matrix_s **C)
{
    sr_ocl *o = sr_ocl_of(ctx);
    kron_op op = {A, B, {NULL, NULL}, {NULL, NULL}};
    sr_status s = pattern_upload(o, A, &op.a);
    if (s == SR_SUCCESS)
        s = pattern_upload(o, B, &op.b);
    if (s == SR_SUCCESS)
        s = build_result(ctx, A->nrows * B->nrows, A->ncols * B->ncols, kron_rows, kron_launch, &op, C);
    pattern_release(&op.a);
    pattern_release(&op.b);
    return s;
}

/* ------------------------------------------------------------------ extract and reduce */

typedef struct {
    ocl_pattern a;
    cl_long row0;
    cl_int col0, ncols;
} extract_op;

static sr_status extract_launch(sr_ocl *o, const void *opaque, const row_pass *p)
{
    const extract_op *op = opaque;
    const sr_ocl_arg args[] = {SR_OCL_ARG(op->a.rowptr), SR_OCL_ARG(op->a.colind), SR_OCL_ARG(op->row0),
                               SR_OCL_ARG(op->col0),     SR_OCL_ARG(op->ncols),    SR_OCL_ARG(p->r_begin),
                               SR_OCL_ARG(p->r_end),     SR_OCL_ARG(p->fill),      SR_OCL_ARG(p->counts),
                               SR_OCL_ARG(p->c_rowptr),     SR_OCL_ARG(p->c_colind),     SR_OCL_ARG(p->c_base)};
    return sr_ocl_run(o, "extract_bool", (size_t)(p->r_end - p->r_begin), 0, 12, args);
}

sr_status sr_ocl_extract_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, int64_t row0, int64_t col0,
                              int64_t nrows, int64_t ncols, struct sr_matrix_s **C)
{
    sr_ocl *o = sr_ocl_of(ctx);
    extract_op op = {{NULL, NULL}, row0, (cl_int)col0, (cl_int)ncols};
    sr_status s = pattern_upload(o, A, &op.a);
    if (s == SR_SUCCESS)
        s = build_result(ctx, nrows, ncols, NULL, extract_launch, &op, C);
    pattern_release(&op.a);
    return s;
}

sr_status sr_ocl_reduce_rows_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s **v)
{
    sr_ocl *o = sr_ocl_of(ctx);
    struct sr_matrix_s *V;
    SR_TRY(new_result(ctx, A->nrows, 1, &V));
    cl_mem rowptr = NULL, counts = NULL;
    const cl_long nrows = A->nrows;
    sr_status s = sr_ocl_upload(o, A->rowptr, sr_matrix_rowptr_bytes(A), &rowptr);
    if (s == SR_SUCCESS)
        s = sr_ocl_alloc(o, (size_t)nrows * sizeof(int64_t), false, &counts);
    if (s == SR_SUCCESS) {
        const sr_ocl_arg args[] = {SR_OCL_ARG(rowptr), SR_OCL_ARG(nrows), SR_OCL_ARG(counts)};
        s = sr_ocl_run(o, "reduce_rows_bool", (size_t)nrows, 0, 3, args);
    }
    if (s == SR_SUCCESS)
        s = sr_ocl_download(o, counts, V->rowptr + 1, (size_t)nrows * sizeof(int64_t));
    sr_ocl_release(rowptr);
    sr_ocl_release(counts);
    if (s == SR_SUCCESS)
        sr_cpu_prefix_sum(V->rowptr, nrows);
    if (s == SR_SUCCESS && (s = sr_matrix_alloc_entries(V, V->rowptr[nrows])) == SR_SUCCESS && V->nnz > 0)
        memset(V->colind, 0, (size_t)V->nnz * sizeof(int32_t)); /* every entry is in column 0 */
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(V);
        return s;
    }
    *v = V;
    return SR_SUCCESS;
}

/* ------------------------------------------------------------------ transpose */

/* Sorts the rows of a pattern on the device (row pointers C->rowptr here, t_rowptr there): short
 * rows a work-item each, the longer ones, listed here, a work-group each. */
static sr_status sort_rows(sr_ocl *o, const struct sr_matrix_s *C, cl_mem t_rowptr, cl_mem t_colind)
{
    const cl_long nrows = C->nrows;
    const sr_ocl_arg short_args[] = {SR_OCL_ARG(t_rowptr), SR_OCL_ARG(t_colind), SR_OCL_ARG(nrows)};
    SR_TRY(sr_ocl_run(o, "sort_short_rows", (size_t)nrows, 0, 3, short_args));
    int64_t *rows = sr_malloc((size_t)(nrows + 1) * sizeof(int64_t));
    if (!rows)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "OpenCL: out of host memory for a row list");
    cl_long listed = 0;
    for (int64_t i = 0; i < nrows; i++)
        if (C->rowptr[i + 1] - C->rowptr[i] > SHORT_ROW)
            rows[listed++] = i;
    cl_mem list = NULL;
    sr_status s = listed ? sr_ocl_upload(o, rows, (size_t)listed * sizeof(int64_t), &list) : SR_SUCCESS;
    free(rows);
    if (s == SR_SUCCESS && listed) {
        const size_t g = o->dev->group;
        const sr_ocl_arg args[] = {SR_OCL_ARG(list), SR_OCL_ARG(listed), SR_OCL_ARG(t_rowptr), SR_OCL_ARG(t_colind)};
        s = sr_ocl_run(o, "sort_rows", row_groups(listed) * g, g, 4, args);
    }
    sr_ocl_release(list);
    return s;
}

sr_status sr_ocl_transpose_bool(struct sr_context_s *ctx, const struct sr_matrix_s *A, struct sr_matrix_s *AT)
{
    sr_ocl *o = sr_ocl_of(ctx);
    if (A->nnz > (int64_t)UINT32_MAX)
        return sr_error(SR_ERROR_UNSUPPORTED, "OpenCL transpose: %lld entries; the backend counts a column's "
                        "entries in 32 bits (use the CPU or CUDA backend)", (long long)A->nnz);
    const cl_long nnz = A->nnz, nrows = A->nrows, ncols = A->ncols;
    uint32_t *counts = sr_malloc((size_t)(ncols > 0 ? ncols : 1) * sizeof(uint32_t));
    if (!counts)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "OpenCL transpose: out of host memory for %lld column counts",
                        (long long)ncols);
    ocl_pattern a = {NULL, NULL};
    cl_mem cursor = NULL, t_rowptr = NULL, t_colind = NULL;
    sr_status s = pattern_upload(o, A, &a);
    if (s == SR_SUCCESS)
        s = sr_ocl_alloc(o, (size_t)ncols * sizeof(uint32_t), true, &cursor);
    if (s == SR_SUCCESS) {
        const sr_ocl_arg args[] = {SR_OCL_ARG(a.colind), SR_OCL_ARG(nnz), SR_OCL_ARG(cursor)};
        s = sr_ocl_run(o, "transpose_count", (size_t)(nnz < 65536 * 256 ? nnz : 65536 * 256), 0, 3, args);
    }
    if (s == SR_SUCCESS)
        s = sr_ocl_download(o, cursor, counts, (size_t)ncols * sizeof(uint32_t));
    if (s == SR_SUCCESS) {
        AT->rowptr[0] = 0;
        for (int64_t j = 0; j < ncols; j++)
            AT->rowptr[j + 1] = AT->rowptr[j] + counts[j];
        s = sr_ocl_upload(o, AT->rowptr, sr_matrix_rowptr_bytes(AT), &t_rowptr);
    }
    if (s == SR_SUCCESS)
        s = sr_ocl_alloc(o, (size_t)nnz * sizeof(int32_t), false, &t_colind);
    if (s == SR_SUCCESS) /* the counts again from zero, as each column's cursor */
        s = sr_ocl_zero(o, cursor, (size_t)ncols * sizeof(uint32_t));
    if (s == SR_SUCCESS) {
        const sr_ocl_arg args[] = {SR_OCL_ARG(a.rowptr), SR_OCL_ARG(a.colind), SR_OCL_ARG(nrows),
                                   SR_OCL_ARG(t_rowptr), SR_OCL_ARG(cursor),   SR_OCL_ARG(t_colind)};
        s = sr_ocl_run(o, "transpose_scatter", (size_t)nrows, 0, 6, args);
    }
    if (s == SR_SUCCESS) /* the scatter leaves each row in no order */
        s = sort_rows(o, AT, t_rowptr, t_colind);
    if (s == SR_SUCCESS)
        s = sr_ocl_download(o, t_colind, AT->colind, (size_t)nnz * sizeof(int32_t));
    pattern_release(&a);
    sr_ocl_release(cursor);
    sr_ocl_release(t_rowptr);
    sr_ocl_release(t_colind);
    free(counts);
    return s;
}
