/* k-NN and radius neighbours whose work follows the overlap: a query's distances are accumulated, through the index's
 * inverted form, only for the index rows that share a column with it (as the dense path does),
 * and only those rows are finalized. Every other row shares nothing with the query, so its
 * distance is the metric's no-overlap value, a function of the row's norms
 * (sr_metric_disjoint_order): the best of them come first along an order of the index rows
 * computed once, and the walk stops at the first one that cannot enter the k best (or lies past
 * the radius). A query whose overlap is most of the index is scored densely, row by row, as the
 * dense path does. Results are the dense path's exactly: the same accumulation order, the same
 * finalizer, the same rounding to the output type before selection, ties to the smaller index. */
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/matrix.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "../semiring/metric.h"
#include "cpu.h"

typedef struct overlap_scratch {
    double *acc;      /* n per accumulator plane, zero between queries */
    int64_t *stamp;   /* per index row: the last query that touched it */
    int32_t *touched; /* the rows the current query touched */
    sr_select_heap heap;
} overlap_scratch;

static bool scratch_init(overlap_scratch *s, int64_t n, int nacc, int64_t k)
{
    const size_t rows = (size_t)(n > 0 ? n : 1);
    s->acc = calloc(rows * (size_t)nacc, sizeof *s->acc);
    s->stamp = malloc(rows * sizeof *s->stamp);
    s->touched = malloc(rows * sizeof *s->touched);
    s->heap = (sr_select_heap){malloc((size_t)(k > 0 ? k : 1) * sizeof(sr_select_entry)), 0, k};
    if (!s->acc || !s->stamp || !s->touched || !s->heap.e)
        return false;
    for (int64_t i = 0; i < n; i++)
        s->stamp[i] = -1;
    return true;
}

static void scratch_free(overlap_scratch *s)
{
    free(s->acc);
    free(s->stamp);
    free(s->touched);
    free(s->heap.e);
}

static inline double value_at(const struct sr_matrix_s *A, int64_t e)
{
    return A->type == SR_TYPE_FLOAT32 ? (double)((const float *)A->values)[e] : ((const double *)A->values)[e];
}

/* The selection key of a distance: rounded to the output type first, as the dense path stores it
 * before selecting, and negated when the largest are kept. */
static inline double key_of(double d, bool single, bool largest)
{
    const double v = single ? (double)(float)d : d;
    return largest ? -v : v;
}

/* The index rows that share a column with query j and their accumulators (the dense path's loop);
 * returns how many. */
static int64_t accumulate(const sr_distance_inputs *in, int64_t j, overlap_scratch *s, double *a0, double *a1)
{
    const struct sr_matrix_s *Q = in->Q, *XT = in->XT;
    int64_t touched = 0;
    for (int64_t e = Q->rowptr[j]; e < Q->rowptr[j + 1]; e++) {
        const int32_t c = Q->colind[e];
        const double q = value_at(Q, e);
        for (int64_t t = XT->rowptr[c]; t < XT->rowptr[c + 1]; t++) {
            const int32_t i = XT->colind[t];
            if (s->stamp[i] != j) {
                s->stamp[i] = j;
                s->touched[touched++] = i;
            }
            sr_metric_intersect(in->metric, q, value_at(XT, t), in->p, &a0[i], &a1[i]);
        }
    }
    return touched;
}

/* No more threads than queries: each thread's scratch costs O(n) to set up. */
static int team_for(int threads, int64_t queries)
{
    return queries < threads ? (int)(queries > 0 ? queries : 1) : threads;
}

/* The cost estimate: the index entries query j's columns reach bound the rows it touches; past
 * half the index, scoring every row costs less than the walk's bookkeeping (mode > 0: never). */
static bool scores_densely(const sr_distance_inputs *in, int64_t j, int mode)
{
    int64_t reach = 0;
    for (int64_t e = in->Q->rowptr[j]; e < in->Q->rowptr[j + 1]; e++)
        reach += in->XT->rowptr[in->Q->colind[e] + 1] - in->XT->rowptr[in->Q->colind[e]];
    return mode < 0 && 2 * reach > in->X->nrows;
}

/* Query j's k nearest into idx (k a row) and row r of dist. */
static void query(const sr_distance_inputs *in, const int32_t *order, sr_disjoint_order kind, bool dense, int64_t j,
                  overlap_scratch *s, bool largest, int64_t *idx, const sr_strided_out *dist, int64_t r)
{
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows;
    const bool single = in->Q->type == SR_TYPE_FLOAT32;
    const double d = (double)in->X->ncols, qn0 = in->qnorm[2 * j], qn1 = in->qnorm[2 * j + 1];
    const double *xn = in->xnorm;
    const bool two = sr_metric_accumulators(m) > 1;
    double *a0 = s->acc, *a1 = two ? s->acc + n : s->acc;
    const int64_t touched = accumulate(in, j, s, a0, a1);
    sr_select_heap *h = &s->heap;
    if (dense) { /* every row, in index order */
        for (int64_t i = 0; i < n; i++)
            sr_select_push(h, key_of(sr_metric_finalize(m, a0[i], two ? a1[i] : 0.0, qn0, qn1, xn[2 * i], xn[2 * i + 1],
                                                        d, in->p), single, largest), i);
    } else {
        for (int64_t t = 0; t < touched; t++) {
            const int32_t i = s->touched[t];
            sr_select_push(h, key_of(sr_metric_finalize(m, a0[i], two ? a1[i] : 0.0, qn0, qn1, xn[2 * i], xn[2 * i + 1],
                                                        d, in->p), single, largest), i);
        }
        /* the rows that share nothing, best first: along the order their key never improves, so the
         * walk ends at the first one worse than a full heap's worst (for one constant value, at the
         * first that does not beat it, since later rows have larger indices) */
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = kind == SR_DISJOINT_BY_X0 ? order[w] : (int32_t)w;
            if (s->stamp[i] == j)
                continue;
            const double key = key_of(sr_metric_finalize(m, 0.0, 0.0, qn0, qn1, xn[2 * i], xn[2 * i + 1], d, in->p),
                                      single, largest);
            if (h->size == h->k) {
                const sr_select_entry worst = h->e[0];
                if (key > worst.key || (kind == SR_DISJOINT_BY_INDEX && key == worst.key && i > worst.col))
                    break;
            }
            sr_select_push(h, key, i);
        }
    }
    for (int64_t t = 0; t < touched; t++) { /* zero again for the next query */
        a0[s->touched[t]] = 0.0;
        a1[s->touched[t]] = 0.0;
    }
    sr_select_store(h, largest, single, idx, dist, r);
}

sr_status sr_cpu_knn_overlap_rows(const sr_distance_inputs *in, const int32_t *order, int mode, int64_t q0, int64_t q1,
                                  int64_t k, int64_t *idx, const sr_strided_out *dist, int threads)
{
    const sr_disjoint_order kind = sr_metric_disjoint_order(in->metric);
    const bool largest = sr_metric_is_similarity(in->metric);
    const int64_t n = in->X->nrows;
    bool failed = false;
#pragma omp parallel num_threads(team_for(threads, q1 - q0)) reduction(|| : failed)
    {
        overlap_scratch s;
        const bool ok = scratch_init(&s, n, sr_metric_accumulators(in->metric), k);
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++) {
            if (!ok)
                continue;
            query(in, order, kind, scores_densely(in, j, mode), j, &s, largest, idx + (j - q0) * k, dist, j - q0);
        }
        failed = !ok;
        scratch_free(&s);
    }
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory for per-thread scratch") : SR_SUCCESS;
}

/* One query's kept rows (columns ascending) and their distances. */
typedef struct kept_row {
    int32_t *cols;
    double *vals;
    int64_t count;
} kept_row;

static inline bool keeps(const sr_keep_rule *rule, double v)
{
    return rule->kind == SR_KEEP_AT_LEAST ? v >= rule->bound : v <= rule->bound;
}

static int by_col(const void *a, const void *b)
{
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Query j's rows within the rule, columns ascending, into out (false: out of memory). */
static bool radius_query(const sr_distance_inputs *in, const int32_t *order, sr_disjoint_order kind, bool dense,
                         int64_t j, overlap_scratch *s, const sr_keep_rule *rule, kept_row *out)
{
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows, self = rule->self_offset == SR_KEEP_NO_SELF ? -1 : j + rule->self_offset;
    const bool single = in->Q->type == SR_TYPE_FLOAT32, two = sr_metric_accumulators(m) > 1;
    const double d = (double)in->X->ncols, qn0 = in->qnorm[2 * j], qn1 = in->qnorm[2 * j + 1];
    const double *xn = in->xnorm;
    double *a0 = s->acc, *a1 = two ? s->acc + n : s->acc;
    const int64_t touched = accumulate(in, j, s, a0, a1);
    int32_t *cols = malloc((size_t)(n > 0 ? n : 1) * sizeof *cols);
    int64_t count = 0;
    bool ok = cols != NULL;
#define VALUE(i, x0acc, x1acc)                                                                                        \
    key_of(sr_metric_finalize(m, x0acc, x1acc, qn0, qn1, xn[2 * (i)], xn[2 * (i) + 1], d, in->p), single, false)
    if (ok && dense) {
        for (int64_t i = 0; i < n; i++)
            if (i != self && keeps(rule, VALUE(i, a0[i], two ? a1[i] : 0.0)))
                cols[count++] = (int32_t)i;
    } else if (ok) {
        for (int64_t t = 0; t < touched; t++) {
            const int32_t i = s->touched[t];
            if (i != self && keeps(rule, VALUE(i, a0[i], two ? a1[i] : 0.0)))
                cols[count++] = i;
        }
        /* the rows that share nothing: along the order their distance never decreases, so the walk
         * ends at the first past the radius (for one constant value, at once or never) */
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = kind == SR_DISJOINT_BY_X0 ? order[w] : (int32_t)w;
            if (s->stamp[i] == j)
                continue;
            if (!keeps(rule, VALUE(i, 0.0, 0.0)))
                break;
            if (i != self)
                cols[count++] = i;
        }
        qsort(cols, (size_t)count, sizeof *cols, by_col);
    }
    double *vals = ok ? malloc((size_t)(count > 0 ? count : 1) * sizeof *vals) : NULL;
    ok = ok && vals != NULL;
    for (int64_t t = 0; ok && t < count; t++) {
        const int32_t i = cols[t];
        vals[t] = s->stamp[i] == j ? VALUE(i, a0[i], two ? a1[i] : 0.0) : VALUE(i, 0.0, 0.0);
    }
#undef VALUE
    for (int64_t t = 0; t < touched; t++) {
        a0[s->touched[t]] = 0.0;
        a1[s->touched[t]] = 0.0;
    }
    *out = (kept_row){cols, vals, count};
    return ok;
}

sr_status sr_cpu_radius_overlap_rows(struct sr_context_s *ctx, const sr_distance_inputs *in, const int32_t *order,
                                     int mode, int64_t q0, int64_t q1, const sr_keep_rule *rule, sr_type type,
                                     struct sr_matrix_s **piece, int threads)
{
    const sr_disjoint_order kind = sr_metric_disjoint_order(in->metric);
    const int64_t rows = q1 - q0, n = in->X->nrows;
    kept_row *kept = calloc((size_t)(rows > 0 ? rows : 1), sizeof *kept);
    if (!kept)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "radius: out of host memory");
    bool failed = false;
#pragma omp parallel num_threads(team_for(threads, q1 - q0)) reduction(|| : failed)
    {
        overlap_scratch s;
        bool ok = scratch_init(&s, n, sr_metric_accumulators(in->metric), 0);
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++)
            if (ok) {
                sr_keep_rule r = *rule;
                /* the rule's self column is batch row + offset; radius_query takes the query's index */
                r.self_offset = rule->self_offset == SR_KEEP_NO_SELF ? SR_KEEP_NO_SELF : rule->self_offset - q0;
                ok = radius_query(in, order, kind, scores_densely(in, j, mode), j, &s, &r, &kept[j - q0]);
            }
        failed = !ok;
        scratch_free(&s);
    }
    int64_t total = 0;
    for (int64_t r = 0; r < rows; r++)
        total += kept[r].count;
    struct sr_matrix_s *P = NULL;
    sr_status st = failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "radius: out of host memory for per-query results")
                          : sr_matrix_alloc(ctx, rows, n, total, type, SR_HOST, &P);
    if (st == SR_SUCCESS) {
        P->rowptr[0] = 0;
        for (int64_t r = 0; r < rows; r++) {
            const int64_t at = P->rowptr[r];
            memcpy(P->colind + at, kept[r].cols, (size_t)kept[r].count * sizeof(int32_t));
            for (int64_t t = 0; t < kept[r].count; t++) {
                if (type == SR_TYPE_FLOAT32)
                    ((float *)P->values)[at + t] = (float)kept[r].vals[t];
                else
                    ((double *)P->values)[at + t] = kept[r].vals[t];
            }
            P->rowptr[r + 1] = at + kept[r].count;
        }
        P->nnz = total;
        *piece = P;
    }
    for (int64_t r = 0; r < rows; r++) {
        free(kept[r].cols);
        free(kept[r].vals);
    }
    free(kept);
    return st;
}

typedef struct keyed_row {
    double key;
    int32_t row;
} keyed_row;

static int by_key_then_row(const void *a, const void *b)
{
    const keyed_row *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

sr_status sr_cpu_disjoint_order(const double *xnorm, int64_t n, int32_t *order)
{
    keyed_row *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    if (!rows)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory ordering %lld index rows", (long long)n);
    for (int64_t i = 0; i < n; i++)
        rows[i] = (keyed_row){xnorm[2 * i], (int32_t)i};
    qsort(rows, (size_t)n, sizeof *rows, by_key_then_row);
    for (int64_t i = 0; i < n; i++)
        order[i] = rows[i].row;
    free(rows);
    return SR_SUCCESS;
}
