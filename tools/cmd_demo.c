/* sparsering demo: a random power-law matrix through the basics, timed on the CPU and the GPU.
 * (The k-NN demo replaces this once distances land.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "powerlaw.h"

/* Runs op `reps` times and returns the median seconds. */
#define TIME_MEDIAN(result, reps, stmt)                                  \
    do {                                                                 \
        double times_[16];                                               \
        for (int r_ = 0; r_ < (reps); r_++) {                            \
            double t0_ = cli_seconds();                                  \
            stmt;                                                        \
            times_[r_] = cli_seconds() - t0_;                            \
        }                                                                \
        for (int a_ = 1; a_ < (reps); a_++)                              \
            for (int b_ = a_; b_ > 0 && times_[b_] < times_[b_ - 1]; b_--) { \
                double t_ = times_[b_];                                  \
                times_[b_] = times_[b_ - 1];                             \
                times_[b_ - 1] = t_;                                     \
            }                                                            \
        result = times_[(reps) / 2];                                     \
    } while (0)

static void row(const char *what, const char *where, double seconds, double bytes)
{
    printf("  %-34s %-5s %10.3f ms %9.1f GB/s\n", what, where, seconds * 1e3, bytes / seconds / 1e9);
}

int cmd_demo(const cli_globals *g, int argc, char **argv)
{
    int64_t nrows = 200000, ncols = 100000;
    double degree = 32;
    uint64_t seed = 42;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--rows") == 0)
            nrows = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--cols") == 0)
            ncols = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--degree") == 0)
            degree = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: sparsering demo [--rows N] [--cols N] [--degree D] [--seed S]\n");
            return CLI_USAGE;
        }
    }
    if (nrows < 1 || ncols < 2 || ncols > 2147483647 || degree <= 0) {
        fprintf(stderr, "sparsering demo: need rows >= 1, 2 <= cols < 2^31, degree > 0\n");
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    int64_t *rowptr;
    int32_t *colind;
    float *values;
    if (!powerlaw_csr(nrows, ncols, degree, seed, &rowptr, &colind, &values)) {
        fprintf(stderr, "sparsering demo: out of memory generating the matrix\n");
        sr_context_destroy(ctx);
        return CLI_FAILED;
    }
    int64_t nnz = rowptr[nrows], max_degree = 0;
    for (int64_t i = 0; i < nrows; i++)
        max_degree = rowptr[i + 1] - rowptr[i] > max_degree ? rowptr[i + 1] - rowptr[i] : max_degree;

    sr_backend backend;
    sr_context_get_backend(ctx, &backend);
    printf("sparsering %s, backend %s\n", sr_version_string(), backend == SR_BACKEND_CUDA ? "cuda" : "cpu");
    printf("matrix: %lld x %lld power-law, %lld nonzeros, max row %lld (seed %llu)\n", (long long)nrows,
           (long long)ncols, (long long)nnz, (long long)max_degree, (unsigned long long)seed);
    double csr_bytes = (double)(nrows + 1) * 8 + (double)nnz * 8; /* rowptr + colind + float values */

    sr_matrix A = NULL, T = NULL, D = NULL, DT = NULL;
    double t;
    sr_status s = SR_SUCCESS;
    TIME_MEDIAN(t, 5, (sr_matrix_free(A), A = NULL,
                       s = s ? s : sr_matrix_from_csr(ctx, &A, nrows, ncols, SR_TYPE_FLOAT32, rowptr, colind, values, SR_HOST)));
    if (s != SR_SUCCESS)
        goto fail;
    row("build (validate + copy)", "cpu", t, 2 * csr_bytes);
    TIME_MEDIAN(t, 5, (sr_matrix_free(T), T = NULL, s = s ? s : sr_matrix_transpose(ctx, A, &T)));
    if (s != SR_SUCCESS)
        goto fail;
    row("transpose", "cpu", t, 2 * csr_bytes);

    if (backend == SR_BACKEND_CUDA) {
        TIME_MEDIAN(t, 5, (sr_matrix_free(D), D = NULL, s = s ? s : sr_matrix_copy_to(ctx, A, SR_DEVICE, &D)));
        if (s != SR_SUCCESS)
            goto fail;
        row("copy to device", "cuda", t, csr_bytes);
        TIME_MEDIAN(t, 5, (sr_matrix_free(DT), DT = NULL, s = s ? s : sr_matrix_transpose(ctx, D, &DT)));
        if (s != SR_SUCCESS)
            goto fail;
        row("transpose", "cuda", t, 2 * csr_bytes);
        bool same = false;
        if ((s = sr_matrix_equal(ctx, DT, T, &same)) != SR_SUCCESS)
            goto fail;
        printf("  GPU transpose %s the CPU transpose\n", same ? "matches" : "DIFFERS FROM");
        size_t peak = 0;
        sr_context_device_memory(ctx, NULL, &peak);
        printf("  peak device memory: %.1f MB (the matrix itself: %.1f MB)\n", peak / 1e6, csr_bytes / 1e6);
        if (!same)
            s = SR_ERROR_INTERNAL;
    } else {
        printf("  (no GPU in use: run with a CUDA device for the GPU rows)\n");
    }
fail:
    if (s != SR_SUCCESS)
        rc = cli_fail(s, "demo");
    sr_matrix_free(A);
    sr_matrix_free(T);
    sr_matrix_free(D);
    sr_matrix_free(DT);
    sr_context_destroy(ctx);
    free(rowptr);
    free(colind);
    free(values);
    return rc;
}
