/* Graph queries built on the Boolean algebra: transitive closure (both methods) and multi-source
 * reachability against a BFS from every vertex; CFPQ against a dense fixpoint that reads the
 * grammar's rules as written (no normal form), on random labelled graphs; grammar errors; the
 * real debian-depends graph when present. CPU backend and (when present) CUDA. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

/* reach[s * n + v]: v reachable from s by >= 1 edges (plus s itself when `reflexive`). */
static uint8_t *bfs_reference(const test_csr *g, bool reflexive)
{
    const int64_t n = g->nrows;
    uint8_t *reach = calloc((size_t)(n * n + 1), 1);
    int64_t *queue = malloc((size_t)(n + 1) * sizeof *queue);
    for (int64_t s = 0; s < n; s++) {
        uint8_t *r = reach + s * n;
        int64_t head = 0, tail = 0;
        for (int64_t k = g->rowptr[s]; k < g->rowptr[s + 1]; k++)
            if (!r[g->colind[k]])
                r[g->colind[k]] = 1, queue[tail++] = g->colind[k];
        while (head < tail) {
            int64_t u = queue[head++];
            for (int64_t k = g->rowptr[u]; k < g->rowptr[u + 1]; k++)
                if (!r[g->colind[k]])
                    r[g->colind[k]] = 1, queue[tail++] = g->colind[k];
        }
        if (reflexive)
            r[s] = 1;
    }
    free(queue);
    return reach;
}

/* Rows [first, first + rows) of the reference against the pattern of M. */
static void check_against(sr_matrix M, const uint8_t *ref, int64_t n, const int64_t *row_of, int64_t rows,
                          const char *what)
{
    sr_matrix H = NULL;
    CHECK_OK(sr_matrix_copy_to(ctx, M, SR_HOST, &H));
    const int64_t *rp;
    const int32_t *ci;
    CHECK_OK(sr_matrix_csr_arrays(H, &rp, &ci, NULL));
    int64_t bad = 0, expected = 0;
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *e = ref + row_of[r] * n;
        int64_t count = 0;
        for (int64_t v = 0; v < n; v++)
            count += e[v];
        expected += count;
        bad += rp[r + 1] - rp[r] != count;
        for (int64_t k = rp[r]; k < rp[r + 1]; k++)
            bad += !e[ci[k]];
    }
    CHECK(bad == 0, "%s: %lld rows or entries differ (%lld entries expected)", what, (long long)bad, (long long)expected);
    sr_matrix_free(H);
}

static sr_matrix on_backend(const test_csr *m) { return test_make_matrix_at(ctx, m, where); }

static void check_closure_and_reach(int64_t n, double degree)
{
    test_csr g = test_random_csr(n, n, degree, SR_TYPE_BOOL);
    sr_matrix G = on_backend(&g);
    uint8_t *plus = bfs_reference(&g, false), *star = bfs_reference(&g, true);
    int64_t *all = malloc((size_t)(n + 1) * sizeof *all);
    for (int64_t v = 0; v < n; v++)
        all[v] = v;
    char what[96];
    for (int method = SR_CLOSURE_AUTO; method <= SR_CLOSURE_SQUARING; method++) {
        sr_matrix C = NULL;
        sr_query_stats st;
        CHECK_OK(sr_transitive_closure(ctx, G, (sr_closure_method)method, &C, NULL, &st));
        snprintf(what, sizeof what, "closure n=%lld method %d", (long long)n, method);
        check_against(C, plus, n, all, n, what);
        sr_matrix_free(C);
    }
    /* every vertex as a source, then a scattered list with repeats */
    sr_matrix R = NULL;
    CHECK_OK(sr_reachability(ctx, G, n, all, &R, NULL, NULL));
    snprintf(what, sizeof what, "reachability n=%lld", (long long)n);
    check_against(R, star, n, all, n, what);
    sr_matrix_free(R);
    if (n > 0) {
        int64_t some[7];
        for (int s = 0; s < 7; s++)
            some[s] = test_below(n);
        some[6] = some[0];
        CHECK_OK(sr_reachability(ctx, G, 7, some, &R, NULL, NULL));
        check_against(R, star, n, some, 7, "reachability, 7 sources");
        sr_matrix_free(R);
        int64_t bad = n;
        CHECK_FAILS(sr_reachability(ctx, G, 1, &bad, &R, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, "is not a vertex");
        /* no sources: an empty 0 x n result (found by fuzz_cli: bit blocks of no columns) */
        CHECK_OK(sr_reachability(ctx, G, 0, some, &R, NULL, NULL));
        sr_matrix_info ri;
        sr_matrix_get_info(R, &ri);
        CHECK(ri.nrows == 0 && ri.ncols == n && ri.nnz == 0, "no sources gave %lld x %lld, %lld entries",
              (long long)ri.nrows, (long long)ri.ncols, (long long)ri.nnz);
        sr_matrix_free(R);
    }
    free(all);
    free(plus);
    free(star);
    sr_matrix_free(G);
    test_csr_free(&g);
}

/* A small workspace forces reachability into batches of 64 sources. */
static void check_reach_batches(void)
{
    const int64_t n = 300;
    test_csr g = test_random_csr(n, n, 2, SR_TYPE_BOOL);
    sr_matrix G = on_backend(&g);
    uint8_t *star = bfs_reference(&g, true);
    int64_t all[300];
    for (int64_t v = 0; v < n; v++)
        all[v] = n - 1 - v;
    sr_context_options o;
    CHECK_OK(sr_context_get_options(ctx, &o));
    CHECK_OK(sr_context_set_workspace_limit(ctx, 3 * 8 * 2 * (size_t)n)); /* one word a row */
    sr_matrix R = NULL;
    CHECK_OK(sr_reachability(ctx, G, n, all, &R, NULL, NULL));
    check_against(R, star, n, all, n, "reachability in batches");
    CHECK_OK(sr_context_set_workspace_limit(ctx, o.workspace_limit));
    sr_matrix_free(R);
    free(star);
    sr_matrix_free(G);
    test_csr_free(&g);
}

/* ---------------------------------------------------------------- CFPQ against a dense fixpoint */

enum { kMaxAlt = 8, kMaxSym = 6 };
typedef struct {
    const char *lhs;
    int nalt;
    const char *alt[kMaxAlt][kMaxSym]; /* NULL-terminated symbol lists; an empty list is eps */
} ref_rule;

/* T[A] as dense n x n relations; rules read as written: a symbol is a nonterminal when it names a
 * rule, else a label. */
static void cfpq_reference(const ref_rule *rules, int nrules, const char **labels, uint8_t **graphs, int nlabels,
                           int64_t n, uint8_t **T)
{
    uint8_t *cur = malloc((size_t)(n * n)), *next = malloc((size_t)(n * n));
    for (int changed = 1; changed;) {
        changed = 0;
        for (int r = 0; r < nrules; r++)
            for (int a = 0; a < rules[r].nalt; a++) {
                for (int64_t t = 0; t < n * n; t++) /* the identity: the empty prefix */
                    cur[t] = t / n == t % n;
                for (int s = 0; s < kMaxSym && rules[r].alt[a][s]; s++) {
                    const char *sym = rules[r].alt[a][s];
                    const uint8_t *rel = NULL;
                    for (int q = 0; q < nrules; q++)
                        if (strcmp(rules[q].lhs, sym) == 0)
                            rel = T[q];
                    for (int l = 0; !rel && l < nlabels; l++)
                        if (strcmp(labels[l], sym) == 0)
                            rel = graphs[l];
                    memset(next, 0, (size_t)(n * n));
                    for (int64_t i = 0; rel && i < n; i++)
                        for (int64_t k = 0; k < n; k++)
                            if (cur[i * n + k])
                                for (int64_t j = 0; j < n; j++)
                                    next[i * n + j] |= rel[k * n + j];
                    memcpy(cur, next, (size_t)(n * n));
                }
                for (int64_t t = 0; t < n * n; t++)
                    if (cur[t] && !T[r][t])
                        T[r][t] = 1, changed = 1;
            }
    }
    free(cur);
    free(next);
}

static void check_cfpq(const char *text, const ref_rule *rules, int nrules, int64_t n, double degree)
{
    const char *labels[] = {"a", "b", "c"};
    test_csr g[3];
    uint8_t *dense[3];
    sr_matrix graphs[3];
    for (int l = 0; l < 3; l++) {
        g[l] = test_random_csr(n, n, degree, SR_TYPE_BOOL);
        dense[l] = calloc((size_t)(n * n + 1), 1);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = g[l].rowptr[i]; k < g[l].rowptr[i + 1]; k++)
                dense[l][i * n + g[l].colind[k]] = 1;
        graphs[l] = on_backend(&g[l]);
    }
    uint8_t *T[8];
    for (int r = 0; r < nrules; r++)
        T[r] = calloc((size_t)(n * n + 1), 1);
    cfpq_reference(rules, nrules, labels, dense, 3, n, T);
    sr_grammar gr = NULL;
    CHECK_OK(sr_grammar_parse(text, &gr));
    int64_t *all = malloc((size_t)(n + 1) * sizeof *all);
    for (int64_t v = 0; v < n; v++)
        all[v] = v;
    for (int r = 0; r < nrules; r++) {
        sr_matrix R = NULL;
        sr_query_stats st;
        CHECK_OK(sr_cfpq(ctx, gr, 3, labels, graphs, rules[r].lhs, &R, NULL, &st));
        char what[160];
        snprintf(what, sizeof what, "cfpq %s of '%.60s' n=%lld", rules[r].lhs, text, (long long)n);
        if (R)
            check_against(R, T[r], n, all, n, what);
        sr_matrix_free(R);
    }
    sr_grammar_free(gr);
    free(all);
    for (int r = 0; r < nrules; r++)
        free(T[r]);
    for (int l = 0; l < 3; l++) {
        free(dense[l]);
        sr_matrix_free(graphs[l]);
        test_csr_free(&g[l]);
    }
}

static void check_grammars(void)
{
    /* same generation */
    const ref_rule sg[] = {{"S", 2, {{"b", "S", "a", NULL}, {"b", "a", NULL}}}};
    check_cfpq("# same generation\nS -> b S a | b a\n", sg, 1, 30, 1.5);
    /* balanced brackets with the empty word */
    const ref_rule dyck[] = {{"S", 2, {{"a", "S", "b", "S", NULL}, {NULL}}}};
    check_cfpq("S -> a S b S | eps", dyck, 1, 25, 1.2);
    /* unit rules, long rules, terminals inside them, several nonterminals */
    const ref_rule mixed[] = {{"S", 2, {{"A", "c", "B", "a", NULL}, {"B", NULL}}},
                              {"A", 2, {{"a", NULL}, {"A", "b", NULL}}},
                              {"B", 2, {{"c", "c", NULL}, {"A", NULL}}}};
    check_cfpq("S -> A c B a | B\nA -> a | A b\nB -> c c | A\n", mixed, 3, 20, 1.0);
    check_cfpq("S -> A c B a | B\nA -> a | A b\nB -> c c | A\n", mixed, 3, 1, 1.0);

    sr_grammar g = NULL;
    CHECK_FAILS(sr_grammar_parse("S -> a\nthis line has no arrow\n", &g), SR_ERROR_PARSE, "line 2");
    CHECK_FAILS(sr_grammar_parse("S T -> a\n", &g), SR_ERROR_PARSE, "one symbol");
    CHECK_FAILS(sr_grammar_parse("# only a comment\n", &g), SR_ERROR_PARSE, "no rules");
    CHECK_OK(sr_grammar_parse("S -> a\n", &g));
    CHECK(strcmp(sr_grammar_start(g), "S") == 0, "start symbol");
    const char *label = "a";
    test_csr e = test_random_csr(4, 4, 1, SR_TYPE_BOOL);
    sr_matrix E = on_backend(&e), R = NULL;
    CHECK_FAILS(sr_cfpq(ctx, g, 1, &label, &E, "Nope", &R, NULL, NULL), SR_ERROR_INVALID_ARGUMENT, "not a nonterminal");
    sr_matrix_free(E);
    test_csr_free(&e);
    sr_grammar_free(g);
}

/* The real graph: closure by both methods agree, and CFPQ's same generation is symmetric in the
 * sense the data gives (checked by size only against the scipy figure: 11.9M pairs). */
static void check_debian(void)
{
    const char *dir = getenv("SPARSERING_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/graphs/debian-depends.mtx.gz", dir ? dir : ".");
    sr_matrix A = NULL, G = NULL, C1 = NULL, C2 = NULL;
    if (sr_matrix_read_mm(ctx, path, SR_TYPE_BOOL, &A, NULL) != SR_SUCCESS) {
        printf("debian-depends part skipped: %s\n", sr_last_error());
        return;
    }
    if (where == SR_DEVICE)
        CHECK_OK(sr_matrix_copy_to(ctx, A, SR_DEVICE, &G));
    sr_matrix g = G ? G : A;
    sr_query_stats s1, s2;
    CHECK_OK(sr_transitive_closure(ctx, g, SR_CLOSURE_SEMINAIVE, &C1, NULL, &s1));
    CHECK_OK(sr_transitive_closure(ctx, g, SR_CLOSURE_SQUARING, &C2, NULL, &s2));
    bool same = false;
    CHECK_OK(sr_matrix_equal(ctx, C1, C2, &same));
    sr_matrix_info info;
    sr_matrix_get_info(C1, &info);
    CHECK(same, "debian closure: the two methods disagree");
    CHECK(info.nnz > 3800000 && info.nnz < 3900000, "debian closure has %lld pairs", (long long)info.nnz);
    printf("debian-depends closure on %s: %lld pairs; semi-naive %lld rounds %.3f s, squaring %lld rounds %.3f s\n",
           test_backend_name(ctx), (long long)info.nnz, (long long)s1.rounds, s1.seconds,
           (long long)s2.rounds, s2.seconds);
    sr_matrix_free(C1), sr_matrix_free(C2), sr_matrix_free(G), sr_matrix_free(A);
}

static void run_all(void)
{
    check_closure_and_reach(0, 0);
    check_closure_and_reach(1, 1);
    check_closure_and_reach(60, 1.2);
    check_closure_and_reach(200, 2.5);
    check_reach_batches();
    check_grammars();
    check_debian();
}

int main(void)
{
    test_seed("test_graph_queries");
    test_on_each_backend_and_opencl(&ctx, &where, run_all);
    return test_finish("test_graph_queries");
}
