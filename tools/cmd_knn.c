/* sparsering knn DATA.mtx: the k nearest rows of DATA (the index) to each query row. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

int cli_knn_progress(int64_t done, int64_t total, void *user)
{
    double *last = user, now = cli_seconds();
    if (isatty(2) && (now - *last >= 1.0 || done == total)) { /* at most once a second, on a terminal */
        fprintf(stderr, "\r%lld / %lld queries (%.0f%%)%s", (long long)done, (long long)total,
                100.0 * (double)done / (double)total, done == total ? "\n" : "");
        *last = now;
    }
    return cli_interrupted; /* Ctrl-C: stop between batches */
}

sr_status cli_to_backend(sr_context ctx, sr_matrix *M)
{
    sr_backend b;
    sr_context_get_backend(ctx, &b);
    if (b != SR_BACKEND_CUDA)
        return SR_SUCCESS;
    sr_matrix D = NULL;
    sr_status s = sr_matrix_copy_to(ctx, *M, SR_DEVICE, &D);
    if (s == SR_SUCCESS) {
        sr_matrix_free(*M);
        *M = D;
    }
    return s;
}

static int write_result(const char *path, const int64_t *idx, const double *dist, int64_t nq, int64_t k,
                        int64_t shown)
{
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "sparsering: knn: cannot write %s\n", path);
        return CLI_FAILED;
    }
    fprintf(f, "# query\trank\tneighbour\tdistance   (rows numbered from 0)\n");
    int64_t rows = path ? nq : (shown < nq ? shown : nq);
    for (int64_t q = 0; q < rows; q++)
        for (int64_t t = 0; t < k; t++)
            fprintf(f, "%lld\t%lld\t%lld\t%.9g\n", (long long)q, (long long)t + 1, (long long)idx[q * k + t],
                    dist[q * k + t]);
    if (!path && rows < nq)
        fprintf(f, "# ... %lld more queries (use --out FILE for all)\n", (long long)(nq - rows));
    if (path && fclose(f) != 0) {
        fprintf(stderr, "sparsering: knn: writing %s failed\n", path);
        return CLI_FAILED;
    }
    return CLI_OK;
}

bool cli_graph_mode(const char *name, sr_graph_mode *mode)
{
    if (strcmp(name, "connectivity") != 0 && strcmp(name, "distance") != 0)
        return false;
    *mode = strcmp(name, "distance") == 0 ? SR_GRAPH_DISTANCE : SR_GRAPH_CONNECTIVITY;
    return true;
}

bool cli_precision(const char *name, bool float64_allowed, sr_precision *precision, bool *float64)
{
    *float64 = false;
    if (strcmp(name, "exact") == 0)
        *precision = SR_PRECISION_EXACT;
    else if (strcmp(name, "tf32") == 0)
        *precision = SR_PRECISION_TF32;
    else if (strcmp(name, "float32") == 0)
        *precision = SR_PRECISION_FLOAT32;
    else if (float64_allowed && strcmp(name, "float64") == 0)
        *float64 = true;
    else
        return false;
    return true;
}

bool cli_knn_option(int argc, char **argv, int *i, const char **metric_name, int64_t *k, double *p)
{
    if (*i + 1 >= argc)
        return false;
    if (strcmp(argv[*i], "--metric") == 0)
        *metric_name = argv[++*i];
    else if (strcmp(argv[*i], "--metric-file") == 0) /* as --metric @FILE */
        *metric_name = cli_at_path(argv[++*i]);
    else if (strcmp(argv[*i], "-k") == 0)
        *k = atoll(argv[++*i]);
    else if (strcmp(argv[*i], "--p") == 0)
        *p = atof(argv[++*i]);
    else
        return false;
    return true;
}

const char *cli_at_path(const char *path)
{
    static char at[4096];
    snprintf(at, sizeof at, "@%s", path);
    return at;
}

int cli_knn_start(const cli_globals *g, const char *what, const char *metric_name, sr_metric *metric, sr_context *ctx)
{
    if (metric_name[0] == '@') { /* a user metric's definition file (docs/user-semirings.md) */
        const int rc = cli_define_metric(metric_name + 1, what, metric);
        return rc != CLI_OK ? rc : cli_context(g, ctx);
    }
    sr_status s = sr_metric_from_name(metric_name, metric);
    if (s != SR_SUCCESS)
        return cli_fail(s, what);
    return cli_context(g, ctx);
}

sr_status cli_read_inputs(sr_context ctx, const char *data, const char *queries, sr_matrix *X, sr_matrix *Q)
{
    sr_status s = sr_matrix_read_mm(ctx, data, SR_TYPE_FLOAT32, X, NULL);
    if (s == SR_SUCCESS && queries)
        s = sr_matrix_read_mm(ctx, queries, SR_TYPE_FLOAT32, Q, NULL);
    if (s == SR_SUCCESS)
        s = cli_to_backend(ctx, X);
    if (s == SR_SUCCESS && queries)
        s = cli_to_backend(ctx, Q);
    return s;
}

int cmd_knn(const cli_globals *g, int argc, char **argv)
{
    const char *data = NULL, *queries = NULL, *out = NULL, *metric_name = "euclidean", *precision_name = "float64";
    int64_t k = 10;
    double p = 2.0;
    for (int i = 1; i < argc; i++) {
        if (cli_knn_option(argc, argv, &i, &metric_name, &k, &p))
            continue;
        if (i + 1 < argc && strcmp(argv[i], "--precision") == 0)
            precision_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--queries") == 0)
            queries = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (argv[i][0] != '-' && !data)
            data = argv[i];
        else
            data = NULL, i = argc; /* force the usage message */
    }
    sr_precision precision = SR_PRECISION_EXACT;
    bool float64 = true;
    if (!data || k < 1 || !cli_precision(precision_name, true, &precision, &float64)) {
        fprintf(stderr, "usage: sparsering knn DATA.mtx [--metric NAME | --metric-file DEF] [-k K] [--p P] [--queries Q.mtx] [--out FILE]\n"
                        "                      [--precision float64|exact|tf32|float32]\n");
        return CLI_USAGE;
    }
    sr_metric metric;
    sr_context ctx;
    int rc = cli_knn_start(g, "knn", metric_name, &metric, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL, Q = NULL;
    int64_t *idx = NULL;
    double *dist = NULL;
    double t0 = cli_seconds();
    sr_status s = cli_read_inputs(ctx, data, queries, &X, &Q);
    double t_read = cli_seconds() - t0;
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, "knn");
        goto done;
    }
    sr_matrix_info qi, xi;
    sr_matrix_get_info(Q ? Q : X, &qi);
    sr_matrix_get_info(X, &xi);
    if (k > xi.nrows) { /* refused before the k-wide result arrays are allocated */
        fprintf(stderr, "sparsering: knn: -k %lld is more than the %lld rows of %s\n", (long long)k,
                (long long)xi.nrows, data);
        rc = CLI_USAGE;
        goto done;
    }
    idx = malloc((size_t)(qi.nrows * k + 1) * sizeof *idx);
    dist = malloc((size_t)(qi.nrows * k + 1) * sizeof *dist);
    if (!idx || !dist) {
        fprintf(stderr, "sparsering: knn: out of memory for %lld x %lld results\n", (long long)qi.nrows, (long long)k);
        rc = CLI_FAILED;
        goto done;
    }
    /* float32 distances go in the first half of dist's bytes, then widen in place from the end */
    sr_dense D = sr_dense_view(dist, qi.nrows, k, float64 ? SR_TYPE_FLOAT64 : SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    double last = cli_seconds();
    sr_knn_options opts = {cli_knn_progress, &last, precision};
    t0 = cli_seconds();
    s = sr_knn(ctx, X, Q ? Q : X, k, metric, p, idx, &D, &opts);
    double t_knn = cli_seconds() - t0;
    if (s == SR_SUCCESS && !float64)
        for (int64_t t = qi.nrows * k - 1; t >= 0; t--)
            dist[t] = (double)((const float *)dist)[t];
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, "knn");
        goto done;
    }
    fprintf(stderr, "knn: %lld queries, k %lld, %s, %s backend: read %.3f s, k-NN %.3f s (%s)\n", (long long)qi.nrows,
            (long long)k, sr_metric_name(metric), cli_backend_name(ctx), t_read, t_knn, sr_last_method());
    rc = write_result(out, idx, dist, qi.nrows, k, 5);
done:
    free(idx);
    free(dist);
    sr_matrix_free(X);
    sr_matrix_free(Q);
    sr_context_destroy(ctx);
    return rc;
}
