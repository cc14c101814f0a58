/* Radius neighbours: every index row within a radius of each query, as CSR, built batch by
 * batch from the distance blocks (each block's kept elements become one piece; the pieces are
 * stacked at the end). */
#include <math.h>
#include <string.h>

#include "../core/memory.h"
#include "../core/types.h"
#include "../cpu/cpu.h"
#include "../cuda/cuda.h"
#include "../semiring/metric.h"
#include "distance_prep.h"
#include "multi_gpu.h"
#include "../semiring/user.h"
#include "ops_common.h"

sr_radius_options sr_radius_options_default(void)
{
    sr_radius_options o = {SR_GRAPH_DISTANCE, false, SR_TYPE_FLOAT32, NULL, NULL};
    return o;
}

/* The pieces (consecutive row ranges of the result, where `where` says) as one nq x n matrix. */
static sr_status stack_pieces(struct sr_context_s *ctx, struct sr_matrix_s *const *pieces, int64_t npieces,
                              int64_t nq, int64_t n, sr_type type, sr_location where, struct sr_matrix_s **out)
{
    int64_t total = 0;
    for (int64_t i = 0; i < npieces; i++)
        total += pieces[i]->nnz;
    int64_t *rowptr = NULL;
    SR_TRY(sr_mem_alloc_array(ctx, SR_HOST, (size_t)nq + 1, sizeof(int64_t), (void **)&rowptr));
    memset(rowptr, 0, ((size_t)nq + 1) * sizeof(int64_t));
    struct sr_matrix_s *R = NULL;
    sr_status s = sr_matrix_alloc(ctx, nq, n, total, type, where, &R);
    const size_t vs = sr_value_size(type);
    int64_t row = 0, at = 0;
    for (int64_t i = 0; s == SR_SUCCESS && i < npieces; i++) {
        const struct sr_matrix_s *P = pieces[i];
        s = sr_mem_copy(ctx, rowptr + row, SR_HOST, P->rowptr, where, sr_matrix_rowptr_bytes(P));
        for (int64_t r = row; s == SR_SUCCESS && r <= row + P->nrows; r++)
            rowptr[r] += at;
        if (s == SR_SUCCESS && P->nnz > 0)
            s = sr_mem_copy(ctx, R->colind + at, where, P->colind, where, (size_t)P->nnz * sizeof(int32_t));
        if (s == SR_SUCCESS && P->nnz > 0 && vs)
            s = sr_mem_copy(ctx, (char *)R->values + (size_t)at * vs, where, P->values, where, (size_t)P->nnz * vs);
        row += P->nrows;
        at += P->nnz;
    }
    if (s == SR_SUCCESS)
        s = sr_mem_copy(ctx, R->rowptr, where, rowptr, SR_HOST, ((size_t)nq + 1) * sizeof(int64_t));
    sr_mem_free(ctx, SR_HOST, rowptr, ((size_t)nq + 1) * sizeof(int64_t));
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(R);
        return s;
    }
    *out = R;
    return SR_SUCCESS;
}

/* The pieces found so far, in row order, and room for more. */
typedef struct piece_list {
    struct sr_matrix_s **at;
    int64_t count, capacity;
} piece_list;

/* Room for `more` pieces past those held. */
static sr_status reserve_pieces(struct sr_context_s *ctx, piece_list *list, int64_t more)
{
    if (list->count + more <= list->capacity)
        return SR_SUCCESS;
    const int64_t capacity = list->count + more > 2 * list->capacity ? list->count + more : 2 * list->capacity;
    struct sr_matrix_s **at = NULL;
    SR_TRY(sr_mem_alloc_array(ctx, SR_HOST, (size_t)capacity, sizeof *at, (void **)&at));
    if (list->count > 0)
        memcpy(at, list->at, (size_t)list->count * sizeof *at);
    sr_mem_free(ctx, SR_HOST, list->at, (size_t)list->capacity * sizeof *at);
    list->at = at;
    list->capacity = capacity;
    return SR_SUCCESS;
}

static void free_pieces(struct sr_context_s *ctx, piece_list *list)
{
    for (int64_t i = 0; i < list->count; i++)
        sr_matrix_destroy(list->at[i]);
    sr_mem_free(ctx, SR_HOST, list->at, (size_t)list->capacity * sizeof *list->at);
}

/* A batch's pairs past the workspace: the error a single query gets, whose pairs alone do not fit. */
static sr_status too_many_pairs(const char *fn, double radius, int64_t pairs, int64_t r0, int64_t rows, double bytes,
                                size_t budget)
{
    return sr_error(SR_ERROR_OUT_OF_MEMORY,
                    "%s: radius %g keeps %lld pairs for queries %lld..%lld (%.2f MiB), past the workspace limit "
                    "(%.2f MiB): lower the radius, or raise the limit with sr_context_set_workspace_limit",
                    fn, radius, (long long)pairs, (long long)r0, (long long)(r0 + rows - 1), bytes / 1048576.0,
                    (double)budget / 1048576.0);
}

/* Device bytes a pair of the tiles' radius takes while its batch is sorted into CSR (its key and
 * value twice, the sort's double buffer, then the piece's column and value). */
static const size_t kTilePairBytes = 48;

/* Pairs a query of the tiles' radius is first given room for, before a batch has shown how many
 * its queries keep (then the last batch's mean, with a margin); at least kTileFloorPairs a batch. */
static const double kTileFirstPairs = 64.0;
static const int64_t kTileFloorPairs = (int64_t)1 << 20;
static const int64_t kTileFirstBatch = 1024;

/* The rows of queries [r0, r0 + rows) within the radius through the device tiles, as a piece. The
 * pairs get room for *per_query a query (updated from what the batch kept); a batch that keeps more
 * runs again with room for exactly what it keeps when that fits the workspace, and otherwise *b
 * becomes a batch that should fit and the status says to retry. */
static sr_status tile_piece(const char *fn, const sr_distance_prep *p, const sr_keep_rule *rule, double radius,
                            int64_t r0, int64_t rows, int64_t *b, double *per_query, struct sr_matrix_s **piece)
{
    const size_t budget = sr_context_workspace(p->ctx, p->where);
    const int64_t most = (int64_t)(budget / kTilePairBytes);
    const double possible = (double)rows * (double)p->in.X->nrows; /* every pair */
    double wanted = 1.25 * *per_query * (double)rows;
    wanted = wanted < (double)kTileFloorPairs ? (double)kTileFloorPairs : wanted;
    wanted = wanted < possible ? wanted : possible;
    const int64_t capacity = wanted > (double)most ? most : (int64_t)wanted;
    int64_t pairs = 0;
    SR_TRY(sr_cuda_radius_tiles_rows(&p->in, r0, r0 + rows, rule, capacity, piece, &pairs));
    if (*piece == NULL && pairs <= most) { /* more than guessed, but it fits: once more, with room for all */
        /* and a margin: a value at the radius may round the other way with the atomics' order */
        const int64_t room = pairs + pairs / 64 + 1024;
        SR_TRY(sr_cuda_radius_tiles_rows(&p->in, r0, r0 + rows, rule, room < most ? room : most, piece, &pairs));
    }
    *per_query = (double)pairs / (double)rows;
    if (*piece != NULL) { /* the next batch: up to 4 times as many queries, as many as the workspace holds */
        const double next = (double)(rows * 4 < SR_TILE_BATCH_CAP ? rows * 4 : SR_TILE_BATCH_CAP),
                     fit = (double)most / (1.25 * (*per_query > 1.0 ? *per_query : 1.0));
        *b = (int64_t)(next < fit ? next : fit > 1.0 ? fit : 1.0);
        return SR_SUCCESS;
    }
    if (rows == 1)
        return too_many_pairs(fn, radius, pairs, r0, rows, (double)pairs * (double)kTilePairBytes, budget);
    /* the batch's share that fits, with room for queries keeping more than the batch's mean */
    const double fits = (double)rows * (double)most / (double)pairs * 0.75;
    *b = fits < 1.0 ? 1 : fits < (double)rows / 2 ? (int64_t)fits : rows / 2;
    return sr_error(SR_ERROR_DEVICE_OUT_OF_MEMORY, "%s: queries %lld..%lld keep %lld pairs, past %lld; retrying "
                    "%lld queries a batch", fn, (long long)r0, (long long)(r0 + rows - 1), (long long)pairs,
                    (long long)most, (long long)*b);
}

/* Queries [*done, nq) in batches of *b rows: the block's distances, then the kept ones as a piece
 * appended to the list (on the device tiles, the kept ones directly); *done advances past each
 * piece kept, so a retry in smaller batches starts where this one stopped. The tiles lower *b
 * themselves when a batch's pairs do not fit; sr_ops_batch_shrinks halves it on other shortages. */
static sr_status find_pieces(const char *fn, const sr_distance_prep *p, double radius, bool leave_out_self,
                             const sr_radius_options *o, int64_t *batch, int64_t *done, double *per_query,
                             piece_list *list)
{
    struct sr_context_s *ctx = p->ctx;
    const int64_t nq = p->in.Q->nrows, n = p->in.X->nrows;
    const size_t es = sr_type_size(o->type), budget = sr_context_workspace(ctx, p->where);
    sr_keep_rule rule = {sr_metric_keeps_largest((int)p->in.metric) ? SR_KEEP_AT_LEAST : SR_KEEP_AT_MOST, radius,
                         SR_KEEP_NO_SELF};
    void *block = NULL;
    /* the overlap path and the tiles keep as they go (the tiles may change *batch between batches) */
    const size_t block_elems = p->overlap || p->tiles ? 0 : (size_t)*batch * (size_t)n;
    SR_TRY(sr_mem_alloc_array(ctx, p->where, block_elems, es, &block));
    sr_status s = SR_SUCCESS;
    for (int64_t r0 = *done, rows = 0; s == SR_SUCCESS && r0 < nq; r0 += rows) {
        rows = nq - r0 < *batch ? nq - r0 : *batch;
        s = reserve_pieces(ctx, list, 1);
        if (s != SR_SUCCESS)
            break;
        rule.self_offset = leave_out_self ? r0 : SR_KEEP_NO_SELF;
        struct sr_matrix_s *piece = NULL;
        if (p->overlap) {
            s = sr_cpu_radius_overlap_rows(ctx, &p->in, p->order, p->overlap_mode, r0, r0 + rows, &rule, o->type,
                                           &piece, sr_context_threads(ctx));
        } else if (p->tiles) {
            s = tile_piece(fn, p, &rule, radius, r0, rows, batch, per_query, &piece);
        } else {
            const sr_strided_out out = {block, n, 1};
            s = sr_distance_rows(p, r0, r0 + rows, &out);
            const sr_dense view = sr_dense_view(block, rows, n, o->type, SR_ROW_MAJOR, p->where);
            if (s == SR_SUCCESS)
                s = sr_ops_dense_to_csr(ctx, &view, &rule, &piece);
        }
        if (s == SR_SUCCESS) { /* each batch's pairs must fit where its distances did */
            const double bytes = (double)piece->nnz * (double)(sizeof(int32_t) + es);
            if (bytes > (double)budget)
                s = too_many_pairs(fn, radius, piece->nnz, r0, rows, bytes, budget);
        }
        if (s != SR_SUCCESS) {
            sr_matrix_destroy(piece);
            break;
        }
        list->at[list->count++] = piece;
        *done = r0 + rows;
        if (o->progress && o->progress(r0 + rows, nq, o->progress_user) != 0)
            s = sr_error(SR_ERROR_CANCELLED, "%s: stopped by the progress callback after %lld of %lld queries", fn,
                         (long long)(r0 + rows), (long long)nq);
    }
    sr_mem_free(ctx, p->where, block, block_elems * es);
    return s;
}

sr_status sr_radius_neighbors(sr_context ctx, sr_matrix index, sr_matrix queries, double radius, sr_metric metric,
                              double metric_arg, const sr_radius_options *options, sr_matrix *R)
{
    const char *fn = "sr_radius_neighbors";
    SR_CHECK_ARG(R != NULL, "%s: R is NULL", fn);
    SR_TRY(sr_ops_check_matrix(fn, ctx, index));
    const sr_radius_options o = options ? *options : sr_radius_options_default();
    SR_TRY(sr_ops_check_graph_output(fn, o.mode, o.type));
    SR_CHECK_ARG(!isnan(radius), "%s: the radius is NaN", fn);
    /* distances are never negative (but for the inner product, a similarity, and KL divergence of
     * rows that are not distributions): such a radius would quietly match nothing */
    SR_CHECK_ARG(radius >= 0.0 || metric == SR_METRIC_INNER_PRODUCT || metric == SR_METRIC_KL_DIVERGENCE ||
                     sr_metric_is_user((int)metric),
                 "%s: the radius is %g, and %s distances are never negative", fn, radius, sr_metric_name(metric));
    SR_CHECK_ARG(queries == NULL || !o.include_self,
                 "%s: include_self applies when the index is compared with itself (queries NULL)", fn);
    const bool self = queries == NULL;
    if (sr_multi_applies(ctx, index) && (self || queries->location == SR_DEVICE) && !sr_metric_is_user((int)metric))
        return sr_multi_radius(ctx, index, queries, radius, metric, metric_arg, &o, R);
    sr_distance_prep p;
    SR_TRY(sr_distance_prepare(fn, ctx, self ? index : queries, index, metric, metric_arg, o.type, &p));
    sr_status s = sr_distance_overlap_setup(&p, index);
    if (s != SR_SUCCESS) {
        sr_distance_release(&p);
        return s;
    }
    const int64_t nq = p.in.Q->nrows, n = index->nrows;
    p.tiles = p.where == SR_DEVICE && !p.overlap && sr_cuda_radius_tiles_apply(&p.in);
    /* the tiles' first batch is small: it shows how many pairs a query keeps before a large one
     * is given room for them (tile_piece then grows the batches) */
    int64_t b = p.tiles ? (nq < 1 ? 1 : nq < kTileFirstBatch ? nq : kTileFirstBatch)
                        : sr_distance_batch_rows(ctx, p.where, nq, (size_t)n * sr_type_size(o.type));
    int64_t done = 0;
    double per_query = kTileFirstPairs; /* the tiles' pairs a query, as the last batch kept */
    piece_list pieces = {NULL, 0, 0};
    struct sr_matrix_s *out = NULL;
    if (n > 0)
        for (;;) {
            const int64_t tried = b;
            s = find_pieces(fn, &p, radius, self && !o.include_self, &o, &b, &done, &per_query, &pieces);
            if (!(s == SR_ERROR_DEVICE_OUT_OF_MEMORY && (b < tried || sr_ops_batch_shrinks(s, &b))))
                break;
        }
    if (s == SR_SUCCESS)
        s = stack_pieces(ctx, pieces.at, pieces.count, nq, n, o.type, p.where, &out);
    free_pieces(ctx, &pieces);
    sr_distance_release(&p);
    if (s == SR_SUCCESS && o.mode == SR_GRAPH_CONNECTIVITY) {
        struct sr_matrix_s *B = NULL;
        s = sr_matrix_cast(ctx, out, SR_TYPE_BOOL, &B);
        sr_matrix_destroy(out);
        out = B;
    }
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(out);
        return s;
    }
    *R = out;
    return SR_SUCCESS;
}
