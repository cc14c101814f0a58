/* The output rule the host's sampled-product kernels share (cpu_sddmm.c, cpu_sddmm_tiles.c):
 * out = α·d + β·S(i, j), d the entry's product already times S's value where S enters it. */
#ifndef SR_CPU_SDDMM_H
#define SR_CPU_SDDMM_H

#include "../core/sddmm.h"

/* S(i, j) as the β term reads it: 1 for bool S. */
static inline double sr_cpu_sddmm_beta_value(const struct sr_matrix_s *S, int64_t e)
{
    switch (S->type) {
    case SR_TYPE_FLOAT32: return ((const float *)S->values)[e];
    case SR_TYPE_FLOAT64: return ((const double *)S->values)[e];
    case SR_TYPE_INT32: return ((const int32_t *)S->values)[e];
    default: return 1.0;
    }
}

/* α·d + β·S(e), in double. */
static inline double sr_cpu_sddmm_output(const sr_sddmm_args *a, double d, int64_t e)
{
    double r = a->alpha * d;
    if (a->beta != 0.0)
        r += a->beta * sr_cpu_sddmm_beta_value(a->S, e);
    return r;
}

#endif
