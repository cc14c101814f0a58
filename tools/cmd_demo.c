/* sparsering demo: k-nearest neighbours on a generated bag-of-words set (power-law document
 * lengths, Zipf-like word popularity, fixed seed), on the CPU and, when present, the GPU; prints
 * neighbours, timings and whether the two backends agree. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "powerlaw.h"

typedef struct {
    int64_t *idx;
    float *dist;
    double seconds;
} knn_run;

/* k-NN of the first nq rows against all rows, on ctx's backend (device copies when CUDA). */
static sr_status run_knn(sr_context ctx, sr_matrix A, sr_matrix Q, int64_t k, sr_metric metric, int64_t nq,
                         knn_run *out)
{
    sr_backend backend;
    sr_context_get_backend(ctx, &backend);
    sr_matrix Ad = A, Qd = Q;
    sr_status s = SR_SUCCESS;
    if (backend == SR_BACKEND_CUDA) {
        s = sr_matrix_copy_to(ctx, A, SR_DEVICE, &Ad);
        if (s == SR_SUCCESS)
            s = sr_matrix_copy_to(ctx, Q, SR_DEVICE, &Qd);
    }
    sr_dense D = sr_dense_view(out->dist, nq, k, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    for (int rep = 0; rep < 2 && s == SR_SUCCESS; rep++) { /* the first run warms up */
        double t0 = cli_seconds();
        s = sr_knn(ctx, Ad, Qd, k, metric, 0.0, out->idx, &D, NULL);
        out->seconds = cli_seconds() - t0;
    }
    if (Ad != A)
        sr_matrix_free(Ad);
    if (Qd != Q)
        sr_matrix_free(Qd);
    return s;
}

static sr_status first_rows(sr_context ctx, const int64_t *rowptr, const int32_t *colind, const float *values,
                            int64_t rows, int64_t ncols, sr_matrix *Q)
{
    return sr_matrix_from_csr(ctx, Q, rows, ncols, SR_TYPE_FLOAT32, rowptr, colind, values, SR_HOST);
}

int cmd_demo(const cli_globals *g, int argc, char **argv)
{
    int64_t nrows = 20000, ncols = 20000, nq = 2000, k = 5;
    double degree = 40;
    uint64_t seed = 42;
    const char *metric_name = "cosine";
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--rows") == 0)
            nrows = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--cols") == 0)
            ncols = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--degree") == 0)
            degree = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--queries") == 0)
            nq = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "-k") == 0)
            k = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--metric") == 0)
            metric_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--seed") == 0)
            seed = strtoull(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: sparsering demo [--rows N] [--cols N] [--degree D] [--queries N] [-k K] "
                            "[--metric NAME] [--seed S]\n");
            return CLI_USAGE;
        }
    }
    sr_metric metric;
    if (sr_metric_from_name(metric_name, &metric) != SR_SUCCESS)
        return cli_fail(SR_ERROR_INVALID_ARGUMENT, "demo");
    if (nrows < 1 || ncols < 2 || ncols > 2147483647 || degree <= 0 || k < 1 || k > nrows || nq < 1) {
        fprintf(stderr, "sparsering demo: need rows >= 1, 2 <= cols < 2^31, degree > 0, 1 <= k <= rows, queries >= 1\n");
        return CLI_USAGE;
    }
    nq = nq < nrows ? nq : nrows;
    int64_t *rowptr;
    int32_t *colind;
    float *values;
    if (!powerlaw_csr(nrows, ncols, degree, seed, &rowptr, &colind, &values)) {
        fprintf(stderr, "sparsering demo: out of memory generating the data\n");
        return CLI_FAILED;
    }
    printf("sparsering %s\n", sr_version_string());
    printf("data: %lld documents x %lld words, %lld nonzeros (generated, seed %llu)\n", (long long)nrows,
           (long long)ncols, (long long)rowptr[nrows], (unsigned long long)seed);
    printf("k-NN: the %lld nearest of %lld query documents among all %lld, metric %s\n\n", (long long)k,
           (long long)nq, (long long)nrows, sr_metric_name(metric));

    sr_context cpu = NULL, gpu = NULL;
    sr_context_options o = sr_context_options_default();
    o.backend = SR_BACKEND_CPU;
    o.threads = g->threads;
    sr_status s = sr_context_create(&cpu, &o);
    if (g->backend != SR_BACKEND_CPU) {
        o.backend = g->backend == SR_BACKEND_CUDA ? SR_BACKEND_CUDA : SR_BACKEND_AUTO;
        if (sr_context_create(&gpu, &o) == SR_SUCCESS) {
            sr_backend b;
            sr_context_get_backend(gpu, &b);
            if (b != SR_BACKEND_CUDA) {
                sr_context_destroy(gpu);
                gpu = NULL;
            }
        } else if (g->backend == SR_BACKEND_CUDA) {
            s = SR_ERROR_NO_DEVICE;
        }
    }
    sr_matrix A = NULL, Q = NULL;
    knn_run runs[2] = {{0}, {0}};
    for (int r = 0; r < 2; r++) {
        runs[r].idx = malloc((size_t)(nq * k) * sizeof(int64_t));
        runs[r].dist = malloc((size_t)(nq * k) * sizeof(float));
        if (!runs[r].idx || !runs[r].dist)
            s = s ? s : SR_ERROR_OUT_OF_MEMORY;
    }
    if (s == SR_SUCCESS)
        s = sr_matrix_from_csr(cpu, &A, nrows, ncols, SR_TYPE_FLOAT32, rowptr, colind, values, SR_HOST);
    if (s == SR_SUCCESS)
        s = first_rows(cpu, rowptr, colind, values, nq, ncols, &Q);
    if (s == SR_SUCCESS && g->backend != SR_BACKEND_CUDA)
        s = run_knn(cpu, A, Q, k, metric, nq, &runs[0]);
    if (s == SR_SUCCESS && gpu)
        s = run_knn(gpu, A, Q, k, metric, nq, &runs[1]);
    int rc = CLI_OK;
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, "demo");
    } else {
        const knn_run *shown = gpu ? &runs[1] : &runs[0];
        for (int64_t q = 0; q < 3 && q < nq; q++) {
            printf("document %lld:", (long long)q);
            for (int64_t t = 0; t < k; t++)
                printf("  %lld (%.4f)", (long long)shown->idx[q * k + t], shown->dist[q * k + t]);
            printf("\n");
        }
        printf("\n");
        if (g->backend != SR_BACKEND_CUDA)
            printf("  cpu  %9.2f ms  (%.0f queries/s)\n", runs[0].seconds * 1e3, (double)nq / runs[0].seconds);
        if (gpu) {
            printf("  cuda %9.2f ms  (%.0f queries/s)\n", runs[1].seconds * 1e3, (double)nq / runs[1].seconds);
            size_t peak = 0;
            sr_context_device_memory(gpu, NULL, &peak);
            printf("  peak device memory %.1f MB\n", peak / 1e6);
        } else {
            printf("  (no GPU in use: run on a machine with a CUDA device for the GPU row)\n");
        }
        if (gpu && g->backend != SR_BACKEND_CUDA) {
            double worst = 0;
            for (int64_t t = 0; t < nq * k; t++)
                worst = fmax(worst, fabs((double)runs[0].dist[t] - (double)runs[1].dist[t]));
            printf("  GPU and CPU neighbour distances agree to %.2g%s\n", worst,
                   worst <= 1e-4 ? "" : "  (DIFFERENT)");
            if (worst > 1e-4)
                rc = CLI_FAILED;
        }
    }
    for (int r = 0; r < 2; r++) {
        free(runs[r].idx);
        free(runs[r].dist);
    }
    sr_matrix_free(A);
    sr_matrix_free(Q);
    sr_context_destroy(cpu);
    sr_context_destroy(gpu);
    free(rowptr);
    free(colind);
    free(values);
    return rc;
}
