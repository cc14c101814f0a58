/* Element-wise union of two sparse matrices on the host: C = A ∪ B, ⊕ where both have an entry. */
#include <string.h>

#include "../core/error.h"
#include "../core/types.h"
#include "cpu.h"

/* out[o] = a[x] ⊕ b[y] for the monoid op, in the matrices' value type. */
static void combine(void *out, int64_t o, const void *a, int64_t x, const void *b, int64_t y, sr_type type, int op)
{
#define COMBINE(T)                                                                                       \
    {                                                                                                    \
        T u = ((const T *)a)[x], v = ((const T *)b)[y];                                                  \
        ((T *)out)[o] = op == SR_ADD_OP_PLUS ? (T)SR_ADD_PLUS(u, v)                                      \
                        : op == SR_ADD_OP_MIN ? (T)SR_ADD_MIN(u, v)                                      \
                        : op == SR_ADD_OP_MAX ? (T)SR_ADD_MAX(u, v)                                      \
                                              : (T)SR_ADD_OR(u, v);                                      \
    }
    switch (type) {
    case SR_TYPE_INT32: COMBINE(int32_t) break;
    case SR_TYPE_FLOAT32: COMBINE(float) break;
    case SR_TYPE_FLOAT64: COMBINE(double) break;
    case SR_TYPE_BOOL: break; /* no values */
    }
#undef COMBINE
}

sr_status sr_cpu_ewise_union(struct sr_context_s *ctx, const struct sr_matrix_s *A, const struct sr_matrix_s *B,
                             int op, struct sr_matrix_s **out)
{
    int threads = sr_context_threads(ctx);
    struct sr_matrix_s *C;
    SR_TRY(sr_matrix_alloc(ctx, A->nrows, A->ncols, 0, A->type, SR_HOST, &C));
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t x = A->rowptr[i], xe = A->rowptr[i + 1], y = B->rowptr[i], ye = B->rowptr[i + 1], n = 0;
        while (x < xe || y < ye) {
            if (y == ye || (x < xe && A->colind[x] < B->colind[y]))
                x++;
            else if (x == xe || B->colind[y] < A->colind[x])
                y++;
            else
                x++, y++;
            n++;
        }
        C->rowptr[i + 1] = n;
    }
    sr_cpu_prefix_sum(C->rowptr, A->nrows);
    sr_status s = sr_matrix_alloc_entries(C, C->rowptr[A->nrows]);
    if (s != SR_SUCCESS) {
        sr_matrix_destroy(C);
        return s;
    }
    size_t vsize = sr_value_size(A->type);
#pragma omp parallel for num_threads(threads) schedule(dynamic, 256)
    for (int64_t i = 0; i < A->nrows; i++) {
        int64_t x = A->rowptr[i], xe = A->rowptr[i + 1], y = B->rowptr[i], ye = B->rowptr[i + 1], o = C->rowptr[i];
        for (; x < xe || y < ye; o++) {
            if (y == ye || (x < xe && A->colind[x] < B->colind[y])) {
                C->colind[o] = A->colind[x];
                if (vsize)
                    memcpy((char *)C->values + o * vsize, (const char *)A->values + x * vsize, vsize);
                x++;
            } else if (x == xe || B->colind[y] < A->colind[x]) {
                C->colind[o] = B->colind[y];
                if (vsize)
                    memcpy((char *)C->values + o * vsize, (const char *)B->values + y * vsize, vsize);
                y++;
            } else {
                C->colind[o] = A->colind[x];
                combine(C->values, o, A->values, x, B->values, y, A->type, op);
                x++, y++;
            }
        }
    }
    *out = C;
    return SR_SUCCESS;
}
