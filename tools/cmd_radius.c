/* sparsering radius DATA.mtx --radius R: every pair of rows within R, as a sparse matrix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *kUsage = "usage: sparsering radius DATA.mtx --radius R [--metric NAME] [--p P] [--queries Q.mtx] "
                            "[--mode connectivity|distance] [--include-self] [--out PAIRS.mtx]\n";

/* Reads a matrix as float32 and moves it where the context computes. */
static sr_status read_for(sr_context ctx, const char *path, sr_matrix *M)
{
    sr_status s = sr_matrix_read_mm(ctx, path, SR_TYPE_FLOAT32, M, NULL);
    return s == SR_SUCCESS ? cli_to_backend(ctx, M) : s;
}

int cmd_radius(const cli_globals *g, int argc, char **argv)
{
    const char *data = NULL, *queries = NULL, *out = NULL, *metric_name = "euclidean", *mode = "distance";
    const char *radius_text = NULL;
    double p = 2.0;
    sr_radius_options o = sr_radius_options_default();
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--metric") == 0)
            metric_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--p") == 0)
            p = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--radius") == 0)
            radius_text = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--queries") == 0)
            queries = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--mode") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (strcmp(argv[i], "--include-self") == 0)
            o.include_self = true;
        else if (argv[i][0] != '-' && !data)
            data = argv[i];
        else
            data = NULL, i = argc; /* force the usage message */
    }
    char *end = NULL;
    double radius = radius_text ? strtod(radius_text, &end) : NAN;
    if (!data || !radius_text || *end != '\0' || isnan(radius) ||
        (strcmp(mode, "connectivity") != 0 && strcmp(mode, "distance") != 0)) {
        fputs(kUsage, stderr);
        return CLI_USAGE;
    }
    if (queries && o.include_self) {
        fputs("sparsering: radius: --include-self applies only without --queries (DATA against itself)\n", stderr);
        return CLI_USAGE;
    }
    o.mode = strcmp(mode, "distance") == 0 ? SR_GRAPH_DISTANCE : SR_GRAPH_CONNECTIVITY;
    sr_metric metric;
    sr_status s = sr_metric_from_name(metric_name, &metric);
    if (s != SR_SUCCESS)
        return cli_fail(s, "radius");
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL, Q = NULL, R = NULL;
    double t0 = cli_seconds(), last = t0;
    s = read_for(ctx, data, &X);
    if (s == SR_SUCCESS && queries)
        s = read_for(ctx, queries, &Q);
    double t_read = cli_seconds() - t0;
    o.progress = isatty(2) ? cli_knn_progress : NULL;
    o.progress_user = &last;
    t0 = cli_seconds();
    if (s == SR_SUCCESS)
        s = sr_radius_neighbors(ctx, X, Q, radius, metric, p, &o, &R);
    double t_pairs = cli_seconds() - t0;
    if (s == SR_SUCCESS && out)
        s = sr_matrix_write_mm(ctx, R, out, NULL);
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, "radius");
    } else {
        sr_matrix_info ri;
        sr_backend b;
        sr_matrix_get_info(R, &ri);
        sr_context_get_backend(ctx, &b);
        printf("radius: %lld queries x %lld rows, %s within %g, %s%s: %lld pairs; %s backend: read %.3f s, "
               "pairs %.3f s%s%s\n",
               (long long)ri.nrows, (long long)ri.ncols, sr_metric_name(metric), radius, mode,
               o.include_self ? ", self included" : "", (long long)ri.nnz, b == SR_BACKEND_CUDA ? "cuda" : "cpu",
               t_read, t_pairs, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(R);
    sr_matrix_free(Q);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    return rc;
}
