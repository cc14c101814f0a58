/* Chebyshev on the CPU, one (query, index row) pair at a time: max |q - x| over the union of the
 * two rows. The query is scattered over the columns once; each index row's own columns are
 * walked with the query looked up densely, and the columns only the query holds contribute the
 * largest |q| among them, found by walking the query's entries from the largest |q| down to the
 * first the row lacks. Shared by the dense path (cpu_distance.c) and the overlap path
 * (cpu_overlap.c), so both give the same value bit for bit. */
#ifndef SR_CPU_CHEBYSHEV_H
#define SR_CPU_CHEBYSHEV_H

#include <math.h>
#include <stdlib.h>

#include "../core/matrix.h"
#include "../core/types.h"

typedef struct sr_cheb_scratch {
    double *qdense;    /* the query scattered over the columns */
    int64_t *qmark;    /* ... and which query row each column currently holds */
    int64_t *seen;     /* ... and the last stamp (index row visit) that held each column */
    double *order_abs; /* the query's |values|, largest first, with their columns */
    int32_t *order_col;
    int64_t qn, stamp;
} sr_cheb_scratch;

/* Scratch for d columns and queries of up to `widest` entries; false when out of memory. */
static inline bool sr_cheb_init(sr_cheb_scratch *s, int64_t d, int64_t widest)
{
    const size_t cols = (size_t)(d > 0 ? d : 1), w = (size_t)(widest > 0 ? widest : 1);
    *s = (sr_cheb_scratch){malloc(cols * sizeof(double)), malloc(cols * sizeof(int64_t)),
                           malloc(cols * sizeof(int64_t)), malloc(w * 2 * sizeof(double)),
                           malloc(w * sizeof(int32_t)), 0, 0};
    if (!s->qdense || !s->qmark || !s->seen || !s->order_abs || !s->order_col)
        return false;
    for (int64_t c = 0; c < d; c++)
        s->qmark[c] = s->seen[c] = -1;
    return true;
}

static inline void sr_cheb_free(sr_cheb_scratch *s)
{
    free(s->qdense);
    free(s->qmark);
    free(s->seen);
    free(s->order_abs);
    free(s->order_col);
}

/* The widest row of Q (entries). */
static inline int64_t sr_cheb_widest(const struct sr_matrix_s *Q)
{
    int64_t widest = 1;
    for (int64_t j = 0; j < Q->nrows; j++)
        if (Q->rowptr[j + 1] - Q->rowptr[j] > widest)
            widest = Q->rowptr[j + 1] - Q->rowptr[j];
    return widest;
}

static inline double sr_cheb_value(const struct sr_matrix_s *A, int64_t e)
{
    return A->type == SR_TYPE_FLOAT32 ? (double)((const float *)A->values)[e] : ((const double *)A->values)[e];
}

static inline int sr_cheb_by_abs_desc(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Readies query row j of Q. */
static inline void sr_cheb_prepare(sr_cheb_scratch *s, const struct sr_matrix_s *Q, int64_t j)
{
    const int64_t qn = Q->rowptr[j + 1] - Q->rowptr[j];
    for (int64_t t = 0; t < qn; t++) {
        int64_t e = Q->rowptr[j] + t;
        s->qdense[Q->colind[e]] = sr_cheb_value(Q, e);
        s->qmark[Q->colind[e]] = j;
        s->order_abs[2 * t] = fabs(sr_cheb_value(Q, e));
        s->order_abs[2 * t + 1] = (double)Q->colind[e];
    }
    qsort(s->order_abs, (size_t)qn, 2 * sizeof *s->order_abs, sr_cheb_by_abs_desc);
    for (int64_t t = 0; t < qn; t++) {
        s->order_col[t] = (int32_t)s->order_abs[2 * t + 1];
        s->order_abs[t] = s->order_abs[2 * t];
    }
    s->qn = qn;
}

/* max |q - x| between the prepared query j and row i of X. */
static inline double sr_cheb_row(sr_cheb_scratch *s, const struct sr_matrix_s *X, int64_t j, int64_t i)
{
    const int64_t stamp = s->stamp++;
    double mx = 0.0;
    for (int64_t e = X->rowptr[i]; e < X->rowptr[i + 1]; e++) {
        int32_t c = X->colind[e];
        double q = s->qmark[c] == j ? s->qdense[c] : 0.0;
        mx = fmax(mx, fabs(q - sr_cheb_value(X, e)));
        s->seen[c] = stamp;
    }
    for (int64_t t = 0; t < s->qn; t++)
        if (s->seen[s->order_col[t]] != stamp) {
            mx = fmax(mx, s->order_abs[t]);
            break;
        }
    return mx;
}

#endif
