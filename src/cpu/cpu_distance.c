/* Distances on the CPU: per query row, an inverted-index sweep over the columns the query holds
 * (only the intersection is visited), then the finalizer over every index row. Chebyshev walks
 * the union instead (see metric.h). Stamped for float and double values. */
#include <math.h>
#include <stdlib.h>

#include "../core/memory.h"
#include "../core/error.h"
#include "../core/types.h"
#include "../semiring/metric.h"
#include "../semiring/user.h"
#include "cpu.h"
#include "cpu_chebyshev.h"

void sr_cpu_distance_norms(const struct sr_matrix_s *A, sr_metric metric, double p, double *norms, int threads)
{
    const sr_user_metric *u = sr_user_metric_of((int)metric);
    if (u) { /* its compiled norms, in chunks of rows */
        const int64_t chunk = 4096, chunks = (A->nrows + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t c = 0; c < chunks; c++)
            u->norms(c * chunk, c * chunk + chunk < A->nrows ? c * chunk + chunk : A->nrows, A->rowptr, A->values,
                     A->type == SR_TYPE_FLOAT32, p, norms);
        return;
    }
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
    double *acc;         /* accumulators per index row (two planes for Bray-Curtis) */
    sr_cheb_scratch cheb; /* chebyshev */
} scratch;

static void scratch_free(scratch *s)
{
    free(s->acc);
    sr_cheb_free(&s->cheb);
}

static bool scratch_init(scratch *s, const sr_distance_inputs *in)
{
    int64_t n = in->X->nrows;
    *s = (scratch){0};
    const sr_user_metric *u = sr_user_metric_of((int)in->metric);
    if (u ? !u->walks_union : sr_metric_kind_of(in->metric) != SR_MK_MAX) {
        const int sums = u ? (u->def.pair2 ? 2 : 1) : sr_metric_accumulators(in->metric);
        s->acc = sr_malloc((size_t)(n > 0 ? n : 1) * (size_t)sums * sizeof *s->acc);
        return s->acc != NULL;
    }
    return sr_cheb_init(&s->cheb, in->X->ncols, sr_cheb_widest(in->Q));
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

/* Chebyshev: max |q - x| over the union, each index row against the scattered query (cpu_chebyshev.h). */
static void query_chebyshev(const sr_distance_inputs *in, int64_t j, scratch *s, const sr_strided_out *out, int64_t r)
{
    sr_cheb_prepare(&s->cheb, in->Q, j);
    const bool single = in->Q->type == SR_TYPE_FLOAT32;
    for (int64_t i = 0; i < in->X->nrows; i++)
        store(out, single, r, i, sr_cheb_row(&s->cheb, in->X, j, i));
}

sr_status sr_cpu_distance_rows(const sr_distance_inputs *in, int64_t q0, int64_t q1, const sr_strided_out *out,
                               int threads)
{
    bool failed = false;
    const bool chebyshev = sr_metric_kind_of(in->metric) == SR_MK_MAX;
    const sr_user_metric *user = sr_user_metric_of((int)in->metric);
#pragma omp parallel num_threads(threads) reduction(|| : failed)
    {
        scratch s;
        bool ok = scratch_init(&s, in);
#pragma omp for schedule(dynamic, 4)
        for (int64_t j = q0; j < q1; j++) {
            if (!ok)
                continue;
            if (user) {
                const bool single = in->Q->type == SR_TYPE_FLOAT32, out_single = single;
                char *row = (char *)out->data + (size_t)((j - q0) * out->row_stride) * (out_single ? 4 : 8);
                const struct sr_matrix_s *Q = in->Q, *X = in->X, *XT = in->XT;
                if (user->walks_union)
                    user->query_union(j, Q->rowptr, Q->colind, Q->values, X->rowptr, X->colind, X->values, single,
                                      X->nrows, s.cheb.qdense, s.cheb.qmark, s.cheb.seen, s.cheb.order_abs, in->qnorm,
                                      in->xnorm, (double)X->ncols, in->p, row, out->col_stride, out_single);
                else
                    user->query(j, Q->rowptr, Q->colind, Q->values, XT->rowptr, XT->colind, XT->values, single,
                                X->nrows, s.acc, in->qnorm, in->xnorm, (double)X->ncols, in->p, row, out->col_stride,
                                out_single);
            } else if (chebyshev)
                query_chebyshev(in, j, &s, out, j - q0);
            else
                query_by_intersection(in, j, &s, out, j - q0);
        }
        failed = !ok;
        scratch_free(&s);
    }
    return failed ? sr_error(SR_ERROR_OUT_OF_MEMORY, "distances: out of host memory for per-thread scratch") : SR_SUCCESS;
}
