/* What the distance kernels of both backends receive: prepared inputs in the place where the
 * work runs (src/ops/distance.c makes them). */
#ifndef SR_CORE_DISTANCE_H
#define SR_CORE_DISTANCE_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_distance_inputs {
    sr_metric metric;
    double p;                     /* Minkowski's exponent */
    const struct sr_matrix_s *Q;  /* query rows, in the compute type (float32 or float64) */
    const struct sr_matrix_s *X;  /* index rows, same type and column count */
    const struct sr_matrix_s *XT; /* X transposed: for each column, the index rows that hold it */
    const double *qnorm, *xnorm;  /* two norms per row (sr_metric_norm_add) */
    /* Chebyshev on the device: each row's entries by decreasing magnitude (columns and absolute
     * values, sr_cuda_magnitude_order) and, for the queries, each entry's place in that order */
    const int32_t *q_mag_col, *x_mag_col, *q_rank;
    const void *q_mag_abs, *x_mag_abs;
    /* A user metric reduced by max over the union, on the device: each row's entries by decreasing
     * pair(q, 0) (the queries) or pair(0, x) (the index), the columns in q_mag_col and x_mag_col
     * and these keys beside them (sr_cuda_user_union_order) */
    const double *q_union_key, *x_union_key;
    bool ordered;                 /* a deterministic context: the device tiles sum in a fixed order */
} sr_distance_inputs;

/* Where output element (query row r of a batch, index row i) goes: out[r*row_stride + i*col_stride]. */
typedef struct sr_strided_out {
    void *data;
    int64_t row_stride, col_stride;
} sr_strided_out;

#ifdef __cplusplus
}
#endif

#endif
