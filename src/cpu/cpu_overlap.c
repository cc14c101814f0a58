/* k-NN and radius neighbours whose work follows the overlap: a query's distances are accumulated,
 * through the index's inverted form, only for the index rows that share a column with it (as the
 * dense path does), and only those rows are finalized. Every other row shares nothing with the query, so its
 * distance is the metric's no-overlap value, a function of the row's norms
 * (sr_metric_disjoint_order): the best of them come first along an order of the index rows
 * computed once, and the walk stops at the first one that cannot enter the k best (or lies past
 * the radius). A query whose overlap is most of the index is scored densely, row by row, as the
 * dense path does. Results are the dense path's exactly: the same accumulation order, the same
 * finalizer, the same rounding to the output type before selection, ties to the smaller index. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/error.h"
#include "../core/matrix.h"
#include "../core/memory.h"
#include "../core/types.h"
#include "../semiring/metric.h"
#include "cpu.h"
#include "cpu_chebyshev.h"
#include "cpu_clones.h"

/* A row a radius query keeps, and its distance. */
typedef struct kept_entry {
    int32_t col;
    double val;
} kept_entry;

typedef struct overlap_scratch {
    double *acc;      /* n per accumulator plane, zero between queries */
    int64_t *stamp;   /* per index row: the last query that touched it */
    int32_t *touched; /* the rows the current query touched */
    int64_t *cursor;  /* a dense query's place in each of its columns' index rows */
    int64_t cursors;  /* room in cursor */
    sr_select_heap heap;
    kept_entry *kept; /* radius: one query's kept rows, before they are copied out */
    const double *x0; /* the index rows' first norms side by side (the marks read them 4 a step) */
    double x0_max;    /* the largest of them */
    bool chebyshev;   /* the union walk for the rows a query touches */
    sr_cheb_scratch cheb;
} overlap_scratch;

static bool scratch_init(overlap_scratch *s, const sr_distance_inputs *in, int64_t k, const double *x0,
                         double x0_max)
{
    const int64_t n = in->X->nrows;
    *s = (overlap_scratch){0};
    s->x0 = x0;
    s->x0_max = x0_max;
    s->chebyshev = in->metric == SR_METRIC_CHEBYSHEV;
    if (s->chebyshev && !sr_cheb_init(&s->cheb, in->X->ncols, sr_cheb_widest(in->Q)))
        return false;
    s->acc = sr_calloc((size_t)(n > 0 ? n : 1) * (size_t)sr_metric_accumulators(in->metric), sizeof *s->acc);
    s->heap = (sr_select_heap){sr_malloc((size_t)(k > 0 ? k : 1) * sizeof(sr_select_entry)), 0, k};
    return s->acc && s->heap.e;
}

/* The touched-row bookkeeping, made at a thread's first query that walks (a query scored densely
 * needs none, and setting the stamps costs O(n)). */
static bool walk_ready(overlap_scratch *s, int64_t n)
{
    if (s->stamp)
        return true;
    const size_t rows = (size_t)(n > 0 ? n : 1);
    s->stamp = sr_malloc(rows * sizeof *s->stamp);
    s->touched = sr_malloc(rows * sizeof *s->touched);
    if (!s->stamp || !s->touched)
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
    free(s->cursor);
    free(s->heap.e);
    free(s->kept);
    sr_cheb_free(&s->cheb);
}

static inline double value_at(const struct sr_matrix_s *A, int64_t e)
{
    return A->type == SR_TYPE_FLOAT32 ? (double)((const float *)A->values)[e] : ((const double *)A->values)[e];
}

/* Zeroes the accumulators of the rows a walking query touched, for the next query. */
static void clear_touched(const sr_distance_inputs *in, overlap_scratch *s, int64_t touched)
{
    const int64_t n = in->X->nrows;
    const int nacc = sr_metric_accumulators(in->metric);
    for (int64_t t = 0; t < touched; t++)
        for (int a = 0; a < nacc; a++)
            s->acc[(int64_t)a * n + s->touched[t]] = 0.0;
}

/* Query j's accumulators (the dense path's loop) for the index rows below b1 that its columns
 * reach from where each column's cursor stands (start_cursors; a column's index rows ascend). A
 * dense query takes slices of rows one after another (each stays in L1 while it is marked,
 * finalized and cleared), a walking one everything at once; either way a row adds its products
 * in the query's column order, so its sums are the dense path's, bit for bit. The dot-product
 * metrics (cosine, euclidean, inner product, ...) add q·x in a loop of their own: the metric's
 * switch per entry cost a fifth of a k-NN on word counts. */
static void accumulate_slice(const sr_distance_inputs *in, int64_t j, overlap_scratch *s, int64_t b1)
{
    const struct sr_matrix_s *Q = in->Q, *XT = in->XT;
    double *a0 = s->acc, *a1 = sr_metric_accumulators(in->metric) > 1 ? s->acc + in->X->nrows : s->acc;
    const bool product = sr_metric_kind_of(in->metric) == SR_MK_PRODUCT;
    const int32_t *rows = XT->colind;
    for (int64_t e = Q->rowptr[j]; e < Q->rowptr[j + 1]; e++) {
        const double q = value_at(Q, e);
        int64_t t = s->cursor[e - Q->rowptr[j]];
        const int64_t t1 = XT->rowptr[Q->colind[e] + 1];
        if (product && XT->type == SR_TYPE_FLOAT32) {
            const float *x = XT->values;
            for (; t < t1 && rows[t] < b1; t++)
                a0[rows[t]] += q * (double)x[t];
        } else if (product) {
            const double *x = XT->values;
            for (; t < t1 && rows[t] < b1; t++)
                a0[rows[t]] += q * x[t];
        } else {
            for (; t < t1 && rows[t] < b1; t++)
                sr_metric_intersect(in->metric, q, value_at(XT, t), in->p, &a0[rows[t]], &a1[rows[t]]);
        }
        s->cursor[e - Q->rowptr[j]] = t;
    }
}

/* Rows per slice of a dense query: 32 KiB of accumulators a plane (1,024 to 16,384 measured within
 * 5% of each other on word counts; the gain over one pass is not re-walking the columns to clear). */
#define DENSE_SLICE 4096

/* Each of query j's columns from its first index row. */
static void start_cursors(const sr_distance_inputs *in, int64_t j, overlap_scratch *s)
{
    const struct sr_matrix_s *Q = in->Q;
    for (int64_t e = Q->rowptr[j]; e < Q->rowptr[j + 1]; e++)
        s->cursor[e - Q->rowptr[j]] = in->XT->rowptr[Q->colind[e]];
}

/* A walking query's accumulators, with the rows it reaches stamped and listed (how many: returned). */
static int64_t accumulate_touched(const sr_distance_inputs *in, int64_t j, overlap_scratch *s)
{
    const struct sr_matrix_s *Q = in->Q, *XT = in->XT;
    const int32_t *rows = XT->colind;
    int64_t touched = 0;
    for (int64_t e = Q->rowptr[j]; e < Q->rowptr[j + 1]; e++)
        for (int64_t t = XT->rowptr[Q->colind[e]]; t < XT->rowptr[Q->colind[e] + 1]; t++)
            if (s->stamp[rows[t]] != j) {
                s->stamp[rows[t]] = j;
                s->touched[touched++] = rows[t];
            }
    start_cursors(in, j, s);
    accumulate_slice(in, j, s, in->X->nrows);
    return touched;
}

/* Room for query j's cursors. */
static bool cursors_ready(overlap_scratch *s, const struct sr_matrix_s *Q, int64_t j)
{
    const int64_t need = Q->rowptr[j + 1] - Q->rowptr[j];
    if (need <= s->cursors)
        return true;
    int64_t *c = sr_realloc(s->cursor, (size_t)need * sizeof *c);
    if (!c)
        return false;
    s->cursor = c;
    s->cursors = need;
    return true;
}

/* No more threads than queries: each thread's scratch costs O(n) to set up. */
static int team_for(int threads, int64_t queries)
{
    return queries < threads ? (int)(queries > 0 ? queries : 1) : threads;
}

/* The marking loops: branch-free, so that they vectorize. x86-64's baseline (SSE2) leaves a loop
 * that mixes doubles and bytes scalar; an AVX2 clone (cpu_clones.h) runs them 4 rows a step (one
 * dense query over 20,000 word-count rows spent as long marking as accumulating before). */

/* The cost estimate: the index entries query j's columns reach bound the rows it touches. A
 * walking query pays for each of them (stamps, a touched list, scattered accumulators), a dense one
 * for every row (its marks) and for the reached entries in L1-sized slices; so it scores densely
 * past a share of the index set by the marks' cost: 1/8 where they run 4 rows a step (the AVX2
 * clones), 1/2 where they are scalar. On the PyPI sets (2 cores, 1,000 queries) 1/8 took the
 * batch from 0.13-0.14 to 0.09-0.10 s (249K summaries) and 0.75-0.78 to 0.49-0.53 s (886K names),
 * though the median single name query went from 0.52 to 0.81 ms (mode > 0: never dense). */
static int dense_share(void)
{
#ifdef SR_AVX2_CLONES
    return __builtin_cpu_supports("avx2") ? 8 : 2; /* a read of the CPU model the loader filled in */
#else
    return 2;
#endif
}

static bool scores_densely(const sr_distance_inputs *in, int64_t j, int mode)
{
    int64_t reach = 0;
    for (int64_t e = in->Q->rowptr[j]; e < in->Q->rowptr[j + 1]; e++)
        reach += in->XT->rowptr[in->Q->colind[e] + 1] - in->XT->rowptr[in->Q->colind[e]];
    return mode < 0 && dense_share() * reach > in->X->nrows;
}

/* The distance of query j to index row i as the dense path computes it, rounded to the output
 * type: the finalizer on the row's accumulators (0 for a row the query does not reach, where it
 * gives the no-overlap value), or Chebyshev's union walk. */
static inline double dense_value(const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t i)
{
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows;
    const double d = (double)in->X->ncols, *qn = in->qnorm + 2 * j, *xn = in->xnorm + 2 * i;
    const double a1 = sr_metric_accumulators(m) > 1 ? s->acc[n + i] : 0.0;
    const double v = s->chebyshev ? sr_cheb_row(&s->cheb, in->X, j, i)
                                  : sr_metric_finalize(m, s->acc[i], a1, qn[0], qn[1], xn[0], xn[1], d, in->p);
    return in->Q->type == SR_TYPE_FLOAT32 ? (double)(float)v : v;
}

/* The same for a walking query: a row it did not touch takes the no-overlap value from the norms
 * (no union walk for Chebyshev). */
static inline double row_value(const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t i)
{
    if (s->stamp[i] == j)
        return dense_value(in, s, j, i);
    const double *qn = in->qnorm + 2 * j, *xn = in->xnorm + 2 * i;
    const double v = sr_metric_disjoint_value(in->metric, qn[0], qn[1], xn[0], xn[1], (double)in->X->ncols, in->p);
    return in->Q->type == SR_TYPE_FLOAT32 ? (double)(float)v : v;
}

/* Whether an index row's distance to a query is certainly past `worst` (a full heap's worst key,
 * or the radius) from its accumulator alone, without the finalizer's square root and division.
 * Such a distance is past worst by a margin (1e-6 relative) far beyond every rounding between
 * this test and the finalizer (a few ulps, and the float32 output's 6e-8), so no tie is decided
 * here and the selection is the exact path's. For the metrics whose finalizer costs most of a
 * k-NN on word counts: cosine (q.x^2 against (1 - worst)^2 |q|^2 |x|^2), the expanded Euclidean
 * forms (|q|^2 + |x|^2 - 2 q.x, the finalizer's own sum, against worst^2, or worst) and the
 * metrics rising with their union sum (that sum against the finalizer's inverse at worst: for
 * Manhattan the finalizer is nearly free, but a row it rules out is neither finalized nor offered
 * to the heap); never asked for the largest-first inner product.
 *
 * past_limit gives the query's side of the test (false where no row can be shown past: another
 * metric, or a bound that leaves no room); the row tests combine their comparisons with &, not
 * &&, so a loop of them has no branches and vectorizes. */

/* Whether the metric's distance is a rising function of s = q0 + x0 + a0 (its union sum): the
 * unexpanded Euclidean forms, Manhattan, Minkowski, Canberra, Hamming, Jensen-Shannon. */
static inline bool union_sum_metric(sr_metric m)
{
    return m == SR_METRIC_L1 || m == SR_METRIC_SQEUCLIDEAN_UNEXPANDED || m == SR_METRIC_CANBERRA ||
           m == SR_METRIC_L2_UNEXPANDED || m == SR_METRIC_HAMMING || m == SR_METRIC_JENSEN_SHANNON ||
           m == SR_METRIC_MINKOWSKI;
}

/* The union sum at which such a distance reaches `bound` (the finalizer's inverse). */
static inline double union_sum_at(sr_metric m, double bound, double d, double p)
{
    switch (m) {
    case SR_METRIC_L2_UNEXPANDED:
        return bound * bound;
    case SR_METRIC_HAMMING:
        return bound * d;
    case SR_METRIC_JENSEN_SHANNON:
        return 2.0 * bound * bound;
    case SR_METRIC_MINKOWSKI:
        return pow(bound, p);
    default:
        return bound;
    }
}

static inline bool past_limit(const sr_distance_inputs *in, double worst, double q0, double *limit)
{
    const sr_metric m = in->metric;
    const double margin = 1e-6 * (1.0 + fabs(worst));
    if (m == SR_METRIC_COSINE) {
        const double room = 1.0 - worst - margin;
        *limit = room * room * q0;
        return room > 0.0;
    }
    if (m == SR_METRIC_L2 || m == SR_METRIC_SQEUCLIDEAN) {
        const double bound = worst + margin;
        *limit = m == SR_METRIC_L2 ? bound * bound : bound;
        return worst >= 0.0;
    }
    if (union_sum_metric(m)) { /* the margin is far past the rounding of the finalizer and of its inverse */
        *limit = union_sum_at(m, worst + margin, (double)in->X->ncols, in->p);
        return worst >= 0.0 && isfinite(*limit);
    }
    return false;
}

static inline int cosine_past(double a0, double q0, double x0, double limit)
{
    const double both = q0 * x0;
    return (a0 >= 0.0) & (a0 < 1e150) & (both > 2.2250738585072014e-308) & (both <= 1.7976931348623157e308) &
           (a0 * a0 < limit * x0);
}

static inline int euclidean_past(double a0, double q0, double x0, double limit)
{
    const double sq = q0 + x0 - 2.0 * a0;
    return (sq > limit) & (sq > 1e-12 * (q0 + x0)) & (sq < 1.7976931348623157e308);
}

/* The union sum as the finalizer forms it, (q0 + x0) + a0, past the limit; and past 1e-30, so
 * that no distance the output type would round to 0 is called past a bound of 0. */
static inline int union_past(double a0, double q0, double x0, double limit)
{
    const double sum = q0 + x0 + a0;
    return (sum > limit) & (sum > 1e-30) & (sum < 1.7976931348623157e308);
}

/* A query's past_limit for the last bound it was asked about: row after row is tested against a
 * heap's worst that seldom moves, or a fixed radius, and Minkowski's inverse is a pow. One a
 * query (the limit depends on its norm); `bound` starts as NaN, which equals nothing. */
typedef struct limit_memo {
    double bound, limit;
    bool past; /* past_limit's answer for bound */
} limit_memo;
#define LIMIT_MEMO_NONE ((limit_memo){NAN, 0.0, false})

/* The test for index row i and query j. */
static inline bool cannot_beat(const sr_distance_inputs *in, const overlap_scratch *s, int64_t j, int64_t i,
                               double worst, limit_memo *memo)
{
    const double q0 = in->qnorm[2 * j], x0 = in->xnorm[2 * i];
    if (!(memo->bound == worst)) {
        memo->bound = worst;
        memo->past = past_limit(in, worst, q0, &memo->limit);
    }
    if (!memo->past)
        return false;
    const double limit = memo->limit;
    if (in->metric == SR_METRIC_COSINE)
        return cosine_past(s->acc[i], q0, x0, limit);
    return union_sum_metric(in->metric) ? union_past(s->acc[i], q0, x0, limit)
                                        : euclidean_past(s->acc[i], q0, x0, limit);
}

SR_AVX2_CLONE static void mark_cosine(const double *restrict acc, const double *restrict x0, double q0, double limit,
                                      int64_t n, uint8_t *restrict mark)
{
    for (int64_t i = 0; i < n; i++)
        mark[i] = (uint8_t)(cosine_past(acc[i], q0, x0[i], limit) ^ 1);
}

SR_AVX2_CLONE static void mark_euclidean(const double *restrict acc, const double *restrict x0, double q0, double limit,
                                         int64_t n, uint8_t *restrict mark)
{
    for (int64_t i = 0; i < n; i++)
        mark[i] = (uint8_t)(euclidean_past(acc[i], q0, x0[i], limit) ^ 1);
}

SR_AVX2_CLONE static void mark_union(const double *restrict acc, const double *restrict x0, double q0, double limit,
                                     int64_t n, uint8_t *restrict mark)
{
    for (int64_t i = 0; i < n; i++)
        mark[i] = (uint8_t)(union_past(acc[i], q0, x0[i], limit) ^ 1);
}

/* cosine_past where its overflow guards cannot fail (|q|²·|x|² far below overflow for every row,
 * so q.x² too): q.x² against the limit alone. It differs only for rows with q.x < 0 (cosine past
 * 1) or |q|²·|x|² below the smallest normal double (q.x = 0 then), which it may call past where
 * the full test finalizes them: such a distance is at least 1, and the limit exists only when the
 * bound is below 1 (past_limit), so no row that could be kept is skipped. */
SR_AVX2_CLONE static void mark_cosine_plain(const double *restrict acc, const double *restrict x0, double limit,
                                            int64_t n, uint8_t *restrict mark)
{
    for (int64_t i = 0; i < n; i++)
        mark[i] = (uint8_t)!(acc[i] * acc[i] < limit * x0[i]);
}

/* euclidean_past where its guards cannot fail: the limit is above 1e-12·(|q|² + |x|²) for every
 * row, and |q|² + |x|² (so the sum, at most twice it) is far from overflowing; then the sum
 * against the limit alone decides, the same way (a radius query's fixed bound, mostly). */
SR_AVX2_CLONE static void mark_euclidean_plain(const double *restrict acc, const double *restrict x0, double q0,
                                               double limit, int64_t n, uint8_t *restrict mark)
{
    for (int64_t i = 0; i < n; i++)
        mark[i] = (uint8_t)!(q0 + x0[i] - 2.0 * acc[i] > limit);
}

/* The index rows' first norms side by side and *max the largest, for the metrics the marks know
 * (NULL for the others, and when there is no memory for them: the marks are then skipped, the
 * results the same). */
static double *first_norms(const sr_distance_inputs *in, double *max)
{
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows;
    *max = 0.0;
    if (m != SR_METRIC_COSINE && m != SR_METRIC_L2 && m != SR_METRIC_SQEUCLIDEAN && !union_sum_metric(m))
        return NULL;
    double *x0 = sr_malloc((size_t)(n > 0 ? n : 1) * sizeof *x0);
    for (int64_t i = 0; x0 && i < n; i++) {
        x0[i] = in->xnorm[2 * i];
        *max = x0[i] > *max ? x0[i] : *max;
    }
    return x0;
}

/* The test for rows [i0, i1) at once: mark[i - i0] = 0 where it holds, 1 where the row must be
 * finalized (the test row by row cost a dense query about 1.5 ns a row, most of its time on word
 * counts). False for the metrics the test does not know. */
static bool mark_candidates(const sr_distance_inputs *in, const overlap_scratch *s, int64_t j, int64_t i0, int64_t i1,
                            double worst, uint8_t *mark)
{
    const sr_metric m = in->metric;
    if (!s->x0)
        return false;
    const double q0 = in->qnorm[2 * j];
    double limit;
    if (!past_limit(in, worst, q0, &limit))
        memset(mark, 1, (size_t)(i1 - i0));
    else if (union_sum_metric(m))
        mark_union(s->acc + i0, s->x0 + i0, q0, limit, i1 - i0, mark);
    else if (m == SR_METRIC_COSINE && q0 * s->x0_max < 1e300)
        mark_cosine_plain(s->acc + i0, s->x0 + i0, limit, i1 - i0, mark);
    else if (m == SR_METRIC_COSINE)
        mark_cosine(s->acc + i0, s->x0 + i0, q0, limit, i1 - i0, mark);
    else if (limit >= 1e-12 * (q0 + s->x0_max) && q0 + s->x0_max < 1e300)
        mark_euclidean_plain(s->acc + i0, s->x0 + i0, q0, limit, i1 - i0, mark);
    else
        mark_euclidean(s->acc + i0, s->x0 + i0, q0, limit, i1 - i0, mark);
    return true;
}

/* The first marked row in [i, b1) of a block marked from b0 (b1 when none), eight marks a word:
 * most words are 0. */
static inline int64_t next_marked(const uint8_t *mark, int64_t b0, int64_t i, int64_t b1)
{
    while (i < b1) {
        if (b1 - i >= 8) {
            uint64_t w;
            memcpy(&w, mark + (i - b0), 8);
            if (w == 0) {
                i += 8;
                continue;
            }
        }
        if (mark[i - b0])
            return i;
        i++;
    }
    return b1;
}

#define MARK_BLOCK 1024

/* How query j walks the rows it shares nothing with: along the order (dir 1), against it (-1),
 * or by index (0: their distance is one constant). A row ends the walk when its value is past the
 * bound by more than `slack`: correlation's computed values follow its key only up to rounding
 * (values in [0, 2] carry about 1e-15 of it, and float32 outputs one more rounding), so its walk
 * goes on a little past the bound; the other keys bound their values exactly. */
typedef struct walk_plan {
    int dir;
    double slack;
} walk_plan;

static walk_plan walk_of(const sr_distance_inputs *in, sr_disjoint_order kind, int64_t j)
{
    if (kind == SR_DISJOINT_BY_INDEX)
        return (walk_plan){0, 0.0};
    if (in->metric != SR_METRIC_CORRELATION)
        return (walk_plan){1, 0.0};
    const double d = (double)in->X->ncols, q0 = in->qnorm[2 * j], q1 = in->qnorm[2 * j + 1], vq = q0 - q1 * q1 / d;
    if (!(vq > 0.0) || q1 == 0.0) /* every no-overlap distance is 1 */
        return (walk_plan){0, 0.0};
    return (walk_plan){q1 > 0.0 ? 1 : -1, in->Q->type == SR_TYPE_FLOAT32 ? 1e-6 : 1e-12};
}

/* The row at step w of the walk over n rows. */
static inline int32_t walk_row(const int32_t *order, walk_plan plan, int64_t n, int64_t w)
{
    return plan.dir == 0 ? (int32_t)w : plan.dir > 0 ? order[w] : order[n - 1 - w];
}

/* A densely scored query, every row in index order, a slice at a time: the slice is accumulated
 * (accumulate_slice), handed to `visit` a block of MARK_BLOCK rows at a time while it is in L1,
 * then cleared. */
typedef void (*block_visit)(void *user, const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t b0,
                            int64_t b1);

static void score_densely(const sr_distance_inputs *in, int64_t j, overlap_scratch *s, block_visit visit, void *user)
{
    const int64_t n = in->X->nrows;
    start_cursors(in, j, s);
    const int nacc = sr_metric_accumulators(in->metric);
    for (int64_t c0 = 0; c0 < n; c0 += DENSE_SLICE) {
        const int64_t c1 = c0 + DENSE_SLICE < n ? c0 + DENSE_SLICE : n;
        accumulate_slice(in, j, s, c1);
        for (int64_t b0 = c0; b0 < c1; b0 += MARK_BLOCK)
            visit(user, in, s, j, b0, b0 + MARK_BLOCK < c1 ? b0 + MARK_BLOCK : c1);
        for (int a = 0; a < nacc; a++)
            memset(s->acc + (int64_t)a * n + c0, 0, (size_t)(c1 - c0) * sizeof *s->acc);
    }
}

/* A k-NN query's block: the rows that may enter the heap marked, then finalized and offered. */
typedef struct knn_visit {
    sr_select_heap *h;
    bool filter; /* cannot_beat applies (its keys are the distances) */
    double sign;
} knn_visit;

static void knn_block(void *user, const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t b0, int64_t b1)
{
    const knn_visit *v = user;
    sr_select_heap *h = v->h;
    uint8_t mark[MARK_BLOCK];
    if (!(v->filter && h->size == h->k && mark_candidates(in, s, j, b0, b1, h->e[0].key, mark))) {
        limit_memo memo = LIMIT_MEMO_NONE;
        for (int64_t i = b0; i < b1; i++)
            if (!(v->filter && h->size == h->k && cannot_beat(in, s, j, i, h->e[0].key, &memo)))
                sr_select_offer(h, v->sign * dense_value(in, s, j, i), i);
        return;
    }
    for (int64_t i = next_marked(mark, b0, b0, b1); i < b1; i = next_marked(mark, b0, i + 1, b1))
        sr_select_offer(h, v->sign * dense_value(in, s, j, i), i);
}

/* Query j's k nearest into idx (k a row) and row r of dist. */
static void query(const sr_distance_inputs *in, const int32_t *order, sr_disjoint_order kind, bool dense, int64_t j,
                  overlap_scratch *s, bool largest, int64_t *idx, const sr_strided_out *dist, int64_t r)
{
    const int64_t n = in->X->nrows;
    const double sign = largest ? -1.0 : 1.0; /* the heap keeps the smallest keys */
    const int64_t touched = dense ? 0 : accumulate_touched(in, j, s);
    if (s->chebyshev)
        sr_cheb_prepare(&s->cheb, in->Q, j);
    sr_select_heap *h = &s->heap;
    const bool filter = !largest && !s->chebyshev; /* cannot_beat's keys are the distances */
    if (dense) { /* every row, in index order; the rows that may enter marked first, a block at a time,
                  * with the block's first worst key (it only falls) */
        knn_visit v = {h, filter, sign};
        score_densely(in, j, s, knn_block, &v);
    } else {
        limit_memo memo = LIMIT_MEMO_NONE;
        for (int64_t t = 0; t < touched; t++) {
            const int32_t i = s->touched[t];
            if (!(filter && h->size == h->k && cannot_beat(in, s, j, i, h->e[0].key, &memo)))
                sr_select_offer(h, sign * row_value(in, s, j, i), i);
        }
        /* the rows that share nothing, best first: along the walk their value never improves, so it
         * ends at the first one worse than a full heap's worst (for one constant value, at the
         * first that does not beat it, since later rows have larger indices) */
        const walk_plan plan = walk_of(in, kind, j);
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = walk_row(order, plan, n, w);
            if (s->stamp[i] == j)
                continue;
            const double key = sign * row_value(in, s, j, i);
            if (h->size == h->k) {
                const sr_select_entry worst = h->e[0];
                if (plan.dir == 0 ? key > worst.key || (key == worst.key && i > worst.col)
                                  : key > worst.key + plan.slack)
                    break;
            }
            sr_select_offer(h, key, i);
        }
    }
    if (!dense)
        clear_touched(in, s, touched);
    sr_select_store(h, largest, in->Q->type == SR_TYPE_FLOAT32, idx, dist, r);
}

sr_status sr_cpu_knn_overlap_rows(const sr_distance_inputs *in, const int32_t *order, int mode, int64_t q0, int64_t q1,
                                  int64_t k, int64_t *idx, const sr_strided_out *dist, int threads)
{
    const sr_disjoint_order kind = sr_metric_disjoint_order(in->metric);
    const bool largest = sr_metric_is_similarity(in->metric);
    double x0_max;
    double *x0 = first_norms(in, &x0_max);
    bool failed = false;
#pragma omp parallel num_threads(team_for(threads, q1 - q0)) reduction(|| : failed)
    {
        overlap_scratch s;
        bool ok = scratch_init(&s, in, k, x0, x0_max);
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++) {
            if (!ok)
                continue;
            const bool dense = scores_densely(in, j, mode);
            if (!cursors_ready(&s, in->Q, j) || (!dense && !walk_ready(&s, in->X->nrows))) {
                ok = false;
                continue;
            }
            query(in, order, kind, dense, j, &s, largest, idx + (j - q0) * k, dist, j - q0);
        }
        failed = !ok;
        scratch_free(&s);
    }
    free(x0);
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory for per-thread scratch") : SR_SUCCESS;
}

/* One query's kept rows, columns ascending. */
typedef struct kept_row {
    kept_entry *at;
    int64_t count;
} kept_row;

static inline bool keeps(const sr_keep_rule *rule, double v)
{
    return rule->kind == SR_KEEP_AT_LEAST ? v >= rule->bound : v <= rule->bound;
}

static int by_col(const void *a, const void *b)
{
    const int32_t x = ((const kept_entry *)a)->col, y = ((const kept_entry *)b)->col;
    return (x > y) - (x < y);
}

/* Query j's rows within the rule, columns ascending, into out (false: out of memory). They gather
 * in the thread's scratch (n entries at most), and only what is kept is copied out. */
/* A radius query's block: the rows inside the radius's margin marked, then finalized and kept. */
typedef struct radius_visit {
    const sr_keep_rule *rule;
    bool filter; /* cannot_beat applies */
    int64_t self; /* the query's own row, left out (-1: none) */
    kept_entry *kept;
    int64_t count;
} radius_visit;

static void radius_block(void *user, const sr_distance_inputs *in, overlap_scratch *s, int64_t j, int64_t b0,
                         int64_t b1)
{
    radius_visit *v = user;
    uint8_t mark[MARK_BLOCK];
    if (!(v->filter && mark_candidates(in, s, j, b0, b1, v->rule->bound, mark)))
        memset(mark, 1, (size_t)(b1 - b0));
    for (int64_t i = next_marked(mark, b0, b0, b1); i < b1; i = next_marked(mark, b0, i + 1, b1)) {
        const double d = dense_value(in, s, j, i);
        if (i != v->self && keeps(v->rule, d))
            v->kept[v->count++] = (kept_entry){(int32_t)i, d};
    }
}

static bool radius_query(const sr_distance_inputs *in, const int32_t *order, sr_disjoint_order kind, bool dense,
                         int64_t j, overlap_scratch *s, const sr_keep_rule *rule, kept_row *out)
{
    const int64_t n = in->X->nrows, self = rule->self_offset == SR_KEEP_NO_SELF ? -1 : j + rule->self_offset;
    if (!s->kept && !(s->kept = sr_malloc((size_t)(n > 0 ? n : 1) * sizeof *s->kept)))
        return false;
    const int64_t touched = dense ? 0 : accumulate_touched(in, j, s);
    if (s->chebyshev)
        sr_cheb_prepare(&s->cheb, in->Q, j);
    kept_entry *kept = s->kept;
    int64_t count = 0;
    /* distances past the radius by the margin need no finalizer (cannot_beat) */
    const bool filter = rule->kind == SR_KEEP_AT_MOST && !s->chebyshev;
    if (dense) { /* a block at a time, the rows inside the radius's margin marked first */
        radius_visit v = {rule, filter, self, kept, 0};
        score_densely(in, j, s, radius_block, &v);
        count = v.count;
    } else {
        limit_memo memo = LIMIT_MEMO_NONE;
        for (int64_t t = 0; t < touched; t++) {
            const int32_t i = s->touched[t];
            if (filter && cannot_beat(in, s, j, i, rule->bound, &memo))
                continue;
            const double v = row_value(in, s, j, i);
            if (i != self && keeps(rule, v))
                kept[count++] = (kept_entry){i, v};
        }
        /* the rows that share nothing: along the walk their distance never decreases, so it ends
         * at the first past the radius (for one constant value, at once or never) */
        const walk_plan plan = walk_of(in, kind, j);
        for (int64_t w = 0; w < n; w++) {
            const int32_t i = walk_row(order, plan, n, w);
            if (s->stamp[i] == j)
                continue;
            const double v = row_value(in, s, j, i);
            if (!keeps(rule, v)) {
                if (plan.dir == 0 || v > rule->bound + plan.slack)
                    break;
                continue;
            }
            if (i != self)
                kept[count++] = (kept_entry){i, v};
        }
        qsort(kept, (size_t)count, sizeof *kept, by_col);
    }
    if (!dense)
        clear_touched(in, s, touched);
    out->at = sr_malloc((size_t)(count > 0 ? count : 1) * sizeof *out->at);
    if (!out->at)
        return false;
    memcpy(out->at, kept, (size_t)count * sizeof *kept);
    out->count = count;
    return true;
}

sr_status sr_cpu_radius_overlap_rows(struct sr_context_s *ctx, const sr_distance_inputs *in, const int32_t *order,
                                     int mode, int64_t q0, int64_t q1, const sr_keep_rule *rule, sr_type type,
                                     struct sr_matrix_s **piece, int threads)
{
    const sr_disjoint_order kind = sr_metric_disjoint_order(in->metric);
    const int64_t rows = q1 - q0, n = in->X->nrows;
    kept_row *kept = sr_calloc((size_t)(rows > 0 ? rows : 1), sizeof *kept);
    if (!kept)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "radius: out of host memory");
    double x0_max;
    double *x0 = first_norms(in, &x0_max);
    bool failed = false;
#pragma omp parallel num_threads(team_for(threads, q1 - q0)) reduction(|| : failed)
    {
        overlap_scratch s;
        bool ok = scratch_init(&s, in, 0, x0, x0_max);
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++)
            if (ok) {
                sr_keep_rule r = *rule;
                /* the rule's self column is batch row + offset; radius_query takes the query's index */
                r.self_offset = rule->self_offset == SR_KEEP_NO_SELF ? SR_KEEP_NO_SELF : rule->self_offset - q0;
                const bool dense = scores_densely(in, j, mode);
                ok = cursors_ready(&s, in->Q, j) && (dense || walk_ready(&s, n)) && radius_query(in, order, kind, dense, j, &s, &r, &kept[j - q0]);
            }
        failed = !ok;
        scratch_free(&s);
    }
    free(x0);
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
            for (int64_t t = 0; t < kept[r].count; t++) {
                P->colind[at + t] = kept[r].at[t].col;
                if (type == SR_TYPE_FLOAT32)
                    ((float *)P->values)[at + t] = (float)kept[r].at[t].val;
                else
                    ((double *)P->values)[at + t] = kept[r].at[t].val;
            }
            P->rowptr[r + 1] = at + kept[r].count;
        }
        P->nnz = total;
        *piece = P;
    }
    for (int64_t r = 0; r < rows; r++)
        free(kept[r].at);
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

sr_status sr_cpu_disjoint_order(const double *xnorm, int64_t n, sr_metric metric, double d, int32_t *order)
{
    keyed_row *rows = sr_malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    if (!rows)
        return sr_error(SR_ERROR_OUT_OF_MEMORY, "k-NN: out of host memory ordering %lld index rows", (long long)n);
    for (int64_t i = 0; i < n; i++)
        rows[i] = (keyed_row){sr_metric_disjoint_key(metric, xnorm[2 * i], xnorm[2 * i + 1], d), (int32_t)i};
    qsort(rows, (size_t)n, sizeof *rows, by_key_then_row);
    for (int64_t i = 0; i < n; i++)
        order[i] = rows[i].row;
    free(rows);
    return SR_SUCCESS;
}
