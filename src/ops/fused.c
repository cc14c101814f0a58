/* Public entry points of the fused pattern w = α·Xᵀ·(v ⊙ (X·y)) + β·z and its instantiations:
 * checks, staging of the vectors (and of a dense X) where the work runs, dispatch. */
#include <string.h>

#include "../core/fused.h"
#include "../core/memory.h"
#include "../core/queued.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "ops_common.h"

/* The lengths the form gives the vectors: y, v, and w (= z). */
static void vector_lengths(sr_pattern_form form, int64_t m, int64_t n, int64_t *ny, int64_t *nv, int64_t *nw)
{
    *ny = form == SR_FORM_XTY ? m : n;
    *nv = m;
    *nw = form == SR_FORM_XY ? m : n;
}

static bool overlaps(const sr_dense *a, const sr_dense *b, size_t es)
{
    if (!a || !b || !a->data || !b->data || a->location != b->location)
        return false;
    const char *a0 = a->data, *b0 = b->data;
    const char *a1 = a0 + (size_t)a->nrows * es, *b1 = b0 + (size_t)b->nrows * es;
    return a0 < b1 && b0 < a1;
}

static sr_status check_vector(const char *fn, const char *name, const sr_dense *d, int64_t n, sr_type type)
{
    SR_TRY(sr_ops_check_vector(fn, name, d, n));
    SR_CHECK_ARG(d->type == type, "%s: %s has type %s but y has %s", fn, name, sr_type_name(d->type),
                 sr_type_name(type));
    return SR_SUCCESS;
}

/* A vector where the work runs: the caller's, or a copy (copied in when `in`). */
typedef struct {
    sr_dense here;
    void *owned;
    size_t bytes;
} staged_vector;

static sr_status stage(struct sr_context_s *ctx, const sr_dense *d, sr_location where, bool in, staged_vector *s)
{
    memset(s, 0, sizeof *s);
    if (!d)
        return SR_SUCCESS;
    return sr_ops_stage_dense(ctx, d, where, in, &s->here, &s->owned, &s->bytes);
}

static sr_status run(const char *fn, struct sr_context_s *ctx, sr_fused_args *a, sr_location where, const sr_dense *w,
                     const sr_dense *v, const sr_dense *y, const sr_dense *z)
{
    int64_t ny, nv, nw;
    vector_lengths(a->form, a->m, a->n, &ny, &nv, &nw);
    const sr_type t = y ? y->type : SR_TYPE_FLOAT32;
    SR_CHECK_ARG(y != NULL && w != NULL, "%s: y or w is NULL", fn);
    SR_CHECK_ARG(t == SR_TYPE_FLOAT32 || t == SR_TYPE_FLOAT64, "%s: the vectors must be float32 or float64, not %s",
                 fn, sr_type_name(t));
    SR_TRY(check_vector(fn, "y", y, ny, t));
    SR_TRY(check_vector(fn, "w", w, nw, t));
    if (v)
        SR_TRY(check_vector(fn, "v", v, nv, t));
    if (z)
        SR_TRY(check_vector(fn, "z", z, nw, t));
    const size_t es = sr_type_size(t);
    SR_CHECK_ARG(!overlaps(w, y, es) && !overlaps(w, v, es), "%s: w shares memory with y or v", fn);
    SR_CHECK_ARG(!z || z->data == w->data || !overlaps(w, z, es), "%s: w overlaps z without being z", fn);
    SR_CHECK_ARG(!(a->alpha != a->alpha) && !(a->beta != a->beta), "%s: alpha or beta is NaN", fn);
    a->type = t;
    if (!z)
        a->beta = 0.0;
    /* zeroed: a failed staging frees them all, the ones never staged too (they held garbage that
     * was handed to the device's free, whose error surfaced in the next launch) */
    staged_vector sy = {0}, sv = {0}, sz = {0}, sw = {0};
    const bool w_is_z = z && z->data == w->data && z->location == w->location;
    sr_status st = stage(ctx, y, where, true, &sy);
    if (st == SR_SUCCESS)
        st = stage(ctx, v, where, true, &sv);
    if (st == SR_SUCCESS)
        st = stage(ctx, w, where, w_is_z, &sw); /* read as z when it is z */
    if (st == SR_SUCCESS)
        st = w_is_z ? (memset(&sz, 0, sizeof sz), SR_SUCCESS) : stage(ctx, z, where, true, &sz);
    if (st == SR_SUCCESS) {
        a->y = sy.here.data;
        a->v = v ? sv.here.data : NULL;
        a->w = sw.here.data;
        a->z = !z ? NULL : w_is_z ? sw.here.data : sz.here.data;
        /* the pass's work: X's entries (or elements), plus w's */
        const int64_t work = (a->X ? a->X->nnz : a->m * a->n) + a->m + a->n; /* X may be on the device */
        a->queued = a->queued && !sy.owned && !sv.owned && !sw.owned && !sz.owned; /* staged: wait, then free */
        st = where == SR_DEVICE ? sr_cuda_fused(ctx, a) : sr_cpu_fused(a, sr_context_threads_for(ctx, work));
        if (st == SR_SUCCESS && sw.owned)
            st = sr_mem_copy(ctx, w->data, w->location, sw.here.data, where, (size_t)nw * es);
    }
    sr_mem_free(ctx, where, sy.owned, sy.bytes);
    sr_mem_free(ctx, where, sv.owned, sv.bytes);
    sr_mem_free(ctx, where, sw.owned, sw.bytes);
    sr_mem_free(ctx, where, sz.owned, sz.bytes);
    return st;
}

static sr_status check_form(const char *fn, sr_pattern_form form)
{
    SR_CHECK_ARG(form == SR_FORM_XTVXY || form == SR_FORM_XTY || form == SR_FORM_XY, "%s: unknown form %d", fn,
                 (int)form);
    return SR_SUCCESS;
}

static sr_status sparse_pattern(const char *fn, sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha,
                                sr_matrix X, const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z,
                                bool queued)
{
    SR_TRY(sr_ops_check_matrix(fn, ctx, X));
    SR_TRY(check_form(fn, form));
    SR_CHECK_ARG(y != NULL, "%s: y is NULL", fn);
    SR_CHECK_ARG(X->type == SR_TYPE_BOOL || X->type == y->type, "%s: X has type %s; it must be bool or y's type %s",
                 fn, sr_type_name(X->type), sr_type_name(y->type));
    sr_fused_args a = {form, y->type, X->nrows, X->ncols, X, NULL, 0, NULL, NULL, NULL, NULL, alpha, beta, queued};
    return run(fn, ctx, &a, X->location, w, v, y, z);
}

sr_status sr_fused_pattern(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha, sr_matrix X,
                           const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z)
{
    return sparse_pattern("sr_fused_pattern", ctx, form, w, alpha, X, v, y, beta, z, sr_context_queues(ctx));
}

sr_status sr_fused_pattern_queued(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha, sr_matrix X,
                                  const sr_dense *v, const sr_dense *y, double beta, const sr_dense *z)
{
    return sparse_pattern("sr_fused_pattern", ctx, form, w, alpha, X, v, y, beta, z, true);
}

sr_status sr_fused_pattern_dense(sr_context ctx, sr_pattern_form form, const sr_dense *w, double alpha,
                                 const sr_dense *X, const sr_dense *v, const sr_dense *y, double beta,
                                 const sr_dense *z)
{
    const char *fn = "sr_fused_pattern_dense";
    SR_CHECK_ARG(ctx != NULL, "%s: the context is NULL", fn);
    SR_TRY(check_form(fn, form));
    SR_TRY(sr_check_dense(fn, X));
    SR_CHECK_ARG(y != NULL, "%s: y is NULL", fn);
    SR_CHECK_ARG(X->type == y->type, "%s: X has type %s but y has %s", fn, sr_type_name(X->type),
                 sr_type_name(y->type));
    sr_backend backend;
    SR_TRY(sr_context_get_backend(ctx, &backend));
    const sr_location where = backend == SR_BACKEND_CUDA ? SR_DEVICE : SR_HOST;
    sr_staged_rows rows;
    SR_TRY(sr_ops_stage_rows(ctx, X, where, &rows));
    sr_fused_args a = {form, y->type, X->nrows, X->ncols, NULL, rows.data, X->ncols, NULL, NULL, NULL, NULL, alpha, beta,
                       false};
    sr_status st = run(fn, ctx, &a, where, w, v, y, z);
    sr_ops_release_rows(ctx, &rows);
    return st;
}
