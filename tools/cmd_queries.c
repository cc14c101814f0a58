/* Graph queries: sparsering closure, reach and cfpq. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* A progress line on stderr after each round (user: the query's name). */
static int round_progress(int64_t round, int64_t entries, void *user)
{
    if (isatty(2)) {
        fprintf(stderr, "\r%s: round %lld, %lld pairs", (const char *)user, (long long)round, (long long)entries);
        fflush(stderr);
    }
    return cli_interrupted; /* Ctrl-C: stop after this round */
}

static sr_query_options progress_for(const char *name)
{
    sr_query_options o = {round_progress, (void *)name, false};
    return o;
}

static void end_progress(const sr_query_options *o)
{
    if (o->progress && isatty(2))
        fputc('\n', stderr);
}

static sr_status read_graph(sr_context ctx, const char *path, sr_matrix *G)
{
    sr_status s = sr_matrix_read_mm(ctx, path, SR_TYPE_BOOL, G, NULL);
    return s == SR_SUCCESS ? cli_to_backend(ctx, G) : s;
}

/* Writes R when asked, prints the summary line, frees R. */
static int finish(sr_context ctx, sr_status s, const char *what, sr_matrix R, const char *out, double t_read,
                  const sr_query_stats *st)
{
    if (s == SR_SUCCESS && out)
        s = sr_matrix_write_mm(ctx, R, out, NULL);
    int rc = CLI_OK;
    if (s != SR_SUCCESS) {
        rc = cli_fail(s, what);
    } else {
        sr_matrix_info info;
        sr_matrix_get_info(R, &info);
        printf("%s: %lld pairs in %lld rounds (%lld products); %s backend: read %.3f s, %s %.4f s%s%s\n", what,
               (long long)info.nnz, (long long)st->rounds, (long long)st->products, cli_backend_name(ctx), t_read,
               what, st->seconds, out ? "; written to " : "", out ? out : "");
    }
    sr_matrix_free(R);
    return rc;
}

int cmd_closure(const cli_globals *g, int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *method_name = "semi-naive";
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--method") == 0)
            method_name = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    sr_closure_method method = strcmp(method_name, "squaring") == 0 ? SR_CLOSURE_SQUARING : SR_CLOSURE_SEMINAIVE;
    if (!path || (strcmp(method_name, "squaring") != 0 && strcmp(method_name, "semi-naive") != 0)) {
        fputs("usage: sparsering closure GRAPH.mtx [--method semi-naive|squaring] [--out CLOSURE.mtx]\n", stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_matrix G = NULL, C = NULL;
    double t0 = cli_seconds();
    sr_status s = read_graph(ctx, path, &G);
    double t_read = cli_seconds() - t0;
    sr_query_stats st = {0, 0, 0};
    sr_query_options o = progress_for("closure");
    if (s == SR_SUCCESS)
        s = sr_transitive_closure(ctx, G, method, &C, &o, &st);
    end_progress(&o);
    rc = finish(ctx, s, "closure", C, out, t_read, &st);
    sr_matrix_free(G);
    sr_context_destroy(ctx);
    return rc;
}

/* "3,17,42" -> a new array of vertex numbers. */
static int64_t *parse_sources(const char *text, int64_t *n)
{
    int64_t cap = 16, *v = malloc((size_t)cap * sizeof *v);
    *n = 0;
    for (const char *p = text; v && *p;) {
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p || (*end && *end != ',')) {
            free(v);
            return NULL;
        }
        if (*n == cap) {
            int64_t *grown = realloc(v, (size_t)(cap *= 2) * sizeof *v);
            if (!grown) {
                free(v);
                return NULL;
            }
            v = grown;
        }
        v[(*n)++] = x;
        p = *end ? end + 1 : end;
    }
    return v;
}

int cmd_reach(const cli_globals *g, int argc, char **argv)
{
    const char *path = NULL, *out = NULL, *list = NULL;
    bool all = false;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--sources") == 0)
            list = argv[++i];
        else if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            path = NULL, i = argc;
    }
    int64_t n = 0, *sources = list ? parse_sources(list, &n) : NULL;
    if (!path || (!!list == all) || (list && !sources)) {
        fputs("usage: sparsering reach GRAPH.mtx (--sources V1,V2,... | --all) [--out REACHED.mtx]\n"
              "  row s of the result lists the vertices reachable from source s (itself included)\n",
              stderr);
        free(sources);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK) {
        free(sources);
        return rc;
    }
    sr_matrix G = NULL, R = NULL;
    double t0 = cli_seconds();
    sr_status s = read_graph(ctx, path, &G);
    double t_read = cli_seconds() - t0;
    if (s == SR_SUCCESS && all) {
        sr_matrix_info info;
        sr_matrix_get_info(G, &info);
        n = info.nrows;
        sources = malloc((size_t)(n ? n : 1) * sizeof *sources);
        for (int64_t v = 0; sources && v < n; v++)
            sources[v] = v;
    }
    sr_query_stats st = {0, 0, 0};
    sr_query_options o = progress_for("reach");
    if (s == SR_SUCCESS)
        s = sr_reachability(ctx, G, n, sources, &R, &o, &st);
    end_progress(&o);
    rc = finish(ctx, s, "reach", R, out, t_read, &st);
    free(sources);
    sr_matrix_free(G);
    sr_context_destroy(ctx);
    return rc;
}

enum { kMaxLabels = 64 };

int cmd_cfpq(const cli_globals *g, int argc, char **argv)
{
    const char *grammar_path = NULL, *graph_path = NULL, *out = NULL, *symbol = NULL;
    char *label_specs[kMaxLabels];
    int nspecs = 0;
    bool reverse = false, ok = true, allow_missing = false;
    for (int i = 1; ok && i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--graph") == 0)
            graph_path = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--label") == 0 && nspecs < kMaxLabels)
            label_specs[nspecs++] = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--symbol") == 0)
            symbol = argv[++i];
        else if (i + 1 < argc && strcmp(argv[i], "--out") == 0)
            out = argv[++i];
        else if (strcmp(argv[i], "--allow-missing-labels") == 0)
            allow_missing = true;
        else if (strcmp(argv[i], "--reverse") == 0)
            reverse = true;
        else if (argv[i][0] != '-' && !grammar_path)
            grammar_path = argv[i];
        else
            ok = false;
    }
    for (int k = 0; k < nspecs; k++)
        ok = ok && strchr(label_specs[k], '=') && strchr(label_specs[k], '=') != label_specs[k];
    if (!ok || !grammar_path || (!graph_path && nspecs == 0)) {
        fputs("usage: sparsering cfpq GRAMMAR.txt (--graph EDGES.txt | --label NAME=GRAPH.mtx ...) [--reverse]\n"
              "       [--symbol NONTERMINAL] [--out PAIRS.mtx] [--allow-missing-labels]\n"
              "  EDGES.txt: one edge a line, 'FROM TO LABEL'; --reverse adds NAME_r, the reversed edges of each label\n",
              stderr);
        return CLI_USAGE;
    }
    sr_context ctx;
    int rc = cli_context(g, &ctx);
    if (rc != CLI_OK)
        return rc;
    sr_backend b;
    sr_context_get_backend(ctx, &b);
    const sr_location where = b == SR_BACKEND_CUDA ? SR_DEVICE : SR_HOST;
    sr_grammar grammar = NULL;
    int64_t nlabels = 0, nvertices = 0;
    char **labels = NULL;
    sr_matrix *graphs = NULL, R = NULL;
    double t0 = cli_seconds();
    sr_status s = sr_grammar_read(grammar_path, &grammar);
    if (s == SR_SUCCESS && graph_path)
        s = sr_labeled_graph_read(ctx, graph_path, where, &nvertices, &nlabels, &labels, &graphs);
    if (s == SR_SUCCESS && !graph_path) { /* --label NAME=FILE.mtx ... */
        labels = calloc((size_t)nspecs * 2, sizeof *labels);
        graphs = calloc((size_t)nspecs * 2, sizeof *graphs);
        for (int k = 0; s == SR_SUCCESS && k < nspecs; k++) {
            char *eq = strchr(label_specs[k], '=');
            labels[k] = strndup(label_specs[k], (size_t)(eq - label_specs[k]));
            nlabels++;
            s = read_graph(ctx, eq + 1, &graphs[k]);
        }
    }
    if (s == SR_SUCCESS && reverse) { /* NAME_r: the transpose of each label's graph */
        char **l2 = realloc(labels, (size_t)nlabels * 2 * sizeof *l2);
        sr_matrix *g2 = l2 ? realloc(graphs, (size_t)nlabels * 2 * sizeof *g2) : NULL;
        if (l2)
            labels = l2;
        if (g2)
            graphs = g2;
        for (int64_t k = 0, n = nlabels; s == SR_SUCCESS && l2 && g2 && k < n; k++) {
            size_t len = strlen(labels[k]);
            labels[nlabels] = malloc(len + 3);
            snprintf(labels[nlabels], len + 3, "%s_r", labels[k]);
            s = sr_matrix_transpose(ctx, graphs[k], &graphs[nlabels]);
            nlabels++;
        }
    }
    double t_read = cli_seconds() - t0;
    sr_query_stats st = {0, 0, 0};
    sr_query_options o = progress_for("cfpq");
    o.allow_missing_labels = allow_missing;
    if (s == SR_SUCCESS)
        s = sr_cfpq(ctx, grammar, nlabels, (const char *const *)labels, graphs, symbol, &R, &o, &st);
    end_progress(&o);
    rc = finish(ctx, s, "cfpq", R, out, t_read, &st);
    sr_labels_free(nlabels, labels, graphs);
    sr_grammar_free(grammar);
    sr_context_destroy(ctx);
    return rc;
}
