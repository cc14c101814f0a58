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
#include "cpu_chebyshev.h"

typedef struct overlap_scratch {
    double *acc;      /* n per accumulator plane, zero between queries */
    int64_t *stamp;   /* per index row: the last query that touched it */
    int32_t *touched; /* the rows the current query touched */
    sr_select_heap heap;
    bool chebyshev;   /* the union walk for the rows a query touches */
    sr_cheb_scratch cheb;
} overlap_scratch;

static bool scratch_init(overlap_scratch *s, const sr_distance_inputs *in, int64_t k)
{
    const int64_t n = in->X->nrows;
    const int nacc = sr_metric_accumulators(in->metric);
    s->chebyshev = in->metric == SR_METRIC_CHEBYSHEV;
    s->cheb = (sr_cheb_scratch){0};
    if (s->chebyshev && !sr_cheb_init(&s->cheb, in->X->ncols, sr_cheb_widest(in->Q)))
        return false;
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
    sr_cheb_free(&s->cheb);
}

static inline double value_at(const struct sr_matrix_s *A, int64_t e)
{
    return A->type == SR_TYPE_FLOAT32 ? (double)((const float *)A->values)[e] : ((const double *)A->values)[e];
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

/* The distance of query j to index row i, rounded to the output type: the accumulated form for a
 * row the query touched (Chebyshev: the union walk), the no-overlap form from the norms else. */
static inline double row_value(const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t i)
{
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows;
    const double d = (double)in->X->ncols, *qn = in->qnorm + 2 * j, *xn = in->xnorm + 2 * i;
    double v;
    if (s->stamp[i] != j)
        v = sr_metric_disjoint_value(m, qn[0], qn[1], xn[0], xn[1], d, in->p);
    else if (s->chebyshev)
        v = sr_cheb_row(&s->cheb, in->X, j, i);
    else
        v = sr_metric_finalize(m, s->acc[i], sr_metric_accumulators(m) > 1 ? s->acc[n + i] : 0.0, qn[0], qn[1], xn[0],
                               xn[1], d, in->p);
    return in->Q->type == SR_TYPE_FLOAT32 ? (double)(float)v : v;
}

/* Zeroes the accumulators query j touched, for the next query. */
static void clear_touched(overlap_scratch *s, int64_t touched, int64_t n, int nacc)
{
    for (int64_t t = 0; t < touched; t++)
        for (int a = 0; a < nacc; a++)
            s->acc[(int64_t)a * n + s->touched[t]] = 0.0;
}

/* Query j's k nearest into idx (k a row) and row r of dist. */
static void query(const sr_distance_inputs *in, const int32_t *order, sr_disjoint_order kind, bool dense, int64_t j,
                  overlap_scratch *s, bool largest, int64_t *idx, const sr_strided_out *dist, int64_t r)
{
    const int64_t n = in->X->nrows;
    const int nacc = sr_metric_accumulators(in->metric);
    const double sign = largest ? -1.0 : 1.0; /* the heap keeps the smallest keys */
    const int64_t touched = accumulate(in, j, s, s->acc, nacc > 1 ? s->acc + n : s->acc);
    if (s->chebyshev)
        sr_cheb_prepare(&s->cheb, in->Q, j);
    sr_select_heap *h = &s->heap;
    if (dense) { /* every row, in index order */
        for (int64_t i = 0; i < n; i++)
            sr_select_push(h, sign * row_value(in, s, j, i), i);
    } else {
        for (int64_t t = 0; t < touched; t++)
            sr_select_push(h, sign * row_value(in, s, j, s->touched[t]), s->touched[t]);
        /* the rows that share nothing, best first: along the order their key never improves, so the
         * walk ends at the first one worse than a full heap's worst (for one constant value, at the
         * first that does not beat it, since later rows have larger indices) */
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = kind == SR_DISJOINT_BY_X0 ? order[w] : (int32_t)w;
            if (s->stamp[i] == j)
                continue;
            const double key = sign * row_value(in, s, j, i);
            if (h->size == h->k) {
                const sr_select_entry worst = h->e[0];
                if (key > worst.key || (kind == SR_DISJOINT_BY_INDEX && key == worst.key && i > worst.col))
                    break;
            }
            sr_select_push(h, key, i);
        }
    }
    clear_touched(s, touched, n, nacc);
    sr_select_store(h, largest, in->Q->type == SR_TYPE_FLOAT32, idx, dist, r);
}

sr_status sr_cpu_knn_overlap_rows(const sr_distance_inputs *in, const int32_t *order, int mode, int64_t q0, int64_t q1,
                                  int64_t k, int64_t *idx, const sr_strided_out *dist, int threads)
{
    const sr_disjoint_order kind = sr_metric_disjoint_order(in->metric);
    const bool largest = sr_metric_is_similarity(in->metric);
    bool failed = false;
#pragma omp parallel num_threads(team_for(threads, q1 - q0)) reduction(|| : failed)
    {
        overlap_scratch s;
        const bool ok = scratch_init(&s, in, k);
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
    const int64_t n = in->X->nrows, self = rule->self_offset == SR_KEEP_NO_SELF ? -1 : j + rule->self_offset;
    const int nacc = sr_metric_accumulators(in->metric);
    const int64_t touched = accumulate(in, j, s, s->acc, nacc > 1 ? s->acc + n : s->acc);
    if (s->chebyshev)
        sr_cheb_prepare(&s->cheb, in->Q, j);
    int32_t *cols = malloc((size_t)(n > 0 ? n : 1) * sizeof *cols);
    int64_t count = 0;
    bool ok = cols != NULL;
    if (ok && dense) {
        for (int64_t i = 0; i < n; i++)
            if (i != self && keeps(rule, row_value(in, s, j, i)))
                cols[count++] = (int32_t)i;
    } else if (ok) {
        for (int64_t t = 0; t < touched; t++) {
            const int32_t i = s->touched[t];
            if (i != self && keeps(rule, row_value(in, s, j, i)))
                cols[count++] = i;
        }
        /* the rows that share nothing: along the order their distance never decreases, so the walk
         * ends at the first past the radius (for one constant value, at once or never) */
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = kind == SR_DISJOINT_BY_X0 ? order[w] : (int32_t)w;
            if (s->stamp[i] == j)
                continue;
            if (!keeps(rule, row_value(in, s, j, i)))
                break;
            if (i != self)
                cols[count++] = i;
        }
        qsort(cols, (size_t)count, sizeof *cols, by_col);
    }
    double *vals = ok ? malloc((size_t)(count > 0 ? count : 1) * sizeof *vals) : NULL;
    ok = ok && vals != NULL;
    for (int64_t t = 0; ok && t < count; t++)
        vals[t] = row_value(in, s, j, cols[t]);
    clear_touched(s, touched, n, nacc);
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
        bool ok = scratch_init(&s, in, 0);
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
