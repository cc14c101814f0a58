/* The README's example: build a matrix, transpose it, export it dense, write it to a file. */
#include <stdio.h>

#include "sparsering.h"

int main(void)
{
    sr_context ctx;
    if (sr_context_create(&ctx, NULL) != SR_SUCCESS) { /* AUTO: the GPU when there is one */
        fprintf(stderr, "%s\n", sr_last_error());
        return 1;
    }
    /* [[1 0 2]
     *  [0 0 3]] as CSR */
    int64_t rowptr[] = {0, 2, 3};
    int32_t colind[] = {0, 2, 2};
    double values[] = {1.0, 2.0, 3.0};
    sr_matrix A, AT;
    if (sr_matrix_from_csr(ctx, &A, 2, 3, SR_TYPE_FLOAT64, rowptr, colind, values, SR_HOST) != SR_SUCCESS ||
        sr_matrix_transpose(ctx, A, &AT) != SR_SUCCESS) {
        fprintf(stderr, "%s\n", sr_last_error());
        return 1;
    }
    double dense[3][2];
    sr_dense view = sr_dense_view(dense, 3, 2, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_matrix_export_dense(ctx, AT, &view);
    for (int i = 0; i < 3; i++)
        printf("%g %g\n", dense[i][0], dense[i][1]); /* 1 0 / 0 0 / 2 3 */

    /* Bad input is rejected with a precise message, and nothing is made. */
    int32_t unsorted[] = {2, 0, 2};
    sr_matrix B = NULL;
    if (sr_matrix_from_csr(ctx, &B, 2, 3, SR_TYPE_FLOAT64, rowptr, unsorted, values, SR_HOST) != SR_SUCCESS)
        printf("rejected: %s\n", sr_last_error());

    sr_matrix_write_mm(ctx, AT, "transposed.mtx", NULL);
    sr_matrix_free(A);
    sr_matrix_free(AT);
    sr_context_destroy(ctx);
    return 0;
}
