/* Value conversion between types on the host. */
#include <math.h>

#include "../core/error.h"
#include "../core/types.h"
#include "cpu.h"

static bool fits_int32(double v) { return v > -2147483649.0 && v < 2147483648.0; }

sr_status sr_cpu_cast_values(const struct sr_matrix_s *A, struct sr_matrix_s *B, int threads)
{
    if (B->type == SR_TYPE_BOOL)
        return SR_SUCCESS; /* pattern only */
    int64_t nnz = A->nnz;
    if (B->type == SR_TYPE_INT32 && (A->type == SR_TYPE_FLOAT32 || A->type == SR_TYPE_FLOAT64)) {
        int64_t first_bad = nnz;
#pragma omp parallel for num_threads(threads) reduction(min : first_bad)
        for (int64_t k = 0; k < nnz; k++) {
            double v = sr_value_get(A->values, A->type, k);
            if ((isnan(v) || !fits_int32(v)) && k < first_bad)
                first_bad = k;
        }
        if (first_bad < nnz)
            return sr_error(SR_ERROR_INVALID_ARGUMENT, "cannot cast entry %lld (value %g) to int32: %s",
                            (long long)first_bad, sr_value_get(A->values, A->type, first_bad),
                            isnan(sr_value_get(A->values, A->type, first_bad)) ? "NaN" : "out of range");
    }
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < nnz; k++) {
        double v = A->type == SR_TYPE_BOOL ? 1.0 : sr_value_get(A->values, A->type, k);
        switch (B->type) {
        case SR_TYPE_INT32:
            ((int32_t *)B->values)[k] = A->type == SR_TYPE_INT32 ? ((const int32_t *)A->values)[k] : (int32_t)v;
            break;
        case SR_TYPE_FLOAT32: ((float *)B->values)[k] = (float)v; break;
        case SR_TYPE_FLOAT64: ((double *)B->values)[k] = v; break;
        case SR_TYPE_BOOL: break;
        }
    }
    return SR_SUCCESS;
}
