/* sparsering pagerank: PageRank of a graph file, on the SpMV plan (sr_pagerank). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: sparsering pagerank GRAPH.mtx [--damping D] [--tol T] [--max-iter N] [--no-plan] [--float32]\n"
    "                          [--top K] [--out RANKS.txt]\n"
    "  PageRank (networkx's, no personalization) by power iteration; GRAPH's entries are edges\n"
    "  row -> column weighing their values (a pattern file: 1 each). Prints the K best vertices\n"
    "  (default 10) and the times of the set-up, the SpMV plan and the iterations.\n";

/* The k largest ranks' vertices, best first (ties to the smaller vertex). */
static void print_top(const double *r, int64_t n, int64_t k)
{
    int64_t *best = malloc((size_t)(k > 0 ? k : 1) * sizeof *best), m = 0;
    for (int64_t i = 0; best && k > 0 && i < n; i++) { /* (--top 0: none) */
        int64_t at = m < k ? m++ : k;
        if (at == k && !(r[i] > r[best[k - 1]]))
            continue;
        if (at == k)
            at = k - 1;
        while (at > 0 && r[i] > r[best[at - 1]]) {
            best[at] = best[at - 1];
            at--;
        }
        best[at] = i;
    }
    for (int64_t j = 0; j < m; j++)
        printf("%lld %.9g\n", (long long)best[j], r[best[j]]);
    free(best);
}

int cmd_pagerank(const cli_globals *g, int argc, char **argv)
{
    const char *path = NULL, *out = NULL;
    sr_pagerank_options o = sr_pagerank_options_default();
    sr_type type = SR_TYPE_FLOAT64;
    long long top = 10;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--damping") == 0)
            o.damping = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--tol") == 0)
            o.tolerance = atof(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--max-iter") == 0)
            o.max_iterations = atoi(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--top") == 0)
            top = atoll(argv[++i]);
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (strcmp(argv[i], "--no-plan") == 0)
            o.plan = false;
        else if (strcmp(argv[i], "--float32") == 0)
            type = SR_TYPE_FLOAT32;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    if (!path || top < 0) {
        fputs(usage, stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix A = NULL;
    const double t0 = cli_seconds();
    sr_status s = sr_matrix_read_mm(ctx, path, -1, &A, NULL);
    if (s == SR_SUCCESS)
        s = cli_to_backend(ctx, &A);
    const double t_read = cli_seconds() - t0;
    if (s != SR_SUCCESS) {
        sr_context_destroy(ctx);
        return cli_fail(s, path);
    }
    sr_matrix_info info;
    sr_matrix_get_info(A, &info);
    const int64_t n = info.nrows;
    void *ranks = malloc((size_t)(n + 1) * sizeof(double));
    double *r = malloc((size_t)(n + 1) * sizeof(double));
    sr_pagerank_result res;
    const sr_dense rv = sr_vector_view(ranks, n, type, SR_HOST);
    if (!ranks || !r) {
        fputs("sparsering: pagerank: out of host memory for the ranks\n", stderr);
        rc = CLI_FAILED;
    } else if ((s = sr_pagerank(ctx, A, &o, &rv, &res)) == SR_SUCCESS) {
        for (int64_t i = 0; i < n; i++)
            r[i] = type == SR_TYPE_FLOAT32 ? ((float *)ranks)[i] : ((double *)ranks)[i];
        print_top(r, n, top);
        printf("pagerank: %lld vertices, %lld edges; %d iterations, last change %.3g; %s backend: read %.3f s, "
               "set-up %.4f s, plan %.4f s (%s), iterations %.4f s (%.3f ms each)\n",
               (long long)n, (long long)info.nnz, res.iterations, res.change, cli_backend_name(ctx), t_read,
               res.setup_seconds, res.plan_seconds,
               !o.plan ? "off" : res.plan.in_use ? "in use" : res.plan_seconds > 0 ? "kept the plain SpMV" : "not tried: fewer than 500 iterations on the CPU", res.iterate_seconds,
               res.iterations ? 1e3 * res.iterate_seconds / res.iterations : 0.0);
        if (out) {
            FILE *f = fopen(out, "w");
            for (int64_t i = 0; f && i < n; i++)
                fprintf(f, "%.17g\n", r[i]);
            if (!f || fclose(f) != 0) {
                fprintf(stderr, "sparsering: cannot write %s\n", out);
                rc = CLI_FAILED;
            }
        }
    } else {
        rc = cli_fail(s, "pagerank");
    }
    free(ranks);
    free(r);
    sr_matrix_free(A);
    sr_context_destroy(ctx);
    return rc;
}
