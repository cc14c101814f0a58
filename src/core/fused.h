/* What the fused-pattern kernels of both backends receive (src/ops/fused.c prepares it): X and
 * the vectors where the work runs. */
#ifndef SR_CORE_FUSED_H
#define SR_CORE_FUSED_H

#include "matrix.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_fused_args {
    sr_pattern_form form;
    sr_type type;                 /* the vectors' (float32 or float64) */
    int64_t m, n;                 /* X's shape */
    const struct sr_matrix_s *X;  /* sparse X (bool: entries count 1), or NULL */
    const void *Xd;               /* dense X, row-major, ld elements a row, when X is NULL */
    int64_t ld;
    const void *y, *v, *z;        /* v and z may be NULL */
    void *w;                      /* may be z itself */
    double alpha, beta;           /* beta is 0 when z is NULL */
    bool queued;                  /* CUDA: return once the work is queued on the context's stream */
} sr_fused_args;

#ifdef __cplusplus
}
#endif

#endif
