/* sparsering radius DATA.mtx --radius R: every pair of rows within R, as a sparse matrix. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *kUsage = "usage: sparsering radius DATA.mtx --radius R [--metric NAME | --metric-file DEF] [--p P] [--queries Q.mtx] "
                            "[--mode connectivity|distance] [--include-self] [--out PAIRS.mtx]\n";

int cmd_radius(const cli_globals *g, int argc, char **argv)
{
    const char *data = NULL, *queries = NULL, *out = NULL, *metric_name = "euclidean", *mode = "distance";
    const char *radius_text = NULL;
    double p = 2.0;
    sr_radius_options o = sr_radius_options_default();
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--metric") == 0)
            metric_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--metric-file") == 0)
            metric_name = cli_at_path(argv[++i]);
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
    if (!data || !radius_text || *end != '\0' || isnan(radius) || !cli_graph_mode(mode, &o.mode)) {
        fputs(kUsage, stderr);
        return CLI_USAGE;
    }
    if (queries && o.include_self) {
        fputs("sparsering: radius: --include-self applies only without --queries (DATA against itself)\n", stderr);
        return CLI_USAGE;
    }
    sr_metric metric;
    sr_context ctx;
    int rc = cli_knn_start(g, "radius", metric_name, &metric, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL, Q = NULL, R = NULL;
    double t0 = cli_seconds(), last = t0;
    sr_status s = cli_read_inputs(ctx, data, queries, &X, &Q);
    double t_read = cli_seconds() - t0;
    o.progress = cli_knn_progress;
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
        sr_matrix_get_info(R, &ri);
        printf("radius: %lld queries x %lld rows, %s within %g, %s%s: %lld pairs; %s backend: read %.3f s, "
               "pairs %.3f s%s%s\n",
               (long long)ri.nrows, (long long)ri.ncols, sr_metric_name(metric), radius, mode,
               o.include_self ? ", self included" : "", (long long)ri.nnz, cli_backend_name(ctx),
               t_read, t_pairs, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(R);
    sr_matrix_free(Q);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    return rc;
}
