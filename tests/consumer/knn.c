/* A user's first k-NN against the installed library: four documents, the nearest two of each. */
#include <stdio.h>

#include <sparsering.h>

int main(void)
{
    sr_context ctx;
    if (sr_context_create(&ctx, NULL) != SR_SUCCESS) {
        fprintf(stderr, "%s\n", sr_last_error());
        return 1;
    }
    int64_t rowptr[] = {0, 2, 4, 6, 7};
    int32_t colind[] = {0, 1, 0, 1, 1, 2, 2};
    float values[] = {1, 1, 1, 2, 1, 1, 3};
    sr_matrix X;
    int64_t idx[8];
    float dist[8];
    sr_dense D = sr_dense_view(dist, 4, 2, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    if (sr_matrix_from_csr(ctx, &X, 4, 3, SR_TYPE_FLOAT32, rowptr, colind, values, SR_HOST) != SR_SUCCESS ||
        sr_knn(ctx, X, X, 2, SR_METRIC_COSINE, 0.0, idx, &D, NULL) != SR_SUCCESS) {
        fprintf(stderr, "%s\n", sr_last_error());
        return 1;
    }
    for (int q = 0; q < 4; q++)
        printf("%d: %lld (%.4f) %lld (%.4f)\n", q, (long long)idx[2 * q], dist[2 * q], (long long)idx[2 * q + 1],
               dist[2 * q + 1]);
    int ok = idx[0] == 0 && idx[6] == 3; /* each row is its own nearest */
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    printf("%s (%s)\n", ok ? "ok" : "WRONG", sr_version_string());
    return ok ? 0 : 1;
}
