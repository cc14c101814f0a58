/* sparsering knn-graph DATA.mtx: the k-nearest-neighbour graph of DATA's rows, as a matrix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char *kUsage = "usage: sparsering knn-graph DATA.mtx [--metric NAME | --metric-file DEF] [-k K] [--p P] "
                            "[--mode connectivity|distance] [--include-self] [--symmetrize] [--out GRAPH.mtx]\n"
                            "                            [--precision exact|tf32|float32|float64]\n";

int cmd_knn_graph(const cli_globals *g, int argc, char **argv)
{
    const char *data = NULL, *out = NULL, *metric_name = "euclidean", *mode = "connectivity", *precision = "exact";
    int64_t k = 10;
    double p = 2.0;
    sr_knn_graph_options o = sr_knn_graph_options_default();
    for (int i = 1; i < argc; i++) {
        if (cli_knn_option(argc, argv, &i, &metric_name, &k, &p))
            continue;
        if (i + 1 < argc && strcmp(argv[i], "--mode") == 0)
            mode = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--precision") == 0)
            precision = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (strcmp(argv[i], "--include-self") == 0)
            o.include_self = true;
        else if (strcmp(argv[i], "--symmetrize") == 0)
            o.symmetrize = true;
        else if (argv[i][0] != '-' && !data)
            data = argv[i];
        else
            data = NULL, i = argc; /* force the usage message */
    }
    bool float64 = false;
    if (!data || k < 1 || !cli_graph_mode(mode, &o.mode) || !cli_precision(precision, true, &o.precision, &float64)) {
        fputs(kUsage, stderr);
        return CLI_USAGE;
    }
    o.type = float64 ? SR_TYPE_FLOAT64 : SR_TYPE_FLOAT32;
    sr_metric metric;
    sr_context ctx;
    int rc = cli_knn_start(g, "knn-graph", metric_name, &metric, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix X = NULL, G = NULL;
    double t0 = cli_seconds(), last = t0;
    sr_status s = cli_read_inputs(ctx, data, NULL, &X, NULL);
    double t_read = cli_seconds() - t0;
    o.progress = cli_knn_progress;
    o.progress_user = &last;
    t0 = cli_seconds();
    if (s == SR_SUCCESS)
        s = sr_knn_graph(ctx, X, k, metric, p, &o, &G);
    double t_graph = cli_seconds() - t0;
    if (s == SR_SUCCESS && out)
        s = sr_matrix_write_mm(ctx, G, out, NULL);
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, "knn-graph");
    } else {
        sr_matrix_info gi;
        sr_matrix_get_info(G, &gi);
        printf("knn-graph: %lld rows, k %lld, %s, %s%s%s: %lld edges; %s backend: read %.3f s, graph %.3f s%s%s\n",
               (long long)gi.nrows, (long long)k, sr_metric_name(metric), mode,
               o.include_self ? ", self included" : "", o.symmetrize ? ", symmetrized" : "", (long long)gi.nnz,
               cli_backend_name(ctx), t_read, t_graph, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(G);
    sr_matrix_free(X);
    sr_context_destroy(ctx);
    return rc;
}
