/* Shortest paths from node 0 by repeated min_plus SpMV (Bellman-Ford): d = min(d, A^T d).
 * A(i, j) is the weight of the edge i -> j; we multiply by A^T so row j gathers its in-edges. */
#include <math.h>
#include <stdio.h>

#include "sparsering.h"

int main(void)
{
    sr_context ctx;
    if (sr_context_create(&ctx, NULL) != SR_SUCCESS)
        return 1;
    /* 0 -> 1 (4), 0 -> 2 (1), 2 -> 1 (2), 1 -> 3 (1), 2 -> 3 (5), 3 -> 4 (3) */
    int64_t rows[] = {0, 0, 2, 1, 2, 3};
    int32_t cols[] = {1, 2, 1, 3, 3, 4};
    double w[] = {4, 1, 2, 1, 5, 3};
    sr_matrix A, AT;
    if (sr_matrix_from_coo(ctx, &A, 5, 5, SR_TYPE_FLOAT64, 6, rows, cols, w, SR_DUPLICATES_ERROR, SR_HOST) ||
        sr_matrix_transpose(ctx, A, &AT)) {
        fprintf(stderr, "%s\n", sr_last_error());
        return 1;
    }
    double d[5] = {0, INFINITY, INFINITY, INFINITY, INFINITY}, next[5];
    sr_dense dv = sr_vector_view(d, 5, SR_TYPE_FLOAT64, SR_HOST), nv = sr_vector_view(next, 5, SR_TYPE_FLOAT64, SR_HOST);
    sr_descriptor keep_min = {.accumulate = true}; /* next = min(next, A^T d) */
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 5; i++)
            next[i] = d[i];
        if (sr_spmv(ctx, &nv, NULL, SR_MIN_PLUS, AT, &dv, &keep_min) != SR_SUCCESS) {
            fprintf(stderr, "%s\n", sr_last_error());
            return 1;
        }
        for (int i = 0; i < 5; i++)
            d[i] = next[i];
    }
    for (int i = 0; i < 5; i++)
        printf("distance to %d: %g\n", i, d[i]); /* 0 3 1 4 7 */
    sr_matrix_free(A);
    sr_matrix_free(AT);
    sr_context_destroy(ctx);
    return 0;
}
