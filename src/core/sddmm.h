/* What the sampled-product kernels of both backends receive: S where the work runs, A and B
 * packed row-major beside it (src/ops/sddmm.c stages them). */
#ifndef SR_CORE_SDDMM_H
#define SR_CORE_SDDMM_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_sddmm_args {
    const struct sr_matrix_s *S;
    const void *A, *B;     /* m x K and n x K, row-major with leading dimension K */
    int64_t K;
    sr_type in_type;       /* A's and B's */
    sr_type out_type;      /* the semiring's on in_type */
    sr_semiring semiring;
    double alpha, beta;
    bool pattern;          /* S's values are ignored in the product (bool S, or sample_pattern) */
} sr_sddmm_args;

/* Output element (i, c) of the fused product: out[i*row_stride + c*col_stride]. */
typedef struct sr_sddmm_out {
    void *data;
    int64_t row_stride, col_stride;
} sr_sddmm_out;

#ifdef __cplusplus
}
#endif

#endif
