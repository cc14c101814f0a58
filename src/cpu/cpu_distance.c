/* Distances on the CPU: per query row, an inverted-index sweep over the columns the query holds
 * (only the intersection is visited), then the finalizer over every index row. Chebyshev walks
 * the union instead (see metric.h). Stamped for float and double values. */
#include <math.h>
#include <stdlib.h>

#include "../core/error.h"
#include "../core/types.h"
#include "../semiring/metric.h"
#include "cpu.h"

void sr_cpu_distance_norms(const struct sr_matrix_s *A, sr_metric metric, double p, double *norms, int threads)
{
    const float *vf = A->type == SR_TYPE_FLOAT32 ? (const float *)A->values : NULL;
    const double *vd = A->type == SR_TYPE_FLOAT64 ? (const double *)A->values : NULL;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < A->nrows; r++) {
        double n0 = 0.0, n1 = 0.0;
        for (int64_t e = A->rowptr[r]; e < A->rowptr[r + 1]; e++)
            sr_metric_norm_add(metric, vf ? (double)vf[e] : vd[e], p, &n0, &n1);
        norms[2 * r] = n0;
        norms[2 * r + 1] = n1;
    }
}

int64_t sr_cpu_first_bad_row(const struct sr_matrix_s *A, bool nonnegative, int threads)
{
    int64_t first = INT64_MAX;
    if (A->type != SR_TYPE_FLOAT32 && A->type != SR_TYPE_FLOAT64)
        return -1; /* callers check the cast (float) matrix */
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : first)
    for (int64_t r = 0; r < A->nrows; r++) {
        for (int64_t e = A->rowptr[r]; e < A->rowptr[r + 1]; e++) {
            double v = sr_value_get(A->values, A->type, e);
            if (!isfinite(v) || (nonnegative && v < 0.0)) {
                if (r < first)
                    first = r;
                break;
            }
        }
    }
    return first == INT64_MAX ? -1 : first;
}

/* Values of a float32 or float64 array, read as double (the branch is the same every time). */
typedef struct values {
    const float *f;
    const double *d;
} values;

static values values_of(const struct sr_matrix_s *A)
{
    values v = {A->type == SR_TYPE_FLOAT32 ? (const float *)A->values : NULL,
                A->type == SR_TYPE_FLOAT64 ? (const double *)A->values : NULL};
    return v;
}

static inline double value_at(values v, int64_t e) { return v.f ? (double)v.f[e] : v.d[e]; }

static inline void store(const sr_strided_out *out, bool single, int64_t r, int64_t i, double value)
{
    int64_t at = r * out->row_stride + i * out->col_stride;
    if (single)
        ((float *)out->data)[at] = (float)value;
    else
        ((double *)out->data)[at] = value;
}

/* Per-thread scratch. */
typedef struct scratch {
    double *acc;        /* accumulators per index row (two planes for Bray-Curtis) */
    double *qdense;     /* chebyshev: the query scattered over the columns */
    int64_t *qmark;     /* ... and which query row each column currently holds */
    int64_t *seen;      /* ... and the last index row that held each column */
    double *order_abs;  /* ... and the query's |values|, largest first, with their columns */
    int32_t *order_col;
} scratch;

static void scratch_free(scratch *s)
{
    free(s->acc);
    free(s->qdense);
    free(s->qmark);
    free(s->seen);
    free(s->order_abs);
    free(s->order_col);
}

static bool scratch_init(scratch *s, const sr_distance_inputs *in)
{
    int64_t n = in->X->nrows, d = in->X->ncols;
    *s = (scratch){0};
    if (sr_metric_kind_of(in->metric) != SR_MK_MAX) {
        s->acc = malloc((size_t)(n > 0 ? n : 1) * (size_t)sr_metric_accumulators(in->metric) * sizeof *s->acc);
        return s->acc != NULL;
    }
    int64_t widest = 1;
    for (int64_t j = 0; j < in->Q->nrows; j++)
        if (in->Q->rowptr[j + 1] - in->Q->rowptr[j] > widest)
            widest = in->Q->rowptr[j + 1] - in->Q->rowptr[j];
    s->qdense = malloc((size_t)(d > 0 ? d : 1) * sizeof *s->qdense);
    s->qmark = malloc((size_t)(d > 0 ? d : 1) * sizeof *s->qmark);
    s->seen = malloc((size_t)(d > 0 ? d : 1) * sizeof *s->seen);
    s->order_abs = malloc((size_t)widest * 2 * sizeof *s->order_abs);
    s->order_col = malloc((size_t)widest * sizeof *s->order_col);
    if (!s->qdense || !s->qmark || !s->seen || !s->order_abs || !s->order_col)
        return false;
    for (int64_t c = 0; c < d; c++)
        s->qmark[c] = s->seen[c] = -1;
    return true;
}

/* Sum and max metrics: accumulate the intersection through the inverted index, then finalize
 * every index row (rows sharing no column get the norms-only distance). */
static void query_by_intersection(const sr_distance_inputs *in, int64_t j, scratch *s, const sr_strided_out *out,
                                  int64_t r)
{
    const struct sr_matrix_s *Q = in->Q, *XT = in->XT;
    const sr_metric m = in->metric;
    const int64_t n = in->X->nrows;
    const int nacc = sr_metric_accumulators(m);
    const values qv = values_of(Q), xv = values_of(XT);
    double *a0 = s->acc, *a1 = nacc > 1 ? s->acc + n : s->acc;
    for (int64_t i = 0; i < n * nacc; i++)
        s->acc[i] = 0.0;
    for (int64_t e = Q->rowptr[j]; e < Q->rowptr[j + 1]; e++) {
        int32_t c = Q->colind[e];
        double q = value_at(qv, e);
        for (int64_t t = XT->rowptr[c]; t < XT->rowptr[c + 1]; t++) {
            int32_t i = XT->colind[t];
            sr_metric_intersect(m, q, value_at(xv, t), in->p, &a0[i], &a1[i]);
        }
    }
    const bool single = Q->type == SR_TYPE_FLOAT32;
    const double d = (double)in->X->ncols, qn0 = in->qnorm[2 * j], qn1 = in->qnorm[2 * j + 1];
    for (int64_t i = 0; i < n; i++)
        store(out, single, r, i,
              sr_metric_finalize(m, a0[i], nacc > 1 ? a1[i] : 0.0, qn0, qn1, in->xnorm[2 * i], in->xnorm[2 * i + 1],
                                 d, in->p));
}

static int by_abs_desc(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Chebyshev: max |q - x| over the union. Each index row's own columns are walked with the query
 * looked up densely; the columns only the query holds contribute the largest |q| among them,
 * found by walking the query's entries from the largest |q| down to the first the row lacks. */
static void query_chebyshev(const sr_distance_inputs *in, int64_t j, scratch *s, int64_t *seen_stamp,
                            const sr_strided_out *out, int64_t r)
{
    const struct sr_matrix_s *Q = in->Q, *X = in->X;
    const values qv = values_of(Q), xv = values_of(X);
    const int64_t qn = Q->rowptr[j + 1] - Q->rowptr[j];
    for (int64_t t = 0; t < qn; t++) {
        int64_t e = Q->rowptr[j] + t;
        s->qdense[Q->colind[e]] = value_at(qv, e);
        s->qmark[Q->colind[e]] = j;
        s->order_abs[2 * t] = fabs(value_at(qv, e));
        s->order_abs[2 * t + 1] = (double)Q->colind[e];
    }
    qsort(s->order_abs, (size_t)qn, 2 * sizeof *s->order_abs, by_abs_desc);
    for (int64_t t = 0; t < qn; t++) {
        s->order_col[t] = (int32_t)s->order_abs[2 * t + 1];
        s->order_abs[t] = s->order_abs[2 * t];
    }
    const bool single = Q->type == SR_TYPE_FLOAT32;
    for (int64_t i = 0; i < X->nrows; i++) {
        int64_t stamp = (*seen_stamp)++;
        double mx = 0.0;
        for (int64_t e = X->rowptr[i]; e < X->rowptr[i + 1]; e++) {
            int32_t c = X->colind[e];
            double q = s->qmark[c] == j ? s->qdense[c] : 0.0;
            mx = fmax(mx, fabs(q - value_at(xv, e)));
            s->seen[c] = stamp;
        }
        for (int64_t t = 0; t < qn; t++)
            if (s->seen[s->order_col[t]] != stamp) {
                mx = fmax(mx, s->order_abs[t]);
                break;
            }
        store(out, single, r, i, mx);
    }
}

sr_status sr_cpu_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_strided_out *out,
                               int threads)
{
    bool failed = false;
    const bool chebyshev = sr_metric_kind_of(in->metric) == SR_MK_MAX;
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        scratch s;
        bool ok = scratch_init(&s, in);
        int64_t seen_stamp = 0;
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++) {
            if (!ok)
                continue;
            if (chebyshev)
                query_chebyshev(in, j, &s, &seen_stamp, out, j - q0);
            else
                query_by_intersection(in, j, &s, out, j - q0);
        }
        failed = !ok;
        scratch_free(&s);
    }
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "distances: out of host memory for per-thread scratch") : SR_SUCCESS;
}
