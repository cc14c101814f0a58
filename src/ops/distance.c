/* Public distances and k-NN: checks, preparation of the inputs (cast to the compute type, value
 * checks, the index's inverted form, row norms), batching under the workspace limit, dispatch. */
#include <stdlib.h>
#include <string.h>

#include "../core/distance.h"
#include "../core/error.h"
#include "../core/memory.h"
#include "../core/settings.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../semiring/metric.h"
#include "../semiring/user.h"
#include "distance_prep.h"
#include "multi_gpu.h"
#include "ops_common.h"

/* Whether m is a user metric reduced by max over the union (its device kernel walks orders). */
static bool user_union_max(sr_metric m)
{
    const sr_user_metric *u = sr_user_metric_of((int)m);
    return u && sr_user_metric_terms_of(&u->def).walks_union;
}

/* A magnitude order's block: columns, ranks, absolute values; or a user union order's: keys (8
 * bytes each, first for their alignment), then columns (see sr_distance_inputs). */
static size_t mag_bytes(const struct sr_matrix_s *M, sr_metric m)
{
    if (!M)
        return 0;
    return user_union_max(m) ? (size_t)M->nnz * (sizeof(double) + sizeof(int32_t))
                             : (size_t)M->nnz * (2 * sizeof(int32_t) + sr_type_size(M->type));
}

void sr_distance_release(sr_distance_prep *p)
{
    sr_cuda_knn_panel_free(p->panel);
    /* the norms first: their sizes come from the matrices, which may be the cast copies */
    sr_mem_free(p->ctx, p->where, p->qnorm, 2 * sizeof(double) * (size_t)(p->in.Q ? p->in.Q->nrows : 0));
    sr_mem_free(p->ctx, p->where, p->xnorm, 2 * sizeof(double) * (size_t)(p->in.X ? p->in.X->nrows : 0));
    if (p->x_mag != p->q_mag)
        sr_mem_free(p->ctx, p->where, p->x_mag, mag_bytes(p->in.X, p->in.metric));
    sr_mem_free(p->ctx, p->where, p->q_mag, mag_bytes(p->in.Q, p->in.metric));
    sr_mem_free(p->ctx, SR_HOST, p->own_order, sizeof(int32_t) * (size_t)(p->in.X ? p->in.X->nrows : 0));
    sr_matrix_destroy(p->q_cast);
    sr_matrix_destroy(p->x_cast);
    sr_matrix_destroy(p->xt);
}

/* M in the compute type: M itself, or a cast copy kept in *owned. */
static sr_status in_compute_type(struct sr_context_s *ctx, struct sr_matrix_s *M, sr_type type,
                                 const struct sr_matrix_s **out, struct sr_matrix_s **owned)
{
    *out = M;
    if (M->type == type)
        return SR_SUCCESS;
    SR_TRY(sr_matrix_cast(ctx, M, type, owned));
    *out = *owned;
    return SR_SUCCESS;
}

static sr_status check_values(const char *fn, const char *what, const struct sr_matrix_s *M, sr_metric metric,
                              int threads)
{
    for (int pass = 0; pass < 2; pass++) {
        bool nonnegative = pass == 1;
        if (nonnegative && !sr_metric_needs_nonnegative(metric))
            break;
        int64_t row = -1;
        if (M->location == SR_DEVICE)
            SR_TRY(sr_cuda_first_bad_row(M, nonnegative, &row));
        else
            row = sr_cpu_first_bad_row(M, nonnegative, threads);
        if (row >= 0 && nonnegative)
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "%s: row %lld of %s holds a negative value, which %s does not take",
                            fn, (long long)row, what, sr_metric_name(metric));
        if (row >= 0)
            return sr_error(SR_ERROR_INVALID_ARGUMENT,
                            "%s: row %lld of %s holds NaN or infinity (distances need finite values)", fn,
                            (long long)row, what);
    }
    return SR_SUCCESS;
}

/* The index's value checks, skipped when it passed them on an earlier search (kept with it). */
static sr_status check_index(const char *fn, const char *what, const sr_distance_prep *p, struct sr_matrix_s *index,
                             bool keep, int threads)
{
    const bool nonnegative = sr_metric_needs_nonnegative(p->in.metric);
    if (keep && sr_distance_index_checked(index, false) && (!nonnegative || sr_distance_index_checked(index, true)))
        return SR_SUCCESS;
    SR_TRY(check_values(fn, what, p->in.X, p->in.metric, threads));
    if (keep) {
        sr_distance_index_mark_checked(index, false);
        if (nonnegative)
            sr_distance_index_mark_checked(index, true);
    }
    return SR_SUCCESS;
}

sr_status sr_distance_norms(struct sr_context_s *owner, int threads, const struct sr_matrix_s *M, sr_metric metric,
                            double p, double **norms)
{
    SR_TRY(sr_mem_alloc_array(owner, M->location, (size_t)M->nrows * 2, sizeof(double), (void **)norms));
    if (M->location == SR_DEVICE)
        return sr_cuda_distance_norms(M, metric, p, *norms);
    sr_cpu_distance_norms(M, metric, p, *norms, threads);
    return SR_SUCCESS;
}

static sr_status norms_of(sr_distance_prep *p, const struct sr_matrix_s *M, double **norms)
{
    return sr_distance_norms(p->ctx, sr_context_threads(p->ctx), M, p->in.metric, p->in.p, norms);
}

/* M's magnitude order, for the device Chebyshev kernel, in one block allocated here. */
static sr_status magnitude_order(sr_distance_prep *p, const struct sr_matrix_s *M, void **block, const int32_t **col,
                                 const int32_t **rank, const void **abs)
{
    SR_TRY(sr_mem_alloc(p->ctx, SR_DEVICE, mag_bytes(M, p->in.metric), block));
    int32_t *c = (int32_t *)*block, *r = c + M->nnz;
    void *a = r + M->nnz;
    *col = c;
    *rank = r;
    *abs = a;
    return sr_cuda_magnitude_order(M, c, a, r);
}

/* M's order for a user metric reduced by max over the union on the device (query_side: by
 * pair(v, 0), else pair(0, v)), in one block allocated here. */
static sr_status union_order(sr_distance_prep *p, const struct sr_matrix_s *M, bool query_side, void **block,
                             const int32_t **col, const double **key)
{
    SR_TRY(sr_mem_alloc(p->ctx, SR_DEVICE, mag_bytes(M, p->in.metric), block));
    double *k = (double *)*block;
    int32_t *c = (int32_t *)(k + M->nnz);
    *key = k;
    *col = c;
    return sr_cuda_user_union_order(M, p->in.metric, p->in.p, query_side, c, k);
}

/* The index's inverted form (for each column, the rows that hold it) in p->in.XT, once: kept with
 * an index searched in its own type, built for this call for a cast copy. */
static sr_status inverted_form(sr_distance_prep *p, struct sr_matrix_s *index)
{
    if (p->in.XT)
        return SR_SUCCESS;
    if (!p->x_cast)
        return sr_distance_index_transpose(index, &p->in.XT);
    SR_TRY(sr_matrix_transpose(p->ctx, (sr_matrix)p->in.X, &p->xt));
    p->in.XT = p->xt;
    return SR_SUCCESS;
}

static sr_status prepare_steps(const char *fn, sr_distance_prep *p, struct sr_matrix_s *queries, struct sr_matrix_s *index,
                               sr_type ctype)
{
    int threads = sr_context_threads(p->ctx);
    SR_TRY(in_compute_type(p->ctx, queries, ctype, &p->in.Q, &p->q_cast));
    SR_TRY(in_compute_type(p->ctx, index, ctype, &p->in.X, &p->x_cast));
    /* an index searched in its own type keeps its checks, transpose and norms (distance_index.c) */
    const bool keep = p->x_cast == NULL, self = queries == index && p->q_cast == NULL && keep;
    if (!self)
        SR_TRY(check_values(fn, "the queries", p->in.Q, p->in.metric, threads));
    SR_TRY(check_index(fn, self ? "the queries" : "the index", p, index, keep, threads)); /* self: checked once */
    if (sr_metric_kind_of(p->in.metric) != SR_MK_MAX || p->where == SR_DEVICE) /* the CPU merges for Chebyshev */
        SR_TRY(inverted_form(p, index));
    if (sr_metric_kind_of(p->in.metric) == SR_MK_MAX && p->where == SR_DEVICE) {
        const int32_t *unused;
        SR_TRY(magnitude_order(p, p->in.Q, &p->q_mag, &p->in.q_mag_col, &p->in.q_rank, &p->in.q_mag_abs));
        if (p->in.X == p->in.Q) {
            p->x_mag = p->q_mag;
            p->in.x_mag_col = p->in.q_mag_col;
            p->in.x_mag_abs = p->in.q_mag_abs;
        } else {
            SR_TRY(magnitude_order(p, p->in.X, &p->x_mag, &p->in.x_mag_col, &unused, &p->in.x_mag_abs));
        }
    }
    if (user_union_max(p->in.metric) && p->where == SR_DEVICE) { /* two orders even for X == Q: two keys */
        SR_TRY(union_order(p, p->in.Q, true, &p->q_mag, &p->in.q_mag_col, &p->in.q_union_key));
        SR_TRY(union_order(p, p->in.X, false, &p->x_mag, &p->in.x_mag_col, &p->in.x_union_key));
    }
    if (keep) {
        SR_TRY(sr_distance_index_norms(p->ctx, index, p->in.metric, p->in.p, &p->in.xnorm));
    } else {
        SR_TRY(norms_of(p, p->in.X, &p->xnorm));
        p->in.xnorm = p->xnorm;
    }
    if (self) {
        p->in.qnorm = p->in.xnorm;
    } else {
        SR_TRY(norms_of(p, p->in.Q, &p->qnorm));
        p->in.qnorm = p->qnorm;
    }
    return SR_SUCCESS;
}

sr_status sr_distance_prepare(const char *fn, struct sr_context_s *ctx, struct sr_matrix_s *queries,
                         struct sr_matrix_s *index, sr_metric metric, double metric_arg, sr_type ctype, sr_distance_prep *p)
{
    memset(p, 0, sizeof *p);
    SR_TRY(sr_ops_check_matrix(fn, ctx, queries));
    SR_TRY(sr_ops_check_matrix(fn, ctx, index));
    SR_TRY(sr_metric_check(fn, metric, metric_arg));
    SR_CHECK_ARG(queries->location == index->location, "%s: the two matrices live apart (%s and %s); sr_matrix_copy_to moves one",
                 fn, sr_ops_place(queries->location), sr_ops_place(index->location));
    SR_CHECK_ARG(queries->ncols == index->ncols, "%s: rows of %lld and %lld columns cannot be compared", fn,
                 (long long)queries->ncols, (long long)index->ncols);
    SR_CHECK_ARG(index->nrows <= INT32_MAX, "%s: the index has %lld rows, beyond the 32-bit limit", fn,
                 (long long)index->nrows);
    p->ctx = ctx;
    p->where = index->location;
    p->in.metric = metric;
    p->in.p = metric_arg;
    p->in.ordered = ctx->deterministic;
    sr_status s = prepare_steps(fn, p, queries, index, ctype);
    if (s != SR_SUCCESS)
        sr_distance_release(p);
    return s;
}

sr_status sr_distance_rows(const sr_distance_prep *p, int64_t q0, int64_t q1, const sr_strided_out *out)
{
    if (p->where == SR_DEVICE)
        return sr_cuda_distance_rows(&p->in, q0, q1, out);
    return sr_cpu_distance_rows(&p->in, q0, q1, out, sr_context_threads(p->ctx));
}

/* a block past ~1 GiB buys no speed (the device is full long before), only memory */
static const size_t kBlockCap = (size_t)1 << 30;

int64_t sr_distance_batch_rows(const struct sr_context_s *ctx, sr_location where, int64_t nq, size_t per_row)
{
    size_t budget = sr_context_workspace(ctx, where);
    if (budget > kBlockCap)
        budget = kBlockCap;
    int64_t b = per_row ? (int64_t)(budget / per_row) : nq;
    if (b > (int64_t)1 << 24)
        b = (int64_t)1 << 24;
    return b < 1 ? 1 : b > nq ? nq : b;
}

static sr_status check_float_output(const char *fn, const sr_dense *D, const char *what)
{
    SR_CHECK_ARG(D != NULL, "%s: %s is NULL", fn, what);
    SR_TRY(sr_check_dense(fn, D));
    SR_CHECK_ARG(D->type == SR_TYPE_FLOAT32 || D->type == SR_TYPE_FLOAT64,
                 "%s: %s must be float32 or float64 (it sets the precision), not %s", fn, what, sr_type_name(D->type));
    return SR_SUCCESS;
}

/* The strided view of rows [r0, ...) of a dense output. */
sr_strided_out sr_distance_strided_rows(const sr_dense *D, int64_t r0)
{
    size_t es = sr_type_size(D->type);
    sr_strided_out o;
    o.row_stride = D->layout == SR_ROW_MAJOR ? D->ld : 1;
    o.col_stride = D->layout == SR_ROW_MAJOR ? 1 : D->ld;
    o.data = (char *)D->data + (size_t)(r0 * o.row_stride) * es;
    return o;
}

/* Copies `rows` rows of a staged block (packed in D's layout, `rows` x D->ncols) into D from row r0. */
sr_status sr_distance_copy_rows_out(struct sr_context_s *ctx, const sr_dense *D, int64_t r0, const void *staged,
                               sr_location staged_at, int64_t rows)
{
    size_t es = sr_type_size(D->type);
    if (D->layout == SR_ROW_MAJOR)
        return sr_mem_copy2d(ctx, (char *)D->data + (size_t)r0 * (size_t)D->ld * es, (size_t)D->ld * es, D->location,
                             staged, (size_t)D->ncols * es, staged_at, (size_t)D->ncols * es, (size_t)rows);
    return sr_mem_copy2d(ctx, (char *)D->data + (size_t)r0 * es, (size_t)D->ld * es, D->location, staged,
                         (size_t)rows * es, staged_at, (size_t)rows * es, (size_t)D->ncols);
}

/* A packed staging view of `rows` rows of D's shape and layout. */
static sr_dense staging_view(const sr_dense *D, void *data, int64_t rows, sr_location where)
{
    return sr_dense_view(data, rows, D->ncols, D->type, D->layout, where);
}

/* Rows [*done, m) of D in batches of b rows staged where the work runs (D lives elsewhere);
 * *done advances past each batch copied out (see knn_batches). */
static sr_status distance_batches(const sr_distance_prep *p, const sr_dense *D, int64_t b, int64_t *done)
{
    struct sr_context_s *ctx = p->ctx;
    const int64_t m = D->nrows, n = D->ncols;
    const size_t es = sr_type_size(D->type);
    void *block = NULL;
    sr_status s = sr_mem_alloc_array(ctx, p->where, (size_t)b * (size_t)n, es, &block);
    for (int64_t r0 = *done; s == SR_SUCCESS && r0 < m; r0 += b) {
        int64_t rows = m - r0 < b ? m - r0 : b;
        sr_dense staged = staging_view(D, block, rows, p->where);
        sr_strided_out out = sr_distance_strided_rows(&staged, 0);
        s = sr_distance_rows(p, r0, r0 + rows, &out);
        if (s == SR_SUCCESS)
            s = sr_distance_copy_rows_out(ctx, D, r0, block, p->where, rows);
        if (s == SR_SUCCESS)
            *done = r0 + rows;
    }
    sr_mem_free(ctx, p->where, block, (size_t)b * (size_t)n * es);
    return s;
}

sr_status sr_pairwise_distance(sr_context ctx, sr_matrix A, sr_matrix B, sr_metric metric, double metric_arg,
                               const sr_dense *D)
{
    const char *fn = "sr_pairwise_distance";
    SR_TRY(check_float_output(fn, D, "D"));
    SR_TRY(sr_ops_check_matrix(fn, ctx, A));
    SR_TRY(sr_ops_check_matrix(fn, ctx, B));
    SR_CHECK_ARG(D->nrows == A->nrows && D->ncols == B->nrows, "%s: D is %lld x %lld but A and B have %lld and %lld rows",
                 fn, (long long)D->nrows, (long long)D->ncols, (long long)A->nrows, (long long)B->nrows);
    sr_distance_prep p;
    SR_TRY(sr_distance_prepare(fn, ctx, A, B, metric, metric_arg, D->type, &p));
    sr_status s = SR_SUCCESS;
    int64_t m = A->nrows, n = B->nrows;
    if (D->location == p.where) {
        sr_strided_out out = sr_distance_strided_rows(D, 0);
        if (m > 0 && n > 0)
            s = sr_distance_rows(&p, 0, m, &out);
    } else if (m > 0 && n > 0) {
        int64_t b = sr_distance_batch_rows(ctx, p.where, m, (size_t)n * sr_type_size(D->type)), done = 0;
        do
            s = distance_batches(&p, D, b, &done);
        while (sr_ops_batch_shrinks(s, &b));
    }
    sr_distance_release(&p);
    return s;
}

/* One batch of k-NN: distances of rows [r0, r0+rows) into the block, then selection into the
 * outputs (the caller's arrays when they live where the work runs, else staging buffers). */
static sr_status knn_batch(const sr_distance_prep *p, int64_t r0, int64_t rows, int64_t k, void *block, int64_t *idx,
                           const sr_strided_out *dist)
{
    int64_t n = p->in.X->nrows;
    if (p->overlap)
        return sr_cpu_knn_overlap_rows(&p->in, p->order, p->overlap_mode, r0, r0 + rows, k, idx, dist,
                                       sr_context_threads(p->ctx));
    /* asked for: slower than the dense kernels so far (and a user metric's program has none) */
    if (p->where == SR_DEVICE && p->overlap_mode == 1 && !sr_metric_is_user((int)p->in.metric)) {
        bool taken = false;
        SR_TRY(sr_cuda_knn_overlap_rows(&p->in, r0, r0 + rows, k, idx, dist, &taken));
        if (taken)
            return SR_SUCCESS;
    }
    if (p->panel)
        return sr_cuda_knn_panel_rows(p->panel, &p->in, r0, r0 + rows, k, idx, dist);
    if (p->tiles)
        return sr_cuda_knn_tiles_rows(&p->in, r0, r0 + rows, k, idx, dist);
    sr_strided_out full = {block, n, 1};
    SR_TRY(sr_distance_rows(p, r0, r0 + rows, &full));
    bool largest = sr_metric_keeps_largest((int)p->in.metric);
    if (p->where == SR_DEVICE)
        return sr_cuda_select_rows(p->ctx, block, p->in.Q->type, rows, n, n, k, largest, idx, k, dist);
    return sr_cpu_select_rows(block, p->in.Q->type, rows, n, n, k, largest, idx, k, dist, sr_context_threads(p->ctx));
}

/* Queries [*done, nq) in batches of b rows, with the buffers a batch needs where the work runs;
 * *done advances past each finished batch, so a retry in smaller batches (sr_ops_batch_shrinks)
 * starts where this one stopped. */
static sr_status knn_batches(const char *fn, const sr_distance_prep *p, int64_t k, int64_t *indices,
                             const sr_dense *distances, int64_t b, const sr_knn_options *options, int64_t *done)
{
    struct sr_context_s *ctx = p->ctx;
    const int64_t nq = p->in.Q->nrows, n = p->in.X->nrows;
    const size_t es = sr_type_size(distances->type);
    const bool staged = distances->location != p->where;
    void *block = NULL, *s_dist = NULL;
    int64_t *s_idx = NULL;
    /* the overlap and tile paths select as they go */
    const size_t block_elems = p->overlap || p->tiles || p->panel ? 0 : (size_t)b * (size_t)n;
    sr_status s = sr_mem_alloc_array(ctx, p->where, block_elems, es, &block);
    if (s == SR_SUCCESS && staged)
        s = sr_mem_alloc_array(ctx, p->where, (size_t)b * (size_t)k, es, &s_dist);
    if (s == SR_SUCCESS && staged)
        s = sr_mem_alloc_array(ctx, p->where, (size_t)b * (size_t)k, sizeof(int64_t), (void **)&s_idx);
    for (int64_t r0 = *done; s == SR_SUCCESS && r0 < nq; r0 += b) {
        int64_t rows = nq - r0 < b ? nq - r0 : b;
        if (!staged) {
            sr_strided_out dist = sr_distance_strided_rows(distances, r0);
            s = knn_batch(p, r0, rows, k, block, indices + r0 * k, &dist);
        } else {
            sr_dense view = staging_view(distances, s_dist, rows, p->where);
            sr_strided_out dist = sr_distance_strided_rows(&view, 0);
            s = knn_batch(p, r0, rows, k, block, s_idx, &dist);
            if (s == SR_SUCCESS)
                s = sr_distance_copy_rows_out(ctx, distances, r0, s_dist, p->where, rows);
            if (s == SR_SUCCESS)
                s = sr_mem_copy(ctx, indices + r0 * k, distances->location, s_idx, p->where,
                                (size_t)rows * (size_t)k * sizeof(int64_t));
        }
        if (s == SR_SUCCESS)
            *done = r0 + rows;
        if (s == SR_SUCCESS && options && options->progress &&
            options->progress(r0 + rows, nq, options->progress_user) != 0)
            s = sr_error(SR_ERROR_CANCELLED, "%s: stopped by the progress callback after %lld of %lld queries", fn,
                         (long long)(r0 + rows), (long long)nq);
    }
    sr_mem_free(ctx, p->where, block, block_elems * es);
    sr_mem_free(ctx, p->where, s_dist, (size_t)b * (size_t)k * es);
    sr_mem_free(ctx, p->where, s_idx, (size_t)b * (size_t)k * sizeof(int64_t));
    return s;
}

/* SPARSERING_KNN_OVERLAP: 0 keeps the dense path, 1 takes the overlap path for every query,
 * anything else (the default) lets each query's cost estimate choose (read at every call). */
static int overlap_mode(void)
{
    return sr_setting("SPARSERING_KNN_OVERLAP", -1);
}

sr_status sr_distance_overlap_setup(sr_distance_prep *p, struct sr_matrix_s *index)
{
    const int64_t n = p->in.X->nrows;
    p->overlap_mode = overlap_mode();
    /* (a user metric takes the dense path: the overlap path's bounds are the built-ins') */
    p->overlap = p->where == SR_HOST && p->overlap_mode != 0 && !sr_metric_is_user((int)p->in.metric);
    if (!p->overlap)
        return SR_SUCCESS;
    SR_TRY(inverted_form(p, index)); /* host Chebyshev's dense path has none; its overlap path walks it */
    if (sr_metric_disjoint_order(p->in.metric) != SR_DISJOINT_BY_KEY || n == 0)
        return SR_SUCCESS;
    if (p->x_cast == NULL)
        return sr_distance_index_order(index, p->in.metric, p->in.p, &p->order);
    SR_TRY(sr_mem_alloc_array(p->ctx, SR_HOST, (size_t)n, sizeof(int32_t), (void **)&p->own_order));
    p->order = p->own_order;
    return sr_cpu_disjoint_order(p->in.xnorm, n, p->in.metric, (double)p->in.X->ncols, p->own_order);
}

sr_status sr_knn(sr_context ctx, sr_matrix index, sr_matrix queries, int64_t k, sr_metric metric, double metric_arg,
                 int64_t *indices, const sr_dense *distances, const sr_knn_options *options)
{
    const char *fn = "sr_knn";
    SR_TRY(check_float_output(fn, distances, "distances"));
    SR_CHECK_ARG(indices != NULL, "%s: indices is NULL", fn);
    SR_TRY(sr_ops_check_matrix(fn, ctx, index));
    SR_TRY(sr_ops_check_matrix(fn, ctx, queries));
    SR_CHECK_ARG(k >= 1 && k <= index->nrows, "%s: k = %lld, but the index has %lld rows (k must be 1..rows)", fn,
                 (long long)k, (long long)index->nrows);
    SR_CHECK_ARG(index->location != SR_DEVICE || k <= 1024,
                 "%s: k = %lld; on the device k is at most 1024 (copy the matrices to the host for larger k)", fn,
                 (long long)k);
    SR_CHECK_ARG(!options || (options->precision >= SR_PRECISION_EXACT && options->precision <= SR_PRECISION_FLOAT32),
                 "%s: precision %d is not one of SR_PRECISION_EXACT, _TF32, _FLOAT32", fn, (int)options->precision);
    SR_CHECK_ARG(distances->nrows == queries->nrows && distances->ncols == k,
                 "%s: distances is %lld x %lld but there are %lld queries and k = %lld", fn,
                 (long long)distances->nrows, (long long)distances->ncols, (long long)queries->nrows, (long long)k);
    if (sr_multi_applies(ctx, index) && queries->location == SR_DEVICE && !sr_metric_is_user((int)metric))
        return sr_multi_knn(ctx, index, queries, k, metric, metric_arg, indices, distances, options);
    sr_distance_prep p;
    SR_TRY(sr_distance_prepare(fn, ctx, queries, index, metric, metric_arg, distances->type, &p));
    sr_status s = sr_distance_overlap_setup(&p, index);
    if (s != SR_SUCCESS) {
        sr_distance_release(&p);
        return s;
    }
    const int64_t nq = queries->nrows, n = index->nrows;
    const size_t es = sr_type_size(distances->type);
    const bool staged = distances->location != p.where;
    /* the overlap path on the device is asked for (SPARSERING_KNN_OVERLAP=1); it declines where it
     * does not apply, and the tiles or the dense path take the batch */
    const sr_precision precision = options ? options->precision : SR_PRECISION_EXACT;
    /* (not on a deterministic context: the panel's cold columns add into its block atomically) */
    if (p.where == SR_DEVICE && distances->type == SR_TYPE_FLOAT32 && precision != SR_PRECISION_FLOAT32 &&
        !p.in.ordered)
        s = sr_cuda_knn_panel_plan(&p.in, k, precision, &p.panel);
    if (s != SR_SUCCESS) {
        sr_distance_release(&p);
        return s;
    }
    p.tiles = p.where == SR_DEVICE && !p.panel && sr_cuda_knn_tiles_apply(&p.in, k);
    if (!p.panel)
        sr_set_method("knn: %s", p.overlap ? "overlap (CPU)" : p.tiles ? "sparse tiles" : "distance block and selection");
    /* batches as the dense path's (the overlap path needs no block, but the workspace limit keeps
     * setting how often progress is reported and a cancel is seen); the tiles' candidates are a
     * few per tile, and their batches are capped so that progress is still reported */
    size_t per_row = (size_t)n * es + (staged ? (size_t)k * (es + sizeof(int64_t)) : 0) +
                     (p.where == SR_DEVICE ? sr_cuda_select_scratch_per_row(n, k, distances->type) : 0);
    if (p.tiles)
        per_row = sr_cuda_knn_tiles_scratch_per_row(&p.in, k) + (staged ? (size_t)k * (es + sizeof(int64_t)) : 0);
    if (p.panel)
        per_row = sr_cuda_knn_panel_scratch_per_row(p.panel, &p.in, k) + (staged ? (size_t)k * (es + sizeof(int64_t)) : 0);
    int64_t b = sr_distance_batch_rows(ctx, p.where, nq, per_row), done = 0;
    if (p.tiles && b > SR_TILE_BATCH_CAP)
        b = SR_TILE_BATCH_CAP;
    do
        s = knn_batches(fn, &p, k, indices, distances, b, options, &done);
    while (sr_ops_batch_shrinks(s, &b));
    sr_distance_release(&p);
    return s;
}
