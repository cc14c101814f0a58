/* Cancellation (issue 27): every long call whose callback asks to stop fails with
 * SR_ERROR_CANCELLED, leaves its output handle unwritten, and gives back what it held: the
 * context's device memory returns to where it was (CUDA), and LeakSanitizer sees no host leak
 * (CI runs this test under ASan). k-NN, the k-NN graph, radius neighbours, closure,
 * reachability, CFPQ, factorization, ridge and logistic regression; CPU backend and CUDA. */
#include "test_util.h"

static sr_context ctx;
static sr_location where;

#define SENTINEL ((sr_matrix)(uintptr_t)0x1)

static int stop_now(int64_t done, int64_t total, void *user)
{
    (void)done, (void)total;
    ++*(int *)user;
    return 1;
}
static int stop_factorize(const sr_factorize_step *step, void *user)
{
    (void)step;
    ++*(int *)user;
    return 1;
}
static int stop_solver(const sr_solver_step *step, void *user)
{
    (void)step;
    ++*(int *)user;
    return 1;
}

static size_t device_bytes(void)
{
    size_t current = 0, peak = 0;
    sr_context_device_memory(ctx, &current, &peak);
    return current;
}

/* Checks one cancelled call: its status, that the callback ran, the output handle, the memory. */
#define EXPECT_CANCELLED(what, call)                                                                   \
    do {                                                                                               \
        const sr_status st_ = (call); /* before calls and out are read */                              \
        expect_cancelled(what, st_, calls, out, before);                                               \
    } while (0)
static void expect_cancelled(const char *what, sr_status s, int calls, sr_matrix out, size_t before)
{
    CHECK(s == SR_ERROR_CANCELLED, "%s: %s (%s), want SR_ERROR_CANCELLED", what, sr_status_name(s), sr_last_error());
    CHECK(calls == 1, "%s: the callback ran %d times, want once (it asked to stop)", what, calls);
    CHECK(out == SENTINEL, "%s: the output handle was written", what);
    CHECK(device_bytes() == before, "%s: device memory %zu bytes after, %zu before", what, device_bytes(), before);
}

/* A path 0 -> 1 -> ... -> n-1 with a few chords: the closure takes many rounds. */
static sr_matrix path_graph(int64_t n)
{
    int64_t *rows = malloc((size_t)(2 * n) * sizeof(int64_t));
    int32_t *cols = malloc((size_t)(2 * n) * sizeof(int32_t));
    int64_t e = 0;
    for (int64_t i = 0; i + 1 < n; i++) {
        rows[e] = i, cols[e++] = (int32_t)(i + 1);
        if (i % 7 == 0 && i + 3 < n)
            rows[e] = i, cols[e++] = (int32_t)(i + 3);
    }
    sr_matrix H = NULL, G = NULL;
    CHECK_OK(sr_matrix_from_coo(ctx, &H, n, n, SR_TYPE_BOOL, e, rows, cols, NULL, SR_DUPLICATES_ERROR, SR_HOST));
    CHECK_OK(sr_matrix_copy_to(ctx, H, where, &G));
    sr_matrix_free(H);
    free(rows), free(cols);
    return G;
}

static void run_all(void)
{
    CHECK_OK(sr_context_set_workspace_limit(ctx, 40 * 300 * 8)); /* many batches */
    test_csr t = test_random_csr(300, 200, 8, SR_TYPE_FLOAT32), td = test_random_csr(300, 200, 8, SR_TYPE_FLOAT64);
    sr_matrix X = test_make_matrix_at(ctx, &t, where), Xd = test_make_matrix_at(ctx, &td, where);
    sr_matrix G = path_graph(200);
    int64_t *idx = malloc(300 * 5 * sizeof(int64_t));
    float *dist = malloc(300 * 5 * sizeof(float));
    sr_dense D = sr_dense_view(dist, 300, 5, SR_TYPE_FLOAT32, SR_ROW_MAJOR, SR_HOST);
    /* what an index keeps from its first search (transpose, norms per metric) stays by design: a
     * search of each metric below first, so the cancelled calls are measured against it */
    CHECK_OK(sr_knn(ctx, X, X, 5, SR_METRIC_COSINE, 0, idx, &D, NULL));
    CHECK_OK(sr_knn(ctx, X, X, 5, SR_METRIC_L2, 0, idx, &D, NULL));
    const size_t before = device_bytes();
    int calls = 0;
    sr_matrix out = SENTINEL;

    sr_knn_options ko = {stop_now, &calls, SR_PRECISION_EXACT};
    EXPECT_CANCELLED("knn", sr_knn(ctx, X, X, 5, SR_METRIC_COSINE, 0, idx, &D, &ko));

    calls = 0;
    sr_knn_graph_options go = sr_knn_graph_options_default();
    go.progress = stop_now, go.progress_user = &calls;
    EXPECT_CANCELLED("knn_graph", sr_knn_graph(ctx, X, 5, SR_METRIC_L2, 0, &go, &out));

    calls = 0;
    sr_radius_options ro = sr_radius_options_default();
    ro.progress = stop_now, ro.progress_user = &calls;
    EXPECT_CANCELLED("radius", sr_radius_neighbors(ctx, X, NULL, 1.0, SR_METRIC_L2, 0, &ro, &out));

    calls = 0;
    sr_query_options qo = {stop_now, &calls, false};
    EXPECT_CANCELLED("closure", sr_transitive_closure(ctx, G, SR_CLOSURE_AUTO, &out, &qo, NULL));

    calls = 0;
    const int64_t sources[2] = {0, 5};
    EXPECT_CANCELLED("reachability", sr_reachability(ctx, G, 2, sources, &out, &qo, NULL));

    calls = 0;
    sr_grammar g = NULL;
    CHECK_OK(sr_grammar_parse("S -> a S | a\n", &g));
    const char *labels[1] = {"a"};
    EXPECT_CANCELLED("cfpq", sr_cfpq(ctx, g, 1, labels, &G, NULL, &out, &qo, NULL));
    sr_grammar_free(g);

    calls = 0;
    sr_factorize_options fo = sr_factorize_options_default();
    fo.rank = 4, fo.report = stop_factorize, fo.report_user = &calls;
    double *W = calloc(300 * 4, sizeof(double)), *H = calloc(200 * 4, sizeof(double));
    sr_dense Wv = sr_dense_view(W, 300, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    sr_dense Hv = sr_dense_view(H, 200, 4, SR_TYPE_FLOAT64, SR_ROW_MAJOR, SR_HOST);
    EXPECT_CANCELLED("factorize", sr_factorize(ctx, Xd, NULL, &fo, &Wv, &Hv, NULL, NULL));

    double *y = malloc(300 * sizeof(double)), *w = calloc(200, sizeof(double));
    for (int i = 0; i < 300; i++)
        y[i] = i % 3 == 0 ? 1.0 : -1.0;
    sr_dense yv = sr_vector_view(y, 300, SR_TYPE_FLOAT64, SR_HOST), wv = sr_vector_view(w, 200, SR_TYPE_FLOAT64, SR_HOST);
    sr_solver_options so = sr_solver_options_default();
    so.report = stop_solver, so.report_user = &calls;
    calls = 0;
    EXPECT_CANCELLED("ridge", sr_ridge(ctx, Xd, &yv, 1.0, &so, &wv, NULL));
    calls = 0;
    EXPECT_CANCELLED("logistic", sr_logistic(ctx, Xd, &yv, 1.0, &so, &wv, NULL));

    free(idx), free(dist), free(W), free(H), free(y), free(w);
    sr_matrix_free(X), sr_matrix_free(Xd), sr_matrix_free(G);
    test_csr_free(&t), test_csr_free(&td);
}

int main(void)
{
    test_seed("test_cancel");
    test_on_each_backend(&ctx, &where, run_all);
    return test_finish("test_cancel");
}
